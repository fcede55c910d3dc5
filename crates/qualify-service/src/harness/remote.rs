//! A dependency on a node of its own (`[[dependency]] node = "own"` under Slurm): both sides of
//! the exchange between the service cell and the dependency's host step, through files in the
//! cell's shared state directory (`dep-<name>/`). The host step (`qualify dependency-host`,
//! started by the cell with `srun --overlap --nodelist=NODE`) runs a [`Harness`] of that one
//! dependency on its node — the dependency started there, its fault proxy on the node's own
//! address — and [`host`] answers the cell:
//!
//! | file | written by | meaning |
//! |---|---|---|
//! | `ready.json` | host | started and ready: node, proxy address, `{dep_port}` |
//! | `error` | host | could not start: why |
//! | `arm` | cell | the measured phase started at this UNIX time (seconds) |
//! | `freeze` | cell | the load is over: the proxy's counters as they stand are the cell's |
//! | `settle` | cell | let process faults run their course (`early`: stop them where they are) |
//! | `settled` | host | they have |
//! | `stop` | cell | stop the proxy and the dependency |
//! | `injected.json` | host | what the dependency had done to it ([`Injected`]) |
//!
//! Each side beats (`qualify_slurm::heartbeat`): a host whose node falls silent is a lost node
//! ([`RemoteDependency::lost`]), never a failure of the service; a host whose service's node
//! falls silent stops its dependency and ends. Times cross as UNIX times (the nodes' clocks are
//! assumed synchronised, as Slurm itself assumes).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use qualify_probe::CancelToken;
use qualify_slurm::heartbeat::{SILENT_NODE, Watch};
use qualify_slurm::write_atomically as write_atomic;
use serde::{Deserialize, Serialize};

use super::{Harness, Injected};

/// How often either side looks at the other's files.
const POLL: Duration = Duration::from_millis(50);
/// The longest the cell waits for a host to report what was injected, or that a process fault
/// ran its course (beyond that it is reported as missing, not waited for).
const ANSWER_WITHIN: Duration = Duration::from_secs(60);

/// Why a dependency's host could not be started, was not ready, or could not answer.
#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    #[error("cannot write {}: {source}", path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("no command to start the dependency's host")]
    NoCommand,
    #[error("cannot run {program}: {source}")]
    Spawn {
        program: String,
        source: std::io::Error,
    },
    #[error("its host wrote an unreadable {file}: {source}")]
    Unreadable {
        file: &'static str,
        source: serde_json::Error,
    },
    #[error("cannot serialize {what}: {source}")]
    Serialize {
        what: &'static str,
        source: serde_json::Error,
    },
    /// The host's own account of why it could not start the dependency.
    #[error("its host could not start it: {0}")]
    Host(String),
    #[error("its host ended ({status}) before it was ready{tail}")]
    Ended { status: ExitStatus, tail: String },
    #[error("{0}")]
    Lost(String),
    #[error("its host did not say it was ready within {:.0} s", within.as_secs_f64())]
    NotReady { within: Duration },
    #[error("the run was stopping")]
    Stopping,
    #[error("the host ran no dependency")]
    NoDependency,
}

fn write_err(path: &Path) -> impl FnOnce(std::io::Error) -> RemoteError + '_ {
    move |source| RemoteError::Write {
        path: path.to_path_buf(),
        source,
    }
}

/// `ready.json`: the host's answer once the dependency is ready.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HostReady {
    pub node: String,
    /// Where the proxy listens (the node's address).
    pub proxy: SocketAddr,
    pub dep_port: u16,
}

/// The exchange directory of dependency `name` in a cell's state directory.
pub fn exchange_dir(state_dir: &Path, name: &str) -> PathBuf {
    state_dir.join(format!("dep-{name}"))
}

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// An instant of this process as a UNIX time.
fn to_unix(t: Instant) -> f64 {
    let now = Instant::now();
    match now.checked_duration_since(t) {
        Some(ago) => unix_now() - ago.as_secs_f64(),
        None => unix_now() + t.duration_since(now).as_secs_f64(),
    }
}

/// A UNIX time as an instant of this process.
fn from_unix(t: f64) -> Instant {
    let now = Instant::now();
    let ago = unix_now() - t;
    if ago >= 0.0 {
        now.checked_sub(Duration::from_secs_f64(ago)).unwrap_or(now)
    } else {
        now + Duration::from_secs_f64(-ago)
    }
}

/// The command that starts a dependency's host on its node (built by the binary: `srun
/// --overlap --nodelist=NODE … qualify dependency-host …`).
#[derive(Debug, Clone)]
pub struct RemoteLaunch {
    pub dependency: String,
    pub node: String,
    pub argv: Vec<String>,
}

/// The cell's side of a dependency on another node.
pub struct RemoteDependency {
    pub(crate) name: String,
    pub(crate) node: String,
    dir: PathBuf,
    child: Option<Child>,
    pub(crate) ready: HostReady,
    watch: Watch,
    lost: Option<String>,
}

/// A host started, not yet ready.
pub struct Launching {
    name: String,
    node: String,
    dir: PathBuf,
    child: Child,
    watch: Watch,
}

impl RemoteDependency {
    /// Start the host of `launch` (its exchange directory under `state_dir`).
    pub fn launch(launch: &RemoteLaunch, state_dir: &Path) -> Result<Launching, RemoteError> {
        let dir = exchange_dir(state_dir, &launch.dependency);
        std::fs::create_dir_all(&dir).map_err(write_err(&dir))?;
        let (program, args) = launch.argv.split_first().ok_or(RemoteError::NoCommand)?;
        let (out_path, err_path) = (dir.join("host.out"), dir.join("host.err"));
        let out = std::fs::File::create(&out_path).map_err(write_err(&out_path))?;
        let err = std::fs::File::create(&err_path).map_err(write_err(&err_path))?;
        let child = Command::new(program)
            .args(args)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .map_err(|source| RemoteError::Spawn {
                program: program.clone(),
                source,
            })?;
        Ok(Launching {
            name: launch.dependency.clone(),
            node: launch.node.clone(),
            watch: Watch::nodes(state_dir, std::slice::from_ref(&launch.node)),
            dir,
            child,
        })
    }

    /// The node's silence, once it has been silent for [`SILENT_NODE`]: the detail naming it.
    pub fn lost(&mut self) -> Option<String> {
        if self.lost.is_none()
            && let Some((node, d)) = self.watch.silent(SILENT_NODE)
        {
            self.lost = Some(silent_detail(&node, &self.name, d));
        }
        self.lost.clone()
    }

    pub(crate) fn arm(&self, measured_start: Instant) {
        let _ = write_atomic(&self.dir.join("arm"), &to_unix(measured_start).to_string());
    }

    pub(crate) fn freeze(&self) {
        let _ = write_atomic(&self.dir.join("freeze"), "");
    }

    /// Tell the host to let its process fault run its course; wait until it has.
    pub(crate) fn settle(&mut self, early: bool) {
        let _ = write_atomic(
            &self.dir.join("settle"),
            if early { "early" } else { "course" },
        );
        let _ = self.await_file("settled");
    }

    /// Stop it; what was injected (`None` when the host never said: lost, or ended without
    /// an answer).
    pub(crate) fn finish(mut self) -> (Option<Injected>, Option<String>) {
        let _ = write_atomic(&self.dir.join("stop"), "");
        let injected = self.await_file("injected.json").and_then(|text| {
            serde_json::from_str::<Injected>(&text)
                .map_err(|e| {
                    self.lost.get_or_insert_with(|| {
                        format!(
                            "the host of dependency `{}` on {} wrote an unreadable report: {e}",
                            self.name, self.node
                        )
                    });
                })
                .ok()
        });
        if let Some(mut child) = self.child.take() {
            let start = Instant::now();
            while start.elapsed() < Duration::from_secs(5) {
                if matches!(child.try_wait(), Ok(Some(_))) {
                    break;
                }
                std::thread::sleep(POLL);
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        let lost = self.lost.clone().or_else(|| {
            injected.is_none().then(|| {
                format!(
                    "the host of dependency `{}` on {} ended without a report{}",
                    self.name,
                    self.node,
                    super::last_lines(&read(&self.dir.join("host.err")))
                )
            })
        });
        (injected, lost)
    }

    /// Wait for the host's `file`: its text, or `None` (the node lost, the host gone, or no
    /// answer within [`ANSWER_WITHIN`]).
    fn await_file(&mut self, file: &str) -> Option<String> {
        let path = self.dir.join(file);
        let start = Instant::now();
        let mut gone_at: Option<Instant> = None;
        while start.elapsed() < ANSWER_WITHIN {
            if let Ok(text) = std::fs::read_to_string(&path) {
                return Some(text);
            }
            if self.lost().is_some() {
                return None;
            }
            // The host (srun) ended: a last look after its files had time to land.
            let ended = self
                .child
                .as_mut()
                .is_none_or(|c| matches!(c.try_wait(), Ok(Some(_))));
            if ended {
                let at = *gone_at.get_or_insert_with(Instant::now);
                if at.elapsed() > Duration::from_secs(1) {
                    return std::fs::read_to_string(&path).ok();
                }
            }
            std::thread::sleep(POLL);
        }
        None
    }
}

impl Launching {
    /// Wait until the host says the dependency is ready (up to `within`), or why not.
    pub fn wait_ready(
        mut self,
        within: Duration,
        cancel: &CancelToken,
    ) -> Result<RemoteDependency, RemoteError> {
        let start = Instant::now();
        loop {
            if let Ok(text) = std::fs::read_to_string(self.dir.join("ready.json")) {
                let ready: HostReady =
                    serde_json::from_str(&text).map_err(|source| RemoteError::Unreadable {
                        file: "ready.json",
                        source,
                    })?;
                return Ok(RemoteDependency {
                    name: self.name,
                    node: self.node,
                    dir: self.dir,
                    child: Some(self.child),
                    ready,
                    watch: self.watch,
                    lost: None,
                });
            }
            let why = if let Ok(text) = std::fs::read_to_string(self.dir.join("error")) {
                Some(RemoteError::Host(text.trim().to_string()))
            } else if let Ok(Some(status)) = self.child.try_wait() {
                // Its files may land just after it ended.
                std::thread::sleep(Duration::from_millis(200));
                if self.dir.join("ready.json").exists() {
                    continue;
                }
                Some(RemoteError::Ended {
                    status,
                    tail: super::last_lines(&read(&self.dir.join("host.err"))),
                })
            } else if let Some((node, d)) = self.watch.silent(SILENT_NODE) {
                Some(RemoteError::Lost(silent_detail(&node, &self.name, d)))
            } else if start.elapsed() > within {
                Some(RemoteError::NotReady { within })
            } else if cancel.load(std::sync::atomic::Ordering::Relaxed) {
                Some(RemoteError::Stopping)
            } else {
                None
            };
            if let Some(why) = why {
                let _ = self.child.kill();
                let _ = self.child.wait();
                return Err(why);
            }
            std::thread::sleep(POLL);
        }
    }
}

impl Drop for RemoteDependency {
    /// Never leave a host running: a dependency dropped without `finish` is told to stop and
    /// its srun is ended.
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = write_atomic(&self.dir.join("stop"), "");
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

fn silent_detail(node: &str, dependency: &str, d: Duration) -> String {
    format!(
        "node {node} (dependency `{dependency}`) fell silent: no heartbeat for {:.1} s; the node was lost, so the cell says nothing about the service",
        d.as_secs_f64()
    )
}

/// The host's side: answer the cell through `dir` for the one dependency `harness` runs, until
/// told to stop, the service's node falls silent (`service`), or `cancel` (a signal, a lapsed
/// lease). Writes `ready.json` first.
pub fn host(
    mut harness: Harness,
    dir: &Path,
    ready: &HostReady,
    mut service: Watch,
    cancel: &CancelToken,
) -> Result<(), RemoteError> {
    let text = serde_json::to_string(ready).map_err(|source| RemoteError::Serialize {
        what: "ready.json",
        source,
    })?;
    let path = dir.join("ready.json");
    write_atomic(&path, &text).map_err(write_err(&path))?;
    let (mut armed, mut frozen, mut settled) = (false, false, false);
    let stopped_early = loop {
        if cancel.load(std::sync::atomic::Ordering::Relaxed) {
            break true;
        }
        if service.silent(SILENT_NODE).is_some() {
            break true;
        }
        if !armed && let Ok(t) = std::fs::read_to_string(dir.join("arm")) {
            armed = true;
            if let Ok(t) = t.trim().parse::<f64>() {
                harness.arm(from_unix(t));
            }
        }
        if !frozen && dir.join("freeze").exists() {
            frozen = true;
            harness.freeze();
        }
        if !settled && let Ok(how) = std::fs::read_to_string(dir.join("settle")) {
            settled = true;
            harness.settle(how.trim() == "early");
            let _ = write_atomic(&dir.join("settled"), "");
        }
        if dir.join("stop").exists() {
            break false;
        }
        std::thread::sleep(POLL);
    };
    let mut injected = harness.finish();
    if stopped_early {
        return Ok(());
    }
    let Some(one) = injected.pop() else {
        return Err(RemoteError::NoDependency);
    };
    let text = serde_json::to_string(&one).map_err(|source| RemoteError::Serialize {
        what: "injected.json",
        source,
    })?;
    let path = dir.join("injected.json");
    write_atomic(&path, &text).map_err(write_err(&path))
}
