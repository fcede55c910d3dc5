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
pub mod layer;
mod plan;
mod seccomp;
mod unix;

use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use qualify_model::enforcement::{
    HiddenLayer, HiddenPath, Layer, Mode, Role, SandboxEnforcement,
};

use qualify_model::sandbox::{NetworkPolicy, SandboxPolicy};

use crate::netns::Netns;

pub(crate) use plan::{Plan, readable_fix};

/// Whether `mechanism` is listed in `QUALIFY_SIMULATE_MISSING` (comma-separated): the probe
/// behaves as on a host without it, and says so. For tests of degraded hosts; never set it to
/// weaken a real run. Names: `init`, `pidns`, `mountns`, `netns`, `landlock`, `seccomp`,
/// `setuid`, `idmap`, `overlay`.
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
    /// Whether the program writes its workdir through a private layer (an overlay whose upper
    /// layer is qualify's): nothing it writes reaches the workdir or a later cell.
    pub private_workdir: PrivateWorkdir,
    /// Nothing in the workdir can be executed (a held-out check's view: the artifact's programs
    /// run only in a cell of their own, started through qualify).
    pub workdir_noexec: bool,
    /// Files of the host bound read-only into the private `/tmp` (source, target under
    /// `/tmp`): qualify's own executable and the socket a held-out check asks qualify through.
    pub binds: Vec<(PathBuf, PathBuf)>,
    /// Variables of qualify's environment the program gets besides [`BASE_ENV`] (`--pass-env`):
    /// a name, or a prefix ending in `*` (`SLURM_*`). With the sandbox off the program gets
    /// qualify's whole environment.
    pub pass_env: Vec<String>,
}

/// How the program writes its workdir ([`Sandbox::private_workdir`]).
#[derive(Debug, Clone, Default)]
pub enum PrivateWorkdir {
    /// In place (`qualify probe`: what a command writes in its directory stays there).
    #[default]
    No,
    /// Through a layer of its own, made for this probe and removed after it (a cell of
    /// `qualify run`).
    PerProbe,
    /// Through this layer, shared by the probes of one cell (a service and its restart).
    Shared(Arc<layer::WorkdirLayer>),
}

impl PrivateWorkdir {
    pub fn wanted(&self) -> bool {
        !matches!(self, PrivateWorkdir::No)
    }
}

/// The variables of qualify's environment every sandboxed program gets (when set): where to
/// find programs, its home, locale, time zone and temporary directory. Everything else of
/// qualify's environment — tokens, keys, a CI runner's variables — stays out unless
/// [`Sandbox::pass_env`] names it; the spec's own `env` is added on top.
pub const BASE_ENV: [&str; 7] = ["PATH", "HOME", "LANG", "LANGUAGE", "LC_*", "TZ", "TMPDIR"];

/// Whether `name` is matched by `pattern` (a name, or a prefix ending in `*`).
fn env_matches(pattern: &str, name: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => name == pattern,
    }
}

impl Sandbox {
    /// What the program inherits of qualify's environment: all of it with the sandbox off,
    /// else the variables [`BASE_ENV`] and [`Sandbox::pass_env`] name (the caller adds the
    /// spec's `env` and qualify's own tags on top).
    pub fn inherited_env(&self) -> Vec<(std::ffi::OsString, std::ffi::OsString)> {
        let all = std::env::vars_os();
        if self.mode == Mode::Off {
            return all.collect();
        }
        all.filter(|(k, _)| {
            let Some(k) = k.to_str() else { return false };
            BASE_ENV
                .iter()
                .copied()
                .chain(self.pass_env.iter().map(String::as_str))
                .any(|p| env_matches(p, k))
        })
        .collect()
    }
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
            private_workdir: PrivateWorkdir::No,
            workdir_noexec: false,
            binds: Vec::new(),
            pass_env: Vec::new(),
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
            pass_env: policy.pass_env.clone(),
            private_workdir: if policy.private_workdir {
                PrivateWorkdir::PerProbe
            } else {
                PrivateWorkdir::No
            },
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
            pass_env: self.pass_env.clone(),
            private_workdir: self.private_workdir.wanted(),
        }
    }

    /// Stop hiding the paths of `role` (the held-out checks see their own directory).
    pub fn reveal(&mut self, role: Role) {
        self.hidden.retain(|h| h.role != role);
    }
}

/// Whether a sandboxed program gets its own mount namespace here (then [`Sandbox::binds`] are
/// made; without one they are not, and a caller points at the files where they are).
pub fn mount_namespace_available() -> bool {
    let h = host::host();
    h.namespaces("mountns").is_ok() && h.mount_setattr.is_ok()
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
