//! Scheduler-level perturbation, from outside the program, for every kind of program (static
//! binaries, Go, the JVM, Python — whatever the shim cannot reach): a thread of qualify that,
//! on a seeded clock (at once, then a step every 0.5–4 ms), opens windows of
//! - `SCHED_IDLE` on one of the tree's threads (it runs only when nothing else wants the CPU),
//! - nice 19 on one thread,
//! - an affinity squeeze: every thread of the tree on one CPU,
//! - a CPU quota burst: the tree's cgroup throttled to 10% of a CPU (when it has one with CPU
//!   bandwidth control),
//! - a freeze: the whole tree stopped (through the caller's [`Tree::freeze`]: the binary uses
//!   the cgroup freezer, which the program cannot see, else SIGSTOP; either marks it stopped on
//!   purpose, so no stall verdict is drawn from it).
//!
//! Each window is undone when it ends and every one still open when the run ends (a thread
//! gone meanwhile needs nothing). Freezes and quota bursts stop the tree: no new one opens once
//! their time so far and its own would exceed the run's budget, so the run is late by about
//! that much (a window can end late by qualify's own scheduling latency: the campaign's
//! deadline allows twice the budget). What applied, how often,
//! and what could not (and why) is in the [`SchedReport`].

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::recipe::Rng;

/// The running program as the scheduler-level perturbation sees it.
pub trait Tree: Send + Sync {
    /// The tree's processes (host pids) now; empty before it started.
    fn pids(&self) -> Vec<i32>;
    /// Stop every process of the tree on purpose; `false` when it cannot.
    fn freeze(&self) -> bool;
    /// Continue it after [`Tree::freeze`].
    fn thaw(&self);
    /// The tree's cgroup directory with CPU bandwidth control (v2 `cpu.max` or v1
    /// `cpu.cfs_quota_us`), if it has one.
    fn cpu_cgroup(&self) -> Option<PathBuf>;
}

/// Mechanism names, as reports and receipts write them.
pub const IDLE: &str = "SCHED_IDLE";
pub const NICE: &str = "nice 19";
pub const SQUEEZE: &str = "affinity squeeze";
pub const QUOTA: &str = "cpu quota burst";
pub const FREEZE: &str = "freeze";
/// The program started confined to one CPU (the launcher's affinity at exec).
pub const START_SQUEEZE: &str = "affinity squeeze from exec";

/// What the scheduler-level perturbation did in one run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SchedReport {
    /// Windows opened, by mechanism.
    pub applied: BTreeMap<&'static str, u64>,
    /// Mechanisms that could not apply, with the last reason.
    pub refused: BTreeMap<&'static str, String>,
    /// Time the tree was stopped or throttled on purpose (freezes, quota bursts).
    pub stopped: Duration,
}

impl SchedReport {
    /// `SCHED_IDLE ×3, freeze ×1` (or `nothing`).
    pub fn summary(&self) -> String {
        if self.applied.is_empty() {
            return "nothing".into();
        }
        self.applied
            .iter()
            .map(|(k, n)| format!("{k} ×{n}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The running perturbation of one run.
pub struct Chaos {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<SchedReport>>,
}

impl Chaos {
    /// Start perturbing `tree` from `seed`; freezes and quota bursts together stay within
    /// `budget`.
    pub fn start(seed: u64, budget: Duration, tree: Arc<dyn Tree>) -> Chaos {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let handle = std::thread::Builder::new()
            .name("qualify-perturb".into())
            .spawn(move || Runner::new(seed, budget, tree).run(&flag))
            .ok();
        Chaos { stop, handle }
    }

    /// Stop, undo every open window, and say what was done.
    pub fn stop(mut self) -> SchedReport {
        self.stop.store(true, Ordering::Relaxed);
        match self.handle.take() {
            Some(h) => h.join().unwrap_or_default(),
            None => {
                let mut report = SchedReport::default();
                report
                    .refused
                    .insert("scheduler", "qualify could not start its thread".into());
                report
            }
        }
    }
}

impl Drop for Chaos {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// The threads (tids) of `pids`.
fn threads(pids: &[i32]) -> Vec<i32> {
    let mut out = Vec::new();
    for pid in pids {
        if let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/task")) {
            out.extend(
                dir.flatten()
                    .filter_map(|e| e.file_name().to_str().and_then(|s| s.parse::<i32>().ok())),
            );
        }
    }
    out
}

fn errno() -> std::io::Error {
    std::io::Error::last_os_error()
}

/// An open window and how to undo it.
enum Window {
    Idle {
        tid: i32,
        policy: i32,
        prio: i32,
    },
    Nice {
        tid: i32,
        nice: i32,
    },
    Squeeze {
        saved: HashMap<i32, libc::cpu_set_t>,
        default: libc::cpu_set_t,
        pids: Vec<i32>,
    },
    Quota {
        dir: PathBuf,
        saved: Vec<(&'static str, String)>,
    },
    Freeze,
}

struct Runner {
    rng: Rng,
    budget: Duration,
    tree: Arc<dyn Tree>,
    report: SchedReport,
    open: Vec<(Instant, Instant, Window)>,
}

fn cpu_set_of(tid: i32) -> Option<libc::cpu_set_t> {
    // SAFETY: a zeroed cpu_set_t is valid; the kernel fills it.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointer and size.
    let r = unsafe { libc::sched_getaffinity(tid, std::mem::size_of_val(&set), &mut set) };
    (r == 0).then_some(set)
}

fn set_cpus(tid: i32, set: &libc::cpu_set_t) -> bool {
    // SAFETY: valid pointer and size.
    unsafe { libc::sched_setaffinity(tid, std::mem::size_of_val(set), set) == 0 }
}

fn cpus_in(set: &libc::cpu_set_t) -> Vec<usize> {
    (0..libc::CPU_SETSIZE as usize)
        // SAFETY: index within the set's size.
        .filter(|&c| unsafe { libc::CPU_ISSET(c, set) })
        .collect()
}

/// The cgroup files that set the CPU quota, and their values now.
fn quota_files(dir: &Path) -> Option<Vec<(&'static str, String)>> {
    let read = |f: &str| {
        std::fs::read_to_string(dir.join(f))
            .ok()
            .map(|s| s.trim().to_string())
    };
    if let Some(v) = read("cpu.max") {
        return Some(vec![("cpu.max", v)]);
    }
    let quota = read("cpu.cfs_quota_us")?;
    let period = read("cpu.cfs_period_us")?;
    Some(vec![
        ("cpu.cfs_period_us", period),
        ("cpu.cfs_quota_us", quota),
    ])
}

impl Runner {
    fn new(seed: u64, budget: Duration, tree: Arc<dyn Tree>) -> Runner {
        Runner {
            rng: Rng::new(seed ^ 0x7363_6865_645f_6368),
            budget,
            tree,
            report: SchedReport::default(),
            open: Vec::new(),
        }
    }

    fn refused(&mut self, what: &'static str, why: impl Into<String>) {
        self.report.refused.insert(what, why.into());
    }

    fn applied(&mut self, what: &'static str) {
        *self.report.applied.entry(what).or_default() += 1;
    }

    fn stopping_budget_left(&self) -> Duration {
        let open: Duration = self
            .open
            .iter()
            .filter(|(_, _, w)| matches!(w, Window::Freeze | Window::Quota { .. }))
            .map(|(from, until, _)| until.saturating_duration_since(*from))
            .sum();
        self.budget
            .saturating_sub(self.report.stopped)
            .saturating_sub(open)
    }

    fn run(mut self, stop: &AtomicBool) -> SchedReport {
        // Wait for the program to start.
        let mut pids = Vec::new();
        while !stop.load(Ordering::Relaxed) {
            pids = self.tree.pids();
            if !pids.is_empty() {
                break;
            }
            std::thread::sleep(Duration::from_micros(200));
        }
        // The first window opens as soon as the program is there: a short run is over before
        // a first tick would end.
        if !pids.is_empty() {
            self.step(&pids);
        }
        while !stop.load(Ordering::Relaxed) {
            let tick = Duration::from_micros(self.rng.range(500, 4000));
            let until = Instant::now() + tick;
            while !stop.load(Ordering::Relaxed) && Instant::now() < until {
                std::thread::sleep(Duration::from_micros(250));
                self.close(false);
            }
            if stop.load(Ordering::Relaxed) {
                break;
            }
            pids = self.tree.pids();
            if pids.is_empty() {
                break;
            }
            self.step(&pids);
        }
        self.close(true);
        self.report
    }

    /// Open one window, chosen by the seed.
    fn step(&mut self, pids: &[i32]) {
        let tids = threads(pids);
        let Some(&tid) = self.rng.pick(&tids) else {
            return;
        };
        let roll = self.rng.range(0, 99);
        let window = Duration::from_micros(self.rng.range(2000, 20_000));
        let now = Instant::now();
        let busy = |kind: fn(&Window) -> bool, open: &[(Instant, Instant, Window)]| {
            open.iter().any(|(_, _, w)| kind(w))
        };
        match roll {
            0..=29 => {
                if self
                    .open
                    .iter()
                    .any(|(_, _, w)| matches!(w, Window::Idle { tid: t, .. } if *t == tid))
                {
                    return;
                }
                // SAFETY: plain syscalls on a tid.
                let policy = unsafe { libc::sched_getscheduler(tid) };
                let mut param = libc::sched_param { sched_priority: 0 };
                // SAFETY: valid pointer.
                let got = unsafe { libc::sched_getparam(tid, &mut param) };
                if policy < 0 || got != 0 {
                    return; // the thread ended meanwhile
                }
                let idle = libc::sched_param { sched_priority: 0 };
                // SAFETY: valid pointer.
                if unsafe { libc::sched_setscheduler(tid, libc::SCHED_IDLE, &idle) } == 0 {
                    self.applied(IDLE);
                    self.open.push((
                        now,
                        now + window,
                        Window::Idle {
                            tid,
                            policy,
                            prio: param.sched_priority,
                        },
                    ));
                } else {
                    let e = errno();
                    if e.raw_os_error() != Some(libc::ESRCH) {
                        self.refused(IDLE, e.to_string());
                    }
                }
            }
            30..=49 => {
                if self
                    .open
                    .iter()
                    .any(|(_, _, w)| matches!(w, Window::Nice { tid: t, .. } if *t == tid))
                {
                    return;
                }
                // SAFETY: errno reset, then a plain syscall (−1 is a valid nice value).
                let nice = unsafe {
                    *libc::__errno_location() = 0;
                    libc::getpriority(libc::PRIO_PROCESS, tid as libc::id_t)
                };
                if errno().raw_os_error().unwrap_or(0) != 0 {
                    return;
                }
                // SAFETY: plain syscall.
                if unsafe { libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, 19) } == 0 {
                    self.applied(NICE);
                    self.open
                        .push((now, now + window, Window::Nice { tid, nice }));
                } else {
                    let e = errno();
                    if e.raw_os_error() != Some(libc::ESRCH) {
                        self.refused(NICE, e.to_string());
                    }
                }
            }
            50..=69 => {
                if busy(|w| matches!(w, Window::Squeeze { .. }), &self.open) {
                    return;
                }
                let Some(default) = cpu_set_of(pids[0]) else {
                    return;
                };
                let cpus = cpus_in(&default);
                if cpus.len() < 2 {
                    self.refused(SQUEEZE, "the tree may use one CPU only: nothing to squeeze");
                    return;
                }
                let Some(&cpu) = self.rng.pick(&cpus) else {
                    return;
                };
                // SAFETY: a zeroed cpu_set_t is valid.
                let mut one: libc::cpu_set_t = unsafe { std::mem::zeroed() };
                // SAFETY: index within the set.
                unsafe { libc::CPU_SET(cpu, &mut one) };
                let mut saved = HashMap::new();
                for &t in &tids {
                    if let Some(set) = cpu_set_of(t)
                        && set_cpus(t, &one)
                    {
                        saved.insert(t, set);
                    }
                }
                if saved.is_empty() {
                    self.refused(SQUEEZE, errno().to_string());
                    return;
                }
                self.applied(SQUEEZE);
                let window = window + Duration::from_micros(self.rng.range(0, 10_000));
                self.open.push((
                    now,
                    now + window,
                    Window::Squeeze {
                        saved,
                        default,
                        pids: pids.to_vec(),
                    },
                ));
            }
            70..=84 => {
                if busy(|w| matches!(w, Window::Quota { .. }), &self.open) {
                    return;
                }
                let window = Duration::from_micros(self.rng.range(5000, 25_000));
                if self.stopping_budget_left() < window {
                    return;
                }
                let Some(dir) = self.tree.cpu_cgroup() else {
                    self.refused(QUOTA, "the tree has no cgroup with CPU bandwidth control (rlimit backend, or no cpu controller)");
                    return;
                };
                let Some(saved) = quota_files(&dir) else {
                    self.refused(
                        QUOTA,
                        format!("{} has no cpu.max or cpu.cfs_quota_us", dir.display()),
                    );
                    return;
                };
                let ok = if saved[0].0 == "cpu.max" {
                    std::fs::write(dir.join("cpu.max"), "1000 10000").is_ok()
                } else {
                    // Quota first: a period shorter than the current quota would be refused.
                    std::fs::write(dir.join("cpu.cfs_quota_us"), "1000").is_ok()
                        && std::fs::write(dir.join("cpu.cfs_period_us"), "10000").is_ok()
                };
                if ok {
                    self.applied(QUOTA);
                    self.open
                        .push((now, now + window, Window::Quota { dir, saved }));
                } else {
                    let why = errno().to_string();
                    self.restore_quota(&dir, &saved);
                    self.refused(QUOTA, why);
                }
            }
            _ => {
                if busy(|w| matches!(w, Window::Freeze), &self.open) {
                    return;
                }
                let window = Duration::from_micros(self.rng.range(1000, 5000));
                if self.stopping_budget_left() < window {
                    return;
                }
                if self.tree.freeze() {
                    self.applied(FREEZE);
                    self.open.push((now, now + window, Window::Freeze));
                } else {
                    self.refused(FREEZE, "the tree could not be stopped (not running)");
                }
            }
        }
    }

    fn restore_quota(&self, dir: &Path, saved: &[(&'static str, String)]) {
        for (file, value) in saved.iter().rev() {
            let _ = std::fs::write(dir.join(file), value);
        }
    }

    /// Undo the windows that are over (every one with `all`).
    fn close(&mut self, all: bool) {
        let now = Instant::now();
        let mut keep = Vec::new();
        for (from, until, w) in std::mem::take(&mut self.open) {
            if !all && until > now {
                keep.push((from, until, w));
                continue;
            }
            match w {
                Window::Idle { tid, policy, prio } => {
                    let param = libc::sched_param {
                        sched_priority: prio,
                    };
                    // SAFETY: valid pointer; a thread gone meanwhile returns ESRCH.
                    unsafe { libc::sched_setscheduler(tid, policy, &param) };
                }
                Window::Nice { tid, nice } => {
                    // SAFETY: plain syscall.
                    unsafe { libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, nice) };
                }
                Window::Squeeze {
                    saved,
                    default,
                    pids,
                } => {
                    // Threads started during the squeeze inherited it: they get the tree's.
                    for t in threads(&pids) {
                        set_cpus(t, saved.get(&t).unwrap_or(&default));
                    }
                }
                Window::Quota { dir, saved } => {
                    self.restore_quota(&dir, &saved);
                    self.report.stopped += now.saturating_duration_since(from);
                }
                Window::Freeze => {
                    self.tree.thaw();
                    self.report.stopped += now.saturating_duration_since(from);
                }
            }
        }
        self.open = keep;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// A real child process (two threads of `sleep`-like work: `sh -c 'sleep 5'`).
    struct Child {
        pid: i32,
        frozen: Mutex<u32>,
    }

    impl Tree for Child {
        fn pids(&self) -> Vec<i32> {
            vec![self.pid]
        }
        fn freeze(&self) -> bool {
            *self.frozen.lock().unwrap() += 1;
            // SAFETY: signalling our own child.
            unsafe { libc::kill(self.pid, libc::SIGSTOP) == 0 }
        }
        fn thaw(&self) {
            // SAFETY: as above.
            unsafe { libc::kill(self.pid, libc::SIGCONT) };
        }
        fn cpu_cgroup(&self) -> Option<PathBuf> {
            None
        }
    }

    #[test]
    fn perturbs_a_real_process_and_undoes_every_window() {
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        let pid = child.id() as i32;
        let tree = Arc::new(Child {
            pid,
            frozen: Mutex::new(0),
        });
        let before_policy = unsafe { libc::sched_getscheduler(pid) };
        let before_set = cpu_set_of(pid).unwrap();
        let chaos = Chaos::start(3, Duration::from_millis(40), tree.clone());
        std::thread::sleep(Duration::from_millis(400));
        let report = chaos.stop();
        assert!(!report.applied.is_empty(), "{report:?}");
        // No window opens once the budget is spent; the last one may end late by qualify's own
        // scheduling latency (a loaded machine), which the deadline's margin covers.
        assert!(
            report.stopped <= Duration::from_millis(40 + 5 + 100),
            "{report:?}"
        );
        // No cgroup: the quota bursts say why they did not apply.
        if let Some(why) = report.refused.get(QUOTA) {
            assert!(why.contains("no cgroup"), "{why}");
        }
        // Everything undone: running (not stopped), its policy and CPUs as before.
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        let state = state
            .rsplit(')')
            .next()
            .unwrap()
            .split_whitespace()
            .next()
            .unwrap()
            .to_string();
        assert_ne!(state, "T", "left stopped");
        assert_eq!(unsafe { libc::sched_getscheduler(pid) }, before_policy);
        assert_eq!(cpus_in(&cpu_set_of(pid).unwrap()), cpus_in(&before_set));
        child.kill().unwrap();
        child.wait().unwrap();
    }
}
