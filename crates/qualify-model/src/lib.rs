//! `qualify-model` owns the vocabulary every other qualify crate shares, so that the spec, the
//! planner and the evidence speak of one [`ClaimLevel`], one [`AxisKind`] and one [`Dimension`]
//! instead of converting between copies — and one digest format ([`sha256_hex`]) and one
//! vocabulary of service-level objectives ([`Slo`], [`SloMetric`]).

mod axis;
mod claim;
pub mod digest;
mod slo;

pub use axis::{AxisKind, Dimension};
pub use claim::ClaimLevel;
pub use digest::sha256_hex;
pub use slo::{BoundKind, Slo, SloMetric};
