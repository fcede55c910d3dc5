//! The fault harness of one service cell: its dependencies and what is done to them.
//! [`Harness::start`] starts every `[[dependency]]` fresh (or points at its `upstream`), waits
//! until each is ready, and puts a `qualify_faults::Proxy` on loopback in front of each with
//! the cell's fault (`Spec::faults_for`: the `kind = "fault"` axis naming it; `none`
//! otherwise) over the `[faults]` window — speaking HTTP for a `protocol = "http"` dependency;
//! the service is given the proxies' ports ([`Harness::service_env`]). The proxies are armed
//! at the measured phase's start ([`Harness::arm`]), which also starts a process fault
//! (`kill`, `pause`, `restart`: [`process`]) on its own thread; [`Harness::settle`] waits for
//! those to run their course (the dependency ready again) before the write check reads back,
//! and [`Harness::finish`] stops proxies and dependencies and returns what each dependency had
//! done to it ([`Injected`]).
//!
//! Each [`DependencyRun`] holds both the dependency's processes (behind the
//! [`process::DependencyProcesses`] seam: a local probe's `Control` today) and the wire
//! fault's proxy.

mod dependency;
pub mod process;

use std::net::ToSocketAddrs;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use qualify_faults::{Fault, Proxy, ProxyConfig, ProxyStats};
use qualify_model::Params;
use qualify_model::fault::{ProcessRecord, Window};
use qualify_probe::netns::Netns;
use qualify_probe::{BackendChoice, CancelToken};
use qualify_spec::{DependencySource, Protocol, Spec};

use crate::error::ServiceError;
use crate::instance::free_port;
use process::{DependencyProcesses, LocalDependency, Nemesis, StopWith};

pub(crate) use dependency::last_lines;

/// One dependency of a cell while it runs.
pub struct DependencyRun {
    name: String,
    dep_port: u16,
    fault: Fault,
    /// The wire fault: the proxy the service reaches the dependency through.
    proxy: Proxy,
    /// A started dependency's processes; `None` for an upstream.
    processes: Option<process::Shared>,
    /// How `restart` stops it.
    stop: StopWith,
    /// A process fault in progress (from `arm`).
    nemesis: Option<Nemesis>,
    /// A process fault that has run its course (from `settle`).
    process: Option<ProcessRecord>,
    /// The proxy's counters when the load ended (from `freeze`): what the write check sends
    /// afterwards is not the load's.
    frozen: Option<ProxyStats>,
    _dir: Option<tempfile::TempDir>,
}

/// What one dependency had done to it over the cell.
#[derive(Debug, Clone)]
pub struct Injected {
    pub dependency: String,
    pub fault: Fault,
    /// The proxy's per-phase counters.
    pub stats: ProxyStats,
    /// What a process fault did to its processes.
    pub process: Option<ProcessRecord>,
}

/// The dependencies and proxies of one service cell.
pub struct Harness {
    deps: Vec<DependencyRun>,
    window: Window,
    cancel: CancelToken,
    armed: bool,
}

impl Harness {
    /// Start the cell's dependencies and their proxies (nothing when the spec has none).
    pub fn start(
        spec: &Spec,
        params: &Params,
        backend: BackendChoice,
        cancel: &CancelToken,
        netns: Option<&Arc<Netns>>,
    ) -> Result<Harness, ServiceError> {
        let window = spec.faults.as_ref().map(|f| f.window()).unwrap_or_default();
        let faults = spec.faults_for(params);
        let mut harness = Harness {
            deps: Vec::new(),
            window,
            cancel: Arc::clone(cancel),
            armed: false,
        };
        for (i, dep) in spec.dependencies.iter().enumerate() {
            let dep_port = match dep.fixed_port() {
                Some(p) => p,
                None => free_port()?,
            };
            let upstream = dep.upstream(dep_port);
            let addr = upstream
                .to_socket_addrs()
                .ok()
                .and_then(|mut a| a.next())
                .ok_or_else(|| ServiceError::Unresolved {
                    dependency: dep.name.clone(),
                    upstream: upstream.to_string(),
                })?;
            let bound = dependency::bind_port(params, dep_port);
            let ready = dependency::ReadyWait::new(dep, addr, &bound, spec, backend, netns);
            let (processes, dir) = match &dep.source {
                DependencySource::Start(_) => {
                    let dir = dependency::directory(dep)?;
                    let probe =
                        dependency::probe_spec(spec, dep, params, dep_port, backend, dir.path());
                    let run = dependency::start(&dep.name, probe.clone(), addr, netns)?;
                    let stop = (dep.stop.signal_number, dep.stop.grace);
                    let mut local = LocalDependency::new(&dep.name, run, probe, netns, ready, stop);
                    if let Err(reason) = local.ready_wait().wait(cancel) {
                        let tail = local.abort().map(|r| r.stderr_tail).unwrap_or_default();
                        return Err(ServiceError::DependencyNotReady {
                            dependency: dep.name.clone(),
                            addr,
                            reason: Box::new(reason),
                            tail: last_lines(&tail),
                        });
                    }
                    let boxed: Box<dyn DependencyProcesses> = Box::new(local);
                    (Some(Arc::new(Mutex::new(boxed))), Some(dir))
                }
                DependencySource::Upstream { .. } => {
                    if let Err(reason) = ready.wait(cancel) {
                        return Err(ServiceError::DependencyNotReady {
                            dependency: dep.name.clone(),
                            addr,
                            reason: Box::new(reason),
                            tail: String::new(),
                        });
                    }
                    (None, None)
                }
            };
            let fault = faults
                .iter()
                .find(|(d, _)| d.name == dep.name)
                .map_or(Fault::NONE, |(_, f)| *f);
            let mut config = ProxyConfig::new(&dep.name, addr, fault, window);
            config.seed = i as u64 + 1;
            config.bucket = Duration::from_millis(250);
            config.http = dep.protocol == Protocol::Http;
            // In the cell's own namespace the proxy also counts the failed connects there: the
            // service's attempts while its dependency is `down`. Not under a process fault:
            // the proxy listens throughout, so every failed connect then is qualify's own (the
            // proxy's to a killed dependency, the ready check of its restart).
            config.count_failed_connects = netns.is_some() && !fault.kind.is_process();
            let proxy = match netns {
                Some(n) => {
                    let n = Arc::clone(n);
                    Proxy::start_with(config, move || n.join())
                }
                None => Proxy::start(config),
            }
            .map_err(|source| ServiceError::Proxy {
                dependency: dep.name.clone(),
                source,
            })?;
            harness.deps.push(DependencyRun {
                name: dep.name.clone(),
                dep_port,
                fault,
                proxy,
                processes,
                stop: StopWith {
                    name: dep.stop.signal.clone(),
                    number: dep.stop.signal_number,
                    grace: dep.stop.grace,
                },
                nemesis: None,
                process: None,
                frozen: None,
                _dir: dir,
            });
        }
        Ok(harness)
    }

    /// What the service is given to reach its dependencies (through their proxies).
    pub fn service_env(&self, spec: &Spec, bound: &Params) -> Vec<(String, String)> {
        let mut env = Vec::new();
        for d in &self.deps {
            if let Some(dep) = spec.dependency(&d.name) {
                env.extend(dep.service_env(bound, d.proxy.local_addr().port(), d.dep_port));
            }
        }
        env
    }

    /// Start the fault windows' clock at the measured phase's start (once): the proxies, and
    /// each process fault on a thread of its own.
    pub fn arm(&mut self, measured_start: Instant) {
        if self.armed {
            return;
        }
        self.armed = true;
        for d in &mut self.deps {
            let _ = d.proxy.arm(measured_start);
            if let (true, Some(processes)) = (d.fault.kind.is_process(), &d.processes) {
                d.nemesis = Some(Nemesis::start(
                    d.fault.kind,
                    self.window,
                    measured_start,
                    Arc::clone(processes),
                    d.stop.clone(),
                    Arc::clone(&self.cancel),
                ));
            }
        }
    }

    /// The load is over: the proxies' counters as they stand are the cell's (the write
    /// check's reads through the service come after).
    pub fn freeze(&mut self) {
        for d in &mut self.deps {
            d.frozen = Some(d.proxy.stats());
        }
    }

    /// Wait until every process fault has run its course (its dependency ready again, or given
    /// up); with `early` (the load ended before its time, or qualify stops) they are told to
    /// stop where they are (a paused tree is continued, nothing is started again).
    pub fn settle(&mut self, early: bool) {
        for d in &mut self.deps {
            if let Some(n) = d.nemesis.take() {
                d.process = Some(n.finish(early));
            }
        }
    }

    /// Stop the proxies and the started dependencies; what each dependency had done to it.
    pub fn finish(mut self) -> Vec<Injected> {
        self.settle(true);
        let mut out = Vec::new();
        for d in self.deps {
            let last = d.proxy.stop();
            let stats = match d.frozen {
                Some(mut frozen) => {
                    // Problems of the proxy itself are kept whenever they happened.
                    frozen.errors = last.errors;
                    frozen
                }
                None => last,
            };
            if let Some(p) = &d.processes {
                p.lock().unwrap_or_else(|e| e.into_inner()).finish();
            }
            out.push(Injected {
                dependency: d.name,
                fault: d.fault,
                stats,
                process: d.process,
            });
        }
        out
    }
}
