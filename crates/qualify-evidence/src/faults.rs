//! What the evidence reads of a service cell's `result.faults` (the vocabulary's
//! [`FaultRecord`]s, re-exported here): which dependencies completed cells put faults on
//! ([`examined`], the receipt's `tested.dependencies`), the restarts ([`restarts`]), and which
//! checklist rows each record answers.

use std::collections::BTreeMap;

use qualify_model::ProbeResult;
use qualify_model::fault::FaultKind;
pub use qualify_model::fault::record::{read_value, thousands};
pub use qualify_model::fault::{
    AmplificationRecord, BehaviourRecord, CheckerRecord, DependencyPhaseRecord, FaultRecord,
    HistoryFile, HttpPhaseRecord, KilledInstance, NoiseFloorRecord, PhaseRecord, PhasesRecord,
    PoolRecord, ProcessRecord, ResourceRecord, RestartRecord, SetCheck, SetCheck as WritesRecord,
    Verdict, WindowRecord,
};
use serde::{Deserialize, Serialize};

use crate::record::{AxisKind, Cell, RunRecord};

/// The fault records of a probe result (empty when it has none).
pub fn read(result: &ProbeResult) -> &[FaultRecord] {
    &result.faults
}

/// What the completed cells examined of one dependency (the receipt's `tested.dependencies`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExaminedDependency {
    pub name: String,
    /// Distinct faults other than `none` put on it by completed cells, in first-seen order.
    #[serde(default)]
    pub faults: Vec<String>,
    /// Completed cells that put one of them on it.
    #[serde(default)]
    pub cells: usize,
}

/// Every dependency the record declares (`[[dependency]]` names, then the target's others),
/// with the faults completed cells put on it.
pub fn examined(record: &RunRecord) -> Vec<ExaminedDependency> {
    let mut names: Vec<&String> = record.dependencies.iter().collect();
    for d in &record.target.dependencies {
        if !names.contains(&d) {
            names.push(d);
        }
    }
    let mut out: Vec<ExaminedDependency> = names
        .into_iter()
        .map(|name| ExaminedDependency {
            name: name.clone(),
            faults: Vec::new(),
            cells: 0,
        })
        .collect();
    for cell in record.cells.iter().filter(|c| c.completed()) {
        for r in read(&cell.result).iter().filter(|r| r.injected()) {
            let Some(dep) = r.dependency.as_deref() else {
                continue;
            };
            let index = match out.iter().position(|d| d.name == dep) {
                Some(i) => i,
                None => {
                    out.push(ExaminedDependency {
                        name: dep.to_string(),
                        faults: Vec::new(),
                        cells: 0,
                    });
                    out.len() - 1
                }
            };
            let entry = &mut out[index];
            entry.cells += 1;
            if !entry.faults.contains(&r.fault) {
                entry.faults.push(r.fault.clone());
            }
        }
    }
    out
}

/// What `production` refuses of the completed cells inside the claimed region: a behaviour of
/// [`Verdict::REFUSED_FOR_PRODUCTION`] (`hangs`, `retry_storm`, `loses_writes`, `stops`,
/// `recovers_late`) under a fault put on a dependency whose axis states no expectation for it
/// (`expect`). One line per record, naming the fault, the cell and the behaviour. (A claim that
/// states an expectation is judged by the cell's outcome instead: `unexpected_behaviour`.)
pub fn refused_for_production(record: &RunRecord) -> Vec<String> {
    let mut out = Vec::new();
    for cell in record
        .cells
        .iter()
        .filter(|c| c.completed() && crate::claimed::inside(c, record))
    {
        for r in read(&cell.result).iter().filter(|r| r.injected()) {
            let refused = r
                .behaviour
                .parsed_verdict()
                .is_some_and(Verdict::refused_for_production);
            if !refused || r.behaviour.expected.is_some() {
                continue;
            }
            let axis = record
                .axes
                .iter()
                .find(|a| a.kind == AxisKind::Fault && cell.params.get(&a.name).is_some())
                .map_or_else(
                    || "its fault axis".to_string(),
                    |a| format!("axis `{}`", a.name),
                );
            out.push(format!(
                "{} [{}]: {} — production accepts it only when the claim expects it by name (expect = {{ \"{}\" = [\"{}\"] }} on {axis})",
                r.subject(),
                cell.label(),
                r.behaviour_text(),
                r.fault,
                r.behaviour.verdict
            ));
        }
    }
    out
}

/// Completed cells that killed and restarted the service, by signal.
pub fn restarts(record: &RunRecord) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for cell in record.cells.iter().filter(|c| c.completed()) {
        if let Some(r) = read(&cell.result).iter().find_map(|r| r.restart.clone()) {
            let signal = if r.signal.is_empty() {
                "kill".to_string()
            } else {
                r.signal
            };
            *out.entry(signal).or_default() += 1;
        }
    }
    out
}

/// Which checklist rows a record answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Rows {
    pub timeout: bool,
    pub resource_exhaustion: bool,
    pub partial_failure: bool,
}

/// Which rows the record's fault answers: a dependency that answers slowly or not at all is
/// the timeout question (a paused one, a delayed HTTP answer too); one that fails (down,
/// resets, swallows, is killed or restarted, answers 5xx or 429) is partial failure; a pool
/// held at its size or a retry storm is resource exhaustion. (A restart and its write check
/// answer partial failure too; the checklist states them once per cell.)
pub(crate) fn rows(r: &FaultRecord) -> Rows {
    let kind = r.parsed_fault().map(|f| f.kind);
    let slow = matches!(
        kind,
        Some(
            FaultKind::Latency { .. }
                | FaultKind::Blackhole
                | FaultKind::SlowClose { .. }
                | FaultKind::Bandwidth { .. }
                | FaultKind::Pause
                | FaultKind::HttpDelay { .. }
        )
    );
    let failing = matches!(
        kind,
        Some(
            FaultKind::Down
                | FaultKind::Reset
                | FaultKind::Blackhole
                | FaultKind::FailFirst { .. }
                | FaultKind::Kill
                | FaultKind::Pause
                | FaultKind::Restart
                | FaultKind::HttpStatus { .. }
                | FaultKind::Throttle { .. }
        )
    );
    let unknown = r.injected() && kind.is_none();
    let pool = r
        .behaviour
        .pool
        .is_some_and(|p| p.all_busy && p.requests_queued);
    Rows {
        timeout: r.injected() && (slow || r.behaviour.verdict == "hangs"),
        resource_exhaustion: r.injected() && (pool || r.behaviour.verdict == "retry_storm"),
        partial_failure: r.injected() && (failing || unknown),
    }
}

/// A cell's label without its fault axes (they are named by the record): `rps=200`.
pub(crate) fn label_without_faults(cell: &Cell, record: &RunRecord) -> String {
    let fault_axes: Vec<&str> = record
        .axes
        .iter()
        .filter(|a| a.kind == AxisKind::Fault)
        .map(|a| a.name.as_str())
        .collect();
    cell.params
        .iter()
        .filter(|(k, _)| !fault_axes.iter().any(|a| a == k))
        .map(|(k, v)| format!("{k}={}", v.receipt_text()))
        .collect::<Vec<_>>()
        .join(", ")
}
