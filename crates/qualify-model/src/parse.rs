//! The one error of the vocabulary's words (`FromStr` of [`crate::ClaimLevel`],
//! [`crate::Outcome`], [`crate::SloMetric`], [`crate::Progress`], the sandbox's `Mode` and
//! `Role`, and the engines' own words): the word that was given, what it should have named, and
//! every value accepted.

/// A word that is not one of the accepted values: `unknown claim level \`prod\`; expected one
/// of: functional, trial, production`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {what} `{input}`; expected one of: {}", .accepted.join(", "))]
pub struct ParseError {
    /// What the word names (`claim level`, `outcome`, `SLO metric`).
    pub what: &'static str,
    /// The word as given.
    pub input: String,
    /// Every value accepted, in the vocabulary's order.
    pub accepted: Vec<&'static str>,
}

impl ParseError {
    pub fn new(
        what: &'static str,
        input: &str,
        accepted: impl IntoIterator<Item = &'static str>,
    ) -> ParseError {
        ParseError {
            what,
            input: input.to_string(),
            accepted: accepted.into_iter().collect(),
        }
    }
}

/// The message, where a diagnostic takes text (a spec diagnostic at the word's location).
impl From<ParseError> for String {
    fn from(e: ParseError) -> String {
        e.to_string()
    }
}
