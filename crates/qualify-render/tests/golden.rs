//! Every renderer's output pinned byte for byte: each receipt in `tests/fixtures/` (and a few
//! receipts derived from them or built here to reach the sections the fixtures leave out: many
//! failing cells, three varying axes, unknown outcomes, models without a form, raw Amdahl fits,
//! hostile text, missing and mistyped parts) is rendered to HTML, Markdown, JUnit XML, Extra-P
//! JSON Lines and `qualify run`'s terminal summary and compared with `tests/golden/<case>.<format>`. A refactor must not change a
//! byte; a deliberate change of the output is re-blessed with
//! `QUALIFY_BLESS=1 cargo test -p qualify-render --test golden` (review the diff).

use std::path::PathBuf;

use serde_json::{Value, json};

fn fixture(name: &str) -> Value {
    let path = format!("{}/tests/fixtures/{name}.json", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// `perf.json` without models, scaling or predictions: measured-only plots per axis.
fn measured_only() -> Value {
    let mut r = fixture("perf");
    let perf = r["predicate"]["performance"].as_object_mut().unwrap();
    perf.remove("models");
    perf.remove("scaling");
    perf.remove("predictions");
    r
}

/// `transfer.json` with a declared target the run reached (a target, no gap).
fn target_reached() -> Value {
    let mut r = fixture("transfer");
    r["predicate"]["target"] = json!({"cores": 2});
    r["predicate"]["gap"] = json!([]);
    r
}

const OUTCOMES: [&str; 10] = [
    "ok",
    "deadlock",
    "oom_killed",
    "timeout",
    "crash",
    "weird_outcome",
    "interrupted",
    "exit_failure",
    "deadlock",
    "killed",
];

/// A receipt built to reach what the fixtures do not: an interrupted run, a sixth layer, three
/// varying axes (one non-numeric, with long labels) over more than 100 failing cells with rotated labels, an
/// unknown outcome and a cell without a result, boundaries without a failure or with a
/// contradicting monotonicity check, performance errors, models without a form or without a
/// slope, more series than colours, outliers given as values, a raw Amdahl fit, an
/// efficiency check for every axis, predictions without a position, gap rows that cannot be
/// drawn, and a checklist with mistyped parts. Receipt text carries `<`, `&`, `|` and newlines.
fn edge() -> Value {
    let threads = [1, 2, 4, 8];
    let sizes: Vec<u64> = (1..=15).map(|k| k * 1_000_000).collect();
    let mut cells = Vec::new();
    let mut stats = Vec::new();
    let mut i = 0usize;
    for &t in &threads {
        for &size in &sizes {
            for mode in ["fast-with-locks", "safe"] {
                if t == 8 && size == 15_000_000 {
                    continue; // not examined
                }
                let outcome = OUTCOMES[i % OUTCOMES.len()];
                let detail = match i % 3 {
                    0 => String::new(),
                    1 => format!("cell {i} <blocked> & stuck | here\nsecond line"),
                    _ => format!("cell {i}"),
                };
                let wall = 0.001 * (size as f64 / 1e6).powf(1.1) / t as f64 + 0.0001 * i as f64;
                let result = if i == 5 {
                    json!({})
                } else {
                    json!({
                        "outcome": outcome,
                        "detail": detail,
                        "wall_seconds": wall,
                        "user_seconds": wall * t as f64,
                        "system_seconds": if i % 2 == 0 { json!(0.0001) } else { Value::Null },
                        "peak_memory_bytes": 1000 * size / 1000,
                    })
                };
                cells.push(json!({
                    "params": {"threads": t, "size": size, "mode": mode},
                    "result": result,
                    "boundary": i % 7 == 0,
                }));
                let values = [wall, wall * 1.01, wall * 0.99];
                stats.push(json!({
                    "params": {"threads": t, "size": size, "mode": mode},
                    "metric": "wall",
                    "n": if i % 11 == 0 { 1 } else { 3 },
                    "censored": if i % 11 == 0 { 2 } else { 0 },
                    "median": wall,
                    "mad": wall * 0.01,
                    "min": wall * 0.99,
                    "max": wall * 1.01,
                    "ci95": if i % 5 == 0 { Value::Null } else { json!([wall * 0.98, wall * 1.02]) },
                    "outliers": if i % 4 == 0 { json!([1]) } else { json!([]) },
                    "values": values,
                }));
                i += 1;
            }
        }
    }
    for (k, &t) in threads.iter().enumerate() {
        let ops = 100.0 * t as f64 / (1.0 + 0.1 * (t as f64 - 1.0));
        stats.push(json!({
            "params": {"threads": t, "size": 1_000_000, "mode": "fast-with-locks"},
            "metric": "ops",
            "n": 3,
            "censored": 0,
            "median": ops,
            "mad": 0.5,
            "min": ops - 1.0,
            "max": ops + 1.0,
            "ci95": [ops - 0.8, ops + 0.8],
            "outliers": if k == 2 { json!([ops + 7.5]) } else { json!([]) },
            "values": [ops - 1.0, ops, ops + 1.0],
        }));
    }
    json!({
        "_type": "https://in-toto.io/Statement/v1",
        "predicate": {
            "claim": {
                "level": "production",
                "reasons": ["envelope | failed\nbadly", "<b>not bold</b> & more"]
            },
            "incomplete": true,
            "layers": {
                "functional": {"status": "closed", "summary": "ran & passed", "untested": ["a|b", "<c>"]},
                "envelope": {"summary": "no status"},
                "custom": {"status": "partial", "summary": 5, "untested": [1, null]}
            },
            "run": {
                "artifact": {"name": "edge <&>"},
                "started": "2027-01-01T00:00:00Z",
                "finished": "2027-01-01T00:01:00Z",
                "qualify_version": "0.1.0",
                "spec": {"path": "edge/qualify.toml"}
            },
            "tested": {
                "hostname": "host<1>",
                "cores_allowed": 2,
                "backend": "cgroup1",
                "axes": [
                    {"name": "threads", "kind": "concurrency"},
                    {"name": "mode"},
                    {"name": "size", "kind": "workload"}
                ]
            },
            "target": {"concurrency": 64, "workload": {"size": 1e8}},
            "gap": [
                {"name": "workload", "axis": "size", "target": 1e8, "tested": 1.5e7,
                 "detail": "examined up to 1.5e7", "waiver": "accepted | by ops"},
                {"name": "cores", "target": 64, "tested": 2, "detail": "2 of 64"},
                {"axis": "x", "target": 5, "detail": "nameless"},
                {"name": "nodes", "target": 0, "tested": null, "waiver": ""},
                {"name": "memory", "target": "lots", "tested": 1, "waiver": "  "},
                {"name": 5, "target": 10, "tested": 3}
            ],
            "checklist": {
                "claim": "production <claim>",
                "examined_facts": [1, "two", null],
                "target_only_facts": [],
                "assumptions": "not a list",
                "failure_behaviour": {},
                "traceability": [
                    {"item": "artifact"},
                    {"item": "spec", "recorded": false, "detail": "<none>"},
                    {"recorded": true}
                ]
            },
            "boundaries": [
                {"axis": "size", "fixed": {"threads": 1, "mode": "fast-with-locks"}, "last_pass": 15000000,
                 "first_fail": null, "probes": 4, "monotonic": false},
                {"axis": "threads", "fixed": {}, "last_pass": 2, "first_fail": 4,
                 "outcome": "deadlock", "monotonic": true},
                {"axis": "size", "last_pass": 1000000, "first_fail": 2000000, "outcome": "oom_killed",
                 "probes": 3}
            ],
            "cells": cells,
            "performance": {
                "repeat": 3,
                "warmup": 1,
                "metrics": [
                    {"name": "wall", "unit": "s", "better": "lower"},
                    {"name": "ops", "unit": "", "better": "higher"},
                    {"name": "rss"}
                ],
                "errors": ["ops did not parse at threads=8 | size=1e6", "<second>"],
                "stats": stats,
                "models": [
                    {"axis": "threads", "metric": "wall", "fixed": {"size": 1000000, "mode": "fast-with-locks"},
                     "form": "", "exponent": -1.5, "log_exponent": 1, "coefficients": [0.0001, 0.002],
                     "error": 0.03, "points": 4, "exponent_ci95": [-1.6, -1.4]},
                    {"axis": "threads", "metric": "wall", "fixed": {"size": 1000000, "mode": "safe"},
                     "exponent": 0, "log_exponent": 0, "coefficients": [0.0005, 0.0001]},
                    {"axis": "threads", "metric": "wall", "fixed": {"size": 2000000, "mode": "fast-with-locks"},
                     "coefficients": [0.003]},
                    {"axis": "threads", "metric": "wall", "fixed": {"size": 3000000, "mode": "fast-with-locks"},
                     "exponent": 1, "log_exponent": 2, "coefficients": [0.001, 0.0001]}
                ],
                "scaling": [
                    {"axis": "threads", "metric": "ops", "fixed": {"size": 1000000, "mode": "fast-with-locks"},
                     "points": [
                        {"p": 1, "value": 100, "speedup": 1, "efficiency": 1, "karp_flatt": null},
                        {"p": 2, "value": 181.8, "speedup": 1.818, "efficiency": 0.909, "karp_flatt": 0.1},
                        {"p": 4, "value": 307.7, "speedup": 3.077, "efficiency": 0.769, "karp_flatt": 0.1},
                        {"p": 8, "value": 470.6, "speedup": 4.706, "efficiency": 0.588, "karp_flatt": 0.1}
                     ],
                     "amdahl": {"f": 0.1},
                     "usl": {"sigma": 0.05, "kappa": 0.001}},
                    {"axis": "threads", "metric": "wall", "fixed": {"size": 2000000, "mode": "safe"},
                     "points": [
                        {"p": 1, "value": 0.002},
                        {"p": 2, "value": 0.0011, "speedup": 1.82},
                        {"p": "four", "value": 0.0007}
                     ],
                     "amdahl": {"weird": 1}},
                    {"axis": "threads", "metric": "wall", "fixed": {}, "points": []}
                ],
                "checks": [
                    {"kind": "min_efficiency", "axis": "", "metric": "ops", "limit": 0.5,
                     "observed": 0.588, "interval": [0.55, 0.62], "passed": true,
                     "detail": "lowest efficiency | 0.588"},
                    {"kind": 7, "passed": null, "detail": "a|b\nc <d>"},
                    {"kind": "max_exponent", "axis": "threads", "metric": "wall", "limit": 2,
                     "observed": 1.5, "interval": [1.4, 1.6], "passed": false}
                ],
                "predictions": [
                    {"axis": "threads", "at": 64, "metric": "ops", "value": 900, "model": "usl", "note": ""},
                    {"axis": "threads", "at": 64, "metric": "wall", "value": 0.00002, "model": "n^-1.5",
                     "note": "model prediction, not evidence"},
                    {"axis": "size", "metric": "wall", "model": "?", "note": "no position | <x>"}
                ]
            }
        }
    })
}

/// `tests/fixtures/faults.json` is a copy of the evidence crate's golden receipt (a fault axis,
/// dependencies, a fault cell with every field of `result.faults`): when that receipt is
/// re-blessed, copy it here and re-bless these.
#[test]
fn the_faults_fixture_is_the_evidence_crates_golden_receipt() {
    let evidence = format!(
        "{}/../qualify-evidence/src/tests/golden/receipt.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let evidence: Value =
        serde_json::from_str(&std::fs::read_to_string(evidence).unwrap()).unwrap();
    assert!(
        evidence == fixture("faults"),
        "copy crates/qualify-evidence/src/tests/golden/receipt.json to tests/fixtures/faults.json and re-bless"
    );
}

/// Fault records as another writer might leave them: one object instead of an array, mistyped
/// and missing fields, entries that are not objects, hostile text.
fn faults_mistyped() -> Value {
    json!({"predicate": {"cells": [
        {"params": {"db_fault": "down"}, "result": {"outcome": "ok", "faults": {
            "dependency": "db", "fault": "down | <b>",
            "behaviour": {"verdict": "retry_storm", "recovery_seconds": "soon",
                          "amplification_during": {"requests": 11}, "pool": {"connections": "ten"}}}}},
        {"params": {"db_fault": "none"}, "result": {"outcome": "lost_writes", "faults": [
            7, null,
            {"dependency": null, "fault": "none",
             "behaviour": {"verdict": "loses_writes", "recovery_seconds": null, "detail": "lost 1\nof 2"},
             "restart": {"at_seconds": "x", "ready_after_seconds": null},
             "writes": {"acknowledged": 2, "lost": 1, "first_lost": [5], "unexpected": 1}}]}},
        {"params": {}, "result": {"outcome": "ok", "faults": "down"}}
    ]}})
}

/// Service cells' `result.load` as another writer might leave it: a closed model, a cell that
/// answered nothing (no latency), a generator that was the bottleneck, memory growth and a slow
/// shutdown, mistyped and missing fields, a load that is not an object, hostile text.
fn service_mistyped() -> Value {
    json!({"predicate": {
        "tested": {"axes": [{"name": "users", "kind": "load"}, {"name": "mode", "kind": "workload"}]},
        "cells": [
            {"params": {"users": 8, "mode": "a|b"}, "result": {"outcome": "ok", "flags": ["slow_shutdown", "memory_growth"], "load": {
                "model": "closed", "users": 8, "achieved_rate": 812.5, "sent": 4000, "completed": 3990,
                "dropped": 0, "errors": {"timeout": 10, "status_5xx": 0, "weird_class": 2, "other": "x"},
                "latency": {"corrected": {"p50": 0.009, "p99": 0.02, "max": 0.5},
                            "uncorrected": {"p50": 0.009, "p99": "fast"}},
                "slo": [{"metric": "latency_p99", "bound": "max", "limit": 0.05, "value": 0.02, "held": true},
                        {"metric": "error_rate", "bound": "max", "limit": 0.01, "value": 0.003, "held": true, "implicit": true},
                        {"metric": "throughput", "bound": "min", "limit": 500, "value": null, "held": "yes"}],
                "verdict": "<b>kept up</b> | fine\nsecond line",
                "stop": "killed after the grace",
                "memory_growth": {"grew_steadily": true, "slope_bytes_per_second": 2097152, "seconds_to_ceiling": 75},
                "timeline": [{"second": 0, "sent": 800, "completed": 790, "errors": 2, "p99": 0.02},
                             {"sent": "many", "completed": 800, "p99": null},
                             {"second": 2, "sent": 800, "completed": 810, "errors": 8, "p99": 0.03}],
                "generator": {"cpu_seconds": 0.4, "saturated": false}}}},
            {"params": {"users": 64, "mode": "a|b"}, "result": {"outcome": "unavailable", "load": {
                "model": "closed", "users": 64, "achieved_rate": 0, "sent": 30, "completed": 0,
                "errors": {"refused": 30}, "latency": {"corrected": {}, "uncorrected": {}},
                "slo": [], "verdict": "refused connections while alive", "timeline": []}}},
            {"params": {"users": 32, "mode": "a|b"}, "result": {"outcome": "interrupted", "load": {
                "model": "closed", "users": 32, "achieved_rate": 900,
                "latency": {"corrected": {"p50": 0.03, "p99": 0.2}},
                "generator": {"saturated": true}, "verdict": "not evidence about the service"}}},
            {"params": {"users": 16, "mode": "a|b"}, "result": {"outcome": "ok", "load": {}}},
            {"params": {"users": 4, "mode": "a|b"}, "result": {"outcome": "ok", "load": "none"}}
        ]
    }})
}

fn cases() -> Vec<(&'static str, Value)> {
    vec![
        ("transfer", fixture("transfer")),
        ("index", fixture("index")),
        ("perf", fixture("perf")),
        ("quadratic", fixture("quadratic")),
        ("rounds", fixture("rounds")),
        ("perf-measured-only", measured_only()),
        ("transfer-target-reached", target_reached()),
        ("edge", edge()),
        ("faults", fixture("faults")),
        ("faults-mistyped", faults_mistyped()),
        ("orders", fixture("orders")),
        ("service-mistyped", service_mistyped()),
        ("empty", json!({})),
        ("bare", json!({"predicate": {}})),
        (
            "mistyped",
            json!({"predicate": {"layers": "nope", "cells": 3, "performance": []}}),
        ),
        (
            "sparse",
            json!({"predicate": {"cells": [{"params": {}, "result": {}}],
                   "performance": {"stats": [{"metric": "wall"}], "models": [{"axis": "n"}],
                                   "scaling": [{"axis": "t", "points": [{"p": 1}]}]}}}),
        ),
    ]
}

fn golden_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

/// Compare `text` with the golden file `name` (or write it under `QUALIFY_BLESS`); the first
/// differing line on failure.
fn check(name: &str, text: &str) -> Result<(), String> {
    let path = golden_dir().join(name);
    if std::env::var_os("QUALIFY_BLESS").is_some() {
        std::fs::create_dir_all(golden_dir()).unwrap();
        std::fs::write(&path, text).unwrap();
        return Ok(());
    }
    let golden = std::fs::read_to_string(&path).map_err(|e| {
        format!(
            "{}: {e}; create it with QUALIFY_BLESS=1 cargo test -p qualify-render --test golden",
            path.display()
        )
    })?;
    if text == golden {
        return Ok(());
    }
    let (line, (got, want)) = text
        .lines()
        .zip(golden.lines())
        .enumerate()
        .find(|(_, (a, b))| a != b)
        .unwrap_or((
            text.lines().count().min(golden.lines().count()),
            ("<end>", "<end>"),
        ));
    Err(format!(
        "{name} changed at line {}:\n  golden: {want}\n  now:    {got}",
        line + 1
    ))
}

#[test]
fn every_renderer_matches_its_golden_output() {
    let mut failures = Vec::new();
    for (case, receipt) in cases() {
        for (ext, text) in [
            ("html", qualify_render::html(&receipt)),
            ("md", qualify_render::markdown(&receipt)),
            ("junit.xml", qualify_render::junit(&receipt)),
            ("extrap.jsonl", qualify_render::extrap_jsonl(&receipt)),
            (
                "terminal.txt",
                qualify_render::terminal::run_summary(
                    &qualify_render::view::View::new(&receipt),
                    "receipt.json",
                    false,
                ),
            ),
        ] {
            if let Err(e) = check(&format!("{case}.{ext}"), &text) {
                failures.push(e);
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{}\n(re-bless with QUALIFY_BLESS=1 only if the change is deliberate)",
        failures.join("\n")
    );
}

#[test]
fn the_edge_receipt_reaches_the_sections_it_is_built_for() {
    // Guards the golden's coverage: if a renderer stopped drawing these, the golden would be
    // re-blessed without them.
    let r = edge();
    let html = qualify_render::html(&r);
    let md = qualify_render::markdown(&r);
    for needle in [
        "interrupted run",
        "<td>custom</td>",
        "Each square merges the cells over size",
        "rotate(-55)",
        "weird_outcome</span>",
        "<p class=\"meta\">… and ",
        "no failure found",
        "NOT monotonic",
        "monotonicity not checked",
        "The performance analysis reported errors",
        "more series not drawn",
        "constant ",
        "log2(threads)",
        "Amdahl fit: <code>",
        "required efficiency ≥ 0.5",
        "not decided",
        "(waived)",
        "<h3>Traceability</h3>",
    ] {
        assert!(html.contains(needle), "html: {needle}");
    }
    for needle in [
        "> **Interrupted run:**",
        "\n… and ",
        "### Performance analysis errors",
        "⚪ not decided",
        "| .x | 5 |",
    ] {
        assert!(md.contains(needle), "md: {needle}");
    }
}
