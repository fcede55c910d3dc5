//! A cell's probe inside a Slurm job ([`ProbeStep`]): `qualify probe --json` on the batch
//! host, or `qualify agent coordinate --json` for a cell whose ranks run on every node of its
//! allocation, with the cell's ceilings, backend, repeats, lease and sandbox as flags. Written
//! by `qualify-slurm`'s job scripts; the binary reads it with its public `qualify probe` flags
//! (a test there checks they read every step as [`ProbeStep::parse`] does).

use std::path::PathBuf;

use super::argv::{Flags, Grammar, flag};
use super::{StepError, path, word};
use crate::enforcement::{Mode, Role};
use crate::limits::{DEFAULT_STALL, DEFAULT_TIMEOUT, MAX_PIDS, MAX_REPEAT, parse_cpus};
use crate::sandbox::{NetworkPolicy, SandboxPolicy};
use crate::units::{parse_duration, parse_size};
use crate::{BackendChoice, Limits, Progress};

/// One cell's probe as a job runs it.
#[derive(Debug, Clone, PartialEq)]
pub struct ProbeStep {
    /// Observe every node of the allocation (`qualify agent coordinate`): per-node agents,
    /// the launcher probed on the batch host, one merged result.
    pub observe_nodes: bool,
    /// `--nodes-dir` of the coordinator (the job script's `cell-N.nodes`): `None` until the
    /// script sets it.
    pub nodes_dir: Option<PathBuf>,
    /// Ceilings and watch windows (timeouts in whole milliseconds). Its guards do not cross:
    /// a job's probe holds a guard the run set as a ceiling asked for.
    pub limits: Limits,
    /// Runs inside the job, compared by stdout digest (1 = once).
    pub repeat: u64,
    pub backend: BackendChoice,
    pub sandbox: SandboxPolicy,
    /// Print one JSON result on stdout (what a job's result file holds).
    pub json: bool,
    /// Stop when this lease file stops changing (the submitting qualify is gone).
    pub lease: Option<PathBuf>,
    /// The command to probe.
    pub command: Vec<String>,
}

const PROBE: Grammar = Grammar {
    step: "probe",
    words: &["probe"],
    valued: &VALUED,
    switches: &["json", "private-workdir"],
    command: true,
};

const COORDINATE: Grammar = Grammar {
    step: "agent coordinate",
    words: &["agent", "coordinate"],
    valued: &VALUED,
    switches: &["json", "private-workdir"],
    command: true,
};

const VALUED: [&str; 18] = [
    "nodes-dir",
    "disk",
    "pass-env",
    "timeout",
    "stall",
    "progress",
    "backend",
    "memory",
    "cpus",
    "pids",
    "repeat",
    "lease",
    "sandbox",
    "network",
    "writable",
    "readable",
    "hide",
    "user",
];

/// Whole milliseconds of `seconds`.
fn millis(seconds: f64) -> String {
    format!("{}ms", (seconds * 1000.0).round() as u64)
}

impl ProbeStep {
    /// The words after the binary's path.
    pub fn to_argv(&self) -> Vec<String> {
        let l = &self.limits;
        let mut argv: Vec<String> = if self.observe_nodes {
            let mut a = vec!["agent".to_string(), "coordinate".into()];
            if let Some(dir) = &self.nodes_dir {
                a.push(flag("nodes-dir", word(dir)));
            }
            a
        } else {
            vec!["probe".to_string()]
        };
        if self.json {
            argv.push("--json".into());
        }
        argv.extend([
            flag("timeout", millis(l.timeout_seconds)),
            flag("stall", millis(l.stall_seconds)),
            flag("progress", l.progress),
            flag("backend", self.backend),
        ]);
        if let Some(m) = l.memory_bytes {
            argv.push(flag("memory", m));
        }
        if let Some(c) = l.cpus {
            argv.push(flag("cpus", c));
        }
        if let Some(p) = l.pids {
            argv.push(flag("pids", p));
        }
        if let Some(d) = l.disk_bytes {
            argv.push(flag("disk", d));
        }
        if self.repeat > 1 {
            argv.push(flag("repeat", self.repeat));
        }
        if let Some(lease) = &self.lease {
            argv.push(flag("lease", word(lease)));
        }
        argv.extend(sandbox_flags(&self.sandbox));
        argv.push("--".into());
        argv.extend(self.command.iter().cloned());
        argv
    }

    /// Read the step back from the words after the binary's path.
    pub fn parse(argv: &[String]) -> Result<ProbeStep, StepError> {
        let observe_nodes = argv.first().is_some_and(|w| w == "agent");
        let grammar = if observe_nodes { &COORDINATE } else { &PROBE };
        let f = grammar.read(argv)?;
        if !observe_nodes && f.one("nodes-dir")?.is_some() {
            return Err(StepError::UnknownFlag {
                step: "probe",
                flag: "--nodes-dir".into(),
            });
        }
        let duration = |name: &str, default: std::time::Duration| -> Result<f64, StepError> {
            Ok(f.read_with(name, parse_duration)?
                .unwrap_or(default)
                .as_secs_f64())
        };
        let limits = Limits {
            memory_bytes: f.read_with("memory", parse_size)?,
            cpus: f.read_with("cpus", parse_cpus)?,
            pids: f.read_with("pids", |t| bounded(t, MAX_PIDS))?,
            timeout_seconds: duration("timeout", DEFAULT_TIMEOUT)?,
            stall_seconds: duration("stall", DEFAULT_STALL)?,
            progress: f.parsed::<Progress>("progress")?.unwrap_or_default(),
            disk_bytes: f.read_with("disk", parse_size)?,
            guards: Vec::new(),
        };
        if f.trailing.is_empty() {
            return Err(StepError::Missing {
                step: grammar.step,
                flag: "COMMAND".into(),
            });
        }
        Ok(ProbeStep {
            observe_nodes,
            nodes_dir: f.one("nodes-dir")?.as_deref().map(path),
            limits,
            repeat: f
                .read_with("repeat", |t| bounded(t, MAX_REPEAT))?
                .unwrap_or(1),
            backend: f.parsed("backend")?.unwrap_or_default(),
            sandbox: read_sandbox(&f)?,
            json: f.switch("json"),
            lease: f.one("lease")?.as_deref().map(path),
            command: f.trailing.clone(),
        })
    }
}

/// A count outside `1..=max`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("expected a whole number from 1 to {max}")]
pub struct CountError {
    pub max: u64,
}

/// A count from 1 to `max`.
fn bounded(text: &str, max: u64) -> Result<u64, CountError> {
    match text.parse::<u64>() {
        Ok(n) if (1..=max).contains(&n) => Ok(n),
        _ => Err(CountError { max }),
    }
}

/// The `qualify probe` flags of `sandbox`.
pub fn sandbox_flags(sandbox: &SandboxPolicy) -> Vec<String> {
    let mut out = vec![flag("sandbox", sandbox.mode)];
    if sandbox.mode == Mode::Off {
        return out;
    }
    out.push(flag("network", sandbox.network));
    out.extend(sandbox.writable.iter().map(|w| flag("writable", word(w))));
    out.extend(sandbox.readable.iter().map(|r| flag("readable", word(r))));
    out.extend(
        sandbox
            .hidden
            .iter()
            .map(|(role, p)| flag("hide", format!("{}={}", role.as_str(), word(p)))),
    );
    if let Some(u) = &sandbox.user {
        out.push(flag("user", u));
    }
    out.extend(sandbox.pass_env.iter().map(|p| flag("pass-env", p)));
    if sandbox.private_workdir {
        out.push("--private-workdir".into());
    }
    out
}

fn read_sandbox(f: &Flags) -> Result<SandboxPolicy, StepError> {
    let mode = f.parsed::<Mode>("sandbox")?.unwrap_or_default();
    if mode == Mode::Off {
        return Ok(SandboxPolicy::off());
    }
    let mut hidden = Vec::new();
    for h in f.all("hide") {
        hidden.push(parse_hide(&h).map_err(|e| StepError::Value {
            step: "probe",
            flag: "--hide".into(),
            value: h.clone(),
            why: e.to_string(),
        })?);
    }
    Ok(SandboxPolicy {
        mode,
        network: f.parsed::<NetworkPolicy>("network")?.unwrap_or_default(),
        writable: f.all("writable").iter().map(|w| path(w)).collect(),
        readable: f.all("readable").iter().map(|r| path(r)).collect(),
        user: f.one("user")?,
        hidden,
        pass_env: f.all("pass-env"),
        private_workdir: f.switch("private-workdir"),
    })
}

/// A `--hide` value that is not `ROLE=PATH`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HideError {
    #[error("`{0}`: expected ROLE=PATH, e.g. key=/etc/qualify/key.pem")]
    NoRole(String),
    #[error("`{0}`: the path is empty")]
    NoPath(String),
    #[error(transparent)]
    Role(#[from] crate::ParseError),
}

/// `ROLE=PATH` of `--hide`.
pub fn parse_hide(text: &str) -> Result<(Role, PathBuf), HideError> {
    let (role, p) = text
        .split_once('=')
        .ok_or_else(|| HideError::NoRole(text.to_string()))?;
    if p.is_empty() {
        return Err(HideError::NoPath(text.to_string()));
    }
    Ok((role.parse()?, path(p)))
}
