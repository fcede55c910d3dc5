//! `qualify dependency-host`: one dependency of a service cell and its fault proxy on a node of
//! its own, listening on the node's address, answering the cell through the state directory
//! ([`crate::harness::remote`]) until the cell is done or its node falls silent. A failure is
//! also written to the dependency's exchange directory (`error`), where the cell reads why.

use qualify_model::step::DependencyHostStep;
use qualify_probe::CancelToken;
use qualify_slurm::heartbeat::{Beat, Watch};

use super::{StepError, setup};
use crate::harness::remote::{self, HostReady};
use crate::harness::{Harness, Placement};

/// Host the dependency of `step` until the cell ends.
pub fn dependency_host(step: &DependencyHostStep, cancel: &CancelToken) -> Result<(), StepError> {
    let s = setup(&step.cell, cancel)?;
    let dir = remote::exchange_dir(&s.state_dir, &step.dependency);
    let _ = std::fs::create_dir_all(&dir);
    let fail = |why: String| {
        let _ = std::fs::write(dir.join("error"), &why);
        StepError::Host(why)
    };
    let _beat = Beat::start(&s.state_dir, &s.node)
        .map_err(|e| fail(format!("cannot beat in {}: {e}", s.state_dir.display())))?;
    if s.spec.dependency(&step.dependency).is_none() {
        return Err(fail(format!(
            "the spec has no dependency `{}`",
            step.dependency
        )));
    }
    let harness = Harness::start_placed(
        &s.spec,
        &s.params,
        step.cell.backend,
        cancel,
        None,
        Placement::DependencyHost {
            name: &step.dependency,
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
    let service = Watch::nodes(&s.state_dir, std::slice::from_ref(&step.service_node));
    remote::host(harness, &dir, &ready, service, cancel).map_err(|e| fail(e.to_string()))
}
