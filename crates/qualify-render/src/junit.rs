//! JUnit XML: one `<testsuite>` for the artifact, one `<testcase>` per cell (classname = the
//! artifact, name = the cell's parameters, time = its wall seconds). A cell that did not end `ok`
//! gets a `<failure>` whose type is the outcome and whose message and text hold the detail; a cell
//! cut short by an interruption is `<skipped>` (it says nothing about the artifact).

use std::fmt::Write;

use crate::text::{self, esc};
use crate::view::View;

pub fn render(v: &View) -> String {
    let artifact = v.artifact();
    let order = v.axis_order();
    let cells = v.cells();
    let skipped = cells.iter().filter(|c| c.outcome == "interrupted").count();
    let failures = cells
        .iter()
        .filter(|c| c.outcome != "ok" && c.outcome != "interrupted")
        .count();
    let time: f64 = cells.iter().filter_map(|c| c.wall).sum();
    let mut x = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        x,
        "<testsuites name=\"qualify\" tests=\"{}\" failures=\"{failures}\" errors=\"0\" skipped=\"{skipped}\" time=\"{time:.6}\">",
        cells.len()
    );
    let _ = writeln!(
        x,
        "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{failures}\" errors=\"0\" skipped=\"{skipped}\" time=\"{time:.6}\">",
        esc(&artifact),
        cells.len()
    );
    let _ = writeln!(
        x,
        "    <properties>\n      <property name=\"claim\" value=\"{}\"/>\n      <property name=\"supported\" value=\"{}\"/>\n      <property name=\"incomplete\" value=\"{}\"/>\n    </properties>",
        esc(&v.claim_level()),
        v.supported()
            .map_or("unknown".to_string(), |b| b.to_string()),
        v.incomplete()
    );
    for c in &cells {
        let mut name = text::params(&c.params, &order);
        if name.is_empty() {
            name = "(no parameters)".into();
        }
        let time = c
            .wall
            .map(|w| format!(" time=\"{w:.6}\""))
            .unwrap_or_default();
        let open = format!(
            "    <testcase classname=\"{}\" name=\"{}\"{time}",
            esc(&artifact),
            esc(&name)
        );
        let message = if c.detail.is_empty() {
            c.outcome.clone()
        } else {
            format!("{}: {}", c.outcome, c.detail)
        };
        match c.outcome.as_str() {
            "ok" => {
                let _ = writeln!(x, "{open}/>");
            }
            "interrupted" => {
                let _ = writeln!(
                    x,
                    "{open}>\n      <skipped message=\"{}\"/>\n    </testcase>",
                    esc(&message)
                );
            }
            other => {
                let _ = writeln!(
                    x,
                    "{open}>\n      <failure type=\"{}\" message=\"{}\">{}</failure>\n    </testcase>",
                    esc(other),
                    esc(&message),
                    esc(&message)
                );
            }
        }
    }
    x.push_str("  </testsuite>\n</testsuites>\n");
    x
}
