//! GitHub-flavoured Markdown for CI job summaries: verdict, layer table, cells that did not end
//! ok, boundaries, performance checks and predictions (when the receipt has them), the target gap.

use std::fmt::Write;

use serde_json::Value;

use crate::html::boundary_line;
use crate::text::{self, md_cell, num};
use crate::view::View;

/// Rows of the failing-cells table before it is cut short.
const MAX_FAILING: usize = 50;

fn status_mark(status: &str) -> &'static str {
    match status {
        "closed" => "✅",
        "failed" => "❌",
        "partial" => "⚠️",
        _ => "⚪",
    }
}

pub fn render(v: &View) -> String {
    let mut m = String::new();
    let level = v.claim_level();
    let verdict = match v.supported() {
        Some(true) => format!("✅ {level} claim SUPPORTED"),
        Some(false) => format!("❌ {level} claim NOT SUPPORTED"),
        None => format!("⚪ {level} claim: no verdict recorded"),
    };
    let _ = writeln!(m, "## qualify: {} — {verdict}\n", md_cell(&v.artifact()));
    for r in v.reasons() {
        let _ = writeln!(m, "- {}", md_cell(&r));
    }
    if !v.reasons().is_empty() {
        m.push('\n');
    }
    if v.incomplete() {
        m.push_str("> **Interrupted run:** only what finished counts as evidence.\n\n");
    }

    m.push_str("### Layers\n\n| layer | status | summary | untested |\n|---|---|---|---|\n");
    for l in v.layers() {
        let _ = writeln!(
            m,
            "| {} | {} {} | {} | {} |",
            md_cell(&l.name),
            status_mark(&l.status),
            md_cell(&l.status),
            md_cell(&l.summary),
            if l.untested.is_empty() {
                "—".to_string()
            } else {
                md_cell(&l.untested.join("; "))
            }
        );
    }

    let order = v.axis_order();
    let cells = v.cells();
    let failing: Vec<_> = cells.iter().filter(|c| c.outcome != "ok").collect();
    if !cells.is_empty() {
        let _ = writeln!(
            m,
            "\n### Cells\n\n{} cell(s), {} ended ok, {} did not.",
            cells.len(),
            cells.len() - failing.len(),
            failing.len()
        );
    }
    if !failing.is_empty() {
        m.push_str("\n| cell | outcome | detail |\n|---|---|---|\n");
        for c in failing.iter().take(MAX_FAILING) {
            let _ = writeln!(
                m,
                "| {} | {} | {} |",
                md_cell(&text::params(&c.params, &order)),
                md_cell(&c.outcome),
                md_cell(&c.detail)
            );
        }
        if failing.len() > MAX_FAILING {
            let _ = writeln!(m, "\n… and {} more.", failing.len() - MAX_FAILING);
        }
    }

    let b = v.boundaries();
    if !b.is_empty() {
        m.push_str("\n### Boundaries\n\n");
        for x in b {
            let _ = writeln!(m, "- {}", md_cell(&boundary_line(x)));
        }
    }

    if let Some(p) = v.performance() {
        if !p.errors.is_empty() {
            m.push_str("\n### Performance analysis errors\n\n");
            for e in &p.errors {
                let _ = writeln!(m, "- {}", md_cell(e));
            }
        }
        if !p.checks.is_empty() {
            m.push_str("\n### Performance checks\n\n| result | kind | axis | metric | limit | observed | 95% interval | detail |\n|---|---|---|---|---|---|---|---|\n");
            for c in &p.checks {
                let g = |k: &str| md_cell(&c.get(k).map(text::value).unwrap_or_else(|| "—".into()));
                let res = match c.get("passed").and_then(Value::as_bool) {
                    Some(true) => "✅ passed",
                    Some(false) => "❌ FAILED",
                    None => "⚪ not decided",
                };
                let _ = writeln!(
                    m,
                    "| {res} | {} | {} | {} | {} | {} | {} | {} |",
                    g("kind"),
                    g("axis"),
                    g("metric"),
                    g("limit"),
                    g("observed"),
                    g("interval"),
                    g("detail")
                );
            }
        }
        if !p.models.is_empty() {
            m.push_str("\n### Scaling models\n\n| axis | metric | fixed | form | exponent (95% CI) | log exponent | error | points |\n|---|---|---|---|---|---|---|---|\n");
            for x in &p.models {
                let fixed = x
                    .fixed
                    .iter()
                    .map(|(k, v)| format!("{k}={}", text::value(v)))
                    .collect::<Vec<_>>()
                    .join(", ");
                let _ = writeln!(
                    m,
                    "| {} | {} | {} | {} | {} | {} | {} | {} |",
                    md_cell(&x.axis),
                    md_cell(&x.metric),
                    md_cell(if fixed.is_empty() { "—" } else { &fixed }),
                    md_cell(&x.form),
                    match x.exponent_ci95 {
                        Some((a, b)) => format!("{} [{}, {}]", num(x.exponent), num(a), num(b)),
                        None => num(x.exponent),
                    },
                    num(x.log_exponent),
                    x.error.map(num).unwrap_or_else(|| "—".into()),
                    x.points
                        .map(|p| p.to_string())
                        .unwrap_or_else(|| "—".into())
                );
            }
        }
        if !p.predictions.is_empty() {
            m.push_str("\n### Model predictions (not evidence)\n\n");
            for x in &p.predictions {
                let _ = writeln!(
                    m,
                    "- {} at {}={}: {} {} ({}){}",
                    md_cell(&x.metric),
                    md_cell(&x.axis),
                    x.at.map(num).unwrap_or_else(|| "?".into()),
                    x.value.map(num).unwrap_or_else(|| "?".into()),
                    md_cell(&p.unit(&x.metric)),
                    md_cell(&x.model),
                    if x.note.is_empty() {
                        String::new()
                    } else {
                        format!(" — {}", md_cell(&x.note))
                    }
                );
            }
        }
    }

    let gaps = v.gaps();
    if !gaps.is_empty() {
        m.push_str("\n### Target gap\n\n| gap | target | tested | detail | waiver |\n|---|---|---|---|---|\n");
        for g in gaps {
            let name = g.get("name").map(text::value).unwrap_or_default();
            let name = match g.get("axis").and_then(Value::as_str) {
                Some(a) => format!("{name}.{a}"),
                None => name,
            };
            let _ = writeln!(
                m,
                "| {} | {} | {} | {} | {} |",
                md_cell(&name),
                md_cell(&g.get("target").map(text::value).unwrap_or_default()),
                md_cell(
                    &g.get("tested")
                        .map(text::value)
                        .unwrap_or_else(|| "—".into())
                ),
                md_cell(&g.get("detail").map(text::value).unwrap_or_default()),
                md_cell(g.get("waiver").and_then(Value::as_str).unwrap_or("—"))
            );
        }
    } else if v.target().is_some() {
        m.push_str("\n### Target gap\n\nThe tested region reached every declared target fact.\n");
    }
    m
}
