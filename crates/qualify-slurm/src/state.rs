//! Slurm's side of a cell: job states as `squeue` prints them ([`JobState`]), the parsing of one
//! `squeue -r -t all -o '%i|%T|%r'` call for a whole run, and [`reconcile`], which combines what
//! Slurm says about a job ([`SlurmVerdict`]) with the probe's result, if the job wrote one.
//!
//! Rules: the probe's result, when present, is the classification (it saw the process tree);
//! Slurm's verdict is kept next to it in `evidence.slurm`, and where the two disagree (e.g. the
//! probe finished `ok` but Slurm says OUT_OF_MEMORY) the detail line says so — except that a
//! failing result of a job Slurm ended NODE_FAIL is `interrupted` (a node of the allocation
//! failed during the cell; the probe's outcome is kept in `evidence.slurm.probe_outcome`). Without a result,
//! OUT_OF_MEMORY (or a FAILED job whose output carries slurmstepd's "Exceeded job memory limit",
//! Slurm's memory kill without cgroups) becomes `oom_killed` and TIMEOUT `timeout` (the
//! artifact's doing, decided by Slurm: enforcement `slurm`); NODE_FAIL, PREEMPTED, BOOT_FAIL,
//! CANCELLED, DEADLINE, a job that ended without writing a result, a job pending for a reason that
//! never resolves ([`never_starts`]) and a job that never started within the pending limit become
//! `interrupted`: they say nothing about the artifact and are never counted as examined.

use std::collections::HashMap;

use qualify_model::{Enforcement, Limits, Outcome, ProbeResult, Strength};
use serde_json::{Value, json};

use crate::job::Topology;

/// A Slurm job state (the `%T` of `squeue`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobState {
    Pending,
    Running,
    /// Configuring, completing, suspended, requeued, …: not finished.
    Active(String),
    Completed,
    Failed,
    OutOfMemory,
    Timeout,
    NodeFail,
    Preempted,
    Cancelled,
    BootFail,
    Deadline,
    Other(String),
}

impl JobState {
    pub fn parse(s: &str) -> JobState {
        let s = s.trim();
        // `CANCELLED by 0` in some outputs.
        let word = s.split_whitespace().next().unwrap_or("");
        match word {
            "PENDING" => JobState::Pending,
            "RUNNING" => JobState::Running,
            "COMPLETED" => JobState::Completed,
            "FAILED" => JobState::Failed,
            "OUT_OF_MEMORY" => JobState::OutOfMemory,
            "TIMEOUT" => JobState::Timeout,
            "NODE_FAIL" => JobState::NodeFail,
            "PREEMPTED" => JobState::Preempted,
            "CANCELLED" => JobState::Cancelled,
            "BOOT_FAIL" => JobState::BootFail,
            "DEADLINE" => JobState::Deadline,
            "CONFIGURING" | "COMPLETING" | "SUSPENDED" | "REQUEUED" | "REQUEUE_HOLD"
            | "REQUEUE_FED" | "RESIZING" | "SIGNALING" | "STAGE_OUT" | "STOPPED"
            | "RESV_DEL_HOLD" | "SPECIAL_EXIT" => JobState::Active(word.to_string()),
            other => JobState::Other(other.to_string()),
        }
    }

    /// Whether the job has ended (no further state change expected).
    pub fn is_final(&self) -> bool {
        !matches!(
            self,
            JobState::Pending | JobState::Running | JobState::Active(_)
        )
    }

    pub fn as_str(&self) -> &str {
        match self {
            JobState::Pending => "PENDING",
            JobState::Running => "RUNNING",
            JobState::Active(s) | JobState::Other(s) => s,
            JobState::Completed => "COMPLETED",
            JobState::Failed => "FAILED",
            JobState::OutOfMemory => "OUT_OF_MEMORY",
            JobState::Timeout => "TIMEOUT",
            JobState::NodeFail => "NODE_FAIL",
            JobState::Preempted => "PREEMPTED",
            JobState::Cancelled => "CANCELLED",
            JobState::BootFail => "BOOT_FAIL",
            JobState::Deadline => "DEADLINE",
        }
    }
}

/// One line of `squeue -r -t all -h -o '%i|%T|%r'`: `(job id as printed, state, reason)`.
/// Array tasks print as `123_4`; a pending array's unexpanded remainder (`123_[5-9]`) is expanded
/// into one entry per task.
pub fn parse_squeue(out: &str) -> HashMap<String, (JobState, String)> {
    let mut map = HashMap::new();
    for line in out.lines() {
        let mut parts = line.splitn(3, '|');
        let (Some(id), Some(state), reason) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        let id = id.trim();
        let state = JobState::parse(state);
        let reason = reason.unwrap_or("").trim().to_string();
        for id in expand_array_id(id) {
            map.insert(id, (state.clone(), reason.clone()));
        }
    }
    map
}

/// `12_[3-5,7%2]` → `12_3 12_4 12_5 12_7`; anything else → itself.
fn expand_array_id(id: &str) -> Vec<String> {
    let Some((job, rest)) = id.split_once("_[") else {
        return vec![id.to_string()];
    };
    let body = rest.trim_end_matches(']');
    let body = body.split('%').next().unwrap_or("");
    let mut out = Vec::new();
    for part in body.split(',') {
        match part.split_once('-') {
            Some((a, b)) => {
                if let (Ok(a), Ok(b)) = (a.parse::<u64>(), b.parse::<u64>()) {
                    out.extend((a..=b).map(|t| format!("{job}_{t}")));
                }
            }
            None => {
                if let Ok(t) = part.parse::<u64>() {
                    out.push(format!("{job}_{t}"));
                }
            }
        }
    }
    out
}

/// Whether a pending job's reason means it can never start as submitted (more nodes or CPUs
/// than the partition has, a time over its limit, an unknown account/QOS, impossible
/// constraints): waiting would only run into the pending limit, or forever without one.
pub fn never_starts(reason: &str) -> bool {
    matches!(
        reason.trim(),
        "PartitionConfig"
            | "PartitionNodeLimit"
            | "PartitionTimeLimit"
            | "BadConstraints"
            | "InvalidAccount"
            | "InvalidQOS"
            | "AccountNotAllowed"
            | "QOSNotAllowed"
    )
}

/// What Slurm said about one cell's job.
#[derive(Debug, Clone, PartialEq)]
pub struct SlurmVerdict {
    /// `123_4` for array task 4 of job 123.
    pub job_id: String,
    /// `None` when the job never started within the pending limit or was no longer known.
    pub state: Option<JobState>,
    /// `qualify probe`'s exit status as the job recorded it.
    pub exit_code: Option<i32>,
    pub reason: String,
    /// The job never started within the pending limit (and was cancelled).
    pub pending_limit_reached: bool,
    /// The job was pending for a reason that never resolves by waiting ([`never_starts`]) and
    /// was cancelled.
    pub unschedulable: bool,
    /// Last lines of the job's stderr, for a job that ended without a result.
    pub stderr_tail: String,
    /// The allocation the job asked for (`None`: never submitted).
    pub allocation: Option<Topology>,
}

impl SlurmVerdict {
    fn to_json(&self) -> Value {
        json!({
            "job_id": self.job_id,
            "state": self.state.as_ref().map(|s| s.as_str().to_string()),
            "exit_code": self.exit_code,
            "reason": self.reason,
            "nodes": self.allocation.map(|a| a.nodes),
            "ntasks": self.allocation.map(|a| a.ntasks),
            "cpus_per_task": self.allocation.map(|a| a.cpus_per_task),
        })
    }
}

/// Combine Slurm's verdict with the probe's result (`None`: the job wrote none). See the module
/// docs for the rules. `limits` are the cell's (for a result the probe never wrote).
pub fn reconcile(
    verdict: &SlurmVerdict,
    probe: Option<ProbeResult>,
    limits: &Limits,
) -> ProbeResult {
    let state = verdict.state.as_ref();
    let mut slurm = verdict.to_json();
    match probe {
        Some(mut r)
            if state == Some(&JobState::NodeFail)
                && !matches!(r.outcome, Outcome::Ok | Outcome::Interrupted) =>
        {
            // A node of the allocation failed while the cell ran: a failure seen then may be
            // the node's doing (ranks cut off, a launcher losing its tasks), not the artifact's.
            slurm["disagrees"] = json!(true);
            slurm["probe_outcome"] = json!(r.outcome.as_str());
            slurm["probe_detail"] = json!(r.detail);
            r.detail = format!(
                "Slurm says NODE_FAIL: a node of the allocation failed during the cell, so the probe's verdict ({}: {}) says nothing certain about the artifact (kept in evidence.slurm)",
                r.outcome.as_str(),
                r.detail
            );
            r.outcome = Outcome::Interrupted;
            r.timeout_kind = None;
            attach(&mut r.evidence, slurm);
            r
        }
        Some(mut r) => {
            let disagrees = match state {
                // Still completing (its steps being cleaned up) is no verdict of Slurm's.
                None
                | Some(JobState::Completed)
                | Some(JobState::Failed)
                | Some(JobState::Active(_)) => false,
                Some(JobState::OutOfMemory) => r.outcome != Outcome::OomKilled,
                Some(JobState::Timeout) => r.outcome != Outcome::Timeout,
                Some(_) => true,
            };
            if disagrees && let Some(s) = state {
                slurm["disagrees"] = json!(true);
                r.detail = format!(
                    "{}; Slurm says {} (kept both: the probe's outcome, Slurm's in evidence.slurm)",
                    r.detail,
                    s.as_str()
                );
            }
            attach(&mut r.evidence, slurm);
            r
        }
        None => {
            let (outcome, detail) = if verdict.pending_limit_reached {
                (
                    Outcome::Interrupted,
                    "pending limit reached: not started".to_string(),
                )
            } else if verdict.unschedulable {
                (
                    Outcome::Interrupted,
                    format!(
                        "the cluster cannot host this allocation (Slurm: pending, reason {}): not started",
                        verdict.reason
                    ),
                )
            } else {
                match state {
                    Some(JobState::Failed | JobState::Cancelled | JobState::Other(_))
                        if slurm_memory_kill(&verdict.stderr_tail) =>
                    {
                        (
                            Outcome::OomKilled,
                            format!(
                                "Slurm ended the job at its memory allocation ({}) before the probe wrote a result",
                                slurm_memory_kill_line(&verdict.stderr_tail)
                            ),
                        )
                    }
                    Some(JobState::OutOfMemory) => (
                        Outcome::OomKilled,
                        "Slurm ended the job at its memory allocation (OUT_OF_MEMORY) before the probe wrote a result".to_string(),
                    ),
                    Some(JobState::Timeout) => (
                        Outcome::Timeout,
                        "Slurm ended the job at its time limit (TIMEOUT) before the probe wrote a result".to_string(),
                    ),
                    Some(s) => (
                        Outcome::Interrupted,
                        format!(
                            "Slurm job {} ended {} without a probe result{}: says nothing about the artifact",
                            verdict.job_id,
                            s.as_str(),
                            tail_suffix(&verdict.stderr_tail)
                        ),
                    ),
                    None => (
                        Outcome::Interrupted,
                        format!(
                            "Slurm job {} vanished without a probe result{}",
                            verdict.job_id,
                            tail_suffix(&verdict.stderr_tail)
                        ),
                    ),
                }
            };
            slurm["disagrees"] = json!(false);
            if outcome == Outcome::OomKilled {
                slurm["memory_kill"] = json!(true);
            }
            let mut evidence = Value::Null;
            attach(&mut evidence, slurm);
            let decided = matches!(outcome, Outcome::OomKilled | Outcome::Timeout);
            let mut result = ProbeResult::unobserved(
                outcome,
                detail,
                Enforcement {
                    backend: "slurm".into(),
                    memory: if decided && outcome == Outcome::OomKilled {
                        Strength::Watchdog
                    } else {
                        Strength::None
                    },
                    cpus: Strength::None,
                    pids: Strength::None,
                    disk: Strength::None,
                    tree: "slurm".into(),
                    on_qualify_death: String::new(),
                    sandbox: None,
                    notes: vec!["decided by Slurm's job state; the probe wrote no result".into()],
                },
                limits.clone(),
            );
            result.exit_code = verdict.exit_code;
            result.evidence = evidence;
            result.stderr_tail = verdict.stderr_tail.clone();
            result
        }
    }
}

/// Slurm's memory enforcement without cgroups (jobacct_gather's OverMemoryKill) ends a job
/// FAILED and says so only in the job's output; with cgroups the state is OUT_OF_MEMORY.
const MEMORY_KILL_MARKS: [&str; 3] = [
    "Exceeded job memory limit",
    "Exceeded step memory limit",
    "oom-kill event",
];

fn slurm_memory_kill(tail: &str) -> bool {
    MEMORY_KILL_MARKS.iter().any(|m| tail.contains(m))
}

fn slurm_memory_kill_line(tail: &str) -> String {
    tail.lines()
        .find(|l| MEMORY_KILL_MARKS.iter().any(|m| l.contains(m)))
        .map(|l| l.trim().to_string())
        .unwrap_or_default()
}

fn tail_suffix(tail: &str) -> String {
    let last = tail.trim().lines().last().unwrap_or("").trim();
    if last.is_empty() {
        String::new()
    } else {
        format!(" (stderr: {last})")
    }
}

fn attach(evidence: &mut Value, slurm: Value) {
    if !evidence.is_object() {
        *evidence = json!({});
    }
    if let Some(map) = evidence.as_object_mut() {
        map.insert("slurm".into(), slurm);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verdict(state: Option<JobState>) -> SlurmVerdict {
        SlurmVerdict {
            job_id: "7_1".into(),
            state,
            exit_code: None,
            reason: "None".into(),
            pending_limit_reached: false,
            unschedulable: false,
            stderr_tail: String::new(),
            allocation: Some(Topology::default()),
        }
    }

    fn probe(outcome: Outcome) -> ProbeResult {
        let mut r = reconcile(
            &verdict(Some(JobState::Cancelled)),
            None,
            &Limits::default(),
        );
        r.outcome = outcome;
        r.detail = "probe".into();
        r.evidence = json!({"samples": 3});
        r
    }

    #[test]
    fn squeue_lines_parse_and_pending_arrays_expand() {
        let m = parse_squeue(
            "12_0|COMPLETED|None\n12_[1-3,5%2]|PENDING|Priority\n13|CANCELLED by 0|None\n",
        );
        assert_eq!(m["12_0"].0, JobState::Completed);
        assert_eq!(m["12_2"], (JobState::Pending, "Priority".into()));
        assert!(m.contains_key("12_5") && !m.contains_key("12_4"));
        assert_eq!(m["13"].0, JobState::Cancelled);
        assert!(JobState::OutOfMemory.is_final() && !JobState::Running.is_final());
    }

    #[test]
    fn the_probe_decides_and_slurm_is_kept_when_they_disagree() {
        let r = reconcile(
            &verdict(Some(JobState::OutOfMemory)),
            Some(probe(Outcome::Ok)),
            &Limits::default(),
        );
        assert_eq!(r.outcome, Outcome::Ok);
        assert_eq!(r.evidence["slurm"]["state"], "OUT_OF_MEMORY");
        assert_eq!(r.evidence["slurm"]["disagrees"], true);
        assert_eq!(r.evidence["samples"], 3);
        assert!(r.detail.contains("Slurm says OUT_OF_MEMORY"));

        for state in [JobState::Completed, JobState::Active("COMPLETING".into())] {
            let r = reconcile(
                &verdict(Some(state)),
                Some(probe(Outcome::Deadlock)),
                &Limits::default(),
            );
            assert_eq!(r.outcome, Outcome::Deadlock);
            assert!(
                r.evidence["slurm"].get("disagrees").is_none(),
                "{}",
                r.detail
            );
            assert_eq!(r.detail, "probe");
        }
    }

    #[test]
    fn a_node_failure_makes_a_failing_result_not_evidence() {
        let l = Limits::default();
        // (probe outcome, Slurm state, expected outcome)
        let cases = [
            (Outcome::Crash, JobState::NodeFail, Outcome::Interrupted),
            (Outcome::Deadlock, JobState::NodeFail, Outcome::Interrupted),
            (
                Outcome::ExitFailure,
                JobState::NodeFail,
                Outcome::Interrupted,
            ),
            (Outcome::Ok, JobState::NodeFail, Outcome::Ok),
            (Outcome::Crash, JobState::Failed, Outcome::Crash),
        ];
        for (probe_outcome, state, want) in cases {
            let r = reconcile(
                &verdict(Some(state.clone())),
                Some(probe(probe_outcome)),
                &l,
            );
            assert_eq!(
                r.outcome, want,
                "{probe_outcome:?} under {state:?}: {}",
                r.detail
            );
            if want == Outcome::Interrupted {
                assert!(r.detail.starts_with("Slurm says NODE_FAIL"), "{}", r.detail);
                assert_eq!(r.evidence["slurm"]["probe_outcome"], probe_outcome.as_str());
                assert_eq!(r.evidence["samples"], 3, "the probe's evidence is kept");
            }
        }
    }

    #[test]
    fn without_a_result_slurm_decides_or_the_cell_is_not_evidence() {
        let l = Limits::default();
        let oom = reconcile(&verdict(Some(JobState::OutOfMemory)), None, &l);
        assert_eq!(oom.outcome, Outcome::OomKilled);
        assert_eq!(oom.enforcement.backend, "slurm");
        let mut failed = verdict(Some(JobState::Failed));
        failed.stderr_tail = "slurmstepd-vm: error: Exceeded job memory limit\n".into();
        let f = reconcile(&failed, None, &l);
        assert_eq!(f.outcome, Outcome::OomKilled, "{}", f.detail);
        assert!(f.detail.contains("Exceeded job memory limit"));
        let t = reconcile(&verdict(Some(JobState::Timeout)), None, &l);
        assert_eq!(t.outcome, Outcome::Timeout);
        for s in [JobState::NodeFail, JobState::Preempted, JobState::Cancelled] {
            assert_eq!(
                reconcile(&verdict(Some(s)), None, &l).outcome,
                Outcome::Interrupted
            );
        }
        let mut never = verdict(None);
        never.unschedulable = true;
        never.reason = "PartitionConfig".into();
        assert!(super::never_starts("PartitionConfig") && !super::never_starts("Priority"));
        let n = reconcile(&never, None, &l);
        assert_eq!(n.outcome, Outcome::Interrupted);
        assert!(n.detail.contains("cannot host"), "{}", n.detail);
        let mut pending = verdict(None);
        pending.pending_limit_reached = true;
        let p = reconcile(&pending, None, &l);
        assert_eq!(p.outcome, Outcome::Interrupted);
        assert_eq!(p.detail, "pending limit reached: not started");
    }
}
