//! What a claim expects of performance, as the spec states it and the analysis judges it:
//! [`Expect`] (`[[performance.expect]]`: a growth or efficiency limit along an axis, its
//! [`ExpectRule`]) and [`Reference`] (`[[performance.reference]]`: a named cell's value within
//! tolerances). The spec checks them, `qualify-perf` turns them into checks with verdicts.

use serde::Serialize;

use crate::Params;

/// `[[performance.expect]]`: `rule` holds for `metric` along `axis`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Expect {
    pub axis: String,
    pub metric: String,
    pub rule: ExpectRule,
}

/// The limit an [`Expect`] sets.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ExpectRule {
    /// The fitted exponent of `n` along a workload axis is at most this.
    MaxExponent(f64),
    /// Parallel efficiency along a concurrency axis is at least this (0 < e ≤ 1).
    MinEfficiency(f64),
}

/// `[[performance.reference]]` (ReFrame-style): the value of `metric` in the cell(s) with
/// `params` lies within `[reference · (1 + lower), reference · (1 + upper)]`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Reference {
    /// Axis values naming the cell, in the order written.
    pub params: Params,
    pub metric: String,
    pub reference: f64,
    pub lower: f64,
    pub upper: f64,
}
