//! Dependency faults in the evidence: `result.faults` written from `qualify_faults`' verdict
//! and read back tolerantly, the `faults.<dependency>` gap and the policy on it, the
//! dependencies dimension, the checklist's failure-behaviour rows, and the envelope on the
//! fault outcomes.

use qualify_faults::behaviour::{
    DependencyObservation, Observation, PhaseLoad, RestartObservation, SecondSlos, TimelineSecond,
};
use qualify_faults::stats::PhaseCounters;
use qualify_faults::{Fault, check_set, judge};
use qualify_model::Outcome;
use serde_json::{Value, json};

use super::*;
use crate::faults::{self, BehaviourRecord, FaultRecord, PoolRecord, RestartRecord, WritesRecord};
use crate::layers::LayerStatus;
use crate::policy::evaluate;
use crate::receipt::build;

/// A 12-second measured phase with the fault window 3–8 s: seconds 3..=8 fail, 9.. hold.
fn timeline() -> Vec<TimelineSecond> {
    (0..12)
        .map(|s| TimelineSecond {
            sent: 100,
            completed: if (3..=8).contains(&s) { 60 } else { 100 },
            errors: if (3..=8).contains(&s) { 40 } else { 0 },
            p99: Some(if (3..=8).contains(&s) { 2.0 } else { 0.004 }),
        })
        .collect()
}

fn counters(connections: u64, requests: u64) -> PhaseCounters {
    PhaseCounters {
        connections_opened: connections,
        peak_connections: 10,
        peak_busy_connections: 10,
        requests,
        replies: requests,
        bytes_upstream: requests * 30,
        bytes_downstream: requests * 10,
        ..PhaseCounters::default()
    }
}

/// `db latency(200ms)` on a service with a pool of 10: requests pile up to max_in_flight and
/// time out in the window; the SLOs hold again a second after it.
fn latency_observation() -> Observation {
    Observation {
        before: PhaseLoad {
            requests: 300,
            errors: 0,
            timeouts: 0,
            latency_p50: Some(0.001),
            latency_p99: Some(0.004),
            peak_in_flight: 3,
            succeeded: 300,
            seconds: 3.0,
            ..PhaseLoad::default()
        },
        during: PhaseLoad {
            requests: 500,
            errors: 200,
            timeouts: 200,
            latency_p50: Some(1.9),
            latency_p99: Some(2.0),
            peak_in_flight: 64,
            succeeded: 300,
            seconds: 5.0,
            ..PhaseLoad::default()
        },
        after: PhaseLoad {
            requests: 400,
            errors: 40,
            timeouts: 40,
            latency_p50: Some(0.001),
            latency_p99: Some(0.005),
            peak_in_flight: 64,
            succeeded: 360,
            seconds: 4.0,
            ..PhaseLoad::default()
        },
        dependency: Some(DependencyObservation {
            before: counters(10, 300),
            during: counters(0, 100),
            after: counters(0, 400),
            series: Default::default(),
        }),
        max_in_flight: 64,
        window_start: 3.0,
        window_end: 8.0,
        recover_within: 5.0,
        timeline: timeline(),
        slos: SecondSlos::new(Some(0.01), Some(0.2), None),
        restart: None,
        writes: None,
        process: None,
        timeout: 1.0,
        control: false,
        control_noise: None,
        resources: Vec::new(),
        standing: false,
    }
}

fn latency_record() -> FaultRecord {
    let o = latency_observation();
    let fault: Fault = "latency(200ms)".parse().unwrap();
    qualify_faults::record(Some("db"), &fault, &o, &judge(&o))
}

/// A fault record with just a verdict and the figures a sentence uses.
fn record_of(dependency: &str, fault: &str, verdict: &str) -> FaultRecord {
    FaultRecord {
        dependency: Some(dependency.to_string()),
        fault: fault.to_string(),
        behaviour: BehaviourRecord {
            verdict: verdict.to_string(),
            detail: format!("{verdict} detail"),
            recovery_seconds: Some(1.2),
            ..BehaviourRecord::default()
        },
        ..FaultRecord::default()
    }
}

fn with_faults(mut c: Cell, records: &[FaultRecord]) -> Cell {
    c.result.faults = records.to_vec();
    c
}

/// The base record with a `db_fault` fault axis and dependency `db`; its four cells carry
/// `records[i]` (cells beyond the list carry none).
fn fault_run(records: &[Vec<FaultRecord>]) -> RunRecord {
    let mut r = record();
    r.dependencies = vec!["db".to_string()];
    r.axes.push(axis(
        "db_fault".to_string(),
        AxisKind::Fault,
        AxisDomain::Values(vec![
            ParamValue::Text("none".into()),
            ParamValue::Text("down".into()),
        ]),
    ));
    for (i, c) in r.cells.iter_mut().enumerate() {
        let fault = records
            .get(i)
            .and_then(|rs| rs.first())
            .map_or("none".to_string(), |f| f.fault.clone());
        c.params.insert("db_fault", ParamValue::Text(fault));
        if let Some(rs) = records.get(i) {
            *c = with_faults(c.clone(), rs);
        }
    }
    r
}

#[test]
fn a_record_built_from_the_verdict_round_trips_through_the_receipt() {
    let o = latency_observation();
    let behaviour = judge(&o);
    assert_eq!(behaviour.verdict.as_str(), "hangs", "{behaviour:?}");
    let record = latency_record();
    assert_eq!(record.dependency.as_deref(), Some("db"));
    assert_eq!(record.fault, "latency(200ms)");
    assert!(record.injected());
    let b = &record.behaviour;
    assert_eq!(b.verdict, "hangs");
    assert_eq!(b.detail, behaviour.detail);
    assert_eq!(b.recovery_seconds, Some(1.0));
    assert_eq!(b.error_rate_during, Some(0.4));
    assert_eq!(
        b.amplification_before.map(|a| a.requests),
        behaviour.amplification_before.map(|a| a.requests)
    );
    let phases = record.phases.as_ref().unwrap();
    assert_eq!(phases.during.timeouts, 200);
    assert_eq!(
        phases
            .before
            .dependency
            .as_ref()
            .unwrap()
            .connections_opened,
        10
    );
    assert_eq!(
        record.window.map(|w| (w.start_seconds, w.end_seconds)),
        Some((3.0, 8.0))
    );

    // Into a probe result, through a receipt, and back.
    let r = fault_run(&[vec![record.clone()]]);
    let text = build(&r).to_json().unwrap();
    let parsed = crate::receipt_file::parse(&text).unwrap();
    let stored = parsed
        .statement
        .pointer("/predicate/cells/0/result/faults")
        .unwrap();
    assert_eq!(faults::read_value(stored), std::slice::from_ref(&record));
    let cell: Cell =
        serde_json::from_value(parsed.statement["predicate"]["cells"][0].clone()).unwrap();
    assert_eq!(faults::read(&cell.result), std::slice::from_ref(&record));
    let json: Value = serde_json::from_str(&text).unwrap();
    let stored = &json["predicate"]["cells"][0]["result"]["faults"][0];
    assert_eq!(stored["behaviour"]["verdict"], "hangs");
    assert_eq!(stored["behaviour"]["recovery_seconds"], 1.0);
    assert_eq!(stored["fault"], "latency(200ms)");
    // Cells without faults carry no `faults` key at all.
    assert!(
        json["predicate"]["cells"][1]["result"]
            .get("faults")
            .is_none()
    );
}

#[test]
fn a_restart_with_lost_writes_is_recorded_with_its_signal() {
    let mut o = latency_observation();
    o.dependency = None;
    o.restart = Some(RestartObservation {
        ready_after: Some(1.4),
        errors_during_restart: 37,
    });
    o.writes = Some(check_set(0..100, 0..90, (0..90).filter(|i| *i != 17)));
    let record =
        qualify_faults::record(None, &Fault::NONE, &o, &judge(&o)).with_restart("SIGKILL", 5.0);
    assert_eq!(record.behaviour.verdict, "loses_writes");
    assert!(!record.injected());
    assert_eq!(
        record.restart,
        Some(RestartRecord {
            signal: "SIGKILL".into(),
            at_seconds: 5.0,
            ready_after_seconds: Some(1.4),
            errors_during_restart: 37,
        })
    );
    let w = record.writes.as_ref().unwrap();
    assert_eq!(
        (w.acknowledged, w.lost, w.first_lost.as_slice()),
        (90, 1, &[17][..])
    );
    assert_eq!(
        record.restart_text().unwrap(),
        "SIGKILL under load at 5.0 s: ready again after 1.4 s, 37 error(s) during the restart; 1 of 90 acknowledged writes lost (first: 17)"
    );
    // Reads that got no answer are said to be unread, never counted lost.
    o.writes = Some(qualify_faults::check_set_read(0..100, 0..90, 0..80, 0..80));
    let record =
        qualify_faults::record(None, &Fault::NONE, &o, &judge(&o)).with_restart("SIGKILL", 5.0);
    assert_ne!(record.behaviour.verdict, "loses_writes");
    assert!(
        record.restart_text().unwrap().ends_with(
            "; 0 of 90 acknowledged writes lost, 10 not read back (neither kept nor lost as far as the check knows)"
        ),
        "{}",
        record.restart_text().unwrap()
    );
}

#[test]
fn reading_is_tolerant() {
    // One object reads as a list of one; mistyped fields read as their defaults.
    let one = json!({
        "dependency": "db",
        "fault": "down",
        "behaviour": { "verdict": 3, "detail": "d", "recovery_seconds": "soon",
                       "pool": { "connections": 10, "all_busy": "yes" } },
        "writes": "none",
        "future_field": [1, 2]
    });
    let read = faults::read_value(&one);
    assert_eq!(read.len(), 1);
    let r = &read[0];
    assert_eq!(
        (r.fault.as_str(), r.behaviour.detail.as_str()),
        ("down", "d")
    );
    assert_eq!(r.behaviour.verdict, "");
    assert_eq!(r.behaviour.recovery_seconds, None);
    assert_eq!(
        r.behaviour.pool,
        Some(PoolRecord {
            connections: 10,
            all_busy: false,
            requests_queued: false
        })
    );
    assert_eq!(r.writes, None);
    // Entries that are not objects are skipped; anything else is no records.
    assert_eq!(
        faults::read_value(&json!([1, "x", one.clone(), null])).len(),
        1
    );
    assert!(faults::read_value(&json!("down")).is_empty());
    assert!(faults::read(&probe(Outcome::Ok)).is_empty());
    // An empty object is a record of nothing: no dependency, so nothing was injected.
    assert!(!faults::read_value(&json!({}))[0].injected());
    // A probe result reads the same way: an older receipt's single object is a list of one.
    let mut result = serde_json::to_value(probe(Outcome::Ok)).unwrap();
    result["faults"] = one;
    let result: ProbeResult = serde_json::from_value(result).unwrap();
    assert_eq!(faults::read(&result), read.as_slice());
}

#[test]
fn a_dependency_without_an_injected_fault_is_a_waivable_gap() {
    // Declared, only `none` and an interrupted `down` cell: no fault was examined.
    let mut r = fault_run(&[
        vec![record_of("db", "none", "unaffected")],
        vec![record_of("db", "down", "recovers")],
    ]);
    r.cells[1].result.outcome = Outcome::Interrupted;
    let receipt = build(&r);
    let gaps = &receipt.predicate.gap;
    assert_eq!(gaps.len(), 1, "{gaps:?}");
    assert_eq!(gaps[0].qualified_name(), "faults.db");
    assert_eq!(gaps[0].detail, "no fault was injected into dependency db");
    assert_eq!(gaps[0].tested, Value::Null);
    assert_eq!(receipt.predicate.tested.dependencies[0].faults.len(), 0);

    // Production refuses it, naming the gap; a trial claim does not judge gaps (its envelope
    // is partial though: the material dependencies dimension stayed unexamined).
    let production = evaluate(&receipt, ClaimLevel::Production);
    assert!(
        production.reasons.iter().any(|x| x
            .starts_with("gap faults.db: no fault was injected into dependency db (not waived")),
        "{production:?}"
    );
    let trial = evaluate(&receipt, ClaimLevel::Trial);
    assert!(
        trial.reasons.iter().all(|x| !x.starts_with("gap ")),
        "{trial:?}"
    );
    assert!(
        trial.reasons[0].contains("dependencies: no dependency faults"),
        "{trial:?}"
    );
    // The gate reads it back from the file the same way.
    let text = receipt.to_json().unwrap();
    let gate = crate::receipt_file::check(&text, ClaimLevel::Production).unwrap();
    assert!(
        gate.reasons
            .iter()
            .any(|x| x.starts_with("gap faults.db: ")),
        "{gate:?}"
    );

    // Waived by its qualified name or by `faults`: accepted with the reason.
    for name in ["faults.db", "faults"] {
        let mut waived = r.clone();
        waived.waivers = vec![Waiver {
            gap: name.to_string(),
            reason: "db faults are examined by the storage team".to_string(),
        }];
        let receipt = build(&waived);
        assert!(receipt.predicate.gap[0].is_waived());
        let production = evaluate(&receipt, ClaimLevel::Production);
        assert!(production.reasons.iter().all(|x| !x.contains("faults.db")));
        assert_eq!(
            production.waivers,
            ["faults.db: db faults are examined by the storage team"]
        );
    }

    // A completed cell with a real fault closes it; the target's dependency counts too.
    let mut examined = fault_run(&[vec![record_of("db", "down", "recovers")]]);
    examined.target.dependencies = vec!["db".to_string(), "cache".to_string()];
    let receipt = build(&examined);
    let names: Vec<String> = receipt
        .predicate
        .gap
        .iter()
        .map(|g| g.qualified_name())
        .collect();
    assert_eq!(names, ["faults.cache"]);
    assert_eq!(
        receipt.predicate.tested.dependencies[0],
        faults::ExaminedDependency {
            name: "db".into(),
            faults: vec!["down".into()],
            cells: 1
        }
    );
}

#[test]
fn the_dependencies_dimension_is_examined_only_by_a_completed_fault_cell() {
    let dimension = |r: &RunRecord| {
        let receipt = build(r);
        let dims = receipt.predicate.layers.envelope.evidence["dimensions"].clone();
        dims.as_array()
            .unwrap()
            .iter()
            .find(|d| d["dimension"] == "dependencies")
            .cloned()
            .unwrap_or(Value::Null)
    };
    let none = fault_run(&[vec![record_of("db", "none", "unaffected")]]);
    let d = dimension(&none);
    assert_eq!(d["examined"], false, "{d}");
    assert_eq!(d["material_because"], "the spec declares axis `db_fault`");
    let receipt = build(&none);
    assert_eq!(
        receipt.predicate.layers.envelope.status,
        LayerStatus::Partial
    );
    assert!(
        receipt.predicate.layers.envelope.untested[0]
            .starts_with("dependencies: no dependency faults"),
        "{:?}",
        receipt.predicate.layers.envelope.untested
    );

    let faulted = fault_run(&[
        vec![record_of("db", "down", "recovers")],
        vec![record_of("db", "reset", "recovers")],
    ]);
    let d = dimension(&faulted);
    assert_eq!(d["examined"], true, "{d}");
    assert_eq!(d["detail"], "faults on db: down, reset (2 cell(s))");

    // Declared dependencies make the dimension material even without a fault axis.
    let mut declared = record();
    declared.dependencies = vec!["db".to_string()];
    let d = dimension(&declared);
    assert_eq!(d["material_because"], "the spec declares dependency db");
    assert_eq!(d["examined"], false);
}

#[test]
fn the_failure_behaviour_rows_are_answered_from_the_fault_records() {
    let mut hangs = record_of("db", "latency(200ms)", "hangs");
    hangs.behaviour.pool = Some(PoolRecord {
        connections: 10,
        all_busy: true,
        requests_queued: true,
    });
    let mut storm = record_of("db", "down", "retry_storm");
    storm.behaviour.attempts_per_request = Some(11.0);
    storm.behaviour.recovery_seconds = None;
    let mut restart = record_of("db", "none", "recovers");
    restart.restart = Some(RestartRecord {
        signal: "SIGKILL".into(),
        at_seconds: 5.0,
        ready_after_seconds: Some(1.4),
        errors_during_restart: 37,
    });
    restart.writes = Some(WritesRecord {
        attempted: 4900,
        acknowledged: 4812,
        ok: 4812,
        valid: true,
        ..WritesRecord::default()
    });
    let r = fault_run(&[vec![hangs], vec![storm], vec![restart]]);
    let rows = build(&r).predicate.checklist.failure_behaviour;
    assert_eq!(
        rows.timeout,
        "no cell reached its deadline or stalled (4 completed cells); behaviour on timeout not observed; under dependency faults: db latency(200ms): left requests without an answer until they timed out (hangs), recovered 1.2 s after; dependency connections plateaued at 10 (all busy) while requests queued"
    );
    assert_eq!(
        rows.resource_exhaustion,
        "no cell reached a resource ceiling; behaviour under exhaustion not observed; under dependency faults: db latency(200ms): left requests without an answer until they timed out (hangs), recovered 1.2 s after; dependency connections plateaued at 10 (all busy) while requests queued; db down: retried 11× per request (retry_storm), not recovered by the end of the load"
    );
    assert_eq!(
        rows.partial_failure,
        "no partial failure observed; db down: retried 11× per request (retry_storm), not recovered by the end of the load; SIGKILL under load at 5.0 s: ready again after 1.4 s, 37 error(s) during the restart; 0 of 4,812 acknowledged writes lost (recovers)"
    );

    // Only slowdowns: the partial-failure row says so instead of "no faults were injected".
    let slow = fault_run(&[vec![record_of("db", "latency(200ms)", "degrades")]]);
    let rows = build(&slow).predicate.checklist.failure_behaviour;
    assert!(
        rows.partial_failure.ends_with(
            "no outage, reset or restart was injected: the faults only slowed dependencies down"
        ),
        "{}",
        rows.partial_failure
    );
    assert!(
        rows.timeout
            .ends_with("db latency(200ms): slower but within its SLOs (degrades)"),
        "{}",
        rows.timeout
    );

    // The same fault in several cells names the cells; none at all keeps the old answer.
    let twice = fault_run(&[
        vec![record_of("db", "down", "recovers")],
        vec![record_of("db", "down", "recovers")],
    ]);
    let rows = build(&twice).predicate.checklist.failure_behaviour;
    assert!(rows.partial_failure.contains("db down [threads=1, n=256]: failed requests during the fault (recovers), recovered 1.2 s after; db down [threads=1, n=1024]"), "{}", rows.partial_failure);
    let rows = build(&record()).predicate.checklist.failure_behaviour;
    assert!(rows.partial_failure.ends_with(
        "recovery, retry and reconciliation were not examined: no faults were injected"
    ));
}

#[test]
fn fault_outcomes_fail_the_envelope_and_fault_axes_claim_their_whole_domain() {
    for outcome in [
        Outcome::LostWrites,
        Outcome::NotRecovered,
        Outcome::UnexpectedBehaviour,
    ] {
        let mut r = fault_run(&[vec![record_of("db", "down", "loses_writes")]]);
        r.target.cores = Some(2);
        r.cells[0].result.outcome = outcome;
        let receipt = build(&r);
        let envelope = &receipt.predicate.layers.envelope;
        assert_eq!(envelope.status, LayerStatus::Failed, "{outcome}");
        assert!(
            envelope
                .summary
                .contains(&format!("{outcome} at threads=1, n=256, db_fault=down")),
            "{}",
            envelope.summary
        );
        // No target value bounds a fault axis: no cell is beyond the claim because of it.
        assert!(receipt.predicate.cells.iter().all(|c| !c.beyond_claim));
        let claimed = receipt
            .predicate
            .claimed_region
            .iter()
            .find(|c| c.axis == "db_fault")
            .unwrap();
        assert!(claimed.bound.is_none());
        assert_eq!(
            claimed.claims,
            "db_fault: the whole declared domain (the target names no value for it)"
        );
    }
}

#[test]
fn production_refuses_hangs_and_storms_the_claim_does_not_expect_and_trial_states_them() {
    use crate::claim::ClaimLevel;
    use crate::policy::evaluate;
    let hangs = record_of("db", "latency(200ms)", "hangs");
    let mut expected_hang = record_of("db", "down", "hangs");
    expected_hang.behaviour.expected = Some(vec!["hangs".into(), "fails_fast".into()]);
    let fails_fast = record_of("db", "reset", "fails_fast");
    let control = record_of("db", "none", "control");
    let r = fault_run(&[
        vec![hangs],
        vec![expected_hang],
        vec![fails_fast],
        vec![control],
    ]);
    let receipt = build(&r);
    let refused = crate::policy::Evidence::refused_behaviours(&receipt);
    assert_eq!(refused.len(), 1, "{refused:#?}");
    assert!(
        refused[0].starts_with("db latency(200ms) [threads=1, n=256, db_fault=latency(200ms)]: left requests without an answer until they timed out (hangs)"),
        "{}",
        refused[0]
    );
    assert!(
        refused[0].contains("expect = { \"latency(200ms)\" = [\"hangs\"] } on axis `db_fault`"),
        "{}",
        refused[0]
    );
    let production = evaluate(&receipt, ClaimLevel::Production);
    assert!(!production.supported);
    assert!(
        production
            .reasons
            .iter()
            .any(|x| x.starts_with("behaviour under a fault: db latency(200ms)")),
        "{:#?}",
        production.reasons
    );
    // trial: stated (the checklist) and accepted.
    let trial = evaluate(&receipt, ClaimLevel::Trial);
    assert!(
        !trial
            .reasons
            .iter()
            .any(|x| x.contains("behaviour under a fault")),
        "{:#?}",
        trial.reasons
    );
    // The same from the receipt file the gate reads.
    let text = serde_json::to_string(&receipt).unwrap();
    let parsed = crate::receipt_file::parse(&text).unwrap();
    assert_eq!(
        crate::policy::Evidence::refused_behaviours(&parsed),
        refused
    );
}
