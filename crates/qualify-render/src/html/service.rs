//! Service under load: the latency-vs-offered-rate "hockey stick" per `load` axis (corrected p99
//! solid and p50 dashed on a log axis, one series per combination of the other axes, points
//! joined in order of the offered rate, points of cells that did not end ok marked with their
//! outcome, latency objectives as dashed lines), answers and goodput (answers that met
//! `expect_status`) against offered rate — shedding, error storms and a capacity plateau show
//! as goodput falling away from the answers —, the table of service cells (offered rate,
//! answers and goodput per second, corrected
//! latencies with the uncorrected ones beside them, errors by class, dropped arrivals, the
//! objectives' verdicts each with the phase it was judged over, how the service stopped,
//! memory growth) and per cell (with, for a cell with a fault window, its phases: answers and
//! goodput per second, timeouts, fast errors and their p99) a
//! timeline of the measured phase (sent / completed / errors per second and the corrected p99
//! per second). Cells without an answered request have no latency and are named, not drawn.

use std::collections::BTreeSet;
use std::fmt::Write;

use qualify_model::outcome::style_of;
use serde_json::{Map, Value};

use super::envelope::swatch;
use crate::svg::{Axis, PALETTE, Plot, Scale};
use crate::text::{self, esc, num};
use crate::view::{self, ServiceRow, View, duration};

/// Cells whose timelines are drawn before the rest are only counted.
const MAX_TIMELINES: usize = 48;
/// Seconds up to which every point of a timeline gets a marker (beyond: lines only).
const MARKED_SECONDS: usize = 30;
/// The colour of objectives and errors.
const RED: &str = "#c62828";

pub(super) fn service(h: &mut String, v: &View) {
    let rows = v.services();
    if rows.is_empty() {
        return;
    }
    h.push_str(
        "<h2>Service under load</h2>\n<p class=\"meta\">Each service cell started the service fresh, offered it load, \
         judged its objectives and stopped it. Latencies are <b>corrected</b>: measured from each request's intended \
         start, so a request that waited (for a connection slot, or behind a stalled service) keeps its wait; the \
         uncorrected latency, from the actual send, is shown beside it.</p>\n",
    );
    let mut plots = Vec::new();
    let mut undrawn: BTreeSet<String> = BTreeSet::new();
    let mut marked: Vec<String> = Vec::new();
    for axis in v.load_axes() {
        if let Some(p) = hockey(&rows, &axis) {
            plots.push(p.svg);
            undrawn.extend(p.missing);
            marked.extend(p.marked);
        }
        if let Some(p) = achieved(&rows, &axis) {
            plots.push(p.svg);
            marked.extend(p.marked);
        }
    }
    if !plots.is_empty() {
        h.push_str("<div class=\"plots\">\n");
        for p in &plots {
            h.push_str(p);
            h.push('\n');
        }
        h.push_str("</div>\n");
        marked_legend(h, &rows, &marked);
        if !undrawn.is_empty() {
            let _ = writeln!(
                h,
                "<p class=\"meta\">Not drawn (no request answered, so no latency): {}.</p>",
                esc(&undrawn.into_iter().collect::<Vec<_>>().join("; "))
            );
        }
    }
    table(h, &rows);
    shapes_and_generators(h, &rows);
    timelines(h, &rows);
}

/// A staged or Poisson load's shape (a ramp: where objectives first failed) and a split load's
/// generators, per cell that has them.
fn shapes_and_generators(h: &mut String, rows: &[ServiceRow]) {
    for r in rows {
        if let Some(shape) = &r.shape {
            let verdict = shape
                .first_failed_text()
                .map_or_else(String::new, |t| format!(": {t}"));
            let _ = writeln!(
                h,
                "<p><b>{}</b> load shape: {}{}</p>",
                esc(r.name()),
                esc(&shape.describe()),
                esc(&verdict)
            );
        }
        if r.generators.is_empty() {
            continue;
        }
        let _ = writeln!(
            h,
            "<p><b>{}</b> load generators (one merged verdict):</p>\n<table><tr><th>generator</th><th>offered</th><th>sent</th><th>answered</th><th>lag p99</th><th>CPU</th><th>saturated</th></tr>",
            esc(r.name())
        );
        for g in &r.generators {
            let saturated = match (&g.saturated, &g.detail) {
                (true, Some(d)) => format!("yes: {d}"),
                (true, None) => "yes".to_string(),
                _ => "no".to_string(),
            };
            let _ = writeln!(
                h,
                "<tr><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{} req/s</td><td class=\"num\">{}</td><td class=\"num\">{} s</td><td>{}</td></tr>",
                g.index,
                esc(&g
                    .offered_rate
                    .map_or_else(|| "—".to_string(), |x| format!("{} req/s", num(x)))),
                g.sent,
                esc(&num(g.achieved_rate)),
                esc(&g.schedule_lag.p99.map_or_else(|| "—".to_string(), duration)),
                esc(&num(g.cpu_seconds)),
                esc(&saturated)
            );
        }
        h.push_str("</table>\n");
    }
}

/// The outcomes the plots marked (every one but `ok`), as swatches, in the cells' order.
fn marked_legend(h: &mut String, rows: &[ServiceRow], marked: &[String]) {
    let mut seen: Vec<&str> = Vec::new();
    for r in rows {
        if marked.contains(&r.outcome) && !seen.contains(&r.outcome.as_str()) {
            seen.push(&r.outcome);
        }
    }
    if seen.is_empty() {
        return;
    }
    h.push_str("<p>Marked points: ");
    for o in seen {
        h.push_str(&swatch(style_of(o), &esc(o)));
    }
    h.push_str("</p>\n");
}

/// A drawn plot: its SVG, the outcomes it marked and the cells it could not draw.
struct Drawn {
    svg: String,
    marked: Vec<String>,
    missing: Vec<String>,
}

/// One series of a plot: the cells at fixed values of the other axes, along `axis`.
struct Series<'a> {
    fixed: Map<String, Value>,
    pts: Vec<(f64, &'a ServiceRow)>,
}

/// The series along `axis` (one per combination of the other parameters, at most one per
/// colour) and how many were left out.
fn series<'a>(rows: &'a [ServiceRow], axis: &str) -> (Vec<Series<'a>>, usize) {
    let mut out: Vec<Series> = Vec::new();
    for r in rows {
        let Some(x) = view::coord(&r.params, axis) else {
            continue;
        };
        let mut fixed = r.params.clone();
        fixed.remove(axis);
        match out.iter_mut().find(|s| s.fixed == fixed) {
            Some(s) => s.pts.push((x, r)),
            None => out.push(Series {
                fixed,
                pts: vec![(x, r)],
            }),
        }
    }
    // Joined in order of the offered rate (cells come in the order they ran: a boundary
    // search gallops and bisects).
    for s in &mut out {
        s.pts.sort_by(|a, b| {
            a.0.total_cmp(&b.0).then_with(|| {
                a.1.offered
                    .unwrap_or(0.0)
                    .total_cmp(&b.1.offered.unwrap_or(0.0))
            })
        });
    }
    let dropped = out.len().saturating_sub(PALETTE.len());
    out.truncate(PALETTE.len());
    (out, dropped)
}

/// At least two distinct x values along the axis.
fn spread(series: &[Series]) -> bool {
    let xs: BTreeSet<String> = series
        .iter()
        .flat_map(|s| s.pts.iter().map(|(x, _)| x.to_string()))
        .collect();
    xs.len() >= 2
}

/// `offered rate (req/s)` for an open model, `users` for a closed one.
fn x_label(axis: &str, series: &[Series]) -> String {
    let mut cells = series.iter().flat_map(|s| s.pts.iter());
    let closed =
        cells.clone().all(|(_, r)| r.offered.is_none()) && cells.any(|(_, r)| r.users.is_some());
    if closed {
        if axis == "users" {
            "concurrent users".to_string()
        } else {
            format!("{axis}: concurrent users")
        }
    } else {
        format!("{axis}: offered rate (req/s)")
    }
}

/// The distinct latency objectives with an upper limit: (metric, limit).
fn latency_limits(rows: &[ServiceRow]) -> Vec<(String, f64)> {
    let mut out: Vec<(String, f64)> = Vec::new();
    for r in rows {
        for slo in &r.slos {
            if let Some(l) = slo.steady_latency_limit()
                && !out.iter().any(|(m, x)| *m == slo.metric && *x == l)
            {
                out.push((slo.metric.clone(), l));
            }
        }
    }
    out
}

/// `workers=2`, or `all cells` when nothing else varies.
fn series_label(fixed: &Map<String, Value>) -> String {
    let t = text::fixed(fixed);
    if t.is_empty() { "all cells".into() } else { t }
}

/// A point's hover title: the cell, its outcome and its figures.
fn point_title(r: &ServiceRow) -> String {
    let d = |x: Option<f64>| x.map_or_else(|| "—".to_string(), duration);
    let mut t = format!(
        "{}: {} — corrected p99 {} (uncorrected {}), p50 {} (uncorrected {})",
        r.cell,
        r.outcome,
        d(r.corrected.p99),
        d(r.uncorrected.p99),
        d(r.corrected.p50),
        d(r.uncorrected.p50)
    );
    if let Some(a) = r.achieved {
        t.push_str(&format!("; achieved {} req/s", num(a)));
        if let Some(o) = r.offered {
            t.push_str(&format!(" of {} offered", num(o)));
        }
    }
    if let Some(dropped) = r.dropped.filter(|d| *d > 0.0) {
        t.push_str(&format!("; {} dropped", num(dropped)));
    }
    if !r.verdict.is_empty() {
        t.push_str(&format!("; {}", r.verdict));
    }
    t
}

/// A filled circle for an `ok` cell, otherwise the outcome's badge (its outcome noted in
/// `marked`).
fn mark(plot: &mut Plot, x: f64, y: f64, r: &ServiceRow, color: &str, marked: &mut Vec<String>) {
    let title = point_title(r);
    if r.outcome == "ok" {
        plot.circle(x, y, color, true, &title);
    } else {
        let st = style_of(&r.outcome);
        plot.badge(x, y, st.mark, st.fill, st.text, &title);
        if !marked.contains(&r.outcome) {
            marked.push(r.outcome.clone());
        }
    }
}

/// The hockey stick along `axis`.
fn hockey(rows: &[ServiceRow], axis: &str) -> Option<Drawn> {
    let (series, dropped) = series(rows, axis);
    if !spread(&series) {
        return None;
    }
    let limits = latency_limits(rows);
    let xs: Vec<f64> = series
        .iter()
        .flat_map(|s| s.pts.iter().map(|(x, _)| *x))
        .collect();
    let ys: Vec<f64> = series
        .iter()
        .flat_map(|s| s.pts.iter())
        .flat_map(|(_, r)| [r.corrected.p99, r.corrected.p50])
        .flatten()
        .chain(limits.iter().map(|(_, l)| *l))
        .collect();
    let x_axis = Axis::fit(Scale::Linear, xs)?.from_zero();
    let y_axis = Axis::fit(Scale::Log10, ys)?;
    let mut plot = Plot::new(540.0, 360.0, x_axis, y_axis);
    plot.axes(
        &format!("latency against {axis} (corrected)"),
        &x_label(axis, &series),
        "latency (s)",
    );
    for (metric, limit) in &limits {
        plot.hline(
            *limit,
            RED,
            &format!("objective {metric} ≤ {}", duration(*limit)),
        );
    }
    let (mut missing, mut marked) = (Vec::new(), Vec::new());
    for (i, se) in series.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        let p99: Vec<(f64, f64)> = se
            .pts
            .iter()
            .filter_map(|(x, r)| Some((*x, r.corrected.p99?)))
            .collect();
        let p50: Vec<(f64, f64)> = se
            .pts
            .iter()
            .filter_map(|(x, r)| Some((*x, r.corrected.p50?)))
            .collect();
        plot.polyline(&p99, color, false);
        plot.polyline(&p50, color, true);
        for (x, r) in &se.pts {
            if let Some(y) = r.corrected.p50 {
                plot.circle(*x, y, color, false, &point_title(r));
            }
            match r.corrected.p99 {
                Some(y) => mark(&mut plot, *x, y, r, color, &mut marked),
                None => missing.push(format!("{} ({})", r.cell, r.outcome)),
            }
        }
        plot.legend(&series_label(&se.fixed), color, "line");
    }
    plot.legend("corrected p99", "#444", "line");
    plot.legend("corrected p50 (hollow markers)", "#444", "dash");
    if !limits.is_empty() {
        plot.legend("latency objective", RED, "dash");
    }
    if dropped > 0 {
        plot.legend(
            &format!("({dropped} more series not drawn; see the table)"),
            "#fff",
            "line",
        );
    }
    Some(Drawn {
        svg: plot.finish(&format!("corrected latency against {axis}")),
        marked,
        missing,
    })
}

/// Answers (solid) and goodput (dashed: answers that met `expect_status`) against offered rate
/// along `axis` (open model), with the line where answers equal the offered rate.
fn achieved(rows: &[ServiceRow], axis: &str) -> Option<Drawn> {
    let (series, dropped) = series(rows, axis);
    let series: Vec<Series> = series
        .into_iter()
        .map(|mut s| {
            s.pts
                .retain(|(_, r)| r.offered.is_some() && r.achieved.is_some());
            s
        })
        .filter(|s| !s.pts.is_empty())
        .collect();
    if !spread(&series) {
        return None;
    }
    let offered: Vec<f64> = series
        .iter()
        .flat_map(|s| s.pts.iter().filter_map(|(_, r)| r.offered))
        .collect();
    let xs: Vec<f64> = series
        .iter()
        .flat_map(|s| s.pts.iter().map(|(x, _)| *x))
        .collect();
    let ys: Vec<f64> = series
        .iter()
        .flat_map(|s| s.pts.iter().flat_map(|(_, r)| [r.achieved, r.throughput]))
        .flatten()
        .chain(offered.iter().copied())
        .collect();
    let x_axis = Axis::fit(Scale::Linear, xs)?.from_zero();
    let y_axis = Axis::fit(Scale::Linear, ys)?.from_zero();
    let mut plot = Plot::new(540.0, 360.0, x_axis, y_axis);
    plot.axes(
        &format!("answers and goodput against offered rate ({axis})"),
        &x_label(axis, &series),
        "per second",
    );
    // Where the service keeps up: achieved = offered (drawn at the cells' own offered rates).
    let mut ideal: Vec<(f64, f64)> = series
        .iter()
        .flat_map(|s| s.pts.iter().filter_map(|(x, r)| Some((*x, r.offered?))))
        .collect();
    ideal.sort_by(|a, b| a.0.total_cmp(&b.0));
    ideal.dedup_by(|a, b| a.0 == b.0);
    plot.polyline(&ideal, "#888", true);
    let mut marked = Vec::new();
    for (i, se) in series.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        let line: Vec<(f64, f64)> = se
            .pts
            .iter()
            .filter_map(|(x, r)| Some((*x, r.achieved?)))
            .collect();
        plot.polyline(&line, color, false);
        let good: Vec<(f64, f64)> = se
            .pts
            .iter()
            .filter_map(|(x, r)| Some((*x, r.throughput?)))
            .collect();
        plot.polyline(&good, color, true);
        for (x, r) in &se.pts {
            if let Some(g) = r.throughput {
                plot.circle(
                    *x,
                    g,
                    color,
                    false,
                    &format!("{}: goodput {} req/s", r.cell, num(g)),
                );
            }
            if let Some(a) = r.achieved {
                mark(&mut plot, *x, a, r, color, &mut marked);
            }
        }
        plot.legend(&series_label(&se.fixed), color, "line");
    }
    plot.legend("answers/s (any status)", "#444", "line");
    plot.legend(
        "goodput/s (answers that met expect_status; hollow markers)",
        "#444",
        "dash",
    );
    plot.legend("answers = offered (kept up)", "#888", "dash");
    if dropped > 0 {
        plot.legend(
            &format!("({dropped} more series not drawn; see the table)"),
            "#fff",
            "line",
        );
    }
    Some(Drawn {
        svg: plot.finish(&format!("answers and goodput against {axis}")),
        marked,
        missing: Vec::new(),
    })
}

/// `43 ms` with the uncorrected figure beneath it.
fn latency_cell(corrected: Option<f64>, uncorrected: Option<f64>) -> String {
    let d = |x: Option<f64>| x.map_or_else(|| "—".to_string(), duration);
    format!(
        "<td class=\"num\"><b>{}</b><br><span class=\"meta\">{}</span></td>",
        esc(&d(corrected)),
        esc(&d(uncorrected))
    )
}

fn table(h: &mut String, rows: &[ServiceRow]) {
    h.push_str(
        "<table><tr><th>cell</th><th>outcome</th><th>offered</th><th>answered</th><th>goodput</th>\
         <th>p50<br><span class=\"meta\">uncorrected</span></th><th>p99<br><span class=\"meta\">uncorrected</span></th>\
         <th>max<br><span class=\"meta\">uncorrected</span></th><th>errors</th><th>dropped</th><th>objectives</th>\
         <th>stop</th><th>memory</th></tr>\n",
    );
    for r in rows {
        let st = style_of(&r.outcome);
        let mut verdict = String::new();
        // An ok cell's verdict repeats its columns; another's says why.
        if !r.verdict.is_empty() && r.outcome != "ok" {
            let _ = write!(
                verdict,
                "<br><span class=\"meta\">{}</span>",
                esc(&r.verdict)
            );
        }
        if r.saturated {
            verdict.push_str(
                "<br><span class=\"meta\">the load generator was the bottleneck: not evidence about the service</span>",
            );
        }
        let (offered, achieved) = (r.offered_text(), r.achieved_text());
        let _ = write!(
            h,
            "<tr><td>{}</td><td>{}{verdict}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>",
            esc(&r.cell),
            swatch(st, &esc(&r.outcome)),
            esc(&offered),
            esc(&achieved),
            esc(&r.goodput_text()),
        );
        h.push_str(&latency_cell(r.corrected.p50, r.uncorrected.p50));
        h.push_str(&latency_cell(r.corrected.p99, r.uncorrected.p99));
        h.push_str(&latency_cell(r.corrected.max, r.uncorrected.max));
        let dropped = r.dropped.map_or_else(|| "—".to_string(), num);
        let objectives: Vec<String> = r
            .slos
            .iter()
            .map(|x| {
                let class = if x.held {
                    ""
                } else {
                    " class=\"st st-failed\""
                };
                format!("<span{class}>{}</span>", esc(&x.text()))
            })
            .collect();
        let _ = writeln!(
            h,
            "<td>{}</td><td class=\"num\">{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&r.errors_text()),
            esc(&dropped),
            if objectives.is_empty() {
                "—".to_string()
            } else {
                objectives.join("<br>")
            },
            esc(&r.stop_text()),
            esc(&r.memory_text()),
        );
    }
    h.push_str("</table>\n");
}

fn timelines(h: &mut String, rows: &[ServiceRow]) {
    let with: Vec<&ServiceRow> = rows.iter().filter(|r| !r.timeline.is_empty()).collect();
    if with.is_empty() {
        return;
    }
    h.push_str(
        "<h3>Timelines of the measured phase</h3>\n<p class=\"meta\">Per second of the measured phase (seconds \
         after the schedule are the drain): requests sent, answered and failed, and the corrected p99 of the \
         requests answered in that second. Cells that did not end ok are open.</p>\n",
    );
    for r in with.iter().take(MAX_TIMELINES) {
        let open = if r.outcome == "ok" { "" } else { " open" };
        let _ = write!(
            h,
            "<details{open}><summary>{} — {}</summary><div class=\"plots\">",
            esc(&r.cell),
            esc(&r.outcome)
        );
        if let Some(svg) = counts(r) {
            h.push_str(&svg);
        }
        if let Some(svg) = p99(r) {
            h.push_str(&svg);
        }
        h.push_str("</div>");
        phases(h, r);
        h.push_str("</details>\n");
    }
    if with.len() > MAX_TIMELINES {
        let _ = writeln!(
            h,
            "<p class=\"meta\">… and {} more cells (their timelines are in the receipt's result.load).</p>",
            with.len() - MAX_TIMELINES
        );
    }
}

/// Per phase around a fault window: answers and goodput per second, and what the failed
/// requests met (timeouts, fast errors with their p99).
fn phases(h: &mut String, r: &ServiceRow) {
    if r.phases.is_empty() {
        return;
    }
    let n = |x: Option<f64>| x.map_or_else(|| "—".to_string(), num);
    h.push_str(
        "<table><tr><th>phase</th><th>answered/s</th><th>goodput/s</th><th>timeouts</th><th>fast errors<br><span class=\"meta\">p99</span></th></tr>",
    );
    for p in &r.phases {
        let p99 = p
            .fast_error_p99
            .map(|x| format!("<br><span class=\"meta\">{}</span>", esc(&duration(x))))
            .unwrap_or_default();
        let _ = write!(
            h,
            "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}{p99}</td></tr>",
            esc(&p.name),
            esc(&n(p.answered_rate())),
            esc(&n(p.goodput())),
            esc(&n(p.timeouts)),
            esc(&n(p.fast_errors)),
        );
    }
    h.push_str("</table>");
}

/// Sent, answered and failed requests per second, and the offered rate.
fn counts(r: &ServiceRow) -> Option<String> {
    let t = &r.timeline;
    let x_axis = Axis::fit(Scale::Linear, t.iter().map(|s| s.second))?;
    let ys = t
        .iter()
        .flat_map(|s| [s.sent, s.completed, s.errors, s.offered])
        .flatten()
        .chain(r.offered);
    let y_axis = Axis::fit(Scale::Linear, ys)?.from_zero();
    let mut plot = Plot::new(420.0, 260.0, x_axis, y_axis);
    plot.axes(
        "requests per second",
        "second of the measured phase",
        "requests",
    );
    let staged: Vec<(f64, f64)> = t
        .iter()
        .filter_map(|s| Some((s.second, s.offered?)))
        .collect();
    if !staged.is_empty() {
        // A ramp: the rate each second offered.
        plot.polyline(&staged, "#888", true);
        plot.legend("offered", "#888", "dash");
    } else if let Some(o) = r.offered {
        plot.hline(o, "#888", &format!("offered {} req/s", num(o)));
    }
    let marked = t.len() <= MARKED_SECONDS;
    for (name, color, pick) in [
        (
            "sent",
            PALETTE[0],
            (|s: &view::Second| s.sent) as fn(&view::Second) -> Option<f64>,
        ),
        ("answered", PALETTE[2], |s: &view::Second| s.completed),
        ("failed", RED, |s: &view::Second| s.errors),
    ] {
        let pts: Vec<(f64, f64)> = t
            .iter()
            .filter_map(|s| Some((s.second, pick(s)?)))
            .collect();
        plot.polyline(&pts, color, false);
        if marked {
            for (x, y) in &pts {
                plot.circle(
                    *x,
                    *y,
                    color,
                    true,
                    &format!("second {}: {} {name}", num(*x), num(*y)),
                );
            }
        }
        plot.legend(name, color, "line");
    }
    Some(plot.finish(&format!("requests per second, {}", r.cell)))
}

/// The corrected p99 of each second (log axis), with the p99 objective.
fn p99(r: &ServiceRow) -> Option<String> {
    let t = &r.timeline;
    let pts: Vec<(f64, f64)> = t.iter().filter_map(|s| Some((s.second, s.p99?))).collect();
    let limit = r
        .slos
        .iter()
        .find(|x| x.metric == "latency_p99" && x.phase != "fault")
        .and_then(|x| x.steady_latency_limit());
    let x_axis = Axis::fit(Scale::Linear, t.iter().map(|s| s.second))?;
    let y_axis = Axis::fit(
        Scale::Log10,
        pts.iter()
            .map(|(_, y)| *y)
            .chain(limit.filter(|_| !pts.is_empty())),
    )?;
    let mut plot = Plot::new(420.0, 260.0, x_axis, y_axis);
    plot.axes(
        "corrected p99 per second",
        "second of the measured phase",
        "latency (s)",
    );
    if let Some(l) = limit {
        plot.hline(l, RED, &format!("objective ≤ {}", duration(l)));
    }
    plot.polyline(&pts, PALETTE[1], false);
    if t.len() <= MARKED_SECONDS {
        for (x, y) in &pts {
            plot.circle(
                *x,
                *y,
                PALETTE[1],
                true,
                &format!("second {}: corrected p99 {}", num(*x), duration(*y)),
            );
        }
    }
    plot.legend(
        "corrected p99 of the answers in that second",
        PALETTE[1],
        "line",
    );
    Some(plot.finish(&format!("corrected p99 per second, {}", r.cell)))
}
