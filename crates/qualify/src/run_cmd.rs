//! `qualify run [SPEC]`: the flags, the terminal and the exit status of the run; the run
//! itself is `qualify_run::run` (its stages, in order, are documented there). Progress goes to
//! stderr through an indicatif bar ([`Terminal`], silent with `--json`), the summary
//! (`qualify_render::terminal`, drawn from the receipt's view) or the receipt to stdout.
//!
//! Exit status: 0 the receipt supports the spec's claim, 1 it does not, 2 spec or setup error,
//! 130 interrupted (a receipt marked incomplete is still written; nothing is written when the
//! run was still waiting for a lock).

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use qualify_probe::BackendChoice;
use qualify_render::view::View;
use qualify_run::seal::{Sealed, Verdict};
use qualify_run::{Progress, RunObserver, RunOptions};
use qualify_spec::ExecutorKind;

use crate::error::{CliError, exit};

#[derive(Args, Debug)]
pub struct RunArgs {
    /// The spec to run.
    #[arg(default_value = "qualify.toml")]
    spec: PathBuf,
    /// Where to write the receipt (default .qualify/receipts/<UTC time>-<digest>.json).
    #[arg(long, value_name = "PATH")]
    receipt: Option<PathBuf>,
    /// Run up to N cells side by side, never letting their CPU demands overlap.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=256))]
    jobs: u64,
    /// Probe the operating region even when the functional command failed.
    #[arg(long)]
    keep_going: bool,
    /// Enforcement backend for every probe: auto, cgroup2, cgroup1, rlimit.
    #[arg(long, value_name = "BACKEND", default_value = "auto")]
    backend: BackendChoice,
    /// Print the receipt (JSON) on stdout instead of the summary.
    #[arg(long)]
    json: bool,
    /// Compare every shared cell's performance with this earlier receipt (needs [performance]).
    #[arg(long, value_name = "RECEIPT")]
    baseline: Option<PathBuf>,
    /// The ledger the receipt is appended to and controls are read from.
    #[arg(long, value_name = "PATH", default_value = qualify_ledger::DEFAULT_PATH)]
    ledger: PathBuf,
    /// Neither read controls from nor append the receipt to the ledger.
    #[arg(long)]
    no_ledger: bool,
    /// A directory of held-out check commands (default: $QUALIFY_HOLDOUT); only their digests
    /// and outcomes are recorded.
    #[arg(long, value_name = "DIR")]
    holdout: Option<PathBuf>,
    /// A development trace for the process layer: an agent session (Claude Code, Codex,
    /// OpenCode, OpenHands, SWE-agent, OpenTelemetry GenAI as OTLP JSON, or qualify's own
    /// JSON Lines), detected by content. Repeat it, or name a directory: all files make one
    /// record.
    #[arg(long, value_name = "FILE|DIR")]
    trace: Vec<PathBuf>,
    /// Read every trace file as this format instead of detecting it: claude-code, codex,
    /// opencode, openhands, swe-agent, otel, native.
    #[arg(long, value_name = "FORMAT", requires = "trace")]
    trace_format: Option<qualify_trace::Format>,
    /// Summarise the workdir's git history since REV (`git log REV..HEAD`) for the process layer.
    #[arg(long, value_name = "REV")]
    since: Option<String>,
    /// Where cells run: local (this machine) or slurm (one job per cell); default: the spec's
    /// [executor] kind, else local.
    #[arg(long, value_name = "KIND", value_enum)]
    executor: Option<ExecutorFlag>,
    /// Sign the receipt with this private key (from `qualify keygen`): it is written as a DSSE
    /// envelope around the in-toto Statement.
    #[arg(long, value_name = "KEY")]
    sign: Option<PathBuf>,
    /// Run every cell N times and compare stdout digests (overrides [reproducibility] repeat).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=qualify_model::limits::MAX_REPEAT))]
    repeat: Option<u64>,
    /// Change one key of the spec for this run, checked like the file: `--set
    /// load.duration=5s`, `--set axis.rps=100,200` (the axis's values), `--set
    /// slo.latency_p99.max=300ms`; repeat it for more. The receipt lists them.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<qualify_spec::Override>,
    /// Exit 2 at once, naming the holder, when another run holds this workdir (or, for a run
    /// that measures, the machine's measurement lock) instead of waiting for it.
    #[arg(long)]
    no_wait: bool,
    /// Pass this variable of qualify's environment to the artifact (a name, or a prefix ending
    /// in `*`). Repeatable. The artifact otherwise gets only PATH, HOME, LANG, LANGUAGE, LC_*,
    /// TZ, TMPDIR and the spec's `env` (the build step gets everything).
    #[arg(long = "pass-env", value_name = "NAME")]
    pass_env: Vec<String>,
    /// Treat the value of this environment variable as a secret: it is replaced by <redacted>
    /// in every text the run stores (receipt, ledger, reports), as the values of variables
    /// whose names look secret are. Repeatable.
    #[arg(long, value_name = "NAME")]
    secret: Vec<String>,
}

/// The `--executor` flag's values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ExecutorFlag {
    Local,
    Slurm,
}

impl RunArgs {
    fn options(self) -> RunOptions {
        RunOptions {
            spec: self.spec,
            receipt: self.receipt,
            jobs: self.jobs,
            keep_going: self.keep_going,
            backend: self.backend,
            json: self.json,
            baseline: self.baseline,
            ledger: self.ledger,
            no_ledger: self.no_ledger,
            holdout: self.holdout,
            trace: self.trace,
            trace_format: self.trace_format,
            since: self.since,
            executor: self.executor.map(|e| match e {
                ExecutorFlag::Local => ExecutorKind::Local,
                ExecutorFlag::Slurm => ExecutorKind::Slurm,
            }),
            sign: self.sign,
            repeat: self.repeat,
            set: self.set,
            no_wait: self.no_wait,
            pass_env: self.pass_env,
            secret: self.secret,
        }
    }
}

pub fn run(args: RunArgs) -> Result<ExitCode, CliError> {
    let cancel = crate::shell::cancel_on_signals();
    let options = args.options();
    let terminal = Terminal {
        quiet: options.json,
    };
    let sealed = qualify_run::run(&options, &terminal, &cancel)?;
    print(options.json, &sealed);
    Ok(match sealed.verdict() {
        Verdict::Supported => ExitCode::SUCCESS,
        Verdict::Refused => exit::refused(),
        Verdict::Interrupted => exit::interrupted(),
    })
}

/// Print the receipt (`--json`) or the terminal summary `qualify_render::terminal` draws from
/// the receipt's view (coloured on a terminal unless `NO_COLOR` is set).
fn print(json: bool, sealed: &Sealed) {
    if json {
        crate::shell::print_stdout(&sealed.text);
        return;
    }
    let receipt = serde_json::to_value(&sealed.statement).unwrap_or(serde_json::Value::Null);
    let color = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let text = qualify_render::terminal::run_summary(
        &View::new(&receipt),
        &sealed.path.display().to_string(),
        color,
    );
    crate::shell::print_stdout(&text);
}

/// The run's progress on stderr: lines, and an indicatif bar per display (nothing with
/// `--json`, whose stdout is the receipt).
struct Terminal {
    quiet: bool,
}

impl RunObserver for Terminal {
    fn say(&self, line: &str) {
        if !self.quiet {
            eprintln!("{line}");
        }
    }

    fn progress(&self, total: usize) -> Arc<dyn Progress> {
        let bar = if self.quiet {
            ProgressBar::hidden()
        } else {
            ProgressBar::new(total as u64)
        };
        bar.set_style(
            ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} cells  {wide_msg}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        bar.enable_steady_tick(Duration::from_millis(200));
        Arc::new(Bar(bar))
    }
}

struct Bar(ProgressBar);

impl Progress for Bar {
    fn set_total(&self, total: usize) {
        self.0.set_length(total as u64);
    }
    fn set_position(&self, done: usize) {
        self.0.set_position(done as u64);
    }
    fn inc(&self) {
        self.0.inc(1);
    }
    fn set_message(&self, message: String) {
        self.0.set_message(message);
    }
    fn println(&self, line: String) {
        self.0.println(line);
    }
    fn finish(&self) {
        self.0.finish_and_clear();
    }
}
