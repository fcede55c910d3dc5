//! The engine: [`run`] drives one load from the calling thread. Each event loop is a
//! current-thread tokio runtime; the calling thread runs the first (and the observer), and a
//! plan with `threads > 1` spawns the others from it — so a caller that has joined a
//! service's network namespace with `setns` (which affects only the calling thread, and the
//! threads it creates afterwards) loads the service inside it.
//!
//! Open model: arrival `i` is due at `start + i / rate`; loop `k` of `T` owns arrivals
//! `k, k + T, …` and `max_in_flight / T` slots. Its dispatcher waits (timerfd) until each
//! arrival is due, takes a slot, and starts the exchange; when no slot is free it waits for
//! one, and every later arrival keeps its own due time, so the wait shows in the corrected
//! latency. Arrivals still waiting when the schedule ends are `dropped`. Closed model: `users`
//! loops (split over the event loops), each sending when its previous request ended.
//!
//! The generator watches itself: for each measured arrival that found a free slot, the time
//! between when it could have been sent and when it was is its own lag; too many late
//! dispatches (open model) or busy threads (closed model) mark the run `saturated`.

pub(crate) mod http;
pub mod priority;
mod tcp;
mod timer;

use std::cell::{Cell, RefCell};
use std::io;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore, TryAcquireError};
use tokio::task::LocalSet;

use crate::error::LoadError;
use crate::plan::{Compiled, LoadPlan, Model, Protocol};
use crate::record::{Ending, Recorder};
use crate::report::{
    ErrorClass, Generator, HISTOGRAM_ENCODING, HISTOGRAM_UNIT, Latency, LoadReport, ModelKind,
    TimelineSecond, encode_histogram,
};
use crate::schedule::{Schedule, Stream};
use qualify_model::load::LoadShape;
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

/// Run `plan` against `target` from the calling thread and report what it measured.
///
/// The calling thread runs the first of the plan's `threads` event loops (and the observer);
/// further loops run on threads it spawns, which share its network namespace (threads
/// created after a `setns` inherit it). `observer` is called every [`TICK`] on the calling
/// thread while the load runs; it must return quickly (it delays that thread's share of the
/// schedule). Setting `cancel` abandons the run within a tick: requests in flight are dropped
/// and the report says `cancelled`. Requests' failures are counted in the report, never
/// returned as errors.
pub fn run(
    plan: &LoadPlan,
    target: SocketAddr,
    cancel: &AtomicBool,
    observer: &mut dyn FnMut(&Progress) -> Flow,
) -> Result<LoadReport, LoadError> {
    run_placed(plan, target, Placement::default(), cancel, observer).map(|(report, _)| report)
}

/// Which part of a split load a process runs: generator `index` of `of` (see
/// [`LoadPlan::generators`]). Open model: arrivals `index, index + of, …` of the plan's one
/// schedule (so `rate / of`); closed model: its share of the users. Slots are shared the same
/// way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Share {
    pub index: u32,
    pub of: u32,
}

impl Share {
    /// The whole load, in one process.
    pub const WHOLE: Share = Share { index: 0, of: 1 };

    /// This share's part of `total` (the first `total % of` shares get one more).
    pub fn of_total(self, total: u32) -> u32 {
        share(total, self.of.max(1), self.index)
    }
}

/// Where and when a run's schedule is placed.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Placement {
    pub share: Share,
    /// When the schedule (warmup first) starts (`None`: now). In the future: the run waits
    /// for it, so generators given the same instant keep one schedule.
    pub start: Option<Instant>,
    /// Keep the histograms a split load's merge needs ([`Extras`]).
    pub extras: bool,
}

impl Default for Placement {
    fn default() -> Placement {
        Placement {
            share: Share::WHOLE,
            start: None,
            extras: false,
        }
    }
}

/// The histograms a report keeps only as summaries, encoded (for a split load's merge).
#[derive(Debug, Default)]
pub(crate) struct Extras {
    pub uncorrected: String,
    pub phases: Vec<qualify_model::load::PhaseHistograms>,
    /// A staged load: each second's latency histogram (by intended start).
    pub seconds: Vec<String>,
}

/// [`run`], placed: a share of a split load, from a given start.
pub(crate) fn run_placed(
    plan: &LoadPlan,
    target: SocketAddr,
    placement: Placement,
    cancel: &AtomicBool,
    observer: &mut dyn FnMut(&Progress) -> Flow,
) -> Result<(LoadReport, Extras), LoadError> {
    let compiled = crate::plan::compile(plan)?;
    if tokio::runtime::Handle::try_current().is_ok() {
        return Err(LoadError::NestedRuntime);
    }
    let part = placement.share;
    if part.of == 0 || part.index >= part.of {
        return Err(LoadError::Plan(format!(
            "generator index {} of {}: the index must be below the count",
            part.index, part.of
        )));
    }
    let (concurrency, connections) = match plan.model {
        Model::Open { .. } => {
            let slots = part.of_total(plan.max_in_flight).max(1);
            (slots, u64::from(slots))
        }
        Model::Closed { users } => {
            let users = part.of_total(users);
            (users, u64::from(users))
        }
    };
    let threads = plan.threads.clamp(1, concurrency.max(1));
    raise_file_limit(connections + 64 * u64::from(threads));
    let start = placement.start.unwrap_or_else(Instant::now);
    let schedule = Schedule::of(plan);
    let control = Arc::new(Control {
        start,
        measured_start: start + plan.warmup,
        stop_ns: AtomicU64::new(NOT_STOPPED),
        cancelled: AtomicBool::new(false),
        running: AtomicU32::new(threads),
        sent: AtomicU64::new(0),
        completed: AtomicU64::new(0),
        errors: AtomicU64::new(0),
        in_flight: AtomicU64::new(0),
        next_seq: AtomicU64::new(0),
    });
    let job = Job {
        plan,
        compiled: &compiled,
        target,
        share: part,
        schedule: &schedule,
        threads,
        control: &control,
        cancel,
    };
    let mut results = std::thread::scope(|scope| {
        let others: Vec<_> = (1..threads)
            .map(|k| {
                let job = &job;
                let spawned = std::thread::Builder::new()
                    .name(format!("qualify-load-{k}"))
                    .spawn_scoped(scope, move || job.worker(k, None));
                if spawned.is_err() {
                    // This loop never runs: the others must not wait for it.
                    Finish::new(job.control).finish();
                    job.control.stop(Instant::now());
                }
                spawned
            })
            .collect();
        let mut results = vec![job.worker(0, Some(observer))];
        for spawned in others {
            results.push(match spawned {
                Ok(handle) => handle.join().unwrap_or(Err(LoadError::GeneratorPanicked)),
                Err(e) => Err(LoadError::Runtime(e)),
            });
        }
        results
    })
    .into_iter();
    let wall = start.elapsed().as_secs_f64();
    let Some(first) = results.next() else {
        return Err(LoadError::NoGenerator);
    };
    let mut merged = first?;
    for result in results {
        let part = result?;
        merged.rec.merge(part.rec);
        merged.cpu += part.cpu;
    }
    let cancelled = control.cancelled.load(Ordering::Relaxed);
    let extras = if placement.extras {
        merged.rec.extras()
    } else {
        Extras::default()
    };
    Ok((
        report(
            plan, &schedule, &control, merged, part, threads, cancelled, wall,
        ),
        extras,
    ))
}

/// State shared by the generator's threads (atomics only).
struct Control {
    start: Instant,
    measured_start: Instant,
    /// Nanoseconds after `start` at which the load was stopped ([`NOT_STOPPED`]: never).
    stop_ns: AtomicU64,
    cancelled: AtomicBool,
    /// Event loops that have not finished.
    running: AtomicU32,
    sent: AtomicU64,
    completed: AtomicU64,
    errors: AtomicU64,
    in_flight: AtomicU64,
    /// The closed model's next sequence number.
    next_seq: AtomicU64,
}

const NOT_STOPPED: u64 = u64::MAX;

impl Control {
    fn stop(&self, at: Instant) {
        let ns = u64::try_from(at.saturating_duration_since(self.start).as_nanos())
            .unwrap_or(NOT_STOPPED - 1);
        let _ =
            self.stop_ns
                .compare_exchange(NOT_STOPPED, ns, Ordering::Relaxed, Ordering::Relaxed);
    }

    fn stopped_at(&self) -> Option<Instant> {
        match self.stop_ns.load(Ordering::Relaxed) {
            NOT_STOPPED => None,
            ns => Some(self.start + Duration::from_nanos(ns)),
        }
    }

    fn progress(&self) -> Progress {
        Progress {
            start: self.start,
            measured_start: self.measured_start,
            elapsed: self.start.elapsed(),
            sent: self.sent.load(Ordering::Relaxed),
            completed: self.completed.load(Ordering::Relaxed),
            errors: self.errors.load(Ordering::Relaxed),
            in_flight: self.in_flight.load(Ordering::Relaxed),
        }
    }
}

/// What every event loop of one run shares.
struct Job<'a> {
    plan: &'a LoadPlan,
    compiled: &'a Compiled,
    target: SocketAddr,
    share: Share,
    schedule: &'a Schedule,
    threads: u32,
    control: &'a Arc<Control>,
    cancel: &'a AtomicBool,
}

/// One event loop's measurements.
struct Part {
    rec: Recorder,
    cpu: f64,
}

/// `total` split over `parts`: part `k`'s share (the first `total % parts` get one more).
fn share(total: u32, parts: u32, k: u32) -> u32 {
    total / parts + u32::from(k < total % parts)
}

/// One event loop's place in [`Control::running`]: given up once, when its share of the load
/// is done — or, if the loop failed or panicked first, when this guard drops (then the whole
/// load stops, so no loop and no observer waits for it).
struct Finish<'a> {
    control: &'a Control,
    done: Cell<bool>,
}

impl<'a> Finish<'a> {
    fn new(control: &'a Control) -> Finish<'a> {
        Finish {
            control,
            done: Cell::new(false),
        }
    }

    fn finish(&self) {
        if !self.done.replace(true) {
            self.control.running.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

impl Drop for Finish<'_> {
    fn drop(&mut self) {
        if !self.done.get() {
            self.control.stop(Instant::now());
            self.finish();
        }
    }
}

impl Job<'_> {
    /// Event loop `k` of `threads`, on the current thread. Loop 0 calls the observer.
    fn worker(
        &self,
        k: u32,
        observer: Option<&mut dyn FnMut(&Progress) -> Flow>,
    ) -> Result<Part, LoadError> {
        let _ahead = priority::Raised::now();
        let finish = Finish::new(self.control);
        self.event_loop(k, observer, &finish)
    }

    fn event_loop(
        &self,
        k: u32,
        observer: Option<&mut dyn FnMut(&Progress) -> Flow>,
        finish: &Finish<'_>,
    ) -> Result<Part, LoadError> {
        let plan = self.plan;
        let control = self.control;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()
            .map_err(LoadError::Runtime)?;
        let _slack = FineTimerSlack::set();
        let cpu_before = thread_cpu();
        let horizon = plan.warmup + plan.duration + plan.timeout + Duration::from_secs(60);
        let mut recorder = Recorder::new(
            control.measured_start,
            plan.duration,
            horizon,
            &plan.phases,
            plan.record_writes,
            LATE,
        )?;
        if !plan.stages.is_empty() {
            recorder.keep_start_seconds()?;
        }
        // Arrival `i` of the plan's schedule belongs to generator `i mod of`, and within it
        // to event loop `(i div of) mod threads`.
        let of = u64::from(self.share.of);
        let work = match plan.model {
            Model::Open { .. } => Work::Open {
                first: u64::from(self.share.index) + of * u64::from(k),
                step: of * u64::from(self.threads),
            },
            Model::Closed { users } => Work::Closed {
                users: share(self.share.of_total(users), self.threads, k),
            },
        };
        let slots = match plan.model {
            Model::Open { .. } => share(
                self.share.of_total(plan.max_in_flight).max(1),
                self.threads,
                k,
            ),
            Model::Closed { users } => share(self.share.of_total(users), self.threads, k),
        };
        let shared = Rc::new(Shared {
            host: self.target.to_string(),
            compiled: self.compiled.clone(),
            target: self.target,
            timeout: plan.timeout,
            control: Arc::clone(control),
            share: self.share,
            schedule: self.schedule.clone(),
            arrivals: plan.arrivals,
            start: control.start,
            measured_start: control.measured_start,
            end: Cell::new(control.measured_start + plan.duration),
            stopped_at: Cell::new(None),
            slots: Arc::new(Semaphore::new(
                usize::try_from(slots)
                    .unwrap_or(Semaphore::MAX_PERMITS)
                    .min(Semaphore::MAX_PERMITS),
            )),
            in_flight: Cell::new(0),
            dispatching: Cell::new(true),
            done: Notify::new(),
            http_pool: RefCell::new(Vec::new()),
            tcp_pool: RefCell::new(Vec::new()),
            rec: RefCell::new(recorder),
            users_running: Cell::new(0),
        });
        let local = LocalSet::new();
        local.block_on(
            &runtime,
            drive(shared.clone(), work, self.cancel, observer, finish),
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
        let Ok(shared) = Rc::try_unwrap(shared) else {
            return Err(LoadError::TasksOutlivedLoop);
        };
        let mut rec = shared.rec.into_inner();
        if let Some(at) = shared.stopped_at.get() {
            rec.end_window(at);
        }
        Ok(Part { rec, cpu })
    }
}

/// One event loop's share of the load.
#[derive(Debug, Clone, Copy)]
enum Work {
    /// Arrivals `first, first + step, first + 2·step, …` of the schedule.
    Open {
        first: u64,
        step: u64,
    },
    Closed {
        users: u32,
    },
}

pub(crate) struct Shared {
    pub compiled: Compiled,
    pub target: SocketAddr,
    /// The `Host` header's value: the target address.
    pub host: String,
    timeout: Duration,
    control: Arc<Control>,
    share: Share,
    schedule: Schedule,
    arrivals: qualify_model::load::Arrivals,
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
    users_running: Cell<u32>,
}

impl Shared {
    /// Stop this loop's schedule at `at` (and every loop's, through the control).
    fn stop(&self, at: Instant) {
        self.control.stop(at);
        if self.stopped_at.get().is_none() {
            self.stopped_at.set(Some(at));
            self.end.set(self.end.get().min(at));
            self.rec.borrow_mut().end_window(at);
            self.slots.close();
        }
    }

    /// Follow a stop another loop (or the observer) decided.
    fn follow(&self) {
        if self.stopped_at.get().is_none()
            && let Some(at) = self.control.stopped_at()
        {
            self.stop(at);
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

    fn sent(&self, seq: u64, intended: Instant, now: Instant) {
        self.rec
            .borrow_mut()
            .on_sent(seq, intended, now, self.in_flight.get() + 1);
        if intended >= self.measured_start {
            self.control.sent.fetch_add(1, Ordering::Relaxed);
        }
        self.in_flight.set(self.in_flight.get() + 1);
        self.control.in_flight.fetch_add(1, Ordering::Relaxed);
    }

    fn ended(&self, seq: u64, intended: Instant, sent_at: Instant, ending: Ending) {
        if intended >= self.measured_start {
            self.control
                .completed
                .fetch_add(u64::from(ending.answered), Ordering::Relaxed);
            self.control
                .errors
                .fetch_add(u64::from(ending.error.is_some()), Ordering::Relaxed);
        }
        // A request given up on counts as no faster than its timeout (a kernel's own connect
        // timeout may come earlier): its latency is censored there, never left out.
        let mut now = Instant::now();
        if ending.error == Some(ErrorClass::Timeout) {
            now = now.max(sent_at + self.timeout);
        }
        self.rec
            .borrow_mut()
            .on_end(seq, intended, sent_at, now, ending);
        self.in_flight.set(self.in_flight.get() - 1);
        self.control.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Returns when this loop's share is done (loop 0: when every loop's is), or at a cancel.
async fn drive(
    sh: Rc<Shared>,
    work: Work,
    cancel: &AtomicBool,
    mut observer: Option<&mut dyn FnMut(&Progress) -> Flow>,
    finish: &Finish<'_>,
) {
    match work {
        Work::Open { first, step } => {
            tokio::task::spawn_local(open_dispatch(sh.clone(), first, step));
        }
        Work::Closed { users } => {
            sh.users_running.set(users);
            for _ in 0..users {
                tokio::task::spawn_local(user_loop(sh.clone()));
            }
            if users == 0 {
                sh.finished_dispatching();
            }
        }
    }
    let control = &sh.control;
    let mut mine_done = false;
    loop {
        if !mine_done && tokio::time::timeout(TICK, sh.done.notified()).await.is_ok() {
            mine_done = true;
            finish.finish();
        } else if mine_done {
            tokio::time::sleep(TICK).await;
        }
        if cancel.load(Ordering::Relaxed) || control.cancelled.load(Ordering::Relaxed) {
            control.cancelled.store(true, Ordering::Relaxed);
            sh.stop(Instant::now());
            return;
        }
        sh.follow();
        let Some(observer) = observer.as_mut() else {
            if mine_done {
                return;
            }
            continue;
        };
        if mine_done && control.running.load(Ordering::Relaxed) == 0 {
            return;
        }
        if control.stopped_at().is_none() && observer(&control.progress()) == Flow::Stop {
            sh.stop(Instant::now());
        }
    }
}

async fn open_dispatch(sh: Rc<Shared>, first: u64, step: u64) {
    let timer = Timer::new();
    let mut arrivals = Stream::new(&sh.schedule, sh.arrivals, first, step);
    let due = |t: f64| sh.start + Duration::from_secs_f64(t);
    // The last moment the dispatcher got a slot after waiting for one: arrivals due before it
    // were held up by the service, not by the generator.
    let mut slot_since = sh.start;
    // The next arrival (sequence number, due), kept when the schedule ends before it.
    let mut next = arrivals.next();
    'schedule: while let Some((i, at)) = next {
        sh.follow();
        let intended = due(at);
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
            sh.follow();
        }
        if intended >= sh.end.get() {
            break;
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
        dispatch(&sh, i, intended, permit);
        next = arrivals.next();
    }
    let end = sh.end.get();
    while let Some((_, at)) = next {
        let intended = due(at);
        if intended >= end {
            break;
        }
        sh.rec.borrow_mut().on_dropped(intended);
        next = arrivals.next();
    }
    sh.finished_dispatching();
}

async fn user_loop(sh: Rc<Shared>) {
    loop {
        sh.follow();
        if sh.stopping() || Instant::now() >= sh.end.get() {
            break;
        }
        // Sequence numbers stay distinct across a split load's generators.
        let seq = sh.control.next_seq.fetch_add(1, Ordering::Relaxed) * u64::from(sh.share.of)
            + u64::from(sh.share.index);
        let now = Instant::now();
        sh.sent(seq, now, now);
        let ending = exchange(&sh, seq).await;
        sh.ended(seq, now, now, ending);
    }
    sh.users_running.set(sh.users_running.get() - 1);
    if sh.users_running.get() == 0 {
        sh.finished_dispatching();
    }
}

fn dispatch(sh: &Rc<Shared>, seq: u64, intended: Instant, permit: OwnedSemaphorePermit) {
    let sent_at = Instant::now();
    sh.sent(seq, intended, sent_at);
    let sh = sh.clone();
    tokio::task::spawn_local(async move {
        let ending = exchange(&sh, seq).await;
        sh.ended(seq, intended, sent_at, ending);
        drop(permit);
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

#[allow(clippy::too_many_arguments)]
fn report(
    plan: &LoadPlan,
    schedule: &Schedule,
    control: &Control,
    mut part: Part,
    share: Share,
    threads: u32,
    cancelled: bool,
    wall: f64,
) -> LoadReport {
    let rec = &mut part.rec;
    let cpu = part.cpu;
    let stopped_at = control.stopped_at();
    let end = (control.measured_start + plan.duration)
        .min(stopped_at.unwrap_or(Instant::now() + Duration::from_secs(1 << 30)));
    let measured = end
        .saturating_duration_since(control.measured_start)
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
        Model::Open { rate } => {
            // A staged load offers its schedule's mean rate over the measured phase.
            let rate = if plan.stages.is_empty() {
                rate
            } else {
                let w = plan.warmup.as_secs_f64();
                schedule.mean_rate(w, w + plan.duration.as_secs_f64())
            };
            (
                ModelKind::Open,
                Some(rate / f64::from(share.of.max(1))),
                None,
            )
        }
        Model::Closed { users } => (ModelKind::Closed, None, Some(share.of_total(users))),
    };
    let late_fraction = if lag.dispatched > 0 {
        lag.late as f64 / lag.dispatched as f64
    } else {
        0.0
    };
    let busy = if wall > 0.0 {
        cpu / (wall * f64::from(threads))
    } else {
        0.0
    };
    let cpu_text = format!(
        "its {threads} thread{} used {cpu:.2} s CPU in {wall:.2} s",
        if threads == 1 { "" } else { "s" }
    );
    let detail = match model {
        ModelKind::Open if late_fraction > LATE_FRACTION => {
            let cause = if busy > BUSY_FRACTION {
                "it was busy all along: give it more threads, or a faster machine"
            } else {
                "it was mostly idle, so its thread was not running when arrivals were due (other load on the cores, or an observer that blocked)"
            };
            Some(format!(
                "the generator dispatched {} of {} arrivals more than {} ms late although slots were free (max {:.1} ms); {cpu_text}: {cause}",
                lag.late,
                lag.dispatched,
                LATE.as_millis(),
                lag.max.unwrap_or(0.0) * 1e3,
            ))
        }
        ModelKind::Closed if busy > BUSY_FRACTION => Some(format!(
            "the generator was busy {:.0}% of the run ({cpu_text}): the {} loops waited on the generator, not only on the service",
            busy * 100.0,
            users.unwrap_or(0),
        )),
        _ => None,
    };
    let stopped_at_seconds = stopped_at.filter(|_| !cancelled).map(|at| {
        if at >= control.measured_start {
            at.duration_since(control.measured_start).as_secs_f64()
        } else {
            -control.measured_start.duration_since(at).as_secs_f64()
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
        achieved_rate: per_second(rec.window_answers),
        throughput: per_second(rec.window_successes),
        errors: c.errors,
        error_examples: std::mem::take(&mut rec.examples),
        latency: Latency {
            corrected: crate::report::summary_of(&rec.corrected),
            uncorrected: crate::report::summary_of(&rec.uncorrected),
            censored: Some(rec.censored),
            corrected_histogram: encode_histogram(&rec.corrected),
            histogram_encoding: HISTOGRAM_ENCODING.to_string(),
            histogram_unit: HISTOGRAM_UNIT.to_string(),
        },
        timeline: offered_timeline(plan, schedule, share, rec.timeline()),
        shape: shape(plan, schedule, share, rec),
        phases: rec.phase_reports(),
        writes: rec.writes.take(),
        generator: Generator {
            threads,
            cpu_seconds: cpu,
            wall_seconds: wall,
            saturated: detail.is_some(),
            detail,
            schedule_lag: lag,
            connections_opened: rec.connections,
        },
        cancelled,
        stopped_at_seconds,
        generators: Vec::new(),
    }
}

/// Each second's offered rate (this share's) on a staged load's timeline.
fn offered_timeline(
    plan: &LoadPlan,
    schedule: &Schedule,
    share: Share,
    mut rows: Vec<TimelineSecond>,
) -> Vec<TimelineSecond> {
    if !plan.stages.is_empty() {
        let w = plan.warmup.as_secs_f64();
        let duration = plan.duration.as_secs_f64();
        for row in &mut rows {
            let t = f64::from(row.second);
            if t < duration {
                let rate = schedule.mean_rate(w + t, w + (t + 1.0).min(duration));
                row.offered = Some(rate / f64::from(share.of.max(1)));
            }
        }
    }
    rows
}

/// The load's shape (stages, arrivals; per second by intended start for stages), or `None`
/// for a constant, evenly spaced rate.
fn shape(plan: &LoadPlan, schedule: &Schedule, share: Share, rec: &Recorder) -> Option<LoadShape> {
    if plan.stages.is_empty() && plan.arrivals.is_uniform() {
        return None;
    }
    let w = plan.warmup.as_secs_f64();
    let duration = plan.duration.as_secs_f64();
    let seconds = rec
        .start_seconds(duration.ceil() as usize)
        .into_iter()
        .map(|mut s| {
            let t = f64::from(s.second);
            s.offered_rate =
                schedule.mean_rate(w + t, w + (t + 1.0).min(duration)) / f64::from(share.of.max(1));
            s
        })
        .collect();
    Some(LoadShape {
        stages: plan.stages.clone(),
        start_rate: plan.start_rate,
        arrivals: plan.arrivals,
        seconds,
        first_failed_at_rate: None,
        first_failed_second: None,
        first_failed_because: None,
        first_failed_overstates_by: None,
    })
}
