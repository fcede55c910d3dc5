//! The load vocabulary: a cell's load ([`LoadPlan`], what the spec's `[load]` is checked into),
//! what a run measured ([`LoadReport`], the receipt's `load`), the sequence-number sets of the
//! write record ([`SeqSet`]) and the service's memory growth through the measured phase
//! ([`Growth`]). Plain data; `qualify-load` drives, records and judges.

mod plan;
mod report;
mod seqset;

use serde::{Deserialize, Serialize};

pub use plan::{
    HttpRequest, LoadPlan, Model, PhaseWindow, RequestKind, RequestTemplate, TcpRequest,
};
pub use report::{
    ErrorClass, ErrorCounts, Generator, HISTOGRAM_ENCODING, HISTOGRAM_UNIT, Latency,
    LatencySummary, LoadReport, ModelKind, PhaseReport, ScheduleLag, TimelineSecond, Writes,
};
pub use seqset::SeqSet;

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
