//! The few lines of performance printed after the layer table: rounds and estimators, models
//! with their plausible terms, noise, scaling, checks, predictions, censoring, measurement
//! errors and the baseline comparison.

use std::fmt::Write as _;

use qualify_perf as perf;

/// ` [n=4,mode="fast"]`: values as JSON writes them.
fn fixed(m: &qualify_plan::Params) -> String {
    if m.is_empty() {
        return String::new();
    }
    let parts: Vec<String> = m
        .iter()
        .map(|(k, v)| format!("{k}={}", serde_json::to_string(v).unwrap_or_default()))
        .collect();
    format!(" [{}]", parts.join(","))
}

/// A few lines for the run's output: models, scaling, checks, predictions, censoring, errors.
pub fn summary(p: &perf::Performance) -> String {
    let mut out = String::new();
    let estimators: Vec<String> = p
        .metrics
        .iter()
        .map(|m| format!("{} {}", m.name, m.estimator))
        .collect();
    match &p.rounds {
        Some(r) => {
            let _ = writeln!(
                out,
                "performance: repeat {}: {} round(s) after {} warmup, seed {} ({}); estimators: {}",
                p.repeat,
                r.rounds,
                p.warmup,
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
                p.warmup,
                estimators.join(", ")
            );
        }
    }
    for m in &p.models {
        let others: Vec<&str> = m
            .plausible
            .iter()
            .filter(|h| h.form != m.fit.form)
            .map(|h| h.form.as_str())
            .collect();
        let _ = writeln!(
            out,
            "  model    {} along {}{}: {} (exponent {:.2}, 95% CI [{:.2}, {:.2}], cv error {:.1}%{})",
            m.metric,
            m.axis,
            fixed(&m.fixed),
            m.fit.form,
            m.fit.exponent,
            m.exponent_ci95[0],
            m.exponent_ci95[1],
            m.fit.error * 100.0,
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
    for u in &p.unfitted {
        match reasons
            .iter_mut()
            .find(|(a, r, _)| *a == u.axis && *r == u.reason)
        {
            Some(entry) => entry.2 += 1,
            None => reasons.push((&u.axis, &u.reason, 1)),
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
            .map(|pt| format!("{}:{:.2}", pt.p, pt.efficiency))
            .collect();
        let usl = s.usl.as_ref().map_or(String::new(), |u| {
            format!(
                ", USL σ={:.3} κ={:.4}{}",
                u.sigma,
                u.kappa,
                u.peak_concurrency
                    .map_or(String::new(), |p| format!(" peak≈{p:.0}"))
            )
        });
        let amdahl = s.amdahl.as_ref().map_or(String::new(), |a| {
            format!(", Amdahl serial {:.3}", a.serial_fraction)
        });
        let _ = writeln!(
            out,
            "  scaling  {} along {}{}: efficiency {}{amdahl}{usl}",
            s.metric,
            s.axis,
            fixed(&s.fixed),
            effs.join(" ")
        );
    }
    for c in &p.checks {
        let verdict = match c.verdict {
            perf::Verdict::Held => "held",
            perf::Verdict::Violated => "VIOLATED",
            perf::Verdict::Inconclusive => "inconclusive",
        };
        let _ = writeln!(out, "  check    {} {verdict}: {}", c.kind, c.detail);
    }
    for pr in &p.predictions {
        let _ = writeln!(
            out,
            "  predict  {} at {}={}{}: {:.4} ({}; {})",
            pr.metric,
            pr.axis,
            pr.at,
            fixed(&pr.fixed),
            pr.value,
            pr.model,
            pr.note
        );
    }
    let censored: Vec<&perf::analyze::CellStats> =
        p.stats.iter().filter(|s| s.stats.censored > 0).collect();
    if !censored.is_empty() {
        let runs: usize = censored
            .iter()
            .filter(|s| s.metric == "wall")
            .map(|s| s.stats.censored)
            .sum();
        let _ = writeln!(
            out,
            "  censored {runs} run(s) did not finish (timeout/killed): reported as ≥ their time, left out of models"
        );
    }
    if let Some(first) = p.errors.first() {
        let _ = writeln!(
            out,
            "  errors   {} measurement error(s); first{}: {}",
            p.errors.len(),
            fixed(&first.params),
            first.message
        );
    }
    if let Some(b) = &p.baseline {
        let significant = b.changes.iter().filter(|c| c.significant).count();
        let _ = writeln!(
            out,
            "  baseline {} shared cell/metric pair(s), {significant} significant change(s)",
            b.changes.len()
        );
    }
    out
}
