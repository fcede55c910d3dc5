//! The remote halves of a service cell: the hidden steps qualify starts itself, each read from
//! its typed words (`qualify_model::step`) by the binary, which hands them here with its
//! cancellation and prints what they return.
//!
//! - [`service_cell`] is a service cell's Slurm job: on the first node of its allocation it
//!   runs the whole cell ([`crate::ServiceCell`] with a [`crate::Cluster`]), placing `node =
//!   "own"` dependencies on the allocation's other nodes (one `dependency-host` step each) and
//!   the load's generators on the nodes left.
//! - [`dependency_host`] runs one dependency and its fault proxy on its node's address and
//!   answers the cell through the state directory ([`crate::harness::remote`]).
//! - [`load_gen`] is one generator process of a split load ([`crate::generators`] starts
//!   them), here or on another node.
//!
//! The cell's steps watch the run's lease (ending when the submitting qualify is gone) and
//! beat (`<node>.beat` in the state directory); the executor and the cell judge a silent node
//! lost.

mod dependency_host;
mod load_gen;
mod service_cell;

use std::net::{IpAddr, ToSocketAddrs};
use std::path::PathBuf;

use qualify_model::Params;
use qualify_model::step::CellStep;
use qualify_probe::CancelToken;
use qualify_spec::Spec;

pub use dependency_host::dependency_host;
pub use load_gen::{Generated, LoadGenError, MAX_AHEAD, load_gen};
pub use service_cell::service_cell;

/// Why a step could not do its work; each message says what went wrong and, where there is
/// one, the fix.
#[derive(Debug, thiserror::Error)]
pub enum StepError {
    #[error(
        "--state-dir is required: the cell's state directory, shared by its nodes; this step is started by qualify's job script, which passes it"
    )]
    NoStateDir,
    #[error("--set: {0}")]
    Override(#[from] qualify_spec::OverrideSyntax),
    #[error("{0}")]
    Spec(#[from] qualify_spec::SpecError),
    #[error(
        "cannot create the cell's state directory {}: {source}; it must be writable and shared with the cell's nodes",
        dir.display()
    )]
    StateDir {
        dir: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "node {node} resolves to no address other nodes can reach ({addrs:?}); the nodes' names must resolve to their cluster addresses (/etc/hosts or DNS) for a service cell to span nodes"
    )]
    NoAddress { node: String, addrs: Vec<IpAddr> },
    #[error(
        "cannot write this node's heartbeat in {}: {source}; the state directory must be writable and shared with the cell's nodes",
        dir.display()
    )]
    Heartbeat {
        dir: PathBuf,
        source: std::io::Error,
    },
    #[error("dependency `{0}` has node = \"own\" but the allocation has no node left for it")]
    NoNodeLeft(String),
    #[error("cannot find the qualify binary: {0}")]
    NoBinary(std::io::Error),
    #[error("the service cell could not run: {0}")]
    Cell(crate::ServiceError),
    /// A dependency host's failure (also written to its exchange directory's `error`).
    #[error("{0}")]
    Host(String),
    #[error(transparent)]
    LoadGen(#[from] load_gen::LoadGenError),
}

/// The parts every cell step sets up: the spec, the cell's values, this node's name and
/// address, and the state directory; the lease is watched from here on.
struct Setup {
    spec: Spec,
    params: Params,
    node: String,
    addr: IpAddr,
    state_dir: PathBuf,
}

fn setup(cell: &CellStep, cancel: &CancelToken) -> Result<Setup, StepError> {
    let state_dir = cell.state_dir.clone().ok_or(StepError::NoStateDir)?;
    if let Some(lease) = &cell.lease {
        qualify_slurm::lease::watch(lease.clone(), cancel.clone());
    }
    let overrides = cell
        .overrides
        .iter()
        .map(|o| o.parse::<qualify_spec::Override>())
        .collect::<Result<Vec<_>, _>>()?;
    let mut spec = Spec::load_with(&cell.spec, &overrides)?;
    spec.sandbox.pass_env = cell.pass_env.clone();
    let node = this_node();
    let addr = node_address(&node)?;
    std::fs::create_dir_all(&state_dir).map_err(|source| StepError::StateDir {
        dir: state_dir.clone(),
        source,
    })?;
    Ok(Setup {
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
fn node_address(node: &str) -> Result<IpAddr, StepError> {
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
        .ok_or_else(|| StepError::NoAddress {
            node: node.to_string(),
            addrs,
        })
}
