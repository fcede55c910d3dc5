//! `qualify`: the command-line front end. Thin by design: argument parsing, signal handling,
//! output formatting and exit codes; the work lives in the library crates.

mod probe_cmd;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Exit status for usage and setup errors (bad flag, bad size, command not found, …).
pub const EXIT_USAGE: u8 = 2;

#[derive(Parser)]
#[command(
    name = "qualify",
    version,
    about = "Operational qualification of software: find where an artifact breaks and say why."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run one command under resource ceilings and classify how it ended.
    Probe(probe_cmd::ProbeArgs),
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { EXIT_USAGE } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    match cli.command {
        Command::Probe(args) => probe_cmd::run(args),
    }
}

/// Install SIGINT/SIGTERM/SIGHUP handlers that set the returned token instead of killing qualify,
/// so a probe can kill its tree, clean up its cgroups and still print a result.
pub fn cancel_on_signals() -> qualify_probe::CancelToken {
    let token = qualify_probe::CancelToken::default();
    for sig in [
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
    ] {
        if let Err(e) = signal_hook::flag::register(sig, token.clone()) {
            eprintln!("qualify: warning: cannot install handler for signal {sig}: {e}");
        }
    }
    token
}
