//! What the analysis reads: the run's metrics, axes and their roles, every cell's samples, the
//! spec's expectations and references, the target, and an optional baseline.

use std::collections::BTreeMap;

use qualify_model::Params;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::scaling::Better;
use crate::stats::Sample;

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
