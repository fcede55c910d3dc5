//! The fault harness of one service cell: its dependencies and what is done to them.
//! [`Harness::start`] starts every `[[dependency]]` fresh (or points at its `upstream`), waits
//! until each is ready, and puts a `qualify_faults::Proxy` on loopback in front of each with
//! the cell's fault (`Spec::faults_for`: the `kind = "fault"` axis naming it; `none`
//! otherwise) over the `[faults]` window; the service is given the proxies' ports
//! ([`Harness::service_env`]). The proxies are armed at the measured phase's start
//! ([`Harness::arm`]); after the load [`Harness::finish`] stops proxies and dependencies and
//! returns what each dependency had done to it ([`Injected`]).
//!
//! Where a new kind of fault plugs in: each [`DependencyRun`] holds both the dependency's
//! process (its [`ServiceRun`], with a `Control` to signal it) and the wire fault's proxy. A
//! fault on the process (kill, pause, restart at the window's edges) is driven from
//! [`Harness::arm`], which receives the measured phase's start, and reports its own
//! observation beside the proxy's counters in [`Injected`].

mod dependency;

use std::net::ToSocketAddrs;
use std::sync::Arc;
use std::time::{Duration, Instant};

use qualify_faults::{Fault, Proxy, ProxyConfig, ProxyStats};
use qualify_model::Params;
use qualify_probe::netns::Netns;
use qualify_probe::{BackendChoice, CancelToken, ProbeError};
use qualify_spec::{DependencySource, Spec};

use crate::instance::{ServiceRun, free_port};

pub(crate) use dependency::last_lines;

fn setup_error(context: String, why: impl std::fmt::Display) -> ProbeError {
    ProbeError::Io {
        context,
        source: std::io::Error::other(why.to_string()),
    }
}

/// One dependency of a cell while it runs.
pub struct DependencyRun {
    name: String,
    dep_port: u16,
    fault: Fault,
    /// The wire fault: the proxy the service reaches the dependency through.
    proxy: Proxy,
    /// A started dependency (its probe) and the directory it runs in; `None` for an upstream.
    run: Option<ServiceRun>,
    _dir: Option<tempfile::TempDir>,
}

/// What one dependency had done to it over the cell.
#[derive(Debug, Clone)]
pub struct Injected {
    pub dependency: String,
    pub fault: Fault,
    /// The proxy's per-phase counters.
    pub stats: ProxyStats,
}

/// The dependencies and proxies of one service cell.
pub struct Harness {
    deps: Vec<DependencyRun>,
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
    ) -> Result<Harness, ProbeError> {
        let window = spec.faults.as_ref().map(|f| f.window()).unwrap_or_default();
        let faults = spec.faults_for(params);
        let mut deps = Vec::new();
        for (i, dep) in spec.dependencies.iter().enumerate() {
            let dep_port = match dep.fixed_port() {
                Some(p) => p,
                None => free_port()?,
            };
            let (run, dir) = match &dep.source {
                DependencySource::Start(_) => {
                    let (run, dir) =
                        dependency::start_dependency(spec, dep, params, dep_port, backend, netns)?;
                    (Some(run), Some(dir))
                }
                DependencySource::Upstream { .. } => (None, None),
            };
            let upstream = dep.upstream(dep_port);
            let addr = upstream
                .to_socket_addrs()
                .ok()
                .and_then(|mut a| a.next())
                .ok_or_else(|| {
                    setup_error(
                        format!("dependency `{}`", dep.name),
                        format!("cannot resolve {upstream}"),
                    )
                })?;
            if let Err(why) = dependency::await_dependency(
                dep,
                addr,
                &dependency::bind_port(params, dep_port),
                cancel,
                spec,
                backend,
                netns,
            ) {
                let tail = match run {
                    Some(r) => r.abort().map(|r| r.stderr_tail).unwrap_or_default(),
                    None => String::new(),
                };
                return Err(setup_error(
                    format!("dependency `{}` at {addr} was not ready", dep.name),
                    format!("{why}{}", last_lines(&tail)),
                ));
            }
            let fault = faults
                .iter()
                .find(|(d, _)| d.name == dep.name)
                .map_or(Fault::NONE, |(_, f)| *f);
            let mut config = ProxyConfig::new(&dep.name, addr, fault, window);
            config.seed = i as u64 + 1;
            config.bucket = Duration::from_millis(250);
            // In the cell's own namespace the proxy also counts the failed connects there: the
            // service's attempts while its dependency is `down`.
            config.count_failed_connects = netns.is_some();
            let proxy = match netns {
                Some(n) => {
                    let n = Arc::clone(n);
                    Proxy::start_with(config, move || n.join())
                }
                None => Proxy::start(config),
            }
            .map_err(|e| setup_error(format!("the fault proxy for `{}`", dep.name), e))?;
            deps.push(DependencyRun {
                name: dep.name.clone(),
                dep_port,
                fault,
                proxy,
                run,
                _dir: dir,
            });
        }
        Ok(Harness { deps, armed: false })
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

    /// Start the fault windows' clock at the measured phase's start (once).
    pub fn arm(&mut self, measured_start: Instant) {
        if self.armed {
            return;
        }
        self.armed = true;
        for d in &self.deps {
            let _ = d.proxy.arm(measured_start);
        }
    }

    /// Stop the proxies and the started dependencies; what each dependency had done to it.
    pub fn finish(self) -> Vec<Injected> {
        let mut out = Vec::new();
        for d in self.deps {
            let stats = d.proxy.stop();
            if let Some(run) = d.run {
                let _ = run.stop(libc::SIGTERM, Duration::from_secs(5));
            }
            out.push(Injected {
                dependency: d.name,
                fault: d.fault,
                stats,
            });
        }
        out
    }
}
