//! A split load on this machine (`[load] generators = N > 1`): [`run`] starts N `qualify
//! load-gen` processes (a [`LoadGenStep`] each; the binary's hidden subcommand's doc is the
//! contract), each
//! offering its share of the plan from one start instant agreed ~[`LEAD`] ahead, drives the
//! cell's observer on that schedule meanwhile (fault windows, the restart, a stop), and merges
//! their reports losslessly (`qualify_load::merge`) into the one report the cell judges.
//!
//! The generators are qualify's own processes, not the artifact: they run unsandboxed in the
//! calling thread's network namespace (a child inherits its forking thread's), are killed if
//! that thread's process dies (`PR_SET_PDEATHSIG`) and when this module returns by any path,
//! and their files live in a temporary directory removed afterwards.
//!
//! On a cluster ([`Placed`], [`run_placed`]) generator `i` runs on its node as a job step
//! (`srun --overlap --nodelist=NODE qualify load-gen … --heartbeat DIR`), its plan and report in
//! the cell's shared state directory, the common start [`LEAD_PLACED`] ahead (a job step takes
//! longer to start than a process); a generator node silent for `qualify_slurm::SILENT_NODE`
//! ends every generator and the load ([`GeneratorsError::LostNode`]: the cell is
//! `interrupted`, naming the node).

use std::fs::File;
use std::net::SocketAddr;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use qualify_load::{Flow, GeneratorReport, LoadPlan, LoadReport, Progress, TICK};
use qualify_model::step::LoadGenStep;

/// How far ahead of now the generators' common start is set: time for N processes to start.
pub const LEAD: Duration = Duration::from_millis(500);
/// The common start's lead for generators started as job steps on other nodes.
pub const LEAD_PLACED: Duration = Duration::from_secs(2);

/// Where a split load's generators run on a cluster.
#[derive(Debug, Clone)]
pub struct Placed {
    /// Generator `i` runs on `nodes[i % nodes.len()]`.
    pub nodes: Vec<String>,
    /// The cell's shared state directory: heartbeats, and `load/` for plans and reports.
    pub state_dir: PathBuf,
}

impl Placed {
    /// The node generator `i` runs on.
    pub fn node(&self, i: u32) -> &str {
        if self.nodes.is_empty() {
            return "";
        }
        &self.nodes[i as usize % self.nodes.len()]
    }
}
/// After the schedule and the last request's timeout, how long generators may take to write
/// their reports before they are killed.
pub const GRACE: Duration = Duration::from_secs(30);

/// Why a split load produced no report.
#[derive(Debug, thiserror::Error)]
pub enum GeneratorsError {
    #[error(
        "[load] generators = {0} needs the qualify binary to start `qualify load-gen`, and this caller named none"
    )]
    NoExecutable(u32),
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
    /// The plan could not be written for the generators (a bug in qualify).
    #[error("serializing the load plan: {0}")]
    Plan(serde_json::Error),
    #[error("the generators' reports do not merge: {0}")]
    Merge(#[from] qualify_load::MergeError),
    /// A generator's node fell silent: the load says nothing about the service.
    #[error("{0}")]
    LostNode(String),
}

fn io(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> GeneratorsError {
    let context = context.into();
    move |source| GeneratorsError::Io { context, source }
}

/// The generator processes; every one still running is killed and reaped on drop.
struct Generators {
    children: Vec<(Child, Option<ExitStatus>)>,
}

impl Generators {
    fn signal(&mut self, signal: libc::c_int) {
        for (child, status) in &mut self.children {
            if status.is_none() {
                // SAFETY: kill(2) on the pid of a child not yet reaped (so not reused).
                unsafe {
                    libc::kill(child.id() as libc::pid_t, signal);
                }
            }
        }
    }

    /// Reap those that ended; whether all have.
    fn reap(&mut self) -> bool {
        for (child, status) in &mut self.children {
            if status.is_none()
                && let Ok(Some(s)) = child.try_wait()
            {
                *status = Some(s);
            }
        }
        self.children.iter().all(|(_, s)| s.is_some())
    }

    fn failed_early(&self) -> bool {
        self.children
            .iter()
            .any(|(_, s)| s.is_some_and(|s| !s.success()))
    }
}

impl Drop for Generators {
    fn drop(&mut self) {
        for (child, status) in &mut self.children {
            if status.is_none() {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
    }
}

/// Run `plan` (with `plan.generators` > 1) against `target` as that many `exe load-gen`
/// processes and return their merged report. `observer` is called every [`TICK`] as the
/// in-process engine calls it (the counts in [`Progress`] are zero: the generators' live
/// counts are not collected); `Flow::Stop` stops every generator's schedule (SIGUSR1),
/// `cancel` cancels them (SIGTERM) — both still yield a report.
pub fn run(
    exe: Option<&Path>,
    plan: &LoadPlan,
    target: SocketAddr,
    cancel: &AtomicBool,
    observer: &mut dyn FnMut(&Progress) -> Flow,
) -> Result<LoadReport, GeneratorsError> {
    run_placed(exe, plan, target, cancel, observer, None)
}

/// [`run`], with the generators on a cluster's nodes when `placed` says where (then also for
/// `plan.generators` = 1).
pub fn run_placed(
    exe: Option<&Path>,
    plan: &LoadPlan,
    target: SocketAddr,
    cancel: &AtomicBool,
    observer: &mut dyn FnMut(&Progress) -> Flow,
    placed: Option<&Placed>,
) -> Result<LoadReport, GeneratorsError> {
    let n = plan.generators.max(1);
    let exe = exe.ok_or(GeneratorsError::NoExecutable(n))?;
    // Here: a temporary directory (removed on return); on a cluster: the shared state directory.
    let (dir, _temporary) = match placed {
        Some(p) => {
            let d = p.state_dir.join("load");
            std::fs::create_dir_all(&d).map_err(io(format!("creating {}", d.display())))?;
            (d, None)
        }
        None => {
            let t = tempfile::Builder::new()
                .prefix("qualify-generators-")
                .tempdir()
                .map_err(io("creating the generators' directory"))?;
            (t.path().to_path_buf(), Some(t))
        }
    };
    let mut beats = placed.map(|p| {
        qualify_slurm::heartbeat::Watch::nodes(
            &p.state_dir,
            &(0..n).map(|i| p.node(i).to_string()).collect::<Vec<_>>(),
        )
    });
    let plan_path = dir.join("plan.json");
    let json = serde_json::to_vec(plan).map_err(GeneratorsError::Plan)?;
    std::fs::write(&plan_path, json).map_err(io(format!("writing {}", plan_path.display())))?;

    let unix_now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    let lead = if placed.is_some() { LEAD_PLACED } else { LEAD };
    let start = Instant::now() + lead;
    let start_at = unix_now + lead.as_secs_f64();
    let measured_start = start + plan.warmup;
    let deadline = measured_start + plan.duration + plan.timeout + GRACE;

    let out = |i: u32| dir.join(format!("generator-{i}.json"));
    let err = |i: u32| dir.join(format!("generator-{i}.stderr"));
    let mut gens = Generators {
        children: Vec::new(),
    };
    for i in 0..n {
        let stderr = File::create(err(i)).map_err(io("creating a generator's stderr file"))?;
        let step = LoadGenStep {
            plan: plan_path.clone(),
            target: target.to_string(),
            index: i,
            of: n,
            out: out(i),
            start_at: Some(start_at),
            heartbeat: placed.map(|p| p.state_dir.clone()),
        };
        let mut cmd = match placed {
            Some(p) => {
                let mut c = Command::new("srun");
                c.arg("--overlap")
                    .arg("--nodes=1")
                    .arg("--ntasks=1")
                    .arg(format!("--nodelist={}", p.node(i)))
                    .arg("--kill-on-bad-exit=0")
                    .arg("--quiet")
                    .arg(format!("--job-name=qualify-gen-{i}"))
                    .arg(exe);
                c
            }
            None => Command::new(exe),
        };
        cmd.args(step.to_argv())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr);
        // SAFETY: prctl is async-signal-safe; nothing else runs between fork and exec.
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        let child = cmd.spawn().map_err(io(format!(
            "starting generator {i} of {n} ({} load-gen)",
            exe.display()
        )))?;
        gens.children.push((child, None));
    }

    let (mut stopped, mut cancelled, mut killed) = (false, false, false);
    let mut lost = None;
    let mut lost_at: Option<Instant> = None;
    while !gens.reap() {
        let now = Instant::now();
        // A step whose node is gone may not end on SIGTERM: its srun is killed soon after.
        if !killed && lost_at.is_some_and(|t| now.duration_since(t) > Duration::from_secs(2)) {
            gens.signal(libc::SIGKILL);
            killed = true;
        }
        if lost.is_none()
            && let Some(watch) = &mut beats
            && let Some((node, d)) = watch.silent(qualify_slurm::SILENT_NODE)
        {
            lost = Some(format!(
                "node {node} (a load generator's) fell silent: no heartbeat for {:.1} s; the node was lost, so the load says nothing about the service",
                d.as_secs_f64()
            ));
            gens.signal(libc::SIGTERM);
            cancelled = true;
            lost_at = Some(now);
        }
        if !cancelled && (cancel.load(Ordering::Relaxed) || gens.failed_early()) {
            // Cancelled, or one generator failed: the merge cannot be whole, end the rest.
            gens.signal(libc::SIGTERM);
            cancelled = true;
        } else if !killed && now > deadline {
            gens.signal(libc::SIGKILL);
            killed = true;
        } else if !stopped && !cancelled {
            let progress = Progress {
                start,
                measured_start,
                elapsed: now.saturating_duration_since(start),
                sent: 0,
                completed: 0,
                errors: 0,
                in_flight: 0,
            };
            if observer(&progress) == Flow::Stop {
                gens.signal(libc::SIGUSR1);
                stopped = true;
            }
        }
        std::thread::sleep(TICK);
    }
    if let Some(why) = lost {
        return Err(GeneratorsError::LostNode(why));
    }
    let reports: Vec<GeneratorReport> = gens
        .children
        .iter()
        .zip(0..n)
        .map(|((_, status), i)| read_report(&out(i), &err(i), i, n, *status))
        .collect();
    Ok(qualify_load::merge(&reports)?)
}

/// Generator `i`'s report, or a failed one saying how it ended and the end of its stderr.
fn read_report(
    out: &PathBuf,
    err: &Path,
    i: u32,
    n: u32,
    status: Option<ExitStatus>,
) -> GeneratorReport {
    let read = std::fs::read_to_string(out)
        .ok()
        .and_then(|t| serde_json::from_str::<GeneratorReport>(&t).ok());
    if let Some(r) = read {
        return r;
    }
    let stderr = std::fs::read_to_string(err).unwrap_or_default();
    let tail: Vec<&str> = stderr.lines().rev().take(5).collect();
    let tail: Vec<&str> = tail.into_iter().rev().collect();
    let how = status.map_or_else(
        || "it never ended".to_string(),
        |s| format!("it ended ({s})"),
    );
    GeneratorReport::failed(
        i,
        n,
        format!(
            "{how} without a report{}",
            if tail.is_empty() {
                String::new()
            } else {
                format!("; stderr: {}", tail.join(" | "))
            }
        ),
    )
}
