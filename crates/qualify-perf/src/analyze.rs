//! The whole performance analysis of one run: per-cell statistics, workload models per axis and
//! metric (one per combination of the other axes), concurrency scaling, the spec's checks turned
//! into verdicts, predictions at the target (recorded as predictions, never as evidence), and the
//! comparison with a baseline receipt. Input and output are plain data; the output serializes
//! to the receipt's `predicate.performance`.

use std::collections::BTreeMap;

use qualify_model::Params;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::model::{self, Fit};
use crate::scaling::{self, Amdahl, Better, Point, Usl};
use crate::stats::{self, Rng, SEED, Sample, Stats};

/// Bootstrap refits for a model's exponent interval.
pub const MODEL_RESAMPLES: usize = 200;
/// Uncensored runs a checked cell needs before its check can close the layer.
pub const MIN_SAMPLES: usize = 3;
/// The regression threshold when the spec gives none.
pub const DEFAULT_REGRESSION: f64 = 0.1;

/// A metric the run measures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricDef {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit: Option<String>,
    pub better: Better,
}

/// How an axis is analysed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AxisRole {
    /// Fit growth models along it.
    Workload,
    /// Speedup, efficiency, Amdahl and USL along it.
    Concurrency,
    /// Only groups cells.
    Other,
}

#[derive(Debug, Clone)]
pub struct AxisInput {
    pub name: String,
    pub role: AxisRole,
}

/// One cell: its parameters (in axis order) and every run's sample per metric.
#[derive(Debug, Clone, Default)]
pub struct CellInput {
    pub params: Params,
    pub samples: BTreeMap<String, Vec<Sample>>,
    /// Problems measuring this cell (a metric that did not parse, a run that failed).
    pub errors: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ExpectKind {
    MaxExponent(f64),
    MinEfficiency(f64),
}

#[derive(Debug, Clone)]
pub struct Expect {
    pub axis: String,
    pub metric: String,
    pub kind: ExpectKind,
}

/// A ReFrame-style reference: the cell's median must lie in
/// `[reference · (1 + lower), reference · (1 + upper)]`.
#[derive(Debug, Clone)]
pub struct Reference {
    pub params: Params,
    pub metric: String,
    pub reference: f64,
    pub lower: f64,
    pub upper: f64,
}

/// A previous receipt's `predicate.performance` and the receipt's digest.
#[derive(Debug, Clone)]
pub struct BaselineInput {
    pub receipt: String,
    pub performance: Value,
}

#[derive(Debug, Clone, Default)]
pub struct Input {
    pub repeat: usize,
    pub warmup: usize,
    pub regression: Option<f64>,
    pub metrics: Vec<MetricDef>,
    pub axes: Vec<AxisInput>,
    pub cells: Vec<CellInput>,
    pub expects: Vec<Expect>,
    pub references: Vec<Reference>,
    /// Concurrency the target runs with (predictions along concurrency axes).
    pub target_concurrency: Option<f64>,
    /// Target value per workload axis (predictions along workload axes).
    pub target_workload: BTreeMap<String, f64>,
    pub baseline: Option<BaselineInput>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CellStats {
    pub params: Params,
    pub metric: String,
    #[serde(flatten)]
    pub stats: Stats,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Model {
    pub axis: String,
    pub metric: String,
    pub fixed: Params,
    #[serde(flatten)]
    pub fit: Fit,
    /// Percentile-bootstrap 95% interval of the exponent (cells resampled, model re-chosen).
    pub exponent_ci95: [f64; 2],
    /// Cells left out because some of their runs were censored.
    pub censored_cells: usize,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Unfitted {
    pub axis: String,
    pub metric: String,
    pub fixed: Params,
    pub points: usize,
    pub reason: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Scaling {
    pub axis: String,
    pub metric: String,
    pub fixed: Params,
    pub points: Vec<Point>,
    pub amdahl: Option<Amdahl>,
    pub usl: Option<Usl>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Held,
    Violated,
    /// Not enough evidence either way (interval straddles the limit, no model, no cell).
    Inconclusive,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Check {
    /// `max_exponent`, `min_efficiency`, `reference` or `baseline`.
    pub kind: String,
    pub axis: Option<String>,
    pub metric: String,
    #[serde(default, skip_serializing_if = "Params::is_empty")]
    pub fixed: Params,
    pub limit: Option<f64>,
    pub observed: Option<f64>,
    pub interval: Option<[f64; 2]>,
    pub passed: bool,
    pub verdict: Verdict,
    /// The fewest uncensored runs of a cell this check rests on.
    pub samples: usize,
    pub detail: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Prediction {
    pub axis: String,
    pub at: f64,
    pub metric: String,
    pub fixed: Params,
    pub value: f64,
    pub model: String,
    pub note: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Change {
    pub params: Params,
    pub metric: String,
    pub before: f64,
    pub after: f64,
    pub ratio: f64,
    pub ci95: [f64; 2],
    /// The larger relative spread (1.4826 · MAD / median) of the two cells.
    pub noise: f64,
    pub significant: bool,
    /// A significant change in the worse direction.
    pub regression: bool,
    /// The fewer uncensored runs of the two cells.
    pub samples: usize,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BaselineReport {
    pub receipt: String,
    pub changes: Vec<Change>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CellError {
    pub params: Params,
    pub message: String,
}

/// `predicate.performance`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Performance {
    pub repeat: usize,
    pub warmup: usize,
    pub regression: f64,
    pub metrics: Vec<MetricDef>,
    pub stats: Vec<CellStats>,
    pub models: Vec<Model>,
    pub unfitted: Vec<Unfitted>,
    pub scaling: Vec<Scaling>,
    pub checks: Vec<Check>,
    pub predictions: Vec<Prediction>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<BaselineReport>,
    pub errors: Vec<CellError>,
}

/// Parameters as every output shows them: sorted by axis name.
fn to_map(params: &Params) -> Params {
    let mut pairs: Vec<(&str, &qualify_model::Value)> = params.iter().collect();
    pairs.sort_by(|a, b| a.0.cmp(b.0));
    pairs.into_iter().map(|(k, v)| (k, v.clone())).collect()
}

/// Every `wanted` parameter has the same point in `cell` (numbers compare numerically).
fn params_match(cell: &Params, wanted: &Params) -> bool {
    wanted
        .iter()
        .all(|(k, v)| cell.get(k).is_some_and(|cv| cv.same_point(v)))
}

/// Group key: the cell's params without `axis`.
fn fixed_of(params: &Params, axis: &str) -> Params {
    params
        .iter()
        .filter(|(k, _)| *k != axis)
        .map(|(k, v)| (k, v.clone()))
        .collect()
}

struct AxisPoint<'a> {
    x: f64,
    stats: &'a Stats,
}

struct Group<'a> {
    fixed: Params,
    points: Vec<AxisPoint<'a>>,
    censored_cells: usize,
    min_samples: usize,
}

/// Cells grouped by the other axes, with the usable (fully uncensored) points along `axis`.
fn groups<'a>(stats: &'a [CellStats], axis: &str, metric: &str) -> Vec<Group<'a>> {
    let mut out: Vec<Group<'a>> = Vec::new();
    for cs in stats {
        if cs.metric != metric {
            continue;
        }
        let cell = &cs.params;
        let Some(x) = cell.get(axis).and_then(qualify_model::Value::as_f64) else {
            continue;
        };
        let fixed = fixed_of(cell, axis);
        let idx = match out.iter().position(|g| {
            g.fixed.len() == fixed.len()
                && g.fixed
                    .iter()
                    .zip(fixed.iter())
                    .all(|(a, b)| a.0 == b.0 && a.1.same_point(b.1))
        }) {
            Some(i) => i,
            None => {
                out.push(Group {
                    fixed,
                    points: Vec::new(),
                    censored_cells: 0,
                    min_samples: usize::MAX,
                });
                out.len() - 1
            }
        };
        let g = &mut out[idx];
        if cs.stats.censored > 0 || cs.stats.median.is_none() {
            g.censored_cells += 1;
            continue;
        }
        if g.points.iter().any(|p| p.x == x) {
            continue;
        }
        g.min_samples = g.min_samples.min(cs.stats.n);
        g.points.push(AxisPoint {
            x,
            stats: &cs.stats,
        });
    }
    for g in &mut out {
        g.points.sort_by(|a, b| a.x.total_cmp(&b.x));
        if g.min_samples == usize::MAX {
            g.min_samples = 0;
        }
    }
    out
}

fn median_of(p: &AxisPoint<'_>) -> f64 {
    p.stats.median.unwrap_or(f64::NAN)
}

/// The smallest relative uncertainty assumed for measured medians: frequency scaling, caches
/// and lower-order terms shift timings by about 1% in ways repeats do not reveal, so
/// cross-validated errors closer than this are no evidence for a more complex term.
pub const MIN_NOISE: f64 = 0.01;

/// The typical relative uncertainty of the points' medians: the median relative half-width of
/// their 95% intervals, at least [`MIN_NOISE`].
fn noise_of(points: &[AxisPoint<'_>]) -> f64 {
    let widths: Vec<f64> = points
        .iter()
        .filter_map(|p| match (p.stats.ci95, p.stats.median) {
            (Some([lo, hi]), Some(m)) if m != 0.0 => Some((hi - lo) / 2.0 / m.abs()),
            _ => None,
        })
        .collect();
    stats::median(&widths).unwrap_or(0.0).max(MIN_NOISE)
}

/// Bootstrap interval of the chosen exponent: resample each cell's runs, re-take medians, refit.
fn exponent_interval(points: &[AxisPoint<'_>], noise: f64, rng: &mut Rng) -> [f64; 2] {
    let mut exps = Vec::with_capacity(MODEL_RESAMPLES);
    for _ in 0..MODEL_RESAMPLES {
        let resampled: Vec<(f64, f64)> = points
            .iter()
            .map(|p| {
                let v = &p.stats.values;
                let buf: Vec<f64> = (0..v.len()).map(|_| v[rng.below(v.len())]).collect();
                (p.x, stats::median(&buf).unwrap_or(f64::NAN))
            })
            .collect();
        if let Ok(fit) = model::fit_noisy(&resampled, noise) {
            exps.push(fit.exponent);
        }
    }
    exps.sort_by(f64::total_cmp);
    match (
        stats::quantile_sorted(&exps, 0.025),
        stats::quantile_sorted(&exps, 0.975),
    ) {
        (Some(lo), Some(hi)) => [lo, hi],
        _ => [f64::NAN, f64::NAN],
    }
}

fn judge(interval: [f64; 2], lo_ok: f64, hi_ok: f64) -> Verdict {
    if interval[0] >= lo_ok && interval[1] <= hi_ok {
        Verdict::Held
    } else if interval[1] < lo_ok || interval[0] > hi_ok {
        Verdict::Violated
    } else {
        Verdict::Inconclusive
    }
}

/// ` at n=4,mode="fast"`: values as JSON writes them.
fn fmt_params(m: &Params) -> String {
    if m.is_empty() {
        return String::new();
    }
    let parts: Vec<String> = m
        .iter()
        .map(|(k, v)| format!("{k}={}", serde_json::to_string(v).unwrap_or_default()))
        .collect();
    format!(" at {}", parts.join(","))
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
        detail,
    }
}

/// Metrics whose speedup means something: not total CPU time or memory, which grow with
/// concurrency by design.
fn scales(metric: &str) -> bool {
    !matches!(metric, "cpu" | "peak_memory")
}

/// Run the analysis.
pub fn analyze(input: &Input) -> Performance {
    let better_of = |metric: &str| {
        input
            .metrics
            .iter()
            .find(|m| m.name == metric)
            .map_or(Better::Lower, |m| m.better)
    };
    let mut stats = Vec::new();
    let mut errors = Vec::new();
    for cell in &input.cells {
        for m in &input.metrics {
            let samples = cell.samples.get(&m.name).map(Vec::as_slice).unwrap_or(&[]);
            stats.push(CellStats {
                params: to_map(&cell.params),
                metric: m.name.clone(),
                stats: stats::summarize(samples),
            });
        }
        for e in &cell.errors {
            errors.push(CellError {
                params: to_map(&cell.params),
                message: e.clone(),
            });
        }
    }

    let mut rng = Rng::new(SEED);
    let mut models = Vec::new();
    let mut unfitted = Vec::new();
    let mut scalings = Vec::new();
    for axis in &input.axes {
        for m in &input.metrics {
            for g in groups(&stats, &axis.name, &m.name) {
                let fixed = to_map(&g.fixed);
                match axis.role {
                    AxisRole::Workload => {
                        let pts: Vec<(f64, f64)> =
                            g.points.iter().map(|p| (p.x, median_of(p))).collect();
                        let noise = noise_of(&g.points);
                        match model::fit_noisy(&pts, noise) {
                            Ok(fit) => models.push(Model {
                                axis: axis.name.clone(),
                                metric: m.name.clone(),
                                fixed,
                                exponent_ci95: exponent_interval(&g.points, noise, &mut rng),
                                fit,
                                censored_cells: g.censored_cells,
                            }),
                            Err(reason) => unfitted.push(Unfitted {
                                axis: axis.name.clone(),
                                metric: m.name.clone(),
                                fixed,
                                points: g.points.len(),
                                reason: if g.censored_cells > 0 {
                                    format!(
                                        "{reason} ({} cell(s) left out: censored runs)",
                                        g.censored_cells
                                    )
                                } else {
                                    reason
                                },
                            }),
                        }
                    }
                    AxisRole::Concurrency if scales(&m.name) => {
                        let data: Vec<(f64, f64)> =
                            g.points.iter().map(|p| (p.x, median_of(p))).collect();
                        let points = scaling::points(&data, m.better);
                        if points.is_empty() {
                            continue;
                        }
                        scalings.push(Scaling {
                            axis: axis.name.clone(),
                            metric: m.name.clone(),
                            fixed,
                            amdahl: scaling::amdahl(&points),
                            usl: scaling::usl(&points),
                            points,
                        });
                    }
                    AxisRole::Concurrency | AxisRole::Other => {}
                }
            }
        }
    }

    let mut checks = Vec::new();
    for e in &input.expects {
        match e.kind {
            ExpectKind::MaxExponent(limit) => {
                checks.extend(max_exponent_checks(e, limit, &models, &unfitted, &stats));
            }
            ExpectKind::MinEfficiency(limit) => {
                checks.extend(min_efficiency_checks(
                    e,
                    limit,
                    &stats,
                    better_of(&e.metric),
                ));
            }
        }
    }
    for r in &input.references {
        checks.extend(reference_checks(r, &stats));
    }

    let predictions = predictions(input, &scalings, &models);
    let regression = input.regression.unwrap_or(DEFAULT_REGRESSION);
    let baseline = input.baseline.as_ref().map(|b| {
        let report = compare_baseline(b, &stats, &input.metrics);
        checks.extend(baseline_checks(&report, &input.metrics, regression));
        report
    });

    Performance {
        repeat: input.repeat,
        warmup: input.warmup,
        regression,
        metrics: input.metrics.clone(),
        stats,
        models,
        unfitted,
        scaling: scalings,
        checks,
        predictions,
        baseline,
        errors,
    }
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
        let samples = groups(stats, &e.axis, &e.metric)
            .into_iter()
            .find(|g| to_map(&g.fixed) == m.fixed)
            .map_or(0, |g| g.min_samples);
        let verdict = if interval.iter().any(|x| x.is_nan()) {
            Verdict::Inconclusive
        } else {
            judge(interval, f64::NEG_INFINITY, limit)
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
            detail: format!(
                "{} grows as {} along {}{} (exponent {:.2}, 95% CI [{:.2}, {:.2}]), limit {limit}",
                e.metric,
                m.fit.form,
                e.axis,
                fmt_params(&m.fixed),
                m.fit.exponent,
                interval[0],
                interval[1]
            ),
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
        let base = &g.points[0];
        let (p0, v0) = (base.x, median_of(base));
        let ci0 = base.stats.ci95.unwrap_or([v0, v0]);
        // The point with the lowest efficiency, with a conservative interval from the CIs.
        let mut worst: Option<(f64, f64, [f64; 2])> = None;
        for pt in &g.points[1..] {
            let v = median_of(pt);
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
        let Some((p, eff, interval)) = worst else {
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
        let (verdict, detail) = match (s.median, s.ci95) {
            (Some(median), Some(ci)) => {
                let v = judge(ci, lo, hi);
                (
                    v,
                    format!(
                        "{}{}: median {median:.4} (95% CI [{:.4}, {:.4}]) against reference {} within [{lo:.4}, {hi:.4}]{}",
                        r.metric,
                        fmt_params(&cs.params),
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
            observed: s.median,
            interval: s.ci95,
            passed: verdict == Verdict::Held,
            verdict,
            samples: s.n,
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

fn predictions(input: &Input, scalings: &[Scaling], models: &[Model]) -> Vec<Prediction> {
    let note = "model prediction, not evidence".to_string();
    let mut out = Vec::new();
    if let Some(c) = input.target_concurrency {
        for s in scalings {
            let (Some(base), Some(max_p)) = (s.points.first(), s.points.last().map(|p| p.p)) else {
                continue;
            };
            if c <= max_p {
                continue;
            }
            let better = input
                .metrics
                .iter()
                .find(|m| m.name == s.metric)
                .map_or(Better::Lower, |m| m.better);
            let (name, speedup) = match (&s.usl, &s.amdahl) {
                (Some(u), _) => ("usl", u.speedup(c)),
                (None, Some(a)) => ("amdahl", a.speedup(c)),
                _ => continue,
            };
            out.push(Prediction {
                axis: s.axis.clone(),
                at: c,
                metric: s.metric.clone(),
                fixed: s.fixed.clone(),
                value: scaling::value_at(base.p, base.value, speedup, better),
                model: name.to_string(),
                note: note.clone(),
            });
        }
    }
    for m in models {
        if let Some(&at) = input.target_workload.get(&m.axis) {
            out.push(Prediction {
                axis: m.axis.clone(),
                at,
                metric: m.metric.clone(),
                fixed: m.fixed.clone(),
                value: m.fit.predict(at),
                model: m.fit.form.clone(),
                note: note.clone(),
            });
        }
    }
    out
}

/// Compare every cell and metric both runs measured.
fn compare_baseline(
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
        let (Some(m0), Some(m1)) = (prev.stats.median, after.stats.median) else {
            continue;
        };
        if m0 == 0.0 {
            continue;
        }
        let ratio = m1 / m0;
        let ci = ratio_interval(&prev.stats.values, &after.stats.values, &mut rng)
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

/// Bootstrap interval of median(after) / median(before).
fn ratio_interval(before: &[f64], after: &[f64], rng: &mut Rng) -> Option<[f64; 2]> {
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
        if let (Some(mb), Some(ma)) = (stats::median(&b), stats::median(&a))
            && mb != 0.0
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
fn baseline_checks(report: &BaselineReport, metrics: &[MetricDef], threshold: f64) -> Vec<Check> {
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
