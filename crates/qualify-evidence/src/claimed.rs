//! The claimed region versus the explored region. Per axis, the claim covers the declared
//! domain up to the target's value when `[target]` names one for it (from it, for memory
//! ceilings: [`qualify_model::Target::bound_for`]); a boundary search or a sweep may probe
//! beyond it to map the envelope. A failure inside the claimed region refutes the claim; a
//! failure only beyond it is a boundary, stated as **headroom**: how far beyond the target the
//! first failure lies (first failing value ÷ target value), checked against `[claim]
//! headroom` when the spec demands one.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::record::{Axis, AxisDomain, Boundary, Cell, ParamValue, RunRecord};
use qualify_model::{AxisKind, Bound, Harder};

/// One axis's claimed region and what was found beyond it (the receipt's `claimed_region`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClaimedAxis {
    pub axis: String,
    pub kind: AxisKind,
    /// The target value bounding the claim; absent: the whole declared domain is claimed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bound: Option<Bound>,
    /// The claim in words, e.g. `n ≤ 10000 (target.workload.n)`.
    pub claims: String,
    /// Completed cells beyond the claim on this axis (inside it on every other axis).
    pub cells_beyond: usize,
    /// The first failure beyond the target, or how far beyond it everything passed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headroom: Option<HeadroomFinding>,
    /// `[claim] headroom` for this axis.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required_headroom: Option<f64>,
}

/// How far beyond the target the envelope was mapped along one axis.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum HeadroomFinding {
    /// A failure beyond (or at) the target: `ratio` = its distance from the target as a factor.
    Failure {
        ratio: f64,
        first_fail: ParamValue,
        outcome: String,
        /// `boundary` (a boundary search found it) or `sweep` (a failing cell of the sweep).
        source: String,
    },
    /// No failure beyond the target: everything passed up to `at_least` × the target.
    NoFailure {
        at_least: f64,
        last_pass: ParamValue,
    },
}

impl HeadroomFinding {
    /// One line for people.
    pub fn describe(&self, axis: &str) -> String {
        match self {
            HeadroomFinding::Failure {
                ratio,
                first_fail,
                outcome,
                source,
            } if *ratio <= 1.0 => format!(
                "a failure inside the claimed region along {axis}: {outcome} at {axis}={} ({source}), {ratio:.2}× the target",
                first_fail.receipt_text()
            ),
            HeadroomFinding::Failure {
                ratio,
                first_fail,
                outcome,
                source,
            } => format!(
                "first failure beyond the target along {axis}: {outcome} at {axis}={} ({source}), {ratio:.2}× the target",
                first_fail.receipt_text()
            ),
            HeadroomFinding::NoFailure {
                at_least,
                last_pass,
            } => format!(
                "no failure along {axis} up to {axis}={} ({at_least:.2}× the target)",
                last_pass.receipt_text()
            ),
        }
    }
}

/// Every declared axis's claimed region, with the headroom found beyond it.
pub fn region(record: &RunRecord) -> Vec<ClaimedAxis> {
    let bounds = bounds(record);
    record
        .axes
        .iter()
        .zip(&bounds)
        .map(|(axis, bound)| {
            let beyond: Vec<&Cell> = record
                .cells
                .iter()
                .filter(|c| c.completed() && beyond_only_on(c, &axis.name, record, &bounds))
                .collect();
            let headroom = bound
                .as_ref()
                .and_then(|b| finding(record, axis, b, &bounds, &beyond));
            ClaimedAxis {
                axis: axis.name.clone(),
                kind: axis.kind,
                claims: claims_text(axis, bound.as_ref()),
                bound: bound.clone(),
                cells_beyond: beyond.len(),
                headroom,
                required_headroom: bound
                    .as_ref()
                    .filter(|b| b.harder == Harder::Larger)
                    .and_then(|_| record.headroom.for_axis(&axis.name)),
            }
        })
        .collect()
}

/// The bound of each declared axis, in declaration order.
fn bounds(record: &RunRecord) -> Vec<Option<Bound>> {
    record
        .axes
        .iter()
        .map(|a| record.target.bound_for(&a.name, a.kind))
        .collect()
}

/// The cell lies inside the claimed region on every axis.
pub fn inside(cell: &Cell, record: &RunRecord) -> bool {
    let bounds = bounds(record);
    record
        .axes
        .iter()
        .zip(&bounds)
        .all(|(a, b)| inside_on(cell, &a.name, b.as_ref()))
}

fn inside_on(cell: &Cell, axis: &str, bound: Option<&Bound>) -> bool {
    match (bound, cell.params.get(axis).and_then(ParamValue::as_f64)) {
        (Some(b), Some(v)) => b.claims(v),
        _ => true,
    }
}

/// Beyond the claim on `axis`, inside it on every other axis.
fn beyond_only_on(cell: &Cell, axis: &str, record: &RunRecord, bounds: &[Option<Bound>]) -> bool {
    record.axes.iter().zip(bounds).all(|(a, b)| {
        let inside = inside_on(cell, &a.name, b.as_ref());
        if a.name == axis { !inside } else { inside }
    })
}

fn claims_text(axis: &Axis, bound: Option<&Bound>) -> String {
    match bound {
        Some(b) => {
            let op = match b.harder {
                Harder::Larger => "≤",
                Harder::Smaller => "≥",
            };
            format!(
                "{} {op} {} ({})",
                axis.name,
                number(b.value).receipt_text(),
                b.source
            )
        }
        None => format!(
            "{}: the whole declared domain (the target names no value for it)",
            axis.name
        ),
    }
}

/// A parameter value, integral when the number is.
fn number(x: f64) -> ParamValue {
    if x.fract() == 0.0 && x.abs() < 9.0e15 {
        ParamValue::Int(x as i64)
    } else {
        ParamValue::Float(x)
    }
}

/// The failure beyond the target closest to it (from the boundary searches along the axis
/// whose other axes sit inside the claim, and from failing cells beyond the claim on this axis
/// alone), else how far beyond the target every cell passed.
fn finding(
    record: &RunRecord,
    axis: &Axis,
    bound: &Bound,
    bounds: &[Option<Bound>],
    beyond: &[&Cell],
) -> Option<HeadroomFinding> {
    let mut best: Option<HeadroomFinding> = None;
    let mut consider = |value: &ParamValue, outcome: &str, source: &str| {
        let Some(v) = value.as_f64().filter(|v| *v > 0.0) else {
            return;
        };
        let ratio = bound.headroom(v);
        let better = match &best {
            Some(HeadroomFinding::Failure { ratio: r, .. }) => ratio < *r,
            _ => true,
        };
        if better {
            best = Some(HeadroomFinding::Failure {
                ratio,
                first_fail: value.clone(),
                outcome: outcome.to_string(),
                source: source.to_string(),
            });
        }
    };
    if bound.harder == Harder::Larger {
        for b in record
            .boundaries
            .iter()
            .filter(|b| b.axis == axis.name && fixed_inside(b, record, bounds))
        {
            if let (Some(first), Some(outcome)) = (&b.first_fail, b.outcome) {
                consider(first, outcome.as_str(), "boundary");
            }
        }
    }
    for c in beyond.iter().filter(|c| !c.passed()) {
        if let Some(v) = c.params.get(&axis.name) {
            consider(v, c.result.outcome.as_str(), "sweep");
        }
    }
    if best.is_some() {
        return best;
    }
    // No failure beyond the target: how far beyond it did passing cells reach?
    let passed = record
        .cells
        .iter()
        .filter(|c| c.passed() && beyond_only_on(c, &axis.name, record, bounds));
    let furthest = passed
        .filter_map(|c| {
            let v = c.params.get(&axis.name)?;
            Some((bound.headroom(v.as_f64()?), v.clone()))
        })
        .max_by(|a, b| a.0.total_cmp(&b.0))?;
    Some(HeadroomFinding::NoFailure {
        at_least: furthest.0,
        last_pass: furthest.1,
    })
}

/// A boundary search's other axes (`fixed`) lie inside the claim.
fn fixed_inside(b: &Boundary, record: &RunRecord, bounds: &[Option<Bound>]) -> bool {
    record.axes.iter().zip(bounds).all(|(a, bound)| {
        match (bound, b.fixed.get(&a.name).and_then(ParamValue::as_f64)) {
            (Some(bound), Some(v)) => bound.claims(v),
            _ => true,
        }
    })
}

/// What of the claimed part of `axis`'s declared domain no completed cell reached, in words.
pub fn unexamined(axis: &Axis, bound: Option<&Bound>, completed: &[&Cell]) -> Option<String> {
    let domain = match (bound, AxisDomain::of(axis)) {
        (None, d) => d,
        (Some(b), AxisDomain::Values(list)) => AxisDomain::Values(
            list.iter()
                .filter(|v| v.as_f64().is_none_or(|x| b.claims(x)))
                .cloned()
                .collect(),
        ),
        (Some(b), AxisDomain::Range { min, max }) => {
            let (Some(lo), Some(hi)) = (min.as_f64(), max.as_f64()) else {
                return None;
            };
            let (lo, hi) = match b.harder {
                Harder::Larger => (lo, hi.min(b.value)),
                Harder::Smaller => (lo.max(b.value), hi),
            };
            if lo > hi {
                // The target lies before the declared range on its easy side: nothing of the
                // range is claimed (the gap states whether the target itself was reached).
                return None;
            }
            AxisDomain::Range {
                min: number(lo),
                max: number(hi),
            }
        }
    };
    crate::region::examine_axis(&axis.name, axis.kind, domain, completed).unexamined
}

/// A boundary search's result (`json`, as the receipt writes `boundary`) with its headroom:
/// `headroom` = how far beyond the target its first failure lies (≤ 1: inside the claimed
/// region), or `headroom_at_least` when it found no failure; unchanged when the target names
/// no value for its axis.
pub fn with_headroom(mut json: Value, boundary: &Boundary, record: &RunRecord) -> Value {
    let Some(decl) = record.axes.iter().find(|a| a.name == boundary.axis) else {
        return json;
    };
    let Some(bound) = record
        .target
        .bound_for(&boundary.axis, decl.kind)
        .filter(|b| b.harder == Harder::Larger)
    else {
        return json;
    };
    let value =
        |v: &Option<ParamValue>| v.as_ref().and_then(ParamValue::as_f64).filter(|v| *v > 0.0);
    let round = |x: f64| (x * 1000.0).round() / 1000.0;
    if let Some(obj) = json.as_object_mut() {
        match (value(&boundary.first_fail), value(&boundary.last_pass)) {
            (Some(first), _) => {
                obj.insert(
                    "headroom".into(),
                    serde_json::json!(round(bound.headroom(first))),
                );
            }
            (None, Some(last)) => {
                obj.insert(
                    "headroom_at_least".into(),
                    serde_json::json!(round(bound.headroom(last))),
                );
            }
            _ => {}
        }
    }
    json
}
