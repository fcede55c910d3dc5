//! A service cell's dependencies, the fault proxies in front of them, and kill-and-restart under
//! load (issue 13). [`Harness::start`] starts every `[[dependency]]` fresh (a `start` command in
//! a directory of its own, supervised like the service) or points at its `upstream`, waits
//! until each is ready, and puts a `qualify_faults::Proxy` on loopback in front of each with
//! the cell's fault (the `kind = "fault"` axes naming it; `none` otherwise) over the `[faults]`
//! window; the service is given the proxies' ports (`[[dependency]] env`). Under the sandbox the
//! dependencies, their readiness checks and the proxies live in the service cell's network
//! namespace (the dependencies themselves outside the sandbox: they are the user's
//! infrastructure, not the artifact), and the proxies count failed connects there. The proxies are
//! armed at the measured phase's start; after the load [`Harness::finish`] stops proxies and
//! dependencies and the cell's behaviour is judged ([`judge`]): `result.faults` records per
//! dependency the fault, the proxy's per-phase counters and the verdict (stops, recovers,
//! degrades, retry_storm, hangs, loses_writes, …), with the write check of `[recovery]`.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::time::{Duration, Instant};

use qualify_faults::behaviour::{
    DependencyObservation, PhaseLoad, RestartObservation, SecondSlos, TimelineSecond,
};
use qualify_faults::{Behaviour, Fault, Observation, Proxy, ProxyConfig, ProxyStats};
use qualify_load::{LoadReport, Phase, PhaseWindow};
use qualify_model::Params;
use qualify_model::SloMetric;
use qualify_probe::netns::Netns;
use qualify_probe::{BackendChoice, CancelToken, ProbeError, ProbeSpec};
use qualify_spec::{DependencySource, ReadyCheck, Spec};

use super::service::{ServiceRun, free_port};

fn setup_error(context: String, why: impl std::fmt::Display) -> ProbeError {
    ProbeError::Io {
        context,
        source: std::io::Error::other(why.to_string()),
    }
}

/// One dependency of a cell.
struct Dep {
    name: String,
    dep_port: u16,
    fault: Fault,
    proxy: Proxy,
    /// A started dependency (its probe) and the directory it runs in.
    run: Option<ServiceRun>,
    _dir: Option<tempfile::TempDir>,
}

/// The dependencies and proxies of one service cell.
pub struct Harness {
    deps: Vec<Dep>,
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
                    let (run, dir) = start_dependency(spec, dep, params, dep_port, backend, netns)?;
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
            if let Err(why) = await_dependency(
                dep,
                addr,
                &bind_port(params, dep_port),
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
            deps.push(Dep {
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
            if let Some(dep) = spec.dependencies.iter().find(|x| x.name == d.name) {
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

    /// Stop the proxies and the started dependencies; each dependency's fault and counters.
    pub fn finish(self) -> Vec<(String, Fault, ProxyStats)> {
        let mut out = Vec::new();
        for d in self.deps {
            let stats = d.proxy.stop();
            if let Some(run) = d.run {
                let _ = run.stop(libc::SIGTERM, Duration::from_secs(5));
            }
            out.push((d.name, d.fault, stats));
        }
        out
    }
}

/// The cell's parameters plus `{dep_port}`.
fn bind_port(params: &Params, dep_port: u16) -> Params {
    let mut p = params.clone();
    p.insert(
        qualify_spec::DEP_PORT_PLACEHOLDER,
        qualify_model::Value::Int(i64::from(dep_port)),
    );
    p
}

fn start_dependency(
    spec: &Spec,
    dep: &qualify_spec::Dependency,
    params: &Params,
    dep_port: u16,
    backend: BackendChoice,
    netns: Option<&Arc<Netns>>,
) -> Result<(ServiceRun, tempfile::TempDir), ProbeError> {
    let argv = dep.start_argv(params, dep_port).unwrap_or_default();
    let dir = tempfile::Builder::new()
        .prefix(&format!("qualify-dep-{}-", dep.name))
        .tempdir()
        .map_err(|e| ProbeError::Io {
            context: format!("cannot create a directory for dependency `{}`", dep.name),
            source: e,
        })?;
    let mut probe: ProbeSpec =
        spec.command_probe(argv.into_iter().map(Into::into).collect(), backend);
    probe.workdir = Some(dir.path().to_path_buf());
    // The dependency is not the artifact: no memory ceiling of the artifact's, the cell's
    // deadline only.
    probe.limits.memory_bytes = None;
    probe.limits.cpus = None;
    probe.limits.pids = None;
    // The dependency is the user's infrastructure, not the artifact (like the build step): it
    // runs outside the sandbox (`runuser`, its own data directory), in the cell's network
    // namespace when the service has one — the probe forks from a thread that joined it.
    probe.sandbox = qualify_probe::Sandbox::off();
    probe
        .env
        .push(("DEP_PORT".into(), dep_port.to_string().into()));
    let addr = SocketAddr::from((std::net::Ipv4Addr::LOCALHOST, dep_port));
    let _inside = match netns {
        Some(n) => Some(n.enter().map_err(|source| ProbeError::Io {
            context: format!(
                "cannot join the service's network namespace to start dependency `{}`",
                dep.name
            ),
            source,
        })?),
        None => None,
    };
    // The probe's thread is made here, inside the namespace, and so is the dependency.
    Ok((ServiceRun::start(probe, addr), dir))
}

fn await_dependency(
    dep: &qualify_spec::Dependency,
    addr: SocketAddr,
    bound: &Params,
    cancel: &CancelToken,
    spec: &Spec,
    backend: BackendChoice,
    netns: Option<&Arc<Netns>>,
) -> Result<(), String> {
    let within = dep.ready.within;
    // The check runs where the proxy will connect from: inside the cell's namespace.
    let _inside = match netns {
        Some(n) => Some(
            n.enter()
                .map_err(|e| format!("cannot join the service's network namespace: {e}"))?,
        ),
        None => None,
    };
    match &dep.ready.check {
        ReadyCheck::Http(path) => qualify_load::ready::wait_ready(
            &qualify_load::ready::ReadyCheck::Http { path: path.clone() },
            addr,
            within,
            cancel,
        )
        .map(|_| ())
        .map_err(|e| e.to_string()),
        ReadyCheck::Tcp => qualify_load::ready::wait_ready(
            &qualify_load::ready::ReadyCheck::Tcp,
            addr,
            within,
            cancel,
        )
        .map(|_| ())
        .map_err(|e| e.to_string()),
        ReadyCheck::Command(command) => {
            let argv: Vec<std::ffi::OsString> = command
                .render(bound)
                .argv()
                .into_iter()
                .map(Into::into)
                .collect();
            let start = Instant::now();
            let mut last = String::from("not run");
            while start.elapsed() < within {
                let mut probe = spec.command_probe(argv.clone(), backend);
                // Outside the sandbox like the dependency, from this thread (inside the cell's
                // namespace when there is one).
                probe.sandbox = qualify_probe::Sandbox::off();
                probe.limits.timeout_seconds = 10.0;
                probe.limits.stall_seconds = 5.0;
                match qualify_probe::probe(&probe, cancel) {
                    Ok(r) if r.outcome == qualify_probe::Outcome::Ok => return Ok(()),
                    Ok(r) => last = format!("`{command}` ended {}", r.outcome),
                    Err(e) => return Err(e.to_string()),
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            Err(format!(
                "not ready after {:.1} s; last: {last}",
                within.as_secs_f64()
            ))
        }
    }
}

fn last_lines(text: &str) -> String {
    let lines: Vec<&str> = text.trim_end().lines().collect();
    if lines.is_empty() {
        return String::new();
    }
    let tail = lines[lines.len().saturating_sub(5)..].join("\n  | ");
    format!("; its last output:\n  | {tail}")
}

/// The load's windows around the fault: before, during, after (none without `[faults]`).
pub fn phases(spec: &Spec, duration: Duration) -> Vec<PhaseWindow> {
    let Some(f) = &spec.faults else {
        return Vec::new();
    };
    let mut out = Vec::new();
    if f.start > Duration::ZERO {
        out.push(PhaseWindow {
            phase: Phase::Before,
            start: Duration::ZERO,
            end: f.start,
        });
    }
    out.push(PhaseWindow {
        phase: Phase::During,
        start: f.start,
        end: f.end,
    });
    let recovered = (f.end + f.recover_within).min(duration);
    if f.end < recovered {
        out.push(PhaseWindow {
            phase: Phase::Recovery,
            start: f.end,
            end: recovered,
        });
    }
    if recovered < duration {
        out.push(PhaseWindow {
            phase: Phase::After,
            start: recovered,
            end: duration,
        });
    }
    out
}

/// The phases of a restart: before the kill, from the kill to ready (or the end), after.
pub fn restart_phases(at: Duration, duration: Duration) -> Vec<PhaseWindow> {
    vec![
        PhaseWindow {
            phase: Phase::Before,
            start: Duration::ZERO,
            end: at,
        },
        PhaseWindow {
            phase: Phase::During,
            start: at,
            end: duration,
        },
    ]
}

/// The load of one named phase, as the verdict reads it.
fn phase_load(report: &LoadReport, phase: Phase) -> PhaseLoad {
    let Some(p) = report.phases.iter().find(|p| p.phase == phase) else {
        return PhaseLoad::default();
    };
    PhaseLoad {
        requests: p.sent,
        errors: p.errors.total(),
        timeouts: p.errors.get(qualify_load::ErrorClass::Timeout),
        latency_p50: p.corrected.p50,
        latency_p99: p.corrected.p99,
        peak_in_flight: p.peak_in_flight,
    }
}

/// What a kill-and-restart saw.
#[derive(Debug, Clone, Default)]
pub struct RestartSeen {
    /// Seconds from the kill to ready (`None`: not ready within `ready_within`).
    pub ready_after: Option<f64>,
    /// The kill, seconds into the measured phase.
    pub at: f64,
}

/// Judge the cell's behaviour and build `result.faults` (`qualify_evidence::faults`): one
/// record per dependency with its fault (`none` included), or one for a restart only. Returns
/// the verdict that speaks for the cell — of the dependency a fault was put on (else the
/// first) — and the records.
pub fn judge(
    spec: &Spec,
    report: &LoadReport,
    proxies: &[(String, Fault, ProxyStats)],
    restart: Option<&RestartSeen>,
    writes: Option<qualify_faults::SetCheck>,
    max_in_flight: u32,
) -> (Behaviour, Vec<qualify_model::FaultRecord>) {
    let slo = |m: SloMetric| spec.slos.iter().find(|s| s.metric == m).map(|s| s.limit);
    let slos = SecondSlos::new(
        slo(SloMetric::ErrorRate).or(Some(qualify_load::slo::DEFAULT_ERROR_RATE)),
        slo(SloMetric::LatencyP99),
        spec.slos
            .iter()
            .find(|s| s.metric == SloMetric::Throughput && s.bound == qualify_model::BoundKind::Min)
            .map(|s| s.limit),
    );
    let (window_start, window_end, recover_within) = match (&spec.faults, restart) {
        (Some(f), _) => (
            f.start.as_secs_f64(),
            f.end.as_secs_f64(),
            f.recover_within.as_secs_f64(),
        ),
        (None, Some(r)) => (
            r.at,
            r.at + r.ready_after.unwrap_or(report.measured_seconds),
            spec.recovery
                .as_ref()
                .map_or(5.0, |x| x.ready_within.as_secs_f64()),
        ),
        (None, None) => (0.0, 0.0, 5.0),
    };
    let observation = |stats: Option<&ProxyStats>| Observation {
        before: phase_load(report, Phase::Before),
        during: phase_load(report, Phase::During),
        after: phase_load(report, Phase::After),
        dependency: stats.map(|s| DependencyObservation {
            before: s.before.clone(),
            during: s.during.clone(),
            after: s.after.clone(),
            series: s.series.clone(),
        }),
        max_in_flight: u64::from(max_in_flight),
        window_start,
        window_end,
        recover_within,
        timeline: report
            .timeline
            .iter()
            .map(|t| TimelineSecond {
                sent: t.sent,
                completed: t.completed,
                errors: t.errors,
                p99: t.p99,
            })
            .collect(),
        slos,
        restart: restart.map(|r| RestartObservation {
            ready_after: r.ready_after,
            errors_during_restart: phase_load(report, Phase::During).errors,
        }),
        writes: writes.clone(),
    };
    let restart_signal = spec.recovery.as_ref().map(|r| r.signal.clone());
    let mut records = Vec::new();
    let mut primary: Option<Behaviour> = None;
    let mut first: Option<Behaviour> = None;
    let none = Fault::NONE;
    let targets: Vec<(Option<&str>, &Fault, Option<&ProxyStats>)> = if proxies.is_empty() {
        vec![(None, &none, None)]
    } else {
        proxies
            .iter()
            .map(|(n, f, s)| (Some(n.as_str()), f, Some(s)))
            .collect()
    };
    for (dependency, fault, stats) in targets {
        let o = observation(stats);
        let behaviour = qualify_faults::judge(&o);
        let mut record = qualify_faults::record(dependency, fault, &o, &behaviour);
        if let (Some(signal), Some(r)) = (&restart_signal, restart) {
            record = record.with_restart(signal, r.at);
        }
        records.push(record);
        if fault.kind != qualify_faults::FaultKind::None && primary.is_none() {
            primary = Some(behaviour.clone());
        }
        if first.is_none() {
            first = Some(behaviour);
        }
    }
    let behaviour = primary
        .or(first)
        .unwrap_or_else(|| qualify_faults::judge(&observation(None)));
    (behaviour, records)
}

/// Read back every write of `[recovery] writes` (`read` with `{seq}`), over one keep-alive
/// connection at a time, bounded by `limit` reads and `budget` of time: the set check of
/// acknowledged, lost, recovered and unexpected writes.
pub fn check_writes(
    addr: SocketAddr,
    read: &qualify_spec::HttpLoadRequest,
    report: &LoadReport,
    budget: Duration,
) -> Option<qualify_faults::SetCheck> {
    let w = report.writes.as_ref()?;
    let attempted: BTreeSet<u64> = w.attempted.iter().collect();
    let acknowledged: BTreeSet<u64> = w.acknowledged.iter().collect();
    // Also read a few ids past the last attempt: present there means never attempted.
    let last = attempted.iter().next_back().copied().unwrap_or(0);
    let probe: Vec<u64> = attempted
        .iter()
        .copied()
        .chain(last + 1..last + 33)
        .collect();
    let deadline = Instant::now() + budget;
    let mut present = Vec::new();
    let mut conn: Option<BufReader<TcpStream>> = None;
    for seq in probe {
        if Instant::now() >= deadline {
            break;
        }
        let ok = read_one(&mut conn, addr, read, seq).unwrap_or(false);
        if ok {
            present.push(seq);
        }
    }
    Some(qualify_faults::check_set(attempted, acknowledged, present))
}

/// One read-back: true when the answer's status is expected (default 200–299).
fn read_one(
    conn: &mut Option<BufReader<TcpStream>>,
    addr: SocketAddr,
    read: &qualify_spec::HttpLoadRequest,
    seq: u64,
) -> std::io::Result<bool> {
    for attempt in 0..2 {
        if conn.is_none() {
            let s = TcpStream::connect_timeout(&addr, Duration::from_secs(2))?;
            s.set_read_timeout(Some(Duration::from_secs(2)))?;
            s.set_write_timeout(Some(Duration::from_secs(2)))?;
            *conn = Some(BufReader::new(s));
        }
        let Some(c) = conn.as_mut() else {
            continue;
        };
        let path = qualify_load::template::Template::parse(&read.path)
            .map(|t| String::from_utf8_lossy(&t.render(seq)).into_owned())
            .unwrap_or_else(|_| read.path.clone());
        let request = format!(
            "{} {path} HTTP/1.1\r\nhost: {addr}\r\ncontent-length: 0\r\n\r\n",
            read.method
        );
        let result = (|| -> std::io::Result<u16> {
            c.get_mut().write_all(request.as_bytes())?;
            let mut status_line = String::new();
            c.read_line(&mut status_line)?;
            let status: u16 = status_line
                .split_whitespace()
                .nth(1)
                .and_then(|s| s.parse().ok())
                .ok_or_else(|| std::io::Error::other("bad status line"))?;
            let mut length = 0usize;
            loop {
                let mut line = String::new();
                c.read_line(&mut line)?;
                let line = line.trim_end();
                if line.is_empty() {
                    break;
                }
                if let Some((k, v)) = line.split_once(':')
                    && k.trim().eq_ignore_ascii_case("content-length")
                {
                    length = v.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0; length];
            c.read_exact(&mut body)?;
            Ok(status)
        })();
        match result {
            Ok(status) => {
                return Ok(if read.expect_status.is_empty() {
                    (200..300).contains(&status)
                } else {
                    read.expect_status.contains(&status)
                });
            }
            Err(e) if attempt == 0 => {
                let _ = e;
                *conn = None;
            }
            Err(e) => return Err(e),
        }
    }
    Ok(false)
}
