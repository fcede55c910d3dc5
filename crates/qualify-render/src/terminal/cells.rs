//! The per-cell sections of the terminal summary, from the cells' typed results
//! ([`View::results`]): the failure map over two axes, the behaviour under faults, the
//! `[perturb]` campaigns, the load shapes and the split loads.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

use qualify_model::Outcome;
use qualify_model::load::{LoadReport, LoadShape};

use super::Paint;
use crate::view::{ResultCell, View};

/// Cells shown one by one; beyond this many, only those that did not end ok.
const MAX_FAULT_CELLS: usize = 12;

/// Per cell with a `[perturb]` campaign: its runs and outcomes, then each way it failed with
/// its seed, reproduction and bare rates, the points it was minimised to and the replay command.
pub(super) fn under_perturbation(s: &mut String, cells: &[ResultCell], paint: &Paint) {
    let cells: Vec<(&ResultCell, &qualify_model::PerturbReport)> = cells
        .iter()
        .filter_map(|c| c.result.perturb.as_ref().map(|p| (c, p)))
        .collect();
    if cells.is_empty() {
        return;
    }
    let _ = writeln!(s, "\nunder perturbation:");
    for (c, p) in cells {
        let mark = if p.failed() {
            paint.paint("31;1", "✗")
        } else {
            paint.paint("32", "✓")
        };
        let _ = writeln!(s, "  {mark} {}", c.label);
        for line in super::campaign(p).lines() {
            let _ = writeln!(s, "  {line}");
        }
    }
}

/// Per cell with a fault, a restart or the control: the behaviour (and what the claim expected
/// of it), then its objectives, each with the phase it was judged over.
pub(super) fn under_faults(s: &mut String, cells: &[ResultCell], paint: &Paint) {
    let all: Vec<&ResultCell> = cells
        .iter()
        .filter(|c| !c.result.faults.is_empty())
        .collect();
    if all.is_empty() {
        return;
    }
    // A large sweep: the cells that did not end ok, the others counted.
    let shown: Vec<&ResultCell> = if all.len() > MAX_FAULT_CELLS {
        all.iter()
            .copied()
            .filter(|c| c.result.outcome != Outcome::Ok)
            .collect()
    } else {
        all.clone()
    };
    let _ = writeln!(s, "\nunder faults:");
    if shown.len() < all.len() {
        let _ = writeln!(
            s,
            "  ({} cells ended ok under their faults; the receipt and `qualify report` show them)",
            all.len() - shown.len()
        );
    }
    for c in shown {
        let style = c.result.outcome.style();
        let _ = writeln!(
            s,
            "  {} {}: {}",
            paint.paint(style.ansi, &style.term_symbol.to_string()),
            c.label,
            c.result.outcome
        );
        for r in &c.result.faults {
            let b = &r.behaviour;
            let expected = match &b.expected {
                None => String::new(),
                Some(e) if b.unexpected() => paint.paint(
                    "31;1",
                    &format!(" — NOT what the claim expects ({})", e.join(", ")),
                ),
                Some(_) => " — as the claim expects".to_string(),
            };
            let _ = writeln!(
                s,
                "      {}: {}{expected}\n        {}",
                r.subject(),
                b.verdict,
                b.detail
            );
        }
        if let Some(load) = &c.result.load {
            for slo in &load.slo {
                let held = if slo.held {
                    paint.paint("32", "held")
                } else {
                    paint.paint("31;1", "violated")
                };
                let _ = writeln!(s, "      objective {}: {held}", slo.describe_with_phase());
            }
        }
    }
}

/// Per service cell with a staged or Poisson load: its stages and arrivals, and for a ramp the
/// offered rate at which its objectives first failed (or that every second held them).
pub(super) fn load_shapes(s: &mut String, cells: &[ResultCell], paint: &Paint) {
    let cells: Vec<(&ResultCell, &LoadShape)> = cells
        .iter()
        .filter_map(|c| Some((c, c.result.load.as_ref()?.report.as_ref()?.shape.as_ref()?)))
        .collect();
    if cells.is_empty() {
        return;
    }
    let _ = writeln!(s, "\nload shapes:");
    for (c, shape) in cells.iter().take(MAX_FAULT_CELLS) {
        let _ = writeln!(s, "  {}: {}", c.label, shape.describe());
        if let Some(line) = shape.first_failed_text() {
            let code = if shape.first_failed_at_rate.is_some() {
                "31;1"
            } else {
                "32"
            };
            let _ = writeln!(s, "    {}", paint.paint(code, &line));
        }
    }
}

/// Per service cell whose load was split over generator processes: one line per generator
/// (its share offered, sent, answered per second, schedule lag, CPU), a saturated one named
/// with why.
pub(super) fn split_loads(s: &mut String, cells: &[ResultCell], paint: &Paint) {
    let cells: Vec<(&ResultCell, &LoadReport)> = cells
        .iter()
        .filter_map(|c| {
            let report = c.result.load.as_ref()?.report.as_ref()?;
            (!report.generators.is_empty()).then_some((c, report))
        })
        .collect();
    if cells.is_empty() {
        return;
    }
    let _ = writeln!(s, "\nload generators (one merged verdict per cell):");
    for (c, report) in cells.iter().take(MAX_FAULT_CELLS) {
        let _ = writeln!(
            s,
            "  {}: {} generators, {} sent, {:.1} answered/s",
            c.label,
            report.generators.len(),
            report.sent,
            report.achieved_rate
        );
        let _ = writeln!(
            s,
            "    {:>3}  {:>10}  {:>8}  {:>11}  {:>9}  {:>6}",
            "#", "offered/s", "sent", "answered/s", "lag p99", "CPU s"
        );
        for g in &report.generators {
            let lag = g
                .schedule_lag
                .p99
                .map_or_else(|| "—".to_string(), |x| format!("{:.1} ms", x * 1e3));
            let offered = g
                .offered_rate
                .map_or_else(|| "—".to_string(), |x| format!("{x:.1}"));
            let _ = writeln!(
                s,
                "    {:>3}  {offered:>10}  {:>8}  {:>11.1}  {lag:>9}  {:>6.2}",
                g.index, g.sent, g.achieved_rate, g.cpu_seconds
            );
            if g.saturated {
                let why = g.detail.as_deref().unwrap_or("saturated");
                let _ = writeln!(
                    s,
                    "         {}",
                    paint.paint("33;1", &format!("saturated: {why}"))
                );
            }
        }
    }
}

fn sort_values(vals: &BTreeSet<String>) -> Vec<String> {
    let mut v: Vec<String> = vals.iter().cloned().collect();
    v.sort_by(|a, b| match (a.parse::<f64>(), b.parse::<f64>()) {
        (Ok(x), Ok(y)) => x.total_cmp(&y),
        _ => a.cmp(b),
    });
    v
}

/// A compact grid over the first two axes with more than one examined value.
pub(super) fn failure_map(s: &mut String, v: &View, cells: &[ResultCell], paint: &Paint) {
    if cells.is_empty() {
        return;
    }
    let mut values: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    for c in cells {
        for (k, v) in &c.params {
            values.entry(k.as_str()).or_default().insert(v.clone());
        }
    }
    // A multi-node sweep is drawn nodes × ranks: the topology axis named `nodes` and the next
    // topology axis first, then the rest in the spec's order.
    let declared = v.axes();
    let topology = |a: &&(String, String)| a.1 == "topology";
    let mut ordered: Vec<&str> = Vec::new();
    if let (Some(n), Some(r)) = (
        declared.iter().filter(topology).find(|a| a.0 == "nodes"),
        declared.iter().filter(topology).find(|a| a.0 != "nodes"),
    ) {
        ordered.extend([n.0.as_str(), r.0.as_str()]);
    }
    for (name, _) in &declared {
        if !ordered.contains(&name.as_str()) {
            ordered.push(name);
        }
    }
    let axes: Vec<&str> = ordered
        .into_iter()
        .filter(|n| values.get(n).is_some_and(|v| v.len() > 1))
        .take(2)
        .collect();
    let (row_axis, col_axis) = match axes.as_slice() {
        [r, c] => (*r, Some(*c)),
        [r] => (*r, None),
        _ => return,
    };
    let rows = sort_values(&values[row_axis]);
    let cols = col_axis
        .map(|c| sort_values(&values[c]))
        .unwrap_or_else(|| vec![String::new()]);
    let param = |c: &ResultCell, axis: &str| {
        c.params
            .iter()
            .find(|(k, _)| k == axis)
            .map(|(_, v)| v.clone())
    };
    let mut grid: BTreeMap<(String, String), Outcome> = BTreeMap::new();
    for c in cells {
        let Some(r) = param(c, row_axis) else {
            continue;
        };
        let col = col_axis.and_then(|a| param(c, a)).unwrap_or_default();
        // A cell that failed only under perturbation is drawn as that failure.
        let o = match &c.result.perturb {
            Some(p) if c.result.outcome == Outcome::Ok => {
                p.failures.first().map_or(Outcome::Ok, |f| f.outcome)
            }
            _ => c.result.outcome,
        };
        grid.entry((r, col))
            .and_modify(|e| {
                if o.severity() > e.severity() {
                    *e = o;
                }
            })
            .or_insert(o);
    }
    let width = cols.iter().map(String::len).max().unwrap_or(1).max(1);
    let label = rows
        .iter()
        .map(String::len)
        .max()
        .unwrap_or(1)
        .max(row_axis.len());
    let _ = writeln!(
        s,
        "\nfailure map ({row_axis} ↓{}):",
        col_axis.map(|c| format!(", {c} →")).unwrap_or_default()
    );
    if col_axis.is_some() {
        let header: Vec<String> = cols.iter().map(|c| format!("{c:>width$}")).collect();
        let _ = writeln!(s, "  {:>label$}  {}", "", header.join(" "));
    }
    let mut seen = BTreeSet::new();
    for r in &rows {
        let mut line = format!("  {r:>label$}  ");
        for c in &cols {
            match grid.get(&(r.clone(), c.clone())) {
                Some(o) => {
                    let style = o.style();
                    seen.insert(o.as_str());
                    let cell = format!("{:>width$}", style.term_symbol);
                    line.push_str(&paint.paint(style.ansi, &cell));
                }
                None => line.push_str(&format!("{:>width$}", "·")),
            }
            line.push(' ');
        }
        let _ = writeln!(s, "{}", line.trim_end());
    }
    let legend: Vec<String> = Outcome::ALL
        .iter()
        .filter(|o| seen.contains(o.as_str()))
        .map(|o| format!("{} {}", o.style().term_symbol, o.as_str()))
        .collect();
    let _ = writeln!(s, "  legend: {}  · not examined", legend.join("  "));
    if let Some(dev) = v.development() {
        let ran: Vec<String> = dev
            .axes
            .iter()
            .map(|a| {
                format!(
                    "{} {}",
                    a.axis,
                    if a.ran.is_empty() {
                        "?".to_string()
                    } else {
                        a.ran.join(",")
                    }
                )
            })
            .collect();
        let _ = writeln!(s, "  development ran: {}", ran.join("  "));
    }
}
