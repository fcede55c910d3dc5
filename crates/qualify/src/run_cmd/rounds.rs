//! `[performance]` rounds: after the plan executed (round 1, in the plan's own order, each cell
//! after its warmups), every measured cell is probed again once per round, each round in a fresh
//! shuffle of the cells (a generator seeded with `seed + round`), so a slow period of the
//! machine is spread over all cells instead of bending the curve. Each run is appended to its
//! cell's `runs` (run `i` is round `i + 1`, which `cells::measure` tags).
//!
//! How many rounds: `repeat = N` runs N rounds. `repeat = "auto"` runs at least
//! [`MIN_ROUNDS`], then more while a cell's estimate of a judged metric (the metrics the spec's
//! checks judge; `wall` and `cpu` without checks) is less precise than `precision` (the relative
//! 95% half-width of its estimator, computed by `qualify_perf::stats` exactly as the receipt
//! states it), up to `max_repeat` rounds and within `budget`; precise cells stop being probed.
//! A cell that did not end `ok` in round 1 is never repeated, and one that fails in a later
//! round stops there (its failure is in its runs, the cell's outcome says so). A service cell
//! that served its load but ended `slo_violated` or `overloaded` is a measurement too
//! ([`super::cells::measured`]): an overloaded service's throughput is its capacity.
//!
//! Locally the runs of a round go one at a time (measurements never overlap). Under Slurm each
//! run is one job; a round's jobs are submitted together in the round's shuffled order (the
//! executor groups them into one job array) and the next round starts when all of them ended;
//! Slurm decides where and in which order a round's jobs run.

use std::time::{Duration, Instant};

use qualify_perf::Rounds;
use qualify_perf::stats::{Rng, summarize};
use qualify_plan as plan;
use qualify_probe::{Outcome, ProbeResult};
use qualify_spec::{ExpectRule, MIN_ROUNDS, Repeat, Spec};

use super::Context;
use super::cells::{CellRunner, Executor};

/// Run the later rounds over `execution`'s measured cells; `None` without `[performance]`.
/// `started` is when the region began (the budget counts from there).
pub fn run(
    ctx: &Context<'_>,
    runner: &CellRunner<'_>,
    executor: &Executor,
    execution: &mut plan::Execution,
    started: Instant,
) -> Option<Rounds> {
    let spec = ctx.spec;
    let p = spec.performance.as_ref()?;
    let seed = p.seed.unwrap_or_else(random_seed);
    let (min_rounds, max_rounds) = match p.repeat {
        Repeat::Fixed(n) => (n, n),
        Repeat::Auto => (MIN_ROUNDS, p.max_repeat),
    };
    let auto = p.repeat == Repeat::Auto;
    let judged = precision_metrics(spec);
    let slurm = matches!(executor, Executor::Slurm(_));
    // Cells measured in round 1 (ended ok, or served the load; a result without `runs` is its
    // own single run, as a Slurm job's is).
    let mut active: Vec<usize> = execution
        .cells
        .iter()
        .enumerate()
        .filter(|(_, c)| super::cells::measured(spec, c.result.outcome))
        .map(|(i, _)| i)
        .collect();
    let mut round: u64 = 1;
    let bar = super::region::progress_bar(ctx.args.json, active.len());
    let stopped = loop {
        if ctx.cancelled() {
            break format!("interrupted after {round} round(s)");
        }
        if active.is_empty() {
            break format!("no cell left to measure after {round} round(s)");
        }
        if auto && round >= min_rounds {
            active.retain(|&i| !precise(spec, &execution.cells[i].result, &judged, p.precision));
            if active.is_empty() {
                break format!(
                    "every cell reached the precision ({:.0}%) after {round} round(s)",
                    p.precision * 100.0
                );
            }
        }
        if round >= max_rounds {
            break if auto {
                format!(
                    "max_repeat reached ({max_rounds} rounds); {} cell(s) still imprecise",
                    active.len()
                )
            } else {
                format!("repeat = {max_rounds}: {round} round(s)")
            };
        }
        if let Some(budget) = p.budget.filter(|_| auto) {
            let next: f64 = active
                .iter()
                .map(|&i| execution.cells[i].result.wall_seconds)
                .sum();
            if started.elapsed() + Duration::from_secs_f64(next.max(0.0)) > budget {
                break format!(
                    "budget of {} reached after {round} round(s); {} cell(s) still imprecise",
                    humantime(budget),
                    active.len()
                );
            }
        }
        round += 1;
        let order = shuffled(&active, seed.wrapping_add(round));
        bar.set_length(order.len() as u64);
        bar.set_position(0);
        let results = probe_round(ctx, runner, execution, &order, slurm, round, &bar);
        for (i, result) in results {
            if result.outcome == Outcome::Interrupted {
                continue; // not a measurement: the run was stopping
            }
            let failed = !super::cells::measured(spec, result.outcome);
            append(&mut execution.cells[i].result, result);
            if failed {
                active.retain(|&k| k != i);
            }
        }
    };
    bar.finish_and_clear();
    ctx.say(&format!(
        "performance: {round} round(s), seed {seed}: {stopped}"
    ));
    Some(Rounds {
        seed,
        rounds: usize::try_from(round).unwrap_or(usize::MAX),
        precision: auto.then_some(p.precision),
        precision_metrics: if auto { judged } else { Vec::new() },
        max_repeat: auto.then(|| usize::try_from(p.max_repeat).unwrap_or(usize::MAX)),
        budget_seconds: p.budget.filter(|_| auto).map(|b| b.as_secs_f64()),
        stopped,
        wall_seconds: started.elapsed().as_secs_f64(),
        schedule: schedule(p.warmup, slurm),
        machine: None,
    })
}

/// The metrics whose precision `repeat = "auto"` seeks: those the spec's checks judge
/// (`expect`, `reference`), else `wall` and `cpu`.
pub fn precision_metrics(spec: &Spec) -> Vec<String> {
    let Some(p) = &spec.performance else {
        return Vec::new();
    };
    let mut names: Vec<String> = Vec::new();
    let judged = p
        .expects
        .iter()
        .filter(|e| {
            matches!(
                e.rule,
                ExpectRule::MaxExponent(_) | ExpectRule::MinEfficiency(_)
            )
        })
        .map(|e| e.metric.clone())
        .chain(p.references.iter().map(|r| r.metric.clone()));
    for m in judged {
        if !names.contains(&m) {
            names.push(m);
        }
    }
    if names.is_empty() {
        names = vec!["wall".to_string(), "cpu".to_string()];
    }
    names
}

/// Whether every judged metric of the cell is located within `precision` (a metric the cell did
/// not measure has nothing to be precise about).
fn precise(spec: &Spec, result: &ProbeResult, judged: &[String], precision: f64) -> bool {
    let Some(p) = &spec.performance else {
        return true;
    };
    let (samples, _) = super::cells::measure(spec, result);
    judged.iter().all(|metric| {
        samples.get(metric).is_none_or(|s| {
            summarize(s, p.estimator_of(metric))
                .precision
                .is_some_and(|x| x <= precision)
        })
    })
}

/// Probe one run of each cell of `order`: locally one after the other, under Slurm all at once
/// (one job each, submitted in this order). Results come back with their cell's index.
fn probe_round(
    ctx: &Context<'_>,
    runner: &CellRunner<'_>,
    execution: &plan::Execution,
    order: &[usize],
    slurm: bool,
    round: u64,
    bar: &indicatif::ProgressBar,
) -> Vec<(usize, ProbeResult)> {
    if slurm {
        bar.set_message(format!("round {round}: {} job(s) submitted", order.len()));
        return std::thread::scope(|s| {
            let handles: Vec<_> = order
                .iter()
                .map(|&i| {
                    let params = &execution.cells[i].params;
                    (i, s.spawn(move || runner.probe_once(params)))
                })
                .collect();
            handles
                .into_iter()
                .filter_map(|(i, h)| {
                    let r = h.join().ok()?;
                    bar.inc(1);
                    Some((i, r))
                })
                .collect()
        });
    }
    let mut out = Vec::with_capacity(order.len());
    for &i in order {
        if ctx.cancelled() {
            break;
        }
        let params = &execution.cells[i].params;
        bar.set_message(format!("round {round}: {params}"));
        out.push((i, runner.probe_once(params)));
        bar.inc(1);
    }
    out
}

/// Append a run to a cell's result and recombine it (outcome, flags, distinct outputs), keeping
/// the flags set on the cell as a whole (e.g. the local topology flag).
fn append(result: &mut ProbeResult, run: ProbeResult) {
    let mut runs = result.runs.take().unwrap_or_else(|| vec![result.clone()]);
    runs.push(run);
    let kept = result.flags.clone();
    if let Some(mut combined) = ProbeResult::combine(runs) {
        for f in kept {
            if !combined.flags.contains(&f) {
                combined.flags.push(f);
            }
        }
        combined.flags.sort_unstable();
        *result = combined;
    }
}

/// `cells` in a Fisher–Yates shuffle by a generator seeded with `seed`.
fn shuffled(cells: &[usize], seed: u64) -> Vec<usize> {
    let mut rng = Rng::new(seed);
    let mut order = cells.to_vec();
    for k in (1..order.len()).rev() {
        order.swap(k, rng.below(k + 1));
    }
    order
}

/// A seed nobody chose: the standard library's per-process random hasher keys.
fn random_seed() -> u64 {
    use std::hash::BuildHasher;
    std::collections::hash_map::RandomState::new().hash_one(std::process::id())
}

fn humantime(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s >= 60.0 && s % 60.0 == 0.0 {
        format!("{}m", s / 60.0)
    } else {
        format!("{s}s")
    }
}

/// How the rounds were executed, for the receipt.
fn schedule(warmup: u64, slurm: bool) -> String {
    let first = format!(
        "round 1: the plan's own order (sweeps, then boundary searches), each cell after {warmup} warmup run(s)"
    );
    if slurm {
        format!(
            "{first}; rounds 2 and later: one Slurm job per cell, submitted together in a fresh shuffle (seed + round) and grouped into one job array per round; a round starts when every job of the previous one ended; Slurm decides where and in which order a round's jobs run"
        )
    } else {
        format!(
            "{first}; rounds 2 and later: the cells still measured, one at a time on this machine, in a fresh shuffle (seed + round)"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_gives_one_order_and_rounds_differ() {
        let cells: Vec<usize> = (0..8).collect();
        assert_eq!(shuffled(&cells, 7), shuffled(&cells, 7));
        assert_ne!(shuffled(&cells, 7), shuffled(&cells, 8));
        let mut sorted = shuffled(&cells, 9);
        sorted.sort_unstable();
        assert_eq!(sorted, cells);
    }
}
