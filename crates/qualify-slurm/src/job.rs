//! One cell as a Slurm job: the [`CellJob`] (what `qualify probe` runs inside the allocation),
//! the [`Resources`] it asks Slurm for (memory ceiling → `--mem` plus a margin, timeout →
//! `--time` plus a margin, topology → `--nodes`/`--ntasks`/`--cpus-per-task`), and the shell
//! scripts the job array runs. Cells with equal [`Resources`] share one job array.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use qualify_model::Limits;

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

/// What one cell runs: `qualify probe --json` with these limits on `argv`, in `workdir`, with
/// `env` added.
#[derive(Debug, Clone)]
pub struct CellJob {
    pub argv: Vec<String>,
    pub workdir: PathBuf,
    pub env: Vec<(String, String)>,
    pub limits: Limits,
    /// `qualify probe --backend` (auto, cgroup2, cgroup1, rlimit).
    pub backend: String,
    pub topology: Topology,
    /// `qualify probe --repeat` (runs of the cell inside one job; 1 = once).
    pub repeat: u64,
    /// The sandbox the probe sets up on the node (`--sandbox`, `--network`, `--writable`,
    /// `--readable`, `--hide`, `--user`).
    pub sandbox: qualify_probe::Sandbox,
    /// Observe every node of the allocation: the job runs `qualify agent coordinate` (per-node
    /// agents, the launcher probed on the batch host, one merged result) instead of `qualify
    /// probe`. For cells whose ranks run outside the batch host's process tree (a topology).
    pub observe_nodes: bool,
    /// A qualify step of its own instead of `qualify probe` (e.g. `service-cell …`): the job
    /// runs `qualify <step> --state-dir=<cell-N.nodes> --lease=<lease>`, whose stdout is the
    /// cell's result. The limits then only size the allocation.
    pub step: Option<Vec<String>>,
    /// The job's steps write heartbeats (`<node>.beat` in the cell's state directory): a node
    /// silent for [`crate::SILENT_NODE`] ends the cell `interrupted`, naming the node.
    pub heartbeats: bool,
}

/// The `qualify probe` flags for `sandbox`.
pub fn sandbox_args(sandbox: &qualify_probe::Sandbox) -> Vec<String> {
    let mut out = vec![format!("--sandbox={}", sandbox.mode)];
    if sandbox.mode == qualify_probe::SandboxMode::Off {
        return out;
    }
    let network = match &sandbox.network {
        qualify_probe::Network::None => "none",
        qualify_probe::Network::Host => "host",
        _ => "loopback",
    };
    out.push(format!("--network={network}"));
    let q = |p: &Path| shell_quote(&p.to_string_lossy());
    for w in &sandbox.writable {
        out.push(format!("--writable={}", q(w)));
    }
    for r in &sandbox.readable {
        out.push(format!("--readable={}", q(r)));
    }
    for h in &sandbox.hidden {
        // Homes are hidden by the probe on the node itself.
        if h.role != qualify_probe::Role::Home {
            out.push(format!(
                "--hide={}",
                shell_quote(&format!("{}={}", h.role.as_str(), h.path.to_string_lossy()))
            ));
        }
    }
    if let Some(u) = &sandbox.user {
        out.push(format!("--user={}", shell_quote(u)));
    }
    for p in &sandbox.pass_env {
        out.push(format!("--pass-env={}", shell_quote(p)));
    }
    if sandbox.private_workdir.wanted() {
        out.push("--private-workdir".into());
    }
    out
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

/// The script one array task runs: enter the workdir, set the environment, run
/// `qualify probe --json` (or, observing every node, `qualify agent coordinate --json` with the
/// agents' reports in `cell-N.nodes/`) under the cell's limits (watching the run's `lease`: the
/// cell stops when the submitting qualify is gone), keep its exit status, and publish the result
/// atomically (write, then rename).
pub fn cell_script(
    qualify: &Path,
    job: &CellJob,
    files: &CellFiles,
    lease: Option<&Path>,
) -> String {
    let l = &job.limits;
    let mut probe = vec![shell_quote(&qualify.to_string_lossy())];
    if let Some(step) = &job.step {
        probe.extend(step.iter().map(|a| shell_quote(a)));
        probe.push(format!(
            "--state-dir={}",
            shell_quote(&files.nodes.to_string_lossy())
        ));
        if let Some(lease) = lease {
            probe.push(format!("--lease={}", shell_quote(&lease.to_string_lossy())));
        }
        return script(job, files, &probe);
    }
    if job.observe_nodes {
        probe.extend([
            "agent".to_string(),
            "coordinate".into(),
            format!(
                "--nodes-dir={}",
                shell_quote(&files.nodes.to_string_lossy())
            ),
        ]);
    } else {
        probe.push("probe".into());
    }
    probe.extend([
        "--json".into(),
        format!(
            "--timeout={}ms",
            (l.timeout_seconds * 1000.0).round() as u64
        ),
        format!("--stall={}ms", (l.stall_seconds * 1000.0).round() as u64),
        format!("--progress={}", l.progress),
        format!("--backend={}", shell_quote(&job.backend)),
    ]);
    if let Some(m) = l.memory_bytes {
        probe.push(format!("--memory={m}"));
    }
    if let Some(c) = l.cpus {
        probe.push(format!("--cpus={c}"));
    }
    if let Some(p) = l.pids {
        probe.push(format!("--pids={p}"));
    }
    if let Some(d) = l.disk_bytes {
        probe.push(format!("--disk={d}"));
    }
    if job.repeat > 1 {
        probe.push(format!("--repeat={}", job.repeat));
    }
    if let Some(lease) = lease {
        probe.push(format!("--lease={}", shell_quote(&lease.to_string_lossy())));
    }
    probe.extend(sandbox_args(&job.sandbox));
    if job.sandbox.mode != qualify_probe::SandboxMode::Off {
        // The job's own variables (the launcher finds its allocation through them) and the
        // spec's `env`, which the script exports before the probe starts.
        probe.push("--pass-env=SLURM_*".into());
        for (k, _) in &job.env {
            probe.push(format!("--pass-env={}", shell_quote(k)));
        }
    }
    probe.push("--".into());
    probe.extend(job.argv.iter().map(|a| shell_quote(a)));
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

    fn job(memory: Option<u64>, timeout: f64, cpus: Option<f64>) -> CellJob {
        CellJob {
            argv: vec!["./prog".into(), "it's".into()],
            workdir: "/w d".into(),
            env: vec![("N".into(), "4".into())],
            limits: Limits {
                memory_bytes: memory,
                cpus,
                timeout_seconds: timeout,
                ..Limits::default()
            },
            backend: "auto".into(),
            topology: Topology::default(),
            repeat: 3,
            sandbox: qualify_probe::Sandbox::default(),
            observe_nodes: false,
            step: None,
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
    fn the_sandbox_travels_to_the_node_as_probe_flags() {
        let mut sb = qualify_probe::Sandbox::default();
        sb.writable.push("/w/out dir".into());
        sb.hide(qualify_probe::Role::Key, "/k/key.pem");
        sb.user = Some("nobody".into());
        let args = sandbox_args(&sb);
        assert!(
            args.contains(&"--writable='/w/out dir'".to_string()),
            "{args:?}"
        );
        assert!(
            args.contains(&"--hide=key=/k/key.pem".to_string()),
            "{args:?}"
        );
        assert!(args.contains(&"--user=nobody".to_string()), "{args:?}");
        assert!(!args.iter().any(|a| a.contains("home")), "{args:?}");
        assert_eq!(
            sandbox_args(&qualify_probe::Sandbox::off()),
            vec!["--sandbox=off".to_string()]
        );
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

    #[test]
    fn scripts_quote_what_the_shell_would_split() {
        let files = CellFiles::new(Path::new("/run/b0"), 3);
        let s = cell_script(
            Path::new("/bin/qualify"),
            &job(Some(1 << 20), 5.0, None),
            &files,
            Some(Path::new("/run/lease")),
        );
        assert!(s.contains("cd '/w d'"), "{s}");
        assert!(s.contains("'it'\\''s'"), "{s}");
        assert!(s.contains("--memory=1048576"), "{s}");
        assert!(s.contains("export N=4"), "{s}");
        assert!(s.contains("--repeat=3"), "{s}");
        assert!(s.contains("--lease=/run/lease"), "{s}");
        assert!(s.contains("--sandbox=on --network=loopback"), "{s}");
        assert!(
            s.contains("mv /run/b0/cell-3.json.partial /run/b0/cell-3.json"),
            "{s}"
        );
        assert!(array_script(Path::new("/run/b0")).contains("cell-\"$SLURM_ARRAY_TASK_ID\".sh"));
        assert!(s.contains("/bin/qualify probe --json"), "{s}");
    }

    #[test]
    fn a_cell_with_a_step_of_its_own_runs_it_with_its_state_dir_and_lease() {
        let files = CellFiles::new(Path::new("/run/b0"), 1);
        let mut j = job(Some(1 << 20), 5.0, None);
        j.step = Some(vec!["service-cell".into(), "--params={\"a b\":1}".into()]);
        let s = cell_script(
            Path::new("/bin/qualify"),
            &j,
            &files,
            Some(Path::new("/run/lease")),
        );
        assert!(
            s.contains("/bin/qualify service-cell '--params={\"a b\":1}' --state-dir=/run/b0/cell-1.nodes --lease=/run/lease > /run/b0/cell-1.json.partial"),
            "{s}"
        );
        assert!(
            !s.contains("--memory"),
            "the step sizes nothing itself: {s}"
        );
    }

    #[test]
    fn a_cell_observing_every_node_runs_the_coordinator() {
        let files = CellFiles::new(Path::new("/run/b0"), 2);
        let mut j = job(Some(1 << 20), 5.0, None);
        j.observe_nodes = true;
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
