//! What the analysis reads: the run's metrics (with their estimators), axes and their roles,
//! every cell's samples (tagged with their round), how the rounds were scheduled, the spec's
//! expectations and references, the target, and an optional baseline.

use std::collections::BTreeMap;

use qualify_model::{AxisKind, Params};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::scaling::Better;
use crate::stats::{Estimator, Sample};
pub use qualify_model::Repeat;

/// A metric the run measures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricDef {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit: Option<String>,
    pub better: Better,
    /// How each cell's runs are located (receipts from before estimators: the median).
    #[serde(default)]
    pub estimator: Estimator,
}

/// How an axis is analysed, by its kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AxisRole {
    /// Fit growth models along it.
    Workload,
    /// Speedup, efficiency, Amdahl and USL along it.
    Concurrency,
    /// Only groups cells.
    Other,
}

impl AxisRole {
    /// A `workload` axis is fitted, a `concurrency` axis scaled; every other kind only groups.
    pub fn of(kind: AxisKind) -> AxisRole {
        match kind {
            AxisKind::Workload => AxisRole::Workload,
            AxisKind::Concurrency => AxisRole::Concurrency,
            _ => AxisRole::Other,
        }
    }
}

/// An axis as the analysis reads it: its name and kind (the spec's `Axis`, less its domain).
#[derive(Debug, Clone)]
pub struct AxisInput {
    pub name: String,
    pub kind: AxisKind,
}

impl AxisInput {
    pub fn role(&self) -> AxisRole {
        AxisRole::of(self.kind)
    }
}

/// One cell: its parameters (in axis order) and every run's sample per metric.
#[derive(Debug, Clone, Default)]
pub struct CellInput {
    pub params: Params,
    pub samples: BTreeMap<String, Vec<Sample>>,
    /// Problems measuring this cell (a metric that did not parse, a run that failed).
    pub errors: Vec<String>,
}

/// What the spec expects (`[[performance.expect]]`, `[[performance.reference]]`): the shared
/// vocabulary's.
pub use qualify_model::performance::{Expect, ExpectRule, Reference};

/// A previous receipt's `predicate.performance` and the receipt's digest.
#[derive(Debug, Clone)]
pub struct BaselineInput {
    pub receipt: String,
    pub performance: Value,
}

/// How the runs were scheduled (filled by the runner; the analysis reports it and judges each
/// cell's precision against `precision`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rounds {
    /// Seed of the shuffles: round `r` visits the cells in the order of a generator seeded
    /// with `seed + r`.
    pub seed: u64,
    /// Rounds run (round 1 is the plan's own execution).
    pub rounds: usize,
    /// The relative 95% half-width of its estimator every cell should reach (`repeat = "auto"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub precision: Option<f64>,
    /// The metrics the precision is sought for.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub precision_metrics: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_repeat: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_seconds: Option<f64>,
    /// Why no further round ran.
    pub stopped: String,
    /// Wall time from the first to the last run of the region.
    pub wall_seconds: f64,
    /// How the rounds were executed (the order of round 1, the shuffles, the executor).
    pub schedule: String,
    /// How the machine was shared while the region was measured (`None`: not recorded, e.g.
    /// under Slurm, whose scheduler places the runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<MachineShare>,
}

/// Whether other qualify runs used the machine while a run measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MachineShare {
    /// When measuring began and ended, in seconds since the Unix epoch.
    pub from: f64,
    pub to: f64,
    /// The run held the machine's measurement lock: no other measuring qualify run overlapped.
    pub exclusive: bool,
    /// The registry of active qualify runs was watched (else nothing is known of other runs).
    pub watched: bool,
    /// Other qualify runs seen active on the machine while measuring (`pid N (spec)`): they did
    /// not measure, but they used its CPUs, memory and caches.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub concurrent_runs: Vec<String>,
}

#[derive(Debug, Clone)]
pub struct Input {
    pub repeat: Repeat,
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
    /// The rounds' schedule (`None`: runs without rounds, e.g. from tests or old receipts).
    pub rounds: Option<Rounds>,
}

impl Default for Input {
    fn default() -> Input {
        Input {
            repeat: Repeat::Fixed(5),
            warmup: 1,
            regression: None,
            metrics: Vec::new(),
            axes: Vec::new(),
            cells: Vec::new(),
            expects: Vec::new(),
            references: Vec::new(),
            target_concurrency: None,
            target_workload: BTreeMap::new(),
            baseline: None,
            rounds: None,
        }
    }
}
