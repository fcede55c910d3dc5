//! How strongly a probe's ceilings and sandbox were enforced — `enforcement` in every result:
//! the backend, per ceiling [`Strength`] (`kernel`, `watchdog`, `none`), how the tree was held,
//! and per sandbox layer the policy and the mechanisms or the reason it is not enforced
//! ([`SandboxEnforcement`]). Plain data; the probe decides and fills it.

use std::collections::BTreeMap;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::ParseError;

/// How strongly a ceiling was enforced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Strength {
    /// The kernel enforces it (cgroup controller).
    Kernel,
    /// qualify samples and kills from user space; a fast program can overshoot between samples.
    Watchdog,
    /// Not enforced (either not requested or not possible with this backend).
    None,
}

impl Strength {
    /// `none` (a serde default).
    pub fn none() -> Strength {
        Strength::None
    }

    pub fn is_none(&self) -> bool {
        *self == Strength::None
    }
}

/// Which backend ran and how each ceiling was enforced.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Enforcement {
    /// `cgroup2`, `cgroup1` or `rlimit`.
    pub backend: String,
    pub memory: Strength,
    pub cpus: Strength,
    pub pids: Strength,
    /// How the disk ceiling on the writable places was held (absent in results from before it,
    /// and when there is none).
    #[serde(default = "Strength::none", skip_serializing_if = "Strength::is_none")]
    pub disk: Strength,
    /// How the process tree was tracked and killed, e.g. `"cgroup"` or
    /// `"process-group+subreaper"`.
    pub tree: String,
    /// What happens to the tree if qualify itself dies (even by SIGKILL), and by which mechanism.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub on_qualify_death: String,
    /// Caveats a reader should know about the strength of this evidence.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// How each layer of the sandbox was enforced (absent when nothing ran).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<SandboxEnforcement>,
}

impl Enforcement {
    /// Nothing enforced (a probe that never ran): `backend` named, every ceiling `none`, no
    /// tree held.
    pub fn none(backend: impl Into<String>) -> Enforcement {
        Enforcement {
            backend: backend.into(),
            memory: Strength::None,
            cpus: Strength::None,
            pids: Strength::None,
            disk: Strength::None,
            tree: "none".into(),
            on_qualify_death: String::new(),
            notes: Vec::new(),
            sandbox: None,
        }
    }
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
    type Err = ParseError;
    fn from_str(s: &str) -> Result<Mode, ParseError> {
        match s {
            "off" => Ok(Mode::Off),
            "on" => Ok(Mode::On),
            "required" => Ok(Mode::Required),
            other => Err(ParseError::new(
                "sandbox mode",
                other,
                ["on", "off", "required"],
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
    type Err = ParseError;
    fn from_str(s: &str) -> Result<Role, ParseError> {
        match s {
            "holdout" => Ok(Role::Holdout),
            "key" => Ok(Role::Key),
            "state" => Ok(Role::State),
            "home" => Ok(Role::Home),
            other => Err(ParseError::new(
                "role",
                other,
                ["holdout", "key", "state", "home"],
            )),
        }
    }
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
