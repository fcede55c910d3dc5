//! `qualify probe`'s summary of one result (also `qualify agent coordinate`'s without
//! `--json`): the outcome and why, times and peak memory, how each ceiling and the sandbox were
//! held, flags, repeats, output sizes, a `[perturb]` campaign, and the last stderr lines of a
//! run that did not end ok.

use std::fmt::Write;

use qualify_model::{Outcome, ProbeResult, Strength, format_bytes};

/// The short human summary of a result.
pub fn probe(r: &ProbeResult) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "outcome: {} — {}", r.outcome, r.detail);
    let peak = r
        .peak_memory_bytes
        .map(format_bytes)
        .unwrap_or_else(|| "unknown".into());
    let _ = writeln!(
        s,
        "  wall {:.2}s  user {:.2}s  sys {:.2}s  peak memory {peak}",
        r.wall_seconds, r.user_seconds, r.system_seconds
    );
    let e = &r.enforcement;
    let _ = writeln!(
        s,
        "  backend {} (memory: {}, cpus: {}, pids: {}; tree: {})",
        e.backend,
        strength(e.memory),
        strength(e.cpus),
        strength(e.pids),
        e.tree
    );
    for note in &e.notes {
        let _ = writeln!(s, "  note: {note}");
    }
    if let Some(sb) = &e.sandbox {
        let layers: Vec<String> = sb
            .layers()
            .iter()
            .map(|(name, l)| format!("{name} {}", strength(l.enforced)))
            .collect();
        let _ = writeln!(s, "  sandbox {} ({})", sb.mode, layers.join(", "));
    }
    if !r.flags.is_empty() {
        let flags: Vec<&str> = r.flags.iter().map(|f| f.as_str()).collect();
        let _ = writeln!(s, "  flags: {}", flags.join(", "));
    }
    if let Some(n) = r.distinct_outputs {
        let runs = r.runs.as_ref().map(|v| v.len()).unwrap_or(1);
        let agree = if n == 1 { "agree" } else { "DIFFER" };
        let _ = writeln!(
            s,
            "  repeats: {runs} runs, {n} distinct stdout digest(s): outputs {agree}"
        );
    }
    let _ = writeln!(
        s,
        "  output: {} bytes stdout, {} bytes stderr",
        r.stdout_bytes, r.stderr_bytes
    );
    if let Some(p) = &r.perturb {
        s.push_str(&super::campaign(p));
    }
    let tail = r.stderr_tail.trim_end();
    if r.outcome != Outcome::Ok && !tail.is_empty() {
        let lines: Vec<&str> = tail.lines().collect();
        let start = lines.len().saturating_sub(5);
        let _ = writeln!(s, "  last stderr lines:");
        for l in &lines[start..] {
            let _ = writeln!(s, "    | {l}");
        }
    }
    s
}

fn strength(s: Strength) -> &'static str {
    match s {
        Strength::Kernel => "kernel",
        Strength::Watchdog => "watchdog",
        Strength::None => "none",
    }
}
