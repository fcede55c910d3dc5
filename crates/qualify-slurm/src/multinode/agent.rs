//! One node's agent of a multi-node cell (`qualify agent observe`). Selects the job's processes on this node by their
//! environment (`--select SLURM_JOB_ID=…`, a job step that is not its own), follows them with
//! `qualify_probe::NodeWatch` every sampling interval, kills the largest at the per-node memory
//! ceiling (a watchdog: the processes are the scheduler's, the agent can only signal them), and
//! keeps `<dir>/<node>.json` current. A writer thread rewrites the report every heartbeat with a
//! new sequence number, so a node whose agent is busy taking stack samples still answers; only a
//! node (or agent) that died stops answering.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use qualify_nodes::{AgentReport, MemoryKill, NodeStatus, RankSeen};
use qualify_probe::observe::SeenProcess;
use qualify_probe::{CancelToken, Limits, Membership, NodeState, NodeWatch, Observation, Selector};

use super::MultinodeError as Error;

/// Environment variables kept per process: the scheduler's placement of each task.
const KEEP_ENV: [&str; 5] = [
    "SLURM_JOB_ID",
    "SLURM_STEP_ID",
    "SLURM_PROCID",
    "SLURM_STEP_NUM_TASKS",
    "SLURMD_NODENAME",
];

/// One node's agent, as the coordinator starts it.
pub struct Agent {
    /// The cell's directory for reports (shared with the coordinator).
    pub dir: PathBuf,
    /// Stall window: how long nothing but CPU must stay still before the node is stuck.
    pub stall: Duration,
    /// Per-node memory ceiling for the job's processes on this node (watchdog).
    pub memory: Option<u64>,
    /// Select processes whose environment holds NAME=VALUE.
    pub select: Vec<(String, String)>,
    /// Select only processes that have NAME in their environment.
    pub present: Vec<String>,
    /// Leave out processes whose NAME equals this agent's own value of NAME (its job step).
    pub exclude_own: Vec<String>,
    /// Command names never observed (the scheduler's daemons).
    pub skip_comm: Vec<String>,
    /// The environment variable naming this node (else the host name).
    pub node_from: String,
    /// How often the report is rewritten when nothing changes.
    pub heartbeat: Duration,
    /// Give up after this long even if nobody asks (a bound, not a plan).
    pub max_time: Duration,
}

fn node_name(var: &str) -> String {
    std::env::var(var)
        .ok()
        .filter(|v| !v.is_empty())
        .or_else(|| {
            std::fs::read_to_string("/proc/sys/kernel/hostname")
                .ok()
                .map(|h| h.trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into())
}

/// Write `report` to `path` atomically (write, then rename).
fn publish(path: &Path, report: &AgentReport) {
    let tmp = path.with_extension("json.partial");
    if let Ok(text) = serde_json::to_vec(report)
        && std::fs::write(&tmp, text).is_ok()
    {
        let _ = std::fs::rename(&tmp, path);
    }
}

/// The ranks seen so far: (world, rank) → what is known.
struct Ranks {
    seen: BTreeMap<(String, u32), RankSeen>,
}

/// (world, rank, size) of a process: its rank by the rules table (else `SLURM_PROCID`), its
/// world the job step it runs in. A launcher (`orted`, …) started as a task is no rank.
fn identity(p: &SeenProcess) -> Option<(String, u32, Option<u32>)> {
    if p.launcher {
        return None;
    }
    let env = |k: &str| p.env.get(k).map(String::as_str);
    let world = match (env("SLURM_JOB_ID"), env("SLURM_STEP_ID")) {
        (Some(j), Some(s)) => format!("{j}.{s}"),
        _ => p.rank.as_ref().map(|r| r.job.clone()).unwrap_or_default(),
    };
    let rank = p
        .rank
        .as_ref()
        .map(|r| r.rank)
        .or_else(|| env("SLURM_PROCID").and_then(|v| v.parse().ok()))?;
    let size = p
        .rank
        .as_ref()
        .and_then(|r| r.size)
        .or_else(|| env("SLURM_STEP_NUM_TASKS").and_then(|v| v.parse().ok()));
    Some((world, rank, size))
}

impl Ranks {
    fn update(&mut self, o: &Observation, unix: f64) {
        for p in &o.processes {
            let Some((world, rank, size)) = identity(p) else {
                continue;
            };
            let e = self
                .seen
                .entry((world.clone(), rank))
                .or_insert_with(|| RankSeen {
                    rank,
                    size,
                    world,
                    pids: Vec::new(),
                    comm: p.comm.clone(),
                    alive: true,
                    first_seen_unix: unix,
                    gone_unix: None,
                });
            if !e.pids.contains(&p.pid) {
                e.pids.push(p.pid);
                // The program, not its wrapper shell, names the rank.
                e.comm = p.comm.clone();
            }
            e.size = e.size.or(size);
            e.alive = true;
            e.gone_unix = None;
        }
        let alive: std::collections::HashSet<i32> = o.processes.iter().map(|p| p.pid).collect();
        for e in self.seen.values_mut() {
            if e.alive && !e.pids.iter().any(|p| alive.contains(p)) {
                e.alive = false;
                e.gone_unix = Some(unix);
            }
        }
    }
}

fn status(state: &NodeState) -> NodeStatus {
    match state {
        NodeState::Empty => NodeStatus::Empty,
        NodeState::Running => NodeStatus::Running,
        NodeState::Stuck(s) => NodeStatus::Stuck {
            kind: serde_json::to_value(s.kind)
                .ok()
                .and_then(|v| v.as_str().map(String::from))
                .unwrap_or_default(),
            why: s.why.clone(),
            still_seconds: s.still_seconds,
            ranks: s.ranks.clone(),
            evidence: s.evidence.clone(),
        },
    }
}

/// Kill the largest process of the job on this node (the memory ceiling was passed).
fn kill_largest(o: &Observation, ceiling: u64, ranks: &Ranks, unix: f64) -> Option<MemoryKill> {
    let p = o.largest()?;
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(p.pid),
        nix::sys::signal::Signal::SIGKILL,
    )
    .ok()?;
    let rank = ranks
        .seen
        .values()
        .find(|r| r.pids.contains(&p.pid))
        .map(|r| r.rank);
    Some(MemoryKill {
        pid: p.pid,
        comm: p.comm.clone(),
        rank,
        bytes: p.anon_bytes,
        node_bytes: o.memory_bytes,
        ceiling,
        unix_seconds: unix,
    })
}

/// Watch this node until the coordinator asks the agent to finish, `cancel` is set or
/// `max_time` passes; the report stays current in `<dir>/<node>.json`.
pub fn observe(args: &Agent, cancel: &CancelToken) -> Result<(), Error> {
    let mut exclude = Vec::new();
    for name in &args.exclude_own {
        if let Ok(v) = std::env::var(name) {
            exclude.push((name.clone(), v));
        }
    }
    let selector = Selector {
        require: args.select.clone(),
        present: args.present.clone(),
        exclude,
        skip_comms: args.skip_comm.clone(),
        same_network_namespace: true,
    };
    std::fs::create_dir_all(&args.dir).map_err(|source| Error::Unreadable {
        what: "report directory",
        path: args.dir.clone(),
        source,
        fix: "give a writable --dir",
    })?;
    let node = node_name(&args.node_from);
    let path = super::report_path(&args.dir, &node);
    let stop = super::stop_path(&args.dir);
    let limits = Limits {
        stall_seconds: args.stall.as_secs_f64(),
        memory_bytes: args.memory,
        ..Limits::default()
    };
    let start = Instant::now();
    let started_unix = super::unix_now();
    let mut membership = Membership::new(selector);
    let mut watch = NodeWatch::new(&limits, &KEEP_ENV, start);
    let interval = watch.interval();
    let report = Arc::new(Mutex::new(AgentReport {
        node: node.clone(),
        pid: std::process::id() as i32,
        seq: 0,
        started_unix,
        written_unix: started_unix,
        samples: 0,
        interval_ms: interval.as_millis() as u64,
        state: NodeStatus::Empty,
        ranks: Vec::new(),
        processes: 0,
        memory_bytes: 0,
        peak_memory_bytes: 0,
        memory_ceiling: args.memory,
        run_seconds: 0.0,
        memory_kills: Vec::new(),
        cpu_seconds: 0.0,
        finished: false,
    }));
    // The heartbeat: a new sequence number every beat, whatever the sampler is doing.
    let done = Arc::new(AtomicBool::new(false));
    let writer = {
        let (report, done, path, beat) =
            (report.clone(), done.clone(), path.clone(), args.heartbeat);
        std::thread::Builder::new()
            .name("qualify-agent-heartbeat".into())
            .spawn(move || {
                while !done.load(Ordering::SeqCst) {
                    if let Ok(mut r) = report.lock() {
                        r.seq += 1;
                        r.written_unix = super::unix_now();
                        r.cpu_seconds = super::cpu_with_children();
                        publish(&path, &r);
                    }
                    std::thread::sleep(beat);
                }
            })
            .map_err(Error::HeartbeatThread)?
    };
    let mut ranks = Ranks {
        seen: BTreeMap::new(),
    };
    let mut peak = 0u64;
    let mut kills: Vec<MemoryKill> = Vec::new();
    let mut samples = 0u64;
    while !cancel.load(Ordering::SeqCst) && !stop.exists() && start.elapsed() < args.max_time {
        let now = Instant::now();
        let unix = super::unix_now();
        let pids = membership.members();
        let o = watch.observe(now, &pids);
        samples += 1;
        ranks.update(&o, unix);
        peak = peak.max(o.memory_bytes);
        if let Some(ceiling) = args.memory
            && o.memory_bytes > ceiling
            && let Some(k) = kill_largest(&o, ceiling, &ranks, unix)
        {
            kills.push(k);
        }
        if let Ok(mut r) = report.lock() {
            let state = status(&o.state);
            let ranks_now: Vec<RankSeen> = ranks.seen.values().cloned().collect();
            let changed = r.state.name() != state.name()
                || r.processes != o.processes.len()
                || r.ranks != ranks_now
                || r.memory_kills.len() != kills.len();
            r.samples = samples;
            r.state = state;
            r.ranks = ranks_now;
            r.processes = o.processes.len();
            r.memory_bytes = o.memory_bytes;
            r.peak_memory_bytes = peak;
            r.run_seconds = o.run_seconds;
            r.memory_kills = kills.clone();
            if changed {
                r.seq += 1;
                r.written_unix = unix;
                r.cpu_seconds = super::cpu_with_children();
                publish(&path, &r);
            }
        }
        std::thread::sleep(interval.saturating_sub(now.elapsed()));
    }
    done.store(true, Ordering::SeqCst);
    let _ = writer.join();
    if let Ok(mut r) = report.lock() {
        r.seq += 1;
        r.finished = true;
        r.written_unix = super::unix_now();
        r.cpu_seconds = super::cpu_with_children();
        publish(&path, &r);
    }
    Ok(())
}
