//! [`SlurmQueue`]: one background thread owns all Slurm traffic. Cells arrive from any number
//! of threads ([`SlurmQueue::run`] blocks its caller until the cell's result is known); cells
//! that arrive within a short window are grouped by [`Resources`] and submitted as one job array
//! per group (`sbatch --parsable --array=0-N`), and the whole run is polled with a single
//! `squeue -h -r -t all -n <run name>` call per interval. Finished tasks are reconciled
//! ([`crate::state::reconcile`]) with the result file their job wrote; tasks still pending after
//! the pending limit are cancelled (one `scancel` call) and reported as not started; on
//! cancellation (Ctrl-C) every job of the run is cancelled with one `scancel -n`.
//!
//! Invariant: every cell handed to [`SlurmQueue::run`] gets exactly one result, also on
//! cancellation, submission failure and shutdown.

use std::collections::{BTreeMap, HashMap};
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use qualify_model::{Limits, ProbeResult};

use crate::job::{CellFiles, CellJob, Resources, Topology, array_script, cell_script};
use crate::lease::LeaseWriter;
use crate::state::{JobState, SlurmVerdict, never_starts, parse_squeue, reconcile};

/// How to submit a run's cells.
#[derive(Debug, Clone)]
pub struct SlurmConfig {
    pub partition: Option<String>,
    pub account: Option<String>,
    pub qos: Option<String>,
    /// Extra `sbatch` arguments, placed last (they override qualify's own).
    pub sbatch_options: Vec<String>,
    /// A task still pending this long after submission is cancelled and reported as not started.
    pub pending_limit: Option<Duration>,
    /// Interval between `squeue` calls.
    pub poll_interval: Duration,
    /// Cells arriving within this window of each other are submitted together.
    pub batch_window: Duration,
    /// The run directory: must be visible at the same path on the compute nodes.
    pub run_dir: PathBuf,
    /// The `qualify` binary the jobs run (same path on the compute nodes).
    pub qualify: PathBuf,
    /// Largest job array qualify submits (Slurm's MaxArraySize is 1001 by default).
    pub max_array: usize,
    /// The job name of every job of this run (how `squeue` and `scancel` find them).
    pub job_name: String,
}

impl SlurmConfig {
    /// Defaults: poll every second, batch cells arriving within 200 ms, arrays of up to 1000.
    pub fn new(run_dir: PathBuf, qualify: PathBuf) -> SlurmConfig {
        let stamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis());
        SlurmConfig {
            partition: None,
            account: None,
            qos: None,
            sbatch_options: Vec::new(),
            pending_limit: None,
            poll_interval: Duration::from_secs(1),
            batch_window: Duration::from_millis(200),
            run_dir,
            qualify,
            max_array: 1000,
            job_name: format!("qualify-{}-{stamp}", std::process::id()),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SlurmError {
    #[error(
        "no Slurm controller answers (`scontrol ping`: {0}); start one (ci/slurm-up.sh for a single-node cluster), or run locally with --executor local"
    )]
    NoController(#[from] PingError),
    #[error("cannot create the Slurm run directory {path}: {source}")]
    RunDir {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Why `scontrol ping` did not say a controller is up.
#[derive(Debug, thiserror::Error)]
pub enum PingError {
    /// It answered, but not `is UP`: its first line (`Slurmctld(primary) at vm is DOWN`).
    #[error("{0}")]
    Down(String),
    /// `scontrol` could not be run (Slurm's client tools are not installed, or not on PATH).
    #[error("cannot run scontrol: {0}")]
    NoScontrol(std::io::Error),
}

/// Whether a Slurm controller answers `scontrol ping` (Err: why not).
pub fn controller_answers() -> Result<(), PingError> {
    match Command::new("scontrol").arg("ping").output() {
        Ok(out) if String::from_utf8_lossy(&out.stdout).contains("is UP") => Ok(()),
        Ok(out) => {
            // The first line says it ("Slurmctld(primary) at vm is DOWN"); a banner follows.
            let text = format!(
                "{}\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            let first = text.lines().map(str::trim).find(|l| !l.is_empty());
            Err(PingError::Down(first.unwrap_or("no answer").to_string()))
        }
        Err(e) => Err(PingError::NoScontrol(e)),
    }
}

enum Msg {
    Cell(Box<CellJob>, mpsc::Sender<ProbeResult>),
    Shutdown,
}

/// Runs cells as Slurm jobs; see the module docs.
pub struct SlurmQueue {
    tx: mpsc::Sender<Msg>,
    thread: Option<JoinHandle<()>>,
    setup_error: Arc<Mutex<Option<String>>>,
}

impl SlurmQueue {
    /// Check that a controller answers, create the run directory and start the thread.
    /// `cancel`, once set, cancels every job of the run and ends all waiting cells `interrupted`.
    pub fn start(config: SlurmConfig, cancel: Arc<AtomicBool>) -> Result<Self, SlurmError> {
        controller_answers()?;
        std::fs::create_dir_all(&config.run_dir).map_err(|source| SlurmError::RunDir {
            path: config.run_dir.clone(),
            source,
        })?;
        // Jobs end by themselves when this process is gone (see `lease`).
        let lease = LeaseWriter::start(config.run_dir.join("lease")).map_err(|source| {
            SlurmError::RunDir {
                path: config.run_dir.join("lease"),
                source,
            }
        })?;
        let (tx, rx) = mpsc::channel();
        let setup_error = Arc::new(Mutex::new(None));
        let worker = Worker {
            lease,
            config,
            cancel,
            setup_error: setup_error.clone(),
            batch: Vec::new(),
            batch_first: Instant::now(),
            batch_last: Instant::now(),
            batches: 0,
            flight: BTreeMap::new(),
            next_poll: Instant::now(),
            cancelled: false,
            failed_polls: 0,
        };
        let thread = std::thread::Builder::new()
            .name("qualify-slurm".into())
            .spawn(move || worker.run(rx))
            .map_err(|source| SlurmError::RunDir {
                path: PathBuf::from("<thread>"),
                source,
            })?;
        Ok(SlurmQueue {
            tx,
            thread: Some(thread),
            setup_error,
        })
    }

    /// Submit `job` and wait for its result.
    pub fn run(&self, job: CellJob) -> ProbeResult {
        let limits = job.limits.clone();
        let (reply, result) = mpsc::channel();
        if self.tx.send(Msg::Cell(Box::new(job), reply)).is_ok()
            && let Ok(r) = result.recv()
        {
            return r;
        }
        not_run(&limits, "the Slurm executor stopped before this cell ran")
    }

    /// The first submission failure (sbatch refused a job), if any: a setup problem, not a
    /// property of the artifact.
    pub fn setup_error(&self) -> Option<String> {
        self.setup_error.lock().ok().and_then(|e| e.clone())
    }
}

impl Drop for SlurmQueue {
    fn drop(&mut self) {
        let _ = self.tx.send(Msg::Shutdown);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A result for a cell that was never submitted or whose job could not be followed.
fn not_run(limits: &Limits, why: &str) -> ProbeResult {
    let verdict = SlurmVerdict {
        job_id: String::new(),
        state: None,
        exit_code: None,
        reason: why.to_string(),
        pending_limit_reached: false,
        unschedulable: false,
        stderr_tail: String::new(),
        allocation: None,
    };
    let mut r = reconcile(&verdict, None, limits);
    r.detail = format!("not probed: {why}");
    r
}

struct Queued {
    job: CellJob,
    reply: mpsc::Sender<ProbeResult>,
}

struct InFlight {
    reply: mpsc::Sender<ProbeResult>,
    limits: Limits,
    files: CellFiles,
    slurm_out: PathBuf,
    submitted: Instant,
    seen: bool,
    allocation: Topology,
    /// The cell's nodes' heartbeats (cells whose steps beat: a service cell).
    beats: Option<crate::heartbeat::Watch>,
}

struct Worker {
    /// Renewed while the run lives; every job's probe watches it.
    lease: LeaseWriter,
    config: SlurmConfig,
    cancel: Arc<AtomicBool>,
    setup_error: Arc<Mutex<Option<String>>>,
    batch: Vec<Queued>,
    /// When the oldest and the newest queued cell arrived.
    batch_first: Instant,
    batch_last: Instant,
    batches: usize,
    /// `"<job>_<task>"` → the cell.
    flight: BTreeMap<String, InFlight>,
    next_poll: Instant,
    cancelled: bool,
    /// Consecutive `squeue` calls that failed.
    failed_polls: u32,
}

/// The longest the thread sleeps, so that Ctrl-C is noticed promptly.
const TICK: Duration = Duration::from_millis(250);
/// Consecutive failed `squeue` calls (about one per second) before the run's jobs are given up.
const MAX_FAILED_POLLS: u32 = 120;
/// A queued cell waits at most this long for others to join its batch.
const MAX_BATCH_AGE: Duration = Duration::from_secs(2);
/// A task squeue never showed is given up for lost after this long.
const UNSEEN_GRACE: Duration = Duration::from_secs(30);

impl Worker {
    fn run(mut self, rx: mpsc::Receiver<Msg>) {
        loop {
            let now = Instant::now();
            let mut wait = TICK;
            if !self.batch.is_empty() {
                wait = wait.min(
                    (self.batch_last + self.config.batch_window).saturating_duration_since(now),
                );
            }
            if !self.flight.is_empty() {
                wait = wait.min(self.next_poll.saturating_duration_since(now));
            }
            match rx.recv_timeout(wait) {
                Ok(Msg::Cell(job, reply)) => {
                    if self.cancelled || self.cancel.load(Ordering::SeqCst) {
                        let _ = reply.send(not_run(&job.limits, "the run was stopping"));
                    } else {
                        if self.batch.is_empty() {
                            self.batch_first = Instant::now();
                        }
                        self.batch.push(Queued { job: *job, reply });
                        self.batch_last = Instant::now();
                    }
                }
                Ok(Msg::Shutdown) | Err(mpsc::RecvTimeoutError::Disconnected) => {
                    self.cancel_all("the run ended before this cell finished");
                    return;
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
            }
            if self.cancel.load(Ordering::SeqCst) && !self.cancelled {
                self.cancel_all("the run was interrupted; its Slurm jobs were cancelled");
                self.cancelled = true;
                continue;
            }
            let now = Instant::now();
            if !self.batch.is_empty()
                && (now >= self.batch_last + self.config.batch_window
                    || now >= self.batch_first + MAX_BATCH_AGE
                    || self.batch.len() >= self.config.max_array * 4)
            {
                self.submit();
            }
            if !self.flight.is_empty() && now >= self.next_poll {
                self.poll();
                self.next_poll = Instant::now() + self.config.poll_interval;
            }
        }
    }

    /// Cancel every job of the run and answer every waiting cell `interrupted`.
    fn cancel_all(&mut self, why: &str) {
        if !self.flight.is_empty() {
            let _ = Command::new("scancel")
                .arg("--name")
                .arg(&self.config.job_name)
                .output();
        }
        for q in self.batch.drain(..) {
            let _ = q.reply.send(not_run(&q.job.limits, why));
        }
        for (id, f) in std::mem::take(&mut self.flight) {
            let verdict = SlurmVerdict {
                job_id: id,
                state: Some(JobState::Cancelled),
                exit_code: None,
                reason: why.to_string(),
                pending_limit_reached: false,
                unschedulable: false,
                stderr_tail: String::new(),
                allocation: Some(f.allocation),
            };
            let mut r = reconcile(&verdict, None, &f.limits);
            r.detail = format!("not probed: {why}");
            let _ = f.reply.send(r);
        }
    }

    /// Submit the queued cells: one job array per group of equal resources (split at
    /// `max_array`).
    fn submit(&mut self) {
        let mut groups: BTreeMap<Resources, Vec<Queued>> = BTreeMap::new();
        for q in self.batch.drain(..) {
            groups.entry(Resources::of(&q.job)).or_default().push(q);
        }
        for (resources, cells) in groups {
            let mut cells = cells;
            while !cells.is_empty() {
                let rest = cells.split_off(cells.len().min(self.config.max_array));
                let chunk = std::mem::replace(&mut cells, rest);
                self.submit_array(&resources, chunk);
            }
        }
    }

    fn submit_array(&mut self, resources: &Resources, cells: Vec<Queued>) {
        let dir = self.config.run_dir.join(format!("batch-{}", self.batches));
        self.batches += 1;
        let prepared = (|| -> std::io::Result<()> {
            std::fs::create_dir_all(&dir)?;
            for (task, q) in cells.iter().enumerate() {
                let files = CellFiles::new(&dir, task);
                std::fs::write(
                    &files.script,
                    cell_script(
                        &self.config.qualify,
                        &q.job,
                        &files,
                        Some(self.lease.path()),
                    ),
                )?;
            }
            std::fs::write(dir.join("array.sh"), array_script(&dir))
        })();
        if let Err(e) = prepared {
            self.refuse(
                cells,
                format!("cannot write job scripts in {}: {e}", dir.display()),
            );
            return;
        }
        let mut cmd = Command::new("sbatch");
        cmd.arg("--parsable")
            .arg(format!("--job-name={}", self.config.job_name))
            .arg(format!("--array=0-{}", cells.len() - 1))
            .arg(format!("--output={}/slurm-%a.out", dir.display()))
            .arg(format!("--chdir={}", dir.display()))
            .args(resources.sbatch_args());
        if let Some(p) = &self.config.partition {
            cmd.arg(format!("--partition={p}"));
        }
        if let Some(a) = &self.config.account {
            cmd.arg(format!("--account={a}"));
        }
        if let Some(q) = &self.config.qos {
            cmd.arg(format!("--qos={q}"));
        }
        cmd.args(&self.config.sbatch_options)
            .arg(dir.join("array.sh"));
        let job_id = match cmd.output() {
            Ok(out) if out.status.success() => {
                let text = String::from_utf8_lossy(&out.stdout);
                // `--parsable` prints `<id>` or `<id>;<cluster>`.
                let id = text.trim().split(';').next().unwrap_or("").to_string();
                if id.is_empty() || !id.bytes().all(|b| b.is_ascii_digit()) {
                    self.refuse(cells, format!("sbatch printed no job id: {}", text.trim()));
                    return;
                }
                id
            }
            Ok(out) => {
                let err = String::from_utf8_lossy(&out.stderr).trim().to_string();
                if err.contains("Requested node configuration is not available")
                    || err.contains("More processors requested than permitted")
                    || err.contains("Node count specification invalid")
                {
                    // The cluster cannot host this cell's shape: not examined, not a setup error.
                    for q in cells {
                        let why = format!(
                            "the cluster cannot host this allocation ({}): {err}",
                            resources.sbatch_args().join(" ")
                        );
                        let _ = q.reply.send(not_run(&q.job.limits, &why));
                    }
                    return;
                }
                self.refuse(
                    cells,
                    format!(
                        "sbatch refused the job ({}): {err}; check [executor] partition/account/qos/sbatch_options",
                        resources.sbatch_args().join(" ")
                    ),
                );
                return;
            }
            Err(e) => {
                self.refuse(cells, format!("cannot run sbatch: {e}"));
                return;
            }
        };
        let submitted = Instant::now();
        for (task, q) in cells.into_iter().enumerate() {
            self.flight.insert(
                format!("{job_id}_{task}"),
                InFlight {
                    reply: q.reply,
                    limits: q.job.limits,
                    files: CellFiles::new(&dir, task),
                    slurm_out: dir.join(format!("slurm-{task}.out")),
                    submitted,
                    seen: false,
                    allocation: resources.topology,
                    beats: q
                        .job
                        .heartbeats
                        .then(|| crate::heartbeat::Watch::all(&CellFiles::new(&dir, task).nodes)),
                },
            );
        }
    }

    fn refuse(&mut self, cells: Vec<Queued>, why: String) {
        if let Ok(mut e) = self.setup_error.lock() {
            e.get_or_insert_with(|| why.clone());
        }
        for q in cells {
            let _ = q.reply.send(not_run(&q.job.limits, &why));
        }
    }

    /// One `squeue` call for the whole run; finish what has ended.
    fn poll(&mut self) {
        let out = Command::new("squeue")
            .args(["-h", "-r", "-t", "all", "-o", "%i|%T|%r", "-n"])
            .arg(&self.config.job_name)
            .output();
        let states: HashMap<String, (JobState, String)> = match out {
            Ok(o) if o.status.success() => parse_squeue(&String::from_utf8_lossy(&o.stdout)),
            // A controller hiccup: try again next interval; give up after a while.
            _ => {
                self.failed_polls += 1;
                if self.failed_polls >= MAX_FAILED_POLLS {
                    self.cancel_all("the Slurm controller stopped answering squeue");
                    self.failed_polls = 0;
                }
                return;
            }
        };
        self.failed_polls = 0;
        let now = Instant::now();
        // (task, final state, reason, pending limit reached, unschedulable)
        let mut done: Vec<(String, Option<JobState>, String, bool, bool)> = Vec::new();
        let mut overdue = Vec::new();
        for (id, f) in self.flight.iter_mut() {
            match states.get(id) {
                Some((state, reason)) => {
                    f.seen = true;
                    let completing = matches!(state, JobState::Active(s) if s == "COMPLETING")
                        && f.files.status.exists();
                    if state.is_final() || completing {
                        done.push((
                            id.clone(),
                            Some(state.clone()),
                            reason.clone(),
                            false,
                            false,
                        ));
                    } else if *state == JobState::Pending && never_starts(reason) {
                        overdue.push(id.clone());
                        done.push((id.clone(), None, reason.clone(), false, true));
                    } else if *state == JobState::Pending
                        && let Some(limit) = self.config.pending_limit
                        && now.duration_since(f.submitted) >= limit
                    {
                        overdue.push(id.clone());
                        done.push((id.clone(), None, reason.clone(), true, false));
                    }
                }
                None if f.seen || now.duration_since(f.submitted) >= UNSEEN_GRACE => {
                    done.push((
                        id.clone(),
                        None,
                        "no longer known to squeue".into(),
                        false,
                        false,
                    ));
                }
                None => {}
            }
        }
        // A node of a beating cell that fell silent: the cell is interrupted, naming it (its
        // job is cancelled; what it might still write is not waited for).
        let mut lost = Vec::new();
        for (id, f) in self.flight.iter_mut() {
            if done.iter().any(|(d, ..)| d == id) || f.files.status.exists() {
                continue;
            }
            if let Some(watch) = &mut f.beats
                && let Some((node, silent)) = watch.silent(crate::heartbeat::SILENT_NODE)
            {
                lost.push((id.clone(), node, silent));
            }
        }
        for (id, node, silent) in lost {
            overdue.push(id.clone());
            if let Some(f) = self.flight.remove(&id) {
                let why = format!(
                    "node {node} fell silent (no heartbeat for {:.1} s): the node was lost, so the cell says nothing about the service",
                    silent.as_secs_f64()
                );
                let mut r = not_run(&f.limits, &why);
                r.outcome = qualify_model::Outcome::Interrupted;
                r.detail = why;
                r.evidence["lost_node"] = serde_json::json!(node);
                let placed = f.files.nodes.join(crate::heartbeat::EVIDENCE_FILE);
                if let Some(cluster) = std::fs::read(&placed)
                    .ok()
                    .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
                {
                    r.evidence["cluster"] = cluster;
                }
                let _ = f.reply.send(r);
            }
        }
        if !overdue.is_empty() {
            let _ = Command::new("scancel").args(&overdue).output();
        }
        for (id, state, reason, pending, unschedulable) in done {
            let Some(f) = self.flight.remove(&id) else {
                continue;
            };
            let exit_code = std::fs::read_to_string(&f.files.status)
                .ok()
                .and_then(|s| s.trim().parse().ok());
            let probe: Option<ProbeResult> = std::fs::read(&f.files.result)
                .ok()
                .and_then(|b| serde_json::from_slice(&b).ok());
            let stderr_tail = if probe.is_none() {
                let mut t = tail(&f.files.stderr);
                t.push_str(&tail(&f.slurm_out));
                t
            } else {
                String::new()
            };
            let verdict = SlurmVerdict {
                job_id: id,
                state,
                exit_code,
                reason,
                pending_limit_reached: pending,
                unschedulable,
                stderr_tail,
                allocation: Some(f.allocation),
            };
            let _ = f.reply.send(reconcile(&verdict, probe, &f.limits));
        }
    }
}

/// The last 2 KiB of a file (empty when it cannot be read).
fn tail(path: &Path) -> String {
    let Ok(mut f) = std::fs::File::open(path) else {
        return String::new();
    };
    let len = f.metadata().map_or(0, |m| m.len());
    let _ = f.seek(SeekFrom::Start(len.saturating_sub(2048)));
    let mut s = String::new();
    let _ = f.read_to_string(&mut s);
    s
}
