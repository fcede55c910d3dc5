//! The load vocabulary: a cell's load ([`LoadPlan`], what the spec's `[load]` is checked into),
//! what a run measured ([`LoadReport`], the receipt's `load`), the sequence-number sets of the
//! write record ([`SeqSet`]), what one generator process of a split load reports
//! ([`GeneratorReport`]), the service's memory growth through the measured phase
//! ([`Growth`]), and a service cell's `result.load` ([`ServiceLoad`]: the report with the
//! cell's judgement of it). Plain data; `qualify-load` drives, records and judges.

mod plan;
mod report;
mod seqset;
mod split;

use serde::{Deserialize, Serialize};

use crate::slo::SloResult;

pub use plan::{
    Arrivals, HttpRequest, LoadPlan, Model, PhaseWindow, RequestKind, RequestTemplate, Stage,
    TcpRequest,
};
pub use report::{
    ErrorClass, ErrorCounts, Generator, GeneratorSummary, HISTOGRAM_ENCODING, HISTOGRAM_UNIT,
    Latency, LatencySummary, LoadReport, LoadShape, ModelKind, PhaseReport, ScheduleLag,
    ShapeSecond, TimelineSecond, Writes,
};
pub use seqset::SeqSet;
pub use split::{GeneratorReport, PhaseHistograms};

/// The judgement on a series of samples.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Growth {
    pub grew_steadily: bool,
    pub slope_bytes_per_second: f64,
    /// The fitted size at the first and last sample.
    pub start_bytes: f64,
    pub end_bytes: f64,
    /// At this slope, seconds from the last sample until the ceiling (0 when already there).
    pub seconds_to_ceiling: Option<f64>,
    pub kendall_tau: f64,
    pub detail: String,
}

/// A service cell's `result.load`: what the load measured ([`LoadReport`], flattened: its
/// fields are `load`'s own; absent when no load ran, e.g. a service that never became ready)
/// and the cell's judgement of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServiceLoad {
    #[serde(flatten)]
    pub report: Option<LoadReport>,
    /// Every objective as the cell's verdict judged it, each with the phase it was judged over
    /// (`SloResult::phase`): the steady ones over the whole measured phase — or, in a cell
    /// with a fault window (not the `none` control), outside the window and its recovery —,
    /// the implicit error-rate one included; those for the fault window over it.
    #[serde(default)]
    pub slo: Vec<SloResult>,
    /// The service verdict's detail line (why the cell ended as it did).
    #[serde(default)]
    pub verdict: String,
    /// Resident memory through the measured phase (absent with too few samples).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_growth: Option<Growth>,
    /// Seconds from the service's start until it was ready.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready_seconds: Option<f64>,
    /// The loopback port the service listened on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
    /// How the service ended when asked to stop (the probe's detail line).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<String>,
}

impl ServiceLoad {
    /// The judgement of a service that ran no load (never ready): the verdict only.
    pub fn without_load(verdict: impl Into<String>) -> ServiceLoad {
        ServiceLoad {
            report: None,
            slo: Vec::new(),
            verdict: verdict.into(),
            memory_growth: None,
            ready_seconds: None,
            port: None,
            stop: None,
        }
    }
}
