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
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;
use qualify_model::{Params, Value};
use qualify_probe::BackendChoice;
use qualify_service::harness::remote::{self, HostReady, RemoteLaunch};
use qualify_service::harness::{Harness, Placement};
use qualify_slurm::heartbeat::{Beat, Watch};
use qualify_spec::{Node, Spec};

use crate::error::CliError;

/// What both steps are told about the cell.
#[derive(Args, Debug)]
pub struct CellArgs {
    /// The spec (absolute path, shared with the nodes).
    #[arg(long, value_name = "FILE")]
    spec: PathBuf,
    /// The cell's axis values, a JSON object.
    #[arg(long, value_name = "JSON")]
    params: String,
    /// Enforcement backend: auto, cgroup2, cgroup1, rlimit.
    #[arg(long, value_name = "BACKEND", default_value = "auto")]
    backend: BackendChoice,
    /// The cell's state directory, shared by its nodes (heartbeats, exchanges).
    #[arg(long, value_name = "DIR")]
    state_dir: PathBuf,
    /// Stop when this lease file stops changing (the submitting qualify is gone).
    #[arg(long, value_name = "FILE")]
    lease: Option<PathBuf>,
    /// A variable of this step's environment the artifact also gets (`qualify run --pass-env`).
    #[arg(long = "pass-env", value_name = "NAME")]
    pass_env: Vec<String>,
    /// The submitting run's `--set` overrides, applied over the spec as it applied them.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<qualify_spec::Override>,
}

#[derive(Args, Debug)]
pub struct ServiceCellArgs {
    #[command(flatten)]
    cell: CellArgs,
    /// Where write histories go (the receipt's `histories` directory).
    #[arg(long, value_name = "DIR")]
    histories: Option<PathBuf>,
    /// The variation of this faulted cell's `none` control, measured by its own job first
    /// (`qualify_faults::Noise` as JSON); absent: no control was measured.
    #[arg(long, value_name = "JSON")]
    control_noise: Option<String>,
}

#[derive(Args, Debug)]
pub struct DependencyHostArgs {
    #[command(flatten)]
    cell: CellArgs,
    /// The dependency this step runs.
    #[arg(long, value_name = "NAME")]
    dependency: String,
    /// The service's node (its silence stops this step).
    #[arg(long, value_name = "NODE")]
    service_node: String,
}

/// The parts every step sets up: cancellation (signals, lease), the spec, the cell's values,
/// this node's name and address, and the state directory.
struct Setup {
    cancel: qualify_probe::CancelToken,
    spec: Spec,
    params: Params,
    node: String,
    addr: IpAddr,
}

fn setup(args: &CellArgs) -> Result<Setup, CliError> {
    let cancel = crate::cancel_on_signals();
    if let Some(lease) = &args.lease {
        qualify_slurm::lease::watch(lease.clone(), cancel.clone());
    }
    let mut spec =
        Spec::load_with(&args.spec, &args.set).map_err(|e| CliError::input_only(e.to_string()))?;
    spec.sandbox.pass_env = args.pass_env.clone();
    let axes: Vec<&str> = spec.axes.iter().map(|a| a.name.as_str()).collect();
    let params = parse_params(&args.params, &axes)?;
    let node = this_node();
    let addr = node_address(&node)?;
    std::fs::create_dir_all(&args.state_dir).map_err(|e| {
        CliError::input(
            format!(
                "cannot create the cell's state directory {}: {e}",
                args.state_dir.display()
            ),
            "it must be writable and shared with the cell's nodes",
        )
    })?;
    Ok(Setup {
        cancel,
        spec,
        params,
        node,
        addr,
    })
}

/// A cell's axis values from their JSON object (as `Params` serializes them), in the order of
/// `axes` (the spec's; a JSON object's order is not kept), any others after them.
pub fn parse_params(text: &str, axes: &[&str]) -> Result<Params, CliError> {
    let bad = |why: String| {
        CliError::input(
            format!("--params {text:?}: {why}"),
            "pass the cell's axis values as a JSON object, e.g. {\"workers\":4}",
        )
    };
    let value: serde_json::Value = serde_json::from_str(text).map_err(|e| bad(e.to_string()))?;
    let object = value
        .as_object()
        .ok_or_else(|| bad("not a JSON object".into()))?;
    let mut names: Vec<&String> = object.keys().collect();
    names.sort_by_key(|n| axes.iter().position(|a| a == n).unwrap_or(usize::MAX));
    let mut params = Params::new();
    for name in names {
        let v = &object[name];
        let v = match v {
            serde_json::Value::Number(n) => match n.as_i64() {
                Some(i) => Value::Int(i),
                None => Value::Float(n.as_f64().unwrap_or(f64::NAN)),
            },
            serde_json::Value::String(s) => Value::Text(s.clone()),
            other => {
                return Err(bad(format!(
                    "axis `{name}` is {other}, not a number or text"
                )));
            }
        };
        params.insert(name.clone(), v);
    }
    Ok(params)
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
pub fn service_cell(args: ServiceCellArgs) -> Result<ExitCode, CliError> {
    let s = setup(&args.cell)?;
    let _beat = Beat::start(&args.cell.state_dir, &s.node).map_err(|e| {
        CliError::input(
            format!(
                "cannot write this node's heartbeat in {}: {e}",
                args.cell.state_dir.display()
            ),
            "the state directory must be writable and shared with the cell's nodes",
        )
    })?;
    // The cell's root: the node named when it falls silent with the steps it started.
    let _ = qualify_slurm::heartbeat::write_root(&args.cell.state_dir, &s.node);
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
        state_dir: args.cell.state_dir.clone(),
        remote,
        generator_nodes,
    };
    let controls = qualify_service::Controls::new();
    if let Some(text) = &args.control_noise {
        let noise: qualify_service::controls::Noise = serde_json::from_str(text).map_err(|e| {
            CliError::input(
                format!("--control-noise {text:?}: {e}"),
                "pass the control's variation as qualify writes it, e.g. {\"p99\":1.4,\"p50\":1.2}",
            )
        })?;
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
    cell: &CellArgs,
    name: &str,
    node: &str,
    service_node: &str,
) -> Result<Vec<String>, CliError> {
    let exe = std::env::current_exe()
        .map_err(|e| CliError::input_only(format!("cannot find the qualify binary: {e}")))?;
    let path = |p: &Path| p.to_string_lossy().into_owned();
    let mut argv = vec![
        "srun".to_string(),
        "--overlap".into(),
        "--nodes=1".into(),
        "--ntasks=1".into(),
        format!("--nodelist={node}"),
        "--kill-on-bad-exit=0".into(),
        "--quiet".into(),
        format!("--job-name=qualify-dep-{name}"),
        path(&exe),
        "dependency-host".into(),
        format!("--spec={}", path(&cell.spec)),
        format!("--params={}", cell.params),
        format!("--backend={}", cell.backend),
        format!("--state-dir={}", path(&cell.state_dir)),
        format!("--dependency={name}"),
        format!("--service-node={service_node}"),
    ];
    if let Some(lease) = &cell.lease {
        argv.push(format!("--lease={}", path(lease)));
    }
    argv.extend(cell.set.iter().map(|o| format!("--set={o}")));
    Ok(argv)
}

/// `qualify dependency-host`.
pub fn dependency_host(args: DependencyHostArgs) -> Result<ExitCode, CliError> {
    let s = setup(&args.cell)?;
    let dir = remote::exchange_dir(&args.cell.state_dir, &args.dependency);
    let _ = std::fs::create_dir_all(&dir);
    let fail = |why: String| {
        let _ = std::fs::write(dir.join("error"), &why);
        CliError::input_only(why)
    };
    let _beat = Beat::start(&args.cell.state_dir, &s.node).map_err(|e| {
        fail(format!(
            "cannot beat in {}: {e}",
            args.cell.state_dir.display()
        ))
    })?;
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
    let service = Watch::nodes(
        &args.cell.state_dir,
        std::slice::from_ref(&args.service_node),
    );
    remote::host(harness, &dir, &ready, service, &s.cancel).map_err(|e| fail(e.to_string()))?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cells_values_cross_to_the_node_as_they_were_serialized() {
        let mut p = Params::new();
        p.insert("workers", Value::Int(4));
        p.insert("ratio", Value::Float(0.5));
        p.insert("cache_fault", Value::Text("latency(200ms)".into()));
        let text = serde_json::to_string(&p).unwrap();
        let axes = ["workers", "ratio", "cache_fault"];
        assert_eq!(parse_params(&text, &axes).unwrap(), p);
        for bad in ["[1]", "{\"a\": [1]}", "{\"a\": true}", "not json"] {
            let e = parse_params(bad, &axes).unwrap_err().to_string();
            assert!(e.contains("--params"), "{bad}: {e}");
        }
    }
}
