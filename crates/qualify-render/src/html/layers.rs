//! The evidence-layer table: each layer's status, summary and what it left untested.

use std::fmt::Write;

use crate::text::esc;
use crate::view::View;

pub(super) fn layers(h: &mut String, v: &View) {
    h.push_str("<h2>Evidence layers</h2>\n<table><tr><th>layer</th><th>status</th><th>summary</th><th>untested</th></tr>\n");
    for l in v.layers() {
        let untested = if l.untested.is_empty() {
            "—".to_string()
        } else {
            format!(
                "<ul>{}</ul>",
                l.untested
                    .iter()
                    .map(|u| format!("<li>{}</li>", esc(u)))
                    .collect::<String>()
            )
        };
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td class=\"st st-{}\">{}</td><td>{}</td><td>{untested}</td></tr>",
            esc(&l.name),
            esc(&l.status),
            esc(&l.status),
            esc(&l.summary)
        );
    }
    h.push_str("</table>\n");
}
