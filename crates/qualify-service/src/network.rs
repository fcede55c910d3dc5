//! A service cell's network. With `[sandbox] network = "loopback"` the service lives in a
//! network namespace of its own (only its loopback), shared with its dependencies, their fault
//! proxies and its readiness command; qualify's threads that talk to it (readiness, load, the
//! write check) join it, and nothing is exposed on the host's interfaces. Without one (sandbox
//! off, another policy, an upstream dependency outside the cell, or a host where qualify
//! cannot make one) the service shares qualify's network and its evidence says why.

use std::sync::Arc;

use qualify_probe::netns::Netns;
use qualify_probe::{Network, ProbeSpec};
use qualify_spec::{DependencySource, SandboxMode, Spec};

/// Decide the service probe's network and make the namespace it joins, if any.
pub fn service_netns(spec: &Spec, probe: &mut ProbeSpec) -> Option<Arc<Netns>> {
    if probe.sandbox.mode == SandboxMode::Off || !matches!(probe.sandbox.network, Network::Loopback)
    {
        return None;
    }
    if let Some(dep) = spec
        .dependencies
        .iter()
        .find(|d| matches!(d.source, DependencySource::Upstream { .. }))
    {
        probe.sandbox.network = Network::Unavailable(format!(
            "the service shares qualify's network: its dependency `{}` is an upstream outside the cell",
            dep.name
        ));
        return None;
    }
    match Netns::loopback() {
        Ok(n) => {
            probe.sandbox.network = Network::Join(Arc::clone(&n));
            Some(n)
        }
        Err(e) => {
            probe.sandbox.network = Network::Unavailable(format!(
                "the service shares qualify's network: a network namespace qualify can join needs root ({e})"
            ));
            None
        }
    }
}

/// The network of a probe that must reach the service (its readiness command, a dependency and
/// its readiness command): the service cell's namespace, or qualify's network when the service
/// shares it.
pub fn helper_network(netns: Option<&Arc<Netns>>) -> Network {
    match netns {
        Some(n) => Network::Join(Arc::clone(n)),
        None => Network::Host,
    }
}
