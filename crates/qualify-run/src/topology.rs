//! Topology axes (kind `topology`) of a cell: an axis named `nodes` gives the node count, any
//! other topology axis (e.g. `ranks`, `tasks`) the task/rank count. They size the Slurm
//! allocation (`--nodes`, `--ntasks`), make a Slurm cell observed on every node of it
//! ([`observe_nodes`]) and, locally, decide oversubscription: more ranks than this process may
//! run on is flagged `oversubscribed` whatever the probe's own sampling saw.

use qualify_probe::{Flag, Outcome, ProbeResult};
use qualify_slurm::Topology;
use qualify_spec::{AxisKind, Spec};

use qualify_plan as plan;

fn count(v: &plan::Value) -> Option<u32> {
    match v {
        plan::Value::Int(n) => u32::try_from(*n).ok().filter(|n| *n >= 1),
        plan::Value::Float(x) if x.is_finite() && *x >= 1.0 => Some(x.ceil() as u32),
        plan::Value::Text(s) => s.trim().parse().ok().filter(|n| *n >= 1),
        _ => None,
    }
}

/// The cell's topology; cores per task come from the CPU ceiling (applied by the executor).
pub fn of(spec: &Spec, params: &plan::Params) -> Topology {
    let mut t = Topology::default();
    for axis in spec.axes.iter().filter(|a| a.kind == AxisKind::Topology) {
        let Some(n) = params.get(&axis.name).and_then(count) else {
            continue;
        };
        if axis.name == "nodes" {
            t.nodes = n;
        } else {
            t.ntasks = t.ntasks.max(n);
        }
    }
    t.ntasks = t.ntasks.max(t.nodes);
    t
}

/// Whether a Slurm cell of this spec is observed on every node of its allocation (per-node
/// agents, `qualify agent coordinate`): when the spec has a topology axis, whose ranks the
/// launcher starts as job steps outside the batch host's process tree.
pub fn observe_nodes(spec: &Spec) -> bool {
    spec.axes.iter().any(|a| a.kind == AxisKind::Topology)
}

/// Flag `oversubscribed` when a local cell ran more ranks than the CPUs it was allowed.
pub fn flag_local(result: &mut ProbeResult, topology: Topology, allowed_cores: usize) {
    if result.outcome == Outcome::Interrupted || (topology.ntasks as usize) <= allowed_cores {
        return;
    }
    if !result.has_flag(Flag::Oversubscribed) {
        result.flags.push(Flag::Oversubscribed);
        result.flags.sort_unstable();
    }
    if let Some(map) = result.evidence.as_object_mut() {
        map.insert(
            "topology".into(),
            serde_json::json!({
                "ranks": topology.ntasks,
                "nodes": topology.nodes,
                "cores_allowed": allowed_cores,
            }),
        );
    }
}
