//! The spec's expectations and references as checks with verdicts: `max_exponent` on a model's
//! plausible hypotheses (held or violated only when every one of them lies on the same side of
//! the limit, each judged by its slope at the largest measured n; otherwise inconclusive,
//! naming them and what would separate them), `min_efficiency` on a conservative interval from the cells' CIs,
//! `reference` on a cell's CI. Every interval is that of the metric's estimator. Baseline
//! checks are in `baseline`.

use qualify_model::Params;

use super::groups::{Group, fmt_params, groups, location_of, params_match, to_map};
use super::{CellStats, Check, Expect, ExpectRule, Input, Model, Reference, Unfitted, Verdict};
use crate::scaling::{self, Better};

fn judge(interval: [f64; 2], lo_ok: f64, hi_ok: f64) -> Verdict {
    if interval[0] >= lo_ok && interval[1] <= hi_ok {
        Verdict::Held
    } else if interval[1] < lo_ok || interval[0] > hi_ok {
        Verdict::Violated
    } else {
        Verdict::Inconclusive
    }
}

fn inconclusive(
    kind: &str,
    axis: Option<&str>,
    metric: &str,
    limit: Option<f64>,
    detail: String,
) -> Check {
    Check {
        kind: kind.to_string(),
        axis: axis.map(str::to_string),
        metric: metric.to_string(),
        fixed: Params::new(),
        limit,
        observed: None,
        interval: None,
        passed: false,
        verdict: Verdict::Inconclusive,
        samples: 0,
        estimator: None,
        plausible: Vec::new(),
        detail,
    }
}

/// The checks of the spec's expectations and references, in the spec's order.
pub(super) fn expectations(
    input: &Input,
    stats: &[CellStats],
    models: &[Model],
    unfitted: &[Unfitted],
) -> Vec<Check> {
    let better_of = |metric: &str| {
        input
            .metrics
            .iter()
            .find(|m| m.name == metric)
            .map_or(Better::Lower, |m| m.better)
    };
    let estimator_of = |metric: &str| {
        input
            .metrics
            .iter()
            .find(|m| m.name == metric)
            .map(|m| m.estimator)
    };
    let mut checks = Vec::new();
    for e in &input.expects {
        let mut made = match e.rule {
            ExpectRule::MaxExponent(limit) => {
                max_exponent_checks(e, limit, models, unfitted, stats)
            }
            ExpectRule::MinEfficiency(limit) => {
                min_efficiency_checks(e, limit, stats, better_of(&e.metric))
            }
        };
        for c in &mut made {
            c.estimator = estimator_of(&e.metric);
        }
        checks.extend(made);
    }
    for r in &input.references {
        let mut made = reference_checks(r, stats);
        for c in &mut made {
            c.estimator = estimator_of(&r.metric);
        }
        checks.extend(made);
    }
    checks
}

fn max_exponent_checks(
    e: &Expect,
    limit: f64,
    models: &[Model],
    unfitted: &[Unfitted],
    stats: &[CellStats],
) -> Vec<Check> {
    let mut out = Vec::new();
    for m in models
        .iter()
        .filter(|m| m.axis == e.axis && m.metric == e.metric)
    {
        let interval = m.exponent_ci95;
        let group = groups(stats, &e.axis, &e.metric)
            .into_iter()
            .find(|g| to_map(&g.fixed) == m.fixed);
        let samples = group.as_ref().map_or(0, |g| g.min_samples);
        let (verdict, judged) = judge_plausible(m, limit);
        let plausible_text = listed(m.plausible.iter().map(|h| h.form.clone()).collect());
        let head = format!(
            "{} ({} estimates) grows as {} along {}{} (exponent {:.2}, 95% CI [{:.2}, {:.2}]), limit {limit}",
            e.metric,
            m.estimator,
            m.fit.form,
            e.axis,
            fmt_params(&m.fixed),
            m.fit.exponent,
            interval[0],
            interval[1]
        );
        let detail = match verdict {
            Verdict::Held => format!(
                "{head}; every plausible term ({plausible_text}) grows at most as {}^{limit}",
                e.axis
            ),
            Verdict::Violated => format!(
                "{head}; every plausible term ({plausible_text}) grows faster than {}^{limit}",
                e.axis
            ),
            Verdict::Inconclusive if judged.is_empty() => {
                format!("{head}; no exponent interval")
            }
            Verdict::Inconclusive => {
                let side = |within: bool| {
                    listed(
                        judged
                            .iter()
                            .filter(|(_, ok)| *ok == within)
                            .map(|(form, _)| form.clone())
                            .collect(),
                    )
                };
                format!(
                    "{head}; inconclusive: the data cannot tell apart terms on both sides of the limit (within: {}; beyond: {}); {}",
                    side(true),
                    side(false),
                    separate_them(&e.axis, m, group.as_ref())
                )
            }
        };
        out.push(Check {
            kind: "max_exponent".into(),
            axis: Some(e.axis.clone()),
            metric: e.metric.clone(),
            fixed: m.fixed.clone(),
            limit: Some(limit),
            observed: Some(m.fit.exponent),
            interval: Some(interval),
            passed: verdict == Verdict::Held,
            verdict,
            samples,
            estimator: None,
            plausible: m.plausible.iter().map(|h| h.form.clone()).collect(),
            detail,
        });
    }
    for u in unfitted
        .iter()
        .filter(|u| u.axis == e.axis && u.metric == e.metric)
    {
        let mut c = inconclusive(
            "max_exponent",
            Some(&e.axis),
            &e.metric,
            Some(limit),
            format!(
                "no model of {} along {}{}: {}",
                e.metric,
                e.axis,
                fmt_params(&u.fixed),
                u.reason
            ),
        );
        c.fixed = u.fixed.clone();
        out.push(c);
    }
    if out.is_empty() {
        out.push(inconclusive(
            "max_exponent",
            Some(&e.axis),
            &e.metric,
            Some(limit),
            format!("no cell measured {} along {}", e.metric, e.axis),
        ));
    }
    out
}

/// Terms for a sentence: the first [`LISTED`], then how many more.
fn listed(items: Vec<String>) -> String {
    if items.len() <= LISTED {
        return items.join(", ");
    }
    format!(
        "{} and {} more",
        items[..LISTED].join(", "),
        items.len() - LISTED
    )
}

/// Plausible terms named in a check's detail (all of them are in its `plausible`).
const LISTED: usize = 4;

/// The verdict of `max_exponent = limit` on a model: held or violated only when every plausible
/// hypothesis is on the same side (see `Fit::grows_at_most`), with each hypothesis's side.
/// A model without a plausible set (an older receipt) is judged on its interval.
fn judge_plausible(m: &Model, limit: f64) -> (Verdict, Vec<(String, bool)>) {
    if m.plausible.is_empty() {
        let interval = m.exponent_ci95;
        let v = if interval.iter().any(|x| x.is_nan()) {
            Verdict::Inconclusive
        } else {
            judge(interval, f64::NEG_INFINITY, limit)
        };
        return (v, Vec::new());
    }
    let sides: Vec<(String, bool)> = m
        .plausible
        .iter()
        .map(|h| (h.form.clone(), h.grows_at_most_limit(limit)))
        .collect();
    let verdict = if sides.iter().all(|(_, ok)| *ok) {
        Verdict::Held
    } else if sides.iter().all(|(_, ok)| !*ok) {
        Verdict::Violated
    } else {
        Verdict::Inconclusive
    };
    (verdict, sides)
}

/// What would separate plausible hypotheses: a wider range (over a short range one log factor
/// mimics a quarter step of the power), more points, more rounds (less noise).
fn separate_them(axis: &str, m: &Model, group: Option<&Group<'_>>) -> String {
    let Some(g) = group.filter(|g| !g.points.is_empty()) else {
        return "to separate them: more points, a wider range or more rounds".to_string();
    };
    let lo = g.points.first().map_or(1.0, |p| p.x);
    let hi = g.points.last().map_or(1.0, |p| p.x);
    let rounds = g.points.iter().map(|p| p.stats.n).max().unwrap_or(0);
    let noise = crate::stats::median(
        &g.points
            .iter()
            .filter_map(|p| p.stats.precision)
            .collect::<Vec<_>>(),
    )
    .unwrap_or(0.0);
    format!(
        "to separate them: a wider range of {axis} (now {:.0}×; over a range this short a log factor and a step of the power look alike), more points (now {}), or more rounds (now up to {rounds}, estimates ±{:.1}%)",
        if lo > 0.0 { hi / lo } else { f64::NAN },
        m.fit.points,
        noise * 100.0
    )
}

fn min_efficiency_checks(
    e: &Expect,
    limit: f64,
    stats: &[CellStats],
    better: Better,
) -> Vec<Check> {
    let mut out = Vec::new();
    for g in groups(stats, &e.axis, &e.metric) {
        let fixed = to_map(&g.fixed);
        if g.points.len() < 2 {
            let mut c = inconclusive(
                "min_efficiency",
                Some(&e.axis),
                &e.metric,
                Some(limit),
                format!(
                    "{} usable point(s) along {}{}; efficiency needs at least 2",
                    g.points.len(),
                    e.axis,
                    fmt_params(&fixed)
                ),
            );
            c.fixed = fixed;
            out.push(c);
            continue;
        }
        let Some((p, eff, interval)) = lowest_efficiency(&g, better) else {
            continue;
        };
        let verdict = judge(interval, limit, f64::INFINITY);
        out.push(Check {
            kind: "min_efficiency".into(),
            axis: Some(e.axis.clone()),
            metric: e.metric.clone(),
            fixed: fixed.clone(),
            limit: Some(limit),
            observed: Some(eff),
            interval: Some(interval),
            passed: verdict == Verdict::Held,
            verdict,
            samples: g.min_samples,
            estimator: None,
            plausible: Vec::new(),
            detail: format!(
                "lowest parallel efficiency of {} along {}{}: {:.2} at {}={} (95% CI [{:.2}, {:.2}]), limit {limit}",
                e.metric,
                e.axis,
                fmt_params(&fixed),
                eff,
                e.axis,
                p,
                interval[0],
                interval[1]
            ),
        });
    }
    if out.is_empty() {
        out.push(inconclusive(
            "min_efficiency",
            Some(&e.axis),
            &e.metric,
            Some(limit),
            format!("no cell measured {} along {}", e.metric, e.axis),
        ));
    }
    out
}

/// The point of a group (two or more points) with the lowest parallel efficiency relative to
/// its first point: (p, efficiency, a conservative interval from the cells' CIs).
fn lowest_efficiency(g: &Group<'_>, better: Better) -> Option<(f64, f64, [f64; 2])> {
    let base = &g.points[0];
    let (p0, v0) = (base.x, location_of(base));
    let ci0 = base.stats.ci95.unwrap_or([v0, v0]);
    // The point with the lowest efficiency, with a conservative interval from the CIs.
    let mut worst: Option<(f64, f64, [f64; 2])> = None;
    for pt in &g.points[1..] {
        let v = location_of(pt);
        let ci = pt.stats.ci95.unwrap_or([v, v]);
        let eff = scaling::speedup(p0, v0, v, better) / pt.x;
        let (lo, hi) = match better {
            Better::Lower => (p0 * ci0[0] / ci[1] / pt.x, p0 * ci0[1] / ci[0] / pt.x),
            Better::Higher => (p0 * ci[0] / ci0[1] / pt.x, p0 * ci[1] / ci0[0] / pt.x),
        };
        if worst.is_none_or(|w| eff < w.1) {
            worst = Some((pt.x, eff, [lo, hi]));
        }
    }
    worst
}

fn reference_checks(r: &Reference, stats: &[CellStats]) -> Vec<Check> {
    let a = r.reference * (1.0 + r.lower);
    let b = r.reference * (1.0 + r.upper);
    let (lo, hi) = (a.min(b), a.max(b));
    let wanted = to_map(&r.params);
    let mut out = Vec::new();
    for cs in stats.iter().filter(|s| s.metric == r.metric) {
        if !params_match(&cs.params, &r.params) {
            continue;
        }
        let s = &cs.stats;
        let (verdict, detail) = match (s.location(), s.ci95) {
            (Some(location), Some(ci)) => {
                let v = judge(ci, lo, hi);
                (
                    v,
                    format!(
                        "{}{}: {} {location:.4} (95% CI [{:.4}, {:.4}]) against reference {} within [{lo:.4}, {hi:.4}]{}",
                        r.metric,
                        fmt_params(&cs.params),
                        s.estimator,
                        ci[0],
                        ci[1],
                        r.reference,
                        if s.censored > 0 {
                            format!("; {} censored run(s)", s.censored)
                        } else {
                            String::new()
                        }
                    ),
                )
            }
            _ => (
                Verdict::Inconclusive,
                format!(
                    "{}{}: no measured run ({} censored)",
                    r.metric,
                    fmt_params(&cs.params),
                    s.censored
                ),
            ),
        };
        let verdict = if s.censored > 0 && verdict == Verdict::Held {
            Verdict::Inconclusive
        } else {
            verdict
        };
        out.push(Check {
            kind: "reference".into(),
            axis: None,
            metric: r.metric.clone(),
            fixed: cs.params.clone(),
            limit: Some(r.reference),
            observed: s.location(),
            interval: s.ci95,
            passed: verdict == Verdict::Held,
            verdict,
            samples: s.n,
            estimator: None,
            plausible: Vec::new(),
            detail,
        });
    }
    if out.is_empty() {
        let mut c = inconclusive(
            "reference",
            None,
            &r.metric,
            Some(r.reference),
            format!("no measured cell{} for the reference", fmt_params(&wanted)),
        );
        c.fixed = wanted;
        out.push(c);
    }
    out
}
