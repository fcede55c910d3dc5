//! JUnit XML: one `<testsuite>` for the artifact, one `<testcase>` per cell (classname = the
//! artifact, name = the cell's parameters, time = its wall seconds). A cell that did not end `ok`
//! gets a `<failure>` whose type is the outcome and whose message and text hold the detail; a cell
//! cut short by an interruption is `<skipped>` (it says nothing about the artifact). A service
//! cell's `<system-out>` lists its objectives, each with the phase it was judged over, and its
//! behaviour under each fault beside what the claim expected — the same verdict the outcome
//! gives.

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
    let services = v.services();
    let faults = v.faults();
    for c in &cells {
        let mut name = text::params(&c.params, &order);
        let mut out: Vec<String> = Vec::new();
        if let Some(service) = services.iter().find(|s| s.params == c.params) {
            out.extend(
                service
                    .slos
                    .iter()
                    .map(|x| format!("objective {}", x.text())),
            );
        }
        let label = text::params(&c.params, &order);
        for f in faults
            .iter()
            .filter(|f| f.cell == label || (label.is_empty() && f.cell == "—"))
        {
            let expected = if f.expected == "—" {
                String::new()
            } else {
                format!(
                    " (expected {}{})",
                    f.expected,
                    if f.unexpected { ": NOT met" } else { ": met" }
                )
            };
            out.push(format!(
                "under {} {}: {}{expected}; in the window {}; goodput before / during / after {}; {}",
                f.dependency, f.fault, f.verdict, f.window, f.goodput, f.detail
            ));
        }
        let system_out = if out.is_empty() {
            String::new()
        } else {
            format!("\n      <system-out>{}</system-out>", esc(&out.join("\n")))
        };
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
            "ok" if system_out.is_empty() => {
                let _ = writeln!(x, "{open}/>");
            }
            "ok" => {
                let _ = writeln!(x, "{open}>{system_out}\n    </testcase>");
            }
            "interrupted" => {
                let _ = writeln!(
                    x,
                    "{open}>\n      <skipped message=\"{}\"/>{system_out}\n    </testcase>",
                    esc(&message)
                );
            }
            other => {
                let _ = writeln!(
                    x,
                    "{open}>\n      <failure type=\"{}\" message=\"{}\">{}</failure>{system_out}\n    </testcase>",
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
