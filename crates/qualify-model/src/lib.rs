//! `qualify-model` owns the vocabulary every other qualify crate shares, so that the spec, the
//! planner, the probe, the analysis and the evidence speak of one thing each instead of
//! converting between copies: [`ClaimLevel`], [`AxisKind`] and [`Dimension`]; axis values and
//! cell parameters ([`Value`], [`Params`]); a boundary search's result ([`boundary::Boundary`]); what the sandbox's self-tests found
//! ([`selftest`]); what a claim expects of performance ([`performance`]); a metric's direction ([`Better`]) and location
//! estimator ([`Estimator`]); how often a cell is measured ([`Repeat`]); how a run ended
//! ([`Outcome`], with the one table renderers draw outcomes with) and the probe's verdict that
//! carries it ([`ProbeResult`]: [`Flag`], [`TimeoutKind`], [`Limits`], [`Enforcement`], and what
//! a long-running tree did to its own processes, [`Children`]); the
//! environment a claim is
//! about ([`Target`]) and which target value bounds each axis's claimed region; service-level
//! objectives ([`Slo`], [`SloMetric`], [`SloResult`]); a service cell's load and what it
//! measured ([`load`]: [`LoadPlan`], [`LoadReport`]); a cell's schedule-perturbation campaign
//! ([`perturb`]: [`PerturbReport`], [`Rate`] with its Wilson interval); one grammar for
//! durations, sizes and rates ([`units`]); one digest format ([`sha256_hex`]); and one strict
//! JSON reader for documents qualify judges ([`json`]: a duplicate key is refused).

pub mod axis;
mod backend;
mod better;
pub mod boundary;
pub mod children;
mod claim;
pub mod digest;
pub mod enforcement;
mod estimator;
pub mod fault;
pub mod json;
pub mod limits;
pub mod load;
#[cfg(test)]
mod messages_tests;
pub mod outcome;
mod parse;
pub mod performance;
pub mod perturb;
pub mod range;
mod repeat;
pub mod result;
pub mod sandbox;
pub mod selftest;
pub mod slo;
pub mod step;
pub mod target;
pub mod units;
mod value;

pub use axis::{AxisKind, Dimension};
pub use backend::BackendChoice;
pub use better::Better;
pub use children::{ChildEnd, ChildWatch, Children};
pub use claim::{ClaimLevel, Headroom, Waiver};
pub use digest::sha256_hex;
pub use enforcement::{Enforcement, SandboxEnforcement, Strength};
pub use estimator::Estimator;
pub use fault::{Fault, FaultRecord, Phase, Window};
pub use limits::{Ceiling, Limits, Progress};
pub use load::{LoadPlan, LoadReport, ServiceLoad};
pub use outcome::Outcome;
pub use parse::ParseError;
pub use perturb::{PerturbMode, PerturbReport, Rate};
pub use repeat::Repeat;
pub use result::{Flag, ProbeResult, TimeoutKind};
pub use sandbox::{NetworkPolicy, SandboxPolicy};
pub use slo::{BoundKind, Slo, SloMetric, SloPhase, SloResult};
pub use target::{Bound, Harder, Target};
pub use units::{format_bytes, parse_duration, parse_size};
pub use value::{Params, Value};
