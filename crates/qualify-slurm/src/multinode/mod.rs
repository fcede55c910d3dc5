//! A multi-node cell inside its Slurm allocation: the job side of `qualify agent`.
//!
//! - [`observe`] runs on every node of the allocation (one task per node of a job step
//!   started with `srun --overlap`): it watches the job's processes on its own node with the
//!   probe's machinery (`qualify_probe::observe`) and writes a report
//!   (`qualify_nodes::AgentReport`) to the cell's directory, twice a second and on every change.
//! - [`coordinate`] replaces `qualify probe` in the cell's job script for cells that span
//!   nodes: it starts the agents, probes the launcher (`srun --mpi=pmix …`) on the batch host,
//!   reads the reports while it runs, stops the cell when the merge rules say so
//!   (`qualify_nodes::live`), and returns one result (`qualify_nodes::finish`).
//!
//! The files: `<dir>/<node>.json` (each agent's report), `<dir>/stop` (the coordinator asks the
//! agents to finish), `<dir>/agents.log` (their launcher's output). The binary's `agent`
//! subcommand reads the flags, installs the signals and prints.

mod agent;
mod coordinate;

use std::path::{Path, PathBuf};

pub use agent::{Agent, observe};
pub use coordinate::{Coordinator, coordinate};

/// Why an agent or a coordinator could not do its work; each message says what went wrong and,
/// where there is one, the fix.
#[derive(Debug, thiserror::Error)]
pub enum MultinodeError {
    #[error("cannot read {what} {}: {source}; {fix}", path.display())]
    Unreadable {
        what: &'static str,
        path: PathBuf,
        source: std::io::Error,
        fix: &'static str,
    },
    #[error("cannot start the agent's heartbeat thread: {0}")]
    HeartbeatThread(std::io::Error),
    #[error(
        "qualify agent coordinate runs inside a Slurm allocation, but SLURM_JOB_ID is not set; it is started by the job script qualify's Slurm executor writes"
    )]
    NoAllocation,
    #[error("the allocation of job {job} names no nodes (SLURM_JOB_NODELIST={list:?})")]
    NoNodes { job: String, list: String },
    #[error("cannot find the qualify binary: {0}")]
    NoBinary(std::io::Error),
    #[error("cannot share the agents' log: {0}")]
    SharedLog(std::io::Error),
    #[error(
        "cannot start the per-node agents with srun: {0}; srun must be on PATH inside the allocation"
    )]
    Srun(std::io::Error),
    #[error("cannot start the launcher's probe: {0}")]
    LauncherThread(std::io::Error),
    #[error("the launcher's probe thread panicked")]
    LauncherPanicked,
    #[error("{0}")]
    Probe(#[from] qualify_probe::ProbeError),
    #[error("no run of the cell happened")]
    NoRun,
}

/// The report file of `node` in `dir`.
fn report_path(dir: &Path, node: &str) -> PathBuf {
    dir.join(format!("{node}.json"))
}

/// The file the coordinator creates to ask the agents to finish.
fn stop_path(dir: &Path) -> PathBuf {
    dir.join("stop")
}

/// Seconds in a `timeval`.
fn seconds(t: libc::timeval) -> f64 {
    t.tv_sec as f64 + t.tv_usec as f64 / 1e6
}

/// User + system CPU seconds of `who` (0 when the kernel does not say).
fn rusage_cpu(who: nix::sys::resource::UsageWho) -> f64 {
    nix::sys::resource::getrusage(who).map_or(0.0, |u| {
        seconds(*u.user_time().as_ref()) + seconds(*u.system_time().as_ref())
    })
}

/// This process's own CPU seconds (user + system, all threads).
fn own_cpu_seconds() -> f64 {
    rusage_cpu(nix::sys::resource::UsageWho::RUSAGE_SELF)
}

/// This process's CPU seconds and those of the children it reaped (an agent's stack samplers).
fn cpu_with_children() -> f64 {
    rusage_cpu(nix::sys::resource::UsageWho::RUSAGE_SELF)
        + rusage_cpu(nix::sys::resource::UsageWho::RUSAGE_CHILDREN)
}

fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}
