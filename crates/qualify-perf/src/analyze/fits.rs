//! Models along workload axes and speedup, Amdahl and USL along concurrency axes, one per group
//! of cells. A model's uncertainty includes its selection: the whole fit-and-select procedure
//! is repeated on bootstrap resamples of whole rounds (a round's runs share the machine's state,
//! so resampling single runs would understate it), giving the exponent's interval and, with the
//! hypotheses whose cross-validated error is within the noise of the best, the plausible set.

use std::collections::{BTreeMap, BTreeSet};

use crate::model::{self, Fit};
use crate::scaling;
use crate::stats::{self, Estimator, Rng, SEED};

use super::groups::{AxisPoint, Group, groups, location_of, to_map};
use super::{AxisRole, CellStats, Hypothesis, Input, MetricDef, Model, Scaling, Unfitted};

/// Bootstrap refits (resamples of whole rounds) for a model's exponent interval.
pub const MODEL_RESAMPLES: usize = 200;

/// A hypothesis the bootstrap chose in at least this share of the resamples is plausible.
pub const PLAUSIBLE_SHARE: f64 = 0.025;

/// The smallest relative uncertainty assumed for measured estimates: frequency scaling, caches
/// and lower-order terms shift timings by about 1% in ways repeats do not reveal, so
/// cross-validated errors closer than this are no evidence for a more complex term.
pub const MIN_NOISE: f64 = 0.01;

/// How a model's `exponent_ci95` and `plausible` set are computed.
pub const INTERVAL_METHOD: &str = "bootstrap over whole rounds (200 resamples) of the estimates, the fit and the model selection; central 95% of the chosen exponents, widened to every plausible hypothesis";

/// The typical relative uncertainty of the points' estimates: the median relative half-width
/// of their 95% intervals, at least [`MIN_NOISE`].
fn noise_of(points: &[AxisPoint<'_>]) -> f64 {
    let widths: Vec<f64> = points.iter().filter_map(|p| p.stats.precision).collect();
    stats::median(&widths).unwrap_or(0.0).max(MIN_NOISE)
}

/// Draws bootstrap resamples of a group's points. With runs from two or more rounds, whole
/// rounds are drawn with replacement (as many as there were) and every point takes its runs of
/// the drawn rounds; a point with no run in the drawn rounds (it stopped early: precise enough)
/// and points without rounds resample their own runs one by one.
struct Resampler<'a> {
    points: &'a [AxisPoint<'a>],
    estimator: Estimator,
    rounds: Vec<u32>,
    by_round: Vec<BTreeMap<u32, Vec<f64>>>,
}

impl<'a> Resampler<'a> {
    fn new(points: &'a [AxisPoint<'a>], estimator: Estimator) -> Resampler<'a> {
        let by_round: Vec<BTreeMap<u32, Vec<f64>>> = points
            .iter()
            .map(|p| {
                let mut m: BTreeMap<u32, Vec<f64>> = BTreeMap::new();
                for (v, r) in p.stats.values.iter().zip(&p.stats.rounds) {
                    m.entry(*r).or_default().push(*v);
                }
                m
            })
            .collect();
        let rounds: BTreeSet<u32> = by_round.iter().flat_map(|m| m.keys().copied()).collect();
        Resampler {
            points,
            estimator,
            rounds: rounds.into_iter().collect(),
            by_round,
        }
    }

    fn draw(&self, rng: &mut Rng) -> Vec<(f64, f64)> {
        let drawn: Vec<u32> = if self.rounds.len() >= 2 {
            (0..self.rounds.len())
                .map(|_| self.rounds[rng.below(self.rounds.len())])
                .collect()
        } else {
            Vec::new()
        };
        self.points
            .iter()
            .zip(&self.by_round)
            .map(|(p, by_round)| {
                let mut buf: Vec<f64> = drawn
                    .iter()
                    .filter_map(|r| by_round.get(r))
                    .flatten()
                    .copied()
                    .collect();
                if buf.is_empty() {
                    let v = &p.stats.values;
                    buf = (0..v.len()).map(|_| v[rng.below(v.len())]).collect();
                }
                (
                    p.x,
                    stats::estimate(&buf, self.estimator).unwrap_or(f64::NAN),
                )
            })
            .collect()
    }
}

/// What the bootstrap of the whole procedure found: the chosen exponents and how often each
/// hypothesis (by form) was chosen.
struct Selection {
    exponents: Vec<f64>,
    chosen: BTreeMap<String, usize>,
    resamples: usize,
}

fn bootstrap_selection(
    points: &[AxisPoint<'_>],
    estimator: Estimator,
    noise: f64,
    rng: &mut Rng,
) -> Selection {
    let resampler = Resampler::new(points, estimator);
    let mut sel = Selection {
        exponents: Vec::with_capacity(MODEL_RESAMPLES),
        chosen: BTreeMap::new(),
        resamples: MODEL_RESAMPLES,
    };
    for _ in 0..MODEL_RESAMPLES {
        let pts = resampler.draw(rng);
        let Ok(all) = model::candidates(&pts) else {
            continue;
        };
        if let Some(k) = model::choose(&all, noise) {
            sel.exponents.push(all[k].exponent);
            *sel.chosen.entry(all[k].form.clone()).or_default() += 1;
        }
    }
    sel.exponents.sort_by(f64::total_cmp);
    sel
}

/// The plausible hypotheses (the chosen one first, then by error) and the exponent interval.
fn plausible_and_interval(
    all: &[Fit],
    chosen: &Fit,
    noise: f64,
    sel: &Selection,
) -> (Vec<Hypothesis>, [f64; 2]) {
    let margin = model::tie_margin(all, noise).unwrap_or(f64::INFINITY);
    let share = |form: &str| {
        sel.chosen.get(form).copied().unwrap_or(0) as f64 / sel.resamples.max(1) as f64
    };
    let mut plausible: Vec<Hypothesis> = all
        .iter()
        .filter(|h| h.form == chosen.form || h.error <= margin || share(&h.form) >= PLAUSIBLE_SHARE)
        .map(|h| Hypothesis {
            form: h.form.clone(),
            exponent: h.exponent,
            log_exponent: h.log_exponent,
            effective_exponent: h.effective_exponent,
            error: h.error,
            selected: share(&h.form),
        })
        .collect();
    plausible.sort_by(|a, b| {
        (b.form == chosen.form)
            .cmp(&(a.form == chosen.form))
            .then(a.error.total_cmp(&b.error))
    });
    let mut lo = chosen.exponent;
    let mut hi = chosen.exponent;
    if let (Some(a), Some(b)) = (
        stats::quantile_sorted(&sel.exponents, 0.025),
        stats::quantile_sorted(&sel.exponents, 0.975),
    ) {
        lo = lo.min(a);
        hi = hi.max(b);
    }
    for h in &plausible {
        lo = lo.min(h.exponent);
        hi = hi.max(h.exponent);
    }
    (plausible, [lo, hi])
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
                match axis.role() {
                    AxisRole::Workload => match workload_model(&axis.name, m, &g, &mut rng) {
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
    metric: &MetricDef,
    g: &Group<'_>,
    rng: &mut Rng,
) -> Result<Model, Unfitted> {
    let fixed = to_map(&g.fixed);
    let pts: Vec<(f64, f64)> = g.points.iter().map(|p| (p.x, location_of(p))).collect();
    let noise = noise_of(&g.points);
    let fitted = model::candidates(&pts).and_then(|all| {
        let k = model::choose(&all, noise).ok_or(model::FitError::NoTerm)?;
        Ok((all[k].clone(), all))
    });
    match fitted {
        Ok((fit, all)) => {
            let sel = bootstrap_selection(&g.points, metric.estimator, noise, rng);
            let (plausible, exponent_ci95) = plausible_and_interval(&all, &fit, noise, &sel);
            Ok(Model {
                axis: axis.to_string(),
                metric: metric.name.clone(),
                fixed,
                estimator: metric.estimator,
                exponent_ci95,
                interval_method: INTERVAL_METHOD.to_string(),
                plausible,
                fit,
                censored_cells: g.censored_cells,
            })
        }
        Err(reason) => Err(Unfitted {
            axis: axis.to_string(),
            metric: metric.name.clone(),
            fixed,
            points: g.points.len(),
            reason: if g.censored_cells > 0 {
                format!(
                    "{reason} ({} cell(s) left out: censored runs)",
                    g.censored_cells
                )
            } else {
                reason.to_string()
            },
        }),
    }
}

/// The group's speedup, efficiency, Amdahl and USL along `axis` (none without usable points).
fn concurrency(axis: &str, m: &MetricDef, g: &Group<'_>) -> Option<Scaling> {
    let data: Vec<(f64, f64)> = g.points.iter().map(|p| (p.x, location_of(p))).collect();
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
