//! `qualify agent` (hidden): per-node observation of a multi-node cell.
//!
//! - `qualify agent observe` runs on every node of a cell's allocation (one task per node of a
//!   job step started with `srun --overlap`): it watches the job's processes on its own node with
//!   the probe's machinery (`qualify_probe::observe`) and writes a report
//!   (`qualify_nodes::AgentReport`) to the cell's directory, twice a second and on every change.
//! - `qualify agent coordinate` replaces `qualify probe` in the cell's job script for cells that
//!   span nodes: it starts the agents, probes the launcher (`srun --mpi=pmix …`) on the batch
//!   host, reads the reports while it runs, stops the cell when the merge rules say so
//!   (`qualify_nodes::live`), and prints one result (`qualify_nodes::finish`) as `qualify probe
//!   --json` would.
//!
//! The files: `<dir>/<node>.json` (each agent's report), `<dir>/stop` (the coordinator asks the
//! agents to finish), `<dir>/agents.log` (their launcher's output).

pub mod coordinate;
mod observe;

use std::process::ExitCode;

use clap::{Args, Subcommand};

use crate::error::CliError;

#[derive(Args, Debug)]
pub struct AgentArgs {
    #[command(subcommand)]
    pub command: AgentCommand,
}

#[derive(Subcommand, Debug)]
pub enum AgentCommand {
    /// Watch this node's processes of the job and report them to the cell's directory.
    Observe(observe::ObserveArgs),
    /// Run a multi-node cell: agents on every node, the launcher probed here, one merged result.
    Coordinate(coordinate::CoordinateArgs),
}

pub fn run(args: AgentArgs) -> Result<ExitCode, CliError> {
    match args.command {
        AgentCommand::Observe(a) => observe::run(a),
        AgentCommand::Coordinate(a) => coordinate::run(a),
    }
}

/// The report file of `node` in `dir`.
fn report_path(dir: &std::path::Path, node: &str) -> std::path::PathBuf {
    dir.join(format!("{node}.json"))
}

/// The file the coordinator creates to ask the agents to finish.
fn stop_path(dir: &std::path::Path) -> std::path::PathBuf {
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
