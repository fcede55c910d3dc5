//! What the sandbox's self-tests found, as plain data: one [`Attempt`] (what was tried, whether
//! the sandbox stopped it), the run's [`SelfTest`] (the probe's built-in program against hidden
//! paths, the host's network and qualify) and the held-out self-test's [`HeldOutAttempts`] (an
//! artifact started as a held-out check is, trying to read or recognise one). The probe and the
//! binary fill them; the receipt's record keeps them as they were written.

use serde::{Deserialize, Serialize};

use crate::enforcement::SandboxEnforcement;

/// One attempt and how it ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attempt {
    /// What was tried (`read /x/canary`, `connect 127.0.0.1:4000`, …).
    pub target: String,
    /// The sandbox stopped it.
    pub blocked: bool,
    /// How it was stopped (the error), or that it got through.
    pub result: String,
}

/// The self-test's results.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SelfTest {
    pub read_hidden: Attempt,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list_holdout: Option<Attempt>,
    pub write_outside: Attempt,
    pub connect_host: Attempt,
    /// A unix socket bound to a path on the host (absent in receipts from before).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connect_unix: Option<Attempt>,
    pub signal_qualify: Attempt,
    /// Processes the program saw in `/proc`.
    pub processes_visible: Option<u64>,
    /// The stated enforcement after the attempts (a layer an attempt got through is `none`).
    pub enforcement: Option<SandboxEnforcement>,
}

impl SelfTest {
    /// Every attempt was blocked.
    pub fn all_blocked(&self) -> bool {
        [
            Some(&self.read_hidden),
            self.list_holdout.as_ref(),
            Some(&self.write_outside),
            Some(&self.connect_host),
            self.connect_unix.as_ref(),
            Some(&self.signal_qualify),
        ]
        .into_iter()
        .flatten()
        .all(|a| a.blocked)
    }
}

/// What the artifact of the held-out self-test tried.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeldOutAttempts {
    pub environment: Attempt,
    pub check_process: Attempt,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check_file: Option<Attempt>,
    pub qualify_command_line: Attempt,
    /// Only the write: whether it reached a later cell is decided by qualify on the host.
    pub later_cells: Attempt,
}
