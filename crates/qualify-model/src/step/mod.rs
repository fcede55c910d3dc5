//! The command lines qualify's own processes start each other with, one type per step: a
//! split load's generator ([`LoadGenStep`], `qualify load-gen`), a service cell as a Slurm job
//! ([`ServiceCellStep`], `qualify service-cell`) and its dependency on a node of its own
//! ([`DependencyHostStep`], `qualify dependency-host`), and a cell's probe inside a job
//! ([`ProbeStep`], `qualify probe` or `qualify agent coordinate`) and its agent on every node
//! ([`AgentStep`], `qualify agent observe`). The side that starts a
//! process writes the step with `to_argv()` (the words after the binary's path); the side that
//! runs it reads the same type back (`parse`, or the binary's own flags for `qualify probe` and
//! `qualify agent`, tested to agree): a flag renamed on one side fails to build or a round
//! trip, never a job on a node.
//!
//! Flags are written `--name=value` (one word each, so a job script can quote words
//! whole); durations travel in whole milliseconds, a start instant in microseconds.

mod agent;
mod argv;
mod load_gen;
mod probe;
mod service;

use std::path::PathBuf;

pub use agent::AgentStep;
pub use load_gen::LoadGenStep;
pub use probe::{CountError, HideError, ProbeStep, parse_hide, sandbox_flags};
pub use service::{CellStep, DependencyHostStep, ServiceCellStep};

/// A command line of a step that does not read as that step.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StepError {
    #[error("`qualify {step}` expected first, found {found:?}")]
    NotThisStep { step: &'static str, found: String },
    #[error("`qualify {step}`: unknown flag {flag:?}")]
    UnknownFlag { step: &'static str, flag: String },
    #[error("`qualify {step}`: {flag} needs a value")]
    NoValue { step: &'static str, flag: String },
    #[error("`qualify {step}`: {flag} given twice")]
    Twice { step: &'static str, flag: String },
    #[error("`qualify {step}`: {flag} is required")]
    Missing { step: &'static str, flag: String },
    #[error("`qualify {step}`: {flag} {value:?}: {why}")]
    Value {
        step: &'static str,
        flag: String,
        value: String,
        why: String,
    },
    #[error("`qualify {step}`: unexpected argument {found:?}")]
    Unexpected { step: &'static str, found: String },
}

/// A path as one word of a command line (qualify's own directories: lossy only for a name that
/// is not UTF-8, which qualify never creates).
fn word(path: &std::path::Path) -> String {
    path.to_string_lossy().into_owned()
}

fn path(text: &str) -> PathBuf {
    PathBuf::from(text)
}

#[cfg(test)]
mod tests;
