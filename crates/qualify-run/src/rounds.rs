//! `[performance]` rounds: after the plan executed (round 1, in the plan's own order, each cell
//! after its warmups), every measured cell is probed again once per round, each round in a fresh
//! shuffle of the cells (a generator seeded with `seed + round`), so a slow period of the
//! machine is spread over all cells instead of bending the curve. Each run is appended to its
//! cell's `runs` (run `i` is round `i + 1`, which `measure::measure` tags).
//!
//! How many rounds: `repeat = N` runs N rounds. `repeat = "auto"` runs at least
//! [`MIN_ROUNDS`], then more while a cell's estimate of a judged metric (the metrics the spec's
//! checks judge; `wall` and `cpu` without checks) is less precise than `precision` (the relative
//! 95% half-width of its estimator, computed by `qualify_perf::stats` exactly as the receipt
//! states it), up to `max_repeat` rounds and within `budget`; precise cells stop being probed.
//! A cell that did not end `ok` in round 1 is never repeated, and one that fails in a later
//! round stops there (its failure is in its runs, the cell's outcome says so). A service cell
//! that served its load but ended `slo_violated` or `overloaded` is a measurement too
//! ([`crate::measure::measured`]): an overloaded service's throughput is its capacity.
//!
//! Locally the runs of a round go one at a time (measurements never overlap). Under Slurm each
//! run is one job; a round's jobs are submitted together in the round's shuffled order (the
//! executor groups them into one job array) and the next round starts when all of them ended;
//! Slurm decides where and in which order a round's jobs run. The scheduler
//! ([`schedule_rounds`]) runs a cell only through [`Cells::again`] on the run's executor (its
//! [`Dispatch`] says which of the two), so its decisions are unit-tested on a scripted
//! executor.

use std::time::{Duration, Instant};

use qualify_perf::Rounds;
use qualify_perf::stats::{Rng, summarize};
use qualify_plan as plan;
use qualify_probe::{Outcome, ProbeResult};
use qualify_spec::{ExpectRule, MIN_ROUNDS, Repeat, Spec};

use crate::Context;
use crate::cells::Cells;
use crate::executor::Dispatch;
use crate::measure::{measure, measured};

/// Run the later rounds over `execution`'s measured cells; `None` without `[performance]`.
/// `started` is when the region began (the budget counts from there).
pub fn run(
    ctx: &Context<'_>,
    cells: &Cells<'_>,
    execution: &mut plan::Execution,
    started: Instant,
) -> Option<Rounds> {
    let rounds = schedule_rounds(ctx.spec, cells, &mut execution.cells, started, ctx.observer)?;
    ctx.say(&format!(
        "performance: {} round(s), seed {}: {}",
        rounds.rounds, rounds.seed, rounds.stopped
    ));
    Some(rounds)
}

/// The round scheduler: probe the measured cells of `executed` (round 1 is already in their
/// results) in further rounds through `cells` until the spec's `[performance]` repetition is
/// satisfied, the budget is spent, no cell is left, or the run is stopping (asked to, or a
/// cell could not start); append each run to its cell. `observer` shows the rounds'
/// progress. `None` without `[performance]`.
pub fn schedule_rounds(
    spec: &Spec,
    cells: &Cells<'_>,
    executed: &mut [plan::ExecutedCell],
    started: Instant,
    observer: &dyn crate::RunObserver,
) -> Option<Rounds> {
    let p = spec.performance.as_ref()?;
    let seed = p.seed.unwrap_or_else(random_seed);
    let (min_rounds, max_rounds) = match p.repeat {
        Repeat::Fixed(n) => (n, n),
        Repeat::Auto => (MIN_ROUNDS, p.max_repeat),
    };
    let auto = p.repeat == Repeat::Auto;
    let judged = precision_metrics(spec);
    let dispatch = cells.dispatch();
    // Cells measured in round 1 (ended ok, or served the load; a result without `runs` is its
    // own single run).
    let mut active: Vec<usize> = executed
        .iter()
        .enumerate()
        .filter(|(_, c)| measured(spec, c.result.outcome))
        .map(|(i, _)| i)
        .collect();
    let mut round: u64 = 1;
    let bar = observer.progress(active.len());
    let stopped = loop {
        if cells.cancelled() {
            break format!("interrupted after {round} round(s)");
        }
        if active.is_empty() {
            break format!("no cell left to measure after {round} round(s)");
        }
        if auto && round >= min_rounds {
            active.retain(|&i| !precise(spec, &executed[i].result, &judged, p.precision));
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
                .map(|&i| executed[i].result.wall_seconds)
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
        bar.set_total(order.len());
        bar.set_position(0);
        let results = probe_round(cells, executed, &order, round, bar.as_ref());
        for (i, result) in results {
            if result.outcome == Outcome::Interrupted {
                continue; // not a measurement: the run was stopping
            }
            let failed = !measured(spec, result.outcome);
            append(&mut executed[i].result, result);
            if failed {
                active.retain(|&k| k != i);
            }
        }
    };
    bar.finish();
    Some(Rounds {
        seed,
        rounds: usize::try_from(round).unwrap_or(usize::MAX),
        precision: auto.then_some(p.precision),
        precision_metrics: if auto { judged } else { Vec::new() },
        max_repeat: auto.then(|| usize::try_from(p.max_repeat).unwrap_or(usize::MAX)),
        budget_seconds: p.budget.filter(|_| auto).map(|b| b.as_secs_f64()),
        stopped,
        wall_seconds: started.elapsed().as_secs_f64(),
        schedule: schedule(p.warmup, cells.warmups(), spec.service.is_some(), dispatch),
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
    let (samples, _) = measure(spec, result);
    judged.iter().all(|metric| {
        samples.get(metric).is_none_or(|s| {
            summarize(s, p.estimator_of(metric))
                .precision
                .is_some_and(|x| x <= precision)
        })
    })
}

/// Probe one run of each cell of `order` (indices into `executed`): dispatched
/// [`Dispatch::Here`] one after the other (stopping before the next run once the run is
/// stopping), [`Dispatch::Batch`] all at once (one job each, submitted in this order). Results
/// come back with their cell's index.
fn probe_round(
    cells: &Cells<'_>,
    executed: &[plan::ExecutedCell],
    order: &[usize],
    round: u64,
    bar: &dyn crate::Progress,
) -> Vec<(usize, ProbeResult)> {
    match cells.dispatch() {
        Dispatch::Batch => {
            bar.set_message(format!("round {round}: {} job(s) submitted", order.len()));
            std::thread::scope(|s| {
                let handles: Vec<_> = order
                    .iter()
                    .map(|&i| {
                        let params = &executed[i].params;
                        (i, s.spawn(move || cells.again(params)))
                    })
                    .collect();
                handles
                    .into_iter()
                    .filter_map(|(i, h)| {
                        let r = h.join().ok()?;
                        bar.inc();
                        Some((i, r))
                    })
                    .collect()
            })
        }
        Dispatch::Here => {
            let mut out = Vec::with_capacity(order.len());
            for &i in order {
                if cells.cancelled() {
                    break;
                }
                let params = &executed[i].params;
                bar.set_message(format!("round {round}: {params}"));
                out.push((i, cells.again(params)));
                bar.inc();
            }
            out
        }
    }
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
/// `declared` is `[performance] warmup`, `applied` what the cells really ran (none for a
/// service cell, which warms up inside each run, nor for a Slurm job): the receipt states the
/// runs that happened.
fn schedule(declared: u64, applied: u64, service: bool, dispatch: Dispatch) -> String {
    let warmup = if service {
        "each service cell warmed up inside its own run ([load] warmup), no warmup run".to_string()
    } else if applied == declared {
        format!("each cell after {applied} warmup run(s)")
    } else {
        format!(
            "each cell after {applied} warmup run(s) ([performance] warmup = {declared} applies to cells on this machine only: a Slurm job may land on any node)"
        )
    };
    let first = format!("round 1: the plan's own order (sweeps, then boundary searches), {warmup}");
    match dispatch {
        Dispatch::Batch => format!(
            "{first}; rounds 2 and later: one Slurm job per cell, submitted together in a fresh shuffle (seed + round) and grouped into one job array per round; a round starts when every job of the previous one ended; Slurm decides where and in which order a round's jobs run"
        ),
        Dispatch::Here => format!(
            "{first}; rounds 2 and later: the cells still measured, one at a time on this machine, in a fresh shuffle (seed + round)"
        ),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    use qualify_plan::{CellRole, ExecutedCell, Params, Value};
    use qualify_probe::BackendChoice;
    use qualify_service::Controls;

    use super::*;
    use crate::executor::scripted::{Scripted, run};

    /// The cell's `n`.
    fn n(params: &Params) -> i64 {
        match params.get("n") {
            Some(Value::Int(n)) => *n,
            other => panic!("a cell without an integer n: {other:?}"),
        }
    }

    /// The `n` of every cell the executor was asked to run, in order (each call one run).
    fn calls(executor: &Scripted) -> Vec<i64> {
        executor
            .calls()
            .into_iter()
            .map(|(params, runs)| {
                assert_eq!(runs, 1, "a later round asks for one run");
                n(&params)
            })
            .collect()
    }

    /// Every run of every cell: ok, 1 s.
    fn steady(_: &Params, _: usize) -> ProbeResult {
        run(Outcome::Ok, 1.0)
    }

    /// Cells `n = 1..=4` as round 1 left them: one measured run each (`outcome` for cell
    /// `n = 1`, ok for the others).
    fn round_one(first: Outcome, wall: f64) -> Vec<ExecutedCell> {
        (1..=4)
            .map(|n| {
                let outcome = if n == 1 { first } else { Outcome::Ok };
                let mut result = run(outcome, wall);
                result.runs = Some(vec![result.clone()]);
                ExecutedCell {
                    index: usize::try_from(n - 1).unwrap_or(0),
                    params: [("n", Value::Int(n))].into_iter().collect(),
                    role: CellRole::Sweep,
                    result,
                }
            })
            .collect()
    }

    fn spec(performance: &str) -> Spec {
        let text = format!(
            "[artifact]\nname = \"a\"\ncommand = \"./a {{n}}\"\n\n[claim]\nlevel = \"trial\"\n\n[[axis]]\nname = \"n\"\nkind = \"workload\"\nvalues = [1, 2, 3, 4]\n\n[performance]\n{performance}"
        );
        Spec::parse(&text, "dir/qualify.toml")
            .unwrap_or_else(|e| panic!("test spec does not parse: {e}"))
    }

    /// The cells' `n` in the order `shuffled` gives round `round` (seed + round).
    fn order(active: &[usize], seed: u64, round: u64) -> Vec<i64> {
        shuffled(active, seed.wrapping_add(round))
            .into_iter()
            .map(|i| i64::try_from(i).unwrap_or(0) + 1)
            .collect()
    }

    fn runs_per_cell(cells: &[ExecutedCell]) -> Vec<usize> {
        cells
            .iter()
            .map(|c| c.result.runs.as_ref().map_or(1, Vec::len))
            .collect()
    }

    /// The later rounds of `executed` on `executor`, as a run schedules them.
    fn rounds_of(
        spec: &Spec,
        executor: &Scripted,
        cancel: &Arc<AtomicBool>,
        executed: &mut [ExecutedCell],
    ) -> Option<Rounds> {
        let controls = Controls::new();
        let cells = Cells::new(spec, BackendChoice::Auto, 1, cancel, executor, &controls);
        schedule_rounds(spec, &cells, executed, Instant::now(), &crate::Silent)
    }

    fn schedule_of(
        spec: &Spec,
        executor: &Scripted,
        cancel: &Arc<AtomicBool>,
        executed: &mut [ExecutedCell],
    ) -> Rounds {
        rounds_of(spec, executor, cancel, executed)
            .unwrap_or_else(|| panic!("a spec with [performance] schedules rounds"))
    }

    #[test]
    fn a_seed_gives_one_order_and_rounds_differ() {
        let cells: Vec<usize> = (0..8).collect();
        assert_eq!(shuffled(&cells, 7), shuffled(&cells, 7));
        assert_ne!(shuffled(&cells, 7), shuffled(&cells, 8));
        let mut sorted = shuffled(&cells, 9);
        sorted.sort_unstable();
        assert_eq!(sorted, cells);
    }

    #[test]
    fn here_a_fixed_repeat_runs_each_later_round_one_at_a_time_in_its_seeded_shuffle() {
        let spec = spec("repeat = 3\nseed = 7\nwarmup = 2\n");
        let executor = Scripted::new(Dispatch::Here, steady);
        let cancel = Arc::new(AtomicBool::new(false));
        let mut cells = round_one(Outcome::Ok, 1.0);
        let rounds = schedule_of(&spec, &executor, &cancel, &mut cells);

        let all = [0, 1, 2, 3];
        let expected: Vec<i64> = [order(&all, 7, 2), order(&all, 7, 3)].concat();
        assert_eq!(
            calls(&executor),
            expected,
            "rounds 2 and 3, each in its shuffle"
        );
        assert_eq!(runs_per_cell(&cells), vec![3; 4]);
        assert_eq!((rounds.seed, rounds.rounds), (7, 3));
        assert_eq!(rounds.stopped, "repeat = 3: 3 round(s)");
        assert_eq!(rounds.precision, None, "a fixed repeat seeks no precision");
        assert_eq!(
            rounds.schedule,
            "round 1: the plan's own order (sweeps, then boundary searches), each cell after 2 warmup run(s); rounds 2 and later: the cells still measured, one at a time on this machine, in a fresh shuffle (seed + round)"
        );
    }

    #[test]
    fn batch_submits_every_cell_of_a_round_and_the_schedule_says_slurm_groups_them() {
        let spec = spec("repeat = 3\nseed = 7\nwarmup = 0\n");
        let executor = Scripted::new(Dispatch::Batch, steady);
        let cancel = Arc::new(AtomicBool::new(false));
        let mut cells = round_one(Outcome::Ok, 1.0);
        let rounds = schedule_of(&spec, &executor, &cancel, &mut cells);

        // Slurm decides the order a round's jobs run in; each round holds every cell once.
        let calls = calls(&executor);
        for round in calls.chunks(4) {
            let mut cells_of_round = round.to_vec();
            cells_of_round.sort_unstable();
            assert_eq!(cells_of_round, vec![1, 2, 3, 4], "{calls:?}");
        }
        assert_eq!(calls.len(), 8);
        assert_eq!(runs_per_cell(&cells), vec![3; 4]);
        assert_eq!(rounds.stopped, "repeat = 3: 3 round(s)");
        assert_eq!(
            rounds.schedule,
            "round 1: the plan's own order (sweeps, then boundary searches), each cell after 0 warmup run(s); rounds 2 and later: one Slurm job per cell, submitted together in a fresh shuffle (seed + round) and grouped into one job array per round; a round starts when every job of the previous one ended; Slurm decides where and in which order a round's jobs run"
        );
    }

    #[test]
    fn on_slurm_the_schedule_states_the_warmups_that_ran_not_the_declared_ones() {
        let spec = spec("repeat = 2\nseed = 7\nwarmup = 2\n");
        let executor = Scripted::new(Dispatch::Batch, steady);
        let cancel = Arc::new(AtomicBool::new(false));
        let mut cells = round_one(Outcome::Ok, 1.0);
        let rounds = schedule_of(&spec, &executor, &cancel, &mut cells);
        assert!(
            rounds.schedule.contains(
                "each cell after 0 warmup run(s) ([performance] warmup = 2 applies to cells on this machine only"
            ),
            "{}",
            rounds.schedule
        );
    }

    #[test]
    fn here_a_setup_failure_stops_the_round_before_its_next_run_and_is_no_measurement() {
        let spec = spec("repeat = 5\nseed = 11\n");
        let cancel = Arc::new(AtomicBool::new(false));
        let mut executor = Scripted::new(Dispatch::Here, steady);
        executor.fail_at = Some(2);
        let mut cells = round_one(Outcome::Ok, 1.0);
        let rounds = schedule_of(&spec, &executor, &cancel, &mut cells);

        let round_two = order(&[0, 1, 2, 3], 11, 2);
        assert_eq!(calls(&executor), round_two[..2].to_vec());
        assert_eq!(rounds.stopped, "interrupted after 2 round(s)");
        assert_eq!(rounds.rounds, 2);
        let mut expected = vec![1; 4];
        // The first run of round 2 counted; the interrupted second one did not.
        expected[usize::try_from(round_two[0] - 1).unwrap_or(0)] = 2;
        assert_eq!(runs_per_cell(&cells), expected);
        assert!(cells.iter().all(|c| c.result.outcome == Outcome::Ok));
        assert!(
            cancel.load(Ordering::SeqCst),
            "the cell that could not start stopped the run"
        );
    }

    #[test]
    fn batch_a_round_already_submitted_ends_before_the_stop_is_seen() {
        let spec = spec("repeat = 5\nseed = 11\n");
        let cancel = Arc::new(AtomicBool::new(false));
        let mut executor = Scripted::new(Dispatch::Batch, steady);
        executor.fail_at = Some(1);
        let mut cells = round_one(Outcome::Ok, 1.0);
        let rounds = schedule_of(&spec, &executor, &cancel, &mut cells);

        assert_eq!(calls(&executor).len(), 4, "the whole round was submitted");
        assert_eq!(rounds.stopped, "interrupted after 2 round(s)");
        let mut runs = runs_per_cell(&cells);
        runs.sort_unstable();
        assert_eq!(
            runs,
            vec![1, 2, 2, 2],
            "three runs counted, the interrupted one not"
        );
    }

    #[test]
    fn a_stop_before_round_two_probes_nothing() {
        let spec = spec("repeat = 5\n");
        let executor = Scripted::new(Dispatch::Here, steady);
        let cancel = Arc::new(AtomicBool::new(true));
        let mut cells = round_one(Outcome::Ok, 1.0);
        let rounds = schedule_of(&spec, &executor, &cancel, &mut cells);
        assert!(calls(&executor).is_empty());
        assert_eq!(rounds.stopped, "interrupted after 1 round(s)");
        assert_eq!(runs_per_cell(&cells), vec![1; 4]);
    }

    #[test]
    fn a_cell_failed_in_round_one_is_never_repeated_and_one_failing_later_stops_there() {
        let spec = spec("repeat = 4\nseed = 3\n");
        // Cell n = 2 crashes in its first later run.
        let executor = Scripted::new(Dispatch::Here, |params, before| {
            let n = n(params);
            if n == 2 && before == 0 {
                run(Outcome::Crash, 1.0)
            } else {
                run(Outcome::Ok, 1.0)
            }
        });
        let cancel = Arc::new(AtomicBool::new(false));
        let mut cells = round_one(Outcome::Crash, 1.0);
        let rounds = schedule_of(&spec, &executor, &cancel, &mut cells);

        let calls = calls(&executor);
        let count = |n: i64| calls.iter().filter(|&&c| c == n).count();
        assert_eq!([count(1), count(2), count(3), count(4)], [0, 1, 3, 3]);
        assert_eq!(
            calls,
            [
                order(&[1, 2, 3], 3, 2),
                order(&[2, 3], 3, 3),
                order(&[2, 3], 3, 4)
            ]
            .concat(),
            "later rounds shuffle only the cells still measured"
        );
        assert_eq!(runs_per_cell(&cells), vec![1, 2, 4, 4]);
        assert_eq!(
            cells[1].result.outcome,
            Outcome::Crash,
            "its failure is in its runs"
        );
        assert_eq!(rounds.stopped, "repeat = 4: 4 round(s)");
    }

    #[test]
    fn with_every_cell_failed_in_round_one_no_round_runs() {
        let spec = spec("repeat = 4\n");
        let executor = Scripted::new(Dispatch::Here, steady);
        let cancel = Arc::new(AtomicBool::new(false));
        let mut cells = round_one(Outcome::Ok, 1.0);
        for c in &mut cells {
            c.result.outcome = Outcome::Timeout;
        }
        let rounds = schedule_of(&spec, &executor, &cancel, &mut cells);
        assert!(calls(&executor).is_empty());
        assert_eq!(rounds.stopped, "no cell left to measure after 1 round(s)");
    }

    #[test]
    fn auto_stops_once_every_cell_is_precise_after_the_minimum_rounds() {
        let spec = spec("seed = 5\n");
        let executor = Scripted::new(Dispatch::Here, steady);
        let cancel = Arc::new(AtomicBool::new(false));
        let mut cells = round_one(Outcome::Ok, 1.0);
        let rounds = schedule_of(&spec, &executor, &cancel, &mut cells);

        let min = usize::try_from(MIN_ROUNDS).unwrap_or(0);
        assert_eq!(calls(&executor).len(), 4 * (min - 1));
        assert_eq!(runs_per_cell(&cells), vec![min; 4]);
        assert_eq!(
            rounds.stopped,
            format!("every cell reached the precision (5%) after {min} round(s)")
        );
        assert_eq!(rounds.precision, Some(0.05));
        assert_eq!(rounds.precision_metrics, vec!["wall", "cpu"]);
        assert_eq!(rounds.max_repeat, Some(20));
    }

    #[test]
    fn auto_keeps_an_imprecise_cell_alone_until_max_repeat() {
        let spec = spec("seed = 5\nmax_repeat = 8\n");
        // Cell n = 1 swings between 1 s and 3 s; the others are steady.
        let executor = Scripted::new(Dispatch::Here, |params, before| {
            let n = n(params);
            let wall = if n == 1 && before % 2 == 0 { 3.0 } else { 1.0 };
            run(Outcome::Ok, wall)
        });
        let cancel = Arc::new(AtomicBool::new(false));
        let mut cells = round_one(Outcome::Ok, 1.0);
        let rounds = schedule_of(&spec, &executor, &cancel, &mut cells);

        let calls = calls(&executor);
        let min = usize::try_from(MIN_ROUNDS).unwrap_or(0);
        assert_eq!(calls.len(), 4 * (min - 1) + (8 - min), "{calls:?}");
        assert_eq!(calls[4 * (min - 1)..], [1, 1, 1]);
        assert_eq!(runs_per_cell(&cells), vec![8, min, min, min]);
        assert_eq!(
            rounds.stopped,
            "max_repeat reached (8 rounds); 1 cell(s) still imprecise"
        );
    }

    #[test]
    fn auto_starts_no_round_that_would_overrun_the_budget() {
        let spec = spec("budget = \"1m\"\n");
        let executor = Scripted::new(Dispatch::Here, steady);
        let cancel = Arc::new(AtomicBool::new(false));
        // Four cells of 20 s each: the next round would take 80 s.
        let mut cells = round_one(Outcome::Ok, 20.0);
        let rounds = schedule_of(&spec, &executor, &cancel, &mut cells);
        assert!(calls(&executor).is_empty());
        assert_eq!(
            rounds.stopped,
            "budget of 1m reached after 1 round(s); 4 cell(s) still imprecise"
        );
        assert_eq!(rounds.budget_seconds, Some(60.0));
    }

    #[test]
    fn without_performance_there_are_no_rounds() {
        let spec = Spec::parse(
            "[artifact]\nname = \"a\"\ncommand = \"./a\"\n\n[claim]\nlevel = \"trial\"\n",
            "dir/qualify.toml",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let executor = Scripted::new(Dispatch::Here, steady);
        let cancel = Arc::new(AtomicBool::new(false));
        let mut cells = round_one(Outcome::Ok, 1.0);
        let rounds = rounds_of(&spec, &executor, &cancel, &mut cells);
        assert!(rounds.is_none());
        assert!(calls(&executor).is_empty());
    }
}
