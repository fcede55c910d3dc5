//! The renderers on real receipts (`tests/fixtures/transfer.json` and `index.json` were written
//! by `qualify run` on the bundled examples; `perf.json` adds a hand-written
//! `predicate.performance`; `rounds.json` is `qualify run` with `[performance]` in rounds over a
//! short range, with noisy cells and inconclusive checks; `orders.json` is `qualify run` on the
//! orders service example over workers [2, 4] × rps [100, 180, 600], with ok, slo_violated and
//! overloaded cells) and on hostile or incomplete input.

use std::collections::BTreeSet;

use quick_xml::Reader;
use quick_xml::events::Event;
use serde_json::{Value, json};

fn fixture(name: &str) -> Value {
    let path = format!("{}/tests/fixtures/{name}.json", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn cells(r: &Value) -> &Vec<Value> {
    r["predicate"]["cells"].as_array().unwrap()
}

fn non_ok(r: &Value) -> usize {
    cells(r)
        .iter()
        .filter(|c| c["result"]["outcome"] != "ok")
        .count()
}

fn assert_self_contained(html: &str) {
    let lower = html.to_lowercase();
    for bad in [
        "<script", "src=", "href=", "url(", "@import", "http://", "https://", "<link", "<iframe",
    ] {
        assert!(!lower.contains(bad), "the report contains `{bad}`");
    }
    assert!(lower.starts_with("<!doctype html>"));
    assert!(lower.trim_end().ends_with("</html>"));
}

// ---------------------------------------------------------------------------------------------
// HTML

#[test]
fn html_has_verdict_layers_and_one_heatmap_for_an_envelope_only_receipt() {
    let r = fixture("transfer");
    let html = qualify_render::html(&r);
    assert_self_contained(&html);
    assert_eq!(html.matches("<svg").count(), 1, "heatmap only");
    assert!(html.contains("aria-label=\"envelope heatmap\""));
    assert!(html.contains("trial claim NOT SUPPORTED"));
    for layer in [
        "functional",
        "process",
        "envelope",
        "performance",
        "reproducibility",
    ] {
        assert!(html.contains(&format!("<td>{layer}</td>")), "{layer}");
    }
    // 3 threads × 2 rounds squares, each with a symbol; 4 deadlocks and 2 ok.
    assert_eq!(html.matches(">D</text>").count(), 4);
    assert_eq!(html.matches(">✓</text>").count(), 2);
    assert!(html.contains("deadlock (4)"));
    assert!(
        !html.contains("<h2>Performance</h2>"),
        "no performance data, no section"
    );
    assert!(html.contains("Admission checklist"));
}

#[test]
fn html_one_axis_is_a_strip_and_boundaries_are_listed() {
    let r = fixture("index");
    let html = qualify_render::html(&r);
    assert_self_contained(&html);
    assert_eq!(html.matches("<svg").count(), 1);
    assert_eq!(html.matches(">M</text>").count(), non_ok(&r));
    assert!(html.contains("<h2>Boundaries</h2>"));
    assert!(html.contains("last pass 63557, first fail 63558 (oom_killed)"));
}

#[test]
fn html_draws_a_multi_node_sweep_nodes_by_ranks_whatever_the_axis_order() {
    // A workload axis first, then the topology: the map is still nodes ↓ × ranks →.
    let mut cells = Vec::new();
    for bytes in [10, 20] {
        for nodes in [1, 2, 3] {
            for ranks in [2, 3] {
                let outcome = if nodes > 1 { "deadlock" } else { "ok" };
                cells.push(json!({
                    "params": {"bytes": bytes, "nodes": nodes, "ranks": ranks},
                    "result": {"outcome": outcome, "detail": format!("node{nodes} rank 0: MPI_Recv")},
                }));
            }
        }
    }
    let axis = |name: &str, kind: &str| json!({"name": name, "kind": kind, "values": []});
    let r = json!({"predicate": {
        "claim": {"level": "trial"},
        "cells": cells,
        "tested": {"axes": [axis("bytes", "workload"), axis("nodes", "topology"), axis("ranks", "topology")]},
    }});
    let html = qualify_render::html(&r);
    assert_self_contained(&html);
    assert!(
        html.contains(r#"class="ptitle">ranks →</text>"#),
        "columns are the ranks"
    );
    assert!(
        html.contains(r#"class="ptitle">nodes ↓</text>"#),
        "rows are the nodes"
    );
    assert!(
        html.contains("Each square merges the cells over bytes"),
        "the other axis is merged"
    );
}

#[test]
fn html_performance_plots_checks_predictions_and_gap() {
    let r = fixture("perf");
    let html = qualify_render::html(&r);
    assert_self_contained(&html);
    // heatmap, scaling curves (n), speedup, efficiency, target gap.
    assert_eq!(html.matches("<svg").count(), 5, "one <svg> per plot");
    for label in [
        "envelope heatmap",
        "wall against n, log-log, with fitted model",
        "speedup against threads",
        "parallel efficiency against threads",
        "target gap",
    ] {
        assert!(html.contains(&format!("aria-label=\"{label}\"")), "{label}");
    }
    // One fitted curve per model (solid inside the measured range, dashed beyond it).
    assert!(html.matches("<polyline").count() >= 3);
    // 18 medians with whiskers; the censored cell is hollow.
    assert!(html.contains("1 run(s) censored"));
    assert!(html.contains("Model predictions (not evidence)"));
    assert!(html.contains("FAILED"), "the failed efficiency check");
    assert!(html.contains("required efficiency ≥ 0.6"));
    assert!(html.contains("target n=1e9"));
    assert!(html.contains("(waived)"));
    assert!(html.contains("≥ "), "censored medians are lower bounds");
}

#[test]
fn rounds_noise_plausible_terms_and_inconclusive_checks_are_shown() {
    // Written by `qualify run` with `[performance]` (repeat auto, seed 11, max_repeat 6) on
    // complexity.c's quadratic mode over n = 1000..2000.
    let r = fixture("rounds");
    let perf = &r["predicate"]["performance"];
    let rounds = perf["rounds"]["rounds"].as_u64().unwrap_or(0);
    let html = qualify_render::html(&r);
    assert_self_contained(&html);
    assert!(
        html.contains("repeat auto: 6 round(s), seed 11"),
        "rounds and seed"
    );
    // One noise plot per metric with a whisker per round.
    for metric in ["wall", "cpu", "peak_memory"] {
        let label = format!("{metric} by round: runs relative to the estimate of their cell");
        assert!(html.contains(&format!("aria-label=\"{label}\"")), "{label}");
    }
    let whiskers = html.matches("lowest to highest run of the round").count();
    assert_eq!(whiskers, 3, "one legend entry per noise plot");
    // A whisker (and its title) for every round of every plotted metric.
    assert!(rounds >= 5);
    for r in 1..=rounds {
        assert_eq!(
            html.matches(&format!("<title>round {r}: ")).count(),
            3,
            "round {r}"
        );
    }
    assert!(html.contains("were noisy</b>"), "the noisy cells' note");
    assert!(html.contains("inconclusive"));
    assert!(html.contains("Models and the terms the data cannot rule out"));
    assert!(html.contains("cpu (min)"), "the estimator is named");
    let md = qualify_render::markdown(&r);
    assert!(
        md.contains("**Performance runs:** repeat auto, 6 round(s), seed 11"),
        "{md}"
    );
    assert!(md.contains("### Noisy cells"), "{md}");
    assert!(md.contains("⚠️ inconclusive | max_exponent"), "{md}");
    assert!(md.contains("| also plausible |"), "{md}");
}

#[test]
fn html_renders_performance_as_qualify_run_writes_it() {
    // Written by `qualify run examples/perf/quadratic.toml`: four metrics along one workload axis.
    let r = fixture("quadratic");
    let html = qualify_render::html(&r);
    assert_self_contained(&html);
    assert_eq!(
        html.matches("<svg").count(),
        5,
        "strip + wall, cpu, peak_memory, work"
    );
    for metric in ["wall", "cpu", "peak_memory", "work"] {
        let label = format!("aria-label=\"{metric} against n, log-log, with fitted model\"");
        assert!(html.contains(&label), "{metric}");
    }
    assert!(
        html.contains("·n^2 (exponent 95% CI [2, 2])"),
        "the receipt's form and CI"
    );
    assert!(
        html.contains("constant "),
        "a constant model is shown as one number"
    );
    // Outliers are run indices in the receipt; the table names the run and its value.
    assert!(html.contains("run 4: "));
    let md = qualify_render::markdown(&r);
    assert!(md.contains("| n | cpu | — | n^2 | 2 [2, 2] |"), "{md}");
    let lines = qualify_render::extrap_jsonl(&r).lines().count();
    let values: usize = r["predicate"]["performance"]["stats"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["values"].as_array().unwrap().len())
        .sum();
    assert_eq!(lines, values);
}

#[test]
fn html_without_models_plots_measured_medians_per_axis() {
    let mut r = fixture("perf");
    let perf = r["predicate"]["performance"].as_object_mut().unwrap();
    perf.remove("models");
    perf.remove("scaling");
    perf.remove("predictions");
    let html = qualify_render::html(&r);
    assert_self_contained(&html);
    // heatmap, wall vs n, wall vs threads (both measured only), target gap.
    assert_eq!(html.matches("<svg").count(), 4);
    assert!(html.contains("aria-label=\"wall against n, log-log, measured only\""));
    assert!(html.contains("aria-label=\"wall against threads, log-log, measured only\""));
    assert!(!html.contains("model beyond the measured range"));
    assert!(!html.contains("speedup against"));
}

#[test]
fn html_tolerates_missing_and_mistyped_parts() {
    for r in [
        json!({}),
        json!({"predicate": {}}),
        json!({"predicate": {"layers": "nope", "cells": 3, "performance": []}}),
        json!({"predicate": {"cells": [{"params": {}, "result": {}}],
               "performance": {"stats": [{"metric": "wall"}], "models": [{"axis": "n"}],
                               "scaling": [{"axis": "t", "points": [{"p": 1}]}]}}}),
    ] {
        let html = qualify_render::html(&r);
        assert_self_contained(&html);
        assert!(html.contains("not_run"), "missing layers show as not_run");
        let _ = qualify_render::markdown(&r);
        let _ = qualify_render::junit(&r);
        let _ = qualify_render::extrap_jsonl(&r);
    }
}

#[test]
fn html_escapes_receipt_text() {
    let mut r = fixture("transfer");
    r["predicate"]["cells"][2]["result"]["detail"] = json!("<script>alert(1)</script> & \"q\"");
    r["predicate"]["run"]["artifact"]["name"] = json!("a<b>");
    let html = qualify_render::html(&r);
    assert!(!html.contains("<script>"));
    assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;q&quot;"));
    assert!(html.contains("qualify report: a&lt;b&gt;"));
}

// ---------------------------------------------------------------------------------------------
// Markdown

#[test]
fn markdown_has_verdict_layer_table_failing_cells_and_boundaries() {
    let r = fixture("transfer");
    let md = qualify_render::markdown(&r);
    assert!(md.starts_with("## qualify: transfer — ❌ trial claim NOT SUPPORTED"));
    assert!(md.contains("| layer | status | summary | untested |\n|---|---|---|---|\n"));
    assert!(md.contains("| functional | ✅ closed | `./transfer --check` exited ok | — |"));
    assert!(md.contains("| envelope | ❌ failed |"));
    assert_eq!(md.matches("| deadlock |").count(), 4);
    assert!(
        md.contains("| threads=2, rounds=10 | deadlock |"),
        "cells in axis order"
    );
    assert!(md.contains("6 cell(s), 2 ended ok, 4 did not."));

    let md = qualify_render::markdown(&fixture("index"));
    assert!(md.contains("### Boundaries\n\n- records: last pass 63557, first fail 63558"));

    let md = qualify_render::markdown(&fixture("perf"));
    assert!(md.contains("### Performance checks"));
    assert!(md.contains("| ❌ FAILED | min_efficiency | threads | wall | 0.6 |"));
    assert!(md.contains("### Target gap"));
    assert!(md.contains("| workload.n | 1e9 | 1e8 |"));
    assert!(md.contains("### Model predictions (not evidence)"));
}

#[test]
fn markdown_table_cells_survive_pipes_and_newlines() {
    let mut r = fixture("transfer");
    r["predicate"]["cells"][2]["result"]["detail"] = json!("a | b\nc");
    let md = qualify_render::markdown(&r);
    assert!(md.contains("a \\| b c"));
}

// ---------------------------------------------------------------------------------------------
// JUnit

struct Junit {
    suites: usize,
    cases: Vec<(String, String)>,
    failures: Vec<(String, String)>,
    skipped: usize,
    tests_attr: usize,
    failures_attr: usize,
}

fn parse_junit(xml: &str) -> Junit {
    let mut reader = Reader::from_str(xml);
    let mut j = Junit {
        suites: 0,
        cases: vec![],
        failures: vec![],
        skipped: 0,
        tests_attr: 0,
        failures_attr: 0,
    };
    loop {
        match reader.read_event() {
            Ok(Event::Start(e)) | Ok(Event::Empty(e)) => {
                let attr = |k: &str| {
                    e.attributes()
                        .map(|a| a.unwrap())
                        .find(|a| a.key.as_ref() == k.as_bytes())
                        .map(|a| {
                            a.normalized_value(quick_xml::XmlVersion::default())
                                .unwrap()
                                .into_owned()
                        })
                        .unwrap_or_default()
                };
                match e.name().as_ref() {
                    b"testsuite" => {
                        j.suites += 1;
                        j.tests_attr = attr("tests").parse().unwrap();
                        j.failures_attr = attr("failures").parse().unwrap();
                    }
                    b"testcase" => j.cases.push((attr("classname"), attr("name"))),
                    b"failure" => j.failures.push((attr("type"), attr("message"))),
                    b"skipped" => j.skipped += 1,
                    _ => {}
                }
            }
            Ok(Event::Eof) => break,
            Ok(_) => {}
            Err(e) => panic!(
                "not well-formed XML at {}: {e}\n{xml}",
                reader.buffer_position()
            ),
        }
    }
    j
}

#[test]
fn junit_one_testcase_per_cell_and_a_failure_per_non_ok_cell() {
    for name in ["transfer", "index", "perf"] {
        let r = fixture(name);
        let j = parse_junit(&qualify_render::junit(&r));
        assert_eq!(j.suites, 1);
        assert_eq!(j.cases.len(), cells(&r).len(), "{name}");
        assert_eq!(j.tests_attr, cells(&r).len());
        assert_eq!(j.failures.len(), non_ok(&r), "{name}");
        assert_eq!(j.failures_attr, non_ok(&r));
        let artifact = r["predicate"]["run"]["artifact"]["name"].as_str().unwrap();
        assert!(j.cases.iter().all(|(c, _)| c == artifact));
        let names: BTreeSet<&String> = j.cases.iter().map(|(_, n)| n).collect();
        assert_eq!(names.len(), j.cases.len(), "cell names are unique");
    }
    let j = parse_junit(&qualify_render::junit(&fixture("transfer")));
    assert!(
        j.cases
            .contains(&("transfer".into(), "threads=2, rounds=10".into()))
    );
    assert_eq!(j.failures[0].0, "deadlock");
    assert!(j.failures[0].1.starts_with("deadlock: all 3 thread(s)"));
}

#[test]
fn junit_escapes_and_marks_interrupted_cells_skipped() {
    let mut r = fixture("transfer");
    r["predicate"]["cells"][0]["params"] = json!({"mode": "<&\"'>", "threads": 1});
    r["predicate"]["cells"][2]["result"]["detail"] = json!("]]> <x> & \u{1} \"end\"");
    r["predicate"]["cells"][3]["result"]["outcome"] = json!("interrupted");
    r["predicate"]["run"]["artifact"]["name"] = json!("a&b");
    let j = parse_junit(&qualify_render::junit(&r));
    assert!(
        j.cases
            .contains(&("a&b".into(), "threads=1, mode=<&\"'>".into()))
    );
    assert_eq!(j.skipped, 1);
    assert_eq!(j.failures.len(), 3);
    assert!(
        j.failures
            .iter()
            .any(|(_, m)| m.contains("]]> <x> & \u{FFFD} \"end\""))
    );
}

// ---------------------------------------------------------------------------------------------
// Extra-P JSON Lines

fn lines(text: &str) -> Vec<Value> {
    assert!(text.is_empty() || text.ends_with('\n'));
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

fn assert_extrap_shape(ls: &[Value]) {
    let first: BTreeSet<&String> = ls[0]["params"].as_object().unwrap().keys().collect();
    for l in ls {
        let keys: BTreeSet<&String> = l["params"].as_object().unwrap().keys().collect();
        assert_eq!(
            keys, first,
            "every line has the same parameters (Extra-P reads them by name)"
        );
        assert!(
            l["params"]
                .as_object()
                .unwrap()
                .values()
                .all(Value::is_number)
        );
        assert!(l["value"].is_number());
        assert!(l["metric"].is_string() && l["callpath"].is_string());
    }
}

#[test]
fn extrap_exports_every_repeat_from_performance_stats() {
    let r = fixture("perf");
    let ls = lines(&qualify_render::extrap_jsonl(&r));
    let expected: usize = r["predicate"]["performance"]["stats"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["values"].as_array().unwrap().len())
        .sum();
    assert_eq!(ls.len(), expected);
    assert_eq!(
        ls.len(),
        18 * 5 - 1,
        "the censored run is not a measurement"
    );
    assert_extrap_shape(&ls);
    assert!(
        ls.iter()
            .all(|l| l["metric"] == "wall" && l["callpath"] == "sumsq")
    );
    let at = ls
        .iter()
        .filter(|l| l["params"] == json!({"threads": 2, "n": 1000}))
        .count();
    assert_eq!(at, 5);
}

#[test]
fn extrap_without_performance_exports_ok_cells_only() {
    let r = fixture("transfer");
    let ls = lines(&qualify_render::extrap_jsonl(&r));
    let ok = cells(&r).len() - non_ok(&r);
    assert_eq!(ls.len(), ok * 3, "wall, cpu and peak_memory per ok cell");
    assert_extrap_shape(&ls);
    let metrics: BTreeSet<&str> = ls.iter().map(|l| l["metric"].as_str().unwrap()).collect();
    assert_eq!(metrics, BTreeSet::from(["cpu", "peak_memory", "wall"]));
    assert!(ls.iter().all(|l| l["params"]["threads"] == 1));
}

#[test]
fn extrap_moves_non_numeric_parameters_into_the_callpath() {
    let mut r = fixture("transfer");
    for (i, c) in r["predicate"]["cells"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .enumerate()
    {
        c["params"]["mode"] = json!(if i % 2 == 0 { "fast" } else { "safe" });
        c["result"]["outcome"] = json!("ok");
    }
    let ls = lines(&qualify_render::extrap_jsonl(&r));
    assert_eq!(ls.len(), 6 * 3);
    assert_extrap_shape(&ls);
    assert!(ls.iter().any(|l| l["callpath"] == "transfer->mode=fast"));
    assert!(ls.iter().any(|l| l["callpath"] == "transfer->mode=safe"));
}

// ---------------------------------------------------------------------------------------------
// Claimed region and headroom

/// The index receipt as a claim up to 40,000 records: its boundary (first fail 63,558) lies
/// beyond the target, a headroom of 1.59×, short of a demanded 2×.
fn index_with_claim() -> Value {
    let mut r = fixture("index");
    let p = &mut r["predicate"];
    p["boundaries"][0]["headroom"] = json!(1.589);
    p["claimed_region"] = json!([{
        "axis": "records",
        "kind": "workload",
        "bound": {"value": 40000.0, "source": "target.workload.records", "harder": "larger"},
        "claims": "records ≤ 40000 (target.workload.records)",
        "cells_beyond": 12,
        "headroom": {"ratio": 1.589, "first_fail": 63558, "outcome": "oom_killed", "source": "boundary"},
        "required_headroom": 2.0
    }]);
    r
}

#[test]
fn the_claimed_region_and_headroom_are_shown_in_both_renderers() {
    let r = index_with_claim();
    let html = qualify_render::html(&r);
    assert!(html.contains("<h2>Claimed region</h2>"), "{html}");
    assert!(html.contains("records ≤ 40000 (target.workload.records)"));
    assert!(html.contains("oom_killed at records=63558 (boundary): 1.59× the target"));
    assert!(
        html.contains("headroom 1.59× the target"),
        "boundary sentence"
    );
    assert!(
        html.contains("<td class=\"no\">"),
        "short headroom is marked"
    );
    assert_self_contained(&html);
    let md = qualify_render::markdown(&r);
    assert!(md.contains("### Claimed region"), "{md}");
    assert!(md.contains("| records | records ≤ 40000 (target.workload.records) | 12 | ❌ oom_killed at records=63558 (boundary): 1.59× the target | 2× |"), "{md}");
    assert!(md.contains("headroom 1.59× the target"), "{md}");
    // Without a bounded axis (receipts before the claimed region existed) nothing is drawn.
    let plain = fixture("index");
    assert!(!qualify_render::html(&plain).contains("Claimed region"));
    assert!(!qualify_render::markdown(&plain).contains("Claimed region"));
}

#[test]
fn the_signature_line_says_what_the_caller_checked() {
    use qualify_render::view::Signature;
    let r = fixture("transfer");
    let verified = qualify_render::markdown_signed(
        &r,
        Signature::Verified {
            keyid: "abc123".into(),
        },
    );
    assert!(
        verified.contains("signature: verified by key abc123"),
        "{verified}"
    );
    let unchecked = qualify_render::html_signed(
        &r,
        Signature::NotChecked {
            keyids: vec!["abc123".into()],
        },
    );
    assert!(unchecked.contains("signature: NOT CHECKED"), "{unchecked}");
    assert!(!qualify_render::markdown(&r).contains("signature:"));
}

// ---------------------------------------------------------------------------------------------
// Faults

/// The Faults section reads what `qualify_model::FaultRecord` writes (re-exported by
/// `qualify_evidence::faults`): every column of a record built with those types shows up.
#[test]
fn the_faults_section_reads_what_the_evidence_crate_writes() {
    use qualify_evidence::faults::*;
    let record = FaultRecord {
        dependency: Some("db".into()),
        fault: "down".into(),
        behaviour: BehaviourRecord {
            verdict: "retry_storm".into(),
            detail: "retried 11.0× per request".into(),
            recovery_seconds: Some(1.25),
            amplification_before: Some(AmplificationRecord {
                requests: 1.0,
                connections: 0.01,
            }),
            amplification_during: Some(AmplificationRecord {
                requests: 11.0,
                connections: 11.0,
            }),
            amplification_after: Some(AmplificationRecord {
                requests: 1.5,
                connections: 0.02,
            }),
            pool: Some(PoolRecord {
                connections: 10,
                all_busy: true,
                requests_queued: true,
            }),
            expected: Some(vec!["fails_fast".into()]),
            ..BehaviourRecord::default()
        },
        phases: Some(PhasesRecord {
            before: PhaseRecord {
                requests: 300,
                succeeded: 300,
                seconds: 3.0,
                ..PhaseRecord::default()
            },
            during: PhaseRecord {
                requests: 300,
                errors: 300,
                fast_errors: 300,
                fast_error_p99: Some(0.205),
                seconds: 3.0,
                ..PhaseRecord::default()
            },
            after: PhaseRecord {
                requests: 200,
                succeeded: 200,
                seconds: 2.0,
                ..PhaseRecord::default()
            },
        }),
        restart: Some(RestartRecord {
            signal: "SIGKILL".into(),
            at_seconds: 5.0,
            ready_after_seconds: Some(1.4),
            errors_during_restart: 37,
        }),
        writes: Some(WritesRecord {
            acknowledged: 4812,
            lost: 2,
            unread: 3,
            first_lost: vec![17, 18],
            ..WritesRecord::default()
        }),
        ..FaultRecord::default()
    };
    let receipt = json!({"predicate": {
        "tested": {"axes": [{"name": "rps"}, {"name": "db_fault"}]},
        "cells": [
            {"params": {"db_fault": "down", "rps": 200},
             "result": {"outcome": "lost_writes", "faults": serde_json::to_value([&record]).unwrap()}},
            {"params": {"db_fault": "none", "rps": 200}, "result": {"outcome": "ok"}}
        ]
    }});
    let md = qualify_render::markdown(&receipt);
    let section = md.split("### Faults").nth(1).unwrap_or("");
    let row = section
        .lines()
        .find(|l| l.starts_with("| rps=200, db_fault=down |"))
        .unwrap_or_else(|| panic!("no fault row in\n{md}"));
    for part in [
        "| db | down | ❌ retry_storm | fails_fast | 300 fast errors (p99 205 ms), 0 timeouts | 100/s / 0/s / 100/s | 1.25 s | 1× / 11× / 1.5× |",
        "| 10 connections, all busy, requests queued |",
        "| SIGKILL at 5 s: ready after 1.4 s, 37 errors |",
        "| 2 of 4812 acknowledged lost (first: 17, 18), 3 not read back |",
        "| ❌ lost_writes | retried 11.0× per request |",
    ] {
        assert!(row.contains(part), "`{part}` not in {row}");
    }
    // One row: the cell without faults has none.
    assert_eq!(section.matches("| rps=200, db_fault=").count(), 1);
    let html = qualify_render::html(&receipt);
    assert_self_contained(&html);
    assert!(html.contains("<h2>Faults</h2>"));
    assert!(html.contains("<td>SIGKILL at 5 s: ready after 1.4 s, 37 errors</td>"));
    assert!(
        html.contains("<td class=\"st st-failed\"><b>retry_storm</b>"),
        "a behaviour outside the claim's expectation is drawn as a failure"
    );
    assert!(html.contains("<td>fails_fast</td><td>300 fast errors (p99 205 ms), 0 timeouts</td>"));
    // No faults anywhere: no section.
    assert!(!qualify_render::markdown(&fixture("transfer")).contains("### Faults"));
    assert!(!qualify_render::html(&fixture("transfer")).contains("<h2>Faults"));
}

// ---------------------------------------------------------------------------------------------
// Service cells under load

/// The section between `start` and the next heading of the same level.
fn section<'a>(text: &'a str, start: &str, next: &str) -> &'a str {
    let i = text
        .find(start)
        .unwrap_or_else(|| panic!("no `{start}` in\n{text}"));
    let rest = &text[i..];
    let end = rest[start.len()..]
        .find(next)
        .map_or(rest.len(), |j| j + start.len());
    &rest[..end]
}

fn label(c: &Value) -> String {
    format!(
        "workers={}, rps={}",
        c["params"]["workers"], c["params"]["rps"]
    )
}

/// The svg element whose accessible name is `name`.
fn svg_named<'a>(html: &'a str, name: &str) -> &'a str {
    let at = html
        .find(&format!("aria-label=\"{name}\""))
        .unwrap_or_else(|| panic!("no plot `{name}`"));
    let start = html[..at].rfind("<svg").unwrap();
    let end = at + html[at..].find("</svg>").unwrap();
    &html[start..end]
}

#[test]
fn the_service_section_shows_every_cell_under_load_with_plots_table_and_timelines() {
    use qualify_model::Outcome;
    use qualify_render::view::duration;
    let r = fixture("orders");
    let html = qualify_render::html(&r);
    assert_self_contained(&html);
    let pos = |needle: &str| html.find(needle).unwrap_or_else(|| panic!("no {needle}"));
    assert!(pos("<h2>Envelope") < pos("<h2>Service under load"));
    assert!(pos("<h2>Service under load") < pos("<h2>Admission checklist"));

    // The heatmap draws the service outcomes in their own colours.
    let heatmap = svg_named(&html, "envelope heatmap");
    for o in [Outcome::Ok, Outcome::SloViolated, Outcome::Overloaded] {
        assert!(
            heatmap.contains(&format!("fill=\"{}\"", o.style().fill)),
            "{o} not in the heatmap"
        );
    }

    let service = section(&html, "<h2>Service under load", "<h2>");
    // The hockey stick: one series per workers value, corrected p99 and p50, the objective as
    // a dashed line, the slo_violated and overloaded points marked in their outcome's colours.
    let hockey = svg_named(service, "corrected latency against rps");
    assert!(hockey.contains(">workers=2</text>") && hockey.contains(">workers=4</text>"));
    assert!(hockey.contains("objective latency_p99 ≤ 100 ms"));
    assert!(hockey.contains("stroke-dasharray"));
    for o in [Outcome::SloViolated, Outcome::Overloaded] {
        let st = o.style();
        assert!(
            hockey.contains(&format!("fill=\"{}\"", st.fill))
                && hockey.contains(&format!(">{}</text>", st.mark)),
            "{o} not marked in the hockey stick"
        );
    }
    let achieved = svg_named(service, "answers and goodput against rps");
    assert!(achieved.contains("answers = offered (kept up)"));
    assert!(service.contains("Marked points:"));

    // Per cell: a table row with the offered and achieved rate, corrected p99 with the
    // uncorrected beside it, dropped arrivals; and a timeline, open for cells that did not end ok.
    let table = section(service, "<table>", "</table>");
    for c in cells(&r) {
        let load = &c["result"]["load"];
        let cell = label(c);
        let row = section(table, &format!("<tr><td>{cell}</td>"), "</tr>");
        let p99 = |k: &str| duration(load["latency"][k]["p99"].as_f64().unwrap());
        for part in [
            format!("{} req/s", c["params"]["rps"]),
            format!("<b>{}</b>", p99("corrected")),
            format!("<span class=\"meta\">{}</span>", p99("uncorrected")),
            format!("<td class=\"num\">{}</td>", load["dropped"]),
            c["result"]["outcome"].as_str().unwrap().to_string(),
        ] {
            assert!(row.contains(&part), "`{part}` not in {row}");
        }
        for plot in ["requests per second", "corrected p99 per second"] {
            svg_named(service, &format!("{plot}, {cell}"));
        }
    }
    assert_eq!(service.matches("<details open>").count(), non_ok(&r));
    assert_eq!(
        service.matches("<details>").count(),
        cells(&r).len() - non_ok(&r)
    );
    // Overloaded: the corrected p99 is far above the uncorrected one (coordinated omission).
    let over = cells(&r)
        .iter()
        .find(|c| c["result"]["outcome"] == "overloaded")
        .unwrap();
    let lat = &over["result"]["load"]["latency"];
    assert!(lat["corrected"]["p99"].as_f64() > lat["uncorrected"]["p99"].as_f64());

    // The checklist states what the service did beyond capacity.
    let checklist = section(&html, "<h2>Admission checklist", "<h2>");
    assert!(
        checklist.contains("it queued until arrivals were dropped"),
        "{checklist}"
    );
    assert!(!checklist.contains("behaviour under exhaustion not observed"));

    // Markdown: one row per service cell.
    let md = qualify_render::markdown(&r);
    let table = section(&md, "### Service under load", "\n### ");
    for c in cells(&r) {
        let load = &c["result"]["load"];
        let outcome = c["result"]["outcome"].as_str().unwrap();
        let mark = if outcome == "ok" { "" } else { "❌ " };
        let row = table
            .lines()
            .find(|l| l.starts_with(&format!("| {} |", label(c))))
            .unwrap_or_else(|| panic!("no row for {}\n{table}", label(c)));
        let p99 = |k: &str| duration(load["latency"][k]["p99"].as_f64().unwrap());
        for part in [
            format!("| {mark}{outcome} | {} req/s |", c["params"]["rps"]),
            format!("| {} ({}) |", p99("corrected"), p99("uncorrected")),
            format!("| {} |", load["dropped"]),
        ] {
            assert!(row.contains(&part), "`{part}` not in {row}");
        }
    }
    assert_eq!(
        table
            .lines()
            .filter(|l| l.starts_with("| workers="))
            .count(),
        cells(&r).len()
    );
}

#[test]
fn receipts_without_service_cells_have_no_service_section() {
    for name in ["transfer", "perf", "faults"] {
        assert!(!qualify_render::html(&fixture(name)).contains("Service under load"));
        assert!(!qualify_render::markdown(&fixture(name)).contains("Service under load"));
    }
}

/// A cell that answered nothing has no latency: it is named under the plot, never drawn at an
/// invented position, and still drawn where it has a figure (its achieved rate).
#[test]
fn a_cell_without_latency_is_named_not_drawn() {
    let load = |rate: f64, achieved: f64, p99: Value| {
        json!({"model": "open", "offered_rate": rate, "achieved_rate": achieved, "sent": 10,
               "latency": {"corrected": {"p50": p99, "p99": p99}, "uncorrected": {}},
               "slo": [{"metric": "latency_p99", "bound": "max", "limit": 0.1, "value": p99, "held": true}]})
    };
    let receipt = json!({"predicate": {
        "tested": {"axes": [{"name": "rps", "kind": "load"}]},
        "cells": [
            {"params": {"rps": 100}, "result": {"outcome": "ok", "load": load(100.0, 100.0, json!(0.01))}},
            {"params": {"rps": 200}, "result": {"outcome": "ok", "load": load(200.0, 199.0, json!(0.02))}},
            {"params": {"rps": 400}, "result": {"outcome": "unavailable", "load": load(400.0, 0.0, Value::Null)}}
        ]
    }});
    let html = qualify_render::html(&receipt);
    assert_self_contained(&html);
    assert!(
        html.contains("Not drawn (no request answered, so no latency): rps=400 (unavailable)."),
        "{html}"
    );
    let hockey = svg_named(&html, "corrected latency against rps");
    let unavailable = qualify_model::Outcome::Unavailable.style();
    assert!(!hockey.contains(unavailable.fill));
    let achieved = svg_named(&html, "answers and goodput against rps");
    assert!(achieved.contains(unavailable.fill));
    assert!(html.contains(&format!(
        "Marked points: <span class=\"legend-item\"><span class=\"sw\" style=\"background:{}",
        unavailable.fill
    )));
}

/// The development-coverage strip under the failure map (HTML) and its table (Markdown): the
/// values development ran beside the values qualify examined and the ones that failed, with the
/// coverage sentence; a receipt without a trace shows neither.
#[test]
fn development_coverage_is_drawn_beside_the_failure_map() {
    let mut r = fixture("transfer");
    r["predicate"]["layers"]["process"]["evidence"]["coverage"] = json!({
        "axes": [
            {"axis": "threads", "in_template": true, "development": [1], "examined": [1, 2, 4], "failed": [2, 4], "examined_only": [2, 4]},
            {"axis": "rounds", "in_template": true, "development": [10], "examined": [10, 100], "failed": [10, 100], "examined_only": [100]}
        ],
        "failing_cells": 4, "outside": 4, "inside": 0, "unknown": 0,
        "sentence": "development ran only threads = 1 and rounds = 10; the envelope's 4 failure(s) (deadlock at threads ≥ 2) lie outside anything development exercised"
    });
    let html = qualify_render::html(&r);
    assert_self_contained(&html);
    let strip = html
        .find("aria-label=\"development coverage\"")
        .expect("the strip");
    let map = html.find("aria-label=\"envelope heatmap\"").unwrap();
    let failing = html.find("Cells that did not end ok").unwrap();
    assert!(
        map < strip && strip < failing,
        "the strip sits under the failure map"
    );
    assert!(
        html.contains("threads = 1: development ran it; qualify examined it, no cell failed there")
    );
    assert!(html.contains(
        "threads = 4: development never ran it; qualify examined it and a cell failed there"
    ));
    assert!(html.contains("lie outside anything development exercised"));
    let md = qualify_render::markdown(&r);
    assert!(md.contains("### Development coverage"), "{md}");
    assert!(md.contains("| threads | 1 | 1, 2, 4 | 2, 4 |"), "{md}");
    assert!(
        md.contains("4 where development never went, 0 where it did"),
        "{md}"
    );
    let plain = fixture("transfer");
    assert!(!qualify_render::html(&plain).contains("development coverage"));
    assert!(!qualify_render::markdown(&plain).contains("Development coverage"));
}

/// The x coordinates of every polyline in `svg`, line by line.
fn polylines_x(svg: &str) -> Vec<Vec<f64>> {
    svg.split("<polyline points=\"")
        .skip(1)
        .map(|rest| {
            rest.split('"')
                .next()
                .unwrap_or("")
                .split(' ')
                .filter_map(|p| p.split(',').next()?.parse().ok())
                .collect()
        })
        .collect()
}

/// Goodput beside answers: a service that sheds with 503s past 305 req/s answers everything
/// (a straight line of answers) while its goodput plateaus — both are drawn, and both joined
/// in order of the offered rate whatever order the boundary search ran the cells in.
#[test]
fn goodput_is_drawn_beside_answers_and_points_join_in_offered_rate_order() {
    let cell = |rate: f64, goodput: f64, p99: f64| {
        json!({"params": {"rps": rate}, "result": {"outcome": if goodput < rate { "overloaded" } else { "ok" },
            "load": {"model": "open", "offered_rate": rate, "achieved_rate": rate, "throughput": goodput,
                     "sent": rate * 5.0,
                     "latency": {"corrected": {"p50": p99 / 2.0, "p99": p99}, "uncorrected": {}}}}})
    };
    // Gallop, then bisect: 100, 200, 400, 800, 1139, 600, 305, 306.
    let receipt = json!({"predicate": {
        "tested": {"axes": [{"name": "rps", "kind": "load"}]},
        "cells": [cell(100.0, 100.0, 0.002), cell(200.0, 200.0, 0.002), cell(400.0, 305.0, 0.003),
                  cell(800.0, 305.0, 0.001), cell(1139.0, 305.0, 0.001), cell(600.0, 305.0, 0.002),
                  cell(305.0, 305.0, 0.004), cell(306.0, 305.0, 0.004)]
    }});
    let html = qualify_render::html(&receipt);
    assert_self_contained(&html);
    for name in [
        "corrected latency against rps",
        "answers and goodput against rps",
    ] {
        let svg = svg_named(&html, name);
        let lines = polylines_x(svg);
        assert!(!lines.is_empty(), "{name}: no lines");
        for xs in lines {
            assert!(
                xs.windows(2).all(|w| w[0] <= w[1]),
                "{name}: a line goes back along the offered rate: {xs:?}"
            );
        }
    }
    let answers = svg_named(&html, "answers and goodput against rps");
    assert!(answers.contains("goodput/s (answers that met expect_status; hollow markers)"));
    assert!(answers.contains("rps=1139: goodput 305 req/s"));
    // The table: answers and goodput side by side.
    let md = qualify_render::markdown(&receipt);
    let row = md
        .lines()
        .find(|l| l.starts_with("| rps=1139 |") && l.contains("req/s"))
        .unwrap_or_else(|| panic!("{md}"));
    assert!(
        row.contains("| 1139 req/s | 1139 req/s | 305 req/s |"),
        "{row}"
    );
}

/// One row, one verdict: a faulted cell's objectives are shown with the phase each was judged
/// over — outside the window, during it — in HTML, Markdown and JUnit, beside the behaviour
/// and what the claim expected; the outcome is the one those say.
#[test]
fn each_objective_is_shown_with_the_phase_it_was_judged_over() {
    let slo = |metric: &str, limit: f64, value: Option<f64>, held: bool, phase: &str| json!({"metric": metric, "bound": "max", "limit": limit, "value": value, "held": held, "phase": phase});
    let faults = json!([{
        "dependency": "cache", "fault": "blackhole",
        "behaviour": {"verdict": "hangs", "detail": "150 of 150 requests in the window timed out",
                      "recovery_seconds": 1.0, "expected": ["fails_fast"]},
        "phases": {"before": {"requests": 100, "succeeded": 100, "seconds": 2.0},
                   "during": {"requests": 150, "errors": 150, "timeouts": 150, "fast_errors": 0, "succeeded": 0, "seconds": 3.0},
                   "after": {"requests": 100, "succeeded": 100, "seconds": 2.0}}
    }]);
    let receipt = json!({"predicate": {
        "artifact": {"name": "redis-client"},
        "tested": {"axes": [{"name": "cache_fault", "kind": "fault"}]},
        "cells": [{"params": {"cache_fault": "blackhole"}, "result": {
            "outcome": "unexpected_behaviour",
            "detail": "under cache blackhole: expected fails_fast, observed hangs",
            "faults": faults,
            "load": {"model": "open", "offered_rate": 50.0, "achieved_rate": 30.0, "throughput": 30.0,
                     "timeline": [{"second": 0, "sent": 50, "completed": 50, "errors": 0, "p99": 0.004}],
                     "phases": [{"name": "during", "start_seconds": 1.0, "end_seconds": 4.0, "sent": 150,
                                 "completed": 0, "succeeded": 0, "errors": {"timeout": 150}, "fast_errors": 0}],
                     "slo": [slo("latency_p99", 0.2, Some(0.004), true, "outside_window"),
                             slo("latency_p99", 0.5, Some(1.0), false, "fault")]}}}]
    }});
    let html = qualify_render::html(&receipt);
    assert_self_contained(&html);
    let table = section(&html, "<h2>Service under load", "<h2>");
    assert!(
        table.contains("latency_p99 4 ms ≤ 200 ms (outside the fault window): held"),
        "{table}"
    );
    assert!(table.contains(
        "<span class=\"st st-failed\">latency_p99 1 s ≤ 500 ms (during the fault window): violated</span>"
    ));
    assert!(
        table.contains("<tr><td>during</td><td class=\"num\">0</td><td class=\"num\">0</td><td class=\"num\">150</td><td class=\"num\">0</td></tr>"),
        "the cell's phases: {table}"
    );
    // The per-second p99 plot draws the steady objective, not the window's.
    let p99 = svg_named(table, "corrected p99 per second, cache_fault=blackhole");
    assert!(
        p99.contains("objective ≤ 200 ms") && !p99.contains("≤ 500 ms"),
        "{p99}"
    );
    let md = qualify_render::markdown(&receipt);
    assert!(md.contains("**latency_p99 1 s ≤ 500 ms (during the fault window): violated**"));
    assert!(
        md.contains("| ❌ hangs | fails_fast | 0 fast errors, 150 timeouts | 50/s / 0/s / 50/s |"),
        "{md}"
    );
    let junit = qualify_render::junit(&receipt);
    assert!(
        junit.contains("<failure type=\"unexpected_behaviour\""),
        "{junit}"
    );
    assert!(
        junit.contains("objective latency_p99 4 ms ≤ 200 ms (outside the fault window): held\nobjective latency_p99 1 s ≤ 500 ms (during the fault window): violated\nunder cache blackhole: hangs (expected fails_fast: NOT met); in the window 0 fast errors, 150 timeouts; goodput before / during / after 50/s / 0/s / 50/s; 150 of 150 requests in the window timed out</system-out>"),
        "{junit}"
    );
}

// ---------------------------------------------------------------------------------------------
// Schedule perturbation

/// The transfer fixture with a `[perturb]` campaign on its first cell: a deadlock found only
/// under perturbation, with hostile text in its minimised point.
fn with_perturbation() -> Value {
    let mut r = fixture("transfer");
    r["predicate"]["cells"][0]["result"]["perturb"] = json!({
        "modes": ["pct", "noise", "sched"], "seed": "0000000000000001", "runs": 200,
        "outcomes": {"ok": 192, "deadlock": 8}, "slowed": 2, "bare_runs": 20,
        "mechanisms": [], "runs_per_second": 40.0,
        "deadline": {"cell_seconds": 60.0, "perturbed_seconds": 62.0, "why": "budget"},
        "failures": [{
            "outcome": "deadlock", "detail": "all threads blocked", "seed": "7be662e30e37c2bd",
            "mode": "noise", "first_run": 13, "count": 8, "only_under_perturbation": true,
            "replay": {"failed": 13, "runs": 20, "low": 0.43, "high": 0.82},
            "bare": {"failed": 0, "runs": 20, "low": 0.0, "high": 0.16},
            "replay_command": "qualify probe --perturb --mode noise --seed 7be662e30e37c2bd -- ./transfer",
            "minimised": {"from": 3, "to": 1,
                "replay": {"failed": 9, "runs": 10, "low": 0.6, "high": 0.98},
                "points": [{"process": 0, "thread": 1, "call_number": 2, "call": "pthread_mutex_lock",
                    "when": "before", "action": "sleep", "micros": 69, "object": "0x1",
                    "text": "thread 1 delayed 69 µs before pthread_mutex_lock(0x1) at <b>x.c:22"}]}
        }]
    });
    r
}

#[test]
fn html_and_markdown_show_a_failure_found_under_perturbation() {
    let r = with_perturbation();
    let html = qualify_render::html(&r);
    assert_self_contained(&html);
    assert!(html.contains("<h2>Schedule perturbation</h2>"));
    assert!(html.contains("only under perturbation"));
    assert!(html.contains("13/20 (65%, 95% CI 43–82%)"));
    assert!(html.contains("at &lt;b&gt;x.c:22"), "point text escaped");
    assert!(html.contains("2 slowed (not failures)"));
    let md = qualify_render::markdown(&r);
    assert!(md.contains("### Schedule perturbation"));
    assert!(
        md.contains("| ❌ deadlock (only under perturbation) | 8 runs, first at run 14 |"),
        "{md}"
    );
    // A receipt without a campaign has no such section.
    let plain = fixture("transfer");
    assert!(!qualify_render::html(&plain).contains("Schedule perturbation"));
    assert!(!qualify_render::markdown(&plain).contains("Schedule perturbation"));
}

/// A service run's cells are drawn sorted by the axes (numbers by value: 600 after 180), in
/// the terminal's table and the Markdown's rows alike, whatever order the receipt holds them
/// in; the terminal table has the figures a user looks for first.
#[test]
fn service_cells_are_sorted_by_the_axes_in_the_terminal_and_markdown() {
    let mut r = fixture("orders");
    let cells = r["predicate"]["cells"].as_array_mut().unwrap();
    cells.reverse();
    cells.swap(0, 2);
    let want = [
        "workers=2, rps=100",
        "workers=2, rps=180",
        "workers=2, rps=600",
        "workers=4, rps=100",
        "workers=4, rps=180",
        "workers=4, rps=600",
    ];
    let order_in = |text: &str| -> Vec<usize> {
        want.iter()
            .map(|w| {
                text.find(w)
                    .unwrap_or_else(|| panic!("{w} missing:\n{text}"))
            })
            .collect()
    };
    let sorted = |positions: Vec<usize>| positions.windows(2).all(|w| w[0] < w[1]);
    let view = qualify_render::view::View::new(&r);
    let table = qualify_render::terminal::service_table(&view).unwrap();
    assert!(sorted(order_in(&table)), "{table}");
    let header = table.lines().next().unwrap();
    for column in [
        "cell", "offered", "answered", "goodput", "p50", "p99", "errors", "outcome",
    ] {
        assert!(header.contains(column), "{header}");
    }
    let row = table
        .lines()
        .find(|l| l.contains("workers=2, rps=600"))
        .unwrap();
    assert!(
        row.contains("600 req/s") && row.trim_end().ends_with("overloaded"),
        "{row}"
    );
    let md = qualify_render::markdown(&r);
    let service = section(&md, "### Service under load", "\n### ");
    assert!(sorted(order_in(service)), "{service}");
}

/// The capacity frontier (`predicate.frontier`, as `qualify run` writes it when a load axis was
/// searched across fault values or ceilings): a bar chart and a table in HTML, a table in
/// Markdown and in the terminal — condition values escaped, every row there.
#[test]
fn the_capacity_frontier_is_drawn_in_every_renderer_and_escaped() {
    let mut r = fixture("orders");
    r["predicate"]["frontier"] = json!({
        "axis": "rps",
        "unit": "req/s",
        "objectives": "latency_p99 ≤ 250 ms",
        "over": ["db_fault"],
        "rows": [
            {"conditions": {"db_fault": "none"}, "holds_up_to": 400.0, "fails_from": null,
             "probes": 6, "complete": true},
            {"conditions": {"db_fault": "latency(50ms)"}, "holds_up_to": 80.0, "fails_from": 100.0,
             "beyond": "overloaded", "behaviour": "degrades", "probes": 9, "complete": true},
            {"conditions": {"db_fault": "<script>down"}, "holds_up_to": null, "fails_from": 20.0,
             "beyond": "unexpected_behaviour", "behaviour": "fails_fast", "probes": 2, "complete": true}
        ],
        "probes": 17,
        "sentence": "holds latency_p99 ≤ 250 ms: up to 400+ req/s with db_fault=none; …"
    });
    let html = qualify_render::html(&r);
    assert_self_contained(&html);
    assert!(html.contains("<h2>Capacity frontier</h2>"));
    assert!(html.contains("aria-label=\"capacity per condition\""));
    assert!(
        html.contains("&lt;script&gt;down"),
        "condition values are escaped"
    );
    assert!(html.contains("held 80, fails from 100: overloaded (degrades)"));
    assert!(html.contains("held 400+ (the top of the range)"));
    assert!(html.contains("not even the lowest rate, fails from 20"));
    let md = qualify_render::markdown(&r);
    assert!(md.contains("### Capacity frontier"), "{md}");
    assert!(
        md.contains("| db_fault | holds up to | fails from | beyond | probes |"),
        "{md}"
    );
    assert!(
        md.contains("| latency(50ms) | 80 req/s | 100 req/s | overloaded (degrades) | 9 |"),
        "{md}"
    );
    let view = qualify_render::view::View::new(&r);
    let table = qualify_render::terminal::frontier_table(&view).expect("a table");
    assert!(table.contains("400 req/s+"), "{table}");
    assert!(
        table.contains("17 probes over 3 searches along `rps`"),
        "{table}"
    );
    // Without a frontier: nothing drawn.
    let plain = fixture("orders");
    assert!(!qualify_render::html(&plain).contains("Capacity frontier"));
    assert!(
        qualify_render::terminal::frontier_table(&qualify_render::view::View::new(&plain))
            .is_none()
    );
}

#[test]
fn the_gate_lists_each_waiver_with_whether_it_applied_and_tolerates_missing_parts() {
    let r = json!({"predicate": {"waivers": [
        {"gap": "cores", "reason": "a bigger box later", "applied": true},
        {"gap": "nodes", "reason": "one node is the target", "applied": false, "note": "no such gap"},
        {"reason": 3},
        "not a waiver"
    ]}});
    let lines = qualify_render::terminal::waivers(&qualify_render::view::View::new(&r));
    assert_eq!(
        lines,
        "  waiver cores: a bigger box later (applied)\n  waiver nodes: one node is the target (NOT applied: no such gap)\n  waiver ?:  (NOT applied)\n  waiver ?:  (NOT applied)\n"
    );
    assert_eq!(
        qualify_render::terminal::waivers(&qualify_render::view::View::new(&json!({}))),
        ""
    );
}
