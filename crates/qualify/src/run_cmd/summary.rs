//! Stage 8: what people see at the end of `qualify run` (the terminal summary; `qualify report`
//! renders receipts as files): the layer table, a failure map over two axes (one symbol per
//! outcome, coloured on a terminal, from the one outcome table in `qualify-model`), a service
//! run's per-cell table (`qualify_render::terminal`, the rows every report draws), the
//! service cells' behaviour under faults (each beside what the claim expected, with every
//! objective and the phase it was judged over), the `[perturb]` campaigns, the boundaries, the gap, the verdict, and a
//! few lines of performance. With `--json` the receipt itself is printed instead.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;
use std::io::IsTerminal;
use std::path::Path;

use qualify_evidence as ev;
use qualify_model::Value as ParamValue;
use qualify_probe::Outcome;
use serde_json::Value;

use qualify_run::seal::Sealed;

/// Print the receipt (`--json`) or the summary and the performance lines.
pub fn print(json: bool, sealed: &Sealed) {
    if json {
        crate::print_stdout(&sealed.text);
        return;
    }
    crate::print_stdout(&summary(
        &sealed.statement,
        &sealed.record,
        &sealed.verdict,
        &sealed.path,
    ));
    if let Some(p) = &sealed.performance {
        crate::print_stdout(&super::perf_summary::summary(p));
    }
}

pub fn summary(
    statement: &ev::Statement,
    record: &ev::RunRecord,
    verdict: &ev::GateVerdict,
    receipt: &Path,
) -> String {
    let color = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let paint = |code: &str, text: &str| {
        if color {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    };
    let mut s = String::new();
    let p = &statement.predicate;
    let _ = writeln!(
        s,
        "\nqualify: {} — claim {}",
        record.artifact.name, record.claim
    );
    if p.incomplete {
        let _ = writeln!(
            s,
            "{}",
            paint(
                "33;1",
                "INCOMPLETE: interrupted; nothing unfinished is closed"
            )
        );
    }
    let _ = writeln!(s, "\nlayers:");
    for name in ev::LayerName::ALL {
        let layer = p.layers.get(name);
        let status = layer.status.as_str();
        let code = match status {
            "closed" => "32",
            "failed" => "31;1",
            "partial" => "33",
            _ => "90",
        };
        let _ = writeln!(
            s,
            "  {:<16} {}  {}",
            name.as_str(),
            paint(code, &format!("{status:<8}")),
            layer.summary
        );
    }
    failure_map(&mut s, record, &paint);
    // The per-cell figures of a service run, from the row model every report draws.
    let json = serde_json::to_value(statement).unwrap_or(Value::Null);
    let view = qualify_render::view::View::new(&json);
    if let Some(table) = qualify_render::terminal::service_table(&view) {
        let _ = write!(s, "\nservice cells (sorted by the axes):\n{table}");
    }
    under_faults(&mut s, record, &paint);
    under_perturbation(&mut s, record, &paint);
    load_shapes(&mut s, record, &paint);
    split_loads(&mut s, record, &paint);
    let capacity: Vec<&str> = p
        .boundaries
        .iter()
        .filter_map(|b| b.get("capacity").and_then(Value::as_str))
        .collect();
    if !capacity.is_empty() {
        let _ = writeln!(s, "\ncapacity:");
        for c in capacity {
            let _ = writeln!(s, "  {}", paint("1", c));
        }
    }
    if let Some(table) = qualify_render::terminal::frontier_table(&view) {
        let _ = write!(s, "\ncapacity frontier:\n{table}");
    }
    if !p.boundaries.is_empty() {
        let _ = writeln!(s, "\nboundaries:");
        for b in &p.boundaries {
            let _ = writeln!(s, "  {}", boundary_line(b));
        }
    }
    if !p.gap.is_empty() {
        let _ = writeln!(s, "\ntarget gap:");
        for g in &p.gap {
            let line = serde_json::to_value(g)
                .ok()
                .and_then(|v| v.get("detail").and_then(Value::as_str).map(str::to_string))
                .unwrap_or_default();
            let _ = writeln!(s, "  - {line}");
        }
    }
    let _ = writeln!(s);
    if verdict.supported {
        let _ = writeln!(
            s,
            "{}",
            paint(
                "32;1",
                &format!("verdict: {} claim SUPPORTED", record.claim)
            )
        );
    } else {
        let _ = writeln!(
            s,
            "{}",
            paint(
                "31;1",
                &format!("verdict: {} claim NOT SUPPORTED", record.claim)
            )
        );
        for r in &verdict.reasons {
            let _ = writeln!(s, "  - {r}");
        }
    }
    for w in &verdict.waivers {
        let _ = writeln!(s, "  waived: {w}");
    }
    let _ = writeln!(s, "receipt: {}", receipt.display());
    s
}

/// Per cell with a `[perturb]` campaign: its runs and outcomes, then each way it failed with
/// its seed, reproduction and bare rates, the points it was minimised to and the replay command.
fn under_perturbation(
    s: &mut String,
    record: &ev::RunRecord,
    paint: &dyn Fn(&str, &str) -> String,
) {
    let cells: Vec<(&ev::Cell, &qualify_model::PerturbReport)> = record
        .cells
        .iter()
        .filter_map(|c| c.result.perturb.as_ref().map(|p| (c, p)))
        .collect();
    if cells.is_empty() {
        return;
    }
    let _ = writeln!(s, "\nunder perturbation:");
    for (c, p) in cells {
        let mark = if p.failed() {
            paint("31;1", "✗")
        } else {
            paint("32", "✓")
        };
        let _ = writeln!(s, "  {mark} {}", c.label());
        for line in qualify_run::perturb::summary(p).lines() {
            let _ = writeln!(s, "  {line}");
        }
    }
}

/// Cells with faults shown one by one; beyond this many, only those that did not end ok.
const MAX_FAULT_CELLS: usize = 12;

/// Per cell with a fault, a restart or the control: the behaviour (and what the claim expected
/// of it), then its objectives, each with the phase it was judged over.
fn under_faults(s: &mut String, record: &ev::RunRecord, paint: &dyn Fn(&str, &str) -> String) {
    let all: Vec<&ev::Cell> = record
        .cells
        .iter()
        .filter(|c| !c.result.faults.is_empty())
        .collect();
    if all.is_empty() {
        return;
    }
    // A large sweep: the cells that did not end ok, the others counted.
    let cells: Vec<&ev::Cell> = if all.len() > MAX_FAULT_CELLS {
        all.iter()
            .copied()
            .filter(|c| c.result.outcome != Outcome::Ok)
            .collect()
    } else {
        all.clone()
    };
    let _ = writeln!(s, "\nunder faults:");
    if cells.len() < all.len() {
        let _ = writeln!(
            s,
            "  ({} cells ended ok under their faults; the receipt and `qualify report` show them)",
            all.len() - cells.len()
        );
    }
    for c in cells {
        let style = c.result.outcome.style();
        let _ = writeln!(
            s,
            "  {} {}: {}",
            paint(style.ansi, &style.term_symbol.to_string()),
            c.label(),
            c.result.outcome
        );
        for r in &c.result.faults {
            let b = &r.behaviour;
            let expected = match &b.expected {
                None => String::new(),
                Some(e) if b.unexpected() => paint(
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
                    paint("32", "held")
                } else {
                    paint("31;1", "violated")
                };
                let _ = writeln!(s, "      objective {}: {held}", slo.describe_with_phase());
            }
        }
    }
}

/// Per service cell with a staged or Poisson load: its stages and arrivals, and for a ramp the
/// offered rate at which its objectives first failed (or that every second held them).
fn load_shapes(s: &mut String, record: &ev::RunRecord, paint: &dyn Fn(&str, &str) -> String) {
    let cells: Vec<(&ev::Cell, &qualify_model::load::LoadShape)> = record
        .cells
        .iter()
        .filter_map(|c| Some((c, c.result.load.as_ref()?.report.as_ref()?.shape.as_ref()?)))
        .collect();
    if cells.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "
load shapes:"
    );
    for (c, shape) in cells.iter().take(MAX_FAULT_CELLS) {
        let _ = writeln!(s, "  {}: {}", c.label(), shape.describe());
        if let Some(line) = shape.first_failed_text() {
            let code = if shape.first_failed_at_rate.is_some() {
                "31;1"
            } else {
                "32"
            };
            let _ = writeln!(s, "    {}", paint(code, &line));
        }
    }
}

/// Per service cell whose load was split over generator processes: one line per generator
/// (its share offered, sent, answered per second, schedule lag, CPU), a saturated one named
/// with why.
fn split_loads(s: &mut String, record: &ev::RunRecord, paint: &dyn Fn(&str, &str) -> String) {
    let cells: Vec<(&ev::Cell, &qualify_model::load::LoadReport)> = record
        .cells
        .iter()
        .filter_map(|c| {
            let report = c.result.load.as_ref()?.report.as_ref()?;
            (!report.generators.is_empty()).then_some((c, report))
        })
        .collect();
    if cells.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "
load generators (one merged verdict per cell):"
    );
    for (c, report) in cells.iter().take(MAX_FAULT_CELLS) {
        let _ = writeln!(
            s,
            "  {}: {} generators, {} sent, {:.1} answered/s",
            c.label(),
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
                    paint("33;1", &format!("saturated: {why}"))
                );
            }
        }
    }
}

/// A cell's parameter value as the map shows it (as JSON writes numbers: `2.0` stays `2.0`).
fn param_text(v: &ParamValue) -> String {
    match v {
        ParamValue::Text(s) => s.clone(),
        other => serde_json::to_string(other).unwrap_or_default(),
    }
}

fn text_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "—".into(),
        other => other.to_string(),
    }
}

fn boundary_line(b: &Value) -> String {
    let axis = b.get("axis").map(text_of).unwrap_or_default();
    let fixed = b
        .get("fixed")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| format!("{k}={}", text_of(v)))
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default();
    let last = b.get("last_pass").map(text_of).unwrap_or_default();
    let first = b.get("first_fail").map(text_of).unwrap_or_default();
    let outcome = b.get("outcome").map(text_of).unwrap_or_default();
    let probes = b.get("probes").and_then(Value::as_u64).unwrap_or(0);
    let mono = match b.get("monotonic").and_then(Value::as_bool) {
        Some(true) => "monotonicity check agreed".to_string(),
        Some(false) => {
            let at = b
                .get("monotonic_check")
                .and_then(|c| c.get("value"))
                .map(text_of)
                .unwrap_or_default();
            format!("NOT monotonic: the check at {axis}={at} contradicts the boundary")
        }
        None => "monotonicity not checked".into(),
    };
    let fixed = if fixed.is_empty() {
        String::new()
    } else {
        format!(" [{fixed}]")
    };
    let headroom = match (
        b.get("headroom").and_then(Value::as_f64),
        b.get("headroom_at_least").and_then(Value::as_f64),
    ) {
        (Some(h), _) if h <= 1.0 => format!("; INSIDE the claimed region ({h:.2}× the target)"),
        (Some(h), _) => format!("; headroom {h:.2}× the target"),
        (None, Some(h)) => format!("; headroom ≥ {h:.2}× the target"),
        _ => String::new(),
    };
    if b.get("first_fail").is_none_or(Value::is_null) {
        format!(
            "{axis}{fixed}: passed up to {last}, no failure found ({probes} probes; {mono}){headroom}"
        )
    } else {
        format!(
            "{axis}{fixed}: last pass {last}, first fail {first} ({outcome}) after {probes} probes; {mono}{headroom}"
        )
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
fn failure_map(s: &mut String, record: &ev::RunRecord, paint: &dyn Fn(&str, &str) -> String) {
    if record.cells.is_empty() {
        return;
    }
    let mut values: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for c in &record.cells {
        for (k, v) in c.params.iter() {
            values
                .entry(k.to_string())
                .or_default()
                .insert(param_text(v));
        }
    }
    // A multi-node sweep is drawn nodes × ranks: the topology axis named `nodes` and the next
    // topology axis first, then the rest in the spec's order.
    let topology = |a: &&ev::AxisDecl| a.kind == ev::AxisKind::Topology;
    let mut ordered: Vec<&ev::AxisDecl> = Vec::new();
    if let (Some(n), Some(r)) = (
        record
            .axes
            .iter()
            .filter(topology)
            .find(|a| a.name == "nodes"),
        record
            .axes
            .iter()
            .filter(topology)
            .find(|a| a.name != "nodes"),
    ) {
        ordered.extend([n, r]);
    }
    for a in &record.axes {
        if !ordered.iter().any(|o| o.name == a.name) {
            ordered.push(a);
        }
    }
    let axes: Vec<&str> = ordered
        .iter()
        .map(|a| a.name.as_str())
        .filter(|n| values.get(*n).is_some_and(|v| v.len() > 1))
        .take(2)
        .collect();
    if axes.is_empty() {
        return;
    }
    let (row_axis, col_axis) = match axes.as_slice() {
        [r, c] => (*r, Some(*c)),
        [r] => (*r, None),
        _ => return,
    };
    let rows = sort_values(&values[row_axis]);
    let cols = col_axis
        .map(|c| sort_values(&values[c]))
        .unwrap_or_else(|| vec![String::new()]);
    let mut grid: BTreeMap<(String, String), Outcome> = BTreeMap::new();
    for c in &record.cells {
        let Some(r) = c.params.get(row_axis).map(param_text) else {
            continue;
        };
        let col = col_axis
            .and_then(|a| c.params.get(a).map(param_text))
            .unwrap_or_default();
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
                    line.push_str(&paint(style.ansi, &cell));
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
    if let Some(dev) = ev::layers::process::development(record) {
        let ran: Vec<String> = dev
            .axes
            .iter()
            .map(|a| {
                let values: Vec<String> = a.development.iter().map(ToString::to_string).collect();
                format!(
                    "{} {}",
                    a.axis,
                    if values.is_empty() {
                        "?".to_string()
                    } else {
                        values.join(",")
                    }
                )
            })
            .collect();
        let _ = writeln!(s, "  development ran: {}", ran.join("  "));
    }
}
