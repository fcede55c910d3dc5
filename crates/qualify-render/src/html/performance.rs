//! The performance section: the run's repeat and metric facts, the analysis's errors, the
//! workload and concurrency plots (`scaling`, `concurrency`), the checks, the predictions
//! (marked as not evidence) and the per-cell statistics table.

use std::fmt::Write;

use crate::text::{self, esc, num};
use crate::view::{Performance, View};

use super::with_unit;

pub(super) fn performance(h: &mut String, v: &View, p: &Performance, order: &[String]) {
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
    super::scaling::curves(h, v, p);
    for s in &p.scaling {
        super::concurrency::concurrency(h, v, p, s);
    }
    checks(h, p);
    predictions(h, p);
    stats_table(h, p, order);
}

fn checks(h: &mut String, p: &Performance) {
    if p.checks.is_empty() {
        return;
    }
    h.push_str("<h3>Checks</h3>\n<table><tr><th>result</th><th>kind</th><th>axis</th><th>metric</th><th>limit</th><th>observed</th><th>95% interval</th><th>detail</th></tr>\n");
    for c in &p.checks {
        let (cls, word) = match c.passed {
            Some(true) => ("st-closed", "passed"),
            Some(false) => ("st-failed", "FAILED"),
            None => ("st-not_run", "not decided"),
        };
        let _ = writeln!(
            h,
            "<tr><td class=\"st {cls}\">{word}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td></tr>",
            esc(&c.kind),
            esc(&c.axis),
            esc(&c.metric),
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
