//! The sandbox a probed program runs in (filled in by the least-privilege work): for now only
//! the switch that simulates a host without a mechanism, for tests of degraded hosts.

use crate::cell::Stage;

/// Whether `mechanism` is listed in `QUALIFY_SIMULATE_MISSING` (comma-separated): the probe
/// behaves as on a host without it, and says so. For tests of degraded hosts; never set it to
/// weaken a real run.
pub fn simulated_missing(mechanism: &str) -> bool {
    std::env::var("QUALIFY_SIMULATE_MISSING")
        .is_ok_and(|v| v.split(',').any(|m| m.trim() == mechanism))
}

/// The prepared sandbox of one probe.
#[derive(Debug, Default)]
pub struct Plan {
    fds: Vec<i32>,
}

impl Plan {
    /// Extra `clone` flags (namespaces) the sandbox needs.
    pub(crate) fn clone_flags(&self, _pidns: bool) -> libc::c_int {
        0
    }

    /// Fds the init keeps for the sandbox's setup.
    pub(crate) fn fds(&self) -> &[i32] {
        &self.fds
    }

    /// Refuse a program the sandbox would hide from itself.
    pub(crate) fn check_visible(
        &self,
        _program: &std::path::Path,
        _workdir: Option<&std::path::Path>,
        _name: &str,
    ) -> Result<(), crate::ProbeError> {
        Ok(())
    }

    /// A failed step, for people.
    pub(crate) fn describe_step(&self, stage: Stage, _index: u32) -> String {
        stage.describe().to_string()
    }

    /// In the init, in its new namespaces.
    ///
    /// # Safety
    /// Raw system calls only (see `cell::raw`).
    pub(crate) unsafe fn setup_init(&self, _pidns: bool) -> Result<(), crate::cell::Step> {
        Ok(())
    }

    /// In the program's process, just before `exec`.
    ///
    /// # Safety
    /// Raw system calls only (see `cell::raw`).
    pub(crate) unsafe fn setup_main(&self) -> Result<(), crate::cell::Step> {
        Ok(())
    }
}
