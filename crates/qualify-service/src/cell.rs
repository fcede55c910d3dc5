//! [`ServiceCell::run`]: one service cell, stage by stage — the network and the dependencies
//! (the [`Harness`]), the service started under the probe, readiness, the load (fault windows
//! armed at the measured phase's start; a kill and restart at `[recovery] at`), the write
//! check, the graceful stop, and the judgement: objectives, memory growth, the behaviour under
//! the fault (against the run's controls) and the cell's verdict. The result is the service
//! probe's, with `load` and `faults` filled and the outcome the verdict decided.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use qualify_faults::SetCheck;
use qualify_load::verdict::CellFacts;
use qualify_load::{Flow, LoadPlan, LoadReport, RequestTemplate};
use qualify_model::fault::KilledInstance;
use qualify_model::load::{Growth, ServiceLoad};
use qualify_model::{Children, Flag, Outcome, Params, SloPhase, SloResult};
use qualify_probe::{BackendChoice, CancelToken, ProbeError, ProbeResult};
use qualify_spec::Spec;

use crate::SpecProbes;
use crate::cluster::Cluster;
use crate::controls::Controls;
use crate::error::ServiceError;
use crate::harness::{Harness, Placement};
use crate::instance::{Instances, ServiceRun, free_port, with_port};
use crate::writes::{ReadBack, read_back, reader};
use crate::{generators, history, judge, network, phases, ready, verdict};

/// Readers of the write check at once (one connection each).
const WRITE_READERS: usize = 4;
/// The write check's time budget.
const WRITE_BUDGET: Duration = Duration::from_secs(30);
/// After the load's connections closed, how long the service's threads that served them may
/// take to end before its counts are read as "after the window".
const SETTLE: Duration = Duration::from_millis(300);
/// The probe samples at least every 100 ms: waiting this much past the settle takes a sample.
const SAMPLE_WAIT: Duration = Duration::from_millis(150);
/// The longest the cell waits for that sample when the machine's load delays the sampler.
const SAMPLE_DEADLINE: Duration = Duration::from_secs(3);

/// How many more times a cell whose load generator was the bottleneck is measured.
pub const BUSY_RETRIES: u32 = 2;

/// The cell is `interrupted` only because its load generator could not keep its schedule (not
/// cancelled, not a lost node or generator): the run measured the machine, not the service.
fn generator_was_bottleneck(r: &ProbeResult) -> bool {
    r.outcome == Outcome::Interrupted
        && r.load
            .as_ref()
            .and_then(|l| l.report.as_ref())
            .is_some_and(|rep| rep.generator.saturated && !rep.cancelled)
}

/// Everything one service cell needs from the run.
pub struct ServiceCell<'a> {
    pub spec: &'a Spec,
    pub backend: BackendChoice,
    pub cancel: &'a CancelToken,
    /// Where write histories go: `histories` in the receipt's directory (`None`: kept only
    /// while the checker runs, and not named in the receipt).
    pub histories: Option<&'a std::path::Path>,
    /// The run's `none` cells so far (shared by its cells).
    pub controls: &'a Controls,
    /// Where the cell runs on a cluster (`None`: on this machine).
    pub cluster: Option<&'a Cluster>,
    /// The qualify binary, which runs `load-gen` for a load split over generator processes
    /// (`[load] generators` > 1; without it such a load is an error of the cell).
    pub load_gen: Option<&'a std::path::Path>,
}

impl ServiceCell<'_> {
    /// Start, await, load, judge and stop the service of the cell at `params` — with its
    /// dependencies behind fault proxies and a kill-and-restart when the spec has them.
    ///
    /// A cell whose load generator could not keep its schedule (the machine was too busy to
    /// offer the load: `interrupted`, not evidence about the service) is measured again, up to
    /// [`BUSY_RETRIES`] more times, from a fresh service; its detail says how many measurements
    /// it took. A cancelled run is never measured again.
    pub fn run(&self, params: &Params) -> Result<ProbeResult, ServiceError> {
        let mut result = self.run_once(params)?;
        let mut measurements = 1;
        while measurements <= BUSY_RETRIES && !self.cancelled() && generator_was_bottleneck(&result)
        {
            result = self.run_once(params)?;
            measurements += 1;
        }
        if measurements > 1 {
            let busy = measurements - 1;
            let again = if generator_was_bottleneck(&result) {
                "still"
            } else {
                "measured again:"
            };
            result.detail = format!(
                "{}; {again} the load generator could not keep its schedule in {busy} earlier measurement(s) of this cell (a busy machine), {measurements} in all",
                result.detail
            );
        }
        Ok(result)
    }

    fn run_once(&self, params: &Params) -> Result<ProbeResult, ServiceError> {
        let spec = self.spec;
        let Some(service) = &spec.service else {
            return Err(ServiceError::NotAService);
        };
        // This machine: a loopback port, reached at a loopback address. On a cluster: a port
        // on the node's address, reached there from every node.
        let port = match (service.port, self.cluster) {
            (Some(p), _) => p,
            (None, Some(c)) => c.free_port()?,
            (None, None) => free_port()?,
        };
        let addr = match self.cluster {
            Some(c) => SocketAddr::new(c.addr, port),
            None => SocketAddr::from((Ipv4Addr::LOCALHOST, port)),
        };
        let bound = with_port(params, port);
        let mut probe = spec.cell_probe(&bound, self.backend);
        // One private layer for the cell: a restarted service finds what the killed one wrote.
        if probe.sandbox.private_workdir.wanted() {
            probe.sandbox.private_workdir = qualify_probe::sandbox::layer::WorkdirLayer::create()
                .map(qualify_probe::sandbox::PrivateWorkdir::Shared)?;
        }
        let (netns, placement) = match self.cluster {
            Some(c) => {
                probe.sandbox.network = qualify_probe::Network::Unavailable(format!(
                    "the service listens on {}'s address {} (the cluster's nodes reach it there)",
                    c.node, c.addr
                ));
                (
                    None,
                    Placement::ServiceNode {
                        remote: &c.remote,
                        state_dir: &c.state_dir,
                    },
                )
            }
            None => (network::service_netns(spec, &mut probe), Placement::Here),
        };
        let mut harness = Harness::start_placed(
            spec,
            params,
            self.backend,
            self.cancel,
            netns.as_ref(),
            placement,
        )?;
        if self.cancelled() {
            let _ = harness.finish();
            return Ok(probe.not_run("not probed: the run was stopping"));
        }
        let generators = spec
            .load
            .as_ref()
            .and_then(|l| l.plan_for(params))
            .map_or(1, |p| p.generators);
        let cluster_evidence = self.cluster.map(|c| {
            let e = c.evidence(
                port,
                &harness.endpoints(),
                &harness.remote_endpoints(),
                generators,
            );
            // Beside the heartbeats: whoever ends the cell for a lost node names the parts too.
            let _ = std::fs::write(
                c.state_dir.join(qualify_slurm::heartbeat::EVIDENCE_FILE),
                e.to_string(),
            );
            e
        });
        probe.env.push(("PORT".into(), port.to_string().into()));
        // Where to listen: loopback here, the node's address on a cluster.
        probe
            .env
            .push(("HOST".into(), addr.ip().to_string().into()));
        for (k, v) in harness.service_env(spec, &bound) {
            probe.env.push((k.into(), v.into()));
        }
        let run = ServiceRun::start(probe.clone(), addr);
        // This thread joins the service's namespace for the readiness check, the load and the
        // write check (their extra threads inherit it).
        let _inside = match &netns {
            Some(n) => match n.enter() {
                Ok(guard) => Some(guard),
                Err(source) => {
                    let _ = harness.finish();
                    let _ = run.abort();
                    return Err(ServiceError::Probe(ProbeError::Io {
                        context: "joining the service's network namespace".into(),
                        source,
                    }));
                }
            },
            None => None,
        };

        // Ready?
        let ready = ready::await_ready(
            spec,
            self.backend,
            self.cancel,
            &run,
            &service.ready.check,
            &bound,
            service.ready.within,
        );
        if let Err(why) = ready {
            let _ = harness.finish();
            if self.cancelled() {
                let mut r = run.abort()?;
                r.outcome = Outcome::Interrupted;
                return Ok(r);
            }
            if run.ended() {
                let mut r = run.stop(service.stop.signal_number, service.stop.grace)?;
                r.detail = format!(
                    "exited before it was ready: {}{}",
                    r.detail,
                    crate::setup::why_it_ended(&r, port)
                );
                if let Some(e) = &cluster_evidence {
                    attach_cluster(&mut r.evidence, e.clone());
                }
                return Ok(r);
            }
            // Where it listens instead, read while it still runs.
            let listening = crate::setup::where_it_listens(&run.control.listening(), addr);
            let mut r = run.stop(service.stop.signal_number, service.stop.grace)?;
            if let Some(e) = &cluster_evidence {
                attach_cluster(&mut r.evidence, e.clone());
            }
            let hint = match self.cluster {
                Some(c) => format!(
                    " (on {} the service must listen on $HOST:$PORT, {addr}, not on loopback)",
                    c.node
                ),
                None => String::new(),
            };
            let detail =
                format!("never ready at {addr} ({{port}} = {port}): {why}{listening}{hint}");
            r.load = Some(ServiceLoad::without_load(detail.clone()));
            r.outcome = Outcome::Unavailable;
            r.detail = detail;
            return Ok(r);
        }
        let ready_seconds = run.started.elapsed().as_secs_f64();

        // Load, with the fault windows armed at the measured phase's start and a kill and
        // restart of the service at `[recovery] at`.
        let plan = self.plan(params);
        let mut instances = Instances::new(run, probe, addr);
        let mut measured = None;
        let mut lost_generator: Option<String> = None;
        // A generator process of a split load that failed mid-run: the cell is not evidence.
        let mut generator_failed = None;
        let mut report = match &plan {
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
                    if instances.ended() || harness.lost().is_some() {
                        Flow::Stop
                    } else {
                        Flow::Continue
                    }
                };
                // On a cluster the generators run on other nodes (one or more); here, in this
                // process unless the load is split.
                let placed = self.cluster.map(Cluster::generators);
                let ran = if plan.generators > 1 || placed.is_some() {
                    match generators::run_placed(
                        self.load_gen,
                        plan,
                        addr,
                        self.cancel,
                        &mut observer,
                        placed.as_ref(),
                    ) {
                        Err(generators::GeneratorsError::LostNode(why)) => {
                            lost_generator = Some(why);
                            Ok(None)
                        }
                        Err(generators::GeneratorsError::Merge(e)) => {
                            generator_failed = Some(e.to_string());
                            Ok(None)
                        }
                        other => other
                            .map(Some)
                            .map_err(|source| ServiceError::Generators { addr, source }),
                    }
                } else {
                    qualify_load::run(plan, addr, self.cancel, &mut observer)
                        .map(Some)
                        .map_err(|source| ServiceError::Load { addr, source })
                };
                ran?
            }
            None => None,
        };
        let load_ended = Instant::now();
        // A ramp: the offered rate of the first second whose requests broke an objective.
        if let Some(shape) = report.as_mut().and_then(|r| r.shape.as_mut()) {
            let limits = plan.as_ref().map(|p| qualify_load::slo::RampLimits {
                timeout: p.timeout.as_secs_f64(),
                max_in_flight: p.max_in_flight,
            });
            qualify_load::slo::judge_seconds_under(&spec.slos, shape, limits);
        }
        let restart = instances.restart_seen(measured);
        let alive = !instances.ended();
        // A dependency's process fault runs its course first (started again and ready), unless
        // the load was cut short; then the write check reads back through the (restarted)
        // service while it still runs.
        harness.freeze();
        harness.settle(self.cancelled() || !alive);
        let writes = match &report {
            Some(rep) if alive && !self.cancelled() => self.check_writes(addr, rep, &bound),
            _ => None,
        };
        // The service's threads, open files and sockets once the load's connections closed
        // (a thread that served an idle keep-alive connection is gone by then; one stuck on a
        // dependency is not): wait for a sample that late, for a cell with a fault.
        let settled = load_ended + SETTLE;
        if report.is_some() && spec.faults.is_some() && alive && !self.cancelled() {
            // The probe samples at least every 100 ms — on a quiet machine. On a busy one its
            // sampler can be late: wait for a sample taken after `settled` itself (up to
            // SAMPLE_DEADLINE), not for a fixed time after it.
            let sampled = settled + SAMPLE_WAIT;
            let now = Instant::now();
            if now < sampled {
                std::thread::sleep(sampled - now);
            }
            let deadline = Instant::now() + SAMPLE_DEADLINE;
            loop {
                let counts = instances.count_samples();
                // None at all: a restarted instance, whose counts are not read.
                if counts.is_empty()
                    || counts.iter().any(|(t, _)| *t >= settled)
                    || Instant::now() >= deadline
                    || self.cancelled()
                {
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        let samples = instances.memory_samples();
        let counts = instances.count_samples();
        let (mut r, killed) = if self.cancelled() {
            instances.abort()?
        } else {
            instances.stop(service.stop.signal_number, service.stop.grace)?
        };
        let lost_early = harness.lost();
        let (injected, lost) = harness.finish_checked();
        if let Some(e) = cluster_evidence {
            attach_cluster(&mut r.evidence, e);
        }
        if self.cancelled() {
            r.outcome = Outcome::Interrupted;
            r.detail = "not probed to the end: the run was stopping".into();
            return Ok(r);
        }
        // A node of the cell lost: nothing it saw afterwards is the service's doing.
        if let Some(why) = lost_generator.or(lost_early).or(lost) {
            r.outcome = Outcome::Interrupted;
            r.detail = why;
            r.load = report.map(|rep| {
                service_load(
                    Some(rep),
                    Vec::new(),
                    "not judged: a node of the cell was lost",
                    None,
                    ready_seconds,
                    port,
                    r.detail.clone(),
                )
            });
            return Ok(r);
        }
        if let Some(why) = generator_failed {
            // The service's own end (a crash, …) stands; a live service was not examined.
            let detail = format!("not evidence about the service: the split load failed ({why})");
            if alive {
                r.outcome = Outcome::Interrupted;
                r.detail = detail.clone();
            }
            r.load = Some(ServiceLoad::without_load(detail));
            return Ok(r);
        }

        // Judged: memory growth; for a faulted, restarted or control cell its behaviour
        // (`result.faults`); the objectives — the steady ones over the whole measured phase,
        // or outside the fault window and its recovery in a faulted cell, and those for the
        // fault window over it —; and the verdict.
        let growth = measured
            .and_then(|start| memory_growth(&samples, start, r.limits.memory_bytes))
            .map(|g| not_a_leak(g, r.children.as_ref()));
        if growth.as_ref().is_some_and(|g| g.grew_steadily) && !r.has_flag(Flag::MemoryGrowth) {
            r.flags.push(Flag::MemoryGrowth);
            r.flags.sort_unstable();
        }
        let faulted = !injected.is_empty() || restart.is_some();
        let refused = writes
            .as_ref()
            .and_then(|w| w.checker.as_ref())
            .filter(|c| c.verdict == "invalid")
            .cloned();
        let judged = match (&report, &plan, faulted) {
            (Some(rep), Some(plan), true) => {
                let mut j = judge::judge(
                    spec,
                    &judge::Inputs {
                        params,
                        report: rep,
                        plan,
                        injected: &injected,
                        restart: restart.as_ref(),
                        writes,
                        controls: self.controls,
                        counts: &counts,
                        measured_start: measured,
                        settled,
                    },
                );
                if let Some(first) = &killed {
                    // How the killed instance ended, beside each record's restart.
                    for record in &mut j.records {
                        record.killed_instance = Some(KilledInstance {
                            outcome: first.outcome,
                            detail: first.detail.clone(),
                        });
                    }
                }
                r.faults = j.records.clone();
                Some(j)
            }
            _ => None,
        };
        // A standing fault has no outside: its cell's steady objectives are judged over the
        // whole load, as the control's are.
        let standing = spec.faults.as_ref().is_some_and(|f| f.standing) && restart.is_none();
        let windowed = judged.as_ref().is_some_and(|j| !j.control) && !standing;
        let outside = match &report {
            Some(rep) if windowed => Some(verdict::outside_window(rep)),
            _ => None,
        };
        let steady_phase = if windowed {
            SloPhase::OutsideWindow
        } else {
            SloPhase::WholeRun
        };
        let judged_report = outside.as_ref().or(report.as_ref());
        let steady = judged_report
            .map(|rep| qualify_load::slo::evaluate_as(&spec.slos, rep, steady_phase))
            .unwrap_or_default();
        let fault_slos = match (&report, &spec.faults) {
            (Some(rep), Some(_)) => verdict::fault_window(rep)
                .map(|w| qualify_load::slo::evaluate_fault(&spec.slos, &w))
                .unwrap_or_default(),
            _ => Vec::new(),
        };
        let load_verdict = qualify_load::verdict::decide(&CellFacts {
            not_ready: None,
            report: judged_report,
            slos: &steady,
            process_alive: alive,
        });
        let under = judged.as_ref().map(|j| verdict::UnderFault {
            behaviour: &j.behaviour,
            expected: j.expected.as_deref(),
            records: &j.records,
            fault_slos: &fault_slos,
            recover_within: j.recover_within,
        });
        let mut decided = verdict::decide(&load_verdict, under.as_ref(), || {
            verdict::summary(judged_report, &steady)
        });
        if let Some(checker) = &refused {
            decided.refused_by_checker(checker);
        }
        // What the service did to its own processes, beside the verdict.
        if let Some(text) = r.children.as_ref().and_then(Children::describe) {
            decided.detail = format!("{}; {text}", decided.detail);
        }
        let slos: Vec<SloResult> = steady.into_iter().chain(fault_slos).collect();
        r.load = Some(service_load(
            report,
            slos,
            &decided.detail,
            growth,
            ready_seconds,
            port,
            // How the service ended when asked to stop, before the verdict takes the detail.
            r.detail.clone(),
        ));
        decided.apply(&mut r, alive);
        Ok(r)
    }

    fn cancelled(&self) -> bool {
        self.cancel.load(Ordering::Relaxed)
    }

    /// The cell's load plan (`None` without `[load]` or an amount for the cell): the spec's,
    /// with the phase windows of its fault or restart, and for a write check every request
    /// writing `{seq}`.
    fn plan(&self, params: &Params) -> Option<LoadPlan> {
        let spec = self.spec;
        let mut plan = spec.load.as_ref()?.plan_for(params)?;
        plan.phases = match (&spec.faults, &spec.recovery) {
            (Some(_), _) => phases::phases(spec, plan.duration),
            (None, Some(r)) => phases::restart_phases(r.at, plan.duration),
            (None, None) => Vec::new(),
        };
        if let Some(writes) = spec.writes() {
            plan.record_writes = true;
            plan.requests = vec![RequestTemplate {
                weight: 1,
                kind: writes.request.clone(),
            }];
        }
        Some(plan)
    }

    /// `writes`: read every write back at `addr`, judge the set, keep the history beside the
    /// receipt and have the checker judge it.
    fn check_writes(
        &self,
        addr: SocketAddr,
        report: &LoadReport,
        bound: &Params,
    ) -> Option<SetCheck> {
        let writes = self.spec.writes()?;
        let mut readers: Vec<Box<dyn ReadBack>> = (0..WRITE_READERS)
            .filter_map(|_| reader(addr, &writes.read).ok())
            .collect();
        let answered = read_back(report, &mut readers, WRITE_BUDGET)?;
        let recorded = report.writes.as_ref()?;
        let mut check = crate::writes::judge(recorded, &answered);
        let text = crate::writes::history(recorded, &answered);
        // Beside the receipt; without a receipt directory, only for the checker's time.
        let scratch;
        let dir = match self.histories {
            Some(d) => d.to_path_buf(),
            None => {
                scratch = tempfile::Builder::new()
                    .prefix("qualify-history-")
                    .tempdir()
                    .ok()?;
                scratch.path().join("histories")
            }
        };
        let written = history::write(&dir, &text);
        if let Some(command) = &writes.checker {
            let record = match &written {
                Ok((_, path)) => {
                    history::check(self.spec, self.backend, self.cancel, command, path, bound)
                }
                Err(e) => qualify_model::fault::CheckerRecord {
                    command: command.to_string(),
                    verdict: "error".into(),
                    exit: None,
                    detail: format!("not run: the history could not be written: {e}"),
                },
            };
            check.valid &= record.accepted();
            check.checker = Some(record);
        }
        if self.histories.is_some()
            && let Ok((file, _)) = written
        {
            check.history = Some(file);
        }
        Some(check)
    }
}

/// `result.load`: the load report, the objectives' verdicts, the verdict's detail, memory
/// growth, readiness, port and how the service stopped.
fn service_load(
    report: Option<LoadReport>,
    slos: Vec<SloResult>,
    verdict: &str,
    growth: Option<Growth>,
    ready_seconds: f64,
    port: u16,
    stop: String,
) -> ServiceLoad {
    ServiceLoad {
        report,
        slo: slos,
        verdict: verdict.to_string(),
        memory_growth: growth,
        ready_seconds: Some(ready_seconds),
        port: Some(port),
        stop: Some(stop),
    }
}

/// `evidence.cluster` beside the probe's own evidence.
fn attach_cluster(evidence: &mut serde_json::Value, cluster: serde_json::Value) {
    if !evidence.is_object() {
        *evidence = serde_json::json!({});
    }
    if let Some(map) = evidence.as_object_mut() {
        map.insert("cluster".into(), cluster);
    }
}

/// A steady growth while the service replaced some of its processes is not read as a leak: a
/// new worker's memory is its start-up (imports, caches), and the killed one's is freed late.
fn not_a_leak(g: Growth, children: Option<&Children>) -> Growth {
    let replaced = children.map_or(0, Children::replaced);
    if !g.grew_steadily || replaced == 0 {
        return g;
    }
    Growth {
        grew_steadily: false,
        detail: format!(
            "{}; not read as a leak: {replaced} of the service's processes were replaced meanwhile (a new process's memory is its start-up)",
            g.detail
        ),
        ..g
    }
}

/// Memory growth through the measured phase (samples from its start on).
fn memory_growth(
    samples: &[(Instant, u64)],
    measured_start: Instant,
    ceiling: Option<u64>,
) -> Option<Growth> {
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

#[cfg(test)]
mod tests {
    use qualify_model::{Enforcement, Limits};

    use super::*;

    fn result(outcome: Outcome, saturated: bool, cancelled: bool) -> ProbeResult {
        let mut r = ProbeResult::unobserved(
            outcome,
            "d",
            Enforcement::none("cgroup2"),
            Limits::default(),
        );
        let report: LoadReport = serde_json::from_value(serde_json::json!({
            "model": "open", "offered_rate": 100.0, "users": null,
            "duration_seconds": 2.0, "measured_seconds": 2.0, "warmup_seconds": 0.0,
            "sent": 200, "completed": 200, "succeeded": 200, "dropped": 0, "shed": 0,
            "achieved_rate": 100.0, "throughput": 100.0,
            "errors": {"status_4xx": 0, "status_5xx": 0, "status_429": 0, "timeout": 0,
                       "refused": 0, "reset": 0, "unexpected_reply": 0, "other": 0},
            "latency": {
                "corrected": {"count": 200},
                "uncorrected": {"count": 200},
                "corrected_histogram": "", "histogram_encoding": "", "histogram_unit": ""
            },
            "timeline": [],
            "generator": {"threads": 1, "cpu_seconds": 0.1, "wall_seconds": 2.0,
                          "saturated": saturated, "connections_opened": 4,
                          "schedule_lag": {"dispatched": 200, "late": 0}},
            "cancelled": cancelled
        }))
        .expect("a load report");
        r.load = Some(ServiceLoad {
            report: Some(report),
            slo: Vec::new(),
            verdict: String::new(),
            memory_growth: None,
            ready_seconds: None,
            port: None,
            stop: None,
        });
        r
    }

    /// Only a cell interrupted because its generator lagged is measured again: not a cancelled
    /// one, not one whose verdict is about the service, not one without a load.
    #[test]
    fn only_a_lagging_generator_makes_a_cell_measured_again() {
        assert!(generator_was_bottleneck(&result(
            Outcome::Interrupted,
            true,
            false
        )));
        assert!(!generator_was_bottleneck(&result(
            Outcome::Interrupted,
            true,
            true
        )));
        assert!(!generator_was_bottleneck(&result(
            Outcome::Interrupted,
            false,
            false
        )));
        assert!(!generator_was_bottleneck(&result(Outcome::Ok, true, false)));
        assert!(!generator_was_bottleneck(&result(
            Outcome::SloViolated,
            true,
            false
        )));
        let mut no_load = result(Outcome::Interrupted, true, false);
        no_load.load = None;
        assert!(!generator_was_bottleneck(&no_load));
    }
}
