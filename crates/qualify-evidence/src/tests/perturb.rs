//! Schedule perturbation in the receipt: a failure under perturbation fails its cell and the
//! envelope layer (named as such), perturbed runs count as examined concurrency, and
//! `[claim] perturb = "required"` refuses `production` for a concurrent artifact whose claimed
//! cells were not all perturbed — and only then.

use std::collections::BTreeMap;

use qualify_model::perturb::{Deadline, PerturbFailure};
use qualify_model::{PerturbMode, PerturbReport, Rate};

use super::*;
use crate::layers::{LayerName, LayerStatus};
use crate::policy::{Evidence, evaluate};
use crate::receipt::build;

fn report(runs: u64, failure: Option<Outcome>) -> PerturbReport {
    PerturbReport {
        modes: PerturbMode::ALL.to_vec(),
        seed: "0000000000000001".into(),
        runs,
        outcomes: BTreeMap::from([("ok".to_string(), runs)]),
        failures: failure
            .into_iter()
            .map(|outcome| PerturbFailure {
                outcome,
                timeout_kind: None,
                detail: "all threads blocked".into(),
                seed: "00000000000000aa".into(),
                mode: "noise".into(),
                first_run: 16,
                count: 3,
                other_seeds: Vec::new(),
                replay: Rate::wilson(7, 20),
                bare: Rate::wilson(0, 20),
                only_under_perturbation: true,
                replay_command:
                    "qualify probe --perturb --mode noise --seed 00000000000000aa -- ./x".into(),
                minimised: None,
            })
            .collect(),
        slowed: 0,
        bare_runs: 20,
        bare_outcomes: BTreeMap::new(),
        mechanisms: Vec::new(),
        deadline: Deadline {
            cell_seconds: 60.0,
            perturbed_seconds: 62.0,
            why: "budget".into(),
        },
        runs_per_second: 50.0,
        stopped: None,
        run_list: Vec::new(),
    }
}

fn envelope(r: &RunRecord) -> (LayerStatus, String, Value) {
    let s = build(r);
    let e = &s.predicate.layers.envelope;
    (e.status, e.summary.clone(), e.evidence.clone())
}

#[test]
fn a_failure_under_perturbation_fails_the_cell_and_the_envelope() {
    let mut r = record();
    r.cells[3].result.perturb = Some(report(200, Some(Outcome::Deadlock)));
    for c in &mut r.cells[..3] {
        c.result.perturb = Some(report(200, None));
    }
    assert!(!r.cells[3].passed() && r.cells[3].failed_under_perturbation());
    let (status, summary, evidence) = envelope(&r);
    assert_eq!(status, LayerStatus::Failed);
    assert!(
        summary.contains("deadlock under perturbation at"),
        "{summary}"
    );
    let failing = &evidence["failing"][0];
    assert!(
        failing["perturbation"]
            .as_str()
            .unwrap()
            .contains("only under perturbation (seed 00000000000000aa"),
        "{failing}"
    );
    assert_eq!(evidence["perturbation"]["runs"], 800);
    assert_eq!(evidence["perturbation"]["perturbed_cells"], 4);
}

#[test]
fn perturbed_runs_count_as_examined_concurrency() {
    let mut r = record();
    r.axes.retain(|a| a.name != "threads");
    r.material.push(Dimension::Concurrency);
    let s = build(&r);
    let dims = &s.predicate.layers.envelope.evidence["dimensions"];
    let conc = dims
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["dimension"] == "concurrency")
        .unwrap();
    assert_eq!(conc["examined"], false, "{conc}");
    for c in &mut r.cells {
        c.result.perturb = Some(report(100, None));
    }
    let s = build(&r);
    let dims = &s.predicate.layers.envelope.evidence["dimensions"];
    let conc = dims
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["dimension"] == "concurrency")
        .unwrap();
    assert_eq!(conc["examined"], true, "{conc}");
    assert!(
        conc["detail"]
            .as_str()
            .unwrap()
            .starts_with("schedules: 400 perturbed runs over 4 cell(s) (noise, pct, sched)"),
        "{conc}"
    );
}

#[test]
fn production_requires_perturbation_only_when_the_claim_says_so_and_the_artifact_is_concurrent() {
    // A concurrency axis: concurrent. Required, nothing perturbed: refused, naming why.
    let mut r = record();
    r.perturb_required = true;
    let s = build(&r);
    let why = s.perturb_unmet().expect("unmet");
    assert!(
        why.contains("axis `threads` varies its concurrency"),
        "{why}"
    );
    assert!(why.contains("0 of 4 claimed cell(s)"), "{why}");
    let v = evaluate(&s, ClaimLevel::Production);
    assert!(
        v.reasons
            .iter()
            .any(|r| r.starts_with("envelope layer (perturbation)")),
        "{:?}",
        v.reasons
    );
    // Trial does not ask for it.
    assert!(
        !evaluate(&s, ClaimLevel::Trial)
            .reasons
            .iter()
            .any(|r| r.contains("perturbation"))
    );
    // Every claimed cell perturbed: met.
    for c in &mut r.cells {
        c.result.perturb = Some(report(50, None));
    }
    assert_eq!(build(&r).perturb_unmet(), None);
    // Off by default: the same unperturbed run is not refused for it.
    let mut r = record();
    r.perturb_required = false;
    assert_eq!(build(&r).perturb_unmet(), None);
    // Not concurrent (no concurrency axis, no cell seen with more than one thread): nothing to
    // require.
    let mut r = record();
    r.perturb_required = true;
    r.axes.retain(|a| a.name != "threads");
    let s = build(&r);
    assert_eq!(s.perturb_unmet(), None);
    assert_eq!(
        s.predicate.layers.envelope.evidence["perturbation"]["concurrent"],
        false
    );
    // … unless a cell was seen running threads.
    r.cells[0].result.evidence = json!({"sampling": {"max_threads": 5, "max_processes": 1}});
    let why = build(&r).perturb_unmet().expect("unmet");
    assert!(why.contains("ran 5 thread(s) in 1 process(es)"), "{why}");
}

#[test]
fn a_receipt_read_back_keeps_the_requirement() {
    let mut r = record();
    r.perturb_required = true;
    let s = build(&r);
    let text = serde_json::to_string(&s).unwrap();
    let parsed = crate::receipt_file::parse(&text).unwrap();
    assert!(parsed.perturb_unmet().is_some());
    assert_eq!(
        parsed.layer_status(LayerName::Envelope),
        LayerStatus::Closed
    );
}
