//! The performance section: the run's rounds and metric facts (each metric's estimator), the
//! analysis's errors, the workload and concurrency plots (`scaling`, `concurrency`), the
//! machine's noise per round and the noisy cells (`noise`), the checks with their verdicts
//! (inconclusive ones naming the plausible terms), the models with their plausible terms, the
//! predictions (marked as not evidence) and the per-cell statistics table.

use std::fmt::Write;

use crate::perf_tables::{self, Standing};
use crate::text::{self, esc, num};
use crate::view::{Performance, View};

use super::with_unit;

pub(super) fn performance(h: &mut String, v: &View, p: &Performance, order: &[String]) {
    h.push_str("<h2>Performance</h2>\n");
    let mut meta = Vec::new();
    match (&p.rounds, p.repeat.as_str()) {
        (Some(r), repeat) => meta.push(format!(
            "repeat {}: {} round(s), seed {} ({})",
            if repeat.is_empty() { "?" } else { repeat },
            r.rounds.map_or_else(|| "?".to_string(), |n| n.to_string()),
            r.seed,
            r.stopped
        )),
        (None, "") => {}
        (None, repeat) => meta.push(format!("{repeat} runs per cell")),
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
                    if !m.estimator.is_empty() {
                        s.push_str(&format!(", located by its {}", m.estimator));
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
    if let Some(r) = p.rounds.as_ref().filter(|r| !r.schedule.is_empty()) {
        let _ = writeln!(h, "<p class=\"meta\">{}</p>", esc(&r.schedule));
    }
    if !p.errors.is_empty() {
        h.push_str("<div class=\"warn\"><b>The performance analysis reported errors:</b><ul>");
        for e in &p.errors {
            let _ = write!(h, "<li>{}</li>", esc(e));
        }
        h.push_str("</ul></div>\n");
    }
    super::scaling::curves(h, v, p);
    for s in &p.scaling {
        super::concurrency::concurrency(h, v, p, s);
    }
    super::noise::noise(h, p, order);
    checks(h, p);
    models(h, p);
    predictions(h, p);
    stats_table(h, p, order);
}

fn models(h: &mut String, p: &Performance) {
    if !p.models.iter().any(|m| !m.plausible.is_empty()) {
        return;
    }
    h.push_str("<h3>Models and the terms the data cannot rule out</h3>\n<table><tr><th>metric</th><th>along</th><th>fixed</th><th>chosen</th><th>exponent (95% interval)</th><th>also plausible</th></tr>\n");
    for m in perf_tables::models(p) {
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td><td>{}</td></tr>",
            esc(&m.metric),
            esc(&m.axis),
            esc(&m.fixed),
            esc(&m.form),
            m.exponent,
            esc(m.also_plausible().as_deref().unwrap_or("none"))
        );
    }
    h.push_str("</table>\n");
    if let Some(method) = p
        .models
        .iter()
        .map(|m| m.interval_method.as_str())
        .find(|s| !s.is_empty())
    {
        let _ = writeln!(h, "<p class=\"meta\">Intervals: {}.</p>", esc(method));
    }
}

fn checks(h: &mut String, p: &Performance) {
    if p.checks.is_empty() {
        return;
    }
    h.push_str("<h3>Checks</h3>\n<table><tr><th>result</th>");
    for c in perf_tables::CHECK_COLUMNS {
        let _ = write!(h, "<th>{c}</th>");
    }
    h.push_str("</tr>\n");
    for c in perf_tables::checks(p) {
        let cls = match c.standing {
            Standing::Held => "st-closed",
            Standing::Failed => "st-failed",
            Standing::Inconclusive => "st-partial",
            Standing::Undecided => "st-not_run",
        };
        let _ = write!(h, "<tr><td class=\"st {cls}\">{}</td>", c.result);
        for (i, cell) in c.cells().iter().enumerate() {
            // limit, observed and the interval are figures.
            let num = if (3..=5).contains(&i) {
                " class=\"num\""
            } else {
                ""
            };
            let _ = write!(h, "<td{num}>{}</td>", esc(cell));
        }
        h.push_str("</tr>\n");
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
        "<details><summary>Statistics per cell ({} rows)</summary>\n<table><tr><th>cell</th><th>metric</th><th>runs</th><th>estimate</th><th>95% CI</th><th>precision</th><th>median</th><th>MAD</th><th>spread</th><th>min – max</th><th>outliers</th><th>noise</th></tr>\n",
        p.stats.len()
    );
    let o = |v: Option<f64>| v.map(num).unwrap_or_else(|| "—".into());
    let pct = |v: Option<f64>| v.map_or_else(|| "—".into(), |x| format!("{:.1}%", x * 100.0));
    for s in &p.stats {
        let n = if s.censored > 0 {
            format!("{} ({} censored: ≥ limit)", s.n, s.censored)
        } else {
            s.n.to_string()
        };
        let estimate = if s.censored > 0 {
            format!("≥ {} ({})", o(s.estimate), s.estimator)
        } else {
            format!("{} ({})", o(s.estimate), s.estimator)
        };
        let precision = match s.precision_reached {
            Some(true) => format!("{} ✓", pct(s.precision)),
            Some(false) => format!("{} ✗", pct(s.precision)),
            None => pct(s.precision),
        };
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{} – {}</td><td>{}</td><td>{}</td></tr>",
            esc(&text::params(&s.params, order)),
            esc(&s.metric),
            esc(&n),
            esc(&estimate),
            s.ci95
                .map(|(a, b)| format!("[{}, {}]", num(a), num(b)))
                .unwrap_or_else(|| "—".into()),
            esc(&precision),
            o(s.median),
            o(s.mad),
            pct(s.spread),
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
                .join(", ")),
            esc(&s.noise.join("; "))
        );
    }
    h.push_str("</table></details>\n");
}
