//! The engine: [`run`] drives one load on the calling thread (a current-thread tokio runtime
//! created for the run), so a caller that has joined a service's network namespace with
//! `setns` (which affects only the calling thread) loads the service inside it.
//!
//! Open model: arrival `i` is due at `start + i / rate`. A single dispatcher waits (timerfd)
//! until each arrival is due, takes one of `max_in_flight` slots, and starts the exchange; when
//! no slot is free it waits for one, and every later arrival keeps its own due time, so the
//! wait shows in the corrected latency. Arrivals still waiting when the schedule ends are
//! `dropped`. Closed model: `users` loops, each sending when its previous request ended.
//!
//! The generator watches itself: for each measured arrival that found a free slot, the time
//! between when it could have been sent and when it was is its own lag; too many late
//! dispatches (open model) or a CPU-bound thread (closed model) mark the run `saturated`.

mod http;
mod tcp;
mod timer;

use std::cell::{Cell, RefCell};
use std::error::Error as _;
use std::io;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use hyper::header::HeaderValue;
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore, TryAcquireError};
use tokio::task::LocalSet;

use crate::error::LoadError;
use crate::plan::{Compiled, LoadPlan, Model, Protocol};
use crate::record::{Ending, Recorder};
use crate::report::{
    ErrorClass, Generator, HISTOGRAM_ENCODING, HISTOGRAM_UNIT, Latency, LatencySummary, LoadReport,
    ModelKind, encode_histogram,
};
use timer::{FineTimerSlack, Timer, thread_cpu};

/// A measured arrival dispatched this much later than it could have been (a slot was free)
/// counts as late.
pub const LATE: Duration = Duration::from_millis(10);
/// Open model: more than this fraction of late dispatches means the generator saturated.
pub const LATE_FRACTION: f64 = 0.05;
/// Closed model: the generator's thread busy for more than this fraction of the run means it,
/// not the service, limited the loops.
pub const BUSY_FRACTION: f64 = 0.9;
/// How often the observer is called and the cancel flag is read.
pub const TICK: Duration = Duration::from_millis(100);

/// What the observer sees each tick.
#[derive(Debug, Clone, Copy)]
pub struct Progress {
    /// When the schedule (warmup first) began: a caller acting on another thread can time
    /// its actions from it.
    pub start: Instant,
    /// When the measured phase begins (`start + warmup`).
    pub measured_start: Instant,
    /// Since `start`.
    pub elapsed: Duration,
    /// Measured-phase counts so far.
    pub sent: u64,
    pub completed: u64,
    pub errors: u64,
    pub in_flight: u64,
}

impl Progress {
    /// Time into the measured phase (`None` during the warmup).
    pub fn measured_elapsed(&self) -> Option<Duration> {
        (self.start + self.elapsed).checked_duration_since(self.measured_start)
    }
}

/// The observer's answer: go on, or end the load now (arrivals stop; requests in flight
/// finish within their timeout; the report says when it stopped).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    Continue,
    Stop,
}

/// Run `plan` against `target` on the calling thread and report what it measured.
///
/// `observer` is called every [`TICK`] on this thread while the load runs; it must return
/// quickly (it delays the schedule while it runs). Setting `cancel` abandons the run within a
/// tick: requests in flight are dropped and the report says `cancelled`. Requests' failures
/// are counted in the report, never returned as errors.
pub fn run(
    plan: &LoadPlan,
    target: SocketAddr,
    cancel: &AtomicBool,
    observer: &mut dyn FnMut(&Progress) -> Flow,
) -> Result<LoadReport, LoadError> {
    let compiled = plan.compile()?;
    if tokio::runtime::Handle::try_current().is_ok() {
        return Err(LoadError::NestedRuntime);
    }
    let connections = match plan.model {
        Model::Open { .. } => u64::from(plan.max_in_flight),
        Model::Closed { users } => u64::from(users),
    };
    raise_file_limit(connections + 64);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
        .map_err(LoadError::Runtime)?;
    let _slack = FineTimerSlack::set();
    let cpu_before = thread_cpu();
    let wall_before = Instant::now();

    let start = Instant::now();
    let measured_start = start + plan.warmup;
    let horizon = plan.warmup + plan.duration + plan.timeout + Duration::from_secs(60);
    let recorder = Recorder::new(
        measured_start,
        horizon,
        &plan.phases,
        plan.record_writes,
        LATE,
    )?;
    let shared = Rc::new(Shared {
        host: HeaderValue::from_str(&target.to_string())
            .unwrap_or_else(|_| HeaderValue::from_static("localhost")),
        compiled,
        target,
        timeout: plan.timeout,
        start,
        measured_start,
        end: Cell::new(measured_start + plan.duration),
        stopped_at: Cell::new(None),
        slots: Arc::new(Semaphore::new(
            usize::try_from(plan.max_in_flight)
                .unwrap_or(Semaphore::MAX_PERMITS)
                .min(Semaphore::MAX_PERMITS),
        )),
        in_flight: Cell::new(0),
        dispatching: Cell::new(true),
        done: Notify::new(),
        http_pool: RefCell::new(Vec::new()),
        tcp_pool: RefCell::new(Vec::new()),
        rec: RefCell::new(recorder),
        next_seq: Cell::new(0),
        users_running: Cell::new(0),
    });

    let local = LocalSet::new();
    let cancelled = local.block_on(
        &runtime,
        drive(shared.clone(), plan.model, cancel, observer),
    );
    {
        // Abandoned exchanges and idle connections close inside the runtime.
        let _inside = runtime.enter();
        drop(local);
        shared.http_pool.borrow_mut().clear();
        shared.tcp_pool.borrow_mut().clear();
    }
    drop(runtime);
    let cpu = thread_cpu().saturating_sub(cpu_before).as_secs_f64();
    let wall = wall_before.elapsed().as_secs_f64();
    let Ok(shared) = Rc::try_unwrap(shared) else {
        return Err(LoadError::Runtime(io::Error::other(
            "the event loop ended with tasks still holding the recorder",
        )));
    };
    Ok(report(plan, shared, cancelled, cpu, wall))
}

pub(crate) struct Shared {
    pub compiled: Compiled,
    pub target: SocketAddr,
    pub host: HeaderValue,
    timeout: Duration,
    start: Instant,
    measured_start: Instant,
    /// When the schedule ends (moved earlier by a stop).
    end: Cell<Instant>,
    stopped_at: Cell<Option<Instant>>,
    slots: Arc<Semaphore>,
    in_flight: Cell<u64>,
    dispatching: Cell<bool>,
    done: Notify,
    pub http_pool: RefCell<Vec<http::Conn>>,
    pub tcp_pool: RefCell<Vec<tcp::Conn>>,
    pub rec: RefCell<Recorder>,
    next_seq: Cell<u64>,
    users_running: Cell<u32>,
}

impl Shared {
    fn stop(&self, now: Instant) {
        if self.stopped_at.get().is_none() {
            self.stopped_at.set(Some(now));
            self.end.set(self.end.get().min(now));
            self.slots.close();
        }
    }

    fn stopping(&self) -> bool {
        self.stopped_at.get().is_some()
    }

    fn finished_dispatching(&self) {
        self.dispatching.set(false);
        self.check_done();
    }

    fn check_done(&self) {
        if !self.dispatching.get() && self.in_flight.get() == 0 {
            self.done.notify_one();
        }
    }

    fn progress(&self) -> Progress {
        let rec = self.rec.borrow();
        Progress {
            start: self.start,
            measured_start: self.measured_start,
            elapsed: self.start.elapsed(),
            sent: rec.counts.sent,
            completed: rec.counts.completed,
            errors: rec.counts.errors.total(),
            in_flight: self.in_flight.get(),
        }
    }
}

/// Returns whether the run was cancelled.
async fn drive(
    sh: Rc<Shared>,
    model: Model,
    cancel: &AtomicBool,
    observer: &mut dyn FnMut(&Progress) -> Flow,
) -> bool {
    match model {
        Model::Open { rate } => {
            tokio::task::spawn_local(open_dispatch(sh.clone(), rate));
        }
        Model::Closed { users } => {
            sh.users_running.set(users);
            for _ in 0..users {
                tokio::task::spawn_local(user_loop(sh.clone()));
            }
        }
    }
    loop {
        if tokio::time::timeout(TICK, sh.done.notified()).await.is_ok() {
            return false;
        }
        if cancel.load(Ordering::Relaxed) {
            sh.stop(Instant::now());
            return true;
        }
        if !sh.stopping() && observer(&sh.progress()) == Flow::Stop {
            sh.stop(Instant::now());
        }
    }
}

fn due(sh: &Shared, i: u64, rate: f64) -> Instant {
    sh.start + Duration::from_secs_f64(i as f64 / rate)
}

async fn open_dispatch(sh: Rc<Shared>, rate: f64) {
    let timer = Timer::new();
    // The last moment the dispatcher got a slot after waiting for one: arrivals due before it
    // were held up by the service, not by the generator.
    let mut slot_since = sh.start;
    let mut i: u64 = 0;
    'schedule: loop {
        let intended = due(&sh, i, rate);
        if intended >= sh.end.get() {
            break;
        }
        loop {
            if sh.stopping() {
                break 'schedule;
            }
            let now = Instant::now();
            if now >= intended {
                break;
            }
            timer.sleep_until(intended.min(now + TICK)).await;
        }
        let permit = match sh.slots.clone().try_acquire_owned() {
            Ok(permit) => {
                if intended >= sh.measured_start {
                    let lag = Instant::now().saturating_duration_since(intended.max(slot_since));
                    sh.rec.borrow_mut().on_lag(lag);
                }
                permit
            }
            Err(TryAcquireError::Closed) => break,
            Err(TryAcquireError::NoPermits) => {
                let end = sh.end.get();
                match tokio::time::timeout_at(end.into(), sh.slots.clone().acquire_owned()).await {
                    Ok(Ok(permit)) => {
                        slot_since = Instant::now();
                        permit
                    }
                    // The schedule ended (or stopped) while every slot stayed busy.
                    _ => break,
                }
            }
        };
        dispatch(&sh, i, intended, Some(permit));
        i += 1;
    }
    let end = sh.end.get();
    loop {
        let intended = due(&sh, i, rate);
        if intended >= end {
            break;
        }
        sh.rec.borrow_mut().on_dropped(intended);
        i += 1;
    }
    sh.finished_dispatching();
}

async fn user_loop(sh: Rc<Shared>) {
    while !sh.stopping() && Instant::now() < sh.end.get() {
        let seq = sh.next_seq.get();
        sh.next_seq.set(seq + 1);
        let now = Instant::now();
        sh.rec.borrow_mut().on_sent(seq, now, now);
        sh.in_flight.set(sh.in_flight.get() + 1);
        let ending = exchange(&sh, seq).await;
        sh.rec
            .borrow_mut()
            .on_end(seq, now, now, Instant::now(), ending);
        sh.in_flight.set(sh.in_flight.get() - 1);
    }
    sh.users_running.set(sh.users_running.get() - 1);
    if sh.users_running.get() == 0 {
        sh.finished_dispatching();
    }
}

fn dispatch(sh: &Rc<Shared>, seq: u64, intended: Instant, permit: Option<OwnedSemaphorePermit>) {
    let sent_at = Instant::now();
    sh.rec.borrow_mut().on_sent(seq, intended, sent_at);
    sh.in_flight.set(sh.in_flight.get() + 1);
    let sh = sh.clone();
    tokio::task::spawn_local(async move {
        let ending = exchange(&sh, seq).await;
        sh.rec
            .borrow_mut()
            .on_end(seq, intended, sent_at, Instant::now(), ending);
        drop(permit);
        sh.in_flight.set(sh.in_flight.get() - 1);
        sh.check_done();
    });
}

async fn exchange(sh: &Shared, seq: u64) -> Ending {
    let attempt = async {
        match sh.compiled.protocol {
            Protocol::Http => http::exchange(sh, seq).await,
            Protocol::Tcp => tcp::exchange(sh, seq).await,
        }
    };
    match tokio::time::timeout(sh.timeout, attempt).await {
        Ok(ending) => ending,
        Err(_) => Ending::failed(
            ErrorClass::Timeout,
            format!("no answer within {} s", sh.timeout.as_secs_f64()),
        ),
    }
}

pub(crate) fn classify_io(e: &io::Error, during: &str) -> Ending {
    let class = match e.kind() {
        io::ErrorKind::ConnectionRefused => ErrorClass::Refused,
        io::ErrorKind::ConnectionReset
        | io::ErrorKind::ConnectionAborted
        | io::ErrorKind::BrokenPipe
        | io::ErrorKind::UnexpectedEof
        | io::ErrorKind::NotConnected => ErrorClass::Reset,
        io::ErrorKind::TimedOut => ErrorClass::Timeout,
        _ => ErrorClass::Other,
    };
    Ending::failed(class, format!("{during}: {e}"))
}

pub(crate) fn classify_hyper(e: &hyper::Error) -> Ending {
    let mut source = e.source();
    while let Some(s) = source {
        if let Some(io) = s.downcast_ref::<io::Error>() {
            return classify_io(io, "HTTP");
        }
        source = s.source();
    }
    let class = if e.is_incomplete_message() || e.is_canceled() || e.is_closed() {
        ErrorClass::Reset
    } else if e.is_timeout() {
        ErrorClass::Timeout
    } else {
        ErrorClass::Other
    };
    Ending::failed(class, format!("HTTP: {e}"))
}

/// Raise the soft open-file limit toward `wanted` (as far as the hard limit allows): every
/// slot may hold a connection.
fn raise_file_limit(wanted: u64) {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    if let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE)
        && soft < wanted
    {
        let _ = setrlimit(Resource::RLIMIT_NOFILE, wanted.min(hard), hard);
    }
}

fn report(plan: &LoadPlan, sh: Shared, cancelled: bool, cpu: f64, wall: f64) -> LoadReport {
    let mut rec = sh.rec.into_inner();
    let end = sh.end.get();
    let measured = end
        .saturating_duration_since(sh.measured_start)
        .as_secs_f64();
    let per_second = |n: u64| {
        if measured > 0.0 {
            n as f64 / measured
        } else {
            0.0
        }
    };
    let c = rec.counts;
    let lag = rec.schedule_lag();
    let (model, offered_rate, users) = match plan.model {
        Model::Open { rate } => (ModelKind::Open, Some(rate), None),
        Model::Closed { users } => (ModelKind::Closed, None, Some(users)),
    };
    let late_fraction = if lag.dispatched > 0 {
        lag.late as f64 / lag.dispatched as f64
    } else {
        0.0
    };
    let busy = if wall > 0.0 { cpu / wall } else { 0.0 };
    let detail = match model {
        ModelKind::Open if late_fraction > LATE_FRACTION => Some(format!(
            "the generator dispatched {} of {} arrivals more than {} ms late although slots were free (max {:.1} ms); its thread used {cpu:.2} s CPU in {wall:.2} s",
            lag.late,
            lag.dispatched,
            LATE.as_millis(),
            lag.max.unwrap_or(0.0) * 1e3,
        )),
        ModelKind::Closed if busy > BUSY_FRACTION => Some(format!(
            "the generator's thread was busy {:.0}% of the run ({cpu:.2} s CPU in {wall:.2} s): the {} loops waited on the generator, not only on the service",
            busy * 100.0,
            users.unwrap_or(0),
        )),
        _ => None,
    };
    let stopped_at_seconds = sh.stopped_at.get().filter(|_| !cancelled).map(|at| {
        if at >= sh.measured_start {
            at.duration_since(sh.measured_start).as_secs_f64()
        } else {
            -sh.measured_start.duration_since(at).as_secs_f64()
        }
    });
    LoadReport {
        model,
        offered_rate,
        users,
        duration_seconds: plan.duration.as_secs_f64(),
        measured_seconds: measured,
        warmup_seconds: plan.warmup.as_secs_f64(),
        sent: c.sent,
        completed: c.completed,
        succeeded: c.succeeded,
        dropped: c.dropped,
        shed: c.shed,
        achieved_rate: per_second(c.completed),
        throughput: per_second(c.succeeded),
        errors: c.errors,
        error_examples: std::mem::take(&mut rec.examples),
        latency: Latency {
            corrected: LatencySummary::of(&rec.corrected),
            uncorrected: LatencySummary::of(&rec.uncorrected),
            corrected_histogram: encode_histogram(&rec.corrected),
            histogram_encoding: HISTOGRAM_ENCODING.to_string(),
            histogram_unit: HISTOGRAM_UNIT.to_string(),
        },
        timeline: rec.timeline(),
        phases: rec.phase_reports(),
        writes: rec.writes.take(),
        generator: Generator {
            cpu_seconds: cpu,
            wall_seconds: wall,
            saturated: detail.is_some(),
            detail,
            schedule_lag: lag,
            connections_opened: rec.connections,
        },
        cancelled,
        stopped_at_seconds,
    }
}
