//! The self-contained HTML report: one file, inline CSS and SVG, no script and no external
//! reference, readable in any browser without a network. Sections are left out when the receipt
//! has nothing for them (no cells → no heatmap; no `predicate.performance` → no performance plots).
//!
//! One module per section, in the order the report shows them: `header` (claim, verdict,
//! run facts), `layers`, `envelope` (heatmap, the development-coverage strip, failing cells), `boundaries` (and the
//! claimed region), `service` (service cells under load: the latency-vs-offered-rate plot,
//! achieved rate, the cells' table and timelines), `faults` (dependency faults and restarts
//! per cell), `perturb` (schedule perturbation: failures, seeds, rates, points), `performance` (its
//! facts, checks, models, predictions and statistics table) with `scaling` (workload plots),
//! `concurrency` (speedup and efficiency plots) and `noise` (per-round whiskers and the noisy
//! cells), `gap`, `checklist`. Each formats the rows of
//! [`crate::view`]; none reads the receipt's JSON.

mod boundaries;
mod checklist;
mod concurrency;
mod envelope;
mod faults;
mod frontier;
mod gap;
mod header;
mod layers;
mod noise;
mod performance;
mod perturb;
mod scaling;
mod service;

use std::fmt::Write;

use crate::text::esc;
use crate::view::View;

const CSS: &str = r#"
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#222;max-width:1150px;margin:24px auto;padding:0 16px}
h1{font-size:22px;margin:0 0 4px} h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}
h3{font-size:15px;margin:18px 0 6px}
table{border-collapse:collapse;margin:6px 0 10px} th,td{border:1px solid #d4d4d4;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f3f3f3} td.num{text-align:right;font-variant-numeric:tabular-nums}
.meta{color:#555} .verdict{display:inline-block;padding:4px 10px;border-radius:4px;font-weight:600;color:#fff}
.yes{background:#2e7d32} .no{background:#c62828} .unknown{background:#757575}
.st{font-weight:600} .st-closed{color:#2e7d32} .st-failed{color:#c62828} .st-partial{color:#b26a00} .st-not_run{color:#757575}
.warn{background:#fff3cd;border:1px solid #e0c060;padding:6px 10px;border-radius:4px}
.legend-item{display:inline-block;margin:2px 10px 2px 0;white-space:nowrap}
.sw{display:inline-block;width:18px;height:18px;line-height:18px;text-align:center;border-radius:3px;font-size:12px;font-weight:700;margin-right:4px;vertical-align:middle}
svg.plot{display:block;margin:8px 0;font-family:system-ui,sans-serif}
svg .tick{font-size:11px;fill:#444} svg .alabel{font-size:12px;fill:#222} svg .ptitle{font-size:13px;font-weight:600;fill:#222}
svg .legend{font-size:11px;fill:#222} svg .note{font-size:11px} svg .sym{font-size:13px;font-weight:700}
.plots{display:flex;flex-wrap:wrap;gap:12px} .pred{color:#6a1b9a} ul{margin:4px 0 8px 0;padding-left:22px}
"#;

pub fn render(v: &View) -> String {
    let mut h = String::new();
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>qualify report: {}</title><style>{CSS}</style></head><body>\n",
        esc(&v.artifact())
    );
    header::header(&mut h, v);
    layers::layers(&mut h, v);
    let cells = v.cells();
    let order = v.axis_order();
    envelope::envelope(
        &mut h,
        &cells,
        &v.map_axis_order(),
        v.development().as_ref(),
    );
    boundaries::boundaries(&mut h, v);
    frontier::frontier(&mut h, v);
    boundaries::claimed(&mut h, v);
    service::service(&mut h, v);
    faults::faults(&mut h, v);
    perturb::perturbation(&mut h, v);
    if let Some(p) = v.performance() {
        performance::performance(&mut h, v, &p, &order);
    }
    gap::gap(&mut h, v);
    checklist::checklist(&mut h, v);
    h.push_str("</body></html>\n");
    h
}

/// `metric (unit)`, or the metric alone when it has no unit.
fn with_unit(metric: &str, unit: &str) -> String {
    if unit.is_empty() {
        metric.to_string()
    } else {
        format!("{metric} ({unit})")
    }
}

/// `x` values spread evenly on a log scale from `a` to `b`.
fn logspace(a: f64, b: f64, n: usize) -> Vec<f64> {
    if a <= 0.0 || b <= 0.0 || n < 2 {
        return vec![a, b];
    }
    let (la, lb) = (a.ln(), b.ln());
    (0..n)
        .map(|i| (la + (lb - la) * i as f64 / (n - 1) as f64).exp())
        .collect()
}
