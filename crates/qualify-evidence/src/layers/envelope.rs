//! The envelope layer: which failures occur, or not, inside the claimed region the cells
//! examined. `failed` if a completed cell inside the claimed region failed, or the headroom
//! `[claim]` demands was measured short; `not_run` if no cell completed; `partial` if every
//! claimed cell passed but a material dimension, a claimed value, a planned cell or a demanded
//! headroom stayed unexamined (an interrupted run is at best `partial`); `closed` otherwise.
//! Failures beyond the claimed region (found while mapping the envelope past a target value)
//! never fail the layer: they are boundaries, stated with their headroom. A cell whose own run
//! passed but one of whose `[perturb]` runs failed has failed: the program allows that
//! interleaving (the `perturbation` object counts what the campaigns examined).

use std::collections::BTreeMap;

use qualify_model::{Flag, Outcome};
use serde_json::{Value, json};

use super::{Layer, LayerName, LayerStatus};
use crate::claimed::{self, ClaimedAxis, HeadroomFinding};
use crate::record::{Cell, FunctionalRun, RunRecord};
use crate::region::{DimensionCoverage, Tested};

/// How many failing cells the summary line names before "…".
const NAMED_IN_SUMMARY: usize = 3;

/// Assess the envelope layer of `record`.
pub fn assess(
    record: &RunRecord,
    tested: &Tested,
    dimensions: &[DimensionCoverage],
    claimed: &[ClaimedAxis],
) -> Layer {
    let completed: Vec<&Cell> = record.cells.iter().filter(|c| c.completed()).collect();
    let (failing, failing_beyond): (Vec<&Cell>, Vec<&Cell>) = completed
        .iter()
        .copied()
        .filter(|c| !c.passed())
        .partition(|c| claimed::inside(c, record));

    let mut untested: Vec<String> = dimensions
        .iter()
        .filter(|d| !d.examined)
        .map(|d| format!("{}: {} ({})", d.dimension, d.detail, d.material_because))
        .collect();
    untested.extend(record.axes.iter().zip(claimed).filter_map(|(axis, c)| {
        claimed::unexamined(axis, c.bound.as_ref(), &completed)
            .map(|u| format!("{}: {u}", axis.name))
    }));
    let mut short: Vec<String> = Vec::new();
    for c in claimed {
        let Some(required) = c.required_headroom else {
            continue;
        };
        match &c.headroom {
            Some(HeadroomFinding::Failure {
                ratio,
                first_fail,
                outcome,
                source,
            // A failure at or inside the target already fails the layer as a claimed cell.
            }) if *ratio > 1.0 && *ratio < required => short.push(format!(
                "headroom along {}: {outcome} at {}={} ({source}) is {ratio:.2}× the target, below the required {required}×",
                c.axis,
                c.axis,
                first_fail.receipt_text()
            )),
            Some(HeadroomFinding::NoFailure { at_least, .. }) if *at_least < required => {
                untested.push(format!(
                    "headroom along {}: no failure up to {at_least:.2}× the target; the required {required}× was not examined",
                    c.axis
                ))
            }
            None => untested.push(format!(
                "headroom along {}: nothing beyond the target was examined; the required {required}× is not established",
                c.axis
            )),
            Some(_) => {}
        }
    }
    if tested.cells_interrupted > 0 {
        untested.push(format!(
            "{} cell(s) interrupted before they finished",
            tested.cells_interrupted
        ));
    }
    if record.incomplete {
        untested.push("the run was interrupted: the planned region was not finished".to_string());
    }

    let functional_failed = functional_failed(record);
    let mut outcomes: BTreeMap<&str, usize> = BTreeMap::new();
    for c in &record.cells {
        *outcomes.entry(c.result.outcome.as_str()).or_default() += 1;
    }
    let flagged: Vec<Value> = completed
        .iter()
        .filter(|c| !c.result.flags.is_empty())
        .map(|c| json!({ "params": c.params, "flags": c.result.flags }))
        .collect();
    let evidence = json!({
        "cells_completed": tested.cells_completed,
        "cells_interrupted": tested.cells_interrupted,
        "planned_cells": record.planned_cells,
        "outcomes": outcomes,
        "failing": failing.iter().map(|c| {
            let mut f = json!({
                "params": c.params,
                "outcome": c.result.outcome,
                "detail": c.result.detail,
                "boundary": c.boundary,
            });
            if c.leaked() {
                f["flags"] = json!(["leaked_processes"]);
            }
            if let Some(head) = c.result.perturb.as_ref().and_then(|p| p.headline()) {
                f["perturbation"] = json!(head);
            }
            f
        }).collect::<Vec<_>>(),
        "failing_beyond_claim": failing_beyond.iter().map(|c| json!({
            "params": c.params,
            "outcome": c.result.outcome,
            "boundary": c.boundary,
        })).collect::<Vec<_>>(),
        "headroom_short": short,
        "flagged": flagged,
        "dimensions": dimensions,
        "keep_going": record.keep_going,
        "functional_failed": functional_failed,
        "production_refuses": crate::faults::refused_for_production(record),
    });
    let mut evidence = evidence;
    // Only where it says something: a run that perturbed a cell, or a claim that requires it.
    if record.perturb_required || record.cells.iter().any(|c| c.result.perturb.is_some()) {
        evidence["perturbation"] = crate::perturb::evidence(record);
    }
    let layer = |status, summary: String, untested| {
        Layer::new(
            LayerName::Envelope,
            status,
            summary,
            untested,
            evidence.clone(),
        )
    };

    if completed.is_empty() {
        let why = if functional_failed && !record.keep_going {
            "the functional layer failed, so no operational probing ran (--keep-going was not given)"
                .to_string()
        } else if record.incomplete {
            "the run was interrupted before any cell finished".to_string()
        } else if record.cells.is_empty() {
            "no cells were run".to_string()
        } else {
            "no cell finished".to_string()
        };
        let mut all = vec!["the whole operating region".to_string()];
        all.extend(untested);
        return layer(LayerStatus::NotRun, why, all);
    }

    let prefix = if functional_failed && record.keep_going {
        "probed despite the failed functional layer (--keep-going); "
    } else {
        ""
    };
    let inside: Vec<&Cell> = completed
        .iter()
        .copied()
        .filter(|c| claimed::inside(c, record))
        .collect();
    // Cells beyond the claim are named apart: "n cells inside the claimed region …".
    let (cells_word, beyond_note) = if inside.len() == completed.len() {
        ("completed cells", String::new())
    } else {
        (
            "completed cells inside the claimed region",
            beyond_note(&completed, &inside, &failing_beyond, claimed),
        )
    };
    if !failing.is_empty() {
        let mut named: Vec<String> = failing
            .iter()
            .take(NAMED_IN_SUMMARY)
            .map(|c| format!("{} at {}", c.verdict_text(), c.label()))
            .collect();
        if failing.len() > NAMED_IN_SUMMARY {
            named.push("…".to_string());
        }
        return layer(
            LayerStatus::Failed,
            format!(
                "{prefix}{} of {} {cells_word} failed: {}{beyond_note}",
                failing.len(),
                inside.len(),
                named.join("; ")
            ),
            untested,
        );
    }
    if let Some(first) = short.first() {
        let more = if short.len() > 1 {
            format!(" (+{} more)", short.len() - 1)
        } else {
            String::new()
        };
        return layer(
            LayerStatus::Failed,
            format!(
                "{prefix}all {} {cells_word} passed, but the headroom the claim demands is not there: {first}{more}",
                inside.len()
            ),
            untested,
        );
    }
    let flag_note = flag_note(&completed);
    if !untested.is_empty() {
        let first = untested.first().cloned().unwrap_or_default();
        let more = if untested.len() > 1 {
            format!(" (+{} more)", untested.len() - 1)
        } else {
            String::new()
        };
        return layer(
            LayerStatus::Partial,
            format!(
                "{prefix}all {} {cells_word} passed{flag_note}{beyond_note}, but not everything material was examined: {first}{more}",
                inside.len()
            ),
            untested,
        );
    }
    let examined: Vec<String> = dimensions
        .iter()
        .filter(|d| d.examined)
        .map(|d| format!("{} {}", d.dimension, d.detail))
        .collect();
    let scope = if examined.is_empty() {
        String::new()
    } else {
        format!("; examined: {}", examined.join("; "))
    };
    layer(
        LayerStatus::Closed,
        format!(
            "{prefix}all {} {}{flag_note}{beyond_note}{scope}",
            inside.len(),
            if inside.len() == completed.len() {
                "cells passed"
            } else {
                "cells inside the claimed region passed"
            }
        ),
        untested,
    )
}

/// `; beyond it: 3 of 5 cells failed (headroom n 1.64×)`.
fn beyond_note(
    completed: &[&Cell],
    inside: &[&Cell],
    failing_beyond: &[&Cell],
    claimed: &[ClaimedAxis],
) -> String {
    let beyond = completed.len() - inside.len();
    let headroom: Vec<String> = claimed
        .iter()
        .filter_map(|c| match &c.headroom {
            Some(HeadroomFinding::Failure { ratio, .. }) => Some(format!("{} {ratio:.2}×", c.axis)),
            Some(HeadroomFinding::NoFailure { at_least, .. }) => {
                Some(format!("{} ≥ {at_least:.2}×", c.axis))
            }
            None => None,
        })
        .collect();
    let headroom = if headroom.is_empty() {
        String::new()
    } else {
        format!(" (headroom {})", headroom.join(", "))
    };
    format!(
        "; beyond it: {} of {beyond} cell(s) failed{headroom}",
        failing_beyond.len()
    )
}

fn functional_failed(record: &RunRecord) -> bool {
    match &record.functional {
        FunctionalRun::Ran(f) => {
            let bad_junit = f.junit.is_some_and(|j| j.failures > 0 || j.errors > 0);
            (f.result.outcome != Outcome::Ok && f.result.outcome != Outcome::Interrupted)
                || (f.result.outcome == Outcome::Ok && bad_junit)
        }
        _ => false,
    }
}

/// ` (flags seen: oversubscribed ×2)` or empty.
fn flag_note(cells: &[&Cell]) -> String {
    let mut counts: BTreeMap<Flag, usize> = BTreeMap::new();
    for c in cells {
        for f in &c.result.flags {
            if *f != Flag::OutputTruncated {
                *counts.entry(*f).or_default() += 1;
            }
        }
    }
    if counts.is_empty() {
        return String::new();
    }
    let list: Vec<String> = counts
        .iter()
        .map(|(f, n)| format!("{} ×{n}", f.as_str()))
        .collect();
    format!(" (flags seen: {})", list.join(", "))
}
