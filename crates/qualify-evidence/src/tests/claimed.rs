//! The claimed region vs the explored region: a boundary search past the target fails nothing
//! it should not, states its headroom, and `[claim] headroom` judges it.

use qualify_model::Outcome;
use serde_json::{Value, json};

use super::*;
use crate::claimed::HeadroomFinding;
use crate::layers::LayerStatus;
use crate::receipt::build;

/// The case: target n = 10000, a boundary search over n ∈ [1000, 40000] on a program
/// OOM-killed from n = 16357 on (galloping probes, then bisection).
fn searched(target_n: f64, first_fail: i64) -> RunRecord {
    let mut r = record();
    r.axes = vec![axis(
        "n",
        AxisKind::Workload,
        AxisDomain::Range {
            min: ParamValue::Int(1000),
            max: ParamValue::Int(40000),
        },
    )];
    r.target.workload.insert("n".to_string(), target_n);
    let mut cells = Vec::new();
    let last_pass = first_fail - 1;
    for n in [1000, 2000, 4000, 8000, 16000, last_pass] {
        if n < first_fail {
            cells.push(cell(&[("n", json!(n))], Outcome::Ok));
        }
    }
    for n in [first_fail, 32000] {
        let mut c = cell(&[("n", json!(n))], Outcome::OomKilled);
        c.boundary = true;
        cells.push(c);
    }
    r.cells = cells;
    r.planned_cells = Some(0);
    r.boundaries = vec![boundary(json!({
        "axis": "n", "fixed": {}, "last_pass": last_pass, "first_fail": first_fail,
        "outcome": "oom_killed", "probes": 8, "monotonic": true
    }))];
    r
}

fn envelope(r: &RunRecord) -> (LayerStatus, String, Value) {
    let st = build(r);
    let e = &st.predicate.layers.envelope;
    let json = serde_json::to_value(&st.predicate).unwrap();
    (e.status, e.summary.clone(), json)
}

#[test]
fn a_boundary_beyond_the_target_is_headroom_not_a_failure() {
    let r = searched(10000.0, 16357);
    let (status, summary, p) = envelope(&r);
    assert_eq!(status, LayerStatus::Closed, "{summary}");
    assert!(
        summary.contains("cells inside the claimed region passed")
            && summary.contains("beyond it: 2 of 4 cell(s) failed (headroom n 1.64×)"),
        "{summary}"
    );
    assert_eq!(p["boundaries"][0]["headroom"], json!(1.636));
    let n = &p["claimed_region"][0];
    assert_eq!(n["claims"], "n ≤ 10000 (target.workload.n)");
    assert_eq!(n["headroom"]["first_fail"], 16357);
    assert_eq!(n["headroom"]["source"], "boundary");
    // The failing probes are marked as explored, not claimed.
    let beyond: Vec<bool> = p["cells"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["beyond_claim"] == true)
        .collect();
    assert_eq!(beyond.iter().filter(|b| **b).count(), 4, "{beyond:?}");
    assert!(
        p["checklist"]["examined_facts"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f.as_str().unwrap().contains("1.64× the target")),
        "{}",
        p["checklist"]["examined_facts"]
    );
    // trial is supported now that the search no longer fails its own claim.
    assert!(st_supports(&r, ClaimLevel::Trial));
    // Nothing unexamined is claimed of the range beyond the target.
    assert!(
        p["layers"]["envelope"]["untested"]
            .as_array()
            .unwrap()
            .is_empty(),
        "{}",
        p["layers"]["envelope"]["untested"]
    );
}

fn st_supports(r: &RunRecord, level: ClaimLevel) -> bool {
    crate::policy::evaluate(&build(r), level).supported
}

#[test]
fn a_boundary_inside_the_claimed_region_fails_as_before() {
    let r = searched(20000.0, 16357);
    let (status, summary, p) = envelope(&r);
    assert_eq!(status, LayerStatus::Failed, "{summary}");
    assert!(summary.contains("oom_killed at n=16357"), "{summary}");
    assert_eq!(p["boundaries"][0]["headroom"], json!(0.818));
}

#[test]
fn a_demanded_headroom_fails_or_holds_by_its_ratio() {
    let mut r = searched(10000.0, 16357);
    r.headroom.all = Some(2.0);
    let (status, summary, _) = envelope(&r);
    assert_eq!(status, LayerStatus::Failed, "{summary}");
    assert!(
        summary.contains(
            "headroom along n: oom_killed at n=16357 (boundary) is 1.64× the target, below the required 2×"
        ),
        "{summary}"
    );
    r.headroom.all = Some(1.5);
    assert_eq!(envelope(&r).0, LayerStatus::Closed);
    // Per axis overrides the default.
    r.headroom.axes.insert("n".into(), 1.7);
    assert_eq!(envelope(&r).0, LayerStatus::Failed);
}

#[test]
fn a_demanded_headroom_nobody_examined_is_partial() {
    // Everything passed up to 1.2× the target: 2× is not established.
    let mut r = searched(10000.0, 16357);
    r.cells.retain(|c| c.passed());
    r.cells.push(cell(&[("n", json!(12000))], Outcome::Ok));
    r.boundaries.clear();
    r.axes[0].domain = domain(AxisDomain::Range {
        min: ParamValue::Int(1000),
        max: ParamValue::Int(12000),
    });
    r.cells
        .retain(|c| c.params.get("n").and_then(ParamValue::as_i64) <= Some(12000));
    r.headroom.all = Some(2.0);
    let st = build(&r);
    let e = &st.predicate.layers.envelope;
    assert_eq!(e.status, LayerStatus::Partial, "{}", e.summary);
    assert!(
        e.untested.iter().any(|u| u.contains(
            "headroom along n: no failure up to 1.20× the target; the required 2× was not examined"
        )),
        "{:?}",
        e.untested
    );
    match &st.predicate.claimed_region[0].headroom {
        Some(HeadroomFinding::NoFailure { at_least, .. }) => assert_eq!(*at_least, 1.2),
        other => panic!("{other:?}"),
    }
}

#[test]
fn without_a_target_value_the_whole_declared_domain_is_claimed() {
    let mut r = searched(10000.0, 16357);
    r.target = Default::default();
    let (status, summary, p) = envelope(&r);
    assert_eq!(status, LayerStatus::Failed, "{summary}");
    assert!(
        summary.starts_with("2 of 8 completed cells failed"),
        "{summary}"
    );
    assert!(p["boundaries"][0].get("headroom").is_none());
    assert!(p["claimed_region"][0].get("bound").is_none());
}

/// The checklist, the layers and the fingerprint say one thing: with a fingerprint, a trace and
/// lockfiles, no traceability row claims they are missing, and the reproducibility layer that
/// says "environment traced" agrees with the environment row.
#[test]
fn checklist_rows_agree_with_the_fingerprint_and_the_layers() {
    let r = super::golden::rich_record();
    let st = build(&r);
    let p = serde_json::to_value(&st.predicate).unwrap();
    let rows: Vec<(String, bool, String)> = p["checklist"]["traceability"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["item"].as_str().unwrap().to_string(),
                t["recorded"].as_bool().unwrap(),
                t["detail"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let row = |name: &str| rows.iter().find(|r| r.0 == name).unwrap().clone();
    let fp = r.environment.as_ref().unwrap();
    for item in [
        "environment",
        "hardware",
        "dependencies",
        "tools",
        "model_and_prompts",
    ] {
        let (_, recorded, detail) = row(item);
        assert!(recorded, "{item} is recorded in the receipt: {detail}");
        for contradiction in ["not recorded", "no OS", "no development trace"] {
            assert!(!detail.contains(contradiction), "{item}: {detail}");
        }
    }
    assert!(row("hardware").2.contains(fp.cpu_model.as_deref().unwrap()));
    assert!(row("dependencies").2.contains(&fp.lockfiles[0].sha256));
    assert!(
        row("environment")
            .2
            .contains(fp.os.kernel_release.as_deref().unwrap())
    );
    assert!(row("model_and_prompts").2.contains("trace.jsonl"));
    let repro = p["layers"]["reproducibility"]["summary"].as_str().unwrap();
    assert!(repro.contains("environment traced"), "{repro}");
    // Without a fingerprint, every row says so and the layer does too.
    let mut bare = super::golden::rich_record();
    bare.environment = None;
    bare.process = Default::default();
    let p = serde_json::to_value(build(&bare).predicate).unwrap();
    for t in p["checklist"]["traceability"].as_array().unwrap() {
        if [
            "environment",
            "hardware",
            "dependencies",
            "model_and_prompts",
        ]
        .contains(&t["item"].as_str().unwrap())
        {
            assert_eq!(t["recorded"], false, "{t}");
        }
    }
    assert_ne!(p["layers"]["reproducibility"]["status"], "closed");
}
