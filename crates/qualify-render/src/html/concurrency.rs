//! The concurrency plots of one scaling series: speedup on log–log axes with the ideal line,
//! the USL and Amdahl fits, the target and predictions (as speedups over the one-worker value);
//! parallel efficiency and the Karp–Flatt serial fraction with the required efficiency; and
//! the numbers behind both.

use std::fmt::Write;

use crate::svg::{Axis, PALETTE, Plot, Scale};
use crate::text::{self, esc, num};
use crate::view::{Performance, Prediction, Scaling, View};

use super::logspace;

pub(super) fn concurrency(h: &mut String, v: &View, p: &Performance, s: &Scaling) {
    if s.points.is_empty() {
        return;
    }
    let fixed = text::fixed(&s.fixed);
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
    let ctx = Speedups::new(v, p, s);
    h.push_str("<div class=\"plots\">\n");
    if let Some(svg) = speedup_plot(s, &ctx) {
        h.push_str(&svg);
        h.push('\n');
    }
    if let Some(svg) = efficiency_plot(s, p.efficiency_limit(&s.axis)) {
        h.push_str(&svg);
        h.push('\n');
    }
    h.push_str("</div>\n");
    numbers(h, s);
}

/// What the speedup plot shows besides the measurements: the target, the predictions, and the
/// points the fitted curves are drawn at.
struct Speedups<'a> {
    target: Option<f64>,
    preds: Vec<&'a Prediction>,
    /// T1 (the one-worker value) so predictions can be shown as speedups.
    t1: Option<f64>,
    higher: bool,
    x_hi: f64,
    curve_ps: Vec<f64>,
}

impl<'a> Speedups<'a> {
    fn new(v: &View, p: &'a Performance, s: &Scaling) -> Speedups<'a> {
        let target = v
            .target_concurrency()
            .filter(|_| v.axis_kind(&s.axis).as_deref() != Some("workload"));
        let preds: Vec<&Prediction> = p
            .predictions
            .iter()
            .filter(|x| x.axis == s.axis && x.metric == s.metric)
            .collect();
        let t1 = s
            .points
            .iter()
            .find_map(|pt| Some(pt.value? * pt.speedup?).filter(|x| *x > 0.0));
        let higher = p
            .metrics
            .iter()
            .any(|m| m.name == s.metric && m.better == "higher");
        let p_max_measured = s.points.iter().map(|pt| pt.p).fold(0.0, f64::max);
        let x_hi = [p_max_measured]
            .into_iter()
            .chain(target)
            .chain(preds.iter().filter_map(|x| x.at))
            .fold(0.0, f64::max);
        let x_lo = s.points.iter().map(|pt| pt.p).fold(f64::INFINITY, f64::min);
        Speedups {
            target,
            preds,
            t1,
            higher,
            x_hi,
            curve_ps: logspace(x_lo.max(1.0), x_hi.max(x_lo), 80),
        }
    }

    /// A predicted value as a speedup over T1.
    fn of_prediction(&self, val: f64) -> Option<f64> {
        let t1 = self.t1?;
        let sp = if self.higher { val / t1 } else { t1 / val };
        (sp.is_finite() && sp > 0.0).then_some(sp)
    }
}

/// Speedup, log–log, with the ideal line, USL and Amdahl fits.
fn speedup_plot(s: &Scaling, ctx: &Speedups) -> Option<String> {
    let curve_ps = &ctx.curve_ps;
    let mut ys: Vec<f64> = s.points.iter().filter_map(|pt| pt.speedup).collect();
    ys.push(1.0);
    ys.extend(curve_ps.iter().filter_map(|p| s.usl(*p)));
    ys.extend(curve_ps.iter().filter_map(|p| s.amdahl_speedup(*p)));
    ys.extend(ctx.preds.iter().filter_map(|x| ctx.of_prediction(x.value?)));
    // The ideal line is drawn but does not stretch the y axis beyond 2× the rest.
    let y_cap = ys.iter().copied().fold(0.0, f64::max) * 2.0;
    let xs: Vec<f64> = s.points.iter().map(|pt| pt.p).chain([ctx.x_hi]).collect();
    let (Some(xa), Some(ya)) = (Axis::fit(Scale::Log2, xs), Axis::fit(Scale::Log2, ys)) else {
        return None;
    };
    let mut plot = Plot::new(540.0, 360.0, xa, ya);
    plot.axes(&format!("speedup vs {}", s.axis), &s.axis, "speedup");
    let ideal: Vec<(f64, f64)> = curve_ps
        .iter()
        .filter(|p| **p <= y_cap)
        .map(|p| (*p, *p))
        .collect();
    plot.polyline(&ideal, "#9e9e9e", true);
    plot.legend("ideal (speedup = p)", "#9e9e9e", "dash");
    if let Some(t) = ctx.target {
        plot.vline(t, "#6a1b9a", &format!("target {}={}", s.axis, num(t)));
    }
    fitted_curves(&mut plot, s, curve_ps);
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
    for pr in &ctx.preds {
        if let (Some(at), Some(speedup)) = (pr.at, pr.value.and_then(|v| ctx.of_prediction(v))) {
            plot.diamond(
                at,
                speedup,
                "#6a1b9a",
                &format!(
                    "{} prediction at {}={}: speedup {} — not evidence",
                    pr.model,
                    s.axis,
                    num(at),
                    num(speedup)
                ),
            );
            plot.legend("prediction (not evidence)", "#6a1b9a", "diamond");
        }
    }
    Some(plot.finish(&format!("speedup against {}", s.axis)))
}

/// The USL curve (solid) and the Amdahl curve (dashed), when the receipt has their fits.
fn fitted_curves(plot: &mut Plot, s: &Scaling, curve_ps: &[f64]) {
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
}

/// Efficiency and Karp–Flatt serial fraction, linear y from 0, with the required efficiency.
fn efficiency_plot(s: &Scaling, limit: Option<f64>) -> Option<String> {
    let mut ys: Vec<f64> = s
        .points
        .iter()
        .flat_map(|pt| [pt.efficiency, pt.karp_flatt])
        .flatten()
        .collect();
    ys.push(1.0);
    ys.push(0.0);
    let measured_ps: Vec<f64> = s.points.iter().map(|pt| pt.p).collect();
    let (Some(xa), Some(ya)) = (
        Axis::fit(Scale::Log2, measured_ps),
        Axis::fit(Scale::Linear, ys).map(Axis::from_zero),
    ) else {
        return None;
    };
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
    Some(plot.finish(&format!("parallel efficiency against {}", s.axis)))
}

/// The numbers behind the plots, and the Amdahl fit when the receipt gives it in a form the
/// plot cannot draw.
fn numbers(h: &mut String, s: &Scaling) {
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
