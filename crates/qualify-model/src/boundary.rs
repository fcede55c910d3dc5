//! One boundary search's result ([`Boundary`]): where the artifact broke along one axis with the
//! others fixed, the monotonicity check ([`MonotonicCheck`]) and the repeated runs at the edge
//! ([`EdgeRuns`]). The planner fills it; the receipt's record holds it as the planner wrote it.

use serde::{Deserialize, Serialize};

use crate::{Outcome, Params, Value};

/// What the monotonicity assumption predicted for the check probe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Expectation {
    /// Below the boundary: should pass.
    Pass,
    /// Above the boundary: should fail.
    Fail,
}

/// The runs of one point at a boundary's edge.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EdgeRuns {
    pub value: Value,
    pub passed: u32,
    pub failed: u32,
    /// The first failing outcome there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<Outcome>,
}

/// The extra probe that tested the monotonicity assumption.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MonotonicCheck {
    pub value: Value,
    pub outcome: Outcome,
    pub expected: Expectation,
}

/// Where one boundary search found the artifact to break.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Boundary {
    /// The searched axis.
    pub axis: String,
    /// The other axes' values during this search.
    pub fixed: Params,
    /// Largest passing value; `None` when even the lowest failed.
    pub last_pass: Option<Value>,
    /// Smallest failing value; `None` when everything passed (no boundary in the domain).
    /// With repeats at the edge, `last_pass` and `first_fail` bound the interval the repeats
    /// support: each ran `edge_runs` times and agreed with itself (see `edge_confirmed`).
    pub first_fail: Option<Value>,
    /// Outcome at `first_fail`.
    pub outcome: Option<Outcome>,
    /// Points the search examined, including the check (a point already run by another search
    /// counts, but was not run again).
    pub probes: usize,
    /// `Some(true)` if the check agreed with the monotonicity assumption, `Some(false)` if it
    /// contradicted it, `None` if no check ran (no unprobed point left, or not complete).
    pub monotonic: Option<bool>,
    pub monotonic_check: Option<MonotonicCheck>,
    /// False when the search was stopped (cancellation, an `interrupted` cell) before its
    /// bracket closed and its check ran; its values are then only what was learned so far.
    pub complete: bool,
    /// Indices into the execution's cells (`qualify_plan::Execution::cells`) of the cells it consulted, in order.
    pub cells: Vec<usize>,
    /// Runs each edge point was asked for (1: no repeats).
    #[serde(default = "one")]
    pub edge_runs: u32,
    /// With repeats: whether both edge points reached their agreeing runs before the budget
    /// ended (`None`: no repeats were asked, or the search did not get that far).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edge_confirmed: Option<bool>,
    /// Every point run more than once or whose runs disagreed, in axis order: the measured
    /// noise at the edge (disagreeing points lie between `last_pass` and `first_fail`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub edge: Vec<EdgeRuns>,
}

fn one() -> u32 {
    1
}
