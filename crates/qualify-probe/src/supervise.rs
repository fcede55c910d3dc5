//! The supervision loop of one probe: start the program inside its containment, wait for it
//! (woken at once by a pidfd when it exits), sample the tree, stop it on deadline, stall,
//! watchdog or interruption, kill every descendant, reap, collect the streams and counters, and
//! hand everything to [`crate::classify::compose`].

use std::collections::{HashMap, HashSet};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, Once};
use std::time::{Duration, Instant, SystemTime};

use serde_json::Value;

use crate::backend::{Containment, Kind};
use crate::cell::{self, Cell};
use crate::classify::{Decision, Ending, Facts, Watch, compose, signal_name};
use crate::control::Stopping;
use crate::evidence::{Evidence, Leaked, SpinEvidence};
use crate::inspect::Live;
use crate::limits::{Limits, Progress};
use crate::netns::Netns;
use crate::output::Drain;
use crate::result::{Flag, Outcome, ProbeResult};
use crate::sample::{self, ProcSnap};
use crate::sandbox::{Plan, SandboxEnforcement};
use crate::{CancelToken, ProbeError, ProbeSpec, spawn, stacks};
use qualify_model::Ceiling;
use std::sync::Arc;

static SEQ: AtomicU64 = AtomicU64::new(0);
/// Main pids of probes in flight in this process (so one probe never reaps another's child).
static MAINS: Mutex<Vec<i32>> = Mutex::new(Vec::new());
/// Held from spawn until the new main pid is in [`MAINS`], and while orphans are reaped: a main
/// process that exits at once must never be mistaken for an orphan by a concurrent probe.
static SPAWNING: Mutex<()> = Mutex::new(());

fn set_subreaper() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // Orphaned descendants re-parent to qualify instead of init, so they stay visible and
        // killable. Best effort: without it the cgroup (if any) still holds them.
        let _ = nix::sys::prctl::set_child_subreaper(true);
    });
}

struct MainGuard(i32);
impl MainGuard {
    fn new(pid: i32) -> MainGuard {
        if let Ok(mut m) = MAINS.lock() {
            m.push(pid);
        }
        MainGuard(pid)
    }
}
impl Drop for MainGuard {
    fn drop(&mut self) {
        if let Ok(mut m) = MAINS.lock() {
            m.retain(|p| *p != self.0);
        }
    }
}

/// A heartbeat file exported as `QUALIFY_HEARTBEAT`; removed on drop.
struct Heartbeat(PathBuf);
impl Heartbeat {
    fn create(tag: &str) -> Result<Heartbeat, ProbeError> {
        let path = std::env::temp_dir().join(format!("qualify-heartbeat-{tag}"));
        let f = std::fs::File::create(&path).map_err(|e| {
            ProbeError::io(format!("creating heartbeat file {}", path.display()), e)
        })?;
        // The program may run as another user (the sandbox's): it must be able to touch it.
        use std::os::unix::fs::PermissionsExt;
        let _ = f.set_permissions(std::fs::Permissions::from_mode(0o666));
        Ok(Heartbeat(path))
    }
    fn stamp(&self) -> Option<(SystemTime, u64)> {
        let m = std::fs::metadata(&self.0).ok()?;
        Some((m.modified().ok()?, m.len()))
    }
}
impl Drop for Heartbeat {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Non-blocking wait4 on one pid: `Some((Some(status), rusage))` once it has ended,
/// `Some((None, zero))` if it is no longer our child to wait for (its status is lost).
fn try_wait(pid: i32) -> Option<(Option<i32>, libc::rusage)> {
    let mut status = 0;
    // SAFETY: zeroed rusage is a valid out-parameter.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: plain syscall with valid pointers.
    let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut ru) };
    if r == pid {
        return Some((Some(status), ru));
    }
    if r < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ECHILD) {
        return Some((None, ru));
    }
    None
}

fn pidfd_open(pid: i32) -> Option<OwnedFd> {
    // SAFETY: plain syscall; on success the fd is ours.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// Sleep up to `timeout`, waking early when `fd` (a pidfd, or a cell's report pipe) becomes
/// readable (the process ended).
fn wait_exit_or(fd: Option<i32>, timeout: Duration) {
    match fd {
        Some(fd) => {
            let mut pfd = libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            };
            let ms = timeout.as_millis().min(i32::MAX as u128) as i32;
            // SAFETY: one valid pollfd.
            unsafe { libc::poll(&mut pfd, 1, ms) };
        }
        None => std::thread::sleep(timeout),
    }
}

fn rusage_secs(ru: &libc::rusage) -> (f64, f64) {
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    (tv(ru.ru_utime), tv(ru.ru_stime))
}

fn allowed_cpus(limit: Option<f64>) -> f64 {
    let online = crate::allowed_cpus() as f64;
    limit.map(|l| l.min(online)).unwrap_or(online)
}

fn sample_interval(spec: &ProbeSpec, kind: Kind) -> Duration {
    let stall = spec.limits.stall();
    let mut iv = (stall / 20).clamp(Duration::from_millis(10), Duration::from_millis(100));
    if kind == Kind::Rlimit && spec.limits.memory_bytes.is_some() {
        iv = iv.min(Duration::from_millis(20));
    }
    iv
}

/// How the program was started: in a cell under its init (the normal case), or directly as
/// qualify's child (only when the init is turned off to show what it prevents).
enum Started {
    Cell(Box<Cell>),
    Direct(std::process::Child),
}

impl Started {
    /// The fd that becomes readable when the main process ended.
    fn exit_fd(&self, pidfd: Option<&OwnedFd>) -> Option<i32> {
        match self {
            Started::Cell(c) => Some(c.report_fd()),
            Started::Direct(_) => pidfd.map(AsRawFd::as_raw_fd),
        }
    }

    fn try_status(&mut self, main: i32) -> Option<(Option<i32>, libc::rusage)> {
        match self {
            Started::Cell(c) => c.try_status(),
            Started::Direct(_) => try_wait(main),
        }
    }

    fn init(&self) -> Option<i32> {
        match self {
            Started::Cell(c) => Some(c.init),
            Started::Direct(_) => None,
        }
    }
}

/// Members of the tree right now (never the cell's init).
fn members(c: &Containment, tag: &str, main: i32, init: Option<i32>) -> Vec<i32> {
    match (c.members(), init) {
        (Some(m), _) => m,
        (None, Some(init)) => sample::descendants(init),
        (None, None) => sample::tree_by_tag(spawn::TAG_KEY, tag, main),
    }
}

/// Reap every zombie child of qualify that no running probe owns as its main process.
/// Returns the summed CPU seconds of what was reaped.
fn reap_orphans() -> (f64, f64) {
    let me = std::process::id() as i32;
    let _spawning = SPAWNING.lock();
    let mains: Vec<i32> = MAINS.lock().map(|m| m.clone()).unwrap_or_default();
    let mut user = 0.0;
    let mut sys = 0.0;
    let Ok(iter) = procfs::process::all_processes() else {
        return (0.0, 0.0);
    };
    for p in iter.flatten() {
        let Ok(st) = p.stat() else { continue };
        if st.ppid == me && st.state == 'Z' && !mains.contains(&st.pid) {
            if let Some((Some(_), ru)) = try_wait(st.pid) {
                let (u, s) = rusage_secs(&ru);
                user += u;
                sys += s;
            }
        }
    }
    (user, sys)
}

/// A program that was asked to stop: ending by the requested signal, exiting 0 or with 128 +
/// the signal is `ok` (it did what it was asked); not gone within the grace, it was killed and
/// is flagged `slow_shutdown`. A crash, an OOM kill or another exit status while stopping keep
/// their own verdict.
fn requested_stop(
    d: &mut Decision,
    stop: &Stopping,
    status: Option<i32>,
    counters: &crate::backend::Counters,
) {
    let name = signal_name(stop.signal);
    let took = stop.sent.elapsed().min(stop.grace);
    if counters.oom_kills > 0 || d.outcome == Outcome::OomKilled {
        return;
    }
    let by_request = match status {
        Some(st) if libc::WIFSIGNALED(st) => libc::WTERMSIG(st) == stop.signal,
        Some(st) if libc::WIFEXITED(st) => {
            let code = libc::WEXITSTATUS(st);
            code == 0 || code == 128 + stop.signal
        }
        _ => false,
    };
    if by_request {
        d.outcome = Outcome::Ok;
        d.detail = format!(
            "stopped on request: ended within {:.2} s of {name}",
            took.as_secs_f64()
        );
    } else if stop.late {
        d.outcome = Outcome::Ok;
        if !d.flags.contains(&Flag::SlowShutdown) {
            d.flags.push(Flag::SlowShutdown);
            d.flags.sort_unstable();
        }
        d.detail = format!(
            "did not stop within {:.1} s of {name}: qualify killed the tree",
            stop.grace.as_secs_f64()
        );
    }
}

/// Check the user layer against what the kernel says of the running program (its
/// `/proc/PID/status`): no capabilities, `no_new_privs`; a mismatch downgrades the layer. A
/// program that already ended cannot be checked (nothing changes then).
fn verify_user(main: i32, e: &mut SandboxEnforcement) {
    let Ok(status) = std::fs::read_to_string(format!("/proc/{main}/status")) else {
        return;
    };
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .map(|v| v.trim().to_string())
    };
    // Still the init's fork (not yet past exec)? Only the exec'd program is judged.
    if field("NoNewPrivs:").as_deref() == Some("0") && field("CapEff:").is_some() {
        let caps = field("CapEff:").unwrap_or_default();
        if caps.trim_start_matches('0').is_empty() {
            return;
        }
        e.user.downgrade(format!(
            "the program runs with capabilities {caps} and without no_new_privs"
        ));
        return;
    }
    let caps_zero = ["CapEff:", "CapPrm:", "CapBnd:"]
        .iter()
        .all(|f| field(f).is_some_and(|v| v.trim_start_matches('0').is_empty()));
    if !caps_zero {
        e.user.downgrade(format!(
            "the kernel reports capabilities left: CapEff {} CapBnd {}",
            field("CapEff:").unwrap_or_default(),
            field("CapBnd:").unwrap_or_default()
        ));
    } else if e.user.is_kernel() {
        e.user
            .mechanisms
            .push("verified in /proc/PID/status (no capabilities, NoNewPrivs 1)".into());
    }
}

fn kill_pid(pid: i32) {
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGKILL,
    );
}

pub fn run_once(spec: &ProbeSpec, cancel: &CancelToken) -> Result<ProbeResult, ProbeError> {
    run_with(spec, cancel, None)
}

/// One probe; with `builtin`, the program is qualify's built-in self-test instead of an `exec`.
pub(crate) fn run_with(
    spec: &ProbeSpec,
    cancel: &CancelToken,
    builtin: Option<&crate::selftest::Builtin>,
) -> Result<ProbeResult, ProbeError> {
    if spec.argv.is_empty() {
        return Err(ProbeError::EmptyCommand);
    }
    // A sandboxed tree always has a pids and a disk ceiling: the guards where none is set.
    let guarded;
    let spec = if spec.sandbox.mode == crate::sandbox::Mode::Off {
        spec
    } else {
        guarded = ProbeSpec {
            limits: spec.limits.guarded(),
            ..spec.clone()
        };
        &guarded
    };
    set_subreaper();
    let limits = &spec.limits;
    let mut containment = Containment::create(spec.backend, limits)?;
    // Unique, and no count of the probes before it: a program cannot tell from its tag where
    // in a run it is (a held-out check's artifact from a cell).
    let tag = {
        use std::hash::BuildHasher;
        static KEYS: std::sync::OnceLock<std::collections::hash_map::RandomState> =
            std::sync::OnceLock::new();
        let h = KEYS
            .get_or_init(std::collections::hash_map::RandomState::new)
            .hash_one(SEQ.fetch_add(1, Ordering::Relaxed));
        format!("{}-{h:016x}", std::process::id())
    };
    let heartbeat = match limits.progress {
        Progress::Heartbeat => Some(Heartbeat::create(&tag)?),
        _ => None,
    };
    let mut extra_env = Vec::new();
    if let Some(hb) = &heartbeat {
        extra_env.push(("QUALIFY_HEARTBEAT".to_string(), hb.0.display().to_string()));
    }
    extra_env.push((spawn::TAG_KEY.to_string(), tag.clone()));
    let join = containment.join_files()?;
    // A service's own process ends (workers killed and replaced): the kernel's process events,
    // subscribed before the program exists so no fork of its tree is missed.
    let mut events = spec
        .control
        .as_ref()
        .and_then(|_| crate::children::ProcEvents::open());
    let spawning = SPAWNING.lock();
    let launch = Instant::now();
    let direct = crate::sandbox::simulated_missing("init");
    let workdir = spec
        .workdir
        .clone()
        .or_else(|| std::env::current_dir().ok())
        .unwrap_or_else(|| PathBuf::from("/"));
    // Leaks at exit: a Go test binary runs with its own -test.trace into a file qualify owns.
    let leak_plan = match builtin {
        Some(_) => crate::leaks::Plan::No("qualify's built-in self-test".into()),
        None => crate::leaks::plan(spec, &workdir, &tag),
    };
    let traced;
    let spec = match &leak_plan {
        crate::leaks::Plan::GoTrace { argv, .. } => {
            traced = ProbeSpec {
                argv: argv.clone(),
                ..spec.clone()
            };
            &traced
        }
        crate::leaks::Plan::No(_) => spec,
    };
    let mut binds: Vec<&std::path::Path> = Vec::new();
    if let Some(hb) = &heartbeat {
        binds.push(hb.0.as_path());
    }
    if let crate::leaks::Plan::GoTrace { file, .. } = &leak_plan {
        binds.push(file.0.as_path());
    }
    binds.extend(spec.shared_files.iter().map(PathBuf::as_path));
    let (plan, mut sandbox_evidence) = if direct {
        let mut off = crate::sandbox::Sandbox::off();
        off.mode = spec.sandbox.mode;
        let mut e = Plan::build(
            &ProbeSpec {
                sandbox: crate::sandbox::Sandbox::off(),
                ..spec.clone()
            },
            &workdir,
            &[],
        )?
        .1;
        e.mode = spec.sandbox.mode;
        for l in [
            &mut e.filesystem,
            &mut e.hidden.layer,
            &mut e.network,
            &mut e.pid,
            &mut e.user,
            &mut e.syscalls,
        ] {
            l.reason = Some(
                "the cell's init is turned off (QUALIFY_SIMULATE_MISSING=init): no sandbox".into(),
            );
        }
        (None, e)
    } else {
        Plan::build(spec, &workdir, &binds)?
    };
    let mut started = if direct {
        Started::Direct(spawn::spawn(spec, &tag, &join, &extra_env)?)
    } else {
        Started::Cell(Box::new(cell::launch(&cell::Launch {
            spec,
            extra_env: &extra_env,
            join: &join,
            cgroup_dirs: containment.dirs(),
            sandbox: plan.as_ref(),
            builtin,
        })?))
    };
    // The clock starts once exec succeeded: joining cgroups before exec (a cgroup migration can
    // wait on RCU for milliseconds) is qualify's time, not the program's.
    let start = Instant::now();
    let launch_seconds = (start - launch).as_secs_f64();
    let (main, stdout, stderr) = match &mut started {
        Started::Cell(c) => (c.main, c.stdout.take(), c.stderr.take()),
        Started::Direct(child) => (
            child.id() as i32,
            child
                .stdout
                .take()
                .map(|s| std::fs::File::from(OwnedFd::from(s))),
            child
                .stderr
                .take()
                .map(|s| std::fs::File::from(OwnedFd::from(s))),
        ),
    };
    let init = started.init();
    let _main_guard = MainGuard::new(init.unwrap_or(main));
    drop(spawning);
    let on_qualify_death = match &started {
        Started::Cell(c) => c.guard.describe(),
        Started::Direct(_) => "not guaranteed: only the main process gets a parent-death signal; \
                               its descendants survive qualify's death (the cell's init is \
                               turned off by QUALIFY_SIMULATE_MISSING=init)"
            .to_string(),
    };
    let control = spec.control.as_deref();
    let netns = match &mut started {
        Started::Cell(c) => c.netns.take().map(|fd| Arc::new(Netns::from_fd(fd))),
        Started::Direct(_) => None,
    }
    .or_else(|| match &spec.sandbox.network {
        crate::sandbox::Network::Join(n) if plan.is_some() => Some(Arc::clone(n)),
        _ => None,
    });
    if let Some(c) = control {
        let list = match (containment.membership(), init) {
            (Some(dir), _) => crate::control::Members::Cgroup(dir),
            (None, Some(init)) => crate::control::Members::Descendants(init),
            (None, None) => crate::control::Members::Tagged {
                tag: tag.clone(),
                main,
            },
        };
        c.started(
            main,
            netns,
            list,
            containment.cpu_dir(),
            containment.freeze_dir(),
        );
    }
    let mut children =
        control.map(|_| crate::children::Tracker::new(main, start, events.is_some()));
    // Holds of the tree (SIGSTOP … SIGCONT through the control) seen so far.
    let mut holds_seen = 0u64;
    if plan.is_some() {
        verify_user(main, &mut sandbox_evidence);
    }
    let mut stopping: Option<Stopping> = None;
    let mut disk = match (&plan, init) {
        (Some(p), Some(init)) => DiskWatch::new(p, init, limits.disk_bytes),
        _ => None,
    };
    drop(join);
    let drain = Drain::start(stdout, stderr);
    let pidfd = match started {
        Started::Direct(_) => pidfd_open(main),
        Started::Cell(_) => None,
    };
    let exit_fd = started.exit_fd(pidfd.as_ref());
    let interval = sample_interval(spec, containment.kind);
    let deadline = start + limits.timeout();
    let mut watch = Watch::new(limits, allowed_cpus(limits.cpus), start);
    let mut inspect = Live::new();
    let mut seen: HashMap<i32, u64> = HashMap::new(); // pid → starttime, for killing without cgroups
    let mut main_status: Option<(Option<i32>, libc::rusage)> = None;
    let mut ending = Ending::Exited;
    let mut stuck_evidence = Value::Null;
    let mut last_procs: Vec<ProcSnap> = Vec::new();
    let mut max_memory_current = 0u64;
    // How each thread waited when the deadline passed (read before the tree is killed).
    let mut timeout_waits: Option<Vec<crate::blocking::ThreadWait>> = None;
    // Command lines of the tree's processes (the probed command first): where a runtime's own
    // limits (`-Xmx`, `--max-old-space-size`) are read from.
    let mut commands: Vec<String> = vec![
        spec.argv
            .iter()
            .map(|a| a.to_string_lossy())
            .collect::<Vec<_>>()
            .join(" "),
    ];

    loop {
        wait_exit_or(exit_fd, interval);
        if let Some(st) = started.try_status(main) {
            main_status = Some(st);
            break;
        }
        if cancel.load(Ordering::Relaxed) {
            ending = Ending::Interrupted;
            break;
        }
        let now = Instant::now();
        let pids = members(&containment, &tag, main, init);
        let procs: Vec<ProcSnap> = pids.iter().filter_map(|&p| sample::read_proc(p)).collect();
        for p in &procs {
            if let std::collections::hash_map::Entry::Vacant(e) = seen.entry(p.pid) {
                e.insert(p.starttime);
                if commands.len() < COMMANDS_KEPT {
                    commands.push(sample::cmdline(p.pid));
                }
            }
        }
        // What the tree does to its own processes while it runs (not while it is stopped).
        if let Some(t) = children.as_mut().filter(|_| stopping.is_none()) {
            if let Some(e) = events.as_mut() {
                e.drain(t);
            }
            t.sampled(&procs);
        }
        let mut memory_now = None;
        let mut refused_forks = 0;
        if containment.kind != Kind::Rlimit {
            let c = containment.counters();
            memory_now = c.memory_current;
            max_memory_current = max_memory_current.max(c.memory_current.unwrap_or(0));
            refused_forks = c.pids_max_events.unwrap_or(0);
        }
        // The guards end the run at once: a fork bomb or a disk fill is stopped, not watched.
        if limits.is_guard(Ceiling::Pids) {
            let tasks: u64 = procs.iter().map(|p| p.threads.len() as u64).sum();
            let counted =
                containment.kind == Kind::Rlimit && limits.pids.is_some_and(|max| tasks >= max);
            if refused_forks > 0 || counted {
                ending = Ending::PidsExhausted {
                    tasks: counted.then_some(tasks),
                };
                last_procs = procs;
                break;
            }
        }
        if let Some(d) = disk.as_mut()
            && let Some(used) = d.full()
        {
            ending = Ending::DiskFull { used };
            last_procs = procs;
            break;
        }
        if let Some(c) = control {
            let mut counts = crate::control::TreeCounts::default();
            for p in procs.iter().filter(|p| !p.is_zombie()) {
                let (files, sockets) = sample::fd_counts(p.pid);
                counts.threads += p.threads.len() as u64;
                counts.open_files += files;
                counts.sockets += sockets;
            }
            c.sample(
                now,
                memory_now.unwrap_or_else(|| procs.iter().map(|p| p.anon_bytes).sum()),
                counts,
            );
            // A graceful stop: the signal once, then the grace; late → killed, flagged.
            match stopping {
                None => {
                    if let Some((signal, grace)) = c.stop_requested() {
                        // To the main process's group (the main process leads it): a service
                        // started through a shell gets the signal too, as a terminal's job would.
                        if let Ok(sig) = nix::sys::signal::Signal::try_from(signal) {
                            let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(main), sig)
                                .or_else(|_| {
                                    nix::sys::signal::kill(nix::unistd::Pid::from_raw(main), sig)
                                });
                        }
                        stopping = Some(Stopping {
                            signal,
                            grace,
                            sent: now,
                            late: false,
                        });
                    }
                }
                Some(mut s) if now >= s.deadline() => {
                    s.late = true;
                    stopping = Some(s);
                    last_procs = procs;
                    break;
                }
                Some(_) => {}
            }
            if stopping.is_some() {
                // Shutting down is not a stall: no deadlock or livelock verdict while it does.
                last_procs = procs;
                continue;
            }
            // Stopped on purpose is not a stall either; once continued, the stall watch starts
            // afresh (its quiet time would otherwise include the hold).
            let (held, resumed) = c.hold();
            if held {
                last_procs = procs;
                continue;
            }
            if resumed != holds_seen {
                holds_seen = resumed;
                watch = Watch::new(limits, allowed_cpus(limits.cpus), now);
            }
        }
        if now >= deadline {
            let (kind, why) = watch.timeout_kind(now, &procs, &mut inspect);
            timeout_waits = Some(crate::inspect::Inspect::waits(&mut inspect, &procs));
            ending = Ending::Timeout(kind, why);
            last_procs = procs;
            break;
        }
        let hb = heartbeat.as_ref().and_then(Heartbeat::stamp);
        if let Some(stuck) = watch.observe(now, &procs, drain.total_bytes(), hb, &mut inspect) {
            stuck_evidence = match &stuck {
                // The samples that proved it are the stacks.
                Ending::SpinDeadlock(finding) => finding.stacks.clone(),
                _ => {
                    let live: Vec<i32> = procs
                        .iter()
                        .filter(|p| !p.is_zombie())
                        .map(|p| p.pid)
                        .collect();
                    stacks::dump(&live)
                }
            };
            ending = stuck;
            last_procs = procs;
            break;
        }
        if containment.kind == Kind::Rlimit
            && let Some(limit) = limits.memory_bytes
        {
            let used: u64 = procs.iter().map(|p| p.anon_bytes).sum();
            if used > limit {
                ending = Ending::Watchdog { used };
                last_procs = procs;
                break;
            }
        }
        last_procs = procs;
    }
    if let Some(c) = control {
        c.ended();
    }
    // Wall time ends when the main process ended (or qualify decided to stop it), not after the
    // clean-up below: killing stragglers, reaping and removing cgroups is qualify's time.
    let ended = start.elapsed();
    let verdict_seconds = ended.as_secs_f64();

    // A tree qualify ends (deadline, livelock): what its runtimes say of it first — the JVM's
    // and CPython's threads, a Go program's goroutine dump (SIGQUIT, which ends it).
    let mut at_end: Vec<crate::stall::RuntimeReport> = Vec::new();
    let mut livelock_named: Option<String> = None;
    let mut go_dumped = Vec::new();
    if main_status.is_none()
        && matches!(ending, Ending::Timeout(..) | Ending::Livelock { .. })
        && let Ok(table) = crate::runtimes::RUNTIMES.as_ref()
    {
        let asked = crate::stall::deadline::ask(&last_procs, &mut inspect, table);
        at_end = asked.reports;
        for &pid in &asked.go {
            go_dump(pid);
        }
        go_dumped = asked.go;
    }

    // Asked to stop, the rest of the group got the signal too: give it what is left of the
    // grace to exit before anything counts as leaked.
    if let Some(stop) = stopping
        && main_status.is_some()
    {
        while Instant::now() < stop.deadline()
            && members(&containment, &tag, main, init)
                .iter()
                .any(|&p| p != main && sample::read_proc(p).is_some_and(|p| !p.is_zombie()))
        {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    // Filled between the last sample and the end: the writes failed, and that is said.
    let disk_hit = matches!(ending, Ending::DiskFull { .. })
        || disk.as_mut().is_some_and(|d| d.full().is_some());
    // Descendants still alive after the main process ended by itself leaked.
    let mut leaked: Vec<Leaked> = Vec::new();
    if main_status.is_some() {
        for pid in members(&containment, &tag, main, init) {
            if pid == main {
                continue;
            }
            if let Some(p) = sample::read_proc(pid)
                && !p.is_zombie()
            {
                seen.entry(p.pid).or_insert(p.starttime);
                leaked.push(Leaked {
                    pid: p.pid,
                    comm: p.comm,
                });
            }
        }
    }

    // Kill the whole tree and wait until it is gone: first the program's processes (so the init
    // still reports the main process's status), then the init with whatever is left.
    let (orphan_user, orphan_sys) = kill_tree(&containment, &tag, main, init, &seen);
    if main_status.is_none() {
        let give_up = Instant::now() + Duration::from_secs(5);
        while main_status.is_none() && Instant::now() < give_up {
            main_status = started.try_status(main);
            if main_status.is_none() {
                wait_exit_or(exit_fd, Duration::from_millis(10));
            }
        }
    }
    let init_rusage = match &mut started {
        Started::Cell(c) => {
            c.kill();
            c.reap(Duration::from_secs(5))
        }
        Started::Direct(_) => None,
    };
    drop(started);
    let (out, err, streams_closed) = drain.finish(Duration::from_secs(2));
    // The goroutine dumps asked for, as the stream carried them (not only the kept tail).
    if !go_dumped.is_empty()
        && let (Ok(table), Ok(reports)) = (
            crate::runtimes::RUNTIMES.as_ref(),
            crate::reports::REPORTS.as_ref(),
        )
    {
        let dumps: Vec<String> = err
            .reports
            .reports
            .iter()
            .filter(|c| reports.rows[c.row].id == "go.sigquit")
            .map(|c| format!("{}\n{}", c.line, c.body))
            .collect();
        for (i, &pid) in go_dumped.iter().enumerate() {
            let dump = dumps.get(i).cloned().unwrap_or_default();
            at_end.push(crate::stall::name_goroutines(&dump, pid, table));
        }
    }
    if !at_end.is_empty() {
        let said: Vec<String> = at_end
            .iter()
            .map(|r| format!("{} ({}): {}", r.runtime, r.tool, r.said))
            .collect();
        let named = format!("; at the end the runtimes said: {}", said.join(" | "));
        match &mut ending {
            Ending::Timeout(_, why) => why.push_str(&named),
            Ending::Livelock { .. } => livelock_named = Some(named),
            _ => {}
        }
    }
    let wall = ended;
    let cleanup_seconds = (start.elapsed() - ended).as_secs_f64();
    let counters = containment.counters();
    let cgroup_paths = containment.paths();
    let leftover = containment.remove();

    let status = main_status.and_then(|(s, _)| s);
    let report = runtime_report(
        &err.reports,
        &ending,
        status,
        &counters,
        &commands,
        spec,
        crate::classify::pids_hit(containment.kind, limits, &counters, &watch),
    );
    let mut decision = compose(&Facts {
        ending: &ending,
        status,
        counters: &counters,
        kind: containment.kind,
        limits,
        watch: &watch,
        leaked: leaked.len(),
        truncated: out.truncated || err.truncated,
        wall,
        disk_hit,
        report: report.as_ref(),
    });

    if let Some(named) = livelock_named {
        decision.detail.push_str(&named);
    }
    // What the run left behind when it ended by itself.
    let leaks = matches!(ending, Ending::Exited).then(|| crate::leaks::examine(&leak_plan, status));
    if let Some(l) = &leaks
        && l.blocked() > 0
    {
        decision.flags.push(Flag::LeakedThreads);
        decision.flags.sort_unstable();
        if let Some(s) = l.sentence() {
            decision.detail.push_str(&s);
        }
    }
    if let Some(stop) = stopping {
        requested_stop(
            &mut decision,
            &stop,
            main_status.and_then(|(s, _)| s),
            &counters,
        );
    }

    // The init reaped every process of the cell, so its rusage covers the whole tree.
    let (mut user, mut sys) = init_rusage
        .as_ref()
        .or(main_status.as_ref().map(|(_, ru)| ru))
        .map(rusage_secs)
        .unwrap_or((0.0, 0.0));
    user += orphan_user;
    sys += orphan_sys;
    if let (Some(u), Some(s)) = (counters.cpu_user_usec, counters.cpu_system_usec) {
        user = u as f64 / 1e6;
        sys = s as f64 / 1e6;
    }
    let rusage_peak = main_status
        .as_ref()
        .map(|(_, ru)| ru.ru_maxrss.max(0) as u64 * 1024)
        .unwrap_or(0);
    let (peak, peak_basis) = match counters.memory_peak {
        Some(p) => (Some(p), "cgroup peak usage of the whole tree"),
        None if max_memory_current > 0 => (
            Some(max_memory_current),
            "largest sampled cgroup usage of the whole tree",
        ),
        None => (
            Some(watch.peak_anon.max(rusage_peak)),
            "largest sampled sum of anonymous RSS over the tree (or the main process's max RSS)",
        ),
    };

    let threads = match &ending {
        Ending::Deadlock(waits, _) => Some(waits.clone()),
        Ending::SpinDeadlock(finding) => Some(finding.waits.clone()),
        Ending::WaitFor(finding) => Some(finding.waits.clone()),
        Ending::Timeout(..) if timeout_waits.is_some() => timeout_waits.clone(),
        Ending::Livelock { .. } | Ending::Timeout(..) => {
            Some(crate::blocking::classify(&last_procs))
        }
        _ => None,
    };
    let wait_for = match &ending {
        Ending::WaitFor(finding) => Some(&**finding),
        Ending::Timeout(..) => watch.stall_conclusion(),
        _ => None,
    };
    let evidence = Evidence {
        verdict_seconds,
        cleanup_seconds,
        launch_seconds,
        sample_interval_ms: interval.as_millis() as u64,
        sampling: watch.stats(),
        counters: &counters,
        peak_memory_basis: peak_basis,
        cgroups: cgroup_paths,
        backend_fallback: containment.fallback_warning.clone(),
        cgroups_not_removed: leftover,
        leaked,
        streams_open: Evidence::streams_open(streams_closed),
        threads,
        stacks: matches!(
            ending,
            Ending::Deadlock(..)
                | Ending::SpinDeadlock(..)
                | Ending::WaitFor(..)
                | Ending::Livelock { .. }
        )
        .then_some(stuck_evidence),
        wait_for,
        spin: match &ending {
            Ending::SpinDeadlock(finding) => Some(SpinEvidence::Examined(finding)),
            Ending::Timeout(..) | Ending::Livelock { .. } => {
                watch.spin_conclusion().and_then(SpinEvidence::of)
            }
            _ => None,
        },
        interrupted: decision.outcome == Outcome::Interrupted,
        runtime_report: report.as_ref(),
        at_end: &at_end,
        leaks: leaks.as_ref(),
    }
    .to_value();

    let children = children.map(|t| t.finish(&[&err.tail, &out.tail], counters.oom_kills));
    drop(events);
    Ok(ProbeResult {
        outcome: decision.outcome,
        exit_code: decision.exit_code,
        signal: decision.signal,
        timeout_kind: decision.timeout_kind,
        detail: decision.detail,
        flags: decision.flags,
        wall_seconds: wall.as_secs_f64(),
        user_seconds: user,
        system_seconds: sys,
        peak_memory_bytes: peak,
        enforcement: {
            let mut e = crate::result::Enforcement {
                on_qualify_death,
                sandbox: Some(sandbox_evidence),
                ..containment.enforcement.clone()
            };
            disk_enforcement(&mut e, plan.as_ref(), limits);
            if containment.kind == Kind::Rlimit && limits.is_guard(Ceiling::Pids) {
                e.pids = crate::result::Strength::Watchdog;
            }
            e
        },
        limits: limits.clone(),
        evidence,
        stdout_tail: out.tail,
        stderr_tail: err.tail,
        stdout_bytes: out.bytes,
        stderr_bytes: err.bytes,
        stdout_sha256: out.sha256,
        runs: None,
        distinct_outputs: None,
        load: None,
        faults: Vec::new(),
        perturb: None,
        children,
    })
}

/// What the tree has written to its writable places, sampled from qualify: the private `/tmp`
/// and `/dev/shm` (tmpfs mounts sized at the ceiling, read through the init's root).
struct DiskWatch {
    places: Vec<PathBuf>,
    layer: Option<Arc<crate::sandbox::layer::WorkdirLayer>>,
    limit: u64,
}

impl DiskWatch {
    fn new(plan: &Plan, init: i32, limit: Option<u64>) -> Option<DiskWatch> {
        let limit = limit?;
        if !plan.private_tmp() {
            return None;
        }
        let root = PathBuf::from(format!("/proc/{init}/root"));
        Some(DiskWatch {
            places: vec![root.join("tmp"), root.join("dev/shm")],
            layer: plan.layer().cloned(),
            limit,
        })
    }

    /// The bytes written when they reached the ceiling (a tmpfs is full, or their sum with the
    /// workdir's private layer is at the ceiling), else `None`.
    fn full(&mut self) -> Option<u64> {
        let mut used = self.layer.as_ref().map_or(0, |l| l.usage(self.limit));
        let mut any_full = false;
        for p in &self.places {
            let Ok(st) = nix::sys::statvfs::statvfs(p) else {
                continue;
            };
            let block = st.fragment_size().max(1);
            let total = st.blocks() * block;
            let free = st.blocks_free() * block;
            used += total.saturating_sub(free);
            any_full |= total > 0 && free == 0;
        }
        (any_full || used >= self.limit).then_some(used)
    }
}

/// How the disk ceiling was held: the sandbox's `/tmp` and `/dev/shm` are tmpfs mounts of the
/// ceiling's size (kernel); the workdir is written in place, outside it.
fn disk_enforcement(e: &mut crate::result::Enforcement, plan: Option<&Plan>, limits: &Limits) {
    let Some(limit) = limits.disk_bytes else {
        return;
    };
    match plan {
        Some(p) if p.private_tmp() && p.layer().is_some() => {
            e.disk = crate::result::Strength::Watchdog;
            e.notes.push(format!(
                "disk ceiling {}: the private /tmp and /dev/shm are tmpfs mounts of that size (kernel); the workdir's private layer is measured every sample and the run ended at the ceiling (watchdog)",
                crate::limits::format_bytes(limit)
            ));
        }
        Some(p) if p.private_tmp() => {
            e.disk = crate::result::Strength::Kernel;
            e.notes.push(format!(
                "disk ceiling {}: the private /tmp and /dev/shm are tmpfs mounts of that size; the workdir is written in place, outside it",
                crate::limits::format_bytes(limit)
            ));
        }
        _ => e.notes.push(format!(
            "disk ceiling {} not enforced: no private /tmp (no mount namespace)",
            crate::limits::format_bytes(limit)
        )),
    }
}

/// Command lines kept per run (each cut at 4 KiB).
const COMMANDS_KEPT: usize = 16;

/// The runtime's report on the program's stderr, judged against how the run ended.
fn runtime_report(
    scanned: &crate::reports::Scanned,
    ending: &Ending,
    status: Option<i32>,
    counters: &crate::backend::Counters,
    commands: &[String],
    spec: &ProbeSpec,
    pids_hit: bool,
) -> Option<crate::reports::Reported> {
    use crate::reports::judge::Ended;
    let table = crate::reports::REPORTS.as_ref().ok()?;
    let ended = match (ending, status) {
        _ if counters.oom_kills > 0 => Ended::Stopped("the kernel's memory kill"),
        (Ending::Exited, Some(st)) => Ended::ByItself(st),
        (Ending::Exited, None) => Ended::Stopped("its wait status was lost"),
        (Ending::Interrupted, _) => Ended::Stopped("qualify was interrupted"),
        (Ending::Timeout(..), _) => Ended::Stopped("the deadline"),
        (Ending::Watchdog { .. }, _) => Ended::Stopped("the memory watchdog"),
        (Ending::PidsExhausted { .. }, _) => Ended::Stopped("the pids guard"),
        (Ending::DiskFull { .. }, _) => Ended::Stopped("the disk ceiling"),
        _ => Ended::Stopped("qualify's stall verdict"),
    };
    let options: Vec<String> = crate::reports::limits::OPTION_VARIABLES
        .iter()
        .filter_map(|name| {
            spec.env
                .iter()
                .rev()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.to_string_lossy().into_owned())
                .or_else(|| {
                    // What the program got of qualify's environment (an allowlist when
                    // sandboxed), not qualify's own.
                    spec.sandbox
                        .inherited_env()
                        .into_iter()
                        .find(|(k, _)| k == name)
                        .map(|(_, v)| v.to_string_lossy().into_owned())
                })
        })
        .collect();
    let ctx = crate::reports::Context {
        ended,
        commands,
        options: &options,
        limits: &spec.limits,
        counters,
        pids_hit,
    };
    crate::reports::judge(
        table,
        crate::runtimes::RUNTIMES.as_ref().ok(),
        scanned,
        &ctx,
    )
}

/// Ask a Go program for its goroutine dump: SIGQUIT makes its runtime print every goroutine
/// to stderr and exit (the cell is ending anyway); wait (at most 3 s) until it has.
fn go_dump(pid: i32) {
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGQUIT,
    );
    let give_up = Instant::now() + Duration::from_secs(3);
    while Instant::now() < give_up
        && sample::state_and_ppid(pid).is_some_and(|(s, _)| s != 'Z' && s != 'X')
    {
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Kill every member of the tree and wait (bounded) until none is left; reap the orphans that
/// re-parented to qualify. Returns the CPU seconds of reaped orphans.
fn kill_tree(
    c: &Containment,
    tag: &str,
    main: i32,
    init: Option<i32>,
    seen: &HashMap<i32, u64>,
) -> (f64, f64) {
    let give_up = Instant::now() + Duration::from_secs(5);
    let mut user = 0.0;
    let mut sys = 0.0;
    // The process group first: it covers children started between two samples.
    let _ = nix::sys::signal::killpg(
        nix::unistd::Pid::from_raw(main),
        nix::sys::signal::Signal::SIGKILL,
    );
    let kernel = c.kill_all();
    loop {
        if !kernel {
            for (&pid, &start) in seen {
                // Only kill a remembered pid if it is still the same process.
                if sample::read_proc(pid).is_some_and(|p| p.starttime == start) {
                    kill_pid(pid);
                }
            }
        }
        let alive: HashSet<i32> = members(c, tag, main, init)
            .into_iter()
            .filter(|&p| p != main)
            .filter(|&p| sample::state_and_ppid(p).is_some_and(|(s, _)| s != 'Z'))
            .collect();
        for &p in &alive {
            kill_pid(p);
        }
        // Orphans re-parent to qualify only without the cell's init (which reaps them itself).
        let (u, s) = if init.is_none() {
            reap_orphans()
        } else {
            (0.0, 0.0)
        };
        user += u;
        sys += s;
        if alive.is_empty() || Instant::now() >= give_up {
            break;
        }
        if kernel {
            c.kill_all();
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    (user, sys)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::Counters;
    use crate::blocking::{Class, ThreadWait};
    use crate::classify::Watch;
    use crate::evidence::Sampling;
    use crate::limits::Limits;
    use serde_json::json;

    fn counters() -> Counters {
        Counters {
            oom_kills: 1,
            memory_peak: Some(4096),
            memory_current: None,
            memory_failcnt: Some(2),
            cpu_user_usec: Some(1500),
            cpu_system_usec: Some(500),
            cpu_usage_usec: Some(2000),
            nr_throttled: None,
            throttled_usec: None,
            pids_max_events: Some(0),
            pids_peak: Some(3),
            memory_pressure_some_usec: None,
            cpu_pressure_some_usec: Some(7),
        }
    }

    fn sampling() -> Sampling {
        Watch::new(&Limits::default(), 2.0, Instant::now()).stats()
    }

    /// The evidence object is part of every receipt: its JSON must not change shape.
    #[test]
    fn evidence_json_is_pinned_with_every_part_present() {
        let counters = counters();
        let wait = ThreadWait {
            pid: 10,
            tid: 11,
            comm: "worker".into(),
            state: "S".into(),
            class: Class::Internal,
            call: "futex(FUTEX_WAIT, no timeout)".into(),
            wchan: "futex_wait_queue".into(),
            futex: None,
            timeout_ms: None,
        };
        let value = Evidence {
            verdict_seconds: 2.5,
            cleanup_seconds: 0.125,
            launch_seconds: 0.0625,
            sample_interval_ms: 100,
            sampling: sampling(),
            counters: &counters,
            peak_memory_basis: "cgroup peak usage of the whole tree",
            cgroups: vec!["/sys/fs/cgroup/qualify-1-0".into()],
            backend_fallback: Some("fell back".into()),
            cgroups_not_removed: vec!["/sys/fs/cgroup/qualify-1-0".into()],
            leaked: vec![Leaked {
                pid: 12,
                comm: "daemon".into(),
            }],
            streams_open: Evidence::streams_open(false),
            threads: Some(vec![wait]),
            stacks: Some(json!({"tool": "gdb", "stacks": {"10": "frame 0 main"}})),
            interrupted: true,
            spin: None,
            wait_for: None,
            runtime_report: None,
            at_end: &[],
            leaks: None,
        }
        .to_value();
        let text = serde_json::to_string(&value).unwrap();
        assert_eq!(
            text,
            concat!(
                r#"{"backend_fallback":"fell back","#,
                r#""cgroups":["/sys/fs/cgroup/qualify-1-0"],"#,
                r#""cgroups_not_removed":["/sys/fs/cgroup/qualify-1-0"],"#,
                r#""cleanup_seconds":0.125,"#,
                r#""counters":{"cpu_pressure_some_usec":7,"cpu_system_usec":500,"#,
                r#""cpu_usage_usec":2000,"cpu_user_usec":1500,"memory_current":null,"#,
                r#""memory_failcnt":2,"memory_peak":4096,"memory_pressure_some_usec":null,"#,
                r#""nr_throttled":null,"oom_kills":1,"pids_max_events":0,"pids_peak":3,"#,
                r#""throttled_usec":null},"#,
                r#""interrupted":true,"launch_seconds":0.0625,"#,
                r#""leaked":[{"comm":"daemon","pid":12}],"#,
                r#""peak_memory_basis":"cgroup peak usage of the whole tree","#,
                r#""sample_interval_ms":100,"#,
                r#""sampling":{"allowed_cpus":2.0,"max_processes":0,"max_runnable_threads":0,"#,
                r#""max_threads":0,"mean_runnable_threads":0.0,"sampled_run_seconds":0.0,"#,
                r#""sampled_runqueue_wait_seconds":0.0,"samples":0},"#,
                r#""stacks":{"stacks":{"10":"frame 0 main"},"tool":"gdb"},"#,
                r#""streams_open":"a process outside the tree kept stdout/stderr open; tails taken as they stood","#,
                r#""threads":[{"call":"futex(FUTEX_WAIT, no timeout)","class":"internal","#,
                r#""comm":"worker","pid":10,"state":"S","tid":11,"wchan":"futex_wait_queue"}],"#,
                r#""verdict_seconds":2.5}"#
            )
        );
    }

    /// `evidence.wait_for`, the partial-stall examination, is part of the contract too.
    #[test]
    fn evidence_wait_for_json_is_pinned() {
        use crate::stall::{CycleEdge, Finding, Part, RuntimeReport, ThreadPart, Verdict};
        let counters = Counters::default();
        let finding = Finding {
            verdict: Verdict::Deadlock,
            why: "wait-for cycle: …".into(),
            decided_by: "a wait-for cycle; owners read from …".into(),
            window_seconds: 2.0,
            cycle: vec![CycleEdge {
                pid: 10,
                tid: 11,
                comm: "worker".into(),
                waits_for: "mutex 0x10".into(),
                held_by: 12,
                how: "glibc mutex owner field (/proc/PID/mem)".into(),
            }],
            threads: vec![ThreadPart {
                pid: 10,
                tid: 13,
                comm: "ticker".into(),
                part: Part::TimedLoop,
                wait: "nanosleep".into(),
                runtime: None,
                at: None,
                waits_for: None,
                held_by: None,
            }],
            runtimes: vec![RuntimeReport {
                runtime: "CPython".into(),
                tool: "py-spy".into(),
                pid: 10,
                said: "4 Python thread(s) named".into(),
                java_deadlock: Vec::new(),
                goroutines: Vec::new(),
            }],
            waits: Vec::new(),
        };
        let value = Evidence {
            verdict_seconds: 1.0,
            cleanup_seconds: 0.0,
            launch_seconds: 0.0,
            sample_interval_ms: 10,
            sampling: sampling(),
            counters: &counters,
            peak_memory_basis: "x",
            cgroups: Vec::new(),
            backend_fallback: None,
            cgroups_not_removed: Vec::new(),
            leaked: Vec::new(),
            streams_open: None,
            threads: None,
            stacks: None,
            interrupted: false,
            spin: None,
            wait_for: Some(&finding),
            runtime_report: None,
            at_end: &[],
            leaks: None,
        }
        .to_value();
        assert_eq!(
            serde_json::to_string(&value["wait_for"]).unwrap(),
            concat!(
                r#"{"cycle":[{"comm":"worker","held_by":12,"how":"glibc mutex owner field (/proc/PID/mem)","#,
                r#""pid":10,"tid":11,"waits_for":"mutex 0x10"}],"#,
                r#""decided_by":"a wait-for cycle; owners read from …","#,
                r#""runtimes":[{"pid":10,"runtime":"CPython","said":"4 Python thread(s) named","tool":"py-spy"}],"#,
                r#""threads":[{"comm":"ticker","part":"timed_loop","pid":10,"tid":13,"wait":"nanosleep"}],"#,
                r#""verdict":"deadlock","why":"wait-for cycle: …","window_seconds":2.0}"#
            )
        );
    }

    #[test]
    fn evidence_json_is_pinned_with_optional_parts_absent() {
        let counters = Counters::default();
        let value = Evidence {
            verdict_seconds: 1.0,
            cleanup_seconds: 0.0,
            launch_seconds: 0.0,
            sample_interval_ms: 10,
            sampling: sampling(),
            counters: &counters,
            peak_memory_basis: "largest sampled cgroup usage of the whole tree",
            cgroups: Vec::new(),
            backend_fallback: None,
            cgroups_not_removed: Vec::new(),
            leaked: Vec::new(),
            streams_open: Evidence::streams_open(true),
            threads: None,
            stacks: None,
            interrupted: false,
            spin: None,
            wait_for: None,
            runtime_report: None,
            at_end: &[],
            leaks: None,
        }
        .to_value();
        let keys: Vec<&str> = value
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys,
            [
                "cleanup_seconds",
                "counters",
                "launch_seconds",
                "peak_memory_basis",
                "sample_interval_ms",
                "sampling",
                "verdict_seconds"
            ]
        );
        assert_eq!(value["counters"]["memory_peak"], Value::Null);
        assert_eq!(value["verdict_seconds"], 1.0);
    }
}
