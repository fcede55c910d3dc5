//! The sandbox a probe is asked for, as plain data ([`SandboxPolicy`]): its mode, network
//! ([`NetworkPolicy`]), the extra writable and readable paths, the paths hidden by [`Role`] and
//! the user. The spec's `[sandbox]` checks into it, a Slurm job carries it to the node as
//! `qualify probe` flags (`crate::step`), and `qualify-probe` turns it into the sandbox it sets
//! up (`Sandbox::from_policy`), adding every home directory on the machine it runs on.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use serde::Serialize;

use crate::ParseError;
use crate::enforcement::{Mode, Role};

/// `[sandbox] network` / `--network`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NetworkPolicy {
    /// A private network namespace without any interface up: no network at all.
    None,
    /// A private network namespace with only its own loopback.
    #[default]
    Loopback,
    /// qualify's own network.
    Host,
}

impl FromStr for NetworkPolicy {
    type Err = ParseError;
    fn from_str(s: &str) -> Result<NetworkPolicy, ParseError> {
        match s {
            "none" => Ok(NetworkPolicy::None),
            "loopback" => Ok(NetworkPolicy::Loopback),
            "host" => Ok(NetworkPolicy::Host),
            other => Err(ParseError::new(
                "network policy",
                other,
                ["none", "loopback", "host"],
            )),
        }
    }
}

impl fmt::Display for NetworkPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            NetworkPolicy::None => "none",
            NetworkPolicy::Loopback => "loopback",
            NetworkPolicy::Host => "host",
        })
    }
}

/// What a probed program may see and touch (every home directory is hidden besides
/// `hidden`, by the probe on its own machine).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SandboxPolicy {
    pub mode: Mode,
    pub network: NetworkPolicy,
    /// Writable besides the workdir (absolute).
    pub writable: Vec<PathBuf>,
    /// Readable although inside a hidden path (absolute).
    pub readable: Vec<PathBuf>,
    /// As root: the user the program runs as (name or uid).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// Paths hidden besides every home (held-out checks, the signing key, qualify's state):
    /// set by the run from its flags, never written in a spec.
    #[serde(skip)]
    pub hidden: Vec<(Role, PathBuf)>,
    /// Variables of qualify's environment the program also gets (`--pass-env`: a name, or a
    /// prefix ending in `*`), besides the probe's base list and the spec's `env`.
    #[serde(skip)]
    pub pass_env: Vec<String>,
    /// The program writes its workdir through a layer of its own, removed after it
    /// (`--private-workdir`; a run's cells always do).
    #[serde(skip)]
    pub private_workdir: bool,
}

impl Default for SandboxPolicy {
    /// On, loopback network, nothing hidden beyond the homes.
    fn default() -> SandboxPolicy {
        SandboxPolicy {
            mode: Mode::On,
            network: NetworkPolicy::Loopback,
            writable: Vec::new(),
            readable: Vec::new(),
            user: None,
            hidden: Vec::new(),
            pass_env: Vec::new(),
            private_workdir: false,
        }
    }
}

impl SandboxPolicy {
    /// No sandbox.
    pub fn off() -> SandboxPolicy {
        SandboxPolicy {
            mode: Mode::Off,
            network: NetworkPolicy::Host,
            ..SandboxPolicy::default()
        }
    }
}
