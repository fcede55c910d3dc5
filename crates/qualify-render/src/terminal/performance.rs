//! The few lines of performance printed after the terminal summary: rounds and estimators,
//! models with their plausible terms, noise, scaling, checks, predictions, censoring,
//! measurement errors and the baseline comparison — drawn from the view's performance rows.

use std::fmt::Write as _;

use serde_json::{Map, Value};

use crate::view::{Performance, View};

/// ` [n=4,mode="fast"]`: values as JSON writes them, keys in the receipt's axis order.
fn fixed(m: &Map<String, Value>, order: &[String]) -> String {
    if m.is_empty() {
        return String::new();
    }
    let mut keys: Vec<&String> = order.iter().filter(|k| m.contains_key(*k)).collect();
    keys.extend(m.keys().filter(|k| !order.contains(k)));
    let parts: Vec<String> = keys
        .iter()
        .map(|k| format!("{k}={}", m[k.as_str()]))
        .collect();
    format!(" [{}]", parts.join(","))
}

/// `x` with `digits` decimals, or `?` when the receipt does not give it.
fn figure(x: Option<f64>, digits: usize) -> String {
    x.map_or_else(|| "?".to_string(), |x| format!("{x:.digits$}"))
}

/// The performance lines, or `None` when the receipt has no `[performance]` analysis.
pub fn performance(v: &View) -> Option<String> {
    let p = v.performance()?;
    Some(lines(&p, &v.axis_order()))
}

fn lines(p: &Performance, order: &[String]) -> String {
    let fixed = |m: &Map<String, Value>| fixed(m, order);
    let mut out = String::new();
    let estimators: Vec<String> = p
        .metrics
        .iter()
        .map(|m| format!("{} {}", m.name, m.estimator))
        .collect();
    let warmup = p.warmup.unwrap_or(0);
    match &p.rounds {
        Some(r) => {
            let _ = writeln!(
                out,
                "performance: repeat {}: {} round(s) after {} warmup, seed {} ({}); estimators: {}",
                p.repeat,
                r.rounds.unwrap_or(0),
                warmup,
                r.seed,
                r.stopped,
                estimators.join(", ")
            );
        }
        None => {
            let _ = writeln!(
                out,
                "performance: repeat {} after {} warmup; estimators: {}",
                p.repeat,
                warmup,
                estimators.join(", ")
            );
        }
    }
    for m in &p.models {
        let others: Vec<&str> = m
            .plausible
            .iter()
            .filter(|h| **h != m.form)
            .map(String::as_str)
            .collect();
        let (low, high) = m.exponent_ci95.unzip();
        let _ = writeln!(
            out,
            "  model    {} along {}{}: {} (exponent {:.2}, 95% CI [{}, {}], cv error {}%{})",
            m.metric,
            m.axis,
            fixed(&m.fixed),
            m.form,
            m.exponent,
            figure(low, 2),
            figure(high, 2),
            figure(m.error.map(|e| e * 100.0), 1),
            match others.len() {
                0 => String::new(),
                1..=5 => format!("; also plausible: {}", others.join(", ")),
                k => format!(
                    "; also plausible: {} and {} more",
                    others[..4].join(", "),
                    k - 4
                ),
            }
        );
    }
    for n in p.noise.iter().filter(|n| n.noisy_cells > 0) {
        let cells: Vec<String> = p
            .stats
            .iter()
            .filter(|s| s.metric == n.metric && !s.noise.is_empty())
            .take(3)
            .map(|s| format!("{}: {}", fixed(&s.params).trim(), s.noise.join("; ")))
            .collect();
        let _ = writeln!(
            out,
            "  noise    {}: {} noisy cell(s){}, e.g. {}",
            n.metric,
            n.noisy_cells,
            n.spread.map_or(String::new(), |x| format!(
                " (run spread {:.1}%)",
                x * 100.0
            )),
            cells.join(" | ")
        );
    }
    // One line per axis and reason: a single-valued axis leaves every group unfitted alike.
    let mut reasons: Vec<(&str, &str, usize)> = Vec::new();
    for (axis, reason) in &p.unfitted {
        match reasons
            .iter_mut()
            .find(|(a, r, _)| a == axis && r == reason)
        {
            Some(entry) => entry.2 += 1,
            None => reasons.push((axis, reason, 1)),
        }
    }
    for (axis, reason, count) in reasons {
        let _ = writeln!(
            out,
            "  no model along {axis} ({count} metric/group pair(s)): {reason}"
        );
    }
    for s in &p.scaling {
        let effs: Vec<String> = s
            .points
            .iter()
            .map(|pt| format!("{}:{}", pt.p, figure(pt.efficiency, 2)))
            .collect();
        let usl = s.usl_sigma.map_or(String::new(), |sigma| {
            format!(
                ", USL σ={:.3} κ={}{}",
                sigma,
                figure(s.usl_kappa, 4),
                s.usl_peak
                    .map_or(String::new(), |p| format!(" peak≈{p:.0}"))
            )
        });
        let amdahl = s
            .amdahl_serial
            .map_or(String::new(), |f| format!(", Amdahl serial {f:.3}"));
        let _ = writeln!(
            out,
            "  scaling  {} along {}{}: efficiency {}{amdahl}{usl}",
            s.metric,
            s.axis,
            fixed(&s.fixed),
            effs.join(" ")
        );
    }
    for c in crate::perf_tables::checks(p) {
        let _ = writeln!(out, "  check    {} {}: {}", c.kind, c.result, c.detail);
    }
    for pr in &p.predictions {
        let _ = writeln!(
            out,
            "  predict  {} at {}={}{}: {} ({}; {})",
            pr.metric,
            pr.axis,
            pr.at.map_or_else(|| "?".to_string(), |x| x.to_string()),
            fixed(&pr.fixed),
            figure(pr.value, 4),
            pr.model,
            pr.note
        );
    }
    if p.stats.iter().any(|s| s.censored > 0) {
        let runs: u64 = p
            .stats
            .iter()
            .filter(|s| s.metric == "wall")
            .map(|s| s.censored)
            .sum();
        let _ = writeln!(
            out,
            "  censored {runs} run(s) did not finish (timeout/killed): reported as ≥ their time, left out of models"
        );
    }
    if let Some((params, message)) = p.cell_errors.first() {
        let _ = writeln!(
            out,
            "  errors   {} measurement error(s); first{}: {}",
            p.cell_errors.len(),
            fixed(params),
            message
        );
    }
    if let Some((changes, significant)) = p.baseline {
        let _ = writeln!(
            out,
            "  baseline {changes} shared cell/metric pair(s), {significant} significant change(s)"
        );
    }
    out
}
