//! `qualify-spec` owns `qualify.toml`: the model of a spec (artifact, claim, target, functional
//! tests, limits, axes, waivers, and for services `[service]`, `[load]`, `[[slo]]`,
//! `[[dependency]]`, `[faults]` with `kind = "fault"` axes and their `expect`, `[recovery]`), its
//! loading and validation — every problem reported as `path:line:col: error: message` with a
//! help line, all semantic problems at once — and the `{placeholder}` rendering that turns an
//! axis assignment into a command line and environment.
//!
//! Entry points: [`Spec::load`] and [`Spec::parse`]; [`render`] and [`CommandLine`] for cells;
//! [`STARTER_SPEC`] and [`SERVICE_STARTER_SPEC`] for `qualify init`. Each config element has
//! its own module with its raw (TOML, spanned) form, its checked form and its checks.

mod artifact;
mod axis;
mod check;
mod claim;
mod coherence;
mod command;
mod dependency;
mod environment;
mod error;
mod executor;
mod expect;
mod faults;
mod functional;
mod limits;
mod load;
mod overrides;
mod performance;
mod perturb;
mod recovery;
mod sandbox;
mod service;
mod slo;
mod spec;
mod starter;
mod target;
pub mod template;
mod waiver;
mod writes;

pub use artifact::Artifact;
pub use axis::{
    Axis, AxisKind, Domain, FaultAxis, MAX_SEARCH_POINTS, MAX_SWEEP_POINTS, Search, Value,
};
pub use claim::{Claim, ClaimLevel, Headroom};
pub use command::{CommandLine, SHELL};
pub use dependency::{
    DEP_PORT_PLACEHOLDER, Dependency, DependencySource, Node, PROXY_HOST_PLACEHOLDER,
    PROXY_PORT_PLACEHOLDER, Protocol,
};
pub use environment::{Environment, Reproducibility};
pub use error::{Diagnostic, SpecError};
pub use executor::{Executor, ExecutorKind};
pub use faults::{DEFAULT_RECOVER_WITHIN, Faults};
pub use functional::{Functional, Holdout};
pub use limits::SpecLimits;
pub use load::{
    Amount, HttpLoadRequest, Load, LoadModel, LoadRequest, LoadRequestKind, template_problems,
};
pub use overrides::{Override, OverrideSyntax};
pub use performance::{
    BUILTIN_METRICS, Better, DEFAULT_MAX_REPEAT, DEFAULT_PRECISION, Estimator, ExpectRule,
    MIN_ROUNDS, MetricError, PerfExpect, PerfMetric, PerfReference, Performance, Repeat,
    SERVICE_METRICS, is_service_metric,
};
pub use perturb::Perturb;
pub use qualify_model::Fault;
pub use qualify_model::fault::Verdict;
pub use qualify_model::range::{Number, NumericRange, Points, Scale};
pub use qualify_model::{BoundKind, Slo, SloMetric, SloPhase};
pub use recovery::{DEFAULT_READY_WITHIN, Recovery};
pub use sandbox::{NetworkPolicy, SandboxMode, SandboxSpec};
pub use service::{PORT_PLACEHOLDER, Ready, ReadyCheck, Service, Stop};
pub use spec::Spec;
pub use starter::{SERVICE_STARTER_PROGRAM, SERVICE_STARTER_SPEC, STARTER_PROGRAM, STARTER_SPEC};
pub use target::Target;
pub use template::render;
pub use waiver::Waiver;
pub use writes::{HISTORY_PLACEHOLDER, Writes};
