//! The hidden steps of a service cell on a cluster (`[executor] kind = "slurm"`), started by
//! qualify's own job scripts:
//!
//! - `qualify service-cell` is the cell's job: on the first node of its allocation it runs the
//!   whole service cell (`qualify_service::ServiceCell` with a `Cluster`: the service under the
//!   probe on this node's address, readiness, load, faults, verdict), starts one `qualify
//!   dependency-host` step per `node = "own"` dependency on the allocation's other nodes and the
//!   load's `qualify load-gen` steps on the nodes left (then beside the dependencies), beats
//!   for this node, and prints the result as `qualify probe --json` would.
//! - `qualify dependency-host` runs one dependency and its fault proxy (on its node's address)
//!   and answers the cell through the state directory (`qualify_service::harness::remote`).
//!
//! Both watch the run's lease (ending when the submitting qualify is gone) and beat
//! (`<node>.beat` in the state directory); the executor and the cell judge a silent node lost.

use std::net::{IpAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::process::ExitCode;

use qualify_model::Params;
use qualify_model::step::{CellStep, DependencyHostStep, ServiceCellStep};
use qualify_service::harness::remote::{self, HostReady, RemoteLaunch};
use qualify_service::harness::{Harness, Placement};
use qualify_slurm::heartbeat::{Beat, Watch};
use qualify_spec::{Node, Spec};

use crate::error::CliError;

/// The parts every step sets up: cancellation (signals, lease), the spec, the cell's values,
/// this node's name and address, and the state directory.
struct Setup {
    cancel: qualify_probe::CancelToken,
    spec: Spec,
    params: Params,
    node: String,
    addr: IpAddr,
    state_dir: PathBuf,
}

fn setup(cell: &CellStep) -> Result<Setup, CliError> {
    let state_dir = cell.state_dir.clone().ok_or_else(|| {
        CliError::input(
            "--state-dir is required: the cell's state directory, shared by its nodes",
            "this step is started by qualify's job script, which passes it",
        )
    })?;
    let cancel = crate::cancel_on_signals();
    if let Some(lease) = &cell.lease {
        qualify_slurm::lease::watch(lease.clone(), cancel.clone());
    }
    let overrides = cell
        .overrides
        .iter()
        .map(|o| o.parse::<qualify_spec::Override>())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| CliError::input_only(format!("--set: {e}")))?;
    let mut spec =
        Spec::load_with(&cell.spec, &overrides).map_err(|e| CliError::input_only(e.to_string()))?;
    spec.sandbox.pass_env = cell.pass_env.clone();
    let node = this_node();
    let addr = node_address(&node)?;
    std::fs::create_dir_all(&state_dir).map_err(|e| {
        CliError::input(
            format!(
                "cannot create the cell's state directory {}: {e}",
                state_dir.display()
            ),
            "it must be writable and shared with the cell's nodes",
        )
    })?;
    Ok(Setup {
        cancel,
        spec,
        params: cell.params.clone(),
        node,
        addr,
        state_dir,
    })
}

/// This node's name: Slurm's, else the host name.
pub fn this_node() -> String {
    std::env::var("SLURMD_NODENAME")
        .ok()
        .filter(|n| !n.is_empty())
        .or_else(|| {
            std::fs::read_to_string("/proc/sys/kernel/hostname")
                .ok()
                .map(|h| h.trim().to_string())
        })
        .unwrap_or_else(|| "localhost".into())
}

/// The node's address on the cluster's network: what its name resolves to, not loopback.
fn node_address(node: &str) -> Result<IpAddr, CliError> {
    let addrs: Vec<IpAddr> = (node, 0)
        .to_socket_addrs()
        .map(|a| a.map(|s| s.ip()).collect())
        .unwrap_or_default();
    addrs
        .iter()
        .copied()
        .find(|ip| ip.is_ipv4() && !ip.is_loopback() && !ip.is_unspecified())
        .or_else(|| {
            addrs
                .iter()
                .copied()
                .find(|ip| !ip.is_loopback() && !ip.is_unspecified())
        })
        .ok_or_else(|| {
            CliError::input(
                format!("node {node} resolves to no address other nodes can reach ({addrs:?})"),
                "the nodes' names must resolve to their cluster addresses (/etc/hosts or DNS) for a service cell to span nodes",
            )
        })
}

/// `qualify service-cell`.
pub fn service_cell(args: ServiceCellStep) -> Result<ExitCode, CliError> {
    let s = setup(&args.cell)?;
    let _beat = Beat::start(&s.state_dir, &s.node).map_err(|e| {
        CliError::input(
            format!(
                "cannot write this node's heartbeat in {}: {e}",
                s.state_dir.display()
            ),
            "the state directory must be writable and shared with the cell's nodes",
        )
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
            return Err(CliError::input_only(format!(
                "dependency `{}` has node = \"own\" but the allocation has no node left for it",
                dep.name
            )));
        };
        remote.push(RemoteLaunch {
            dependency: dep.name.clone(),
            argv: host_argv(&args.cell, &dep.name, &node, &s.node)?,
            node,
        });
    }
    // The load generators: on the nodes nothing else runs on first, then beside a dependency;
    // on the service's own node only when the allocation has no other.
    let generator_nodes: Vec<String> = free
        .cloned()
        .chain(remote.iter().map(|r| r.node.clone()))
        .collect();
    let cluster = qualify_service::Cluster {
        node: s.node.clone(),
        addr: s.addr,
        state_dir: s.state_dir.clone(),
        remote,
        generator_nodes,
    };
    let controls = qualify_service::Controls::new();
    if let Some(noise) = args.control_noise {
        controls.register(&s.spec, &s.params, noise);
    }
    let exe = std::env::current_exe().ok();
    let cell = qualify_service::ServiceCell {
        spec: &s.spec,
        backend: args.cell.backend,
        cancel: &s.cancel,
        histories: args.histories.as_deref(),
        controls: &controls,
        cluster: Some(&cluster),
        load_gen: exe.as_deref(),
    };
    let result = cell
        .run(&s.params)
        .map_err(|e| CliError::input_only(format!("the service cell could not run: {e}")))?;
    let json = serde_json::to_string(&result)
        .map_err(|e| CliError::input_only(format!("cannot serialize the cell's result: {e}")))?;
    crate::print_stdout(&json);
    Ok(ExitCode::SUCCESS)
}

/// `srun --overlap` on `node`: `qualify dependency-host` for dependency `name`.
fn host_argv(
    cell: &CellStep,
    name: &str,
    node: &str,
    service_node: &str,
) -> Result<Vec<String>, CliError> {
    let exe = std::env::current_exe()
        .map_err(|e| CliError::input_only(format!("cannot find the qualify binary: {e}")))?;
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

/// `qualify dependency-host`.
pub fn dependency_host(args: DependencyHostStep) -> Result<ExitCode, CliError> {
    let s = setup(&args.cell)?;
    let dir = remote::exchange_dir(&s.state_dir, &args.dependency);
    let _ = std::fs::create_dir_all(&dir);
    let fail = |why: String| {
        let _ = std::fs::write(dir.join("error"), &why);
        CliError::input_only(why)
    };
    let _beat = Beat::start(&s.state_dir, &s.node)
        .map_err(|e| fail(format!("cannot beat in {}: {e}", s.state_dir.display())))?;
    if s.spec.dependency(&args.dependency).is_none() {
        return Err(fail(format!(
            "the spec has no dependency `{}`",
            args.dependency
        )));
    }
    let harness = Harness::start_placed(
        &s.spec,
        &s.params,
        args.cell.backend,
        &s.cancel,
        None,
        Placement::DependencyHost {
            name: &args.dependency,
            listen: s.addr,
        },
    )
    .map_err(|e| fail(e.to_string()))?;
    let Some((_, proxy, dep_port)) = harness.endpoints().into_iter().next() else {
        return Err(fail("no dependency started".into()));
    };
    let ready = HostReady {
        node: s.node.clone(),
        proxy,
        dep_port,
    };
    let service = Watch::nodes(&s.state_dir, std::slice::from_ref(&args.service_node));
    remote::host(harness, &dir, &ready, service, &s.cancel).map_err(|e| fail(e.to_string()))?;
    Ok(ExitCode::SUCCESS)
}
