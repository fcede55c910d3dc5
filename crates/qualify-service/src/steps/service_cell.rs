//! `qualify service-cell`: a service cell as a Slurm job, on the first node of its
//! allocation. It runs the whole cell ([`crate::ServiceCell`] with a [`crate::Cluster`]: the
//! service under the probe on this node's address, readiness, load, faults, verdict), starts
//! one `dependency-host` step per `node = "own"` dependency on the allocation's other nodes and
//! the load's generators on the nodes left (then beside the dependencies), and beats for this
//! node; the binary prints the result as `qualify probe --json` would.

use qualify_model::ProbeResult;
use qualify_model::step::{CellStep, DependencyHostStep, ServiceCellStep};
use qualify_probe::CancelToken;
use qualify_slurm::heartbeat::Beat;
use qualify_spec::Node;

use super::{StepError, setup};
use crate::harness::remote::RemoteLaunch;

/// Run the cell of `step`; its result.
pub fn service_cell(
    step: &ServiceCellStep,
    cancel: &CancelToken,
) -> Result<ProbeResult, StepError> {
    let s = setup(&step.cell, cancel)?;
    let _beat = Beat::start(&s.state_dir, &s.node).map_err(|source| StepError::Heartbeat {
        dir: s.state_dir.clone(),
        source,
    })?;
    // The cell's root: the node named when it falls silent with the steps it started.
    let _ = qualify_slurm::heartbeat::write_root(&s.state_dir, &s.node);
    let nodes = qualify_nodes::hostlist::expand(
        &std::env::var("SLURM_JOB_NODELIST")
            .or_else(|_| std::env::var("SLURM_NODELIST"))
            .unwrap_or_default(),
    );
    let others: Vec<String> = nodes.into_iter().filter(|n| *n != s.node).collect();
    let mut free = others.iter();
    let mut remote = Vec::new();
    for dep in s.spec.dependencies.iter().filter(|d| d.node == Node::Own) {
        let Some(node) = free.next().cloned() else {
            return Err(StepError::NoNodeLeft(dep.name.clone()));
        };
        remote.push(RemoteLaunch {
            dependency: dep.name.clone(),
            argv: host_argv(&step.cell, &dep.name, &node, &s.node)?,
            node,
        });
    }
    // The load generators: on the nodes nothing else runs on first, then beside a dependency;
    // on the service's own node only when the allocation has no other.
    let generator_nodes: Vec<String> = free
        .cloned()
        .chain(remote.iter().map(|r| r.node.clone()))
        .collect();
    let cluster = crate::Cluster {
        node: s.node.clone(),
        addr: s.addr,
        state_dir: s.state_dir.clone(),
        remote,
        generator_nodes,
    };
    let controls = crate::Controls::new();
    if let Some(noise) = step.control_noise {
        controls.register(&s.spec, &s.params, noise);
    }
    let exe = std::env::current_exe().ok();
    let cell = crate::ServiceCell {
        spec: &s.spec,
        backend: step.cell.backend,
        cancel,
        histories: step.histories.as_deref(),
        controls: &controls,
        cluster: Some(&cluster),
        load_gen: exe.as_deref(),
    };
    cell.run(&s.params).map_err(StepError::Cell)
}

/// `srun --overlap` on `node`: `qualify dependency-host` for dependency `name`.
fn host_argv(
    cell: &CellStep,
    name: &str,
    node: &str,
    service_node: &str,
) -> Result<Vec<String>, StepError> {
    let exe = std::env::current_exe().map_err(StepError::NoBinary)?;
    let step = DependencyHostStep {
        // A dependency is not the artifact: it gets its node's environment as it is.
        cell: CellStep {
            pass_env: Vec::new(),
            ..cell.clone()
        },
        dependency: name.to_string(),
        service_node: service_node.to_string(),
    };
    let mut argv = vec![
        "srun".to_string(),
        "--overlap".into(),
        "--nodes=1".into(),
        "--ntasks=1".into(),
        format!("--nodelist={node}"),
        "--kill-on-bad-exit=0".into(),
        "--quiet".into(),
        format!("--job-name=qualify-dep-{name}"),
        exe.to_string_lossy().into_owned(),
    ];
    argv.extend(step.to_argv());
    Ok(argv)
}
