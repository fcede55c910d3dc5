//! `qualify`: the command-line front end. Thin by design: argument parsing, signal handling,
//! output formatting and exit codes; the work lives in the library crates. One module per
//! subcommand (`*_cmd`); `run_cmd` is the main job, a pipeline of named stages. Every subcommand
//! returns `Result<ExitCode, CliError>` and errors are printed here, once ([`error`]).

mod agent_cmd;
mod artifact_run;
mod cluster_cmd;
mod error;
mod gate_cmd;
mod gate_signature;
mod held_out_probe_cmd;
mod init_cmd;
mod keygen_cmd;
mod ledger_cmd;
mod load_gen_cmd;
mod perturb;
mod probe_cmd;
mod report_cmd;
mod run_cmd;
mod subjects;
mod verify_cmd;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use error::exit;

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
    /// Qualify an artifact against the claim in a spec: probe its operating region, write a receipt.
    Run(run_cmd::RunArgs),
    /// Accept or refuse a claim level against a receipt.
    Gate(gate_cmd::GateArgs),
    /// Write a commented starter qualify.toml.
    Init(init_cmd::InitArgs),
    /// Write a signing key pair: PREFIX (private, mode 0600) and PREFIX.pub.
    Keygen(keygen_cmd::KeygenArgs),
    /// Check a signed receipt's signature and, with --artifact, its subject digest.
    Verify(verify_cmd::VerifyArgs),
    /// Render a receipt: self-contained HTML, Markdown, JUnit XML, Extra-P JSON Lines.
    Report(report_cmd::ReportArgs),
    /// Read the ledger of receipts: list, show, stats, verify, controls.
    Ledger(ledger_cmd::LedgerArgs),
    /// Per-node observation of multi-node cells (started by qualify's own job scripts).
    #[command(hide = true)]
    Agent(agent_cmd::AgentArgs),
    /// A service cell as a Slurm job, on the first node of its allocation (qualify's own job
    /// scripts start it).
    #[command(hide = true, name = "service-cell")]
    ServiceCell(cluster_cmd::ServiceCellArgs),
    /// One dependency of a service cell and its fault proxy on a node of its own (started by
    /// `qualify service-cell`).
    #[command(hide = true, name = "dependency-host")]
    DependencyHost(cluster_cmd::DependencyHostArgs),
    /// One generator process of a split load (started by a service cell with `[load] generators`).
    #[command(hide = true, name = "load-gen")]
    LoadGen(load_gen_cmd::LoadGenArgs),
    /// The artifact of `qualify run`'s held-out self-test (started through `$QUALIFY_RUN`).
    #[command(hide = true, name = "held-out-self-test")]
    HeldOutSelfTest(held_out_probe_cmd::HeldOutSelfTestArgs),
}

fn main() -> ExitCode {
    // Bound as `qualify-artifact` in a held-out check's sandbox: the check's way to the artifact.
    let mut args = std::env::args_os();
    if args
        .next()
        .as_deref()
        .map(std::path::Path::new)
        .and_then(std::path::Path::file_name)
        .is_some_and(|n| n == artifact_run::NAME)
    {
        return artifact_run::main(args.collect());
    }
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { exit::USAGE } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    let done = match cli.command {
        Command::Probe(args) => probe_cmd::run(args),
        Command::Run(args) => run_cmd::run(args),
        Command::Gate(args) => gate_cmd::run(args),
        Command::Init(args) => init_cmd::run(args),
        Command::Keygen(args) => keygen_cmd::run(args),
        Command::Verify(args) => verify_cmd::run(args),
        Command::Report(args) => report_cmd::run(args),
        Command::Ledger(args) => ledger_cmd::run(args),
        Command::Agent(args) => agent_cmd::run(args),
        Command::ServiceCell(args) => cluster_cmd::service_cell(args),
        Command::DependencyHost(args) => cluster_cmd::dependency_host(args),
        Command::LoadGen(args) => load_gen_cmd::run(args),
        Command::HeldOutSelfTest(args) => Ok(held_out_probe_cmd::run(args)),
    };
    done.unwrap_or_else(|e| error::report(&e))
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

/// Write to stdout, ignoring a closed pipe (e.g. output piped into `head`).
pub fn print_stdout(text: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes());
    if !text.ends_with('\n') {
        let _ = out.write_all(b"\n");
    }
}
