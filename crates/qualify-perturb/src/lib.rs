//! `qualify-perturb` makes rare interleavings of a black-box program common, and says how
//! common: seeded schedule perturbation, replayable by seed.
//!
//! Two mechanisms. The **shim** ([`shim`]), a small C library built with the crate and embedded
//! in the binary, is preloaded into dynamically linked programs and delays threads at pthread
//! synchronisation calls — PCT-style priorities with change points, uniform noise, or an exact
//! list of points (for minimisation) — writing what it did to a shared log ([`log`]). The
//! **scheduler-level** perturbation ([`sched`]) works from outside on every program (static
//! binaries, Go, the JVM, Python): per-thread `SCHED_IDLE` and nice windows, CPU affinity
//! squeezes, CPU quota bursts, short freezes of the tree, `GOMAXPROCS`. A [`Recipe`] is one
//! run's perturbation, derived from a seed; [`campaign`] runs a cell many times through the
//! caller's [`Launch`] (the binary runs each as a probe), replays each failing seed and as many
//! bare runs for a reproduction rate beside a bare rate, and minimises a failure to the points
//! that matter ([`minimise`]), named by file and line ([`resolve`]).
//!
//! It is an engine: it depends only on the vocabulary (`qualify-model`) and never on the probe;
//! the binary composes the two.

pub mod campaign;
mod error;
pub mod log;
pub mod minimise;
pub mod recipe;
pub mod resolve;
pub mod sched;
pub mod shim;

pub use campaign::{Campaign, Ended, Launch, Plan, Setup};
pub use error::PerturbError;
pub use recipe::{Knowledge, Recipe, ShimPlan};
pub use sched::{Chaos, SchedReport, Tree};
pub use shim::Shim;
