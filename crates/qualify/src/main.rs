//! `qualify`: the command-line front end. Thin by design: argument parsing, signal handling,
//! output formatting and exit codes; the work lives in the library crates. One module per
//! subcommand (`*_cmd`; `step_cmd` for the hidden steps qualify starts itself); `run_cmd` draws
//! `qualify_run::run`. Every subcommand returns `Result<ExitCode, CliError>` and errors are
//! printed here, once ([`error`]).

mod agent_cmd;
mod artifact_run;
mod error;
mod gate_cmd;
mod gate_signature;
mod held_out_probe_cmd;
mod init_cmd;
mod keygen_cmd;
mod ledger_cmd;
mod probe_cmd;
mod report_cmd;
mod run_cmd;
mod shell;
mod step_cmd;
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
    /// scripts start it: `qualify_model::step::ServiceCellStep`).
    #[command(hide = true, name = "service-cell", disable_help_flag = true)]
    ServiceCell(StepWords),
    /// One dependency of a service cell and its fault proxy on a node of its own (started by
    /// `qualify service-cell`: `qualify_model::step::DependencyHostStep`).
    #[command(hide = true, name = "dependency-host", disable_help_flag = true)]
    DependencyHost(StepWords),
    /// One generator process of a split load (started by a service cell with `[load]
    /// generators`: `qualify_model::step::LoadGenStep`).
    #[command(hide = true, name = "load-gen", disable_help_flag = true)]
    LoadGen(StepWords),
    /// The artifact of `qualify run`'s held-out self-test (started through `$QUALIFY_RUN`).
    #[command(hide = true, name = "held-out-self-test")]
    HeldOutSelfTest(held_out_probe_cmd::HeldOutSelfTestArgs),
}

/// The words of a step qualify starts itself, read by the step's own type
/// (`qualify_model::step`), the one its starter wrote them with.
#[derive(clap::Args)]
struct StepWords {
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
    words: Vec<String>,
}

impl StepWords {
    /// The step read back by `parse` (its name first, as the starter wrote it).
    fn read<T>(
        self,
        name: &str,
        parse: impl Fn(&[String]) -> Result<T, qualify_model::step::StepError>,
    ) -> Result<T, error::CliError> {
        let argv: Vec<String> = std::iter::once(name.to_string())
            .chain(self.words)
            .collect();
        parse(&argv).map_err(|e| {
            error::CliError::input(
                e.to_string(),
                "this step is started by qualify itself, with the flags its type writes",
            )
        })
    }
}

fn main() -> ExitCode {
    // Bound as `qualify-artifact` in a held-out check's sandbox: the check's way to the artifact.
    let mut args = std::env::args_os();
    if args
        .next()
        .as_deref()
        .map(std::path::Path::new)
        .and_then(std::path::Path::file_name)
        .is_some_and(|n| n == qualify_run::runner::NAME)
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
        Command::ServiceCell(w) => w
            .read("service-cell", qualify_model::step::ServiceCellStep::parse)
            .and_then(step_cmd::service_cell),
        Command::DependencyHost(w) => w
            .read(
                "dependency-host",
                qualify_model::step::DependencyHostStep::parse,
            )
            .and_then(step_cmd::dependency_host),
        Command::LoadGen(w) => w
            .read("load-gen", qualify_model::step::LoadGenStep::parse)
            .and_then(step_cmd::load_gen),
        Command::HeldOutSelfTest(args) => Ok(held_out_probe_cmd::run(args)),
    };
    done.unwrap_or_else(|e| error::report(&e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use qualify_model::step::ProbeStep;
    use qualify_model::{BackendChoice, Limits, NetworkPolicy, Progress, SandboxPolicy};

    /// The step as the binary's own flags read it.
    fn through_the_flags(step: &ProbeStep) -> ProbeStep {
        let argv = std::iter::once("qualify".to_string()).chain(step.to_argv());
        match Cli::try_parse_from(argv).map(|c| c.command) {
            Ok(Command::Probe(args)) => args.to_step(),
            Ok(Command::Agent(agent_cmd::AgentArgs {
                command: agent_cmd::AgentCommand::Coordinate(args),
            })) => args.to_step(),
            Ok(_) => panic!("{:?} is another subcommand", step.to_argv()),
            Err(e) => panic!("{:?}: {e}", step.to_argv()),
        }
    }

    #[test]
    fn the_probe_flags_read_every_probe_step_a_job_writes_as_the_step_reads_itself() {
        let mut sandbox = SandboxPolicy {
            network: NetworkPolicy::Host,
            writable: vec!["/w/out dir".into()],
            readable: vec!["/r".into()],
            user: Some("1000".into()),
            ..SandboxPolicy::default()
        };
        sandbox
            .hidden
            .push((qualify_probe::Role::Key, "/k/key.pem".into()));
        sandbox.pass_env = vec!["OMPI_*".into()];
        sandbox.private_workdir = true;
        let mut step = ProbeStep {
            observe_nodes: false,
            nodes_dir: None,
            limits: Limits {
                memory_bytes: Some(64 << 20),
                cpus: Some(0.5),
                pids: Some(64),
                timeout_seconds: 30.0,
                stall_seconds: 2.0,
                progress: Progress::Heartbeat,
                disk_bytes: Some(256 << 20),
                guards: Vec::new(),
            },
            repeat: 3,
            backend: BackendChoice::Cgroup2,
            sandbox,
            json: true,
            lease: Some("/shared/lease".into()),
            command: vec!["./prog".into(), "--n".into(), "4".into()],
        };
        for observe_nodes in [false, true] {
            step.observe_nodes = observe_nodes;
            step.nodes_dir = observe_nodes.then(|| "/shared/cell-1.nodes".into());
            assert_eq!(through_the_flags(&step), step);
            assert_eq!(ProbeStep::parse(&step.to_argv()), Ok(step.clone()));
        }
        // Defaults and no sandbox: the flags' defaults are the step's.
        step.observe_nodes = false;
        step.nodes_dir = None;
        step.limits = Limits::default();
        step.repeat = 1;
        step.sandbox = SandboxPolicy::off();
        step.json = false;
        step.lease = None;
        assert_eq!(through_the_flags(&step), step);
        let bare = ProbeStep::parse(&["probe".to_string(), "true".to_string()]);
        let flags = match Cli::try_parse_from(["qualify", "probe", "true"]).map(|c| c.command) {
            Ok(Command::Probe(args)) => args.to_step(),
            _ => panic!("qualify probe true"),
        };
        assert_eq!(bare, Ok(flags));
    }

    #[test]
    fn the_agent_flags_read_every_agent_step_a_coordinator_writes_as_the_step_reads_itself() {
        use qualify_model::step::AgentStep;
        let mut step = AgentStep {
            dir: "/shared/run dir/cell-2.nodes/run-1".into(),
            stall: std::time::Duration::from_millis(1500),
            memory: Some(96 << 20),
            select: vec![("SLURM_JOB_ID".into(), "12".into())],
            present: vec!["SLURM_STEP_ID".into()],
            exclude_own: vec!["SLURM_STEP_ID".into()],
            max_time: std::time::Duration::from_secs(150),
        };
        for memory in [Some(96 << 20), None] {
            step.memory = memory;
            let argv = std::iter::once("qualify".to_string()).chain(step.to_argv());
            match Cli::try_parse_from(argv).map(|c| c.command) {
                Ok(Command::Agent(agent_cmd::AgentArgs {
                    command: agent_cmd::AgentCommand::Observe(args),
                })) => assert_eq!(args.to_step(), step),
                Ok(_) => panic!("{:?} is another subcommand", step.to_argv()),
                Err(e) => panic!("{:?}: {e}", step.to_argv()),
            }
            assert_eq!(AgentStep::parse(&step.to_argv()), Ok(step.clone()));
        }
    }
}
