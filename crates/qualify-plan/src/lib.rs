//! `qualify-plan` turns axes into work and runs it: swept axes expand to the cartesian product of
//! cells, boundary axes are searched (gallop from the low end, then bisect, then — on a noisy
//! axis — repeat the points at the edge until they agree, widening it to the measured noise,
//! then one probe to test monotonicity) for the largest passing and smallest failing value per combination of the
//! other axes, and [`Plan::execute`] runs the cells through a function of their parameters (the
//! caller's: `qualify-run`'s cells on their executor, closures in tests) with `--jobs`
//! parallelism that never lets CPU demands overlap, memoization, progress and cancellation.
//!
//! Map: [`axis`] (input axes and their points),
//! [`plan`] (validation and expansion), `search` (the boundary search state machine),
//! `schedule` (the CPU budget), [`execute`] (the executor and its record). The crate knows
//! nothing about the TOML spec or the receipt; both are built on top of these types.

pub mod axis;
pub mod execute;
pub mod plan;
mod schedule;
mod search;

#[cfg(test)]
mod tests;

pub use axis::{Axis, AxisKind, DEFAULT_LOAD_EDGE_RUNS, Domain, range_sweep_points};
pub use execute::{
    Boundary, CellResult, CellRole, DemandFn, EdgeRuns, ExecuteOptions, ExecutedCell, Execution,
    Expectation, MonotonicCheck, ProgressEvent, ProgressFn, axis_demand, passed,
};
pub use plan::{MAX_CELLS, Plan, PlanError, SearchSpec};
pub use qualify_model::axis::Search;
pub use qualify_model::{Params, Value};
pub use search::{DEFAULT_EDGE_BUDGET, DEFAULT_SEARCH_SLACK, MONOTONICITY_ASSUMPTION};
