//! `qualify run [SPEC]`: the main job, as named stages that read top to bottom in [`run`]:
//!
//! 1. [`prepare`] — load the spec; check and load what the flags name (signing key, baseline,
//!    held-out checks, trace and git history, the ledger and its controls).
//! 2. [`build`] — the spec's build command, once, as a probe.
//! 3. [`checks`] — the functional check, then the held-out checks; decides whether the
//!    operating region is probed.
//! 4. [`region`] — the ledger's controls first, then the plan (sweeps and boundary searches),
//!    every cell through one [`cells::CellRunner`] (local or Slurm executor underneath); with
//!    `[performance]` the plan is round 1 and [`rounds`] re-probes the measured cells in
//!    shuffled rounds.
//! 5. [`analysis`] — the receipt's cells, boundaries and the performance analysis.
//! 6. [`seal`] — fingerprint, the run record, the layered receipt (signed with `--sign`),
//!    written atomically.
//! 7. [`record`] — the receipt appended to the ledger.
//! 8. [`summary`] — the layer table, failure map, boundaries, gap and verdict on stdout.
//!
//! A run holds its workdir's lock from the build until the receipt is written (under Slurm,
//! the build only), and a measuring run the machine's measurement lock for its region
//! ([`lock`]): concurrent runs wait for each other instead of racing.
//!
//! Exit status: 0 the receipt supports the spec's claim, 1 it does not, 2 spec or setup error,
//! 130 interrupted (a receipt marked incomplete is still written; nothing is written when the
//! run was still waiting for a lock).

mod analysis;
mod build;
mod cells;
mod checks;
mod environment;
mod holdout;
mod host;
mod junit_counts;
mod lock;
mod perf_summary;
mod prepare;
mod process_inputs;
mod record;
mod region;
mod regressions;
mod rounds;
mod runner;
mod sandbox;
mod seal;
mod signing;
mod slurm;
mod summary;
mod topology;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use qualify_probe::{BackendChoice, CancelToken};
use qualify_spec::Spec;

use crate::error::CliError;

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
    executor: Option<slurm::ExecutorFlag>,
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

/// What every stage reads: the spec, the flags, the cancellation token, and where to talk.
pub struct Context<'a> {
    pub spec: &'a Spec,
    pub args: &'a RunArgs,
    pub cancel: &'a CancelToken,
    /// When the run started (after the spec loaded).
    pub started: std::time::SystemTime,
    /// This run, as the locks and the machine's run registry name it.
    pub holder: lock::Holder,
}

impl Context<'_> {
    /// A progress line on stderr (silent with `--json`, whose stdout is the receipt).
    pub fn say(&self, message: &str) {
        if !self.args.json {
            eprintln!("{message}");
        }
    }

    /// qualify has been asked to stop (SIGINT/SIGTERM/SIGHUP).
    pub fn cancelled(&self) -> bool {
        self.cancel.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Runs per cell asked by `--repeat`, else `[reproducibility] repeat`.
    pub fn repeat(&self) -> u64 {
        self.args.repeat.unwrap_or(self.spec.reproducibility.repeat)
    }
}

pub fn run(args: RunArgs) -> Result<ExitCode, CliError> {
    let cancel = crate::cancel_on_signals();
    let mut spec = Spec::load_with(&args.spec, &args.set)?;
    sandbox::hide_run_paths(&mut spec, &args);
    spec.sandbox.pass_env = args.pass_env.clone();
    let ctx = Context {
        spec: &spec,
        args: &args,
        cancel: &cancel,
        started: std::time::SystemTime::now(),
        holder: lock::Holder::me(&args.spec),
    };
    let _registered = lock::register(&ctx.holder);
    let mut prepared = prepare::prepare(&ctx)?;
    let sandboxed = sandbox::self_test(&ctx)?;
    prepared.sandbox = sandboxed.record.clone();
    let workdir = &spec.artifact.workdir;
    let workdir_lock = lock::hold(
        &ctx,
        &lock::workdir_lock_path(workdir),
        &format!("the workdir {}", workdir.display()),
    )?;
    let built = build::build(&ctx)?;
    // What the receipt names, read before the first probe of the artifact.
    let artifact = crate::subjects::artifact_files(&spec);
    // Slurm jobs may wait in the queue for hours: the workdir is held for the build only.
    let workdir_lock = match slurm::kind(args.executor, &spec) {
        qualify_spec::ExecutorKind::Slurm => {
            drop(workdir_lock);
            None
        }
        qualify_spec::ExecutorKind::Local => Some(workdir_lock),
    };
    let mut checked = checks::run(&ctx, &prepared, built)?;
    if checked.holdout.checks.is_some() || checked.holdout.required {
        // Held-out checks ran: try, as their artifact, to read or recognise one.
        let held = (checked.holdout.checks.is_some()
            && spec.sandbox.mode != qualify_spec::SandboxMode::Off
            && !ctx.cancelled())
        .then(|| sandbox::held_out_self_test(&ctx, prepared.held_out.first_check()));
        if let (Some(h), Some(serde_json::Value::Object(record))) =
            (&held, prepared.sandbox.as_mut())
        {
            record.insert(
                "held_out_self_test".into(),
                match &h.attempts {
                    Some(a) => serde_json::json!(a),
                    None => serde_json::json!({ "error": h.error }),
                },
            );
        }
        checked.holdout.secrecy = Some(sandboxed.secrecy(&spec, held.as_ref(), &prepared.redactor));
    }
    let probed = region::probe(&ctx, &mut prepared.regressions, &checked.next)?;
    let analysed = analysis::analyse(&ctx, &prepared, &checked, &probed);
    // Still what ran: a file changed since the start is a setup failure, never a receipt.
    artifact.unchanged(&spec, &seal::written_by_qualify(&ctx))?;
    let sealed = seal::seal(&ctx, &prepared, checked, probed, analysed, artifact)?;
    drop(workdir_lock);
    record::record(&ctx, &mut prepared, &sealed)?;
    summary::print(&ctx, &sealed);
    Ok(sealed.exit_code())
}
