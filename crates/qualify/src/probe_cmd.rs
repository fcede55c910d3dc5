//! `qualify probe`: flags, the human summary and the exit status contract
//! (0 = ok, 1 = any other outcome, 2 = usage/setup error, 130 = interrupted).

use std::ffi::OsString;
use std::process::ExitCode;

use clap::Args;
use qualify_probe::{
    BackendChoice, Limits, Outcome, ProbeResult, ProbeSpec, Progress, parse_cpus, parse_duration,
    parse_size,
};

use crate::error::{CliError, exit};

#[derive(Args, Debug)]
pub struct ProbeArgs {
    #[command(flatten)]
    limits: LimitArgs,
    /// Run N times and compare stdout digests.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=qualify_model::limits::MAX_REPEAT))]
    repeat: u64,
    /// Enforcement backend: auto, cgroup2, cgroup1, rlimit.
    #[arg(long, value_name = "BACKEND", default_value = "auto")]
    backend: BackendChoice,
    #[command(flatten)]
    sandbox: SandboxArgs,
    /// Print one JSON object on stdout instead of the human summary.
    #[arg(long)]
    json: bool,
    /// Stop the probe (`interrupted`) when this lease file stops changing for 10 s, says
    /// `ended` or disappears: how a Slurm job ends when the `qualify run` that submitted it is gone.
    #[arg(long, value_name = "FILE")]
    lease: Option<std::path::PathBuf>,
    #[command(flatten)]
    perturb: PerturbArgs,
    /// The command to probe, after `--`.
    #[arg(required = true, trailing_var_arg = true, value_name = "COMMAND")]
    command: Vec<OsString>,
}

/// Schedule perturbation (`--perturb`): many runs, each under seeded schedule noise.
#[derive(Args, Debug)]
pub struct PerturbArgs {
    /// Run the command many times under seeded schedule perturbation (a preloaded shim at
    /// pthread synchronisation calls, scheduler-level noise from outside): counts of how runs
    /// ended, each failure's seed, reproduction rate, bare rate and minimised points.
    #[arg(long)]
    perturb: bool,
    /// Perturbed runs (with --seed: replays of that seed).
    #[arg(long, value_name = "N", requires = "perturb", value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    runs: Option<u64>,
    /// Modes the runs rotate through: pct, noise, sched (comma-separated); with --seed the one
    /// mode the replay command names (e.g. pct+sched).
    #[arg(
        long,
        value_name = "MODES",
        requires = "perturb",
        default_value = "pct,noise,sched"
    )]
    mode: String,
    /// Replay this seed (16 hex digits, as a failure's replay command prints it).
    #[arg(long, value_name = "SEED", requires = "perturb", value_parser = parse_seed)]
    seed: Option<u64>,
    /// The campaign's seed: run i's seed is derived from it and i.
    #[arg(long, value_name = "SEED", requires = "perturb", value_parser = parse_seed, default_value = "1")]
    campaign_seed: u64,
    /// PCT's number of steps (k); learned from the runs when not given.
    #[arg(long, value_name = "K", requires = "perturb", value_parser = clap::value_parser!(u64).range(1..=100_000_000))]
    steps: Option<u64>,
    /// PCT's depth (d): d − 1 priority change points per run.
    #[arg(long, value_name = "D", requires = "perturb", default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=16))]
    depth: u32,
    /// N: replays of each failing seed, and as many bare runs beside them.
    #[arg(long, value_name = "N", requires = "perturb", default_value_t = 20, value_parser = clap::value_parser!(u64).range(0..=100_000))]
    replays: u64,
    /// Do not minimise failures to their perturbation points.
    #[arg(long, requires = "perturb")]
    no_minimise: bool,
    /// Stop at the first failing run (how many runs it takes to find one).
    #[arg(long, requires = "perturb")]
    stop_at_first: bool,
    /// Most delay the shim may add to one run, all threads together (the deadline grows by it).
    #[arg(long, value_name = "DURATION", requires = "perturb", default_value = "1s", value_parser = parse_duration)]
    perturb_budget: std::time::Duration,
}

/// A seed as `--seed` takes it.
fn parse_seed(s: &str) -> Result<u64, SeedError> {
    qualify_perturb::recipe::parse_seed(s).ok_or_else(|| SeedError(s.to_string()))
}

/// A `--seed` value that is not a seed.
#[derive(Debug, thiserror::Error)]
#[error("`{0}`: expected up to 16 hex digits (as a replay command prints them), or d:DECIMAL")]
struct SeedError(String);

/// A `--mode` value that is not a list of modes (or, with --seed, one recipe label).
#[derive(Debug, thiserror::Error)]
#[error(
    "--mode `{0}`: expected pct, noise and sched separated by commas (with --seed: one of pct, noise, sched, pct+sched, noise+sched)"
)]
struct ModeError(String);

impl PerturbArgs {
    /// The campaign of these flags, for `spec` (its command printed in replay commands).
    fn plan(&self, spec: &ProbeSpec) -> Result<qualify_perturb::Plan, CliError> {
        use qualify_model::PerturbMode;
        let bad = || CliError::input_only(ModeError(self.mode.clone()).to_string());
        let modes: Vec<PerturbMode> = if self.seed.is_some() {
            Vec::new()
        } else {
            self.mode
                .split(',')
                .map(|m| m.trim().parse::<PerturbMode>().map_err(|_| bad()))
                .collect::<Result<_, _>>()?
        };
        let cpus = qualify_probe::allowed_cpus();
        let replay = match self.seed {
            None => None,
            Some(seed) => {
                let (mode, sched) = match self.mode.as_str() {
                    "pct" => (PerturbMode::Pct, false),
                    "noise" => (PerturbMode::Noise, false),
                    "sched" => (PerturbMode::Sched, true),
                    "pct+sched" => (PerturbMode::Pct, true),
                    "noise+sched" => (PerturbMode::Noise, true),
                    _ => return Err(bad()),
                };
                let known = qualify_perturb::Knowledge {
                    steps: self.steps,
                    depth: self.depth,
                    shim_reaches: sched.then_some(false),
                };
                Some(qualify_perturb::Recipe::derive(mode, seed, &known, cpus))
            }
        };
        let command = qualify_run::perturb::replay_command(spec, &self.perturb_budget);
        Ok(qualify_perturb::Plan {
            runs: self.runs.unwrap_or(if replay.is_some() {
                self.replays.max(1)
            } else {
                200
            }),
            modes: match &replay {
                Some(r) => vec![r.mode],
                None => modes,
            },
            seed: self.campaign_seed,
            replays: self.replays,
            minimise: !self.no_minimise,
            depth: self.depth,
            steps: self.steps,
            stop_at_first: self.stop_at_first,
            shim_budget: self.perturb_budget,
            replay,
            cpus,
            command,
            list_runs: true,
            ..qualify_perturb::Plan::default()
        })
    }
}

/// The ceilings and stop rules shared by `qualify probe` and `qualify agent coordinate` (where
/// the memory ceiling holds per node, and the rest for the launcher's tree).
#[derive(Args, Debug)]
pub struct LimitArgs {
    /// Memory ceiling for the whole process tree (e.g. 256M, 256MiB, 1G).
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub memory: Option<u64>,
    /// CPU ceiling in cores (fractional allowed, e.g. 0.5).
    #[arg(long, value_name = "N", value_parser = parse_cpus)]
    pub cpus: Option<f64>,
    /// Maximum number of tasks (processes + threads) in the tree, at most 4194304 (default under
    /// the sandbox: 4096, a guard whose reach ends the run as `pids_exhausted`).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=qualify_model::limits::MAX_PIDS))]
    pub pids: Option<u64>,
    /// Ceiling on what the tree writes to its private /tmp and /dev/shm (and, in `qualify run`,
    /// the workdir's private layer), e.g. 256M (default under the sandbox: 1 GiB, a guard).
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub disk: Option<u64>,
    /// Deadline for the run (e.g. 30s, 2m; at most 30 days).
    #[arg(long, value_name = "DURATION", default_value = "600s", value_parser = parse_duration)]
    pub timeout: std::time::Duration,
    /// Window without any motion (deadlock) or progress (livelock) before the run is ended.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = parse_duration)]
    pub stall: std::time::Duration,
    /// Which signal counts as progress: none, output, heartbeat (exports QUALIFY_HEARTBEAT).
    #[arg(long, value_name = "SIGNAL", default_value = "none")]
    pub progress: Progress,
}

impl LimitArgs {
    pub fn to_limits(&self) -> Limits {
        Limits {
            memory_bytes: self.memory,
            cpus: self.cpus,
            pids: self.pids,
            timeout_seconds: self.timeout.as_secs_f64(),
            stall_seconds: self.stall.as_secs_f64(),
            progress: self.progress,
            disk_bytes: self.disk,
            guards: Vec::new(),
        }
    }
}

/// The sandbox flags shared by `qualify probe` and `qualify agent coordinate` (the Slurm
/// executor passes a cell's sandbox to the node as these flags).
#[derive(Args, Debug)]
pub struct SandboxArgs {
    /// The sandbox: on (as strong as the host allows, each missing layer stated), off, or
    /// required (exit 2 naming a layer that cannot be enforced).
    #[arg(long, value_name = "MODE", default_value = "on")]
    sandbox: qualify_probe::SandboxMode,
    /// The program's network: loopback (a private namespace with only its own loopback), none,
    /// or host (qualify's).
    #[arg(long, value_name = "NETWORK", default_value = "loopback")]
    network: qualify_model::NetworkPolicy,
    /// Also writable inside the sandbox (the current directory always is). Repeatable.
    #[arg(long, value_name = "PATH")]
    writable: Vec<std::path::PathBuf>,
    /// Readable although inside a hidden path. Repeatable.
    #[arg(long, value_name = "PATH")]
    readable: Vec<std::path::PathBuf>,
    /// Hide this path from the program as ROLE (holdout, key, state, home): `ROLE=PATH`.
    /// Repeatable; every home directory is hidden already.
    #[arg(long, value_name = "ROLE=PATH", value_parser = qualify_model::step::parse_hide)]
    hide: Vec<(qualify_probe::Role, std::path::PathBuf)>,
    /// As root: the user the program runs as (default: the current directory's owner, or nobody).
    #[arg(long, value_name = "USER")]
    user: Option<String>,
    /// Pass this variable of qualify's environment to the program (a name, or a prefix ending in
    /// `*`, e.g. 'OMPI_*'). Repeatable. Without it a sandboxed program gets only PATH, HOME,
    /// LANG, LANGUAGE, LC_*, TZ and TMPDIR; with --sandbox off, everything.
    #[arg(long = "pass-env", value_name = "NAME")]
    pass_env: Vec<String>,
    /// Write the current directory through a private layer (an overlay removed afterwards):
    /// nothing the program writes there stays, as in `qualify run`'s cells.
    #[arg(long)]
    private_workdir: bool,
}

impl SandboxArgs {
    /// The policy the flags ask for.
    pub fn to_policy(&self) -> qualify_model::SandboxPolicy {
        match self.sandbox {
            qualify_probe::SandboxMode::Off => qualify_model::SandboxPolicy::off(),
            mode => qualify_model::SandboxPolicy {
                mode,
                network: self.network,
                writable: self.writable.clone(),
                readable: self.readable.clone(),
                user: self.user.clone(),
                hidden: self.hide.clone(),
                pass_env: self.pass_env.clone(),
                private_workdir: self.private_workdir,
            },
        }
    }

    pub fn to_sandbox(&self) -> qualify_probe::Sandbox {
        qualify_probe::Sandbox::from_policy(&self.to_policy())
    }
}

pub fn run(args: ProbeArgs) -> Result<ExitCode, CliError> {
    let cancel = crate::shell::cancel_on_signals();
    if let Some(lease) = &args.lease {
        qualify_run::remote::lease::watch(lease.clone(), cancel.clone());
    }
    let limits = args.limits.to_limits();
    let sandbox = args.sandbox.to_sandbox();
    let spec = ProbeSpec {
        argv: args.command,
        workdir: None,
        env: Vec::new(),
        limits,
        backend: args.backend,
        control: None,
        sandbox,
        shared_files: Vec::new(),
        stdio: None,
    };
    let repeat = args.repeat as usize;
    let json = args.json;
    let result = if cancel.load(std::sync::atomic::Ordering::SeqCst) {
        // Stopped before it started (a lapsed lease): nothing is run.
        Ok(spec.not_run("not probed: qualify was stopping"))
    } else if args.perturb.perturb {
        let plan = args.perturb.plan(&spec)?;
        let r = qualify_run::perturb::campaign(&spec, plan, &cancel, !json)?;
        let code = perturb_exit(&r);
        print_result(&r, json)?;
        return Ok(code);
    } else {
        qualify_probe::probe_repeated(&spec, repeat, &cancel, |i, r| {
            if repeat > 1 && !json {
                eprintln!(
                    "run {}/{}: {} ({:.2}s)",
                    i + 1,
                    repeat,
                    r.outcome,
                    r.wall_seconds
                );
            }
        })
    };
    let result = result?;
    if let Some(w) = result
        .evidence
        .get("backend_fallback")
        .and_then(|v| v.as_str())
    {
        eprintln!("qualify: warning: {w}");
    }
    print_result(&result, json)?;
    Ok(exit_code(&result))
}

fn print_result(result: &ProbeResult, json: bool) -> Result<(), CliError> {
    if json {
        let s = serde_json::to_string(result)
            .map_err(|e| CliError::output(format!("cannot encode result as JSON: {e}"), None))?;
        use std::io::Write;
        let _ = writeln!(std::io::stdout().lock(), "{s}");
    } else {
        print_summary(result);
    }
    Ok(())
}

/// A campaign: 0 when no perturbed run failed, 1 when one did, 130 when interrupted.
fn perturb_exit(r: &ProbeResult) -> ExitCode {
    match &r.perturb {
        Some(p) if p.failed() => exit::refused(),
        Some(p) if p.stopped.as_deref() == Some("qualify was interrupted") => exit::interrupted(),
        Some(_) => ExitCode::SUCCESS,
        None => exit_code(r),
    }
}

fn exit_code(r: &ProbeResult) -> ExitCode {
    match r.outcome {
        Outcome::Ok => ExitCode::SUCCESS,
        Outcome::Interrupted => exit::interrupted(),
        _ => exit::refused(),
    }
}

fn print_summary(r: &ProbeResult) {
    use std::io::Write;
    // A closed stdout (e.g. piped into `head`) must not turn a verdict into a panic.
    let _ = std::io::stdout()
        .lock()
        .write_all(qualify_render::terminal::probe(r).as_bytes());
}

impl ProbeArgs {
    /// The flags as the step a Slurm job writes them with (the command lossily as text).
    #[cfg(test)]
    pub fn to_step(&self) -> qualify_model::step::ProbeStep {
        qualify_model::step::ProbeStep {
            observe_nodes: false,
            nodes_dir: None,
            limits: self.limits.to_limits(),
            repeat: self.repeat,
            backend: self.backend,
            sandbox: self.sandbox.to_policy(),
            json: self.json,
            lease: self.lease.clone(),
            command: self
                .command
                .iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect(),
        }
    }
}
