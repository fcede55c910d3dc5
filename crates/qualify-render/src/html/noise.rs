//! The machine's noise: per metric measured in two or more rounds, one plot with a whisker per
//! round from its lowest to its highest run relative to the cells' estimates (in %) and a marker
//! at the round's median (a slow period of the machine shows as a round lying high), and a note
//! naming the cells whose runs were noisy and why.

use std::fmt::Write;

use crate::svg::{Axis, PALETTE, Plot, Scale};
use crate::text::{self, esc, num};
use crate::view::{MetricNoise, Performance};

pub(super) fn noise(h: &mut String, p: &Performance, order: &[String]) {
    let plotted: Vec<&MetricNoise> = p.noise.iter().filter(|n| n.rounds.len() >= 2).collect();
    let noisy = p.noisy();
    if plotted.is_empty() && noisy.is_empty() {
        return;
    }
    h.push_str("<h3>Noise</h3>\n");
    if !plotted.is_empty() {
        h.push_str("<div class=\"plots\">\n");
        for (i, n) in plotted.iter().enumerate() {
            if let Some(svg) = plot(n, PALETTE[i % PALETTE.len()]) {
                h.push_str(&svg);
                h.push('\n');
            }
        }
        h.push_str("</div>\n");
    }
    let spreads: Vec<String> = p
        .noise
        .iter()
        .filter_map(|n| n.spread.map(|x| format!("{} {:.1}%", n.metric, x * 100.0)))
        .collect();
    if !spreads.is_empty() {
        let how = p
            .noise
            .iter()
            .map(|n| n.spread_estimator.as_str())
            .find(|s| !s.is_empty())
            .unwrap_or("spread");
        let _ = writeln!(
            h,
            "<p class=\"meta\">Run spread ({}): {}.</p>",
            esc(how),
            esc(&spreads.join(", "))
        );
    }
    if noisy.is_empty() {
        return;
    }
    let _ = write!(
        h,
        "<div class=\"warn\"><b>{} cell/metric pair(s) were noisy</b> — their estimates rest on scattered runs:<ul>",
        noisy.len()
    );
    for s in &noisy {
        let _ = write!(
            h,
            "<li>{} at {}: {}</li>",
            esc(&s.metric),
            esc(&text::params(&s.params, order)),
            esc(&s.noise.join("; "))
        );
    }
    h.push_str("</ul></div>\n");
}

/// One metric's rounds: whiskers from the lowest to the highest run, a dot at the median.
fn plot(n: &MetricNoise, color: &str) -> Option<String> {
    let pct = |x: f64| x * 100.0;
    let x_axis = Axis::fit(
        Scale::Linear,
        n.rounds
            .iter()
            .map(|r| r.round)
            .chain([n.rounds.first()?.round - 0.5, n.rounds.last()?.round + 0.5]),
    )?;
    let y_axis = Axis::fit(
        Scale::Linear,
        n.rounds
            .iter()
            .flat_map(|r| [pct(r.low), pct(r.high)])
            .chain([0.0]),
    )?;
    let mut plot = Plot::new(420.0, 260.0, x_axis, y_axis);
    plot.axes(
        &format!("{} by round", n.metric),
        "round",
        "run vs its cell's estimate (%)",
    );
    plot.hline(0.0, "#888", "the cells' estimates");
    for r in &n.rounds {
        plot.error_bar(r.round, pct(r.low), pct(r.high), color);
        plot.circle(
            r.round,
            pct(r.median),
            color,
            true,
            &format!(
                "round {}: {} run(s), median {}%, from {}% to {}%",
                num(r.round),
                r.cells.map_or_else(|| "?".to_string(), |c| c.to_string()),
                num(pct(r.median)),
                num(pct(r.low)),
                num(pct(r.high))
            ),
        );
    }
    plot.legend("lowest to highest run of the round", color, "line");
    plot.legend("median run of the round", color, "dot");
    Some(plot.finish(&format!(
        "{} by round: runs relative to the estimate of their cell",
        n.metric
    )))
}
