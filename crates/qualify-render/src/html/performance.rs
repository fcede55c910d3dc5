//! The performance section: the run's rounds and metric facts (each metric's estimator), the
//! analysis's errors, the workload and concurrency plots (`scaling`, `concurrency`), the
//! machine's noise per round and the noisy cells (`noise`), the checks with their verdicts
//! (inconclusive ones naming the plausible terms), the models with their plausible terms, the
//! predictions (marked as not evidence) and the per-cell statistics table.

use std::fmt::Write;

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

/// Plausible terms a row of the models table names before "and N more".
const SHOWN: usize = 10;

fn models(h: &mut String, p: &Performance) {
    if !p.models.iter().any(|m| !m.plausible.is_empty()) {
        return;
    }
    h.push_str("<h3>Models and the terms the data cannot rule out</h3>\n<table><tr><th>metric</th><th>along</th><th>fixed</th><th>chosen</th><th>exponent (95% interval)</th><th>also plausible</th></tr>\n");
    for m in &p.models {
        let fixed = crate::text::fixed(&m.fixed);
        let others: Vec<&str> = m
            .plausible
            .iter()
            .filter(|f| **f != m.form)
            .map(String::as_str)
            .collect();
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td><td>{}</td></tr>",
            esc(&if m.estimator.is_empty() {
                m.metric.clone()
            } else {
                format!("{} ({})", m.metric, m.estimator)
            }),
            esc(&m.axis),
            esc(if fixed.is_empty() { "—" } else { &fixed }),
            esc(&m.form),
            match m.exponent_ci95 {
                Some((a, b)) => format!("{} [{}, {}]", num(m.exponent), num(a), num(b)),
                None => num(m.exponent),
            },
            esc(&match others.len() {
                0 => "none".to_string(),
                1..=SHOWN => others.join(", "),
                k => format!("{} and {} more", others[..SHOWN].join(", "), k - SHOWN),
            })
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
    h.push_str("<h3>Checks</h3>\n<table><tr><th>result</th><th>kind</th><th>axis</th><th>metric</th><th>limit</th><th>observed</th><th>95% interval</th><th>detail</th></tr>\n");
    for c in &p.checks {
        let word = c.result();
        let cls = match word {
            "held" | "passed" => "st-closed",
            "VIOLATED" | "FAILED" => "st-failed",
            "inconclusive" => "st-partial",
            _ => "st-not_run",
        };
        let metric = if c.estimator.is_empty() {
            c.metric.clone()
        } else {
            format!("{} ({})", c.metric, c.estimator)
        };
        let _ = writeln!(
            h,
            "<tr><td class=\"st {cls}\">{word}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td></tr>",
            esc(&c.kind),
            esc(&c.axis),
            esc(&metric),
            esc(&c.limit),
            esc(&c.observed),
            esc(&c.interval),
            esc(&c.detail)
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
