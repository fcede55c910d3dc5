//! `qualify agent coordinate`: a multi-node cell inside its Slurm allocation. Per run: start
//! one agent per node (`srun --overlap`, one task per node), wait until each has reported (or
//! a bound passes), probe the launcher here as `qualify probe` would, read the agents' reports
//! every tick, and when `qualify_nodes::live` says stop — every rank stuck, a node silent,
//! ranks abandoned, a memory kill the launcher did not end on — cancel the ranks' job steps and
//! the launcher. Then ask the agents to finish, and print `qualify_nodes::finish`'s one result
//! (`--json`, the `qualify probe --json` contract; exit 0 ok, 1 otherwise, 130 interrupted).

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use clap::Args;
use qualify_nodes::{AgentReport, NodeView, Settings, Stop};
use qualify_probe::{BackendChoice, Outcome, ProbeResult, ProbeSpec, parse_duration};

use crate::error::{CliError, exit};

/// How often the coordinator reads the reports.
const TICK: Duration = Duration::from_millis(100);

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
    limits: crate::probe_cmd::LimitArgs,
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
    sandbox: crate::probe_cmd::SandboxArgs,
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

/// The allocation's nodes, from the job's environment.
fn allocation() -> Result<(String, Vec<String>), CliError> {
    let job = std::env::var("SLURM_JOB_ID").map_err(|_| {
        CliError::input(
            "qualify agent coordinate runs inside a Slurm allocation, but SLURM_JOB_ID is not set",
            "it is started by the job script qualify's Slurm executor writes",
        )
    })?;
    let list = std::env::var("SLURM_JOB_NODELIST")
        .or_else(|_| std::env::var("SLURM_NODELIST"))
        .unwrap_or_default();
    let nodes = qualify_nodes::hostlist::expand(&list);
    if nodes.is_empty() {
        return Err(CliError::input_only(format!(
            "the allocation of job {job} names no nodes (SLURM_JOB_NODELIST={list:?})"
        )));
    }
    Ok((job, nodes))
}

/// The agents' job step: `srun --overlap`, one task per node, output to `agents.log`.
fn start_agents(
    dir: &Path,
    nodes: usize,
    args: &CoordinateArgs,
    job: &str,
) -> Result<Child, CliError> {
    let exe = std::env::current_exe()
        .map_err(|e| CliError::input_only(format!("cannot find the qualify binary: {e}")))?;
    let log = std::fs::File::create(dir.join("agents.log")).map_err(|e| {
        CliError::unreadable(
            "agents log",
            &dir.join("agents.log"),
            &e,
            "check the run directory",
        )
    })?;
    let log2 = log
        .try_clone()
        .map_err(|e| CliError::input_only(format!("cannot share the agents' log: {e}")))?;
    let mut cmd = Command::new("srun");
    cmd.arg("--overlap")
        .arg(format!("--nodes={nodes}"))
        .arg(format!("--ntasks={nodes}"))
        .arg("--ntasks-per-node=1")
        .arg("--kill-on-bad-exit=0")
        .arg("--quiet")
        .arg("--job-name=qualify-agents")
        .arg(exe)
        .args(["agent", "observe", "--dir"])
        .arg(dir)
        .arg(format!("--stall={}ms", args.limits.stall.as_millis()))
        .arg(format!("--select=SLURM_JOB_ID={job}"))
        .arg("--present=SLURM_STEP_ID")
        .arg("--exclude-own=SLURM_STEP_ID")
        .arg(format!(
            "--max-time={}s",
            (args.limits.timeout.as_secs_f64() * args.repeat as f64 + 120.0).ceil() as u64
        ));
    if let Some(m) = args.limits.memory {
        cmd.arg(format!("--memory={m}"));
    }
    cmd.stdin(Stdio::null())
        .stdout(Stdio::from(log))
        .stderr(Stdio::from(log2));
    cmd.spawn().map_err(|e| {
        CliError::input(
            format!("cannot start the per-node agents with srun: {e}"),
            "srun must be on PATH inside the allocation",
        )
    })
}

/// Reports as the coordinator follows them.
struct Follow {
    nodes: Vec<String>,
    reports: BTreeMap<String, AgentReport>,
    heard: BTreeMap<String, (u64, f64)>,
    kill_seen: BTreeMap<String, f64>,
}

impl Follow {
    fn read(&mut self, dir: &Path, now: f64) {
        for n in &self.nodes {
            let Ok(bytes) = std::fs::read(super::report_path(dir, n)) else {
                continue;
            };
            let Ok(r) = serde_json::from_slice::<AgentReport>(&bytes) else {
                continue;
            };
            let fresh = self.heard.get(n).is_none_or(|(seq, _)| *seq != r.seq);
            if fresh {
                self.heard.insert(n.clone(), (r.seq, now));
            }
            if !r.memory_kills.is_empty() {
                self.kill_seen.entry(n.clone()).or_insert(now);
            }
            self.reports.insert(n.clone(), r);
        }
    }

    fn views(&self) -> Vec<NodeView<'_>> {
        self.nodes
            .iter()
            .map(|n| NodeView {
                node: n,
                report: self.reports.get(n),
                heard_at: self.heard.get(n).map(|(_, t)| *t),
                kill_seen_at: self.kill_seen.get(n).copied(),
            })
            .collect()
    }

    /// The job steps the ranks run in (`12.0`), from the reports.
    fn rank_steps(&self) -> BTreeSet<String> {
        self.reports
            .values()
            .flat_map(|r| r.ranks.iter().map(|rk| rk.world.clone()))
            .filter(|w| w.contains('.'))
            .collect()
    }
}

/// Ask the agents to finish; end their step if they do not. Returns the CPU seconds of the
/// `srun` that ran them (qualify's cost on this host, beside the coordinator's own).
fn stop_agents(dir: &Path, agents: Child) -> f64 {
    let _ = std::fs::write(super::stop_path(dir), b"stop\n");
    let pid = agents.id() as i32;
    let exited = |within: Duration| {
        let give_up = Instant::now() + within;
        loop {
            if let Some(cpu) = reap(pid) {
                return Some(cpu);
            }
            if Instant::now() >= give_up {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    if let Some(cpu) = exited(Duration::from_secs(5)) {
        return cpu;
    }
    // srun forwards SIGTERM to its tasks; a second one within a second ends the step.
    for _ in 0..2 {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGTERM,
        );
        std::thread::sleep(Duration::from_millis(300));
    }
    if let Some(cpu) = exited(Duration::from_secs(5)) {
        return cpu;
    }
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGKILL,
    );
    exited(Duration::from_secs(5)).unwrap_or(0.0)
}

/// Reap `pid` if it ended: its CPU seconds (0 when it was reaped already).
fn reap(pid: i32) -> Option<f64> {
    let mut status = 0;
    // SAFETY: zeroed rusage is a valid out-parameter.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: plain syscall with valid pointers.
    let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut ru) };
    if r == pid {
        return Some(super::seconds(ru.ru_utime) + super::seconds(ru.ru_stime));
    }
    (r < 0).then_some(0.0)
}

/// Cancel the ranks' job steps (their tasks on every node), so nothing of the cell outlives
/// the verdict; the launcher then ends by itself or by the probe's cancellation.
fn cancel_steps(steps: &BTreeSet<String>) {
    if steps.is_empty() {
        return;
    }
    let _ = Command::new("scancel")
        .arg("--quiet")
        .args(steps)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

fn run_once(
    args: &CoordinateArgs,
    spec: &ProbeSpec,
    job: &str,
    nodes: &[String],
    dir: &Path,
    cancel: &qualify_probe::CancelToken,
) -> Result<ProbeResult, CliError> {
    std::fs::create_dir_all(dir)
        .map_err(|e| CliError::unreadable("nodes directory", dir, &e, "check the run directory"))?;
    let t0 = Instant::now();
    let secs = || t0.elapsed().as_secs_f64();
    let agents = start_agents(dir, nodes.len(), args, job)?;
    let agents_pid = agents.id() as i32;
    let mut follow = Follow {
        nodes: nodes.to_vec(),
        reports: BTreeMap::new(),
        heard: BTreeMap::new(),
        kill_seen: BTreeMap::new(),
    };
    // Every agent's first report before the launcher starts (bounded).
    while follow.reports.len() < nodes.len()
        && t0.elapsed() < args.agents_start
        && !cancel.load(Ordering::SeqCst)
    {
        follow.read(dir, secs());
        if follow.reports.len() < nodes.len() {
            if let Ok(Some(_)) = nix::sys::wait::waitid(
                nix::sys::wait::Id::Pid(nix::unistd::Pid::from_raw(agents_pid)),
                nix::sys::wait::WaitPidFlag::WEXITED
                    | nix::sys::wait::WaitPidFlag::WNOHANG
                    | nix::sys::wait::WaitPidFlag::WNOWAIT,
            )
            .map(|s| s.pid())
            {
                // The agents' step ended before they all reported (srun refused it, or the
                // binary is missing on a node): the launcher runs with what there is.
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    let settings = Settings {
        node_timeout: args.node_timeout.as_secs_f64(),
        stall: args.limits.stall.as_secs_f64(),
    };
    let probe_cancel: qualify_probe::CancelToken = Arc::new(AtomicBool::new(false));
    let launched = {
        let spec = spec.clone();
        let probe_cancel = probe_cancel.clone();
        std::thread::Builder::new()
            .name("qualify-launcher-probe".into())
            .spawn(move || qualify_probe::probe(&spec, &probe_cancel))
    };
    let launched = match launched {
        Ok(t) => t,
        Err(e) => {
            stop_agents(dir, agents);
            return Err(CliError::input_only(format!(
                "cannot start the launcher's probe: {e}"
            )));
        }
    };
    let mut stop: Option<(Stop, f64)> = None;
    let mut at_stop: Option<BTreeMap<String, AgentReport>> = None;
    let mut interrupted = false;
    while !launched.is_finished() {
        std::thread::sleep(TICK);
        follow.read(dir, secs());
        if cancel.load(Ordering::SeqCst) {
            interrupted = true;
            cancel_steps(&follow.rank_steps());
            probe_cancel.store(true, Ordering::SeqCst);
            break;
        }
        if let Some(s) = qualify_nodes::live(secs(), &follow.views(), &settings) {
            stop = Some((s, secs()));
            // The evidence is what the nodes said when the verdict was reached, not what is
            // left once their processes were stopped.
            at_stop = Some(follow.reports.clone());
            cancel_steps(&follow.rank_steps());
            probe_cancel.store(true, Ordering::SeqCst);
            break;
        }
    }
    let launcher = launched
        .join()
        .map_err(|_| CliError::input_only("the launcher's probe thread panicked"));
    follow.read(dir, secs());
    // The agents finish whatever became of the launcher (a command not found is a setup error).
    let agents_srun_cpu = stop_agents(dir, agents);
    let launcher = launcher??;
    follow.read(dir, secs());
    if let Some(reports) = at_stop {
        // Keep the agents' costs and memory kills from their last reports.
        for (node, mut r) in reports {
            if let Some(last) = follow.reports.get(&node) {
                r.cpu_seconds = last.cpu_seconds;
                r.samples = last.samples;
                r.seq = last.seq;
                r.finished = last.finished;
            }
            follow.reports.insert(node, r);
        }
    }
    let views = follow.views();
    Ok(qualify_nodes::finish(qualify_nodes::Final {
        launcher,
        stop: stop.as_ref().map(|(s, _)| s),
        stopped_at: stop.as_ref().map(|(_, t)| *t),
        nodes: &views,
        allocation: nodes,
        interrupted,
        coordinator_cpu_seconds: super::own_cpu_seconds() + agents_srun_cpu,
    }))
}

pub fn run(args: CoordinateArgs) -> Result<ExitCode, CliError> {
    let cancel = crate::cancel_on_signals();
    if let Some(lease) = &args.lease {
        qualify_slurm::lease::watch(lease.clone(), cancel.clone());
    }
    let (job, nodes) = allocation()?;
    let spec = ProbeSpec {
        argv: args.command.clone(),
        workdir: None,
        env: Vec::new(),
        limits: args.limits.to_limits(),
        backend: args.backend,
        control: None,
        sandbox: args.sandbox.to_sandbox(),
        shared_files: Vec::new(),
        stdio: None,
    };
    let mut runs = Vec::new();
    for i in 0..args.repeat {
        let dir = args.nodes_dir.join(format!("run-{}", i + 1));
        let r = run_once(&args, &spec, &job, &nodes, &dir, &cancel)?;
        let stop = r.outcome == Outcome::Interrupted;
        runs.push(r);
        if stop {
            break;
        }
    }
    let result = if runs.len() == 1 {
        runs.pop()
    } else {
        ProbeResult::combine(runs)
    }
    .ok_or_else(|| CliError::input_only("no run of the cell happened"))?;
    let text = if args.json {
        serde_json::to_string(&result)
            .map_err(|e| CliError::output(format!("cannot encode result as JSON: {e}"), None))?
    } else {
        crate::probe_cmd::summary(&result)
    };
    crate::print_stdout(&text);
    Ok(match result.outcome {
        Outcome::Ok => ExitCode::SUCCESS,
        Outcome::Interrupted => exit::interrupted(),
        _ => exit::refused(),
    })
}
