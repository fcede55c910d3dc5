//! The behaviour verdicts: what a service did while a fault was put on its dependency (or on
//! itself) — a closed list, named once here. `qualify-faults` decides them, the spec's `expect`
//! names them (an unknown name is a located error there), the evidence and the renderers read
//! them from `result.faults[].behaviour.verdict`.

use std::fmt;
use std::str::FromStr;

use crate::parse::ParseError;
use serde::{Deserialize, Serialize};

/// How a service behaved under a fault. Exact strings in the receipt; `qualify_faults::behaviour`
/// holds the rules, their order and their thresholds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// No fault was put on anything: the `none` cell, the control the other cells are compared
    /// with. Never a fault behaviour (nothing to expect of it).
    Control,
    /// An acknowledged write was missing from the final read.
    LosesWrites,
    /// The dependency saw many more requests or connection attempts per service request in
    /// the window than before it.
    RetryStorm,
    /// The service stopped serving: never ready again after a restart, or the objectives never
    /// held again after the window.
    Stops,
    /// The window disturbed nothing beyond the noise.
    Unaffected,
    /// Slower in the window, beyond the noise floor, but within the objectives.
    Degrades,
    /// The window's requests mostly timed out: no answer within the load's timeout.
    Hangs,
    /// The objectives held again, but later than `recover_within`.
    RecoversLate,
    /// The window's failed requests mostly came back fast (an error status, a refused or reset
    /// connection) instead of timing out; the objectives held again in time.
    FailsFast,
    /// The objectives broke in the window without failed requests (slow answers) and held
    /// again within `recover_within`.
    Recovers,
}

impl Verdict {
    /// Every verdict.
    pub const ALL: [Verdict; 10] = [
        Verdict::Control,
        Verdict::LosesWrites,
        Verdict::RetryStorm,
        Verdict::Stops,
        Verdict::Unaffected,
        Verdict::Degrades,
        Verdict::Hangs,
        Verdict::RecoversLate,
        Verdict::FailsFast,
        Verdict::Recovers,
    ];

    /// The behaviours a `production` claim refuses unless it expects them by name.
    pub const REFUSED_FOR_PRODUCTION: [Verdict; 5] = [
        Verdict::Hangs,
        Verdict::RetryStorm,
        Verdict::LosesWrites,
        Verdict::Stops,
        Verdict::RecoversLate,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Control => "control",
            Verdict::LosesWrites => "loses_writes",
            Verdict::RetryStorm => "retry_storm",
            Verdict::Stops => "stops",
            Verdict::Unaffected => "unaffected",
            Verdict::Degrades => "degrades",
            Verdict::Hangs => "hangs",
            Verdict::RecoversLate => "recovers_late",
            Verdict::FailsFast => "fails_fast",
            Verdict::Recovers => "recovers",
        }
    }

    /// Whether a claim may expect it of a fault (every verdict but `control`).
    pub fn is_fault_behaviour(self) -> bool {
        self != Verdict::Control
    }

    /// Whether `production` refuses it unless the claim expects it by name.
    pub fn refused_for_production(self) -> bool {
        Verdict::REFUSED_FOR_PRODUCTION.contains(&self)
    }

    /// The names a claim may expect, for messages: `loses_writes, retry_storm, …`.
    pub fn expectable_names() -> String {
        Verdict::ALL
            .iter()
            .filter(|v| v.is_fault_behaviour())
            .map(|v| v.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Verdict {
    type Err = ParseError;

    /// `unknown behaviour \`hang\`; expected one of: …` lists the expectable behaviours only
    /// (`control` parses, but no claim can expect it).
    fn from_str(s: &str) -> Result<Verdict, ParseError> {
        Verdict::ALL
            .into_iter()
            .find(|v| v.as_str() == s)
            .ok_or_else(|| {
                ParseError::new(
                    "behaviour",
                    s,
                    Verdict::ALL
                        .into_iter()
                        .filter(|v| v.is_fault_behaviour())
                        .map(Verdict::as_str),
                )
            })
    }
}

/// `fails_fast`, `fails_fast or degrades`, `unaffected, degrades or fails_fast`.
pub fn one_of(verdicts: &[Verdict]) -> String {
    let names: Vec<&str> = verdicts.iter().map(|v| v.as_str()).collect();
    match names.as_slice() {
        [] => "nothing".to_string(),
        [one] => (*one).to_string(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_names_list_the_expectable_ones() {
        for v in Verdict::ALL {
            assert_eq!(v.as_str().parse::<Verdict>(), Ok(v));
            assert_eq!(serde_json::to_value(v).unwrap(), v.as_str());
        }
        let err = "hang".parse::<Verdict>().unwrap_err().to_string();
        assert!(err.contains("unknown behaviour `hang`"), "{err}");
        assert!(err.contains("hangs") && err.contains("fails_fast"), "{err}");
        assert!(!err.contains("control"), "control is not expectable: {err}");
        assert_eq!(one_of(&[Verdict::FailsFast]), "fails_fast");
        assert_eq!(
            one_of(&[Verdict::Unaffected, Verdict::Degrades, Verdict::FailsFast]),
            "unaffected, degrades or fails_fast"
        );
        assert!(Verdict::Hangs.refused_for_production());
        assert!(!Verdict::FailsFast.refused_for_production());
    }
}
