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

use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use qualify_model::enforcement::{
    HiddenLayer, HiddenPath, Layer, Mode, Role, SandboxEnforcement,
};

use qualify_model::sandbox::{NetworkPolicy, SandboxPolicy};

use crate::netns::Netns;

pub(crate) use plan::Plan;

/// Whether `mechanism` is listed in `QUALIFY_SIMULATE_MISSING` (comma-separated): the probe
/// behaves as on a host without it, and says so. For tests of degraded hosts; never set it to
/// weaken a real run. Names: `init`, `pidns`, `mountns`, `netns`, `landlock`, `seccomp`,
/// `setuid`, `idmap`.
pub fn simulated_missing(mechanism: &str) -> bool {
    std::env::var("QUALIFY_SIMULATE_MISSING")
        .is_ok_and(|v| v.split(',').any(|m| m.trim() == mechanism))
}

/// The network a probed tree gets: a policy's ([`NetworkPolicy`], `--network` / `[sandbox]
/// network`), or one of the probe's own making (shared by a service cell, or unavailable).
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

    /// The sandbox for `policy`: every home directory hidden besides the paths it names.
    pub fn from_policy(policy: &SandboxPolicy) -> Sandbox {
        if policy.mode == Mode::Off {
            return Sandbox::off();
        }
        let mut s = Sandbox {
            mode: policy.mode,
            network: match policy.network {
                NetworkPolicy::None => Network::None,
                NetworkPolicy::Loopback => Network::Loopback,
                NetworkPolicy::Host => Network::Host,
            },
            writable: policy.writable.clone(),
            readable: policy.readable.clone(),
            user: policy.user.clone(),
            ..Sandbox::default()
        };
        for (role, path) in &policy.hidden {
            s.hide(*role, path);
        }
        s
    }

    /// This sandbox as a policy another machine's probe sets up again (a Slurm job's `qualify
    /// probe` flags): the homes left out (that probe hides its own machine's), a shared or
    /// unavailable namespace asked for as `loopback`.
    pub fn policy(&self) -> SandboxPolicy {
        SandboxPolicy {
            mode: self.mode,
            network: match self.network {
                Network::None => NetworkPolicy::None,
                Network::Host => NetworkPolicy::Host,
                Network::Loopback | Network::Join(_) | Network::Unavailable(_) => {
                    NetworkPolicy::Loopback
                }
            },
            writable: self.writable.clone(),
            readable: self.readable.clone(),
            user: self.user.clone(),
            hidden: self
                .hidden
                .iter()
                .filter(|h| h.role != Role::Home)
                .map(|h| (h.role, h.path.clone()))
                .collect(),
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

#[cfg(test)]
mod tests;
