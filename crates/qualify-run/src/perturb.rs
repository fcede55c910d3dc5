//! Where the two engines meet for schedule perturbation: [`ProbeLaunch`] runs one perturbed
//! (or bare) run of a cell as a probe for `qualify_perturb`'s campaign — the shim preloaded
//! through the spec's environment, made readable in the sandbox, its log bound writable, the
//! deadline extended by the most delay perturbation may add, and the probe's [`Control`] handed
//! to the scheduler-level perturbation as its [`Tree`]. [`campaign`] runs a whole campaign for
//! `qualify probe --perturb` and `[perturb]` cells (its human summary is
//! `qualify_render::terminal::campaign`).

use std::sync::Arc;
use std::time::Duration;

use qualify_model::PerturbReport;
use qualify_perturb::{Campaign, Ended, Launch, Plan, Setup, Shim, Tree};
use qualify_probe::{CancelToken, Control, Outcome, ProbeError, ProbeResult, ProbeSpec};

use crate::error::Error;

/// A probe's tree, as the scheduler-level perturbation sees it.
struct ProbeTree(Arc<Control>);

impl Tree for ProbeTree {
    fn pids(&self) -> Vec<i32> {
        self.0.members()
    }
    /// The cgroup freezer where the tree has one (nothing the program can see); SIGSTOP else.
    fn freeze(&self) -> bool {
        self.0.set_frozen(true) || self.0.signal_tree(libc::SIGSTOP).is_ok()
    }
    fn thaw(&self) {
        if !self.0.set_frozen(false) {
            let _ = self.0.signal_tree(libc::SIGCONT);
        }
    }
    fn cpu_cgroup(&self) -> Option<std::path::PathBuf> {
        self.0.cpu_cgroup()
    }
}

/// This thread confined to one CPU until dropped (then its CPUs as before): what a probe
/// started meanwhile inherits.
struct Confined(libc::cpu_set_t);

impl Confined {
    /// Confine to the n-th CPU this thread may use (wrapping), or `None` when it cannot.
    fn to_nth(n: u32) -> Option<Confined> {
        // SAFETY: a zeroed cpu_set_t is valid; the kernel fills it.
        let mut old: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        // SAFETY: valid pointer and size; 0 is this thread.
        if unsafe { libc::sched_getaffinity(0, std::mem::size_of_val(&old), &mut old) } != 0 {
            return None;
        }
        let cpus: Vec<usize> = (0..libc::CPU_SETSIZE as usize)
            // SAFETY: index within the set.
            .filter(|&c| unsafe { libc::CPU_ISSET(c, &old) })
            .collect();
        let cpu = *cpus.get(n as usize % cpus.len().max(1))?;
        // SAFETY: as above.
        let mut one: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        // SAFETY: index within the set.
        unsafe { libc::CPU_SET(cpu, &mut one) };
        // SAFETY: valid pointer and size.
        (unsafe { libc::sched_setaffinity(0, std::mem::size_of_val(&one), &one) } == 0)
            .then_some(Confined(old))
    }
}

impl Drop for Confined {
    fn drop(&mut self) {
        // SAFETY: valid pointer and size; restores this thread's own CPUs.
        unsafe { libc::sched_setaffinity(0, std::mem::size_of_val(&self.0), &self.0) };
    }
}

/// Runs a cell's probe for the campaign; keeps the first failing perturbed run's full result
/// (the campaign's representative) and the last one.
pub struct ProbeLaunch<'a> {
    spec: ProbeSpec,
    cancel: &'a CancelToken,
    /// Print each run's line on stderr.
    verbose: bool,
    pub first_failure: Option<ProbeResult>,
    pub last: Option<ProbeResult>,
}

impl<'a> ProbeLaunch<'a> {
    pub fn new(spec: ProbeSpec, cancel: &'a CancelToken, verbose: bool) -> ProbeLaunch<'a> {
        ProbeLaunch {
            spec,
            cancel,
            verbose,
            first_failure: None,
            last: None,
        }
    }
}

/// `LD_PRELOAD` with the shim first and whatever the program would have had after it.
fn preload(spec: &ProbeSpec, shim: &str) -> String {
    let existing = spec
        .env
        .iter()
        .rev()
        .find(|(k, _)| k == "LD_PRELOAD")
        .map(|(_, v)| v.to_string_lossy().into_owned())
        .or_else(|| std::env::var("LD_PRELOAD").ok())
        .filter(|v| !v.trim().is_empty());
    match existing {
        Some(e) => format!("{shim} {e}"),
        None => shim.to_string(),
    }
}

impl Launch for ProbeLaunch<'_> {
    type Error = ProbeError;

    fn launch(
        &mut self,
        setup: &Setup,
        on_start: &mut dyn FnMut(Arc<dyn Tree>),
    ) -> Result<Ended, ProbeError> {
        let mut spec = self.spec.clone();
        for (k, v) in &setup.env {
            let v = if k == "LD_PRELOAD" {
                preload(&self.spec, v)
            } else {
                v.clone()
            };
            spec.env.push((k.into(), v.into()));
        }
        spec.sandbox.readable.extend(setup.readable.iter().cloned());
        spec.shared_files.extend(setup.shared.iter().cloned());
        spec.limits.timeout_seconds += setup.extra_time.as_secs_f64();
        let control = Arc::new(Control::default());
        spec.control = Some(Arc::clone(&control));
        on_start(Arc::new(ProbeTree(control)));
        // The cell's init and the program inherit this thread's CPUs at their start.
        let _confined = setup.start_cpu.and_then(Confined::to_nth);
        let r = qualify_probe::probe(&spec, self.cancel);
        drop(_confined);
        let r = r?;
        let ended = Ended {
            outcome: r.outcome,
            timeout_kind: r.timeout_kind,
            detail: r.detail.clone(),
            wall_seconds: r.wall_seconds,
        };
        let perturbed = setup.perturbs();
        if perturbed
            && self.first_failure.is_none()
            && qualify_perturb::campaign::failure_kind(&ended).is_some()
        {
            self.first_failure = Some(r.clone());
        }
        self.last = Some(r);
        Ok(ended)
    }

    fn cancelled(&self) -> bool {
        self.cancel.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn cell_timeout(&self) -> Duration {
        Duration::from_secs_f64(self.spec.limits.timeout_seconds.max(0.0))
    }

    fn progress(&mut self, line: &str) {
        if self.verbose {
            eprintln!("{line}");
        }
    }
}

/// Run `plan` on `spec`: the campaign's report, and a representative result (the first
/// failing perturbed run, else the last run), when any run was made.
pub fn report(
    spec: &ProbeSpec,
    plan: Plan,
    cancel: &CancelToken,
    verbose: bool,
) -> Result<(PerturbReport, Option<ProbeResult>), Error> {
    let shim = Shim::install(&Shim::default_dir());
    let mut launch = ProbeLaunch::new(spec.clone(), cancel, verbose);
    let report = Campaign::new(
        &mut launch,
        plan,
        shim,
        qualify_perturb::log::LogFile::default_dir(),
    )
    .run()
    .map_err(|e| match e {
        qualify_perturb::campaign::Failed::Setup(e) => Error::Perturb { source: e },
        qualify_perturb::campaign::Failed::Launch(e) => {
            Error::probe("a perturbed run could not be probed", e)
        }
    })?;
    let representative = launch.first_failure.take().or(launch.last.take());
    Ok((report, representative))
}

/// [`report`] as one result: the representative run carrying the report (`qualify probe
/// --perturb`).
pub fn campaign(
    spec: &ProbeSpec,
    plan: Plan,
    cancel: &CancelToken,
    verbose: bool,
) -> Result<ProbeResult, Error> {
    let (report, representative) = report(spec, plan, cancel, verbose)?;
    let mut r = representative
        .unwrap_or_else(|| spec.not_run("no perturbed run was made: qualify was stopping"));
    if let Some(head) = report.headline() {
        r.detail = format!("{head}; this run: {}", r.detail);
    } else if r.outcome == Outcome::Ok {
        r.detail = format!(
            "{} perturbed runs, none failed ({} slowed); {}",
            report.runs, report.slowed, r.detail
        );
    }
    r.perturb = Some(report);
    Ok(r)
}

/// `qualify probe [the limits that matter] {flags} -- COMMAND`, shell-quoted.
pub fn replay_command(spec: &ProbeSpec, budget: &std::time::Duration) -> String {
    let quote = |s: &str| {
        if !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_./=:,+@".contains(&b))
        {
            s.to_string()
        } else {
            format!("'{}'", s.replace('\'', "'\\''"))
        }
    };
    let mut parts = vec!["qualify probe".to_string()];
    let l = &spec.limits;
    let d = qualify_probe::Limits::default();
    if l.stall_seconds != d.stall_seconds {
        parts.push(format!("--stall {}s", l.stall_seconds));
    }
    if l.timeout_seconds != d.timeout_seconds {
        parts.push(format!("--timeout {}s", l.timeout_seconds));
    }
    if *budget != std::time::Duration::from_secs(1) {
        parts.push(format!("--perturb-budget {}ms", budget.as_millis()));
    }
    parts.push("{flags}".into());
    parts.push("--".into());
    for a in &spec.argv {
        parts.push(quote(&a.to_string_lossy()));
    }
    parts.join(" ")
}

/// The campaign `[perturb]` asks of a cell whose probe is `spec`.
pub fn plan_of(p: &qualify_spec::Perturb, spec: &ProbeSpec) -> Plan {
    Plan {
        runs: p.runs,
        modes: p.modes.clone(),
        seed: p.seed,
        replays: p.replays,
        minimise: p.minimise,
        depth: p.depth,
        shim_budget: p.budget,
        cpus: qualify_probe::allowed_cpus(),
        command: replay_command(spec, &p.budget),
        ..Plan::default()
    }
}
