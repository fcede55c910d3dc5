//! The capacity frontier: a boundary search over a `load` axis crossed with other axes — fault
//! values (a standing fault held for the whole load), memory or CPU ceilings — gives one
//! capacity per combination. Together they answer what a service owner asks: how much it
//! carries with 1 GiB, with the database 50 ms slower, with the cache gone, and what happens
//! past that. [`Frontier`] is that table, typed in the receipt (`predicate.frontier`), with one
//! sentence for the terminal, Markdown and HTML ("holds … up to 400+ req/s with
//! cache_fault=none; 80 req/s with cache_fault=latency(50ms), failing from 100 req/s:
//! overloaded"). The search probes only near each edge (gallop, bisect, repeats at the edge),
//! never the full grid; `probes` counts them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::capacity::{cells_at, objectives, unit, value_text, what_failed};
use crate::record::{AxisKind, Boundary, Cell, ParamValue, RunRecord};

/// The capacity of each combination of the other axes, along one searched load axis.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Frontier {
    /// The searched load axis (offered rate or users).
    pub axis: String,
    /// `req/s` or `users`.
    pub unit: String,
    /// The steady objectives every capacity is judged by (`latency_p99 ≤ 250 ms and …`).
    pub objectives: String,
    /// The other axes, whose values make each row's conditions (faults, ceilings, …).
    pub over: Vec<String>,
    pub rows: Vec<FrontierRow>,
    /// Cells the searches ran in all (every edge repeat counted).
    pub probes: u64,
    /// The frontier in one sentence.
    pub sentence: String,
}

/// One combination's capacity.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FrontierRow {
    /// The other axes' values (`cache_fault = "latency(50ms)"`, `memory = "1GiB"`).
    pub conditions: BTreeMap<String, Value>,
    /// The highest rate at which every objective held (`None`: not even the lowest).
    pub holds_up_to: Option<f64>,
    /// The lowest rate at which one did not (`None`: the top of the range held).
    pub fails_from: Option<f64>,
    /// Between `holds_up_to` and `fails_from` lies the capacity; with repeated edge probes,
    /// whether both edges agreed on every run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirmed: Option<bool>,
    /// The outcome at `fails_from` (`overloaded`, `slo_violated`, `unexpected_behaviour`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub beyond: Option<String>,
    /// What failed there (`overloaded: latency_p99 768 ms`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub beyond_detail: Option<String>,
    /// The fault's behaviour there (`fails_fast`, `hangs`, …), when a fault was on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub behaviour: Option<String>,
    /// Cells this combination's search ran.
    pub probes: u64,
    /// The search did not finish (interrupted, a setup failure): the row says less.
    pub complete: bool,
}

impl FrontierRow {
    /// `cache_fault=latency(50ms), memory=1GiB`.
    pub fn conditions_text(&self) -> String {
        let parts: Vec<String> = self
            .conditions
            .iter()
            .map(|(k, v)| {
                let text = serde_json::from_value::<ParamValue>(v.clone())
                    .map_or_else(|_| v.to_string(), |p| value_text(&p));
                format!("{k}={text}")
            })
            .collect();
        parts.join(", ")
    }
}

/// The frontier of the first searched load axis that has two or more combinations of the other
/// axes (`None` otherwise: one capacity is the capacity sentence alone).
pub fn frontier(boundaries: &[Boundary], record: &RunRecord) -> Option<Frontier> {
    let load_axes: Vec<&str> = record
        .axes
        .iter()
        .filter(|a| a.kind == AxisKind::Load)
        .map(|a| a.name.as_str())
        .collect();
    let axis = load_axes
        .into_iter()
        .find(|axis| boundaries.iter().filter(|b| b.axis == *axis).count() >= 2)?;
    let searched: Vec<&Boundary> = boundaries.iter().filter(|b| b.axis == axis).collect();
    let mut all_cells: Vec<&Cell> = Vec::new();
    let mut rows = Vec::new();
    for b in &searched {
        let last = b.last_pass.as_ref();
        let first = b.first_fail.as_ref();
        let pass_cells = last.map(|v| cells_at(b, record, v)).unwrap_or_default();
        let fail_cells = first.map(|v| cells_at(b, record, v)).unwrap_or_default();
        all_cells.extend(pass_cells.iter().chain(&fail_cells).copied());
        let conditions: BTreeMap<String, Value> = b
            .fixed
            .iter()
            .filter_map(|(k, v)| Some((k.to_string(), serde_json::to_value(v).ok()?)))
            .collect();
        let behaviour = fail_cells.iter().find_map(|c| {
            c.result
                .faults
                .iter()
                .find(|r| r.injected())
                .map(|r| r.behaviour.verdict.clone())
        });
        rows.push(FrontierRow {
            conditions,
            holds_up_to: last.and_then(ParamValue::as_f64),
            fails_from: first.and_then(ParamValue::as_f64),
            confirmed: b.edge_confirmed,
            beyond: b.outcome.map(|o| o.as_str().to_string()),
            beyond_detail: (!fail_cells.is_empty()).then(|| what_failed(&fail_cells)),
            behaviour,
            probes: b.probes as u64,
            complete: b.complete,
        });
    }
    let slos = all_cells
        .iter()
        .find_map(|c| c.result.load.as_ref().map(|l| l.slo.clone()))?;
    let over: Vec<String> =
        rows.iter()
            .flat_map(|r| r.conditions.keys().cloned())
            .fold(Vec::new(), |mut acc, k| {
                if !acc.contains(&k) {
                    acc.push(k);
                }
                acc
            });
    let unit = unit(&all_cells).to_string();
    let objectives = objectives(&slos);
    let probes = rows.iter().map(|r| r.probes).sum();
    let sentence = sentence(&objectives, &unit, &rows);
    Some(Frontier {
        axis: axis.to_string(),
        unit,
        objectives,
        over,
        rows,
        probes,
        sentence,
    })
}

/// `holds latency_p99 ≤ 250 ms: up to 400+ req/s with cache_fault=none; up to 80 req/s with
/// cache_fault=latency(50ms) (fails from 100 req/s: overloaded); not even 20 req/s with
/// cache_fault=down (fails_fast)`.
fn sentence(objectives: &str, unit: &str, rows: &[FrontierRow]) -> String {
    let parts: Vec<String> = rows
        .iter()
        .map(|r| {
            let with = r.conditions_text();
            let beyond = match (&r.beyond, &r.behaviour) {
                (Some(o), Some(b)) if o != b => format!("{o}, {b}"),
                (Some(o), _) => o.clone(),
                (None, Some(b)) => b.clone(),
                (None, None) => "failed".to_string(),
            };
            let unfinished = if r.complete {
                ""
            } else {
                ", search unfinished"
            };
            match (r.holds_up_to, r.fails_from) {
                (Some(h), None) => format!(
                    "up to {}+ {unit} with {with} (the top of the range held{unfinished})",
                    crate::load::rate(h)
                ),
                (Some(h), Some(f)) => format!(
                    "up to {} {unit} with {with} (fails from {} {unit}: {beyond}{unfinished})",
                    crate::load::rate(h),
                    crate::load::rate(f)
                ),
                (None, Some(f)) => format!(
                    "not even {} {unit} with {with} ({beyond}{unfinished})",
                    crate::load::rate(f)
                ),
                (None, None) => format!("not found with {with}{unfinished}"),
            }
        })
        .collect();
    format!("holds {objectives}: {}", parts.join("; "))
}
