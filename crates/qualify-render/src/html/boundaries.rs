//! The boundaries the envelope search found, one sentence each.

use std::fmt::Write;

use crate::text::esc;
use crate::view::View;

pub(super) fn boundaries(h: &mut String, v: &View) {
    let b = v.boundaries();
    if b.is_empty() {
        return;
    }
    h.push_str("<h2>Boundaries</h2>\n<ul>");
    for x in &b {
        let _ = write!(h, "<li>{}</li>", esc(&x.sentence()));
    }
    h.push_str("</ul>\n");
}
