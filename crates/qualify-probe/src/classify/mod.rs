//! Turning observations into a verdict. [`Watch`] follows the tree sample by sample (motion,
//! progress, CPU over the stall window, runnable threads, and through [`SpinWatch`] the stacks
//! of a tree that is busy but otherwise still) and calls a deadlock or livelock as soon as the
//! stall window proves it; [`compose`] decides the final outcome, flags and detail line from how
//! the run ended and the cgroup counters. Everything beyond the snapshot comes through
//! [`Inspect`], so the decisions are tested from tables.

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

use crate::backend::{Counters, Kind};
use crate::blocking::{Class, ThreadWait};
use crate::evidence::Sampling;
use crate::inspect::Inspect;
use crate::limits::{Limits, Progress, format_bytes};
use crate::result::{Flag, Outcome, TimeoutKind};
use crate::rules::RULES;
use crate::sample::ProcSnap;
use crate::spin::{Conclusion, Finding, SpinWatch, Stillness};
use crate::stall::{self, Signature, StallWatch, Stop};

/// Share of one allowed core that counts as "busy".
const BUSY_FRACTION: f64 = 0.5;

/// Why the supervision loop stopped before the main process ended by itself.
#[derive(Debug, Clone)]
pub enum Ending {
    /// The main process ended by itself.
    Exited,
    Interrupted,
    Timeout(TimeoutKind, String),
    Deadlock(Vec<ThreadWait>, Duration),
    /// Every thread spinning in a synchronization call or otherwise stuck (stack samples).
    SpinDeadlock(Box<Finding>),
    /// A partial deadlock: a wait-for cycle, a runtime's report, or every thread but the
    /// runtimes' helpers in untimed waits, while other threads may keep ticking.
    WaitFor(Box<stall::Finding>),
    Livelock {
        cores: f64,
        quiet: Duration,
    },
    /// The rlimit backend's memory watchdog killed the tree.
    Watchdog {
        used: u64,
    },
    /// The tree reached the pids guard (the ceiling set when none was asked for): qualify ended
    /// the run. `tasks`: the count seen, when counted from `/proc`.
    PidsExhausted {
        tasks: Option<u64>,
    },
    /// The writable places reached the disk ceiling: qualify ended the run.
    DiskFull {
        used: u64,
    },
}

/// Everything that changes when a tree makes any kind of progress.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Motion {
    cpu_ticks: u64,
    run_ns: u64,
    slices: u64,
    io_bytes: u64,
    tasks: Vec<i32>,
    output: u64,
    heartbeat: Option<(std::time::SystemTime, u64)>,
}

/// CPU over a window: cores the tree ran on, and cores it wanted (ran on plus waited for in
/// the run queue). On a machine whose other work takes the CPUs, a spinner runs on a third of
/// a core and waits for the rest: what it wanted, not what it got, says it is busy.
#[derive(Debug, Clone, Copy, Default)]
struct Load {
    cores: f64,
    wanted: f64,
}

/// Follows the tree across samples.
pub struct Watch {
    stall: Duration,
    progress: Progress,
    busy_cores: f64,
    pub allowed_cpus: f64,
    prev_at: Instant,
    prev_motion: Option<Motion>,
    quiet_since: Option<Instant>,
    last_progress: Instant,
    last_output_at: Option<Instant>,
    last_output: u64,
    last_heartbeat: Option<(std::time::SystemTime, u64)>,
    /// (when, CPU ns so far, run-queue wait ns so far) over the last stall window.
    cpu_hist: VecDeque<(Instant, u64, u64)>,
    prev_sched: HashMap<i32, (u64, u64)>,
    cpu_ns: u64,
    wait_ns: u64,
    pub samples: u64,
    runnable_sum: u64,
    max_runnable: u64,
    max_procs: usize,
    max_threads: usize,
    pub peak_anon: u64,
    pub max_tasks: usize,
    spin: SpinWatch,
    partial: StallWatch,
}

impl Watch {
    pub fn new(limits: &Limits, allowed_cpus: f64, start: Instant) -> Watch {
        Watch {
            stall: limits.stall(),
            progress: limits.progress,
            busy_cores: BUSY_FRACTION * allowed_cpus.min(1.0),
            allowed_cpus,
            prev_at: start,
            prev_motion: None,
            quiet_since: None,
            last_progress: start,
            last_output_at: None,
            last_output: 0,
            last_heartbeat: None,
            cpu_hist: VecDeque::new(),
            prev_sched: HashMap::new(),
            cpu_ns: 0,
            wait_ns: 0,
            samples: 0,
            runnable_sum: 0,
            max_runnable: 0,
            max_procs: 0,
            max_threads: 0,
            peak_anon: 0,
            max_tasks: 0,
            spin: SpinWatch::new(limits.stall(), start),
            partial: StallWatch::new(limits.stall(), start),
        }
    }

    /// The partial-stall examination's last finding (not proven) in the current quiet period.
    pub fn stall_conclusion(&self) -> Option<&stall::Finding> {
        self.partial.conclusion()
    }

    /// The spin-wait examination's last conclusion in the current still period.
    pub fn spin_conclusion(&self) -> Option<&Conclusion> {
        self.spin.conclusion()
    }

    /// Take one sample. Returns an ending when the stall window proves a deadlock or livelock.
    pub fn observe(
        &mut self,
        now: Instant,
        procs: &[ProcSnap],
        output: u64,
        heartbeat: Option<(std::time::SystemTime, u64)>,
        inspect: &mut dyn Inspect,
    ) -> Option<Ending> {
        self.samples += 1;
        let threads: Vec<_> = procs.iter().flat_map(|p| p.threads.iter()).collect();
        let live: Vec<_> = threads
            .iter()
            .filter(|t| !matches!(t.state, 'Z' | 'X'))
            .collect();
        let runnable = live.iter().filter(|t| t.state == 'R').count() as u64;
        self.runnable_sum += runnable;
        self.max_runnable = self.max_runnable.max(runnable);
        self.max_procs = self
            .max_procs
            .max(procs.iter().filter(|p| !p.is_zombie()).count());
        self.max_threads = self.max_threads.max(live.len());
        self.max_tasks = self.max_tasks.max(live.len());
        self.peak_anon = self
            .peak_anon
            .max(procs.iter().map(|p| p.anon_bytes).sum::<u64>());

        // CPU and run-queue wait, accumulated per thread so exiting threads never subtract.
        let mut sched = HashMap::with_capacity(threads.len());
        for t in &threads {
            let (pr, pw) = self.prev_sched.get(&t.tid).copied().unwrap_or((0, 0));
            self.cpu_ns += t.run_ns.saturating_sub(pr);
            self.wait_ns += t.wait_ns.saturating_sub(pw);
            sched.insert(t.tid, (t.run_ns.max(pr), t.wait_ns.max(pw)));
        }
        self.prev_sched = sched;
        self.cpu_hist.push_back((now, self.cpu_ns, self.wait_ns));
        while self.cpu_hist.len() > 2
            && self
                .cpu_hist
                .get(1)
                .is_some_and(|(t, _, _)| now.duration_since(*t) >= self.stall)
        {
            self.cpu_hist.pop_front();
        }

        // Progress signals.
        if output != self.last_output {
            self.last_output = output;
            self.last_output_at = Some(now);
            if self.progress == Progress::Output {
                self.last_progress = now;
            }
        }
        if heartbeat != self.last_heartbeat {
            if self.last_heartbeat.is_some() || heartbeat.is_some_and(|(_, len)| len > 0) {
                self.last_progress = now;
                self.last_output_at = Some(now);
            }
            self.last_heartbeat = heartbeat;
        }

        // Deadlock: every live thread in an untimed wait only the tree could release, and
        // nothing moved.
        let motion = Motion {
            cpu_ticks: threads.iter().map(|t| t.cpu_ticks).sum(),
            run_ns: threads.iter().map(|t| t.run_ns).sum(),
            slices: threads.iter().map(|t| t.slices).sum(),
            io_bytes: procs.iter().map(|p| p.io_bytes).sum(),
            tasks: live.iter().map(|t| t.tid).collect(),
            output,
            heartbeat,
        };
        let mut stuck = None;
        let mut waits_now: Option<Vec<ThreadWait>> = None;
        if !live.is_empty() && runnable == 0 {
            let waits = inspect.waits(procs);
            let all_internal = waits
                .iter()
                .filter(|w| w.class != Class::Gone)
                .all(|w| w.class == Class::Internal);
            if all_internal {
                if self.prev_motion.as_ref() == Some(&motion) {
                    let since = *self.quiet_since.get_or_insert(self.prev_at);
                    let quiet = now.duration_since(since);
                    if quiet >= self.stall {
                        stuck = Some(Ending::Deadlock(waits.clone(), quiet));
                    }
                } else {
                    self.quiet_since = Some(now);
                }
            } else {
                self.quiet_since = None;
            }
            waits_now = Some(waits);
        } else {
            self.quiet_since = None;
        }
        let interval = now.duration_since(self.prev_at);
        self.prev_motion = Some(motion);
        self.prev_at = now;
        if stuck.is_some() {
            return stuck;
        }

        // Partial deadlock: quiet, some threads in untimed waits for the whole window while
        // others may tick; decided from owners, the runtimes' reports and their helpers.
        let interval_cores = match (self.cpu_hist.len(), interval.as_secs_f64()) {
            (n, secs) if n >= 2 && secs > 0.0 => {
                let prev = self.cpu_hist.get(n - 2).map(|(_, c, _)| *c).unwrap_or(0);
                self.cpu_ns.saturating_sub(prev) as f64 / 1e9 / secs
            }
            _ => 0.0,
        };
        let mut tasks: Vec<i32> = live.iter().map(|t| t.tid).collect();
        tasks.sort_unstable();
        let sig = Signature {
            output,
            heartbeat,
            io_bytes: self.partial.progress_io(procs, inspect),
            tasks,
        };
        match self.partial.observe(
            now,
            procs,
            sig,
            interval_cores,
            waits_now.as_deref(),
            inspect,
        ) {
            Some(Stop::Deadlock(f)) => return Some(Ending::WaitFor(f)),
            None => {}
        }

        // Spin-wait deadlock: busy, but nothing else moves; decided from stack samples.
        let still = Stillness {
            output,
            heartbeat,
            io_bytes: procs.iter().map(|p| p.io_bytes).sum(),
            faults: procs.iter().map(|p| p.faults).sum(),
            anon_bytes: procs.iter().map(|p| p.anon_bytes).sum(),
            tasks: live.iter().map(|t| t.tid).collect(),
        };
        let rules = RULES.as_ref();
        if let Some(finding) = self.spin.observe(now, procs, still, inspect, rules) {
            return Some(Ending::SpinDeadlock(finding));
        }

        // Livelock: busy CPU and no progress for the stall window (needs a progress signal);
        // a spin-wait examination under way finishes first (it may find a deadlock).
        if self.progress != Progress::None && !self.spin.examining() {
            let quiet = now.duration_since(self.last_progress);
            if quiet >= self.stall
                && let Some(load) = self.window_load(now, true)
                && load.wanted >= self.busy_cores
            {
                return Some(Ending::Livelock {
                    cores: load.cores,
                    quiet,
                });
            }
        }
        None
    }

    /// Cores used, and cores wanted, over the last stall window. With `full`, `None` until a
    /// whole window has been observed; otherwise over whatever has been observed.
    fn window_load(&self, now: Instant, full: bool) -> Option<Load> {
        let (t0, c0, w0) = *self.cpu_hist.front()?;
        let span = now.duration_since(t0);
        if full && span + Duration::from_millis(1) < self.stall {
            return None;
        }
        let (_, c1, w1) = *self.cpu_hist.back()?;
        if span.is_zero() {
            return None;
        }
        let secs = span.as_secs_f64();
        let cores = c1.saturating_sub(c0) as f64 / 1e9 / secs;
        let waited = w1.saturating_sub(w0) as f64 / 1e9 / secs;
        Some(Load {
            cores,
            wanted: cores + waited,
        })
    }

    /// What the tree was doing when the deadline passed.
    pub fn timeout_kind(
        &self,
        now: Instant,
        procs: &[ProcSnap],
        inspect: &mut dyn Inspect,
    ) -> (TimeoutKind, String) {
        if let Some(at) = self.last_output_at
            && now.duration_since(at) < self.stall
        {
            return (
                TimeoutKind::Progressing,
                "still making progress (output or heartbeat within the stall window)".into(),
            );
        }
        if let Some(Conclusion::Ambiguous(f)) = self.spin.conclusion() {
            return (TimeoutKind::AmbiguousSpin, f.why.clone());
        }
        let load = self.window_load(now, false).unwrap_or_default();
        let cores = load.cores;
        if load.wanted >= self.busy_cores {
            let unexamined = match self.spin.conclusion() {
                Some(Conclusion::Unexamined(why)) => {
                    format!("; not examined for spin-waits in synchronization calls: {why}")
                }
                _ => String::new(),
            };
            // A tree kept off the CPU by a busy machine is as busy as the CPU it waited for.
            let starved = if load.wanted >= cores + 0.1 {
                format!(", wanting {:.2} (the rest waiting for a CPU)", load.wanted)
            } else {
                String::new()
            };
            return (
                TimeoutKind::Busy,
                format!("busy ({cores:.2} cores{starved}) without a progress signal{unexamined}"),
            );
        }
        if let Some(f) = self.partial.conclusion() {
            return (TimeoutKind::AmbiguousWait, f.why.clone());
        }
        let waits = inspect.waits(procs);
        let external: Vec<&ThreadWait> = waits
            .iter()
            .filter(|w| w.class == Class::External)
            .collect();
        let internal = waits.iter().filter(|w| w.class == Class::Internal).count();
        let running = waits.iter().any(|w| w.class == Class::Running);
        if !external.is_empty() && !running {
            return (
                TimeoutKind::BlockedExternal,
                format!(
                    "blocked on something outside the tree: {}",
                    external
                        .iter()
                        .take(3)
                        .map(|w| format!("{} {}", w.comm, w.call))
                        .collect::<Vec<_>>()
                        .join("; ")
                ),
            );
        }
        let timed = waits.iter().filter(|w| w.class == Class::Timed).count();
        if internal > 0 {
            // Untimed waits, but not proven stuck for a whole quiet window (the tree moved).
            return (
                TimeoutKind::Idle,
                format!(
                    "idle ({cores:.2} cores): {internal} thread(s) in untimed waits the tree could release, {timed} in timed waits, {} running; the tree did not stay quiet for a whole stall window",
                    waits.iter().filter(|w| w.class == Class::Running).count()
                ),
            );
        }
        (
            TimeoutKind::Idle,
            format!("idle ({cores:.2} cores, timed waits only)"),
        )
    }

    fn oversubscribed(&self) -> bool {
        if self.samples == 0 {
            return false;
        }
        // Whole CPUs: a fractional ceiling throttles one thread, it does not oversubscribe it
        // (and throttled time shows up as run-queue wait).
        let cpus = self.allowed_cpus.ceil().max(1.0);
        let mean = self.runnable_sum as f64 / self.samples as f64;
        let crowded = self.samples >= 3 && mean >= 2.0 * cpus + 1.0;
        let queued = self.wait_ns > self.cpu_ns
            && self.cpu_ns >= 200_000_000
            && self.max_runnable as f64 > cpus;
        crowded || queued
    }

    pub fn stats(&self) -> Sampling {
        Sampling {
            samples: self.samples,
            max_processes: self.max_procs,
            max_threads: self.max_threads,
            max_runnable_threads: self.max_runnable,
            mean_runnable_threads: if self.samples > 0 {
                self.runnable_sum as f64 / self.samples as f64
            } else {
                0.0
            },
            allowed_cpus: self.allowed_cpus,
            sampled_run_seconds: self.cpu_ns as f64 / 1e9,
            sampled_runqueue_wait_seconds: self.wait_ns as f64 / 1e9,
        }
    }
}

/// Inputs of the final decision.
pub struct Facts<'a> {
    pub ending: &'a Ending,
    /// Raw wait status of the main process, if it was reaped.
    pub status: Option<i32>,
    pub counters: &'a Counters,
    pub kind: Kind,
    pub limits: &'a Limits,
    pub watch: &'a Watch,
    pub leaked: usize,
    pub truncated: bool,
    pub wall: Duration,
    /// The writable places reached the disk ceiling (seen by the watch, also after the main
    /// process ended).
    pub disk_hit: bool,
    /// A runtime's fatal report from the program's stderr ([`crate::reports::judge`]): names the
    /// failure of a run that ended by itself the way that runtime ends one (`decided`), else
    /// context for the detail of a run qualify stopped.
    pub report: Option<&'a crate::reports::Reported>,
}

/// Outcome, exit code, signal, timeout kind, flags and the detail line.
pub struct Decision {
    pub outcome: Outcome,
    pub exit_code: Option<i32>,
    pub signal: Option<String>,
    pub timeout_kind: Option<TimeoutKind>,
    pub flags: Vec<Flag>,
    pub detail: String,
}

const CRASH_SIGNALS: [i32; 5] = [
    libc::SIGSEGV,
    libc::SIGABRT,
    libc::SIGBUS,
    libc::SIGFPE,
    libc::SIGILL,
];

/// Whether `sig` is one a program raises when it crashes (the `crash` outcome).
pub fn is_crash_signal(sig: i32) -> bool {
    CRASH_SIGNALS.contains(&sig)
}

/// `SIGSEGV` for 11; `signal N` for a number this platform does not name.
pub fn signal_name(sig: i32) -> String {
    nix::sys::signal::Signal::try_from(sig)
        .map(|s| s.as_str().to_string())
        .unwrap_or_else(|_| format!("signal {sig}"))
}

pub fn compose(f: &Facts) -> Decision {
    let mut exit_code = None;
    let mut signal = None;
    let mut status_text = String::from("did not end by itself");
    if let Some(st) = f.status {
        if libc::WIFEXITED(st) {
            let code = libc::WEXITSTATUS(st);
            exit_code = Some(code);
            status_text = format!("exited with status {code}");
        } else if libc::WIFSIGNALED(st) {
            let sig = libc::WTERMSIG(st);
            signal = Some(signal_name(sig));
            status_text = format!("was killed by {}", signal_name(sig));
        }
    }
    let mut timeout_kind = None;
    let oom = f.counters.oom_kills;
    let (outcome, detail) = match f.ending {
        Ending::Interrupted => (
            Outcome::Interrupted,
            format!(
                "qualify was interrupted after {:.1}s; the process tree was killed (says nothing about the artifact)",
                f.wall.as_secs_f64()
            ),
        ),
        Ending::Watchdog { used } => (
            Outcome::OomKilled,
            format!(
                "memory watchdog: the tree's anonymous memory reached {} over the {} ceiling; qualify killed the tree (user-space enforcement)",
                format_bytes(*used),
                format_bytes(f.limits.memory_bytes.unwrap_or(0))
            ),
        ),
        _ if oom > 0 => {
            let after = match f.ending {
                Ending::Exited => format!("; the main process then {status_text}"),
                Ending::Timeout(..) => "; the tree then ran into the deadline".into(),
                Ending::Deadlock(..) | Ending::SpinDeadlock(..) | Ending::WaitFor(..) => {
                    "; the tree then deadlocked".into()
                }
                Ending::Livelock { .. } => "; the tree then livelocked".into(),
                _ => String::new(),
            };
            (
                Outcome::OomKilled,
                format!(
                    "the {} memory ceiling (kernel) killed {oom} process(es) in the tree{after}",
                    f.limits
                        .memory_bytes
                        .map(format_bytes)
                        .unwrap_or_else(|| "host".into())
                ),
            )
        }
        Ending::PidsExhausted { tasks } => (
            Outcome::PidsExhausted,
            format!(
                "the tree reached the {} pids ceiling qualify sets when the spec sets none{}; qualify ended the run (set [limits] pids to make it a condition under test)",
                f.limits.pids.unwrap_or(0),
                tasks.map(|t| format!(" ({t} tasks)")).unwrap_or_default()
            ),
        ),
        Ending::DiskFull { used } => (
            Outcome::DiskFull,
            format!(
                "the tree's writes to its writable places reached the {} disk ceiling{} ({} counted); qualify ended the run",
                format_bytes(f.limits.disk_bytes.unwrap_or(0)),
                if f.limits.is_guard(qualify_model::Ceiling::Disk) {
                    " qualify sets when the spec sets none ([limits] disk)"
                } else {
                    ""
                },
                format_bytes(*used)
            ),
        ),
        _ if f.disk_hit => (
            Outcome::DiskFull,
            format!(
                "the writable places reached the {} disk ceiling (writes failed: no space left on device); the main process then {status_text}",
                format_bytes(f.limits.disk_bytes.unwrap_or(0))
            ),
        ),
        Ending::Deadlock(waits, quiet) => (Outcome::Deadlock, deadlock_detail(waits, *quiet)),
        Ending::SpinDeadlock(finding) => (Outcome::Deadlock, finding.why.clone()),
        Ending::WaitFor(finding) => (Outcome::Deadlock, finding.why.clone()),
        Ending::Livelock { cores, quiet } => (
            Outcome::Livelock,
            format!(
                "CPU busy ({cores:.2} cores) with no {} for {:.1}s (stall window)",
                match f.limits.progress {
                    Progress::Heartbeat => "heartbeat",
                    _ => "output",
                },
                quiet.as_secs_f64()
            ),
        ),
        Ending::Timeout(kind, why) => {
            timeout_kind = Some(*kind);
            (
                Outcome::Timeout,
                format!("deadline of {:.1}s passed; {why}", f.limits.timeout_seconds),
            )
        }
        Ending::Exited => match (f.status, decided(f.report)) {
            (Some(st), _) if libc::WIFEXITED(st) && libc::WEXITSTATUS(st) == 0 => {
                (Outcome::Ok, status_text.clone())
            }
            // The runtime's own report names the failure (never an `ok` run's: see above).
            (Some(_), Some((outcome, r))) => (outcome, format!("{}; {status_text}", r.sentence)),
            (Some(st), None) if libc::WIFEXITED(st) => {
                let code = libc::WEXITSTATUS(st);
                let hint = if code > 128 && CRASH_SIGNALS.contains(&(code - 128)) {
                    format!(
                        " (128+{}: a {} behind a wrapper shell?)",
                        code - 128,
                        signal_name(code - 128)
                    )
                } else {
                    String::new()
                };
                (Outcome::ExitFailure, format!("{status_text}{hint}"))
            }
            (Some(st), None)
                if libc::WIFSIGNALED(st) && CRASH_SIGNALS.contains(&libc::WTERMSIG(st)) =>
            {
                (Outcome::Crash, format!("crashed: {status_text}"))
            }
            (Some(_), None) => (
                Outcome::Killed,
                format!("{status_text}, a signal qualify did not send"),
            ),
            (None, _) => (
                Outcome::Killed,
                "ended, but its wait status was lost (reaped elsewhere)".into(),
            ),
        },
    };

    // Beside a verdict qualify reached itself, a report on stderr is context.
    let detail = match f.report {
        Some(r) if !r.decided && outcome != Outcome::Ok && f.ending_stopped() => {
            format!(
                "{detail}; stderr carried a runtime's report: {}",
                r.sentence
            )
        }
        _ => detail,
    };

    let mut flags = Vec::new();
    if f.watch.oversubscribed() {
        flags.push(Flag::Oversubscribed);
    }
    if f.limits.cpus.is_some() && f.counters.nr_throttled.unwrap_or(0) > 0 {
        flags.push(Flag::CpuThrottled);
    }
    let pressure_usec = f.counters.memory_pressure_some_usec.unwrap_or(0);
    let wall_usec = f.wall.as_micros() as u64;
    if (f.limits.memory_bytes.is_some() && f.counters.memory_failcnt.unwrap_or(0) > 0)
        || (pressure_usec >= 50_000 && pressure_usec * 20 >= wall_usec)
    {
        flags.push(Flag::MemoryPressure);
    }
    if pids_hit(f.kind, f.limits, f.counters, f.watch)
        || matches!(f.ending, Ending::PidsExhausted { .. })
    {
        flags.push(Flag::PidsLimitHit);
    }
    if f.disk_hit || matches!(f.ending, Ending::DiskFull { .. }) {
        flags.push(Flag::DiskLimitHit);
    }
    if f.leaked > 0 {
        flags.push(Flag::LeakedProcesses);
    }
    if f.truncated {
        flags.push(Flag::OutputTruncated);
    }
    flags.sort_unstable();
    Decision {
        outcome,
        exit_code,
        signal,
        timeout_kind,
        flags,
        detail,
    }
}

/// A report that names the failure: its outcome (never `ok`).
fn decided(
    report: Option<&crate::reports::Reported>,
) -> Option<(Outcome, &crate::reports::Reported)> {
    let r = report.filter(|r| r.decided)?;
    r.outcome.filter(|o| *o != Outcome::Ok).map(|o| (o, r))
}

impl Facts<'_> {
    /// Whether qualify (or the kernel) ended the run, not the program itself.
    fn ending_stopped(&self) -> bool {
        !matches!(self.ending, Ending::Exited | Ending::Interrupted)
    }
}

/// Whether a pids ceiling refused a task: the kernel's `pids.events`, or (rlimit) more tasks
/// sampled than the ceiling.
pub fn pids_hit(kind: Kind, limits: &Limits, counters: &Counters, watch: &Watch) -> bool {
    match kind {
        Kind::Rlimit => limits.pids.is_some_and(|p| watch.max_tasks as u64 > p),
        _ => counters.pids_max_events.unwrap_or(0) > 0,
    }
}

fn deadlock_detail(waits: &[ThreadWait], quiet: Duration) -> String {
    let live: Vec<&ThreadWait> = waits.iter().filter(|w| w.class != Class::Gone).collect();
    let mut procs: Vec<i32> = live.iter().map(|w| w.pid).collect();
    procs.sort_unstable();
    procs.dedup();
    let mut calls: Vec<String> = Vec::new();
    let mut counts: HashMap<String, usize> = HashMap::new();
    for w in &live {
        let key = w.call.split('(').next().unwrap_or("").to_string();
        let key = if w.call.contains("pipe:") {
            format!("{key} on a pipe")
        } else {
            key
        };
        if !counts.contains_key(&key) {
            calls.push(key.clone());
        }
        *counts.entry(key).or_default() += 1;
    }
    let summary: Vec<String> = calls
        .iter()
        .map(|c| format!("{c} ×{}", counts.get(c).copied().unwrap_or(0)))
        .collect();
    format!(
        "all {} thread(s) in {} process(es) blocked in untimed waits only the tree could release ({}) and nothing moved for {:.1}s (stall window)",
        live.len(),
        procs.len(),
        summary.join(", "),
        quiet.as_secs_f64()
    )
}

#[cfg(test)]
mod tests;
