//! One `[[dependency]]` of a cell: started fresh in a directory of its own (supervised like
//! the service, outside the artifact's sandbox and ceilings: it is the user's infrastructure)
//! or reached at its `upstream`, and awaited until ready (`ready`: HTTP, TCP or a command),
//! from inside the cell's network namespace when there is one. A started dependency can be
//! started again with the same command in the same directory on the same port ([`start`]
//! with the probe it was first started with): a process fault's restart from its own data.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use qualify_model::{Outcome, Params};
use qualify_probe::netns::Netns;
use qualify_probe::{BackendChoice, CancelToken, ProbeError, ProbeSpec};

use crate::error::NotReady;
use qualify_spec::{Dependency, ReadyCheck, Spec};

use crate::SpecProbes;
use crate::instance::ServiceRun;

/// The cell's parameters plus `{dep_port}`.
pub(crate) fn bind_port(params: &Params, dep_port: u16) -> Params {
    let mut p = params.clone();
    p.insert(
        qualify_spec::DEP_PORT_PLACEHOLDER,
        qualify_model::Value::Int(i64::from(dep_port)),
    );
    p
}

/// A directory of the dependency's own (its data lives there for the whole cell).
pub(crate) fn directory(dep: &Dependency) -> Result<tempfile::TempDir, ProbeError> {
    tempfile::Builder::new()
        .prefix(&format!("qualify-dep-{}-", dep.name))
        .tempdir()
        .map_err(|e| ProbeError::Io {
            context: format!("cannot create a directory for dependency `{}`", dep.name),
            source: e,
        })
}

/// How the dependency's `start` command is probed on `dep_port` in `dir`.
pub(crate) fn probe_spec(
    spec: &Spec,
    dep: &Dependency,
    params: &Params,
    dep_port: u16,
    backend: BackendChoice,
    dir: &Path,
) -> ProbeSpec {
    let argv = dep.start_argv(params, dep_port).unwrap_or_default();
    let mut probe: ProbeSpec =
        spec.command_probe(argv.into_iter().map(Into::into).collect(), backend);
    probe.workdir = Some(dir.to_path_buf());
    // The dependency is not the artifact: no memory ceiling of the artifact's, the cell's
    // deadline only.
    probe.limits.memory_bytes = None;
    probe.limits.cpus = None;
    probe.limits.pids = None;
    // The dependency is the user's infrastructure, not the artifact (like the build step): it
    // runs outside the sandbox (`runuser`, its own data directory), in the cell's network
    // namespace when the service has one — the probe forks from a thread that joined it.
    probe.sandbox = qualify_probe::Sandbox::off();
    probe
        .env
        .push(("DEP_PORT".into(), dep_port.to_string().into()));
    probe
}

/// Start the dependency of `probe` (listening at `addr`) from inside `netns`.
pub(crate) fn start(
    name: &str,
    probe: ProbeSpec,
    addr: SocketAddr,
    netns: Option<&Arc<Netns>>,
) -> Result<ServiceRun, ProbeError> {
    let _inside = match netns {
        Some(n) => Some(n.enter().map_err(|source| ProbeError::Io {
            context: format!(
                "cannot join the service's network namespace to start dependency `{name}`"
            ),
            source,
        })?),
        None => None,
    };
    // The probe's thread is made here, inside the namespace, and so is the dependency.
    Ok(ServiceRun::start(probe, addr))
}

/// A dependency's ready check, owned (it runs again after a process fault's restart).
pub(crate) struct ReadyWait {
    check: Wait,
    within: Duration,
    addr: SocketAddr,
    netns: Option<Arc<Netns>>,
}

enum Wait {
    Http(String),
    Tcp,
    /// The command's probe (outside the sandbox, like the dependency) and its text.
    Command(Box<ProbeSpec>, String),
}

impl ReadyWait {
    /// The ready check of `dep` at `addr` (`bound`: the cell's parameters with `{dep_port}`).
    pub(crate) fn new(
        dep: &Dependency,
        addr: SocketAddr,
        bound: &Params,
        spec: &Spec,
        backend: BackendChoice,
        netns: Option<&Arc<Netns>>,
    ) -> ReadyWait {
        let check = match &dep.ready.check {
            ReadyCheck::Http(path) => Wait::Http(path.clone()),
            ReadyCheck::Tcp => Wait::Tcp,
            ReadyCheck::Command(command) => {
                let argv: Vec<std::ffi::OsString> = command
                    .render(bound)
                    .argv()
                    .into_iter()
                    .map(Into::into)
                    .collect();
                let mut probe = spec.command_probe(argv, backend);
                // Outside the sandbox like the dependency, from the waiting thread (inside the
                // cell's namespace when there is one).
                probe.sandbox = qualify_probe::Sandbox::off();
                probe.limits.timeout_seconds = 10.0;
                probe.limits.stall_seconds = 5.0;
                Wait::Command(Box::new(probe), command.to_string())
            }
        };
        ReadyWait {
            check,
            within: dep.ready.within,
            addr,
            netns: netns.cloned(),
        }
    }

    /// Wait until the dependency is ready; `Err` says why not.
    pub(crate) fn wait(&self, cancel: &CancelToken) -> Result<(), NotReady> {
        // The check runs where the proxy will connect from: inside the cell's namespace.
        let _inside = match &self.netns {
            Some(n) => Some(n.enter().map_err(NotReady::Namespace)?),
            None => None,
        };
        match &self.check {
            Wait::Http(path) => qualify_load::ready::wait_ready(
                &qualify_load::ready::ReadyCheck::Http { path: path.clone() },
                self.addr,
                self.within,
                cancel,
            )
            .map(|_| ())
            .map_err(NotReady::from),
            Wait::Tcp => qualify_load::ready::wait_ready(
                &qualify_load::ready::ReadyCheck::Tcp,
                self.addr,
                self.within,
                cancel,
            )
            .map(|_| ())
            .map_err(NotReady::from),
            Wait::Command(probe, command) => {
                let start = Instant::now();
                let mut last = String::from("not run");
                while start.elapsed() < self.within {
                    match qualify_probe::probe(probe, cancel) {
                        Ok(r) if r.outcome == Outcome::Ok => return Ok(()),
                        Ok(r) => last = format!("`{command}` ended {}", r.outcome),
                        Err(e) => return Err(NotReady::Probe(e)),
                    }
                    std::thread::sleep(Duration::from_millis(100));
                }
                Err(NotReady::TimedOut {
                    within: self.within,
                    last,
                })
            }
        }
    }
}

/// `; its last output:` and the last lines of `text` (nothing for no output).
pub(crate) fn last_lines(text: &str) -> String {
    let lines: Vec<&str> = text.trim_end().lines().collect();
    if lines.is_empty() {
        return String::new();
    }
    let tail = lines[lines.len().saturating_sub(5)..].join("\n  | ");
    format!("; its last output:\n  | {tail}")
}
