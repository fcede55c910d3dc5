//! The capacity answer, stated once: for a boundary search over a `load` axis, one sentence —
//! which objectives hold up to which offered rate, from which rate they fail and what failed
//! there — with the precision its repeated edge probes support (each edge point's agreeing
//! runs, the points between whose runs disagreed, an interval when the noise is wider than a
//! step). The receipt keeps it as `boundaries[].capacity`; the terminal, Markdown and HTML say
//! it as written.

use qualify_model::load::ServiceLoad;
use qualify_model::{Outcome, SloPhase, SloResult};
use serde_json::Value;

use crate::load::{format_metric, rate};
use crate::record::{AxisKind, Boundary, Cell, ParamValue, RunRecord, sorted_by_name};

/// `json` (boundary `b` as the receipt writes it) with `capacity` (the sentence) when it
/// searched a `load` axis of service cells.
pub fn with_capacity(mut json: Value, b: &Boundary, record: &RunRecord) -> Value {
    if let Some(text) = sentence(b, record)
        && let Some(o) = json.as_object_mut()
    {
        o.insert("capacity".to_string(), Value::String(text));
    }
    json
}

/// The cells of boundary `b` at `value` of its axis (its fixed axes as they were).
pub(crate) fn cells_at<'a>(
    b: &Boundary,
    record: &'a RunRecord,
    value: &ParamValue,
) -> Vec<&'a Cell> {
    record
        .cells
        .iter()
        .filter(|c| c.params.get(&b.axis).is_some_and(|v| same(v, value)))
        .filter(|c| {
            b.fixed
                .iter()
                .all(|(k, v)| c.params.get(k).is_some_and(|mine| same(mine, v)))
        })
        .collect()
}

fn same(a: &ParamValue, b: &ParamValue) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

fn load(c: &Cell) -> Option<&ServiceLoad> {
    c.result.load.as_ref()
}

/// `req/s` (open model) or `users`.
pub(crate) fn unit(cells: &[&Cell]) -> &'static str {
    let closed = cells
        .iter()
        .filter_map(|c| load(c)?.report.as_ref())
        .any(|r| r.offered_rate.is_none() && r.users.is_some());
    if closed { "users" } else { "req/s" }
}

/// `latency_p99 ≤ 250 ms and error_rate ≤ 1%`: the steady objectives the cells were judged by.
pub(crate) fn objectives(slos: &[SloResult]) -> String {
    let steady: Vec<String> = slos
        .iter()
        .filter(|s| s.phase != SloPhase::Fault)
        .map(|s| {
            let op = match s.bound {
                qualify_model::BoundKind::Max => "≤",
                qualify_model::BoundKind::Min => "≥",
            };
            format!(
                "{} {op} {}",
                s.metric,
                format_metric(s.metric.as_str(), s.limit)
            )
        })
        .collect();
    match steady.len() {
        0 => "its objectives".to_string(),
        1 => steady[0].clone(),
        _ => {
            let (last, rest) = steady
                .split_last()
                .map_or((String::new(), &[][..]), |(l, r)| (l.clone(), r));
            format!("{} and {last}", rest.join(", "))
        }
    }
}

/// What failed in the failing cells: `latency_p99 276 ms` (the first failing run's objectives
/// that broke), with the outcome named when it is not `slo_violated`.
pub(crate) fn what_failed(cells: &[&Cell]) -> String {
    let Some(c) = cells.iter().find(|c| c.result.outcome != Outcome::Ok) else {
        return String::new();
    };
    let broke: Vec<String> = load(c)
        .map(|l| {
            l.slo
                .iter()
                .filter(|s| !s.held)
                .map(|s| match s.value {
                    Some(v) => format!("{} {}", s.metric, format_metric(s.metric.as_str(), v)),
                    None => format!("{} not measured", s.metric),
                })
                .collect()
        })
        .unwrap_or_default();
    let outcome = c.result.outcome;
    match (broke.is_empty(), outcome) {
        (true, o) => o.to_string(),
        (false, Outcome::SloViolated) => broke.join(", "),
        (false, o) => format!("{o}: {}", broke.join(", ")),
    }
}

/// An axis value as a capacity reads it: a number as a rate (`1.2k`), text as written.
pub(crate) fn value_text(v: &ParamValue) -> String {
    match v.as_f64() {
        Some(x) => rate(x),
        None => v.receipt_text(),
    }
}

/// The sentence for boundary `b`, or `None` when it searched no load axis of service cells.
pub fn sentence(b: &Boundary, record: &RunRecord) -> Option<String> {
    let decl = record.axes.iter().find(|a| a.name == b.axis)?;
    if decl.kind != AxisKind::Load {
        return None;
    }
    let last = b.last_pass.as_ref();
    let first = b.first_fail.as_ref();
    let pass_cells = last.map(|v| cells_at(b, record, v)).unwrap_or_default();
    let fail_cells = first.map(|v| cells_at(b, record, v)).unwrap_or_default();
    let any: Vec<&Cell> = pass_cells.iter().chain(&fail_cells).copied().collect();
    let slos = any.iter().find_map(|c| load(c).map(|l| l.slo.clone()))?;
    let unit = unit(&any);
    let holds = objectives(&slos);
    let fixed = sorted_by_name(&b.fixed);
    let fixed = if fixed.is_empty() {
        String::new()
    } else {
        let parts: Vec<String> = fixed
            .iter()
            .map(|(k, v)| format!("{k}={}", value_text(v)))
            .collect();
        format!("[{}] ", parts.join(", "))
    };
    let edge_runs = b.edge_runs;
    let points = &b.edge;
    let runs_of = |v: Option<&ParamValue>| -> String {
        let Some(v) = v else { return String::new() };
        match points.iter().find(|p| &p.value == v) {
            Some(p) if p.passed + p.failed > 1 => {
                format!(
                    ", {} of {} runs",
                    p.passed.max(p.failed),
                    p.passed + p.failed
                )
            }
            _ => String::new(),
        }
    };
    let mut text = match (last, first) {
        (Some(l), None) => format!(
            "{fixed}holds {holds} up to {} {unit}, the top of the searched range: no failure found",
            value_text(l)
        ),
        (None, Some(f)) => format!(
            "{fixed}does not hold {holds} even at {} {unit}, the bottom of the searched range ({})",
            value_text(f),
            what_failed(&fail_cells)
        ),
        (Some(l), Some(f)) => format!(
            "{fixed}holds {holds} up to {} {unit}{}; fails from {} {unit} ({}{})",
            value_text(l),
            if runs_of(Some(l)).is_empty() {
                String::new()
            } else {
                format!(" ({})", runs_of(Some(l)).trim_start_matches(", "))
            },
            value_text(f),
            what_failed(&fail_cells),
            runs_of(Some(f))
        ),
        (None, None) => return None,
    };
    let mixed: Vec<String> = points
        .iter()
        .filter(|p| p.passed > 0 && p.failed > 0)
        .map(|p| {
            format!(
                "{} {unit}: {} of {} passed",
                value_text(&p.value),
                p.passed,
                p.passed + p.failed
            )
        })
        .collect();
    if edge_runs > 1 {
        let confirmed = b.edge_confirmed;
        if !mixed.is_empty()
            && let (Some(l), Some(f)) = (last, first)
        {
            text.push_str(&format!(
                "; between them the runs disagreed ({}): the capacity lies between {} and {} {unit}, no finer",
                mixed.join("; "),
                value_text(l),
                value_text(f)
            ));
        } else if confirmed == Some(true) && last.is_some() && first.is_some() {
            text.push_str(&format!("; both edges held on {edge_runs} runs each"));
        }
        if confirmed == Some(false) {
            text.push_str(
                "; the edge's repeat budget ended before its runs agreed: the interval is not confirmed",
            );
        }
    } else if last.is_some() && first.is_some() {
        text.push_str(
            "; one run per point: the edge was not repeated, so its precision is not measured",
        );
    }
    Some(text)
}
