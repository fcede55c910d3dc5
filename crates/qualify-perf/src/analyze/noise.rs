//! Noise as evidence: why a cell's runs are noisy (a robust spread above [`NOISY_SPREAD`], two
//! clusters, a precision `repeat = "auto"` did not reach) and the run's noise per metric —
//! Extra-P's spread measure over the cells, and per round how far its runs lay from their
//! cells' estimates, so a slow period of the machine is visible as a round, not as a slope.

use std::collections::BTreeMap;

use super::{CellStats, MetricNoise, RoundNoise, Rounds};
use crate::stats;

/// A robust relative spread (1.4826 · MAD / median) above which a cell is noisy: Extra-P's
/// noise-resilient modeler switches strategy at about this much.
pub const NOISY_SPREAD: f64 = 0.06;

/// How [`MetricNoise::spread`] is computed.
pub const SPREAD_ESTIMATOR: &str = "Extra-P: median over the cells of (max - min) / mean";

/// Fill in each cell's precision verdict and noise reasons.
pub(super) fn judge_cells(stats: &mut [CellStats], rounds: Option<&Rounds>) {
    for cs in stats {
        let s = &cs.stats;
        let sought = rounds.and_then(|r| {
            let p = r.precision?;
            r.precision_metrics.contains(&cs.metric).then_some(p)
        });
        cs.precision_reached = sought.map(|p| s.precision.is_some_and(|x| x <= p));
        let mut reasons = Vec::new();
        if s.n >= 3 && s.relative_spread() > NOISY_SPREAD {
            reasons.push(format!(
                "spread {:.1}% > {:.0}% (1.4826·MAD/median)",
                s.relative_spread() * 100.0,
                NOISY_SPREAD * 100.0
            ));
        }
        if s.multimodal {
            reasons.push("two clusters of runs (multimodal)".to_string());
        }
        if let (Some(p), Some(false)) = (sought, cs.precision_reached) {
            reasons.push(match s.precision {
                Some(x) => format!(
                    "precision {:.1}% not reached ({:.0}% sought) after {} run(s)",
                    x * 100.0,
                    p * 100.0,
                    s.n
                ),
                None => format!(
                    "precision unknown ({:.0}% sought) after {} run(s)",
                    p * 100.0,
                    s.n
                ),
            });
        }
        cs.noise = reasons;
    }
}

/// The run's noise for every metric, in metric order.
pub(super) fn per_metric(stats: &[CellStats], metrics: &[String]) -> Vec<MetricNoise> {
    metrics
        .iter()
        .map(|metric| {
            let cells: Vec<&CellStats> = stats.iter().filter(|s| &s.metric == metric).collect();
            let spreads: Vec<f64> = cells
                .iter()
                .filter_map(|c| {
                    let s = &c.stats;
                    let (mean, max, min) = (s.mean?, s.max?, s.min?);
                    (s.n >= 2 && mean != 0.0).then(|| (max - min) / mean.abs())
                })
                .collect();
            let mut by_round: BTreeMap<u32, Vec<f64>> = BTreeMap::new();
            for c in &cells {
                let s = &c.stats;
                let Some(est) = s.location().filter(|e| *e != 0.0) else {
                    continue;
                };
                for (v, r) in s.values.iter().zip(&s.rounds) {
                    by_round.entry(*r).or_default().push(v / est - 1.0);
                }
            }
            let rounds = by_round
                .into_iter()
                .map(|(round, mut devs)| {
                    devs.sort_by(f64::total_cmp);
                    RoundNoise {
                        round,
                        cells: devs.len(),
                        low: devs.first().copied().unwrap_or(0.0),
                        median: stats::median(&devs).unwrap_or(0.0),
                        high: devs.last().copied().unwrap_or(0.0),
                    }
                })
                .collect();
            MetricNoise {
                metric: metric.clone(),
                spread: stats::median(&spreads),
                spread_estimator: SPREAD_ESTIMATOR.to_string(),
                rounds,
                noisy_cells: cells.iter().filter(|c| !c.noise.is_empty()).count(),
            }
        })
        .collect()
}
