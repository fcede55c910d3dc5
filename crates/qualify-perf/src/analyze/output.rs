//! What the analysis returns, shaped as the receipt's `predicate.performance`: the rounds'
//! schedule, statistics per cell (each naming its estimator, with its precision and noise), the
//! run's noise per metric and round, models with their plausible hypotheses and the groups left
//! unfitted, scaling, checks with verdicts, predictions, the baseline comparison and the cells'
//! measurement errors.

use qualify_model::Params;
use serde::{Deserialize, Serialize};

use super::{MetricDef, Repeat, Rounds};
use crate::model::Fit;
use crate::scaling::{Amdahl, Point, Usl};
use crate::stats::{Estimator, Stats};

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CellStats {
    pub params: Params,
    pub metric: String,
    /// Whether the estimate reached the precision `repeat = "auto"` sought (`None`: none was
    /// sought for this metric).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub precision_reached: Option<bool>,
    /// Why this cell's runs of this metric are noisy (empty: they are not).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub noise: Vec<String>,
    #[serde(flatten)]
    pub stats: Stats,
}

/// How far one round's runs lay from their cells' estimates (relative: run / estimate − 1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoundNoise {
    pub round: u32,
    /// Cells with a measured run in this round.
    pub cells: usize,
    pub low: f64,
    pub median: f64,
    pub high: f64,
}

/// The machine's noise over the whole run, for one metric.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MetricNoise {
    pub metric: String,
    /// Extra-P's noise measure: per cell (max − min) / mean, and its median over the cells.
    pub spread: Option<f64>,
    /// How `spread` is computed.
    pub spread_estimator: String,
    /// Per round, the runs' deviation from their cells' estimates: a slow period of the
    /// machine shows as a round whose runs all lie high.
    pub rounds: Vec<RoundNoise>,
    /// Cells whose runs of this metric are noisy (see `CellStats::noise`).
    pub noisy_cells: usize,
}

/// One hypothesis of the normal form that the data cannot rule out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hypothesis {
    pub form: String,
    pub exponent: f64,
    pub log_exponent: u32,
    /// Its log–log slope at the largest measured n (`exponent + log_exponent / ln(n_max)`):
    /// what a `max_exponent` check compares with the limit.
    pub effective_exponent: f64,
    /// Leave-one-out relative error on the measured estimates.
    pub error: f64,
    /// Share of the bootstrap resamples (of whole rounds) in which it was the chosen model.
    pub selected: f64,
}

impl Hypothesis {
    /// Whether the term grows at most as `n^limit` where it was measured (see
    /// `Fit::grows_at_most`).
    pub fn grows_at_most_limit(&self, limit: f64) -> bool {
        crate::model::grows_at_most(self.effective_exponent, limit)
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Model {
    pub axis: String,
    pub metric: String,
    pub fixed: Params,
    /// The estimator that located each point the model is fitted to.
    #[serde(default)]
    pub estimator: Estimator,
    #[serde(flatten)]
    pub fit: Fit,
    /// 95% interval of the exponent: the central 95% of the exponents chosen when the whole
    /// fit-and-select procedure is repeated on bootstrap resamples of whole rounds, widened to
    /// every plausible hypothesis (`interval_method` says so in the receipt).
    pub exponent_ci95: [f64; 2],
    #[serde(default)]
    pub interval_method: String,
    /// Every hypothesis whose cross-validated error is within the noise of the best, or that
    /// the bootstrap chose in at least 2.5% of the resamples (the chosen one first).
    #[serde(default)]
    pub plausible: Vec<Hypothesis>,
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
    /// The estimator of the cells' values the check judges.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimator: Option<Estimator>,
    /// `max_exponent`: the plausible hypotheses the verdict was taken over.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub plausible: Vec<String>,
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
    /// `before` and `after` are this estimator over each run's values.
    #[serde(default)]
    pub estimator: Estimator,
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
    pub repeat: Repeat,
    pub warmup: usize,
    pub regression: f64,
    /// How the runs were scheduled in rounds (seed, rounds, why they stopped).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rounds: Option<Rounds>,
    pub metrics: Vec<MetricDef>,
    pub stats: Vec<CellStats>,
    /// The run's noise per metric and round.
    #[serde(default)]
    pub noise: Vec<MetricNoise>,
    pub models: Vec<Model>,
    pub unfitted: Vec<Unfitted>,
    pub scaling: Vec<Scaling>,
    pub checks: Vec<Check>,
    pub predictions: Vec<Prediction>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<BaselineReport>,
    pub errors: Vec<CellError>,
}
