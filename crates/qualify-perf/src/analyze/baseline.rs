//! The comparison with a baseline receipt: per shared cell and metric the ratio of the metric's
//! estimates (the current estimator applied to both runs' values, so a baseline located by
//! another estimator is compared like for like) with a bootstrap interval, significance against
//! the cells' noise, and one check per metric.

use super::groups::fmt_params;
use super::{BaselineInput, BaselineReport, CellStats, Change, Check, MetricDef, Verdict};
use crate::scaling::Better;
use crate::stats::{self, Estimator, Rng, SEED};

/// Compare every cell and metric both runs measured.
pub(super) fn compare_baseline(
    b: &BaselineInput,
    stats: &[CellStats],
    metrics: &[MetricDef],
) -> BaselineReport {
    let before: Vec<CellStats> = b
        .performance
        .get("stats")
        .and_then(|s| serde_json::from_value::<Vec<CellStats>>(s.clone()).ok())
        .unwrap_or_default();
    let mut rng = Rng::new(SEED);
    let mut changes = Vec::new();
    for after in stats {
        let Some(prev) = before.iter().find(|p| {
            p.metric == after.metric
                && p.params.len() == after.params.len()
                && p.params
                    .iter()
                    .all(|(k, v)| after.params.get(k).is_some_and(|w| w.same_point(v)))
        }) else {
            continue;
        };
        let estimator = after.stats.estimator;
        let (Some(m0), Some(m1)) = (
            stats::estimate(&prev.stats.values, estimator).or(prev.stats.location()),
            after.stats.location(),
        ) else {
            continue;
        };
        if m0 == 0.0 {
            continue;
        }
        let ratio = m1 / m0;
        let ci = ratio_interval(&prev.stats.values, &after.stats.values, estimator, &mut rng)
            .unwrap_or([ratio, ratio]);
        let noise = prev
            .stats
            .relative_spread()
            .max(after.stats.relative_spread());
        let significant = (ci[0] > 1.0 || ci[1] < 1.0) && (ratio - 1.0).abs() > noise;
        let better = metrics
            .iter()
            .find(|m| m.name == after.metric)
            .map_or(Better::Lower, |m| m.better);
        let worse = match better {
            Better::Lower => ratio > 1.0,
            Better::Higher => ratio < 1.0,
        };
        changes.push(Change {
            params: after.params.clone(),
            metric: after.metric.clone(),
            estimator,
            before: m0,
            after: m1,
            ratio,
            ci95: ci,
            noise,
            significant,
            regression: significant && worse,
            samples: prev.stats.n.min(after.stats.n),
        });
    }
    BaselineReport {
        receipt: b.receipt.clone(),
        changes,
    }
}

/// Bootstrap interval of estimate(after) / estimate(before).
fn ratio_interval(
    before: &[f64],
    after: &[f64],
    estimator: Estimator,
    rng: &mut Rng,
) -> Option<[f64; 2]> {
    if before.is_empty() || after.is_empty() {
        return None;
    }
    let mut ratios = Vec::with_capacity(stats::BOOTSTRAP_RESAMPLES);
    for _ in 0..stats::BOOTSTRAP_RESAMPLES {
        let b: Vec<f64> = (0..before.len())
            .map(|_| before[rng.below(before.len())])
            .collect();
        let a: Vec<f64> = (0..after.len())
            .map(|_| after[rng.below(after.len())])
            .collect();
        if let (Some(mb), Some(ma)) = (
            stats::estimate(&b, estimator),
            stats::estimate(&a, estimator),
        ) && mb != 0.0
        {
            ratios.push(ma / mb);
        }
    }
    ratios.sort_by(f64::total_cmp);
    Some([
        stats::quantile_sorted(&ratios, 0.025)?,
        stats::quantile_sorted(&ratios, 0.975)?,
    ])
}

/// One check per metric: no significant regression beyond `threshold`.
pub(super) fn baseline_checks(
    report: &BaselineReport,
    metrics: &[MetricDef],
    threshold: f64,
) -> Vec<Check> {
    let mut out = Vec::new();
    for m in metrics {
        let shared: Vec<&Change> = report
            .changes
            .iter()
            .filter(|c| c.metric == m.name)
            .collect();
        if shared.is_empty() {
            continue;
        }
        let badness = |c: &Change| match m.better {
            Better::Lower => c.ratio - 1.0,
            Better::Higher => 1.0 - c.ratio,
        };
        let worst = shared
            .iter()
            .copied()
            .max_by(|a, b| badness(a).total_cmp(&badness(b)));
        let Some(worst) = worst else { continue };
        let failing: Vec<&Change> = shared
            .iter()
            .copied()
            .filter(|c| c.regression && badness(c) > threshold)
            .collect();
        let verdict = if failing.is_empty() {
            Verdict::Held
        } else {
            Verdict::Violated
        };
        let shown = failing.first().copied().unwrap_or(worst);
        out.push(Check {
            kind: "baseline".into(),
            axis: None,
            metric: m.name.clone(),
            fixed: shown.params.clone(),
            limit: Some(threshold),
            observed: Some(shown.ratio),
            interval: Some(shown.ci95),
            passed: verdict == Verdict::Held,
            verdict,
            samples: shared.iter().map(|c| c.samples).min().unwrap_or(0),
            estimator: Some(worst.estimator),
            plausible: Vec::new(),
            detail: if failing.is_empty() {
                format!(
                    "{} shared cell(s): no significant {} regression beyond {:.0}% (worst ratio {:.3}{})",
                    shared.len(),
                    m.name,
                    threshold * 100.0,
                    worst.ratio,
                    fmt_params(&worst.params)
                )
            } else {
                format!(
                    "{} of {} shared cell(s) regressed beyond {:.0}%: {}{} ratio {:.3} (95% CI [{:.3}, {:.3}], noise ±{:.1}%)",
                    failing.len(),
                    shared.len(),
                    threshold * 100.0,
                    m.name,
                    fmt_params(&shown.params),
                    shown.ratio,
                    shown.ci95[0],
                    shown.ci95[1],
                    shown.noise * 100.0
                )
            },
        });
    }
    out
}
