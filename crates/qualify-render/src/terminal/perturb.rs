//! A `[perturb]` campaign in a few lines (`qualify probe --perturb` prints them, and
//! `qualify run`'s summary under each perturbed cell): its runs and outcomes, each way it failed
//! with its seed, reproduction and bare rates, the points it was minimised to, the replay
//! command, the mechanisms used and the deadline.

use std::fmt::Write;

use qualify_model::PerturbReport;

/// The campaign's lines of the human summary.
pub fn campaign(p: &PerturbReport) -> String {
    let mut s = String::new();
    let modes: Vec<&str> = p.modes.iter().map(|m| m.as_str()).collect();
    let outcomes: Vec<String> = p.outcomes.iter().map(|(k, n)| format!("{k} {n}")).collect();
    let _ = writeln!(
        s,
        "  perturbation: {} runs ({}; seed {}), {:.1} runs/s: {}",
        p.runs,
        modes.join(", "),
        p.seed,
        p.runs_per_second,
        outcomes.join(", ")
    );
    if let Some(why) = &p.stopped {
        let _ = writeln!(s, "    stopped: {why}");
    }
    if p.slowed > 0 {
        let _ = writeln!(
            s,
            "    {} run(s) slowed past the deadline while progressing (not failures)",
            p.slowed
        );
    }
    for f in &p.failures {
        let only = if f.only_under_perturbation {
            " — only under perturbation"
        } else {
            ""
        };
        let _ = writeln!(
            s,
            "    {}{only}: {} of {} runs, first at run {} (seed {}, {})",
            f.kind(),
            f.count,
            p.runs,
            f.first_run + 1,
            f.seed,
            f.mode
        );
        let _ = writeln!(
            s,
            "      replayed {}; bare {}",
            f.replay.text(),
            f.bare.text()
        );
        if let Some(m) = &f.minimised {
            let _ = writeln!(
                s,
                "      minimised: {} of {} points, replayed {}",
                m.to,
                m.from,
                m.replay.text()
            );
            for pt in &m.points {
                let _ = writeln!(s, "        {}", pt.text);
            }
            if let Some(note) = &m.note {
                let _ = writeln!(s, "        ({note})");
            }
        }
        let _ = writeln!(s, "      replay: {}", f.replay_command);
    }
    let used: Vec<String> = p
        .mechanisms
        .iter()
        .map(|m| {
            let mut t = format!("{} in {} run(s)", m.name, m.runs);
            if m.not_applied > 0 {
                t.push_str(&format!(
                    " (not in {}: {})",
                    m.not_applied,
                    m.why_not.as_deref().unwrap_or("?")
                ));
            }
            t
        })
        .collect();
    if !used.is_empty() {
        let _ = writeln!(s, "    mechanisms: {}", used.join("; "));
    }
    let _ = writeln!(
        s,
        "    deadline: {:.1} s per perturbed run (the cell's {:.1} s + perturbation's budget)",
        p.deadline.perturbed_seconds, p.deadline.cell_seconds
    );
    s
}
