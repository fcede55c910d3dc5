//! The boundaries the envelope search found, one sentence each (a load axis's capacity first,
//! as its own sentence), and the claimed region: per axis what the claim covers and the
//! headroom found beyond it.

use std::fmt::Write;

use crate::text::esc;
use crate::view::View;

pub(super) fn boundaries(h: &mut String, v: &View) {
    let b = v.boundaries();
    if b.is_empty() {
        return;
    }
    let capacity: Vec<&String> = b.iter().filter_map(|x| x.capacity.as_ref()).collect();
    if !capacity.is_empty() {
        h.push_str("<h2>Capacity</h2>\n");
        for c in capacity {
            let _ = write!(h, "<p><b>{}</b></p>", esc(c));
        }
        h.push('\n');
    }
    h.push_str("<h2>Boundaries</h2>\n<ul>");
    for x in &b {
        let _ = write!(h, "<li>{}</li>", esc(&x.sentence()));
    }
    h.push_str("</ul>\n");
}

pub(super) fn claimed(h: &mut String, v: &View) {
    let rows = v.claimed();
    if !rows.iter().any(|r| r.bounded) {
        return;
    }
    h.push_str(
        "<h2>Claimed region</h2>\n<p class=\"meta\">The claim covers each axis up to the target's value; \
         cells beyond it were explored to map the envelope and do not refute the claim.</p>\n\
         <table><tr><th>axis</th><th>claim covers</th><th>cells beyond</th><th>headroom</th><th>required</th></tr>",
    );
    for r in &rows {
        let cls = if r.short { " class=\"no\"" } else { "" };
        let _ = write!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td{cls}>{}</td><td>{}</td></tr>",
            esc(&r.axis),
            esc(&r.claims),
            esc(&r.cells_beyond),
            if r.bounded {
                esc(&r.headroom)
            } else {
                "—".to_string()
            },
            esc(&r.required)
        );
    }
    h.push_str("</table>\n");
}
