//! Schedule perturbation: per cell with a `[perturb]` campaign, each way its perturbed runs
//! failed — how often, its seed, the reproduction rate from replaying that seed beside the bare
//! rate, the points it was minimised to and the command that replays it — or that none did.

use std::fmt::Write;

use crate::text::esc;
use crate::view::View;

pub(super) fn perturbation(h: &mut String, v: &View) {
    let rows = v.perturbation();
    if rows.is_empty() {
        return;
    }
    h.push_str(
        "<h2>Schedule perturbation</h2>\n<p class=\"meta\">Each cell also ran many times under seeded schedule noise \
         (a preloaded shim delaying threads at synchronisation calls; scheduler-level noise from outside). \
         A failure is an interleaving the program allows: replayed from its seed beside as many bare runs \
         (95% Wilson intervals), and minimised to the points it needs.</p>\n\
         <table><tr><th>cell</th><th>perturbed</th><th>failure</th><th>found</th><th>seed</th>\
         <th>replayed</th><th>bare</th><th>points</th></tr>",
    );
    for r in &rows {
        let class = if r.bad { " class=\"st st-failed\"" } else { "" };
        let only = if r.only_under_perturbation {
            "<br><span class=\"meta\">only under perturbation</span>"
        } else {
            ""
        };
        let slowed = if r.slowed > 0 {
            format!(
                "<br><span class=\"meta\">{} slowed (not failures)</span>",
                r.slowed
            )
        } else {
            String::new()
        };
        let points: Vec<String> = r.points.iter().map(|p| esc(p)).collect();
        let command = if r.command == "—" {
            String::new()
        } else {
            format!("<br><code>{}</code>", esc(&r.command))
        };
        let _ = write!(
            h,
            "<tr><td>{}</td><td>{}{slowed}</td><td{class}><b>{}</b>{only}</td><td>{}</td><td>{}</td>\
             <td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}{command}</td></tr>",
            esc(&r.cell),
            esc(&r.runs),
            esc(&r.failure),
            esc(&r.found),
            esc(&r.seed),
            esc(&r.replay),
            esc(&r.bare),
            points.join("<br>"),
        );
    }
    h.push_str("</table>\n");
}
