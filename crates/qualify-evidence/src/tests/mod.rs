//! Unit tests over the public surface, with record fixtures shared by all of them.

mod claimed;
mod faults;
mod gap;
mod golden;
mod layers;
mod load;
mod perturb;
mod policy;
mod receipt;
mod receipt_file;
mod trust;

use std::time::{Duration, SystemTime};

use qualify_model::range::{Number, NumericRange, Scale};
use qualify_model::{Enforcement, Limits, Outcome, ProbeResult, Strength};
use serde_json::{Value, json};

use crate::claim::ClaimLevel;
use crate::record::*;

/// A probe result with `outcome`, run under a kernel-enforced 2 GiB ceiling and a 60 s timeout.
pub fn probe(outcome: Outcome) -> ProbeResult {
    ProbeResult {
        outcome,
        exit_code: match outcome {
            Outcome::Ok => Some(0),
            Outcome::ExitFailure => Some(1),
            _ => None,
        },
        signal: None,
        timeout_kind: None,
        detail: format!("ended {outcome}"),
        flags: Vec::new(),
        wall_seconds: 0.5,
        user_seconds: 0.25,
        system_seconds: 0.0,
        peak_memory_bytes: Some(1 << 20),
        enforcement: Enforcement {
            backend: "cgroup2".to_string(),
            memory: Strength::Kernel,
            cpus: Strength::None,
            pids: Strength::None,
            disk: Strength::None,
            tree: "cgroup".to_string(),
            on_qualify_death: String::new(),
            sandbox: None,
            notes: Vec::new(),
        },
        limits: Limits {
            memory_bytes: Some(2 << 30),
            timeout_seconds: 60.0,
            ..Limits::default()
        },
        evidence: json!({}),
        stdout_tail: String::new(),
        stderr_tail: String::new(),
        stdout_bytes: 0,
        stderr_bytes: 0,
        stdout_sha256: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
            .to_string(),
        runs: None,
        distinct_outputs: None,
        load: None,
        faults: Vec::new(),
        perturb: None,
        children: None,
    }
}

/// A parameter value from JSON (fixtures write `json!(4)`).
pub fn pv(v: Value) -> ParamValue {
    serde_json::from_value(v).unwrap()
}

pub fn cell(params: &[(&str, Value)], outcome: Outcome) -> Cell {
    Cell::new(
        params.iter().map(|(k, v)| (*k, pv(v.clone()))).collect(),
        probe(outcome),
        false,
    )
}

pub fn functional_ok() -> FunctionalRun {
    FunctionalRun::Ran(Box::new(FunctionalRecord {
        command: "make test".to_string(),
        result: probe(Outcome::Ok),
        junit: None,
    }))
}

pub fn functional_with(outcome: Outcome, junit: Option<JunitCounts>) -> FunctionalRun {
    FunctionalRun::Ran(Box::new(FunctionalRecord {
        command: "make test".to_string(),
        result: probe(outcome),
        junit,
    }))
}

/// A trial run on a 2-core machine with no target: axis `threads` (concurrency, values 1 and 2)
/// and `n` (workload, range 256..1024), four passing cells, functional ok.
pub fn record() -> RunRecord {
    let start = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
    let mut cells = Vec::new();
    for t in [1, 2] {
        for n in [256, 1024] {
            cells.push(cell(&[("threads", json!(t)), ("n", json!(n))], Outcome::Ok));
        }
    }
    RunRecord {
        qualify_version: "0.1.0".to_string(),
        artifact: ArtifactRecord {
            name: "tiled-gemm".to_string(),
            executable: Some(FileDigest {
                path: "gemm".to_string(),
                sha256: "a".repeat(64),
            }),
            interpreter: None,
            tree: None,
        },
        spec: FileDigest {
            path: "qualify.toml".to_string(),
            sha256: "b".repeat(64),
        },
        spec_overrides: Vec::new(),
        claim: ClaimLevel::Trial,
        target: Target::default(),
        machine: Machine {
            hostname: "box".to_string(),
            cores_online: 2,
            cores_allowed: Some(2),
            nodes: 1,
            memory_bytes: Some(24 << 30),
            backend: "cgroup2".to_string(),
        },
        axes: vec![
            axis(
                "threads".to_string(),
                AxisKind::Concurrency,
                AxisDomain::Values(vec![ParamValue::Int(1), ParamValue::Int(2)]),
            ),
            axis(
                "n",
                AxisKind::Workload,
                AxisDomain::Range {
                    min: ParamValue::Int(256),
                    max: ParamValue::Int(1024),
                },
            ),
        ],
        material: Vec::new(),
        waivers: Vec::new(),
        dependencies: Vec::new(),
        headroom: Default::default(),
        functional: functional_ok(),
        holdout: Default::default(),
        process: Default::default(),
        environment: None,
        reproducibility: Default::default(),
        keep_going: false,
        perturb_required: false,
        cells,
        planned_cells: Some(4),
        boundaries: Vec::new(),
        performance: None,
        incomplete: false,
        sandbox: None,
        started: start,
        finished: start + Duration::from_secs(30),
    }
}

/// The 192-core, 2-node, 768 GiB target of the design notes.
pub fn big_target() -> Target {
    Target {
        cores: Some(192),
        nodes: Some(2),
        memory_bytes: Some(768 << 30),
        ..Target::default()
    }
}

/// A boundary search's result from the keys a test cares about; the rest as a complete search
/// with one run per edge point and no cells named.
pub fn boundary(v: Value) -> Boundary {
    let mut full = json!({
        "axis": "n", "fixed": {}, "last_pass": null, "first_fail": null, "outcome": null,
        "probes": 0, "monotonic": null, "monotonic_check": null, "complete": true, "cells": [],
    });
    merge(&mut full, v);
    serde_json::from_value(full).unwrap_or_else(|e| panic!("not a boundary: {e}"))
}

/// A performance analysis from the parts a test cares about; every list it leaves out empty,
/// every statistic it leaves out unmeasured.
pub fn performance(v: Value) -> Performance {
    let mut full = json!({
        "repeat": 5, "warmup": 0, "regression": 0.1, "metrics": [], "stats": [], "models": [],
        "unfitted": [], "scaling": [], "checks": [], "predictions": [], "errors": [],
    });
    merge(&mut full, v);
    if let Some(stats) = full["stats"].as_array_mut() {
        for s in stats {
            let mut one = json!({
                "params": {}, "metric": "cpu", "n": 0, "censored": 0, "ci95": null,
                "median": null, "mad": null, "min": null, "max": null, "outliers": [], "values": [],
            });
            merge(&mut one, s.take());
            *s = one;
        }
    }
    if let Some(r) = full.get_mut("rounds").filter(|r| r.is_object()) {
        let mut one =
            json!({"seed": 0, "rounds": 1, "stopped": "", "wall_seconds": 0.0, "schedule": ""});
        merge(&mut one, r.take());
        *r = one;
    }
    serde_json::from_value(full).unwrap_or_else(|e| panic!("not a performance analysis: {e}"))
}

fn merge(into: &mut Value, from: Value) {
    if let (Some(into), Value::Object(from)) = (into.as_object_mut(), from) {
        into.extend(from);
    }
}

/// The spec's form of a declared domain: a list as listed, a range over every integer (step 1).
pub fn domain(declared: AxisDomain) -> Domain {
    let number = |v: ParamValue| match v {
        ParamValue::Int(n) => Number::Int(n),
        ParamValue::Float(x) => Number::Float(x),
        ParamValue::Text(t) => panic!("not a number: {t}"),
    };
    match declared {
        AxisDomain::Values(values) => Domain::Values(values),
        AxisDomain::Range { min, max } => Domain::Range(NumericRange {
            lo: number(min),
            hi: number(max),
            step: Number::Int(1),
            scale: Scale::Linear,
        }),
    }
}

/// A swept axis declared over `declared`.
pub fn axis(name: impl Into<String>, kind: AxisKind, declared: AxisDomain) -> Axis {
    Axis {
        name: name.into(),
        kind,
        domain: domain(declared),
        search: None,
        fault: None,
    }
}
