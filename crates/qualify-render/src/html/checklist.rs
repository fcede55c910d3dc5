//! The admission checklist: the claim, what was examined, what only the target can show, what
//! is assumed, how failures behaved, and what is traceable.

use std::fmt::Write;

use crate::text::esc;
use crate::view::View;

pub(super) fn checklist(h: &mut String, v: &View) {
    let Some(c) = v.checklist() else {
        return;
    };
    h.push_str("<h2>Admission checklist</h2>\n");
    if let Some(claim) = &c.claim {
        let _ = writeln!(h, "<p><b>Claim:</b> {}</p>", esc(claim));
    }
    list(h, "Examined", &c.examined);
    list(h, "Only the target can show", &c.target_only);
    list(h, "Assumed, not observed", &c.assumptions);
    if !c.failure_behaviour.is_empty() {
        h.push_str("<h3>Failure behaviour</h3><table>");
        for (k, val) in &c.failure_behaviour {
            let _ = write!(
                h,
                "<tr><th>{}</th><td>{}</td></tr>",
                esc(&k.replace('_', " ")),
                esc(val)
            );
        }
        h.push_str("</table>\n");
    }
    if !c.traceability.is_empty() {
        h.push_str(
            "<h3>Traceability</h3><table><tr><th>item</th><th>recorded</th><th>detail</th></tr>",
        );
        for t in &c.traceability {
            let _ = write!(
                h,
                "<tr><td>{}</td><td class=\"st {}\">{}</td><td>{}</td></tr>",
                esc(&t.item),
                if t.recorded == Some(true) {
                    "st-closed"
                } else {
                    "st-failed"
                },
                match t.recorded {
                    Some(true) => "✓ yes",
                    Some(false) => "✗ no",
                    None => "?",
                },
                esc(&t.detail)
            );
        }
        h.push_str("</table>\n");
    }
}

fn list(h: &mut String, title: &str, items: &[String]) {
    if items.is_empty() {
        return;
    }
    let _ = write!(h, "<h3>{}</h3><ul>", esc(title));
    for i in items {
        let _ = write!(h, "<li>{}</li>", esc(i));
    }
    h.push_str("</ul>\n");
}
