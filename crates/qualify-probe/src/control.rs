//! A handle on a running probe from another thread, for long-running programs (a service under
//! load): the main process's pid once it started, the tree's memory and its threads, open files
//! and sockets over time ([`TreeCounts`]), and a request to
//! stop it gracefully — the probe sends the signal to the main process's group (a service
//! started through a shell gets it too), waits up to the grace
//! for it to end, then kills the tree and flags `slow_shutdown`. A program that ends on the
//! requested signal (or exits 0, or with 128 + the signal) ended `ok`: it was asked to.
//!
//! [`Control::signal_tree`] sends a signal to every process of the tree at once (a dependency's
//! process fault: SIGKILL, SIGSTOP, SIGCONT), found as the probe finds them (its cgroup, the
//! cell's init's descendants, or the tagged tree). While the tree is stopped (SIGSTOP until
//! SIGCONT) the probe draws no stall verdict from it: it was stopped on purpose.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Samples kept before the series is thinned to every other one (memory stays bounded).
const MAX_SAMPLES: usize = 8192;

#[derive(Default)]
struct State {
    pid: Option<i32>,
    netns: Option<Arc<crate::netns::Netns>>,
    memory: Vec<(Instant, u64)>,
    counts: Vec<(Instant, TreeCounts)>,
    stop: Option<(i32, Duration)>,
    members: Option<Members>,
    /// The tree's group with CPU bandwidth control, if it has one.
    cpu: Option<PathBuf>,
    /// The tree's unified group with `cgroup.freeze`, if it has one.
    freezer: Option<PathBuf>,
    /// The program ended (its status is known): nothing to list or signal any more.
    ended: bool,
    /// Stopped on purpose (SIGSTOP sent, SIGCONT not yet).
    held: bool,
    /// How many times the tree was continued after a hold (the probe restarts its stall
    /// watch on each).
    resumed: u64,
}

/// Where the tree's processes are listed, as the probe lists them.
#[derive(Debug, Clone)]
pub(crate) enum Members {
    /// The probe's cgroup (`cgroup.procs`).
    Cgroup(PathBuf),
    /// Descendants of the cell's init.
    Descendants(i32),
    /// Processes carrying the probe's environment tag, from the main process down.
    Tagged { tag: String, main: i32 },
}

impl Members {
    fn list(&self) -> Vec<i32> {
        match self {
            Members::Cgroup(dir) => crate::backend::cgroupfs::procs(dir),
            Members::Descendants(init) => crate::sample::descendants(*init),
            Members::Tagged { tag, main } => {
                crate::sample::tree_by_tag(crate::spawn::TAG_KEY, tag, *main)
            }
        }
    }
}

/// What the tree held at one sample.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TreeCounts {
    /// Threads of every process of the tree.
    pub threads: u64,
    /// Open file descriptors of every process (sockets included).
    pub open_files: u64,
    /// Of those, sockets.
    pub sockets: u64,
}

/// Keep at most [`MAX_SAMPLES`]: past it, every other sample is dropped.
fn push_bounded<T: Copy>(series: &mut Vec<(Instant, T)>, at: Instant, value: T) {
    if series.len() >= MAX_SAMPLES {
        let thinned: Vec<(Instant, T)> = series.iter().step_by(2).copied().collect();
        *series = thinned;
    }
    series.push((at, value));
}

/// Shared between the probe's supervision loop and its caller.
#[derive(Default)]
pub struct Control {
    state: Mutex<State>,
}

impl std::fmt::Debug for Control {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Control").field("pid", &self.pid()).finish()
    }
}

impl Control {
    /// The main process's pid, once it started.
    pub fn pid(&self) -> Option<u32> {
        self.state
            .lock()
            .ok()
            .and_then(|s| s.pid)
            .and_then(|p| u32::try_from(p).ok())
    }

    /// The network namespace the program runs in, when it is not qualify's (the sandbox's
    /// private loopback): join it with [`crate::netns::enter`] to reach the program.
    pub fn netns(&self) -> Option<Arc<crate::netns::Netns>> {
        self.state.lock().ok().and_then(|s| s.netns.clone())
    }

    /// The tree's memory (cgroup usage, or summed anonymous RSS without cgroups) at each sample.
    pub fn memory_samples(&self) -> Vec<(Instant, u64)> {
        self.state
            .lock()
            .map(|s| s.memory.clone())
            .unwrap_or_default()
    }

    /// The tree's threads, open files and sockets at each sample.
    pub fn count_samples(&self) -> Vec<(Instant, TreeCounts)> {
        self.state
            .lock()
            .map(|s| s.counts.clone())
            .unwrap_or_default()
    }

    /// The tree's processes now (host pids), found as the probe finds them; empty before the
    /// program started and once it ended.
    pub fn members(&self) -> Vec<i32> {
        let members = match self.state.lock() {
            Ok(s) if !s.ended => s.members.clone(),
            _ => None,
        };
        members.map(|m| m.list()).unwrap_or_default()
    }

    /// The tree's cgroup directory with CPU bandwidth control (v2 `cpu.max` or v1
    /// `cpu.cfs_quota_us`), when it has one (a v1 cpu group exists only under a CPU ceiling).
    pub fn cpu_cgroup(&self) -> Option<PathBuf> {
        self.state.lock().ok().and_then(|s| s.cpu.clone())
    }

    /// The TCP ports the tree listens on now (empty before it started, or when it listens on
    /// none).
    pub fn listening(&self) -> Vec<crate::sockets::Listener> {
        let members = self.state.lock().ok().and_then(|s| s.members.clone());
        members.map_or_else(Vec::new, |m| crate::sockets::listening(&m.list()))
    }

    /// Freeze (`true`) or thaw (`false`) the whole tree through its cgroup (`cgroup.freeze`): no
    /// signal, nothing the program can see but lost time. Frozen marks the tree held (no stall
    /// verdict while it is, the stall watch starting afresh once thawed), as a SIGSTOP through
    /// [`Control::signal_tree`] does. `false` when the tree has no such group (or it is not
    /// running): the caller may stop it by signal instead.
    pub fn set_frozen(&self, frozen: bool) -> bool {
        let dir = match self.state.lock() {
            Ok(mut s) if !s.ended && s.freezer.is_some() => {
                if frozen {
                    // Held before the freeze lands, so no sample of the frozen tree is judged.
                    s.held = true;
                }
                s.freezer.clone()
            }
            _ => None,
        };
        let Some(dir) = dir else {
            return false;
        };
        let done =
            crate::backend::cgroupfs::write(&dir, "cgroup.freeze", if frozen { "1" } else { "0" })
                .is_ok();
        if !frozen
            && let Ok(mut s) = self.state.lock()
            && s.held
        {
            s.held = false;
            s.resumed += 1;
        }
        if frozen && !done {
            self.set_frozen(false);
        }
        done
    }

    /// Ask the probe to stop the program: `signal` to its main process, then after `grace` the
    /// whole tree is killed. Idempotent; the first request wins.
    pub fn request_stop(&self, signal: i32, grace: Duration) {
        if let Ok(mut s) = self.state.lock()
            && s.stop.is_none()
        {
            s.stop = Some((signal, grace));
        }
    }

    /// Send `signal` to every process of the tree: each member, then the main process's
    /// group, listing the members again until no new one appears (a process forked meanwhile
    /// gets it too). Returns how many processes it was sent to. SIGSTOP marks the tree held (no stall
    /// verdict while it is), SIGCONT releases it.
    pub fn signal_tree(&self, signal: i32) -> Result<usize, SignalError> {
        let sig = nix::sys::signal::Signal::try_from(signal)
            .map_err(|source| SignalError::Unknown { signal, source })?;
        let (pid, members) = match self.state.lock() {
            Ok(mut s) => {
                // Held before the signal lands, so no sample of the stopped tree is judged.
                if sig == nix::sys::signal::Signal::SIGSTOP {
                    s.held = true;
                }
                (s.pid, s.members.clone())
            }
            Err(_) => (None, None),
        };
        let (Some(main), Some(members)) = (pid, members) else {
            return Err(SignalError::NotRunning);
        };
        let mut sent: HashSet<i32> = HashSet::new();
        for round in 0..50 {
            let fresh: Vec<i32> = members
                .list()
                .into_iter()
                .filter(|p| !sent.contains(p))
                .collect();
            if fresh.is_empty() {
                break;
            }
            for p in fresh {
                // One that is gone meanwhile is not listed again either.
                let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(p), sig);
                sent.insert(p);
            }
            if round == 0 {
                // The main process's group too: it covers a child forked while the list was
                // read (the next round lists it anyway).
                let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(main), sig);
            }
        }
        if sig == nix::sys::signal::Signal::SIGCONT
            && let Ok(mut s) = self.state.lock()
            && s.held
        {
            s.held = false;
            s.resumed += 1;
        }
        Ok(sent.len())
    }

    /// Stopped on purpose, and how many holds have ended so far.
    pub(crate) fn hold(&self) -> (bool, u64) {
        self.state
            .lock()
            .map(|s| (s.held, s.resumed))
            .unwrap_or((false, 0))
    }

    pub(crate) fn started(
        &self,
        pid: i32,
        netns: Option<Arc<crate::netns::Netns>>,
        members: Members,
        cpu: Option<PathBuf>,
        freezer: Option<PathBuf>,
    ) {
        if let Ok(mut s) = self.state.lock() {
            s.pid = Some(pid);
            s.netns = netns;
            s.members = Some(members);
            s.cpu = cpu;
            s.freezer = freezer;
            s.ended = false;
        }
    }

    /// The main process ended: [`Control::members`] lists nothing from now on.
    pub(crate) fn ended(&self) {
        if let Ok(mut s) = self.state.lock() {
            s.ended = true;
        }
    }

    pub(crate) fn sample(&self, at: Instant, bytes: u64, counts: TreeCounts) {
        if let Ok(mut s) = self.state.lock() {
            push_bounded(&mut s.memory, at, bytes);
            push_bounded(&mut s.counts, at, counts);
        }
    }

    /// The pending stop request, if any.
    pub(crate) fn stop_requested(&self) -> Option<(i32, Duration)> {
        self.state.lock().ok().and_then(|s| s.stop)
    }
}

/// A stop the probe delivered: which signal, when, and by when the program had to be gone.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Stopping {
    pub signal: i32,
    pub grace: Duration,
    pub sent: Instant,
    /// The grace ran out before the program ended.
    pub late: bool,
}

impl Stopping {
    pub fn deadline(&self) -> Instant {
        self.sent + self.grace
    }
}
/// Why [`Control::signal_tree`] sent nothing.
#[derive(Debug, thiserror::Error)]
pub enum SignalError {
    /// Not a signal this system knows.
    #[error("signal {signal}: {source}")]
    Unknown {
        signal: i32,
        source: nix::errno::Errno,
    },
    /// The tree is not there to signal.
    #[error("the program has not started (or has ended): nothing to signal")]
    NotRunning,
}
