//! `qualify agent` (hidden): per-node observation of a multi-node cell, run by
//! `qualify_run::remote::multinode` (`qualify-slurm`'s) (the agents, the coordinator, the files they share); here the
//! flags its job script writes, the signals, and the result on stdout.
//!
//! - `qualify agent observe` runs on every node of a cell's allocation and keeps the node's
//!   report current in the cell's directory.
//! - `qualify agent coordinate` replaces `qualify probe` in the cell's job script for cells that
//!   span nodes and prints one result as `qualify probe` would (`--json`: the `qualify probe
//!   --json` contract; exit 0 ok, 1 otherwise, 130 interrupted).

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Subcommand};
use qualify_probe::{BackendChoice, Outcome, ProbeSpec, parse_duration, parse_size};
use qualify_run::remote::multinode;

use crate::error::{CliError, exit};
use crate::probe_cmd;

#[derive(Args, Debug)]
pub struct AgentArgs {
    #[command(subcommand)]
    pub command: AgentCommand,
}

#[derive(Subcommand, Debug)]
pub enum AgentCommand {
    /// Watch this node's processes of the job and report them to the cell's directory.
    Observe(ObserveArgs),
    /// Run a multi-node cell: agents on every node, the launcher probed here, one merged result.
    Coordinate(CoordinateArgs),
}

pub fn run(args: AgentArgs) -> Result<ExitCode, CliError> {
    match args.command {
        AgentCommand::Observe(a) => observe(a),
        AgentCommand::Coordinate(a) => coordinate(a),
    }
}

fn failed(e: multinode::MultinodeError) -> CliError {
    match e {
        multinode::MultinodeError::Probe(e) => CliError::from(e),
        other => CliError::input_only(other.to_string()),
    }
}

#[derive(Args, Debug)]
#[command(mut_arg("memory", |a| a.help(
    "Memory ceiling per node (the agents enforce it on each node's processes of the job; the launcher's tree here is probed under it too)"
)))]
pub struct CoordinateArgs {
    /// The cell's directory for the agents' reports (shared by every node).
    #[arg(long, value_name = "DIR")]
    nodes_dir: PathBuf,
    /// The ceilings: `--memory` per node (its help says so), the rest for the launcher's tree.
    #[command(flatten)]
    limits: probe_cmd::LimitArgs,
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=qualify_model::limits::MAX_REPEAT))]
    repeat: u64,
    #[arg(long, value_name = "BACKEND", default_value = "auto")]
    backend: BackendChoice,
    /// A node whose agent's report has not changed for this long stopped answering.
    #[arg(long, value_name = "DURATION", default_value = "5s", value_parser = parse_duration)]
    node_timeout: Duration,
    /// How long to wait for every agent's first report before the launcher starts anyway.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_duration)]
    agents_start: Duration,
    /// Print one JSON object on stdout (the `qualify probe --json` contract).
    #[arg(long)]
    json: bool,
    /// The launcher's sandbox here (the ranks on the nodes run under their job steps).
    #[command(flatten)]
    sandbox: probe_cmd::SandboxArgs,
    /// Stop the cell (`interrupted`) when this lease file stops changing for 10 s, says `ended`
    /// or disappears (as `qualify probe --lease`).
    #[arg(long, value_name = "FILE")]
    lease: Option<PathBuf>,
    /// The launcher and command, after `--`.
    #[arg(required = true, trailing_var_arg = true, value_name = "COMMAND")]
    command: Vec<OsString>,
}

impl CoordinateArgs {
    /// The flags as the step a Slurm job writes them with (the command lossily as text).
    #[cfg(test)]
    pub fn to_step(&self) -> qualify_model::step::ProbeStep {
        qualify_model::step::ProbeStep {
            observe_nodes: true,
            nodes_dir: Some(self.nodes_dir.clone()),
            limits: self.limits.to_limits(),
            repeat: self.repeat,
            backend: self.backend,
            sandbox: self.sandbox.to_policy(),
            json: self.json,
            lease: self.lease.clone(),
            command: self
                .command
                .iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect(),
        }
    }
}

#[derive(Args, Debug)]
pub struct ObserveArgs {
    /// The cell's directory for reports (shared with the coordinator).
    #[arg(long, value_name = "DIR")]
    dir: PathBuf,
    /// Stall window: how long nothing but CPU must stay still before the node is stuck.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = parse_duration)]
    stall: Duration,
    /// Per-node memory ceiling for the job's processes on this node (watchdog).
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    memory: Option<u64>,
    /// Select processes whose environment holds NAME=VALUE (repeatable).
    #[arg(long, value_name = "NAME=VALUE")]
    select: Vec<String>,
    /// Select only processes that have NAME in their environment (repeatable).
    #[arg(long, value_name = "NAME")]
    present: Vec<String>,
    /// Leave out processes whose NAME equals this agent's own value of NAME (its job step).
    #[arg(long, value_name = "NAME")]
    exclude_own: Vec<String>,
    /// Command names never observed (the scheduler's daemons).
    #[arg(long, value_name = "COMM", default_value = "slurmstepd")]
    skip_comm: Vec<String>,
    /// The environment variable naming this node (else the host name).
    #[arg(long, value_name = "NAME", default_value = "SLURMD_NODENAME")]
    node_from: String,
    /// How often the report is rewritten when nothing changes.
    #[arg(long, value_name = "DURATION", default_value = "500ms", value_parser = parse_duration)]
    heartbeat: Duration,
    /// Give up after this long even if nobody asks (a bound, not a plan).
    #[arg(long, value_name = "DURATION", default_value = "1d", value_parser = parse_duration)]
    max_time: Duration,
}

impl ObserveArgs {
    /// The flags as the step the coordinator writes them with.
    #[cfg(test)]
    pub fn to_step(&self) -> qualify_model::step::AgentStep {
        qualify_model::step::AgentStep {
            dir: self.dir.clone(),
            stall: self.stall,
            memory: self.memory,
            select: self
                .select
                .iter()
                .filter_map(|s| pair(s, "--select").ok())
                .collect(),
            present: self.present.clone(),
            exclude_own: self.exclude_own.clone(),
            max_time: self.max_time,
        }
    }
}

fn pair(text: &str, flag: &str) -> Result<(String, String), CliError> {
    text.split_once('=')
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .ok_or_else(|| {
            CliError::input(
                format!("{flag} {text:?} is not NAME=VALUE"),
                format!("write e.g. {flag} SLURM_JOB_ID=123"),
            )
        })
}

fn observe(args: ObserveArgs) -> Result<ExitCode, CliError> {
    let cancel = crate::shell::cancel_on_signals();
    let select = args
        .select
        .iter()
        .map(|s| pair(s, "--select"))
        .collect::<Result<Vec<_>, _>>()?;
    let agent = multinode::Agent {
        dir: args.dir,
        stall: args.stall,
        memory: args.memory,
        select,
        present: args.present,
        exclude_own: args.exclude_own,
        skip_comm: args.skip_comm,
        node_from: args.node_from,
        heartbeat: args.heartbeat,
        max_time: args.max_time,
    };
    multinode::observe(&agent, &cancel).map_err(failed)?;
    Ok(ExitCode::SUCCESS)
}

fn coordinate(args: CoordinateArgs) -> Result<ExitCode, CliError> {
    let cancel = crate::shell::cancel_on_signals();
    let coordinator = multinode::Coordinator {
        nodes_dir: args.nodes_dir,
        spec: ProbeSpec {
            argv: args.command,
            workdir: None,
            env: Vec::new(),
            limits: args.limits.to_limits(),
            backend: args.backend,
            control: None,
            sandbox: args.sandbox.to_sandbox(),
            shared_files: Vec::new(),
            stdio: None,
        },
        repeat: args.repeat,
        stall: args.limits.stall,
        timeout: args.limits.timeout,
        memory: args.limits.memory,
        node_timeout: args.node_timeout,
        agents_start: args.agents_start,
        lease: args.lease,
    };
    let result = multinode::coordinate(&coordinator, &cancel).map_err(failed)?;
    let text = if args.json {
        serde_json::to_string(&result)
            .map_err(|e| CliError::output(format!("cannot encode result as JSON: {e}"), None))?
    } else {
        qualify_render::terminal::probe(&result)
    };
    crate::shell::print_stdout(&text);
    Ok(match result.outcome {
        Outcome::Ok => ExitCode::SUCCESS,
        Outcome::Interrupted => exit::interrupted(),
        _ => exit::refused(),
    })
}
