//! Stage 4: probing the operating region. The spec's axes become the planner's (a unit-step
//! integer range searched for a boundary is bisected over integers; every other range is the
//! spec's lattice of points); the ledger's regressions run first, then the plan's sweeps and
//! boundary searches, every cell through one [`Cells`] on the executor chosen here, once
//! ([`executor::choose`]), with a progress bar, `--jobs` side by side under a CPU budget
//! locally, and every cell at once under Slurm; with `[performance]` the plan's execution is
//! round 1 and [`crate::rounds`] runs the others.

use std::time::Instant;

use qualify_plan as plan;
use qualify_probe::Outcome;
use qualify_spec::Spec;

use crate::Context;
use crate::cells::Cells;
use crate::checks::Next;
use crate::error::Error;
use crate::executor::{self, Dispatch};
use crate::regressions::Regressions;

/// Cells in flight at once under Slurm (each waits on its own thread for its job).
const SLURM_IN_FLIGHT: usize = 4096;

/// The plan, and what of it ran.
pub struct Region {
    /// Cells the plan held before boundary searches added probes.
    pub planned: usize,
    /// `None`: the region was not probed (interrupted earlier, or the functional check failed).
    pub execution: Option<plan::Execution>,
    /// How the `[performance]` rounds ran (`None`: no `[performance]`, or not probed).
    pub rounds: Option<qualify_perf::Rounds>,
}

pub fn probe(
    ctx: &Context<'_>,
    regressions: &mut Regressions,
    next: &Next,
) -> Result<Region, Error> {
    let spec = ctx.spec;
    let axes: Vec<plan::Axis> = spec.axes.iter().map(qualify_plan::Axis::declared).collect();
    let the_plan = plan::Plan::new(axes)
        .map_err(|e| Error::input_only(format!("{}: {e}", spec.path.display())))?;
    let planned = the_plan.estimated_cells();
    if *next != Next::Probe {
        return Ok(Region {
            planned,
            execution: None,
            rounds: None,
        });
    }
    let controls = qualify_service::Controls::new();
    let executor = executor::choose(ctx, &controls)?;
    // A measuring run has the machine to itself among qualify runs, and says who else ran.
    let measuring =
        executor.dispatch() == Dispatch::Here && (spec.performance.is_some() || ctx.repeat() > 1);
    let measurement = if measuring {
        let held = crate::lock::hold(
            ctx,
            &crate::lock::measure_lock_path(),
            "the machine's measurement lock",
        )?;
        Some((held, crate::lock::Watcher::start(ctx.holder.clone())))
    } else {
        None
    };
    let cells = Cells::new(
        spec,
        ctx.args.backend,
        ctx.repeat(),
        ctx.cancel,
        executor.as_ref(),
        &controls,
    );
    let (execution, mut rounds) = execute(ctx, &the_plan, planned, &cells, regressions);
    if let Some((held, watcher)) = measurement {
        let share = watcher.finish(true);
        drop(held);
        if let Some(r) = &mut rounds {
            r.machine = Some(share);
        }
    }
    if let Some(e) = cells.into_setup_error() {
        return Err(e);
    }
    Ok(Region {
        planned,
        execution: Some(execution),
        rounds,
    })
}

fn execute(
    ctx: &Context<'_>,
    the_plan: &plan::Plan,
    planned: usize,
    cells: &Cells<'_>,
    regressions: &mut Regressions,
) -> (plan::Execution, Option<qualify_perf::Rounds>) {
    let bar = ctx.observer.progress(planned);
    let dispatch = cells.dispatch();
    // Under Slurm the scheduler owns the cores: every cell is submitted at once.
    let (jobs, cores) = match dispatch {
        Dispatch::Batch => (SLURM_IN_FLIGHT, SLURM_IN_FLIGHT),
        Dispatch::Here => (ctx.args.jobs as usize, qualify_probe::allowed_cpus()),
    };
    let demand = cpu_demand(ctx.spec);
    let progress_bar = std::sync::Arc::clone(&bar);
    let opts = plan::ExecuteOptions::new()
        .jobs(jobs)
        .cores(cores)
        .demand(move |p: &plan::Params| match dispatch {
            Dispatch::Batch => 1,
            Dispatch::Here => demand(p),
        })
        .cancel(ctx.cancel.clone())
        .on_progress(move |ev| match ev {
            plan::ProgressEvent::Started {
                params,
                total_estimate,
                ..
            } => {
                progress_bar.set_total(*total_estimate);
                progress_bar.set_message(format!("running {params}"));
            }
            plan::ProgressEvent::Finished {
                params,
                result,
                finished,
                total_estimate,
                ..
            } => {
                progress_bar.set_total(*total_estimate);
                progress_bar.set_position(*finished);
                if result.outcome != Outcome::Ok {
                    progress_bar.println(format!(
                        "  {params}: {} — {}",
                        result.outcome, result.detail
                    ));
                }
            }
        });
    let started = Instant::now();
    regressions.run(cells, bar.as_ref());
    let mut execution = the_plan.execute(&|p: &plan::Params| cells.plan_cell(p), &opts);
    bar.finish();
    ctx.say(&format!(
        "probed {} cell(s) in {:.1}s",
        execution.cells.len(),
        started.elapsed().as_secs_f64()
    ));
    let rounds = crate::rounds::run(ctx, cells, &mut execution, started);
    (execution, rounds)
}

/// The cores a cell needs locally: its concurrency axis's value, capped by the CPU ceiling.
fn cpu_demand(spec: &Spec) -> impl Fn(&plan::Params) -> usize + use<> {
    let concurrency_axis = spec
        .axes
        .iter()
        .find(|a| a.kind == qualify_spec::AxisKind::Concurrency)
        .map(|a| a.name.clone());
    let cpus = spec.limits.cpus;
    move |p: &plan::Params| -> usize {
        let from_axis = concurrency_axis
            .as_ref()
            .map(|a| plan::axis_demand(a.clone())(p))
            .unwrap_or(1);
        let from_ceiling = cpus.map(|c| c.ceil() as usize).unwrap_or(from_axis);
        from_axis.min(from_ceiling).max(1)
    }
}
