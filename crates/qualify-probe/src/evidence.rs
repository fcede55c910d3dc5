//! The `evidence` object of a probe result, typed: which observations are always there (timings,
//! sampling statistics, counters, the basis of the peak memory figure) and which only when they
//! say something (cgroups, fallback warning, leaks, blocked threads, stacks, the spin-wait
//! examination, the partial-stall examination). Serialized into [`crate::ProbeResult::evidence`]; its JSON is a public contract.

use serde::Serialize;
use serde_json::Value;

use crate::backend::Counters;
use crate::blocking::ThreadWait;
use crate::spin::{Conclusion, Finding};

/// What [`crate::classify::Watch`] saw over the whole run.
#[derive(Debug, Clone, Serialize)]
pub struct Sampling {
    pub samples: u64,
    pub max_processes: usize,
    pub max_threads: usize,
    pub max_runnable_threads: u64,
    pub mean_runnable_threads: f64,
    pub allowed_cpus: f64,
    pub sampled_run_seconds: f64,
    pub sampled_runqueue_wait_seconds: f64,
}

/// A descendant still alive after the main process ended.
#[derive(Debug, Clone, Serialize)]
pub struct Leaked {
    pub pid: i32,
    pub comm: String,
}

const STREAMS_OPEN: &str =
    "a process outside the tree kept stdout/stderr open; tails taken as they stood";

fn is_false(b: &bool) -> bool {
    !*b
}

/// The evidence of one run. Optional parts are left out of the JSON when empty.
#[derive(Debug, Clone, Serialize)]
pub struct Evidence<'a> {
    pub verdict_seconds: f64,
    pub cleanup_seconds: f64,
    pub launch_seconds: f64,
    pub sample_interval_ms: u64,
    pub sampling: Sampling,
    pub counters: &'a Counters,
    pub peak_memory_basis: &'static str,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cgroups: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backend_fallback: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cgroups_not_removed: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub leaked: Vec<Leaked>,
    /// Set (to a fixed sentence) when the output streams did not close.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub streams_open: Option<&'static str>,
    /// How each thread waited (deadlock, livelock and timeout only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub threads: Option<Vec<ThreadWait>>,
    /// Stack dumps (deadlock and livelock only): `{"tool", "stacks": {pid: text}}` or
    /// `{"unavailable": why}`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stacks: Option<Value>,
    #[serde(skip_serializing_if = "is_false")]
    pub interrupted: bool,
    /// The spin-wait examination's last conclusion (deadlock, livelock and timeout only, when
    /// one was made): the finding, or why it was no spin-wait, or why it could not be made.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spin: Option<SpinEvidence<'a>>,
    /// The partial-stall examination (deadlock, or a timeout it could not prove one for): the
    /// threads that stayed in untimed waits, the wait-for cycle and how its owners were read,
    /// the runtimes' own reports, what every other thread did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wait_for: Option<&'a crate::stall::Finding>,
    /// A runtime's fatal report from the program's stderr: the runtime's words, the cause, the
    /// parsed detail, the limit hit; whether it named the outcome, and if not why not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runtime_report: Option<&'a crate::reports::Reported>,
    /// What the runtimes said of a tree qualify ended (deadline, livelock) just before: the
    /// JVM's and CPython's threads, a Go program's goroutines (its dump ended it).
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub at_end: &'a [crate::stall::RuntimeReport],
    /// Goroutines or threads the program left when it ended by itself (a Go test binary's own
    /// execution trace), or why that was not examined.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub leaks: Option<&'a crate::leaks::Leaks>,
}

/// What the spin-wait examination contributes to the evidence.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum SpinEvidence<'a> {
    Examined(&'a Finding),
    Unexamined { unexamined: &'a str },
    NotStuck { not_a_spin_wait: &'a str },
}

impl<'a> SpinEvidence<'a> {
    /// The evidence of a conclusion.
    pub fn of(c: &'a Conclusion) -> Option<SpinEvidence<'a>> {
        match c {
            Conclusion::Deadlock(f) | Conclusion::Ambiguous(f) => Some(SpinEvidence::Examined(f)),
            Conclusion::Unexamined(why) => Some(SpinEvidence::Unexamined { unexamined: why }),
            Conclusion::NotStuck(why) => Some(SpinEvidence::NotStuck {
                not_a_spin_wait: why,
            }),
        }
    }
}

impl Evidence<'_> {
    /// The sentence recorded when the streams stayed open (`None` when they closed).
    pub fn streams_open(closed: bool) -> Option<&'static str> {
        (!closed).then_some(STREAMS_OPEN)
    }

    /// The JSON form stored in the result.
    pub fn to_value(&self) -> Value {
        // Serializing plain structs, numbers and strings into a Value cannot fail.
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}
