//! The service cell's errors, each with what a user acts on (which dependency, address, file
//! or request, and why): [`ServiceError`] when a cell could not be run at all (the binary
//! stops the run with it), and the reasons carried inside a cell's record — a readiness wait
//! that failed ([`NotReady`]), an operation on a dependency's processes ([`DependencyError`]),
//! a write read back ([`ReadError`], [`ReaderError`]) and the write history ([`HistoryError`]).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use qualify_faults::ProxyError;
use qualify_load::template::TemplateError;
use qualify_load::{ClientError, LoadError};
use qualify_probe::{ProbeError, SignalError};

/// A service cell that could not be run at all (as a command that is not found): the run
/// stops with it.
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    /// The service, a dependency or a helper could not be probed.
    #[error(transparent)]
    Probe(#[from] ProbeError),
    /// [`crate::ServiceCell`] was handed a spec without `[service]`.
    #[error("a service cell needs [service]: the spec has none")]
    NotAService,
    /// A dependency's `upstream` names no address.
    #[error("dependency `{dependency}`: cannot resolve {upstream}")]
    Unresolved {
        dependency: String,
        upstream: String,
    },
    /// A dependency did not become ready before the cell (its last output, when it has any).
    #[error("dependency `{dependency}` at {addr} was not ready: {reason}{tail}")]
    DependencyNotReady {
        dependency: String,
        addr: SocketAddr,
        reason: Box<NotReady>,
        /// `; its last output:` and its last lines, or empty.
        tail: String,
    },
    /// A dependency's fault proxy could not start.
    #[error("the fault proxy for `{dependency}`: {source}")]
    Proxy {
        dependency: String,
        source: ProxyError,
    },
    /// The load generator could not run against the service.
    #[error("the load on {addr} could not run: {source}")]
    Load { addr: SocketAddr, source: LoadError },
    /// The load split over `qualify load-gen` processes (`[load] generators`) made no report.
    #[error("the load on {addr} could not run: {source}")]
    Generators {
        addr: SocketAddr,
        source: crate::generators::GeneratorsError,
    },
    /// The service's probe result was asked for twice (a bug in qualify).
    #[error("the service's probe was already collected (joined twice)")]
    AlreadyCollected,
    /// The thread supervising the service panicked (a bug in qualify).
    #[error("the service's probe thread panicked")]
    ProbeThreadPanicked,
    /// The service was killed under load and no restarted instance was there to stop.
    #[error("the restarted service never started")]
    NeverStarted,
}

/// Why a service or dependency was not ready (`never ready: …`, `not ready again: …`).
#[derive(Debug, thiserror::Error)]
pub enum NotReady {
    /// The check could not run where the service's clients connect from.
    #[error("cannot join the service's network namespace: {0}")]
    Namespace(std::io::Error),
    /// The HTTP or TCP check did not pass.
    #[error(transparent)]
    Poll(#[from] qualify_load::ready::NotReady),
    /// The ready command could not be probed.
    #[error(transparent)]
    Probe(#[from] ProbeError),
    /// The wait was stopped (the service ended, or qualify stops).
    #[error("stopped waiting after {:.1} s; last: {last}", waited.as_secs_f64())]
    Stopped { waited: Duration, last: String },
    /// The ready command did not exit 0 within `ready.within`.
    #[error("not ready after {:.1} s; last: {last}", within.as_secs_f64())]
    TimedOut { within: Duration, last: String },
    /// The dependency's processes ended while it was awaited.
    #[error("it ended before it was ready ({0})")]
    Ended(Box<NotReady>),
}

/// Why an operation on a dependency's processes (a process fault) did not happen; recorded
/// in the fault's record.
#[derive(Debug, thiserror::Error)]
pub enum DependencyError {
    #[error("dependency `{0}` is not running")]
    NotRunning(String),
    #[error("dependency `{0}` is still running")]
    StillRunning(String),
    #[error("dependency `{dependency}`: {source}")]
    Signal {
        dependency: String,
        source: SignalError,
    },
    /// Its result could not be collected after it ended.
    #[error("dependency `{dependency}`: {source}")]
    Collect {
        dependency: String,
        source: Box<ServiceError>,
    },
    /// It could not be started again.
    #[error(transparent)]
    Start(ProbeError),
    #[error(transparent)]
    NotReady(NotReady),
}

/// Why one write could not be read back (the id stays unread, never lost).
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error(transparent)]
    Http(#[from] ClientError),
    /// A 5xx answer: the service could not read, which says nothing about the write.
    #[error("HTTP {0}")]
    ServerError(u16),
    #[error("connect: {0}")]
    Connect(std::io::Error),
    #[error("{0}")]
    Timeouts(std::io::Error),
    #[error("write: {0}")]
    Write(std::io::Error),
    #[error("read: {0}")]
    Read(std::io::Error),
    #[error("the connection closed before a reply")]
    ClosedBeforeReply,
    #[error("the connection closed in the middle of a reply")]
    ClosedInReply,
    /// `-ERR …`, `ERROR`, `SERVER_ERROR …`, `CLIENT_ERROR …`.
    #[error("error reply {0}")]
    ErrorReply(String),
}

/// Why no reader could be made for the spec's `read` request.
#[derive(Debug, thiserror::Error)]
pub enum ReaderError {
    #[error(transparent)]
    Http(#[from] LoadError),
    #[error(transparent)]
    Template(#[from] TemplateError),
}

/// Why the write history could not be kept beside the receipt (the checker then does not run).
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    #[error("cannot create {}: {source}", path.display())]
    CreateDir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write {}: {source}", path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}
