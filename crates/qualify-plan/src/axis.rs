//! The input side of a plan: an [`Axis`] names one operational dimension, its [`Domain`] (listed
//! values or an integer range) and whether it is swept or searched for a failure boundary
//! (the spec's [`Search`]). This module also owns how a domain turns into points: the sweep points of a
//! range, and the ordered ladder a boundary search walks.

use serde::{Deserialize, Serialize};

use qualify_model::Value;
use qualify_model::axis::{Domain as Declared, Search};
use qualify_model::range::{Number, Scale};

pub use qualify_model::AxisKind;

/// The points an axis may take.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Domain {
    /// Exactly these values. A boundary axis needs them numeric and strictly increasing.
    Values(Vec<Value>),
    /// Every integer in `lo..=hi`. Swept over [`range_sweep_points`]; a boundary search may probe
    /// any integer in it.
    Range { lo: i64, hi: i64 },
}

impl Domain {
    /// The points a sweep over this domain visits, in increasing order for ranges and in the
    /// given order for lists.
    pub fn sweep_points(&self) -> Vec<Value> {
        match self {
            Domain::Values(values) => values.clone(),
            Domain::Range { lo, hi } => range_sweep_points(*lo, *hi)
                .into_iter()
                .map(Value::Int)
                .collect(),
        }
    }
}

/// One operational dimension of the plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Axis {
    /// The placeholder name, e.g. `threads`; unique within a plan.
    pub name: String,
    pub kind: AxisKind,
    pub domain: Domain,
    /// `None`: every sweep point of the axis is part of the cartesian product; `Boundary`: for
    /// each combination of the other axes, the largest passing and smallest failing point are
    /// searched for (see the `search` module). The spec's word, unconverted.
    #[serde(default)]
    pub search: Option<Search>,
    /// A boundary search's runs of each of the two points at its edge, all agreeing, before it
    /// reports them (see the `search` module): [`DEFAULT_LOAD_EDGE_RUNS`] on a `load` axis
    /// (a service's verdict moves with run-to-run noise), 1 (no repeats) otherwise.
    #[serde(default = "one")]
    pub edge_runs: u32,
}

/// Runs of each edge point a boundary search over a `load` axis asks for by default.
pub const DEFAULT_LOAD_EDGE_RUNS: u32 = 2;

fn one() -> u32 {
    1
}

impl Axis {
    /// The planner's form of a declared axis (the spec's `[[axis]]`). A unit-step integer range searched for a boundary is
    /// bisected over integers; every other range is the spec's lattice of points. A fault axis
    /// lists `none` first, so receipts and maps show each combination's control before its
    /// faulted cells; that it is also measured first is `qualify_service::Controls`' doing,
    /// whatever the order.
    pub fn declared(declared: &qualify_model::axis::Axis) -> Axis {
        let d = declared;
        let domain = match &d.domain {
            Declared::Values(vals) if d.kind == AxisKind::Fault => {
                let (none, faults): (Vec<_>, Vec<_>) = vals
                    .iter()
                    .cloned()
                    .partition(|v| v.as_text() == Some("none"));
                Domain::Values(none.into_iter().chain(faults).collect())
            }
            Declared::Values(vals) => Domain::Values(vals.clone()),
            Declared::Range(r) => match (r.lo, r.hi, r.step, r.scale, d.search) {
                (
                    Number::Int(lo),
                    Number::Int(hi),
                    Number::Int(1),
                    Scale::Linear,
                    Some(Search::Boundary),
                ) => Domain::Range { lo, hi },
                _ => Domain::Values(d.points()),
            },
        };
        let axis = Axis::new(d.name.clone(), d.kind, domain);
        if d.search == Some(Search::Boundary) {
            axis.boundary()
        } else {
            axis
        }
    }

    /// A swept axis.
    pub fn new(name: impl Into<String>, kind: AxisKind, domain: Domain) -> Axis {
        Axis {
            name: name.into(),
            kind,
            domain,
            search: None,
            edge_runs: if kind == AxisKind::Load {
                DEFAULT_LOAD_EDGE_RUNS
            } else {
                1
            },
        }
    }

    /// The same axis, searched for a failure boundary.
    pub fn boundary(mut self) -> Axis {
        self.search = Some(Search::Boundary);
        self
    }

    /// The same axis, its boundary search repeating each edge point until it has `runs`
    /// agreeing runs (1: no repeats).
    pub fn edge_runs(mut self, runs: u32) -> Axis {
        self.edge_runs = runs.max(1);
        self
    }
}

/// The points a sweep over the integer range `lo..=hi` visits.
///
/// A range of at most 8 integers is swept completely. A wider range is swept geometrically, the
/// way operational limits usually scale: both ends, every power of two strictly inside, their
/// negatives when the range reaches below zero, and 0 when the range spans it. `[256, 65536]`
/// gives 256, 512, …, 65536 (9 points); `[1, 1000]` gives 1, 2, 4, …, 512, 1000 (11 points). The
/// count never exceeds 2·63 + 3.
pub fn range_sweep_points(lo: i64, hi: i64) -> Vec<i64> {
    if hi < lo {
        return Vec::new();
    }
    if i128::from(hi) - i128::from(lo) < 8 {
        return (lo..=hi).collect();
    }
    let inside = |v: i64| v > lo && v < hi;
    let mut points = vec![lo];
    points.extend((0..63).rev().map(|k| -(1i64 << k)).filter(|v| inside(*v)));
    if inside(0) {
        points.push(0);
    }
    points.extend((0..63).map(|k| 1i64 << k).filter(|v| inside(*v)));
    points.push(hi);
    points
}

/// The ordered points a boundary search walks, addressed by index `0..len`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Ladder {
    /// Numeric values in strictly increasing order.
    Values(Vec<Value>),
    /// Every integer from `lo`, `len` of them.
    Range { lo: i64, len: i128 },
}

impl Ladder {
    pub(crate) fn len(&self) -> i128 {
        match self {
            Ladder::Values(values) => values.len() as i128,
            Ladder::Range { len, .. } => *len,
        }
    }

    /// The point at `index`; `index` must be in `0..len()`. Out-of-range indices clamp to the
    /// nearest end rather than panic.
    pub(crate) fn point(&self, index: i128) -> Value {
        match self {
            Ladder::Values(values) => {
                let last = values.len().saturating_sub(1);
                let i = usize::try_from(index.max(0)).unwrap_or(last).min(last);
                values.get(i).cloned().unwrap_or(Value::Int(0))
            }
            Ladder::Range { lo, len } => {
                let i = index.clamp(0, (*len - 1).max(0));
                let v = i128::from(*lo) + i;
                Value::Int(i64::try_from(v).unwrap_or(i64::MAX))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_ranges_are_swept_completely() {
        assert_eq!(range_sweep_points(1, 4), vec![1, 2, 3, 4]);
        assert_eq!(range_sweep_points(3, 3), vec![3]);
        assert_eq!(range_sweep_points(0, 7), (0..=7).collect::<Vec<_>>());
    }

    #[test]
    fn wide_ranges_are_swept_over_powers_of_two() {
        assert_eq!(
            range_sweep_points(256, 65536),
            vec![256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536]
        );
        assert_eq!(
            range_sweep_points(1, 1000),
            vec![1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1000]
        );
        assert_eq!(
            range_sweep_points(-10, 10),
            vec![-10, -8, -4, -2, -1, 0, 1, 2, 4, 8, 10]
        );
        let extreme = range_sweep_points(i64::MIN, i64::MAX);
        assert!(extreme.len() <= 2 * 63 + 3);
        assert!(extreme.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn range_ladder_addresses_every_integer() {
        let ladder = Ladder::Range { lo: 10, len: 5 };
        assert_eq!(ladder.point(0), Value::Int(10));
        assert_eq!(ladder.point(4), Value::Int(14));
        let full = Ladder::Range {
            lo: i64::MIN,
            len: 1i128 << 64,
        };
        assert_eq!(full.point((1i128 << 64) - 1), Value::Int(i64::MAX));
    }
}
