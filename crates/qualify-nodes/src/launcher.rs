//! What the launcher says about tasks that ended on other nodes: the lines `srun` (and Open
//! MPI's `mpirun`) write to stderr when a task exits by a signal or with a non-zero status, and
//! the lines Slurm's step daemons write when they kill a step for its memory. An agent sees a
//! rank vanish but not how it ended (the rank is not its child); the launcher is told by the
//! node's step daemon, so these lines are Slurm's own account of each task's end.
//!
//! ```text
//! srun: error: node3: task 5: Segmentation fault (core dumped)
//! srun: error: node2: tasks 2-3: Killed
//! srun: error: node2: task 1: Exited with exit code 3
//! slurmstepd-node2: error: StepId=10.0 exceeded memory limit (328691712 > 52428800), being killed
//! slurmstepd-node2: error: Detected 1 oom-kill event(s) in StepId=12.0 cgroup.
//! mpirun noticed that process rank 1 with PID 0 on node node2 exited on signal 11 (Segmentation fault).
//! ```

use qualify_probe::{is_crash_signal, signal_name};
use serde::Serialize;

/// How a task ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "how", rename_all = "snake_case")]
pub enum How {
    /// Killed by a signal (`SIGSEGV`, `SIGKILL`, …).
    Signal { signal: String },
    /// Exited with a non-zero status.
    Exit { code: i32 },
}

impl How {
    /// A signal a program raises when it crashes (as the probe's `crash` outcome).
    pub fn is_crash(&self) -> bool {
        matches!(self, How::Signal { signal } if is_crash_name(signal))
    }

    /// What the launcher or the scheduler does to the other tasks after a failure: killed by
    /// `SIGKILL`, `SIGTERM`, `SIGINT`, `SIGHUP` or `SIGPIPE`, or a wrapper shell exiting with
    /// 128 + one of them. Never the cause of a cell's failure.
    pub fn is_consequence(&self) -> bool {
        const STOPS: [&str; 5] = ["SIGKILL", "SIGTERM", "SIGINT", "SIGHUP", "SIGPIPE"];
        match self {
            How::Signal { signal } => STOPS.contains(&signal.as_str()),
            How::Exit { code } => *code > 128 && STOPS.contains(&signal_name(code - 128).as_str()),
        }
    }

    /// `(128+11: a SIGSEGV behind a wrapper shell?)` for an exit status that is 128 + a crash
    /// signal (as the probe says of a local run).
    pub fn wrapper_hint(&self) -> Option<String> {
        match self {
            How::Exit { code } if *code > 128 => is_crash_signal(code - 128).then(|| {
                format!(
                    "128+{}: a {} behind a wrapper shell?",
                    code - 128,
                    signal_name(code - 128)
                )
            }),
            _ => None,
        }
    }

    pub fn describe(&self) -> String {
        match self {
            How::Signal { signal } => format!("killed by {signal}"),
            How::Exit { code } => format!("exited with status {code}"),
        }
    }
}

/// Whether the signal named `name` is a crash signal (the probe's `crash` outcome's set).
fn is_crash_name(name: &str) -> bool {
    (1..32).any(|n| is_crash_signal(n) && signal_name(n) == name)
}

/// One launcher line about tasks that ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TaskEnd {
    pub node: String,
    /// Task ids (ranks) the line names.
    pub tasks: Vec<u32>,
    #[serde(flatten)]
    pub how: How,
    /// The line as written.
    pub line: String,
}

/// A step daemon's memory kill on a node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MemoryLine {
    pub node: String,
    pub line: String,
}

/// `strsignal` texts → signal names.
fn signal_of(text: &str) -> Option<&'static str> {
    let text = text.trim().trim_end_matches(" (core dumped)").trim();
    Some(match text {
        "Segmentation fault" => "SIGSEGV",
        "Aborted" => "SIGABRT",
        "Bus error" => "SIGBUS",
        "Floating point exception" => "SIGFPE",
        "Illegal instruction" => "SIGILL",
        "Killed" => "SIGKILL",
        "Terminated" => "SIGTERM",
        "Interrupt" => "SIGINT",
        "Hangup" => "SIGHUP",
        "Quit" => "SIGQUIT",
        "Broken pipe" => "SIGPIPE",
        "Alarm clock" => "SIGALRM",
        "User defined signal 1" => "SIGUSR1",
        "User defined signal 2" => "SIGUSR2",
        "Trace/breakpoint trap" => "SIGTRAP",
        "CPU time limit exceeded" => "SIGXCPU",
        "File size limit exceeded" => "SIGXFSZ",
        _ => return None,
    })
}

/// `5`, `2-3`, `0,2-4` → task ids.
fn tasks_of(text: &str) -> Option<Vec<u32>> {
    let mut out = Vec::new();
    for part in text.split(',') {
        match part.trim().split_once('-') {
            Some((a, b)) => {
                let (a, b) = (a.parse::<u32>().ok()?, b.parse::<u32>().ok()?);
                out.extend(a..=b.min(a.saturating_add(65_536)));
            }
            None => out.push(part.trim().parse().ok()?),
        }
    }
    Some(out)
}

fn srun_line(line: &str) -> Option<TaskEnd> {
    // srun: error: NODE: task(s) IDS: WHAT
    let rest = line.trim().strip_prefix("srun: error: ")?;
    let (node, rest) = rest.split_once(": ")?;
    let rest = rest
        .strip_prefix("tasks ")
        .or_else(|| rest.strip_prefix("task "))?;
    let (ids, what) = rest.split_once(": ")?;
    let tasks = tasks_of(ids)?;
    let how = if let Some(code) = what.trim().strip_prefix("Exited with exit code ") {
        How::Exit {
            code: code.trim().parse().ok()?,
        }
    } else {
        How::Signal {
            signal: signal_of(what)?.to_string(),
        }
    };
    Some(TaskEnd {
        node: node.trim().to_string(),
        tasks,
        how,
        line: line.trim().to_string(),
    })
}

fn mpirun_line(line: &str) -> Option<TaskEnd> {
    // mpirun noticed that process rank R with PID P on node NODE exited on signal S (Name).
    let rest = line
        .trim()
        .strip_prefix("mpirun noticed that process rank ")?;
    let (rank, rest) = rest.split_once(' ')?;
    let rest = rest.split_once(" on node ")?.1;
    let (node, rest) = rest.split_once(' ')?;
    let sig = rest.strip_prefix("exited on signal ")?;
    let n: i32 = sig.split_whitespace().next()?.parse().ok()?;
    Some(TaskEnd {
        node: node.to_string(),
        tasks: vec![rank.parse().ok()?],
        how: How::Signal {
            signal: signal_name(n),
        },
        line: line.trim().to_string(),
    })
}

/// Every launcher line about tasks that ended, in the order written.
pub fn task_ends(stderr: &str) -> Vec<TaskEnd> {
    stderr
        .lines()
        .filter_map(|l| srun_line(l).or_else(|| mpirun_line(l)))
        .collect()
}

/// Step daemons' memory kills (`slurmstepd-NODE: error: … exceeded memory limit …`, oom-kill
/// events), one per node, in the order written.
pub fn memory_kills(stderr: &str) -> Vec<MemoryLine> {
    let mut out: Vec<MemoryLine> = Vec::new();
    for line in stderr.lines() {
        let Some(rest) = line.trim().strip_prefix("slurmstepd-") else {
            continue;
        };
        let Some((node, what)) = rest.split_once(": ") else {
            continue;
        };
        let memory = what.contains("exceeded memory limit")
            || what.contains("Exceeded step memory limit")
            || what.contains("Exceeded job memory limit")
            || what.contains("oom-kill event");
        if memory && !out.iter().any(|m| m.node == node) {
            out.push(MemoryLine {
                node: node.to_string(),
                line: line.trim().to_string(),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn srun_and_mpirun_lines_about_ended_tasks() {
        let text = "\
srun: error: node2: task 1: Exited with exit code 3
srun: error: node3: task 2: Segmentation fault (core dumped)
srun: error: node3: tasks 4-5: Aborted
srun: Job step aborted: Waiting up to 7 seconds for job step to finish.
srun: error: node1: tasks 0,2-3: Killed
srun: error: Unable to create step for job 12: Requested node configuration is not available
mpirun noticed that process rank 1 with PID 0 on node node2 exited on signal 11 (Segmentation fault).
";
        let ends = task_ends(text);
        assert!(ends[3].how.is_consequence() && !ends[1].how.is_consequence());
        assert!(How::Exit { code: 137 }.is_consequence());
        assert!(!How::Exit { code: 3 }.is_consequence());
        assert_eq!(
            How::Exit { code: 139 }.wrapper_hint().as_deref(),
            Some("128+11: a SIGSEGV behind a wrapper shell?")
        );
        assert_eq!(How::Exit { code: 3 }.wrapper_hint(), None);
        let got: Vec<(&str, Vec<u32>, String, bool)> = ends
            .iter()
            .map(|e| {
                (
                    e.node.as_str(),
                    e.tasks.clone(),
                    e.how.describe(),
                    e.how.is_crash(),
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                ("node2", vec![1], "exited with status 3".to_string(), false),
                ("node3", vec![2], "killed by SIGSEGV".to_string(), true),
                ("node3", vec![4, 5], "killed by SIGABRT".to_string(), true),
                (
                    "node1",
                    vec![0, 2, 3],
                    "killed by SIGKILL".to_string(),
                    false
                ),
                ("node2", vec![1], "killed by SIGSEGV".to_string(), true),
            ]
        );
    }

    #[test]
    fn step_daemons_memory_kills_name_the_node_once() {
        let text = "\
slurmstepd-node2: error: StepId=10.0 exceeded memory limit (328691712 > 52428800), being killed
srun: Exceeded job memory limit
slurmstepd-node1: error: *** STEP 10.0 ON node1 CANCELLED AT 2026-11-30T21:44:13 ***
slurmstepd-node2: error: StepId=10.0 exceeded memory limit (328691712 > 52428800), being killed
slurmstepd-node3: error: Detected 1 oom-kill event(s) in StepId=12.0 cgroup.
";
        let kills = memory_kills(text);
        let nodes: Vec<&str> = kills.iter().map(|k| k.node.as_str()).collect();
        assert_eq!(nodes, ["node2", "node3"]);
        assert!(kills[0].line.contains("exceeded memory limit"));
    }
}
