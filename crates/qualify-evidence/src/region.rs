//! The tested region: what the completed cells actually examined (per axis, per dimension), the
//! machine they ran on, and which dimensions are material. Everything here is computed from cells
//! that finished; a declaration or a plan never counts as examined.

use std::collections::BTreeSet;

use qualify_model::{Strength, format_bytes};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::record::{AxisDomain, AxisKind, Cell, Dimension, ParamValue, RunRecord};

/// What this machine and the examined ranges covered (the receipt's `tested`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tested {
    pub hostname: String,
    pub cores_online: u64,
    pub cores_allowed: Option<u64>,
    pub nodes: u64,
    pub memory_bytes: Option<u64>,
    pub backend: String,
    /// Cells that finished (any outcome but `interrupted`).
    pub cells_completed: usize,
    /// Cells cut short by qualify's own interruption.
    pub cells_interrupted: usize,
    pub axes: Vec<ExaminedAxis>,
    /// Distinct memory ceilings the completed cells ran under (bytes), ascending.
    pub memory_ceilings: Vec<u64>,
    /// Distinct timeouts the completed cells ran under (seconds), ascending.
    pub timeouts_seconds: Vec<f64>,
    /// The topology the completed cells examined, when the spec has topology axes or a cell ran
    /// in a Slurm allocation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topology: Option<TestedTopology>,
    /// Each declared dependency and the faults completed cells put on it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dependencies: Vec<crate::faults::ExaminedDependency>,
}

/// The largest topology the completed cells examined (the receipt's `tested.topology`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TestedTopology {
    /// Nodes of the largest allocation a completed cell ran in — with per-node observation the
    /// nodes its ranks were seen on (1 for a local run: a `nodes` axis value alone does not
    /// make a run multi-node).
    pub nodes: u64,
    /// Largest rank (task) count: a topology axis other than `nodes`, or a Slurm allocation's
    /// tasks.
    pub ranks: u64,
    /// Cores per node of the machine the run was recorded on.
    pub cores_per_node: u64,
}

/// Nodes and tasks of the Slurm allocation a cell ran in (`evidence.slurm`), if it did. When
/// every node was observed (`evidence.nodes`), the nodes are those its ranks were seen on (the
/// placement), not the nodes it asked for: an allocation of three nodes whose ranks ran on two
/// examined two.
fn allocation(cell: &Cell) -> Option<(u64, u64)> {
    let slurm = cell.result.evidence.get("slurm")?;
    let asked = slurm.get("nodes")?.as_u64()?;
    let reached = cell
        .result
        .evidence
        .get("nodes")
        .and_then(|n| n.get("nodes_reached"))
        .and_then(Value::as_u64)
        .map_or(asked, |r| r.clamp(1, asked.max(1)));
    Some((
        reached,
        slurm.get("ntasks").and_then(Value::as_u64).unwrap_or(1),
    ))
}

fn tested_topology(record: &RunRecord, completed: &[&Cell]) -> Option<TestedTopology> {
    let rank_axes: Vec<&str> = record
        .axes
        .iter()
        .filter(|a| a.kind == AxisKind::Topology && a.name != "nodes")
        .map(|a| a.name.as_str())
        .collect();
    let allocations: Vec<(u64, u64)> = completed.iter().filter_map(|c| allocation(c)).collect();
    if rank_axes.is_empty() && allocations.is_empty() {
        return None;
    }
    let axis_ranks = completed
        .iter()
        .flat_map(|c| rank_axes.iter().filter_map(|a| c.params.get(a)?.as_u64()))
        .max();
    let alloc_ranks = allocations.iter().map(|a| a.1).max();
    Some(TestedTopology {
        nodes: allocations
            .iter()
            .map(|a| a.0)
            .max()
            .unwrap_or(0)
            .max(record.machine.nodes),
        ranks: axis_ranks.max(alloc_ranks).unwrap_or(0),
        cores_per_node: record.machine.usable_cores(),
    })
}

/// One axis as the completed cells examined it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExaminedAxis {
    pub name: String,
    pub kind: AxisKind,
    pub declared: AxisDomain,
    /// Distinct values examined (numeric ascending, otherwise first-seen order).
    pub values: Vec<ParamValue>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<ParamValue>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<ParamValue>,
    /// Completed cells that set this axis.
    pub cells: usize,
    /// What of the declared domain no completed cell reached, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unexamined: Option<String>,
}

impl ExaminedAxis {
    /// Largest numeric value examined.
    pub fn max_f64(&self) -> Option<f64> {
        self.max.as_ref().and_then(ParamValue::as_f64)
    }

    /// `threads 1, 2, 4 (3 values)` or `n 256..65536 (12 values)`.
    pub fn describe(&self) -> String {
        if self.values.is_empty() {
            return format!("{} not examined", self.name);
        }
        let count = self.values.len();
        let plural = if count == 1 { "value" } else { "values" };
        if count > 6
            && let (Some(min), Some(max)) = (&self.min, &self.max)
        {
            return format!(
                "{} {}..{} ({count} {plural})",
                self.name,
                min.receipt_text(),
                max.receipt_text()
            );
        }
        let list: Vec<String> = self.values.iter().map(ParamValue::receipt_text).collect();
        format!("{} {} ({count} {plural})", self.name, list.join(", "))
    }
}

/// A material dimension and whether the completed cells examined it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DimensionCoverage {
    pub dimension: Dimension,
    /// Why it is material (spec declaration, axis, target fact).
    pub material_because: String,
    pub examined: bool,
    /// The examined range in words, or why it is untested.
    pub detail: String,
}

/// Compute the tested region of `record`.
pub fn tested(record: &RunRecord) -> Tested {
    let completed: Vec<&Cell> = record.cells.iter().filter(|c| c.completed()).collect();
    let axes = record
        .axes
        .iter()
        .map(|axis| examine_axis(&axis.name, axis.kind, AxisDomain::of(axis), &completed))
        .collect();
    let mut memory_ceilings: Vec<u64> = completed
        .iter()
        .filter_map(|c| c.result.limits.memory_bytes)
        .collect();
    memory_ceilings.sort_unstable();
    memory_ceilings.dedup();
    let mut timeouts_seconds: Vec<f64> = completed
        .iter()
        .map(|c| c.result.limits.timeout_seconds)
        .collect();
    timeouts_seconds.sort_by(f64::total_cmp);
    timeouts_seconds.dedup();
    let topology = tested_topology(record, &completed);
    Tested {
        hostname: record.machine.hostname.clone(),
        cores_online: record.machine.cores_online,
        cores_allowed: record.machine.cores_allowed,
        nodes: topology
            .as_ref()
            .map_or(record.machine.nodes, |t| t.nodes.max(record.machine.nodes)),
        memory_bytes: record.machine.memory_bytes,
        backend: record.machine.backend.clone(),
        cells_completed: completed.len(),
        cells_interrupted: record.cells.len() - completed.len(),
        axes,
        memory_ceilings,
        timeouts_seconds,
        topology,
        dependencies: crate::faults::examined(record),
    }
}

/// How the completed cells examined the axis `name` of `kind` declared over `declared`.
pub(crate) fn examine_axis(
    name: &str,
    kind: AxisKind,
    declared: AxisDomain,
    completed: &[&Cell],
) -> ExaminedAxis {
    let mut values: Vec<ParamValue> = Vec::new();
    let mut cells = 0;
    for cell in completed {
        if let Some(v) = cell.params.get(name) {
            cells += 1;
            if !values.iter().any(|seen| seen.same_point(v)) {
                values.push(v.clone());
            }
        }
    }
    let numeric = !values.is_empty() && values.iter().all(ParamValue::is_numeric);
    let (min, max) = if numeric {
        values.sort_by(|a, b| num(a).total_cmp(&num(b)));
        (values.first().cloned(), values.last().cloned())
    } else {
        (None, None)
    };
    let unexamined = unexamined(&declared, &values, min.as_ref(), max.as_ref());
    ExaminedAxis {
        name: name.to_string(),
        kind,
        declared,
        values,
        min,
        max,
        cells,
        unexamined,
    }
}

fn unexamined(
    declared: &AxisDomain,
    values: &[ParamValue],
    min: Option<&ParamValue>,
    max: Option<&ParamValue>,
) -> Option<String> {
    match declared {
        AxisDomain::Values(list) => {
            let missing: Vec<String> = list
                .iter()
                .filter(|d| !values.iter().any(|v| v.same_point(d)))
                .map(ParamValue::receipt_text)
                .collect();
            if missing.is_empty() {
                None
            } else {
                Some(format!(
                    "declared value(s) {} never completed",
                    missing.join(", ")
                ))
            }
        }
        AxisDomain::Range { min: lo, max: hi } => {
            let (Some(lo_n), Some(hi_n)) = (lo.as_f64(), hi.as_f64()) else {
                return None;
            };
            let (Some(got_lo), Some(got_hi)) = (min.map(num), max.map(num)) else {
                return Some(format!(
                    "declared range {}..{} never examined",
                    lo.receipt_text(),
                    hi.receipt_text()
                ));
            };
            let mut parts = Vec::new();
            if got_lo > lo_n {
                parts.push(format!(
                    "{}..{}",
                    lo.receipt_text(),
                    min.map(ParamValue::receipt_text).unwrap_or_default()
                ));
            }
            if got_hi < hi_n {
                parts.push(format!(
                    "{}..{}",
                    max.map(ParamValue::receipt_text).unwrap_or_default(),
                    hi.receipt_text()
                ));
            }
            if parts.is_empty() {
                None
            } else {
                Some(format!(
                    "declared range {}..{}: {} not examined",
                    lo.receipt_text(),
                    hi.receipt_text(),
                    parts.join(" and ")
                ))
            }
        }
    }
}

fn num(v: &ParamValue) -> f64 {
    v.as_f64().unwrap_or(f64::NAN)
}

/// The material dimensions of `record`, each with whether it was examined.
pub fn dimensions(record: &RunRecord, tested: &Tested) -> Vec<DimensionCoverage> {
    let mut because: Vec<(Dimension, String)> = Vec::new();
    let mut add = |d: Dimension, why: String| {
        if !because.iter().any(|(seen, _)| *seen == d) {
            because.push((d, why));
        }
    };
    for d in &record.material {
        add(*d, "declared material by the spec".to_string());
    }
    for axis in &record.axes {
        if let Some(d) = axis.kind.dimension() {
            add(d, format!("the spec declares axis `{}`", axis.name));
        }
    }
    let target = &record.target;
    if let Some(c) = target.effective_concurrency().filter(|c| *c > 1) {
        let what = if target.concurrency.is_some() {
            "concurrency"
        } else {
            "cores"
        };
        add(Dimension::Concurrency, format!("the target has {c} {what}"));
    }
    if let Some(n) = target.nodes.filter(|n| *n > 1) {
        add(Dimension::Topology, format!("the target has {n} nodes"));
    }
    if let Some(m) = target.memory_bytes {
        add(
            Dimension::Memory,
            format!("the target has {} of memory", format_bytes(m)),
        );
    }
    if let Some(axis) = target.workload.keys().next() {
        add(
            Dimension::Workload,
            format!("the target states a workload for `{axis}`"),
        );
    }
    if !record.dependencies.is_empty() {
        add(
            Dimension::Dependencies,
            format!(
                "the spec declares dependency {}",
                record.dependencies.join(", ")
            ),
        );
    }
    if !target.dependencies.is_empty() {
        add(
            Dimension::Dependencies,
            format!(
                "the target has dependency {}",
                target.dependencies.join(", ")
            ),
        );
    }
    let mut out: Vec<DimensionCoverage> = because
        .into_iter()
        .map(|(dimension, material_because)| {
            let (examined, detail) = match examined(dimension, record, tested) {
                Some(range) => (true, range),
                None => (false, untested_detail(dimension)),
            };
            DimensionCoverage {
                dimension,
                material_because,
                examined,
                detail,
            }
        })
        .collect();
    out.sort_by_key(|d| d.dimension);
    out
}

fn untested_detail(d: Dimension) -> String {
    match d {
        Dimension::Concurrency => "no concurrency axis was examined".to_string(),
        Dimension::Workload => "no workload axis was examined".to_string(),
        Dimension::Topology => "no topology axis was examined; every cell ran on one node".to_string(),
        Dimension::Memory => {
            "no memory axis and no enforced memory ceiling: behaviour at the memory limit was not examined".to_string()
        }
        Dimension::Time => "no cell completed under a timeout".to_string(),
        Dimension::Dependencies => {
            "no dependency faults (latency, outages, resets, restarts) were injected".to_string()
        }
    }
}

/// The examined range of `d`, or `None` when no completed cell examined it.
fn examined(d: Dimension, record: &RunRecord, tested: &Tested) -> Option<String> {
    // Every axis whose kind examines `dimension` (a load axis examines concurrency too).
    let by_dimension = |dimension: Dimension| -> Option<String> {
        let parts: Vec<String> = tested
            .axes
            .iter()
            .filter(|a| a.kind.dimension() == Some(dimension) && !a.values.is_empty())
            .map(ExaminedAxis::describe)
            .collect();
        (!parts.is_empty()).then(|| parts.join("; "))
    };
    match d {
        Dimension::Concurrency => {
            // Perturbed runs examine the schedules the cells' own thread counts allow.
            let schedules = crate::perturb::schedules(record);
            match (by_dimension(d), schedules) {
                (Some(axes), Some(s)) => Some(format!("{axes}; {s}")),
                (Some(axes), None) => Some(axes),
                (None, Some(s)) => Some(format!(
                    "{s}, at the cells' own thread counts (no concurrency axis)"
                )),
                (None, None) => None,
            }
        }
        Dimension::Workload | Dimension::Topology => by_dimension(d),
        Dimension::Memory => {
            if let Some(axes) = by_dimension(Dimension::Memory) {
                return Some(axes);
            }
            let enforced: BTreeSet<u64> = record
                .cells
                .iter()
                .filter(|c| c.completed() && c.result.enforcement.memory != Strength::None)
                .filter_map(|c| c.result.limits.memory_bytes)
                .collect();
            if enforced.is_empty() {
                return None;
            }
            let list: Vec<String> = enforced.iter().map(|b| format_bytes(*b)).collect();
            Some(format!("memory ceiling {}", list.join(", ")))
        }
        Dimension::Time => {
            if tested.timeouts_seconds.is_empty() {
                return None;
            }
            let list: Vec<String> = tested
                .timeouts_seconds
                .iter()
                .map(|s| format!("{s} s"))
                .collect();
            Some(format!("timeout {}", list.join(", ")))
        }
        Dimension::Dependencies => {
            let mut parts: Vec<String> = tested
                .dependencies
                .iter()
                .filter(|d| !d.faults.is_empty())
                .map(|d| {
                    format!(
                        "faults on {}: {} ({} cell(s))",
                        d.name,
                        d.faults.join(", "),
                        d.cells
                    )
                })
                .collect();
            parts.extend(
                crate::faults::restarts(record)
                    .iter()
                    .map(|(signal, n)| format!("{signal} and restart under load ({n} cell(s))")),
            );
            (!parts.is_empty()).then(|| parts.join("; "))
        }
    }
}
