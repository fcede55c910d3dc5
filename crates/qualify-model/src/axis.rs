//! An axis of the operating region, typed once: [`Axis`] (its name, [`AxisKind`], [`Domain`] —
//! listed values or a [`NumericRange`] — whether it is searched for a boundary, and for a fault
//! axis what it puts on which dependency and what the claim accepts), checked by the spec,
//! planned by the planner, read by the evidence and the analysis; and the operational
//! dimensions a kind examines (DESIGN: workload, concurrency, resources, topology,
//! dependencies, time).

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::Value;
use crate::fault::{Fault, Verdict};
use crate::range::{Number, NumericRange};

/// Which operational dimension an axis or a target fact belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Dimension {
    Workload,
    Concurrency,
    Memory,
    Time,
    Topology,
    Dependencies,
}

impl Dimension {
    pub fn as_str(self) -> &'static str {
        match self {
            Dimension::Workload => "workload",
            Dimension::Concurrency => "concurrency",
            Dimension::Memory => "memory",
            Dimension::Time => "time",
            Dimension::Topology => "topology",
            Dimension::Dependencies => "dependencies",
        }
    }
}

impl fmt::Display for Dimension {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which operational dimension an axis varies, as the spec declares it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AxisKind {
    Workload,
    Concurrency,
    Memory,
    Topology,
    Custom,
    /// Offered load on a service: the `[load]` rate (open model) or users (closed model).
    /// Its dimension is concurrency: clients of a service are its concurrency.
    Load,
    /// A fault put on one of a service's dependencies during a window of its load (values are
    /// fault texts such as `latency(200ms)` or `down`). Its dimension is dependencies; it has
    /// no target value (every declared fault is claimed).
    Fault,
}

impl AxisKind {
    /// The dimension an axis of this kind examines (`None` for custom axes).
    pub fn dimension(self) -> Option<Dimension> {
        match self {
            AxisKind::Workload => Some(Dimension::Workload),
            AxisKind::Concurrency => Some(Dimension::Concurrency),
            AxisKind::Memory => Some(Dimension::Memory),
            AxisKind::Topology => Some(Dimension::Topology),
            AxisKind::Load => Some(Dimension::Concurrency),
            AxisKind::Fault => Some(Dimension::Dependencies),
            AxisKind::Custom => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            AxisKind::Workload => "workload",
            AxisKind::Concurrency => "concurrency",
            AxisKind::Memory => "memory",
            AxisKind::Topology => "topology",
            AxisKind::Load => "load",
            AxisKind::Fault => "fault",
            AxisKind::Custom => "custom",
        }
    }
}

impl fmt::Display for AxisKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fault_axis_examines_dependencies_and_load_examines_concurrency() {
        assert_eq!(AxisKind::Fault.dimension(), Some(Dimension::Dependencies));
        assert_eq!(AxisKind::Load.dimension(), Some(Dimension::Concurrency));
        assert_eq!(AxisKind::Custom.dimension(), None);
        let kind: AxisKind = serde_json::from_str("\"fault\"").unwrap();
        assert_eq!(kind, AxisKind::Fault);
        assert_eq!(kind.to_string(), "fault");
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Axis {
    pub name: String,
    pub kind: AxisKind,
    pub domain: Domain,
    pub search: Option<Search>,
    /// For `kind = "fault"`: the dependency and the parsed faults.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fault: Option<FaultAxis>,
}

/// What a `kind = "fault"` axis puts on which dependency.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FaultAxis {
    /// The `[[dependency]]` the faults are put on.
    pub dependency: String,
    /// The faults, in the order of the axis's values (whose texts are their canonical forms).
    pub faults: Vec<Fault>,
    /// Per value (same order), the behaviours the claim accepts under it (`expect`); `None`:
    /// the claim states none (always for `none`, the control).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub expect: Vec<Option<Vec<Verdict>>>,
}

impl Axis {
    /// Whether every point is a number (ranges always are), so the axis is ordered.
    pub fn is_numeric(&self) -> bool {
        match &self.domain {
            Domain::Values(values) => values.iter().all(Value::is_numeric),
            Domain::Range(_) => true,
        }
    }

    /// Whether the axis sets each cell's memory ceiling (kind `memory`; values are bytes).
    pub fn sets_memory_ceiling(&self) -> bool {
        self.kind == AxisKind::Memory
    }

    /// The parsed faults of a `kind = "fault"` axis, in value order (empty for other kinds).
    pub fn faults(&self) -> &[Fault] {
        self.fault.as_ref().map_or(&[], |f| f.faults.as_slice())
    }

    /// The fault a cell's value of this axis stands for (`None`: not a fault axis, or not one
    /// of its values).
    pub fn fault_of(&self, value: &Value) -> Option<Fault> {
        let Domain::Values(values) = &self.domain else {
            return None;
        };
        let i = values.iter().position(|v| v == value)?;
        self.faults().get(i).copied()
    }

    /// The behaviours the claim accepts under a cell's value of this fault axis (`None`: not
    /// a fault axis, not one of its values, or no expectation stated).
    pub fn expected_of(&self, value: &Value) -> Option<&[Verdict]> {
        let Domain::Values(values) = &self.domain else {
            return None;
        };
        let i = values.iter().position(|v| v == value)?;
        self.fault.as_ref()?.expect.get(i)?.as_deref()
    }

    /// The points a sweep visits: the values as listed (sorted ascending on a search axis), or
    /// every lattice point of the range. A search range can be huge: use its bounds and
    /// [`NumericRange::between`] instead.
    pub fn points(&self) -> Vec<Value> {
        match &self.domain {
            Domain::Values(values) => values.clone(),
            Domain::Range(range) => range.points().map(Value::from).collect(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Search {
    /// Gallop and bisect for the largest passing and the smallest failing value.
    Boundary,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Domain {
    Values(Vec<Value>),
    Range(NumericRange),
}

impl From<Number> for Value {
    fn from(n: Number) -> Value {
        match n {
            Number::Int(n) => Value::Int(n),
            Number::Float(x) => Value::Float(x),
        }
    }
}
