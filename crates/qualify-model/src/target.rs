//! The environment a claim is about (`[target]`): cores, nodes, memory, concurrency and the
//! workload per workload axis — and which target value bounds each axis's claimed region
//! ([`Target::bound_for`]): the claim covers an axis up to its target value (from it, for
//! memory ceilings, where smaller is harder); beyond it lies the explored region a boundary
//! search maps for headroom.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::AxisKind;

/// The target environment. Every field is optional.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Target {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cores: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nodes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_bytes: Option<u64>,
    /// Threads/workers/clients the target runs with; defaults to `cores` when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrency: Option<u64>,
    /// Target workload per workload-axis name, e.g. `n → 1e6`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub workload: BTreeMap<String, f64>,
    /// The offered load a service must sustain in the target (requests per second, or users
    /// for a closed model): bounds `load` axes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<f64>,
    /// The dependencies (databases, caches, queues: `[[dependency]]` names) the service talks
    /// to in the target. Each is a fact a production claim must have examined with a fault.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dependencies: Vec<String>,
}

/// Which side of its target value an axis gets harder on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Harder {
    /// More work, more concurrency, more ranks or nodes: the claim covers values ≤ target.
    Larger,
    /// A memory ceiling: the claim covers ceilings ≥ target.
    Smaller,
}

/// The target value that bounds one axis's claimed region.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Bound {
    pub value: f64,
    /// Where it comes from, e.g. `target.workload.n`, `target.concurrency`.
    pub source: String,
    pub harder: Harder,
}

impl Bound {
    /// `value` lies inside the claimed region.
    pub fn claims(&self, value: f64) -> bool {
        match self.harder {
            Harder::Larger => value <= self.value,
            Harder::Smaller => value >= self.value,
        }
    }

    /// How far beyond the target a failure at `value` lies, as a factor (> 1 beyond, ≤ 1 inside).
    pub fn headroom(&self, value: f64) -> f64 {
        match self.harder {
            Harder::Larger => value / self.value,
            Harder::Smaller => self.value / value,
        }
    }
}

impl Target {
    /// The concurrency the target runs with: `concurrency`, else `cores`.
    pub fn effective_concurrency(&self) -> Option<u64> {
        self.concurrency.or(self.cores)
    }

    pub fn is_empty(&self) -> bool {
        self == &Target::default()
    }

    /// The target value bounding axis `name` of `kind`, if the target names one: a workload
    /// axis's `workload` entry; a concurrency axis's `concurrency` (else `cores`); a memory
    /// axis's `memory`; a topology axis `nodes`'s `nodes`, any other topology axis's `cores`;
    /// a load axis's `rate`.
    /// Custom and fault axes have none: their whole declared domain is claimed.
    pub fn bound_for(&self, name: &str, kind: AxisKind) -> Option<Bound> {
        let (value, source, harder) = match kind {
            AxisKind::Workload => (
                *self.workload.get(name)?,
                format!("target.workload.{name}"),
                Harder::Larger,
            ),
            AxisKind::Concurrency => match (self.concurrency, self.cores) {
                (Some(c), _) => (c as f64, "target.concurrency".to_string(), Harder::Larger),
                (None, Some(c)) => (c as f64, "target.cores".to_string(), Harder::Larger),
                (None, None) => return None,
            },
            AxisKind::Memory => (
                self.memory_bytes? as f64,
                "target.memory".to_string(),
                Harder::Smaller,
            ),
            AxisKind::Topology if name == "nodes" => (
                self.nodes? as f64,
                "target.nodes".to_string(),
                Harder::Larger,
            ),
            AxisKind::Topology => (
                self.cores? as f64,
                "target.cores".to_string(),
                Harder::Larger,
            ),
            AxisKind::Load => (self.rate?, "target.rate".to_string(), Harder::Larger),
            AxisKind::Fault | AxisKind::Custom => return None,
        };
        Some(Bound {
            value,
            source,
            harder,
        })
    }

    /// The gap names this target's own facts can produce (what a waiver may name): `cores`,
    /// `nodes`, `memory`, `concurrency`, `workload` and `workload.<axis>`, for the facts it
    /// sets. A spec's `[[dependency]]` adds `faults` and `faults.<name>` (the spec's check
    /// adds those: they come from the declared dependencies, not from the target).
    pub fn possible_gaps(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.cores.is_some() {
            out.push("cores".to_string());
        }
        if self.nodes.is_some() {
            out.push("nodes".to_string());
        }
        if self.memory_bytes.is_some() {
            out.push("memory".to_string());
        }
        if self.effective_concurrency().is_some_and(|c| c > 1) {
            out.push("concurrency".to_string());
        }
        if !self.workload.is_empty() {
            out.push("workload".to_string());
            out.extend(self.workload.keys().map(|k| format!("workload.{k}")));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_axis_kind_is_bounded_by_its_target_fact() {
        let t = Target {
            cores: Some(64),
            nodes: Some(2),
            memory_bytes: Some(1 << 30),
            concurrency: None,
            workload: [("n".to_string(), 1e4)].into_iter().collect(),
            rate: Some(500.0),
            dependencies: vec!["db".to_string()],
        };
        let b = t.bound_for("n", AxisKind::Workload).unwrap();
        assert_eq!((b.value, b.source.as_str()), (1e4, "target.workload.n"));
        assert!(b.claims(1e4) && !b.claims(1.6e4));
        assert_eq!(b.headroom(16000.0), 1.6);
        assert!(t.bound_for("m", AxisKind::Workload).is_none());
        assert_eq!(
            t.bound_for("threads", AxisKind::Concurrency)
                .unwrap()
                .source,
            "target.cores"
        );
        assert_eq!(t.bound_for("nodes", AxisKind::Topology).unwrap().value, 2.0);
        assert_eq!(
            t.bound_for("ranks", AxisKind::Topology).unwrap().value,
            64.0
        );
        let m = t.bound_for("mem", AxisKind::Memory).unwrap();
        assert!(m.claims(2.0 * (1u64 << 30) as f64) && !m.claims((1u64 << 20) as f64));
        assert_eq!(m.headroom((1u64 << 20) as f64), 1024.0);
        assert!(t.bound_for("mode", AxisKind::Custom).is_none());
        assert!(t.bound_for("db_fault", AxisKind::Fault).is_none());
        assert_eq!(
            t.bound_for("rps", AxisKind::Load).unwrap().source,
            "target.rate"
        );
        assert_eq!(
            t.possible_gaps(),
            [
                "cores",
                "nodes",
                "memory",
                "concurrency",
                "workload",
                "workload.n"
            ]
        );
    }
}
