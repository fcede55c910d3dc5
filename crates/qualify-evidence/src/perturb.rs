//! Schedule perturbation in the evidence: what the cells' `[perturb]` campaigns examined (the
//! envelope layer's `perturbation` object, and the schedules part of the concurrency dimension),
//! whether the artifact is concurrent, and the production requirement of `[claim] perturb =
//! "required"`: [`unmet`] reads the envelope's evidence back and says why `production` cannot be
//! accepted, or `None`.
//!
//! A concurrent artifact is one the run saw as such: a concurrency (or load) axis, or a
//! completed cell sampled with more than one thread or process. A program too short to be
//! sampled and without such an axis is not called concurrent (said so in the evidence).

use qualify_model::AxisKind;
use serde_json::{Value, json};

use crate::claimed;
use crate::record::{Cell, RunRecord};

/// Why the artifact counts as concurrent, or `None`.
pub fn concurrent(record: &RunRecord) -> Option<String> {
    if let Some(axis) = record
        .axes
        .iter()
        .find(|a| matches!(a.kind, AxisKind::Concurrency | AxisKind::Load))
    {
        return Some(format!("axis `{}` varies its concurrency", axis.name));
    }
    record.cells.iter().filter(|c| c.completed()).find_map(|c| {
        let s = c.result.evidence.get("sampling")?;
        let threads = s.get("max_threads").and_then(Value::as_u64).unwrap_or(0);
        let processes = s.get("max_processes").and_then(Value::as_u64).unwrap_or(0);
        (threads > 1 || processes > 1).then(|| {
            format!(
                "cell {} ran {threads} thread(s) in {processes} process(es)",
                c.label()
            )
        })
    })
}

/// The completed cells inside the claimed region.
fn claimed_cells(record: &RunRecord) -> Vec<&Cell> {
    record
        .cells
        .iter()
        .filter(|c| c.completed() && !c.control && claimed::inside(c, record))
        .collect()
}

/// `1,200 perturbed runs over 3 cells (pct, noise, sched)`, when any cell was perturbed.
pub fn schedules(record: &RunRecord) -> Option<String> {
    let cells: Vec<&Cell> = record
        .cells
        .iter()
        .filter(|c| c.completed() && c.result.perturb.as_ref().is_some_and(|p| p.runs > 0))
        .collect();
    let runs: u64 = cells
        .iter()
        .filter_map(|c| c.result.perturb.as_ref())
        .map(|p| p.runs)
        .sum();
    if cells.is_empty() {
        return None;
    }
    let mut modes: Vec<&str> = cells
        .iter()
        .filter_map(|c| c.result.perturb.as_ref())
        .flat_map(|p| p.modes.iter().map(|m| m.as_str()))
        .collect();
    modes.sort_unstable();
    modes.dedup();
    Some(format!(
        "schedules: {runs} perturbed runs over {} cell(s) ({})",
        cells.len(),
        modes.join(", ")
    ))
}

/// The envelope layer's `perturbation` object.
pub fn evidence(record: &RunRecord) -> Value {
    let claimed = claimed_cells(record);
    let perturbed: Vec<&&Cell> = claimed
        .iter()
        .filter(|c| c.result.perturb.as_ref().is_some_and(|p| p.runs > 0))
        .collect();
    let runs: u64 = perturbed
        .iter()
        .filter_map(|c| c.result.perturb.as_ref())
        .map(|p| p.runs)
        .sum();
    let failures: Vec<Value> = record
        .cells
        .iter()
        .filter(|c| c.completed())
        .filter_map(|c| {
            let p = c.result.perturb.as_ref()?;
            let head = p.headline()?;
            Some(json!({ "params": c.params, "failure": head }))
        })
        .collect();
    let concurrent = concurrent(record);
    json!({
        "required": record.perturb_required,
        "concurrent": concurrent.is_some(),
        "concurrent_because": concurrent.unwrap_or_else(|| "no concurrency axis, and no completed cell was seen with more than one thread or process".into()),
        "claimed_cells": claimed.len(),
        "perturbed_cells": perturbed.len(),
        "runs": runs,
        "failures": failures,
    })
}

/// Why `production` cannot be accepted for want of perturbation (the envelope's
/// `perturbation` evidence), or `None`: only when it is required, the artifact is concurrent
/// and some claimed cell was not perturbed. (A failure under perturbation fails the envelope
/// layer itself.)
pub fn unmet(envelope_evidence: &Value) -> Option<String> {
    let p = envelope_evidence.get("perturbation")?;
    if !p.get("required").and_then(Value::as_bool).unwrap_or(false)
        || !p
            .get("concurrent")
            .and_then(Value::as_bool)
            .unwrap_or(false)
    {
        return None;
    }
    let claimed = p.get("claimed_cells").and_then(Value::as_u64).unwrap_or(0);
    let perturbed = p
        .get("perturbed_cells")
        .and_then(Value::as_u64)
        .unwrap_or(0);
    if claimed > 0 && perturbed >= claimed {
        return None;
    }
    let because = p
        .get("concurrent_because")
        .and_then(Value::as_str)
        .unwrap_or("it is concurrent");
    Some(format!(
        "the claim requires schedule perturbation for a concurrent artifact ({because}), but {perturbed} of {claimed} claimed cell(s) were perturbed; add [perturb] to the spec"
    ))
}
