//! The binary's exit statuses and how an error is shown. Every subcommand returns
//! `Result<ExitCode, CliError>` (the library's [`qualify_run::Error`]); `main` prints an error
//! once, in one format, and exits with the status the variant knows. Verdicts are not errors:
//! a refused claim, a failing probe or an interrupted run return their own status ([`exit`])
//! with a result on stdout.

use std::process::ExitCode;

pub use qualify_run::Error as CliError;

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

/// The status `main` exits with for `error`.
pub fn status(error: &CliError) -> u8 {
    match error {
        CliError::NotFound { .. } | CliError::Refused { .. } => exit::REFUSED,
        CliError::Interrupted { .. } => exit::INTERRUPTED,
        _ => exit::USAGE,
    }
}

/// The error as printed on stderr: diagnostics as they are, everything else after
/// `qualify: error: ` (`qualify: ` for a plain "not found").
pub fn render(error: &CliError) -> String {
    match error {
        CliError::Spec(e) => e.to_string(),
        CliError::NotFound { message } => format!("qualify: {message}"),
        CliError::Refused { message } => format!("qualify: REFUSED: {message}"),
        CliError::Interrupted { message } => format!("qualify: {message}"),
        other => format!("qualify: error: {other}"),
    }
}

/// Print `error` once and exit with its status.
pub fn report(error: &CliError) -> ExitCode {
    eprintln!("{}", render(error));
    ExitCode::from(status(error))
}

#[cfg(test)]
mod tests {
    use super::*;
    use qualify_probe::ProbeError;

    #[test]
    fn variants_know_their_exit_status_and_print_their_fix() {
        let e = CliError::input(
            "--key k.pub: no such file",
            "create it with `qualify keygen`",
        );
        assert_eq!(status(&e), exit::USAGE);
        assert_eq!(
            render(&e),
            "qualify: error: --key k.pub: no such file; create it with `qualify keygen`"
        );
        let nf = CliError::NotFound {
            message: "no receipt matches abc (see `qualify ledger list`)".into(),
        };
        assert_eq!(status(&nf), exit::REFUSED);
        assert!(render(&nf).starts_with("qualify: no receipt"));
        let p = CliError::probe(
            "a cell could not be probed",
            ProbeError::CommandNotFound {
                program: "nope".into(),
            },
        );
        assert_eq!(status(&p), exit::USAGE);
        assert!(
            render(&p).starts_with(
                "qualify: error: a cell could not be probed: command not found: `nope`"
            ),
            "{}",
            render(&p)
        );
    }
}
