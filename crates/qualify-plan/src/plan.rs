//! A validated [`Plan`]: the axes turned into the work an execution does. Swept axes expand to
//! the cartesian product of their points ([`Plan::sweep_cells`]); each boundary axis becomes one
//! [`SearchSpec`] per combination of the other axes ([`Plan::searches`]). Everything that makes
//! the axes contradictory is a [`PlanError`] here, before anything runs.

use std::collections::HashSet;

use crate::axis::{Axis, Domain, Ladder};
use crate::search::ceil_log2;
use qualify_model::axis::Search;
use qualify_model::{Params, Value};

/// Upper bound on sweep cells and on searches in one plan: beyond it the spec almost certainly
/// has a mistake, and running it would take longer than anyone waits.
pub const MAX_CELLS: usize = 100_000;

/// Why axes cannot form a plan. Each names the axis and what was expected.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PlanError {
    #[error("an axis has an empty name; expected a placeholder name such as `threads`")]
    EmptyName,
    #[error("axis `{0}` is declared twice; axis names must be unique")]
    DuplicateAxis(String),
    #[error("axis `{axis}` has no values; expected at least one")]
    EmptyAxis { axis: String },
    #[error("axis `{axis}` has range [{lo}, {hi}] with lo > hi; expected lo <= hi")]
    InvertedRange { axis: String, lo: i64, hi: i64 },
    #[error("axis `{axis}` lists `{value}` more than once; expected distinct values")]
    DuplicateValue { axis: String, value: Value },
    #[error("axis `{axis}` has a value that is not a number (NaN); expected finite numbers")]
    NotANumber { axis: String },
    #[error(
        "axis `{axis}` searches for a boundary but `{value}` is not a number; \
         a boundary axis needs numeric values (or a range)"
    )]
    BoundaryNotNumeric { axis: String, value: Value },
    #[error(
        "axis `{axis}` searches for a boundary but its values are not increasing \
         (`{next}` follows `{previous}`); list them in increasing order"
    )]
    BoundaryNotIncreasing {
        axis: String,
        previous: Value,
        next: Value,
    },
    #[error("the axes expand to {count} {what}, more than the limit of {limit}; narrow the axes")]
    TooLarge {
        what: &'static str,
        count: u128,
        limit: usize,
    },
}

/// One boundary search: axis `axis` is searched while the other axes stay at `fixed`.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchSpec {
    /// Name of the searched axis.
    pub axis: String,
    /// The other axes' values, in axis order.
    pub fixed: Params,
    /// Position of the searched axis among the plan's axes.
    position: usize,
    ladder: Ladder,
    /// Runs each point at the edge needs, all agreeing (the axis's [`Axis::edge_runs`]).
    pub edge_runs: u32,
}

impl SearchSpec {
    /// Number of points the search may probe.
    pub fn points(&self) -> u128 {
        self.ladder.len().max(0) as u128
    }

    /// The point at `index` on the searched axis.
    pub(crate) fn value_at(&self, index: i128) -> Value {
        self.ladder.point(index)
    }

    pub(crate) fn ladder_len(&self) -> i128 {
        self.ladder.len()
    }

    /// The full cell parameters with the searched axis at `index`, in axis order.
    pub(crate) fn params_at(&self, index: i128) -> Params {
        let mut params = self.fixed.clone();
        params.insert_at(self.position, &self.axis, self.value_at(index));
        params
    }
}

/// Validated axes and the work they expand to.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    axes: Vec<Axis>,
    sweep: Vec<Params>,
    searches: Vec<SearchSpec>,
}

impl Plan {
    /// Validate `axes` and expand them.
    ///
    /// Without boundary axes the plan is the cartesian product of every axis's sweep points, in
    /// axis order with the last axis varying fastest (no axes: one cell with no parameters).
    /// With boundary axes there are no plain sweep cells: each boundary axis is searched once per
    /// combination of the *other* axes' sweep points (another boundary axis contributes its sweep
    /// points there, so two boundary axes trace the failure frontier from both sides; the memo
    /// shares the cells they have in common).
    pub fn new(axes: Vec<Axis>) -> Result<Plan, PlanError> {
        let mut names = HashSet::new();
        for axis in &axes {
            validate(axis)?;
            if !names.insert(axis.name.as_str()) {
                return Err(PlanError::DuplicateAxis(axis.name.clone()));
            }
        }
        let points: Vec<Vec<Value>> = axes.iter().map(|a| a.domain.sweep_points()).collect();
        let boundary: Vec<usize> = (0..axes.len())
            .filter(|&i| axes[i].search == Some(Search::Boundary))
            .collect();

        let mut sweep = Vec::new();
        let mut searches = Vec::new();
        if boundary.is_empty() {
            let all: Vec<usize> = (0..axes.len()).collect();
            sweep = product(&axes, &points, &all, "cells")?;
        } else {
            for &b in &boundary {
                let others: Vec<usize> = (0..axes.len()).filter(|&i| i != b).collect();
                let ladder = ladder(&axes[b])?;
                for fixed in product(&axes, &points, &others, "boundary searches")? {
                    searches.push(SearchSpec {
                        axis: axes[b].name.clone(),
                        fixed,
                        position: b,
                        ladder: ladder.clone(),
                        edge_runs: axes[b].edge_runs,
                    });
                }
                if searches.len() > MAX_CELLS {
                    return Err(PlanError::TooLarge {
                        what: "boundary searches",
                        count: searches.len() as u128,
                        limit: MAX_CELLS,
                    });
                }
            }
        }
        Ok(Plan {
            axes,
            sweep,
            searches,
        })
    }

    pub fn axes(&self) -> &[Axis] {
        &self.axes
    }

    /// The swept cells, in execution order (empty when the plan has boundary axes).
    pub fn sweep_cells(&self) -> &[Params] {
        &self.sweep
    }

    /// The boundary searches, in execution order.
    pub fn searches(&self) -> &[SearchSpec] {
        &self.searches
    }

    /// Cells an execution is expected to run: every sweep cell plus, per search, plain
    /// bisection and the check (an estimate; galloping and the memo move it either way).
    pub fn estimated_cells(&self) -> usize {
        self.sweep.len()
            + self
                .searches
                .iter()
                .map(|s| ceil_log2(s.ladder.len() + 1) as usize + 1)
                .sum::<usize>()
    }
}

fn validate(axis: &Axis) -> Result<(), PlanError> {
    let name = || axis.name.clone();
    if axis.name.trim().is_empty() {
        return Err(PlanError::EmptyName);
    }
    match &axis.domain {
        Domain::Values(values) => {
            if values.is_empty() {
                return Err(PlanError::EmptyAxis { axis: name() });
            }
            let mut seen = HashSet::new();
            for value in values {
                if matches!(value, Value::Float(f) if f.is_nan()) {
                    return Err(PlanError::NotANumber { axis: name() });
                }
                if !seen.insert(value) {
                    return Err(PlanError::DuplicateValue {
                        axis: name(),
                        value: value.clone(),
                    });
                }
            }
        }
        Domain::Range { lo, hi } => {
            if lo > hi {
                return Err(PlanError::InvertedRange {
                    axis: name(),
                    lo: *lo,
                    hi: *hi,
                });
            }
        }
    }
    Ok(())
}

/// The ordered points a boundary search on `axis` walks.
fn ladder(axis: &Axis) -> Result<Ladder, PlanError> {
    match &axis.domain {
        Domain::Range { lo, hi } => Ok(Ladder::Range {
            lo: *lo,
            len: i128::from(*hi) - i128::from(*lo) + 1,
        }),
        Domain::Values(values) => {
            let mut previous: Option<(&Value, f64)> = None;
            for value in values {
                let Some(x) = value.as_f64() else {
                    return Err(PlanError::BoundaryNotNumeric {
                        axis: axis.name.clone(),
                        value: value.clone(),
                    });
                };
                if let Some((p, px)) = previous {
                    if x <= px {
                        return Err(PlanError::BoundaryNotIncreasing {
                            axis: axis.name.clone(),
                            previous: p.clone(),
                            next: value.clone(),
                        });
                    }
                }
                previous = Some((value, x));
            }
            Ok(Ladder::Values(values.clone()))
        }
    }
}

/// Cartesian product of the sweep points of `which` axes, in axis order, last varying fastest.
fn product(
    axes: &[Axis],
    points: &[Vec<Value>],
    which: &[usize],
    what: &'static str,
) -> Result<Vec<Params>, PlanError> {
    let count = which
        .iter()
        .try_fold(1u128, |acc, &i| acc.checked_mul(points[i].len() as u128))
        .unwrap_or(u128::MAX);
    if count > MAX_CELLS as u128 {
        return Err(PlanError::TooLarge {
            what,
            count,
            limit: MAX_CELLS,
        });
    }
    let mut cells = vec![Params::new()];
    for &i in which {
        let mut next = Vec::with_capacity(cells.len() * points[i].len());
        for cell in &cells {
            for value in &points[i] {
                let mut params = cell.clone();
                params.insert(axes[i].name.clone(), value.clone());
                next.push(params);
            }
        }
        cells = next;
    }
    Ok(cells)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::axis::AxisKind;

    fn ints(values: &[i64]) -> Domain {
        Domain::Values(values.iter().map(|&v| Value::Int(v)).collect())
    }

    #[test]
    fn sweep_axes_expand_to_the_cartesian_product() {
        let plan = Plan::new(vec![
            Axis::new("threads", AxisKind::Concurrency, ints(&[1, 2, 4])),
            Axis::new(
                "algo",
                AxisKind::Custom,
                Domain::Values(vec!["a".into(), "b".into()]),
            ),
        ])
        .unwrap();
        let cells: Vec<String> = plan.sweep_cells().iter().map(|p| p.to_string()).collect();
        assert_eq!(
            cells,
            [
                "threads=1 algo=a",
                "threads=1 algo=b",
                "threads=2 algo=a",
                "threads=2 algo=b",
                "threads=4 algo=a",
                "threads=4 algo=b"
            ]
        );
        assert!(plan.searches().is_empty());
        assert_eq!(plan.estimated_cells(), 6);
    }

    #[test]
    fn no_axes_is_one_empty_cell() {
        let plan = Plan::new(vec![]).unwrap();
        assert_eq!(plan.sweep_cells(), &[Params::new()]);
    }

    #[test]
    fn a_boundary_axis_is_searched_per_combination_of_the_others() {
        let plan = Plan::new(vec![
            Axis::new("threads", AxisKind::Concurrency, ints(&[1, 2])),
            Axis::new(
                "n",
                AxisKind::Workload,
                Domain::Range { lo: 256, hi: 65536 },
            )
            .boundary(),
            Axis::new("mem", AxisKind::Memory, ints(&[1, 2, 3])),
        ])
        .unwrap();
        assert!(plan.sweep_cells().is_empty());
        assert_eq!(plan.searches().len(), 6);
        let s = &plan.searches()[1];
        assert_eq!(s.axis, "n");
        assert_eq!(s.fixed.to_string(), "threads=1 mem=2");
        assert_eq!(s.points(), 65281);
        assert_eq!(s.params_at(0).to_string(), "threads=1 n=256 mem=2");
        assert_eq!(s.params_at(65280).to_string(), "threads=1 n=65536 mem=2");
    }

    #[test]
    fn two_boundary_axes_search_each_against_the_others_sweep_points() {
        let plan = Plan::new(vec![
            Axis::new("threads", AxisKind::Concurrency, ints(&[1, 2, 4])).boundary(),
            Axis::new("n", AxisKind::Workload, Domain::Range { lo: 1, hi: 4 }).boundary(),
        ])
        .unwrap();
        let axes: Vec<&str> = plan.searches().iter().map(|s| s.axis.as_str()).collect();
        assert_eq!(
            axes,
            ["threads", "threads", "threads", "threads", "n", "n", "n"]
        );
    }

    #[test]
    fn contradictory_axes_are_errors() {
        let err = |axes: Vec<Axis>| Plan::new(axes).unwrap_err();
        let c = AxisKind::Custom;
        assert_eq!(
            err(vec![Axis::new("x", c, ints(&[]))]),
            PlanError::EmptyAxis { axis: "x".into() }
        );
        assert!(matches!(
            err(vec![Axis::new("x", c, Domain::Range { lo: 5, hi: 1 })]),
            PlanError::InvertedRange { lo: 5, hi: 1, .. }
        ));
        assert_eq!(
            err(vec![
                Axis::new("x", c, ints(&[1])),
                Axis::new("x", c, ints(&[2]))
            ]),
            PlanError::DuplicateAxis("x".into())
        );
        assert!(matches!(
            err(vec![Axis::new("x", c, ints(&[1, 2, 1]))]),
            PlanError::DuplicateValue { .. }
        ));
        assert!(matches!(
            err(vec![Axis::new("x", c, ints(&[1, 4, 2])).boundary()]),
            PlanError::BoundaryNotIncreasing { .. }
        ));
        assert!(matches!(
            err(vec![
                Axis::new("x", c, Domain::Values(vec![1.into(), "big".into()])).boundary()
            ]),
            PlanError::BoundaryNotNumeric { .. }
        ));
        assert!(matches!(
            err(vec![Axis::new(
                "x",
                c,
                Domain::Values(vec![f64::NAN.into()])
            )]),
            PlanError::NotANumber { .. }
        ));
        assert_eq!(
            err(vec![Axis::new(" ", c, ints(&[1]))]),
            PlanError::EmptyName
        );
        let wide: Vec<i64> = (0..1000).collect();
        assert!(matches!(
            err(vec![
                Axis::new("a", c, ints(&wide)),
                Axis::new("b", c, ints(&wide))
            ]),
            PlanError::TooLarge {
                count: 1_000_000,
                ..
            }
        ));
        let msg = err(vec![Axis::new("x", c, Domain::Range { lo: 5, hi: 1 })]).to_string();
        assert_eq!(
            msg,
            "axis `x` has range [5, 1] with lo > hi; expected lo <= hi"
        );
    }

    #[test]
    fn mixed_int_and_float_boundary_values_are_ordered_numerically() {
        let plan = Plan::new(vec![
            Axis::new(
                "ratio",
                AxisKind::Custom,
                Domain::Values(vec![1.into(), 1.5.into(), 2.into()]),
            )
            .boundary(),
        ])
        .unwrap();
        assert_eq!(plan.searches()[0].value_at(1), Value::Float(1.5));
    }
}
