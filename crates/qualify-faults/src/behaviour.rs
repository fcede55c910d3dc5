//! How a service behaved when its dependency failed: the behaviour verdict of a cell, recovery
//! time, amplification and pool saturation — a pure function of typed observations.
//!
//! Inputs are per window phase (`before`, `during`, `after`, as offsets from the measured phase's
//! start): what the load generator saw of the service ([`PhaseLoad`]), what the proxy saw at the
//! dependency ([`DependencyObservation`]), a per-second timeline to date recovery, the write check
//! and the restart, if any.
//!
//! Verdicts (first rule that applies wins):
//!
//! 1. `loses_writes` — an acknowledged write is missing from the final read.
//! 2. `retry_storm` — at the dependency, requests (or connection attempts: connections opened
//!    plus failed connects when the proxy counted them — the refused ones of `down`) per service request
//!    during the window are ≥ [`STORM_FACTOR`]× what they were before it, or connection attempts
//!    per service request during the window exceed [`MAX_ATTEMPTS_PER_REQUEST`].
//! 3. `stops` — a restarted service never became ready again.
//! 4. `unaffected` / `degrades` — the window disturbed nothing (no errors in it, every second from
//!    its start held the SLOs); `degrades` if p50 or p99 in the window was ≥ [`SLOWER_FACTOR`]×
//!    before (and at least [`SLOWER_MIN_SECONDS`] more), else `unaffected`.
//! 5. `hangs` — requests piled up to `max_in_flight` (peak in flight during or after the window),
//!    timed out (timeouts during or after), and no error came back fast during the window.
//! 6. `stops` — the SLOs never held again after the window (until the end of the load).
//! 7. `recovers` — the SLOs held again within `recover_within` of the window's end.
//! 8. `recovers_late` — they held again, but later than `recover_within` (the cell's outcome is
//!    `not_recovered`).
//!
//! `unaffected` and `recovers_late` are additions to the six strings: a fault with no
//! visible effect and a late recovery are facts a receipt should state, not force into another
//! verdict.

use serde::{Deserialize, Serialize};

use crate::checker::SetCheck;
use crate::stats::{PhaseCounters, Series};

/// Amplification during the window of at least this many times the amplification before it is
/// a retry storm.
pub const STORM_FACTOR: f64 = 3.0;
/// More connection attempts than this per service request during the window is a retry storm
/// (Google SRE: at most 3 attempts per request).
pub const MAX_ATTEMPTS_PER_REQUEST: f64 = 3.0;
/// `degrades`: p50 or p99 in the window at least this many times before …
pub const SLOWER_FACTOR: f64 = 1.5;
/// … and at least this much slower in absolute terms (microsecond noise is not a slowdown).
pub const SLOWER_MIN_SECONDS: f64 = 0.001;

/// The behaviour verdict of a cell (exact strings in the receipt).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Stops,
    Recovers,
    RecoversLate,
    Degrades,
    Unaffected,
    RetryStorm,
    Hangs,
    LosesWrites,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Stops => "stops",
            Verdict::Recovers => "recovers",
            Verdict::RecoversLate => "recovers_late",
            Verdict::Degrades => "degrades",
            Verdict::Unaffected => "unaffected",
            Verdict::RetryStorm => "retry_storm",
            Verdict::Hangs => "hangs",
            Verdict::LosesWrites => "loses_writes",
        }
    }
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the load generator saw of the service in one phase.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PhaseLoad {
    /// Requests sent to (received by) the service.
    pub requests: u64,
    /// All errors, timeouts included.
    pub errors: u64,
    /// Errors of class `timeout` (no answer within the load's timeout).
    pub timeouts: u64,
    /// Corrected latency percentiles, seconds.
    pub latency_p50: Option<f64>,
    pub latency_p99: Option<f64>,
    /// Peak requests outstanding at once.
    pub peak_in_flight: u64,
}

impl PhaseLoad {
    pub fn error_rate(&self) -> Option<f64> {
        (self.requests > 0).then(|| self.errors as f64 / self.requests as f64)
    }

    /// Errors that came back before the timeout (status codes, refused, reset, …).
    pub fn fast_errors(&self) -> u64 {
        self.errors.saturating_sub(self.timeouts)
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
}

impl Serialize for Recovery {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Recovery::After(t) => s.serialize_f64(*t),
            Recovery::NotRecovered => s.serialize_str("not_recovered"),
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

/// The verdict and the figures behind it.
pub fn judge(o: &Observation) -> Behaviour {
    let recovery = recovery_time(&o.timeline, o.window_end, &o.slos);
    let dep = o.dependency.as_ref();
    let amp_before = dep.and_then(|d| amplification(&o.before, &d.before));
    let amp_during = dep.and_then(|d| amplification(&o.during, &d.during));
    let amp_after = dep.and_then(|d| amplification(&o.after, &d.after));
    let attempts_per_request = amp_during.map(|a| a.connections);
    let pool = dep.and_then(|d| pool(o, d));

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
    };
    let (verdict, detail) = decide(o, &b);
    b.verdict = verdict;
    b.detail = match pool {
        Some(p) if p.all_busy && p.requests_queued => format!(
            "{detail}; dependency connections plateaued at {} (all busy) while requests queued",
            p.connections
        ),
        _ => detail,
    };
    b
}

fn decide(o: &Observation, b: &Behaviour) -> (Verdict, String) {
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
    if o.during.errors == 0 && seconds_held {
        return match slowdown(&o.before, &o.during) {
            Some((which, before, during)) => (
                Verdict::Degrades,
                format!(
                    "slower in the window ({which} {} vs {} before) but within SLOs",
                    seconds(during),
                    seconds(before)
                ),
            ),
            None => (
                Verdict::Unaffected,
                "no errors and no slowdown in the window".to_string(),
            ),
        };
    }
    let peak = o.during.peak_in_flight.max(o.after.peak_in_flight);
    let timeouts = o.during.timeouts + o.after.timeouts;
    if o.max_in_flight > 0 && peak >= o.max_in_flight && timeouts > 0 && o.during.fast_errors() == 0
    {
        let tail = match b.recovery {
            Recovery::After(t) => format!(", SLOs held again {} after the window", seconds(t)),
            Recovery::NotRecovered => ", not recovered".to_string(),
        };
        return (
            Verdict::Hangs,
            format!(
                "requests piled up to max_in_flight {} and timed out ({timeouts} timeouts, no fast errors){tail}",
                o.max_in_flight
            ),
        );
    }
    match b.recovery {
        Recovery::NotRecovered => (
            Verdict::Stops,
            format!(
                "SLOs did not hold again after the window (error rate {} in it, {} after)",
                percent(b.error_rate_during),
                percent(b.error_rate_after)
            ),
        ),
        Recovery::After(t) if t <= o.recover_within => (
            Verdict::Recovers,
            format!(
                "error rate {} in the window, SLOs held again {} after it",
                percent(b.error_rate_during),
                seconds(t)
            ),
        ),
        Recovery::After(t) => (
            Verdict::RecoversLate,
            format!(
                "SLOs held again {} after the window, later than recover_within {}",
                seconds(t),
                seconds(o.recover_within)
            ),
        ),
    }
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
        if let Some(r) = ratio(during.connections, before.connections)
            .filter(|r| *r >= STORM_FACTOR && during.connections > 1.0)
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

/// Which percentile slowed, and by how much, when one did.
fn slowdown(before: &PhaseLoad, during: &PhaseLoad) -> Option<(&'static str, f64, f64)> {
    [
        ("p99", before.latency_p99, during.latency_p99),
        ("p50", before.latency_p50, during.latency_p50),
    ]
    .into_iter()
    .find_map(|(name, b, d)| {
        let (b, d) = (b?, d?);
        (d >= b * SLOWER_FACTOR && d - b >= SLOWER_MIN_SECONDS).then_some((name, b, d))
    })
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
        o
    }

    fn dep_during(mut o: Observation, f: impl FnOnce(&mut DependencyObservation)) -> Observation {
        if let Some(d) = o.dependency.as_mut() {
            f(d);
        }
        o
    }

    #[test]
    fn verdict_table() {
        let cases: Vec<(&str, Observation, Verdict, &str)> = vec![
            (
                "healthy throughout",
                base(),
                Verdict::Unaffected,
                "no errors",
            ),
            (
                "p99 1.5× slower within SLOs",
                {
                    // Powers of two: 1.5× is exact in floating point.
                    let mut o = base();
                    o.before.latency_p99 = Some(0.003_906_25);
                    o.during.latency_p99 = Some(0.005_859_375);
                    o
                },
                Verdict::Degrades,
                "p99 6 ms vs 4 ms",
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
                "no slowdown",
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
                "no slowdown",
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
                "errors in the window, back at once",
                with_seconds(errors_in_window(base(), 300, 0), 5, 10, bad_second()),
                Verdict::Recovers,
                "SLOs held again 0 ms after it",
            ),
            (
                "back exactly at recover_within",
                with_seconds(errors_in_window(base(), 300, 0), 5, 13, bad_second()),
                Verdict::Recovers,
                "3.0 s after",
            ),
            (
                "back one second past recover_within",
                with_seconds(errors_in_window(base(), 300, 0), 5, 14, bad_second()),
                Verdict::RecoversLate,
                "later than recover_within 3.0 s",
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
                "a latency SLO miss in the window only",
                with_seconds(base(), 6, 8, slow_second()),
                Verdict::Recovers,
                "0 ms after",
            ),
            (
                "healthy but the last second fails",
                with_seconds(base(), 19, 20, bad_second()),
                Verdict::Stops,
                "did not hold again",
            ),
            (
                "piled up to max_in_flight, only timeouts",
                {
                    let mut o =
                        with_seconds(errors_in_window(base(), 120, 120), 5, 11, bad_second());
                    o.during.peak_in_flight = 64;
                    o
                },
                Verdict::Hangs,
                "piled up to max_in_flight 64 and timed out (120 timeouts, no fast errors), SLOs held again 1.0 s",
            ),
            (
                "timeouts that land after the window count",
                {
                    let mut o = with_seconds(base(), 5, 12, bad_second());
                    o.during.peak_in_flight = 64;
                    o.after.timeouts = 64;
                    o.after.errors = 64;
                    o
                },
                Verdict::Hangs,
                "64 timeouts",
            ),
            (
                "one fast error: not a hang",
                {
                    let mut o =
                        with_seconds(errors_in_window(base(), 121, 120), 5, 11, bad_second());
                    o.during.peak_in_flight = 64;
                    o
                },
                Verdict::Recovers,
                "error rate 24%",
            ),
            (
                "timeouts below max_in_flight: not a hang",
                {
                    let mut o =
                        with_seconds(errors_in_window(base(), 120, 120), 5, 11, bad_second());
                    o.during.peak_in_flight = 63;
                    o
                },
                Verdict::Recovers,
                "1.0 s after",
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
                Verdict::Recovers,
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
                Verdict::Recovers,
                "error rate 100%",
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
                "a pooled client reconnecting once per request is no storm",
                dep_during(
                    with_seconds(errors_in_window(base(), 500, 0), 5, 10, bad_second()),
                    |d| {
                        d.before.connections_opened = 1;
                        d.during.requests = 500;
                        d.during.connections_opened = 500;
                    },
                ),
                Verdict::Recovers,
                "error rate 100%",
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
                "a restart back in time",
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
                Verdict::Recovers,
                "0 ms after",
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
