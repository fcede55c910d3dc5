//! Whole-analysis tests on synthetic runs with known answers; `golden` pins the JSON of the
//! same runs byte for byte.

mod golden;
mod noisy;

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::analyze::*;
use crate::scaling::Better;
use crate::stats::{Estimator, Rng, Sample};
use qualify_model::AxisKind;

fn wall() -> MetricDef {
    MetricDef {
        name: "wall".into(),
        unit: Some("s".into()),
        better: Better::Lower,
        estimator: Estimator::Median,
    }
}

fn cell(params: &[(&str, Value)], values: &[f64]) -> CellInput {
    CellInput {
        params: params
            .iter()
            .map(|(k, v)| (*k, serde_json::from_value(v.clone()).unwrap()))
            .collect(),
        samples: BTreeMap::from([(
            "wall".to_string(),
            values.iter().map(|v| Sample::measured(*v)).collect(),
        )]),
        errors: Vec::new(),
    }
}

/// n = 2^10..2^15, wall = 0.001 + c·n² with ±3% noise, 5 runs each.
fn quadratic(scale: f64, seed: u64) -> Vec<CellInput> {
    let mut rng = Rng::new(seed);
    (10..=15)
        .map(|k| {
            let n = 1u64 << k;
            let clean = 0.001 + scale * 0.2 * (n as f64 / 32768.0).powi(2);
            let runs: Vec<f64> = (0..5)
                .map(|_| clean * (1.0 + (rng.unit() * 2.0 - 1.0) * 0.03))
                .collect();
            cell(&[("n", json!(n))], &runs)
        })
        .collect()
}

fn input(cells: Vec<CellInput>) -> Input {
    Input {
        repeat: Repeat::Fixed(5),
        warmup: 1,
        metrics: vec![wall()],
        axes: vec![AxisInput {
            name: "n".into(),
            kind: AxisKind::Workload,
        }],
        cells,
        ..Input::default()
    }
}

/// A quadratic workload with one limit it holds (2.3) and one it violates (1.5).
fn workload_case() -> Input {
    let mut inp = input(quadratic(1.0, 7));
    for limit in [2.3, 1.5] {
        inp.expects.push(Expect {
            axis: "n".into(),
            metric: "wall".into(),
            rule: ExpectRule::MaxExponent(limit),
        });
    }
    inp
}

#[test]
fn workload_model_and_max_exponent_verdicts() {
    let perf = analyze(&workload_case());
    assert_eq!(perf.stats.len(), 6);
    assert_eq!(perf.models.len(), 1, "{:#?}", perf.unfitted);
    let m = &perf.models[0];
    assert!((m.fit.exponent - 2.0).abs() <= 0.2, "{m:?}");
    assert!(m.exponent_ci95[0] <= m.fit.exponent && m.fit.exponent <= m.exponent_ci95[1]);
    assert_eq!(perf.checks.len(), 2);
    assert_eq!(
        perf.checks[0].verdict,
        Verdict::Held,
        "{:?}",
        perf.checks[0]
    );
    assert!(perf.checks[0].passed);
    assert_eq!(
        perf.checks[1].verdict,
        Verdict::Violated,
        "{:?}",
        perf.checks[1]
    );
    assert!(perf.checks[1].detail.contains("limit 1.5"));
    assert_eq!(perf.checks[0].samples, 5);
    // The JSON shape the report reads.
    let v = serde_json::to_value(&perf).unwrap_or(Value::Null);
    for key in [
        "form",
        "exponent",
        "log_exponent",
        "coefficients",
        "error",
        "points",
        "axis",
        "fixed",
    ] {
        assert!(v["models"][0].get(key).is_some(), "models[0].{key}");
    }
    for key in [
        "params", "metric", "n", "censored", "median", "mad", "min", "max", "ci95", "outliers",
        "values",
    ] {
        assert!(v["stats"][0].get(key).is_some(), "stats[0].{key}");
    }
}

/// The largest cell censored in 3 of 5 runs, the smallest left out: too few points for a model.
fn censored_case() -> Input {
    let mut cells = quadratic(1.0, 3);
    // The largest cell timed out in 3 of 5 runs, and only 4 cells remain usable.
    let last = cells.len() - 1;
    if let Some(s) = cells[last].samples.get_mut("wall") {
        for sample in s.iter_mut().take(3) {
            *sample = Sample::at_least(0.5);
        }
    }
    cells.remove(0);
    let mut inp = input(cells);
    inp.expects.push(Expect {
        axis: "n".into(),
        metric: "wall".into(),
        rule: ExpectRule::MaxExponent(2.5),
    });
    inp
}

#[test]
fn censored_cells_are_left_out_of_models_and_say_so() {
    let perf = analyze(&censored_case());
    let s = &perf.stats[perf.stats.len() - 1].stats;
    assert_eq!((s.n, s.censored), (2, 3));
    assert!(perf.models.is_empty());
    assert!(
        perf.unfitted[0].reason.contains("censored"),
        "{:?}",
        perf.unfitted
    );
    assert_eq!(perf.checks[0].verdict, Verdict::Inconclusive);
    assert!(!perf.checks[0].passed);
}

/// Amdahl with a 10% serial part over 1..8 threads, a target of 192, two efficiency limits.
fn concurrency_case() -> Input {
    let mut rng = Rng::new(11);
    let cells: Vec<CellInput> = [1u64, 2, 4, 8]
        .iter()
        .map(|&p| {
            let clean = 1.0 + 9.0 / p as f64;
            let runs: Vec<f64> = (0..5)
                .map(|_| clean * (1.0 + (rng.unit() * 2.0 - 1.0) * 0.01))
                .collect();
            cell(&[("threads", json!(p))], &runs)
        })
        .collect();
    let mut inp = input(cells);
    inp.axes = vec![AxisInput {
        name: "threads".into(),
        kind: AxisKind::Concurrency,
    }];
    inp.target_concurrency = Some(192.0);
    for limit in [0.4, 0.8] {
        inp.expects.push(Expect {
            axis: "threads".into(),
            metric: "wall".into(),
            rule: ExpectRule::MinEfficiency(limit),
        });
    }
    inp
}

#[test]
fn concurrency_scaling_efficiency_and_prediction() {
    let perf = analyze(&concurrency_case());
    assert_eq!(perf.scaling.len(), 1);
    let sc = &perf.scaling[0];
    let a = sc.amdahl.as_ref().map_or(1.0, |a| a.serial_fraction);
    assert!((a - 0.1).abs() < 0.02, "{sc:?}");
    // Efficiency at 8 threads: 10 / (8 · 2.125) ≈ 0.59.
    assert_eq!(
        perf.checks[0].verdict,
        Verdict::Held,
        "{:?}",
        perf.checks[0]
    );
    assert_eq!(
        perf.checks[1].verdict,
        Verdict::Violated,
        "{:?}",
        perf.checks[1]
    );
    assert!((perf.checks[1].observed.unwrap_or(0.0) - 0.588).abs() < 0.02);
    assert_eq!(perf.predictions.len(), 1);
    let pr = &perf.predictions[0];
    assert_eq!(pr.at, 192.0);
    assert_eq!(pr.note, "model prediction, not evidence");
    // At least the time an ideal Amdahl program with a 10% serial part would take.
    assert!(pr.value.is_finite() && pr.value > 0.9, "{pr:?}");
}

/// References one cell meets, one it misses, one no cell measured.
fn references_case() -> Input {
    let cells = vec![
        cell(&[("n", json!(1024))], &[1.50, 1.51, 1.49, 1.50, 1.52]),
        cell(&[("n", json!(2048))], &[2.0, 2.1, 1.9, 2.0, 2.05]),
    ];
    let mut inp = input(cells);
    let r = |n: i64, reference: f64| Reference {
        params: [("n", qualify_model::Value::Int(n))].into_iter().collect(),
        metric: "wall".into(),
        reference,
        lower: -0.1,
        upper: 0.1,
    };
    inp.references = vec![r(1024, 1.5), r(2048, 1.5), r(4096, 1.0)];
    inp
}

#[test]
fn references_are_judged_on_the_interval() {
    let perf = analyze(&references_case());
    let verdicts: Vec<Verdict> = perf.checks.iter().map(|c| c.verdict).collect();
    assert_eq!(
        verdicts,
        [Verdict::Held, Verdict::Violated, Verdict::Inconclusive],
        "{:#?}",
        perf.checks
    );
    assert!(perf.checks[2].detail.contains("no measured cell"));
}

/// The run a baseline comparison starts from.
fn baseline_before_case() -> Input {
    input(quadratic(1.0, 5))
}

/// A run `scale` times slower than [`baseline_before_case`] (fresh noise), compared with it.
fn baseline_case(scale: f64) -> Input {
    let before = analyze(&baseline_before_case());
    let mut inp = input(quadratic(scale, 6));
    inp.baseline = Some(BaselineInput {
        receipt: "a".repeat(64),
        performance: serde_json::to_value(&before).unwrap_or(Value::Null),
    });
    inp
}

#[test]
fn baseline_separates_regressions_from_noise() {
    // Same program, fresh noise: no significant regression.
    let perf = analyze(&baseline_case(1.0));
    let b = perf.baseline.as_ref().map_or(0, |b| b.changes.len());
    assert_eq!(b, 6);
    let check = perf.checks.iter().find(|c| c.kind == "baseline");
    assert_eq!(check.map(|c| c.verdict), Some(Verdict::Held), "{check:?}");
    assert_eq!(check.map(|c| c.samples), Some(5));
    // 30% slower everywhere: a significant regression beyond 10%.
    let perf = analyze(&baseline_case(1.3));
    let check = perf.checks.iter().find(|c| c.kind == "baseline");
    assert_eq!(
        check.map(|c| c.verdict),
        Some(Verdict::Violated),
        "{check:?}"
    );
    let changes = perf.baseline.map(|b| b.changes).unwrap_or_default();
    let big = changes
        .last()
        .map(|c| (c.significant, c.regression, c.ratio));
    assert!(
        matches!(big, Some((true, true, r)) if (r - 1.3).abs() < 0.05),
        "{big:?}"
    );
}

/// n^(7/4)·log2(n) over a 4× range in 5 rounds with up to 5% noise: the data cannot tell the
/// log factor from a twelfth step of the power, so the limit 1.75 (which n^(7/4) meets and
/// n^(7/4)·log2(n) exceeds) is inconclusive.
fn indistinguishable_case() -> Input {
    let mut rng = Rng::new(5);
    let cells: Vec<CellInput> = [8000u64, 11314, 16000, 22627, 32000]
        .iter()
        .map(|&n| {
            let x = n as f64;
            let clean = 0.3 * x.powf(1.75) * x.log2() / (32000f64.powf(1.75) * 32000f64.log2());
            let samples: Vec<Sample> = (1..=5)
                .map(|r| Sample::measured(clean * (1.0 + 0.05 * rng.unit())).in_round(r))
                .collect();
            CellInput {
                params: [("n", qualify_model::Value::Int(n as i64))]
                    .into_iter()
                    .collect(),
                samples: BTreeMap::from([("wall".to_string(), samples)]),
                errors: Vec::new(),
            }
        })
        .collect();
    let mut inp = input(cells);
    inp.expects.push(Expect {
        axis: "n".into(),
        metric: "wall".into(),
        rule: ExpectRule::MaxExponent(1.75),
    });
    inp
}

#[test]
fn a_limit_between_plausible_terms_is_inconclusive_and_says_what_would_separate_them() {
    let perf = analyze(&indistinguishable_case());
    let m = &perf.models[0];
    let forms: Vec<&str> = m.plausible.iter().map(|h| h.form.as_str()).collect();
    assert_eq!(
        forms[0], m.fit.form,
        "the chosen term comes first: {forms:?}"
    );
    assert!(
        m.plausible.iter().any(|h| h.grows_at_most_limit(1.75))
            && m.plausible.iter().any(|h| !h.grows_at_most_limit(1.75)),
        "{forms:?}"
    );
    assert!(
        m.exponent_ci95[0] < 1.75 && m.exponent_ci95[1] >= 1.75,
        "{m:?}"
    );
    let c = &perf.checks[0];
    assert_eq!(c.verdict, Verdict::Inconclusive, "{c:?}");
    assert_eq!(c.plausible, forms);
    assert!(
        c.detail
            .contains("cannot tell apart terms on both sides of the limit (within: ")
            && c.detail.contains("a wider range of n (now 4×"),
        "{}",
        c.detail
    );
    assert_eq!(c.estimator, Some(Estimator::Median));
    assert!(m.interval_method.contains("whole rounds"));
}
