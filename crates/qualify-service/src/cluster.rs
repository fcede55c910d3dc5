//! Where a service cell runs when it runs on a cluster's nodes (`[executor] kind = "slurm"`):
//! the service's node and address (the service listens there, exported as `HOST`; the load and
//! readiness reach it there, never on loopback), the cell's shared state directory (heartbeats,
//! the dependency hosts' exchanges) and how each `node = "own"` dependency's host is started.
//! [`Cluster::evidence`] is the receipt's `evidence.cluster`: which node ran each part.

use std::net::{IpAddr, SocketAddr, TcpListener};
use std::path::PathBuf;

use qualify_probe::ProbeError;

use crate::harness::remote::RemoteLaunch;

/// A service cell's place on a cluster.
#[derive(Debug, Clone)]
pub struct Cluster {
    /// The service's node (the first of the job's allocation).
    pub node: String,
    /// Its address on the cluster's network.
    pub addr: IpAddr,
    /// The cell's state directory, shared by its nodes.
    pub state_dir: PathBuf,
    /// One host per `node = "own"` dependency.
    pub remote: Vec<RemoteLaunch>,
    /// The nodes the load generators run on (generator `i` on `i % len`): the allocation's
    /// other nodes, those without a dependency first; the service's own when it is alone.
    pub generator_nodes: Vec<String>,
}

impl Cluster {
    /// A free port on the node's address (bound and released: the service takes it next).
    pub fn free_port(&self) -> Result<u16, ProbeError> {
        TcpListener::bind(SocketAddr::new(self.addr, 0))
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .map_err(|source| ProbeError::Io {
                context: format!(
                    "cannot find a free port on {} ({}) for the service",
                    self.node, self.addr
                ),
                source,
            })
    }

    /// Where the load's generators run.
    pub fn generators(&self) -> crate::generators::Placed {
        let nodes = if self.generator_nodes.is_empty() {
            vec![self.node.clone()]
        } else {
            self.generator_nodes.clone()
        };
        crate::generators::Placed {
            nodes,
            state_dir: self.state_dir.clone(),
        }
    }

    /// `evidence.cluster`: the service's node and address, each dependency's node and proxy,
    /// and each of the `generators` load generators' node.
    pub fn evidence(
        &self,
        port: u16,
        local: &[(String, SocketAddr, u16)],
        remote: &[(String, String, SocketAddr)],
        generators: u32,
    ) -> serde_json::Value {
        let placed = self.generators();
        let gens: Vec<serde_json::Value> = (0..generators.max(1))
            .map(|i| serde_json::json!({ "index": i, "node": placed.node(i) }))
            .collect();
        let mut deps: Vec<serde_json::Value> = local
            .iter()
            .map(|(name, proxy, _)| {
                serde_json::json!({
                    "name": name, "node": self.node, "proxy": proxy.to_string(),
                })
            })
            .collect();
        deps.extend(remote.iter().map(|(name, node, proxy)| {
            serde_json::json!({ "name": name, "node": node, "proxy": proxy.to_string() })
        }));
        serde_json::json!({
            "service": {
                "node": self.node,
                "address": SocketAddr::new(self.addr, port).to_string(),
            },
            "dependencies": deps,
            "generators": gens,
        })
    }
}
