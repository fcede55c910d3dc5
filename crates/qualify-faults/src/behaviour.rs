//! How a service behaved when its dependency failed: the behaviour verdict of a cell, recovery
//! time, amplification, pool saturation, the noise floor and what the service kept after the
//! window — a pure function of typed observations any fault can fill ([`Observation`]).
//!
//! Inputs are per window phase (`before`, `during`, `after`, as offsets from the measured phase's
//! start): what the load generator saw of the service ([`PhaseLoad`]: requests, what they met —
//! an answer, a fast error with its latency, or a timeout), what the proxy saw at the dependency
//! ([`DependencyObservation`]), a per-second timeline to date recovery, the write check, the
//! restart, the control cell's variation ([`Noise`]) and the service's threads, open files and
//! sockets around the window ([`ResourceObservation`]).
//!
//! Verdicts (the closed list is `qualify_model::fault::Verdict`; the first rule that applies
//! wins):
//!
//! 0. `control` — no fault was put on anything (the `none` cell): never a fault verdict; the
//!    detail states how much its latency varied between before, during and after the window
//!    (and second by second before it): the noise floor of the other cells.
//! 1. `loses_writes` — an acknowledged write is missing from the final read.
//! 2. `retry_storm` — at the dependency, requests (or connection attempts: connections opened
//!    plus failed connects when the proxy counted them — the refused ones of `down`) per service request
//!    during the window are ≥ [`STORM_FACTOR`]× what they were before it (connections only for
//!    a client that opened at least one per request before: against a pooled client's near-zero
//!    a reconnect looks like a storm), or connection attempts per service request during the
//!    window exceed [`MAX_ATTEMPTS_PER_REQUEST`].
//! 3. `stops` — a restarted service never became ready again.
//! 4. `unaffected` / `degrades` — the window's failed requests stayed within the error budget
//!    (the `error_rate` objective, else 1%) and every second from its start held the SLOs;
//!    `degrades` if p99 or p50 in the window was slower than before by more than the **noise
//!    floor** (and at least [`SLOWER_MIN_SECONDS`] more), else `unaffected`. The floor of a
//!    percentile is the largest of [`SLOWER_FACTOR`], the control cell's variation of it
//!    across its phases and, for p99, this cell's own second-to-second variation before the
//!    window (the timeline has no per-second p50).
//! 5. `hangs` — the window's failed requests mostly timed out (timeouts ≥ fast errors, and
//!    more of them than the error budget allows): the service held them without an answer for
//!    the load's whole timeout, whatever `max_in_flight` (at a moderate rate the slots never
//!    fill).
//! 6. `stops` — the SLOs never held again after the window (until the end of the load).
//! 7. `fails_fast` — the window's failed requests mostly came back fast (an error answer, a
//!    refused or reset connection: fast errors > timeouts), with their latency, and the SLOs
//!    held again — when, is in the detail (how the requests failed outranks how long the
//!    service took to come back: a busy machine moves the one, not the other).
//! 8. `recovers_late` — the SLOs broke in the window without failed requests beyond the budget
//!    and held again later than `recover_within` (the cell's outcome is `not_recovered`).
//! 9. `recovers` — the same, held again within `recover_within`.
//!
//! A standing fault (`window = "all"`) has no after: its recovery is `not_examined`, its
//! failures are `hangs`, `fails_fast` or (the objectives broken otherwise) `degrades`, and its
//! latency is compared with the control's level.
//!
//! Every fault verdict's detail ends with what the service kept after the window: a count of
//! threads, open files or sockets that grew in the window by at least
//! [`RESOURCE_MIN_GROWTH`] (and half the level before it) and was still at least half that
//! growth above the level before it after the load ended and its connections closed (`151
//! threads left after the window`): a thread that served an idle keep-alive connection is gone
//! by then, one stuck on a request to the dependency is not.

use serde::{Deserialize, Serialize};

use crate::checker::SetCheck;
use crate::stats::{PhaseCounters, Series};

pub use qualify_model::fault::{Noise, Verdict};

/// Amplification during the window of at least this many times the amplification before it is
/// a retry storm.
pub const STORM_FACTOR: f64 = 3.0;
/// More connection attempts than this per service request during the window is a retry storm
/// (Google SRE: at most 3 attempts per request).
pub const MAX_ATTEMPTS_PER_REQUEST: f64 = 3.0;
/// `degrades`: p50 or p99 in the window at least this many times before (the smallest noise
/// floor) …
pub const SLOWER_FACTOR: f64 = 1.5;
/// … and at least this much slower in absolute terms (microsecond noise is not a slowdown).
pub const SLOWER_MIN_SECONDS: f64 = 0.001;
/// A resource count must grow by at least this much in the window to be named.
pub const RESOURCE_MIN_GROWTH: u64 = 5;

/// What the load generator saw of the service in one phase.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PhaseLoad {
    /// Requests sent to (received by) the service.
    pub requests: u64,
    /// All errors, timeouts included.
    pub errors: u64,
    /// Errors of class `timeout` (no answer within the load's timeout).
    pub timeouts: u64,
    /// Corrected latency percentiles of the answers, seconds.
    pub latency_p50: Option<f64>,
    pub latency_p99: Option<f64>,
    /// Peak requests outstanding at once.
    pub peak_in_flight: u64,
    /// Requests answered as expected (goodput's numerator).
    #[serde(default)]
    pub succeeded: u64,
    /// The fast errors' corrected latency, seconds.
    #[serde(default)]
    pub fast_error_p50: Option<f64>,
    #[serde(default)]
    pub fast_error_p99: Option<f64>,
    /// The phase's length, seconds.
    #[serde(default)]
    pub seconds: f64,
}

impl PhaseLoad {
    pub fn error_rate(&self) -> Option<f64> {
        (self.requests > 0).then(|| self.errors as f64 / self.requests as f64)
    }

    /// Errors that came back before the timeout (status codes, refused, reset, …).
    pub fn fast_errors(&self) -> u64 {
        self.errors.saturating_sub(self.timeouts)
    }

    /// Successful answers per second of the phase.
    pub fn goodput(&self) -> Option<f64> {
        (self.seconds > 0.0).then(|| self.succeeded as f64 / self.seconds)
    }
}

/// What the proxy saw at the dependency.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DependencyObservation {
    pub before: PhaseCounters,
    pub during: PhaseCounters,
    pub after: PhaseCounters,
    /// Concurrency per bucket from the armed instant (= the measured phase's start).
    pub series: Series,
}

/// One second of the measured phase (index = seconds since its start).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct TimelineSecond {
    pub sent: u64,
    pub completed: u64,
    pub errors: u64,
    /// Corrected p99 of the requests completed in this second.
    pub p99: Option<f64>,
}

/// The SLOs a single second can be judged on.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SecondSlos {
    /// The spec's `error_rate` SLO; with none, any error breaks a second (0.0).
    pub max_error_rate: f64,
    /// The spec's `latency_p99` SLO, seconds.
    pub max_p99: Option<f64>,
    /// The spec's `throughput` SLO (completed per second).
    pub min_throughput: Option<f64>,
}

impl SecondSlos {
    pub fn new(error_rate: Option<f64>, p99: Option<f64>, throughput: Option<f64>) -> SecondSlos {
        SecondSlos {
            max_error_rate: error_rate.unwrap_or(0.0),
            max_p99: p99,
            min_throughput: throughput,
        }
    }

    /// Whether `s` met every SLO. A second in which nothing was sent holds only when there is no
    /// throughput SLO.
    pub fn held(&self, s: &TimelineSecond) -> bool {
        let errors_ok = s.sent == 0 || (s.errors as f64 / s.sent as f64) <= self.max_error_rate;
        let p99_ok = match (self.max_p99, s.p99) {
            (Some(limit), Some(v)) => v <= limit,
            _ => true,
        };
        let throughput_ok = self
            .min_throughput
            .is_none_or(|min| s.completed as f64 >= min);
        errors_ok && p99_ok && throughput_ok
    }
}

/// Time from the window's end until the SLOs held again.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Recovery {
    /// Seconds after the window's end (0 when the first second after it held).
    After(f64),
    /// The SLOs did not hold again through the end of the load.
    NotRecovered,
    /// A standing fault never ended within the load: there was nothing to recover from.
    NotExamined,
}

impl Serialize for Recovery {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Recovery::After(t) => s.serialize_f64(*t),
            Recovery::NotRecovered => s.serialize_str("not_recovered"),
            Recovery::NotExamined => s.serialize_str("not_examined"),
        }
    }
}

/// The first second from which every later second held the SLOs, counted from the second that
/// contains the window's end; `NotRecovered` if the last second failed or no second after the
/// window was measured.
pub fn recovery_time(timeline: &[TimelineSecond], window_end: f64, slos: &SecondSlos) -> Recovery {
    let first = window_end.max(0.0).floor() as usize;
    if first >= timeline.len() {
        return Recovery::NotRecovered;
    }
    let mut from = None;
    for k in (first..timeline.len()).rev() {
        if !slos.held(&timeline[k]) {
            break;
        }
        from = Some(k);
    }
    match from {
        Some(k) => Recovery::After((k as f64 - window_end).max(0.0)),
        None => Recovery::NotRecovered,
    }
}

/// A kill and restart of the service under load (`[recovery]`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct RestartObservation {
    /// Seconds from the kill until the service was ready; `None`: not ready within `ready_within`.
    pub ready_after: Option<f64>,
    pub errors_during_restart: u64,
}

/// What a process fault (`kill`, `pause`, `restart`) did to the dependency, seconds from the
/// measured phase's start. A fact beside the window for the rules to read; the rules above
/// judge a process fault by the same window as a wire fault.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ProcessObservation {
    /// When the signal took it down; `None`: it never was (the load ended first, or it failed).
    pub down_at: Option<f64>,
    /// When it was ready again; `None`: not ready again by the end of the load.
    pub ready_at: Option<f64>,
}

/// What the service's process tree held, counted by the probe's samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResourceKind {
    Threads,
    OpenFiles,
    Sockets,
}

impl ResourceKind {
    /// `threads`, `open files`, `sockets`.
    pub fn words(self) -> &'static str {
        match self {
            ResourceKind::Threads => "threads",
            ResourceKind::OpenFiles => "open files",
            ResourceKind::Sockets => "sockets",
        }
    }
}

/// One count of the service's process tree around the window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResourceObservation {
    pub kind: ResourceKind,
    /// The highest sample before the window.
    pub before: u64,
    /// The highest sample in the window.
    pub peak_during: u64,
    /// The level after the load ended and its connections closed.
    pub end: u64,
}

impl ResourceObservation {
    /// Grown in the window by at least [`RESOURCE_MIN_GROWTH`] and half the level before, and
    /// still at least half that growth above the level before at the end.
    pub fn left_after_window(&self) -> bool {
        let grew = self.peak_during.saturating_sub(self.before);
        let left = self.end.saturating_sub(self.before);
        grew >= RESOURCE_MIN_GROWTH.max(self.before / 2) && left * 2 >= grew
    }

    /// `151 threads left after the window (7 before it, 163 at the peak in it, 158 after the
    /// load ended)`.
    pub fn sentence(&self) -> String {
        format!(
            "{} {} left after the window ({} before it, {} at the peak in it, {} after the load ended)",
            self.end.saturating_sub(self.before),
            self.kind.words(),
            self.before,
            self.peak_during,
            self.end
        )
    }
}

/// Everything the verdict is computed from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Observation {
    pub before: PhaseLoad,
    pub during: PhaseLoad,
    pub after: PhaseLoad,
    /// The proxied dependency the fault was put on; `None` for restart-only cells.
    pub dependency: Option<DependencyObservation>,
    /// The load's `max_in_flight`.
    pub max_in_flight: u64,
    /// The load's timeout per request, seconds (0 when unknown).
    #[serde(default)]
    pub timeout: f64,
    /// The window, seconds from the measured phase's start (for a restart: kill → ready).
    pub window_start: f64,
    pub window_end: f64,
    pub recover_within: f64,
    pub timeline: Vec<TimelineSecond>,
    pub slos: SecondSlos,
    pub restart: Option<RestartObservation>,
    pub writes: Option<SetCheck>,
    /// The dependency's processes, when the fault was on them.
    #[serde(default)]
    pub process: Option<ProcessObservation>,
    /// No fault was put on anything in this cell (every fault `none`, no restart): the control.
    #[serde(default)]
    pub control: bool,
    /// The control cell's variation ([`Observation::own_noise`]) for the same values of the other
    /// axes, when one was measured.
    #[serde(default)]
    pub control_noise: Option<Noise>,
    /// The service's threads, open files and sockets around the window (empty: not sampled).
    #[serde(default)]
    pub resources: Vec<ResourceObservation>,
    /// A standing fault (`window = "all"`): held for the whole measured load, so there is no
    /// before or after in this cell; `before` holds the control cell's whole run when one was
    /// measured (else nothing), and recovery is not examined.
    #[serde(default)]
    pub standing: bool,
}

/// Dependency traffic per service request in one phase.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Amplification {
    /// Requests (chunks) at the dependency ÷ requests the service received.
    pub requests: f64,
    /// Connection attempts (opened + failed connects, when counted) at the dependency ÷ requests
    /// the service received.
    pub connections: f64,
}

/// The dependency's connections during the window, when they held a level.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PoolObservation {
    /// Open connections held at this level (a pool at its size).
    pub connections: u64,
    /// Every one of them was busy (awaiting a reply) at that level: the pool was exhausted.
    pub all_busy: bool,
    /// More requests were in flight at the service than connections: requests queued for one.
    pub requests_queued: bool,
}

/// The noise floor a slowdown had to exceed, per percentile (ratios ≥ [`SLOWER_FACTOR`]), and
/// where it came from.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct NoiseFloor {
    pub p99: f64,
    pub p50: f64,
    /// The control cell's variation across its phases.
    pub control: Option<Noise>,
    /// This cell's p99 variation second to second before the window.
    pub before_window_p99: Option<f64>,
}

/// The behaviour of a cell, as the receipt's `result.faults` states it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Behaviour {
    pub verdict: Verdict,
    /// One line for the checklist ("retried 11.0× per request …").
    pub detail: String,
    pub recovery: Recovery,
    pub error_rate_before: Option<f64>,
    pub error_rate_during: Option<f64>,
    pub error_rate_after: Option<f64>,
    pub amplification_before: Option<Amplification>,
    pub amplification_during: Option<Amplification>,
    pub amplification_after: Option<Amplification>,
    /// Connection attempts per service request during the window.
    pub attempts_per_request: Option<f64>,
    pub pool: Option<PoolObservation>,
    /// The floor `degrades` had to exceed (for the control: its own variation).
    pub noise_floor: Option<NoiseFloor>,
    /// Counts of the service's tree that grew in the window and did not return after it.
    pub left_after_window: Vec<ResourceObservation>,
}

fn amplification(load: &PhaseLoad, dep: &PhaseCounters) -> Option<Amplification> {
    let attempts = dep.connections_opened + dep.failed_connects.unwrap_or(0);
    (load.requests > 0).then(|| Amplification {
        requests: dep.requests as f64 / load.requests as f64,
        connections: attempts as f64 / load.requests as f64,
    })
}

fn ratio(during: f64, before: f64) -> Option<f64> {
    (before > 0.0).then(|| during / before)
}

fn seconds(v: f64) -> String {
    if v >= 1.0 {
        format!("{v:.1} s")
    } else {
        format!("{:.0} ms", v * 1000.0)
    }
}

fn percent(v: Option<f64>) -> String {
    v.map_or_else(|| "n/a".to_string(), |r| format!("{:.0}%", r * 100.0))
}

/// `2.1×`.
fn times(x: f64) -> String {
    format!("{x:.1}×")
}

/// Largest ÷ smallest of the positive values (`None` with fewer than two).
fn spread(values: impl IntoIterator<Item = Option<f64>>) -> Option<f64> {
    let v: Vec<f64> = values.into_iter().flatten().filter(|x| *x > 0.0).collect();
    if v.len() < 2 {
        return None;
    }
    let max = v.iter().copied().fold(f64::MIN, f64::max);
    let min = v.iter().copied().fold(f64::MAX, f64::min);
    Some(max / min)
}

impl Observation {
    /// The variation of this control cell: each percentile across its phases, p99 also
    /// second to second before its window (the larger).
    pub fn own_noise(&self) -> Noise {
        let o = self;
        let phases = [&o.before, &o.during, &o.after];
        let p99 = spread(phases.iter().map(|p| p.latency_p99));
        let p99 = match (p99, before_window_p99(o)) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        // A standing fault's control is one phase (the whole load); a windowed one's level is
        // its load before the window.
        let level = if o.standing { &o.during } else { &o.before };
        Noise {
            p99,
            p50: spread(phases.iter().map(|p| p.latency_p50)),
            latency_p99: level.latency_p99,
            latency_p50: level.latency_p50,
        }
    }
}

/// The p99 variation second to second over the seconds wholly before the window.
fn before_window_p99(o: &Observation) -> Option<f64> {
    let whole = o.window_start.max(0.0).floor() as usize;
    spread(o.timeline.iter().take(whole).map(|s| s.p99))
}

fn noise_floor(o: &Observation) -> NoiseFloor {
    let own = before_window_p99(o);
    let control = o.control_noise;
    let floor =
        |values: [Option<f64>; 2]| values.into_iter().flatten().fold(SLOWER_FACTOR, f64::max);
    NoiseFloor {
        p99: floor([control.and_then(|c| c.p99), own]),
        p50: floor([control.and_then(|c| c.p50), None]),
        control,
        before_window_p99: own,
    }
}

impl NoiseFloor {
    /// `noise floor 2.1×: the control varied 2.1×, this cell 1.3× before the window`.
    fn text(&self, which: &str) -> String {
        let floor = if which == "p50" { self.p50 } else { self.p99 };
        let mut sources = Vec::new();
        if let Some(c) = self
            .control
            .and_then(|c| if which == "p50" { c.p50 } else { c.p99 })
        {
            sources.push(format!("the control cell varied {}", times(c)));
        }
        if let Some(b) = self.before_window_p99.filter(|_| which == "p99") {
            sources.push(format!(
                "this cell {} second to second before the window",
                times(b)
            ));
        }
        if self.control.is_none() {
            sources.push("no control cell measured".to_string());
        }
        format!("noise floor {}: {}", times(floor), sources.join(", "))
    }
}

/// The verdict and the figures behind it.
pub fn judge(o: &Observation) -> Behaviour {
    let recovery = if o.standing {
        Recovery::NotExamined
    } else {
        recovery_time(&o.timeline, o.window_end, &o.slos)
    };
    let dep = o.dependency.as_ref();
    let amp_before = dep.and_then(|d| amplification(&o.before, &d.before));
    let amp_during = dep.and_then(|d| amplification(&o.during, &d.during));
    let amp_after = dep.and_then(|d| amplification(&o.after, &d.after));
    let attempts_per_request = amp_during.map(|a| a.connections);
    let pool = dep.and_then(|d| pool(o, d));
    let noise = if o.control {
        let own = o.own_noise();
        NoiseFloor {
            p99: own.p99.unwrap_or(1.0),
            p50: own.p50.unwrap_or(1.0),
            control: Some(own),
            before_window_p99: before_window_p99(o),
        }
    } else {
        noise_floor(o)
    };
    let left = if o.control {
        Vec::new()
    } else {
        left_after_window(&o.resources)
    };

    let mut b = Behaviour {
        verdict: Verdict::Unaffected,
        detail: String::new(),
        recovery,
        error_rate_before: o.before.error_rate(),
        error_rate_during: o.during.error_rate(),
        error_rate_after: o.after.error_rate(),
        amplification_before: amp_before,
        amplification_during: amp_during,
        amplification_after: amp_after,
        attempts_per_request,
        pool,
        noise_floor: Some(noise),
        left_after_window: left.clone(),
    };
    let (verdict, detail) = decide(o, &b);
    b.verdict = verdict;
    let mut detail = match pool {
        Some(p) if p.all_busy && p.requests_queued && !o.control => format!(
            "{detail}; dependency connections plateaued at {} (all busy) while requests queued",
            p.connections
        ),
        _ => detail,
    };
    for r in &left {
        detail.push_str("; ");
        detail.push_str(&r.sentence());
    }
    b.detail = detail;
    b
}

/// The counts that grew in the window and did not come back; open files only when more of
/// them than of sockets were left (a socket is an open file: the same growth is named once).
fn left_after_window(resources: &[ResourceObservation]) -> Vec<ResourceObservation> {
    let left: Vec<ResourceObservation> = resources
        .iter()
        .copied()
        .filter(ResourceObservation::left_after_window)
        .collect();
    let growth = |kind: ResourceKind| {
        left.iter()
            .find(|r| r.kind == kind)
            .map_or(0, |r| r.end.saturating_sub(r.before))
    };
    let other_files = growth(ResourceKind::OpenFiles).saturating_sub(growth(ResourceKind::Sockets));
    left.iter()
        .copied()
        .filter(|r| r.kind != ResourceKind::OpenFiles || other_files >= RESOURCE_MIN_GROWTH)
        .collect()
}

/// `, SLOs held again 1.0 s after the window` or `, not recovered`.
fn recovery_tail(recovery: Recovery) -> String {
    match recovery {
        Recovery::After(t) => format!(", SLOs held again {} after the window", seconds(t)),
        Recovery::NotRecovered => ", not recovered by the end of the load".to_string(),
        Recovery::NotExamined => String::new(),
    }
}

/// `p50 201 ms, p99 205 ms` of the window's fast errors.
fn fast_latency(p: &PhaseLoad) -> String {
    match (p.fast_error_p50, p.fast_error_p99) {
        (Some(a), Some(b)) => format!(" in p50 {}, p99 {}", seconds(a), seconds(b)),
        (None, Some(b)) => format!(" in p99 {}", seconds(b)),
        _ => String::new(),
    }
}

fn decide(o: &Observation, b: &Behaviour) -> (Verdict, String) {
    if o.control {
        return (Verdict::Control, control_detail(o));
    }
    if let Some(w) = o.writes.as_ref().filter(|w| w.lost > 0) {
        let first: Vec<String> = w.first_lost.iter().map(u64::to_string).collect();
        return (
            Verdict::LosesWrites,
            format!(
                "lost {} of {} acknowledged writes (first: {})",
                w.lost,
                w.acknowledged,
                first.join(", ")
            ),
        );
    }
    if let Some(detail) = storm(b) {
        return (Verdict::RetryStorm, detail);
    }
    if let Some(r) = o.restart.filter(|r| r.ready_after.is_none()) {
        return (
            Verdict::Stops,
            format!(
                "not ready again after the restart ({} errors meanwhile)",
                r.errors_during_restart
            ),
        );
    }
    let first = o.window_start.max(0.0).floor() as usize;
    let seconds_held = o.timeline.iter().skip(first).all(|s| o.slos.held(s));
    let within_budget = o.during.errors as f64 <= o.slos.max_error_rate * o.during.requests as f64;
    if within_budget && seconds_held {
        let errors = if o.during.errors > 0 {
            format!(
                " ({} failed request(s) in the window, within the error budget)",
                o.during.errors
            )
        } else {
            String::new()
        };
        if o.standing && o.before.latency_p99.is_none() && o.before.latency_p50.is_none() {
            return (
                Verdict::Unaffected,
                format!(
                    "within the objectives under the standing fault{errors}; its latency was compared with nothing (no control cell at the same values of the other axes)"
                ),
            );
        }
        let floor = b.noise_floor.unwrap_or_else(|| noise_floor(o));
        let (inside, baseline) = if o.standing {
            ("under the standing fault", "in the control")
        } else {
            ("in the window", "before")
        };
        return match slowdown(&o.before, &o.during, &floor) {
            Slowdown::Beyond {
                which,
                before,
                during,
            } => (
                Verdict::Degrades,
                format!(
                    "slower {inside} ({which} {} vs {} {baseline}, {}) but within SLOs{errors}",
                    seconds(during),
                    seconds(before),
                    floor.text(which)
                ),
            ),
            Slowdown::WithinNoise {
                which,
                before,
                during,
            } => (
                Verdict::Unaffected,
                format!(
                    "no slowdown beyond the noise {inside} ({which} {} vs {} {baseline}, within the {}){errors}",
                    seconds(during),
                    seconds(before),
                    floor.text(which)
                ),
            ),
            Slowdown::None if errors.is_empty() => (
                Verdict::Unaffected,
                "no errors and no slowdown in the window".to_string(),
            ),
            Slowdown::None => (
                Verdict::Unaffected,
                format!("no slowdown in the window{errors}"),
            ),
        };
    }
    let timeouts = o.during.timeouts;
    let fast = o.during.fast_errors();
    let limit = if o.timeout > 0.0 {
        format!(" (no answer within {})", seconds(o.timeout))
    } else {
        String::new()
    };
    // Held until the client gave up: timeouts outnumber fast failures and exceed the error
    // budget (a request or two timing out in a queue near capacity is no hang).
    let beyond_budget = timeouts as f64 > o.slos.max_error_rate * o.during.requests as f64;
    if timeouts > 0 && timeouts >= fast && beyond_budget {
        return (
            Verdict::Hangs,
            format!(
                "{timeouts} of {} requests in the window timed out{limit}, {fast} failed fast; peak {} in flight{}",
                o.during.requests,
                o.during.peak_in_flight.max(o.after.peak_in_flight),
                recovery_tail(b.recovery)
            ),
        );
    }
    match b.recovery {
        // Held for the whole load: failing answers are all there is to see.
        Recovery::NotExamined if fast > 0 => (
            Verdict::FailsFast,
            format!(
                "{fast} of {} requests under the standing fault failed fast{}, {timeouts} timed out",
                o.during.requests,
                fast_latency(&o.during),
            ),
        ),
        Recovery::NotExamined => (
            Verdict::Degrades,
            format!(
                "the objectives did not hold under the standing fault (p99 {}, error rate {})",
                o.during
                    .latency_p99
                    .map_or_else(|| "—".to_string(), seconds),
                percent(b.error_rate_during)
            ),
        ),
        Recovery::NotRecovered => (
            Verdict::Stops,
            format!(
                "SLOs did not hold again after the window (error rate {} in it, {} after)",
                percent(b.error_rate_during),
                percent(b.error_rate_after)
            ),
        ),
        // What the window's failures were outranks how long the service took to come back: a
        // busy machine moves the recovery, not the way requests failed (the recovery is in the
        // detail, and the cell's verdict weighs it against `recover_within`).
        Recovery::After(_) if fast > 0 && !within_budget => (
            Verdict::FailsFast,
            format!(
                "{fast} of {} requests in the window failed fast{}, {timeouts} timed out{}",
                o.during.requests,
                fast_latency(&o.during),
                recovery_tail(b.recovery)
            ),
        ),
        Recovery::After(t) if t > o.recover_within => (
            Verdict::RecoversLate,
            format!(
                "SLOs held again {} after the window, later than recover_within {} (error rate {} in it)",
                seconds(t),
                seconds(o.recover_within),
                percent(b.error_rate_during)
            ),
        ),
        Recovery::After(t) => (
            Verdict::Recovers,
            format!(
                "error rate {} in the window, SLOs held again {} after it",
                percent(b.error_rate_during),
                seconds(t)
            ),
        ),
    }
}

/// The control's detail: no fault, and how much it varied.
fn control_detail(o: &Observation) -> String {
    let ms = |v: Option<f64>| v.map_or_else(|| "—".to_string(), seconds);
    let own = o.own_noise();
    let mut t = format!(
        "no fault (the control): p99 {} before the window, {} in it, {} after it",
        ms(o.before.latency_p99),
        ms(o.during.latency_p99),
        ms(o.after.latency_p99)
    );
    match own.p99 {
        Some(v) => t.push_str(&format!(
            " — it varied {} (p50 {}): the noise floor of the faulted cells",
            times(v),
            own.p50.map_or_else(|| "—".to_string(), times)
        )),
        None => t.push_str(" — too few figures to measure its variation"),
    }
    if o.during.errors > 0 {
        t.push_str(&format!(
            "; {} failed request(s) in the window with no fault at all",
            o.during.errors
        ));
    }
    t
}

/// The retry-storm rule; `Some(detail)` when it fires.
fn storm(b: &Behaviour) -> Option<String> {
    let during = b.amplification_during?;
    if let Some(before) = b.amplification_before {
        if let Some(r) = ratio(during.requests, before.requests).filter(|r| *r >= STORM_FACTOR) {
            return Some(format!(
                "dependency requests per service request {:.2} before, {:.2} in the window ({r:.1}×)",
                before.requests, during.requests
            ));
        }
        // Connections are compared with before only for a client that opened one per request
        // or more: a pooled client opens almost none before the window (0.01 per request), so
        // reconnecting once per request and retrying a few within a budget would look like a
        // hundredfold storm. Its attempts are judged by their number alone (below).
        if let Some(r) = ratio(during.connections, before.connections)
            .filter(|r| *r >= STORM_FACTOR && before.connections >= 1.0)
        {
            return Some(format!(
                "dependency connections per service request {:.2} before, {:.2} in the window ({r:.1}×)",
                before.connections, during.connections
            ));
        }
    }
    (during.connections > MAX_ATTEMPTS_PER_REQUEST).then(|| {
        format!(
            "retried {:.1}× per request (connection attempts at the dependency per service request in the window)",
            during.connections
        )
    })
}

/// Whether a percentile slowed in the window, and whether beyond the noise floor.
enum Slowdown {
    Beyond {
        which: &'static str,
        before: f64,
        during: f64,
    },
    WithinNoise {
        which: &'static str,
        before: f64,
        during: f64,
    },
    None,
}

fn slowdown(before: &PhaseLoad, during: &PhaseLoad, floor: &NoiseFloor) -> Slowdown {
    let pairs = [
        ("p99", before.latency_p99, during.latency_p99, floor.p99),
        ("p50", before.latency_p50, during.latency_p50, floor.p50),
    ];
    let mut within = Slowdown::None;
    for (which, b, d, f) in pairs {
        let (Some(b), Some(d)) = (b, d) else {
            continue;
        };
        if d - b < SLOWER_MIN_SECONDS || d < b * SLOWER_FACTOR {
            continue;
        }
        if d >= b * f {
            return Slowdown::Beyond {
                which,
                before: b,
                during: d,
            };
        }
        if matches!(within, Slowdown::None) {
            within = Slowdown::WithinNoise {
                which,
                before: b,
                during: d,
            };
        }
    }
    within
}

/// Whether the dependency's connections held a level through most of the window.
fn pool(o: &Observation, d: &DependencyObservation) -> Option<PoolObservation> {
    let s = &d.series;
    if s.bucket_seconds <= 0.0 || o.window_end <= o.window_start {
        return None;
    }
    let range = s.buckets(
        std::time::Duration::from_secs_f64(o.window_start.max(0.0)),
        std::time::Duration::from_secs_f64(o.window_end.max(0.0)),
    );
    // Held for at least half the window's buckets (and two): a level, not a blip.
    let min = (range.len() / 2).max(2);
    let connections = s.plateau(range.clone(), min)?;
    let all_busy = s.busy_plateau(range, min) == Some(connections);
    Some(PoolObservation {
        connections,
        all_busy,
        requests_queued: o.during.peak_in_flight > connections,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checker::check_set;

    fn load(
        requests: u64,
        errors: u64,
        timeouts: u64,
        p50: f64,
        p99: f64,
        in_flight: u64,
    ) -> PhaseLoad {
        PhaseLoad {
            requests,
            errors,
            timeouts,
            latency_p50: Some(p50),
            latency_p99: Some(p99),
            peak_in_flight: in_flight,
            succeeded: requests - errors,
            fast_error_p50: None,
            fast_error_p99: None,
            seconds: requests as f64 / 100.0,
        }
    }

    fn ok_second() -> TimelineSecond {
        TimelineSecond {
            sent: 100,
            completed: 100,
            errors: 0,
            p99: Some(0.01),
        }
    }

    fn bad_second() -> TimelineSecond {
        TimelineSecond {
            sent: 100,
            completed: 40,
            errors: 60,
            p99: Some(0.01),
        }
    }

    fn slow_second() -> TimelineSecond {
        TimelineSecond {
            p99: Some(0.5),
            ..ok_second()
        }
    }

    /// A 20-second run, window [5, 10), recover within 3 s, 1% error budget, p99 ≤ 100 ms;
    /// 100 requests/s, healthy everywhere, a dependency used once per request on a pool of 4.
    fn base() -> Observation {
        let dep = |requests| PhaseCounters {
            requests,
            replies: requests,
            peak_connections: 4,
            ..PhaseCounters::default()
        };
        Observation {
            before: load(500, 0, 0, 0.002, 0.005, 3),
            during: load(500, 0, 0, 0.002, 0.005, 3),
            after: load(1000, 0, 0, 0.002, 0.005, 3),
            dependency: Some(DependencyObservation {
                before: dep(500),
                during: dep(500),
                after: dep(1000),
                series: Series {
                    bucket_seconds: 1.0,
                    open: vec![4; 20],
                    busy: vec![1; 20],
                    truncated: false,
                },
            }),
            max_in_flight: 64,
            window_start: 5.0,
            window_end: 10.0,
            recover_within: 3.0,
            timeline: vec![ok_second(); 20],
            slos: SecondSlos::new(Some(0.01), Some(0.1), None),
            restart: None,
            writes: None,
            process: None,
            timeout: 1.0,
            control: false,
            control_noise: None,
            resources: Vec::new(),
            standing: false,
        }
    }

    /// Seconds `from..to` of the timeline replaced by `s`.
    fn with_seconds(mut o: Observation, from: usize, to: usize, s: TimelineSecond) -> Observation {
        for t in &mut o.timeline[from..to] {
            *t = s;
        }
        o
    }

    fn errors_in_window(mut o: Observation, errors: u64, timeouts: u64) -> Observation {
        o.during.errors = errors;
        o.during.timeouts = timeouts;
        o.during.succeeded = o.during.requests - errors;
        if errors > timeouts {
            o.during.fast_error_p50 = Some(0.2);
            o.during.fast_error_p99 = Some(0.205);
        }
        o
    }

    fn dep_during(mut o: Observation, f: impl FnOnce(&mut DependencyObservation)) -> Observation {
        if let Some(d) = o.dependency.as_mut() {
            f(d);
        }
        o
    }

    /// `base()` with the fault held for the whole load: no before (unless a control's level
    /// stands in for it), the window the whole run.
    fn standing(mut o: Observation) -> Observation {
        o.standing = true;
        o.before = PhaseLoad::default();
        o.window_start = 0.0;
        o.window_end = 20.0;
        if let Some(d) = o.dependency.as_mut() {
            d.before = PhaseCounters::default();
        }
        o
    }

    #[test]
    fn a_standing_fault_has_no_recovery_to_examine() {
        let b = judge(&standing(base()));
        assert_eq!(b.recovery, Recovery::NotExamined);
        assert_eq!(
            serde_json::to_value(b.recovery).unwrap(),
            serde_json::json!("not_examined")
        );
        assert_eq!(
            qualify_model::fault::BehaviourRecord::from(&b).recovery_seconds,
            None
        );
    }

    #[test]
    fn verdict_table() {
        let cases: Vec<(&str, Observation, Verdict, &str)> = vec![
            (
                "standing, within the objectives, no control to compare with",
                standing(base()),
                Verdict::Unaffected,
                "its latency was compared with nothing (no control cell",
            ),
            (
                "standing, slower than the control's level",
                {
                    let mut o = standing(base());
                    o.before.latency_p99 = Some(0.004);
                    o.during.latency_p99 = Some(0.06);
                    o
                },
                Verdict::Degrades,
                "slower under the standing fault (p99 60 ms vs 4 ms in the control",
            ),
            (
                "standing, failing fast",
                standing(with_seconds(
                    errors_in_window(base(), 300, 0),
                    0,
                    20,
                    bad_second(),
                )),
                Verdict::FailsFast,
                "300 of 500 requests under the standing fault failed fast",
            ),
            (
                "standing, requests held until the timeout",
                standing(with_seconds(
                    errors_in_window(base(), 300, 300),
                    0,
                    20,
                    bad_second(),
                )),
                Verdict::Hangs,
                "300 of 500 requests in the window timed out",
            ),
            (
                "standing, slow beyond the objectives without errors",
                standing(with_seconds(base(), 0, 20, slow_second())),
                Verdict::Degrades,
                "the objectives did not hold under the standing fault",
            ),
            (
                "healthy throughout",
                base(),
                Verdict::Unaffected,
                "no errors and no slowdown",
            ),
            (
                "p99 1.5× slower within SLOs, no control: the floor is 1.5×",
                {
                    // Powers of two: 1.5× is exact in floating point.
                    let mut o = base();
                    o.before.latency_p99 = Some(0.003_906_25);
                    o.during.latency_p99 = Some(0.005_859_375);
                    o
                },
                Verdict::Degrades,
                "p99 6 ms vs 4 ms before, noise floor 1.5×: this cell 1.0× second to second before the window, no control cell measured",
            ),
            (
                "p99 just under 1.5× is not slower",
                {
                    let mut o = base();
                    o.before.latency_p99 = Some(0.003_906_25);
                    o.during.latency_p99 = Some(0.005_859);
                    o
                },
                Verdict::Unaffected,
                "no errors and no slowdown",
            ),
            (
                "p50 more than doubled by 0.7 ms is noise",
                {
                    let mut o = base();
                    o.before.latency_p50 = Some(0.0005);
                    o.during.latency_p50 = Some(0.0012);
                    o
                },
                Verdict::Unaffected,
                "no errors and no slowdown",
            ),
            (
                "p50 tripled by 4 ms",
                {
                    let mut o = base();
                    o.during.latency_p50 = Some(0.006);
                    o
                },
                Verdict::Degrades,
                "p50",
            ),
            (
                "p99 6.75× but the control varied 7×: within the noise",
                {
                    let mut o = base();
                    o.before.latency_p99 = Some(0.004);
                    o.during.latency_p99 = Some(0.027);
                    o.control_noise = Some(Noise {
                        p99: Some(7.0),
                        p50: Some(1.2),
                        ..Noise::default()
                    });
                    o
                },
                Verdict::Unaffected,
                "p99 27 ms vs 4 ms before, within the noise floor 7.0×: the control cell varied 7.0×",
            ),
            (
                "p99 51× beyond a 2.1× control floor",
                {
                    let mut o = base();
                    o.before.latency_p99 = Some(0.004);
                    o.during.latency_p99 = Some(0.204);
                    o.control_noise = Some(Noise {
                        p99: Some(2.1),
                        p50: None,
                        ..Noise::default()
                    });
                    o
                },
                Verdict::Degrades,
                "p99 204 ms vs 4 ms before, noise floor 2.1×: the control cell varied 2.1×",
            ),
            (
                "p99 3× but it varied 4× second to second before the window",
                {
                    let mut o = base();
                    o.before.latency_p99 = Some(0.004);
                    o.during.latency_p99 = Some(0.012);
                    // 2.5 ms in one second, 10 ms in the others.
                    o.timeline[1].p99 = Some(0.0025);
                    o
                },
                Verdict::Unaffected,
                "within the noise floor 4.0×: this cell 4.0× second to second before the window",
            ),
            (
                "a few errors within the error budget are no failure",
                {
                    let mut o = errors_in_window(base(), 3, 0);
                    o.slos.max_error_rate = 0.01;
                    o
                },
                Verdict::Unaffected,
                "no slowdown in the window (3 failed request(s) in the window, within the error budget)",
            ),
            (
                "fast errors in the window, back at once",
                with_seconds(errors_in_window(base(), 300, 0), 5, 10, bad_second()),
                Verdict::FailsFast,
                "300 of 500 requests in the window failed fast in p50 200 ms, p99 205 ms, 0 timed out, SLOs held again 0 ms after the window",
            ),
            (
                "fast errors, back exactly at recover_within",
                with_seconds(errors_in_window(base(), 300, 0), 5, 13, bad_second()),
                Verdict::FailsFast,
                "3.0 s after",
            ),
            (
                "a timeout or two within the error budget in a slow window is no hang",
                with_seconds(errors_in_window(base(), 2, 2), 5, 10, slow_second()),
                Verdict::Recovers,
                "SLOs held again",
            ),
            (
                "back one second past recover_within",
                with_seconds(base(), 5, 14, slow_second()),
                Verdict::RecoversLate,
                "later than recover_within 3.0 s",
            ),
            (
                "failing fast, back one second past recover_within: fails_fast, the recovery said",
                with_seconds(errors_in_window(base(), 300, 0), 5, 14, bad_second()),
                Verdict::FailsFast,
                "300 of 500 requests in the window failed fast in p50 200 ms, p99 205 ms, 0 timed out, SLOs held again 4.0 s after the window",
            ),
            (
                "errors until the end",
                with_seconds(errors_in_window(base(), 300, 0), 5, 20, bad_second()),
                Verdict::Stops,
                "did not hold again",
            ),
            (
                "latency SLO broken until the end, no errors",
                with_seconds(base(), 5, 20, slow_second()),
                Verdict::Stops,
                "did not hold again",
            ),
            (
                "a latency SLO miss in the window only: recovers",
                with_seconds(base(), 6, 8, slow_second()),
                Verdict::Recovers,
                "error rate 0% in the window, SLOs held again 0 ms after it",
            ),
            (
                "healthy but the last second fails",
                with_seconds(base(), 19, 20, bad_second()),
                Verdict::Stops,
                "did not hold again",
            ),
            (
                "every request of the window timed out, far below max_in_flight",
                {
                    let mut o =
                        with_seconds(errors_in_window(base(), 150, 150), 5, 11, bad_second());
                    o.during.requests = 150;
                    o.during.peak_in_flight = 51;
                    dep_during(o, |d| d.during.requests = 150)
                },
                Verdict::Hangs,
                "150 of 150 requests in the window timed out (no answer within 1.0 s), 0 failed fast; peak 51 in flight, SLOs held again 1.0 s after the window",
            ),
            (
                "timeouts outnumber fast errors: a hang",
                {
                    let mut o =
                        with_seconds(errors_in_window(base(), 121, 61), 5, 11, bad_second());
                    o.during.peak_in_flight = 64;
                    o
                },
                Verdict::Hangs,
                "61 of 500 requests in the window timed out (no answer within 1.0 s), 60 failed fast",
            ),
            (
                "fast errors outnumber timeouts: fails fast",
                with_seconds(errors_in_window(base(), 121, 60), 5, 11, bad_second()),
                Verdict::FailsFast,
                "61 of 500 requests in the window failed fast",
            ),
            (
                "a hang that never recovers is still a hang (its outcome is not_recovered)",
                with_seconds(errors_in_window(base(), 300, 300), 5, 20, bad_second()),
                Verdict::Hangs,
                "not recovered by the end of the load",
            ),
            (
                "requests amplification exactly 3× before",
                dep_during(
                    with_seconds(errors_in_window(base(), 300, 0), 5, 10, bad_second()),
                    |d| d.during.requests = 1500,
                ),
                Verdict::RetryStorm,
                "1.00 before, 3.00 in the window (3.0×)",
            ),
            (
                "requests amplification 2.9× is not a storm",
                dep_during(
                    with_seconds(errors_in_window(base(), 300, 0), 5, 10, bad_second()),
                    |d| d.during.requests = 1450,
                ),
                Verdict::FailsFast,
                "SLOs held again",
            ),
            (
                "a storm even when the SLOs held",
                dep_during(base(), |d| d.during.requests = 2000),
                Verdict::RetryStorm,
                "4.0×",
            ),
            (
                "connection attempts above 3 per request (refused ones counted)",
                dep_during(
                    with_seconds(errors_in_window(base(), 500, 0), 5, 10, bad_second()),
                    |d| {
                        d.during.requests = 0;
                        d.during.failed_connects = Some(1501);
                    },
                ),
                Verdict::RetryStorm,
                "retried 3.0× per request",
            ),
            (
                "exactly 3 attempts per request is allowed",
                dep_during(
                    with_seconds(errors_in_window(base(), 500, 0), 5, 10, bad_second()),
                    |d| {
                        d.during.requests = 0;
                        d.during.connections_opened = 1500;
                    },
                ),
                Verdict::FailsFast,
                "500 of 500 requests in the window failed fast",
            ),
            (
                "connections ×3 from a per-request client",
                dep_during(
                    {
                        let mut o =
                            with_seconds(errors_in_window(base(), 500, 0), 5, 10, bad_second());
                        if let Some(d) = o.dependency.as_mut() {
                            d.before.connections_opened = 500;
                        }
                        o
                    },
                    |d| {
                        d.during.requests = 0;
                        d.during.connections_opened = 1500;
                    },
                ),
                Verdict::RetryStorm,
                "connections per service request 1.00 before, 3.00 in the window",
            ),
            (
                "a pooled client that reconnects and retries within a budget is no storm",
                dep_during(
                    with_seconds(errors_in_window(base(), 500, 0), 5, 10, bad_second()),
                    |d| {
                        d.before.connections_opened = 5;
                        d.during.requests = 500;
                        d.during.connections_opened = 595;
                    },
                ),
                Verdict::FailsFast,
                "failed fast",
            ),
            (
                "a pooled client reconnecting once per request is no storm",
                dep_during(
                    with_seconds(errors_in_window(base(), 500, 0), 5, 10, bad_second()),
                    |d| {
                        d.before.connections_opened = 1;
                        d.during.requests = 500;
                        d.during.connections_opened = 500;
                    },
                ),
                Verdict::FailsFast,
                "failed fast",
            ),
            (
                "lost writes beat everything",
                {
                    let mut o = dep_during(base(), |d| d.during.requests = 5000);
                    o.writes = Some(check_set(0..10, 0..10, [0, 1, 2, 5, 6, 7, 8, 9]));
                    o
                },
                Verdict::LosesWrites,
                "lost 2 of 10 acknowledged writes (first: 3, 4)",
            ),
            (
                "recovered writes are no loss",
                {
                    let mut o = base();
                    o.writes = Some(check_set(0..10, 0..5, 0..10));
                    o
                },
                Verdict::Unaffected,
                "no errors",
            ),
            (
                "a restart that never became ready",
                {
                    let mut o = with_seconds(base(), 5, 20, bad_second());
                    o.dependency = None;
                    o.restart = Some(RestartObservation {
                        ready_after: None,
                        errors_during_restart: 900,
                    });
                    o
                },
                Verdict::Stops,
                "not ready again after the restart (900 errors meanwhile)",
            ),
            (
                "a restart back in time: its refused connections failed fast",
                {
                    let mut o = with_seconds(errors_in_window(base(), 200, 0), 5, 7, bad_second());
                    o.dependency = None;
                    o.window_end = 7.0;
                    o.restart = Some(RestartObservation {
                        ready_after: Some(2.0),
                        errors_during_restart: 200,
                    });
                    o
                },
                Verdict::FailsFast,
                "0 ms after",
            ),
            (
                "the control is never a fault verdict, however it varied",
                {
                    let mut o = with_seconds(base(), 19, 20, bad_second());
                    o.control = true;
                    o.before.latency_p99 = Some(0.004);
                    o.during.latency_p99 = Some(0.027);
                    o.after.latency_p99 = Some(0.005);
                    o.dependency = None;
                    o
                },
                Verdict::Control,
                "no fault (the control): p99 4 ms before the window, 27 ms in it, 5 ms after it — it varied 6.8× (p50 1.0×): the noise floor of the faulted cells",
            ),
            (
                "a control with errors says so",
                {
                    let mut o = errors_in_window(base(), 50, 50);
                    o.control = true;
                    o
                },
                Verdict::Control,
                "50 failed request(s) in the window with no fault at all",
            ),
        ];
        for (name, o, verdict, detail) in cases {
            let b = judge(&o);
            assert_eq!(b.verdict, verdict, "{name}: {}", b.detail);
            assert!(
                b.detail.contains(detail),
                "{name}: {:?} lacks {detail:?}",
                b.detail
            );
        }
    }

    #[test]
    fn the_control_s_variation_is_the_noise_floor() {
        let mut c = base();
        c.control = true;
        c.before.latency_p99 = Some(0.004);
        c.during.latency_p99 = Some(0.006);
        c.after.latency_p99 = Some(0.005);
        c.before.latency_p50 = Some(0.002);
        c.during.latency_p50 = Some(0.003);
        let noise = c.own_noise();
        assert_eq!(noise.p99, Some(1.5));
        assert_eq!(noise.p50, Some(1.5));
        // Its seconds before the window varied more: that is its floor.
        c.timeline[0].p99 = Some(0.002);
        c.timeline[4].p99 = Some(0.01);
        assert_eq!(c.own_noise().p99, Some(5.0));
        let b = judge(&c);
        assert_eq!(b.verdict, Verdict::Control);
        assert_eq!(b.noise_floor.map(|n| n.p99), Some(5.0));
        assert!(b.left_after_window.is_empty());
        let record = crate::record(Some("cache"), &qualify_model::Fault::NONE, &c, &b);
        assert_eq!(record.behaviour.verdict, "control");
        assert_eq!(record.behaviour.recovery_seconds, None);
        assert_eq!(
            record.behaviour.noise_floor.and_then(|n| n.control_p99),
            Some(5.0)
        );
        assert_eq!(record.behaviour_text(), "no fault: the control (control)");
    }

    #[test]
    fn threads_left_after_the_window_are_named() {
        let mut o = with_seconds(errors_in_window(base(), 150, 150), 5, 11, bad_second());
        o.resources = vec![
            ResourceObservation {
                kind: ResourceKind::Threads,
                before: 7,
                peak_during: 163,
                end: 158,
            },
            // Grew and came back: not named.
            ResourceObservation {
                kind: ResourceKind::Sockets,
                before: 10,
                peak_during: 160,
                end: 12,
            },
            // A wobble of two: not growth.
            ResourceObservation {
                kind: ResourceKind::OpenFiles,
                before: 20,
                peak_during: 22,
                end: 22,
            },
        ];
        let sockets_and_files = [
            ResourceObservation {
                kind: ResourceKind::OpenFiles,
                before: 11,
                peak_during: 205,
                end: 209,
            },
            ResourceObservation {
                kind: ResourceKind::Sockets,
                before: 5,
                peak_during: 199,
                end: 203,
            },
        ];
        let named: Vec<ResourceKind> = left_after_window(&sockets_and_files)
            .iter()
            .map(|r| r.kind)
            .collect();
        assert_eq!(
            named,
            [ResourceKind::Sockets],
            "a socket is an open file: named once"
        );
        let b = judge(&o);
        assert_eq!(b.verdict, Verdict::Hangs);
        assert_eq!(b.left_after_window.len(), 1, "{b:?}");
        assert!(
            b.detail.ends_with(
                "; 151 threads left after the window (7 before it, 163 at the peak in it, 158 after the load ended)"
            ),
            "{}",
            b.detail
        );
        let record = crate::record(Some("cache"), &qualify_model::Fault::NONE, &o, &b);
        assert_eq!(record.behaviour.left_after_window[0].kind, "threads");
        assert!(
            record
                .behaviour_text()
                .ends_with("; 151 threads left after the window"),
            "{}",
            record.behaviour_text()
        );
        // A level of 40 must grow by 20 to count.
        let r = ResourceObservation {
            kind: ResourceKind::Threads,
            before: 40,
            peak_during: 59,
            end: 59,
        };
        assert!(!r.left_after_window());
        assert!(
            ResourceObservation {
                peak_during: 60,
                end: 50,
                ..r
            }
            .left_after_window()
        );
        assert!(
            !ResourceObservation {
                peak_during: 60,
                end: 49,
                ..r
            }
            .left_after_window()
        );
    }

    #[test]
    fn every_verdict_the_rules_return_is_in_the_closed_list() {
        // The rules' names are the vocabulary's: a verdict `expect` can name round-trips.
        for v in Verdict::ALL {
            assert_eq!(v.as_str().parse::<Verdict>(), Ok(v));
        }
    }

    #[test]
    fn recovery_time_table() {
        let slos = SecondSlos::new(Some(0.01), Some(0.1), None);
        let ok = ok_second();
        let bad = bad_second();
        let cases: Vec<(&str, Vec<TimelineSecond>, f64, Recovery)> = vec![
            (
                "first second after the end holds",
                vec![bad, bad, ok, ok],
                2.0,
                Recovery::After(0.0),
            ),
            (
                "one bad second after the end",
                vec![bad, bad, bad, ok],
                2.0,
                Recovery::After(1.0),
            ),
            (
                "a relapse restarts the clock",
                vec![bad, bad, ok, bad, ok, ok],
                2.0,
                Recovery::After(2.0),
            ),
            (
                "the second holding the end holds",
                vec![bad, ok, ok, ok],
                1.5,
                Recovery::After(0.0),
            ),
            (
                "the end mid-second, the next one holds",
                vec![bad, bad, ok, ok],
                1.5,
                Recovery::After(0.5),
            ),
            (
                "never again",
                vec![ok, bad, bad, bad],
                1.0,
                Recovery::NotRecovered,
            ),
            (
                "nothing measured after the window",
                vec![bad, bad],
                2.0,
                Recovery::NotRecovered,
            ),
            ("empty timeline", vec![], 0.0, Recovery::NotRecovered),
        ];
        for (name, timeline, end, expect) in cases {
            assert_eq!(recovery_time(&timeline, end, &slos), expect, "{name}");
        }
    }

    #[test]
    fn second_slos_table() {
        let s = |sent, completed, errors, p99| TimelineSecond {
            sent,
            completed,
            errors,
            p99,
        };
        let strict = SecondSlos::new(None, None, None);
        let full = SecondSlos::new(Some(0.05), Some(0.2), Some(50.0));
        let cases = [
            (
                "no error SLO: one error breaks",
                strict,
                s(100, 99, 1, None),
                false,
            ),
            ("no error SLO: clean", strict, s(100, 100, 0, None), true),
            (
                "nothing sent holds without a throughput SLO",
                strict,
                s(0, 0, 0, None),
                true,
            ),
            (
                "error rate at the limit",
                full,
                s(100, 95, 5, Some(0.1)),
                true,
            ),
            ("error rate over it", full, s(100, 94, 6, Some(0.1)), false),
            ("p99 at the limit", full, s(100, 100, 0, Some(0.2)), true),
            ("p99 over it", full, s(100, 100, 0, Some(0.21)), false),
            ("no p99 measured", full, s(100, 100, 0, None), true),
            ("throughput under", full, s(100, 49, 0, Some(0.1)), false),
            (
                "nothing sent fails a throughput SLO",
                full,
                s(0, 0, 0, None),
                false,
            ),
        ];
        for (name, slos, second, held) in cases {
            assert_eq!(slos.held(&second), held, "{name}");
        }
    }

    #[test]
    fn pool_plateau_is_reported_when_all_connections_are_busy_and_requests_queue() {
        // Pool of 10, latency in the window: all 10 busy from second 5 to 10, 40 in flight.
        let mut o = with_seconds(errors_in_window(base(), 100, 100), 5, 11, bad_second());
        o.during.peak_in_flight = 40;
        if let Some(d) = o.dependency.as_mut() {
            d.series.open = vec![10; 20];
            d.series.busy = [vec![2; 5], vec![10; 5], vec![2; 10]].concat();
        }
        let b = judge(&o);
        assert_eq!(
            b.pool,
            Some(PoolObservation {
                connections: 10,
                all_busy: true,
                requests_queued: true
            })
        );
        assert!(
            b.detail
                .contains("plateaued at 10 (all busy) while requests queued"),
            "{}",
            b.detail
        );
        // A blip to 10 for one second is no plateau.
        if let Some(d) = o.dependency.as_mut() {
            d.series.open = [vec![2; 7], vec![10], vec![2; 12]].concat();
        }
        let b = judge(&o);
        assert_eq!(b.pool, None);
        assert!(!b.detail.contains("plateaued"));
    }

    #[test]
    fn amplification_is_reported_per_phase() {
        let o = dep_during(base(), |d| {
            d.during.requests = 1500;
            d.during.connections_opened = 50;
            d.during.failed_connects = Some(50);
        });
        let b = judge(&o);
        assert_eq!(
            b.amplification_during,
            Some(Amplification {
                requests: 3.0,
                connections: 0.2
            })
        );
        assert_eq!(b.amplification_before.map(|a| a.requests), Some(1.0));
        assert_eq!(b.attempts_per_request, Some(0.2));
        let json = serde_json::to_value(&b).unwrap();
        assert_eq!(json["verdict"], "retry_storm");
        assert_eq!(json["recovery"], 0.0);
        let mut o = with_seconds(base(), 5, 20, bad_second());
        o.during.errors = 1;
        assert_eq!(
            serde_json::to_value(judge(&o)).unwrap()["recovery"],
            "not_recovered"
        );
    }
}
