//! The five evidence layers, their statuses and what each can and cannot establish. Each layer
//! closes only the question it examined; none implies another, and absence of evidence is never
//! `closed`. [`functional`] and [`envelope`] assess their layer from a run, [`reproducibility`]
//! from the environment fingerprint and repeated cells; layers nothing examined are `not_run`.

pub mod envelope;
pub mod functional;
pub mod performance;
pub mod process;
pub mod reproducibility;

use std::fmt;
use std::str::FromStr;

use qualify_model::ParseError;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::record::RunRecord;

/// The five layers, in receipt order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LayerName {
    Functional,
    Process,
    Envelope,
    Performance,
    Reproducibility,
}

impl LayerName {
    pub const ALL: [LayerName; 5] = [
        LayerName::Functional,
        LayerName::Process,
        LayerName::Envelope,
        LayerName::Performance,
        LayerName::Reproducibility,
    ];

    /// The receipt key, e.g. `"envelope"`.
    pub fn as_str(self) -> &'static str {
        match self {
            LayerName::Functional => "functional",
            LayerName::Process => "process",
            LayerName::Envelope => "envelope",
            LayerName::Performance => "performance",
            LayerName::Reproducibility => "reproducibility",
        }
    }

    /// What this layer can support when closed.
    pub fn supports(self) -> &'static str {
        match self {
            LayerName::Functional => "correct results for the admitted inputs and assertions",
            LayerName::Process => {
                "what was planned, tested, debugged and refined (development trace, commit history)"
            }
            LayerName::Envelope => {
                "which failures (deadlock, livelock, OOM, crash, timeout, oversubscription) occur or not inside the tested region"
            }
            LayerName::Performance => {
                "measured behaviour and fitted scaling as workload and resources change"
            }
            LayerName::Reproducibility => {
                "which artifact, spec, tools, environment and measurements produced the evidence, and whether repeats agree"
            }
        }
    }

    /// What this layer cannot establish on its own, whatever its status.
    pub fn cannot_establish(self) -> &'static [&'static str] {
        match self {
            LayerName::Functional => &[
                "scalability",
                "resource safety",
                "robustness under concurrency",
            ],
            LayerName::Process => &[
                "fitness for deployment",
                "equivalence with the target environment",
            ],
            LayerName::Envelope => &["safety beyond the tested region"],
            LayerName::Performance => &["correctness", "global optimality"],
            LayerName::Reproducibility => &[
                "deterministic generation",
                "reliability of the process that produced the artifact",
            ],
        }
    }
}

impl fmt::Display for LayerName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for LayerName {
    type Err = ParseError;
    fn from_str(s: &str) -> Result<Self, ParseError> {
        LayerName::ALL
            .into_iter()
            .find(|l| l.as_str() == s)
            .ok_or_else(|| ParseError::new("layer", s, LayerName::ALL.map(LayerName::as_str)))
    }
}

/// A layer's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LayerStatus {
    /// Examined; supports the claim for what was examined.
    Closed,
    /// Examined, but material dimensions stayed untested.
    Partial,
    /// Examined; found a violation.
    Failed,
    /// Not examined.
    NotRun,
}

impl LayerStatus {
    pub const ALL: [LayerStatus; 4] = [
        LayerStatus::Closed,
        LayerStatus::Partial,
        LayerStatus::Failed,
        LayerStatus::NotRun,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            LayerStatus::Closed => "closed",
            LayerStatus::Partial => "partial",
            LayerStatus::Failed => "failed",
            LayerStatus::NotRun => "not_run",
        }
    }
}

impl fmt::Display for LayerStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for LayerStatus {
    type Err = ParseError;
    fn from_str(s: &str) -> Result<Self, ParseError> {
        LayerStatus::ALL
            .into_iter()
            .find(|l| l.as_str() == s)
            .ok_or_else(|| ParseError::new("status", s, LayerStatus::ALL.map(LayerStatus::as_str)))
    }
}

/// One layer of a receipt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Layer {
    pub status: LayerStatus,
    /// One line saying why the layer has this status.
    pub summary: String,
    /// What this layer can support.
    pub supports: String,
    /// What it cannot establish on its own.
    pub cannot_establish: Vec<String>,
    /// What stayed unexamined.
    pub untested: Vec<String>,
    /// Supporting observations (an object).
    pub evidence: Value,
}

impl Layer {
    /// A layer of `name` with its standard `supports` and `cannot_establish`.
    pub fn new(
        name: LayerName,
        status: LayerStatus,
        summary: impl Into<String>,
        untested: Vec<String>,
        evidence: Value,
    ) -> Layer {
        Layer {
            status,
            summary: summary.into(),
            supports: name.supports().to_string(),
            cannot_establish: name
                .cannot_establish()
                .iter()
                .map(|s| (*s).to_string())
                .collect(),
            untested,
            evidence,
        }
    }
}

/// The receipt's `layers`: exactly these five keys.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Layers {
    pub functional: Layer,
    pub process: Layer,
    pub envelope: Layer,
    pub performance: Layer,
    pub reproducibility: Layer,
}

impl Layers {
    pub fn get(&self, name: LayerName) -> &Layer {
        match name {
            LayerName::Functional => &self.functional,
            LayerName::Process => &self.process,
            LayerName::Envelope => &self.envelope,
            LayerName::Performance => &self.performance,
            LayerName::Reproducibility => &self.reproducibility,
        }
    }
}

/// Assess all five layers of `record`.
pub fn assess(
    record: &RunRecord,
    tested: &crate::region::Tested,
    dimensions: &[crate::region::DimensionCoverage],
    claimed: &[crate::claimed::ClaimedAxis],
) -> Layers {
    Layers {
        functional: functional::assess(record),
        process: process::assess(record),
        envelope: envelope::assess(record, tested, dimensions, claimed),
        performance: performance::assess(record),
        reproducibility: reproducibility::assess(record),
    }
}
