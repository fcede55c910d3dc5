//! What people see at the end of `qualify run`, drawn from the same [`View`] as the HTML and
//! Markdown reports: the layer table, a failure map over two axes (one symbol per outcome,
//! coloured on a terminal, from the one outcome table in `qualify-model`), a service run's
//! per-cell table, the service cells' behaviour under faults (each beside what the claim
//! expected, with every objective and the phase it was judged over), the `[perturb]` campaigns,
//! load shapes and split loads, the capacity and its frontier, the boundaries, the gap, the
//! verdict, and a few lines of performance.
//!
//! [`waivers`] are the lines `qualify gate` adds under its verdict, [`probe`] `qualify probe`'s
//! summary of one result.
//!
//! `cells` draws the per-cell sections, `performance` the performance lines, `perturb` one
//! campaign (also `qualify probe --perturb`'s), `probe` one probe's result, `tables` the aligned tables (service cells,
//! frontier).

mod cells;
mod performance;
mod perturb;
mod probe;
mod tables;

use std::fmt::Write;

pub use performance::performance;
pub use perturb::campaign;
pub use probe::probe;
pub use tables::{frontier_table, service_table};

use crate::view::View;

/// ANSI colours, or none (not a terminal, or `NO_COLOR`).
pub(crate) struct Paint {
    color: bool,
}

impl Paint {
    pub(crate) fn paint(&self, code: &str, text: &str) -> String {
        if self.color {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }
}

/// The summary and, with `[performance]`, its lines: everything `qualify run` prints on stdout
/// after a run (`receipt` is the path it was written to; `color`: paint with ANSI codes).
pub fn run_summary(v: &View, receipt: &str, color: bool) -> String {
    let mut s = summary(v, receipt, color);
    if let Some(p) = performance(v) {
        s.push_str(&p);
    }
    s
}

/// The summary: the claim, layers, cells, capacity, boundaries, gap and the verdict.
pub fn summary(v: &View, receipt: &str, color: bool) -> String {
    let paint = Paint { color };
    let mut s = String::new();
    let claim = v.claim_level();
    let _ = writeln!(s, "\nqualify: {} — claim {claim}", v.artifact());
    if v.incomplete() {
        let _ = writeln!(
            s,
            "{}",
            paint.paint(
                "33;1",
                "INCOMPLETE: interrupted; nothing unfinished is closed"
            )
        );
    }
    let _ = writeln!(s, "\nlayers:");
    for layer in v.layers() {
        let code = match layer.status.as_str() {
            "closed" => "32",
            "failed" => "31;1",
            "partial" => "33",
            _ => "90",
        };
        let _ = writeln!(
            s,
            "  {:<16} {}  {}",
            layer.name,
            paint.paint(code, &format!("{:<8}", layer.status)),
            layer.summary
        );
    }
    let results = v.results();
    cells::failure_map(&mut s, v, &results, &paint);
    if let Some(table) = service_table(v) {
        let _ = write!(s, "\nservice cells (sorted by the axes):\n{table}");
    }
    cells::under_faults(&mut s, &results, &paint);
    cells::under_perturbation(&mut s, &results, &paint);
    cells::load_shapes(&mut s, &results, &paint);
    cells::split_loads(&mut s, &results, &paint);
    let boundaries = v.boundaries();
    let capacity: Vec<&str> = boundaries
        .iter()
        .filter_map(|b| b.capacity.as_deref())
        .collect();
    if !capacity.is_empty() {
        let _ = writeln!(s, "\ncapacity:");
        for c in capacity {
            let _ = writeln!(s, "  {}", paint.paint("1", c));
        }
    }
    if let Some(table) = frontier_table(v) {
        let _ = write!(s, "\ncapacity frontier:\n{table}");
    }
    if !boundaries.is_empty() {
        let _ = writeln!(s, "\nboundaries:");
        for b in &boundaries {
            let _ = writeln!(s, "  {}", boundary_line(b));
        }
    }
    let gaps = v.gaps();
    if !gaps.is_empty() {
        let _ = writeln!(s, "\ntarget gap:");
        for g in &gaps {
            let _ = writeln!(s, "  - {}", g.detail);
        }
    }
    let _ = writeln!(s);
    if v.supported() == Some(true) {
        let _ = writeln!(
            s,
            "{}",
            paint.paint("32;1", &format!("verdict: {claim} claim SUPPORTED"))
        );
    } else {
        let _ = writeln!(
            s,
            "{}",
            paint.paint("31;1", &format!("verdict: {claim} claim NOT SUPPORTED"))
        );
        for r in v.reasons() {
            let _ = writeln!(s, "  - {r}");
        }
    }
    for w in v.claim_waivers() {
        let _ = writeln!(s, "  waived: {w}");
    }
    let _ = writeln!(s, "receipt: {receipt}");
    s
}

/// The receipt's waivers as `qualify gate` lists them under its verdict: each with the gap
/// it names, its reason, and whether it was applied (with why not, when the receipt says).
pub fn waivers(v: &View) -> String {
    let mut s = String::new();
    for w in v.waivers() {
        let (gap, reason) = (&w.gap, &w.reason);
        let _ = match (w.applied, &w.note) {
            (true, _) => writeln!(s, "  waiver {gap}: {reason} (applied)"),
            (false, Some(n)) => writeln!(s, "  waiver {gap}: {reason} (NOT applied: {n})"),
            (false, None) => writeln!(s, "  waiver {gap}: {reason} (NOT applied)"),
        };
    }
    s
}

/// `n [threads=2]: last pass 512, first fail 1024 (oom_killed) after 6 probes; …`, values as
/// JSON writes them.
fn boundary_line(b: &crate::view::BoundaryRow) -> String {
    let x = &b.exact;
    let axis = &b.axis;
    let mono = match b.monotonic {
        Some(true) => "monotonicity check agreed".to_string(),
        Some(false) => format!(
            "NOT monotonic: the check at {axis}={} contradicts the boundary",
            x.monotonic_at
        ),
        None => "monotonicity not checked".into(),
    };
    let fixed = if x.fixed.is_empty() {
        String::new()
    } else {
        format!(" [{}]", x.fixed)
    };
    let headroom = b.headroom_text();
    let (last, probes) = (&x.last_pass, x.probes);
    match &b.first_fail {
        None => format!(
            "{axis}{fixed}: passed up to {last}, no failure found ({probes} probes; {mono}){headroom}"
        ),
        Some(_) => format!(
            "{axis}{fixed}: last pass {last}, first fail {} ({}) after {probes} probes; {mono}{headroom}",
            x.first_fail, b.outcome
        ),
    }
}
