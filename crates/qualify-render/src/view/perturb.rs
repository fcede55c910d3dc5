//! The rows of the Schedule perturbation section: one per way a cell's `[perturb]` campaign
//! failed (or one saying none did), read tolerantly from `result.perturb` (the shape
//! `qualify_model::perturb` defines) — a missing or mistyped part becomes `—`.

use serde_json::{Map, Value};

use super::json::{arr, f, obj, s};
use crate::text;

/// One way one cell's perturbed runs failed, or the cell's campaign when none did.
pub struct PerturbRow {
    /// The cell's parameters, in the receipt's axis order.
    pub cell: String,
    /// `200 runs (pct, noise, sched)`.
    pub runs: String,
    /// `deadlock`, `timeout (ambiguous_wait)`, or `none`.
    pub failure: String,
    /// No bare run failed this way.
    pub only_under_perturbation: bool,
    /// `8 of 200, first at run 14`, or `—`.
    pub found: String,
    /// `seed 7be662e30e37c2bd (noise)`, or `—`.
    pub seed: String,
    /// `13/20 (65%, 95% CI 43–82%)`, or `—`.
    pub replay: String,
    pub bare: String,
    /// The minimised points' sentences.
    pub points: Vec<String>,
    /// The command that replays it, or `—`.
    pub command: String,
    /// Runs slowed past the deadline (not failures).
    pub slowed: u64,
    /// A failure: drawn as one.
    pub bad: bool,
}

/// `3/20 (15%, 95% CI 5–36%)` of a `Rate` object, or `—`.
fn rate(r: Option<&Value>) -> String {
    let o = obj(r);
    let (Some(failed), Some(runs)) = (f(o.get("failed")), f(o.get("runs"))) else {
        return "—".into();
    };
    let pct = |x: Option<f64>| x.map_or("?".into(), |x| format!("{:.0}", x * 100.0));
    let share = if runs > 0.0 { failed / runs } else { 0.0 };
    format!(
        "{failed}/{runs} ({}%, 95% CI {}–{}%)",
        pct(Some(share)),
        pct(f(o.get("low"))),
        pct(f(o.get("high")))
    )
}

fn row_of(cell: &str, runs: &str, slowed: u64, fail: Option<&Map<String, Value>>) -> PerturbRow {
    let Some(fl) = fail else {
        return PerturbRow {
            cell: cell.into(),
            runs: runs.into(),
            failure: "none".into(),
            only_under_perturbation: false,
            found: "—".into(),
            seed: "—".into(),
            replay: "—".into(),
            bare: "—".into(),
            points: Vec::new(),
            command: "—".into(),
            slowed,
            bad: false,
        };
    };
    let outcome = s(fl.get("outcome"));
    let failure = match s(fl.get("timeout_kind")) {
        k if k.is_empty() => outcome,
        k => format!("{outcome} ({k})"),
    };
    let first = f(fl.get("first_run")).map(|x| x + 1.0);
    let found = match (f(fl.get("count")), first) {
        (Some(c), Some(first)) => format!("{c} runs, first at run {first}"),
        _ => "—".into(),
    };
    let seed = match (s(fl.get("seed")), s(fl.get("mode"))) {
        (seed, _) if seed.is_empty() => "—".into(),
        (seed, mode) if mode.is_empty() => seed,
        (seed, mode) => format!("{seed} ({mode})"),
    };
    let minimised = obj(fl.get("minimised"));
    let mut points: Vec<String> = arr(minimised.get("points"))
        .iter()
        .map(|p| s(p.get("text")))
        .filter(|t| !t.is_empty())
        .collect();
    let note = s(minimised.get("note"));
    if !note.is_empty() {
        points.push(format!("({note})"));
    }
    let command = match s(fl.get("replay_command")) {
        c if c.is_empty() => "—".into(),
        c => c,
    };
    PerturbRow {
        cell: cell.into(),
        runs: runs.into(),
        failure,
        only_under_perturbation: fl.get("only_under_perturbation") == Some(&Value::Bool(true)),
        found,
        seed,
        replay: rate(fl.get("replay")),
        bare: rate(fl.get("bare")),
        points,
        command,
        slowed,
        bad: true,
    }
}

/// Every cell's campaign, in the receipt's cell order.
pub(super) fn rows(cells: &[Value], order: &[String]) -> Vec<PerturbRow> {
    let mut out = Vec::new();
    for c in cells {
        let Some(p) = c.get("result").and_then(|r| r.get("perturb")) else {
            continue;
        };
        if !p.is_object() {
            continue;
        }
        let cell = text::params(&obj(c.get("params")), order);
        let modes: Vec<String> = arr(p.get("modes")).iter().map(|m| s(Some(m))).collect();
        let runs = format!(
            "{} runs ({})",
            f(p.get("runs")).map_or("?".into(), |r| r.to_string()),
            modes.join(", ")
        );
        let slowed = p.get("slowed").and_then(Value::as_u64).unwrap_or(0);
        let failures: Vec<&Map<String, Value>> = arr(p.get("failures"))
            .iter()
            .filter_map(Value::as_object)
            .collect();
        if failures.is_empty() {
            out.push(row_of(&cell, &runs, slowed, None));
        }
        for fl in failures {
            out.push(row_of(&cell, &runs, slowed, Some(fl)));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn reads_a_campaign_and_tolerates_a_broken_one() {
        let cells = vec![
            json!({"params": {"n": 4}, "result": {"perturb": {
                "modes": ["pct", "noise"], "runs": 200, "slowed": 1,
                "failures": [{"outcome": "deadlock", "seed": "00aa", "mode": "noise",
                    "first_run": 13, "count": 8, "only_under_perturbation": true,
                    "replay": {"failed": 13, "runs": 20, "low": 0.43, "high": 0.82},
                    "bare": {"failed": 0, "runs": 20, "low": 0.0, "high": 0.16},
                    "replay_command": "qualify probe --perturb --seed 00aa -- ./x",
                    "minimised": {"points": [{"text": "thread 1 delayed 69 µs before pthread_mutex_lock(0x1) at x.c:22"}]}}]}}}),
            json!({"params": {"n": 8}, "result": {"perturb": {"runs": "many", "failures": 3}}}),
            json!({"params": {"n": 16}, "result": {"outcome": "ok"}}),
        ];
        let rows = rows(&cells, &["n".to_string()]);
        assert_eq!(rows.len(), 2);
        let r = &rows[0];
        assert!(r.bad && r.only_under_perturbation);
        assert_eq!(r.failure, "deadlock");
        assert_eq!(r.found, "8 runs, first at run 14");
        assert_eq!(r.replay, "13/20 (65%, 95% CI 43–82%)");
        assert_eq!(r.points.len(), 1);
        assert_eq!(r.runs, "200 runs (pct, noise)");
        assert_eq!(rows[1].failure, "none");
        assert_eq!(rows[1].runs, "? runs ()");
    }
}
