//! The rows of the Faults section: one per fault record of a cell's `result.faults` (the shape
//! `qualify_model::fault::record` defines: an array of records, or one record), read tolerantly —
//! a missing or mistyped part becomes `—`. Each row says what the requests of the window met
//! (fast errors with their latency, timeouts), goodput before / during / after the window,
//! and what the claim expected.

use serde_json::{Map, Value};

use super::json::{arr, f, obj, s};
use crate::text::{self, num};

/// What one cell did to one dependency (or to the service), and how the service behaved.
pub struct FaultRow {
    /// The cell's parameters, in the receipt's axis order.
    pub cell: String,
    pub outcome: String,
    /// `—` for a restart-only record.
    pub dependency: String,
    pub fault: String,
    /// `hangs`, `recovers`, … (`—` when not recorded).
    pub verdict: String,
    /// What the claim accepts (`fails_fast, degrades`), or `—` when it states nothing.
    pub expected: String,
    /// The claim states an expectation and the verdict is outside it.
    pub unexpected: bool,
    /// The window's failed requests: `150 timeouts, 0 fast errors` or `300 fast errors (p99
    /// 205 ms), 0 timeouts`; `—` without phases.
    pub window: String,
    /// Successful answers per second before / during / after the window; `—` when not
    /// recorded.
    pub goodput: String,
    /// `1.2 s`, `not recovered`, or `—` (no recovery to measure).
    pub recovery: String,
    /// Dependency requests per service request, before / during / after the window.
    pub amplification: String,
    /// `10 connections, all busy, requests queued`, or `—`.
    pub pool: String,
    /// `SIGKILL at 5 s: ready after 1.4 s, 37 errors`, or `—`.
    pub restart: String,
    /// `0 of 4812 acknowledged lost`, or `—`.
    pub writes: String,
    /// The verdict's one line.
    pub detail: String,
    /// An acknowledged write was lost, the service did not recover, or it behaved as the
    /// claim does not accept: drawn as a failure.
    pub bad: bool,
}

/// The records of a cell's `result.faults`: an array, or one object; others are skipped.
fn records(v: Option<&Value>) -> Vec<&Map<String, Value>> {
    match v {
        Some(Value::Object(m)) => vec![m],
        Some(Value::Array(items)) => items.iter().filter_map(Value::as_object).collect(),
        _ => Vec::new(),
    }
}

/// Every fault record of every cell, in the receipt's cell order.
pub(super) fn rows(cells: &[Value], order: &[String]) -> Vec<FaultRow> {
    let mut out = Vec::new();
    for c in cells {
        let result = c.get("result");
        let outcome = s(result.and_then(|r| r.get("outcome")));
        let params = text::params(&obj(c.get("params")), order);
        for r in records(result.and_then(|r| r.get("faults"))) {
            out.push(row(r, &params, &outcome));
        }
    }
    out
}

fn dash(text: String) -> String {
    if text.is_empty() { "—".into() } else { text }
}

fn seconds(x: f64) -> String {
    format!("{} s", num(x))
}

fn row(r: &Map<String, Value>, cell: &str, outcome: &str) -> FaultRow {
    let b = r.get("behaviour");
    let get = |k: &str| b.and_then(|b| b.get(k));
    let verdict = s(get("verdict"));
    let recovery = match (f(get("recovery_seconds")), verdict.as_str()) {
        (Some(t), _) => seconds(t),
        (None, "degrades" | "unaffected" | "control" | "") => "—".into(),
        (None, _) if get("recovery_seconds").is_some_and(|v| !v.is_null()) => "—".into(),
        (None, _) => "not recovered".into(),
    };
    let amp = |k: &str| {
        f(get(k).and_then(|a| a.get("requests")))
            .map(|x| format!("{}×", num(x)))
            .unwrap_or_else(|| "—".into())
    };
    let amplification = if [
        "amplification_before",
        "amplification_during",
        "amplification_after",
    ]
    .iter()
    .any(|k| get(k).is_some_and(Value::is_object))
    {
        format!(
            "{} / {} / {}",
            amp("amplification_before"),
            amp("amplification_during"),
            amp("amplification_after")
        )
    } else {
        "—".into()
    };
    let pool = match get("pool").and_then(Value::as_object) {
        Some(p) => {
            let mut parts = vec![format!(
                "{} connections",
                text::value(p.get("connections").unwrap_or(&Value::Null))
            )];
            if p.get("all_busy").and_then(Value::as_bool) == Some(true) {
                parts.push("all busy".into());
            }
            if p.get("requests_queued").and_then(Value::as_bool) == Some(true) {
                parts.push("requests queued".into());
            }
            parts.join(", ")
        }
        None => "—".into(),
    };
    let restart = match r.get("restart").and_then(Value::as_object) {
        Some(x) => {
            let signal = dash(s(x.get("signal")));
            let at = f(x.get("at_seconds"))
                .map(seconds)
                .unwrap_or_else(|| "?".into());
            let ready = match f(x.get("ready_after_seconds")) {
                Some(t) => format!("ready after {}", seconds(t)),
                None => "NOT ready again".into(),
            };
            let errors = f(x.get("errors_during_restart"))
                .map(num)
                .unwrap_or_else(|| "?".into());
            format!("{signal} at {at}: {ready}, {errors} errors")
        }
        None => "—".into(),
    };
    let expected: Vec<String> = arr(get("expected")).iter().map(|v| s(Some(v))).collect();
    let unexpected = get("expected").is_some_and(Value::is_array) && !expected.contains(&verdict);
    let phase = |name: &str| r.get("phases").and_then(|p| p.get(name));
    let window = match phase("during").filter(|d| d.is_object()) {
        Some(d) => {
            let n = |k: &str| f(d.get(k));
            let timeouts = n("timeouts").map(num).unwrap_or_else(|| "?".into());
            // Records from before fast errors were counted: every error but the timeouts.
            let fast = n("fast_errors")
                .or_else(|| Some((n("errors")? - n("timeouts").unwrap_or(0.0)).max(0.0)));
            match fast {
                Some(fast) => {
                    let p99 = f(d.get("fast_error_p99"))
                        .map(|p| format!(" (p99 {})", super::duration(p)))
                        .unwrap_or_default();
                    format!("{} fast errors{p99}, {timeouts} timeouts", num(fast))
                }
                None => "—".into(),
            }
        }
        None => "—".into(),
    };
    let goodput_of = |name: &str| {
        let p = phase(name)?;
        let seconds = f(p.get("seconds")).filter(|x| *x > 0.0)?;
        Some(f(p.get("succeeded"))? / seconds)
    };
    let goodputs = [
        goodput_of("before"),
        goodput_of("during"),
        goodput_of("after"),
    ];
    let goodput = if goodputs.iter().any(Option::is_some) {
        goodputs
            .iter()
            .map(|g| g.map_or_else(|| "—".to_string(), |x| format!("{}/s", num(x))))
            .collect::<Vec<_>>()
            .join(" / ")
    } else {
        "—".into()
    };
    let (writes, lost) = match r.get("writes").and_then(Value::as_object) {
        Some(w) => {
            let n = |k: &str| f(w.get(k));
            let mut text = format!(
                "{} of {} acknowledged lost",
                n("lost").map(num).unwrap_or_else(|| "?".into()),
                n("acknowledged").map(num).unwrap_or_else(|| "?".into())
            );
            let first: Vec<String> = arr(w.get("first_lost"))
                .iter()
                .map(crate::text::value)
                .collect();
            if !first.is_empty() {
                text.push_str(&format!(" (first: {})", first.join(", ")));
            }
            if let Some(u) = n("unexpected").filter(|u| *u > 0.0) {
                text.push_str(&format!(", {} unexpected", num(u)));
            }
            if let Some(u) = n("unread").filter(|u| *u > 0.0) {
                text.push_str(&format!(", {} not read back", num(u)));
            }
            (text, n("lost").is_some_and(|l| l > 0.0))
        }
        None => ("—".into(), false),
    };
    FaultRow {
        cell: dash(cell.to_string()),
        outcome: dash(outcome.to_string()),
        dependency: dash(s(r.get("dependency"))),
        fault: dash(s(r.get("fault"))),
        bad: lost
            || unexpected
            || (recovery == "not recovered" && verdict != "control")
            || matches!(
                outcome,
                "lost_writes" | "not_recovered" | "unexpected_behaviour"
            ),
        verdict: dash(verdict),
        expected: dash(expected.join(", ")),
        unexpected,
        window,
        goodput,
        recovery,
        amplification,
        pool,
        restart,
        writes,
        detail: s(get("detail")),
    }
}
