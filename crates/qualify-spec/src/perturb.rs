//! `[perturb]`: after its own runs, every cell runs many more times under seeded schedule
//! perturbation (the preloaded shim at pthread synchronisation calls, scheduler-level noise
//! from outside), each run with its own recorded seed; each way the runs fail is replayed for a
//! reproduction rate beside as many bare runs, and minimised. Keys: `runs` (default 200),
//! `modes` (default `["pct", "noise", "sched"]`), `seed` (the campaign's, default 1),
//! `replays` (N, default 20), `minimise` (default true), `depth` (PCT's d, default 3), `budget`
//! (the most delay the shim adds to one run, default "1s").
//!
//! Batch cells on this machine only: a service cell or the Slurm executor with `[perturb]` is
//! an error (coherence checks in `spec.rs`).

use std::time::Duration;

use qualify_model::PerturbMode;
use serde::{Deserialize, Serialize, Serializer};
use toml::{Spanned, Value};

use crate::check::Checker;

/// The checked `[perturb]` table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Perturb {
    pub runs: u64,
    pub modes: Vec<PerturbMode>,
    pub seed: u64,
    pub replays: u64,
    pub minimise: bool,
    pub depth: u32,
    #[serde(rename = "budget_seconds", serialize_with = "seconds")]
    pub budget: Duration,
}

fn seconds<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    d.as_secs_f64().serialize(s)
}

impl Default for Perturb {
    fn default() -> Perturb {
        Perturb {
            runs: 200,
            modes: PerturbMode::ALL.to_vec(),
            seed: 1,
            replays: 20,
            minimise: true,
            depth: 3,
            budget: Duration::from_secs(1),
        }
    }
}

/// The most runs a cell's campaign may have (a typo of a few zeros is an error, not a week).
const MAX_RUNS: u64 = 1_000_000;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawPerturb {
    runs: Option<Spanned<i64>>,
    modes: Option<Spanned<Vec<String>>>,
    seed: Option<Spanned<i64>>,
    replays: Option<Spanned<i64>>,
    minimise: Option<bool>,
    depth: Option<Spanned<i64>>,
    budget: Option<Spanned<Value>>,
}

pub(crate) fn check(raw: RawPerturb, ck: &mut Checker<'_>) -> Perturb {
    let mut out = Perturb::default();
    let bounded = |v: &Spanned<i64>, what: &str, lo: i64, hi: u64, ck: &mut Checker<'_>| {
        let n = *v.get_ref();
        if n < lo || n as u64 > hi {
            ck.error_help(
                v.span(),
                format!("{what} is {n}, outside {lo}..={hi}"),
                format!("write {what} as a whole number from {lo} to {hi}"),
            );
            None
        } else {
            Some(n as u64)
        }
    };
    if let Some(r) = &raw.runs {
        out.runs = bounded(r, "perturb.runs", 1, MAX_RUNS, ck).unwrap_or(out.runs);
    }
    if let Some(r) = &raw.replays {
        out.replays = bounded(r, "perturb.replays", 0, 100_000, ck).unwrap_or(out.replays);
    }
    if let Some(d) = &raw.depth {
        out.depth = bounded(d, "perturb.depth", 1, 16, ck).map_or(out.depth, |d| d as u32);
    }
    if let Some(s) = &raw.seed {
        if *s.get_ref() < 0 {
            ck.error_help(
                s.span(),
                format!("perturb.seed is {}, a negative number", s.get_ref()),
                "write the campaign's seed as a whole number ≥ 0",
            );
        } else {
            out.seed = *s.get_ref() as u64;
        }
    }
    if let Some(m) = raw.minimise {
        out.minimise = m;
    }
    if let Some(b) = &raw.budget
        && let Some(d) = ck.duration(b)
    {
        if d > Duration::from_secs(3600) {
            ck.error_help(
                b.span(),
                "perturb.budget is over an hour: every perturbed run's deadline grows by it",
                "a budget of a second or two is usually enough (it bounds the delay the shim adds to one run)",
            );
        } else {
            out.budget = d;
        }
    }
    if let Some(modes) = &raw.modes {
        let mut parsed = Vec::new();
        for m in modes.get_ref() {
            match m.parse::<PerturbMode>() {
                Ok(mode) if !parsed.contains(&mode) => parsed.push(mode),
                Ok(_) => ck.error_help(
                    modes.span(),
                    format!("perturb.modes names `{m}` twice"),
                    "name each mode once; the runs rotate through them",
                ),
                Err(e) => ck.error_help(
                    modes.span(),
                    e.to_string(),
                    "modes are \"pct\", \"noise\" and \"sched\"",
                ),
            }
        }
        if modes.get_ref().is_empty() {
            ck.error_help(
                modes.span(),
                "perturb.modes is empty",
                "name at least one of \"pct\", \"noise\", \"sched\" (or leave modes out for all three)",
            );
        } else if !parsed.is_empty() {
            out.modes = parsed;
        }
    }
    out
}
