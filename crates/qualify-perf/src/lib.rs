//! `qualify-perf` is the performance analysis of a qualification run, with no I/O: robust
//! statistics per cell and metric ([`stats`]: median, MAD, bootstrap CI of the median, outliers
//! flagged, censored runs kept apart), workload scaling models in the Extra-P normal form chosen
//! by cross-validation ([`model`]), concurrency analysis with Amdahl and USL fits
//! ([`scaling`]), and [`analyze`](mod@analyze), which turns a run's measurements and the spec's
//! checks into the receipt's `predicate.performance` (statistics, models, scaling, checks with
//! verdicts, predictions and the baseline comparison).

pub mod analyze;
pub mod model;
pub mod scaling;
pub mod simulate;
pub mod stats;

pub use analyze::{
    AxisInput, AxisRole, BaselineInput, CellInput, Check, Expect, ExpectRule, Input, MachineShare,
    MetricDef, Performance, Reference, Repeat, Rounds, Verdict, analyze,
};
pub use model::{Fit, fit};
pub use scaling::Better;
pub use stats::{Estimator, Sample, Stats, summarize};

#[cfg(test)]
mod tests;
