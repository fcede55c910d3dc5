//! The whole performance analysis of one run: per-cell statistics, workload models per axis and
//! metric (one per combination of the other axes), concurrency scaling, the spec's checks turned
//! into verdicts, predictions at the target (recorded as predictions, never as evidence), and the
//! comparison with a baseline receipt. Input and output are plain data; the output serializes
//! to the receipt's `predicate.performance`.
//!
//! [`analyze`] runs the sections in order: statistics per cell (here) and their `noise`, `fits`
//! (models with their plausible hypotheses and scaling over the `groups` of cells), `checks`,
//! `predictions`, `baseline`. The types are in `input` and `output` and re-exported here.

mod baseline;
mod checks;
mod fits;
mod groups;
mod input;
mod noise;
mod output;
mod predictions;

pub use fits::{MIN_NOISE, MODEL_RESAMPLES, PLAUSIBLE_SHARE};
pub use input::{
    AxisInput, AxisRole, BaselineInput, CellInput, Expect, ExpectRule, Input, MachineShare,
    MetricDef, Reference, Repeat, Rounds,
};
pub use noise::{NOISY_SPREAD, SPREAD_ESTIMATOR};
pub use output::{
    BaselineReport, CellError, CellStats, Change, Check, Hypothesis, MetricNoise, Model,
    Performance, Prediction, RoundNoise, Scaling, Unfitted, Verdict,
};

use crate::stats;
use groups::to_map;

/// Uncensored runs a checked cell needs before its check can close the layer.
pub const MIN_SAMPLES: usize = 3;
/// The regression threshold when the spec gives none.
pub const DEFAULT_REGRESSION: f64 = 0.1;

/// Run the analysis.
pub fn analyze(input: &Input) -> Performance {
    let (mut stats, errors) = cell_stats(input);
    noise::judge_cells(&mut stats, input.rounds.as_ref());
    let names: Vec<String> = input.metrics.iter().map(|m| m.name.clone()).collect();
    let noise = noise::per_metric(&stats, &names);
    let fits::Fits {
        models,
        unfitted,
        scaling,
    } = fits::fit_all(input, &stats);
    let mut checks = checks::expectations(input, &stats, &models, &unfitted);
    let predictions = predictions::predictions(input, &scaling, &models);
    let regression = input.regression.unwrap_or(DEFAULT_REGRESSION);
    let baseline = input.baseline.as_ref().map(|b| {
        let report = baseline::compare_baseline(b, &stats, &input.metrics);
        checks.extend(baseline::baseline_checks(
            &report,
            &input.metrics,
            regression,
        ));
        report
    });

    Performance {
        repeat: input.repeat,
        warmup: input.warmup,
        regression,
        rounds: input.rounds.clone(),
        metrics: input.metrics.clone(),
        stats,
        noise,
        models,
        unfitted,
        scaling,
        checks,
        predictions,
        baseline,
        errors,
    }
}

/// Statistics per cell and metric (in cell, then metric order) and the cells' errors.
fn cell_stats(input: &Input) -> (Vec<CellStats>, Vec<CellError>) {
    let mut stats = Vec::new();
    let mut errors = Vec::new();
    for cell in &input.cells {
        for m in &input.metrics {
            let samples = cell.samples.get(&m.name).map(Vec::as_slice).unwrap_or(&[]);
            stats.push(CellStats {
                params: to_map(&cell.params),
                metric: m.name.clone(),
                precision_reached: None,
                noise: Vec::new(),
                stats: stats::summarize(samples, m.estimator),
            });
        }
        for e in &cell.errors {
            errors.push(CellError {
                params: to_map(&cell.params),
                message: e.clone(),
            });
        }
    }
    (stats, errors)
}
