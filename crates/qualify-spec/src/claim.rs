//! `[claim]`: the level of claim the user wants evidence for ([`ClaimLevel`], weakest first).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use toml::Spanned;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Claim {
    pub level: ClaimLevel,
}

/// Claim levels, ordered weakest first: `functional < trial < production`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ClaimLevel {
    /// Correct results for the admitted inputs.
    Functional,
    /// Ran successfully across the examined operating region, reproducibly.
    Trial,
    /// Qualified for the declared target.
    Production,
}

impl ClaimLevel {
    pub const ALL: [ClaimLevel; 3] = [
        ClaimLevel::Functional,
        ClaimLevel::Trial,
        ClaimLevel::Production,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ClaimLevel::Functional => "functional",
            ClaimLevel::Trial => "trial",
            ClaimLevel::Production => "production",
        }
    }
}

impl fmt::Display for ClaimLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ClaimLevel {
    type Err = String;
    fn from_str(s: &str) -> Result<ClaimLevel, String> {
        ClaimLevel::ALL
            .into_iter()
            .find(|level| level.as_str() == s)
            .ok_or_else(|| {
                format!("unknown claim level `{s}`; expected one of: functional, trial, production")
            })
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawClaim {
    pub level: Spanned<ClaimLevel>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_order_weakest_first_and_parse() {
        assert!(ClaimLevel::Functional < ClaimLevel::Trial);
        assert!(ClaimLevel::Trial < ClaimLevel::Production);
        assert_eq!(
            "production".parse::<ClaimLevel>(),
            Ok(ClaimLevel::Production)
        );
        assert!(
            "prod"
                .parse::<ClaimLevel>()
                .unwrap_err()
                .contains("expected one of")
        );
    }
}
