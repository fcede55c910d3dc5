//! Cells grouped by the other axes: the usable points along one axis for one metric, and the
//! parameter helpers every section shares (sorted maps, matching, ` at n=4` in details).

use qualify_model::Params;

use super::CellStats;
use crate::stats::Stats;

/// Parameters as every output shows them: sorted by axis name.
pub(super) fn to_map(params: &Params) -> Params {
    let mut pairs: Vec<(&str, &qualify_model::Value)> = params.iter().collect();
    pairs.sort_by(|a, b| a.0.cmp(b.0));
    pairs.into_iter().map(|(k, v)| (k, v.clone())).collect()
}

/// Every `wanted` parameter has the same point in `cell` (numbers compare numerically).
pub(super) fn params_match(cell: &Params, wanted: &Params) -> bool {
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

/// One usable cell along the axis: its coordinate and statistics.
pub(super) struct AxisPoint<'a> {
    pub x: f64,
    pub stats: &'a Stats,
}

/// The cells that share every other axis's value.
pub(super) struct Group<'a> {
    pub fixed: Params,
    pub points: Vec<AxisPoint<'a>>,
    pub censored_cells: usize,
    pub min_samples: usize,
}

/// Cells grouped by the other axes, with the usable (fully uncensored) points along `axis`.
pub(super) fn groups<'a>(stats: &'a [CellStats], axis: &str, metric: &str) -> Vec<Group<'a>> {
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
        if cs.stats.censored > 0 || cs.stats.location().is_none() {
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

/// The point's location: its metric's estimate.
pub(super) fn location_of(p: &AxisPoint<'_>) -> f64 {
    p.stats.location().unwrap_or(f64::NAN)
}

/// ` at n=4,mode="fast"`: values as JSON writes them.
pub(super) fn fmt_params(m: &Params) -> String {
    if m.is_empty() {
        return String::new();
    }
    let parts: Vec<String> = m
        .iter()
        .map(|(k, v)| format!("{k}={}", v.json_text()))
        .collect();
    format!(" at {}", parts.join(","))
}
