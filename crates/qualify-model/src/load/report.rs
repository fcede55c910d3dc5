//! [`LoadReport`]: what a load run measured, in the receipt's shape — counts, errors by class,
//! corrected and uncorrected latency summaries (seconds), the corrected HdrHistogram (V2
//! deflate, base64: `qualify_load` encodes and decodes it), a per-second timeline, per-phase
//! statistics, the optional write record and the generator's own cost and saturation.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use super::plan::{Arrivals, Stage};
use super::seqset::SeqSet;
use crate::fault::Phase;

/// How the corrected histogram is encoded in [`Latency::corrected_histogram`].
pub const HISTOGRAM_ENCODING: &str = "hdrhistogram-v2-deflate-base64";
/// The unit of the histogram's values.
pub const HISTOGRAM_UNIT: &str = "microseconds";

/// Why a request failed. `Status*` and `UnexpectedReply` are answers (the request completed);
/// the rest never got one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorClass {
    /// A 4xx status other than 429 that `expect_status` does not list.
    #[serde(rename = "status_4xx")]
    Status4xx,
    #[serde(rename = "status_5xx")]
    Status5xx,
    #[serde(rename = "status_429")]
    Status429,
    /// No answer within the plan's timeout (connecting included).
    Timeout,
    /// The connection was refused: nothing listened on the port.
    Refused,
    /// The connection was reset or closed before the answer was complete.
    Reset,
    /// An answer that is not expected and not a 4xx/5xx: a status outside `expect_status`, or
    /// a TCP reply line that does not start with `expect`.
    UnexpectedReply,
    Other,
}

impl ErrorClass {
    pub const ALL: [ErrorClass; 8] = [
        ErrorClass::Status4xx,
        ErrorClass::Status5xx,
        ErrorClass::Status429,
        ErrorClass::Timeout,
        ErrorClass::Refused,
        ErrorClass::Reset,
        ErrorClass::UnexpectedReply,
        ErrorClass::Other,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ErrorClass::Status4xx => "status_4xx",
            ErrorClass::Status5xx => "status_5xx",
            ErrorClass::Status429 => "status_429",
            ErrorClass::Timeout => "timeout",
            ErrorClass::Refused => "refused",
            ErrorClass::Reset => "reset",
            ErrorClass::UnexpectedReply => "unexpected_reply",
            ErrorClass::Other => "other",
        }
    }

    /// Whether the class is an answer from the service (the request completed).
    pub fn is_answer(self) -> bool {
        matches!(
            self,
            ErrorClass::Status4xx
                | ErrorClass::Status5xx
                | ErrorClass::Status429
                | ErrorClass::UnexpectedReply
        )
    }
}

impl fmt::Display for ErrorClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Failed requests by class.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorCounts {
    pub status_4xx: u64,
    pub status_5xx: u64,
    pub status_429: u64,
    pub timeout: u64,
    pub refused: u64,
    pub reset: u64,
    pub unexpected_reply: u64,
    pub other: u64,
}

impl ErrorCounts {
    pub fn add(&mut self, class: ErrorClass) {
        *self.get_mut(class) += 1;
    }

    /// Add every count of `other`.
    pub fn add_counts(&mut self, other: &ErrorCounts) {
        for class in ErrorClass::ALL {
            *self.get_mut(class) += other.get(class);
        }
    }

    pub fn get(&self, class: ErrorClass) -> u64 {
        match class {
            ErrorClass::Status4xx => self.status_4xx,
            ErrorClass::Status5xx => self.status_5xx,
            ErrorClass::Status429 => self.status_429,
            ErrorClass::Timeout => self.timeout,
            ErrorClass::Refused => self.refused,
            ErrorClass::Reset => self.reset,
            ErrorClass::UnexpectedReply => self.unexpected_reply,
            ErrorClass::Other => self.other,
        }
    }

    fn get_mut(&mut self, class: ErrorClass) -> &mut u64 {
        match class {
            ErrorClass::Status4xx => &mut self.status_4xx,
            ErrorClass::Status5xx => &mut self.status_5xx,
            ErrorClass::Status429 => &mut self.status_429,
            ErrorClass::Timeout => &mut self.timeout,
            ErrorClass::Refused => &mut self.refused,
            ErrorClass::Reset => &mut self.reset,
            ErrorClass::UnexpectedReply => &mut self.unexpected_reply,
            ErrorClass::Other => &mut self.other,
        }
    }

    pub fn total(&self) -> u64 {
        ErrorClass::ALL.iter().map(|c| self.get(*c)).sum()
    }

    /// `timeout 3, refused 1` for the classes that occurred, most frequent first.
    pub fn describe(&self) -> String {
        let mut seen: Vec<(ErrorClass, u64)> = ErrorClass::ALL
            .iter()
            .map(|c| (*c, self.get(*c)))
            .filter(|(_, n)| *n > 0)
            .collect();
        seen.sort_by_key(|(_, n)| std::cmp::Reverse(*n));
        seen.iter()
            .map(|(c, n)| format!("{c} {n}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Latency percentiles in seconds (`None` when nothing was recorded).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencySummary {
    /// Requests whose latency was recorded: for a run's (and a second's) latency every request
    /// that ended, a timeout at the moment it was given up on ([`Latency::censored`]); for a
    /// phase's `corrected`/`uncorrected`, its answers of every status.
    pub count: u64,
    pub p50: Option<f64>,
    pub p90: Option<f64>,
    pub p99: Option<f64>,
    pub p999: Option<f64>,
    pub max: Option<f64>,
    pub mean: Option<f64>,
}

impl LatencySummary {
    /// The value at quantile `q` as this summary holds it (`1.0` is the maximum).
    pub fn at(&self, q: f64) -> Option<f64> {
        match q {
            q if q >= 1.0 => self.max,
            q if q >= 0.999 => self.p999,
            q if q >= 0.99 => self.p99,
            q if q >= 0.9 => self.p90,
            _ => self.p50,
        }
    }
}

/// Latency from the intended start (corrected) and from the actual send (uncorrected), of
/// every measured request that ended: answered (any status), failed fast (refused, reset), or
/// timed out — a timeout counted at the moment it was given up on, no less than the request
/// timeout (k6 counts failed requests' durations too). So p99 never looks healthy while
/// requests time out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    pub corrected: LatencySummary,
    pub uncorrected: LatencySummary,
    /// Of the requests counted, those that timed out: censored at the timeout (their true
    /// latency is at least what was recorded). `None` in receipts written before failed
    /// requests counted, whose summaries hold answers only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub censored: Option<u64>,
    /// The corrected histogram, [`HISTOGRAM_ENCODING`], values in [`HISTOGRAM_UNIT`].
    pub corrected_histogram: String,
    pub histogram_encoding: String,
    pub histogram_unit: String,
}

/// One second of the run (`second` 0 is the first of the measured phase; the drain after the
/// schedule adds rows). Counts are of measured requests, by the time the event happened: sent
/// when sent, completed/errors when they ended; `p99` is the corrected p99 of the requests
/// that ended in that second (answered, failed, or timed out at their timeout).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct TimelineSecond {
    pub second: u32,
    pub sent: u64,
    pub completed: u64,
    pub errors: u64,
    pub p99: Option<f64>,
    /// A staged load: the arrivals per second the schedule offered in this second (its
    /// expected count over the second, every generator together); absent past the schedule
    /// and for a constant rate (the report's `offered_rate`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offered: Option<f64>,
}

/// One phase window's statistics (requests belong to the window of their intended start).
///
/// Failures are split by what the request met: `errors.timeout` got no answer within the
/// plan's timeout; `fast_errors` ended before it (an error answer, a refused or reset
/// connection), with their corrected latency. Goodput is `succeeded` per second of the window
/// ([`PhaseReport::goodput`]), beside the answers of every status ([`PhaseReport::answered_rate`]).
///
/// Mergeable: reports of the same phase from several generators (or event loops) combine by
/// adding every count (`sent`, `completed`, `succeeded`, `dropped`, `shed`, `errors`,
/// `fast_errors`) and the encoded histograms (`fast_error_histogram`, `ended_histogram`:
/// decode, add, summarize again into `fast_error_latency`, `ended_latency`); `peak_in_flight`
/// adds too (each generator owns its slots).
/// The `corrected`/`uncorrected` summaries keep no histogram here: a merge recomputes them
/// only where the generators kept theirs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PhaseReport {
    #[serde(rename = "name")]
    pub phase: Phase,
    pub start_seconds: f64,
    pub end_seconds: f64,
    pub sent: u64,
    pub completed: u64,
    pub succeeded: u64,
    pub dropped: u64,
    /// Answers that shed load (429, 503) among the phase's requests.
    #[serde(default)]
    pub shed: u64,
    pub errors: ErrorCounts,
    /// Most requests outstanding at once while the phase's requests were sent (at most
    /// `max_in_flight`: the load's slots were full).
    #[serde(default)]
    pub peak_in_flight: u64,
    pub corrected: LatencySummary,
    pub uncorrected: LatencySummary,
    /// Failed requests that ended before the timeout (every error class but `timeout`).
    #[serde(default)]
    pub fast_errors: u64,
    /// The fast errors' corrected latency (intended start → failure), seconds.
    #[serde(default)]
    pub fast_error_latency: LatencySummary,
    /// The fast errors' corrected histogram ([`HISTOGRAM_ENCODING`], [`HISTOGRAM_UNIT`]); empty
    /// when there were none.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub fast_error_histogram: String,
    /// The corrected latency of every request of the window that ended — answered, failed fast
    /// or timed out (a timeout at the moment it was given up on: a lower bound) — seconds. What
    /// an objective judged over the fault window reads: a request that hung is as slow as its
    /// timeout, not absent.
    #[serde(default)]
    pub ended_latency: LatencySummary,
    /// Their corrected histogram ([`HISTOGRAM_ENCODING`], [`HISTOGRAM_UNIT`]); empty when none.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub ended_histogram: String,
}

impl PhaseReport {
    /// The window's length in seconds.
    pub fn seconds(&self) -> f64 {
        (self.end_seconds - self.start_seconds).max(0.0)
    }

    /// Requests of the window that got no answer within the timeout.
    pub fn timeouts(&self) -> u64 {
        self.errors.timeout
    }

    /// Successful answers (a status `expect_status` lists) per second of the window: goodput.
    pub fn goodput(&self) -> Option<f64> {
        let s = self.seconds();
        (s > 0.0).then(|| self.succeeded as f64 / s)
    }

    /// Answers of every status per second of the window.
    pub fn answered_rate(&self) -> Option<f64> {
        let s = self.seconds();
        (s > 0.0).then(|| self.completed as f64 / s)
    }
}

/// Sequence numbers attempted, acknowledged (success answers) and failed, warmup included.
/// Attempted writes neither acknowledged nor failed are unknown: sent without an answer (a
/// timeout, a reset, the load's end), so they may or may not have happened.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Writes {
    pub attempted: SeqSet,
    pub acknowledged: SeqSet,
    /// Answered with a failure (an error status or reply line), or refused at connect (never
    /// sent): Jepsen's `:fail`.
    #[serde(default)]
    pub failed: SeqSet,
}

/// How late the generator dispatched arrivals that found a free slot (its own lag).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ScheduleLag {
    /// Arrivals dispatched with a free slot (measured phase).
    pub dispatched: u64,
    /// Of those, dispatched more than `qualify_load::LATE` after they were due.
    pub late: u64,
    pub p50: Option<f64>,
    pub p99: Option<f64>,
    pub max: Option<f64>,
}

/// The generator's own cost, and whether it (not the service) limited the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Generator {
    /// Event loops (threads) the load ran on.
    pub threads: u32,
    /// CPU time of the generator's threads (their whole event loops) over the run.
    pub cpu_seconds: f64,
    pub wall_seconds: f64,
    /// The generator could not keep the schedule although slots were free (open model), or
    /// was CPU-bound (closed model): the run is not evidence about the service.
    pub saturated: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    pub schedule_lag: ScheduleLag,
    pub connections_opened: u64,
}

/// Which model produced a report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ModelKind {
    Open,
    Closed,
}

/// Everything a load run measured. Counts are of the measured phase (intended start at or
/// after the warmup); `completed` counts answers of every status, `succeeded` the expected
/// ones; `errors` holds failed answers and requests without an answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadReport {
    pub model: ModelKind,
    /// Arrivals per second (open model).
    pub offered_rate: Option<f64>,
    /// Concurrent loops (closed model).
    pub users: Option<u32>,
    /// The planned measured phase.
    pub duration_seconds: f64,
    /// The measured phase as run: shorter when stopped or cancelled early.
    pub measured_seconds: f64,
    pub warmup_seconds: f64,
    pub sent: u64,
    pub completed: u64,
    pub succeeded: u64,
    /// Arrivals still waiting for a slot when the schedule ended (open model).
    pub dropped: u64,
    /// Answers 429 or 503: the service refused work it could not take.
    #[serde(default)]
    pub shed: u64,
    /// Answers per second that arrived during the measured phase (whatever the request's
    /// intended start: in overload, the backlog of the warmup is answered then too).
    pub achieved_rate: f64,
    /// Successful answers per second that arrived during the measured phase.
    pub throughput: f64,
    pub errors: ErrorCounts,
    /// The first message seen per error class (an unexpected reply line, an I/O error).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub error_examples: BTreeMap<ErrorClass, String>,
    pub latency: Latency,
    pub timeline: Vec<TimelineSecond>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub phases: Vec<PhaseReport>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub writes: Option<Writes>,
    pub generator: Generator,
    /// The run was cancelled (the caller's flag): in-flight requests were abandoned.
    pub cancelled: bool,
    /// The observer asked to stop before the schedule ended (seconds into the measured
    /// phase; negative: during the warmup).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped_at_seconds: Option<f64>,
    /// With `[load] generators = N > 1`: each generator process's share, in index order (the
    /// report itself is their lossless merge). Empty (and absent) for a load run in-process.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub generators: Vec<GeneratorSummary>,
    /// A staged (ramping) or Poisson load: its shape, per second of a ramp, and where
    /// objectives first failed. Absent for a constant, evenly spaced rate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shape: Option<LoadShape>,
}

/// The shape of an open-model load beyond a constant, evenly spaced rate: stages and arrivals
/// as planned (the seed of Poisson arrivals included) and, for a staged load, each second of
/// the measured phase by the *intended start* of its requests, with the first second whose
/// requests broke an objective.
///
/// `first_failed_at_rate` is computed per second `s` from the requests whose intended start
/// fell in `s` (what that second's rate offered), in order, by
/// `qualify_load::slo::first_failed`: the second fails when any arrival of it was dropped, when
/// its failed requests / its sent requests exceed an `error_rate` objective (or the implicit
/// 1% one when none is declared), or when a latency objective's quantile of its requests'
/// corrected latency (timeouts at their timeout) exceeds the limit (steady objectives only; throughput and the
/// fault window's are not judged per second). The rate is that second's offered rate (the
/// schedule's expected arrivals in it); `first_failed_because` says which objective, with the
/// value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadShape {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stages: Vec<Stage>,
    #[serde(default)]
    pub start_rate: f64,
    pub arrivals: Arrivals,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub seconds: Vec<ShapeSecond>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_failed_at_rate: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_failed_second: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_failed_because: Option<String>,
    /// How far above the rate that fails when held steady a ramp's first failure can come,
    /// arrivals per second (an upper bound): the backlog needs time to build. At a ramp of `a`
    /// more arrivals per second each second, a service of capacity `μ` has `a·t²/2` queued `t`
    /// seconds past it, each waiting `a·t²/(2μ)`: a delay budget `L` (the latency limit that
    /// failed, the request timeout for errors, `max_in_flight / rate` for dropped arrivals) is
    /// spent after `t = √(2μL/a)`, by when the rate rose `√(2aμL)`; with `μ` ≤ the failing
    /// rate, plus the second a verdict spans.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_failed_overstates_by: Option<f64>,
}

impl LoadShape {
    /// `20 → 100/s in 2s → 400/s in 6s, poisson arrivals (seed 26)`.
    pub fn describe(&self) -> String {
        let mut t = String::new();
        if !self.stages.is_empty() {
            t.push_str(&format!("{}", self.start_rate));
            for st in &self.stages {
                t.push_str(&format!(
                    " → {}/s in {}",
                    st.rate,
                    humantime::format_duration(st.duration)
                ));
            }
            t.push_str(", ");
        }
        match self.arrivals {
            Arrivals::Uniform => t.push_str("uniform arrivals"),
            Arrivals::Poisson { seed } => t.push_str(&format!("poisson arrivals (seed {seed})")),
        }
        t
    }

    /// A ramp's verdict per second: `objectives first failed at 275 req/s offered (second 5:
    /// …)`, `every second of the ramp held its objectives`, or `None` without stages.
    pub fn first_failed_text(&self) -> Option<String> {
        if self.stages.is_empty() {
            return None;
        }
        Some(
            match (self.first_failed_at_rate, self.first_failed_second) {
                (Some(rate), Some(second)) => format!(
                    "objectives first failed at {rate:.1} req/s offered (second {second}: {}){}",
                    self.first_failed_because.as_deref().unwrap_or(""),
                    self.first_failed_overstates_by
                        .map(|by| format!(
                            "; a ramp overstates steady capacity (the backlog takes time to build): at this slope the first failure can come up to {by:.1} req/s above the rate that fails when held steady (≈ {:.0} req/s or more): a boundary search over steady rates finds it",
                            (rate - by).max(0.0)
                        ))
                        .unwrap_or_default()
                ),
                _ => "every second of the ramp held its objectives".to_string(),
            },
        )
    }
}

/// One second of a staged load, by the intended start of its requests (measured phase).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ShapeSecond {
    pub second: u32,
    /// The schedule's expected arrivals in this second.
    pub offered_rate: f64,
    pub sent: u64,
    /// Answered (any status).
    pub answered: u64,
    /// Failed (error answers and requests without an answer).
    pub errors: u64,
    /// Arrivals that never got a slot before the schedule ended.
    pub dropped: u64,
    /// Of its requests, those that timed out (in `latency` at the moment given up on).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub censored: u64,
    /// Corrected latency of its requests that ended (answered, failed, timed out).
    pub latency: LatencySummary,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}
/// One generator process of a split load, as the merged report names it: what it sent and
/// achieved, its own schedule lag and CPU, and whether it (not the service) limited the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GeneratorSummary {
    /// 0-based, of `LoadReport::generators.len()`.
    pub index: u32,
    /// Its share of the offered rate (open model).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offered_rate: Option<f64>,
    pub sent: u64,
    pub completed: u64,
    /// Its answers per second during the measured phase.
    pub achieved_rate: f64,
    pub cpu_seconds: f64,
    pub schedule_lag: ScheduleLag,
    /// Seconds after the agreed start instant this generator's schedule began (0: on time).
    #[serde(default)]
    pub started_late_seconds: f64,
    pub saturated: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

impl LoadReport {
    /// Failed requests / requests sent (`None` when nothing was sent).
    pub fn error_rate(&self) -> Option<f64> {
        (self.sent > 0).then(|| self.errors.total() as f64 / self.sent as f64)
    }

    /// Dropped arrivals / arrivals scheduled (`None` when nothing was scheduled).
    pub fn dropped_rate(&self) -> Option<f64> {
        let scheduled = self.sent + self.dropped;
        (scheduled > 0).then(|| self.dropped as f64 / scheduled as f64)
    }
}
