//! The envelope layer: which failures occur, or not, inside the region the cells examined.
//! `failed` if any completed cell failed; `not_run` if no cell completed; `partial` if every
//! completed cell passed but a material dimension, a declared value or a planned cell stayed
//! unexamined (an interrupted run is at best `partial`); `closed` otherwise.

use std::collections::BTreeMap;

use qualify_probe::{Flag, Outcome};
use serde_json::{Value, json};

use super::{Layer, LayerName, LayerStatus};
use crate::record::{Cell, FunctionalRun, RunRecord};
use crate::region::{DimensionCoverage, Tested};

/// How many failing cells the summary line names before "…".
const NAMED_IN_SUMMARY: usize = 3;

/// Assess the envelope layer of `record`.
pub fn assess(record: &RunRecord, tested: &Tested, dimensions: &[DimensionCoverage]) -> Layer {
    let completed: Vec<&Cell> = record.cells.iter().filter(|c| c.completed()).collect();
    let failing: Vec<&Cell> = completed
        .iter()
        .copied()
        .filter(|c| c.result.outcome != Outcome::Ok)
        .collect();

    let mut untested: Vec<String> = dimensions
        .iter()
        .filter(|d| !d.examined)
        .map(|d| format!("{}: {} ({})", d.dimension, d.detail, d.material_because))
        .collect();
    untested.extend(
        tested
            .axes
            .iter()
            .filter_map(|a| a.unexamined.as_ref().map(|u| format!("{}: {u}", a.name))),
    );
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
        "failing": failing.iter().map(|c| json!({
            "params": c.params,
            "outcome": c.result.outcome,
            "detail": c.result.detail,
            "boundary": c.boundary,
        })).collect::<Vec<_>>(),
        "flagged": flagged,
        "dimensions": dimensions,
        "keep_going": record.keep_going,
        "functional_failed": functional_failed,
    });
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
    if !failing.is_empty() {
        let mut named: Vec<String> = failing
            .iter()
            .take(NAMED_IN_SUMMARY)
            .map(|c| format!("{} at {}", c.result.outcome, c.label()))
            .collect();
        if failing.len() > NAMED_IN_SUMMARY {
            named.push("…".to_string());
        }
        return layer(
            LayerStatus::Failed,
            format!(
                "{prefix}{} of {} completed cells failed: {}",
                failing.len(),
                completed.len(),
                named.join("; ")
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
                "{prefix}all {} completed cells passed{flag_note}, but not everything material was examined: {first}{more}",
                completed.len()
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
            "{prefix}all {} cells passed{flag_note}{scope}",
            completed.len()
        ),
        untested,
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
