//! Service cells in the checklist: the `timeout` and `resource_exhaustion` rows state what the
//! service did at and beyond capacity, read from the cells' `result.load` (the vocabulary's
//! `ServiceLoad`), and never say "not observed" about what service cells observed.

use qualify_model::load::{
    ErrorCounts, Generator, Growth, HISTOGRAM_ENCODING, HISTOGRAM_UNIT, Latency, LatencySummary,
    LoadReport, ModelKind, ScheduleLag, ServiceLoad,
};
use qualify_model::{BoundKind, Flag, Outcome, SloMetric, SloResult};
use serde_json::json;

use super::*;
use crate::receipt::build;

/// `result.load` of a cell offered `rate` req/s for 5 s.
fn load(
    rate: f64,
    achieved: f64,
    dropped: u64,
    p99: f64,
    errors: ErrorCounts,
    slo: Vec<SloResult>,
) -> ServiceLoad {
    let sent = (rate * 5.0) as u64 - dropped;
    let summary = |p50: f64, p90: f64, p99: f64, max: f64| LatencySummary {
        count: sent,
        p50: Some(p50),
        p90: Some(p90),
        p99: Some(p99),
        p999: Some(max),
        max: Some(max),
        mean: Some(p50),
    };
    ServiceLoad {
        report: Some(LoadReport {
            model: ModelKind::Open,
            offered_rate: Some(rate),
            users: None,
            duration_seconds: 5.0,
            measured_seconds: 5.0,
            warmup_seconds: 0.0,
            sent,
            completed: sent,
            succeeded: sent,
            dropped,
            shed: errors.status_5xx,
            achieved_rate: achieved,
            throughput: achieved,
            errors,
            error_examples: Default::default(),
            latency: Latency {
                corrected: summary(p99 / 4.0, p99 / 2.0, p99, p99),
                uncorrected: summary(0.01, 0.02, 0.04, 0.05),
                censored: Some(errors.timeout),
                corrected_histogram: String::new(),
                histogram_encoding: HISTOGRAM_ENCODING.to_string(),
                histogram_unit: HISTOGRAM_UNIT.to_string(),
            },
            timeline: Vec::new(),
            phases: Vec::new(),
            writes: None,
            generator: Generator {
                threads: 1,
                cpu_seconds: 0.1,
                wall_seconds: 5.0,
                saturated: false,
                detail: None,
                schedule_lag: ScheduleLag::default(),
                connections_opened: 8,
            },
            cancelled: false,
            stopped_at_seconds: None,
            generators: Vec::new(),
            shape: None,
        }),
        slo,
        verdict: String::new(),
        memory_growth: None,
        ready_seconds: None,
        port: None,
        stop: Some("stopped on request".to_string()),
    }
}

fn held(p99: f64) -> Vec<SloResult> {
    vec![
        SloResult {
            metric: SloMetric::LatencyP99,
            bound: BoundKind::Max,
            limit: 0.1,
            value: Some(p99),
            held: p99 <= 0.1,
            implicit: false,
            phase: Default::default(),
        },
        SloResult {
            metric: SloMetric::ErrorRate,
            bound: BoundKind::Max,
            limit: 0.01,
            value: Some(0.0),
            held: true,
            implicit: false,
            phase: Default::default(),
        },
    ]
}

/// Resident memory that grew steadily at `slope` bytes per second.
fn grew(slope: f64, seconds_to_ceiling: Option<f64>) -> Growth {
    Growth {
        grew_steadily: true,
        slope_bytes_per_second: slope,
        start_bytes: 10e6,
        end_bytes: 10e6 + slope * 5.0,
        seconds_to_ceiling,
        kendall_tau: 0.9,
        detail: String::new(),
    }
}

fn service_cell(workers: i64, rps: i64, outcome: Outcome, load: ServiceLoad) -> Cell {
    let mut c = cell(&[("workers", json!(workers)), ("rps", json!(rps))], outcome);
    c.result.load = Some(load);
    c
}

/// A service run over `workers` (concurrency) × `rps` (load).
fn service_run(cells: Vec<Cell>) -> RunRecord {
    let mut r = record();
    r.axes = vec![
        axis(
            "workers".to_string(),
            AxisKind::Concurrency,
            AxisDomain::Values(vec![ParamValue::Int(2), ParamValue::Int(4)]),
        ),
        axis(
            "rps".to_string(),
            AxisKind::Load,
            AxisDomain::Values(vec![ParamValue::Int(100), ParamValue::Int(600)]),
        ),
    ];
    r.cells = cells;
    r
}

fn none() -> ErrorCounts {
    ErrorCounts::default()
}

#[test]
fn overload_slo_violations_shedding_and_the_memory_ceiling_are_stated_per_offered_rate() {
    let mut oom = service_cell(
        8,
        600,
        Outcome::OomKilled,
        load(600.0, 410.0, 0, 0.3, none(), held(0.3)),
    );
    oom.result.load.as_mut().unwrap().memory_growth = Some(grew(3.0 * 1048576.0, Some(12.0)));
    let r = service_run(vec![
        service_cell(
            2,
            100,
            Outcome::Ok,
            load(100.0, 99.8, 0, 0.043, none(), held(0.043)),
        ),
        service_cell(
            2,
            180,
            Outcome::SloViolated,
            load(180.0, 180.8, 0, 0.151, none(), held(0.151)),
        ),
        service_cell(
            2,
            600,
            Outcome::Overloaded,
            load(600.0, 190.8, 2375, 4.32, none(), held(4.32)),
        ),
        service_cell(
            4,
            100,
            Outcome::Ok,
            load(100.0, 100.0, 0, 0.04, none(), held(0.04)),
        ),
        service_cell(
            4,
            600,
            Outcome::Overloaded,
            load(
                600.0,
                420.0,
                0,
                2.0,
                ErrorCounts {
                    status_5xx: 900,
                    timeout: 30,
                    ..ErrorCounts::default()
                },
                held(2.0),
            ),
        ),
        oom,
    ]);
    let rows = build(&r).predicate.checklist.failure_behaviour;
    assert_eq!(
        rows.resource_exhaustion,
        "1 cell(s) were killed at the memory ceiling (did not degrade or shed load) (of 6 cells); \
         under load: at 180 req/s offered [workers=2] it kept up, \
         but latency_p99 = 151 ms, limit max 100 ms (slo_violated); \
         at 600 req/s offered (3.3× the 180 req/s it kept up with) [workers=2] it queued until arrivals \
         were dropped: 190.8 req/s answered, 2375 dropped, corrected p99 4.3 s (overloaded); \
         at 600 req/s offered (6.0× the 100 req/s it kept up with) [workers=4] it shed load with 429/503 \
         (900 of 3000 answered so) and queued until requests timed out (30): 420 req/s answered, \
         corrected p99 2.0 s (overloaded); \
         at 600 req/s offered [workers=8] it was killed at the memory ceiling (oom_killed) after resident \
         memory grew steadily at 3.0 MiB/s (the memory ceiling in 12.0 s)"
    );
    assert_eq!(
        rows.timeout,
        "no cell reached its deadline or stalled (6 completed cells); under load: \
         at 600 req/s offered (6.0× the 100 req/s it kept up with) [workers=4] 30 of 3000 request(s) \
         ran past the request timeout (overloaded); \
         beyond capacity no request ran past its timeout: the backlog waited for a free slot instead \
         (at 600 req/s offered [workers=2]: 2375 arrivals dropped, corrected p99 4.3 s)"
    );
    assert!(!rows.resource_exhaustion.contains("not observed"));
    assert!(!rows.timeout.contains("not observed"));
}

#[test]
fn a_service_that_kept_up_everywhere_says_so_and_leaves_exhaustion_unobserved() {
    let r = service_run(vec![
        service_cell(
            2,
            100,
            Outcome::Ok,
            load(100.0, 100.0, 0, 0.04, none(), held(0.04)),
        ),
        service_cell(
            2,
            600,
            Outcome::Ok,
            load(600.0, 600.0, 0, 0.05, none(), held(0.05)),
        ),
    ]);
    let rows = build(&r).predicate.checklist.failure_behaviour;
    assert_eq!(
        rows.resource_exhaustion,
        "no cell reached a resource ceiling and every offered load was served (up to 600 req/s offered); behaviour under exhaustion not observed"
    );
    assert_eq!(
        rows.timeout,
        "no cell reached its deadline or stalled (2 completed cells) and under load no request ran past its timeout (up to 600 req/s offered); behaviour on timeout not observed"
    );
}

#[test]
fn memory_growth_and_a_deadlock_under_load_are_stated_and_batch_runs_keep_their_answers() {
    let mut leak = service_cell(
        2,
        100,
        Outcome::Ok,
        load(100.0, 100.0, 0, 0.04, none(), held(0.04)),
    );
    leak.result.flags.push(Flag::MemoryGrowth);
    leak.result.load.as_mut().unwrap().memory_growth = Some(grew(1048576.0, None));
    let stuck = service_cell(
        2,
        600,
        Outcome::Deadlock,
        load(600.0, 10.0, 0, 3.0, none(), held(3.0)),
    );
    let rows = build(&service_run(vec![leak, stuck]))
        .predicate
        .checklist
        .failure_behaviour;
    assert!(
        rows.resource_exhaustion.ends_with(
            "under load: at 100 req/s offered resident memory grew steadily at 1.0 MiB/s"
        ),
        "{}",
        rows.resource_exhaustion
    );
    assert!(
        rows.timeout.ends_with(
            "qualify killed the process tree; under load: at 600 req/s offered (6.0× the 100 req/s it kept up with) it stopped answering (deadlock)"
        ),
        "{}",
        rows.timeout
    );
    // Without service cells the rows read as before.
    let rows = build(&record()).predicate.checklist.failure_behaviour;
    assert_eq!(
        rows.resource_exhaustion,
        "no cell reached a resource ceiling; behaviour under exhaustion not observed"
    );
}
