//! The performance layer, assessed from the run's `predicate.performance` (written by
//! `qualify run` from the `qualify-perf` analysis): `closed` when every check holds on cells
//! with at least [`MIN_SAMPLES`] uncensored runs, `failed` when a check is violated (named, with
//! its interval), `partial` with no checks, inconclusive checks, too few samples or cells whose
//! metrics could not be measured, `not_run` without `[performance]`. Predictions at the target
//! are listed under `untested`: they are models, never evidence. Cells whose runs were noisy
//! (`stats[].noise`) are named under `cannot_establish`: their estimates rest on scattered runs,
//! and so are other qualify runs that used the machine while it measured (`rounds.machine`).

use qualify_model::Params;
use qualify_perf::analyze::CellStats;
use qualify_perf::{MachineShare, Verdict};
use serde_json::json;

use super::{Layer, LayerName, LayerStatus};
use crate::record::{RunRecord, sorted_by_name};

/// Uncensored runs per checked cell before a check can close the layer.
pub const MIN_SAMPLES: u64 = 3;

/// A number for a sentence: three significant places, scientific when large or small; a value
/// JSON cannot hold (NaN, ±∞) as `null`, the way the receipt writes it.
fn num(x: f64) -> String {
    if !x.is_finite() {
        "null".to_string()
    } else if x.abs() >= 1000.0 || (x != 0.0 && x.abs() < 0.01) {
        format!("{x:.3e}")
    } else {
        format!("{x:.3}")
    }
}

/// ` (n=4,kind="ring")`: a cell's parameters by name, values as JSON; empty without any.
fn fixed_text(params: &Params) -> String {
    let parts: Vec<String> = sorted_by_name(params)
        .iter()
        .map(|(k, v)| format!("{k}={}", v.json_text()))
        .collect();
    if parts.is_empty() {
        String::new()
    } else {
        format!(" ({})", parts.join(","))
    }
}

/// Assess the performance layer of `record`.
pub fn assess(record: &RunRecord) -> Layer {
    let Some(perf) = &record.performance else {
        return not_run();
    };
    let checks = &perf.checks;
    let stats = &perf.stats;
    let models = &perf.models;
    let errors = &perf.errors;
    let censored: u64 = stats.iter().map(|s| s.stats.censored as u64).sum();

    let mut untested: Vec<String> = perf
        .predictions
        .iter()
        .map(|p| {
            format!(
                "{} at {}={}{}: {} (model {}: a prediction, not evidence)",
                p.metric,
                p.axis,
                num(p.at),
                fixed_text(&p.fixed),
                num(p.value),
                p.model
            )
        })
        .collect();
    untested.extend(perf.unfitted.iter().map(|u| {
        format!(
            "scaling of {} along {}{}: no model, {}",
            u.metric,
            u.axis,
            fixed_text(&u.fixed),
            u.reason
        )
    }));
    untested.push("performance outside the tested region".to_string());

    let violated: Vec<_> = checks
        .iter()
        .filter(|c| c.verdict == Verdict::Violated)
        .collect();
    let inconclusive: Vec<_> = checks
        .iter()
        .filter(|c| c.verdict == Verdict::Inconclusive)
        .collect();
    let thin: Vec<_> = checks
        .iter()
        .filter(|c| c.verdict == Verdict::Held && (c.samples as u64) < MIN_SAMPLES)
        .collect();

    let (status, summary) = if let Some(first) = violated.first() {
        let interval = first
            .interval
            .map(|[lo, hi]| format!(" [{}, {}]", num(lo), num(hi)))
            .unwrap_or_default();
        (
            LayerStatus::Failed,
            format!(
                "{} of {} performance check(s) violated; {} check: {} (interval{interval})",
                violated.len(),
                checks.len(),
                first.kind,
                first.detail
            ),
        )
    } else if record.incomplete {
        (
            LayerStatus::Partial,
            "the run was interrupted: performance measured only in part".to_string(),
        )
    } else if checks.is_empty() {
        (
            LayerStatus::Partial,
            format!(
                "measured {} cell/metric pair(s), fitted {} model(s); no performance checks declared ([[performance.expect]] or [[performance.reference]])",
                stats.len(),
                models.len()
            ),
        )
    } else if let Some(first) = inconclusive.first() {
        (
            LayerStatus::Partial,
            format!(
                "{} of {} performance check(s) inconclusive; {} check: {}",
                inconclusive.len(),
                checks.len(),
                first.kind,
                first.detail
            ),
        )
    } else if let Some(first) = thin.first() {
        (
            LayerStatus::Partial,
            format!(
                "{} performance check(s) rest on fewer than {MIN_SAMPLES} uncensored runs per cell; {}",
                thin.len(),
                first.detail
            ),
        )
    } else if let Some(first) = errors.first() {
        (
            LayerStatus::Partial,
            format!(
                "{} measurement error(s) in cells; first{}: {}",
                errors.len(),
                fixed_text(&first.params),
                first.message
            ),
        )
    } else {
        (
            LayerStatus::Closed,
            format!(
                "all {} performance check(s) hold, judged on 95% intervals with at least {MIN_SAMPLES} runs per cell",
                checks.len()
            ),
        )
    };
    let noisy = noisy_cells(stats);
    let rounds = perf.rounds.as_ref();
    let machine = rounds.and_then(|r| r.machine.as_ref());
    let evidence = json!({
        "checks": checks.iter().map(|c| json!({
            "kind": c.kind,
            "verdict": c.verdict,
            "detail": c.detail,
        })).collect::<Vec<_>>(),
        "models": models.iter().map(|m| json!({
            "axis": m.axis,
            "metric": m.metric,
            "fixed": m.fixed,
            "form": m.fit.form,
        })).collect::<Vec<_>>(),
        "cell_metrics": stats.len(),
        "censored_runs": censored,
        "errors": errors.len(),
        "rounds": rounds.map(|r| r.rounds),
        "seed": rounds.map(|r| r.seed),
        "noisy_cells": stats.iter().filter(|s| is_noisy(s)).count(),
    });
    let mut layer = Layer::new(LayerName::Performance, status, summary, untested, evidence);
    layer.cannot_establish.extend(noisy);
    layer.cannot_establish.extend(shared_machine(machine));
    if let Some(m) = machine
        && let Some(e) = layer.evidence.as_object_mut()
    {
        e.insert("machine".into(), json!(m));
    }
    layer
}

/// What the run could not rule out about the machine it measured on: other qualify runs
/// active beside it, or no watch kept at all.
fn shared_machine(machine: Option<&MachineShare>) -> Option<String> {
    let m = machine?;
    if !m.watched {
        return Some(
            "measurements free of other qualify runs on this machine: the registry of active runs was not watched"
                .to_string(),
        );
    }
    let runs = &m.concurrent_runs;
    if runs.is_empty() {
        return None;
    }
    Some(format!(
        "measurements free of other work: {} other qualify run(s) used this machine while cells were measured: {}",
        runs.len(),
        runs.join("; ")
    ))
}

fn is_noisy(s: &CellStats) -> bool {
    !s.noise.is_empty()
}

/// Cells shown per metric before "and N more".
const NOISY_SHOWN: usize = 3;

/// One line per metric with noisy cells: which cells, and the first reason of each.
fn noisy_cells(stats: &[CellStats]) -> Vec<String> {
    let mut metrics: Vec<&str> = Vec::new();
    for s in stats.iter().filter(|s| is_noisy(s)) {
        if !metrics.contains(&s.metric.as_str()) {
            metrics.push(&s.metric);
        }
    }
    metrics
        .iter()
        .map(|metric| {
            let cells: Vec<&CellStats> = stats
                .iter()
                .filter(|s| is_noisy(s) && s.metric == *metric)
                .collect();
            let shown: Vec<String> = cells
                .iter()
                .take(NOISY_SHOWN)
                .map(|s| {
                    let why = s.noise.first().map_or("noisy", String::as_str);
                    format!("{}: {why}", fixed_text(&s.params).trim())
                })
                .collect();
            let more = cells.len().saturating_sub(NOISY_SHOWN);
            format!(
                "a precise {metric} in {} noisy cell(s), whose runs were scattered: {}{}",
                cells.len(),
                shown.join("; "),
                if more > 0 {
                    format!("; and {more} more")
                } else {
                    String::new()
                }
            )
        })
        .collect()
}

/// The layer of a run without `[performance]`.
pub fn not_run() -> Layer {
    Layer::new(
        LayerName::Performance,
        LayerStatus::NotRun,
        "no performance references or scaling model were evaluated",
        vec![
            "performance against references".to_string(),
            "scaling with workload and resources".to_string(),
        ],
        json!({}),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::{performance, record};
    use serde_json::Value;

    fn with(perf: Value) -> Layer {
        let mut r = record();
        r.performance = Some(performance(perf));
        assess(&r)
    }

    fn check(verdict: &str, samples: u64) -> Value {
        json!({"kind": "max_exponent", "axis": "n", "metric": "wall", "verdict": verdict,
               "passed": verdict == "held", "samples": samples, "interval": [1.9, 2.1],
               "detail": "wall grows as n^2 along n (exponent 2.00, 95% CI [1.90, 2.10]), limit 1.5"})
    }

    #[test]
    fn statuses_follow_the_checks() {
        assert_eq!(assess(&record()).status, LayerStatus::NotRun);
        let none = with(json!({"checks": [], "stats": [{}], "models": []}));
        assert_eq!(none.status, LayerStatus::Partial);
        assert!(
            none.summary.contains("no performance checks"),
            "{}",
            none.summary
        );
        let held = with(json!({"checks": [check("held", 5)]}));
        assert_eq!(held.status, LayerStatus::Closed, "{}", held.summary);
        let thin = with(json!({"checks": [check("held", 2)]}));
        assert_eq!(thin.status, LayerStatus::Partial);
        let open = with(json!({"checks": [check("held", 5), check("inconclusive", 5)]}));
        assert_eq!(open.status, LayerStatus::Partial);
        let bad = with(json!({"checks": [check("held", 5), check("violated", 5)]}));
        assert_eq!(bad.status, LayerStatus::Failed);
        assert!(
            bad.summary.contains("limit 1.5") && bad.summary.contains("[1.900, 2.100]"),
            "{}",
            bad.summary
        );
        let errs = with(json!({"checks": [check("held", 5)],
                                "errors": [{"params": {"n": 1}, "message": "metric `x`: regex matched nothing"}]}));
        assert_eq!(errs.status, LayerStatus::Partial);
    }

    #[test]
    fn noisy_cells_are_named_in_cannot_establish() {
        let stat = |n: i64, noise: Value| json!({"params": {"n": n}, "metric": "cpu", "noise": noise, "n": 5});
        let l = with(json!({"checks": [check("held", 5)],
            "rounds": {"rounds": 7, "seed": 42},
            "stats": [stat(1, json!([])), stat(2, json!(["two clusters of runs (multimodal)"])),
                      stat(3, json!(["spread 9.1% > 6% (1.4826·MAD/median)", "x"]))]}));
        let line = l
            .cannot_establish
            .iter()
            .find(|c| c.contains("noisy"))
            .cloned()
            .unwrap_or_default();
        assert!(
            line.contains("a precise cpu in 2 noisy cell(s)")
                && line.contains("(n=2): two clusters")
                && line.contains("(n=3): spread 9.1%"),
            "{line}"
        );
        assert_eq!(l.evidence["noisy_cells"], 2);
        assert_eq!(l.evidence["seed"], 42);
        // The layer's own limits stay listed.
        assert!(l.cannot_establish.iter().any(|c| c == "correctness"));
    }

    #[test]
    fn other_runs_on_the_machine_are_named_and_an_unwatched_machine_is_not_called_quiet() {
        let machine = |m: Value| {
            with(
                json!({"checks": [check("held", 5)], "rounds": {"rounds": 3, "seed": 1, "machine": m}}),
            )
        };
        let quiet = machine(json!({"from": 1.0, "to": 2.0, "exclusive": true, "watched": true}));
        assert!(
            !quiet
                .cannot_establish
                .iter()
                .any(|c| c.contains("qualify run")),
            "{:?}",
            quiet.cannot_establish
        );
        assert_eq!(quiet.evidence["machine"]["exclusive"], true);
        let shared = machine(
            json!({"from": 1.0, "to": 2.0, "exclusive": true, "watched": true,
            "concurrent_runs": ["pid 4242 (/w/qualify.toml)"]}),
        );
        assert!(
            shared.cannot_establish.iter().any(|c| c.contains(
                "1 other qualify run(s) used this machine while cells were measured: pid 4242 (/w/qualify.toml)"
            )),
            "{:?}",
            shared.cannot_establish
        );
        let blind = machine(json!({"from": 1.0, "to": 2.0, "exclusive": true, "watched": false}));
        assert!(
            blind
                .cannot_establish
                .iter()
                .any(|c| c.contains("was not watched")),
            "{:?}",
            blind.cannot_establish
        );
        // Receipts from before the field read as before.
        let old = with(json!({"checks": [check("held", 5)], "rounds": {"rounds": 3, "seed": 1}}));
        assert!(old.evidence.get("machine").is_none());
    }

    #[test]
    fn predictions_are_untested_not_evidence() {
        let l = with(json!({"checks": [check("held", 5)],
            "predictions": [{"axis": "threads", "at": 192, "metric": "wall", "fixed": {}, "value": 1.25,
                             "model": "usl", "note": "model prediction, not evidence"}]}));
        assert_eq!(l.status, LayerStatus::Closed);
        assert!(
            l.untested[0].contains("wall at threads=192"),
            "{:?}",
            l.untested
        );
        assert!(l.untested[0].contains("not evidence"));
    }
}
