//! Models along workload axes (with a bootstrap interval of the exponent) and speedup, Amdahl
//! and USL along concurrency axes, one per group of cells.

use crate::model;
use crate::scaling;
use crate::stats::{self, Rng, SEED};

use super::groups::{AxisPoint, Group, groups, median_of, to_map};
use super::{AxisRole, CellStats, Input, MetricDef, Model, Scaling, Unfitted};

/// Bootstrap refits for a model's exponent interval.
pub const MODEL_RESAMPLES: usize = 200;

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

/// Metrics whose speedup means something: not total CPU time or memory, which grow with
/// concurrency by design.
fn scales(metric: &str) -> bool {
    !matches!(metric, "cpu" | "peak_memory")
}

/// Every model, unfitted group and scaling analysis of a run, in axis, metric and group order.
#[derive(Default)]
pub(super) struct Fits {
    pub models: Vec<Model>,
    pub unfitted: Vec<Unfitted>,
    pub scaling: Vec<Scaling>,
}

/// Fit every group of every axis and metric: models along workload axes, scaling along
/// concurrency axes (for metrics whose speedup means something).
pub(super) fn fit_all(input: &Input, stats: &[CellStats]) -> Fits {
    // One generator for every model's bootstrap, in this order: same data, same intervals.
    let mut rng = Rng::new(SEED);
    let mut fits = Fits::default();
    for axis in &input.axes {
        for m in &input.metrics {
            for g in groups(stats, &axis.name, &m.name) {
                match axis.role {
                    AxisRole::Workload => match workload_model(&axis.name, &m.name, &g, &mut rng) {
                        Ok(model) => fits.models.push(model),
                        Err(unfitted) => fits.unfitted.push(unfitted),
                    },
                    AxisRole::Concurrency if scales(&m.name) => {
                        fits.scaling.extend(concurrency(&axis.name, m, &g));
                    }
                    AxisRole::Concurrency | AxisRole::Other => {}
                }
            }
        }
    }
    fits
}

/// The group's model along `axis`, or why there is none.
fn workload_model(
    axis: &str,
    metric: &str,
    g: &Group<'_>,
    rng: &mut Rng,
) -> Result<Model, Unfitted> {
    let fixed = to_map(&g.fixed);
    let pts: Vec<(f64, f64)> = g.points.iter().map(|p| (p.x, median_of(p))).collect();
    let noise = noise_of(&g.points);
    match model::fit_noisy(&pts, noise) {
        Ok(fit) => Ok(Model {
            axis: axis.to_string(),
            metric: metric.to_string(),
            fixed,
            exponent_ci95: exponent_interval(&g.points, noise, rng),
            fit,
            censored_cells: g.censored_cells,
        }),
        Err(reason) => Err(Unfitted {
            axis: axis.to_string(),
            metric: metric.to_string(),
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

/// The group's speedup, efficiency, Amdahl and USL along `axis` (none without usable points).
fn concurrency(axis: &str, m: &MetricDef, g: &Group<'_>) -> Option<Scaling> {
    let data: Vec<(f64, f64)> = g.points.iter().map(|p| (p.x, median_of(p))).collect();
    let points = scaling::points(&data, m.better);
    if points.is_empty() {
        return None;
    }
    Some(Scaling {
        axis: axis.to_string(),
        metric: m.name.clone(),
        fixed: to_map(&g.fixed),
        amdahl: scaling::amdahl(&points),
        usl: scaling::usl(&points),
        points,
    })
}
