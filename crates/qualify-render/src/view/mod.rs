//! The row model of a receipt: everything a renderer reads, built once from the JSON, with
//! missing or mistyped optional parts turned into `None`, empty text or empty lists instead of
//! errors. Accepts the whole in-toto Statement or a bare predicate. The renderers only format
//! these rows; none of them reads the JSON.
//!
//! `json` holds the tolerant readers, `rows` the receipt-level rows (layers, cells, failures,
//! boundaries, gap, checklist, machine), `performance` the rows of `predicate.performance`,
//! `faults` the rows of service cells' `result.faults`, `service` the rows of service cells'
//! `result.load`, `perturb` the rows of cells' `[perturb]` campaigns (`result.perturb`),
//! `results` the cells' results as the model's own types (for the terminal summary).

pub mod development;
mod faults;
mod json;
mod performance;
mod perturb;
mod results;
mod rows;
mod service;

use serde_json::{Map, Value};

pub use faults::FaultRow;
pub use performance::{
    CheckRow, Metric, MetricNoise, Model, Performance, Prediction, RoundNoise, Rounds, ScalePoint,
    Scaling, Stat,
};
pub use perturb::PerturbRow;
pub use results::{ResultCell, param_text};
pub use rows::{
    BoundaryRow, CellRow, Checklist, ClaimedRow, ExactBoundary, FailureRow, FrontierRowView,
    FrontierView, GapBar, GapRow, LayerRow, Machine, TraceRow, WaiverRow, failures,
};
pub use service::{
    Growth, Percentiles, PhaseRow, Second, ServiceRow, SloRow, duration, metric_value,
};

use json::{arr, f, obj, s};

/// The five layers, in the order people read them.
pub const LAYERS: [&str; 5] = [
    "functional",
    "process",
    "envelope",
    "performance",
    "reproducibility",
];

/// What the caller established about a receipt's signature before rendering it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Signature {
    /// The receipt is a bare Statement.
    Unsigned,
    /// A DSSE envelope whose signature nobody checked (no key was given).
    NotChecked { keyids: Vec<String> },
    /// Verified with the given key.
    Verified { keyid: String },
}

impl Signature {
    /// `signature: verified by key …` / `signature: NOT CHECKED …` / `signature: none …`.
    pub fn line(&self) -> String {
        match self {
            Signature::Unsigned => "signature: none (an unsigned receipt)".to_string(),
            Signature::NotChecked { keyids } => format!(
                "signature: NOT CHECKED (signed by key id {}; pass --key PUB to verify it)",
                keyids.join(", ")
            ),
            Signature::Verified { keyid } => format!("signature: verified by key {keyid}"),
        }
    }
}

/// A receipt being rendered: the predicate, read only through the row accessors below.
pub struct View<'a> {
    pred: &'a Value,
    /// `None`: the caller says nothing about the signature (no line is drawn).
    signature: Option<Signature>,
}

impl<'a> View<'a> {
    pub fn new(receipt: &'a Value) -> View<'a> {
        let pred = match receipt.get("predicate") {
            Some(p) if p.is_object() => p,
            _ => receipt,
        };
        View {
            pred,
            signature: None,
        }
    }

    /// The same view, with the signature line the caller established.
    pub fn with_signature(mut self, signature: Signature) -> View<'a> {
        self.signature = Some(signature);
        self
    }

    pub fn signature(&self) -> Option<&Signature> {
        self.signature.as_ref()
    }

    fn get(&self, path: &[&str]) -> Option<&'a Value> {
        let mut v = self.pred;
        for k in path {
            v = v.get(*k)?;
        }
        Some(v)
    }

    /// The artifact's name (`run.artifact.name`), or `artifact`.
    pub fn artifact(&self) -> String {
        let n = s(self.get(&["run", "artifact", "name"]));
        if n.is_empty() { "artifact".into() } else { n }
    }

    pub fn claim_level(&self) -> String {
        let l = s(self.get(&["claim", "level"]));
        if l.is_empty() { "unknown".into() } else { l }
    }

    pub fn supported(&self) -> Option<bool> {
        self.get(&["claim", "supported"]).and_then(Value::as_bool)
    }

    pub fn reasons(&self) -> Vec<String> {
        arr(self.get(&["claim", "reasons"]))
            .iter()
            .map(|r| s(Some(r)))
            .collect()
    }

    /// The gaps the verdict accepted because a waiver names them (`claim.waivers`).
    pub fn claim_waivers(&self) -> Vec<String> {
        arr(self.get(&["claim", "waivers"]))
            .iter()
            .map(|w| s(Some(w)))
            .collect()
    }

    /// The spec's waivers and whether each was applied (`predicate.waivers`).
    pub fn waivers(&self) -> Vec<WaiverRow> {
        arr(self.get(&["waivers"]))
            .iter()
            .map(WaiverRow::from_value)
            .collect()
    }

    pub fn incomplete(&self) -> bool {
        self.get(&["incomplete"])
            .and_then(Value::as_bool)
            .unwrap_or(false)
    }

    /// `run.started` … `run.finished`, qualify version, spec path.
    pub fn run_field(&self, key: &str) -> String {
        s(self.get(&["run", key]))
    }

    pub fn spec_path(&self) -> String {
        s(self.get(&["run", "spec", "path"]))
    }

    /// Development coverage from the process layer's evidence (`None` without a trace).
    pub fn development(&self) -> Option<development::Development> {
        development::read(self.get(&["layers", "process", "evidence"]))
    }

    /// The five layers in canonical order (missing ones as `not_run`), then any others.
    pub fn layers(&self) -> Vec<LayerRow> {
        let map = self
            .get(&["layers"])
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let mut names: Vec<String> = LAYERS.iter().map(|s| s.to_string()).collect();
        names.extend(
            map.keys()
                .filter(|k| !LAYERS.contains(&k.as_str()))
                .cloned(),
        );
        names
            .into_iter()
            .map(|name| {
                let l = map.get(&name);
                rows::layer(name, l)
            })
            .collect()
    }

    /// Axis names in the receipt's order (`tested.axes`), then any other parameter seen in cells.
    pub fn axis_order(&self) -> Vec<String> {
        let mut names: Vec<String> = arr(self.get(&["tested", "axes"]))
            .iter()
            .map(|a| s(a.get("name")))
            .filter(|n| !n.is_empty())
            .collect();
        for c in arr(self.get(&["cells"])) {
            if let Some(p) = c.get("params").and_then(Value::as_object) {
                for k in p.keys() {
                    if !names.contains(k) {
                        names.push(k.clone());
                    }
                }
            }
        }
        names
    }

    /// [`View::axis_order`] for the envelope's map: a topology axis named `nodes` and the next
    /// topology axis (the ranks) first, so a multi-node sweep is drawn nodes × ranks whatever
    /// other axes precede them in the spec.
    pub fn map_axis_order(&self) -> Vec<String> {
        let order = self.axis_order();
        let topo = |n: &String| self.axis_kind(n).as_deref() == Some("topology");
        let nodes = order.iter().find(|n| *n == "nodes" && topo(n)).cloned();
        let ranks = order.iter().find(|n| *n != "nodes" && topo(n)).cloned();
        match (nodes, ranks) {
            (Some(nodes), Some(ranks)) => {
                let mut out = vec![nodes.clone(), ranks.clone()];
                out.extend(order.into_iter().filter(|n| *n != nodes && *n != ranks));
                out
            }
            _ => order,
        }
    }

    /// The spec's axes (`tested.axes`) as (name, kind), in its order.
    pub fn axes(&self) -> Vec<(String, String)> {
        arr(self.get(&["tested", "axes"]))
            .iter()
            .map(|a| (s(a.get("name")), s(a.get("kind"))))
            .filter(|(n, _)| !n.is_empty())
            .collect()
    }

    /// The kind (`workload`, `concurrency`, …) of an axis, if recorded.
    pub fn axis_kind(&self, axis: &str) -> Option<String> {
        arr(self.get(&["tested", "axes"]))
            .iter()
            .find(|a| a.get("name").and_then(Value::as_str) == Some(axis))
            .map(|a| s(a.get("kind")))
            .filter(|k| !k.is_empty())
    }

    pub fn cells(&self) -> Vec<CellRow> {
        arr(self.get(&["cells"]))
            .iter()
            .map(|c| {
                let r = c.get("result");
                let g = |k: &str| f(r.and_then(|r| r.get(k)));
                let cpu = match (g("user_seconds"), g("system_seconds")) {
                    (Some(u), Some(s)) => Some(u + s),
                    (Some(u), None) => Some(u),
                    _ => None,
                };
                let outcome = s(r.and_then(|r| r.get("outcome")));
                CellRow {
                    params: obj(c.get("params")),
                    outcome: if outcome.is_empty() {
                        "unknown".into()
                    } else {
                        outcome
                    },
                    detail: s(r.and_then(|r| r.get("detail"))),
                    wall: g("wall_seconds"),
                    cpu,
                    peak_memory: g("peak_memory_bytes"),
                    boundary: c.get("boundary").and_then(Value::as_bool).unwrap_or(false),
                }
            })
            .collect()
    }

    /// The cells whose results read as `qualify-model`'s `ProbeResult`, in cell order.
    pub fn results(&self) -> Vec<ResultCell> {
        results::cells(arr(self.get(&["cells"])), &self.axis_order())
    }

    /// One row per way each cell's `[perturb]` campaign failed (or one saying none did).
    pub fn perturbation(&self) -> Vec<PerturbRow> {
        perturb::rows(arr(self.get(&["cells"])), &self.axis_order())
    }

    /// One row per fault record of every cell (`result.faults`), in cell order.
    pub fn faults(&self) -> Vec<FaultRow> {
        faults::rows(arr(self.get(&["cells"])), &self.axis_order())
    }

    /// One row per service cell (a cell whose result carries `load`), in cell order.
    pub fn services(&self) -> Vec<ServiceRow> {
        service::rows(arr(self.get(&["cells"])), &self.axis_order())
    }

    /// The axes of kind `load` (a service's offered rate or users), in the receipt's order.
    pub fn load_axes(&self) -> Vec<String> {
        arr(self.get(&["tested", "axes"]))
            .iter()
            .filter(|a| a.get("kind").and_then(Value::as_str) == Some("load"))
            .map(|a| s(a.get("name")))
            .filter(|n| !n.is_empty())
            .collect()
    }

    /// The capacity frontier (`predicate.frontier`): the capacity of each combination of the
    /// other axes along a searched load axis; `None` without one (or unreadable: older
    /// receipts never had it).
    pub fn frontier(&self) -> Option<FrontierView> {
        self.get(&["frontier"]).and_then(FrontierView::from_value)
    }

    pub fn boundaries(&self) -> Vec<BoundaryRow> {
        arr(self.get(&["boundaries"]))
            .iter()
            .map(BoundaryRow::from_value)
            .collect()
    }

    /// The claimed region, per axis (receipts before it existed: empty).
    pub fn claimed(&self) -> Vec<ClaimedRow> {
        arr(self.get(&["claimed_region"]))
            .iter()
            .map(ClaimedRow::from_value)
            .collect()
    }

    pub fn gaps(&self) -> Vec<GapRow> {
        arr(self.get(&["gap"]))
            .iter()
            .map(GapRow::from_value)
            .collect()
    }

    /// Does the receipt declare a target?
    pub fn has_target(&self) -> bool {
        self.target().is_some()
    }

    fn target(&self) -> Option<&'a Map<String, Value>> {
        self.get(&["target"])
            .and_then(Value::as_object)
            .filter(|m| !m.is_empty())
    }

    /// The target's value of workload axis `axis` (`target.workload.<axis>`).
    pub fn target_workload(&self, axis: &str) -> Option<f64> {
        self.target()?.get("workload")?.get(axis)?.as_f64()
    }

    /// The target's concurrency (`target.concurrency`, else `target.cores`).
    pub fn target_concurrency(&self) -> Option<f64> {
        let t = self.target()?;
        t.get("concurrency")
            .or_else(|| t.get("cores"))
            .and_then(Value::as_f64)
    }

    pub fn checklist(&self) -> Option<Checklist> {
        self.get(&["checklist"])
            .and_then(Value::as_object)
            .map(Checklist::from_map)
    }

    /// The machine of `tested`, when the receipt records `tested`.
    pub fn machine(&self) -> Option<Machine> {
        self.get(&["tested"])
            .and_then(Value::as_object)
            .map(Machine::from_map)
    }

    /// `predicate.performance`, when present and an object.
    pub fn performance(&self) -> Option<Performance<'a>> {
        self.get(&["performance"])
            .filter(|p| p.is_object())
            .map(performance::parse)
    }
}

/// Does `params` agree with every entry of `fixed`?
pub fn matches(params: &Map<String, Value>, fixed: &Map<String, Value>) -> bool {
    fixed.iter().all(|(k, v)| match (params.get(k), v) {
        (Some(a), b) if a == b => true,
        (Some(a), b) => matches!((a.as_f64(), b.as_f64()), (Some(x), Some(y)) if x == y),
        (None, _) => false,
    })
}

/// The numeric value of `params[axis]`.
pub fn coord(params: &Map<String, Value>, axis: &str) -> Option<f64> {
    params.get(axis).and_then(Value::as_f64)
}
