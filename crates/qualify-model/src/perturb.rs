//! Seeded schedule perturbation as a cell's result carries it ([`PerturbReport`]): how many runs
//! were perturbed and how, how they ended, each failure with its seed, its reproduction
//! probability ([`Rate`], a Wilson interval) from replaying that seed, the bare failure rate
//! from as many unperturbed runs, whether it appeared only under perturbation, and the few
//! perturbation points it was minimised to. Field names and strings are a public contract of
//! `qualify probe --perturb --json` and the receipt.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::outcome::Outcome;
use crate::result::TimeoutKind;

/// The z of a two-sided 95% interval.
const Z95: f64 = 1.959_963_984_540_054;

/// `failed` of `runs`, with its 95% Wilson score interval (Wilson 1927): an estimate that stays
/// inside [0, 1] and is honest at 0 of n and n of n, where the normal approximation is not.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Rate {
    pub failed: u64,
    pub runs: u64,
    /// Lower end of the 95% Wilson interval.
    pub low: f64,
    /// Upper end of the 95% Wilson interval.
    pub high: f64,
}

impl Rate {
    /// `failed` of `runs` with its Wilson interval; 0 of 0 is the whole of [0, 1].
    pub fn wilson(failed: u64, runs: u64) -> Rate {
        let failed = failed.min(runs);
        if runs == 0 {
            return Rate {
                failed,
                runs,
                low: 0.0,
                high: 1.0,
            };
        }
        let n = runs as f64;
        let p = failed as f64 / n;
        let z2 = Z95 * Z95;
        let centre = (p + z2 / (2.0 * n)) / (1.0 + z2 / n);
        let half = Z95 / (1.0 + z2 / n) * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
        // At 0 (or n) of n the interval touches 0 (or 1) exactly; rounding must not move it.
        let low = if failed == 0 {
            0.0
        } else {
            (centre - half).max(0.0)
        };
        let high = if failed == runs {
            1.0
        } else {
            (centre + half).min(1.0)
        };
        Rate {
            failed,
            runs,
            low,
            high,
        }
    }

    /// The point estimate `failed / runs` (0 for no runs).
    pub fn fraction(&self) -> f64 {
        if self.runs == 0 {
            0.0
        } else {
            self.failed as f64 / self.runs as f64
        }
    }

    /// `3/20 (15%, 95% CI 5–36%)`.
    pub fn text(&self) -> String {
        format!(
            "{}/{} ({:.0}%, 95% CI {:.0}–{:.0}%)",
            self.failed,
            self.runs,
            self.fraction() * 100.0,
            self.low * 100.0,
            self.high * 100.0
        )
    }
}

/// One way of perturbing a run. `pct` and `noise` are the preloaded shim's; `sched` is the
/// scheduler-level perturbation applied from outside to every program.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PerturbMode {
    /// PCT-style priorities with change points, at the synchronisation calls (the shim).
    Pct,
    /// Uniform random yields and sleeps at the synchronisation calls (the shim).
    Noise,
    /// Per-thread `SCHED_IDLE` and nice windows, CPU affinity squeezes, CPU quota bursts, short
    /// freezes of the tree, `GOMAXPROCS` (from outside; reaches static binaries, Go, the JVM).
    Sched,
}

impl PerturbMode {
    pub const ALL: [PerturbMode; 3] = [PerturbMode::Pct, PerturbMode::Noise, PerturbMode::Sched];

    pub fn as_str(self) -> &'static str {
        match self {
            PerturbMode::Pct => "pct",
            PerturbMode::Noise => "noise",
            PerturbMode::Sched => "sched",
        }
    }

    /// Whether the mode works through the preloaded shim.
    pub fn uses_shim(self) -> bool {
        matches!(self, PerturbMode::Pct | PerturbMode::Noise)
    }
}

impl std::fmt::Display for PerturbMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for PerturbMode {
    type Err = crate::ParseError;
    fn from_str(s: &str) -> Result<PerturbMode, crate::ParseError> {
        match s {
            "pct" => Ok(PerturbMode::Pct),
            "noise" => Ok(PerturbMode::Noise),
            "sched" => Ok(PerturbMode::Sched),
            other => Err(crate::ParseError::new(
                "perturbation mode",
                other,
                ["pct", "noise", "sched"],
            )),
        }
    }
}

/// How a perturbed run's deadline relates to the cell's: perturbation may add at most its
/// budget of delay, so the deadline is the cell's plus that budget, stated.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Deadline {
    /// The cell's own timeout.
    pub cell_seconds: f64,
    /// The timeout each perturbed run had.
    pub perturbed_seconds: f64,
    /// Why they differ, in one line.
    pub why: String,
}

/// How often one mechanism applied over the campaign.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MechanismUse {
    /// e.g. `shim pct`, `SCHED_IDLE`, `affinity squeeze`, `freeze`, `cpu quota burst`,
    /// `GOMAXPROCS`.
    pub name: String,
    /// Runs in which it applied at least once.
    pub runs: u64,
    /// Times it applied over all runs.
    pub times: u64,
    /// Runs that asked for it but where it could not apply, and why (the last reason seen).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub not_applied: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why_not: Option<String>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// One perturbation point a failure was minimised to, e.g. "thread 2 delayed 40 µs before
/// pthread_mutex_lock(0x5581…) at lock.c:17".
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PointNote {
    /// The shim's process number (0: the first process it loaded in).
    pub process: u32,
    /// The shim's thread number in that process (0: its main thread).
    pub thread: u32,
    /// The thread's n-th synchronisation call.
    pub call_number: u32,
    /// The call, e.g. `pthread_mutex_lock`.
    pub call: String,
    /// `before` or `after` the call.
    pub when: String,
    /// `sleep`, `yield`, `hold` or `priority`.
    pub action: String,
    pub micros: u32,
    /// The object's address (mutex, condition variable, …) as the program saw it.
    pub object: String,
    /// `file:line` of the caller, when its debug information says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<String>,
    /// The sentence.
    pub text: String,
}

/// A failure's minimisation: the points kept and how often they alone reproduce it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Minimised {
    /// Points the failing run had.
    pub from: u64,
    /// Points kept.
    pub to: u64,
    /// How often replaying only the kept points (as fixed delays) failed the same way.
    pub replay: Rate,
    pub points: Vec<PointNote>,
    /// Why it stopped where it did, when not at a 1-minimal set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// One way the perturbed runs failed (an outcome, and for timeouts its kind).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PerturbFailure {
    pub outcome: Outcome,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_kind: Option<TimeoutKind>,
    /// The first failing run's detail line.
    pub detail: String,
    /// The first failing run's seed (16 hex digits).
    pub seed: String,
    /// The first failing run's mechanisms, e.g. `noise` or `pct+sched`.
    pub mode: String,
    /// Index of the first failing run (0-based): runs to first failure is this + 1.
    pub first_run: u64,
    /// Perturbed runs that failed this way.
    pub count: u64,
    /// The seeds of the later runs that failed this way (at most 16), each with its mode.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub other_seeds: Vec<String>,
    /// Replaying the seed N times: how often it failed this way.
    pub replay: Rate,
    /// N unperturbed runs: how often they failed this way.
    pub bare: Rate,
    /// No bare run failed this way: a real interleaving the program allows, made likely by
    /// perturbation (not a crash of the harness: the shim only ever adds delay).
    pub only_under_perturbation: bool,
    /// The command that replays it.
    pub replay_command: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub minimised: Option<Minimised>,
}

impl PerturbFailure {
    /// `deadlock` or `timeout (ambiguous_wait)`.
    pub fn kind(&self) -> String {
        match self.timeout_kind {
            Some(k) => format!("{} ({})", self.outcome, k.as_str()),
            None => self.outcome.to_string(),
        }
    }
}

/// One perturbed run, as `qualify probe --perturb --json` lists them (a receipt keeps only the
/// summary).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PerturbRun {
    pub seed: String,
    pub mode: String,
    pub outcome: Outcome,
    pub wall_seconds: f64,
    /// The mechanisms that applied, in one line.
    pub applied: String,
}

/// The perturbation campaign of one cell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PerturbReport {
    /// The modes the runs rotated through.
    pub modes: Vec<PerturbMode>,
    /// The campaign's seed; each run's seed is derived from it and its index.
    pub seed: String,
    /// Perturbed runs done (a replay of one given seed counts its replays here).
    pub runs: u64,
    /// Perturbed runs by outcome.
    pub outcomes: BTreeMap<String, u64>,
    pub failures: Vec<PerturbFailure>,
    /// Runs that hit the deadline while making progress, busy or idle (not stuck): slowed by
    /// perturbation, not failures of the program (bare runs say whether it is slow anyway).
    pub slowed: u64,
    /// Unperturbed runs made beside the replays, and how they ended.
    pub bare_runs: u64,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub bare_outcomes: BTreeMap<String, u64>,
    pub mechanisms: Vec<MechanismUse>,
    pub deadline: Deadline,
    /// Perturbed runs per second of the campaign's wall time (replays and minimisation apart).
    pub runs_per_second: f64,
    /// Why the campaign stopped before its planned runs, if it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
    /// Every run (the command line's JSON; a receipt leaves them out).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub run_list: Vec<PerturbRun>,
}

impl PerturbReport {
    /// Whether any perturbed run failed (a failure the program allows).
    pub fn failed(&self) -> bool {
        !self.failures.is_empty()
    }

    /// `deadlock under perturbation (seed 1f…, 7/20 replays, bare 0/20)` for the first failure.
    pub fn headline(&self) -> Option<String> {
        let f = self.failures.first()?;
        let only = if f.only_under_perturbation {
            " only under perturbation"
        } else {
            ""
        };
        Some(format!(
            "{}{only} (seed {}, {} of {} perturbed runs, first at run {}; replayed {}, bare {})",
            f.kind(),
            f.seed,
            f.count,
            self.runs,
            f.first_run + 1,
            f.replay.text(),
            f.bare.text()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wilson_matches_published_values_and_stays_in_bounds() {
        // Newcombe (1998), table I: 81 of 263 → 0.2553–0.3662.
        let r = Rate::wilson(81, 263);
        assert!(
            (r.low - 0.2553).abs() < 5e-4 && (r.high - 0.3662).abs() < 5e-4,
            "{r:?}"
        );
        // 0 of 10 → 0–0.2775; 10 of 10 → 0.7225–1.
        let r = Rate::wilson(0, 10);
        assert_eq!(r.low, 0.0);
        assert!((r.high - 0.2775).abs() < 5e-4, "{r:?}");
        let r = Rate::wilson(10, 10);
        assert_eq!(r.high, 1.0);
        assert!((r.low - 0.7225).abs() < 5e-4, "{r:?}");
        let r = Rate::wilson(0, 0);
        assert_eq!((r.low, r.high), (0.0, 1.0));
        assert_eq!(Rate::wilson(3, 20).text(), "3/20 (15%, 95% CI 5–36%)");
    }

    #[test]
    fn modes_parse_and_name_themselves() {
        for m in PerturbMode::ALL {
            assert_eq!(m.as_str().parse::<PerturbMode>().unwrap(), m);
        }
        assert!("chaos".parse::<PerturbMode>().is_err());
    }
}
