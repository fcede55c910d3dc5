//! Where a cell runs: the one [`Executor`] seam, chosen once per run by [`choose`]
//! (`--executor` over `[executor] kind`). [`Local`] runs a cell as probes of this process (a
//! command's probe, or a `qualify_service::ServiceCell`); [`Slurm`] as Slurm jobs (`qualify
//! probe` or `qualify service-cell` on a compute node; the jobs are built in `slurm.rs`).
//! Tests use a scripted executor (`scripted::Scripted`) that starts no process.
//!
//! An executor only runs what it is handed and says how its cells share a machine
//! ([`Dispatch`]). What runs — a service's control first, warmups, repeats, round 1 and the
//! later rounds, the setup error that stops the run — is decided once, above it, for every
//! executor: in `cells.rs` ([`crate::cells::Cells`]) and `rounds.rs`.

use std::path::PathBuf;

use qualify_plan::Params;
use qualify_probe::{BackendChoice, CancelToken, Outcome, ProbeResult};
use qualify_service::controls as ctl;
use qualify_service::{Controls, ServiceCell, SpecProbes};
use qualify_slurm::SlurmQueue;
use qualify_spec::{ExecutorKind, Spec};

use crate::Context;
use crate::error::Error;

/// What a run that stopped because a cell could not start says first.
const NOT_PROBED: &str = "a cell could not be probed";

/// How an executor's cells share a machine, which decides how many run side by side and how a
/// round of `[performance]` runs is dispatched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dispatch {
    /// On this machine: cells share its cores (`--jobs` under a CPU budget), a round's runs go
    /// one at a time (measurements never overlap), and a stop request ends a round before its
    /// next run.
    Here,
    /// Queued on a batch scheduler (Slurm): every cell is submitted at once, a whole round in
    /// the round's order, and the scheduler decides where and in which order they run.
    Batch,
}

/// Where a cell runs. Called from many threads at once (one per cell in flight).
pub trait Executor: Sync {
    /// How this executor's cells share a machine.
    fn dispatch(&self) -> Dispatch;

    /// `runs` runs (at least one) of the cell at `params`, one after the other in one place,
    /// stopping after one that ended `interrupted`; more than one are combined
    /// (`ProbeResult::combine`: the outcome, the flags, the distinct outputs, each run in
    /// `runs`). An error: the cell could not start at all (command not found, a backend or
    /// dependency missing, Slurm refused the job), which stops the run.
    fn run(&self, params: &Params, runs: u64) -> Result<ProbeResult, Error>;

    /// What this place adds to a cell's result, once, after its first runs (a later round's
    /// run gets nothing): on this machine the `oversubscribed` flag and `[perturb]`'s campaign.
    fn finish(&self, params: &Params, result: ProbeResult) -> Result<ProbeResult, Error>;
}

/// Which executor a run uses: `--executor`, else the spec's `[executor] kind`. `[perturb]`
/// runs on this machine only: the spec refuses it beside `[executor] kind = "slurm"`, and the
/// flag is refused here rather than skipping perturbation silently.
pub fn kind(chosen: Option<ExecutorKind>, spec: &Spec) -> Result<ExecutorKind, Error> {
    let kind = chosen.unwrap_or(spec.executor.kind);
    if kind == ExecutorKind::Slurm && spec.perturb.is_some() {
        return Err(Error::Input {
            message: format!(
                "--executor slurm with [perturb] in {}: perturbation runs on this machine (its scheduler-level perturbation acts on the cell's threads from here)",
                spec.path.display()
            ),
            fix: Some(
                "run the perturbed qualification with --executor local, or without [perturb]"
                    .into(),
            ),
        });
    }
    Ok(kind)
}

/// The run's executor, of [`kind`]. Under Slurm this
/// checks that a controller answers and starts the thread that owns all Slurm traffic (an
/// error is a setup error). `controls` are the run's service controls, which both executors
/// read and fill.
pub fn choose<'a>(
    ctx: &Context<'a>,
    controls: &'a Controls,
) -> Result<Box<dyn Executor + 'a>, Error> {
    let spec = ctx.spec;
    let histories = crate::seal::receipt_dir(ctx).join("histories");
    Ok(match kind(ctx.args.executor, spec)? {
        ExecutorKind::Local => Box::new(Local {
            spec,
            backend: ctx.args.backend,
            cancel: ctx.cancel,
            histories,
            controls,
            load_gen: std::env::current_exe().ok(),
        }),
        ExecutorKind::Slurm => Box::new(Slurm {
            queue: crate::slurm::start(spec, ctx.cancel)?,
            spec,
            spec_path: std::path::absolute(&ctx.args.spec)
                .unwrap_or_else(|_| ctx.args.spec.clone()),
            backend: ctx.args.backend,
            histories,
            controls,
        }),
    })
}

/// Cells as probes of this process.
pub struct Local<'a> {
    spec: &'a Spec,
    backend: BackendChoice,
    cancel: &'a CancelToken,
    /// Where service cells keep their write histories: `histories` beside the receipt.
    histories: PathBuf,
    /// The run's `none` cells, which a service cell registers and reads its noise floor from.
    controls: &'a Controls,
    /// This binary, which a split load starts as `qualify load-gen` (`None`: unknown).
    load_gen: Option<PathBuf>,
}

impl Local<'_> {
    fn service_cell(&self) -> ServiceCell<'_> {
        ServiceCell {
            spec: self.spec,
            backend: self.backend,
            cancel: self.cancel,
            histories: Some(&self.histories),
            controls: self.controls,
            cluster: None,
            load_gen: self.load_gen.as_deref(),
        }
    }
}

impl Executor for Local<'_> {
    fn dispatch(&self) -> Dispatch {
        Dispatch::Here
    }

    /// A service cell is started, loaded, judged and stopped once per run; a command is probed
    /// once per run.
    fn run(&self, params: &Params, runs: u64) -> Result<ProbeResult, Error> {
        if self.spec.service.is_some() {
            let cell = self.service_cell();
            return repeated(runs, || cell.run(params)).map_err(|e| Error::service(NOT_PROBED, e));
        }
        let probe = self.spec.cell_probe(params, self.backend);
        repeated(runs, || qualify_probe::probe(&probe, self.cancel))
            .map_err(|e| Error::probe(NOT_PROBED, e))
    }

    /// `[perturb]`: the cell's perturbation campaign after its own runs (when they finished),
    /// kept in `perturb` (the cell's outcome stays its own runs'; a failure under perturbation
    /// fails the cell in the envelope layer); then the `oversubscribed` flag when the cell ran
    /// more ranks than this process may use CPUs.
    fn finish(&self, params: &Params, mut result: ProbeResult) -> Result<ProbeResult, Error> {
        if let Some(p) = &self.spec.perturb
            && result.outcome != Outcome::Interrupted
            && !self.cancel.load(std::sync::atomic::Ordering::SeqCst)
        {
            let probe = self.spec.cell_probe(params, self.backend);
            let plan = crate::perturb::plan_of(p, &probe);
            let (mut report, _) = crate::perturb::report(&probe, plan, self.cancel, false)?;
            // The receipt keeps the counts, not every run.
            report.run_list.clear();
            result.perturb = Some(report);
        }
        let topology = crate::topology::of(self.spec, params);
        crate::topology::flag_local(&mut result, topology, qualify_probe::allowed_cpus());
        Ok(result)
    }
}

/// `runs` runs by `once`, stopping after an `interrupted` one, combined when more than one.
fn repeated<E>(
    runs: u64,
    mut once: impl FnMut() -> Result<ProbeResult, E>,
) -> Result<ProbeResult, E> {
    let first = once()?;
    let runs = usize::try_from(runs).unwrap_or(usize::MAX);
    if runs <= 1 {
        return Ok(first);
    }
    let mut all = vec![first.clone()];
    while all.len() < runs
        && all
            .last()
            .is_some_and(|r| r.outcome != Outcome::Interrupted)
    {
        all.push(once()?);
    }
    // `combine` has no result only for no run; `all` holds the first at least.
    Ok(ProbeResult::combine(all).unwrap_or(first))
}

/// Cells as Slurm jobs, one per cell (`runs` runs inside it), through the run's one
/// [`SlurmQueue`] (which batches them into job arrays).
pub struct Slurm<'a> {
    queue: SlurmQueue,
    spec: &'a Spec,
    /// The spec's file (absolute): a service cell's job reads it on its node.
    spec_path: PathBuf,
    backend: BackendChoice,
    histories: PathBuf,
    /// The run's `none` cells: a control's job registers its variation, a faulted cell's job
    /// is handed it (`--control-noise`).
    controls: &'a Controls,
}

impl Slurm<'_> {
    /// A service cell as one Slurm job (`qualify service-cell` on its first node): a control
    /// registers the variation its result carries; a faulted cell's job is handed its
    /// control's, when one was measured.
    fn service_job(&self, params: &Params) -> ProbeResult {
        let control = ctl::is_control(self.spec, params);
        let noise = if control {
            None
        } else {
            self.controls.noise_for(self.spec, params)
        };
        let r = crate::slurm::run_service_cell(
            &self.queue,
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
}

impl Executor for Slurm<'_> {
    fn dispatch(&self) -> Dispatch {
        Dispatch::Batch
    }

    /// A command's job runs `runs` runs on its node (`qualify probe --repeat`); a service
    /// cell runs as one job per run (`qualify service-cell` starts, loads and stops the service
    /// once), one after another, as `Local` runs it. A job Slurm refused (`sbatch` failed) is a
    /// setup error.
    fn run(&self, params: &Params, runs: u64) -> Result<ProbeResult, Error> {
        let result = if self.spec.service.is_some() {
            // A refused job's result is `interrupted`, after which `repeated` submits no more.
            repeated(runs, || Ok::<_, Error>(self.service_job(params)))?
        } else {
            let probe = self.spec.slurm_cell_probe(params, self.backend);
            let topology = crate::topology::of(self.spec, params);
            let observe = crate::topology::observe_nodes(self.spec);
            crate::slurm::run_cell(&self.queue, &probe, topology, runs, observe)
        };
        match self.queue.setup_error() {
            Some(e) => Err(Error::input_only(format!(
                "a cell could not be submitted to Slurm: {e}"
            ))),
            None => Ok(result),
        }
    }

    /// Nothing: `[perturb]` runs on this machine only (the spec refuses it beside `[executor]
    /// kind = "slurm"`), and a job's node is its own, judged by its own probe.
    fn finish(&self, _: &Params, result: ProbeResult) -> Result<ProbeResult, Error> {
        Ok(result)
    }
}

#[cfg(test)]
pub mod scripted {
    use std::sync::Mutex;

    use qualify_plan::Params;
    use qualify_probe::{Enforcement, Limits, Outcome, ProbeResult};

    use super::{Dispatch, Executor};
    use crate::error::Error;

    /// An executor that starts no process: each run's result comes from `script` (given the
    /// cell's parameters and how many runs of that cell it was asked for before), every call
    /// is logged, and the call `fail_at` (counted from 1) cannot start: an error, as a command
    /// not found is.
    pub struct Scripted {
        pub dispatch: Dispatch,
        script: fn(&Params, usize) -> ProbeResult,
        /// Each call's parameters and the runs it asked for.
        calls: Mutex<Vec<(Params, u64)>>,
        pub fail_at: Option<usize>,
    }

    impl Scripted {
        pub fn new(dispatch: Dispatch, script: fn(&Params, usize) -> ProbeResult) -> Scripted {
            Scripted {
                dispatch,
                script,
                calls: Mutex::new(Vec::new()),
                fail_at: None,
            }
        }

        /// Every call so far: the cell's parameters and the runs asked for.
        pub fn calls(&self) -> Vec<(Params, u64)> {
            self.calls.lock().map(|c| c.clone()).unwrap_or_default()
        }
    }

    /// A run that ended `outcome` after `wall` seconds (half of them user CPU), 1 MiB peak.
    pub fn run(outcome: Outcome, wall: f64) -> ProbeResult {
        let mut r = ProbeResult::unobserved(
            outcome,
            "scripted",
            Enforcement::none("mock"),
            Limits::default(),
        );
        r.wall_seconds = wall;
        r.user_seconds = wall / 2.0;
        r.peak_memory_bytes = Some(1 << 20);
        r
    }

    impl Executor for Scripted {
        fn dispatch(&self) -> Dispatch {
            self.dispatch
        }

        fn run(&self, params: &Params, runs: u64) -> Result<ProbeResult, Error> {
            let (call, before) = {
                let mut calls = self.calls.lock().unwrap_or_else(|e| e.into_inner());
                let before = calls.iter().filter(|(p, _)| p == params).count();
                calls.push((params.clone(), runs));
                (calls.len(), before)
            };
            if self.fail_at == Some(call) {
                return Err(Error::input_only("scripted: the cell could not start"));
            }
            Ok((self.script)(params, before))
        }

        fn finish(&self, _: &Params, result: ProbeResult) -> Result<ProbeResult, Error> {
            Ok(result)
        }
    }
}
