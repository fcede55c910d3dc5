//! The target gap: what the declared target needs that the run did not reach, as one bar per
//! numeric gap (tested against target on a log scale from 1) and a table of every gap with its
//! waiver.

use std::fmt::Write;

use crate::svg::{Axis, Scale};
use crate::text::{esc, num};
use crate::view::{GapBar, GapRow, View};

pub(super) fn gap(h: &mut String, v: &View) {
    let gaps = v.gaps();
    if gaps.is_empty() && !v.has_target() {
        return;
    }
    h.push_str("<h2>Target gap</h2>\n");
    if gaps.is_empty() {
        h.push_str("<p>The tested region reached every declared target fact.</p>\n");
        return;
    }
    let bars: Vec<(&GapRow, GapBar)> = gaps.iter().filter_map(|g| Some((g, g.bar?))).collect();
    if !bars.is_empty() {
        h.push_str(&bars_svg(&bars));
    }
    h.push_str("<table><tr><th>gap</th><th>target</th><th>tested</th><th>detail</th><th>waiver</th></tr>\n");
    for g in &gaps {
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td><td>{}</td></tr>",
            esc(&g.name),
            esc(&g.target),
            esc(&g.tested),
            esc(&g.detail),
            esc(g.waiver.as_deref().unwrap_or("—"))
        );
    }
    h.push_str("</table>\n");
}

/// A bar per numeric gap: tested (filled) against target (the frame), each row on its own log
/// scale from 1 to the target, so the bar shows how far the run got.
fn bars_svg(rows: &[(&GapRow, GapBar)]) -> String {
    let label_w = rows
        .iter()
        .map(|r| r.0.name.chars().count())
        .max()
        .unwrap_or(4) as f64
        * 7.5
        + 16.0;
    let bar_w = 600.0;
    let row_h = 30.0;
    let width = label_w + bar_w + 240.0;
    let height = rows.len() as f64 * row_h + 40.0;
    let mut s = format!(
        r#"<svg class="plot" width="{width:.0}" height="{height:.0}" viewBox="0 0 {width:.0} {height:.0}" role="img" aria-label="target gap"><text x="{label_w:.1}" y="16" class="ptitle">tested vs target (log scale from 1 to the target)</text>"#
    );
    for (i, (g, bar)) in rows.iter().enumerate() {
        let y = 28.0 + i as f64 * row_h;
        let t = bar.target;
        let axis = Axis {
            scale: Scale::Log10,
            min: 1.0,
            max: t.max(1.0 + 1e-9),
        };
        let frac = bar
            .tested
            .and_then(|x| axis.frac(x.max(1.0)))
            .unwrap_or(0.0)
            .clamp(0.0, 1.0);
        let waived = g.waived();
        let color = if waived { "#9e9e9e" } else { "#1565c0" };
        let _ = write!(
            s,
            r##"<text x="{:.1}" y="{:.1}" text-anchor="end" class="tick">{}</text><rect x="{label_w:.1}" y="{y:.1}" width="{bar_w}" height="18" fill="#f3e5f5" stroke="#6a1b9a"/><rect x="{label_w:.1}" y="{y:.1}" width="{:.1}" height="18" fill="{color}"/><text x="{:.1}" y="{:.1}" class="legend">{} of {}{}</text>"##,
            label_w - 6.0,
            y + 13.0,
            esc(&g.name),
            frac * bar_w,
            label_w + bar_w + 8.0,
            y + 13.0,
            bar.tested.map(num).unwrap_or_else(|| "not examined".into()),
            num(t),
            if waived { " (waived)" } else { "" }
        );
    }
    s.push_str("</svg>\n");
    s
}
