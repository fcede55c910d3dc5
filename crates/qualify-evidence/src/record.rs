//! The input of this crate: [`RunRecord`], everything one `qualify run` observed, filled in by
//! `qualify-run` (spec, planner, executor). It holds only inputs, each typed as its producer
//! wrote it (the spec's axes and waivers, the planner's [`Boundary`], `qualify-perf`'s
//! [`Performance`], the sandbox's self-tests, the process and reproducibility inputs): no JSON
//! value and no type of the code that assesses it (`tests/architecture.rs` checks the first).
//! This crate reads no spec and plans nothing; it only judges what the record says was run. Also
//! owns output trimming for probe results kept in a receipt.

use std::time::SystemTime;

use qualify_model::{Outcome, ProbeResult};
use serde::{Deserialize, Serialize};

use crate::claim::ClaimLevel;

/// A boundary search's result (the planner's type) and the performance analysis (the one
/// `qualify-perf` returns): the record holds both as their producers typed them.
pub use qualify_model::boundary::Boundary;
pub use qualify_model::selftest::{HeldOutAttempts, SelfTest};
pub use qualify_perf::Performance;
pub use qualify_trace::DevRecord;

/// Everything one run observed, in the order it happened.
#[derive(Debug, Clone)]
pub struct RunRecord {
    /// qualify's own version, e.g. `env!("CARGO_PKG_VERSION")` of the binary.
    pub qualify_version: String,
    pub artifact: ArtifactRecord,
    /// The spec file and its digest.
    pub spec: FileDigest,
    /// `--set` overrides applied over the spec file, as given.
    pub spec_overrides: Vec<String>,
    /// The level the spec claims.
    pub claim: ClaimLevel,
    pub target: Target,
    /// Facts of the machine the run happened on.
    pub machine: Machine,
    /// The axes the spec declared, in declaration order (examined ranges are computed from the
    /// cells that actually completed, never taken from the declaration).
    pub axes: Vec<Axis>,
    /// Dimensions the spec declares material (axes' kinds, ceilings, explicit declarations).
    /// Target facts add more: cores > 1 makes concurrency material, nodes > 1 topology, a target
    /// memory makes memory material, a target workload makes workload material.
    pub material: Vec<Dimension>,
    /// `[[waiver]]` entries of the spec.
    pub waivers: Vec<Waiver>,
    /// The spec's `[[dependency]]` names, in declaration order: each needs a completed cell
    /// that put a fault other than `none` on it, else it is the gap `faults.<name>`.
    pub dependencies: Vec<String>,
    /// `[claim] headroom`: how far beyond the target the first failure must lie.
    pub headroom: qualify_model::Headroom,
    pub functional: FunctionalRun,
    /// Held-out checks (`--holdout DIR`) and whether the spec requires them.
    pub holdout: crate::holdout::HoldoutRun,
    /// `[claim] perturb = "required"`: production on a concurrent artifact needs every claimed
    /// cell perturbed.
    pub perturb_required: bool,
    /// Development trace and git history (`--trace`, `--since`): the process layer's input.
    pub process: ProcessRecord,
    /// The environment fingerprint of this run (`None`: not collected), and the spec's
    /// `[reproducibility]` declaration: the reproducibility layer's input.
    pub environment: Option<qualify_trust::Fingerprint>,
    pub reproducibility: ReproducibilityDecl,
    /// Operational probing ran even though the functional layer failed (`--keep-going`).
    pub keep_going: bool,
    /// Every cell probed, in the order it ran (boundary-search probes included).
    pub cells: Vec<Cell>,
    /// How many cells the plan held (before boundary search added probes), when known.
    pub planned_cells: Option<usize>,
    /// The boundary searches' results, as the planner wrote them.
    pub boundaries: Vec<Boundary>,
    /// The `qualify-perf` analysis of `[performance]` (`None`: no `[performance]`).
    pub performance: Option<Performance>,
    /// The run was interrupted: whatever did not finish is not closed.
    pub incomplete: bool,
    /// The sandbox of the run: its self-test and the enforcement it confirmed (`None`: not
    /// assessed).
    pub sandbox: Option<SandboxRecord>,
    pub started: SystemTime,
    pub finished: SystemTime,
}

/// The artifact under qualification: its own files, never its interpreter's.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ArtifactRecord {
    pub name: String,
    /// The artifact's own file that ran, when one could be found and hashed: the program
    /// (the built binary), or the script an interpreter runs (`front.py` of `python3 front.py`).
    pub executable: Option<FileDigest>,
    /// The interpreter the command runs the script with; a tool of the environment (its
    /// version is in the fingerprint's tools), not a subject.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interpreter: Option<Interpreter>,
    /// A digest of the workdir's files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tree: Option<TreeDigest>,
}

/// The interpreter an artifact's command names (`python3`), as found on `PATH`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Interpreter {
    pub command: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
}

/// One digest over a directory's files: sha256 of the `sha256sum`-style lines (`<sha256>  <path>`,
/// paths relative to the directory, sorted bytewise) of its git-tracked files (`method: git`),
/// or of all its regular files but `.git/` and `.qualify/` (`method: files`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TreeDigest {
    pub path: String,
    pub sha256: String,
    pub method: String,
    pub files: u64,
}

/// A file and its sha256 (lowercase hex).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileDigest {
    pub path: String,
    pub sha256: String,
}

/// The environment the claim is about (`[target]`): the shared vocabulary's.
pub use qualify_model::Target;

/// Facts of the machine the run happened on.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Machine {
    pub hostname: String,
    pub cores_online: u64,
    /// CPUs this process may run on (affinity / cpuset); `None` when unknown.
    pub cores_allowed: Option<u64>,
    /// Always 1 for a local run.
    pub nodes: u64,
    pub memory_bytes: Option<u64>,
    /// Enforcement backend the probes used (`cgroup2`, `cgroup1`, `rlimit`).
    pub backend: String,
}

impl Machine {
    /// The cores the artifact could actually use.
    pub fn usable_cores(&self) -> u64 {
        self.cores_allowed.unwrap_or(self.cores_online)
    }
}

pub use qualify_model::axis::Domain;
pub use qualify_model::{AxisKind, Dimension};

/// One declared axis: the spec's own.
pub use qualify_model::axis::Axis;
/// The name the binary's terminal summary still uses for [`Axis`].
pub use qualify_model::axis::Axis as AxisDecl;

/// The values an axis was declared over, as the receipt states them (`tested.axes[].declared`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AxisDomain {
    /// An explicit list (`values = [...]`).
    Values(Vec<ParamValue>),
    /// A closed numeric range (`range = [lo, hi]`).
    Range { min: ParamValue, max: ParamValue },
}

impl AxisDomain {
    /// The declared domain of `axis`: its values, or its range's ends.
    pub fn of(axis: &Axis) -> AxisDomain {
        match &axis.domain {
            Domain::Values(values) => AxisDomain::Values(values.clone()),
            Domain::Range(r) => AxisDomain::Range {
                min: r.lo.into(),
                max: r.hi.into(),
            },
        }
    }
}

/// A `[[waiver]]`: one target gap accepted by name, with a reason (the spec's own).
pub use qualify_model::Waiver;

/// The sandbox the artifact ran in, as `predicate.sandbox` keeps it: its mode, the run's
/// self-test (or why it could not run) and, when held-out checks ran, the held-out self-test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SandboxRecord {
    pub mode: qualify_model::enforcement::Mode,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub self_test: Option<SelfTest>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub self_test_error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held_out_self_test: Option<HeldOutSelfTestRecord>,
}

/// The held-out self-test: what its artifact tried, or why it reported nothing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum HeldOutSelfTestRecord {
    Attempts(Box<HeldOutAttempts>),
    Error { error: Option<String> },
}

/// What the run recorded about the development process.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProcessRecord {
    pub trace: Option<DevRecord>,
    pub git: Option<GitSummary>,
}

/// `git log REV..HEAD` of the artifact's workdir.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GitSummary {
    pub since: String,
    pub head: String,
    pub commits: u64,
    pub files_changed: u64,
    /// Paths that look like tests (`tests/`, `test/`, `*_test.*`, `test_*.py`, `*.test.*`,
    /// `*_spec.*`) added or changed.
    pub test_files_changed: Vec<String>,
}

/// The spec's `[reproducibility]` declaration and what its tolerance check did.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ReproducibilityDecl {
    /// Output is declared nondeterministic: differing stdout digests are expected.
    pub nondeterministic: bool,
    /// The command that judges whether differing outputs are within tolerance.
    pub tolerance_check: Option<String>,
    /// Its result, when it ran.
    pub tolerance_result: Option<ProbeResult>,
}

/// What happened to the functional check.
#[derive(Debug, Clone)]
pub enum FunctionalRun {
    /// The spec has no `[functional]` section.
    NotDeclared,
    /// Declared but never started (e.g. the build failed, or the run was interrupted first).
    NotRun { reason: String },
    /// It ran.
    Ran(Box<FunctionalRecord>),
}

/// The functional probe's result.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FunctionalRecord {
    /// The command as the spec states it.
    pub command: String,
    pub result: ProbeResult,
    /// Test counts read from the JUnit report, when the spec names one.
    pub junit: Option<JunitCounts>,
}

/// Test counts of a JUnit report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct JunitCounts {
    pub tests: u64,
    pub failures: u64,
    pub errors: u64,
    pub skipped: u64,
}

/// One probed point of the operating region.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Cell {
    pub params: Params,
    /// As `qualify probe --json` prints it, outputs trimmed (see [`trim_outputs`]).
    pub result: ProbeResult,
    /// Probed by a boundary search rather than by the sweep.
    #[serde(default)]
    pub boundary: bool,
    /// A regression control from the ledger (an earlier failure re-run), not a plan cell.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub control: bool,
    /// Outside the claimed region (beyond a target value on some axis): explored to map the
    /// envelope, not covered by the claim.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub beyond_claim: bool,
}

impl Cell {
    /// A cell with its result's outputs trimmed to [`KEPT_OUTPUT_BYTES`].
    pub fn new(params: Params, mut result: ProbeResult, boundary: bool) -> Cell {
        trim_outputs(&mut result, KEPT_OUTPUT_BYTES);
        Cell {
            params,
            result,
            boundary,
            control: false,
            beyond_claim: false,
        }
    }

    /// `ok`, nothing outlived the main process, and none of its perturbed runs (`[perturb]`)
    /// failed: a process that outlives its cell, or an interleaving the program allows, is a
    /// failure wherever cells count (the envelope layer: `trial` and above).
    pub fn passed(&self) -> bool {
        self.result.outcome == Outcome::Ok && !self.leaked() && !self.failed_under_perturbation()
    }

    /// Processes outlived the main process (qualify killed them at the cell's end).
    pub fn leaked(&self) -> bool {
        self.result
            .flags
            .contains(&qualify_model::Flag::LeakedProcesses)
    }

    /// Its own run passed, but a perturbed run failed: an interleaving the program allows.
    pub fn failed_under_perturbation(&self) -> bool {
        self.result.perturb.as_ref().is_some_and(|p| p.failed())
    }

    /// How the cell failed, for people: its outcome, `ok but leaked_processes`, or `deadlock
    /// under perturbation`.
    pub fn verdict_text(&self) -> String {
        if self.result.outcome == Outcome::Ok && self.leaked() {
            "ok but leaked_processes".to_string()
        } else if let Some(p) = self
            .result
            .perturb
            .as_ref()
            .filter(|p| self.result.outcome == Outcome::Ok && p.failed())
        {
            let kind = p.failures.first().map(|f| f.kind()).unwrap_or_default();
            format!("{kind} under perturbation")
        } else {
            self.result.outcome.to_string()
        }
    }

    /// The cell finished (was not cut short by qualify's own interruption).
    pub fn completed(&self) -> bool {
        self.result.outcome != Outcome::Interrupted
    }

    /// `threads=4, n=256`.
    pub fn label(&self) -> String {
        if self.params.is_empty() {
            return "(no parameters)".to_string();
        }
        self.params.receipt_text()
    }
}

/// How many bytes of each output tail a receipt keeps per probe result.
pub const KEPT_OUTPUT_BYTES: usize = 2048;

/// Keep only the last `keep` bytes (on a character boundary) of stdout and stderr tails, in the
/// result and in each of its repeated runs. Byte counts and digests still cover all the output.
pub fn trim_outputs(result: &mut ProbeResult, keep: usize) {
    trim_tail(&mut result.stdout_tail, keep);
    trim_tail(&mut result.stderr_tail, keep);
    if let Some(runs) = result.runs.as_mut() {
        for run in runs {
            trim_outputs(run, keep);
        }
    }
}

fn trim_tail(text: &mut String, keep: usize) {
    if text.len() <= keep {
        return;
    }
    let mut start = text.len() - keep;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    text.replace_range(..start, "");
}

/// A cell's parameters (axis name → value, in axis declaration order) and one axis value: the
/// shared vocabulary's, so the planner's cells go into a receipt unconverted.
pub use qualify_model::{Params, Value as ParamValue};

/// A parameter value that may be absent (`null`, as the receipt's JSON writes it).
pub(crate) fn opt_param_text(v: Option<&ParamValue>) -> String {
    v.map_or_else(|| "null".to_string(), ParamValue::receipt_text)
}

/// `params` ordered by axis name: the order a boundary's `fixed` has in the receipt, whose
/// boundaries are JSON objects (sorted keys).
pub(crate) fn sorted_by_name(params: &Params) -> Vec<(&str, &ParamValue)> {
    let mut out: Vec<(&str, &ParamValue)> = params.iter().collect();
    out.sort_by(|a, b| a.0.cmp(b.0));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trimming_keeps_the_tail_on_a_char_boundary() {
        let mut s = "ééééé".to_string(); // 10 bytes
        trim_tail(&mut s, 3);
        assert_eq!(s, "é");
        let mut short = "abc".to_string();
        trim_tail(&mut short, 10);
        assert_eq!(short, "abc");
    }
}
