//! `qualify-probe` owns the primitive everything else rests on: run one command as a black box
//! under resource ceilings, own its whole process tree, watch it through `/proc` and cgroup
//! counters, and classify how it ended (`ok`, `exit_failure`, `crash`, `oom_killed`,
//! `out_of_memory`, `deadlock`, `livelock`, `timeout`, `killed`, `interrupted`) with the evidence
//! that supports the verdict — the runtime's own fatal report among it ([`reports`]).
//!
//! Entry point: [`probe`] (one run) and [`probe_repeated`] (N runs, compared by stdout digest).
//! The enforcement backend (cgroup v2, cgroup v1/hybrid, rlimit + watchdog) is chosen by
//! [`BackendChoice`] and always reported in [`ProbeResult::enforcement`].

pub mod backend;
mod blocking;
mod cell;
mod children;
mod classify;
mod control;
mod errno;
mod evidence;
mod inspect;
mod leaks;
pub mod limits;
mod memory;
#[cfg(test)]
mod messages_tests;
pub mod netns;
pub mod observe;
mod output;
mod ranks;
pub mod reports;
pub mod result;
mod rules;
mod runtimes;
mod sample;
pub mod sandbox;
pub mod selftest;
pub mod sockets;
mod spawn;
mod spin;
mod stacks;
mod stall;
mod supervise;
#[cfg(test)]
mod testkit;

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

pub use backend::BackendChoice;
pub use classify::{is_crash_signal, signal_name};
pub use control::{Control, SignalError, TreeCounts};
pub use limits::{Limits, Progress, format_bytes, parse_cpus, parse_duration, parse_size};
pub use observe::{Membership, NodeState, NodeWatch, Observation, Selector, Stuck};
pub use result::{Enforcement, Flag, Outcome, ProbeResult, Strength, TimeoutKind};
pub use sandbox::{Mode as SandboxMode, Network, Role, Sandbox, SandboxEnforcement};

/// What to run and under which ceilings.
#[derive(Debug, Clone)]
pub struct ProbeSpec {
    /// Program and arguments; executed directly (no shell).
    pub argv: Vec<OsString>,
    /// Working directory; `None` inherits qualify's.
    pub workdir: Option<PathBuf>,
    /// Extra environment variables for the program, added to what the sandbox lets through of
    /// qualify's environment ([`Sandbox::inherited_env`]).
    pub env: Vec<(OsString, OsString)>,
    pub limits: Limits,
    pub backend: BackendChoice,
    /// A handle for another thread to watch the run and ask it to stop gracefully (services).
    pub control: Option<Arc<Control>>,
    /// What the program may see and touch (on by default).
    pub sandbox: Sandbox,
    /// Files qualify made for the program to write and reads after the run (a perturbation
    /// log): each must exist, and the sandbox binds it writable at its own path.
    pub shared_files: Vec<PathBuf>,
    /// The program's stdin, stdout and stderr, when not qualify's (`/dev/null` and two pipes
    /// whose tails the result keeps): a program started on a held-out check's behalf talks to
    /// the check directly, and its result has no output tails.
    pub stdio: Option<Arc<[std::os::fd::OwnedFd; 3]>>,
}

impl ProbeSpec {
    pub fn new(argv: Vec<OsString>) -> ProbeSpec {
        ProbeSpec {
            argv,
            workdir: None,
            env: Vec::new(),
            limits: Limits::default(),
            backend: BackendChoice::Auto,
            control: None,
            sandbox: Sandbox::default(),
            shared_files: Vec::new(),
            stdio: None,
        }
    }

    /// The result of this probe when it never started because qualify was stopping (or its
    /// executor could not take it): outcome `interrupted`, nothing measured, nothing enforced.
    /// It is recorded, never taken as evidence about the artifact.
    pub fn not_run(&self, detail: impl Into<String>) -> ProbeResult {
        ProbeResult::unobserved(
            Outcome::Interrupted,
            detail,
            Enforcement::none(self.backend.to_string()),
            self.limits.clone(),
        )
    }
}

/// Set to `true` to stop a running probe: the tree is killed and the result says `interrupted`.
/// Share one token between a signal handler and any number of probes.
pub type CancelToken = Arc<AtomicBool>;

/// Setup errors: the program could not be probed at all (exit status 2 on the command line).
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    #[error("no command given; usage: qualify probe [OPTIONS] -- COMMAND [ARGS...]")]
    EmptyCommand,
    #[error(
        "command not found: `{program}`; check the spelling, or give a path (e.g. ./{program})"
    )]
    CommandNotFound { program: String },
    #[error("cannot execute `{program}`: {source}; check that it is an executable file")]
    CannotExecute {
        program: String,
        source: std::io::Error,
    },
    #[error(
        "backend {backend} is not available on this host: {reason}; use --backend auto to pick the strongest available"
    )]
    BackendUnavailable {
        backend: String,
        #[source]
        reason: backend::BackendError,
    },
    #[error(
        "the sandbox's {layer} layer cannot be enforced on this host: {reason}; use --sandbox on (or [sandbox] mode = \"on\") to run with it stated as `none`, or fix the host"
    )]
    SandboxRequired { layer: String, reason: String },
    #[error(
        "`{program}` is {path}, which the sandbox hides ({role}); add \"{dir}\" to [sandbox] readable (or --readable {dir}), install it elsewhere, or run with --sandbox off",
        dir = sandbox::readable_fix(std::path::Path::new(path))
    )]
    SandboxHidden {
        program: String,
        path: String,
        role: String,
    },
    /// The program is a script whose interpreter (its `#!` line, followed through links) the
    /// sandbox hides: a venv made from a Python under a home directory.
    #[error(transparent)]
    SandboxHiddenInterpreter(Box<HiddenInterpreter>),
    /// A path, argument or environment entry holds a NUL byte, which the kernel cannot take.
    #[error("{what} `{text}` contains a NUL byte")]
    NulByte { what: &'static str, text: String },
    /// A `writable` path of the sandbox policy is not there.
    #[error("sandbox: the writable path {} does not exist", path.display())]
    WritableMissing { path: PathBuf },
    /// The sandbox policy's `user` names no account.
    #[error("sandbox: no user `{user}` in /etc/passwd")]
    NoSuchUser { user: String },
    /// A file bound into the sandbox must land in its private `/tmp`.
    #[error("sandbox: a bind into the sandbox must be under /tmp, not {}", target.display())]
    BindOutsideTmp { target: PathBuf },
    /// More writable, readable and hidden paths than the cell's init keeps open.
    #[error("sandbox: too many writable, readable and hidden paths")]
    TooManyPaths,
    /// The cell's init died before the program's process started (it reported nothing).
    #[error("starting `{program}`: the cell's init ended before the program started")]
    InitEnded { program: String },
    #[error("{context}: {source}")]
    Io {
        context: String,
        source: std::io::Error,
    },
}

/// A script's interpreter (its `#!` line, followed through links) that the sandbox hides.
#[derive(Debug, thiserror::Error)]
#[error(
    "`{program}` runs under {interpreter} (its #! line), which is {path}: the sandbox hides it ({role}), so the program would not start; add \"{readable}\" to [sandbox] readable (or --readable {readable}), install the interpreter elsewhere, or run with --sandbox off"
)]
pub struct HiddenInterpreter {
    pub program: String,
    pub interpreter: String,
    pub path: String,
    pub role: String,
    pub readable: String,
}

impl ProbeError {
    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> ProbeError {
        ProbeError::Io {
            context: context.into(),
            source,
        }
    }
}

/// CPUs this process may run on (its affinity mask), at least 1: what a probe's tree can use
/// before any CPU ceiling.
pub fn allowed_cpus() -> usize {
    nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0))
        .map(|set| {
            (0..nix::sched::CpuSet::count())
                .filter(|&i| set.is_set(i).unwrap_or(false))
                .count()
        })
        .unwrap_or(1)
        .max(1)
}

/// Run `spec` once and classify how it ended.
pub fn probe(spec: &ProbeSpec, cancel: &CancelToken) -> Result<ProbeResult, ProbeError> {
    supervise::run_once(spec, cancel)
}

/// Run `spec` `repeat` times in sequence; the result carries `runs` and `distinct_outputs`, and
/// its outcome is `ok` only if every run was. Stops early (keeping what finished) when cancelled.
pub fn probe_repeated(
    spec: &ProbeSpec,
    repeat: usize,
    cancel: &CancelToken,
    mut on_run: impl FnMut(usize, &ProbeResult),
) -> Result<ProbeResult, ProbeError> {
    if repeat <= 1 {
        let r = probe(spec, cancel)?;
        on_run(0, &r);
        return Ok(r);
    }
    let mut runs = Vec::new();
    for i in 0..repeat {
        let r = probe(spec, cancel)?;
        on_run(i, &r);
        let stop = r.outcome == Outcome::Interrupted;
        runs.push(r);
        if stop {
            break;
        }
    }
    match ProbeResult::combine(runs) {
        Some(r) => Ok(r),
        None => Err(ProbeError::EmptyCommand),
    }
}
