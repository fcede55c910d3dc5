//! The capacity frontier in the HTML report: the sentence, a bar per combination of the other
//! axes — how far every objective held (the bar), where it failed (a tick, with what happened
//! there), a bar running off the right edge when the top of the range held — coloured by the
//! second condition axis when there is one (a ceiling beside a fault), and the table.

use std::fmt::Write;

use crate::svg::PALETTE;
use crate::text::{esc, num};
use crate::view::{FrontierView, View};

pub(super) fn frontier(h: &mut String, v: &View) {
    let Some(f) = v.frontier() else {
        return;
    };
    h.push_str("<h2>Capacity frontier</h2>\n");
    let _ = writeln!(h, "<p><b>{}</b></p>", esc(&f.sentence));
    h.push_str(&chart(&f));
    h.push_str("<table><tr>");
    for k in &f.over {
        let _ = write!(h, "<th>{}</th>", esc(k));
    }
    h.push_str("<th>holds up to</th><th>fails from</th><th>beyond</th><th>probes</th></tr>");
    for r in &f.rows {
        h.push_str("<tr>");
        for c in &r.conditions {
            let _ = write!(h, "<td>{}</td>", esc(c));
        }
        let _ = write!(
            h,
            "<td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td><td class=\"num\">{}</td></tr>",
            esc(&r.holds_text(&f.unit)),
            esc(&r.fails_text(&f.unit)),
            esc(&r.beyond_text()),
            r.probes
        );
    }
    let _ = writeln!(
        h,
        "</table>\n<p class=\"meta\">{} probes over {} searches along <code>{}</code>, each near its own edge, not the full grid.</p>",
        f.probes,
        f.rows.len(),
        esc(&f.axis)
    );
}

/// Horizontal bars: one per row, labelled with its first condition; coloured by its second.
fn chart(f: &FrontierView) -> String {
    let top = f
        .rows
        .iter()
        .flat_map(|r| [r.holds_up_to, r.fails_from])
        .flatten()
        .filter(|x| x.is_finite())
        .fold(0.0_f64, f64::max);
    if top <= 0.0 {
        return String::new();
    }
    let (label_w, bar_w, row_h, pad) = (220.0, 440.0, 26.0, 24.0);
    let width = label_w + bar_w + 200.0;
    let height = pad * 2.0 + row_h * f.rows.len() as f64;
    let scale = |x: f64| label_w + bar_w * (x / (top * 1.05));
    // The second condition axis (a ceiling beside a fault) colours the bars.
    let mut series: Vec<String> = Vec::new();
    for r in &f.rows {
        let key = r.conditions.get(1).cloned().unwrap_or_default();
        if !series.contains(&key) {
            series.push(key);
        }
    }
    let mut s = format!(
        r##"<svg width="{width:.0}" height="{height:.0}" viewBox="0 0 {width:.0} {height:.0}" role="img" aria-label="capacity per condition"><text x="{:.1}" y="16" text-anchor="middle" class="ptitle">{} ({}) up to which every objective held</text>"##,
        label_w + bar_w / 2.0,
        esc(&f.axis),
        esc(&f.unit)
    );
    for (i, r) in f.rows.iter().enumerate() {
        let y = pad + row_h * i as f64;
        let key = r.conditions.get(1).cloned().unwrap_or_default();
        let color = PALETTE[series.iter().position(|k| *k == key).unwrap_or(0) % PALETTE.len()];
        let label = r.conditions.join(", ");
        let _ = write!(
            s,
            r##"<text x="{:.1}" y="{:.1}" text-anchor="end" class="tick">{}</text>"##,
            label_w - 6.0,
            y + row_h * 0.65,
            esc(&label)
        );
        if let Some(held) = r.holds_up_to {
            let x1 = scale(held);
            let _ = write!(
                s,
                r##"<rect x="{label_w:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{color}"><title>holds up to {}</title></rect>"##,
                y + 4.0,
                (x1 - label_w).max(1.0),
                row_h - 8.0,
                esc(&r.holds_text(&f.unit))
            );
        }
        let note = match r.fails_from {
            Some(fail) => {
                let x2 = scale(fail);
                let _ = write!(
                    s,
                    r##"<line x1="{x2:.1}" y1="{:.1}" x2="{x2:.1}" y2="{:.1}" stroke="#b00" stroke-width="2"><title>fails from {}</title></line>"##,
                    y + 2.0,
                    y + row_h - 2.0,
                    esc(&r.fails_text(&f.unit))
                );
                let held = r.holds_up_to.map_or_else(
                    || "not even the lowest rate".to_string(),
                    |h| format!("held {}", num(h)),
                );
                format!("{held}, fails from {}: {}", num(fail), r.beyond_text())
            }
            None => format!(
                "held {}+ (the top of the range)",
                r.holds_up_to.map_or_else(String::new, num)
            ),
        };
        let end = r.fails_from.or(r.holds_up_to).map_or(label_w, scale);
        let _ = write!(
            s,
            r##"<text x="{:.1}" y="{:.1}" class="tick">{}</text>"##,
            end + 6.0,
            y + row_h * 0.65,
            esc(&note)
        );
    }
    s.push_str("</svg>\n");
    s
}
