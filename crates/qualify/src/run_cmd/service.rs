//! A service cell: the artifact started fresh under the probe's supervision (ceilings, tree
//! ownership, deadlock / OOM / crash classification), on a loopback port qualify assigns
//! (`{port}`, exported as `PORT`); readiness awaited; driven by `[load]` through
//! `qualify-load`; judged against `[[slo]]`; stopped with `[service] stop` (late → flag
//! `slow_shutdown`). The cell's result is the probe's, with the load report attached as
//! `result.load` and the outcome the service verdict decided (`ok`, `slo_violated`,
//! `overloaded`, `unavailable`) unless the process itself ended first (then the probe's
//! classification stands). A cell whose load generator was the bottleneck is `interrupted`:
//! not evidence about the service.
//!
//! Seams for dependency faults (issue 13): [`ServiceRun`] starts the service and exposes its
//! address and control; dependencies and fault proxies are started before it and stopped after.

use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use qualify_load::ready::{ReadyCheck as LoadReady, wait_ready};
use qualify_load::verdict::{CellFacts, Verdict};
use qualify_load::{Flow, LoadPlan, LoadReport};
use qualify_model::{Params, Value};
use qualify_probe::{
    BackendChoice, CancelToken, Control, Flag, Outcome, ProbeError, ProbeResult, ProbeSpec,
};
use qualify_spec::{ReadyCheck, Spec};

use super::faults::{self, Harness};

/// A started service: its probe running on a thread of its own.
pub struct ServiceRun {
    pub addr: SocketAddr,
    pub control: Arc<Control>,
    /// Set when the probe returned (the process tree is gone).
    done: Arc<AtomicBool>,
    /// Cancels this service's probe only.
    cancel: CancelToken,
    thread: Option<JoinHandle<Result<ProbeResult, ProbeError>>>,
    pub started: Instant,
    /// The service's network namespace, when it has one (its dependencies and readiness command
    /// join it too).
    pub netns: Option<Arc<qualify_probe::netns::Netns>>,
}

impl ServiceRun {
    /// Start the service of `probe` (which already carries the port) on a thread.
    pub fn start(mut probe: ProbeSpec, addr: SocketAddr) -> ServiceRun {
        let control = Arc::new(Control::default());
        probe.control = Some(Arc::clone(&control));
        let netns = match &probe.sandbox.network {
            qualify_probe::Network::Join(n) => Some(Arc::clone(n)),
            _ => None,
        };
        let done = Arc::new(AtomicBool::new(false));
        let cancel: CancelToken = Arc::new(AtomicBool::new(false));
        let (d, c) = (Arc::clone(&done), Arc::clone(&cancel));
        let thread = std::thread::spawn(move || {
            let r = qualify_probe::probe(&probe, &c);
            d.store(true, Ordering::SeqCst);
            r
        });
        ServiceRun {
            addr,
            control,
            done,
            cancel,
            thread: Some(thread),
            started: Instant::now(),
            netns,
        }
    }

    /// The process tree is gone (it ended on its own, or was stopped).
    pub fn ended(&self) -> bool {
        self.done.load(Ordering::SeqCst)
    }

    /// Ask the service to stop with `signal`; after `grace` the probe kills the tree and flags
    /// `slow_shutdown`. Then wait for the probe's result.
    pub fn stop(mut self, signal: i32, grace: Duration) -> Result<ProbeResult, ProbeError> {
        if !self.ended() {
            self.control.request_stop(signal, grace);
        }
        self.join()
    }

    /// Wait for the result of an instance already asked to stop.
    pub fn stop_now(mut self) -> Result<ProbeResult, ProbeError> {
        self.join()
    }

    /// Kill the tree now (qualify is stopping), then wait for the result.
    pub fn abort(mut self) -> Result<ProbeResult, ProbeError> {
        self.cancel.store(true, Ordering::SeqCst);
        self.join()
    }

    fn join(&mut self) -> Result<ProbeResult, ProbeError> {
        let Some(thread) = self.thread.take() else {
            return Err(ProbeError::Io {
                context: "the service's probe was already collected".into(),
                source: std::io::Error::other("joined twice"),
            });
        };
        thread.join().unwrap_or_else(|_| {
            Err(ProbeError::Io {
                context: "the service's probe thread panicked".into(),
                source: std::io::Error::other("panic"),
            })
        })
    }
}

impl Drop for ServiceRun {
    /// Never leave a service running: a run dropped without `stop` kills its tree.
    fn drop(&mut self) {
        if let Some(thread) = self.thread.take() {
            self.cancel.store(true, Ordering::SeqCst);
            let _ = thread.join();
        }
    }
}

/// A free loopback port, chosen by the kernel (bound and released: a service that starts
/// right after takes it).
pub fn free_port() -> Result<u16, ProbeError> {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|source| ProbeError::Io {
            context: "cannot find a free loopback port for the service".into(),
            source,
        })
}

/// The cell's parameters plus its port (what `{port}` renders to).
pub fn with_port(params: &Params, port: u16) -> Params {
    let mut p = params.clone();
    p.insert(qualify_spec::PORT_PLACEHOLDER, Value::Int(i64::from(port)));
    p
}

/// Everything one service cell needs from the run.
pub struct ServiceCell<'a> {
    pub spec: &'a Spec,
    pub backend: BackendChoice,
    pub cancel: &'a CancelToken,
}

impl ServiceCell<'_> {
    /// Start, await, load, judge and stop the service of the cell at `params` — with its
    /// dependencies behind fault proxies and a kill-and-restart when the spec has them.
    pub fn run(&self, params: &Params) -> Result<ProbeResult, ProbeError> {
        let spec = self.spec;
        let Some(service) = &spec.service else {
            return Err(ProbeError::Io {
                context: "a service cell needs [service]".into(),
                source: std::io::Error::other("not a service spec"),
            });
        };
        let port = match service.port {
            Some(p) => p,
            None => free_port()?,
        };
        let bound = with_port(params, port);
        let mut probe = spec.cell_probe(&bound, self.backend);
        // With network = "loopback" the service lives in a network namespace of its own, shared
        // with its dependencies, their fault proxies and its readiness command; this thread joins
        // it for the readiness check and the load (their extra threads inherit it), and nothing
        // is exposed on the host's interfaces.
        if let Some(dep) = spec
            .dependencies
            .iter()
            .find(|d| matches!(d.source, qualify_spec::DependencySource::Upstream { .. }))
            && probe.sandbox.mode != qualify_spec::SandboxMode::Off
            && matches!(probe.sandbox.network, qualify_probe::Network::Loopback)
        {
            probe.sandbox.network = qualify_probe::Network::Unavailable(format!(
                "the service shares qualify's network: its dependency `{}` is an upstream outside the cell",
                dep.name
            ));
        }
        let netns = super::sandbox::service_netns(&mut probe);
        let mut harness = Harness::start(spec, params, self.backend, self.cancel, netns.as_ref())?;
        if self.cancelled() {
            let _ = harness.finish();
            return Ok(probe.not_run("not probed: the run was stopping"));
        }
        probe.env.push(("PORT".into(), port.to_string().into()));
        for (k, v) in harness.service_env(spec, &bound) {
            probe.env.push((k.into(), v.into()));
        }
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
        let run = ServiceRun::start(probe.clone(), addr);
        let _inside = match &netns {
            Some(n) => match n.enter() {
                Ok(guard) => Some(guard),
                Err(source) => {
                    let _ = harness.finish();
                    let _ = run.abort();
                    return Err(ProbeError::Io {
                        context: "joining the service's network namespace".into(),
                        source,
                    });
                }
            },
            None => None,
        };

        // Ready?
        let ready = self.await_ready(&run, &bound, service.ready.within);
        if let Err(why) = ready {
            let _ = harness.finish();
            if self.cancelled() {
                let mut r = run.abort()?;
                r.outcome = Outcome::Interrupted;
                return Ok(r);
            }
            if run.ended() {
                let mut r = run.stop(service.stop.signal_number, service.stop.grace)?;
                r.detail = format!("exited before it was ready: {}", r.detail);
                return Ok(r);
            }
            let mut r = run.stop(service.stop.signal_number, service.stop.grace)?;
            let detail = format!("never ready: {why}");
            attach_load(&mut r, None, &[], &detail, None);
            return Ok(judged(r, Outcome::Unavailable, detail));
        }
        let ready_seconds = run.started.elapsed().as_secs_f64();

        // Load, with the fault windows armed at the measured phase's start and a kill and
        // restart of the service at `[recovery] at`.
        let mut plan = self.plan(params);
        if let Some(plan) = plan.as_mut() {
            plan.phases = match (&spec.faults, &spec.recovery) {
                (Some(_), _) => faults::phases(spec, plan.duration),
                (None, Some(r)) => faults::restart_phases(r.at, plan.duration),
                (None, None) => Vec::new(),
            };
            plan.record_writes = spec.recovery.as_ref().is_some_and(|r| r.writes.is_some());
            if let Some(writes) = spec.recovery.as_ref().and_then(|r| r.writes.as_ref()) {
                // The write request is the load: every request writes `{seq}`.
                plan.requests = vec![qualify_load::RequestTemplate {
                    weight: 1,
                    kind: qualify_load::RequestKind::Http(writes.request.clone()),
                }];
            }
        }
        let mut instances = Instances::new(run, probe, addr);
        let mut measured = None;
        let report = match &plan {
            Some(plan) => {
                let recovery = spec.recovery.as_ref();
                let mut observer = |p: &qualify_load::Progress| {
                    measured = Some(p.measured_start);
                    harness.arm(p.measured_start);
                    if let (Some(r), Some(elapsed)) = (recovery, p.measured_elapsed())
                        && elapsed >= r.at
                    {
                        instances.kill_and_restart(r, service.ready.check.clone());
                    }
                    if instances.ended() {
                        Flow::Stop
                    } else {
                        Flow::Continue
                    }
                };
                Some(
                    qualify_load::run(plan, addr, self.cancel, &mut observer).map_err(|e| {
                        ProbeError::Io {
                            context: format!("the load on {addr} could not run"),
                            source: std::io::Error::other(e.to_string()),
                        }
                    })?,
                )
            }
            None => None,
        };
        let restart = instances.restart_seen(measured);
        let alive = !instances.ended();
        // The write check reads back while the (restarted) service still runs.
        let writes = match (
            spec.recovery.as_ref().and_then(|r| r.writes.as_ref()),
            report.as_ref(),
        ) {
            (Some(w), Some(rep)) if alive => {
                faults::check_writes(addr, &w.read, rep, Duration::from_secs(30))
            }
            _ => None,
        };
        let samples = instances.memory_samples();
        let (mut r, first) = if self.cancelled() {
            instances.abort()?
        } else {
            instances.stop(service.stop.signal_number, service.stop.grace)?
        };
        let proxies = harness.finish();
        if self.cancelled() {
            r.outcome = Outcome::Interrupted;
            r.detail = "not probed to the end: the run was stopping".into();
            return Ok(r);
        }
        let slos = report
            .as_ref()
            .map(|rep| qualify_load::slo::evaluate(&spec.slos, rep))
            .unwrap_or_default();
        let growth =
            measured.and_then(|start| memory_growth(&samples, start, r.limits.memory_bytes));
        if growth.as_ref().is_some_and(|g| g.grew_steadily) && !r.has_flag(Flag::MemoryGrowth) {
            r.flags.push(Flag::MemoryGrowth);
            r.flags.sort_unstable();
        }
        // Faults and restarts are judged by their own verdict: the SLOs outside the window,
        // recovery, amplification, lost writes.
        let faulted = !proxies.is_empty() || restart.is_some();
        let behaviour = match (&report, faulted) {
            (Some(rep), true) => {
                let max_in_flight = plan.as_ref().map_or(0, |p| p.max_in_flight);
                let (behaviour, mut record) = faults::judge(
                    spec,
                    rep,
                    &proxies,
                    restart.as_ref(),
                    writes.clone(),
                    max_in_flight,
                );
                if let Some(first) = &first {
                    // How the killed instance ended, beside each record's restart.
                    for rec in &mut record {
                        rec.killed_instance = Some(qualify_model::fault::KilledInstance {
                            outcome: first.outcome,
                            detail: first.detail.clone(),
                        });
                    }
                }
                r.faults = record;
                Some(behaviour)
            }
            _ => None,
        };
        // A faulted cell's service verdict is judged outside the fault window.
        let outside = match (&report, &behaviour) {
            (Some(rep), Some(_)) => Some(outside_window(rep)),
            _ => None,
        };
        let judged_report = outside.as_ref().or(report.as_ref());
        let slos_outside = match &outside {
            Some(o) => qualify_load::slo::evaluate(&spec.slos, o),
            None => slos.clone(),
        };
        let verdict = qualify_load::verdict::decide(&CellFacts {
            not_ready: None,
            report: judged_report,
            slos: &slos_outside,
            process_alive: alive,
        });
        let mut detail = String::new();
        let outcome = match &verdict {
            // The process ended during the load: the probe's classification stands.
            Verdict::ProcessEnded => None,
            Verdict::Service { outcome, detail: d } => {
                detail = d
                    .clone()
                    .unwrap_or_else(|| summary(judged_report, &slos_outside));
                Some(*outcome)
            }
        };
        // Lost writes outrank everything; not recovering outranks the SLO verdict outside the
        // window.
        let outcome = match (&behaviour, outcome) {
            (Some(b), _) if b.verdict == qualify_faults::Verdict::LosesWrites => {
                detail = b.detail.clone();
                Some(Outcome::LostWrites)
            }
            (Some(b), Some(o))
                if o != Outcome::Interrupted
                    && matches!(b.recovery, qualify_faults::Recovery::NotRecovered) =>
            {
                detail = b.detail.clone();
                Some(Outcome::NotRecovered)
            }
            (Some(b), Some(o)) => {
                detail = format!("{detail}; under the fault: {} ({})", b.verdict, b.detail);
                Some(o)
            }
            (_, o) => o,
        };
        attach_load(&mut r, report.as_ref(), &slos, &detail, growth);
        if let Some(load) = r.load.as_mut() {
            load.ready_seconds = Some(ready_seconds);
            load.port = Some(port);
            // How the service ended when asked to stop (the detail becomes the load's verdict).
            load.stop = Some(r.detail.clone());
        }
        Ok(match outcome {
            // A probe verdict about the tree (oom_killed, crash, deadlock, …) outranks the
            // load's: the service did not just serve badly, it failed.
            Some(o) if r.outcome == Outcome::Ok => judged(r, o, detail),
            Some(_) | None => {
                if !alive {
                    r.detail = format!("ended during the load: {}", r.detail);
                }
                r
            }
        })
    }

    fn cancelled(&self) -> bool {
        self.cancel.load(Ordering::Relaxed)
    }

    /// Wait for `[service] ready`, stopping early when the service ends or qualify stops.
    fn await_ready(
        &self,
        run: &ServiceRun,
        bound: &Params,
        within: Duration,
    ) -> Result<(), String> {
        let Some(service) = &self.spec.service else {
            return Ok(());
        };
        // The readiness poll stops when the service ends or qualify stops.
        let stop = Arc::new(AtomicBool::new(false));
        let watcher = {
            let (stop, done, cancel) = (
                Arc::clone(&stop),
                Arc::clone(&run.done),
                Arc::clone(self.cancel),
            );
            std::thread::spawn(move || {
                while !stop.load(Ordering::SeqCst) {
                    if done.load(Ordering::SeqCst) || cancel.load(Ordering::SeqCst) {
                        stop.store(true, Ordering::SeqCst);
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
            })
        };
        let result = match &service.ready.check {
            ReadyCheck::Http(path) => wait_ready(
                &LoadReady::Http { path: path.clone() },
                run.addr,
                within,
                &stop,
            )
            .map(|_| ())
            .map_err(|e| e.to_string()),
            ReadyCheck::Tcp => wait_ready(&LoadReady::Tcp, run.addr, within, &stop)
                .map(|_| ())
                .map_err(|e| e.to_string()),
            ReadyCheck::Command(command) => {
                self.ready_command(command, bound, within, &stop, run.netns.as_ref())
            }
        };
        stop.store(true, Ordering::SeqCst);
        let _ = watcher.join();
        result
    }

    /// Run the ready command (placeholders and `{port}` rendered) until it exits 0.
    fn ready_command(
        &self,
        command: &qualify_spec::CommandLine,
        bound: &Params,
        within: Duration,
        stop: &AtomicBool,
        netns: Option<&Arc<qualify_probe::netns::Netns>>,
    ) -> Result<(), String> {
        let start = Instant::now();
        let argv: Vec<std::ffi::OsString> = command
            .render(bound)
            .argv()
            .into_iter()
            .map(Into::into)
            .collect();
        let mut last = String::from("not run");
        let mut pause = Duration::from_millis(20);
        while start.elapsed() < within {
            if stop.load(Ordering::SeqCst) {
                return Err(format!(
                    "stopped waiting after {:.1} s; last: {last}",
                    start.elapsed().as_secs_f64()
                ));
            }
            let mut probe = self.spec.command_probe(argv.clone(), self.backend);
            probe.sandbox.network = helper_network(netns);
            let remaining = within
                .saturating_sub(start.elapsed())
                .max(Duration::from_millis(100));
            probe.limits.timeout_seconds = remaining.as_secs_f64().min(10.0);
            probe.limits.stall_seconds = probe.limits.timeout_seconds / 2.0;
            let r = qualify_probe::probe(&probe, self.cancel).map_err(|e| e.to_string())?;
            if r.outcome == Outcome::Ok {
                return Ok(());
            }
            last = format!("`{command}` ended {}", r.outcome);
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(250));
        }
        Err(format!(
            "not ready after {:.1} s; last: {last}",
            within.as_secs_f64()
        ))
    }

    /// The cell's load plan, when the spec has `[load]` and the cell's amount is known.
    fn plan(&self, params: &Params) -> Option<LoadPlan> {
        self.spec.load.as_ref()?.plan_for(params)
    }
}

/// The load outside the fault window and its recovery: a report of the phases before the
/// window and after `recover_within`, so a fault's errors count for recovery (and
/// `not_recovered`), not against the service's objectives.
fn outside_window(report: &LoadReport) -> LoadReport {
    let mut outside = report.clone();
    let phases: Vec<&qualify_load::PhaseReport> = report
        .phases
        .iter()
        .filter(|p| {
            !matches!(
                p.phase,
                qualify_load::Phase::During | qualify_load::Phase::Recovery
            )
        })
        .collect();
    if phases.is_empty() {
        return outside;
    }
    let mut errors = qualify_load::ErrorCounts::default();
    let (mut sent, mut completed, mut succeeded, mut dropped, mut shed) = (0, 0, 0, 0, 0);
    let mut seconds = 0.0;
    for p in &phases {
        errors.add_counts(&p.errors);
        sent += p.sent;
        completed += p.completed;
        succeeded += p.succeeded;
        dropped += p.dropped;
        shed += p.shed;
        seconds += p.end_seconds - p.start_seconds;
    }
    outside.sent = sent;
    outside.completed = completed;
    outside.succeeded = succeeded;
    outside.dropped = dropped;
    outside.shed = shed;
    outside.errors = errors;
    outside.measured_seconds = seconds;
    outside.throughput = if seconds > 0.0 {
        succeeded as f64 / seconds
    } else {
        0.0
    };
    outside.achieved_rate = if seconds > 0.0 {
        completed as f64 / seconds
    } else {
        0.0
    };
    // Latency outside the window: the worse of the phases' corrected percentiles.
    let worst = |f: fn(&qualify_load::LatencySummary) -> Option<f64>| {
        phases
            .iter()
            .filter_map(|p| f(&p.corrected))
            .reduce(f64::max)
    };
    outside.latency.corrected.p50 = worst(|l| l.p50);
    outside.latency.corrected.p90 = worst(|l| l.p90);
    outside.latency.corrected.p99 = worst(|l| l.p99);
    outside.latency.corrected.p999 = worst(|l| l.p999);
    outside.latency.corrected.max = worst(|l| l.max);
    outside
}

/// The service's running instance, and what a kill and restart left of the first one.
struct Instances {
    current: Option<ServiceRun>,
    probe: ProbeSpec,
    addr: SocketAddr,
    /// The killed instance, stopped.
    killed: Option<ServiceRun>,
    /// The restarted one, starting and awaited on its own thread (`None` when not ready in time).
    restarting: Option<std::thread::JoinHandle<(ServiceRun, Option<f64>)>>,
    killed_at: Option<Instant>,
    ready_after: Option<f64>,
}

impl Instances {
    fn new(run: ServiceRun, probe: ProbeSpec, addr: SocketAddr) -> Instances {
        Instances {
            current: Some(run),
            probe,
            addr,
            killed: None,
            restarting: None,
            killed_at: None,
            ready_after: None,
        }
    }

    /// Kill the service with `[recovery] signal` (once) and start it again on a thread that
    /// waits until it is ready (within `ready_within`).
    fn kill_and_restart(&mut self, r: &qualify_spec::Recovery, check: ReadyCheck) {
        if self.killed_at.is_some() {
            return;
        }
        let Some(current) = self.current.take() else {
            return;
        };
        let now = Instant::now();
        self.killed_at = Some(now);
        // The signal now; the grace only covers a signal the service may catch.
        current
            .control
            .request_stop(r.signal_number, Duration::from_secs(2));
        let gone = Arc::clone(&current.done);
        self.killed = Some(current);
        let (probe, addr, within) = (self.probe.clone(), self.addr, r.ready_within);
        self.restarting = Some(std::thread::spawn(move || {
            // The old instance must have let go of the port first.
            let start = Instant::now();
            while !gone.load(Ordering::SeqCst) && start.elapsed() < Duration::from_secs(5) {
                std::thread::sleep(Duration::from_millis(5));
            }
            let run = ServiceRun::start(probe, addr);
            let cancel = AtomicBool::new(false);
            let ok = match check {
                ReadyCheck::Http(path) => {
                    wait_ready(&LoadReady::Http { path }, addr, within, &cancel).is_ok()
                }
                ReadyCheck::Tcp | ReadyCheck::Command(_) => {
                    wait_ready(&LoadReady::Tcp, addr, within, &cancel).is_ok()
                }
            };
            (run, ok.then(|| now.elapsed().as_secs_f64()))
        }));
    }

    /// The service (the first instance, or the restarted one once started) is gone.
    fn ended(&self) -> bool {
        match (&self.current, &self.restarting) {
            (Some(run), _) => run.ended(),
            (None, Some(_)) => false,
            (None, None) => true,
        }
    }

    fn settle(&mut self) {
        if let Some(t) = self.restarting.take()
            && let Ok((run, ready_after)) = t.join()
        {
            self.current = Some(run);
            self.ready_after = ready_after;
        }
    }

    /// What the restart saw (None without one).
    fn restart_seen(&mut self, measured: Option<Instant>) -> Option<faults::RestartSeen> {
        self.settle();
        let killed = self.killed_at?;
        Some(faults::RestartSeen {
            ready_after: self.ready_after,
            at: measured
                .and_then(|m| killed.checked_duration_since(m))
                .map_or(0.0, |d| d.as_secs_f64()),
        })
    }

    fn memory_samples(&self) -> Vec<(Instant, u64)> {
        let mut all = Vec::new();
        for run in self.killed.iter().chain(self.current.iter()) {
            all.extend(run.control.memory_samples());
        }
        all
    }

    /// Stop the running instance; the result, and the killed instance's if there was one.
    fn stop(
        mut self,
        signal: i32,
        grace: Duration,
    ) -> Result<(ProbeResult, Option<ProbeResult>), ProbeError> {
        self.settle();
        let first = self.killed.take().map(ServiceRun::stop_now).transpose()?;
        let r = match self.current.take() {
            Some(run) => run.stop(signal, grace)?,
            None => {
                return Err(ProbeError::Io {
                    context: "the restarted service never started".into(),
                    source: std::io::Error::other("no instance"),
                });
            }
        };
        Ok((r, first))
    }

    fn abort(mut self) -> Result<(ProbeResult, Option<ProbeResult>), ProbeError> {
        self.settle();
        let first = self.killed.take().map(ServiceRun::abort).transpose()?;
        let r = match self.current.take() {
            Some(run) => run.abort()?,
            None => {
                return Err(ProbeError::Io {
                    context: "the restarted service never started".into(),
                    source: std::io::Error::other("no instance"),
                });
            }
        };
        Ok((r, first))
    }
}

/// The result with the service verdict's outcome and detail.
fn judged(mut r: ProbeResult, outcome: Outcome, detail: String) -> ProbeResult {
    r.outcome = outcome;
    r.detail = detail;
    r
}

/// `result.load`: the load report, the objectives' verdicts, memory growth.
fn attach_load(
    r: &mut ProbeResult,
    report: Option<&LoadReport>,
    slos: &[qualify_load::slo::SloResult],
    verdict: &str,
    growth: Option<qualify_load::memory::Growth>,
) {
    r.load = Some(qualify_model::ServiceLoad {
        report: report.cloned(),
        slo: slos.to_vec(),
        verdict: verdict.to_string(),
        memory_growth: growth,
        ready_seconds: None,
        port: None,
        stop: None,
    });
}

/// `180.0 req/s of 180 offered, p99 12.3 ms; every objective held`.
fn summary(report: Option<&LoadReport>, slos: &[qualify_load::slo::SloResult]) -> String {
    let Some(rep) = report else {
        return "ran without load".to_string();
    };
    let p99 = rep
        .latency
        .corrected
        .p99
        .map(|s| format!("{:.1} ms", s * 1000.0))
        .unwrap_or_else(|| "—".into());
    let held = if slos.iter().all(|s| s.held) {
        "every objective held".to_string()
    } else {
        let failed: Vec<String> = slos
            .iter()
            .filter(|s| !s.held)
            .map(|s| s.describe())
            .collect();
        failed.join("; ")
    };
    match rep.offered_rate {
        Some(offered) => format!(
            "{:.1} req/s achieved of {offered:.0} offered, corrected p99 {p99}; {held}",
            rep.achieved_rate
        ),
        None => format!(
            "{:.1} req/s achieved, corrected p99 {p99}; {held}",
            rep.achieved_rate
        ),
    }
}

/// Memory growth through the measured phase (samples from its start on).
fn memory_growth(
    samples: &[(Instant, u64)],
    measured_start: Instant,
    ceiling: Option<u64>,
) -> Option<qualify_load::memory::Growth> {
    let points: Vec<qualify_load::memory::MemorySample> = samples
        .iter()
        .filter_map(|(t, bytes)| {
            let s = t.checked_duration_since(measured_start)?;
            Some(qualify_load::memory::MemorySample {
                seconds: s.as_secs_f64(),
                bytes: *bytes,
            })
        })
        .collect();
    qualify_load::memory::memory_growth(&points, ceiling)
}

/// The network of a probe that must reach the service (its readiness command, a dependency and
/// its readiness command): the service cell's namespace, or qualify's network when the service
/// shares it.
pub fn helper_network(netns: Option<&Arc<qualify_probe::netns::Netns>>) -> qualify_probe::Network {
    match netns {
        Some(n) => qualify_probe::Network::Join(Arc::clone(n)),
        None => qualify_probe::Network::Host,
    }
}
