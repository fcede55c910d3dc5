//! The probe's verdict: outcome, flags, resource figures and evidence, as `qualify probe --json`
//! prints it. Field names and outcome strings are a public contract.

use serde::{Deserialize, Serialize};

use crate::limits::Limits;

/// How one probed run ended: defined once, in `qualify-model`, for every crate.
pub use qualify_model::Outcome;

/// What the tree was doing when the deadline passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TimeoutKind {
    /// Output or heartbeat advanced during the last stall window.
    Progressing,
    /// CPU busy without a progress signal.
    Busy,
    /// Little CPU, nothing blocked on anything outside the tree (e.g. timed sleeps).
    Idle,
    /// Blocked on something outside the tree (socket, terminal, untimed poll, disk).
    BlockedExternal,
    /// Busy, with some threads spinning or waiting in blocking synchronization calls in every
    /// stack sample but not everything proven stuck (a thread computing or blocked outside the
    /// tree, a rank outside the tree): possibly a deadlock, not proven one.
    AmbiguousSpin,
    /// Little CPU, with threads in untimed waits only the tree could release for the whole stall
    /// window while others keep ticking or sleep on a timer: no wait-for cycle proven, no
    /// runtime's report of a deadlock — possibly a deadlock, not proven one.
    AmbiguousWait,
}

impl TimeoutKind {
    pub fn as_str(self) -> &'static str {
        match self {
            TimeoutKind::Progressing => "progressing",
            TimeoutKind::Busy => "busy",
            TimeoutKind::Idle => "idle",
            TimeoutKind::BlockedExternal => "blocked_external",
            TimeoutKind::AmbiguousSpin => "ambiguous_spin",
            TimeoutKind::AmbiguousWait => "ambiguous_wait",
        }
    }
}

/// Orthogonal observations that can accompany any outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Flag {
    /// Runnable threads far above the allowed CPUs, or run-queue wait exceeding run time.
    Oversubscribed,
    /// The CPU ceiling throttled the tree.
    CpuThrottled,
    /// The tree stalled on memory reclaim or hit the memory ceiling without being killed.
    MemoryPressure,
    /// A fork/clone was refused (or, without a kernel ceiling, the count exceeded) the pids limit.
    PidsLimitHit,
    /// Descendants were still alive after the main process ended; qualify killed them.
    LeakedProcesses,
    /// More output than the kept tail; counts and digest still cover all of it.
    OutputTruncated,
    /// Asked to stop (a service after its load), it was not gone within the grace period;
    /// qualify killed the tree.
    SlowShutdown,
    /// Resident memory grew steadily through a service's measured phase (slope and projected
    /// time to the ceiling in the load's `memory_growth`).
    MemoryGrowth,
}

impl Flag {
    pub fn as_str(self) -> &'static str {
        match self {
            Flag::Oversubscribed => "oversubscribed",
            Flag::CpuThrottled => "cpu_throttled",
            Flag::MemoryPressure => "memory_pressure",
            Flag::PidsLimitHit => "pids_limit_hit",
            Flag::LeakedProcesses => "leaked_processes",
            Flag::OutputTruncated => "output_truncated",
            Flag::SlowShutdown => "slow_shutdown",
            Flag::MemoryGrowth => "memory_growth",
        }
    }
}

/// How strongly a ceiling was enforced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Strength {
    /// The kernel enforces it (cgroup controller).
    Kernel,
    /// qualify samples and kills from user space; a fast program can overshoot between samples.
    Watchdog,
    /// Not enforced (either not requested or not possible with this backend).
    None,
}

/// Which backend ran and how each ceiling was enforced.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Enforcement {
    /// `cgroup2`, `cgroup1` or `rlimit`.
    pub backend: String,
    pub memory: Strength,
    pub cpus: Strength,
    pub pids: Strength,
    /// How the process tree was tracked and killed, e.g. `"cgroup"` or
    /// `"process-group+subreaper"`.
    pub tree: String,
    /// What happens to the tree if qualify itself dies (even by SIGKILL), and by which mechanism.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub on_qualify_death: String,
    /// Caveats a reader should know about the strength of this evidence.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// How each layer of the sandbox was enforced (absent when nothing ran).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<crate::sandbox::SandboxEnforcement>,
}

/// The verdict of one probed run (and, with `--repeat`, of all runs).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ProbeResult {
    pub outcome: Outcome,
    pub exit_code: Option<i32>,
    pub signal: Option<String>,
    pub timeout_kind: Option<TimeoutKind>,
    /// One human line saying why.
    pub detail: String,
    pub flags: Vec<Flag>,
    pub wall_seconds: f64,
    pub user_seconds: f64,
    pub system_seconds: f64,
    /// Peak memory of the whole tree, not just the main process.
    pub peak_memory_bytes: Option<u64>,
    pub enforcement: Enforcement,
    pub limits: Limits,
    /// Free-form supporting observations (samples, blocked threads, counters, stacks).
    pub evidence: serde_json::Value,
    pub stdout_tail: String,
    pub stderr_tail: String,
    pub stdout_bytes: u64,
    pub stderr_bytes: u64,
    pub stdout_sha256: String,
    /// With `--repeat N`: every run, in order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runs: Option<Vec<ProbeResult>>,
    /// With `--repeat N`: how many different stdout digests the runs produced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub distinct_outputs: Option<usize>,
    /// A service cell's load report (`qualify_load::LoadReport` as JSON).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load: Option<serde_json::Value>,
    /// A service cell's dependency faults and restart (`qualify_evidence::faults` documents
    /// the shape).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub faults: Option<serde_json::Value>,
}

impl ProbeResult {
    /// The result of a probe that never started because qualify was stopping (or its executor
    /// could not take it): outcome `interrupted`, nothing measured, nothing enforced. It is
    /// recorded, never taken as evidence about the artifact.
    pub fn not_run(spec: &crate::ProbeSpec, detail: impl Into<String>) -> ProbeResult {
        ProbeResult::unobserved(
            Outcome::Interrupted,
            detail,
            Enforcement {
                backend: spec.backend.to_string(),
                memory: Strength::None,
                cpus: Strength::None,
                pids: Strength::None,
                tree: "none".into(),
                on_qualify_death: String::new(),
                notes: Vec::new(),
                sandbox: None,
            },
            spec.limits.clone(),
        )
    }

    /// A result decided without this process observing the run (qualify stopped first, or a
    /// scheduler ended the job before its probe wrote a result): no exit status, no times, no
    /// output, no evidence; the caller adds what it does know.
    pub fn unobserved(
        outcome: Outcome,
        detail: impl Into<String>,
        enforcement: Enforcement,
        limits: Limits,
    ) -> ProbeResult {
        ProbeResult {
            outcome,
            exit_code: None,
            signal: None,
            timeout_kind: None,
            detail: detail.into(),
            flags: Vec::new(),
            wall_seconds: 0.0,
            user_seconds: 0.0,
            system_seconds: 0.0,
            peak_memory_bytes: None,
            enforcement,
            limits,
            evidence: serde_json::Value::Null,
            stdout_tail: String::new(),
            stderr_tail: String::new(),
            stdout_bytes: 0,
            stderr_bytes: 0,
            stdout_sha256: String::new(),
            runs: None,
            distinct_outputs: None,
            load: None,
            faults: None,
        }
    }

    pub fn has_flag(&self, flag: Flag) -> bool {
        self.flags.contains(&flag)
    }

    /// Combine the results of repeated runs: the top level is the first run that was not `ok`
    /// (or the last run when all were), with the peak memory of all runs, plus `runs` and
    /// `distinct_outputs`.
    pub fn combine(runs: Vec<ProbeResult>) -> Option<ProbeResult> {
        let representative = runs
            .iter()
            .find(|r| r.outcome != Outcome::Ok)
            .or_else(|| runs.last())?
            .clone();
        let mut digests: Vec<&str> = runs.iter().map(|r| r.stdout_sha256.as_str()).collect();
        digests.sort_unstable();
        digests.dedup();
        let distinct = digests.len();
        let mut top = representative;
        top.peak_memory_bytes = runs.iter().filter_map(|r| r.peak_memory_bytes).max();
        let mut flags: Vec<Flag> = runs.iter().flat_map(|r| r.flags.iter().copied()).collect();
        flags.sort_unstable();
        flags.dedup();
        top.flags = flags;
        let failed = runs.iter().filter(|r| r.outcome != Outcome::Ok).count();
        if runs.len() > 1 {
            top.detail = format!(
                "{} of {} runs ok, {} distinct stdout digest(s); {}",
                runs.len() - failed,
                runs.len(),
                distinct,
                top.detail
            );
        }
        top.distinct_outputs = Some(distinct);
        top.runs = Some(runs);
        Some(top)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::BackendChoice;

    #[test]
    fn not_run_is_an_interrupted_result_that_enforced_nothing() {
        let mut spec = crate::ProbeSpec::new(vec!["./prog".into()]);
        spec.backend = BackendChoice::Cgroup1;
        spec.limits.memory_bytes = Some(64 << 20);
        let r = ProbeResult::not_run(&spec, "not probed: the run was stopping");
        assert_eq!(r.outcome, Outcome::Interrupted);
        assert_eq!(r.detail, "not probed: the run was stopping");
        assert_eq!(r.enforcement.backend, "cgroup1");
        assert_eq!(r.enforcement.tree, "none");
        assert_eq!(
            [r.enforcement.memory, r.enforcement.cpus, r.enforcement.pids],
            [Strength::None; 3]
        );
        assert_eq!(r.limits, spec.limits);
        assert_eq!((r.wall_seconds, r.stdout_bytes), (0.0, 0));
        assert!(r.evidence.is_null() && r.flags.is_empty() && r.runs.is_none());
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(json["outcome"], "interrupted");
        assert!(json.get("runs").is_none());
    }
}
