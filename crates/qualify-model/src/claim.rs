//! Claim levels: the three strengths of statement a user can make about an artifact, ordered
//! weakest first, with their contract strings (`functional`, `trial`, `production`); the
//! headroom a claim asks beyond its target ([`Headroom`]) and the gaps it waives ([`Waiver`]).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::ParseError;

/// How strong a claim is. Ordered: `Functional < Trial < Production`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClaimLevel {
    /// Correct results for the admitted inputs.
    Functional,
    /// Ran successfully across the examined operating region.
    Trial,
    /// Qualified for the declared target.
    Production,
}

impl ClaimLevel {
    /// Every level, weakest first.
    pub const ALL: [ClaimLevel; 3] = [
        ClaimLevel::Functional,
        ClaimLevel::Trial,
        ClaimLevel::Production,
    ];

    /// The contract string, e.g. `"trial"`.
    pub fn as_str(self) -> &'static str {
        match self {
            ClaimLevel::Functional => "functional",
            ClaimLevel::Trial => "trial",
            ClaimLevel::Production => "production",
        }
    }

    /// One sentence saying what the level asserts.
    pub fn meaning(self) -> &'static str {
        match self {
            ClaimLevel::Functional => "correct results for the admitted inputs",
            ClaimLevel::Trial => {
                "ran successfully across the examined operating region (no deadlock, crash, OOM or timeout inside it)"
            }
            ClaimLevel::Production => {
                "qualified for the declared target: its load, concurrency, resources and topology examined or each gap waived, performance within references, faults survived, evidence traceable"
            }
        }
    }
}

impl fmt::Display for ClaimLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ClaimLevel {
    type Err = ParseError;
    fn from_str(s: &str) -> Result<Self, ParseError> {
        match s {
            "functional" => Ok(ClaimLevel::Functional),
            "trial" => Ok(ClaimLevel::Trial),
            "production" => Ok(ClaimLevel::Production),
            other => Err(ParseError::new(
                "claim level",
                other,
                ClaimLevel::ALL.map(ClaimLevel::as_str),
            )),
        }
    }
}

/// The headroom a claim demands beyond its target values: factors ≥ 1 by which the first
/// failure must lie beyond the target (`[claim] headroom`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Headroom {
    /// `headroom = 1.5`: every axis with a target value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub all: Option<f64>,
    /// `headroom = { n = 2.0 }`.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub axes: std::collections::BTreeMap<String, f64>,
}

impl Headroom {
    /// The factor demanded along `axis` (measured only where the target names a value).
    pub fn for_axis(&self, axis: &str) -> Option<f64> {
        self.axes.get(axis).copied().or(self.all)
    }

    pub fn is_empty(&self) -> bool {
        self.all.is_none() && self.axes.is_empty()
    }
}

/// A `[[waiver]]`: one target gap the claim accepts by name, with the reason (the spec checks
/// it, the gate reads it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Waiver {
    /// The gap's name as the receipt lists it (e.g. `cores`).
    pub gap: String,
    pub reason: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordered_weakest_first_and_round_trips() {
        assert!(ClaimLevel::Functional < ClaimLevel::Trial);
        assert!(ClaimLevel::Trial < ClaimLevel::Production);
        for level in ClaimLevel::ALL {
            assert_eq!(level.as_str().parse::<ClaimLevel>(), Ok(level));
        }
        let e = "prod".parse::<ClaimLevel>().unwrap_err();
        assert_eq!((e.what, e.input.as_str()), ("claim level", "prod"));
        assert_eq!(e.accepted, ClaimLevel::ALL.map(ClaimLevel::as_str));
    }
}
