//! What the analysis returns, shaped as the receipt's `predicate.performance`: statistics per
//! cell, models and the groups left unfitted, scaling, checks with verdicts, predictions, the
//! baseline comparison and the cells' measurement errors.

use qualify_model::Params;
use serde::{Deserialize, Serialize};

use super::MetricDef;
use crate::model::Fit;
use crate::scaling::{Amdahl, Point, Usl};
use crate::stats::Stats;

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
