//! Slurm's side of `qualify run`, for the Slurm executor (`executor.rs`): starting the
//! [`qualify_slurm::SlurmQueue`] with the spec's partition/account/qos/sbatch options and
//! pending limit, and turning a cell into a [`CellJob`] (a command's probe spec, or a service
//! cell). The run directory is `.qualify/slurm/<run name>` under the current directory (it
//! must be shared with the compute nodes, as the `qualify` binary's path must be). A faulted
//! service cell's job gets its control's variation (`--control-noise`), measured first
//! (`qualify_service::Controls`).

use std::path::PathBuf;
use std::sync::Arc;

use qualify_model::step::{CellStep, ProbeStep, ServiceCellStep};
use qualify_probe::{CancelToken, ProbeResult, ProbeSpec};
use qualify_service::SpecProbes;
use qualify_service::controls::Noise;
use qualify_slurm::{CellJob, JobStep, SlurmConfig, SlurmQueue, Topology};
use qualify_spec::Spec;

use crate::error::Error;

/// Start the run's Slurm queue for `spec` (errors are setup errors: exit 2).
pub fn start(spec: &Spec, cancel: &CancelToken) -> Result<SlurmQueue, Error> {
    let qualify = std::env::current_exe().map_err(|e| {
        Error::input_only(format!(
            "cannot find the qualify binary for the Slurm jobs to run: {e}"
        ))
    })?;
    let mut config = SlurmConfig::new(PathBuf::new(), qualify);
    let base = std::path::absolute(".qualify/slurm")
        .map_err(|e| Error::input_only(format!("cannot resolve .qualify/slurm: {e}")))?;
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
    SlurmQueue::start(config, Arc::clone(cancel)).map_err(|e| Error::input_only(e.to_string()))
}

/// Run one cell's probe spec as a Slurm job (`repeat` runs inside the job, as `--repeat`);
/// with `observe_nodes`, every node of the allocation is watched by a qualify agent and the
/// verdict is their merge (`qualify agent coordinate`).
pub fn run_cell(
    queue: &SlurmQueue,
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
    queue.run(job)
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
    queue: &SlurmQueue,
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
            pass_env: probe.sandbox.pass_env.clone(),
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
    queue.run(job)
}
