//! Axis kinds and the operational dimensions they examine (DESIGN: workload, concurrency,
//! resources, topology, dependencies, time).

use std::fmt;

use serde::{Deserialize, Serialize};

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
