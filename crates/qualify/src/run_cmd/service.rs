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
use qualify_load::verdict::{CellFacts, ServiceOutcome, Verdict};
use qualify_load::{Flow, LoadPlan, LoadReport, Model};
use qualify_model::{Params, Value};
use qualify_probe::{
    BackendChoice, CancelToken, Control, Flag, Outcome, ProbeError, ProbeResult, ProbeSpec,
};
use qualify_spec::{LoadModel, LoadRequestKind, ReadyCheck, Spec};
use serde_json::json;

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
    /// Start, await, load, judge and stop the service of the cell at `params`.
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
        probe.env.push(("PORT".into(), port.to_string().into()));
        // With network = "loopback" the service lives in a network namespace of its own: this
        // thread joins it for the readiness check and the load (their extra threads inherit
        // it), and nothing is exposed on the host's interfaces.
        let netns = super::sandbox::service_netns(&mut probe);
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
        let run = ServiceRun::start(probe, addr);
        let _inside = match &netns {
            Some(n) => Some(n.enter().map_err(|source| ProbeError::Io {
                context: "joining the service's network namespace".into(),
                source,
            })?),
            None => None,
        };

        // Ready?
        let ready = self.await_ready(&run, &bound);
        if let Err(why) = ready {
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

        // Load.
        let plan = self.plan(params);
        let mut measured = None;
        let report = match &plan {
            Some(plan) => {
                let mut observer = |p: &qualify_load::Progress| {
                    measured = Some(p.measured_start);
                    if run.ended() {
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
        let alive = !run.ended();
        let samples = run.control.memory_samples();
        let mut r = if self.cancelled() {
            run.abort()?
        } else {
            run.stop(service.stop.signal_number, service.stop.grace)?
        };
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
        let verdict = qualify_load::verdict::decide(&CellFacts {
            not_ready: None,
            report: report.as_ref(),
            slos: &slos,
            process_alive: alive,
        });
        let mut detail = String::new();
        let outcome = match &verdict {
            // The process ended during the load: the probe's classification stands.
            Verdict::ProcessEnded => None,
            Verdict::Service { outcome, detail: d } => {
                detail = d.clone().unwrap_or_else(|| summary(report.as_ref(), &slos));
                Some(match outcome {
                    ServiceOutcome::Ok => Outcome::Ok,
                    ServiceOutcome::SloViolated => Outcome::SloViolated,
                    ServiceOutcome::Overloaded => Outcome::Overloaded,
                    ServiceOutcome::Unavailable => Outcome::Unavailable,
                    ServiceOutcome::GeneratorSaturated => {
                        detail = format!(
                            "not evidence about the service: the load generator was the bottleneck ({detail})"
                        );
                        Outcome::Interrupted
                    }
                    ServiceOutcome::Interrupted => Outcome::Interrupted,
                })
            }
        };
        attach_load(&mut r, report.as_ref(), &slos, &detail, growth);
        if let Some(load) = r.load.as_mut() {
            load["ready_seconds"] = json!(ready_seconds);
            load["port"] = json!(port);
            // How the service ended when asked to stop (the detail becomes the load's verdict).
            load["stop"] = json!(r.detail);
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
    fn await_ready(&self, run: &ServiceRun, bound: &Params) -> Result<(), String> {
        let Some(service) = &self.spec.service else {
            return Ok(());
        };
        let within = service.ready.within;
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
            if let Some(n) = netns {
                probe.sandbox.network = qualify_probe::Network::Join(Arc::clone(n));
            }
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
        let load = self.spec.load.as_ref()?;
        let amount = load.amount_for(params)?;
        let model = match load.model {
            LoadModel::Open => Model::Open { rate: amount },
            LoadModel::Closed => Model::Closed {
                users: amount.round().max(1.0) as u32,
            },
        };
        Some(LoadPlan {
            model,
            duration: load.duration,
            warmup: load.warmup,
            timeout: load.timeout,
            max_in_flight: load.max_in_flight,
            requests: load
                .requests
                .iter()
                .map(|r| qualify_load::RequestTemplate {
                    weight: r.weight,
                    kind: match &r.kind {
                        LoadRequestKind::Http(h) => {
                            qualify_load::RequestKind::Http(qualify_load::HttpRequest {
                                method: h.method.clone(),
                                path: h.path.clone(),
                                body: h.body.clone(),
                                headers: h.headers.clone(),
                                expect_status: h.expect_status.clone(),
                            })
                        }
                        LoadRequestKind::Tcp { send, expect } => {
                            qualify_load::RequestKind::Tcp(qualify_load::TcpRequest {
                                send: send.clone(),
                                expect: expect.clone(),
                            })
                        }
                    },
                })
                .collect(),
            phases: Vec::new(),
            record_writes: false,
            threads: load.threads,
        })
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
    let mut load = report
        .and_then(|rep| serde_json::to_value(rep).ok())
        .unwrap_or_else(|| json!({}));
    load["slo"] = json!(slos);
    load["verdict"] = json!(verdict);
    if let Some(g) = growth {
        load["memory_growth"] = json!(g);
    }
    r.load = Some(load);
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
