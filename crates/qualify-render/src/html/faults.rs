//! Dependency faults and restarts, one row per fault record of a cell: what was done to which
//! dependency, the behaviour verdict beside what the claim expected, what the window's
//! requests met (fast errors with their latency, timeouts), goodput before / during / after
//! the window, recovery, amplification, the pool, the restart and the acknowledged-writes
//! check. Columns no row fills are left out.

use std::fmt::Write;

use crate::text::esc;
use crate::view::{FaultRow, View};

pub(super) fn faults(h: &mut String, v: &View) {
    let rows = v.faults();
    if rows.is_empty() {
        return;
    }
    let has = |pick: fn(&FaultRow) -> &str| rows.iter().any(|r| pick(r) != "—");
    let (pool, restart, writes) = (has(|r| &r.pool), has(|r| &r.restart), has(|r| &r.writes));
    let expected = has(|r| &r.expected);
    h.push_str(
        "<h2>Faults</h2>\n<p class=\"meta\">What each cell did to the service's dependencies (and to the service), \
         and how it behaved: the window's failed requests came back fast (an error answer, a refused or reset connection) \
         or timed out; goodput is answers that met <code>expect_status</code> per second, before / during / after the window; \
         recovery is from the end of the fault window until the SLOs held again; \
         amplification is dependency requests per request the service received, before / during / after the window. \
         The <code>none</code> cell is the control: its variation is the noise floor a slowdown must exceed.</p>\n\
         <table><tr><th>cell</th><th>dependency</th><th>fault</th><th>behaviour</th>",
    );
    if expected {
        h.push_str("<th>expected</th>");
    }
    h.push_str(
        "<th>in the window</th><th>goodput<br><span class=\"meta\">before / during / after</span></th><th>recovery</th><th>amplification</th>",
    );
    for (shown, title) in [(pool, "pool"), (restart, "restart"), (writes, "writes")] {
        if shown {
            let _ = write!(h, "<th>{title}</th>");
        }
    }
    h.push_str("<th>outcome</th></tr>");
    for r in &rows {
        let detail = if r.detail.is_empty() {
            String::new()
        } else {
            format!("<br><span class=\"meta\">{}</span>", esc(&r.detail))
        };
        let verdict_class = if r.unexpected {
            " class=\"st st-failed\""
        } else {
            ""
        };
        let _ = write!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td{verdict_class}><b>{}</b>{detail}</td>",
            esc(&r.cell),
            esc(&r.dependency),
            esc(&r.fault),
            esc(&r.verdict),
        );
        if expected {
            let _ = write!(h, "<td>{}</td>", esc(&r.expected));
        }
        let _ = write!(
            h,
            "<td>{}</td><td class=\"num\">{}</td><td class=\"{}\">{}</td><td>{}</td>",
            esc(&r.window),
            esc(&r.goodput),
            if r.recovery == "not recovered" {
                "st st-failed"
            } else {
                "num"
            },
            esc(&r.recovery),
            esc(&r.amplification),
        );
        for (shown, text) in [(pool, &r.pool), (restart, &r.restart), (writes, &r.writes)] {
            if shown {
                let _ = write!(h, "<td>{}</td>", esc(text));
            }
        }
        let class = if r.bad { " class=\"st st-failed\"" } else { "" };
        let _ = write!(h, "<td{class}>{}</td></tr>", esc(&r.outcome));
    }
    h.push_str("</table>\n");
}
