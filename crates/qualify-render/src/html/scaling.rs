//! The workload plots: one log–log plot per (axis, metric) with a fitted model or at least two
//! measured values, each series the estimates (by the metric's estimator; medians in older
//! receipts) at fixed values of the other axes with 95% CI
//! whiskers (hollow markers for censored cells), the model's curve (dashed beyond the measured
//! range, up to the target), and predictions as diamonds.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use crate::svg::{Axis, PALETTE, Plot, Scale};
use crate::text::{self, num};
use crate::view::{self, Performance, Prediction, View};

use super::{logspace, with_unit};

/// One series of a workload plot: the measured estimates at fixed values of the other axes, and
/// the model fitted to them when there is one.
struct Series<'a> {
    fixed: Map<String, Value>,
    model: Option<&'a view::Model>,
    pts: Vec<(f64, &'a view::Stat)>,
}

/// The (axis, metric) plots: every model's, then every axis with two or more measured values that
/// neither a model nor a concurrency analysis covers (measured only, "no model").
fn workload_groups(v: &View, p: &Performance) -> Vec<(String, String)> {
    let mut groups: Vec<(String, String)> = Vec::new();
    for m in &p.models {
        let key = (m.axis.clone(), m.metric.clone());
        if !m.axis.is_empty() && !groups.contains(&key) {
            groups.push(key);
        }
    }
    let mut metrics: Vec<&str> = Vec::new();
    for s in &p.stats {
        if !metrics.contains(&s.metric.as_str()) {
            metrics.push(&s.metric);
        }
    }
    for axis in v.axis_order() {
        for metric in &metrics {
            let key = (axis.clone(), metric.to_string());
            let covered = groups.contains(&key)
                || p.scaling
                    .iter()
                    .any(|x| x.axis == axis && x.metric == *metric);
            let distinct: BTreeSet<String> = p
                .stats
                .iter()
                .filter(|s| s.metric == *metric)
                .filter_map(|s| view::coord(&s.params, &axis))
                .map(|x| x.to_string())
                .collect();
            if !covered && distinct.len() >= 2 {
                groups.push(key);
            }
        }
    }
    groups
}

pub(super) fn curves(h: &mut String, v: &View, p: &Performance) {
    let groups = workload_groups(v, p);
    if groups.is_empty() {
        return;
    }
    h.push_str("<h3>Scaling with workload (log–log)</h3>\n<div class=\"plots\">\n");
    for (axis, metric) in groups {
        if let Some(svg) = plot(v, p, &axis, &metric) {
            h.push_str(&svg);
            h.push('\n');
        }
    }
    h.push_str("</div>\n");
}

/// The series of one plot: one per model of (`axis`, `metric`), or without a model one per
/// combination of the other parameters; at most one per colour, with the number left out.
fn series<'a>(p: &'a Performance, axis: &str, metric: &str) -> (Vec<Series<'a>>, usize) {
    let in_axis = |s: &&view::Stat| s.metric == metric && view::coord(&s.params, axis).is_some();
    let mut series: Vec<Series> = p
        .models
        .iter()
        .filter(|m| m.axis == axis && m.metric == metric)
        .map(|m| Series {
            fixed: m.fixed.clone(),
            model: Some(m),
            pts: Vec::new(),
        })
        .collect();
    if series.is_empty() {
        // No model: one series per combination of the other parameters.
        for s in p.stats.iter().filter(in_axis) {
            let mut fixed = s.params.clone();
            fixed.remove(axis);
            if !series.iter().any(|x| x.fixed == fixed) {
                series.push(Series {
                    fixed,
                    model: None,
                    pts: Vec::new(),
                });
            }
        }
    }
    let dropped = series.len().saturating_sub(PALETTE.len());
    series.truncate(PALETTE.len());
    for se in &mut series {
        se.pts = p
            .stats
            .iter()
            .filter(in_axis)
            .filter(|s| view::matches(&s.params, &se.fixed))
            .filter_map(|s| Some((view::coord(&s.params, axis)?, s)))
            .collect();
        se.pts.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    (series, dropped)
}

/// The x range of a plot and the points its model curves are drawn at.
struct Span {
    x_axis: Axis,
    /// The largest x: the last measurement, or the target or a prediction beyond it.
    x_hi: f64,
    measured_hi: f64,
    curve_xs: Vec<f64>,
}

/// Models extend to the target and predictions; measured-only plots do not. `None` when no x
/// can be drawn.
fn span(
    v: &View,
    axis: &str,
    series: &[Series],
    preds: &[&Prediction],
    target: Option<f64>,
) -> Option<Span> {
    let any_model = series.iter().any(|s| s.model.is_some());
    let measured: Vec<f64> = series
        .iter()
        .flat_map(|s| s.pts.iter().map(|(x, _)| *x))
        .filter(|x| *x > 0.0)
        .collect();
    let xs: Vec<f64> = measured
        .iter()
        .copied()
        .chain(target.filter(|_| any_model))
        .chain(preds.iter().filter_map(|x| x.at))
        .collect();
    let x_scale = if v.axis_kind(axis).as_deref() == Some("concurrency") {
        Scale::Log2
    } else {
        Scale::Log10
    };
    let x_axis = Axis::fit(x_scale, xs.iter().copied())?;
    let x_lo = measured.iter().copied().fold(f64::INFINITY, f64::min);
    let x_hi = xs.iter().copied().filter(|x| *x > 0.0).fold(0.0, f64::max);
    let curve_xs = if x_lo.is_finite() {
        logspace(x_lo, x_hi, 80)
    } else {
        Vec::new()
    };
    Some(Span {
        x_axis,
        x_hi,
        measured_hi: measured.iter().copied().fold(0.0, f64::max),
        curve_xs,
    })
}

/// The y values a plot must show: estimates, their intervals, the model curves, predictions.
fn y_values(series: &[Series], preds: &[&Prediction], curve_xs: &[f64]) -> Vec<f64> {
    let mut ys: Vec<f64> = Vec::new();
    for se in series {
        for (_, s) in &se.pts {
            ys.extend(s.estimate);
            if let Some((a, b)) = s.ci95 {
                ys.push(a);
                ys.push(b);
            }
        }
        if let Some(m) = se.model {
            ys.extend(curve_xs.iter().filter_map(|x| m.eval(*x)));
        }
    }
    ys.extend(preds.iter().filter_map(|x| x.value));
    ys
}

/// The plot of `metric` against `axis` (`None` when nothing on it can be drawn on log axes).
fn plot(v: &View, p: &Performance, axis: &str, metric: &str) -> Option<String> {
    let (series, dropped) = series(p, axis, metric);
    let any_model = series.iter().any(|s| s.model.is_some());
    let target = v.target_workload(axis);
    let preds: Vec<&Prediction> = p
        .predictions
        .iter()
        .filter(|x| x.axis == axis && x.metric == metric)
        .collect();
    let span = span(v, axis, &series, &preds, target)?;
    let y_axis = Axis::fit(Scale::Log10, y_values(&series, &preds, &span.curve_xs))?;
    let unit = p.unit(metric);
    let mut plot = Plot::new(540.0, 360.0, span.x_axis, y_axis);
    plot.axes(
        &format!(
            "{metric} vs {axis}{}",
            if any_model { "" } else { " (no model fitted)" }
        ),
        axis,
        &with_unit(metric, &unit),
    );
    if let Some(t) = target.filter(|_| any_model) {
        plot.vline(t, "#6a1b9a", &format!("target {axis}={}", num(t)));
    }
    for (i, se) in series.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        draw_series(&mut plot, se, color, axis, &unit, &span);
    }
    if dropped > 0 {
        plot.legend(
            &format!("({dropped} more series not drawn; see the statistics table)"),
            "#fff",
            "line",
        );
    }
    for pr in &preds {
        if let (Some(at), Some(val)) = (pr.at, pr.value) {
            plot.diamond(
                at,
                val,
                "#6a1b9a",
                &format!("model prediction ({}), not evidence: {}", pr.model, pr.note),
            );
        }
    }
    let estimator = series
        .iter()
        .flat_map(|se| se.pts.iter().map(|(_, s)| s.estimator.as_str()))
        .next()
        .unwrap_or("median");
    plot.legend(
        &format!("measured {estimator}, 95% CI (hollow: censored runs)"),
        "#444",
        "dot",
    );
    if any_model && span.x_hi > span.measured_hi * (1.0 + 1e-9) {
        plot.legend("model beyond the measured range", "#444", "dash");
    }
    if !preds.is_empty() {
        plot.legend("prediction (not evidence)", "#6a1b9a", "diamond");
    }
    Some(plot.finish(&format!(
        "{metric} against {axis}, log-log, {}",
        if any_model {
            "with fitted model"
        } else {
            "measured only"
        }
    )))
}

/// One series: the model's curve (solid inside the measured range, dashed beyond it) or a line
/// through the estimates, the estimates with whiskers, and its legend entry.
fn draw_series(plot: &mut Plot, se: &Series, color: &str, axis: &str, unit: &str, span: &Span) {
    let measured_hi = span.measured_hi;
    if let Some(m) = se.model {
        let inside: Vec<(f64, f64)> = span
            .curve_xs
            .iter()
            .filter(|x| **x <= measured_hi * (1.0 + 1e-9))
            .filter_map(|x| Some((*x, m.eval(*x)?)))
            .collect();
        let beyond: Vec<(f64, f64)> = span
            .curve_xs
            .iter()
            .filter(|x| **x >= measured_hi * (1.0 - 1e-9))
            .filter_map(|x| Some((*x, m.eval(*x)?)))
            .collect();
        plot.polyline(&inside, color, false);
        plot.polyline(&beyond, color, true);
    } else {
        let line: Vec<(f64, f64)> = se
            .pts
            .iter()
            .filter_map(|(x, s)| Some((*x, s.estimate?)))
            .collect();
        plot.polyline(&line, color, false);
    }
    for (x, s) in &se.pts {
        if let Some((a, b)) = s.ci95 {
            plot.error_bar(*x, a, b, color);
        }
        if let Some(med) = s.estimate {
            let mut title = format!(
                "{axis}={}: {} {} {unit}, n={}",
                num(*x),
                s.estimator,
                num(med),
                s.n
            );
            if let Some((a, b)) = s.ci95 {
                title.push_str(&format!(", 95% CI [{}, {}]", num(a), num(b)));
            }
            if s.censored > 0 {
                title.push_str(&format!(
                    ", {} run(s) censored (did not finish): the true value is at least this",
                    s.censored
                ));
            }
            plot.circle(*x, med, color, s.censored == 0, &title);
        }
    }
    let fixed = text::fixed(&se.fixed);
    let what = match se.model {
        Some(m) => format!(
            "{}{}",
            model_formula(m, axis),
            m.error
                .map(|e| format!(", error {}", num(e)))
                .unwrap_or_default()
        ),
        None => format!(
            "measured {}",
            se.pts
                .first()
                .map_or("median", |(_, s)| s.estimator.as_str())
        ),
    };
    let label = if fixed.is_empty() {
        what
    } else {
        format!("{fixed}: {what}")
    };
    plot.legend(&label, color, "line");
}

/// `0.0008 + 2.1e-9·n^2·log2(n)`.
fn model_formula(m: &view::Model, axis: &str) -> String {
    let c0 = m.coefficients.first().copied().unwrap_or(0.0);
    let Some(c1) = m.coefficients.get(1) else {
        return num(c0);
    };
    if m.exponent == 0.0 && m.log_exponent == 0.0 {
        return format!("constant {}", num(c0 + c1));
    }
    let ci = m
        .exponent_ci95
        .map(|(a, b)| format!(" (exponent 95% CI [{}, {}])", num(a), num(b)))
        .unwrap_or_default();
    if !m.form.is_empty() {
        return format!("{} + {}·{}{ci}", num(c0), num(*c1), m.form);
    }
    let mut term = String::new();
    if m.exponent != 0.0 {
        term.push_str(axis);
        if m.exponent != 1.0 {
            term.push_str(&format!("^{}", num(m.exponent)));
        }
    }
    if m.log_exponent != 0.0 {
        if !term.is_empty() {
            term.push('·');
        }
        term.push_str(&format!("log2({axis})"));
        if m.log_exponent != 1.0 {
            term.push_str(&format!("^{}", num(m.log_exponent)));
        }
    }
    if term.is_empty() {
        term = "1".into();
    }
    format!("{} + {}·{term}{ci}", num(c0), num(*c1))
}
