//! Spin-wait deadlocks: MPI ranks, OpenMP teams and spin locks that hang inside a blocking
//! synchronization call at full CPU, which the blocked-wait rule (untimed futex, pipes) never
//! sees.
//!
//! [`SpinWatch`] follows the tree's *stillness* — everything but CPU that moves when a program
//! makes progress: output, heartbeat, I/O bytes, page faults, anonymous memory, the set of
//! threads. Once the tree has been still for a third of the stall window it samples every
//! thread's stack (a tree with no thread in a synchronization call is done with there), again at
//! two thirds and at the full window, each of these two preceded by two digests of the memory
//! the threads share, a tick apart, and [`judge`]s the samples against the rules table: a deadlock only when every thread, in every sample, is inside a blocking
//! synchronization call (spinning or waiting), blocked in an untimed wait the tree could release,
//! a runtime's own thread (helper or idle worker) or a launcher waiting for its ranks — with at
//! least one thread inside a synchronization call, and every rank of each MPI world inside the
//! tree. Anything less certain is *ambiguous* and the run stays a `timeout` that says so.
//!
//! After an examination that found no deadlock, the next waits twice as long (up to 32 stall
//! windows) while the tree stays still; any motion starts over.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant, SystemTime};

use serde::Serialize;
use serde_json::{Value, json};

use crate::blocking::{Class, ThreadWait};
use crate::inspect::Inspect;
use crate::memory::Snapshot;
use crate::ranks::{self, RankId, World};
use crate::rules::{InCall, MatchedBy, Rules, StackKind, TableError};
use crate::sample::ProcSnap;
use crate::stacks::{MAX_SAMPLED, ProcStacks};

/// Stack samples per examination, spread evenly over one stall window.
pub const SAMPLES: usize = 3;
/// Longest pause between examinations of a tree that stays still, in stall windows.
const MAX_PAUSE: u32 = 32;
/// Entries named in a one-line explanation before `…`.
const NAMED: usize = 6;

/// Everything but CPU that moves when a tree makes progress.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stillness {
    pub output: u64,
    pub heartbeat: Option<(SystemTime, u64)>,
    pub io_bytes: u64,
    pub faults: u64,
    pub anon_bytes: u64,
    pub tasks: Vec<i32>,
}

/// A process as the examination knows it.
#[derive(Debug, Clone)]
pub struct Proc {
    pub pid: i32,
    /// The launcher rule's runtime, when the process is a launcher.
    pub launcher: Option<String>,
    pub rank: Option<RankId>,
}

/// One stack sample of the whole tree, with the waits seen at the same moment.
#[derive(Debug, Clone)]
pub struct Sample {
    /// Seconds since the tree went still.
    pub at_seconds: f64,
    /// Wall seconds taking the stacks cost.
    pub cost_seconds: f64,
    /// Wall seconds one memory digest cost.
    pub memory_seconds: f64,
    pub waits: Vec<ThreadWait>,
    pub stacks: Vec<ProcStacks>,
    /// Digests of shared memory, program data and heap, taken just before the stacks.
    pub memory: Snapshot,
    /// Regions that changed between this digest and one taken a tick earlier.
    pub memory_changed: Vec<String>,
}

/// What a thread was doing over all samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Inside a blocking synchronization call in every sample (spinning or waiting).
    Sync,
    /// In an untimed wait only the tree could release.
    Blocked,
    /// A runtime's own thread (helper, progress or idle worker): no user frame, not blocked on
    /// anything outside the tree.
    Runtime,
    /// A launcher (mpirun, …) waiting for its ranks.
    Launcher,
    /// Anything else: computing, in a timed wait in user code, blocked outside the tree, no stack.
    Other,
}

/// One thread's part in the verdict.
#[derive(Debug, Clone, Serialize)]
pub struct ThreadFinding {
    pub pid: i32,
    pub tid: i32,
    pub comm: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rank: Option<u32>,
    pub role: Role,
    /// One line, e.g. `MPI_Send (spinning in opal_progress)`.
    pub what: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub call: Option<InCall>,
    /// The wait seen in the last sample (`running`, `futex(FUTEX_WAIT, no timeout)`).
    pub wait: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Deadlock,
    Ambiguous,
}

/// An examination that found threads inside synchronization calls.
#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    pub verdict: Verdict,
    /// The one-line explanation: the deadlock's detail, or the timeout's reason.
    pub why: String,
    pub tool: String,
    /// Seconds since the tree went still at each sample.
    pub sampled_at_seconds: Vec<f64>,
    /// What each stack sample cost (wall seconds).
    pub sample_seconds: Vec<f64>,
    /// What one memory digest cost at each sample (wall seconds; two are taken per sample).
    pub memory_seconds: Vec<f64>,
    pub still_seconds: f64,
    /// How much memory was compared between the samples (the last sample's figures).
    pub memory: Snapshot,
    /// `function`, `library` or `function and library`.
    pub matched_by: String,
    /// Rank → the call it is stuck in.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub ranks: BTreeMap<u32, String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub worlds: Vec<World>,
    pub threads: Vec<ThreadFinding>,
    /// The waits of the last sample (the result's `threads` evidence).
    #[serde(skip)]
    pub waits: Vec<ThreadWait>,
    /// The last sample's stacks, as `{"tool", "stacks": {pid: text}}`.
    #[serde(skip)]
    pub stacks: Value,
    /// An ambiguous finding whose only gap is that ranks of a world run outside the tree (or
    /// the world's size is unknown): every thread in an allowed role, memory read and still.
    /// Watching one node of a multi-node job, that is the node's part of a deadlock
    /// (`crate::observe`); other nodes must say the same of theirs.
    #[serde(skip)]
    pub only_worlds_missing: bool,
}

/// What an examination concluded.
#[derive(Debug, Clone)]
pub enum Conclusion {
    Deadlock(Box<Finding>),
    /// Threads in synchronization calls, but not everything else is proven stuck.
    Ambiguous(Box<Finding>),
    /// Nothing like a spin-wait deadlock (why, for debugging).
    NotStuck(String),
    /// Could not be examined: no stack sampler, too many processes, a broken table.
    Unexamined(String),
}

/// The spin-wait side of [`crate::classify::Watch`].
pub struct SpinWatch {
    stall: Duration,
    prev: Option<Stillness>,
    still_since: Instant,
    exam_start: Instant,
    pauses: u32,
    /// No more examinations until the tree moves (nothing to sample with).
    given_up: bool,
    procs: Vec<Proc>,
    samples: Vec<Sample>,
    /// The memory digest taken a tick before the next stack sample.
    pending: Option<Snapshot>,
    conclusion: Option<Conclusion>,
}

impl SpinWatch {
    pub fn new(stall: Duration, start: Instant) -> SpinWatch {
        SpinWatch {
            stall,
            prev: None,
            still_since: start,
            exam_start: start,
            pauses: 0,
            given_up: false,
            procs: Vec::new(),
            samples: Vec::new(),
            pending: None,
            conclusion: None,
        }
    }

    /// An examination has started and not concluded.
    pub fn examining(&self) -> bool {
        !self.samples.is_empty() || self.pending.is_some()
    }

    /// What the last examination of the current still period concluded.
    pub fn conclusion(&self) -> Option<&Conclusion> {
        self.conclusion.as_ref()
    }

    fn restart(&mut self, now: Instant) {
        self.still_since = now;
        self.exam_start = now;
        self.pauses = 0;
        self.given_up = false;
        self.procs.clear();
        self.samples.clear();
        self.pending = None;
        self.conclusion = None;
    }

    fn give_up(&mut self, why: String) {
        self.samples.clear();
        self.pending = None;
        self.given_up = true;
        self.conclusion = Some(Conclusion::Unexamined(why));
    }

    /// Take one observation; returns the finding when the samples prove a deadlock.
    pub fn observe(
        &mut self,
        now: Instant,
        snaps: &[ProcSnap],
        still: Stillness,
        inspect: &mut dyn Inspect,
        rules: Result<&Rules, &TableError>,
    ) -> Option<Box<Finding>> {
        if self.prev.as_ref() != Some(&still) {
            self.prev = Some(still);
            self.restart(now);
            return None;
        }
        if self.given_up {
            return None;
        }
        let k = self.samples.len() as u32 + 1;
        if now < self.exam_start + self.stall * k / SAMPLES as u32 {
            return None;
        }
        let rules = match rules {
            Ok(r) => r,
            Err(why) => {
                self.give_up(why.to_string());
                return None;
            }
        };
        if self.samples.is_empty() && self.pending.is_none() {
            // First sample: decide whether to examine at all, then stacks only — most busy
            // trees are computing, and one sample says so without digesting any memory.
            let waits = inspect.waits(snaps);
            let live: Vec<&ThreadWait> = waits.iter().filter(|w| w.class != Class::Gone).collect();
            let running = live.iter().any(|w| w.class == Class::Running);
            let internal = live.iter().filter(|w| w.class == Class::Internal).count();
            if !running && (internal == 0 || internal == live.len()) {
                // Idle (timed or outside waits only), or every thread in an untimed wait (the
                // blocked-wait rule decides that): nothing to sample now.
                self.exam_start = now;
                return None;
            }
            let tool = match inspect.sampler() {
                Ok(t) => t,
                Err(why) => {
                    self.give_up(why.to_string());
                    return None;
                }
            };
            let live_procs: Vec<&ProcSnap> = snaps.iter().filter(|p| !p.is_zombie()).collect();
            if live_procs.len() > MAX_SAMPLED {
                self.give_up(format!(
                    "the tree has {} processes, more than the {MAX_SAMPLED} qualify samples",
                    live_procs.len()
                ));
                return None;
            }
            self.procs = live_procs
                .iter()
                .map(|p| {
                    let env = inspect.environ(p.pid);
                    let own = |name: &str| inspect.own_env(name);
                    Proc {
                        pid: p.pid,
                        launcher: rules.launcher(&p.comm).map(|l| l.runtime.clone()),
                        rank: ranks::identify(rules, &env, &own),
                    }
                })
                .collect();
            let pids: Vec<i32> = self.procs.iter().map(|p| p.pid).collect();
            let t0 = Instant::now();
            let stacks = inspect.stacks(&pids);
            self.samples.push(Sample {
                at_seconds: now.duration_since(self.still_since).as_secs_f64(),
                cost_seconds: t0.elapsed().as_secs_f64(),
                memory_seconds: 0.0,
                waits,
                stacks,
                memory: Snapshot::default(),
                memory_changed: Vec::new(),
            });
            let still = now.duration_since(self.still_since);
            let first = judge(rules, &self.procs, &self.samples, tool, still);
            if matches!(first, Conclusion::NotStuck(_)) {
                self.conclude(now, first);
            }
            return None;
        }
        let Some(before) = self.pending.take() else {
            // The memory digest the next tick's is compared with.
            let pids: Vec<i32> = self.procs.iter().map(|p| p.pid).collect();
            self.pending = Some(inspect.memory(&pids, rules));
            return None;
        };
        // Second tick: memory again (a stack sample stops the processes, and runtimes' helper
        // threads write when woken, so no sample lies between the two digests), then the
        // stacks and the waits.
        let pids: Vec<i32> = self.procs.iter().map(|p| p.pid).collect();
        let t0 = Instant::now();
        let memory = inspect.memory(&pids, rules);
        let memory_seconds = t0.elapsed().as_secs_f64();
        let memory_changed = memory.changed_since(&before);
        let waits = inspect.waits(snaps);
        let t0 = Instant::now();
        let stacks = inspect.stacks(&pids);
        self.samples.push(Sample {
            at_seconds: now.duration_since(self.still_since).as_secs_f64(),
            cost_seconds: t0.elapsed().as_secs_f64(),
            memory_seconds,
            waits,
            stacks,
            memory,
            memory_changed,
        });
        if self.samples.len() < SAMPLES {
            return None;
        }
        let Ok(tool) = inspect.sampler() else {
            return None;
        };
        let still = now.duration_since(self.still_since);
        match judge(rules, &self.procs, &self.samples, tool, still) {
            Conclusion::Deadlock(f) => {
                self.samples.clear();
                Some(f)
            }
            other => {
                self.conclude(now, other);
                None
            }
        }
    }

    /// End an examination that found no deadlock; the next waits longer.
    fn conclude(&mut self, now: Instant, conclusion: Conclusion) {
        self.samples.clear();
        self.conclusion = Some(conclusion);
        self.pauses += 1;
        let pause = (1u32 << (self.pauses - 1).min(5)).min(MAX_PAUSE) - 1;
        self.exam_start = now + self.stall * pause;
    }
}

/// One thread in one sample.
#[derive(Debug, Clone)]
enum Seen {
    Sync(InCall, Class),
    Blocked,
    Runtime { runtime: String, at: String },
    Launcher(String),
    Other(String),
}

fn seen(rules: &Rules, proc: Option<&Proc>, wait: &ThreadWait, sample: &Sample) -> Seen {
    if let Some(runtime) = proc.and_then(|p| p.launcher.clone()) {
        return Seen::Launcher(runtime);
    }
    let stacks = sample.stacks.iter().find(|s| s.pid == wait.pid);
    let frames = stacks.and_then(|s| {
        s.threads
            .iter()
            .find(|(tid, _)| *tid == wait.tid)
            .map(|(_, f)| f.as_slice())
    });
    let Some(frames) = frames else {
        if wait.class == Class::Internal {
            return Seen::Blocked;
        }
        let why = stacks
            .and_then(|s| s.error.clone())
            .unwrap_or_else(|| "the sampler showed no stack for it".into());
        return Seen::Other(format!("no stack ({why})"));
    };
    match rules.classify(frames) {
        StackKind::InCall(c) if wait.class == Class::External => Seen::Other(format!(
            "in {} but blocked on something outside the tree ({})",
            c.call, wait.call
        )),
        StackKind::InCall(c) => Seen::Sync(c, wait.class),
        StackKind::Runtime { runtime, .. } if wait.class == Class::External => {
            Seen::Other(format!(
                "{runtime} thread blocked on something outside the tree ({})",
                wait.call
            ))
        }
        StackKind::Runtime { runtime, at } => Seen::Runtime { runtime, at },
        StackKind::User { .. } | StackKind::Empty if wait.class == Class::Internal => Seen::Blocked,
        StackKind::User { at } => Seen::Other(match wait.class {
            Class::Running => format!("computing in {at}"),
            Class::Timed => format!("in a timed wait in {at} ({})", wait.call),
            _ => format!(
                "blocked on something outside the tree in {at} ({})",
                wait.call
            ),
        }),
        StackKind::Empty => Seen::Other("the sampler showed no frames for it".into()),
    }
}

/// Judge a full set of samples.
pub fn judge(
    rules: &Rules,
    procs: &[Proc],
    samples: &[Sample],
    tool: &str,
    still: Duration,
) -> Conclusion {
    let Some(last) = samples.last() else {
        return Conclusion::NotStuck("no sample".into());
    };
    let moving = samples.iter().find(|s| !s.memory_changed.is_empty());
    let proc_of = |pid: i32| procs.iter().find(|p| p.pid == pid);
    let mut threads: Vec<ThreadFinding> = Vec::new();
    let mut moved: Option<String> = None;
    for w in last.waits.iter().filter(|w| w.class != Class::Gone) {
        let proc = proc_of(w.pid);
        let rank = proc.and_then(|p| p.rank.as_ref()).map(|r| r.rank);
        let mut seens = Vec::with_capacity(samples.len());
        for s in samples {
            match s.waits.iter().find(|x| x.tid == w.tid) {
                Some(x) => seens.push((seen(rules, proc, x, s), x.call.clone())),
                None => seens.push((
                    Seen::Other("not seen in every sample".into()),
                    String::new(),
                )),
            }
        }
        let (role, what, call) = combine(&seens, w, &mut moved);
        threads.push(ThreadFinding {
            pid: w.pid,
            tid: w.tid,
            comm: w.comm.clone(),
            rank,
            role,
            what,
            call,
            wait: w.call.clone(),
        });
    }
    if let Some(m) = moved {
        return Conclusion::NotStuck(m);
    }
    let sync: Vec<&ThreadFinding> = threads.iter().filter(|t| t.role == Role::Sync).collect();
    let others: Vec<&ThreadFinding> = threads.iter().filter(|t| t.role == Role::Other).collect();
    if sync.is_empty() {
        return Conclusion::NotStuck(match others.first() {
            Some(t) => format!(
                "no thread in a synchronization call; thread {}: {}",
                t.tid, t.what
            ),
            None => "no thread in a synchronization call".into(),
        });
    }
    let worlds = ranks::worlds(
        procs
            .iter()
            .filter(|p| p.launcher.is_none())
            .filter_map(|p| p.rank.as_ref()),
    );
    let mut gaps: Vec<String> = worlds
        .iter()
        .filter(|w| !w.complete())
        .map(World::gap)
        .collect();
    let world_gaps = gaps.len();
    if let Some(why) = &last.memory.unreadable {
        gaps.push(format!(
            "memory could not be compared between samples ({why}), so data may be moving"
        ));
    }
    let how: BTreeSet<MatchedBy> = sync
        .iter()
        .filter_map(|t| t.call.as_ref().map(|c| c.matched_by))
        .collect();
    let matched_by = how
        .iter()
        .map(|m| m.as_str())
        .collect::<Vec<_>>()
        .join(" and ");
    if others.is_empty()
        && gaps.is_empty()
        && let Some(s) = moving
    {
        // Every thread looks stuck, but data moves: calls complete as fast as they start.
        return Conclusion::NotStuck(format!(
            "every thread looked stuck in stack samples, but memory the threads or processes share changed within one sampling tick ({}): data is moving",
            listed(s.memory_changed.clone())
        ));
    }
    if let Some(s) = moving {
        gaps.push(format!(
            "memory they share changed within one sampling tick ({})",
            listed(s.memory_changed.clone())
        ));
    }
    let ranks_map = rank_calls(&threads);
    let deadlock = others.is_empty() && gaps.is_empty();
    let only_worlds_missing = others.is_empty() && world_gaps > 0 && gaps.len() == world_gaps;
    let why = if deadlock {
        deadlock_why(&threads, &ranks_map, still, tool, &how, &last.memory)
    } else {
        ambiguous_why(&sync, &others, &gaps)
    };
    let mut stacks = serde_json::Map::new();
    for p in &last.stacks {
        let text = match (&p.error, p.text.is_empty()) {
            (Some(e), true) => e.clone(),
            _ => p.text.clone(),
        };
        stacks.insert(p.pid.to_string(), Value::String(text));
    }
    let finding = Box::new(Finding {
        verdict: if deadlock {
            Verdict::Deadlock
        } else {
            Verdict::Ambiguous
        },
        why,
        tool: tool.to_string(),
        sampled_at_seconds: samples.iter().map(|s| round3(s.at_seconds)).collect(),
        sample_seconds: samples.iter().map(|s| round3(s.cost_seconds)).collect(),
        memory_seconds: samples.iter().map(|s| round3(s.memory_seconds)).collect(),
        still_seconds: round3(still.as_secs_f64()),
        memory: last.memory.clone(),
        matched_by,
        ranks: ranks_map,
        worlds,
        threads,
        waits: last.waits.clone(),
        stacks: json!({ "tool": tool, "stacks": stacks }),
        only_worlds_missing,
    });
    if deadlock {
        Conclusion::Deadlock(finding)
    } else {
        Conclusion::Ambiguous(finding)
    }
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// One thread's role over every sample: (role, one-line description, the call).
fn combine(
    seens: &[(Seen, String)],
    last: &ThreadWait,
    moved: &mut Option<String>,
) -> (Role, String, Option<InCall>) {
    if let Some(why) = seens.iter().find_map(|(s, _)| match s {
        Seen::Other(why) => Some(why.clone()),
        _ => None,
    }) {
        return (Role::Other, why, None);
    }
    let calls: Vec<(&InCall, Class, &str)> = seens
        .iter()
        .filter_map(|(s, wait)| match s {
            Seen::Sync(c, class) => Some((c, *class, wait.as_str())),
            _ => None,
        })
        .collect();
    if let Some(&(first, _, _)) = calls.first() {
        if calls.len() < seens.len() {
            return (
                Role::Other,
                format!("in {} in some samples only", first.call),
                None,
            );
        }
        if let Some((other, _, _)) = calls.iter().find(|(c, _, _)| c.call != first.call) {
            moved.get_or_insert(format!(
                "thread {} moved from {} to {} between samples",
                last.tid, first.call, other.call
            ));
            return (Role::Other, "moved between calls".into(), None);
        }
        let Some(&(call, _, wait)) = calls.last() else {
            return (Role::Other, "no call".into(), None);
        };
        let spinning = calls.iter().any(|(_, class, _)| *class == Class::Running);
        let what = if spinning {
            format!("{} (spinning in {})", call.call, call.spinning_in)
        } else {
            format!("{} (waiting in {wait})", call.call)
        };
        return (Role::Sync, what, Some(call.clone()));
    }
    if let Some(runtime) = seens.iter().find_map(|(s, _)| match s {
        Seen::Launcher(r) => Some(r),
        _ => None,
    }) {
        return (
            Role::Launcher,
            format!(
                "{} ({runtime}) waiting for its ranks ({})",
                last.comm, last.call
            ),
            None,
        );
    }
    if let Some((runtime, at)) = seens.iter().rev().find_map(|(s, _)| match s {
        Seen::Runtime { runtime, at } => Some((runtime, at)),
        _ => None,
    }) {
        let doing = if last.class == Class::Running {
            format!("spinning in {at}")
        } else {
            format!("waiting in {}", last.call)
        };
        return (Role::Runtime, format!("{runtime} thread {doing}"), None);
    }
    (Role::Blocked, last.call.clone(), None)
}

/// Rank → what it is stuck in: its threads in calls (the main thread first), else its blocked
/// waits.
fn rank_calls(threads: &[ThreadFinding]) -> BTreeMap<u32, String> {
    let mut by_rank: BTreeMap<u32, Vec<&ThreadFinding>> = BTreeMap::new();
    for t in threads {
        if let Some(r) = t.rank {
            by_rank.entry(r).or_default().push(t);
        }
    }
    by_rank
        .into_iter()
        .map(|(r, mut ts)| {
            ts.sort_by_key(|t| (t.role != Role::Sync, t.tid != t.pid, t.tid));
            let mut parts: Vec<String> = ts
                .iter()
                .filter(|t| t.role == Role::Sync)
                .map(|t| t.what.clone())
                .collect();
            if parts.is_empty() {
                parts = ts
                    .iter()
                    .filter(|t| matches!(t.role, Role::Blocked | Role::Other))
                    .map(|t| t.what.clone())
                    .collect();
            }
            if parts.is_empty() {
                parts.push("waiting in the runtime".into());
            }
            parts.dedup();
            (r, parts.join("; "))
        })
        .collect()
}

fn name_of(t: &ThreadFinding) -> String {
    match (t.rank, &t.call) {
        (Some(r), _) => format!("rank {r}"),
        (None, Some(c)) => match &c.entered_from {
            Some(from) => format!("thread {} ({from})", t.tid),
            None => format!("thread {}", t.tid),
        },
        (None, None) => format!("thread {} ({})", t.tid, t.comm),
    }
}

fn listed(items: Vec<String>) -> String {
    let n = items.len();
    let mut shown: Vec<String> = items.into_iter().take(NAMED).collect();
    if n > NAMED {
        shown.push(format!("… ({} more)", n - NAMED));
    }
    shown.join("; ")
}

fn deadlock_why(
    threads: &[ThreadFinding],
    ranks: &BTreeMap<u32, String>,
    still: Duration,
    tool: &str,
    how: &BTreeSet<MatchedBy>,
    memory: &Snapshot,
) -> String {
    let sync: Vec<&ThreadFinding> = threads.iter().filter(|t| t.role == Role::Sync).collect();
    let call_of = |t: &ThreadFinding| t.call.as_ref().map(|c| c.call.clone()).unwrap_or_default();
    let head = if !ranks.is_empty() {
        let first_calls: BTreeMap<u32, String> = ranks
            .keys()
            .map(|r| {
                let call = sync
                    .iter()
                    .filter(|t| t.rank == Some(*r))
                    .min_by_key(|t| (t.tid != t.pid, t.tid))
                    .map(|t| call_of(t))
                    .unwrap_or_default();
                (*r, call)
            })
            .collect();
        let distinct: BTreeSet<&String> = first_calls.values().collect();
        let all = match distinct.into_iter().collect::<Vec<_>>().as_slice() {
            [one] if !one.is_empty() => format!("all {} ranks in {one}", ranks.len()),
            _ => format!("all {} ranks in blocking calls", ranks.len()),
        };
        format!(
            "{all} — {}",
            listed(
                ranks
                    .iter()
                    .map(|(r, w)| format!("rank {r}: {w}"))
                    .collect()
            )
        )
    } else {
        let distinct: BTreeSet<String> = sync.iter().map(|t| call_of(t)).collect();
        let all = match distinct.iter().collect::<Vec<_>>().as_slice() {
            [one] => format!("{} thread(s) in {one}", sync.len()),
            _ => format!("{} threads in synchronization calls", sync.len()),
        };
        format!(
            "{all} — {}",
            listed(
                sync.iter()
                    .map(|t| format!("{}: {}", name_of(t), t.what))
                    .collect()
            )
        )
    };
    let unranked_sync = if ranks.is_empty() {
        0
    } else {
        sync.iter().filter(|t| t.rank.is_none()).count()
    };
    let count = |role: Role| threads.iter().filter(|t| t.role == role).count();
    let mut rest = Vec::new();
    if unranked_sync > 0 {
        rest.push(format!(
            "{unranked_sync} more thread(s) in synchronization calls"
        ));
    }
    if count(Role::Blocked) > 0 {
        rest.push(format!(
            "{} thread(s) blocked in untimed waits the tree could release",
            count(Role::Blocked)
        ));
    }
    if count(Role::Runtime) > 0 {
        rest.push(format!(
            "{} runtime thread(s) (helpers, idle workers) waiting",
            count(Role::Runtime)
        ));
    }
    let launchers: BTreeSet<&str> = threads
        .iter()
        .filter(|t| t.role == Role::Launcher)
        .map(|t| t.comm.as_str())
        .collect();
    for l in launchers {
        rest.push(format!("{l} waiting for its ranks"));
    }
    let rest = if rest.is_empty() {
        String::new()
    } else {
        format!("; {}", rest.join(", "))
    };
    let how = match (
        how.contains(&MatchedBy::Function),
        how.contains(&MatchedBy::Library),
    ) {
        (true, true) => "function name and by library (stripped runtime)",
        (false, true) => "library (stripped runtime)",
        _ => "function name",
    };
    let mut compared = if memory.not_compared_bytes > 0 {
        format!(
            ", shared memory and program data unchanged ({} not compared)",
            crate::limits::format_bytes(memory.not_compared_bytes)
        )
    } else {
        ", shared memory and program data unchanged".to_string()
    };
    if !memory.left_out.is_empty() {
        compared.push_str(&format!(
            " (heap left out: {})",
            listed(memory.left_out.clone())
        ));
    }
    format!(
        "{head}{rest}; nothing but CPU moved for {:.1}s (stall window) across {SAMPLES} stack samples ({tool}){compared}; calls matched by {how}",
        still.as_secs_f64()
    )
}

fn ambiguous_why(sync: &[&ThreadFinding], others: &[&ThreadFinding], gaps: &[String]) -> String {
    let inside = listed(
        sync.iter()
            .map(|t| format!("{}: {}", name_of(t), t.what))
            .collect(),
    );
    let mut not = Vec::new();
    if !others.is_empty() {
        not.push(listed(
            others
                .iter()
                .map(|t| match t.rank {
                    Some(r) => format!("rank {r} thread {}: {}", t.tid, t.what),
                    None => format!("thread {} ({}): {}", t.tid, t.comm, t.what),
                })
                .collect(),
        ));
    }
    not.extend(gaps.iter().cloned());
    format!(
        "{} thread(s) spin or wait in synchronization calls ({inside}), but {}: not proven to be a deadlock",
        sync.len(),
        not.join("; ")
    )
}

#[cfg(test)]
mod tests;
