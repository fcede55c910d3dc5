//! What the proxy counts, per window phase, and the coarse concurrency time series.
//!
//! Phases: `unarmed` (before [`crate::proxy::Proxy::arm`]: warmup, pool set-up), `before`,
//! `during` and `after` the fault window. A connection is counted as opened in the phase it was
//! accepted in; a chunk and its bytes in the phase it was read in. Peaks start each phase at the
//! level the phase began with, so a pool opened during warmup shows as the `before` peak.
//!
//! "Busy" connections are those with a request chunk forwarded and no reply chunk read since: for
//! request/response protocols, the requests outstanding at the dependency. Open connections that
//! plateau say "a pool at its size"; busy ones that plateau with it say the pool was exhausted.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::fault::{Direction, Fault};

/// A window phase (the vocabulary's; the proxy never enters `recovery`: it counts it in
/// `after`).
pub use qualify_model::fault::Phase;

/// Counters of one phase.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PhaseCounters {
    /// Client connections accepted (including those the fault reset at once).
    pub connections_opened: u64,
    /// Peak concurrent client connections.
    pub peak_connections: u64,
    /// Peak concurrent connections awaiting a reply (request forwarded, no reply chunk yet).
    pub peak_busy_connections: u64,
    /// Chunks read in the request direction (client → dependency).
    pub requests: u64,
    /// Chunks read in the reply direction.
    pub replies: u64,
    /// Bytes read from clients (request direction).
    pub bytes_upstream: u64,
    /// Bytes read from the dependency (reply direction).
    pub bytes_downstream: u64,
    /// Connections the fault acted on (reset, closed, delayed, throttled or swallowed) for the
    /// first time in this phase.
    pub faulted_connections: u64,
    /// Connections reset by the proxy (RST).
    pub resets: u64,
    /// Connections whose dependency connect failed (the dependency itself refused or timed out).
    pub upstream_failures: u64,
    /// Failed TCP connects in the proxy's network namespace (the kernel's `Tcp AttemptFails`),
    /// when counted ([`crate::ProxyConfig::count_failed_connects`]): in the cell's own
    /// namespace, these are the connects refused while the dependency was `down`, which the
    /// proxy itself never sees.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed_connects: Option<u64>,
    /// The proxy spoke HTTP for this dependency (`protocol = "http"`): `requests` and
    /// `replies` count HTTP requests and final replies (not chunks), and this holds the
    /// replies' statuses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http: Option<HttpCounters>,
}

/// The HTTP replies of one phase, as the client received them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HttpCounters {
    /// Final replies by status.
    pub statuses: std::collections::BTreeMap<u16, u64>,
    /// Replies the fault made (`status` replaced one, `throttle` answered for the dependency).
    pub injected: u64,
    /// Requests the fault held (`http_delay`).
    pub delayed: u64,
}

/// The peak number of concurrent connections per time bucket, from the armed instant.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Series {
    /// Bucket width in seconds; bucket `i` covers `[i·bucket, (i+1)·bucket)` after arming.
    pub bucket_seconds: f64,
    /// Peak open connections per bucket.
    pub open: Vec<u64>,
    /// Peak busy connections per bucket.
    pub busy: Vec<u64>,
    /// True when the run outlasted [`MAX_BUCKETS`] buckets and later ones were not kept.
    pub truncated: bool,
}

/// At most this many buckets are kept (a day of 1 s buckets).
pub const MAX_BUCKETS: usize = 86_400;

impl Series {
    /// The level open connections held for the longest run of consecutive buckets among
    /// `range` (bucket indices), if that run covers at least `min_buckets` buckets and the level
    /// is the maximum of the range: "connections plateaued at N".
    pub fn plateau(&self, range: std::ops::Range<usize>, min_buckets: usize) -> Option<u64> {
        plateau_of(&self.open, range, min_buckets)
    }

    /// Like [`Series::plateau`] for busy connections.
    pub fn busy_plateau(&self, range: std::ops::Range<usize>, min_buckets: usize) -> Option<u64> {
        plateau_of(&self.busy, range, min_buckets)
    }

    /// The bucket indices covering `[from, to)` seconds after arming.
    pub fn buckets(&self, from: Duration, to: Duration) -> std::ops::Range<usize> {
        if self.bucket_seconds <= 0.0 {
            return 0..0;
        }
        let a = (from.as_secs_f64() / self.bucket_seconds).floor() as usize;
        let b = (to.as_secs_f64() / self.bucket_seconds).ceil() as usize;
        a.min(self.open.len())..b.min(self.open.len())
    }
}

fn plateau_of(values: &[u64], range: std::ops::Range<usize>, min_buckets: usize) -> Option<u64> {
    let slice = values.get(range)?;
    let max = *slice.iter().max()?;
    if max == 0 {
        return None;
    }
    let mut best = 0;
    let mut run = 0;
    for v in slice {
        run = if *v == max { run + 1 } else { 0 };
        best = best.max(run);
    }
    (best >= min_buckets.max(1)).then_some(max)
}

/// When the window actually started and ended, against the schedule.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Activation {
    /// Seconds after the armed instant the window was scheduled to start / end.
    pub scheduled_start_seconds: f64,
    pub scheduled_end_seconds: f64,
    /// How late the proxy switched the fault on / off (`None` until it did).
    pub started_late_by_seconds: Option<f64>,
    pub ended_late_by_seconds: Option<f64>,
}

/// Everything the proxy counted: the receipt's per-dependency `result.faults` input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProxyStats {
    pub dependency: String,
    pub fault: Fault,
    pub listen: String,
    pub upstream: String,
    pub unarmed: PhaseCounters,
    pub before: PhaseCounters,
    pub during: PhaseCounters,
    pub after: PhaseCounters,
    /// `None` until armed.
    pub activation: Option<Activation>,
    pub series: Series,
    /// Problems of the proxy itself (e.g. the listener could not be restored after `down`).
    pub errors: Vec<String>,
}

impl ProxyStats {
    pub fn phase(&self, phase: Phase) -> &PhaseCounters {
        match phase {
            Phase::Unarmed => &self.unarmed,
            Phase::Before => &self.before,
            Phase::During => &self.during,
            Phase::Recovery | Phase::After => &self.after,
        }
    }
}

/// The live counters behind the proxy's mutex.
#[derive(Debug)]
pub(crate) struct Counters {
    pub phase: Phase,
    phases: [PhaseCounters; 4],
    open: u64,
    busy: u64,
    series: Option<SeriesState>,
    netns: Option<NetnsCounter>,
    pub activation: Option<Activation>,
    pub errors: Vec<String>,
}

/// `Tcp AttemptFails` of one thread's network namespace, read from
/// `/proc/self/task/<tid>/net/snmp` (readable from any thread of the process).
#[derive(Debug)]
pub(crate) struct NetnsCounter {
    path: std::path::PathBuf,
    last: u64,
}

impl NetnsCounter {
    /// The counter of thread `tid`'s namespace, or why it cannot be read.
    pub fn of_thread(tid: i64) -> Result<NetnsCounter, CounterError> {
        let path = std::path::PathBuf::from(format!("/proc/self/task/{tid}/net/snmp"));
        let last = read_attempt_fails(&path)?;
        Ok(NetnsCounter { path, last })
    }

    /// The failures since the last call.
    fn delta(&mut self) -> Option<u64> {
        let now = read_attempt_fails(&self.path).ok()?;
        let d = now.saturating_sub(self.last);
        self.last = now;
        Some(d)
    }
}

/// `AttemptFails` from the two `Tcp:` lines (names, values) of a `net/snmp` file.
fn read_attempt_fails(path: &std::path::Path) -> Result<u64, CounterError> {
    let text = std::fs::read_to_string(path).map_err(|source| CounterError::Unreadable {
        path: path.to_path_buf(),
        source,
    })?;
    let mut tcp = text.lines().filter(|l| l.starts_with("Tcp:"));
    let (Some(names), Some(values)) = (tcp.next(), tcp.next()) else {
        return Err(CounterError::NoTcpLines {
            path: path.to_path_buf(),
        });
    };
    names
        .split_whitespace()
        .zip(values.split_whitespace())
        .find(|(n, _)| *n == "AttemptFails")
        .and_then(|(_, v)| v.parse().ok())
        .ok_or_else(|| CounterError::NoAttemptFails {
            path: path.to_path_buf(),
        })
}

/// Why a namespace's failed-connect counter cannot be read (the proxy then says failed
/// connects are not counted).
#[derive(Debug, thiserror::Error)]
pub(crate) enum CounterError {
    #[error("{}: {source}", path.display())]
    Unreadable {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error("{}: no Tcp lines", path.display())]
    NoTcpLines { path: std::path::PathBuf },
    #[error("{}: no Tcp AttemptFails", path.display())]
    NoAttemptFails { path: std::path::PathBuf },
}

#[derive(Debug)]
struct SeriesState {
    t0: Instant,
    bucket: Duration,
    series: Series,
}

fn index(phase: Phase) -> usize {
    match phase {
        Phase::Unarmed => 0,
        Phase::Before => 1,
        Phase::During => 2,
        Phase::Recovery | Phase::After => 3,
    }
}

impl Counters {
    pub fn new() -> Counters {
        Counters {
            phase: Phase::Unarmed,
            phases: Default::default(),
            open: 0,
            busy: 0,
            series: None,
            netns: None,
            activation: None,
            errors: Vec::new(),
        }
    }

    fn current(&mut self) -> &mut PhaseCounters {
        &mut self.phases[index(self.phase)]
    }

    /// Start the time series at `t0`.
    pub fn arm(&mut self, t0: Instant, bucket: Duration) {
        self.series = Some(SeriesState {
            t0,
            bucket,
            series: Series {
                bucket_seconds: bucket.as_secs_f64(),
                ..Series::default()
            },
        });
    }

    /// Count failed connects in this namespace from now on.
    pub fn count_failed_connects(&mut self, counter: NetnsCounter) {
        self.current().failed_connects = Some(0);
        self.netns = Some(counter);
    }

    /// Charge the failed connects since the last look to the current phase. The counter is
    /// read through the proxy thread's /proc entry, so the proxy calls this once more before its
    /// thread ends.
    pub fn take_failed_connects(&mut self) {
        if let Some(d) = self.netns.as_mut().and_then(NetnsCounter::delta) {
            let c = self.current();
            c.failed_connects = Some(c.failed_connects.unwrap_or(0) + d);
        }
    }

    /// Enter `phase`: its peaks start at the current levels.
    pub fn enter(&mut self, phase: Phase, now: Instant) {
        self.note(now);
        self.take_failed_connects();
        self.phase = phase;
        if self.netns.is_some() {
            let c = self.current();
            c.failed_connects = Some(c.failed_connects.unwrap_or(0));
        }
        let (open, busy) = (self.open, self.busy);
        let c = self.current();
        c.peak_connections = c.peak_connections.max(open);
        c.peak_busy_connections = c.peak_busy_connections.max(busy);
    }

    /// Bring the series up to `now` at the current levels.
    fn note(&mut self, now: Instant) {
        let (open, busy) = (self.open, self.busy);
        let Some(s) = self.series.as_mut() else {
            return;
        };
        let elapsed = now.saturating_duration_since(s.t0);
        let i = (elapsed.as_nanos() / s.bucket.as_nanos().max(1)) as usize;
        if i >= MAX_BUCKETS {
            s.series.truncated = true;
            return;
        }
        // Buckets passed without a change held the current level throughout.
        while s.series.open.len() <= i {
            s.series.open.push(open);
            s.series.busy.push(busy);
        }
        s.series.open[i] = s.series.open[i].max(open);
        s.series.busy[i] = s.series.busy[i].max(busy);
    }

    fn levels_changed(&mut self, now: Instant) {
        let (open, busy) = (self.open, self.busy);
        let c = self.current();
        c.peak_connections = c.peak_connections.max(open);
        c.peak_busy_connections = c.peak_busy_connections.max(busy);
        self.note(now);
    }

    /// A client connection was accepted; returns the phase it belongs to.
    pub fn opened(&mut self, now: Instant) -> Phase {
        self.open += 1;
        self.current().connections_opened += 1;
        self.levels_changed(now);
        self.phase
    }

    /// A client connection ended (`was_busy`: it awaited a reply).
    pub fn closed(&mut self, was_busy: bool, now: Instant) {
        self.open = self.open.saturating_sub(1);
        if was_busy {
            self.busy = self.busy.saturating_sub(1);
        }
        self.note(now);
    }

    /// A chunk of `bytes` was read in direction `d`: a request or reply chunk. `busy` is the
    /// connection's awaiting-reply flag, updated here. Returns the phase it was read in.
    pub fn chunk(&mut self, d: Direction, bytes: usize, busy: &AtomicBool, now: Instant) -> Phase {
        self.bytes(d, bytes);
        self.message(d, busy, now)
    }

    /// `bytes` were read in direction `d` (counted apart from messages: HTTP mode).
    pub fn bytes(&mut self, d: Direction, bytes: usize) {
        let c = self.current();
        match d {
            Direction::Upstream => c.bytes_upstream += bytes as u64,
            Direction::Downstream => c.bytes_downstream += bytes as u64,
        }
    }

    /// An HTTP reply with `status` reached the client (`injected`: the fault made it).
    pub fn http_reply(&mut self, status: u16, injected: bool) {
        let h = self
            .current()
            .http
            .get_or_insert_with(HttpCounters::default);
        *h.statuses.entry(status).or_default() += 1;
        h.injected += u64::from(injected);
    }

    /// The fault held an HTTP request.
    pub fn http_delayed(&mut self) {
        self.current()
            .http
            .get_or_insert_with(HttpCounters::default)
            .delayed += 1;
    }

    /// A request (upstream) or reply (downstream) in direction `d`; `busy` as for
    /// [`Counters::chunk`]. Returns the phase it belongs to.
    pub fn message(&mut self, d: Direction, busy: &AtomicBool, now: Instant) -> Phase {
        let c = self.current();
        match d {
            Direction::Upstream => c.requests += 1,
            Direction::Downstream => c.replies += 1,
        }
        let now_busy = d == Direction::Upstream;
        if busy.load(Ordering::Relaxed) != now_busy {
            busy.store(now_busy, Ordering::Relaxed);
            if now_busy {
                self.busy += 1;
            } else {
                self.busy = self.busy.saturating_sub(1);
            }
            self.levels_changed(now);
        }
        self.phase
    }

    pub fn faulted(&mut self) {
        self.current().faulted_connections += 1;
    }

    pub fn reset(&mut self) {
        self.current().resets += 1;
    }

    pub fn upstream_failure(&mut self) {
        self.current().upstream_failures += 1;
    }

    pub fn snapshot(&mut self, now: Instant, meta: &Meta) -> ProxyStats {
        self.note(now);
        self.take_failed_connects();
        let [unarmed, before, during, after] = self.phases.clone();
        ProxyStats {
            dependency: meta.dependency.clone(),
            fault: meta.fault,
            listen: meta.listen.clone(),
            upstream: meta.upstream.clone(),
            unarmed,
            before,
            during,
            after,
            activation: self.activation.clone(),
            series: self
                .series
                .as_ref()
                .map(|s| s.series.clone())
                .unwrap_or_default(),
            errors: self.errors.clone(),
        }
    }
}

/// The fixed facts a snapshot repeats.
#[derive(Debug, Clone)]
pub(crate) struct Meta {
    pub dependency: String,
    pub fault: Fault,
    pub listen: String,
    pub upstream: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peaks_carry_into_the_next_phase_and_series_fill_quiet_buckets() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let mut c = Counters::new();
        // Two pool connections opened in warmup.
        c.opened(t0);
        c.opened(t0);
        c.arm(t0, Duration::from_millis(100));
        c.enter(Phase::Before, t0);
        let busy = AtomicBool::new(false);
        c.chunk(Direction::Upstream, 10, &busy, at(50));
        assert!(busy.load(Ordering::Relaxed));
        c.chunk(Direction::Upstream, 10, &busy, at(60));
        c.chunk(Direction::Downstream, 4, &busy, at(70));
        assert!(!busy.load(Ordering::Relaxed));
        c.enter(Phase::During, at(250));
        c.opened(at(260));
        c.closed(false, at(270));
        c.enter(Phase::After, at(400));
        let meta = Meta {
            dependency: "db".into(),
            fault: Fault::NONE,
            listen: "127.0.0.1:1".into(),
            upstream: "127.0.0.1:2".into(),
        };
        let s = c.snapshot(at(450), &meta);
        assert_eq!(s.unarmed.connections_opened, 2);
        assert_eq!(s.before.connections_opened, 0);
        assert_eq!(
            s.before.peak_connections, 2,
            "the warmup pool shows as the before peak"
        );
        assert_eq!(s.before.requests, 2);
        assert_eq!(s.before.bytes_upstream, 20);
        assert_eq!(s.before.replies, 1);
        assert_eq!(s.before.bytes_downstream, 4);
        assert_eq!(s.before.peak_busy_connections, 1);
        assert_eq!(s.during.connections_opened, 1);
        assert_eq!(s.during.peak_connections, 3);
        assert_eq!(s.after.peak_connections, 2);
        assert_eq!(s.series.open, vec![2, 2, 3, 2, 2]);
        assert_eq!(s.series.busy, vec![1, 0, 0, 0, 0]);
        assert_eq!(
            s.series.plateau(0..5, 2),
            None,
            "3 was held for one bucket only"
        );
        assert_eq!(s.series.plateau(3..5, 2), Some(2));
        assert_eq!(
            s.series
                .buckets(Duration::from_millis(250), Duration::from_millis(400)),
            2..4
        );
    }

    #[test]
    fn attempt_fails_is_read_from_the_tcp_lines() {
        let dir = std::env::temp_dir().join(format!("qualify-faults-snmp-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("snmp");
        std::fs::write(
            &path,
            "Ip: Forwarding DefaultTTL\nIp: 1 64\nTcp: RtoAlgorithm RtoMin ActiveOpens AttemptFails\nTcp: 1 200 17 5\n",
        )
        .unwrap();
        assert_eq!(read_attempt_fails(&path).ok(), Some(5));
        std::fs::write(&path, "Tcp: RtoAlgorithm\nTcp: 1\n").unwrap();
        assert!(
            read_attempt_fails(&path)
                .unwrap_err()
                .to_string()
                .contains("no Tcp AttemptFails")
        );
        std::fs::remove_dir_all(&dir).unwrap();
        // This thread's own namespace counter is readable.
        let tid = unsafe { libc::gettid() } as i64;
        assert!(NetnsCounter::of_thread(tid).is_ok());
    }

    #[test]
    fn plateau_needs_the_maximum_held_for_long_enough() {
        let v = [1, 5, 10, 10, 10, 10, 9, 10];
        assert_eq!(plateau_of(&v, 0..8, 4), Some(10));
        assert_eq!(plateau_of(&v, 0..8, 5), None);
        assert_eq!(plateau_of(&v, 0..3, 1), Some(10));
        assert_eq!(
            plateau_of(&[0, 0], 0..2, 1),
            None,
            "no connections is no plateau"
        );
        assert_eq!(plateau_of(&v, 6..20, 1), None, "a range past the end");
    }
}
