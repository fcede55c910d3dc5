//! The functional layer: did the declared functional check pass for its admitted inputs.
//! `closed` when the functional probe ended `ok` and its JUnit report (if any) lists tests and no
//! failures or errors; `failed` otherwise; `not_run` when there is no `[functional]` section or
//! the check never finished. Held-out checks (`--holdout`) are reported apart from the visible
//! check, under `evidence.held_out` (digests, counts and outcomes only); any failing held-out
//! check fails the layer.

use qualify_model::Outcome;
use serde_json::{Value, json};

use super::{Layer, LayerName, LayerStatus};
use crate::record::{FunctionalRun, RunRecord};

/// Assess the functional layer of `record`: the visible check, then the held-out checks.
pub fn assess(record: &RunRecord) -> Layer {
    let mut layer = assess_visible(record);
    let visible = layer.status;
    if let Value::Object(map) = &mut layer.evidence {
        map.insert("visible_status".into(), json!(visible));
        map.insert("held_out".into(), record.holdout.evidence());
    }
    let Some((ran, failed)) = record.holdout.failed() else {
        return layer;
    };
    let checks = record.holdout.checks.as_deref().unwrap_or_default();
    let passed = checks.iter().filter(|c| c.passed()).count();
    let interrupted = checks.iter().filter(|c| c.interrupted()).count();
    layer
        .summary
        .push_str(&format!("; held-out: {passed} of {ran} check(s) passed"));
    // Checks the artifact may have read or recognised are weaker evidence: said, and left open.
    if let Some(s) = record
        .holdout
        .secrecy
        .as_ref()
        .filter(|s| !s.kernel_enforced)
    {
        let open = s.open();
        let which = if open.is_empty() {
            s.detail.clone()
        } else {
            format!("open: {}", open.join(", "))
        };
        layer.summary.push_str(&format!(
            " (weaker evidence: their secrecy from the artifact was not enforced, {which})"
        ));
        layer
            .untested
            .push(format!("held-out checks kept from the artifact ({which})"));
    }
    if failed > 0 {
        layer.status = LayerStatus::Failed;
        layer.untested.retain(|u| u != "functional correctness");
    } else if interrupted > 0 {
        layer
            .untested
            .push(format!("{interrupted} held-out check(s) interrupted"));
        if layer.status == LayerStatus::Closed {
            layer.status = LayerStatus::Partial;
        }
    } else if ran > 0 && visible == LayerStatus::NotRun {
        layer.status = LayerStatus::Partial;
    }
    layer
}

fn assess_visible(record: &RunRecord) -> Layer {
    let layer = |status, summary: String, untested: Vec<String>, evidence| {
        Layer::new(LayerName::Functional, status, summary, untested, evidence)
    };
    let correctness = || vec!["functional correctness".to_string()];
    let f = match &record.functional {
        FunctionalRun::NotDeclared => {
            return layer(
                LayerStatus::NotRun,
                "the spec has no [functional] section: correctness was not examined".to_string(),
                correctness(),
                json!({}),
            );
        }
        FunctionalRun::NotRun { reason } => {
            return layer(
                LayerStatus::NotRun,
                format!("the functional check did not run: {reason}"),
                correctness(),
                json!({ "reason": reason }),
            );
        }
        FunctionalRun::Ran(f) => f,
    };
    let evidence = json!({
        "command": f.command,
        "junit": f.junit,
        "probe": f.result,
        "keep_going": record.keep_going,
    });
    let r = &f.result;
    if r.outcome == Outcome::Interrupted {
        return layer(
            LayerStatus::NotRun,
            format!("`{}` was interrupted before it finished", f.command),
            correctness(),
            evidence,
        );
    }
    if r.outcome != Outcome::Ok {
        let mut summary = format!("`{}` ended {}: {}", f.command, r.outcome, r.detail);
        if let Some(j) = f.junit {
            summary.push_str(&format!(
                " (junit: {} tests, {} failures, {} errors)",
                j.tests, j.failures, j.errors
            ));
        }
        return layer(LayerStatus::Failed, summary, Vec::new(), evidence);
    }
    let Some(j) = f.junit else {
        return layer(
            LayerStatus::Closed,
            format!("`{}` exited ok", f.command),
            Vec::new(),
            evidence,
        );
    };
    if j.failures > 0 || j.errors > 0 {
        return layer(
            LayerStatus::Failed,
            format!(
                "`{}` exited ok but its junit report lists {} failure(s) and {} error(s) in {} tests",
                f.command, j.failures, j.errors, j.tests
            ),
            Vec::new(),
            evidence,
        );
    }
    let executed = j.tests.saturating_sub(j.skipped);
    if executed == 0 {
        return layer(
            LayerStatus::Partial,
            format!(
                "`{}` exited ok but its junit report lists no executed test ({} tests, {} skipped)",
                f.command, j.tests, j.skipped
            ),
            correctness(),
            evidence,
        );
    }
    let untested = if j.skipped > 0 {
        vec![format!("{} skipped test(s)", j.skipped)]
    } else {
        Vec::new()
    };
    layer(
        LayerStatus::Closed,
        format!(
            "`{}` exited ok; junit: {executed} test(s) passed, {} skipped",
            f.command, j.skipped
        ),
        untested,
        evidence,
    )
}
