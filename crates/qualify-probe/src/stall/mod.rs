//! Partial deadlocks: a tree that stopped making progress while some of its threads keep
//! ticking (a timer, a heartbeat thread, a runtime's housekeeping). [`StallWatch`] follows the
//! tree while it is *quiet* — no output or heartbeat, no I/O, no new or vanished threads, CPU
//! near zero or only in periodic wake-ups — and every thread's wait (the same untimed wait with
//! no wake-up, a timed wait that keeps waking, …). After a quiet stall window it examines the
//! threads that stayed in untimed waits the tree could release for the whole window:
//!
//! 1. a wait-for cycle where the owners can be read from memory ([`owners`]: glibc mutexes,
//!    robust and PI futexes, joins, CPython RLocks) → `deadlock`, whatever other threads do;
//! 2. the JVM's own report (`jcmd Thread.print`, [`jvm`]) of a Java-level deadlock → `deadlock`;
//! 3. every thread but the runtimes' helpers (the runtimes table) in such waits → `deadlock`;
//!
//! otherwise a [`Conclusion`] that the timeout's detail states exactly (how many threads waited
//! untimed, where, and what the others did). A Go program whose timers fire is never proven
//! stuck here: a timer can release any goroutine (the Go runtime's own check waits for its
//! timers too); [`deadline`] names its goroutines when the cell ends. Examinations back off (1, 2, 4, … windows) while
//! the tree stays quiet; any motion starts over.

pub mod deadline;
pub mod golang;
pub mod jvm;
pub mod owners;
pub mod python;

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant, SystemTime};

use serde::Serialize;

use crate::blocking::{Class, ThreadWait};
use crate::inspect::Inspect;
use crate::runtimes::{Runtime, Runtimes};
use crate::sample::ProcSnap;
use owners::{Edge, Held};

/// Cores over one sampling interval below which a tree counts as quiet (idle runtimes' timers
/// and housekeeping use a few thousandths).
const QUIET_CORES: f64 = 0.2;
/// Wake-ups over the window that make a timed wait a loop (a ticker, a poller), not one long
/// wait that could still end in a release (a stack sample's ptrace stop counts as one too).
const LOOP_WAKES: u64 = 4;
/// Longest pause between examinations of a tree that stays quiet, in stall windows.
const MAX_PAUSE: u32 = 32;

/// Everything but CPU that moves when a tree makes progress.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signature {
    pub output: u64,
    pub heartbeat: Option<(SystemTime, u64)>,
    /// I/O of the tree's threads other than the runtimes' helpers ([`StallWatch::progress_io`]).
    pub io_bytes: u64,
    pub tasks: Vec<i32>,
}

#[derive(Debug, Clone)]
struct Track {
    key: (Class, String, Option<u64>),
    since: Instant,
    slices_since: u64,
    base_slices: u64,
    /// When its wake-up count last grew.
    last_wake: Instant,
    /// The longest timeout it waited with (poll-style waits show it).
    max_timeout_ms: Option<u64>,
    wait: ThreadWait,
}

/// How one thread took part in the window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Part {
    /// In the same untimed wait the tree could release for the whole window, never woken.
    Stuck,
    /// A runtime's own helper thread (by the runtimes table).
    Helper,
    /// In timed waits that kept waking (a ticker, a poll loop).
    TimedLoop,
    /// In a timed wait that has not ended during the window: it could still release others.
    TimedPending,
    /// Blocked on something outside the tree.
    Outside,
    /// Running, or in waits that changed during the window.
    Moving,
}

/// One thread's part in the examination.
#[derive(Debug, Clone, Serialize)]
pub struct ThreadPart {
    pub pid: i32,
    pub tid: i32,
    pub comm: String,
    pub part: Part,
    pub wait: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runtime: Option<String>,
    /// Where it waits, when a runtime's tool said (`worker (deadlock.py:21)`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub at: Option<String>,
    /// What it waits for and who holds it, when memory said.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub waits_for: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub held_by: Option<i32>,
}

/// One edge of a proven cycle.
#[derive(Debug, Clone, Serialize)]
pub struct CycleEdge {
    pub pid: i32,
    pub tid: i32,
    pub comm: String,
    pub waits_for: String,
    pub held_by: i32,
    /// How the owner was read.
    pub how: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Deadlock,
    NotProven,
}

/// What a runtime's own tool said.
#[derive(Debug, Clone, Serialize)]
pub struct RuntimeReport {
    pub runtime: String,
    pub tool: String,
    pub pid: i32,
    /// The report's verdict in one line, or why it could not be had.
    pub said: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub java_deadlock: Vec<jvm::JavaWait>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub goroutines: Vec<golang::Goroutine>,
}

/// The examination of a stalled tree, for the detail and `evidence.wait_for`.
#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    pub verdict: Verdict,
    /// The deadlock's detail, or the timeout's reason.
    pub why: String,
    /// What decided (or why nothing could).
    pub decided_by: String,
    pub window_seconds: f64,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cycle: Vec<CycleEdge>,
    pub threads: Vec<ThreadPart>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub runtimes: Vec<RuntimeReport>,
    /// The waits of the examination (the result's `threads` evidence).
    #[serde(skip)]
    pub waits: Vec<ThreadWait>,
}

/// What the watch asks of the supervisor.
#[derive(Debug, Clone)]
pub enum Stop {
    /// A proven deadlock.
    Deadlock(Box<Finding>),
}

/// Follows a quiet tree; see the module docs.
pub struct StallWatch {
    stall: Duration,
    prev: Option<Signature>,
    quiet_since: Instant,
    tracks: HashMap<i32, Track>,
    exams: u32,
    next_exam: Instant,
    conclusion: Option<Box<Finding>>,
    /// pid → (its I/O total, the part of it not done by a runtime's helpers) at the last sample.
    io: HashMap<i32, (u64, u64)>,
}

impl StallWatch {
    pub fn new(stall: Duration, start: Instant) -> StallWatch {
        StallWatch {
            stall,
            prev: None,
            quiet_since: start,
            tracks: HashMap::new(),
            exams: 0,
            next_exam: start + stall,
            conclusion: None,
            io: HashMap::new(),
        }
    }

    /// The tree's I/O (`rchar + wchar`) less what the runtimes' helper threads did: a JIT
    /// compiler or GC thread reading `/proc` or cgroup files is housekeeping, never progress
    /// (a JVM whose user code ticks keeps its C1 compiler reading, which held off the verdict
    /// for seconds). A process whose total did not move is not asked again.
    pub fn progress_io(&mut self, procs: &[ProcSnap], inspect: &mut dyn Inspect) -> u64 {
        let table = crate::runtimes::RUNTIMES.as_ref().ok();
        let mut next = HashMap::with_capacity(procs.len());
        let mut sum = 0u64;
        for p in procs {
            let progress = match self.io.get(&p.pid) {
                Some(&(total, progress)) if total == p.io_bytes => progress,
                _ => {
                    let runtime = table
                        .and_then(|t| inspect.runtime(p.pid).and_then(|n| t.named(&n).cloned()));
                    let helpers: u64 = match &runtime {
                        Some(rt) => p
                            .threads
                            .iter()
                            .filter(|t| rt.is_helper(&t.comm))
                            .filter_map(|t| inspect.thread_io(p.pid, t.tid))
                            .sum(),
                        None => 0,
                    };
                    p.io_bytes.saturating_sub(helpers)
                }
            };
            next.insert(p.pid, (p.io_bytes, progress));
            sum += progress;
        }
        self.io = next;
        sum
    }

    /// The last examination's finding in the current quiet period.
    pub fn conclusion(&self) -> Option<&Finding> {
        self.conclusion.as_deref()
    }

    fn restart(&mut self, now: Instant) {
        self.quiet_since = now;
        self.tracks.clear();
        self.exams = 0;
        self.next_exam = now + self.stall;
        self.conclusion = None;
    }

    /// Take one observation. `cores`: CPU over the last sampling interval. `waits`: every
    /// thread's wait now, when the caller has them already.
    pub fn observe(
        &mut self,
        now: Instant,
        procs: &[ProcSnap],
        sig: Signature,
        cores: f64,
        waits: Option<&[ThreadWait]>,
        inspect: &mut dyn Inspect,
    ) -> Option<Stop> {
        if cores > QUIET_CORES {
            self.prev = None;
            self.restart(now);
            return None;
        }
        let moved = self.prev.as_ref() != Some(&sig);
        if moved {
            self.prev = Some(sig);
            self.restart(now);
        }
        let waits = match waits {
            Some(w) => w.to_vec(),
            None => inspect.waits(procs),
        };
        self.track(now, procs, &waits);
        if moved {
            return None;
        }
        if now < self.next_exam {
            return None;
        }
        // The next examination waits longer, also after a stop a caller may not act on (the
        // node agents watch, they never end a program).
        let stop = self.examine(now, procs, &waits, inspect);
        self.exams += 1;
        let pause = (1u32 << self.exams.min(5)).min(MAX_PAUSE);
        self.next_exam = now + self.stall * pause;
        // A thread that entered an untimed wait during the quiet period is looked at again as
        // soon as it has waited a whole window, not after the back-off.
        if let Some(due) = self
            .tracks
            .values()
            .filter(|t| t.key.0 == Class::Internal && now.duration_since(t.since) < self.stall)
            .map(|t| t.since + self.stall)
            .min()
        {
            self.next_exam = self.next_exam.min(due);
        }
        stop
    }

    fn track(&mut self, now: Instant, procs: &[ProcSnap], waits: &[ThreadWait]) {
        let slices: HashMap<i32, u64> = procs
            .iter()
            .flat_map(|p| p.threads.iter())
            .map(|t| (t.tid, t.slices))
            .collect();
        let mut seen = Vec::with_capacity(waits.len());
        for w in waits.iter().filter(|w| w.class != Class::Gone) {
            let s = slices.get(&w.tid).copied().unwrap_or(0);
            let key = (w.class, w.call.clone(), w.futex.map(|f| f.addr));
            seen.push(w.tid);
            if let Some(t) = self.tracks.get_mut(&w.tid)
                && let Some(ms) = w.timeout_ms
            {
                t.max_timeout_ms = Some(t.max_timeout_ms.unwrap_or(0).max(ms));
            }
            match self.tracks.get_mut(&w.tid) {
                // The same wait since: a stack sampler's ptrace stop restarts an untimed wait
                // (and counts as a wake-up), so only the wait itself is compared.
                Some(t) if t.key == key => {
                    t.wait = w.clone();
                    if s != t.slices_since {
                        t.last_wake = now;
                    }
                    t.slices_since = s;
                }
                Some(t) => {
                    t.key = key;
                    t.since = now;
                    if s != t.slices_since {
                        t.last_wake = now;
                    }
                    t.slices_since = s;
                    t.wait = w.clone();
                }
                None => {
                    self.tracks.insert(
                        w.tid,
                        Track {
                            key,
                            since: now,
                            slices_since: s,
                            base_slices: s,
                            last_wake: now,
                            max_timeout_ms: w.timeout_ms,
                            wait: w.clone(),
                        },
                    );
                }
            }
        }
        self.tracks.retain(|tid, _| seen.contains(tid));
    }

    fn examine(
        &mut self,
        now: Instant,
        procs: &[ProcSnap],
        waits: &[ThreadWait],
        inspect: &mut dyn Inspect,
    ) -> Option<Stop> {
        let table = crate::runtimes::RUNTIMES.as_ref().ok()?;
        let window = now.duration_since(self.quiet_since);
        let slices: HashMap<i32, u64> = procs
            .iter()
            .flat_map(|p| p.threads.iter())
            .map(|t| (t.tid, t.slices))
            .collect();
        let mut runtime_of: BTreeMap<i32, Option<String>> = BTreeMap::new();
        for p in procs.iter().filter(|p| !p.is_zombie()) {
            runtime_of.insert(p.pid, inspect.runtime(p.pid));
        }
        let rt = |pid: i32| -> Option<&Runtime> {
            runtime_of
                .get(&pid)
                .and_then(|r| r.as_deref())
                .and_then(|n| table.named(n))
        };
        // Each live thread's part.
        let mut parts: Vec<ThreadPart> = Vec::new();
        for w in waits.iter().filter(|w| w.class != Class::Gone) {
            let Some(t) = self.tracks.get(&w.tid) else {
                continue;
            };
            // Held for the last stall window at least: a thread that entered its wait after the
            // tree went quiet (a worker still sleeping before it took its second lock) is stuck
            // once it has waited a whole window, however long the quiet period already was.
            let held_whole =
                now.duration_since(t.since) + Duration::from_millis(1) >= window.min(self.stall);
            let wakes = slices
                .get(&w.tid)
                .copied()
                .unwrap_or(0)
                .saturating_sub(t.base_slices);
            // A loop keeps waking to the end of the window; a burst at its start (a runtime
            // settling down) is not one.
            // A wait whose timeout reaches past half the window waits for a timer that has not
            // fired (a long sleep), whatever woke it before.
            let short = t
                .max_timeout_ms
                .is_none_or(|ms| u128::from(ms) * 2 < window.as_millis());
            let ticking =
                short && wakes >= LOOP_WAKES && now.duration_since(t.last_wake) * 3 < window;
            let runtime = rt(w.pid);
            let part = if runtime.is_some_and(|r| r.is_helper(&w.comm)) {
                Part::Helper
            } else {
                match w.class {
                    Class::Internal if held_whole => Part::Stuck,
                    Class::External if held_whole => Part::Outside,
                    // Woken again and again while the tree stayed quiet: a ticker or poll loop
                    // (also when it alternates between waits, as a runtime's scheduler does).
                    Class::Timed | Class::Running | Class::Internal if ticking => Part::TimedLoop,
                    Class::Timed if held_whole || !short => Part::TimedPending,
                    _ => Part::Moving,
                }
            };
            parts.push(ThreadPart {
                pid: w.pid,
                tid: w.tid,
                comm: w.comm.clone(),
                part,
                wait: w.call.clone(),
                runtime: runtime.map(|r| r.name.clone()),
                at: None,
                waits_for: None,
                held_by: None,
            });
        }
        let stuck: Vec<&ThreadWait> = waits
            .iter()
            .filter(|w| {
                parts
                    .iter()
                    .any(|p| p.tid == w.tid && p.part == Part::Stuck)
            })
            .collect();
        // JVMs whose own threads wait (HotSpot's monitor waiters re-check on a timer).
        let jvms: Vec<i32> = parts
            .iter()
            .filter(|p| matches!(p.part, Part::Stuck | Part::TimedLoop))
            .filter(|p| rt(p.pid).is_some_and(|r| r.name == "JVM"))
            .map(|p| p.pid)
            .collect();
        if stuck.is_empty() && jvms.is_empty() {
            self.conclusion = None;
            return None;
        }
        let mut finding = Finding {
            verdict: Verdict::NotProven,
            why: String::new(),
            decided_by: String::new(),
            window_seconds: round3(window.as_secs_f64()),
            cycle: Vec::new(),
            threads: Vec::new(),
            runtimes: Vec::new(),
            waits: waits.to_vec(),
        };
        // Where each thread waits, from the runtimes' own tools (CPython: py-spy lines).
        let mut asked: Vec<i32> = stuck.iter().map(|w| w.pid).chain(jvms).collect();
        asked.sort_unstable();
        asked.dedup();
        for &pid in &asked {
            if rt(pid).is_some_and(|r| r.name == "CPython") {
                name_python_lines(inspect, pid, &mut parts, &mut finding);
            }
        }

        // 1. Owners from memory, and a cycle among them.
        let mut edges: Vec<Edge> = Vec::new();
        let mut unread: Vec<String> = Vec::new();
        for w in &stuck {
            let mut tids = inspect.ns_tids(w.pid);
            if tids.is_empty() {
                tids = waits
                    .iter()
                    .filter(|x| x.pid == w.pid && x.class != Class::Gone)
                    .map(|x| (x.tid, x.tid))
                    .collect();
            }
            let Some(f) = w.futex else { continue };
            let mut held = owners::futex_owner(inspect, w.pid, &f, &tids)
                .or_else(|| owners::kernel_found_deadlock(inspect, w));
            if held.is_none() && rt(w.pid).is_some_and(|r| r.name == "CPython") {
                match owners::python_lock(inspect, w.pid, &f, table, &tids) {
                    Some(l) if l.rlock => {
                        held = l.owner.map(|owner| Held {
                            object: format!("RLock {:#x}", l.addr),
                            owner,
                            how: "CPython RLock owner (pthread_t → TID through glibc's thread descriptor)".into(),
                        });
                    }
                    Some(l) => unread.push(format!("threading.Lock {:#x} keeps no owner", l.addr)),
                    None => {}
                }
            }
            if let Some(h) = held {
                if let Some(p) = parts.iter_mut().find(|p| p.tid == w.tid) {
                    p.waits_for = Some(h.object.clone());
                    p.held_by = Some(h.owner);
                }
                edges.push(Edge {
                    waiter: (*w).clone(),
                    held: h,
                });
            }
        }
        confirm_by_stacks(inspect, table, &mut edges, &mut parts);
        if let Some(c) = owners::cycle(&edges) {
            let mut hows: Vec<&str> = c.iter().map(|e| e.held.how.as_str()).collect();
            hows.sort_unstable();
            hows.dedup();
            finding.verdict = Verdict::Deadlock;
            finding.decided_by = format!("a wait-for cycle; owners read from {}", hows.join("; "));
            finding.cycle = c
                .iter()
                .map(|e| CycleEdge {
                    pid: e.waiter.pid,
                    tid: e.waiter.tid,
                    comm: e.waiter.comm.clone(),
                    waits_for: e.held.object.clone(),
                    held_by: e.held.owner,
                    how: e.held.how.clone(),
                })
                .collect();
            let in_cycle: Vec<i32> = c.iter().map(|e| e.waiter.tid).collect();
            finding.why = format!(
                "wait-for cycle: {}; nothing else moved for {:.1}s (stall window){}",
                owners::describe(&c, &|tid| parts
                    .iter()
                    .find(|p| p.tid == tid)
                    .and_then(|p| p.at.clone())),
                window.as_secs_f64(),
                others(&parts, &in_cycle)
            );
            finding.threads = parts;
            return Some(Stop::Deadlock(Box::new(finding)));
        }

        // 2. The JVM's own report.
        for &pid in &asked {
            let Some(r) = rt(pid).filter(|r| r.name == "JVM") else {
                continue;
            };
            let report = match inspect.ask_runtime(pid, &r.name) {
                Ok(text) => {
                    let cycles = jvm::deadlocks(&text);
                    match cycles.first() {
                        Some(c) => {
                            finding.verdict = Verdict::Deadlock;
                            finding.decided_by = format!(
                                "{} Thread.print: \"Found one Java-level deadlock\"",
                                r.tool
                            );
                            let java: Vec<i32> = parts
                                .iter()
                                .filter(|p| {
                                    p.pid == pid && c.iter().any(|w| w.thread.starts_with(&p.comm))
                                })
                                .map(|p| p.tid)
                                .collect();
                            finding.why = format!(
                                "Java-level deadlock (the JVM's report): {}; nothing else moved for {:.1}s (stall window){}",
                                jvm::describe(c),
                                window.as_secs_f64(),
                                others(&parts, &java)
                            );
                            RuntimeReport {
                                runtime: r.name.clone(),
                                tool: r.tool.clone(),
                                pid,
                                said: "Found one Java-level deadlock".into(),
                                java_deadlock: c.clone(),
                                goroutines: Vec::new(),
                            }
                        }
                        None => {
                            let waiting: Vec<String> = jvm::threads(&text)
                                .into_iter()
                                .filter(|t| !r.is_helper(&t.name) && t.blocked())
                                .map(|t| t.describe())
                                .collect();
                            RuntimeReport {
                                runtime: r.name.clone(),
                                tool: r.tool.clone(),
                                pid,
                                said: format!(
                                    "no Java-level deadlock; waiting: {}",
                                    listed(waiting)
                                ),
                                java_deadlock: Vec::new(),
                                goroutines: Vec::new(),
                            }
                        }
                    }
                }
                Err(why) => RuntimeReport {
                    runtime: r.name.clone(),
                    tool: r.tool.clone(),
                    pid,
                    said: format!("not asked: {why}"),
                    java_deadlock: Vec::new(),
                    goroutines: Vec::new(),
                },
            };
            finding.runtimes.push(report);
            if finding.verdict == Verdict::Deadlock {
                finding.threads = parts;
                return Some(Stop::Deadlock(Box::new(finding)));
            }
        }

        // 3. Everything but the runtimes' helpers waits untimed for the tree itself.
        let all_stuck = parts
            .iter()
            .all(|p| matches!(p.part, Part::Stuck | Part::Helper));
        if all_stuck {
            let stuck_tids: Vec<i32> = stuck.iter().map(|w| w.tid).collect();
            finding.verdict = Verdict::Deadlock;
            finding.decided_by =
                "every thread but the runtimes' helpers in untimed waits only the tree could release".into();
            finding.why = format!(
                "{} thread(s) in untimed waits only the tree could release ({}) and nothing else moved for {:.1}s (stall window){}",
                stuck.len(),
                waits_summary(&parts),
                window.as_secs_f64(),
                others(&parts, &stuck_tids)
            );
            finding.threads = parts;
            return Some(Stop::Deadlock(Box::new(finding)));
        }

        // A Go program whose threads wait untimed while its timers fire: a timer can release
        // any goroutine (a ticker's channel, a function `time.AfterFunc` starts), and the Go
        // runtime's own check waits for its timers too. Not proven; its goroutines are named
        // at the deadline, where their dump (which ends a Go program) costs nothing.
        let go_timers = asked
            .iter()
            .any(|&pid| rt(pid).is_some_and(|r| r.name == "Go"))
            && parts.iter().any(|p| p.part == Part::TimedLoop);
        if go_timers {
            unread.push(
                "a Go program whose timers fire: one could still release its goroutines; they are named at the deadline".into(),
            );
        }

        // Not proven: say exactly what was seen.
        let stuck_tids: Vec<i32> = stuck.iter().map(|w| w.tid).collect();
        let why_not = if unread.is_empty() {
            "no owner readable".to_string()
        } else {
            unread.dedup();
            listed(unread)
        };
        finding.decided_by = format!("no wait-for cycle proven ({why_not})");
        finding.why = format!(
            "{} thread(s) stayed in untimed waits only the tree could release for {:.1}s ({}){}; no wait-for cycle proven ({why_not}): possibly a deadlock, not proven one",
            stuck.len(),
            window.as_secs_f64(),
            waits_summary(&parts),
            others(&parts, &stuck_tids)
        );
        finding.threads = parts;
        self.conclusion = Some(Box::new(finding));
        None
    }
}

/// Edges read from glibc's layouts count only when the waiter's stack sample, where one can be
/// taken, shows it inside the matching call (`pthread_mutex_lock`, `pthread_join`): a futex
/// word that merely looks like a mutex's is no edge. Without a sampler the edge stays, and says
/// it was not confirmed.
fn confirm_by_stacks(
    inspect: &mut dyn Inspect,
    table: &Runtimes,
    edges: &mut Vec<Edge>,
    parts: &mut [ThreadPart],
) {
    let glibc = |how: &str| {
        [
            "glibc mutex",
            "robust",
            "pthread_join",
            "priority-inheritance futex",
        ]
        .iter()
        .any(|k| how.contains(k))
    };
    let mut pids: Vec<i32> = edges
        .iter()
        .filter(|e| glibc(&e.held.how))
        .map(|e| e.waiter.pid)
        .collect();
    pids.sort_unstable();
    pids.dedup();
    if pids.is_empty() {
        return;
    }
    let sampled = inspect.sampler().is_ok();
    let stacks = if sampled {
        inspect.stacks(&pids)
    } else {
        Vec::new()
    };
    edges.retain_mut(|e| {
        if !glibc(&e.held.how) {
            return true;
        }
        let join = e.held.how.contains("pthread_join");
        let frames = stacks
            .iter()
            .filter(|p| p.pid == e.waiter.pid)
            .flat_map(|p| p.threads.iter())
            .find(|(tid, _)| *tid == e.waiter.tid)
            .map(|(_, f)| f)
            .filter(|f| !f.is_empty());
        let Some(frames) = frames else {
            e.held.how.push_str(if sampled {
                "; the stack sample showed no frames for it"
            } else {
                "; no stack sampler to confirm"
            });
            return true;
        };
        let want = if join {
            &table.glibc.join_frames
        } else {
            &table.glibc.mutex_frames
        };
        let inside = frames
            .iter()
            .any(|f| f.name().is_some_and(|n| want.matches(n)));
        if inside {
            e.held.how.push_str(if join {
                "; in pthread_join in its stack sample"
            } else {
                "; in pthread_mutex_lock in its stack sample"
            });
        } else if let Some(p) = parts.iter_mut().find(|p| p.tid == e.waiter.tid) {
            p.waits_for = None;
            p.held_by = None;
        }
        inside
    });
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// Ask py-spy where each thread of a CPython process is, and name the stuck ones' lines.
fn name_python_lines(
    inspect: &mut dyn Inspect,
    pid: i32,
    parts: &mut [ThreadPart],
    finding: &mut Finding,
) {
    let said = match inspect
        .ask_runtime(pid, "CPython")
        .and_then(|t| python::parse(&t))
    {
        Ok(threads) => {
            let ns = inspect.ns_tids(pid);
            for t in &threads {
                let host = ns
                    .iter()
                    .find(|(n, _)| *n == t.ns_tid)
                    .map(|(_, h)| *h)
                    .unwrap_or(t.ns_tid);
                if let Some(p) = parts.iter_mut().find(|p| p.tid == host) {
                    p.at = Some(python::at(t));
                }
            }
            format!("{} Python thread(s) named", threads.len())
        }
        Err(why) => format!("not asked: {why}"),
    };
    finding.runtimes.push(RuntimeReport {
        runtime: "CPython".into(),
        tool: "py-spy".into(),
        pid,
        said,
        java_deadlock: Vec::new(),
        goroutines: Vec::new(),
    });
}

const NAMED: usize = 6;

fn listed(items: Vec<String>) -> String {
    let n = items.len();
    let mut shown: Vec<String> = items.into_iter().take(NAMED).collect();
    if n > NAMED {
        shown.push(format!("… ({} more)", n - NAMED));
    }
    shown.join("; ")
}

/// The stuck threads' waits: `worker (deadlock.py:21) in futex(FUTEX_WAIT_BITSET, no timeout)`.
fn waits_summary(parts: &[ThreadPart]) -> String {
    listed(
        parts
            .iter()
            .filter(|p| p.part == Part::Stuck)
            .map(|p| {
                let at =
                    p.at.as_ref()
                        .map(|a| format!(" at {a}"))
                        .unwrap_or_default();
                let what = p
                    .waits_for
                    .as_ref()
                    .map(|o| format!(" for {o}"))
                    .unwrap_or_default();
                format!("{} {}{at}{what}: {}", p.tid, p.comm, p.wait)
            })
            .collect(),
    )
}

/// `; besides: 1 thread in a timed sleep loop, 13 JVM helper threads` for the threads not in
/// `named`.
fn others(parts: &[ThreadPart], named: &[i32]) -> String {
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for p in parts.iter().filter(|p| !named.contains(&p.tid)) {
        let key = match p.part {
            Part::Stuck => match &p.waits_for {
                Some(o) => format!("in an untimed wait for {o}"),
                None => "in untimed waits".to_string(),
            },
            Part::Helper => format!(
                "{} helper thread(s) (runtime housekeeping)",
                p.runtime.as_deref().unwrap_or("runtime")
            ),
            Part::TimedLoop => "in a timed sleep loop".into(),
            Part::TimedPending => format!("in a timed wait that has not ended ({})", p.wait),
            Part::Outside => format!("blocked outside the tree ({})", p.wait),
            Part::Moving => "moving".into(),
        };
        *counts.entry(key).or_default() += 1;
    }
    if counts.is_empty() {
        return String::new();
    }
    let list: Vec<String> = counts
        .into_iter()
        .map(|(k, n)| {
            if k.contains("helper thread(s)") {
                format!("{n} {k}")
            } else {
                format!("{n} thread(s) {k}")
            }
        })
        .collect();
    format!("; besides: {}", list.join(", "))
}

/// What a Go program's goroutine dump (taken at the deadline) says: its goroutines by what they
/// do — blocked in a lock, channel, `select` or wait group; busy (running or runnable: a poller
/// that never sleeps); asleep on a timer; in I/O or a system call — naming each with its
/// frame. Never a verdict: a timer could have released the blocked ones.
pub fn name_goroutines(dump: &str, pid: i32, table: &Runtimes) -> RuntimeReport {
    let gs = table
        .named("Go")
        .map(|go| {
            golang::parse(dump)
                .into_iter()
                .filter(|g| golang::part(g, go) != golang::Part::Runtime)
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    let name = |g: &golang::Goroutine| format!("goroutine {} [{}] {}", g.id, g.state, g.at);
    let mut groups: Vec<(&str, Vec<String>)> = vec![
        ("blocked", Vec::new()),
        ("busy", Vec::new()),
        ("asleep on a timer", Vec::new()),
        ("in I/O or a system call", Vec::new()),
        ("other", Vec::new()),
    ];
    let blocking = table.named("Go").map(|go| &go.blocking_states);
    for g in &gs {
        let group = match g.state.as_str() {
            _ if blocking.is_some_and(|b| b.matches(&g.state)) => 0,
            "running" | "runnable" => 1,
            "sleep" => 2,
            "IO wait" | "syscall" => 3,
            _ => 4,
        };
        groups[group].1.push(name(g));
    }
    let said = if gs.is_empty() {
        "no goroutine dump on the program's stderr (is it written elsewhere?)".to_string()
    } else {
        groups
            .into_iter()
            .filter(|(_, v)| !v.is_empty())
            .map(|(what, v)| format!("{what}: {}", listed(v)))
            .collect::<Vec<_>>()
            .join("; ")
    };
    RuntimeReport {
        runtime: "Go".into(),
        tool: "goroutine dump (SIGQUIT, which ended the program)".into(),
        pid,
        said,
        java_deadlock: Vec::new(),
        goroutines: gs,
    }
}

#[cfg(test)]
mod tests;
