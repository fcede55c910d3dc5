//! Keeping concurrent `qualify run`s apart, with `flock` locks the kernel drops when their holder
//! dies (SIGKILL included), so a killed run never leaves a lock behind:
//!
//! - the **workdir lock** (`<workdir>/.qualify/run.lock`): held from the build step until the
//!   receipt is written (under Slurm, for the build step only), so no run rebuilds the program
//!   another run is executing — that race once failed cells with "exited with status 126" and
//!   blamed the artifact;
//! - the **measurement lock** (`<machine dir>/measure.lock`): held by a run that measures
//!   (`[performance]` or `--repeat`) for its whole region, so two measuring runs never overlap;
//! - the **run registry** (`<machine dir>/runs/`): one locked file per active run, so a
//!   measuring run can state which other qualify runs used the machine beside its measurements.
//!
//! Each lock file holds its holder's description (pid, start, spec) for the one who waits.
//! The machine directory is `$QUALIFY_LOCK_DIR`, else `/run/lock/qualify` (shared by every
//! user: created world-writable and sticky), else `qualify-locks` in the temporary directory.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};
use qualify_probe::CancelToken;
use serde::{Deserialize, Serialize};

use super::Context;
use crate::error::Error;

/// How often a waiting run tries the lock again, and checks for Ctrl-C.
const RETRY: Duration = Duration::from_millis(100);
/// How often a measuring run looks for other active runs.
const WATCH: Duration = Duration::from_millis(500);

/// Who holds (or held) a lock: written into the lock file, read by those who wait.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Holder {
    pub pid: u32,
    /// Seconds since the Unix epoch.
    pub started: f64,
    /// The spec the run was started with (absolute).
    pub spec: String,
}

impl Holder {
    /// This process, running `spec`.
    pub fn me(spec: &Path) -> Holder {
        Holder {
            pid: std::process::id(),
            started: unix_now(),
            spec: std::path::absolute(spec)
                .unwrap_or_else(|_| spec.to_path_buf())
                .display()
                .to_string(),
        }
    }

    /// `the run of pid 4242 (started 12 s ago, spec /w/qualify.toml)`.
    pub fn describe(&self) -> String {
        let ago = (unix_now() - self.started).max(0.0);
        format!(
            "the run of pid {} (started {} ago, spec {})",
            self.pid,
            ago_text(ago),
            self.spec
        )
    }
}

fn ago_text(seconds: f64) -> String {
    let s = seconds.round() as u64;
    match s {
        0..=119 => format!("{s} s"),
        120..=7199 => format!("{} min", s / 60),
        _ => format!("{} h", s / 3600),
    }
}

pub fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// Why a lock was not taken.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// `--no-wait`, and someone holds it.
    #[error("{what} is in use by {holder}")]
    Busy { what: String, holder: String },
    /// qualify was asked to stop while it waited.
    #[error("interrupted while waiting for {holder} ({what}); nothing was run or written")]
    Interrupted { what: String, holder: String },
    /// The lock file could not be created or locked.
    #[error("cannot lock {}: {error}", path.display())]
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
}

/// A held lock: released when dropped (the file is closed), or when the process dies.
#[derive(Debug)]
pub struct Held {
    _file: Flock<File>,
}

/// Take the exclusive lock on `path` (created with its directory when missing), recording
/// `me` in it. Someone else holding it: with `wait`, `on_wait` is told who (once, and again
/// whenever the holder changes) and the lock is tried every [`RETRY`] until it is free or
/// `cancel` is set; without, [`LockError::Busy`] names the holder. `what` names the lock in
/// messages (`the workdir /w`).
pub fn acquire(
    path: &Path,
    what: &str,
    me: &Holder,
    wait: bool,
    cancel: &CancelToken,
    mut on_wait: impl FnMut(&str),
) -> Result<Held, LockError> {
    let io = |error| LockError::Io {
        path: path.to_path_buf(),
        error,
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(io)?;
    let mut told: Option<String> = None;
    let mut file = loop {
        match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
            Ok(locked) => break locked,
            Err((f, Errno::EWOULDBLOCK)) => {
                file = f;
                let holder = holder_text(path);
                if !wait {
                    return Err(LockError::Busy {
                        what: what.to_string(),
                        holder,
                    });
                }
                if cancel.load(Ordering::Relaxed) {
                    return Err(LockError::Interrupted {
                        what: what.to_string(),
                        holder,
                    });
                }
                if told.as_deref() != Some(holder.as_str()) {
                    on_wait(&holder);
                    told = Some(holder);
                }
                std::thread::sleep(RETRY);
            }
            Err((_, errno)) => return Err(io(std::io::Error::from(errno))),
        }
    };
    // Ours now: say who holds it. A failure to write the note only makes waiters' messages
    // vaguer; the lock itself holds.
    let _ = file.set_len(0);
    if let Ok(text) = serde_json::to_string(me) {
        let _ = file.write_all(text.as_bytes());
        let _ = file.flush();
    }
    Ok(Held { _file: file })
}

/// Take a lock for `ctx`'s run (waiting, unless `--no-wait`, with a line on stderr saying for
/// whom): `what` names it in messages.
pub fn hold(ctx: &Context<'_>, path: &Path, what: &str) -> Result<Held, Error> {
    let waiting = |holder: &str| eprintln!("qualify: waiting for {holder} ({what})…");
    acquire(
        path,
        what,
        &ctx.holder,
        !ctx.args.no_wait,
        ctx.cancel,
        waiting,
    )
    .map_err(|e| match e {
        LockError::Busy { .. } => Error::input(
            e.to_string(),
            "wait for it (run without --no-wait)",
        ),
        LockError::Interrupted { .. } => Error::Interrupted {
            message: e.to_string(),
        },
        LockError::Io { .. } => Error::input(
            e.to_string(),
            "make the directory writable, or set QUALIFY_LOCK_DIR to a writable directory for the machine's locks",
        ),
    })
}

/// Who holds the lock at `path`, as its file says (it may be between holders).
fn holder_text(path: &Path) -> String {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|t| serde_json::from_str::<Holder>(&t).ok())
        .map(|h| h.describe())
        .unwrap_or_else(|| "another qualify run".to_string())
}

/// The lock file of the artifact's workdir.
pub fn workdir_lock_path(workdir: &Path) -> PathBuf {
    workdir.join(".qualify").join("run.lock")
}

/// The directory of the machine-wide locks and the run registry.
pub fn machine_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("QUALIFY_LOCK_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(d);
    }
    let run_lock = Path::new("/run/lock");
    if run_lock.is_dir() {
        let dir = run_lock.join("qualify");
        if shared_dir(&dir).is_ok() {
            return dir;
        }
    }
    std::env::temp_dir().join("qualify-locks")
}

/// Create `dir` (world-writable, sticky, like /tmp: every user's runs register there) unless
/// it exists; check that this user can write to it.
fn shared_dir(dir: &Path) -> std::io::Result<()> {
    if !dir.is_dir() {
        match std::fs::DirBuilder::new().mode(0o1777).create(dir) {
            Ok(()) => {
                // The umask narrowed the mode: set it as meant.
                std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o1777))?;
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
    }
    let probe = dir.join(format!(".w{}", std::process::id()));
    File::create(&probe)?;
    std::fs::remove_file(&probe)
}

/// The machine's measurement lock file.
pub fn measure_lock_path() -> PathBuf {
    machine_dir().join("measure.lock")
}

/// This run's entry in the machine's run registry: locked for the run's life.
#[derive(Debug)]
pub struct Registration {
    _file: Flock<File>,
    path: PathBuf,
}

impl Drop for Registration {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

fn registry_dir() -> PathBuf {
    machine_dir().join("runs")
}

/// Register this run. `None` when the registry cannot be written (the run goes on; a
/// measuring run then cannot see it, and says nothing false: others simply miss it).
pub fn register(me: &Holder) -> Option<Registration> {
    let dir = registry_dir();
    std::fs::create_dir_all(&dir).ok()?;
    let _ = std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o1777));
    let name = format!("{}.{}", me.pid, (me.started * 1e6) as u64);
    // Created and locked under a hidden name, then renamed: a scanner never sees it unlocked.
    let tmp = dir.join(format!(".{name}"));
    let file = File::create(&tmp).ok()?;
    let Ok(mut file) = Flock::lock(file, FlockArg::LockExclusiveNonblock) else {
        let _ = std::fs::remove_file(&tmp);
        return None;
    };
    let _ = std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o644));
    let text = serde_json::to_string(me).ok()?;
    file.write_all(text.as_bytes()).ok()?;
    let path = dir.join(&name);
    std::fs::rename(&tmp, &path).ok()?;
    Some(Registration { _file: file, path })
}

/// The other runs active on this machine now (entries whose lock is held); entries left by
/// runs that died are removed.
pub fn others(me: &Holder) -> Vec<Holder> {
    let Ok(entries) = std::fs::read_dir(registry_dir()) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for e in entries.flatten() {
        let name = e.file_name();
        if name.to_string_lossy().starts_with('.') {
            continue;
        }
        let path = e.path();
        let Ok(file) = File::open(&path) else {
            continue;
        };
        match Flock::lock(file, FlockArg::LockSharedNonblock) {
            Err((_, Errno::EWOULDBLOCK)) => {
                let holder = std::fs::read_to_string(&path)
                    .ok()
                    .and_then(|t| serde_json::from_str::<Holder>(&t).ok());
                if let Some(h) = holder
                    && h != *me
                {
                    found.push(h);
                }
            }
            Ok(_) => {
                // Nobody holds it: its run ended without removing it (killed).
                let _ = std::fs::remove_file(&path);
            }
            Err(_) => {}
        }
    }
    found.sort_by(|a, b| a.started.total_cmp(&b.started));
    found
}

/// Watches the registry while a run measures: every other run seen active, once.
pub struct Watcher {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<Vec<Holder>>>,
    from: f64,
}

impl Watcher {
    pub fn start(me: Holder) -> Watcher {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("qualify-runs".into())
            .spawn(move || {
                let mut seen: Vec<Holder> = Vec::new();
                loop {
                    for h in others(&me) {
                        if !seen.contains(&h) {
                            seen.push(h);
                        }
                    }
                    if flag.load(Ordering::Relaxed) {
                        return seen;
                    }
                    // Sleep in short steps so that stopping is prompt.
                    let until = std::time::Instant::now() + WATCH;
                    while std::time::Instant::now() < until && !flag.load(Ordering::Relaxed) {
                        std::thread::sleep(Duration::from_millis(20));
                    }
                }
            })
            .ok();
        Watcher {
            stop,
            thread,
            from: unix_now(),
        }
    }

    /// Stop watching: when measuring began and ended, and the other runs seen meanwhile.
    pub fn finish(mut self, exclusive: bool) -> qualify_perf::MachineShare {
        self.stop.store(true, Ordering::Relaxed);
        let watched = self.thread.is_some();
        let seen = self
            .thread
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or_default();
        qualify_perf::MachineShare {
            from: self.from,
            to: unix_now(),
            exclusive,
            watched,
            concurrent_runs: seen
                .iter()
                .map(|h| format!("pid {} ({})", h.pid, h.spec))
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir()
            .join("lock-unit")
            .join(format!("{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn a_held_lock_names_its_holder_and_is_free_once_dropped() {
        let d = dir("held");
        let path = d.join("run.lock");
        let cancel = CancelToken::default();
        let first = Holder {
            pid: 4242,
            started: unix_now() - 12.0,
            spec: "/w/qualify.toml".into(),
        };
        let held = acquire(&path, "the workdir /w", &first, false, &cancel, |_| {}).unwrap();
        let me = Holder::me(Path::new("other.toml"));
        match acquire(&path, "the workdir /w", &me, false, &cancel, |_| {}) {
            Err(LockError::Busy { what, holder }) => {
                assert_eq!(what, "the workdir /w");
                assert!(
                    holder
                        .starts_with("the run of pid 4242 (started 12 s ago, spec /w/qualify.toml"),
                    "{holder}"
                );
            }
            other => panic!("expected Busy, got {other:?}"),
        }
        drop(held);
        acquire(&path, "the workdir /w", &me, false, &cancel, |_| {}).unwrap();
    }

    #[test]
    fn waiting_tells_who_once_and_stops_when_cancelled() {
        let d = dir("wait");
        let path = d.join("run.lock");
        let cancel = CancelToken::default();
        let holder = Holder::me(Path::new("a.toml"));
        let _held = acquire(&path, "w", &holder, false, &cancel, |_| {}).unwrap();
        let flag = cancel.clone();
        let stopper = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(350));
            flag.store(true, Ordering::Relaxed);
        });
        let mut told = Vec::new();
        let r = acquire(&path, "w", &holder, true, &cancel, |h| {
            told.push(h.to_string())
        });
        stopper.join().unwrap();
        assert!(matches!(r, Err(LockError::Interrupted { .. })), "{r:?}");
        assert_eq!(told.len(), 1, "{told:?}");
        assert!(told[0].contains(&format!("pid {}", std::process::id())));
    }

    #[test]
    fn ages_read_in_seconds_minutes_hours() {
        assert_eq!(ago_text(12.2), "12 s");
        assert_eq!(ago_text(600.0), "10 min");
        assert_eq!(ago_text(7300.0), "2 h");
    }
}
