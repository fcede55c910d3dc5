//! The envelope: a heatmap of the cells' outcomes over the first two axes that vary (a strip
//! when only one does; several cells in one square show the most severe outcome), its legend,
//! the development-coverage strip (what development ran beside what qualify examined), and the
//! table of cells that did not end ok.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

use qualify_model::Outcome;
use qualify_model::outcome::{NOT_EXAMINED, Style, style_of};

use crate::text::{self, esc};
use crate::view::development::{DevAxis, Development};
use crate::view::{self, CellRow};

/// Rows of the failing-cells table before it is cut short.
const MAX_FAILING: usize = 100;

pub(super) fn envelope(
    h: &mut String,
    cells: &[CellRow],
    order: &[String],
    dev: Option<&Development>,
) {
    if cells.is_empty() {
        if let Some(d) = dev {
            h.push_str("<h2>Envelope</h2>\n");
            development(h, d);
        }
        return;
    }
    h.push_str("<h2>Envelope</h2>\n");
    let (axes, values) = map_axes(cells, order);
    if !axes.is_empty() {
        let map = Heatmap::new(cells, order, &axes, &values);
        h.push_str(&map.svg());
        h.push('\n');
        legend(h, cells);
        let merged_over: Vec<&String> = order
            .iter()
            .filter(|a| !axes.contains(a) && values.get(*a).is_some_and(|v| v.len() > 1))
            .collect();
        if !merged_over.is_empty() {
            let _ = writeln!(
                h,
                "<p class=\"meta\">Each square merges the cells over {} (the most severe outcome is shown).</p>",
                esc(&merged_over
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", "))
            );
        }
    }
    if let Some(d) = dev {
        development(h, d);
    }
    failing(h, cells, order);
}

fn sort_values(vals: &BTreeSet<String>) -> Vec<String> {
    let mut v: Vec<String> = vals.iter().cloned().collect();
    v.sort_by(|a, b| match (a.parse::<f64>(), b.parse::<f64>()) {
        (Ok(x), Ok(y)) => x.total_cmp(&y),
        _ => a.cmp(b),
    });
    v
}

/// The axes the heatmap shows: the first two (in the receipt's order) with more than one value,
/// or the first axis when none varies.
fn map_axes(
    cells: &[CellRow],
    order: &[String],
) -> (Vec<String>, BTreeMap<String, BTreeSet<String>>) {
    let mut values: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for c in cells {
        for (k, val) in &c.params {
            values
                .entry(k.clone())
                .or_default()
                .insert(text::value(val));
        }
    }
    let mut axes: Vec<String> = order
        .iter()
        .filter(|n| values.get(*n).is_some_and(|v| v.len() > 1))
        .take(2)
        .cloned()
        .collect();
    if axes.is_empty()
        && let Some(first) = order.iter().find(|n| values.contains_key(*n))
    {
        axes.push(first.clone());
    }
    (axes, values)
}

/// The squares: x values (columns), y values (rows; one unnamed row for a strip), and per
/// square the most severe outcome with one title line per cell.
struct Heatmap<'a> {
    xs: Vec<String>,
    ys: Vec<String>,
    x_axis: Option<&'a str>,
    y_axis: Option<&'a str>,
    grid: BTreeMap<(String, String), (String, Vec<String>)>,
}

/// Where the heatmap's parts go, in pixels.
struct Layout {
    /// Side of one square.
    size: f64,
    /// Column labels too long for a square are drawn at an angle.
    rotate: bool,
    top: f64,
    ylab_w: f64,
    width: f64,
    height: f64,
}

impl<'a> Heatmap<'a> {
    /// `axes` holds one or two axes: the first gives the rows, the second the columns; with one
    /// axis it runs along x as a strip.
    fn new(
        cells: &[CellRow],
        order: &[String],
        axes: &'a [String],
        values: &BTreeMap<String, BTreeSet<String>>,
    ) -> Heatmap<'a> {
        let row_axis = &axes[0];
        let col_axis = axes.get(1);
        let rows = sort_values(&values[row_axis]);
        let cols = col_axis
            .map(|c| sort_values(&values[c]))
            .unwrap_or_default();
        // One axis: a strip along x.
        let (xs, ys, x_axis, y_axis) = match col_axis {
            Some(c) => (cols, rows, Some(c.as_str()), Some(row_axis.as_str())),
            None => (rows, vec![String::new()], Some(row_axis.as_str()), None),
        };
        let mut grid: BTreeMap<(String, String), (String, Vec<String>)> = BTreeMap::new();
        for c in cells {
            let at = |axis: Option<&str>| {
                axis.and_then(|a| c.params.get(a))
                    .map(text::value)
                    .unwrap_or_default()
            };
            let e = grid
                .entry((at(y_axis), at(x_axis)))
                .or_insert_with(|| (c.outcome.clone(), Vec::new()));
            if style_of(&c.outcome).severity > style_of(&e.0).severity {
                e.0 = c.outcome.clone();
            }
            e.1.push(format!(
                "{}: {}",
                text::params(&c.params, order),
                if c.detail.is_empty() {
                    c.outcome.clone()
                } else {
                    format!("{} — {}", c.outcome, c.detail)
                }
            ));
        }
        Heatmap {
            xs,
            ys,
            x_axis,
            y_axis,
            grid,
        }
    }

    fn layout(&self) -> Layout {
        let (xs, ys) = (&self.xs, &self.ys);
        let size = (880.0 / xs.len().max(1) as f64).clamp(20.0, 52.0).floor();
        let longest = xs.iter().map(|s| s.chars().count()).max().unwrap_or(1) as f64;
        let rotate = longest * 7.0 > size;
        let top = if rotate { longest * 5.5 + 34.0 } else { 40.0 };
        let ylab_w = ys.iter().map(|s| s.chars().count()).max().unwrap_or(0) as f64 * 7.5
            + if self.y_axis.is_some() { 40.0 } else { 10.0 };
        Layout {
            size,
            rotate,
            top,
            ylab_w,
            width: ylab_w + size * xs.len() as f64 + 20.0,
            height: top + size * ys.len() as f64 + 12.0,
        }
    }

    fn svg(&self) -> String {
        let l = self.layout();
        let (width, height) = (l.width, l.height);
        let mut s = String::new();
        let _ = write!(
            s,
            r#"<svg class="plot" width="{width:.0}" height="{height:.0}" viewBox="0 0 {width:.0} {height:.0}" role="img" aria-label="envelope heatmap">"#
        );
        self.axis_labels(&mut s, &l);
        for (j, yv) in self.ys.iter().enumerate() {
            let y = l.top + l.size * j as f64;
            let _ = write!(
                s,
                r#"<text x="{:.1}" y="{:.1}" text-anchor="end" class="tick">{}</text>"#,
                l.ylab_w - 6.0,
                y + l.size / 2.0 + 4.0,
                esc(yv)
            );
            for (i, xv) in self.xs.iter().enumerate() {
                let x = l.ylab_w + l.size * i as f64;
                self.square(&mut s, (x, y), l.size, yv, xv);
            }
        }
        s.push_str("</svg>");
        s
    }

    /// The axis titles and the column labels.
    fn axis_labels(&self, s: &mut String, l: &Layout) {
        let _ = write!(
            s,
            r#"<text x="{:.1}" y="14" class="ptitle">{} →</text>"#,
            l.ylab_w,
            esc(self.x_axis.unwrap_or(""))
        );
        if let Some(ya) = self.y_axis {
            let _ = write!(
                s,
                r#"<text transform="translate(14 {:.1}) rotate(-90)" text-anchor="middle" class="ptitle">{} ↓</text>"#,
                l.top + l.size * self.ys.len() as f64 / 2.0,
                esc(ya)
            );
        }
        for (i, xv) in self.xs.iter().enumerate() {
            let cx = l.ylab_w + l.size * (i as f64 + 0.5);
            if l.rotate {
                let _ = write!(
                    s,
                    r#"<text transform="translate({cx:.1} {:.1}) rotate(-55)" class="tick">{}</text>"#,
                    l.top - 6.0,
                    esc(xv)
                );
            } else {
                let _ = write!(
                    s,
                    r#"<text x="{cx:.1}" y="{:.1}" text-anchor="middle" class="tick">{}</text>"#,
                    l.top - 6.0,
                    esc(xv)
                );
            }
        }
    }

    /// One square at (`x`, `y`): its outcome's colour and symbol, the cells as its title.
    fn square(&self, s: &mut String, (x, y): (f64, f64), size: f64, yv: &str, xv: &str) {
        let (outcome, titles) = self
            .grid
            .get(&(yv.to_string(), xv.to_string()))
            .map(|(o, t)| (o.as_str(), t.join("\n")))
            .unwrap_or((NOT_EXAMINED.name, "not examined".into()));
        let st = if outcome == NOT_EXAMINED.name {
            &NOT_EXAMINED
        } else {
            style_of(outcome)
        };
        let (sym, fill, fg) = (st.mark, st.fill, st.text);
        let _ = write!(
            s,
            r##"<g><title>{}</title><rect x="{x:.1}" y="{y:.1}" width="{:.1}" height="{:.1}" fill="{fill}" stroke="#fff" stroke-width="2"/><text x="{:.1}" y="{:.1}" text-anchor="middle" class="sym" fill="{fg}">{}</text></g>"##,
            esc(&titles),
            size,
            size,
            x + size / 2.0,
            y + size / 2.0 + 5.0,
            sym
        );
    }
}

/// The outcomes that occur (known ones in contract order with their counts, then unknown
/// ones), then "not examined".
fn legend(h: &mut String, cells: &[CellRow]) {
    let seen: BTreeSet<&str> = cells.iter().map(|c| c.outcome.as_str()).collect();
    h.push_str("<p>");
    for st in Outcome::ALL
        .iter()
        .map(|o| o.style())
        .filter(|st| seen.contains(st.name))
    {
        let n = cells.iter().filter(|c| c.outcome == st.name).count();
        let _ = write!(h, "{}", swatch(st, &format!("{} ({n})", st.name)));
    }
    for o in seen
        .iter()
        .filter(|o| !Outcome::ALL.iter().any(|k| k.as_str() == **o))
    {
        let _ = write!(h, "{}", swatch(style_of(o), &esc(o)));
    }
    let _ = writeln!(h, "{}</p>", swatch(&NOT_EXAMINED, NOT_EXAMINED.name));
}

/// One legend entry: the outcome's symbol on its colour, then `label` (HTML).
pub(super) fn swatch(st: &Style, label: &str) -> String {
    let (sym, fill, fg) = (st.mark, st.fill, st.text);
    format!(
        "<span class=\"legend-item\"><span class=\"sw\" style=\"background:{fill};color:{fg}\">{sym}</span>{label}</span>"
    )
}

fn failing(h: &mut String, cells: &[CellRow], order: &[String]) {
    let failing = view::failures(cells, order);
    if failing.is_empty() {
        return;
    }
    let _ = write!(
        h,
        "<h3>Cells that did not end ok ({} of {})</h3>\n<table><tr><th>cell</th><th>outcome</th><th>detail</th></tr>\n",
        failing.len(),
        cells.len()
    );
    for c in failing.iter().take(MAX_FAILING) {
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&c.cell),
            esc(&c.outcome),
            esc(&c.detail)
        );
    }
    h.push_str("</table>\n");
    if failing.len() > MAX_FAILING {
        let _ = writeln!(
            h,
            "<p class=\"meta\">… and {} more.</p>",
            failing.len() - MAX_FAILING
        );
    }
}

/// Side of one square of the development-coverage strip, in pixels.
const DEV_SQUARE: f64 = 36.0;

/// The development-coverage strip under the failure map: per axis, every value development ran
/// or qualify examined — filled when development ran it, hollow when it never did, outlined
/// red when a cell failed there — and the sentence saying where the failures lie.
fn development(h: &mut String, d: &Development) {
    h.push_str("<h3>Development coverage</h3>\n");
    let _ = writeln!(h, "<p>{}</p>", esc(&d.sentence));
    let axes: Vec<&DevAxis> = d.axes.iter().filter(|a| !a.values().is_empty()).collect();
    if axes.is_empty() {
        return;
    }
    let label_w = axes
        .iter()
        .map(|a| a.axis.chars().count())
        .max()
        .unwrap_or(1) as f64
        * 7.5
        + 16.0;
    let widest = axes.iter().map(|a| a.values().len()).max().unwrap_or(1) as f64;
    let cell_w = axes
        .iter()
        .flat_map(|a| a.values())
        .map(|v| v.chars().count() as f64 * 7.0 + 10.0)
        .fold(DEV_SQUARE, f64::max);
    let (width, height) = (
        label_w + cell_w * widest + 10.0,
        DEV_SQUARE * axes.len() as f64 + 8.0,
    );
    let _ = write!(
        h,
        r#"<svg class="plot" width="{width:.0}" height="{height:.0}" viewBox="0 0 {width:.0} {height:.0}" role="img" aria-label="development coverage">"#
    );
    for (row, a) in axes.iter().enumerate() {
        let y = 4.0 + DEV_SQUARE * row as f64;
        let _ = write!(
            h,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="end" class="tick">{}</text>"#,
            label_w - 8.0,
            y + DEV_SQUARE / 2.0 + 4.0,
            esc(&a.axis)
        );
        for (i, v) in a.values().iter().enumerate() {
            let x = label_w + cell_w * i as f64;
            let ran = a.development.contains(v);
            let examined = a.examined.contains(v);
            let failed = a.failed.contains(v);
            let (fill, fg) = if ran {
                ("#1565c0", "#fff")
            } else {
                ("#f4f4f4", "#333")
            };
            let (stroke, sw) = if failed {
                ("#c62828", 3.0)
            } else {
                ("#9e9e9e", 1.0)
            };
            let mut title = format!("{} = {v}: ", a.axis);
            title.push_str(if ran {
                "development ran it"
            } else {
                "development never ran it"
            });
            title.push_str(match (examined, failed) {
                (true, true) => "; qualify examined it and a cell failed there",
                (true, false) => "; qualify examined it, no cell failed there",
                _ => "; qualify did not examine it",
            });
            let _ = write!(
                h,
                r#"<g><title>{}</title><rect x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{fill}" stroke="{stroke}" stroke-width="{sw}"/><text x="{:.1}" y="{:.1}" text-anchor="middle" class="tick" style="fill:{fg}">{}</text></g>"#,
                esc(&title),
                x + 2.0,
                y + 2.0,
                cell_w - 4.0,
                DEV_SQUARE - 4.0,
                x + cell_w / 2.0,
                y + DEV_SQUARE / 2.0 + 4.0,
                esc(v)
            );
        }
        if !a.in_template && a.development.is_empty() {
            let _ = write!(
                h,
                r#"<text x="{:.1}" y="{:.1}" class="note">(not in the command template)</text>"#,
                label_w + cell_w * a.values().len() as f64 + 6.0,
                y + DEV_SQUARE / 2.0 + 4.0
            );
        }
    }
    h.push_str("</svg>\n");
    h.push_str(
        "<p class=\"meta\"><span class=\"legend-item\"><span class=\"sw\" style=\"background:#1565c0\"></span>development ran it</span>\
         <span class=\"legend-item\"><span class=\"sw\" style=\"background:#f4f4f4;border:1px solid #9e9e9e\"></span>development never ran it</span>\
         <span class=\"legend-item\"><span class=\"sw\" style=\"border:3px solid #c62828\"></span>a cell failed at this value</span></p>\n",
    );
    if d.failing > 0 {
        let _ = writeln!(
            h,
            "<p class=\"meta\">Failing cells: {} where development never went, {} where it did, {} not placeable.</p>",
            d.outside, d.inside, d.unknown
        );
    }
}
