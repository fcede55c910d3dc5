//! The Slurm executor of `qualify run`: choosing the executor (`--executor` over `[executor] kind`), starting
//! the [`qualify_slurm::SlurmExecutor`] with the spec's partition/account/qos/sbatch options and
//! pending limit, and turning a cell's probe spec into a [`CellJob`]. The run directory is
//! `.qualify/slurm/<run name>` under the current directory (it must be shared with the compute
//! nodes, as the `qualify` binary's path must be). A service run's `none` controls are measured
//! before the faulted cells of their combination ([`ControlsFirst`]), whose jobs get the
//! control's variation (`--control-noise`).

use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use qualify_model::step::{CellStep, ProbeStep, ServiceCellStep};
use qualify_probe::{CancelToken, ProbeResult, ProbeSpec};
use qualify_service::controls::{self as ctl, Noise};
use qualify_slurm::{CellJob, JobStep, SlurmConfig, SlurmExecutor, Topology};
use qualify_spec::{AxisKind, Domain, ExecutorKind, Search, Spec};

use crate::error::CliError;

/// The `--executor` flag's values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ExecutorFlag {
    Local,
    Slurm,
}

/// The executor in force: the flag, else the spec's `[executor] kind`.
pub fn kind(flag: Option<ExecutorFlag>, spec: &Spec) -> ExecutorKind {
    match flag {
        Some(ExecutorFlag::Local) => ExecutorKind::Local,
        Some(ExecutorFlag::Slurm) => ExecutorKind::Slurm,
        None => spec.executor.kind,
    }
}

/// Start the Slurm executor for `spec` (errors are setup errors: exit 2).
pub fn start(spec: &Spec, cancel: &CancelToken) -> Result<SlurmExecutor, CliError> {
    let qualify = std::env::current_exe().map_err(|e| {
        CliError::input_only(format!(
            "cannot find the qualify binary for the Slurm jobs to run: {e}"
        ))
    })?;
    let mut config = SlurmConfig::new(PathBuf::new(), qualify);
    let base = std::path::absolute(".qualify/slurm")
        .map_err(|e| CliError::input_only(format!("cannot resolve .qualify/slurm: {e}")))?;
    config.run_dir = base.join(&config.job_name);
    let e = &spec.executor;
    config.partition = e.partition.clone();
    config.account = e.account.clone();
    config.qos = e.qos.clone();
    config.sbatch_options = e.sbatch_options.clone();
    config.pending_limit = e.pending_limit;
    if spec.performance.is_some() {
        eprintln!(
            "qualify: warning: [performance] under --executor slurm: each round is one job per cell (one job array per round), and a cell's runs may land on different nodes, so its estimate mixes them; run locally for measurements on one machine"
        );
    }
    SlurmExecutor::start(config, Arc::clone(cancel))
        .map_err(|e| CliError::input_only(e.to_string()))
}

/// Run one cell's probe spec as a Slurm job (`repeat` runs inside the job, as `--repeat`);
/// with `observe_nodes`, every node of the allocation is watched by a qualify agent and the
/// verdict is their merge (`qualify agent coordinate`).
pub fn run_cell(
    executor: &SlurmExecutor,
    spec: &ProbeSpec,
    topology: Topology,
    repeat: u64,
    observe_nodes: bool,
) -> ProbeResult {
    // A Slurm cell's launcher (srun, mpirun) talks to the controller and to the job's other
    // nodes: the cell keeps the node's network unless the spec says "none".
    let mut sandbox = spec.sandbox.policy();
    if sandbox.network == qualify_model::NetworkPolicy::Loopback {
        sandbox.network = qualify_model::NetworkPolicy::Host;
    }
    // Job steps (srun) must be created as the job's own user: no switch by default.
    if sandbox.user.is_none() {
        // SAFETY: getuid has no preconditions.
        sandbox.user = Some(unsafe { libc::getuid() }.to_string());
    }
    let step = ProbeStep {
        observe_nodes,
        nodes_dir: None,
        limits: spec.limits.clone(),
        repeat: repeat.max(1),
        backend: spec.backend,
        sandbox,
        json: true,
        lease: None,
        command: spec
            .argv
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect(),
    };
    let job = CellJob {
        workdir: spec.workdir.clone().unwrap_or_else(|| PathBuf::from(".")),
        env: spec
            .env
            .iter()
            .map(|(k, v)| {
                (
                    k.to_string_lossy().into_owned(),
                    v.to_string_lossy().into_owned(),
                )
            })
            .collect(),
        limits: spec.limits.clone(),
        topology,
        step: JobStep::Probe(step),
        heartbeats: false,
    };
    executor.run(job)
}

/// How many nodes the partition (default: every partition) has, asked once per run (`sinfo`).
fn partition_nodes(partition: Option<&str>) -> Option<u32> {
    static NODES: std::sync::OnceLock<Option<u32>> = std::sync::OnceLock::new();
    *NODES.get_or_init(|| {
        let mut cmd = std::process::Command::new("sinfo");
        cmd.args(["-h", "-N", "-o", "%N"]);
        if let Some(p) = partition {
            cmd.arg(format!("--partition={p}"));
        }
        let out = cmd.output().ok().filter(|o| o.status.success())?;
        let mut names: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| l.trim().to_string())
            .filter(|l| !l.is_empty())
            .collect();
        names.sort();
        names.dedup();
        u32::try_from(names.len()).ok().filter(|n| *n > 0)
    })
}

/// Run one service cell as a Slurm job: `qualify service-cell` on the first node of an
/// allocation of one node for the service, one per `node = "own"` dependency and one per load
/// generator (at most the partition's nodes: generators then share nodes), its nodes beating
/// (a silent one ends the cell `interrupted`, naming it).
pub fn run_service_cell(
    executor: &SlurmExecutor,
    spec: &Spec,
    spec_path: &std::path::Path,
    params: &qualify_plan::Params,
    backend: qualify_probe::BackendChoice,
    histories: &std::path::Path,
    control_noise: Option<Noise>,
) -> ProbeResult {
    let probe = spec.cell_probe(params, backend);
    let own = spec
        .dependencies
        .iter()
        .filter(|d| d.node == qualify_spec::Node::Own)
        .count();
    // The service's node, one per own dependency, one per load generator: as many as the
    // cluster has at most (generators then share nodes with the dependencies).
    let generators = spec
        .load
        .as_ref()
        .and_then(|l| l.plan_for(params))
        .map_or(0, |p| p.generators.max(1) as usize);
    let wanted = u32::try_from(1 + own + generators).unwrap_or(u32::MAX);
    let floor = u32::try_from(1 + own).unwrap_or(u32::MAX);
    let nodes = match partition_nodes(spec.executor.partition.as_deref()) {
        Some(n) => wanted.min(n).max(floor),
        None => floor,
    };
    let step = ServiceCellStep {
        cell: CellStep {
            spec: spec_path.to_path_buf(),
            params: params.clone(),
            backend,
            state_dir: None,
            lease: None,
            // The run's overrides: the job reads the spec as this run did.
            overrides: spec.overrides.clone(),
        },
        histories: Some(histories.to_path_buf()),
        control_noise,
    };
    let job = CellJob {
        workdir: spec.artifact.workdir.clone(),
        env: Vec::new(),
        limits: probe.limits.clone(),
        topology: Topology {
            nodes,
            ntasks: nodes,
            cpus_per_task: 1,
        },
        step: JobStep::ServiceCell(step),
        heartbeats: true,
    };
    executor.run(job)
}

/// The `none` controls of a service run under Slurm, each measured before the faulted cells of
/// its combination (as `region.rs` orders them locally) while every other cell runs at once: a
/// faulted cell whose control has not started runs it first (the planner's own call for the
/// control then takes that result), one whose control is running waits for it. Only where the
/// planner probes every control — every fault axis has `none`, no restart, no boundary search
/// (which may skip a combination's control) — otherwise a faulted cell runs at once.
#[derive(Default)]
pub struct ControlsFirst {
    /// By the control's group ([`ctl::group`]).
    slots: Mutex<Vec<(qualify_plan::Params, Slot)>>,
    done: Condvar,
}

enum Slot {
    Running,
    /// Measured (its variation is in the run's `Controls`, registered by whoever ran it), with
    /// its result when a faulted cell ran it and the planner has not yet asked for it.
    Done {
        unclaimed: Option<Box<ProbeResult>>,
    },
}

impl ControlsFirst {
    /// Whether the planner probes the control of every faulted cell of `spec`.
    pub fn applies(spec: &Spec) -> bool {
        let faults: Vec<_> = spec
            .axes
            .iter()
            .filter(|a| a.kind == AxisKind::Fault)
            .collect();
        spec.service.is_some()
            && spec.recovery.is_none()
            && !faults.is_empty()
            && faults.iter().all(|a| match &a.domain {
                Domain::Values(v) => v.iter().any(|x| x.as_text() == Some("none")),
                Domain::Range(_) => false,
            })
            && spec.axes.iter().all(|a| a.search != Some(Search::Boundary))
    }

    fn lock(&self) -> MutexGuard<'_, Vec<(qualify_plan::Params, Slot)>> {
        self.slots.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The control cell at `params`: the result a faulted cell ran it for, else `run` (after
    /// waiting for a run of it under way).
    pub fn control(
        &self,
        spec: &Spec,
        params: &qualify_plan::Params,
        run: impl FnOnce() -> ProbeResult,
    ) -> ProbeResult {
        let key = ctl::group(spec, params);
        let mut slots = self.lock();
        loop {
            match slots.iter_mut().find(|(k, _)| *k == key) {
                Some((_, Slot::Running)) => {
                    slots = self.done.wait(slots).unwrap_or_else(|e| e.into_inner());
                }
                Some((
                    _,
                    Slot::Done {
                        unclaimed: taken @ Some(_),
                        ..
                    },
                )) => {
                    if let Some(r) = taken.take() {
                        return *r;
                    }
                }
                Some(entry) => {
                    entry.1 = Slot::Running;
                    break;
                }
                None => {
                    slots.push((key.clone(), Slot::Running));
                    break;
                }
            }
        }
        drop(slots);
        let r = self.measure(&key, run);
        self.set(&key, Slot::Done { unclaimed: None });
        r
    }

    /// Before the faulted cell at `params`: its control measured first (by `run_control`) when
    /// no cell started it yet, else waited for while it runs.
    pub fn before_faulted(
        &self,
        spec: &Spec,
        params: &qualify_plan::Params,
        run_control: impl FnOnce() -> ProbeResult,
    ) {
        let key = ctl::group(spec, params);
        let mut slots = self.lock();
        loop {
            match slots.iter().find(|(k, _)| *k == key) {
                Some((_, Slot::Running)) => {
                    slots = self.done.wait(slots).unwrap_or_else(|e| e.into_inner());
                }
                Some((_, Slot::Done { .. })) => return,
                None => {
                    slots.push((key.clone(), Slot::Running));
                    break;
                }
            }
        }
        drop(slots);
        let r = self.measure(&key, run_control);
        self.set(
            &key,
            Slot::Done {
                unclaimed: Some(Box::new(r)),
            },
        );
    }

    /// Run a control of group `key` (marked running: the others wait for it).
    fn measure(
        &self,
        key: &qualify_plan::Params,
        run: impl FnOnce() -> ProbeResult,
    ) -> ProbeResult {
        // A run that unwinds still ends the others' wait (no control measured).
        let guard = Unblock { first: self, key };
        let r = run();
        std::mem::forget(guard);
        r
    }

    fn set(&self, key: &qualify_plan::Params, slot: Slot) {
        let mut slots = self.lock();
        match slots.iter_mut().find(|(k, _)| k == key) {
            Some(entry) => entry.1 = slot,
            None => slots.push((key.clone(), slot)),
        }
        drop(slots);
        self.done.notify_all();
    }
}

/// Ends the wait for a control whose run unwound.
struct Unblock<'a> {
    first: &'a ControlsFirst,
    key: &'a qualify_plan::Params,
}

impl Drop for Unblock<'_> {
    fn drop(&mut self) {
        self.first.set(self.key, Slot::Done { unclaimed: None });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use qualify_model::Value;
    use std::sync::atomic::{AtomicUsize, Ordering};

    const SPEC: &str = r#"[artifact]
name = "svc"
command = "./svc {port} {workers}"

[claim]
level = "trial"

[service]
ready = { tcp = true }

[load]
rate = 10
duration = "4s"

[[load.request]]
path = "/"

[[dependency]]
name = "cache"
start = ["redis-server", "--port", "{dep_port}"]
env = { REDIS = "127.0.0.1:{proxy_port}" }

[faults]
window = ["1s", "2s"]

[[axis]]
name = "cache_fault"
kind = "fault"
dependency = "cache"
values = ["none", "down"]

[[axis]]
name = "workers"
kind = "concurrency"
values = [1, 2]
"#;

    fn cell(fault: &str, workers: i64) -> qualify_plan::Params {
        [
            ("cache_fault", Value::Text(fault.into())),
            ("workers", Value::Int(workers)),
        ]
        .into_iter()
        .collect()
    }

    fn result(detail: &str) -> ProbeResult {
        ProbeSpec::new(vec!["./svc".into()]).not_run(detail)
    }

    #[test]
    fn a_control_runs_once_before_the_faulted_cells_of_its_combination() {
        let spec = Spec::parse(SPEC, "qualify.toml").unwrap();
        assert!(ControlsFirst::applies(&spec));
        let without_none = SPEC.replace(r#"values = ["none", "down"]"#, r#"values = ["down"]"#);
        assert!(!ControlsFirst::applies(
            &Spec::parse(&without_none, "qualify.toml").unwrap()
        ));
        let first = ControlsFirst::default();
        let runs = AtomicUsize::new(0);
        let run = |detail: &'static str| {
            runs.fetch_add(1, Ordering::SeqCst);
            result(detail)
        };
        // The faulted cell came first: it runs its control, which the planner's call then takes.
        first.before_faulted(&spec, &cell("down", 1), || run("for the faulted cell"));
        let r = first.control(&spec, &cell("none", 1), || run("again"));
        assert_eq!(r.detail, "for the faulted cell");
        first.before_faulted(&spec, &cell("down", 1), || run("again"));
        assert_eq!(runs.load(Ordering::SeqCst), 1, "one control run");
        // The control is running: the faulted cell waits for it rather than running it again.
        let started = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| {
                first.control(&spec, &cell("none", 2), || {
                    started.store(true, Ordering::SeqCst);
                    std::thread::sleep(std::time::Duration::from_millis(200));
                    run("the planner's")
                })
            });
            while !started.load(Ordering::SeqCst) {
                std::thread::yield_now();
            }
            first.before_faulted(&spec, &cell("down", 2), || panic!("ran the control again"));
            assert_eq!(
                runs.load(Ordering::SeqCst),
                2,
                "the running control ended first"
            );
        });
    }
}
