//! [`GeneratorReport`]: what one generator process of a split load (`[load] generators = N`,
//! the hidden `qualify load-gen`) writes for the cell to merge — its own [`LoadReport`] of its
//! share, plus the histograms a report keeps only as summaries (the uncorrected latency, each
//! phase's corrected and uncorrected latency), so that N reports add up to exactly the report
//! one process would have made of the same requests (`qualify_load::merge`).
//!
//! The file is the contract between the cell and its generators wherever they run (this
//! machine or another node): JSON, histograms encoded as [`super::HISTOGRAM_ENCODING`] in
//! [`super::HISTOGRAM_UNIT`].

use serde::{Deserialize, Serialize};

use super::report::LoadReport;
use crate::fault::Phase;

/// One generator's report (`qualify load-gen --out REPORT.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GeneratorReport {
    /// 0-based index of this generator …
    pub index: u32,
    /// … of this many.
    pub of: u32,
    /// The agreed start of the schedule (Unix seconds), when one was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_at_unix: Option<f64>,
    /// How late this generator's schedule began after the agreed start (0: on time). A late
    /// generator starts its schedule when it can, not in a burst to catch up.
    #[serde(default)]
    pub started_late_seconds: f64,
    /// Its share of the load, measured (offered rate `rate / of`, its sent, achieved rate,
    /// schedule lag, CPU, saturation, per-second timeline, corrected histogram). `None` when
    /// the run failed: see `error`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report: Option<LoadReport>,
    /// The uncorrected latency histogram (from the actual send) of the measured phase.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uncorrected_histogram: String,
    /// Per phase window, the histograms behind its corrected and uncorrected summaries.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub phases: Vec<PhaseHistograms>,
    /// A staged load: per second of `report.shape.seconds`, the histogram behind its latency.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub second_histograms: Vec<String>,
    /// Why the run failed (the load could not run at all; requests' failures are counted in
    /// the report, never here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A phase window's latency histograms in one generator (empty: no answers in the window).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PhaseHistograms {
    #[serde(rename = "name")]
    pub phase: Phase,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub corrected: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uncorrected: String,
}

impl GeneratorReport {
    /// A report of a run that could not happen.
    pub fn failed(index: u32, of: u32, error: impl Into<String>) -> GeneratorReport {
        GeneratorReport {
            index,
            of,
            start_at_unix: None,
            started_late_seconds: 0.0,
            report: None,
            uncorrected_histogram: String::new(),
            phases: Vec::new(),
            second_histograms: Vec::new(),
            error: Some(error.into()),
        }
    }
}
