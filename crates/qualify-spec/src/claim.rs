//! `[claim]`: the level of claim the user wants evidence for ([`ClaimLevel`], weakest first).

use serde::{Deserialize, Serialize};
use toml::Spanned;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Claim {
    pub level: ClaimLevel,
}

pub use qualify_model::ClaimLevel;

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
