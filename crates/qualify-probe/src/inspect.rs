//! The seam between the watch's decisions and the running system: everything
//! [`crate::classify::Watch`] asks beyond the per-sample `/proc` snapshot — how each thread waits
//! (syscall files, fd tables), stack samples (eu-stack or gdb), digests of shared memory and
//! program data, and process environments (rank identity). [`Live`] asks the real system; decision tests answer from tables.

use crate::blocking::{self, ThreadWait};
use crate::memory::{self, Snapshot};
use crate::rules::Rules;
use crate::sample::ProcSnap;
use crate::stacks::{self, ProcStacks, Tool};

pub trait Inspect {
    /// How every thread of one snapshot of the tree waits.
    fn waits(&mut self, procs: &[ProcSnap]) -> Vec<ThreadWait>;
    /// The name of the stack sampler, or why there is none.
    fn sampler(&self) -> Result<&'static str, String>;
    /// One stack sample of `pids`.
    fn stacks(&mut self, pids: &[i32]) -> Vec<ProcStacks>;
    /// Digests of the memory through which `pids` could release each other.
    fn memory(&mut self, pids: &[i32], rules: &Rules) -> Snapshot;
    /// A process's environment (`NAME`, `value`), as it was when it started.
    fn environ(&mut self, pid: i32) -> Vec<(String, String)>;
    /// qualify's own value of an environment variable (what children merely inherit).
    fn own_env(&self, name: &str) -> Option<String>;
}

/// The real system.
pub struct Live {
    tool: Option<Tool>,
}

impl Live {
    pub fn new() -> Live {
        Live { tool: Tool::find() }
    }
}

impl Inspect for Live {
    fn waits(&mut self, procs: &[ProcSnap]) -> Vec<ThreadWait> {
        blocking::classify(procs)
    }

    fn sampler(&self) -> Result<&'static str, String> {
        self.tool
            .map(Tool::name)
            .ok_or_else(|| stacks::NO_SAMPLER.to_string())
    }

    fn stacks(&mut self, pids: &[i32]) -> Vec<ProcStacks> {
        match self.tool {
            Some(tool) => stacks::sample(tool, pids),
            None => Vec::new(),
        }
    }

    fn memory(&mut self, pids: &[i32], rules: &Rules) -> Snapshot {
        memory::snapshot(pids, rules)
    }

    fn environ(&mut self, pid: i32) -> Vec<(String, String)> {
        crate::observe::environ(pid)
    }

    fn own_env(&self, name: &str) -> Option<String> {
        std::env::var(name).ok()
    }
}
