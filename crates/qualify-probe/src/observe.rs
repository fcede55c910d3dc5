//! Watching processes qualify did not start: the processes of one job on one node of a
//! multi-node allocation (what `qualify agent observe` watches), with the probe's own
//! machinery — `/proc` snapshots per process and thread, blocking-call classification, the
//! spin-wait stack sampler and judge, memory — but without spawning, killing or reaping
//! anything (the scheduler owns those processes).
//!
//! - [`Selector`] / [`Membership`]: which processes are the job's on this node, chosen by their
//!   environment (e.g. `SLURM_JOB_ID`, a job step that is not the agent's own), their command
//!   name, and the node boundary (the network namespace: on a real node every process shares
//!   one; several emulated nodes on one kernel share `/proc` but not their namespaces), plus
//!   their descendants. Decisions are cached per (pid, start time).
//! - [`NodeWatch`]: one [`Observation`] per sample — the processes, what vanished since the
//!   last sample, their memory and CPU — and the node's state: running, or [`Stuck`] when the
//!   blocked-wait rule or the spin-wait judge proves every thread on the node stuck. A spin-wait
//!   finding that is ambiguous *only* because ranks of the world run elsewhere (on other nodes)
//!   counts as stuck here: the node's part of a deadlock, which only the merge over every node
//!   may call one. Once stuck, nothing is sampled again until the processes move (I/O, page
//!   faults, memory, the set of threads): the state is kept and restarts on any motion.
//!
//! One difference from the probe: the private `[heap]` of each process is not compared between
//! samples. A network transport's progress engine (libevent under Open MPI's TCP transport)
//! rewrites its own heap on every turn even in a deadlock; data that moves between nodes moves
//! through sockets (I/O bytes, part of the stillness) and between ranks of one node through
//! shared memory (still compared), as do the program's `.data`/`.bss`.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::{Value, json};

use crate::blocking::{Class, ThreadWait};
use crate::classify::{Ending, Watch};
use crate::inspect::{Inspect, Live};
use crate::limits::Limits;
use crate::memory::Snapshot;
use crate::ranks;
use crate::rules::{RULES, Rules};
use crate::sample::{self, ProcSnap};
use crate::spin::Conclusion;
use crate::stacks::ProcStacks;

/// Which processes are the job's on this node.
#[derive(Debug, Clone, Default)]
pub struct Selector {
    /// `NAME=value` pairs every selected process's environment holds (e.g. the job id).
    pub require: Vec<(String, String)>,
    /// Variables a selected process must have, with any value (e.g. a job step id).
    pub present: Vec<String>,
    /// `NAME=value` pairs that exclude a process (e.g. the agent's own job step).
    pub exclude: Vec<(String, String)>,
    /// Command names never selected, nor their descendants (the scheduler's own daemons).
    pub skip_comms: Vec<String>,
    /// Only processes in this process's network namespace: the node boundary when emulated
    /// nodes share one kernel (on a real node every process shares it).
    pub same_network_namespace: bool,
}

/// A process's environment (`NAME`, `value`) as it was when it started; empty when unreadable.
pub fn environ(pid: i32) -> Vec<(String, String)> {
    let Ok(data) = std::fs::read(format!("/proc/{pid}/environ")) else {
        return Vec::new();
    };
    data.split(|b| *b == 0)
        .filter_map(|entry| {
            let text = String::from_utf8_lossy(entry);
            let (k, v) = text.split_once('=')?;
            Some((k.to_string(), v.to_string()))
        })
        .collect()
}

fn netns(pid: i32) -> Option<String> {
    std::fs::read_link(format!("/proc/{pid}/ns/net"))
        .ok()
        .map(|p| p.to_string_lossy().into_owned())
}

impl Selector {
    /// Whether a process with this environment is selected (the environment part alone).
    pub fn env_matches(&self, env: &[(String, String)]) -> bool {
        let get = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        self.require.iter().all(|(k, v)| get(k) == Some(v.as_str()))
            && self.present.iter().all(|k| get(k).is_some())
            && !self.exclude.iter().any(|(k, v)| get(k) == Some(v.as_str()))
    }
}

/// How long (hundredths of a second) a process must have lived before a decision not to
/// select it is kept.
const SETTLE_TICKS: u64 = 200;

/// Clock ticks since boot (the unit of a process's start time).
fn uptime_ticks(ticks_per_second: u64) -> u64 {
    std::fs::read_to_string("/proc/uptime")
        .ok()
        .and_then(|t| t.split_whitespace().next()?.parse::<f64>().ok())
        .map_or(u64::MAX, |secs| (secs * ticks_per_second as f64) as u64)
}

/// The job's processes on this node, followed across samples.
pub struct Membership {
    selector: Selector,
    own_netns: Option<String>,
    me: i32,
    /// pid → (start time, command name, on this node, selected by itself). A process's
    /// environment is replaced when it execs, which keeps its start time but changes its command
    /// name: a new name is decided again.
    decided: HashMap<i32, (u64, String, bool, bool)>,
}

impl Membership {
    pub fn new(selector: Selector) -> Membership {
        Membership {
            own_netns: netns(std::process::id() as i32),
            selector,
            me: std::process::id() as i32,
            decided: HashMap::new(),
        }
    }

    /// The selected processes now, with their descendants on this node (a child whose
    /// environment was cleared still belongs to the job), in pid order.
    pub fn members(&mut self) -> Vec<i32> {
        let Ok(iter) = procfs::process::all_processes() else {
            return Vec::new();
        };
        let mut rows: Vec<(i32, i32, u64, String)> = Vec::new();
        for p in iter.flatten() {
            if let Ok(st) = p.stat() {
                rows.push((st.pid, st.ppid, st.starttime, st.comm));
            }
        }
        let alive: HashSet<i32> = rows.iter().map(|r| r.0).collect();
        self.decided.retain(|pid, _| alive.contains(pid));
        let ticks = procfs::ticks_per_second();
        let now_ticks = uptime_ticks(ticks);
        let mut children: HashMap<i32, Vec<i32>> = HashMap::new();
        let mut on_node: HashSet<i32> = HashSet::new();
        let mut roots: Vec<i32> = Vec::new();
        for (pid, ppid, start, comm) in &rows {
            children.entry(*ppid).or_default().push(*pid);
            // Kernel threads (children of kthreadd) have no environment and are nobody's job.
            if *pid == self.me
                || *pid == 2
                || *ppid == 2
                || self.selector.skip_comms.iter().any(|c| c == comm)
            {
                continue;
            }
            let (node, chosen) = match self.decided.get(pid) {
                Some((s, c, node, chosen)) if s == start && c == comm => (*node, *chosen),
                _ => {
                    let node = !self.selector.same_network_namespace
                        || (self.own_netns.is_some() && netns(*pid) == self.own_netns);
                    let env = if node { environ(*pid) } else { Vec::new() };
                    let chosen = node && self.selector.env_matches(&env);
                    // A young process may not have exec'd its program yet (a scheduler's
                    // forked child, whose environment is still the daemon's), and an
                    // environment not readable is no answer: ask again next time.
                    let settled = now_ticks.saturating_sub(*start) > SETTLE_TICKS * ticks / 100;
                    if !node || chosen || (settled && !env.is_empty()) {
                        self.decided
                            .insert(*pid, (*start, comm.clone(), node, chosen));
                    }
                    (node, chosen)
                }
            };
            if node {
                on_node.insert(*pid);
            }
            if chosen {
                roots.push(*pid);
            }
        }
        let mut out: HashSet<i32> = HashSet::new();
        let mut stack = roots;
        while let Some(p) = stack.pop() {
            if !on_node.contains(&p) || !out.insert(p) {
                continue;
            }
            if let Some(c) = children.get(&p) {
                stack.extend(c.iter().copied());
            }
        }
        let mut v: Vec<i32> = out.into_iter().collect();
        v.sort_unstable();
        v
    }
}

/// A rank's identity from its environment, by the rules table's rank variables.
pub use crate::ranks::RankId as Rank;

/// The rank a process with environment `env` is (`None` for a process that is no rank, or whose
/// rank variable it merely inherited from this process's own environment).
pub fn rank_of(env: &[(String, String)]) -> Option<Rank> {
    let rules = RULES.as_ref().ok()?;
    let own = |name: &str| std::env::var(name).ok();
    ranks::identify(rules, env, &own)
}

/// One process of the node at one sample.
#[derive(Debug, Clone, Serialize)]
pub struct SeenProcess {
    pub pid: i32,
    pub comm: String,
    /// A launcher (`mpirun`, `orted`, … by the rules table): it starts ranks, it is none.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub launcher: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rank: Option<Rank>,
    /// The environment variables the watch was asked to keep (placement, step ids).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    pub threads: usize,
    pub anon_bytes: u64,
    pub peak_anon_bytes: u64,
    /// Seconds (since the watch started) the process was first and last seen.
    pub first_seen_seconds: f64,
    pub last_seen_seconds: f64,
}

/// Why the node's processes are stuck.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StuckKind {
    /// Every thread in an untimed wait only the node's processes could release; nothing moved.
    Blocked,
    /// Stack samples: every thread in a synchronization call or an allowed role, memory still.
    Spin,
}

/// The node's processes are stuck (see the module docs).
#[derive(Debug, Clone, Serialize)]
pub struct Stuck {
    pub kind: StuckKind,
    /// Seconds (since the watch started) when the verdict was reached.
    pub decided_at_seconds: f64,
    /// How long nothing but CPU had moved when it was reached.
    pub still_seconds: f64,
    /// The node's one-line explanation (the probe's own wording).
    pub why: String,
    /// Rank → what it is stuck in (`MPI_Recv (spinning in opal_progress)`).
    pub ranks: BTreeMap<u32, String>,
    /// Threads on the node, all accounted for.
    pub threads: usize,
    /// The spin-wait finding (`evidence.spin`'s shape) or the blocked waits.
    pub evidence: Value,
}

/// The node's state after a sample.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum NodeState {
    /// No process of the job on this node (yet, or any more).
    Empty,
    /// Processes that are not (proven) stuck.
    Running,
    Stuck(Stuck),
}

/// One sample of the node.
#[derive(Debug, Clone, Serialize)]
pub struct Observation {
    pub at_seconds: f64,
    pub processes: Vec<SeenProcess>,
    /// Processes seen before and gone now (ended, or killed).
    pub gone: Vec<SeenProcess>,
    /// Anonymous resident memory of the node's processes.
    pub memory_bytes: u64,
    /// CPU seconds the processes seen so far have run (schedstat, summed per thread).
    pub run_seconds: f64,
    pub state: NodeState,
}

impl Observation {
    /// The process holding the most anonymous memory.
    pub fn largest(&self) -> Option<&SeenProcess> {
        self.processes.iter().max_by_key(|p| p.anon_bytes)
    }
}

/// [`Live`], but digests no private `[heap]` (see the module docs).
struct NodeInspect {
    live: Live,
}

impl Inspect for NodeInspect {
    fn waits(&mut self, procs: &[ProcSnap]) -> Vec<ThreadWait> {
        self.live.waits(procs)
    }
    fn sampler(&self) -> Result<&'static str, crate::stacks::NoSampler> {
        self.live.sampler()
    }
    fn stacks(&mut self, pids: &[i32]) -> Vec<ProcStacks> {
        self.live.stacks(pids)
    }
    fn memory(&mut self, pids: &[i32], rules: &Rules) -> Snapshot {
        let mut snap = self.live.memory(pids, rules);
        let heaps: Vec<String> = snap
            .regions
            .keys()
            .filter(|k| k.ends_with(":heap"))
            .cloned()
            .collect();
        for k in heaps {
            if let Some(r) = snap.regions.remove(&k) {
                snap.compared_bytes = snap.compared_bytes.saturating_sub(r.bytes);
            }
        }
        snap
    }
    fn environ(&mut self, pid: i32) -> Vec<(String, String)> {
        self.live.environ(pid)
    }
    fn own_env(&self, name: &str) -> Option<String> {
        self.live.own_env(name)
    }
}

/// Everything but CPU that moves when processes make progress.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Motion {
    io_bytes: u64,
    faults: u64,
    anon_bytes: u64,
    tasks: Vec<i32>,
}

fn motion(procs: &[ProcSnap]) -> Motion {
    let mut tasks: Vec<i32> = procs
        .iter()
        .flat_map(|p| p.threads.iter())
        .filter(|t| !matches!(t.state, 'Z' | 'X'))
        .map(|t| t.tid)
        .collect();
    tasks.sort_unstable();
    Motion {
        io_bytes: procs.iter().map(|p| p.io_bytes).sum(),
        faults: procs.iter().map(|p| p.faults).sum(),
        anon_bytes: procs.iter().map(|p| p.anon_bytes).sum(),
        tasks,
    }
}

struct Tracked {
    starttime: u64,
    seen: SeenProcess,
    /// Per thread (run ns) so that exiting threads never subtract.
    run_ns: HashMap<i32, u64>,
}

/// Follows the job's processes on one node; see the module docs.
pub struct NodeWatch {
    limits: Limits,
    allowed_cpus: f64,
    keep_env: Vec<String>,
    start: Instant,
    watch: Watch,
    inspect: NodeInspect,
    stuck: Option<(Stuck, Motion)>,
    tracked: BTreeMap<i32, Tracked>,
    finished_run_ns: u64,
}

impl NodeWatch {
    /// `limits` give the stall window (the memory ceiling is the caller's to enforce);
    /// `keep_env` names the environment variables each [`SeenProcess`] carries.
    pub fn new(limits: &Limits, keep_env: &[&str], start: Instant) -> NodeWatch {
        let allowed_cpus = crate::allowed_cpus() as f64;
        NodeWatch {
            limits: limits.clone(),
            allowed_cpus,
            keep_env: keep_env.iter().map(|s| s.to_string()).collect(),
            start,
            watch: Watch::new(limits, allowed_cpus, start),
            inspect: NodeInspect { live: Live::new() },
            stuck: None,
            tracked: BTreeMap::new(),
            finished_run_ns: 0,
        }
    }

    /// The interval the probe samples a tree at for these limits (a twentieth of the stall
    /// window, 10–100 ms).
    pub fn interval(&self) -> Duration {
        (self.limits.stall() / 20).clamp(Duration::from_millis(10), Duration::from_millis(100))
    }

    /// Take one sample of `pids` (the members now).
    pub fn observe(&mut self, now: Instant, pids: &[i32]) -> Observation {
        let at = now.duration_since(self.start).as_secs_f64();
        let procs: Vec<ProcSnap> = pids.iter().filter_map(|&p| sample::read_proc(p)).collect();
        let live: HashMap<i32, &ProcSnap> = procs
            .iter()
            .filter(|p| !p.is_zombie())
            .map(|p| (p.pid, p))
            .collect();

        // Vanished (or replaced) processes first.
        let mut gone = Vec::new();
        let ended: Vec<i32> = self
            .tracked
            .iter()
            .filter(|(pid, t)| live.get(pid).is_none_or(|p| p.starttime != t.starttime))
            .map(|(pid, _)| *pid)
            .collect();
        for pid in ended {
            if let Some(t) = self.tracked.remove(&pid) {
                self.finished_run_ns += t.run_ns.values().sum::<u64>();
                gone.push(t.seen);
            }
        }
        for p in live.values() {
            let keep_env = &self.keep_env;
            // What the process is (command, kept environment, launcher, rank), read when it is
            // first seen and again when it execs: a forked child seen before `exec` still
            // carries its parent's name and may not show its environment yet.
            let identity = || {
                let env = environ(p.pid);
                let kept: BTreeMap<String, String> = env
                    .iter()
                    .filter(|(k, _)| keep_env.iter().any(|w| w == k))
                    .cloned()
                    .collect();
                let launcher = RULES.as_ref().is_ok_and(|r| r.launcher(&p.comm).is_some());
                let rank = if launcher { None } else { rank_of(&env) };
                (kept, launcher, rank)
            };
            let t = self.tracked.entry(p.pid).or_insert_with(|| {
                let (kept, launcher, rank) = identity();
                Tracked {
                    starttime: p.starttime,
                    seen: SeenProcess {
                        pid: p.pid,
                        comm: p.comm.clone(),
                        launcher,
                        rank,
                        env: kept,
                        threads: 0,
                        anon_bytes: 0,
                        peak_anon_bytes: 0,
                        first_seen_seconds: at,
                        last_seen_seconds: at,
                    },
                    run_ns: HashMap::new(),
                }
            });
            if t.seen.comm != p.comm {
                let (kept, launcher, rank) = identity();
                t.seen.comm = p.comm.clone();
                t.seen.env = kept;
                t.seen.launcher = launcher;
                t.seen.rank = rank;
            }
            t.seen.threads = p
                .threads
                .iter()
                .filter(|t| !matches!(t.state, 'Z' | 'X'))
                .count();
            t.seen.anon_bytes = p.anon_bytes;
            t.seen.peak_anon_bytes = t.seen.peak_anon_bytes.max(p.anon_bytes);
            t.seen.last_seen_seconds = at;
            for th in &p.threads {
                let e = t.run_ns.entry(th.tid).or_insert(0);
                *e = (*e).max(th.run_ns);
            }
        }
        let run_ns: u64 = self.finished_run_ns
            + self
                .tracked
                .values()
                .map(|t| t.run_ns.values().sum::<u64>())
                .sum::<u64>();
        let live_procs: Vec<ProcSnap> = procs.iter().filter(|p| !p.is_zombie()).cloned().collect();
        let state = self.judge(now, at, &live_procs);
        Observation {
            at_seconds: at,
            processes: self.tracked.values().map(|t| t.seen.clone()).collect(),
            gone,
            memory_bytes: live_procs.iter().map(|p| p.anon_bytes).sum(),
            run_seconds: run_ns as f64 / 1e9,
            state,
        }
    }

    fn judge(&mut self, now: Instant, at: f64, procs: &[ProcSnap]) -> NodeState {
        if procs.is_empty() {
            self.stuck = None;
            self.watch = Watch::new(&self.limits, self.allowed_cpus, now);
            return NodeState::Empty;
        }
        let m = motion(procs);
        if let Some((stuck, still)) = &self.stuck {
            if *still == m {
                return NodeState::Stuck(stuck.clone());
            }
            // Moved again: start over.
            self.stuck = None;
            self.watch = Watch::new(&self.limits, self.allowed_cpus, now);
        }
        let ending = self.watch.observe(now, procs, 0, None, &mut self.inspect);
        let threads = procs
            .iter()
            .flat_map(|p| p.threads.iter())
            .filter(|t| !matches!(t.state, 'Z' | 'X'))
            .count();
        let stuck = match ending {
            Some(Ending::Deadlock(waits, quiet)) => Some(blocked(at, &waits, quiet, threads)),
            Some(Ending::SpinDeadlock(f)) => Some(Stuck {
                kind: StuckKind::Spin,
                decided_at_seconds: at,
                still_seconds: f.still_seconds,
                why: f.why.clone(),
                ranks: f.ranks.clone(),
                threads,
                evidence: finding_json(&f),
            }),
            _ => match self.watch.spin_conclusion() {
                Some(Conclusion::Ambiguous(f)) if f.only_worlds_missing => Some(Stuck {
                    kind: StuckKind::Spin,
                    decided_at_seconds: at,
                    still_seconds: f.still_seconds,
                    why: part_of_world(f),
                    ranks: f.ranks.clone(),
                    threads,
                    evidence: finding_json(f),
                }),
                _ => None,
            },
        };
        match stuck {
            Some(s) => {
                self.stuck = Some((s.clone(), m));
                NodeState::Stuck(s)
            }
            None => NodeState::Running,
        }
    }
}

/// A node's share of a world that is stuck, in words: its ranks and what they are in.
fn part_of_world(f: &crate::spin::Finding) -> String {
    if f.ranks.is_empty() {
        return f.why.clone();
    }
    let ranks: Vec<String> = f
        .ranks
        .iter()
        .map(|(r, what)| format!("rank {r}: {what}"))
        .collect();
    format!(
        "{} rank(s) here stuck — {}; nothing but CPU moved for {:.1}s across the stack samples; their world's other ranks run elsewhere (or its size is not in their environment), so only the merge over every node can call it a deadlock",
        f.ranks.len(),
        ranks.join("; "),
        f.still_seconds
    )
}

fn finding_json(f: &crate::spin::Finding) -> Value {
    let mut v = serde_json::to_value(f).unwrap_or(Value::Null);
    if let Some(map) = v.as_object_mut() {
        map.insert(
            "private_heaps".into(),
            json!("not compared (a network transport's progress engine rewrites its own heap)"),
        );
    }
    v
}

/// The blocked-wait verdict of the node: rank → its waits, from the processes' environments.
fn blocked(at: f64, waits: &[ThreadWait], quiet: Duration, threads: usize) -> Stuck {
    let mut ranks: BTreeMap<u32, String> = BTreeMap::new();
    for w in waits.iter().filter(|w| w.class != Class::Gone) {
        if let Some(r) = rank_of(&environ(w.pid)) {
            let e = ranks.entry(r.rank).or_default();
            if !e.contains(&w.call) {
                if !e.is_empty() {
                    e.push_str("; ");
                }
                e.push_str(&w.call);
            }
        }
    }
    Stuck {
        kind: StuckKind::Blocked,
        decided_at_seconds: at,
        still_seconds: quiet.as_secs_f64(),
        why: format!(
            "all {} thread(s) blocked in untimed waits only the node's processes could release, and nothing moved for {:.1}s (stall window)",
            waits.iter().filter(|w| w.class != Class::Gone).count(),
            quiet.as_secs_f64()
        ),
        ranks,
        threads,
        evidence: serde_json::to_value(waits).unwrap_or(Value::Null),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::{Child, Command, Stdio};

    /// Children killed and reaped on drop.
    struct Kids(Vec<Child>);
    impl Drop for Kids {
        fn drop(&mut self) {
            for c in &mut self.0 {
                let _ = c.kill();
                let _ = c.wait();
            }
        }
    }

    fn tagged(tag: &str, step: &str, script: &str) -> Child {
        Command::new("/bin/sh")
            .args(["-c", script])
            .env("QUALIFY_OBSERVE_TEST", tag)
            .env("QUALIFY_OBSERVE_STEP", step)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn")
    }

    fn selector(tag: &str) -> Selector {
        Selector {
            require: vec![("QUALIFY_OBSERVE_TEST".into(), tag.into())],
            present: vec!["QUALIFY_OBSERVE_STEP".into()],
            exclude: vec![("QUALIFY_OBSERVE_STEP".into(), "agent".into())],
            skip_comms: vec!["slurmstepd".into()],
            same_network_namespace: true,
        }
    }

    #[test]
    fn selection_by_environment_takes_descendants_and_leaves_the_excluded_step() {
        let tag = format!("sel-{}", std::process::id());
        // `sh` forks `sleep` (with the tags inherited) and a child with a cleared environment.
        let kids = Kids(vec![
            tagged(&tag, "0", "sleep 30 & env -i /bin/sleep 31 & wait"),
            tagged(&tag, "agent", "sleep 32"),
            tagged("other", "0", "sleep 33"),
        ]);
        let mut m = Membership::new(selector(&tag));
        let deadline = Instant::now() + Duration::from_secs(10);
        // Until both sleeps run: `env` is seen for a moment before it execs the second one.
        let sleeps = |members: &[i32]| {
            members
                .iter()
                .filter_map(|p| sample::read_proc(*p).map(|s| s.comm))
                .filter(|c| c == "sleep")
                .count()
        };
        let members = loop {
            let got = m.members();
            if sleeps(&got) >= 2 || Instant::now() > deadline {
                break got;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let first = kids.0[0].id() as i32;
        assert!(members.contains(&first), "{members:?}");
        assert!(!members.contains(&(kids.0[1].id() as i32)), "{members:?}");
        assert!(!members.contains(&(kids.0[2].id() as i32)), "{members:?}");
        let comms: Vec<String> = members
            .iter()
            .filter_map(|p| sample::read_proc(*p).map(|s| s.comm))
            .collect();
        assert_eq!(
            comms.iter().filter(|c| *c == "sleep").count(),
            2,
            "both sleeps, the one with a cleared environment too: {comms:?}"
        );
    }

    #[test]
    fn a_process_seen_before_it_execs_into_the_job_is_selected_after() {
        // As a scheduler's forked child is, before it execs the task with the job's
        // environment: first not the job's, then (same pid, same start time) the job's.
        let tag = format!("exec-{}", std::process::id());
        let kids = Kids(vec![
            Command::new("/bin/sh")
                .args([
                    "-c",
                    &format!(
                        "sleep 0.6; exec env QUALIFY_OBSERVE_TEST={tag} QUALIFY_OBSERVE_STEP=0 sleep 30"
                    ),
                ])
                .stdin(Stdio::null())
                .spawn()
                .expect("spawn"),
        ]);
        let pid = kids.0[0].id() as i32;
        let mut m = Membership::new(selector(&tag));
        let start = Instant::now();
        let mut before = false;
        let after = loop {
            let got = m.members();
            if start.elapsed() < Duration::from_millis(300) {
                before |= !got.contains(&pid);
            }
            if got.contains(&pid) {
                break true;
            }
            if start.elapsed() > Duration::from_secs(10) {
                break false;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        assert!(before, "not the job's before it execs");
        assert!(after, "the job's after it execs");
    }

    #[test]
    fn a_node_whose_processes_block_on_each_other_is_stuck_and_vanishing_is_seen() {
        let tag = format!("stuck-{}", std::process::id());
        // Two processes reading a pipe whose write end both hold: a blocked-wait deadlock on
        // this "node".
        let kids = Kids(vec![tagged(
            &tag,
            "0",
            "exec python3 -c 'import os; r, w = os.pipe(); os.fork(); os.read(r, 1)'",
        )]);
        let limits = Limits {
            stall_seconds: 0.6,
            ..Limits::default()
        };
        let start = Instant::now();
        let mut w = NodeWatch::new(&limits, &["QUALIFY_OBSERVE_STEP"], start);
        let mut m = Membership::new(selector(&tag));
        let deadline = start + Duration::from_secs(20);
        let stuck = loop {
            let pids = m.members();
            let o = w.observe(Instant::now(), &pids);
            if let NodeState::Stuck(s) = o.state {
                assert_eq!(o.processes.len(), 2, "{:?}", o.processes);
                assert!(
                    o.processes.iter().all(|p| p
                        .env
                        .get("QUALIFY_OBSERVE_STEP")
                        .map(String::as_str)
                        == Some("0")),
                    "{:?}",
                    o.processes
                );
                break s;
            }
            assert!(Instant::now() < deadline, "never stuck: {o:?}");
            std::thread::sleep(w.interval());
        };
        assert_eq!(stuck.kind, StuckKind::Blocked, "{stuck:?}");
        assert!(stuck.still_seconds >= 0.6, "{stuck:?}");
        // Killed by the node's owner (here the test; the forked child too): the next samples
        // see them gone.
        for pid in m.members() {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        drop(kids);
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut gone = 0;
        loop {
            let pids = m.members();
            let o = w.observe(Instant::now(), &pids);
            gone += o.gone.len();
            if matches!(o.state, NodeState::Empty) {
                break;
            }
            assert!(Instant::now() < deadline, "never empty: {o:?}");
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(gone >= 1, "vanished processes are reported");
    }

    #[test]
    fn busy_processes_are_running_not_stuck() {
        let tag = format!("busy-{}", std::process::id());
        let _kids = Kids(vec![tagged(
            &tag,
            "0",
            "while :; do echo x > /dev/null; done",
        )]);
        let limits = Limits {
            stall_seconds: 0.4,
            ..Limits::default()
        };
        let start = Instant::now();
        let mut w = NodeWatch::new(&limits, &[], start);
        let mut m = Membership::new(selector(&tag));
        let mut seen_running = false;
        while start.elapsed() < Duration::from_secs(2) {
            let pids = m.members();
            let o = w.observe(Instant::now(), &pids);
            assert!(!matches!(o.state, NodeState::Stuck(_)), "{o:?}");
            seen_running |= matches!(o.state, NodeState::Running);
            std::thread::sleep(w.interval());
        }
        assert!(seen_running);
    }
}
