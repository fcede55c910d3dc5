//! `qualify run [SPEC]`: the main job. Load and check the spec, build, run the functional
//! command, expand and execute the plan (sweeps and boundary searches) through the probe engine,
//! write the layered receipt, print the layer table, failure map, boundaries and verdict.
//!
//! Exit status: 0 the receipt supports the spec's claim, 1 it does not, 2 spec or setup error,
//! 130 interrupted (a receipt marked incomplete is still written).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Mutex;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant, SystemTime};

use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use qualify_evidence as ev;
use qualify_plan as plan;
use qualify_probe::{BackendChoice, CancelToken, Outcome, ProbeError, ProbeResult, ProbeSpec};
use qualify_spec::{AxisValue, Domain, Number, Scale, Search, Spec};

use crate::{EXIT_USAGE, junit, report};

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
    /// A development trace (JSON Lines) for the process layer.
    #[arg(long, value_name = "FILE")]
    trace: Option<PathBuf>,
    /// Summarise the workdir's git history since REV (`git log REV..HEAD`) for the process layer.
    #[arg(long, value_name = "REV")]
    since: Option<String>,
    /// Where cells run: local (this machine) or slurm (one job per cell); default: the spec's
    /// [executor] kind, else local.
    #[arg(long, value_name = "KIND", value_enum)]
    executor: Option<crate::slurm_exec::ExecutorFlag>,
    /// Sign the receipt with this private key (from `qualify keygen`): it is written as a DSSE
    /// envelope around the in-toto Statement.
    #[arg(long, value_name = "KEY")]
    sign: Option<PathBuf>,
    /// Run every cell N times and compare stdout digests (overrides [reproducibility] repeat).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=1000))]
    repeat: Option<u64>,
}

/// A probe that could not start at all (command not found, backend missing): stops the run.
type SetupFailure = Mutex<Option<ProbeError>>;

pub fn run(args: RunArgs) -> ExitCode {
    let cancel = crate::cancel_on_signals();
    let spec = match Spec::load(&args.spec) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    match execute(&spec, &args, &cancel) {
        Ok(code) => code,
        Err(msg) => {
            eprintln!("qualify: error: {msg}");
            ExitCode::from(EXIT_USAGE)
        }
    }
}

fn execute(spec: &Spec, args: &RunArgs, cancel: &CancelToken) -> Result<ExitCode, String> {
    let started = SystemTime::now();
    let signing_key = crate::trust_run::load_signing_key(args.sign.as_deref())?;
    let baseline = crate::perf_run::load_baseline(args.baseline.as_deref())?;
    let mut factory = crate::factory::Prepared::new(
        spec,
        &crate::factory::FactoryFlags {
            holdout: args.holdout.as_deref(),
            trace: args.trace.as_deref(),
            since: args.since.as_deref(),
            ledger: (!args.no_ledger).then_some(args.ledger.as_path()),
            quiet: args.json,
        },
    )?;
    let workdir = spec.artifact.workdir.clone();
    let base = |argv: Vec<String>| ProbeSpec {
        argv: argv.into_iter().map(Into::into).collect(),
        workdir: Some(workdir.clone()),
        env: Vec::new(),
        limits: spec.limits.to_probe_limits(),
        backend: args.backend,
    };
    let say = |msg: &str| {
        if !args.json {
            eprintln!("{msg}");
        }
    };

    // Build once, as a probe under the spec's limits.
    let mut interrupted_in_build = false;
    if let Some(build) = &spec.artifact.build {
        say(&format!("building: {build}"));
        let r = probe_or_setup_error(&base(build.argv()), cancel)?;
        if r.outcome == Outcome::Interrupted {
            interrupted_in_build = true;
        } else if r.outcome != Outcome::Ok {
            return Err(format!(
                "the build command `{build}` failed ({}: {}); fix the build first\n{}",
                r.outcome,
                r.detail,
                last_lines(&r.stderr_tail, 10)
            ));
        }
    }

    // Functional first.
    let functional = match &spec.functional {
        None => ev::FunctionalRun::NotDeclared,
        Some(_) if interrupted_in_build => ev::FunctionalRun::NotRun {
            reason: "the run was interrupted during the build step".into(),
        },
        Some(f) => {
            say(&format!("functional: {}", f.command));
            let result = probe_or_setup_error(&base(f.command.argv()), cancel)?;
            let junit = match &f.junit {
                Some(path) if result.outcome != Outcome::Interrupted => Some(junit::read(path)?),
                _ => None,
            };
            ev::FunctionalRun::Ran(Box::new(ev::FunctionalRecord {
                command: f.command.to_string(),
                result,
                junit,
            }))
        }
    };
    let functional_ok = match &functional {
        ev::FunctionalRun::Ran(rec) => {
            rec.result.outcome == Outcome::Ok
                && rec.junit.is_none_or(|j| j.failures == 0 && j.errors == 0)
        }
        _ => true,
    };
    let interrupted_early = interrupted_in_build
        || match &functional {
            ev::FunctionalRun::Ran(rec) => rec.result.outcome == Outcome::Interrupted,
            _ => false,
        };

    let holdout = factory.run_holdout(
        spec,
        args.backend,
        cancel,
        interrupted_early || cancel.load(Ordering::Relaxed),
        args.json,
    );

    // The plan.
    let axes: Vec<plan::Axis> = spec.axes.iter().map(plan_axis).collect();
    let the_plan = plan::Plan::new(axes).map_err(|e| format!("{}: {e}", spec.path.display()))?;
    let planned = the_plan.estimated_cells();
    let mut execution = None;
    let setup_failure: SetupFailure = Mutex::new(None);
    if interrupted_early || cancel.load(Ordering::Relaxed) {
        say("interrupted before the operating region was probed");
    } else if !functional_ok && !args.keep_going {
        say("functional layer failed: no operational probing (pass --keep-going to probe anyway)");
    } else {
        let slurm = match crate::slurm_exec::kind(args.executor, spec) {
            qualify_spec::ExecutorKind::Slurm => Some(crate::slurm_exec::start(spec, cancel)?),
            qualify_spec::ExecutorKind::Local => None,
        };
        execution = Some(run_plan(
            spec,
            args,
            &the_plan,
            planned,
            cancel,
            &setup_failure,
            slurm.as_ref(),
            &mut factory.controls,
        ));
        if let Some(e) = slurm.as_ref().and_then(|s| s.setup_error()) {
            return Err(format!("a cell could not be submitted to Slurm: {e}"));
        }
    }
    if let Ok(mut slot) = setup_failure.lock()
        && let Some(e) = slot.take()
    {
        return Err(format!("a cell could not be probed: {e}"));
    }

    // The record and the receipt.
    let cancelled = cancel.load(Ordering::Relaxed);
    let cells: Vec<ev::Cell> = execution
        .as_ref()
        .map(|x| {
            x.cells
                .iter()
                .map(|c| {
                    ev::Cell::new(
                        evidence_params(&c.params),
                        c.result.clone(),
                        c.role.is_boundary_probe(),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    let cells = crate::factory::with_controls(
        &factory.controls,
        |p, r| ev::Cell::new(evidence_params(p), r, false),
        cells,
    );
    let performance = crate::perf_run::analyze(spec, execution.as_ref(), baseline);
    let boundaries: Vec<serde_json::Value> = execution
        .as_ref()
        .map(|x| {
            x.boundaries
                .iter()
                .filter_map(|b| serde_json::to_value(b).ok())
                .collect()
        })
        .unwrap_or_default();
    let incomplete = cancelled
        || interrupted_early
        || execution
            .as_ref()
            .is_some_and(|x| !x.complete || x.cancelled);
    let backend = cells
        .first()
        .map(|c| c.result.enforcement.backend.clone())
        .or_else(|| match &functional {
            ev::FunctionalRun::Ran(r) => Some(r.result.enforcement.backend.clone()),
            _ => None,
        })
        .unwrap_or_else(|| "none".into());
    let (environment, reproducibility) = crate::trust_run::environment(
        spec,
        &backend,
        artifact_executable(spec).map(|e| e.sha256),
        args.backend,
        cancel,
        incomplete,
        args.json,
    );
    let record = ev::RunRecord {
        qualify_version: env!("CARGO_PKG_VERSION").to_string(),
        artifact: ev::ArtifactRecord {
            name: spec.artifact.name.clone(),
            executable: artifact_executable(spec),
        },
        spec: ev::FileDigest {
            path: spec.path.display().to_string(),
            sha256: ev::sha256_hex(spec.source.as_bytes()),
        },
        claim: spec.claim.level,
        target: spec
            .target
            .as_ref()
            .map(|t| ev::Target {
                cores: t.cores,
                nodes: t.nodes,
                memory_bytes: t.memory_bytes,
                concurrency: t.concurrency,
                workload: t.workload.clone(),
            })
            .unwrap_or_default(),
        machine: crate::host::machine(backend, environment.as_ref()),
        axes: spec.axes.iter().map(axis_decl).collect(),
        material: Vec::new(),
        waivers: spec
            .waivers
            .iter()
            .map(|w| ev::Waiver {
                gap: w.gap.clone(),
                reason: w.reason.clone(),
            })
            .collect(),
        functional,
        holdout,
        process: factory.process.clone(),
        environment,
        reproducibility,
        keep_going: args.keep_going,
        cells,
        planned_cells: Some(planned),
        boundaries,
        performance: performance
            .as_ref()
            .and_then(|p| serde_json::to_value(p).ok()),
        incomplete,
        started,
        finished: SystemTime::now(),
    };
    let statement = ev::build(&record);
    let text = statement
        .to_json()
        .map_err(|e| format!("cannot encode the receipt: {e}"))?;
    let text = crate::trust_run::seal(text, signing_key.as_ref(), args.json);
    let path = match &args.receipt {
        Some(p) => p.clone(),
        None => {
            Path::new(".qualify/receipts").join(ev::default_file_name(SystemTime::now(), &text))
        }
    };
    write_receipt(&path, &text)?;
    factory.record(&text, args.json)?;
    let verdict = ev::evaluate(&statement, record.claim);

    if args.json {
        crate::print_stdout(&text);
    } else {
        crate::print_stdout(&report::summary(&statement, &record, &verdict, &path));
        if let Some(p) = &performance {
            crate::print_stdout(&crate::perf_run::summary(p));
        }
    }
    Ok(if incomplete {
        ExitCode::from(130)
    } else if verdict.supported {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn probe_or_setup_error(spec: &ProbeSpec, cancel: &CancelToken) -> Result<ProbeResult, String> {
    qualify_probe::probe(spec, cancel).map_err(|e| e.to_string())
}

fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.trim_end().lines().collect();
    lines[lines.len().saturating_sub(n)..]
        .iter()
        .map(|l| format!("  | {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn write_receipt(path: &Path, text: &str) -> Result<(), String> {
    if let Some(dir) = path.parent()
        && !dir.as_os_str().is_empty()
    {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    // Write then rename: an interrupted write never leaves half a receipt.
    let tmp = path.with_extension("json.partial");
    std::fs::write(&tmp, text).map_err(|e| format!("cannot write {}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, path).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// Cells in flight at once under Slurm (each waits on its own thread for its job).
const SLURM_IN_FLIGHT: usize = 4096;

#[allow(clippy::too_many_arguments)] // the plan, its context, and the ledger's controls
fn run_plan(
    spec: &Spec,
    args: &RunArgs,
    the_plan: &plan::Plan,
    planned: usize,
    cancel: &CancelToken,
    setup_failure: &SetupFailure,
    slurm: Option<&qualify_slurm::SlurmExecutor>,
    controls: &mut [(plan::Params, Option<ProbeResult>)],
) -> plan::Execution {
    let bar = if args.json {
        ProgressBar::hidden()
    } else {
        ProgressBar::new(planned as u64)
    };
    bar.set_style(
        ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} cells  {wide_msg}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar.enable_steady_tick(Duration::from_millis(200));
    let runner = |params: &plan::Params| -> ProbeResult {
        let map = spec_params(params);
        let probe_spec = ProbeSpec {
            argv: spec
                .artifact
                .argv(&map)
                .into_iter()
                .map(Into::into)
                .collect(),
            workdir: Some(spec.artifact.workdir.clone()),
            env: spec
                .artifact
                .env(&map)
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
            limits: spec.limits_for(&map),
            backend: args.backend,
        };
        let topology = crate::topology::of(spec, params);
        if let Some(executor) = slurm {
            let repeat = args.repeat.unwrap_or(spec.reproducibility.repeat);
            return crate::slurm_exec::run_cell(executor, &probe_spec, topology, repeat);
        }
        match crate::trust_run::probe_cell(spec, args.repeat, &probe_spec, cancel) {
            Ok(mut r) => {
                crate::topology::flag_local(&mut r, topology, qualify_probe::allowed_cpus());
                r
            }
            Err(e) => {
                if let Ok(mut slot) = setup_failure.lock()
                    && slot.is_none()
                {
                    *slot = Some(e);
                }
                cancel.store(true, Ordering::SeqCst);
                interrupted_result(&probe_spec)
            }
        }
    };
    let cores = qualify_probe::allowed_cpus();
    let concurrency_axis = spec
        .axes
        .iter()
        .find(|a| a.kind == qualify_spec::AxisKind::Concurrency)
        .map(|a| a.name.clone());
    let cpus = spec.limits.cpus;
    let demand = move |p: &plan::Params| -> usize {
        let from_axis = concurrency_axis
            .as_ref()
            .map(|a| plan::axis_demand(a.clone())(p))
            .unwrap_or(1);
        let from_ceiling = cpus.map(|c| c.ceil() as usize).unwrap_or(from_axis);
        from_axis.min(from_ceiling).max(1)
    };
    let started = Instant::now();
    let progress_bar = bar.clone();
    // Under Slurm the scheduler owns the cores: every cell is submitted at once.
    let (jobs, cores) = match slurm {
        Some(_) => (SLURM_IN_FLIGHT, SLURM_IN_FLIGHT),
        None => (args.jobs as usize, cores),
    };
    let opts = plan::ExecuteOptions::new()
        .jobs(jobs)
        .cores(cores)
        .demand(move |p: &plan::Params| if slurm.is_some() { 1 } else { demand(p) })
        .cancel(cancel.clone())
        .on_progress(move |ev| match ev {
            plan::ProgressEvent::Started {
                params,
                total_estimate,
                ..
            } => {
                progress_bar.set_length(*total_estimate as u64);
                progress_bar.set_message(format!("running {params}"));
            }
            plan::ProgressEvent::Finished {
                params,
                result,
                finished,
                total_estimate,
                ..
            } => {
                progress_bar.set_length(*total_estimate as u64);
                progress_bar.set_position(*finished as u64);
                if result.outcome != Outcome::Ok {
                    progress_bar.println(format!(
                        "  {params}: {} — {}",
                        result.outcome, result.detail
                    ));
                }
            }
        });
    crate::factory::run_controls(controls, &runner, cancel, &bar);
    let execution = the_plan.execute(&runner, &opts);
    bar.finish_and_clear();
    if !args.json {
        eprintln!(
            "probed {} cell(s) in {:.1}s",
            execution.cells.len(),
            started.elapsed().as_secs_f64()
        );
    }
    execution
}

/// The result recorded for a cell that could not start because the run is stopping.
fn interrupted_result(spec: &ProbeSpec) -> ProbeResult {
    ProbeResult {
        outcome: Outcome::Interrupted,
        exit_code: None,
        signal: None,
        timeout_kind: None,
        detail: "not probed: the run was stopping".into(),
        flags: Vec::new(),
        wall_seconds: 0.0,
        user_seconds: 0.0,
        system_seconds: 0.0,
        peak_memory_bytes: None,
        enforcement: qualify_probe::Enforcement {
            backend: spec.backend.to_string(),
            memory: qualify_probe::Strength::None,
            cpus: qualify_probe::Strength::None,
            pids: qualify_probe::Strength::None,
            tree: "none".into(),
            notes: Vec::new(),
        },
        limits: spec.limits.clone(),
        evidence: serde_json::Value::Null,
        stdout_tail: String::new(),
        stderr_tail: String::new(),
        stdout_bytes: 0,
        stderr_bytes: 0,
        stdout_sha256: String::new(),
        runs: None,
        distinct_outputs: None,
    }
}

fn plan_value(v: &AxisValue) -> plan::Value {
    match v {
        AxisValue::Int(i) => plan::Value::Int(*i),
        AxisValue::Float(f) => plan::Value::Float(*f),
        AxisValue::Str(s) => plan::Value::Text(s.clone()),
    }
}

fn spec_value(v: &plan::Value) -> AxisValue {
    match v {
        plan::Value::Int(i) => AxisValue::Int(*i),
        plan::Value::Float(f) => AxisValue::Float(*f),
        plan::Value::Text(s) => AxisValue::Str(s.clone()),
    }
}

fn json_value(v: &AxisValue) -> serde_json::Value {
    match v {
        AxisValue::Int(i) => serde_json::json!(i),
        AxisValue::Float(f) => serde_json::json!(f),
        AxisValue::Str(s) => serde_json::json!(s),
    }
}

fn spec_params(p: &plan::Params) -> BTreeMap<String, AxisValue> {
    p.iter()
        .map(|(k, v)| (k.to_string(), spec_value(v)))
        .collect()
}

fn evidence_params(p: &plan::Params) -> ev::Params {
    let mut out = ev::Params::new();
    for (k, v) in p.iter() {
        out.insert(k, json_value(&spec_value(v)));
    }
    out
}

/// A spec axis as the planner sees it. A unit-step integer range searched for a boundary is
/// bisected over integers; every other range is the spec's lattice of points.
fn plan_axis(a: &qualify_spec::Axis) -> plan::Axis {
    let domain = match &a.domain {
        Domain::Values(vals) => plan::Domain::Values(vals.iter().map(plan_value).collect()),
        Domain::Range(r) => match (r.lo, r.hi, r.step, r.scale, a.search) {
            (
                Number::Int(lo),
                Number::Int(hi),
                Number::Int(1),
                Scale::Linear,
                Some(Search::Boundary),
            ) => plan::Domain::Range { lo, hi },
            _ => plan::Domain::Values(a.points().iter().map(plan_value).collect()),
        },
    };
    let axis = plan::Axis::new(a.name.clone(), a.kind, domain);
    if a.search == Some(Search::Boundary) {
        axis.boundary()
    } else {
        axis
    }
}

fn axis_decl(a: &qualify_spec::Axis) -> ev::AxisDecl {
    let domain = match &a.domain {
        Domain::Values(vals) => ev::AxisDomain::Values(vals.iter().map(json_value).collect()),
        Domain::Range(r) => ev::AxisDomain::Range {
            min: json_value(&AxisValue::from(r.lo)),
            max: json_value(&AxisValue::from(r.hi)),
        },
    };
    ev::AxisDecl {
        name: a.name.clone(),
        kind: a.kind,
        domain,
    }
}

/// The artifact's executable, where one can be found: the first word of the command (an array's
/// first element), resolved against the workdir or PATH.
fn artifact_executable(spec: &Spec) -> Option<ev::FileDigest> {
    let first = match &spec.artifact.command {
        qualify_spec::CommandLine::Argv(v) => v.first()?.clone(),
        qualify_spec::CommandLine::Shell(s) => s.split_whitespace().next()?.to_string(),
    };
    if first.contains('{') {
        return None;
    }
    let path = if first.contains('/') {
        spec.artifact.workdir.join(first.trim_start_matches("./"))
    } else {
        let paths = std::env::var_os("PATH")?;
        std::env::split_paths(&paths)
            .map(|d| d.join(&first))
            .find(|p| p.is_file())?
    };
    let bytes = std::fs::read(&path).ok()?;
    Some(ev::FileDigest {
        path: path.display().to_string(),
        sha256: ev::sha256_hex(&bytes),
    })
}
