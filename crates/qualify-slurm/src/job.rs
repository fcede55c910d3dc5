//! One cell as a Slurm job: the [`CellJob`] (what `qualify probe` runs inside the allocation),
//! the [`Resources`] it asks Slurm for (memory ceiling → `--mem` plus a margin, timeout →
//! `--time` plus a margin, topology → `--nodes`/`--ntasks`/`--cpus-per-task`), and the shell
//! scripts the job array runs. Cells with equal [`Resources`] share one job array.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use qualify_model::Limits;
use qualify_model::enforcement::Mode;
use qualify_model::step::{ProbeStep, ServiceCellStep};

/// Memory Slurm grants beyond the probe's ceiling, for `qualify probe` itself and the shell.
pub const MEM_MARGIN_BYTES: u64 = 64 << 20;
/// `--mem` for a cell without a memory ceiling. Without any `--mem`, a node configured with
/// memory as a consumable resource hands one job all its memory, so jobs would run one at a time.
pub const DEFAULT_MEM_BYTES: u64 = 256 << 20;
/// Time Slurm grants beyond the probe's timeout (the probe ends the tree itself at its deadline
/// and needs a moment to dump stacks and write its result).
pub const TIME_MARGIN_SECONDS: f64 = 60.0;

/// The topology of a cell: what the allocation must hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Topology {
    pub nodes: u32,
    /// Tasks (MPI ranks) in the allocation.
    pub ntasks: u32,
    pub cpus_per_task: u32,
}

impl Default for Topology {
    fn default() -> Self {
        Topology {
            nodes: 1,
            ntasks: 1,
            cpus_per_task: 1,
        }
    }
}

/// What a cell's job runs.
#[derive(Debug, Clone)]
pub enum JobStep {
    /// `qualify probe --json` (or, observing every node, `qualify agent coordinate --json`)
    /// on the cell's command: the script adds its lease and the coordinator's `cell-N.nodes`.
    Probe(ProbeStep),
    /// A service cell of its own (`qualify service-cell`): the script adds its state
    /// directory (`cell-N.nodes`) and lease; its stdout is the cell's result.
    ServiceCell(ServiceCellStep),
}

/// One cell as a job: what it runs, where, and what the allocation must hold.
#[derive(Debug, Clone)]
pub struct CellJob {
    pub step: JobStep,
    pub workdir: PathBuf,
    /// Added to the job's environment.
    pub env: Vec<(String, String)>,
    /// The cell's ceilings: they size the allocation ([`Resources`]); a probe step also
    /// enforces them.
    pub limits: Limits,
    pub topology: Topology,
    /// The job's steps write heartbeats (`<node>.beat` in the cell's state directory): a node
    /// silent for [`crate::SILENT_NODE`] ends the cell `interrupted`, naming the node.
    pub heartbeats: bool,
}

/// The resources a cell's job asks for; cells with equal resources share one job array.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Resources {
    /// `--mem`, in MiB (per node).
    pub mem_mib: u64,
    /// `--time`, in whole minutes (at least 1).
    pub time_minutes: u64,
    pub topology: Topology,
}

impl Resources {
    /// The resources for `job`: the memory ceiling plus [`MEM_MARGIN_BYTES`] (or
    /// [`DEFAULT_MEM_BYTES`]), the timeout plus [`TIME_MARGIN_SECONDS`] rounded up to minutes,
    /// and CPUs per task at least the CPU ceiling rounded up.
    pub fn of(job: &CellJob) -> Resources {
        let mem = job
            .limits
            .memory_bytes
            .map_or(DEFAULT_MEM_BYTES, |m| m.saturating_add(MEM_MARGIN_BYTES));
        let mem_mib = mem.div_ceil(1 << 20).max(1);
        let secs = job.limits.timeout_seconds.max(0.0) + TIME_MARGIN_SECONDS;
        let time_minutes = ((secs / 60.0).ceil() as u64).max(1);
        let mut topology = job.topology;
        if let Some(cpus) = job.limits.cpus {
            let whole = cpus.ceil().max(1.0) as u32;
            topology.cpus_per_task = topology.cpus_per_task.max(whole);
        }
        topology.nodes = topology.nodes.max(1);
        topology.ntasks = topology.ntasks.max(topology.nodes);
        topology.cpus_per_task = topology.cpus_per_task.max(1);
        Resources {
            mem_mib,
            time_minutes,
            topology,
        }
    }

    /// The `sbatch` resource flags.
    pub fn sbatch_args(&self) -> Vec<String> {
        vec![
            format!("--mem={}M", self.mem_mib),
            format!("--time={}", self.time_minutes),
            format!("--nodes={}", self.topology.nodes),
            format!("--ntasks={}", self.topology.ntasks),
            format!("--cpus-per-task={}", self.topology.cpus_per_task),
        ]
    }
}

/// Single-quote `s` for a POSIX shell.
pub fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./=:,+@%".contains(&b))
    {
        return s.to_string();
    }
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// Where a cell's files live in a batch directory.
pub struct CellFiles {
    pub script: PathBuf,
    /// The probe's JSON result; present only once complete (written then renamed).
    pub result: PathBuf,
    /// `qualify probe`'s exit status.
    pub status: PathBuf,
    /// `qualify probe`'s stderr (setup errors).
    pub stderr: PathBuf,
    /// The per-node agents' reports (cells that observe every node).
    pub nodes: PathBuf,
}

impl CellFiles {
    pub fn new(batch_dir: &Path, task: usize) -> CellFiles {
        CellFiles {
            script: batch_dir.join(format!("cell-{task}.sh")),
            result: batch_dir.join(format!("cell-{task}.json")),
            status: batch_dir.join(format!("cell-{task}.rc")),
            stderr: batch_dir.join(format!("cell-{task}.err")),
            nodes: batch_dir.join(format!("cell-{task}.nodes")),
        }
    }
}

/// The script one array task runs: enter the workdir, set the environment, run the cell's
/// step (`qualify probe --json`, `qualify agent coordinate --json` with the agents' reports in
/// `cell-N.nodes/`, or `qualify service-cell` with that directory as its state) watching the
/// run's `lease` (the cell stops when the submitting qualify is gone), keep its exit status,
/// and publish the result atomically (write, then rename).
pub fn cell_script(
    qualify: &Path,
    job: &CellJob,
    files: &CellFiles,
    lease: Option<&Path>,
) -> String {
    let lease = lease.map(Path::to_path_buf);
    let argv = match &job.step {
        JobStep::Probe(step) => {
            let mut step = step.clone();
            if step.observe_nodes {
                step.nodes_dir = Some(files.nodes.clone());
            }
            step.lease = lease;
            if step.sandbox.mode != Mode::Off {
                // The job's own variables (the launcher finds its allocation through them) and
                // the spec's `env`, which the script exports before the probe starts.
                let pass = &mut step.sandbox.pass_env;
                pass.push("SLURM_*".into());
                pass.extend(job.env.iter().map(|(k, _)| k.clone()));
            }
            step.to_argv()
        }
        JobStep::ServiceCell(step) => {
            let mut step = step.clone();
            step.cell.state_dir = Some(files.nodes.clone());
            step.cell.lease = lease;
            step.to_argv()
        }
    };
    let probe: Vec<String> = std::iter::once(shell_quote(&qualify.to_string_lossy()))
        .chain(argv.iter().map(|a| shell_quote(a)))
        .collect();
    script(job, files, &probe)
}

/// The cell script around the command line `probe`: its result published atomically.
fn script(job: &CellJob, files: &CellFiles, probe: &[String]) -> String {
    let result = shell_quote(&files.result.to_string_lossy());
    let mut s = String::from("#!/bin/sh\n# generated by qualify: one cell\n");
    let _ = writeln!(
        s,
        "cd {} || {{ echo 2 > {}; exit 2; }}",
        shell_quote(&job.workdir.to_string_lossy()),
        shell_quote(&files.status.to_string_lossy())
    );
    for (k, v) in &job.env {
        let _ = writeln!(s, "export {}={}", shell_quote(k), shell_quote(v));
    }
    let _ = writeln!(
        s,
        "{} > {result}.partial 2> {}",
        probe.join(" "),
        shell_quote(&files.stderr.to_string_lossy())
    );
    let _ = writeln!(s, "rc=$?");
    let _ = writeln!(
        s,
        "echo $rc > {}",
        shell_quote(&files.status.to_string_lossy())
    );
    let _ = writeln!(s, "[ -s {result}.partial ] && mv {result}.partial {result}");
    let _ = writeln!(s, "exit $rc");
    s
}

/// The batch script of a job array: run the task's cell script.
pub fn array_script(batch_dir: &Path) -> String {
    format!(
        "#!/bin/sh\n# generated by qualify: one job array, one cell per task\nexec /bin/sh {}/cell-\"$SLURM_ARRAY_TASK_ID\".sh\n",
        shell_quote(&batch_dir.to_string_lossy())
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use qualify_model::step::CellStep;
    use qualify_model::{BackendChoice, Params, SandboxPolicy, Value};

    fn probe(memory: Option<u64>, timeout: f64, cpus: Option<f64>) -> ProbeStep {
        ProbeStep {
            observe_nodes: false,
            nodes_dir: None,
            limits: Limits {
                memory_bytes: memory,
                cpus,
                timeout_seconds: timeout,
                ..Limits::default()
            },
            repeat: 3,
            backend: BackendChoice::Auto,
            sandbox: SandboxPolicy::default(),
            json: true,
            lease: None,
            command: vec!["./prog".into(), "it's".into()],
        }
    }

    fn job(memory: Option<u64>, timeout: f64, cpus: Option<f64>) -> CellJob {
        let step = probe(memory, timeout, cpus);
        CellJob {
            workdir: "/w d".into(),
            env: vec![("N".into(), "4".into())],
            limits: step.limits.clone(),
            topology: Topology::default(),
            step: JobStep::Probe(step),
            heartbeats: false,
        }
    }

    #[test]
    fn memory_and_time_get_margins() {
        let r = Resources::of(&job(Some(100 << 20), 30.0, None));
        assert_eq!(r.mem_mib, 164);
        assert_eq!(r.time_minutes, 2);
        assert!(r.sbatch_args().contains(&"--mem=164M".to_string()));
        let r = Resources::of(&job(None, 0.5, Some(1.5)));
        assert_eq!(r.mem_mib, 256);
        assert_eq!(r.time_minutes, 2);
        assert_eq!(r.topology.cpus_per_task, 2);
    }

    #[test]
    fn topology_maps_to_sbatch_flags() {
        let mut j = job(None, 10.0, None);
        j.topology = Topology {
            nodes: 2,
            ntasks: 8,
            cpus_per_task: 1,
        };
        let args = Resources::of(&j).sbatch_args();
        assert!(args.contains(&"--nodes=2".to_string()));
        assert!(args.contains(&"--ntasks=8".to_string()));
        assert!(args.contains(&"--cpus-per-task=1".to_string()));
    }

    /// The words of the script's command line, unquoted as the shell would.
    fn command_line(script: &str) -> Vec<String> {
        let line = script
            .lines()
            .find(|l| l.contains(".partial 2>"))
            .unwrap_or_else(|| panic!("no command line in {script}"));
        let line = line.split(" > ").next().unwrap_or("");
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("for w in {line}; do printf '%s\\0' \"$w\"; done"))
            .output()
            .expect("run sh");
        String::from_utf8_lossy(&out.stdout)
            .split('\0')
            .filter(|w| !w.is_empty())
            .map(str::to_string)
            .collect()
    }

    #[test]
    fn the_script_runs_the_probe_step_the_job_holds_with_its_lease() {
        let files = CellFiles::new(Path::new("/run/b0"), 3);
        let mut j = job(Some(1 << 20), 5.0, None);
        if let JobStep::Probe(p) = &mut j.step {
            p.sandbox.writable.push("/w/out dir".into());
        }
        let s = cell_script(
            Path::new("/bin/qualify"),
            &j,
            &files,
            Some(Path::new("/run/lease")),
        );
        assert!(s.contains("cd '/w d'"), "{s}");
        assert!(s.contains("export N=4"), "{s}");
        assert!(
            s.contains("mv /run/b0/cell-3.json.partial /run/b0/cell-3.json"),
            "{s}"
        );
        assert!(array_script(Path::new("/run/b0")).contains("cell-\"$SLURM_ARRAY_TASK_ID\".sh"));
        // What the shell hands the binary is the step, with the run's lease.
        let words = command_line(&s);
        assert_eq!(words[0], "/bin/qualify");
        let mut want = probe(Some(1 << 20), 5.0, None);
        want.sandbox.writable.push("/w/out dir".into());
        want.sandbox.pass_env = vec!["SLURM_*".into(), "N".into()];
        want.lease = Some("/run/lease".into());
        assert_eq!(ProbeStep::parse(&words[1..]), Ok(want));
    }

    #[test]
    fn a_service_cell_runs_its_own_step_with_its_state_dir_and_lease() {
        let files = CellFiles::new(Path::new("/run/b0"), 1);
        let mut params = Params::new();
        params.insert("a b", Value::Int(1));
        let step = ServiceCellStep {
            cell: CellStep {
                spec: "/s/qualify.toml".into(),
                params,
                backend: BackendChoice::Auto,
                state_dir: None,
                lease: None,
                overrides: Vec::new(),
                pass_env: Vec::new(),
            },
            histories: None,
            control_noise: None,
        };
        let mut j = job(Some(1 << 20), 5.0, None);
        j.step = JobStep::ServiceCell(step.clone());
        let s = cell_script(
            Path::new("/bin/qualify"),
            &j,
            &files,
            Some(Path::new("/run/lease")),
        );
        assert!(
            !s.contains("--memory"),
            "the step sizes nothing itself: {s}"
        );
        let words = command_line(&s);
        let mut want = step;
        want.cell.state_dir = Some("/run/b0/cell-1.nodes".into());
        want.cell.lease = Some("/run/lease".into());
        assert_eq!(ServiceCellStep::parse(&words[1..]), Ok(want));
    }

    #[test]
    fn a_cell_observing_every_node_runs_the_coordinator() {
        let files = CellFiles::new(Path::new("/run/b0"), 2);
        let mut j = job(Some(1 << 20), 5.0, None);
        if let JobStep::Probe(p) = &mut j.step {
            p.observe_nodes = true;
        }
        let s = cell_script(Path::new("/bin/qualify"), &j, &files, None);
        assert!(
            s.contains("/bin/qualify agent coordinate --nodes-dir=/run/b0/cell-2.nodes --json"),
            "{s}"
        );
        assert!(s.contains("--memory=1048576"), "{s}");
        assert!(
            s.contains("mv /run/b0/cell-2.json.partial /run/b0/cell-2.json"),
            "{s}"
        );
    }
}
