//! `qualify agent observe`: one node's agent of a multi-node cell, started by the cell's
//! coordinator (`qualify-slurm`'s `multinode`) as one task per node of an `srun --overlap` job
//! step, and read by the binary's `agent observe` flags (tested to agree).

use std::path::PathBuf;
use std::time::Duration;

use super::argv::{Grammar, flag};
use super::{StepError, path, word};
use crate::units::{parse_duration, parse_size};

/// One node's agent: the job's processes it selects by their environment, the stall window
/// and per-node memory ceiling it watches them under, where it reports, and how long at most.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentStep {
    /// The cell's directory for reports (shared with the coordinator).
    pub dir: PathBuf,
    /// How long nothing but CPU must stay still before the node is stuck.
    pub stall: Duration,
    /// The per-node memory ceiling (bytes) for the job's processes on the node.
    pub memory: Option<u64>,
    /// Processes whose environment holds NAME=VALUE.
    pub select: Vec<(String, String)>,
    /// Only processes that have NAME in their environment.
    pub present: Vec<String>,
    /// Not the processes whose NAME equals the agent's own (its job step).
    pub exclude_own: Vec<String>,
    /// The agent gives up after this long even if nobody asks.
    pub max_time: Duration,
}

const GRAMMAR: Grammar = Grammar {
    step: "agent observe",
    words: &["agent", "observe"],
    valued: &[
        "dir",
        "stall",
        "memory",
        "select",
        "present",
        "exclude-own",
        "max-time",
    ],
    switches: &[],
    command: false,
};

fn millis(d: Duration) -> String {
    format!("{}ms", d.as_millis())
}

impl AgentStep {
    /// The words after the binary's path.
    pub fn to_argv(&self) -> Vec<String> {
        let mut argv = vec![
            "agent".to_string(),
            "observe".into(),
            flag("dir", word(&self.dir)),
            flag("stall", millis(self.stall)),
        ];
        argv.extend(
            self.select
                .iter()
                .map(|(k, v)| flag("select", format!("{k}={v}"))),
        );
        argv.extend(self.present.iter().map(|n| flag("present", n)));
        argv.extend(self.exclude_own.iter().map(|n| flag("exclude-own", n)));
        argv.push(flag("max-time", millis(self.max_time)));
        if let Some(m) = self.memory {
            argv.push(flag("memory", m));
        }
        argv
    }

    /// Read the step back from the words after the binary's path.
    pub fn parse(argv: &[String]) -> Result<AgentStep, StepError> {
        let f = GRAMMAR.read(argv)?;
        let select = f
            .all("select")
            .into_iter()
            .map(|s| match s.split_once('=') {
                Some((k, v)) => Ok((k.to_string(), v.to_string())),
                None => Err(StepError::Value {
                    step: GRAMMAR.step,
                    flag: "--select".into(),
                    value: s.clone(),
                    why: "not NAME=VALUE".into(),
                }),
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(AgentStep {
            dir: path(&f.required("dir")?),
            stall: f.required_with("stall", parse_duration)?,
            memory: f.read_with("memory", parse_size)?,
            select,
            present: f.all("present"),
            exclude_own: f.all("exclude-own"),
            max_time: f.required_with("max-time", parse_duration)?,
        })
    }
}
