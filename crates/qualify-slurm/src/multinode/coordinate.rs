//! The coordinator of a multi-node cell inside its Slurm allocation. Per run: start one agent
//! per node (`srun --overlap`, one task per node), wait until each has reported (or a bound
//! passes), probe the launcher here as `qualify probe` would, read the agents' reports every
//! tick, and when `qualify_nodes::live` says stop — every rank stuck, a node silent, ranks
//! abandoned, a memory kill the launcher did not end on — cancel the ranks' job steps and the
//! launcher. Then ask the agents to finish, and return `qualify_nodes::finish`'s one result
//! (the binary prints it with the `qualify probe --json` contract).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use qualify_model::step::AgentStep;
use qualify_nodes::{AgentReport, NodeView, Settings, Stop};
use qualify_probe::{CancelToken, Outcome, ProbeResult, ProbeSpec};

use super::MultinodeError as Error;

/// How often the coordinator reads the reports.
const TICK: Duration = Duration::from_millis(100);

/// A multi-node cell as its job script asks for it.
pub struct Coordinator {
    /// The cell's directory for the agents' reports (shared by every node); run `i` uses
    /// `run-<i>/` in it.
    pub nodes_dir: PathBuf,
    /// The launcher and its command, probed here under the cell's ceilings and sandbox.
    pub spec: ProbeSpec,
    pub repeat: u64,
    /// The stall window the agents judge their node by.
    pub stall: Duration,
    /// The cell's timeout (the agents give up after every run's worth of it and two minutes).
    pub timeout: Duration,
    /// The memory ceiling per node (the agents enforce it on each node's processes of the job).
    pub memory: Option<u64>,
    /// A node whose agent's report has not changed for this long stopped answering.
    pub node_timeout: Duration,
    /// How long to wait for every agent's first report before the launcher starts anyway.
    pub agents_start: Duration,
    /// The run's lease: the cell ends `interrupted` once it lapses.
    pub lease: Option<PathBuf>,
}

/// The allocation's nodes, from the job's environment.
fn allocation() -> Result<(String, Vec<String>), Error> {
    let job = std::env::var("SLURM_JOB_ID").map_err(|_| Error::NoAllocation)?;
    let list = std::env::var("SLURM_JOB_NODELIST")
        .or_else(|_| std::env::var("SLURM_NODELIST"))
        .unwrap_or_default();
    let nodes = qualify_nodes::hostlist::expand(&list);
    if nodes.is_empty() {
        return Err(Error::NoNodes { job, list });
    }
    Ok((job, nodes))
}

/// The agents' job step: `srun --overlap`, one task per node (each `qualify agent observe`,
/// an [`AgentStep`]), output to `agents.log`.
fn start_agents(dir: &Path, nodes: usize, c: &Coordinator, job: &str) -> Result<Child, Error> {
    let exe = std::env::current_exe().map_err(Error::NoBinary)?;
    let log =
        std::fs::File::create(dir.join("agents.log")).map_err(|source| Error::Unreadable {
            what: "agents log",
            path: dir.join("agents.log"),
            source,
            fix: "check the run directory",
        })?;
    let log2 = log.try_clone().map_err(Error::SharedLog)?;
    let agent = AgentStep {
        dir: dir.to_path_buf(),
        stall: c.stall,
        memory: c.memory,
        select: vec![("SLURM_JOB_ID".into(), job.to_string())],
        present: vec!["SLURM_STEP_ID".into()],
        exclude_own: vec!["SLURM_STEP_ID".into()],
        max_time: Duration::from_secs(
            (c.timeout.as_secs_f64() * c.repeat as f64 + 120.0).ceil() as u64
        ),
    };
    let mut cmd = Command::new("srun");
    cmd.arg("--overlap")
        .arg(format!("--nodes={nodes}"))
        .arg(format!("--ntasks={nodes}"))
        .arg("--ntasks-per-node=1")
        .arg("--kill-on-bad-exit=0")
        .arg("--quiet")
        .arg("--job-name=qualify-agents")
        .arg(exe)
        .args(agent.to_argv());
    cmd.stdin(Stdio::null())
        .stdout(Stdio::from(log))
        .stderr(Stdio::from(log2));
    cmd.spawn().map_err(Error::Srun)
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
    c: &Coordinator,
    job: &str,
    nodes: &[String],
    dir: &Path,
    cancel: &CancelToken,
) -> Result<ProbeResult, Error> {
    std::fs::create_dir_all(dir).map_err(|source| Error::Unreadable {
        what: "nodes directory",
        path: dir.to_path_buf(),
        source,
        fix: "check the run directory",
    })?;
    let t0 = Instant::now();
    let secs = || t0.elapsed().as_secs_f64();
    let agents = start_agents(dir, nodes.len(), c, job)?;
    let agents_pid = agents.id() as i32;
    let mut follow = Follow {
        nodes: nodes.to_vec(),
        reports: BTreeMap::new(),
        heard: BTreeMap::new(),
        kill_seen: BTreeMap::new(),
    };
    // Every agent's first report before the launcher starts (bounded).
    while follow.reports.len() < nodes.len()
        && t0.elapsed() < c.agents_start
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
        node_timeout: c.node_timeout.as_secs_f64(),
        stall: c.stall.as_secs_f64(),
    };
    let probe_cancel: CancelToken = Arc::new(AtomicBool::new(false));
    let launched = {
        let spec = c.spec.clone();
        let probe_cancel = probe_cancel.clone();
        std::thread::Builder::new()
            .name("qualify-launcher-probe".into())
            .spawn(move || qualify_probe::probe(&spec, &probe_cancel))
    };
    let launched = match launched {
        Ok(t) => t,
        Err(e) => {
            stop_agents(dir, agents);
            return Err(Error::LauncherThread(e));
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
    let launcher = launched.join().map_err(|_| Error::LauncherPanicked);
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

/// Run the cell `repeat` times (stopping at an interrupted run); its one result.
pub fn coordinate(c: &Coordinator, cancel: &CancelToken) -> Result<ProbeResult, Error> {
    if let Some(lease) = &c.lease {
        crate::lease::watch(lease.clone(), cancel.clone());
    }
    let (job, nodes) = allocation()?;
    let mut runs = Vec::new();
    for i in 0..c.repeat {
        let dir = c.nodes_dir.join(format!("run-{}", i + 1));
        let r = run_once(c, &job, &nodes, &dir, cancel)?;
        let stop = r.outcome == Outcome::Interrupted;
        runs.push(r);
        if stop {
            break;
        }
    }
    if runs.len() == 1 {
        runs.pop()
    } else {
        ProbeResult::combine(runs)
    }
    .ok_or(Error::NoRun)
}
