//! `result.faults` of a service cell: the faults it put on its dependencies, the kill and
//! restart of the service, the acknowledged-writes check, and how the service behaved. This
//! module is the one definition of that JSON: `qualify_faults::record` builds a [`FaultRecord`]
//! from the fault harness's observation and verdict, `ProbeResult::faults` holds them, and every
//! reader of a receipt reads them through these types ([`read_value`] for JSON).
//!
//! The shape: a JSON array with one object per fault axis of the cell (its dependency and its
//! fault, `none` included: the control cell's figures matter too); a cell that only restarts
//! the service (`[recovery]` without a fault axis) has one object with `dependency: null` and
//! `fault: "none"`. A restart and its write check are cell facts: the runner puts them on each
//! object it judged with them, and readers count them once per cell.
//!
//! ```json
//! [{
//!   "dependency": "db",                      // null: the restart only
//!   "fault": "latency(200ms)",               // canonical qualify_faults::Fault text
//!   "window": { "start_seconds": 3.0, "end_seconds": 8.0 },   // offsets in the measured phase
//!   "recover_within_seconds": 5.0,
//!   "behaviour": {
//!     "verdict": "hangs",                    // the closed list of super::Verdict: control |
//!                                            // loses_writes | retry_storm | stops | unaffected |
//!                                            // degrades | hangs | recovers_late | fails_fast |
//!                                            // recovers
//!     "detail": "240 of 300 requests in the window timed out (no answer within 1.0 s) …",
//!     "recovery_seconds": 1.2,               // window end → SLOs held again; null: not recovered
//!     "error_rate_before": 0.0, "error_rate_during": 0.4, "error_rate_after": 0.0,
//!     "amplification_before": { "requests": 1.0, "connections": 0.01 },   // per service request
//!     "amplification_during": { … }, "amplification_after": { … },
//!     "attempts_per_request": 0.01,          // connection attempts per service request, window
//!     "pool": { "connections": 10, "all_busy": true, "requests_queued": true },
//!     "noise_floor": { "p99": 2.1, "p50": 1.5, "control_p99": 2.1, "control_p50": 1.2,
//!                      "before_window_p99": 1.3 },   // what `degrades` had to exceed
//!     "left_after_window": [{ "kind": "threads", "before": 7, "peak_during": 163, "end": 158 }],
//!     "expected": ["fails_fast", "degrades"]  // what the claim accepts; absent: states none
//!   },
//!   "phases": { "before": { "requests": 300, "errors": 0, "timeouts": 0, "latency_p50": 0.001,
//!               "latency_p99": 0.004, "peak_in_flight": 3, "succeeded": 300, "seconds": 3.0,
//!               "fast_errors": 0, "fast_error_p50": null, "fast_error_p99": null,
//!               "dependency": { "connections_opened": 10, "peak_connections": 10, …,
//!                               "http": { "statuses": { "200": 310, "503": 97 },
//!                                         "injected": 97, "delayed": 0 } } },  // http only
//!               "during": { … }, "after": { … } },
//!   "process": { "action": "kill", "signal": "SIGKILL", "processes": 8,     // optional
//!                "down_at_seconds": 3.0, "gone_at_seconds": 3.01, "resumed_at_seconds": 8.0,
//!                "ready_at_seconds": 8.6, "stopped": { "outcome": "killed", "detail": "…" } },
//!   "restart": { "signal": "SIGKILL", "at_seconds": 5.0, "ready_after_seconds": 1.4,
//!                "errors_during_restart": 37 },                    // optional
//!   "writes": { "attempted": 4900, "acknowledged": 4812, "ok": 4812, "lost": 0, "recovered": 3,
//!               "unexpected": 0, "failed": 80, "unknown": 8, "first_lost": [],
//!               "first_unexpected": [], "valid": true,
//!               "history": { "path": "histories/<sha256>.jsonl", "sha256": "…", "lines": 4900 },
//!               "checker": { "command": "…", "verdict": "valid", "exit": 0, "detail": "…" } },
//!   "killed_instance": { "outcome": "ok", "detail": "…" }            // optional, with a restart
//! }]
//! ```
//!
//! Reading is tolerant: a single object reads as a list of one, a missing or mistyped field
//! becomes its default (`None`, empty, 0), an entry that is not an object is skipped — a
//! receipt from a newer or older qualify still reads.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use super::Fault;
use crate::outcome::Outcome;

/// What one cell did to one dependency (or to the service itself), and how the service behaved.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FaultRecord {
    /// The `[[dependency]]` the fault was put on; `None` for a restart-only record.
    #[serde(default, deserialize_with = "lenient")]
    pub dependency: Option<String>,
    /// The fault, canonical (`none`, `latency(200ms)`, `down`, …).
    #[serde(default, deserialize_with = "lenient")]
    pub fault: String,
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub window: Option<WindowRecord>,
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub recover_within_seconds: Option<f64>,
    #[serde(default, deserialize_with = "lenient")]
    pub behaviour: BehaviourRecord,
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub phases: Option<PhasesRecord>,
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub restart: Option<RestartRecord>,
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub writes: Option<SetCheck>,
    /// How the instance killed by the restart ended (its probe's outcome and detail).
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub killed_instance: Option<KilledInstance>,
    /// A process fault (`kill`, `pause`, `restart`): what was done to the dependency's
    /// processes, and when it went down and was ready again.
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub process: Option<ProcessRecord>,
}

/// What a process fault did to a dependency's whole process tree. Times are seconds from the
/// measured phase's start; `None` where that step did not happen (the load ended first, or it
/// failed: `errors` says why).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProcessRecord {
    /// `kill`, `pause` or `restart`.
    #[serde(default, deserialize_with = "lenient")]
    pub action: String,
    /// The signal that took it down: `SIGKILL`, `SIGSTOP`, `SIGTERM`.
    #[serde(default, deserialize_with = "lenient")]
    pub signal: String,
    /// Processes of the tree the signal was sent to.
    #[serde(default, deserialize_with = "lenient")]
    pub processes: u64,
    /// When the signal was sent.
    #[serde(default, deserialize_with = "lenient")]
    pub down_at_seconds: Option<f64>,
    /// `kill`, `restart`: when the old tree was gone (it ended, or was killed after the grace).
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub gone_at_seconds: Option<f64>,
    /// `kill`, `restart`: when it was started again (same command, same data directory);
    /// `pause`: when it was continued (SIGCONT).
    #[serde(default, deserialize_with = "lenient")]
    pub resumed_at_seconds: Option<f64>,
    /// When its ready check passed again (`pause`: at SIGCONT); `None`: not ready again
    /// within its `ready.within`, or never resumed.
    #[serde(default, deserialize_with = "lenient")]
    pub ready_at_seconds: Option<f64>,
    /// `kill`, `restart`: how the stopped instance ended (its probe's outcome and detail).
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub stopped: Option<KilledInstance>,
    /// What went wrong doing it (a signal that could not be sent, a start that failed).
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub errors: Vec<String>,
}

/// When the fault was active (for a restart: from the kill until ready), seconds from the
/// measured phase's start.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct WindowRecord {
    #[serde(default, deserialize_with = "lenient")]
    pub start_seconds: f64,
    #[serde(default, deserialize_with = "lenient")]
    pub end_seconds: f64,
}

/// The behaviour verdict and the figures behind it (`qualify_faults::Behaviour`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BehaviourRecord {
    /// `stops`, `recovers`, `recovers_late`, `degrades`, `unaffected`, `retry_storm`, `hangs`,
    /// `loses_writes` (kept as text: a verdict this version does not know still reads).
    #[serde(default, deserialize_with = "lenient")]
    pub verdict: String,
    #[serde(default, deserialize_with = "lenient")]
    pub detail: String,
    /// Seconds from the window's end until the SLOs held again; `None`: they did not hold again
    /// by the end of the load.
    #[serde(default, deserialize_with = "lenient")]
    pub recovery_seconds: Option<f64>,
    #[serde(default, deserialize_with = "lenient")]
    pub error_rate_before: Option<f64>,
    #[serde(default, deserialize_with = "lenient")]
    pub error_rate_during: Option<f64>,
    #[serde(default, deserialize_with = "lenient")]
    pub error_rate_after: Option<f64>,
    #[serde(default, deserialize_with = "lenient")]
    pub amplification_before: Option<AmplificationRecord>,
    #[serde(default, deserialize_with = "lenient")]
    pub amplification_during: Option<AmplificationRecord>,
    #[serde(default, deserialize_with = "lenient")]
    pub amplification_after: Option<AmplificationRecord>,
    /// Connection attempts at the dependency per service request during the window.
    #[serde(default, deserialize_with = "lenient")]
    pub attempts_per_request: Option<f64>,
    /// The dependency's connections during the window, when they held a level (a pool).
    #[serde(default, deserialize_with = "lenient")]
    pub pool: Option<PoolRecord>,
    /// The noise floor a slowdown had to exceed to be `degrades` (for the control: its own
    /// variation).
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub noise_floor: Option<NoiseFloorRecord>,
    /// Counts of the service's process tree that grew in the window and did not come back.
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub left_after_window: Vec<ResourceRecord>,
    /// The behaviours the claim accepts under this fault (its axis's `expect`); `None`: the
    /// claim states none.
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub expected: Option<Vec<String>>,
}

impl BehaviourRecord {
    /// The verdict, when it is one this version knows.
    pub fn parsed_verdict(&self) -> Option<super::Verdict> {
        self.verdict.parse().ok()
    }

    /// Whether the claim states an expectation and the verdict is outside it.
    pub fn unexpected(&self) -> bool {
        self.expected
            .as_ref()
            .is_some_and(|e| !e.contains(&self.verdict))
    }
}

/// The noise floor of a cell's slowdown: ratios (≥ 1) per percentile, and their sources.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct NoiseFloorRecord {
    #[serde(default, deserialize_with = "lenient")]
    pub p99: f64,
    #[serde(default, deserialize_with = "lenient")]
    pub p50: f64,
    /// The control cell's variation across its phases (largest ÷ smallest).
    #[serde(default, deserialize_with = "lenient")]
    pub control_p99: Option<f64>,
    #[serde(default, deserialize_with = "lenient")]
    pub control_p50: Option<f64>,
    /// This cell's p99 variation second to second before the window.
    #[serde(default, deserialize_with = "lenient")]
    pub before_window_p99: Option<f64>,
}

/// A count of the service's process tree (`threads`, `open_files`, `sockets`) around the window.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResourceRecord {
    #[serde(default, deserialize_with = "lenient")]
    pub kind: String,
    #[serde(default, deserialize_with = "lenient")]
    pub before: u64,
    #[serde(default, deserialize_with = "lenient")]
    pub peak_during: u64,
    #[serde(default, deserialize_with = "lenient")]
    pub end: u64,
}

impl ResourceRecord {
    /// `151 threads left after the window`.
    pub fn text(&self) -> String {
        format!(
            "{} {} left after the window",
            self.end.saturating_sub(self.before),
            self.kind.replace('_', " ")
        )
    }
}

/// Dependency traffic per request the service received, in one phase.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct AmplificationRecord {
    #[serde(default, deserialize_with = "lenient")]
    pub requests: f64,
    #[serde(default, deserialize_with = "lenient")]
    pub connections: f64,
}

/// Connections to the dependency held at one level during the window.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PoolRecord {
    #[serde(default, deserialize_with = "lenient")]
    pub connections: u64,
    /// Every one of them was awaiting a reply: the pool was exhausted.
    #[serde(default, deserialize_with = "lenient")]
    pub all_busy: bool,
    /// More requests were in flight at the service than connections: requests queued.
    #[serde(default, deserialize_with = "lenient")]
    pub requests_queued: bool,
}

/// The service and the dependency before, during and after the window.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PhasesRecord {
    #[serde(default, deserialize_with = "lenient")]
    pub before: PhaseRecord,
    #[serde(default, deserialize_with = "lenient")]
    pub during: PhaseRecord,
    #[serde(default, deserialize_with = "lenient")]
    pub after: PhaseRecord,
}

/// One phase: what the load generator saw of the service, and what the proxy saw at the
/// dependency.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PhaseRecord {
    #[serde(default, deserialize_with = "lenient")]
    pub requests: u64,
    #[serde(default, deserialize_with = "lenient")]
    pub errors: u64,
    #[serde(default, deserialize_with = "lenient")]
    pub timeouts: u64,
    /// Corrected latency percentiles, seconds.
    #[serde(default, deserialize_with = "lenient")]
    pub latency_p50: Option<f64>,
    #[serde(default, deserialize_with = "lenient")]
    pub latency_p99: Option<f64>,
    #[serde(default, deserialize_with = "lenient")]
    pub peak_in_flight: u64,
    /// Requests answered as expected.
    #[serde(default, deserialize_with = "lenient")]
    pub succeeded: u64,
    /// The phase's length, seconds (goodput = succeeded ÷ seconds).
    #[serde(default, deserialize_with = "lenient")]
    pub seconds: f64,
    /// Failed requests that came back before the timeout, and their corrected latency.
    #[serde(default, deserialize_with = "lenient")]
    pub fast_errors: u64,
    #[serde(default, deserialize_with = "lenient")]
    pub fast_error_p50: Option<f64>,
    #[serde(default, deserialize_with = "lenient")]
    pub fast_error_p99: Option<f64>,
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub dependency: Option<DependencyPhaseRecord>,
}

impl PhaseRecord {
    /// Successful answers per second of the phase (`None` for records without its length).
    pub fn goodput(&self) -> Option<f64> {
        (self.seconds > 0.0).then(|| self.succeeded as f64 / self.seconds)
    }
}

/// The proxy's counters of one phase (`qualify_faults::PhaseCounters`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DependencyPhaseRecord {
    #[serde(default, deserialize_with = "lenient")]
    pub connections_opened: u64,
    /// Connects refused while the dependency was `down`, when counted.
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub failed_connects: Option<u64>,
    #[serde(default, deserialize_with = "lenient")]
    pub peak_connections: u64,
    #[serde(default, deserialize_with = "lenient")]
    pub peak_busy_connections: u64,
    /// Chunks in the request direction.
    #[serde(default, deserialize_with = "lenient")]
    pub requests: u64,
    #[serde(default, deserialize_with = "lenient")]
    pub replies: u64,
    #[serde(default, deserialize_with = "lenient")]
    pub bytes_upstream: u64,
    #[serde(default, deserialize_with = "lenient")]
    pub bytes_downstream: u64,
    #[serde(default, deserialize_with = "lenient")]
    pub resets: u64,
    /// A `protocol = "http"` dependency whose traffic the proxy parsed: `requests` and
    /// `replies` above count HTTP requests and final replies, and this says what the
    /// replies were.
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub http: Option<HttpPhaseRecord>,
}

/// The HTTP replies of one phase as the service received them (the proxy's own included).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HttpPhaseRecord {
    /// Final replies by status code (`"200": 310, "503": 97`).
    #[serde(default, deserialize_with = "lenient")]
    pub statuses: std::collections::BTreeMap<String, u64>,
    /// Replies the fault made: a status replaced (`status`) or answered by the proxy
    /// (`throttle`).
    #[serde(default, deserialize_with = "lenient")]
    pub injected: u64,
    /// Requests the fault held (`http_delay`).
    #[serde(default, deserialize_with = "lenient")]
    pub delayed: u64,
}

/// A kill and restart of the service under load (`[recovery]`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RestartRecord {
    #[serde(default, deserialize_with = "lenient")]
    pub signal: String,
    /// The kill's offset in the measured phase.
    #[serde(default, deserialize_with = "lenient")]
    pub at_seconds: f64,
    /// From the kill until ready again; `None`: not ready within `ready_within`.
    #[serde(default, deserialize_with = "lenient")]
    pub ready_after_seconds: Option<f64>,
    #[serde(default, deserialize_with = "lenient")]
    pub errors_during_restart: u64,
}

/// The acknowledged-writes check: Jepsen's `checker/set` over write sequence numbers
/// (`qualify_faults::check_set` computes it from the attempted, acknowledged and present ids).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SetCheck {
    #[serde(default, deserialize_with = "lenient")]
    pub attempted: u64,
    #[serde(default, deserialize_with = "lenient")]
    pub acknowledged: u64,
    #[serde(default, deserialize_with = "lenient")]
    pub ok: u64,
    /// Acknowledged, missing from the final read.
    #[serde(default, deserialize_with = "lenient")]
    pub lost: u64,
    /// Present, never acknowledged.
    #[serde(default, deserialize_with = "lenient")]
    pub recovered: u64,
    /// Present, never attempted.
    #[serde(default, deserialize_with = "lenient")]
    pub unexpected: u64,
    /// Acknowledged, but their read-back got no answer (it failed, or the check's time ran
    /// out): neither ok nor lost, and the history is not valid while any is unread.
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "is_zero")]
    pub unread: u64,
    /// Attempted writes answered with a failure (or refused before they were sent); `None`
    /// when the check did not know which failed.
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub failed: Option<u64>,
    /// Attempted writes with no answer (timed out, reset, still in flight at the load's end):
    /// they may or may not have happened, and are never counted lost; `None` as `failed`.
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub unknown: Option<u64>,
    /// The smallest lost ids (at most a few).
    #[serde(default, deserialize_with = "lenient")]
    pub first_lost: Vec<u64>,
    /// The smallest unexpected ids (at most a few).
    #[serde(default, deserialize_with = "lenient")]
    pub first_unexpected: Vec<u64>,
    /// Every acknowledged write read back and present, nothing unexpected, and the
    /// `checker` (when there is one) accepted the history.
    #[serde(default, deserialize_with = "lenient")]
    pub valid: bool,
    /// The history of every write, written beside the receipt.
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub history: Option<HistoryFile>,
    /// The spec's `checker`'s judgement of the history.
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub checker: Option<CheckerRecord>,
}

/// A write history file: JSON Lines, one write per line (`{"seq": 17, "outcome":
/// "acknowledged", "read": "present"}`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HistoryFile {
    /// Relative to the receipt's directory (`histories/<sha256>.jsonl`).
    #[serde(default, deserialize_with = "lenient")]
    pub path: String,
    #[serde(default, deserialize_with = "lenient")]
    pub sha256: String,
    #[serde(default, deserialize_with = "lenient")]
    pub lines: u64,
}

/// What the write checker answered.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckerRecord {
    /// The command as run (`{history}` rendered).
    #[serde(default, deserialize_with = "lenient")]
    pub command: String,
    /// `valid` (exit 0), `invalid` (exit 1) or `error` (anything else: the history was not
    /// judged).
    #[serde(default, deserialize_with = "lenient")]
    pub verdict: String,
    /// Its exit status (`None`: it did not exit, e.g. killed at its deadline).
    #[serde(default, deserialize_with = "lenient")]
    pub exit: Option<i32>,
    /// Its last line of output (stdout, else stderr), or why it could not run.
    #[serde(default, deserialize_with = "lenient")]
    pub detail: String,
}

impl CheckerRecord {
    /// The checker judged the history valid.
    pub fn accepted(&self) -> bool {
        self.verdict == "valid"
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// How the service instance a restart killed ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KilledInstance {
    pub outcome: Outcome,
    #[serde(default, deserialize_with = "lenient")]
    pub detail: String,
}

/// A field that does not have the expected type reads as its default.
pub(crate) fn lenient<'de, D: Deserializer<'de>, T: DeserializeOwned + Default>(
    d: D,
) -> Result<T, D::Error> {
    let value = Value::deserialize(d)?;
    Ok(serde_json::from_value(value).unwrap_or_default())
}

impl FaultRecord {
    /// The same record with the restart's signal and kill offset (the spec's `[recovery]`
    /// `signal` and `at`); no effect without a restart.
    pub fn with_restart(mut self, signal: &str, at_seconds: f64) -> FaultRecord {
        if let Some(r) = self.restart.as_mut() {
            r.signal = signal.to_string();
            r.at_seconds = at_seconds;
        }
        self
    }

    /// A fault other than `none` was put on a dependency.
    pub fn injected(&self) -> bool {
        self.dependency.is_some() && !self.fault.is_empty() && self.fault != "none"
    }

    /// The fault, parsed (`None` when the text is not one this version knows).
    pub fn parsed_fault(&self) -> Option<Fault> {
        self.fault.parse().ok()
    }

    /// `db latency(200ms)`, or `restart` for a restart-only record.
    pub fn subject(&self) -> String {
        match &self.dependency {
            Some(d) => format!("{d} {}", self.fault),
            None => "restart".to_string(),
        }
    }

    /// What the service did, in a few words, with the verdict in parentheses and the
    /// recovery: `queued until timeouts (hangs), recovered 1.2 s after`.
    pub fn behaviour_text(&self) -> String {
        let b = &self.behaviour;
        let percent =
            |r: Option<f64>| r.map_or_else(String::new, |r| format!(" ({:.0}% errors)", r * 100.0));
        let during = self.phases.as_ref().map(|p| &p.during);
        let phrase = match b.verdict.as_str() {
            "hangs" => match during.filter(|d| d.requests > 0) {
                Some(d) => format!(
                    "left {} of {} requests in the window without an answer until they timed out",
                    thousands(d.timeouts),
                    thousands(d.requests)
                ),
                None => "left requests without an answer until they timed out".to_string(),
            },
            "fails_fast" => match during.and_then(|d| d.fast_error_p99.map(|p| (d, p))) {
                Some((d, p99)) => format!(
                    "failed fast ({} of {} requests in the window, p99 {})",
                    thousands(d.fast_errors),
                    thousands(d.requests),
                    seconds(p99)
                ),
                None => format!("failed fast{}", percent(b.error_rate_during)),
            },
            "control" => "no fault: the control".to_string(),
            "retry_storm" => match (b.attempts_per_request, b.amplification_during) {
                (Some(a), _) if a >= 1.0 => format!("retried {} per request", times(a)),
                (_, Some(amp)) => format!(
                    "sent {} dependency requests per request",
                    times(amp.requests)
                ),
                _ => "retried into a storm".to_string(),
            },
            "stops"
                if self
                    .restart
                    .as_ref()
                    .is_some_and(|r| r.ready_after_seconds.is_none()) =>
            {
                "never became ready after the restart".to_string()
            }
            "stops" => "stopped serving".to_string(),
            "recovers" | "recovers_late" => format!(
                "failed requests during the fault{}",
                percent(b.error_rate_during)
            ),
            "degrades" => "slower but within its SLOs".to_string(),
            "unaffected" => "no visible effect".to_string(),
            "loses_writes" => "lost acknowledged writes".to_string(),
            "" => "no verdict".to_string(),
            _ => b.detail.clone(),
        };
        let verdict = if b.verdict.is_empty() {
            String::new()
        } else {
            format!(" ({})", b.verdict)
        };
        let recovery = match (b.verdict.as_str(), b.recovery_seconds) {
            ("degrades" | "unaffected" | "control" | "", _) => String::new(),
            ("stops", _) if self.restart.is_some() => String::new(),
            (_, Some(t)) => format!(", recovered {} after", seconds(t)),
            (_, None) => ", not recovered by the end of the load".to_string(),
        };
        let pool = match b.pool {
            Some(p) if p.all_busy && p.requests_queued => format!(
                "; dependency connections plateaued at {} (all busy) while requests queued",
                p.connections
            ),
            _ => String::new(),
        };
        let left: String = b
            .left_after_window
            .iter()
            .map(|r| format!("; {}", r.text()))
            .collect();
        let process = self
            .process
            .as_ref()
            .map(|p| format!("; {}", p.text()))
            .unwrap_or_default();
        format!("{phrase}{verdict}{recovery}{pool}{left}{process}")
    }

    /// What the claim expected of the behaviour, for a sentence after it: empty when it states
    /// nothing, `, as the claim expects`, or `; the claim expects fails_fast or degrades`.
    pub fn expectation_text(&self) -> String {
        match &self.behaviour.expected {
            None => String::new(),
            Some(_) if !self.behaviour.unexpected() => ", as the claim expects".to_string(),
            Some(e) => {
                let parsed: Vec<super::Verdict> = e.iter().filter_map(|v| v.parse().ok()).collect();
                format!("; the claim expects {}", super::verdict::one_of(&parsed))
            }
        }
    }

    /// The restart and write check in one line: `SIGKILL under load at 5 s: ready again after
    /// 1.4 s, 37 errors during the restart; 0 of 4,812 acknowledged writes lost`.
    pub fn restart_text(&self) -> Option<String> {
        let r = self.restart.as_ref();
        let w = self.writes.as_ref();
        if r.is_none() && w.is_none() {
            return None;
        }
        let mut out = match r {
            Some(r) => {
                let signal = if r.signal.is_empty() {
                    "kill"
                } else {
                    &r.signal
                };
                let ready = match r.ready_after_seconds {
                    Some(t) => format!("ready again after {}", seconds(t)),
                    None => "NOT ready again within ready_within".to_string(),
                };
                format!(
                    "{signal} under load at {}: {ready}, {} error(s) during the restart",
                    seconds(r.at_seconds),
                    thousands(r.errors_during_restart)
                )
            }
            None => "write check".to_string(),
        };
        if let Some(w) = w {
            out.push_str(&format!(
                "{} {} of {} acknowledged writes lost",
                if r.is_some() { ";" } else { ":" },
                thousands(w.lost),
                thousands(w.acknowledged)
            ));
            if w.lost > 0 {
                let first: Vec<String> = w.first_lost.iter().map(u64::to_string).collect();
                out.push_str(&format!(" (first: {})", first.join(", ")));
            }
            if w.unexpected > 0 {
                out.push_str(&format!(", {} unexpected", thousands(w.unexpected)));
            }
            if w.unread > 0 {
                out.push_str(&format!(
                    ", {} not read back (neither kept nor lost as far as the check knows)",
                    thousands(w.unread)
                ));
            }
            if let Some(unknown) = w.unknown.filter(|n| *n > 0) {
                out.push_str(&format!(
                    ", {} unknown (no answer: never counted lost)",
                    thousands(unknown)
                ));
            }
            if let Some(c) = &w.checker {
                out.push_str(&format!("; checker: {} ({})", c.verdict, c.detail));
            }
        }
        Some(out)
    }
}

impl ProcessRecord {
    /// What was done, in a few words: `SIGKILL to 3 processes at 1.0 s, gone at once, ready
    /// again at 2.4 s`.
    pub fn text(&self) -> String {
        let signal = if self.signal.is_empty() {
            &self.action
        } else {
            &self.signal
        };
        let Some(down) = self.down_at_seconds else {
            return match self.errors.first() {
                Some(e) => format!("{} not done: {e}", self.action),
                None => format!("{} not done: the load ended before the window", self.action),
            };
        };
        let mut out = format!(
            "{signal} to {} process{} at {}",
            self.processes,
            if self.processes == 1 { "" } else { "es" },
            seconds(down)
        );
        if self.action == "pause" {
            match self.resumed_at_seconds {
                Some(t) => out.push_str(&format!(", SIGCONT at {}", seconds(t))),
                None => out.push_str(", never continued"),
            }
        } else {
            match self.ready_at_seconds {
                Some(t) => out.push_str(&format!(", ready again at {}", seconds(t))),
                None if self.resumed_at_seconds.is_some() => out.push_str(", NOT ready again"),
                None => out.push_str(", not started again"),
            }
        }
        if let Some(e) = self.errors.first() {
            out.push_str(&format!(" ({e})"));
        }
        out
    }
}

/// The fault records in `value`: an array of records, or one record (older receipts); entries
/// that are not objects are skipped, mistyped fields read as their defaults.
pub fn read_value(value: &Value) -> Vec<FaultRecord> {
    let entries: &[Value] = match value {
        Value::Array(items) => items,
        Value::Object(_) => std::slice::from_ref(value),
        _ => &[],
    };
    entries
        .iter()
        .filter(|v| v.is_object())
        .filter_map(|v| serde_json::from_value(v.clone()).ok())
        .collect()
}

/// Serde for `ProbeResult::faults`: [`read_value`]'s tolerance (one object or an array).
pub(crate) fn one_or_many<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<FaultRecord>, D::Error> {
    Ok(read_value(&Value::deserialize(d)?))
}

/// `1.2 s`, `350 ms`.
fn seconds(v: f64) -> String {
    if v >= 1.0 || v == 0.0 {
        format!("{v:.1} s")
    } else {
        format!("{:.0} ms", v * 1000.0)
    }
}

/// `11×`, `2.5×`.
fn times(x: f64) -> String {
    if x >= 10.0 || (x - x.round()).abs() < 0.05 {
        format!("{:.0}×", x)
    } else {
        format!("{x:.1}×")
    }
}

/// `4,812`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}
