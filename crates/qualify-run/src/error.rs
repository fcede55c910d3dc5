//! Why a run — or any other command of qualify — could not do what it was asked ([`Error`]):
//! one type, each variant's message saying what went wrong and, where one exists, the fix. The
//! binary prints it once and maps each variant to its exit status. Verdicts are not errors: a
//! refused claim, a failing probe or an interrupted run are results.

use std::path::Path;

use qualify_probe::ProbeError;
use qualify_service::ServiceError;
use qualify_spec::SpecError;

/// Why a subcommand could not do what it was asked. Each variant's message says what went
/// wrong and, where one exists, the fix.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The spec did not load or check; its diagnostics already read `path:line:col: error: …`
    /// with a help line each.
    #[error("{0}")]
    Spec(#[from] SpecError),
    /// A flag, or a file, key, receipt, trace or ledger it names, cannot be used.
    #[error("{message}{}", suffix(fix))]
    Input {
        message: String,
        fix: Option<String>,
    },
    /// A command could not be started at all (not found, not executable, backend missing).
    #[error("{}{source}", prefix(context))]
    Probe {
        context: Option<String>,
        source: Box<ProbeError>,
    },
    /// A service cell could not be run at all (its command, a dependency, its load).
    #[error("{}{source}", prefix(context))]
    Service {
        context: Option<String>,
        source: Box<ServiceError>,
    },
    /// Schedule perturbation could not be set up (its shim, a run's log file).
    #[error("perturbation: {source}")]
    Perturb {
        source: qualify_perturb::PerturbError,
    },
    /// The spec's build command did not end `ok`.
    #[error(
        "the build command `{command}` failed ({outcome}: {detail}); fix the build first\n{tail}"
    )]
    Build {
        command: String,
        outcome: String,
        detail: String,
        /// The last lines of its stderr, indented.
        tail: String,
    },
    /// A result could not be written (receipt, report, VSA, ledger record, stdout JSON).
    #[error("{message}{}", suffix(fix))]
    Output {
        message: String,
        fix: Option<String>,
    },
    /// What was asked for is not there (e.g. a digest prefix that matches no receipt): the
    /// question had an answer, and it is "no".
    #[error("{message}")]
    NotFound { message: String },
    /// A check the user asked for failed (a signature `--key` requires does not verify):
    /// nothing was produced from the input.
    #[error("{message}")]
    Refused { message: String },
    /// qualify was asked to stop before it produced anything (e.g. while it waited for another
    /// run's lock): nothing was written.
    #[error("{message}")]
    Interrupted { message: String },
    /// The artifact's files are not what they were when the run started: the cells may have
    /// run something else than the receipt would name, so no receipt is written.
    #[error(
        "the artifact's file {0}; no receipt was written: the cells may not have run what it would name (keep the workdir untouched while qualify runs; with the sandbox on, cells write through a private layer and cannot change it)"
    )]
    ArtifactChanged(#[from] crate::subjects::Changed),
}

fn suffix(fix: &Option<String>) -> String {
    fix.as_deref().map(|f| format!("; {f}")).unwrap_or_default()
}

fn prefix(context: &Option<String>) -> String {
    context
        .as_deref()
        .map(|c| format!("{c}: "))
        .unwrap_or_default()
}

impl Error {
    /// Bad input with the fix.
    pub fn input(message: impl Into<String>, fix: impl Into<String>) -> Error {
        Error::Input {
            message: message.into(),
            fix: Some(fix.into()),
        }
    }

    /// Bad input whose message already says what to do.
    pub fn input_only(message: impl Into<String>) -> Error {
        Error::Input {
            message: message.into(),
            fix: None,
        }
    }

    /// A file that cannot be read: `cannot read WHAT PATH: ERROR; FIX`.
    pub fn unreadable(what: &str, path: &Path, e: &std::io::Error, fix: &str) -> Error {
        Error::input(format!("cannot read {what} {}: {e}", path.display()), fix)
    }

    /// An output that cannot be written.
    pub fn output(message: impl Into<String>, fix: Option<&str>) -> Error {
        Error::Output {
            message: message.into(),
            fix: fix.map(str::to_string),
        }
    }

    /// A probe that could not start, with what qualify was starting.
    pub fn probe(context: impl Into<String>, source: ProbeError) -> Error {
        Error::Probe {
            context: Some(context.into()),
            source: Box::new(source),
        }
    }

    /// A service cell that could not be run, after `context`.
    pub fn service(context: impl Into<String>, source: ServiceError) -> Error {
        Error::Service {
            context: Some(context.into()),
            source: Box::new(source),
        }
    }
}

impl From<ProbeError> for Error {
    fn from(source: ProbeError) -> Error {
        Error::Probe {
            context: None,
            source: Box::new(source),
        }
    }
}
