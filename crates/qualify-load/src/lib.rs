//! `qualify-load` owns load on services: [`run`] drives a [`LoadPlan`] (open model: arrivals
//! at a rate; closed model: user loops; HTTP/1.1 keep-alive or a TCP line protocol) against a
//! socket address from the calling thread (and threads it spawns, which share its network
//! namespace), and returns a [`LoadReport`] whose latencies are measured from each request's
//! intended start (no coordinated omission) into HdrHistograms, beside the latency from the
//! actual send — memory stays flat over any run length. The generator measures its own CPU
//! and says when it, not the service, was the bottleneck.
//!
//! Around the run, pure functions decide what it means: [`slo::evaluate`] judges `[[slo]]`
//! objectives, [`verdict::decide`] picks the service cell's outcome (`ok`, `slo_violated`,
//! `overloaded`, `unavailable`, or not evidence), [`memory::memory_growth`] tells steady
//! memory growth from a one-off step; [`merge`] adds the reports of a load split over several
//! generator processes ([`run_share`] runs one share); [`ready::wait_ready`] polls a starting service; and
//! [`HttpClient`] sends single requests with the engine's HTTP reader (a write check's
//! read-back).

pub mod client;
mod engine;
mod error;
pub mod memory;
pub mod merge;
mod plan;
pub mod ready;
mod record;
mod report;
pub mod schedule;
mod seqset;
pub mod slo;
pub mod template;
pub mod verdict;

pub use client::{ClientError, HttpClient};
pub use engine::{BUSY_FRACTION, Flow, LATE, LATE_FRACTION, Progress, Share, TICK, run};
pub use error::LoadError;
pub use merge::{MergeError, merge, run_share};
pub use plan::{
    HttpRequest, LoadPlan, Model, PhaseWindow, RequestKind, RequestTemplate, TcpRequest, compile,
};
pub use qualify_model::fault::Phase;
pub use qualify_model::load::{GeneratorReport, GeneratorSummary, PhaseHistograms};
pub use report::{
    ErrorClass, ErrorCounts, Generator, HISTOGRAM_ENCODING, HISTOGRAM_UNIT, HistogramError,
    Latency, LatencySummary, LoadReport, ModelKind, PhaseReport, ScheduleLag, TimelineSecond,
    Writes, corrected_histogram, decode_histogram, encode_histogram, summary_of,
};
pub use seqset::SeqSet;
