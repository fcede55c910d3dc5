//! The self-contained HTML report: one file, inline CSS and SVG, no script and no external
//! reference, readable in any browser without a network. Sections are left out when the receipt
//! has nothing for them (no cells → no heatmap; no `predicate.performance` → no performance plots).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

use serde_json::{Map, Value};

use crate::svg::{Axis, PALETTE, Plot, Scale};
use crate::text::{self, esc, num};
use crate::view::{self, CellRow, Performance, Scaling, View};
use qualify_model::Outcome;
use qualify_model::outcome::{NOT_EXAMINED, style_of};

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
    let artifact = v.artifact();
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>qualify report: {}</title><style>{CSS}</style></head><body>\n",
        esc(&artifact)
    );
    header(&mut h, v);
    layers(&mut h, v);
    let cells = v.cells();
    let order = v.axis_order();
    envelope(&mut h, v, &cells, &order);
    boundaries(&mut h, v);
    if let Some(p) = v.performance() {
        performance(&mut h, v, &p, &order);
    }
    gap(&mut h, v);
    checklist(&mut h, v);
    h.push_str("</body></html>\n");
    h
}

fn header(h: &mut String, v: &View) {
    let _ = write!(
        h,
        "<h1>qualify report: {}</h1>\n<p class=\"meta\">",
        esc(&v.artifact())
    );
    let mut meta = Vec::new();
    let spec = v.spec_path();
    if !spec.is_empty() {
        meta.push(format!("spec <code>{}</code>", esc(&spec)));
    }
    let (a, b) = (v.run_field("started"), v.run_field("finished"));
    if !a.is_empty() {
        meta.push(format!("run {} – {}", esc(&a), esc(&b)));
    }
    let ver = v.run_field("qualify_version");
    if !ver.is_empty() {
        meta.push(format!("qualify {}", esc(&ver)));
    }
    if let Some(t) = v.tested() {
        let host = t.get("hostname").map(text::value).unwrap_or_default();
        let cores = t.get("cores_allowed").map(text::value).unwrap_or_default();
        let backend = t.get("backend").map(text::value).unwrap_or_default();
        meta.push(format!(
            "machine {} ({} cores allowed, backend {})",
            esc(&host),
            esc(&cores),
            esc(&backend)
        ));
    }
    h.push_str(&meta.join(" · "));
    h.push_str("</p>\n");
    let level = v.claim_level();
    let (cls, word) = match v.supported() {
        Some(true) => ("yes", "SUPPORTED"),
        Some(false) => ("no", "NOT SUPPORTED"),
        None => ("unknown", "NO VERDICT"),
    };
    let _ = writeln!(
        h,
        "<p>Claim: <b>{}</b> &nbsp;<span class=\"verdict {cls}\">{} claim {word}</span></p>",
        esc(&level),
        esc(&level)
    );
    let reasons = v.reasons();
    if !reasons.is_empty() {
        h.push_str("<ul>");
        for r in reasons {
            let _ = write!(h, "<li>{}</li>", esc(&r));
        }
        h.push_str("</ul>\n");
    }
    if v.incomplete() {
        h.push_str(
            "<p class=\"warn\">This receipt is from an interrupted run: only what finished counts \
             as evidence.</p>\n",
        );
    }
}

fn layers(h: &mut String, v: &View) {
    h.push_str("<h2>Evidence layers</h2>\n<table><tr><th>layer</th><th>status</th><th>summary</th><th>untested</th></tr>\n");
    for l in v.layers() {
        let untested = if l.untested.is_empty() {
            "—".to_string()
        } else {
            format!(
                "<ul>{}</ul>",
                l.untested
                    .iter()
                    .map(|u| format!("<li>{}</li>", esc(u)))
                    .collect::<String>()
            )
        };
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td class=\"st st-{}\">{}</td><td>{}</td><td>{untested}</td></tr>",
            esc(&l.name),
            esc(&l.status),
            esc(&l.status),
            esc(&l.summary)
        );
    }
    h.push_str("</table>\n");
}

fn sort_values(vals: &BTreeSet<String>) -> Vec<String> {
    let mut v: Vec<String> = vals.iter().cloned().collect();
    v.sort_by(|a, b| match (a.parse::<f64>(), b.parse::<f64>()) {
        (Ok(x), Ok(y)) => x.total_cmp(&y),
        _ => a.cmp(b),
    });
    v
}

/// The axes the heatmap shows: the first two (in the receipt's order) with more than one value,
/// or the first axis when none varies.
fn map_axes(
    cells: &[CellRow],
    order: &[String],
) -> (Vec<String>, BTreeMap<String, BTreeSet<String>>) {
    let mut values: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for c in cells {
        for (k, val) in &c.params {
            values
                .entry(k.clone())
                .or_default()
                .insert(text::value(val));
        }
    }
    let mut axes: Vec<String> = order
        .iter()
        .filter(|n| values.get(*n).is_some_and(|v| v.len() > 1))
        .take(2)
        .cloned()
        .collect();
    if axes.is_empty()
        && let Some(first) = order.iter().find(|n| values.contains_key(*n))
    {
        axes.push(first.clone());
    }
    (axes, values)
}

fn envelope(h: &mut String, v: &View, cells: &[CellRow], order: &[String]) {
    if cells.is_empty() {
        return;
    }
    h.push_str("<h2>Envelope</h2>\n");
    let (axes, values) = map_axes(cells, order);
    if let Some(row_axis) = axes.first() {
        let col_axis = axes.get(1);
        let rows = sort_values(&values[row_axis]);
        let cols = col_axis
            .map(|c| sort_values(&values[c]))
            .unwrap_or_default();
        // One axis: a strip along x.
        let (xs, ys, x_axis, y_axis) = match col_axis {
            Some(c) => (
                cols.clone(),
                rows.clone(),
                Some(c.as_str()),
                Some(row_axis.as_str()),
            ),
            None => (
                rows.clone(),
                vec![String::new()],
                Some(row_axis.as_str()),
                None,
            ),
        };
        let mut grid: BTreeMap<(String, String), (String, Vec<String>)> = BTreeMap::new();
        for c in cells {
            let xv = x_axis
                .and_then(|a| c.params.get(a))
                .map(text::value)
                .unwrap_or_default();
            let yv = y_axis
                .and_then(|a| c.params.get(a))
                .map(text::value)
                .unwrap_or_default();
            let e = grid
                .entry((yv, xv))
                .or_insert_with(|| (c.outcome.clone(), Vec::new()));
            if style_of(&c.outcome).severity > style_of(&e.0).severity {
                e.0 = c.outcome.clone();
            }
            e.1.push(format!(
                "{}: {}",
                text::params(&c.params, order),
                if c.detail.is_empty() {
                    c.outcome.clone()
                } else {
                    format!("{} — {}", c.outcome, c.detail)
                }
            ));
        }
        let merged_over: Vec<&String> = order
            .iter()
            .filter(|a| !axes.contains(a) && values.get(*a).is_some_and(|v| v.len() > 1))
            .collect();
        let size = (880.0 / xs.len().max(1) as f64).clamp(20.0, 52.0).floor();
        let longest = xs.iter().map(|s| s.chars().count()).max().unwrap_or(1) as f64;
        let rotate = longest * 7.0 > size;
        let top = if rotate { longest * 5.5 + 34.0 } else { 40.0 };
        let ylab_w = ys.iter().map(|s| s.chars().count()).max().unwrap_or(0) as f64 * 7.5
            + if y_axis.is_some() { 40.0 } else { 10.0 };
        let width = ylab_w + size * xs.len() as f64 + 20.0;
        let height = top + size * ys.len() as f64 + 12.0;
        let mut s = String::new();
        let _ = write!(
            s,
            r#"<svg class="plot" width="{width:.0}" height="{height:.0}" viewBox="0 0 {width:.0} {height:.0}" role="img" aria-label="envelope heatmap">"#
        );
        let _ = write!(
            s,
            r#"<text x="{:.1}" y="14" class="ptitle">{} →</text>"#,
            ylab_w,
            esc(x_axis.unwrap_or(""))
        );
        if let Some(ya) = y_axis {
            let _ = write!(
                s,
                r#"<text transform="translate(14 {:.1}) rotate(-90)" text-anchor="middle" class="ptitle">{} ↓</text>"#,
                top + size * ys.len() as f64 / 2.0,
                esc(ya)
            );
        }
        for (i, xv) in xs.iter().enumerate() {
            let cx = ylab_w + size * (i as f64 + 0.5);
            if rotate {
                let _ = write!(
                    s,
                    r#"<text transform="translate({cx:.1} {:.1}) rotate(-55)" class="tick">{}</text>"#,
                    top - 6.0,
                    esc(xv)
                );
            } else {
                let _ = write!(
                    s,
                    r#"<text x="{cx:.1}" y="{:.1}" text-anchor="middle" class="tick">{}</text>"#,
                    top - 6.0,
                    esc(xv)
                );
            }
        }
        for (j, yv) in ys.iter().enumerate() {
            let y = top + size * j as f64;
            let _ = write!(
                s,
                r#"<text x="{:.1}" y="{:.1}" text-anchor="end" class="tick">{}</text>"#,
                ylab_w - 6.0,
                y + size / 2.0 + 4.0,
                esc(yv)
            );
            for (i, xv) in xs.iter().enumerate() {
                let x = ylab_w + size * i as f64;
                let (outcome, titles) = grid
                    .get(&(yv.clone(), xv.clone()))
                    .map(|(o, t)| (o.as_str(), t.join("\n")))
                    .unwrap_or((NOT_EXAMINED.name, "not examined".into()));
                let st = if outcome == NOT_EXAMINED.name {
                    &NOT_EXAMINED
                } else {
                    style_of(outcome)
                };
                let (sym, fill, fg) = (st.mark, st.fill, st.text);
                let _ = write!(
                    s,
                    r##"<g><title>{}</title><rect x="{x:.1}" y="{y:.1}" width="{:.1}" height="{:.1}" fill="{fill}" stroke="#fff" stroke-width="2"/><text x="{:.1}" y="{:.1}" text-anchor="middle" class="sym" fill="{fg}">{}</text></g>"##,
                    esc(&titles),
                    size,
                    size,
                    x + size / 2.0,
                    y + size / 2.0 + 5.0,
                    sym
                );
            }
        }
        s.push_str("</svg>");
        h.push_str(&s);
        h.push('\n');
        // Legend: the outcomes that occur, then "not examined".
        let seen: BTreeSet<&str> = cells.iter().map(|c| c.outcome.as_str()).collect();
        h.push_str("<p>");
        for st in Outcome::ALL
            .iter()
            .map(|o| o.style())
            .filter(|st| seen.contains(st.name))
        {
            let (o, sym, fill, fg) = (st.name, st.mark, st.fill, st.text);
            let n = cells.iter().filter(|c| c.outcome == o).count();
            let _ = write!(
                h,
                "<span class=\"legend-item\"><span class=\"sw\" style=\"background:{fill};color:{fg}\">{sym}</span>{o} ({n})</span>"
            );
        }
        for o in seen
            .iter()
            .filter(|o| !Outcome::ALL.iter().any(|k| k.as_str() == **o))
        {
            let st = style_of(o);
            let (sym, fill, fg) = (st.mark, st.fill, st.text);
            let _ = write!(
                h,
                "<span class=\"legend-item\"><span class=\"sw\" style=\"background:{fill};color:{fg}\">{sym}</span>{}</span>",
                esc(o)
            );
        }
        let (o, sym, fill, fg) = (
            NOT_EXAMINED.name,
            NOT_EXAMINED.mark,
            NOT_EXAMINED.fill,
            NOT_EXAMINED.text,
        );
        let _ = writeln!(
            h,
            "<span class=\"legend-item\"><span class=\"sw\" style=\"background:{fill};color:{fg}\">{sym}</span>{o}</span></p>"
        );
        if !merged_over.is_empty() {
            let _ = writeln!(
                h,
                "<p class=\"meta\">Each square merges the cells over {} (the most severe outcome is shown).</p>",
                esc(&merged_over
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", "))
            );
        }
    }
    let failing: Vec<&CellRow> = cells.iter().filter(|c| c.outcome != "ok").collect();
    if !failing.is_empty() {
        let _ = write!(
            h,
            "<h3>Cells that did not end ok ({} of {})</h3>\n<table><tr><th>cell</th><th>outcome</th><th>detail</th></tr>\n",
            failing.len(),
            cells.len()
        );
        for c in failing.iter().take(100) {
            let _ = writeln!(
                h,
                "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&text::params(&c.params, order)),
                esc(&c.outcome),
                esc(&c.detail)
            );
        }
        h.push_str("</table>\n");
        if failing.len() > 100 {
            let _ = writeln!(
                h,
                "<p class=\"meta\">… and {} more.</p>",
                failing.len() - 100
            );
        }
    }
    let _ = v;
}

/// One line per boundary, as `qualify run` prints it.
pub fn boundary_line(b: &Value) -> String {
    let axis = b.get("axis").map(text::value).unwrap_or_default();
    let fixed = b
        .get("fixed")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| format!("{k}={}", text::value(v)))
                .collect::<Vec<_>>()
                .join(", ")
        })
        .filter(|s| !s.is_empty())
        .map(|s| format!(" [{s}]"))
        .unwrap_or_default();
    let last = b.get("last_pass").map(text::value).unwrap_or_default();
    let probes = b
        .get("probes")
        .map(text::value)
        .unwrap_or_else(|| "?".into());
    let mono = match b.get("monotonic").and_then(Value::as_bool) {
        Some(true) => "monotonicity check agreed".to_string(),
        Some(false) => "NOT monotonic: the check beyond the boundary contradicts it".to_string(),
        None => "monotonicity not checked".into(),
    };
    if b.get("first_fail").is_none_or(Value::is_null) {
        format!("{axis}{fixed}: passed up to {last}, no failure found ({probes} probes; {mono})")
    } else {
        let first = b.get("first_fail").map(text::value).unwrap_or_default();
        let outcome = b.get("outcome").map(text::value).unwrap_or_default();
        format!(
            "{axis}{fixed}: last pass {last}, first fail {first} ({outcome}) after {probes} probes; {mono}"
        )
    }
}

fn boundaries(h: &mut String, v: &View) {
    let b = v.boundaries();
    if b.is_empty() {
        return;
    }
    h.push_str("<h2>Boundaries</h2>\n<ul>");
    for x in b {
        let _ = write!(h, "<li>{}</li>", esc(&boundary_line(x)));
    }
    h.push_str("</ul>\n");
}

fn fixed_text(m: &Map<String, Value>) -> String {
    m.iter()
        .map(|(k, v)| format!("{k}={}", text::value(v)))
        .collect::<Vec<_>>()
        .join(", ")
}

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

fn target_workload(v: &View, axis: &str) -> Option<f64> {
    v.target()?.get("workload")?.get(axis)?.as_f64()
}

fn target_concurrency(v: &View) -> Option<f64> {
    let t = v.target()?;
    t.get("concurrency")
        .or_else(|| t.get("cores"))
        .and_then(Value::as_f64)
}

fn performance(h: &mut String, v: &View, p: &Performance, order: &[String]) {
    h.push_str("<h2>Performance</h2>\n");
    let mut meta = Vec::new();
    if let Some(r) = p.repeat {
        meta.push(format!("{r} runs per cell"));
    }
    if let Some(w) = p.warmup {
        meta.push(format!("{w} warm-up run(s)"));
    }
    if !p.metrics.is_empty() {
        meta.push(format!(
            "metrics: {}",
            p.metrics
                .iter()
                .map(|m| {
                    let mut s = with_unit(&m.name, &m.unit);
                    if !m.better.is_empty() {
                        s.push_str(&format!(", {} is better", m.better));
                    }
                    s
                })
                .collect::<Vec<_>>()
                .join("; ")
        ));
    }
    if !meta.is_empty() {
        let _ = writeln!(h, "<p class=\"meta\">{}</p>", esc(&meta.join(" · ")));
    }
    if !p.errors.is_empty() {
        h.push_str("<div class=\"warn\"><b>The performance analysis reported errors:</b><ul>");
        for e in &p.errors {
            let _ = write!(h, "<li>{}</li>", esc(e));
        }
        h.push_str("</ul></div>\n");
    }
    scaling_curves(h, v, p);
    for s in &p.scaling {
        concurrency(h, v, p, s);
    }
    checks(h, p);
    predictions(h, p);
    stats_table(h, p, order);
}

/// One series of a workload plot: the measured medians at fixed values of the other axes, and
/// the model fitted to them when there is one.
struct Series<'a> {
    fixed: Map<String, Value>,
    model: Option<&'a view::Model>,
    pts: Vec<(f64, &'a view::Stat)>,
}

/// The (axis, metric) plots: every model's, then every axis with two or more measured values that
/// neither a model nor a concurrency analysis covers (measured only, "no model").
fn workload_groups(v: &View, p: &Performance) -> Vec<(String, String)> {
    let mut groups: Vec<(String, String)> = Vec::new();
    for m in &p.models {
        let key = (m.axis.clone(), m.metric.clone());
        if !m.axis.is_empty() && !groups.contains(&key) {
            groups.push(key);
        }
    }
    let mut metrics: Vec<&str> = Vec::new();
    for s in &p.stats {
        if !metrics.contains(&s.metric.as_str()) {
            metrics.push(&s.metric);
        }
    }
    for axis in v.axis_order() {
        for metric in &metrics {
            let key = (axis.clone(), metric.to_string());
            let covered = groups.contains(&key)
                || p.scaling
                    .iter()
                    .any(|x| x.axis == axis && x.metric == *metric);
            let distinct: BTreeSet<String> = p
                .stats
                .iter()
                .filter(|s| s.metric == *metric)
                .filter_map(|s| view::coord(&s.params, &axis))
                .map(|x| x.to_string())
                .collect();
            if !covered && distinct.len() >= 2 {
                groups.push(key);
            }
        }
    }
    groups
}

fn scaling_curves(h: &mut String, v: &View, p: &Performance) {
    let groups = workload_groups(v, p);
    if groups.is_empty() {
        return;
    }
    h.push_str("<h3>Scaling with workload (log–log)</h3>\n<div class=\"plots\">\n");
    for (axis, metric) in groups {
        let in_axis =
            |s: &&view::Stat| s.metric == metric && view::coord(&s.params, &axis).is_some();
        let mut series: Vec<Series> = p
            .models
            .iter()
            .filter(|m| m.axis == axis && m.metric == metric)
            .map(|m| Series {
                fixed: m.fixed.clone(),
                model: Some(m),
                pts: Vec::new(),
            })
            .collect();
        if series.is_empty() {
            // No model: one series per combination of the other parameters.
            for s in p.stats.iter().filter(in_axis) {
                let mut fixed = s.params.clone();
                fixed.remove(&axis);
                if !series.iter().any(|x| x.fixed == fixed) {
                    series.push(Series {
                        fixed,
                        model: None,
                        pts: Vec::new(),
                    });
                }
            }
        }
        let dropped = series.len().saturating_sub(PALETTE.len());
        series.truncate(PALETTE.len());
        for se in &mut series {
            se.pts = p
                .stats
                .iter()
                .filter(in_axis)
                .filter(|s| view::matches(&s.params, &se.fixed))
                .filter_map(|s| Some((view::coord(&s.params, &axis)?, s)))
                .collect();
            se.pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        }
        let any_model = series.iter().any(|s| s.model.is_some());
        let target = target_workload(v, &axis);
        let preds: Vec<_> = p
            .predictions
            .iter()
            .filter(|x| x.axis == axis && x.metric == metric)
            .collect();
        let measured: Vec<f64> = series
            .iter()
            .flat_map(|s| s.pts.iter().map(|(x, _)| *x))
            .filter(|x| *x > 0.0)
            .collect();
        // Models extend to the target and predictions; measured-only plots do not.
        let xs: Vec<f64> = measured
            .iter()
            .copied()
            .chain(target.filter(|_| any_model))
            .chain(preds.iter().filter_map(|x| x.at))
            .collect();
        let x_scale = if v.axis_kind(&axis).as_deref() == Some("concurrency") {
            Scale::Log2
        } else {
            Scale::Log10
        };
        let Some(x_axis) = Axis::fit(x_scale, xs.iter().copied()) else {
            continue;
        };
        let x_lo = measured.iter().copied().fold(f64::INFINITY, f64::min);
        let x_hi = xs.iter().copied().filter(|x| *x > 0.0).fold(0.0, f64::max);
        let measured_hi = measured.iter().copied().fold(0.0, f64::max);
        let curve_xs = if x_lo.is_finite() {
            logspace(x_lo, x_hi, 80)
        } else {
            Vec::new()
        };
        let mut ys: Vec<f64> = Vec::new();
        for se in &series {
            for (_, s) in &se.pts {
                ys.extend(s.median);
                if let Some((a, b)) = s.ci95 {
                    ys.push(a);
                    ys.push(b);
                }
            }
            if let Some(m) = se.model {
                ys.extend(curve_xs.iter().filter_map(|x| m.eval(*x)));
            }
        }
        ys.extend(preds.iter().filter_map(|x| x.value));
        let Some(y_axis) = Axis::fit(Scale::Log10, ys) else {
            continue;
        };
        let unit = p.unit(&metric);
        let mut plot = Plot::new(540.0, 360.0, x_axis, y_axis);
        plot.axes(
            &format!(
                "{metric} vs {axis}{}",
                if any_model { "" } else { " (no model fitted)" }
            ),
            &axis,
            &with_unit(&metric, &unit),
        );
        if let Some(t) = target.filter(|_| any_model) {
            plot.vline(t, "#6a1b9a", &format!("target {axis}={}", num(t)));
        }
        for (i, se) in series.iter().enumerate() {
            let color = PALETTE[i % PALETTE.len()];
            if let Some(m) = se.model {
                let inside: Vec<(f64, f64)> = curve_xs
                    .iter()
                    .filter(|x| **x <= measured_hi * (1.0 + 1e-9))
                    .filter_map(|x| Some((*x, m.eval(*x)?)))
                    .collect();
                let beyond: Vec<(f64, f64)> = curve_xs
                    .iter()
                    .filter(|x| **x >= measured_hi * (1.0 - 1e-9))
                    .filter_map(|x| Some((*x, m.eval(*x)?)))
                    .collect();
                plot.polyline(&inside, color, false);
                plot.polyline(&beyond, color, true);
            } else {
                let line: Vec<(f64, f64)> = se
                    .pts
                    .iter()
                    .filter_map(|(x, s)| Some((*x, s.median?)))
                    .collect();
                plot.polyline(&line, color, false);
            }
            for (x, s) in &se.pts {
                if let Some((a, b)) = s.ci95 {
                    plot.error_bar(*x, a, b, color);
                }
                if let Some(med) = s.median {
                    let mut title =
                        format!("{axis}={}: median {} {unit}, n={}", num(*x), num(med), s.n);
                    if let Some((a, b)) = s.ci95 {
                        title.push_str(&format!(", 95% CI [{}, {}]", num(a), num(b)));
                    }
                    if s.censored > 0 {
                        title.push_str(&format!(
                            ", {} run(s) censored (did not finish): the true median is at least this",
                            s.censored
                        ));
                    }
                    plot.circle(*x, med, color, s.censored == 0, &title);
                }
            }
            let fixed = fixed_text(&se.fixed);
            let what = match se.model {
                Some(m) => format!(
                    "{}{}",
                    model_formula(m, &axis),
                    m.error
                        .map(|e| format!(", error {}", num(e)))
                        .unwrap_or_default()
                ),
                None => "measured medians".to_string(),
            };
            let label = if fixed.is_empty() {
                what
            } else {
                format!("{fixed}: {what}")
            };
            plot.legend(&label, color, "line");
        }
        if dropped > 0 {
            plot.legend(
                &format!("({dropped} more series not drawn; see the statistics table)"),
                "#fff",
                "line",
            );
        }
        for pr in &preds {
            if let (Some(at), Some(val)) = (pr.at, pr.value) {
                plot.diamond(
                    at,
                    val,
                    "#6a1b9a",
                    &format!("model prediction ({}), not evidence: {}", pr.model, pr.note),
                );
            }
        }
        plot.legend(
            "measured median, 95% CI (hollow: censored runs)",
            "#444",
            "dot",
        );
        if any_model && x_hi > measured_hi * (1.0 + 1e-9) {
            plot.legend("model beyond the measured range", "#444", "dash");
        }
        if !preds.is_empty() {
            plot.legend("prediction (not evidence)", "#6a1b9a", "diamond");
        }
        h.push_str(&plot.finish(&format!(
            "{metric} against {axis}, log-log, {}",
            if any_model {
                "with fitted model"
            } else {
                "measured only"
            }
        )));
        h.push('\n');
    }
    h.push_str("</div>\n");
}

/// `0.0008 + 2.1e-9·n^2·log2(n)`.
fn model_formula(m: &view::Model, axis: &str) -> String {
    let c0 = m.coefficients.first().copied().unwrap_or(0.0);
    let Some(c1) = m.coefficients.get(1) else {
        return num(c0);
    };
    if m.exponent == 0.0 && m.log_exponent == 0.0 {
        return format!("constant {}", num(c0 + c1));
    }
    let ci = m
        .exponent_ci95
        .map(|(a, b)| format!(" (exponent 95% CI [{}, {}])", num(a), num(b)))
        .unwrap_or_default();
    if !m.form.is_empty() {
        return format!("{} + {}·{}{ci}", num(c0), num(*c1), m.form);
    }
    let mut term = String::new();
    if m.exponent != 0.0 {
        term.push_str(axis);
        if m.exponent != 1.0 {
            term.push_str(&format!("^{}", num(m.exponent)));
        }
    }
    if m.log_exponent != 0.0 {
        if !term.is_empty() {
            term.push('·');
        }
        term.push_str(&format!("log2({axis})"));
        if m.log_exponent != 1.0 {
            term.push_str(&format!("^{}", num(m.log_exponent)));
        }
    }
    if term.is_empty() {
        term = "1".into();
    }
    format!("{} + {}·{term}{ci}", num(c0), num(*c1))
}

fn concurrency(h: &mut String, v: &View, p: &Performance, s: &Scaling) {
    if s.points.is_empty() {
        return;
    }
    let fixed = fixed_text(&s.fixed);
    let _ = writeln!(
        h,
        "<h3>Concurrency scaling: {} ({}{})</h3>",
        esc(&s.axis),
        esc(&s.metric),
        if fixed.is_empty() {
            String::new()
        } else {
            format!(", {}", esc(&fixed))
        }
    );
    let target =
        target_concurrency(v).filter(|_| v.axis_kind(&s.axis).as_deref() != Some("workload"));
    let preds: Vec<_> = p
        .predictions
        .iter()
        .filter(|x| x.axis == s.axis && x.metric == s.metric)
        .collect();
    // T1 (the one-worker value) so predictions can be shown as speedups.
    let t1 = s
        .points
        .iter()
        .find_map(|pt| Some(pt.value? * pt.speedup?).filter(|x| *x > 0.0));
    let higher = p
        .metrics
        .iter()
        .any(|m| m.name == s.metric && m.better == "higher");
    let pred_speedup = |val: f64| -> Option<f64> {
        let t1 = t1?;
        let sp = if higher { val / t1 } else { t1 / val };
        (sp.is_finite() && sp > 0.0).then_some(sp)
    };
    let p_max_measured = s.points.iter().map(|pt| pt.p).fold(0.0, f64::max);
    let x_hi = [p_max_measured]
        .into_iter()
        .chain(target)
        .chain(preds.iter().filter_map(|x| x.at))
        .fold(0.0, f64::max);
    let x_lo = s.points.iter().map(|pt| pt.p).fold(f64::INFINITY, f64::min);
    let curve_ps = logspace(x_lo.max(1.0), x_hi.max(x_lo), 80);
    h.push_str("<div class=\"plots\">\n");

    // Speedup, log–log, with the ideal line, USL and Amdahl fits.
    let mut ys: Vec<f64> = s.points.iter().filter_map(|pt| pt.speedup).collect();
    ys.push(1.0);
    ys.extend(curve_ps.iter().filter_map(|p| s.usl(*p)));
    ys.extend(curve_ps.iter().filter_map(|p| s.amdahl_speedup(*p)));
    ys.extend(preds.iter().filter_map(|x| pred_speedup(x.value?)));
    // The ideal line is drawn but does not stretch the y axis beyond 2× the rest.
    let y_cap = ys.iter().copied().fold(0.0, f64::max) * 2.0;
    let xs: Vec<f64> = s.points.iter().map(|pt| pt.p).chain([x_hi]).collect();
    if let (Some(xa), Some(ya)) = (
        Axis::fit(Scale::Log2, xs.clone()),
        Axis::fit(Scale::Log2, ys),
    ) {
        let mut plot = Plot::new(540.0, 360.0, xa, ya);
        plot.axes(&format!("speedup vs {}", s.axis), &s.axis, "speedup");
        let ideal: Vec<(f64, f64)> = curve_ps
            .iter()
            .filter(|p| **p <= y_cap)
            .map(|p| (*p, *p))
            .collect();
        plot.polyline(&ideal, "#9e9e9e", true);
        plot.legend("ideal (speedup = p)", "#9e9e9e", "dash");
        if let Some(t) = target {
            plot.vline(t, "#6a1b9a", &format!("target {}={}", s.axis, num(t)));
        }
        if s.usl_sigma.is_some() {
            let c: Vec<(f64, f64)> = curve_ps
                .iter()
                .filter_map(|p| Some((*p, s.usl(*p)?)))
                .collect();
            plot.polyline(&c, PALETTE[1], false);
            plot.legend(
                &format!(
                    "USL σ={} κ={}{}",
                    num(s.usl_sigma.unwrap_or(0.0)),
                    num(s.usl_kappa.unwrap_or(0.0)),
                    s.usl_peak
                        .map(|pk| format!(", peak at {}", num(pk)))
                        .unwrap_or_default()
                ),
                PALETTE[1],
                "line",
            );
        }
        if s.amdahl_serial.is_some() {
            let c: Vec<(f64, f64)> = curve_ps
                .iter()
                .filter_map(|p| Some((*p, s.amdahl_speedup(*p)?)))
                .collect();
            plot.polyline(&c, PALETTE[2], true);
            plot.legend(
                &format!(
                    "Amdahl, serial fraction {}",
                    num(s.amdahl_serial.unwrap_or(0.0))
                ),
                PALETTE[2],
                "dash",
            );
        }
        for pt in &s.points {
            if let Some(sp) = pt.speedup {
                plot.circle(
                    pt.p,
                    sp,
                    PALETTE[0],
                    true,
                    &format!("{}={}: speedup {}", s.axis, num(pt.p), num(sp)),
                );
            }
        }
        plot.legend("measured", PALETTE[0], "dot");
        for pr in &preds {
            if let (Some(at), Some(sp)) = (pr.at, pr.value.and_then(pred_speedup)) {
                plot.diamond(
                    at,
                    sp,
                    "#6a1b9a",
                    &format!(
                        "{} prediction at {}={}: speedup {} — not evidence",
                        pr.model,
                        s.axis,
                        num(at),
                        num(sp)
                    ),
                );
                plot.legend("prediction (not evidence)", "#6a1b9a", "diamond");
            }
        }
        h.push_str(&plot.finish(&format!("speedup against {}", s.axis)));
        h.push('\n');
    }

    // Efficiency and Karp–Flatt serial fraction, linear y from 0.
    let mut ys: Vec<f64> = s
        .points
        .iter()
        .flat_map(|pt| [pt.efficiency, pt.karp_flatt])
        .flatten()
        .collect();
    ys.push(1.0);
    ys.push(0.0);
    let limit = p.checks.iter().find_map(|c| {
        let kind = c.get("kind").and_then(Value::as_str).unwrap_or("");
        let axis = c.get("axis").and_then(Value::as_str).unwrap_or("");
        (kind.contains("efficiency") && (axis.is_empty() || axis == s.axis))
            .then(|| c.get("limit").and_then(Value::as_f64))
            .flatten()
    });
    let measured_ps: Vec<f64> = s.points.iter().map(|pt| pt.p).collect();
    if let (Some(xa), Some(ya)) = (
        Axis::fit(Scale::Log2, measured_ps),
        Axis::fit(Scale::Linear, ys).map(Axis::from_zero),
    ) {
        let mut plot = Plot::new(540.0, 360.0, xa, ya);
        plot.axes(
            &format!("parallel efficiency vs {}", s.axis),
            &s.axis,
            "efficiency / serial fraction",
        );
        if let Some(l) = limit {
            plot.hline(l, "#c62828", &format!("required efficiency ≥ {}", num(l)));
        }
        let eff: Vec<(f64, f64)> = s
            .points
            .iter()
            .filter_map(|pt| Some((pt.p, pt.efficiency?)))
            .collect();
        plot.polyline(&eff, PALETTE[0], false);
        for (x, e) in &eff {
            plot.circle(
                *x,
                *e,
                PALETTE[0],
                true,
                &format!("{}={}: efficiency {}", s.axis, num(*x), num(*e)),
            );
        }
        plot.legend("parallel efficiency", PALETTE[0], "line");
        let kf: Vec<(f64, f64)> = s
            .points
            .iter()
            .filter_map(|pt| Some((pt.p, pt.karp_flatt?)))
            .collect();
        if !kf.is_empty() {
            plot.polyline(&kf, PALETTE[3], true);
            for (x, e) in &kf {
                plot.circle(
                    *x,
                    *e,
                    PALETTE[3],
                    false,
                    &format!(
                        "{}={}: Karp–Flatt serial fraction {}",
                        s.axis,
                        num(*x),
                        num(*e)
                    ),
                );
            }
            plot.legend("Karp–Flatt serial fraction", PALETTE[3], "dash");
        }
        h.push_str(&plot.finish(&format!("parallel efficiency against {}", s.axis)));
        h.push('\n');
    }
    h.push_str("</div>\n");
    // The numbers behind the plots.
    h.push_str("<table><tr><th>");
    h.push_str(&esc(&s.axis));
    h.push_str("</th><th>value</th><th>speedup</th><th>efficiency</th><th>Karp–Flatt</th></tr>\n");
    let o = |x: Option<f64>| x.map(num).unwrap_or_else(|| "—".into());
    for pt in &s.points {
        let _ = writeln!(
            h,
            "<tr><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
            num(pt.p),
            o(pt.value),
            o(pt.speedup),
            o(pt.efficiency),
            o(pt.karp_flatt)
        );
    }
    h.push_str("</table>\n");
    if let Some(a) = &s.amdahl
        && s.amdahl_serial.is_none()
    {
        let _ = writeln!(
            h,
            "<p class=\"meta\">Amdahl fit: <code>{}</code></p>",
            esc(&a.to_string())
        );
    }
}

fn checks(h: &mut String, p: &Performance) {
    if p.checks.is_empty() {
        return;
    }
    h.push_str("<h3>Checks</h3>\n<table><tr><th>result</th><th>kind</th><th>axis</th><th>metric</th><th>limit</th><th>observed</th><th>95% interval</th><th>detail</th></tr>\n");
    for c in &p.checks {
        let g = |k: &str| c.get(k).map(text::value).unwrap_or_else(|| "—".into());
        let (cls, word) = match c.get("passed").and_then(Value::as_bool) {
            Some(true) => ("st-closed", "passed"),
            Some(false) => ("st-failed", "FAILED"),
            None => ("st-not_run", "not decided"),
        };
        let _ = writeln!(
            h,
            "<tr><td class=\"st {cls}\">{word}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td></tr>",
            esc(&g("kind")),
            esc(&g("axis")),
            esc(&g("metric")),
            esc(&g("limit")),
            esc(&g("observed")),
            esc(&g("interval")),
            esc(&g("detail"))
        );
    }
    h.push_str("</table>\n");
}

fn predictions(h: &mut String, p: &Performance) {
    if p.predictions.is_empty() {
        return;
    }
    h.push_str("<h3 class=\"pred\">Model predictions (not evidence)</h3>\n<table><tr><th>axis</th><th>at</th><th>metric</th><th>predicted</th><th>model</th><th>note</th></tr>\n");
    for x in &p.predictions {
        let o = |v: Option<f64>| v.map(num).unwrap_or_else(|| "—".into());
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td class=\"num\">{}</td><td>{}</td><td class=\"num\">{} {}</td><td>{}</td><td>{}</td></tr>",
            esc(&x.axis),
            o(x.at),
            esc(&x.metric),
            o(x.value),
            esc(&p.unit(&x.metric)),
            esc(&x.model),
            esc(&x.note)
        );
    }
    h.push_str("</table>\n");
}

fn stats_table(h: &mut String, p: &Performance, order: &[String]) {
    if p.stats.is_empty() {
        return;
    }
    let _ = write!(
        h,
        "<details><summary>Statistics per cell ({} rows)</summary>\n<table><tr><th>cell</th><th>metric</th><th>n</th><th>median</th><th>MAD</th><th>95% CI</th><th>min – max</th><th>outliers</th></tr>\n",
        p.stats.len()
    );
    let o = |v: Option<f64>| v.map(num).unwrap_or_else(|| "—".into());
    for s in &p.stats {
        let n = if s.censored > 0 {
            format!("{} ({} censored: ≥ limit)", s.n, s.censored)
        } else {
            s.n.to_string()
        };
        let median = if s.censored > 0 {
            format!("≥ {}", o(s.median))
        } else {
            o(s.median)
        };
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{} – {}</td><td>{}</td></tr>",
            esc(&text::params(&s.params, order)),
            esc(&s.metric),
            esc(&n),
            esc(&median),
            o(s.mad),
            s.ci95
                .map(|(a, b)| format!("[{}, {}]", num(a), num(b)))
                .unwrap_or_else(|| "—".into()),
            o(s.min),
            o(s.max),
            esc(&s
                .outliers
                .iter()
                .map(|(i, x)| match i {
                    Some(i) => format!("run {}: {}", i + 1, num(*x)),
                    None => num(*x),
                })
                .collect::<Vec<_>>()
                .join(", "))
        );
    }
    h.push_str("</table></details>\n");
}

fn gap(h: &mut String, v: &View) {
    let gaps = v.gaps();
    if gaps.is_empty() && v.target().is_none() {
        return;
    }
    h.push_str("<h2>Target gap</h2>\n");
    if gaps.is_empty() {
        h.push_str("<p>The tested region reached every declared target fact.</p>\n");
        return;
    }
    // A bar per numeric gap on one log axis: tested (filled) against target (marker).
    let rows: Vec<(String, f64, Option<f64>, bool)> = gaps
        .iter()
        .filter_map(|g| {
            let name = match (
                g.get("name").and_then(Value::as_str),
                g.get("axis").and_then(Value::as_str),
            ) {
                (Some(n), Some(a)) => format!("{n}.{a}"),
                (Some(n), None) => n.to_string(),
                _ => return None,
            };
            let t = g
                .get("target")
                .and_then(Value::as_f64)
                .filter(|t| *t > 0.0)?;
            let tested = g.get("tested").and_then(Value::as_f64).filter(|t| *t > 0.0);
            let waived = g
                .get("waiver")
                .and_then(Value::as_str)
                .is_some_and(|w| !w.trim().is_empty());
            Some((name, t, tested, waived))
        })
        .collect();
    if !rows.is_empty() {
        // Each row on its own log scale from 1 to the target: how far the run got.
        let label_w =
            rows.iter().map(|r| r.0.chars().count()).max().unwrap_or(4) as f64 * 7.5 + 16.0;
        let bar_w = 600.0;
        let row_h = 30.0;
        let width = label_w + bar_w + 240.0;
        let height = rows.len() as f64 * row_h + 40.0;
        let mut s = format!(
            r#"<svg class="plot" width="{width:.0}" height="{height:.0}" viewBox="0 0 {width:.0} {height:.0}" role="img" aria-label="target gap"><text x="{label_w:.1}" y="16" class="ptitle">tested vs target (log scale from 1 to the target)</text>"#
        );
        for (i, (name, t, tested, waived)) in rows.iter().enumerate() {
            let y = 28.0 + i as f64 * row_h;
            let axis = Axis {
                scale: Scale::Log10,
                min: 1.0,
                max: t.max(1.0 + 1e-9),
            };
            let frac = tested
                .and_then(|x| axis.frac(x.max(1.0)))
                .unwrap_or(0.0)
                .clamp(0.0, 1.0);
            let color = if *waived { "#9e9e9e" } else { "#1565c0" };
            let _ = write!(
                s,
                r##"<text x="{:.1}" y="{:.1}" text-anchor="end" class="tick">{}</text><rect x="{label_w:.1}" y="{y:.1}" width="{bar_w}" height="18" fill="#f3e5f5" stroke="#6a1b9a"/><rect x="{label_w:.1}" y="{y:.1}" width="{:.1}" height="18" fill="{color}"/><text x="{:.1}" y="{:.1}" class="legend">{} of {}{}</text>"##,
                label_w - 6.0,
                y + 13.0,
                esc(name),
                frac * bar_w,
                label_w + bar_w + 8.0,
                y + 13.0,
                tested.map(num).unwrap_or_else(|| "not examined".into()),
                num(*t),
                if *waived { " (waived)" } else { "" }
            );
        }
        s.push_str("</svg>\n");
        h.push_str(&s);
    }
    h.push_str("<table><tr><th>gap</th><th>target</th><th>tested</th><th>detail</th><th>waiver</th></tr>\n");
    for g in gaps {
        let name = g.get("name").map(text::value).unwrap_or_default();
        let name = match g.get("axis").and_then(Value::as_str) {
            Some(a) => format!("{name}.{a}"),
            None => name,
        };
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td><td>{}</td></tr>",
            esc(&name),
            esc(&g.get("target").map(text::value).unwrap_or_default()),
            esc(&g
                .get("tested")
                .map(text::value)
                .unwrap_or_else(|| "—".into())),
            esc(&g.get("detail").map(text::value).unwrap_or_default()),
            esc(g.get("waiver").and_then(Value::as_str).unwrap_or("—"))
        );
    }
    h.push_str("</table>\n");
}

fn list(h: &mut String, title: &str, items: Option<&Value>) {
    let items: Vec<String> = items
        .and_then(Value::as_array)
        .map(|a| a.iter().map(text::value).collect())
        .unwrap_or_default();
    if items.is_empty() {
        return;
    }
    let _ = write!(h, "<h3>{}</h3><ul>", esc(title));
    for i in items {
        let _ = write!(h, "<li>{}</li>", esc(&i));
    }
    h.push_str("</ul>\n");
}

fn checklist(h: &mut String, v: &View) {
    let Some(c) = v.checklist() else {
        return;
    };
    h.push_str("<h2>Admission checklist</h2>\n");
    if let Some(claim) = c.get("claim").and_then(Value::as_str) {
        let _ = writeln!(h, "<p><b>Claim:</b> {}</p>", esc(claim));
    }
    list(h, "Examined", c.get("examined_facts"));
    list(h, "Only the target can show", c.get("target_only_facts"));
    list(h, "Assumed, not observed", c.get("assumptions"));
    if let Some(fb) = c.get("failure_behaviour").and_then(Value::as_object)
        && !fb.is_empty()
    {
        h.push_str("<h3>Failure behaviour</h3><table>");
        for (k, val) in fb {
            let _ = write!(
                h,
                "<tr><th>{}</th><td>{}</td></tr>",
                esc(&k.replace('_', " ")),
                esc(&text::value(val))
            );
        }
        h.push_str("</table>\n");
    }
    if let Some(tr) = c.get("traceability").and_then(Value::as_array)
        && !tr.is_empty()
    {
        h.push_str(
            "<h3>Traceability</h3><table><tr><th>item</th><th>recorded</th><th>detail</th></tr>",
        );
        for t in tr {
            let rec = t.get("recorded").and_then(Value::as_bool);
            let _ = write!(
                h,
                "<tr><td>{}</td><td class=\"st {}\">{}</td><td>{}</td></tr>",
                esc(&t.get("item").map(text::value).unwrap_or_default()),
                if rec == Some(true) {
                    "st-closed"
                } else {
                    "st-failed"
                },
                match rec {
                    Some(true) => "✓ yes",
                    Some(false) => "✗ no",
                    None => "?",
                },
                esc(&t.get("detail").map(text::value).unwrap_or_default())
            );
        }
        h.push_str("</table>\n");
    }
}
