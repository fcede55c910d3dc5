//! The fault vocabulary: what a `kind = "fault"` axis value means ([`Fault`], its grammar and
//! canonical text: [`grammar`]), when a fault is active ([`Window`]) and where a moment of the
//! measured phase falls around it ([`Phase`]), and what a cell's faults and restart left in the
//! receipt ([`FaultRecord`]: `result.faults`, with the write check [`SetCheck`]) and the closed
//! list of behaviour verdicts a record names and a claim may expect ([`Verdict`]). Plain data;
//! `qualify-faults` injects and judges, the spec parses, the evidence reads.

pub mod grammar;
pub mod record;
pub mod verdict;

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

pub use grammar::{Direction, Fault, FaultError, FaultErrorKind, FaultKind};
pub use record::{
    AmplificationRecord, BehaviourRecord, CheckerRecord, DependencyPhaseRecord, FaultRecord,
    HistoryFile, HttpPhaseRecord, KilledInstance, NoiseFloorRecord, PhaseRecord, PhasesRecord,
    PoolRecord, ProcessRecord, ResourceRecord, RestartRecord, SetCheck, WindowRecord,
};
pub use verdict::Verdict;

/// How much latency varied where no fault acted: ratios (largest ÷ smallest, ≥ 1) of a
/// percentile across the control cell's phases, or across the seconds before a window.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Noise {
    pub p99: Option<f64>,
    pub p50: Option<f64>,
    /// The control's own corrected latency over its measured load (not a ratio): what a
    /// standing fault's cell, which has no before of its own, is compared with.
    #[serde(default)]
    pub latency_p99: Option<f64>,
    #[serde(default)]
    pub latency_p50: Option<f64>,
}

/// When a fault is active: `[start, end)` as offsets from the measured phase's start (the
/// instant the proxies are armed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Window {
    pub start: Duration,
    pub end: Duration,
}

/// Where a moment falls around a fault window (or a restart: before the kill, from the kill).
/// The load's phase windows and the proxy's counters are named by it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Before the proxy was armed (warmup, pool set-up); the proxy's counters only.
    Unarmed,
    /// The measured phase before the window.
    Before,
    /// Inside the window (for a restart: from the kill on).
    During,
    /// From the window's end for `recover_within`: the service may still be catching up. The
    /// proxy, which does not know `recover_within`, counts it in [`Phase::After`].
    Recovery,
    /// The rest of the measured phase.
    After,
}

impl Phase {
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Unarmed => "unarmed",
            Phase::Before => "before",
            Phase::During => "during",
            Phase::Recovery => "recovery",
            Phase::After => "after",
        }
    }
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
