//! `qualify-model` owns the vocabulary every other qualify crate shares, so that the spec, the
//! planner and the evidence speak of one [`ClaimLevel`], one [`AxisKind`] and one [`Dimension`]
//! instead of converting between copies.

mod axis;
mod claim;

pub use axis::{AxisKind, Dimension};
pub use claim::ClaimLevel;
