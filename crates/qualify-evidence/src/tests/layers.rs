//! Each layer's status and summary from made-up run records.

use qualify_model::{Flag, Outcome, Strength};
use serde_json::json;

use super::*;
use crate::layers::{LayerName, LayerStatus};
use crate::receipt::build;
use crate::record::{Dimension, FunctionalRun, JunitCounts};

fn statuses(r: &RunRecord) -> Vec<(LayerName, LayerStatus)> {
    let s = build(r);
    LayerName::ALL
        .into_iter()
        .map(|l| (l, s.predicate.layers.get(l).status))
        .collect()
}

fn functional(r: &RunRecord) -> crate::layers::Layer {
    build(r).predicate.layers.functional
}

fn envelope(r: &RunRecord) -> crate::layers::Layer {
    build(r).predicate.layers.envelope
}

#[test]
fn functional_closed_when_the_probe_ended_ok() {
    let l = functional(&record());
    assert_eq!(l.status, LayerStatus::Closed);
    assert!(l.summary.contains("make test"), "{}", l.summary);
    assert_eq!(l.evidence["probe"]["outcome"], "ok");
}

#[test]
fn functional_closed_with_clean_junit_and_skips_listed_untested() {
    let mut r = record();
    r.functional = functional_with(
        Outcome::Ok,
        Some(JunitCounts {
            tests: 40,
            failures: 0,
            errors: 0,
            skipped: 2,
        }),
    );
    let l = functional(&r);
    assert_eq!(l.status, LayerStatus::Closed);
    assert_eq!(l.untested, vec!["2 skipped test(s)".to_string()]);
    assert_eq!(l.evidence["junit"]["tests"], 40);
}

#[test]
fn functional_failed_when_the_probe_failed() {
    let mut r = record();
    r.functional = functional_with(Outcome::ExitFailure, None);
    let l = functional(&r);
    assert_eq!(l.status, LayerStatus::Failed);
    assert!(l.summary.contains("exit_failure"), "{}", l.summary);
}

#[test]
fn functional_failed_when_junit_lists_failures_despite_exit_ok() {
    let mut r = record();
    r.functional = functional_with(
        Outcome::Ok,
        Some(JunitCounts {
            tests: 10,
            failures: 1,
            errors: 0,
            skipped: 0,
        }),
    );
    let l = functional(&r);
    assert_eq!(l.status, LayerStatus::Failed);
    assert!(l.summary.contains("1 failure(s)"), "{}", l.summary);
}

#[test]
fn functional_never_closed_without_an_executed_test() {
    let mut r = record();
    r.functional = functional_with(
        Outcome::Ok,
        Some(JunitCounts {
            tests: 3,
            failures: 0,
            errors: 0,
            skipped: 3,
        }),
    );
    assert_eq!(functional(&r).status, LayerStatus::Partial);
}

#[test]
fn functional_not_run_without_a_section_or_when_interrupted() {
    let mut r = record();
    r.functional = FunctionalRun::NotDeclared;
    let l = functional(&r);
    assert_eq!(l.status, LayerStatus::NotRun);
    assert!(l.summary.contains("[functional]"), "{}", l.summary);

    r.functional = functional_with(Outcome::Interrupted, None);
    assert_eq!(functional(&r).status, LayerStatus::NotRun);

    r.functional = FunctionalRun::NotRun {
        reason: "the build failed".to_string(),
    };
    let l = functional(&r);
    assert_eq!(l.status, LayerStatus::NotRun);
    assert!(l.summary.contains("the build failed"));
}

#[test]
fn envelope_closed_when_every_cell_passed_and_everything_material_was_examined() {
    let l = envelope(&record());
    assert_eq!(l.status, LayerStatus::Closed, "{}", l.summary);
    assert!(l.untested.is_empty(), "{:?}", l.untested);
    assert!(l.summary.contains("all 4 cells passed"), "{}", l.summary);
    assert_eq!(l.cannot_establish, vec!["safety beyond the tested region"]);
}

#[test]
fn envelope_failed_names_failing_cells_and_outcomes() {
    let mut r = record();
    r.cells[3] = cell(
        &[("threads", json!(2)), ("n", json!(1024))],
        Outcome::Deadlock,
    );
    let l = envelope(&r);
    assert_eq!(l.status, LayerStatus::Failed);
    assert!(
        l.summary
            .contains("1 of 4 completed cells failed: deadlock at threads=2, n=1024"),
        "{}",
        l.summary
    );
    let failing = l.evidence["failing"].as_array().unwrap();
    assert_eq!(failing.len(), 1);
    assert_eq!(failing[0]["outcome"], "deadlock");
    assert_eq!(failing[0]["params"], json!({"threads": 2, "n": 1024}));
}

#[test]
fn envelope_partial_when_target_concurrency_was_never_examined() {
    let mut r = record();
    r.target = big_target();
    r.axes.retain(|a| a.name == "n");
    for c in &mut r.cells {
        c.params = [("n", c.params.get("n").cloned().unwrap())]
            .into_iter()
            .collect();
    }
    let l = envelope(&r);
    assert_eq!(l.status, LayerStatus::Partial, "{}", l.summary);
    assert!(
        l.untested
            .iter()
            .any(|u| u.starts_with("concurrency:") && u.contains("192 cores")),
        "{:?}",
        l.untested
    );
    assert!(l.summary.contains("concurrency"), "{}", l.summary);
}

#[test]
fn envelope_not_run_when_functional_failed_without_keep_going() {
    let mut r = record();
    r.functional = functional_with(Outcome::Crash, None);
    r.cells.clear();
    let l = envelope(&r);
    assert_eq!(l.status, LayerStatus::NotRun);
    assert!(l.summary.contains("--keep-going"), "{}", l.summary);
    assert!(
        l.summary.contains("functional layer failed"),
        "{}",
        l.summary
    );
}

#[test]
fn keep_going_is_said_in_the_envelope() {
    let mut r = record();
    r.functional = functional_with(Outcome::ExitFailure, None);
    r.keep_going = true;
    let l = envelope(&r);
    assert_eq!(l.status, LayerStatus::Closed);
    assert!(l.summary.contains("--keep-going"), "{}", l.summary);
    assert_eq!(l.evidence["keep_going"], true);
    assert_eq!(l.evidence["functional_failed"], true);
}

#[test]
fn an_interrupted_run_never_closes_the_envelope() {
    let mut r = record();
    r.incomplete = true;
    let l = envelope(&r);
    assert_eq!(l.status, LayerStatus::Partial);
    assert!(l.untested.iter().any(|u| u.contains("interrupted")));

    // The interrupted cell does not count as examined: value 2 of `threads` never completed.
    let mut r = record();
    r.incomplete = true;
    r.cells.truncate(2);
    r.cells.push(cell(
        &[("threads", json!(2)), ("n", json!(256))],
        Outcome::Interrupted,
    ));
    let l = envelope(&r);
    assert_eq!(l.status, LayerStatus::Partial);
    assert!(
        l.untested
            .iter()
            .any(|u| u.contains("threads: declared value(s) 2 never completed")),
        "{:?}",
        l.untested
    );

    // Interrupted before any cell finished.
    r.cells = vec![cell(&[("threads", json!(1))], Outcome::Interrupted)];
    let l = envelope(&r);
    assert_eq!(l.status, LayerStatus::NotRun);
    assert!(l.summary.contains("interrupted"), "{}", l.summary);
}

#[test]
fn envelope_partial_when_a_declared_range_was_not_reached() {
    let mut r = record();
    if let Domain::Range(range) = &mut r.axes[1].domain {
        range.hi = Number::Int(4096);
    }
    let l = envelope(&r);
    assert_eq!(l.status, LayerStatus::Partial);
    assert!(
        l.untested
            .iter()
            .any(|u| u.contains("1024..4096 not examined")),
        "{:?}",
        l.untested
    );
}

#[test]
fn unexamined_material_dimensions_keep_the_envelope_partial() {
    // Dependencies can't be examined yet.
    let mut r = record();
    r.material = vec![Dimension::Dependencies];
    assert_eq!(envelope(&r).status, LayerStatus::Partial);

    // Target memory: examined through a kernel-enforced ceiling, not through an unenforced one.
    let mut r = record();
    r.target.memory_bytes = Some(1 << 30);
    assert_eq!(envelope(&r).status, LayerStatus::Closed);
    for c in &mut r.cells {
        c.result.enforcement.memory = Strength::None;
    }
    let l = envelope(&r);
    assert_eq!(l.status, LayerStatus::Partial);
    assert!(
        l.untested.iter().any(|u| u.starts_with("memory:")),
        "{:?}",
        l.untested
    );
}

#[test]
fn flags_on_passing_cells_are_reported_not_hidden() {
    let mut r = record();
    r.cells[0].result.flags = vec![Flag::Oversubscribed];
    let l = envelope(&r);
    assert_eq!(l.status, LayerStatus::Closed);
    assert!(l.summary.contains("oversubscribed ×1"), "{}", l.summary);
    assert_eq!(l.evidence["flagged"][0]["flags"], json!(["oversubscribed"]));
}

#[test]
fn unfilled_layers_are_not_run_and_nothing_unexamined_is_closed() {
    let mut empty = record();
    empty.functional = FunctionalRun::NotDeclared;
    empty.cells.clear();
    let mut variants = vec![record(), empty];
    let mut big = record();
    big.target = big_target();
    variants.push(big);
    for r in &variants {
        for (layer, status) in statuses(r) {
            if matches!(
                layer,
                LayerName::Process | LayerName::Performance | LayerName::Reproducibility
            ) {
                assert_eq!(status, LayerStatus::NotRun, "{layer}");
            }
        }
    }
    for (_, status) in statuses(&variants[1]) {
        assert_eq!(status, LayerStatus::NotRun);
    }
    let s = build(&variants[0]);
    for layer in LayerName::ALL {
        let l = s.predicate.layers.get(layer);
        assert!(!l.supports.is_empty());
        assert!(!l.cannot_establish.is_empty());
        assert!(l.evidence.is_object());
        if l.status == LayerStatus::NotRun {
            assert!(!l.summary.is_empty(), "{layer} needs a reason");
        }
    }
}

#[test]
fn a_load_axis_examines_concurrency() {
    // A service's offered load (kind = "load") is its concurrency: a load axis that was run
    // leaves no concurrency untested.
    let mut r = record();
    r.axes[0].kind = AxisKind::Load;
    let l = envelope(&r);
    assert_eq!(l.status, LayerStatus::Closed, "{}", l.summary);
    assert!(l.untested.is_empty(), "{:?}", l.untested);
}

#[test]
fn unknown_layer_names_and_statuses_name_the_input_and_every_accepted_value() {
    assert_eq!(
        "speed".parse::<LayerName>().unwrap_err().to_string(),
        "unknown layer `speed`; expected one of: functional, process, envelope, performance, \
         reproducibility"
    );
    assert_eq!(
        "open".parse::<LayerStatus>().unwrap_err().to_string(),
        "unknown status `open`; expected one of: closed, partial, failed, not_run"
    );
}
