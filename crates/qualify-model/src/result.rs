//! The verdict of one probed run as `qualify probe --json`, the receipt and the ledger carry it:
//! [`ProbeResult`] (outcome, [`Flag`]s, [`TimeoutKind`], resource figures, [`Enforcement`],
//! [`Limits`], evidence, output digests, repeats). Field names and strings are a public
//! contract.

use serde::{Deserialize, Deserializer, Serialize};

use crate::children::Children;
use crate::enforcement::Enforcement;
use crate::fault::FaultRecord;
use crate::limits::Limits;
use crate::load::ServiceLoad;
use crate::outcome::Outcome;
use crate::perturb::PerturbReport;

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
    /// The tree's writable places (private `/tmp`, `/dev/shm`, the workdir's private layer)
    /// reached the spec's disk ceiling: writes failed with "no space left on device" (or, watched
    /// from user space, qualify ended the run).
    DiskLimitHit,
    /// Descendants were still alive after the main process ended; qualify killed them.
    LeakedProcesses,
    /// Goroutines or threads of the program were still blocked when it exited, as its runtime
    /// reported them (a Go test binary's execution trace); how many and where in
    /// `evidence.leaks`.
    LeakedThreads,
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
            Flag::DiskLimitHit => "disk_limit_hit",
            Flag::LeakedProcesses => "leaked_processes",
            Flag::LeakedThreads => "leaked_threads",
            Flag::OutputTruncated => "output_truncated",
            Flag::SlowShutdown => "slow_shutdown",
            Flag::MemoryGrowth => "memory_growth",
        }
    }
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
    /// A service cell's load and its judgement.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "service_load"
    )]
    pub load: Option<ServiceLoad>,
    /// A service cell's dependency faults and restart, one record per fault axis (an older
    /// receipt's single object reads as one).
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::fault::record::one_or_many"
    )]
    pub faults: Vec<FaultRecord>,
    /// The cell's schedule-perturbation campaign (`[perturb]`, `qualify probe --perturb`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub perturb: Option<PerturbReport>,
    /// A long-running tree's processes that ended while its main process ran (a server
    /// replacing its workers), watched for services.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub children: Option<Children>,
}

impl ProbeResult {
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
            faults: Vec::new(),
            perturb: None,
            children: None,
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

/// `load` reads as `None` when it is not a load object this version understands (a receipt
/// says less rather than failing to read).
fn service_load<'de, D: Deserializer<'de>>(d: D) -> Result<Option<ServiceLoad>, D::Error> {
    let value = serde_json::Value::deserialize(d)?;
    Ok(serde_json::from_value(value).ok())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::enforcement::Enforcement;

    fn result() -> ProbeResult {
        ProbeResult::unobserved(
            Outcome::Unavailable,
            "never ready",
            Enforcement::none("cgroup2"),
            Limits::default(),
        )
    }

    #[test]
    fn load_and_faults_are_typed_and_round_trip() {
        let mut r = result();
        r.load = Some(ServiceLoad::without_load(
            "never ready: no answer on /healthz",
        ));
        r.faults = vec![FaultRecord {
            dependency: Some("db".into()),
            fault: "down".into(),
            ..FaultRecord::default()
        }];
        let json = serde_json::to_value(&r).unwrap();
        // A service that never became ready has a load object with its verdict and no figures.
        assert_eq!(
            json["load"],
            json!({"slo": [], "verdict": "never ready: no answer on /healthz"})
        );
        assert_eq!(json["faults"][0]["fault"], "down");
        let back: ProbeResult = serde_json::from_value(json).unwrap();
        assert_eq!(back.load, r.load);
        assert_eq!(back.faults, r.faults);
        // A cell without either carries neither key.
        let json = serde_json::to_value(result()).unwrap();
        assert!(json.get("load").is_none() && json.get("faults").is_none());
    }

    #[test]
    fn older_or_unreadable_load_and_faults_still_read() {
        let mut json = serde_json::to_value(result()).unwrap();
        // An older receipt's single fault object, and a load this version cannot read.
        json["faults"] = json!({"dependency": "db", "fault": "reset"});
        json["load"] = json!({"slo": "all held"});
        let r: ProbeResult = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(r.faults.len(), 1);
        assert_eq!(r.faults[0].fault, "reset");
        assert_eq!(r.load, None, "says less rather than failing to read");
        json["faults"] = json!([1, {"fault": "none"}]);
        json["load"] = json!({"verdict": "ok", "offered_rate": "fast"});
        let r: ProbeResult = serde_json::from_value(json).unwrap();
        assert_eq!(r.faults.len(), 1);
        let load = r.load.unwrap();
        assert_eq!((load.report, load.verdict.as_str()), (None, "ok"));
    }
}
