//! The target gap: every fact of the declared target that the tested region did not reach
//! (cores, nodes, memory, concurrency, workload), every declared dependency no completed cell
//! put a fault on (`faults.<name>`), and the waivers that accept a gap by name.

use qualify_model::format_bytes;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::record::{AxisKind, Target, Waiver};
use crate::region::Tested;

/// One target fact the tested region did not reach.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Gap {
    /// `cores`, `nodes`, `memory`, `concurrency`, `workload` or `faults`: the name a waiver
    /// uses.
    pub name: String,
    /// For `workload`: the axis it is about; for `faults`: the dependency.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub axis: Option<String>,
    pub target: Value,
    /// What the tested region reached; `null` when it did not examine the fact at all.
    pub tested: Value,
    /// One line for people.
    #[serde(default)]
    pub detail: String,
    /// The waiver's reason, when a waiver accepts this gap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiver: Option<String>,
}

impl Gap {
    pub fn is_waived(&self) -> bool {
        self.waiver.as_deref().is_some_and(|r| !r.trim().is_empty())
    }

    /// The name with its axis, e.g. `workload.n`.
    pub fn qualified_name(&self) -> String {
        match &self.axis {
            Some(axis) => format!("{}.{axis}", self.name),
            None => self.name.clone(),
        }
    }

    fn matches(&self, waiver_name: &str) -> bool {
        waiver_name == self.name || waiver_name == self.qualified_name()
    }
}

/// A spec waiver and what it did in this run (the receipt's `waivers`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WaiverUse {
    pub gap: String,
    pub reason: String,
    /// It accepted at least one gap of this run.
    pub applied: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Compare `target` with `tested`, then apply `waivers`.
pub fn compute(target: &Target, tested: &Tested, waivers: &[Waiver]) -> (Vec<Gap>, Vec<WaiverUse>) {
    let mut gaps = Vec::new();
    let usable = tested.cores_allowed.unwrap_or(tested.cores_online);
    if let Some(t) = target.cores
        && usable < t
    {
        gaps.push(gap(
            "cores",
            json!(t),
            json!(usable),
            format!("target has {t} cores, the tested machine allowed {usable}"),
        ));
    }
    if let Some(t) = target.nodes
        && tested.nodes < t
    {
        gaps.push(gap(
            "nodes",
            json!(t),
            json!(tested.nodes),
            format!("target has {t} nodes, the run used {}", tested.nodes),
        ));
    }
    if let Some(t) = target.memory_bytes {
        match tested.memory_bytes {
            Some(m) if m >= t => {}
            Some(m) => gaps.push(gap(
                "memory",
                json!(t),
                json!(m),
                format!(
                    "target has {}, the tested machine {}",
                    format_bytes(t),
                    format_bytes(m)
                ),
            )),
            None => gaps.push(gap(
                "memory",
                json!(t),
                Value::Null,
                format!(
                    "target has {}, the tested machine's memory is unknown",
                    format_bytes(t)
                ),
            )),
        }
    }
    if let Some(t) = target.effective_concurrency().filter(|t| *t > 1) {
        let reached = tested
            .axes
            .iter()
            .filter(|a| a.kind == AxisKind::Concurrency)
            .filter_map(|a| a.max_f64())
            .reduce(f64::max);
        match reached {
            Some(r) if r >= t as f64 => {}
            Some(r) => gaps.push(gap(
                "concurrency",
                json!(t),
                number(r),
                format!("target runs at concurrency {t}, the examined concurrency reached {r}"),
            )),
            None => gaps.push(gap(
                "concurrency",
                json!(t),
                Value::Null,
                format!("target runs at concurrency {t}, no concurrency axis was examined"),
            )),
        }
    }
    for (axis, &t) in &target.workload {
        let reached = tested
            .axes
            .iter()
            .find(|a| &a.name == axis)
            .and_then(|a| a.max_f64());
        let entry = match reached {
            Some(r) if r >= t => None,
            Some(r) => Some((
                number(r),
                format!("target workload {axis} = {t}, examined up to {r}"),
            )),
            None => Some((
                Value::Null,
                format!("target workload {axis} = {t}, never examined"),
            )),
        };
        if let Some((tested_value, detail)) = entry {
            let mut g = gap("workload", number(t), tested_value, detail);
            g.axis = Some(axis.clone());
            gaps.push(g);
        }
    }

    for d in tested.dependencies.iter().filter(|d| d.faults.is_empty()) {
        let mut g = gap(
            "faults",
            json!("at least one fault"),
            Value::Null,
            format!("no fault was injected into dependency {}", d.name),
        );
        g.axis = Some(d.name.clone());
        gaps.push(g);
    }

    let mut uses = Vec::with_capacity(waivers.len());
    for waiver in waivers {
        let matching: Vec<usize> = (0..gaps.len())
            .filter(|&i| gaps[i].matches(&waiver.gap))
            .collect();
        let (applied, note) = if waiver.reason.trim().is_empty() {
            (
                false,
                Some("a waiver needs a reason; this one has none and waives nothing".to_string()),
            )
        } else if matching.is_empty() {
            let names: Vec<String> = gaps.iter().map(Gap::qualified_name).collect();
            let known = if names.is_empty() {
                "this run has no gap".to_string()
            } else {
                format!("this run's gaps: {}", names.join(", "))
            };
            (
                false,
                Some(format!("no gap named `{}`; {known}", waiver.gap)),
            )
        } else {
            for &i in &matching {
                gaps[i].waiver = Some(waiver.reason.clone());
            }
            (true, None)
        };
        uses.push(WaiverUse {
            gap: waiver.gap.clone(),
            reason: waiver.reason.clone(),
            applied,
            note,
        });
    }
    (gaps, uses)
}

fn gap(name: &str, target: Value, tested: Value, detail: String) -> Gap {
    Gap {
        name: name.to_string(),
        axis: None,
        target,
        tested,
        detail,
        waiver: None,
    }
}

/// A JSON number, integral when the value is.
fn number(x: f64) -> Value {
    if x.fract() == 0.0 && x.abs() < 9.0e15 {
        json!(x as i64)
    } else {
        json!(x)
    }
}
