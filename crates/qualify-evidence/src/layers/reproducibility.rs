//! The reproducibility layer: was the environment traced, and did repeated runs of a cell agree?
//!
//! - `not_run`: no environment fingerprint was recorded.
//! - `failed`: some repeated cell produced different stdout digests and the spec does not declare
//!   its output nondeterministic (the differing cells are named), or a declared tolerance check
//!   ran and failed.
//! - `closed`: traced, and every completed cell was repeated with identical stdout; or the spec
//!   declares the output nondeterministic and its tolerance check ran and passed.
//! - `partial`: traced, but agreement was not examined for every completed cell (no repeats, only
//!   some cells repeated, or a declared tolerance check that did not run).
//!
//! Nothing is `closed` that was not examined: a run without repeats is at most `partial`.

use qualify_model::{Outcome, ProbeResult};
use serde_json::json;

use crate::layers::{Layer, LayerName, LayerStatus};
use crate::record::{Cell, RunRecord};

/// How many distinct stdout digests a cell's repeated runs produced; `None` when not repeated.
pub fn distinct_outputs(result: &ProbeResult) -> Option<usize> {
    let runs = result.runs.as_ref().filter(|r| r.len() >= 2)?;
    if let Some(n) = result.distinct_outputs {
        return Some(n);
    }
    let mut digests: Vec<&str> = runs.iter().map(|r| r.stdout_sha256.as_str()).collect();
    digests.sort_unstable();
    digests.dedup();
    Some(digests.len())
}

pub fn assess(record: &RunRecord) -> Layer {
    let untested_repeats = "agreement of repeated runs".to_string();
    let Some(env) = &record.environment else {
        return Layer::new(
            LayerName::Reproducibility,
            LayerStatus::NotRun,
            "no environment fingerprint was recorded for this run",
            vec![
                "environment fingerprint (OS, toolchains, dependencies)".to_string(),
                untested_repeats,
            ],
            json!({
                "spec_sha256": record.spec.sha256,
                "artifact_sha256": record.artifact.executable.as_ref().map(|e| &e.sha256),
                "qualify_version": record.qualify_version,
            }),
        );
    };
    let fingerprint_sha256 = serde_json::to_vec(env)
        .map(|b| crate::receipt::sha256_hex(&b))
        .unwrap_or_default();
    let completed: Vec<&Cell> = record.cells.iter().filter(|c| c.completed()).collect();
    let repeated: Vec<(&Cell, usize)> = completed
        .iter()
        .filter_map(|c| distinct_outputs(&c.result).map(|n| (*c, n)))
        .collect();
    let differing: Vec<String> = repeated
        .iter()
        .filter(|(_, n)| *n > 1)
        .map(|(c, n)| format!("{} ({n} distinct outputs)", c.label()))
        .collect();
    let decl = &record.reproducibility;
    let tolerance = decl.tolerance_result.as_ref().map(|r| {
        json!({
            "outcome": r.outcome,
            "detail": r.detail,
        })
    });
    let evidence = json!({
        "fingerprint_sha256": fingerprint_sha256,
        "traced": {
            "os": env.os.name,
            "kernel_release": env.os.kernel_release,
            "architecture": env.architecture,
            "tools": env.tools.len(),
            "git": env.git.is_some(),
            "lockfiles": env.lockfiles.len(),
        },
        "completed_cells": completed.len(),
        "repeated_cells": repeated.len(),
        "differing_cells": differing,
        "nondeterministic": decl.nondeterministic,
        "tolerance_check": decl.tolerance_check,
        "tolerance_result": tolerance,
    });
    let traced = "environment traced";

    if decl.nondeterministic {
        let command = decl.tolerance_check.as_deref().unwrap_or("(none)");
        return match &decl.tolerance_result {
            Some(r) if r.outcome == Outcome::Ok => Layer::new(
                LayerName::Reproducibility,
                LayerStatus::Closed,
                format!(
                    "{traced}; output declared nondeterministic and the tolerance check `{command}` passed ({} of {} repeated cell(s) differed)",
                    differing.len(),
                    repeated.len()
                ),
                Vec::new(),
                evidence,
            ),
            Some(r) => Layer::new(
                LayerName::Reproducibility,
                LayerStatus::Failed,
                format!(
                    "the tolerance check `{command}` failed ({}: {})",
                    r.outcome, r.detail
                ),
                Vec::new(),
                evidence,
            ),
            None => Layer::new(
                LayerName::Reproducibility,
                LayerStatus::Partial,
                format!(
                    "{traced}; output declared nondeterministic but the tolerance check `{command}` did not run"
                ),
                vec![untested_repeats],
                evidence,
            ),
        };
    }
    if !differing.is_empty() {
        return Layer::new(
            LayerName::Reproducibility,
            LayerStatus::Failed,
            format!(
                "stdout differed between repeats in {} of {} repeated cell(s): {}",
                differing.len(),
                repeated.len(),
                differing.join("; ")
            ),
            Vec::new(),
            evidence,
        );
    }
    if repeated.is_empty() {
        return Layer::new(
            LayerName::Reproducibility,
            LayerStatus::Partial,
            format!(
                "{traced}; no cell was repeated, so agreement of repeats was not examined (set [reproducibility] repeat)"
            ),
            vec![untested_repeats],
            evidence,
        );
    }
    if repeated.len() < completed.len() {
        return Layer::new(
            LayerName::Reproducibility,
            LayerStatus::Partial,
            format!(
                "{traced}; {} repeated cell(s) agreed, {} completed cell(s) were not repeated",
                repeated.len(),
                completed.len() - repeated.len()
            ),
            vec![format!(
                "agreement of repeats for {} cell(s)",
                completed.len() - repeated.len()
            )],
            evidence,
        );
    }
    Layer::new(
        LayerName::Reproducibility,
        LayerStatus::Closed,
        format!(
            "{traced}; all {} completed cell(s) were repeated and produced identical stdout",
            repeated.len()
        ),
        Vec::new(),
        evidence,
    )
}
