//! The binary's one error type and its exit statuses. Every subcommand returns
//! `Result<ExitCode, CliError>`; `main` prints an error once, in one format, and exits with the
//! status the variant knows. Verdicts are not errors: a refused claim, a failing probe or an
//! interrupted run return their own status ([`exit`]) with a result on stdout.

use std::path::Path;
use std::process::ExitCode;

use qualify_probe::ProbeError;
use qualify_service::ServiceError;
use qualify_spec::SpecError;

/// The exit statuses scripts rely on.
pub mod exit {
    use std::process::ExitCode;

    /// The claim is not supported, the probe did not end `ok`, a check failed, or what was asked
    /// for is not there.
    pub const REFUSED: u8 = 1;
    /// Usage and setup errors: bad flag or spec, unreadable file, missing backend.
    pub const USAGE: u8 = 2;
    /// qualify itself was interrupted (SIGINT/SIGTERM/SIGHUP).
    pub const INTERRUPTED: u8 = 130;

    pub fn refused() -> ExitCode {
        ExitCode::from(REFUSED)
    }

    pub fn interrupted() -> ExitCode {
        ExitCode::from(INTERRUPTED)
    }
}

/// Why a subcommand could not do what it was asked. Each variant's message says what went
/// wrong and, where one exists, the fix.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
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
        source: ProbeError,
    },
    /// A service cell could not be run at all (its command, a dependency, its load).
    #[error("{}{source}", prefix(context))]
    Service {
        context: Option<String>,
        source: ServiceError,
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

impl CliError {
    /// Bad input with the fix.
    pub fn input(message: impl Into<String>, fix: impl Into<String>) -> CliError {
        CliError::Input {
            message: message.into(),
            fix: Some(fix.into()),
        }
    }

    /// Bad input whose message already says what to do.
    pub fn input_only(message: impl Into<String>) -> CliError {
        CliError::Input {
            message: message.into(),
            fix: None,
        }
    }

    /// A file that cannot be read: `cannot read WHAT PATH: ERROR; FIX`.
    pub fn unreadable(what: &str, path: &Path, e: &std::io::Error, fix: &str) -> CliError {
        CliError::input(format!("cannot read {what} {}: {e}", path.display()), fix)
    }

    /// An output that cannot be written.
    pub fn output(message: impl Into<String>, fix: Option<&str>) -> CliError {
        CliError::Output {
            message: message.into(),
            fix: fix.map(str::to_string),
        }
    }

    /// A probe that could not start, with what qualify was starting.
    pub fn probe(context: impl Into<String>, source: ProbeError) -> CliError {
        CliError::Probe {
            context: Some(context.into()),
            source,
        }
    }

    /// A service cell that could not be run, after `context`.
    pub fn service(context: impl Into<String>, source: ServiceError) -> CliError {
        CliError::Service {
            context: Some(context.into()),
            source,
        }
    }

    /// The status `main` exits with.
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::NotFound { .. } | CliError::Refused { .. } => exit::REFUSED,
            CliError::Interrupted { .. } => exit::INTERRUPTED,
            _ => exit::USAGE,
        }
    }

    /// The error as printed on stderr: diagnostics as they are, everything else after
    /// `qualify: error: ` (`qualify: ` for a plain "not found").
    pub fn render(&self) -> String {
        match self {
            CliError::Spec(e) => e.to_string(),
            CliError::NotFound { message } => format!("qualify: {message}"),
            CliError::Refused { message } => format!("qualify: REFUSED: {message}"),
            CliError::Interrupted { message } => format!("qualify: {message}"),
            other => format!("qualify: error: {other}"),
        }
    }
}

impl From<ProbeError> for CliError {
    fn from(source: ProbeError) -> CliError {
        CliError::Probe {
            context: None,
            source,
        }
    }
}

/// Print `error` once and exit with its status.
pub fn report(error: &CliError) -> ExitCode {
    eprintln!("{}", error.render());
    ExitCode::from(error.exit_code())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variants_know_their_exit_status_and_print_their_fix() {
        let e = CliError::input(
            "--key k.pub: no such file",
            "create it with `qualify keygen`",
        );
        assert_eq!(e.exit_code(), exit::USAGE);
        assert_eq!(
            e.render(),
            "qualify: error: --key k.pub: no such file; create it with `qualify keygen`"
        );
        let nf = CliError::NotFound {
            message: "no receipt matches abc (see `qualify ledger list`)".into(),
        };
        assert_eq!(nf.exit_code(), exit::REFUSED);
        assert!(nf.render().starts_with("qualify: no receipt"));
        let p = CliError::probe(
            "a cell could not be probed",
            ProbeError::CommandNotFound {
                program: "nope".into(),
            },
        );
        assert_eq!(p.exit_code(), exit::USAGE);
        assert!(
            p.render().starts_with(
                "qualify: error: a cell could not be probed: command not found: `nope`"
            ),
            "{}",
            p.render()
        );
    }
}
