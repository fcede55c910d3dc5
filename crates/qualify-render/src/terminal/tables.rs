//! The plain-text tables of the terminal summary (no colour, aligned columns):
//! the service cells under load, one row per cell sorted by the axes (the same rows, in the
//! same order, as the Markdown and HTML reports draw), so the per-cell figures are where the
//! user looks first; and the capacity frontier, one row per combination of the other axes.

use std::fmt::Write;

use crate::text::num;
use crate::view::{self, View};

/// Rows shown before the table says how many more the report has.
const MAX_ROWS: usize = 40;

/// The service cells as a table — cell, offered, answered, goodput, p50, p99, errors by class,
/// outcome — or `None` without service cells. Latencies are the corrected ones of every request
/// that ended; a line under the table says how many timed out and were counted at their
/// timeout.
pub fn service_table(v: &View) -> Option<String> {
    let rows = v.services();
    if rows.is_empty() {
        return None;
    }
    let header = [
        "cell", "offered", "answered", "goodput", "p50", "p99", "errors", "outcome",
    ];
    let latency = |x: Option<f64>| x.map_or_else(|| "—".to_string(), view::duration);
    let table: Vec<[String; 8]> = rows
        .iter()
        .take(MAX_ROWS)
        .map(|r| {
            [
                r.name().to_string(),
                r.offered_text(),
                r.achieved_text(),
                r.goodput_text(),
                latency(r.corrected.p50),
                latency(r.corrected.p99),
                r.errors_text(),
                r.outcome.clone(),
            ]
        })
        .collect();
    let mut widths = header.map(|h| h.chars().count());
    for row in &table {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: &[String]| {
        let mut l = String::from("  ");
        for (i, (cell, w)) in cells.iter().zip(widths).enumerate() {
            let pad = w.saturating_sub(cell.chars().count());
            // Text left, figures right.
            if matches!(i, 0 | 6 | 7) {
                l.push_str(cell);
                l.push_str(&" ".repeat(pad));
            } else {
                l.push_str(&" ".repeat(pad));
                l.push_str(cell);
            }
            l.push_str("  ");
        }
        l.trim_end().to_string()
    };
    let mut s = String::new();
    let _ = writeln!(s, "{}", line(&header.map(str::to_string)));
    for row in &table {
        let _ = writeln!(s, "{}", line(row));
    }
    if rows.len() > MAX_ROWS {
        let _ = writeln!(
            s,
            "  … and {} more cells (`qualify report` shows every one)",
            rows.len() - MAX_ROWS
        );
    }
    let censored: f64 = rows.iter().filter_map(|r| r.censored).sum();
    if censored > 0.0 {
        let _ = writeln!(
            s,
            "  latencies count every request that ended: {} timed out and count at their timeout (a lower bound)",
            num(censored)
        );
    }
    Some(s)
}

/// The capacity frontier as a table — the conditions (one column per other axis), the rate
/// every objective held up to, the rate it failed from, what happened there — under the
/// sentence that says it all; `None` without a frontier.
pub fn frontier_table(v: &View) -> Option<String> {
    let f = v.frontier()?;
    let unit = f.unit.as_str();
    let mut header: Vec<String> = f.over.clone();
    header.extend(["holds up to", "fails from", "beyond", "probes"].map(str::to_string));
    let table: Vec<Vec<String>> = f
        .rows
        .iter()
        .map(|r| {
            let mut row = r.conditions.clone();
            row.extend([
                r.holds_text(unit),
                r.fails_text(unit),
                r.beyond_text(),
                r.probes.to_string(),
            ]);
            row
        })
        .collect();
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in &table {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let figures = f.over.len();
    let line = |cells: &[String]| {
        let mut l = String::from("  ");
        for (i, (cell, w)) in cells.iter().zip(&widths).enumerate() {
            let pad = w.saturating_sub(cell.chars().count());
            // Conditions and the outcome left, figures right.
            if i < figures || i == figures + 2 {
                l.push_str(cell);
                l.push_str(&" ".repeat(pad));
            } else {
                l.push_str(&" ".repeat(pad));
                l.push_str(cell);
            }
            l.push_str("  ");
        }
        l.trim_end().to_string()
    };
    let mut s = String::new();
    let _ = writeln!(s, "  {}", f.sentence);
    let _ = writeln!(s, "{}", line(&header));
    for row in &table {
        let _ = writeln!(s, "{}", line(row));
    }
    let _ = writeln!(
        s,
        "  {} probes over {} searches along `{}`, each near its own edge (not the full grid)",
        f.probes,
        f.rows.len(),
        f.axis
    );
    Some(s)
}
