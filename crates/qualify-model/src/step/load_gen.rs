//! `qualify load-gen`: one generator process of a split load (`[load] generators = N`),
//! started by a service cell here (`qualify-service`'s `generators.rs`) or on another node as
//! a job step, read by the binary's hidden `load-gen` subcommand and run by
//! `qualify_service::steps::load_gen` (its doc is the contract:
//! exit statuses, signals, the report).

use std::path::PathBuf;

use super::argv::{Grammar, flag};
use super::{StepError, path, word};

/// One generator of a split load: share `index` of `of` of the plan in `plan` (a serialized
/// `LoadPlan`) against `target`, from `start_at`, its report (`GeneratorReport`) to `out`.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadGenStep {
    /// The cell's load plan (JSON).
    pub plan: PathBuf,
    /// The service's `HOST:PORT` (an address, or a name the generator's node resolves).
    pub target: String,
    /// This generator's index, from 0.
    pub index: u32,
    /// How many generators share the load.
    pub of: u32,
    /// Where the report goes (written atomically).
    pub out: PathBuf,
    /// When the schedule starts (Unix seconds, microsecond precision); `None`: at once.
    pub start_at: Option<f64>,
    /// On a cluster: beat `<node>.beat` in this directory (the cell's state directory).
    pub heartbeat: Option<PathBuf>,
}

const GRAMMAR: Grammar = Grammar {
    step: "load-gen",
    words: &["load-gen"],
    valued: &[
        "plan",
        "target",
        "index",
        "of",
        "out",
        "start-at",
        "heartbeat",
    ],
    switches: &[],
    command: false,
};

impl LoadGenStep {
    /// The words after the binary's path.
    pub fn to_argv(&self) -> Vec<String> {
        let mut argv = vec!["load-gen".to_string()];
        if let Some(dir) = &self.heartbeat {
            argv.push(flag("heartbeat", word(dir)));
        }
        argv.extend([
            flag("plan", word(&self.plan)),
            flag("target", &self.target),
            flag("index", self.index),
            flag("of", self.of),
            flag("out", word(&self.out)),
        ]);
        if let Some(at) = self.start_at {
            argv.push(flag("start-at", format!("{at:.6}")));
        }
        argv
    }

    /// Read the step back from the words after the binary's path.
    pub fn parse(argv: &[String]) -> Result<LoadGenStep, StepError> {
        let f = GRAMMAR.read(argv)?;
        Ok(LoadGenStep {
            plan: path(&f.required("plan")?),
            target: f.required("target")?,
            index: f.parsed_required("index")?,
            of: f.parsed_required("of")?,
            out: path(&f.required("out")?),
            start_at: f.parsed("start-at")?,
            heartbeat: f.one("heartbeat")?.as_deref().map(path),
        })
    }
}
