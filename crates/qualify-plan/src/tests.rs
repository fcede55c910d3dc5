//! Executor tests with fake runners: closures over params that count their calls.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use qualify_model::{Enforcement, Limits, Outcome, ProbeResult, Strength};

use crate::*;

fn result(outcome: Outcome) -> ProbeResult {
    ProbeResult {
        outcome,
        exit_code: (outcome == Outcome::Ok).then_some(0),
        signal: None,
        timeout_kind: None,
        detail: outcome.to_string(),
        flags: Vec::new(),
        wall_seconds: 0.0,
        user_seconds: 0.0,
        system_seconds: 0.0,
        peak_memory_bytes: None,
        enforcement: Enforcement {
            backend: "fake".into(),
            memory: Strength::None,
            cpus: Strength::None,
            pids: Strength::None,
            disk: Strength::None,
            tree: "none".into(),
            on_qualify_death: String::new(),
            sandbox: None,
            notes: Vec::new(),
        },
        limits: Limits::default(),
        evidence: serde_json::Value::Null,
        stdout_tail: String::new(),
        stderr_tail: String::new(),
        stdout_bytes: 0,
        stderr_bytes: 0,
        stdout_sha256: String::new(),
        runs: None,
        distinct_outputs: None,
        load: None,
        faults: Vec::new(),
        perturb: None,
        children: None,
    }
}

fn ints(values: &[i64]) -> Domain {
    Domain::Values(values.iter().map(|&v| Value::Int(v)).collect())
}

fn int(params: &Params, axis: &str) -> i64 {
    params.get(axis).and_then(Value::as_i64).unwrap()
}

/// A runner that passes below `threshold` on axis `axis` and records every call.
struct Threshold {
    axis: &'static str,
    threshold: i64,
    failure: Outcome,
    calls: Mutex<Vec<Params>>,
}

impl Threshold {
    fn new(axis: &'static str, threshold: i64) -> Self {
        Threshold {
            axis,
            threshold,
            failure: Outcome::Deadlock,
            calls: Mutex::new(Vec::new()),
        }
    }
    fn calls(&self) -> usize {
        self.calls.lock().unwrap().len()
    }

    fn run(&self, params: &Params) -> CellResult {
        self.calls.lock().unwrap().push(params.clone());
        if int(params, self.axis) < self.threshold {
            result(Outcome::Ok)
        } else {
            result(self.failure)
        }
    }
}

fn range_plan(lo: i64, hi: i64) -> Plan {
    Plan::new(vec![
        Axis::new("n", AxisKind::Workload, Domain::Range { lo, hi }).boundary(),
    ])
    .unwrap()
}

#[test]
fn sweep_runs_every_cell_of_the_product_in_order() {
    let plan = Plan::new(vec![
        Axis::new("threads", AxisKind::Concurrency, ints(&[1, 2, 4])),
        Axis::new("n", AxisKind::Workload, Domain::Range { lo: 1, hi: 3 }),
    ])
    .unwrap();
    let calls = AtomicUsize::new(0);
    let runner = |p: &Params| {
        calls.fetch_add(1, Ordering::SeqCst);
        result(if int(p, "threads") * int(p, "n") > 8 {
            Outcome::Crash
        } else {
            Outcome::Ok
        })
    };
    let execution = plan.execute(&runner, &ExecuteOptions::new());
    assert_eq!(calls.load(Ordering::SeqCst), 9);
    assert!(execution.complete && !execution.cancelled);
    let shown: Vec<String> = execution
        .cells
        .iter()
        .map(|c| c.params.to_string())
        .collect();
    assert_eq!(shown[0], "threads=1 n=1");
    assert_eq!(shown[8], "threads=4 n=3");
    assert!(execution.cells.iter().all(|c| c.role == CellRole::Sweep));
    assert!(execution.boundaries.is_empty());
    assert!(!execution.all_passed());
    assert_eq!(execution.cells[8].result.outcome, Outcome::Crash);
}

#[test]
fn boundary_is_exact_for_every_threshold_in_a_thousand() {
    let plan = range_plan(1, 1000);
    for threshold in 1..=1001 {
        let runner = Threshold::new("n", threshold);
        let execution = plan.execute(&|p: &Params| runner.run(p), &ExecuteOptions::new());
        let b = &execution.boundaries[0];
        assert!(b.complete && execution.complete);
        assert_eq!(
            b.last_pass,
            (threshold > 1).then(|| Value::Int(threshold - 1))
        );
        assert_eq!(
            b.first_fail,
            (threshold <= 1000).then_some(Value::Int(threshold))
        );
        assert_eq!(b.outcome, (threshold <= 1000).then_some(Outcome::Deadlock));
        assert!(b.probes <= 14, "threshold {threshold}: {} probes", b.probes);
        assert_eq!(runner.calls(), b.probes, "every probe ran exactly once");
        assert_eq!(b.monotonic, Some(true), "threshold {threshold}");
        assert!(execution.cells.iter().all(|c| c.role.is_boundary_probe()));
        let checks = execution
            .cells
            .iter()
            .filter(|c| matches!(c.role, CellRole::Check { boundary: 0 }))
            .count();
        assert_eq!(checks, 1);
    }
}

#[test]
fn boundary_is_exact_in_an_explicit_value_list() {
    let values = [1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128];
    let plan = Plan::new(vec![
        Axis::new("threads", AxisKind::Concurrency, ints(&values)).boundary(),
    ])
    .unwrap();
    for (i, &threshold) in values.iter().enumerate() {
        let runner = Threshold::new("threads", threshold);
        let b = plan
            .execute(&|p: &Params| runner.run(p), &ExecuteOptions::new())
            .boundaries[0]
            .clone();
        assert_eq!(b.first_fail, Some(Value::Int(threshold)));
        assert_eq!(b.last_pass, i.checked_sub(1).map(|j| Value::Int(values[j])));
        // ⌈log2(12)⌉ + 3 search probes + the check
        assert!(b.probes <= 8, "{threshold}: {}", b.probes);
        assert!(runner.calls() <= values.len());
    }
    let runner = Threshold::new("threads", 1000);
    let b = plan
        .execute(&|p: &Params| runner.run(p), &ExecuteOptions::new())
        .boundaries[0]
        .clone();
    assert_eq!((b.last_pass, b.first_fail), (Some(Value::Int(128)), None));
}

#[test]
fn boundary_per_combination_of_the_other_axes() {
    let plan = Plan::new(vec![
        Axis::new("threads", AxisKind::Concurrency, ints(&[1, 2, 4, 8])),
        Axis::new(
            "n",
            AxisKind::Workload,
            Domain::Range { lo: 256, hi: 65536 },
        )
        .boundary(),
    ])
    .unwrap();
    // memory-like boundary: n · threads must stay below 40000
    let runner = |p: &Params| {
        result(if int(p, "n") * int(p, "threads") < 40_000 {
            Outcome::Ok
        } else {
            Outcome::OomKilled
        })
    };
    let execution = plan.execute(&runner, &ExecuteOptions::new().jobs(2).cores(2));
    assert_eq!(execution.boundaries.len(), 4);
    for b in &execution.boundaries {
        let t = int(&b.fixed, "threads");
        let first_fail = (40_000 + t - 1) / t;
        assert_eq!(b.first_fail, Some(Value::Int(first_fail)), "threads={t}");
        assert_eq!(b.last_pass, Some(Value::Int(first_fail - 1)));
        assert_eq!(b.outcome, Some(Outcome::OomKilled));
        assert!(b.probes <= 16 + 3 + 1);
        assert_eq!(b.monotonic, Some(true));
        // the cells it lists are its own, with the right params
        for &i in &b.cells {
            assert_eq!(
                execution.cells[i].params.get("threads"),
                b.fixed.get("threads")
            );
        }
    }
}

#[test]
fn a_pass_above_the_boundary_is_reported_as_non_monotonic() {
    let plan = range_plan(1, 1000);
    // failure band: fails only at 301..=551
    let runner = |p: &Params| {
        result(if (301..=551).contains(&int(p, "n")) {
            Outcome::Timeout
        } else {
            Outcome::Ok
        })
    };
    let b = plan.execute(&runner, &ExecuteOptions::new()).boundaries[0].clone();
    assert_eq!(b.first_fail, Some(Value::Int(301)));
    assert_eq!(b.last_pass, Some(Value::Int(300)));
    assert_eq!(b.outcome, Some(Outcome::Timeout));
    assert_eq!(b.monotonic, Some(false));
    let check = b.monotonic_check.unwrap();
    assert_eq!(check.outcome, Outcome::Ok);
    assert_eq!(check.expected, Expectation::Fail);
    assert!(check.value.as_i64().unwrap() > 551);
}

#[test]
fn all_pass_and_all_fail() {
    let plan = range_plan(1, 1000);
    let pass = |_: &Params| result(Outcome::Ok);
    let b = plan.execute(&pass, &ExecuteOptions::new()).boundaries[0].clone();
    assert_eq!(
        (b.last_pass, b.first_fail, b.outcome),
        (Some(Value::Int(1000)), None, None)
    );
    assert_eq!(b.monotonic, Some(true));
    assert!(b.probes <= 14);

    let fail = |_: &Params| result(Outcome::ExitFailure);
    let execution = plan.execute(&fail, &ExecuteOptions::new());
    let b = &execution.boundaries[0];
    assert_eq!(b.last_pass, None);
    assert_eq!(b.first_fail, Some(Value::Int(1)));
    assert_eq!(b.outcome, Some(Outcome::ExitFailure));
    assert_eq!(b.probes, 2, "the lowest point and the check");
    assert_eq!(b.monotonic, Some(true));
    assert!(execution.complete);
}

#[test]
fn no_params_are_probed_twice() {
    // two boundary axes share cells: threads is searched for each n sweep point and n for each
    // threads value; the memo must serve the overlap.
    let plan = Plan::new(vec![
        Axis::new("threads", AxisKind::Concurrency, ints(&[1, 2, 4, 8, 16])).boundary(),
        Axis::new("n", AxisKind::Workload, Domain::Range { lo: 1, hi: 8 }).boundary(),
    ])
    .unwrap();
    let seen = Mutex::new(HashMap::<Params, usize>::new());
    let runner = |p: &Params| {
        *seen.lock().unwrap().entry(p.clone()).or_default() += 1;
        result(if int(p, "threads") * int(p, "n") <= 16 {
            Outcome::Ok
        } else {
            Outcome::Deadlock
        })
    };
    for jobs in [1, 3] {
        seen.lock().unwrap().clear();
        let execution = plan.execute(&runner, &ExecuteOptions::new().jobs(jobs).cores(8));
        let seen = seen.lock().unwrap();
        assert!(seen.values().all(|&n| n == 1), "jobs={jobs}: {seen:?}");
        assert_eq!(seen.len(), execution.cells.len());
        let consulted: usize = execution.boundaries.iter().map(|b| b.probes).sum();
        assert!(consulted > execution.cells.len(), "memo hits were expected");
        for b in &execution.boundaries {
            assert!(b.complete);
            let fixed = if b.axis == "n" { "threads" } else { "n" };
            let other = int(&b.fixed, fixed);
            let expected = 16 / other + 1; // first failing product partner
            match b.axis.as_str() {
                "n" => assert_eq!(
                    b.first_fail.as_ref().and_then(Value::as_i64),
                    (expected <= 8).then_some(expected)
                ),
                _ => {
                    let first = [1, 2, 4, 8, 16].into_iter().find(|t| t * other > 16);
                    assert_eq!(b.first_fail.as_ref().and_then(Value::as_i64), first);
                }
            }
            assert_eq!(b.cells.len(), b.probes);
        }
    }
}

/// Runner that tracks the CPU demand running at once.
struct Tracker {
    running: AtomicUsize,
    peak: AtomicUsize,
    concurrent: AtomicUsize,
    peak_concurrent: AtomicUsize,
    oversized_not_alone: AtomicBool,
    cores: usize,
}

impl Tracker {
    fn run(&self, p: &Params) -> CellResult {
        let demand = int(p, "threads") as usize;
        let now = self.running.fetch_add(demand, Ordering::SeqCst) + demand;
        self.peak.fetch_max(now, Ordering::SeqCst);
        let together = self.concurrent.fetch_add(1, Ordering::SeqCst) + 1;
        self.peak_concurrent.fetch_max(together, Ordering::SeqCst);
        std::thread::sleep(Duration::from_millis(15));
        if demand > self.cores && self.concurrent.load(Ordering::SeqCst) > 1 {
            self.oversized_not_alone.store(true, Ordering::SeqCst);
        }
        self.concurrent.fetch_sub(1, Ordering::SeqCst);
        self.running.fetch_sub(demand, Ordering::SeqCst);
        result(if demand <= 4 {
            Outcome::Ok
        } else {
            Outcome::Crash
        })
    }
}

#[test]
fn parallel_cells_never_exceed_the_core_budget() {
    let plan = Plan::new(vec![
        Axis::new("threads", AxisKind::Concurrency, ints(&[1, 2, 3, 6])),
        Axis::new("rep", AxisKind::Custom, Domain::Range { lo: 1, hi: 4 }),
    ])
    .unwrap();
    let tracker = Tracker {
        running: AtomicUsize::new(0),
        peak: AtomicUsize::new(0),
        concurrent: AtomicUsize::new(0),
        peak_concurrent: AtomicUsize::new(0),
        oversized_not_alone: AtomicBool::new(false),
        cores: 4,
    };
    let opts = ExecuteOptions::new()
        .jobs(8)
        .cores(4)
        .demand(axis_demand("threads"));
    let execution = plan.execute(&|p: &Params| tracker.run(p), &opts);
    assert_eq!(execution.cells.len(), 16);
    assert!(execution.complete);
    // the 6-thread cells exceed the 4 cores: they ran alone; everything else fit in 4 cores
    assert!(!tracker.oversized_not_alone.load(Ordering::SeqCst));
    assert!(
        tracker.peak_concurrent.load(Ordering::SeqCst) >= 2,
        "cells ran side by side"
    );
    let peak = tracker.peak.load(Ordering::SeqCst);
    assert!(peak == 6 || peak <= 4, "peak demand {peak}");

    // without the oversized cells the peak stays within the cores
    let plan = Plan::new(vec![
        Axis::new("threads", AxisKind::Concurrency, ints(&[1, 2, 3, 4])),
        Axis::new("rep", AxisKind::Custom, Domain::Range { lo: 1, hi: 4 }),
    ])
    .unwrap();
    tracker.peak.store(0, Ordering::SeqCst);
    plan.execute(&|p: &Params| tracker.run(p), &opts);
    assert!(tracker.peak.load(Ordering::SeqCst) <= 4);
}

#[test]
fn jobs_one_runs_one_cell_at_a_time_and_searches_in_plan_order() {
    let plan = Plan::new(vec![
        Axis::new("threads", AxisKind::Concurrency, ints(&[1, 2])),
        Axis::new("n", AxisKind::Workload, Domain::Range { lo: 1, hi: 100 }).boundary(),
    ])
    .unwrap();
    let running = AtomicUsize::new(0);
    let peak = AtomicUsize::new(0);
    let runner = |p: &Params| {
        let now = running.fetch_add(1, Ordering::SeqCst) + 1;
        peak.fetch_max(now, Ordering::SeqCst);
        std::thread::sleep(Duration::from_millis(1));
        running.fetch_sub(1, Ordering::SeqCst);
        result(if int(p, "n") < 30 {
            Outcome::Ok
        } else {
            Outcome::Timeout
        })
    };
    let execution = plan.execute(&runner, &ExecuteOptions::new());
    assert_eq!(peak.load(Ordering::SeqCst), 1);
    let order: Vec<usize> = execution
        .cells
        .iter()
        .map(|c| match c.role {
            CellRole::Search { boundary }
            | CellRole::Check { boundary }
            | CellRole::Repeat { boundary } => boundary,
            CellRole::Sweep => usize::MAX,
        })
        .collect();
    let switch = order.iter().position(|&b| b == 1).unwrap();
    assert!(order[..switch].iter().all(|&b| b == 0));
    assert!(order[switch..].iter().all(|&b| b == 1));
}

#[test]
fn cancellation_stops_issuing_and_marks_incomplete() {
    let plan = range_plan(1, 1000);
    let token = Arc::new(AtomicBool::new(false));
    let calls = AtomicUsize::new(0);
    let runner = |p: &Params| {
        if calls.fetch_add(1, Ordering::SeqCst) + 1 == 3 {
            token.store(true, Ordering::SeqCst);
        }
        result(if int(p, "n") < 500 {
            Outcome::Ok
        } else {
            Outcome::Deadlock
        })
    };
    let execution = plan.execute(&runner, &ExecuteOptions::new().cancel(token.clone()));
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    assert_eq!(execution.cells.len(), 3);
    assert!(execution.cancelled && !execution.complete);
    let b = &execution.boundaries[0];
    assert!(!b.complete);
    assert_eq!(b.monotonic, None);
    assert_eq!(b.probes, 3);

    // cancelled before anything started: nothing runs
    let execution = plan.execute(&runner, &ExecuteOptions::new().cancel(token.clone()));
    assert!(execution.cells.is_empty() && execution.cancelled);
    assert_eq!(calls.load(Ordering::SeqCst), 3);
}

#[test]
fn cancellation_waits_for_running_cells_and_interrupted_is_not_evidence() {
    let plan = Plan::new(vec![Axis::new(
        "x",
        AxisKind::Custom,
        Domain::Range { lo: 1, hi: 6 },
    )])
    .unwrap();
    let token = Arc::new(AtomicBool::new(false));
    let runner = |p: &Params| {
        if int(p, "x") == 2 {
            token.store(true, Ordering::SeqCst);
            return result(Outcome::Interrupted);
        }
        std::thread::sleep(Duration::from_millis(20));
        result(Outcome::Ok)
    };
    let execution = plan.execute(
        &runner,
        &ExecuteOptions::new().jobs(2).cores(2).cancel(token.clone()),
    );
    assert!(execution.cancelled && !execution.complete);
    assert_eq!(execution.cells.len(), 2, "both running cells were awaited");

    // an interrupted probe inside a search aborts it without calling it a failure
    let plan = range_plan(1, 100);
    let runner = |p: &Params| {
        result(if int(p, "n") >= 4 {
            Outcome::Interrupted
        } else {
            Outcome::Ok
        })
    };
    let execution = plan.execute(&runner, &ExecuteOptions::new());
    let b = &execution.boundaries[0];
    assert!(!b.complete && !execution.complete && !execution.cancelled);
    assert_eq!((b.first_fail.clone(), b.outcome), (None, None));
}

#[test]
fn progress_reports_every_cell_with_an_estimate() {
    let plan = Plan::new(vec![
        Axis::new("threads", AxisKind::Concurrency, ints(&[1, 2, 4])),
        Axis::new("n", AxisKind::Workload, Domain::Range { lo: 1, hi: 1000 }).boundary(),
    ])
    .unwrap();
    let events = Mutex::new(Vec::new());
    let opts = ExecuteOptions::new().jobs(2).cores(4).on_progress(|e| {
        let entry = match e {
            ProgressEvent::Started {
                index,
                total_estimate,
                ..
            } => (true, *index, *total_estimate),
            ProgressEvent::Finished {
                index,
                total_estimate,
                finished,
                ..
            } => {
                assert!(*finished <= *total_estimate);
                (false, *index, *total_estimate)
            }
        };
        events.lock().unwrap().push(entry);
    });
    let runner = Threshold::new("n", 77);
    let execution = plan.execute(&|p: &Params| runner.run(p), &opts);
    drop(opts);
    let events = events.into_inner().unwrap();
    let started = events.iter().filter(|e| e.0).count();
    let finished = events.iter().filter(|e| !e.0).count();
    assert_eq!(started, execution.cells.len());
    assert_eq!(finished, execution.cells.len());
    assert!(events.iter().all(|&(_, index, total)| index < total));
    assert_eq!(events.last().map(|e| e.2), Some(execution.cells.len()));
    assert!(plan.estimated_cells() >= 3 * 11);
}

#[test]
#[should_panic(expected = "runner exploded")]
fn a_panicking_runner_propagates() {
    let plan = range_plan(1, 10);
    let runner = |p: &Params| {
        if int(p, "n") == 2 {
            panic!("runner exploded");
        }
        result(Outcome::Ok)
    };
    plan.execute(&runner, &ExecuteOptions::new().jobs(2));
}

#[test]
fn execution_round_trips_through_json() {
    let plan = Plan::new(vec![
        Axis::new("threads", AxisKind::Concurrency, ints(&[1, 2])),
        Axis::new("n", AxisKind::Workload, Domain::Range { lo: 1, hi: 64 }).boundary(),
    ])
    .unwrap();
    let runner = Threshold::new("n", 40);
    let execution = plan.execute(&|p: &Params| runner.run(p), &ExecuteOptions::new());
    let json = serde_json::to_value(&execution).unwrap();
    let b = &json["boundaries"][0];
    assert_eq!(b["axis"], "n");
    assert_eq!(b["fixed"], serde_json::json!({"threads": 1}));
    assert_eq!(b["last_pass"], 39);
    assert_eq!(b["first_fail"], 40);
    assert_eq!(b["outcome"], "deadlock");
    assert_eq!(b["monotonic"], true);
    assert_eq!(b["monotonic_check"]["expected"], "fail");
    assert_eq!(
        json["cells"][0]["role"],
        serde_json::json!({"kind": "search", "boundary": 0})
    );
    assert_eq!(
        json["cells"][0]["params"],
        serde_json::json!({"threads": 1, "n": 1})
    );
    let back: Execution = serde_json::from_value(json).unwrap();
    assert_eq!(back.boundaries, execution.boundaries);
}

/// A search over a `load` axis repeats the two points at its edge (a new run each, never a
/// memoized one twice) and records their runs on the boundary; a flaky point widens it.
#[test]
fn a_load_axis_repeats_its_edge_and_the_boundary_says_how_often() {
    let plan = Plan::new(vec![
        Axis::new("rps", AxisKind::Load, Domain::Range { lo: 10, hi: 80 }).boundary(),
    ])
    .unwrap();
    let calls: Mutex<HashMap<i64, u32>> = Mutex::new(HashMap::new());
    // Capacity 37 req/s; at 37 and 38 the verdict flips from run to run.
    let runner = |p: &Params| {
        let rps = p.get("rps").and_then(Value::as_i64).unwrap();
        let mut calls = calls.lock().unwrap();
        let n = calls.entry(rps).or_insert(0);
        *n += 1;
        result(match rps {
            ..37 => Outcome::Ok,
            37 | 38 if *n % 2 == 1 => Outcome::Ok,
            _ => Outcome::SloViolated,
        })
    };
    let execution = plan.execute(&runner, &ExecuteOptions::new());
    let b = &execution.boundaries[0];
    assert_eq!(b.edge_runs, 2);
    assert_eq!(b.edge_confirmed, Some(true), "{b:?}");
    let (last, first) = (
        b.last_pass.as_ref().and_then(Value::as_i64).unwrap(),
        b.first_fail.as_ref().and_then(Value::as_i64).unwrap(),
    );
    assert!(last <= 36 && first >= 39, "{last}..{first}: {b:?}");
    assert!(b.edge.iter().any(|e| e.passed > 0 && e.failed > 0), "{b:?}");
    let repeats = execution
        .cells
        .iter()
        .filter(|c| matches!(c.role, CellRole::Repeat { .. }))
        .count();
    assert!(repeats >= 2, "{repeats}");
    // Every run was asked for: a point ran at most edge_runs times.
    assert!(calls.lock().unwrap().values().all(|n| *n <= 2));
    assert_eq!(b.cells.len(), b.probes);
}
