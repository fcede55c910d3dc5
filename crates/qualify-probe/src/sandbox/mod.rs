//! The sandbox a probed program runs in: least privilege for code nobody has qualified yet.
//!
//! Policy ([`Sandbox`], in every [`crate::ProbeSpec`]): the system read-only; read-write only the
//! workdir, the extra `writable` paths and a private `/tmp` and `/dev/shm`; hidden (an empty
//! directory, or `/dev/null` for a file) the paths the caller names by [`Role`] — held-out
//! checks, the signing key, qualify's state — and every home directory; a PID namespace, a new
//! session, no capabilities, `no_new_privs`; as root an unprivileged user; a private network
//! namespace with only its loopback (`network = "loopback"`), none at all (`"none"`), one shared
//! with other probes of a service cell ([`Network::Join`]) or the host's (`"host"`); a seccomp
//! filter against a short list of kernel attack surface.
//!
//! Where it is set up, in order (`plan.rs` prepares, `cell::raw` runs): in the cell's init, in
//! its new namespaces — mounts made private; sources opened; the private `/tmp`, a minimal
//! `/dev`, hidden paths and the writable binds (idmapped when the sandbox's user does not own
//! them), deepest last; `/proc` of the new PID namespace; everything read-only except the
//! writable places; the loopback interface up. Then in the program's process, just before
//! `exec`: capabilities dropped from the bounding set, the user switched, remaining capabilities
//! cleared, `no_new_privs`, the Landlock ruleset (a second, independent filesystem layer:
//! read-only system, writable places, hidden paths left out), the seccomp filter.
//!
//! Every result says how each layer was enforced ([`SandboxEnforcement`]): `kernel` with the
//! mechanisms, or `none` with the reason; `mode = "required"` refuses to run instead of
//! degrading. `QUALIFY_SIMULATE_MISSING` turns mechanisms off to show degraded hosts.

mod host;
mod idmap;
mod landlock_rules;
mod plan;
mod seccomp;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::netns::Netns;
use crate::result::Strength;

pub(crate) use plan::Plan;

/// Whether `mechanism` is listed in `QUALIFY_SIMULATE_MISSING` (comma-separated): the probe
/// behaves as on a host without it, and says so. For tests of degraded hosts; never set it to
/// weaken a real run. Names: `init`, `pidns`, `mountns`, `netns`, `landlock`, `seccomp`,
/// `setuid`, `idmap`.
pub fn simulated_missing(mechanism: &str) -> bool {
    std::env::var("QUALIFY_SIMULATE_MISSING")
        .is_ok_and(|v| v.split(',').any(|m| m.trim() == mechanism))
}

/// `--sandbox` / `[sandbox] mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// No sandbox (the cell's init still holds the tree).
    Off,
    /// As strong as the host allows; each missing layer is stated.
    #[default]
    On,
    /// Refuse to run (setup error, exit 2) when a layer cannot be enforced.
    Required,
}

impl FromStr for Mode {
    type Err = String;
    fn from_str(s: &str) -> Result<Mode, String> {
        match s {
            "off" => Ok(Mode::Off),
            "on" => Ok(Mode::On),
            "required" => Ok(Mode::Required),
            other => Err(format!(
                "unknown sandbox mode `{other}`; expected one of: on, off, required"
            )),
        }
    }
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Mode::Off => "off",
            Mode::On => "on",
            Mode::Required => "required",
        })
    }
}

/// `--network` / `[sandbox] network`.
#[derive(Debug, Clone, Default)]
pub enum Network {
    /// A private network namespace without any interface up: no network at all.
    None,
    /// A private network namespace with only its own loopback.
    #[default]
    Loopback,
    /// qualify's own network.
    Host,
    /// A namespace shared with other probes (a service cell's: the service, its dependencies and
    /// its readiness command), created by [`Netns::loopback`].
    Join(Arc<Netns>),
    /// A private namespace was wanted but cannot be had (why): qualify's network is shared,
    /// and the evidence says so.
    Unavailable(String),
}

impl Network {
    pub fn name(&self) -> &'static str {
        match self {
            Network::None => "none",
            Network::Loopback => "loopback",
            Network::Host => "host",
            Network::Join(_) => "loopback (shared by the service cell)",
            Network::Unavailable(_) => "loopback",
        }
    }
}

impl FromStr for Network {
    type Err = String;
    fn from_str(s: &str) -> Result<Network, String> {
        match s {
            "none" => Ok(Network::None),
            "loopback" => Ok(Network::Loopback),
            "host" => Ok(Network::Host),
            other => Err(format!(
                "unknown network policy `{other}`; expected one of: none, loopback, host"
            )),
        }
    }
}

/// Why a path is hidden from the program.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Held-out checks (visible only to the held-out checks themselves).
    Holdout,
    /// The signing key.
    Key,
    /// qualify's state: ledger, receipts, Slurm run files.
    State,
    /// Home directories (qualify's user's and everyone else's).
    Home,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Holdout => "holdout",
            Role::Key => "key",
            Role::State => "state",
            Role::Home => "home",
        }
    }
}

impl FromStr for Role {
    type Err = String;
    fn from_str(s: &str) -> Result<Role, String> {
        match s {
            "holdout" => Ok(Role::Holdout),
            "key" => Ok(Role::Key),
            "state" => Ok(Role::State),
            "home" => Ok(Role::Home),
            other => Err(format!(
                "unknown role `{other}`; expected one of: holdout, key, state, home"
            )),
        }
    }
}

/// A path hidden from the program, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hidden {
    pub role: Role,
    pub path: PathBuf,
}

/// The sandbox policy of one probe.
#[derive(Debug, Clone)]
pub struct Sandbox {
    pub mode: Mode,
    pub network: Network,
    /// Writable besides the workdir (absolute).
    pub writable: Vec<PathBuf>,
    /// Readable although inside a hidden path (absolute); everything else of the system is
    /// readable already.
    pub readable: Vec<PathBuf>,
    pub hidden: Vec<Hidden>,
    /// As root: the user the program runs as (name or uid); default the workdir's owner when it
    /// is not root, else `nobody`.
    pub user: Option<String>,
}

impl Default for Sandbox {
    /// On, loopback network, every home directory hidden.
    fn default() -> Sandbox {
        Sandbox {
            mode: Mode::On,
            network: Network::Loopback,
            writable: Vec::new(),
            readable: Vec::new(),
            hidden: home_paths()
                .into_iter()
                .map(|path| Hidden {
                    role: Role::Home,
                    path,
                })
                .collect(),
            user: None,
        }
    }
}

impl Sandbox {
    /// No sandbox.
    pub fn off() -> Sandbox {
        Sandbox {
            mode: Mode::Off,
            network: Network::Host,
            hidden: Vec::new(),
            ..Sandbox::default()
        }
    }

    /// Hide `path` (made absolute) for `role`, unless it is hidden already.
    pub fn hide(&mut self, role: Role, path: impl AsRef<Path>) {
        let path = std::path::absolute(path.as_ref()).unwrap_or_else(|_| path.as_ref().into());
        if !self.hidden.iter().any(|h| h.path == path) {
            self.hidden.push(Hidden { role, path });
        }
    }

    /// Stop hiding the paths of `role` (the held-out checks see their own directory).
    pub fn reveal(&mut self, role: Role) {
        self.hidden.retain(|h| h.role != role);
    }
}

/// Every home directory: `$HOME`, `/root`, and each directory in `/home`.
pub fn home_paths() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    if let Some(h) = std::env::var_os("HOME").map(PathBuf::from)
        && h.is_absolute()
        && h.parent().is_some()
    {
        out.push(h);
    }
    out.push(PathBuf::from("/root"));
    if let Ok(entries) = std::fs::read_dir("/home") {
        for e in entries.flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                out.push(e.path());
            }
        }
    }
    let mut seen = Vec::new();
    out.retain(|p| {
        let keep = p.exists() && !seen.contains(p);
        seen.push(p.clone());
        keep
    });
    out
}

/// How one layer of the sandbox was enforced.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Layer {
    /// What the policy asked for.
    pub policy: String,
    /// `kernel` (with `mechanisms`) or `none` (with `reason`).
    pub enforced: Strength,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mechanisms: Vec<String>,
    /// Why it is not enforced, or what is missing of it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl Layer {
    pub fn kernel(policy: impl Into<String>, mechanisms: Vec<String>) -> Layer {
        Layer {
            policy: policy.into(),
            enforced: Strength::Kernel,
            mechanisms,
            reason: None,
        }
    }

    pub fn none(policy: impl Into<String>, reason: impl Into<String>) -> Layer {
        Layer {
            policy: policy.into(),
            enforced: Strength::None,
            mechanisms: Vec::new(),
            reason: Some(reason.into()),
        }
    }

    pub fn is_kernel(&self) -> bool {
        self.enforced == Strength::Kernel
    }

    /// A self-test that got through: the layer is not enforced, whatever was set up.
    pub fn downgrade(&mut self, why: impl Into<String>) {
        self.enforced = Strength::None;
        self.reason = Some(why.into());
    }
}

/// One hidden path and what hides it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HiddenPath {
    pub path: String,
    /// `mount namespace` and/or `landlock`; empty when nothing does.
    pub by: Vec<String>,
}

/// The `hidden` layer: a layer plus the hidden paths by role.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HiddenLayer {
    #[serde(flatten)]
    pub layer: Layer,
    pub paths: BTreeMap<Role, Vec<HiddenPath>>,
}

impl HiddenLayer {
    /// Whether every path of `role` is hidden by the kernel (at least one mechanism), and the
    /// layer itself is enforced. `None` when no path has that role.
    pub fn role_kernel_enforced(&self, role: Role) -> Option<bool> {
        let paths = self.paths.get(&role)?;
        Some(self.layer.is_kernel() && paths.iter().all(|p| !p.by.is_empty()))
    }
}

/// `enforcement.sandbox` of a result: per layer, the policy and how it was enforced.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SandboxEnforcement {
    pub mode: Mode,
    pub filesystem: Layer,
    pub hidden: HiddenLayer,
    pub network: Layer,
    pub pid: Layer,
    pub user: Layer,
    pub syscalls: Layer,
}

impl SandboxEnforcement {
    /// The layers by name, in order.
    pub fn layers(&self) -> [(&'static str, &Layer); 6] {
        [
            ("filesystem", &self.filesystem),
            ("hidden", &self.hidden.layer),
            ("network", &self.network),
            ("pid", &self.pid),
            ("user", &self.user),
            ("syscalls", &self.syscalls),
        ]
    }
}

#[cfg(test)]
mod tests;
