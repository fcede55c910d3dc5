//! `qualify-run`: the run of a claim as a library, the stages of `qualify run` that read top to
//! bottom in [`run`]:
//!
//! 1. [`prepare`] — load the spec; check and load what the options name (signing key,
//!    baseline, held-out checks, trace and git history, the ledger and its regressions).
//! 2. [`build`] — the spec's build command, once, as a probe.
//! 3. [`checks`] — the functional check, then the held-out checks; decides whether the
//!    operating region is probed.
//! 4. [`region`] — the ledger's regressions first, then the plan (sweeps and boundary
//!    searches), every cell through [`cells::Cells`] (controls first, warmups, repeats, the
//!    setup error) on one [`executor::Executor`] — where a cell runs: this machine or Slurm,
//!    chosen once; with `[performance]` the plan is round 1 and [`rounds`] re-probes the
//!    measured cells in shuffled rounds; [`measure`] reads what each cell measured.
//! 5. [`analysis`] — the receipt's cells, boundaries and the performance analysis.
//! 6. [`seal`] — fingerprint, the run record, the layered receipt (signed with `sign`),
//!    written atomically.
//! 7. [`record`] — the receipt appended to the ledger.
//!
//! [`remote`] is the door to the halves that run in other processes (a service cell's steps,
//! multi-node agents, a job's lease).
//!
//! A run holds its workdir's lock from the build until the receipt is written (under Slurm,
//! the build only), and a measuring run the machine's measurement lock for its region
//! ([`lock`]): concurrent runs wait for each other instead of racing. It takes plain
//! [`RunOptions`] and reports progress to a [`RunObserver`]; the binary owns the flags, the
//! terminal and the exit statuses. Errors are [`Error`]s, each saying what to do.

pub mod analysis;
pub mod build;
pub mod cells;
pub mod checks;
pub mod environment;
pub mod error;
pub mod executor;
pub mod holdout;
pub mod host;
pub mod junit_counts;
pub mod lock;
pub mod measure;
pub mod perturb;
pub mod prepare;
pub mod process_inputs;
pub mod record;
pub mod region;
pub mod regressions;
pub mod remote;
pub mod rounds;
pub mod runner;
pub mod sandbox;
pub mod seal;
pub mod signing;
pub mod slurm;
pub mod subjects;
pub mod topology;

use std::path::PathBuf;
use std::sync::Arc;

use qualify_probe::{BackendChoice, CancelToken};
use qualify_spec::{ExecutorKind, Spec};

pub use error::Error;

/// What a run is asked to do: `qualify run`'s flags as plain values.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// The spec to run.
    pub spec: PathBuf,
    /// Where to write the receipt (default `.qualify/receipts/<UTC time>-<digest>.json`).
    pub receipt: Option<PathBuf>,
    /// Cells side by side at most, never letting their CPU demands overlap.
    pub jobs: u64,
    /// Probe the operating region even when the functional command failed.
    pub keep_going: bool,
    /// Enforcement backend for every probe.
    pub backend: BackendChoice,
    /// The receipt goes to stdout (written compact) instead of a summary.
    pub json: bool,
    /// An earlier receipt every shared cell's performance is compared with.
    pub baseline: Option<PathBuf>,
    /// The ledger the receipt is appended to and regressions are read from.
    pub ledger: PathBuf,
    /// Neither read regressions from nor append the receipt to the ledger.
    pub no_ledger: bool,
    /// A directory of held-out check commands (else `$QUALIFY_HOLDOUT`).
    pub holdout: Option<PathBuf>,
    /// Development traces for the process layer.
    pub trace: Vec<PathBuf>,
    /// Read every trace file as this format instead of detecting it.
    pub trace_format: Option<qualify_trace::Format>,
    /// Summarise the workdir's git history since this revision.
    pub since: Option<String>,
    /// Where cells run; `None`: the spec's `[executor] kind`.
    pub executor: Option<ExecutorKind>,
    /// Sign the receipt with this private key.
    pub sign: Option<PathBuf>,
    /// Runs per cell compared by stdout digest (over `[reproducibility] repeat`).
    pub repeat: Option<u64>,
    /// Keys of the spec changed for this run, checked like the file.
    pub set: Vec<qualify_spec::Override>,
    /// Fail at once, naming the holder, instead of waiting for a lock.
    pub no_wait: bool,
    /// Variables of qualify's environment the artifact also gets.
    pub pass_env: Vec<String>,
    /// Variables whose values are secrets, redacted from every text the run stores.
    pub secret: Vec<String>,
}

/// Who watches a run: progress lines and progress displays. The binary draws them on the
/// terminal (nothing with `--json`); tests and other callers may keep them or drop them.
pub trait RunObserver: Sync {
    /// A line for the person watching.
    fn say(&self, line: &str);
    /// A display of `total` steps (the region's cells, a round's runs).
    fn progress(&self, total: usize) -> Arc<dyn Progress>;
}

/// One progress display ([`RunObserver::progress`]).
pub trait Progress: Send + Sync {
    fn set_total(&self, total: usize);
    fn set_position(&self, done: usize);
    fn inc(&self);
    fn set_message(&self, message: String);
    /// A line above the display (a cell that did not end `ok`).
    fn println(&self, line: String);
    fn finish(&self);
}

/// An observer that shows nothing.
pub struct Silent;

impl RunObserver for Silent {
    fn say(&self, _: &str) {}
    fn progress(&self, _: usize) -> Arc<dyn Progress> {
        Arc::new(Silent)
    }
}

impl Progress for Silent {
    fn set_total(&self, _: usize) {}
    fn set_position(&self, _: usize) {}
    fn inc(&self) {}
    fn set_message(&self, _: String) {}
    fn println(&self, _: String) {}
    fn finish(&self) {}
}

/// What every stage reads: the spec, the options, the cancellation token, and who watches.
pub struct Context<'a> {
    pub spec: &'a Spec,
    pub args: &'a RunOptions,
    pub cancel: &'a CancelToken,
    pub observer: &'a dyn RunObserver,
    /// When the run started (after the spec loaded).
    pub started: std::time::SystemTime,
    /// This run, as the locks and the machine's run registry name it.
    pub holder: lock::Holder,
}

impl Context<'_> {
    /// A progress line for the observer.
    pub fn say(&self, message: &str) {
        self.observer.say(message);
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

/// Run the claim of the spec `args.spec` names: every stage, the receipt written and
/// recorded. `cancel` stops it (a receipt marked incomplete is still written, unless the run
/// was waiting for a lock).
pub fn run(
    args: &RunOptions,
    observer: &dyn RunObserver,
    cancel: &CancelToken,
) -> Result<seal::Sealed, Error> {
    let mut spec = Spec::load_with(&args.spec, &args.set)?;
    let executor_kind = executor::kind(args.executor, &spec)?;
    sandbox::hide_run_paths(&mut spec, args);
    spec.sandbox.pass_env = args.pass_env.clone();
    let ctx = Context {
        spec: &spec,
        args,
        cancel,
        observer,
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
    let artifact = subjects::artifact_files(&spec);
    // Slurm jobs may wait in the queue for hours: the workdir is held for the build only.
    let workdir_lock = match executor_kind {
        ExecutorKind::Slurm => {
            drop(workdir_lock);
            None
        }
        ExecutorKind::Local => Some(workdir_lock),
    };
    let mut checked = checks::run(&ctx, &prepared, built)?;
    if checked.holdout.checks.is_some() || checked.holdout.required {
        // Held-out checks ran: try, as their artifact, to read or recognise one.
        let held = (checked.holdout.checks.is_some()
            && spec.sandbox.mode != qualify_spec::SandboxMode::Off
            && !ctx.cancelled())
        .then(|| sandbox::held_out_self_test(&ctx, prepared.held_out.first_check()));
        if let (Some(h), Some(record)) = (&held, prepared.sandbox.as_mut()) {
            record.held_out_self_test = Some(match &h.attempts {
                Some(a) => qualify_evidence::HeldOutSelfTestRecord::Attempts(Box::new(a.clone())),
                None => qualify_evidence::HeldOutSelfTestRecord::Error {
                    error: h.error.clone(),
                },
            });
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
    Ok(sealed)
}
