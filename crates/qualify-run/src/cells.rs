//! The one place a cell of the plan is probed: [`CellRunner`] owns how a cell runs (its probe
//! spec from the spec, warmups, repeats, the local topology flag) on one of two executors —
//! this machine or Slurm — and what is measured of it afterwards ([`measure`]). With
//! `[performance]` a cell's first probe is its warmups and one measured run (round 1); the
//! later rounds (`rounds.rs`) add one run each through [`RoundExecutor::probe_once`]. The planner and
//! the controls call it through `qualify_plan::CellRunner`. A new kind of cell (a service under
//! load) plugs in here: its own way to run and its own measurements, on the same executors.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::sync::atomic::Ordering;

use qualify_perf::Sample;
use qualify_plan::Params;
use qualify_probe::{CancelToken, Outcome, ProbeError, ProbeResult, ProbeSpec};
use qualify_service::ServiceError;
use qualify_service::SpecProbes;
use qualify_service::controls as ctl;
use qualify_slurm::SlurmExecutor;
use qualify_spec::Spec;

use super::Context;
use super::rounds::{Dispatch, RoundExecutor};
use crate::error::Error;

/// What a run that stopped because a cell could not start says first.
const NOT_PROBED: &str = "a cell could not be probed";

/// Where cells run.
pub enum Executor {
    /// On this machine, as probes of this process.
    Local,
    /// As Slurm jobs (each runs `qualify probe` on a compute node).
    Slurm(SlurmExecutor),
}

impl Executor {
    /// How this executor runs the cells of a round (and of the plan): one at a time here, or
    /// all submitted at once to Slurm.
    pub fn dispatch(&self) -> Dispatch {
        match self {
            Executor::Local => Dispatch::Here,
            Executor::Slurm(_) => Dispatch::Batch,
        }
    }
}

/// Probes the plan's cells (and the ledger's controls) on one executor.
pub struct CellRunner<'a> {
    spec: &'a Spec,
    backend: qualify_probe::BackendChoice,
    /// Runs per cell compared by stdout digest (`--repeat`, `[reproducibility] repeat`).
    repeat: u64,
    cancel: &'a CancelToken,
    executor: &'a Executor,
    /// The first probe or service cell that could not start at all (command not found,
    /// backend missing, a dependency never ready): it stops the run, which then fails with
    /// this error.
    setup_error: OnceLock<Error>,
    /// Where service cells keep their write histories: `histories` beside the receipt.
    histories: PathBuf,
    /// The `none` cells: each measured once, before the faulted service cells of its
    /// combination, on whichever executor; their noise floor.
    controls: qualify_service::Controls,
    /// The spec's file (absolute): a service cell's job reads it on its node.
    spec_path: PathBuf,
    /// This binary, which a split load starts as `qualify load-gen` (`None`: unknown).
    exe: Option<PathBuf>,
}

impl<'a> CellRunner<'a> {
    pub fn new(ctx: &Context<'a>, executor: &'a Executor) -> CellRunner<'a> {
        CellRunner {
            spec: ctx.spec,
            backend: ctx.args.backend,
            repeat: ctx.repeat(),
            cancel: ctx.cancel,
            executor,
            setup_error: OnceLock::new(),
            histories: super::seal::receipt_dir(ctx).join("histories"),
            controls: qualify_service::Controls::new(),
            spec_path: std::path::absolute(&ctx.args.spec)
                .unwrap_or_else(|_| ctx.args.spec.clone()),
            exe: std::env::current_exe().ok(),
        }
    }

    /// The cell that could not start, if one did not.
    pub fn into_setup_error(self) -> Option<Error> {
        self.setup_error.into_inner()
    }

    fn run_local(&self, params: &Params, probe: &ProbeSpec) -> ProbeResult {
        let result = if self.spec.service.is_some() {
            self.service_locally(params)
                .map_err(|e| Error::service(NOT_PROBED, e))
        } else {
            self.probe_locally(probe)
                .map_err(|e| Error::probe(NOT_PROBED, e))
                .and_then(|r| self.perturbed(probe, r))
        };
        match result {
            Ok(mut r) => {
                let topology = super::topology::of(self.spec, params);
                super::topology::flag_local(&mut r, topology, qualify_probe::allowed_cpus());
                r
            }
            Err(e) => {
                let _ = self.setup_error.set(e);
                self.cancel.store(true, Ordering::SeqCst);
                probe.not_run("not probed: the run was stopping")
            }
        }
    }

    /// `[perturb]`: after the cell's own runs (when they finished), its perturbation campaign,
    /// kept in `r.perturb` (the cell's outcome stays its own run's; a failure under
    /// perturbation fails the cell in the envelope layer).
    fn perturbed(&self, probe: &ProbeSpec, mut r: ProbeResult) -> Result<ProbeResult, Error> {
        let Some(p) = &self.spec.perturb else {
            return Ok(r);
        };
        if r.outcome == Outcome::Interrupted || self.cancel.load(Ordering::SeqCst) {
            return Ok(r);
        }
        let plan = crate::perturb::plan_of(p, probe);
        let (mut report, _) = crate::perturb::report(probe, plan, self.cancel, false)?;
        // The receipt keeps the counts, not every run.
        report.run_list.clear();
        r.perturb = Some(report);
        Ok(r)
    }

    /// A service cell: started, loaded, judged and stopped once per run. With `[performance]`
    /// this is round 1 (its run in `runs`; the later rounds add theirs through
    /// [`RoundExecutor::probe_once`]); otherwise `--repeat` runs combined as for batch cells.
    fn service_locally(&self, params: &Params) -> Result<ProbeResult, ServiceError> {
        let cell = self.service_cell();
        if self.spec.performance.is_some() {
            let mut r = cell.run(params)?;
            r.runs = Some(vec![r.clone()]);
            return Ok(r);
        }
        let repeat = usize::try_from(self.repeat).unwrap_or(usize::MAX).max(1);
        if repeat == 1 {
            return cell.run(params);
        }
        let first = cell.run(params)?;
        let mut runs = vec![first.clone()];
        while runs.len() < repeat
            && runs
                .last()
                .is_some_and(|r| r.outcome != Outcome::Interrupted)
        {
            runs.push(cell.run(params)?);
        }
        // `combine` has no result only for no run; `runs` holds the first at least.
        Ok(ProbeResult::combine(runs).unwrap_or(first))
    }

    fn service_cell(&self) -> qualify_service::ServiceCell<'_> {
        qualify_service::ServiceCell {
            spec: self.spec,
            backend: self.backend,
            cancel: self.cancel,
            histories: Some(&self.histories),
            controls: &self.controls,
            cluster: None,
            load_gen: self.exe.as_deref(),
        }
    }

    /// `[performance]`: `warmup` discarded runs (a warmup that does not end `ok` is the cell's
    /// result: repeating a failure only costs time), then one measured run in `runs` — round 1;
    /// the later rounds add theirs (`rounds.rs`). Otherwise `repeat` runs compared by stdout
    /// digest, or one run.
    fn probe_locally(&self, probe: &ProbeSpec) -> Result<ProbeResult, ProbeError> {
        if let Some(p) = &self.spec.performance {
            for _ in 0..p.warmup {
                let r = qualify_probe::probe(probe, self.cancel)?;
                if r.outcome != Outcome::Ok {
                    return Ok(r);
                }
            }
            let mut r = qualify_probe::probe(probe, self.cancel)?;
            r.runs = Some(vec![r.clone()]);
            return Ok(r);
        }
        let repeat = usize::try_from(self.repeat).unwrap_or(usize::MAX);
        if repeat <= 1 {
            return qualify_probe::probe(probe, self.cancel);
        }
        qualify_probe::probe_repeated(probe, repeat, self.cancel, |_, _| {})
    }
}

impl RoundExecutor for CellRunner<'_> {
    fn dispatch(&self) -> Dispatch {
        self.executor.dispatch()
    }

    /// One more measured run of a cell (a later round of `[performance]`): no warmup, one run,
    /// on the same executor (under Slurm: one job). A probe that cannot start stops the run as
    /// in [`qualify_plan::CellRunner::run`].
    fn probe_once(&self, params: &Params) -> ProbeResult {
        let probe = self.spec.cell_probe(params, self.backend);
        match self.executor {
            Executor::Local => {
                let once = if self.spec.service.is_some() {
                    self.service_cell()
                        .run(params)
                        .map_err(|e| Error::service(NOT_PROBED, e))
                } else {
                    qualify_probe::probe(&probe, self.cancel)
                        .map_err(|e| Error::probe(NOT_PROBED, e))
                };
                once.unwrap_or_else(|e| {
                    let _ = self.setup_error.set(e);
                    self.cancel.store(true, Ordering::SeqCst);
                    probe.not_run("not probed: the run was stopping")
                })
            }
            Executor::Slurm(slurm) if self.spec.service.is_some() => {
                self.service_on_slurm(slurm, params)
            }
            Executor::Slurm(slurm) => {
                let probe = self.spec.slurm_cell_probe(params, self.backend);
                let topology = super::topology::of(self.spec, params);
                let observe = super::topology::observe_nodes(self.spec);
                super::slurm::run_cell(slurm, &probe, topology, 1, observe)
            }
        }
    }
}

impl CellRunner<'_> {
    /// A service cell as one Slurm job (`qualify service-cell` on its first node): a control
    /// registers the variation its result carries; a faulted cell's job is handed its
    /// control's, when one was measured.
    fn service_on_slurm(&self, slurm: &SlurmExecutor, params: &Params) -> ProbeResult {
        let control = ctl::is_control(self.spec, params);
        let noise = if control {
            None
        } else {
            self.controls.noise_for(self.spec, params)
        };
        let r = super::slurm::run_service_cell(
            slurm,
            self.spec,
            &self.spec_path,
            params,
            self.backend,
            &self.histories,
            noise,
        );
        if control && let Some(n) = ctl::noise_of(&r) {
            self.controls.register(self.spec, params, n);
        }
        r
    }

    /// A service cell's control measured first, once per run, on this executor
    /// ([`qualify_service::Controls::get_or_measure`]): a faulted cell waits for its control or
    /// measures it; the control cell itself gets that measurement when `claim` (the plan's
    /// call), else runs anew (a regression from the ledger). `None`: run the cell itself.
    fn control_first(&self, params: &Params, claim: bool) -> Option<ProbeResult> {
        if !ctl::measured_first(self.spec) {
            return None;
        }
        let group = ctl::group(self.spec, params);
        if ctl::is_control(self.spec, params) {
            return claim.then(|| {
                self.controls
                    .get_or_measure(&group, || self.run_on_executor(params))
            });
        }
        let control = ctl::control_of(self.spec, params);
        self.controls
            .get_or_measure(&group, || self.run_on_executor(&control));
        None
    }

    /// A regression from the ledger: run anew (also a control), after its control.
    pub fn run_regression(&self, params: &Params) -> ProbeResult {
        self.control_first(params, false)
            .unwrap_or_else(|| self.run_on_executor(params))
    }

    /// The cell on this run's executor: locally (a probe, or a service cell), or as Slurm
    /// job(s).
    fn run_on_executor(&self, params: &Params) -> ProbeResult {
        let probe = self.spec.cell_probe(params, self.backend);
        match self.executor {
            Executor::Local => self.run_local(params, &probe),
            Executor::Slurm(slurm) if self.spec.service.is_some() => {
                let mut r = self.service_on_slurm(slurm, params);
                if self.spec.performance.is_some() {
                    r.runs = Some(vec![r.clone()]);
                }
                r
            }
            Executor::Slurm(slurm) => {
                let probe = self.spec.slurm_cell_probe(params, self.backend);
                let topology = super::topology::of(self.spec, params);
                let observe = super::topology::observe_nodes(self.spec);
                // With [performance] the rounds repeat the cell, one job per run.
                let repeat = if self.spec.performance.is_some() {
                    1
                } else {
                    self.repeat
                };
                super::slurm::run_cell(slurm, &probe, topology, repeat, observe)
            }
        }
    }
}

impl qualify_plan::CellRunner for CellRunner<'_> {
    fn run(&self, params: &Params) -> ProbeResult {
        self.control_first(params, true)
            .unwrap_or_else(|| self.run_on_executor(params))
    }
}

/// What one cell measured: samples per metric (wall, cpu = user + system, peak_memory, the
/// spec's regex figures from stdout and, for a service cell, the service metrics of each run's
/// load report — also of runs that ended `slo_violated` or `overloaded`: the service served
/// the whole load, and how it served it is the measurement) and the problems measuring it. A
/// figure that does not parse is an error of the cell, never a zero; runs that timed out or
/// were killed are censored ("≥ value"). Run `i` of `runs` was measured in round `i + 1` (`rounds.rs` appends
/// one run per round).
pub fn measure(spec: &Spec, result: &ProbeResult) -> (BTreeMap<String, Vec<Sample>>, Vec<String>) {
    let mut samples: BTreeMap<String, Vec<Sample>> = BTreeMap::new();
    let mut errors: Vec<String> = Vec::new();
    let single = [result.clone()];
    let runs: &[ProbeResult] = result.runs.as_deref().unwrap_or(&single);
    let metrics = spec
        .performance
        .as_ref()
        .map(|p| p.metrics.as_slice())
        .unwrap_or(&[]);
    let mut note = |message: String| {
        if !errors.contains(&message) {
            errors.push(message);
        }
    };
    for (i, run) in runs.iter().enumerate() {
        let cpu = run.user_seconds + run.system_seconds;
        let round = u32::try_from(i + 1).unwrap_or(u32::MAX);
        let mut push = |name: &str, s: Sample| {
            samples
                .entry(name.to_string())
                .or_default()
                .push(s.in_round(round))
        };
        let served = spec.service.is_some() && served(run.outcome);
        if served {
            // What the service did under the load is measured whether or not it held its
            // objectives: an overloaded service's throughput is its capacity.
            match service_metrics(run) {
                Ok(ServiceMeasures { values, missing }) => {
                    for (name, v) in values {
                        push(name, Sample::measured(v));
                    }
                    if !missing.is_empty() {
                        note(format!(
                            "run {}: the load report measured no {} (nothing answered in the measured phase)",
                            i + 1,
                            missing.join(", ")
                        ));
                    }
                }
                Err(e) => note(format!("run {}: {e}", i + 1)),
            }
        }
        if run.outcome == Outcome::Ok || served {
            push("wall", Sample::measured(run.wall_seconds));
            push("cpu", Sample::measured(cpu));
            match run.peak_memory_bytes {
                Some(b) => push("peak_memory", Sample::measured(b as f64)),
                None => note("peak_memory: not measured on this backend".to_string()),
            }
            for m in metrics {
                match m.extract(&run.stdout_tail) {
                    Ok(v) => push(&m.name, Sample::measured(v)),
                    Err(e) => note(format!("run {}: {e}", i + 1)),
                }
            }
        } else if censored(run.outcome) {
            push("wall", Sample::at_least(run.wall_seconds));
            push("cpu", Sample::at_least(cpu));
            if let Some(b) = run.peak_memory_bytes {
                push("peak_memory", Sample::at_least(b as f64));
            }
        } else if run.outcome != Outcome::Interrupted {
            note(format!(
                "run {} ended {}: no measurement ({})",
                i + 1,
                run.outcome,
                run.detail
            ));
        }
    }
    (samples, errors)
}

/// Whether a run that ended this way is a measurement the rounds repeat: `ok`, and for a
/// service also `slo_violated` and `overloaded` (an overloaded service's throughput is its
/// capacity, which `[[performance.expect]]` on `throughput` along a workers axis judges).
pub fn measured(spec: &Spec, outcome: Outcome) -> bool {
    outcome == Outcome::Ok || (spec.service.is_some() && served(outcome))
}

/// Whether a service cell that ended this way served its load to the end (kept up, or not):
/// its load report is a measurement of the service.
fn served(outcome: Outcome) -> bool {
    matches!(
        outcome,
        Outcome::Ok | Outcome::SloViolated | Outcome::Overloaded
    )
}

/// The service metrics ([`qualify_spec::SERVICE_METRICS`]) of a run's load report
/// (`result.load`), each computed as the `[[slo]]` evaluation computes it, and the names of
/// those the run could not measure (nothing answered: no latency).
fn service_metrics(run: &ProbeResult) -> Result<ServiceMeasures, NoLoadReport> {
    let Some(load) = &run.load else {
        return Err(NoLoadReport::Missing);
    };
    let Some(report) = &load.report else {
        return Err(NoLoadReport::Empty);
    };
    let mut values = Vec::new();
    let mut missing = Vec::new();
    for (name, _, _) in qualify_spec::SERVICE_METRICS {
        let value = match name {
            "achieved_rate" => (report.measured_seconds > 0.0).then_some(report.achieved_rate),
            other => other
                .parse::<qualify_model::SloMetric>()
                .ok()
                .and_then(|m| qualify_load::slo::value(m, report)),
        };
        match value.filter(|v| v.is_finite()) {
            Some(v) => values.push((name, v)),
            None => missing.push(name),
        }
    }
    Ok(ServiceMeasures { values, missing })
}

/// Why a service run has no service metrics (a problem of the cell's measurement, in its
/// record).
#[derive(Debug, thiserror::Error)]
enum NoLoadReport {
    #[error("no load report (result.load) to measure the service metrics from")]
    Missing,
    #[error("the load report (result.load) holds no measurement")]
    Empty,
}

/// A run's service metrics: the measured ones, and the names of those it could not measure.
struct ServiceMeasures {
    values: Vec<(&'static str, f64)>,
    missing: Vec<&'static str>,
}

/// Whether a run that ended this way is a censored observation (it would have taken at least
/// this long): stopped by the deadline, a signal, the memory ceiling or a stall.
fn censored(outcome: Outcome) -> bool {
    matches!(
        outcome,
        Outcome::Timeout
            | Outcome::Killed
            | Outcome::OomKilled
            | Outcome::OutOfMemory
            | Outcome::Deadlock
            | Outcome::Livelock
    )
}
