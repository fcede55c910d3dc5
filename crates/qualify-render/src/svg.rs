//! Small hand-written SVG plot primitives: a plot area with linear, log10 or log2 axes, ticks and
//! grid lines, polylines, markers, error bars, text and a legend. Output is inline SVG for an HTML5
//! document (no `xmlns`, no script, no external references). Non-finite values and values that a
//! log axis cannot show (≤ 0) are skipped, never drawn at a made-up position.

use std::fmt::Write;

use crate::text::{esc, num};

/// How an axis maps data to pixels.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scale {
    Linear,
    Log10,
    Log2,
}

/// One axis: scale and data range (after padding).
#[derive(Clone, Copy, Debug)]
pub struct Axis {
    pub scale: Scale,
    pub min: f64,
    pub max: f64,
}

impl Axis {
    /// An axis covering `values` (skipping what the scale cannot show), padded a little.
    /// `None` when nothing is left to show.
    pub fn fit(scale: Scale, values: impl IntoIterator<Item = f64>) -> Option<Axis> {
        let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
        for v in values {
            if v.is_finite() && (scale == Scale::Linear || v > 0.0) {
                lo = lo.min(v);
                hi = hi.max(v);
            }
        }
        if !lo.is_finite() {
            return None;
        }
        Some(match scale {
            Scale::Linear => {
                let span = if hi > lo { hi - lo } else { lo.abs().max(1.0) };
                Axis {
                    scale,
                    min: lo - span * 0.05,
                    max: hi + span * 0.05,
                }
            }
            Scale::Log10 | Scale::Log2 => {
                let (l, h) = (lo.log10(), hi.log10());
                let pad = if h > l { (h - l) * 0.06 } else { 0.5 };
                Axis {
                    scale,
                    min: 10f64.powf(l - pad),
                    max: 10f64.powf(h + pad),
                }
            }
        })
    }

    /// Include zero (for linear quantities such as speedup or efficiency).
    pub fn from_zero(mut self) -> Axis {
        if self.scale == Scale::Linear && self.min > 0.0 {
            self.min = 0.0;
        }
        self
    }

    fn t(&self, v: f64) -> f64 {
        match self.scale {
            Scale::Linear => v,
            Scale::Log10 | Scale::Log2 => v.log10(),
        }
    }

    /// Position of `v` in 0..=1 along the axis; `None` if the scale cannot show it.
    pub fn frac(&self, v: f64) -> Option<f64> {
        if !v.is_finite() || (self.scale != Scale::Linear && v <= 0.0) {
            return None;
        }
        let (a, b) = (self.t(self.min), self.t(self.max));
        if b == a {
            return Some(0.5);
        }
        Some((self.t(v) - a) / (b - a))
    }

    /// Tick positions and labels.
    pub fn ticks(&self) -> Vec<(f64, String)> {
        let mut out = Vec::new();
        match self.scale {
            Scale::Log10 => {
                let (a, b) = (
                    self.min.log10().floor() as i32,
                    self.max.log10().ceil() as i32,
                );
                let decades: Vec<f64> = (a..=b)
                    .map(|e| 10f64.powi(e))
                    .filter(|v| self.inside(*v))
                    .collect();
                let mults: &[f64] = match decades.len() {
                    0 => &[1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0],
                    1 => &[1.0, 2.0, 3.0, 5.0],
                    _ => &[1.0],
                };
                for e in a..=b {
                    for m in mults {
                        let v = m * 10f64.powi(e);
                        if self.inside(v) {
                            out.push((v, num(v)));
                        }
                    }
                }
                // Too many decades: keep every other one.
                while out.len() > 9 {
                    out = out.into_iter().step_by(2).collect();
                }
            }
            Scale::Log2 => {
                let (a, b) = (
                    self.min.log2().floor() as i32,
                    self.max.log2().ceil() as i32,
                );
                for e in a..=b {
                    let v = 2f64.powi(e);
                    if self.inside(v) {
                        out.push((v, num(v)));
                    }
                }
                while out.len() > 10 {
                    out = out.into_iter().step_by(2).collect();
                }
            }
            Scale::Linear => {
                let span = self.max - self.min;
                if span <= 0.0 || !span.is_finite() {
                    return vec![(self.min, num(self.min))];
                }
                let raw = span / 5.0;
                let mag = 10f64.powf(raw.log10().floor());
                let step = [1.0, 2.0, 2.5, 5.0, 10.0]
                    .iter()
                    .map(|m| m * mag)
                    .find(|s| span / s <= 6.0)
                    .unwrap_or(10.0 * mag);
                let mut v = (self.min / step).ceil() * step;
                while v <= self.max + step * 1e-9 {
                    let clean = if v.abs() < step * 1e-9 { 0.0 } else { v };
                    out.push((clean, num(clean)));
                    v += step;
                }
            }
        }
        out
    }

    fn inside(&self, v: f64) -> bool {
        v >= self.min * (1.0 - 1e-9) && v <= self.max * (1.0 + 1e-9)
    }
}

/// A plot under construction: fixed pixel size, margins, two axes, and the SVG body so far.
pub struct Plot {
    pub width: f64,
    pub height: f64,
    left: f64,
    right: f64,
    top: f64,
    bottom: f64,
    pub x: Axis,
    pub y: Axis,
    body: String,
    legend: Vec<(String, String, &'static str)>,
}

impl Plot {
    pub fn new(width: f64, height: f64, x: Axis, y: Axis) -> Plot {
        Plot {
            width,
            height,
            left: 64.0,
            right: 16.0,
            top: 28.0,
            bottom: 46.0,
            x,
            y,
            body: String::new(),
            legend: Vec::new(),
        }
    }

    /// Pixel coordinates of a data point; `None` if either axis cannot show it.
    pub fn at(&self, x: f64, y: f64) -> Option<(f64, f64)> {
        let fx = self.x.frac(x)?;
        let fy = self.y.frac(y)?;
        let w = self.width - self.left - self.right;
        let h = self.height - self.top - self.bottom;
        Some((self.left + fx * w, self.top + (1.0 - fy) * h))
    }

    /// Frame, grid, ticks, axis labels and title.
    pub fn axes(&mut self, title: &str, xlabel: &str, ylabel: &str) {
        let (l, t) = (self.left, self.top);
        let (r, b) = (self.width - self.right, self.height - self.bottom);
        let mut s = String::new();
        let _ = write!(
            s,
            r##"<rect x="{l}" y="{t}" width="{:.1}" height="{:.1}" fill="#fff" stroke="#888"/>"##,
            r - l,
            b - t
        );
        for (v, label) in self.x.ticks() {
            if let Some(f) = self.x.frac(v) {
                let px = l + f * (r - l);
                let _ = write!(
                    s,
                    r##"<line x1="{px:.1}" y1="{t}" x2="{px:.1}" y2="{b}" stroke="#e4e4e4"/><line x1="{px:.1}" y1="{b}" x2="{px:.1}" y2="{:.1}" stroke="#888"/><text x="{px:.1}" y="{:.1}" text-anchor="middle" class="tick">{}</text>"##,
                    b + 4.0,
                    b + 16.0,
                    esc(&label)
                );
            }
        }
        for (v, label) in self.y.ticks() {
            if let Some(f) = self.y.frac(v) {
                let py = b - f * (b - t);
                let _ = write!(
                    s,
                    r##"<line x1="{l}" y1="{py:.1}" x2="{r}" y2="{py:.1}" stroke="#e4e4e4"/><line x1="{:.1}" y1="{py:.1}" x2="{l}" y2="{py:.1}" stroke="#888"/><text x="{:.1}" y="{:.1}" text-anchor="end" class="tick">{}</text>"##,
                    l - 4.0,
                    l - 6.0,
                    py + 4.0,
                    esc(&label)
                );
            }
        }
        let _ = write!(
            s,
            r#"<text x="{:.1}" y="18" text-anchor="middle" class="ptitle">{}</text><text x="{:.1}" y="{:.1}" text-anchor="middle" class="alabel">{}</text><text transform="translate(14 {:.1}) rotate(-90)" text-anchor="middle" class="alabel">{}</text>"#,
            self.width / 2.0,
            esc(title),
            (l + r) / 2.0,
            self.height - 8.0,
            esc(xlabel),
            (t + b) / 2.0,
            esc(ylabel)
        );
        // Grid goes under everything drawn later.
        s.push_str(&self.body);
        self.body = s;
    }

    /// A line through the points the axes can show (a gap where they cannot).
    pub fn polyline(&mut self, pts: &[(f64, f64)], color: &str, dashed: bool) {
        let dash = if dashed {
            r#" stroke-dasharray="6 4""#
        } else {
            ""
        };
        let mut run: Vec<(f64, f64)> = Vec::new();
        let flush = |run: &mut Vec<(f64, f64)>, body: &mut String| {
            if run.len() >= 2 {
                let p: Vec<String> = run.iter().map(|(x, y)| format!("{x:.1},{y:.1}")).collect();
                let _ = write!(
                    body,
                    r#"<polyline points="{}" fill="none" stroke="{color}" stroke-width="2"{dash}/>"#,
                    p.join(" ")
                );
            }
            run.clear();
        };
        for &(x, y) in pts {
            match self.at(x, y) {
                Some(p) if self.in_frame(p) => run.push(p),
                _ => flush(&mut run, &mut self.body),
            }
        }
        flush(&mut run, &mut self.body);
    }

    fn in_frame(&self, (x, y): (f64, f64)) -> bool {
        x >= self.left - 0.5
            && x <= self.width - self.right + 0.5
            && y >= self.top - 0.5
            && y <= self.height - self.bottom + 0.5
    }

    /// A round marker with a hover title; hollow when `filled` is false.
    pub fn circle(&mut self, x: f64, y: f64, color: &str, filled: bool, title: &str) {
        if let Some((px, py)) = self.at(x, y) {
            let fill = if filled { color } else { "#fff" };
            let _ = write!(
                self.body,
                r#"<circle cx="{px:.1}" cy="{py:.1}" r="4" fill="{fill}" stroke="{color}" stroke-width="1.5"><title>{}</title></circle>"#,
                esc(title)
            );
        }
    }

    /// A diamond marker (predictions, censored observations).
    pub fn diamond(&mut self, x: f64, y: f64, color: &str, title: &str) {
        if let Some((px, py)) = self.at(x, y) {
            let _ = write!(
                self.body,
                r##"<path d="M{px:.1} {:.1} L{:.1} {py:.1} L{px:.1} {:.1} L{:.1} {py:.1} Z" fill="#fff" stroke="{color}" stroke-width="2"><title>{}</title></path>"##,
                py - 6.0,
                px + 6.0,
                py + 6.0,
                px - 6.0,
                esc(title)
            );
        }
    }

    /// A square marker in an outcome's colours with its symbol (a point whose outcome matters,
    /// e.g. `O` for overloaded), with a hover title.
    pub fn badge(&mut self, x: f64, y: f64, mark: &str, fill: &str, fg: &str, title: &str) {
        if let Some((px, py)) = self.at(x, y) {
            let _ = write!(
                self.body,
                r##"<g><title>{}</title><rect x="{:.1}" y="{:.1}" width="14" height="14" rx="2" fill="{fill}" stroke="#fff"/><text x="{px:.1}" y="{:.1}" text-anchor="middle" class="note" font-weight="700" fill="{fg}">{}</text></g>"##,
                esc(title),
                px - 7.0,
                py - 7.0,
                py + 4.0,
                esc(mark)
            );
        }
    }

    /// A vertical whisker from `lo` to `hi` at `x`, with caps.
    pub fn error_bar(&mut self, x: f64, lo: f64, hi: f64, color: &str) {
        if let (Some((px, a)), Some((_, b))) = (self.at(x, lo), self.at(x, hi)) {
            let _ = write!(
                self.body,
                r#"<path d="M{px:.1} {a:.1} V{b:.1} M{:.1} {a:.1} H{:.1} M{:.1} {b:.1} H{:.1}" stroke="{color}" stroke-width="1.5" fill="none"/>"#,
                px - 4.0,
                px + 4.0,
                px - 4.0,
                px + 4.0
            );
        }
    }

    /// A horizontal reference line across the plot at `y`, labelled.
    pub fn hline(&mut self, y: f64, color: &str, label: &str) {
        if let Some((_, py)) = self.at(self.x.min, y) {
            let (l, r) = (self.left, self.width - self.right);
            let _ = write!(
                self.body,
                r#"<line x1="{l}" y1="{py:.1}" x2="{r}" y2="{py:.1}" stroke="{color}" stroke-dasharray="3 3"/><text x="{:.1}" y="{:.1}" text-anchor="end" class="note" fill="{color}">{}</text>"#,
                r - 4.0,
                py - 4.0,
                esc(label)
            );
        }
    }

    /// A vertical reference line at `x` (e.g. the target), labelled.
    pub fn vline(&mut self, x: f64, color: &str, label: &str) {
        if let Some((px, _)) = self.at(x, self.y.min.max(f64::MIN_POSITIVE)) {
            let (t, b) = (self.top, self.height - self.bottom);
            let _ = write!(
                self.body,
                r#"<line x1="{px:.1}" y1="{t}" x2="{px:.1}" y2="{b}" stroke="{color}" stroke-dasharray="3 3"/><text x="{:.1}" y="{:.1}" text-anchor="end" class="note" fill="{color}">{}</text>"#,
                px - 3.0,
                t + 12.0,
                esc(label)
            );
        }
    }

    /// Add a legend entry: label, colour, and `line`, `dash`, `dot` or `diamond`.
    pub fn legend(&mut self, label: &str, color: &str, kind: &'static str) {
        self.legend
            .push((label.to_string(), color.to_string(), kind));
    }

    /// The finished `<svg>` element; `label` is its accessible name. The legend goes below the
    /// plot area, where it cannot hide data.
    pub fn finish(mut self, label: &str) -> String {
        let x = self.left;
        let mut y = self.height + 8.0;
        for (label, color, kind) in std::mem::take(&mut self.legend) {
            let mark = match kind {
                "dash" => format!(
                    r#"<line x1="{x}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="{color}" stroke-width="2" stroke-dasharray="6 4"/>"#,
                    y - 4.0,
                    x + 20.0,
                    y - 4.0
                ),
                "dot" => format!(
                    r#"<circle cx="{:.1}" cy="{:.1}" r="4" fill="{color}"/>"#,
                    x + 10.0,
                    y - 4.0
                ),
                "diamond" => format!(
                    r##"<path d="M{:.1} {:.1} l5 5 l-5 5 l-5 -5 Z" fill="#fff" stroke="{color}" stroke-width="2"/>"##,
                    x + 10.0,
                    y - 9.0
                ),
                _ => format!(
                    r#"<line x1="{x}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="{color}" stroke-width="2"/>"#,
                    y - 4.0,
                    x + 20.0,
                    y - 4.0
                ),
            };
            let _ = write!(
                self.body,
                r#"{mark}<text x="{:.1}" y="{y:.1}" class="legend">{}</text>"#,
                x + 26.0,
                esc(&label)
            );
            y += 15.0;
        }
        let height = y.max(self.height);
        format!(
            r#"<svg class="plot" width="{w}" height="{h:.0}" viewBox="0 0 {w} {h:.0}" role="img" aria-label="{a}">{body}</svg>"#,
            w = self.width,
            h = height,
            a = esc(label),
            body = self.body
        )
    }
}

/// Colours for series, distinguishable in print and for common colour-vision deficiencies.
pub const PALETTE: [&str; 6] = [
    "#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_ticks_are_decades() {
        let a = Axis::fit(Scale::Log10, [1e3, 1e8]).unwrap();
        let t: Vec<String> = a.ticks().into_iter().map(|(_, l)| l).collect();
        assert!(
            t.contains(&"1000".to_string()) && t.contains(&"1e8".to_string()),
            "{t:?}"
        );
    }

    #[test]
    fn log_axis_skips_non_positive() {
        let a = Axis::fit(Scale::Log10, [0.0, -1.0, 2.0, 20.0]).unwrap();
        assert!(a.frac(0.0).is_none());
        assert!(a.frac(2.0).unwrap() < a.frac(20.0).unwrap());
        assert!(Axis::fit(Scale::Log10, [0.0, -1.0]).is_none());
    }

    #[test]
    fn points_map_inside_the_frame() {
        let x = Axis::fit(Scale::Log2, [1.0, 4.0]).unwrap();
        let y = Axis::fit(Scale::Linear, [0.0, 4.0]).unwrap();
        let p = Plot::new(400.0, 300.0, x, y);
        let (a, b) = (p.at(1.0, 0.0).unwrap(), p.at(4.0, 4.0).unwrap());
        assert!(a.0 < b.0 && a.1 > b.1);
    }
}
