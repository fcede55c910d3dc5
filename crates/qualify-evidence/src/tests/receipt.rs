//! The receipt's in-toto Statement: its shape, subjects and predicate.

use qualify_model::{Flag, TimeoutKind};
use serde_json::{Value, json};

use super::*;
use crate::receipt::{PREDICATE_TYPE, STATEMENT_TYPE, build, default_file_name, sha256_hex};

fn as_json(r: &RunRecord) -> Value {
    serde_json::from_str(&build(r).to_json().unwrap()).unwrap()
}

#[test]
fn statement_shape() {
    let v = as_json(&record());
    assert_eq!(v["_type"], STATEMENT_TYPE);
    assert_eq!(v["predicateType"], PREDICATE_TYPE);
    assert_eq!(
        v["subject"],
        json!([
            {"name": "gemm", "digest": {"sha256": "a".repeat(64)}},
            {"name": "qualify.toml", "digest": {"sha256": "b".repeat(64)}},
        ])
    );
    let p = &v["predicate"];
    let mut keys: Vec<&String> = p["layers"].as_object().unwrap().keys().collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "envelope",
            "functional",
            "performance",
            "process",
            "reproducibility"
        ]
    );
    for (_, layer) in p["layers"].as_object().unwrap() {
        for k in [
            "status",
            "supports",
            "cannot_establish",
            "untested",
            "evidence",
        ] {
            assert!(layer.get(k).is_some(), "{k} missing in {layer}");
        }
    }
    for k in [
        "claim",
        "target",
        "tested",
        "gap",
        "cells",
        "boundaries",
        "checklist",
        "incomplete",
    ] {
        assert!(p.get(k).is_some(), "predicate.{k} missing");
    }
    assert_eq!(p["claim"]["level"], "trial");
    assert_eq!(p["claim"]["supported"], true);
    assert_eq!(p["cells"][0]["params"], json!({"threads": 1, "n": 256}));
    assert_eq!(p["cells"][0]["result"]["outcome"], "ok");
    assert_eq!(p["tested"]["axes"][0]["values"], json!([1, 2]));
    assert_eq!(p["tested"]["axes"][1]["min"], 256);
    assert_eq!(p["tested"]["axes"][1]["max"], 1024);
    assert_eq!(p["run"]["started"], "2027-01-15T08:00:00Z");
}

#[test]
fn subject_without_an_executable_is_the_spec_alone() {
    let mut r = record();
    r.artifact.executable = None;
    let v = as_json(&r);
    assert_eq!(v["subject"].as_array().unwrap().len(), 1);
    assert_eq!(v["subject"][0]["name"], "qualify.toml");
    let trace = &v["predicate"]["checklist"]["traceability"][0];
    assert_eq!(trace["item"], "artifact");
    assert_eq!(trace["recorded"], false);
}

#[test]
fn default_file_name_is_time_and_short_digest() {
    let t = humantime::parse_rfc3339("2026-11-30T01:02:03Z").unwrap();
    let text = build(&record()).to_json().unwrap();
    let name = default_file_name(t, &text);
    let digest = sha256_hex(text.as_bytes());
    assert_eq!(name, format!("20261130T010203Z-{}.json", &digest[..12]));
    assert_eq!(
        sha256_hex(b"abc"),
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
}

#[test]
fn cells_keep_trimmed_outputs() {
    let mut result = probe(Outcome::Ok);
    result.stdout_tail = "x".repeat(10_000);
    result.stdout_bytes = 10_000;
    let c = Cell::new(Params::new(), result, false);
    assert_eq!(c.result.stdout_tail.len(), KEPT_OUTPUT_BYTES);
    assert_eq!(c.result.stdout_bytes, 10_000);
}

#[test]
fn checklist_answers_from_what_ran() {
    let mut r = record();
    r.target = big_target();
    r.cells[1] = cell(
        &[("threads", json!(1)), ("n", json!(1024))],
        Outcome::Timeout,
    );
    r.cells[1].result.timeout_kind = Some(TimeoutKind::Busy);
    r.cells[2] = cell(
        &[("threads", json!(2)), ("n", json!(256))],
        Outcome::OomKilled,
    );
    r.cells[3].result.flags = vec![Flag::LeakedProcesses];
    r.boundaries = vec![boundary(json!({
        "axis": "n", "fixed": {"threads": 2}, "last_pass": 512, "first_fail": 1024,
        "outcome": "oom_killed", "probes": 5, "monotonic": true,
    }))];
    let s = build(&r);
    let c = &s.predicate.checklist;
    assert!(c.claim.starts_with("trial: "), "{}", c.claim);
    assert!(
        c.target_only_facts
            .iter()
            .any(|f| f.starts_with("cores: target has 192 cores"))
    );
    assert!(
        c.target_only_facts
            .iter()
            .any(|f| f.starts_with("topology:"))
    );
    assert!(
        c.target_only_facts
            .iter()
            .any(|f| f.starts_with("dependencies:"))
    );
    assert!(
        c.examined_facts
            .iter()
            .any(|f| f == "concurrency axis threads 1, 2 (2 values) in 4 completed cell(s)"),
        "{:?}",
        c.examined_facts
    );
    assert!(
        c.examined_facts.iter().any(|f| f
            == "boundary: n with threads=2: last pass 512, first fail 1024 (oom_killed), 5 probe(s)"),
        "{:?}",
        c.examined_facts
    );
    assert!(
        c.assumptions
            .iter()
            .any(|a| a.contains("monotonic in `n`") && a.contains("held")),
        "{:?}",
        c.assumptions
    );
    assert!(c.assumptions.iter().any(|a| {
        a.starts_with("the target's cores behaves as examined here, though target has 192 cores")
    }));
    let fb = &c.failure_behaviour;
    assert!(
        fb.timeout
            .starts_with("1 cell(s) ran past the deadline (busy)"),
        "{}",
        fb.timeout
    );
    assert!(
        fb.resource_exhaustion
            .contains("1 cell(s) were killed at the memory ceiling")
    );
    assert!(
        fb.partial_failure
            .contains("1 cell(s) left processes behind")
    );
    assert!(fb.partial_failure.contains("no faults were injected"));
    let items: Vec<&str> = c.traceability.iter().map(|t| t.item.as_str()).collect();
    assert_eq!(
        items,
        [
            "artifact",
            "spec",
            "tools",
            "environment",
            "hardware",
            "dependencies",
            "model_and_prompts",
            "measurements"
        ]
    );
}

#[test]
fn quiet_run_says_failure_behaviour_was_not_observed() {
    let s = build(&record());
    let fb = &s.predicate.checklist.failure_behaviour;
    assert!(fb.timeout.contains("not observed"), "{}", fb.timeout);
    assert!(fb.resource_exhaustion.contains("not observed"));
    assert!(
        fb.partial_failure
            .starts_with("no partial failure observed")
    );
}

/// `predicate.sandbox` keeps the keys the run wrote before the record was typed: the mode alone
/// when the sandbox is off, the self-test's error when it could not run, and the held-out
/// self-test's `error` (null when its artifact said nothing) beside them.
#[test]
fn the_sandbox_section_keeps_its_keys() {
    use qualify_model::enforcement::Mode;
    let sandbox = |s: SandboxRecord| {
        let mut r = record();
        r.sandbox = Some(s);
        serde_json::to_value(build(&r).predicate.sandbox).unwrap()
    };
    let off = SandboxRecord {
        mode: Mode::Off,
        self_test: None,
        self_test_error: None,
        held_out_self_test: None,
    };
    assert_eq!(sandbox(off.clone()), json!({"mode": "off"}));
    let broken = SandboxRecord {
        mode: Mode::Required,
        self_test_error: Some("no user namespace".to_string()),
        held_out_self_test: Some(HeldOutSelfTestRecord::Error { error: None }),
        ..off
    };
    assert_eq!(
        sandbox(broken),
        json!({"mode": "required", "self_test_error": "no user namespace",
               "held_out_self_test": {"error": null}})
    );
    assert!(build(&record()).predicate.sandbox.is_none());
}
