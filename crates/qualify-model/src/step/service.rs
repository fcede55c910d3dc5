//! The steps of a service cell on a cluster: `qualify service-cell` ([`ServiceCellStep`]), the
//! cell's Slurm job on the first node of its allocation (written by the run's Slurm mapping,
//! completed with its state directory and lease by the job script), and `qualify
//! dependency-host` ([`DependencyHostStep`]), one `node = "own"` dependency and its proxy on a
//! node of its own (written by the service cell). Both are told the same about the cell
//! ([`CellStep`]).

use std::path::PathBuf;

use super::argv::{Flags, Grammar, flag};
use super::{StepError, path, word};
use crate::fault::Noise;
use crate::{BackendChoice, Params};

/// What every step of a service cell is told about the cell.
#[derive(Debug, Clone, PartialEq)]
pub struct CellStep {
    /// The spec (absolute, shared with the nodes).
    pub spec: PathBuf,
    /// The cell's axis values (JSON on the command line, in this order).
    pub params: Params,
    pub backend: BackendChoice,
    /// The cell's state directory shared by its nodes (heartbeats, exchanges): the job
    /// script's `cell-N.nodes`, so `None` until the script sets it.
    pub state_dir: Option<PathBuf>,
    /// Stop when this lease file stops changing (the submitting qualify is gone).
    pub lease: Option<PathBuf>,
    /// The submitting run's `--set KEY=VALUE` overrides, applied over the spec as it applied
    /// them (as given; the spec reads them).
    pub overrides: Vec<String>,
    /// Variables of the step's environment the artifact also gets (`qualify run --pass-env`).
    pub pass_env: Vec<String>,
}

const CELL_FLAGS: [&str; 7] = [
    "spec",
    "params",
    "backend",
    "state-dir",
    "lease",
    "set",
    "pass-env",
];

impl CellStep {
    fn push(&self, argv: &mut Vec<String>) {
        let params = serde_json::to_string(&self.params).unwrap_or_else(|_| "{}".into());
        argv.extend([
            flag("spec", word(&self.spec)),
            flag("params", params),
            flag("backend", self.backend),
        ]);
        if let Some(dir) = &self.state_dir {
            argv.push(flag("state-dir", word(dir)));
        }
        argv.extend(self.overrides.iter().map(|o| flag("set", o)));
        argv.extend(self.pass_env.iter().map(|p| flag("pass-env", p)));
    }

    fn push_lease(&self, argv: &mut Vec<String>) {
        if let Some(lease) = &self.lease {
            argv.push(flag("lease", word(lease)));
        }
    }

    fn read(f: &Flags) -> Result<CellStep, StepError> {
        Ok(CellStep {
            spec: path(&f.required("spec")?),
            params: f.required_with("params", |t: &str| serde_json::from_str::<Params>(t))?,
            backend: f.parsed("backend")?.unwrap_or_default(),
            state_dir: f.one("state-dir")?.as_deref().map(path),
            lease: f.one("lease")?.as_deref().map(path),
            overrides: f.all("set"),
            pass_env: f.all("pass-env"),
        })
    }
}

/// `qualify service-cell`: the whole service cell as one Slurm job.
#[derive(Debug, Clone, PartialEq)]
pub struct ServiceCellStep {
    pub cell: CellStep,
    /// Where write histories go (the receipt's `histories` directory).
    pub histories: Option<PathBuf>,
    /// The variation of this faulted cell's `none` control, measured first; `None`: no control
    /// was measured.
    pub control_noise: Option<Noise>,
}

const SERVICE_CELL: Grammar = Grammar {
    step: "service-cell",
    words: &["service-cell"],
    valued: &[
        CELL_FLAGS[0],
        CELL_FLAGS[1],
        CELL_FLAGS[2],
        CELL_FLAGS[3],
        CELL_FLAGS[4],
        CELL_FLAGS[5],
        CELL_FLAGS[6],
        "histories",
        "control-noise",
    ],
    switches: &[],
    command: false,
};

impl ServiceCellStep {
    /// The words after the binary's path.
    pub fn to_argv(&self) -> Vec<String> {
        let mut argv = vec!["service-cell".to_string()];
        self.cell.push(&mut argv);
        if let Some(h) = &self.histories {
            argv.push(flag("histories", word(h)));
        }
        if let Some(n) = self
            .control_noise
            .and_then(|n| serde_json::to_string(&n).ok())
        {
            argv.push(flag("control-noise", n));
        }
        self.cell.push_lease(&mut argv);
        argv
    }

    /// Read the step back from the words after the binary's path.
    pub fn parse(argv: &[String]) -> Result<ServiceCellStep, StepError> {
        let f = SERVICE_CELL.read(argv)?;
        Ok(ServiceCellStep {
            cell: CellStep::read(&f)?,
            histories: f.one("histories")?.as_deref().map(path),
            control_noise: f
                .read_with("control-noise", |t: &str| serde_json::from_str::<Noise>(t))?,
        })
    }
}

/// `qualify dependency-host`: one dependency of a service cell and its fault proxy on a node
/// of its own.
#[derive(Debug, Clone, PartialEq)]
pub struct DependencyHostStep {
    pub cell: CellStep,
    /// The dependency this step runs.
    pub dependency: String,
    /// The service's node (its silence stops this step).
    pub service_node: String,
}

const DEPENDENCY_HOST: Grammar = Grammar {
    step: "dependency-host",
    words: &["dependency-host"],
    valued: &[
        CELL_FLAGS[0],
        CELL_FLAGS[1],
        CELL_FLAGS[2],
        CELL_FLAGS[3],
        CELL_FLAGS[4],
        CELL_FLAGS[5],
        CELL_FLAGS[6],
        "dependency",
        "service-node",
    ],
    switches: &[],
    command: false,
};

impl DependencyHostStep {
    /// The words after the binary's path.
    pub fn to_argv(&self) -> Vec<String> {
        let mut argv = vec!["dependency-host".to_string()];
        self.cell.push(&mut argv);
        argv.extend([
            flag("dependency", &self.dependency),
            flag("service-node", &self.service_node),
        ]);
        self.cell.push_lease(&mut argv);
        argv
    }

    /// Read the step back from the words after the binary's path.
    pub fn parse(argv: &[String]) -> Result<DependencyHostStep, StepError> {
        let f = DEPENDENCY_HOST.read(argv)?;
        Ok(DependencyHostStep {
            cell: CellStep::read(&f)?,
            dependency: f.required("dependency")?,
            service_node: f.required("service-node")?,
        })
    }
}
