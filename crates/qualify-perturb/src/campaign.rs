//! A cell's perturbation campaign: many runs, each with its own seed and [`Recipe`], then, for
//! each way they failed, the first failing seed replayed N times (its reproduction rate) beside
//! N bare runs (the bare rate), and the failure minimised to the points that matter. Counts,
//! not anecdotes: the result is a [`PerturbReport`].
//!
//! The campaign never runs the program itself: the caller's [`Launch`] does (the binary runs a
//! probe), given the [`Setup`] of each run (environment, the shim's path to make readable, the
//! log to make writable, the extra time the deadline gets). The scheduler-level perturbation
//! starts on the [`Tree`] the launch hands back as the program starts.
//!
//! What counts as a failure: any outcome but `ok` and `interrupted`, except a timeout whose
//! tree was making progress, busy or idle — perturbation may slow a correct program down, and
//! a perturbed run's deadline is the cell's plus the most delay perturbation may add, so such
//! a timeout is counted as `slowed`, never as a failure. Timeouts that look stuck
//! (`ambiguous_*`) and every other outcome count.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use qualify_model::perturb::{
    Deadline, MechanismUse, Minimised, PerturbFailure, PerturbRun, PointNote,
};
use qualify_model::{Outcome, PerturbMode, PerturbReport, Rate, TimeoutKind};

use crate::log::{Action, LogFile, Point, ShimLog};
use crate::recipe::{Knowledge, Recipe, ShimPlan, run_seed, seed_text};
use crate::sched::{Chaos, SchedReport, Tree};
use crate::shim::{self, Shim};

/// What one run of the cell needs besides the cell's own spec.
#[derive(Debug, Clone, Default)]
pub struct Setup {
    /// Added to the program's environment.
    pub env: Vec<(String, String)>,
    /// Made readable inside the sandbox (the shim).
    pub readable: Vec<PathBuf>,
    /// Files the program writes for qualify (the shim's log): bound writable into the sandbox.
    pub shared: Vec<PathBuf>,
    /// Added to the cell's deadline (the most delay this run's perturbation may add).
    pub extra_time: Duration,
    /// Start the program confined to the n-th CPU it may use (an affinity squeeze from exec).
    pub start_cpu: Option<u32>,
}

impl Setup {
    /// Whether anything perturbs the run (a bare run's setup is empty).
    pub fn perturbs(&self) -> bool {
        !self.env.is_empty() || !self.extra_time.is_zero() || self.start_cpu.is_some()
    }
}

/// How one run ended, as the campaign needs it.
#[derive(Debug, Clone, PartialEq)]
pub struct Ended {
    pub outcome: Outcome,
    pub timeout_kind: Option<TimeoutKind>,
    pub detail: String,
    pub wall_seconds: f64,
}

/// Runs the cell once (the binary: one probe).
pub trait Launch {
    type Error;
    /// Run once with `setup`; call `on_start` with the tree before the program is waited for
    /// (from the launching thread: the scheduler-level perturbation waits for its pids).
    fn launch(
        &mut self,
        setup: &Setup,
        on_start: &mut dyn FnMut(Arc<dyn Tree>),
    ) -> Result<Ended, Self::Error>;
    /// qualify is stopping: no further run.
    fn cancelled(&self) -> bool;
    /// The cell's own deadline.
    fn cell_timeout(&self) -> Duration;
    /// One line about the campaign's progress (a run ended, a replay began).
    fn progress(&mut self, _line: &str) {}
}

/// The campaign's settings.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Perturbed runs.
    pub runs: u64,
    /// Modes the runs rotate through.
    pub modes: Vec<PerturbMode>,
    /// The campaign's seed.
    pub seed: u64,
    /// N: replays of each failing seed, and bare runs beside them.
    pub replays: u64,
    pub minimise: bool,
    /// Tests (each `min(replays, 10)` replays) minimisation may spend per failure.
    pub minimise_tests: usize,
    /// PCT's depth.
    pub depth: u32,
    /// PCT's steps, when fixed (a replay); learned from the runs otherwise.
    pub steps: Option<u64>,
    /// Stop at the first failure (runs to first failure).
    pub stop_at_first: bool,
    /// Most delay the shim may add to one run (all threads together).
    pub shim_budget: Duration,
    /// Most time freezes and quota bursts may stop one run.
    pub sched_budget: Duration,
    /// Replay exactly this recipe `runs` times (`--seed`).
    pub replay: Option<Recipe>,
    /// CPUs the program may use.
    pub cpus: usize,
    /// The command that replays a recipe, with `{flags}` where its flags go.
    pub command: String,
    /// Keep every run in the report's `run_list`.
    pub list_runs: bool,
}

impl Default for Plan {
    fn default() -> Plan {
        Plan {
            runs: 100,
            modes: PerturbMode::ALL.to_vec(),
            seed: 1,
            replays: 20,
            minimise: true,
            minimise_tests: 24,
            depth: 3,
            steps: None,
            stop_at_first: false,
            shim_budget: Duration::from_secs(1),
            sched_budget: Duration::from_millis(500),
            replay: None,
            cpus: 1,
            command: "qualify probe {flags} -- …".into(),
            list_runs: false,
        }
    }
}

/// One run's observations.
struct Observed {
    ended: Ended,
    log: ShimLog,
    sched: Option<SchedReport>,
    shim_used: bool,
}

/// A way of failing: the outcome, and a timeout's kind.
type Kind = (Outcome, Option<TimeoutKind>);

/// A failure's first run and count.
struct Found {
    first_run: u64,
    count: u64,
    /// Later failing runs' `seed mode` (bounded).
    others: Vec<String>,
    recipe: Recipe,
    detail: String,
    log: ShimLog,
}

/// Whether `e` is a failure of the program, and which.
pub fn failure_kind(e: &Ended) -> Option<(Outcome, Option<TimeoutKind>)> {
    match e.outcome {
        Outcome::Ok | Outcome::Interrupted => None,
        Outcome::Timeout => match e.timeout_kind {
            Some(k @ (TimeoutKind::AmbiguousSpin | TimeoutKind::AmbiguousWait)) => {
                Some((Outcome::Timeout, Some(k)))
            }
            _ => None,
        },
        o => Some((o, None)),
    }
}

fn slowed(e: &Ended) -> bool {
    e.outcome == Outcome::Timeout && failure_kind(e).is_none()
}

/// Mechanism tallies over the campaign.
#[derive(Default)]
struct Tally {
    uses: BTreeMap<String, MechanismUse>,
}

impl Tally {
    fn add(&mut self, name: &str, times: u64) {
        let u = self.uses.entry(name.to_string()).or_insert(MechanismUse {
            name: name.to_string(),
            runs: 0,
            times: 0,
            not_applied: 0,
            why_not: None,
        });
        if times > 0 {
            u.runs += 1;
            u.times += times;
        }
    }

    fn refuse(&mut self, name: &str, why: &str) {
        self.add(name, 0);
        if let Some(u) = self.uses.get_mut(name) {
            u.not_applied += 1;
            u.why_not = Some(why.to_string());
        }
    }
}

/// The campaign over one cell.
pub struct Campaign<'a, L: Launch> {
    launch: &'a mut L,
    plan: Plan,
    shim: Option<Shim>,
    /// Why there is no shim, when there is none.
    no_shim: Option<String>,
    log_dir: PathBuf,
}

/// `thread 2 delayed 40 µs before pthread_mutex_lock(0x5581…) at lock.c:17`.
pub fn point_sentence(p: &Point, at: Option<&str>) -> String {
    let who = if p.process == 0 {
        format!("thread {}", p.thread)
    } else {
        format!("process {} thread {}", p.process, p.thread)
    };
    let what = match p.action {
        Action::Sleep => format!("delayed {} µs", p.micros),
        Action::Hold => format!("held {} µs (PCT priority)", p.micros),
        Action::Yield => "yielded".to_string(),
        Action::Priority => format!("dropped to priority {}", p.micros),
    };
    let when = if p.after { "after" } else { "before" };
    let place = at.map(|a| format!(" at {a}")).unwrap_or_default();
    format!("{who} {what} {when} {}({:#x}){place}", p.call, p.object)
}

impl<'a, L: Launch> Campaign<'a, L> {
    /// A campaign with the shim installed in `shim` (or, when it could not be, why not: the
    /// shim's modes then run as scheduler-level perturbation, stated), logs in `log_dir`.
    pub fn new(
        launch: &'a mut L,
        plan: Plan,
        shim: Result<Shim, crate::PerturbError>,
        log_dir: PathBuf,
    ) -> Campaign<'a, L> {
        let (shim, no_shim) = match shim {
            Ok(s) => (Some(s), None),
            Err(why) => (None, Some(why.to_string())),
        };
        Campaign {
            launch,
            plan,
            shim,
            no_shim,
            log_dir,
        }
    }

    fn setup(&self, recipe: &Recipe) -> Result<(Setup, Option<LogFile>), crate::PerturbError> {
        let mut setup = Setup::default();
        let mut log = None;
        let shim_wanted = !matches!(recipe.shim, ShimPlan::Off);
        if let (true, Some(shim)) = (shim_wanted, &self.shim) {
            shim.verify()?;
            let list: &[Point] = match &recipe.shim {
                ShimPlan::List(points) => points,
                _ => &[],
            };
            let file = LogFile::create(&self.log_dir, list)?;
            let budget = self.plan.shim_budget.as_micros() as u64;
            if let Some(conf) = recipe.shim_config(file.path(), budget) {
                setup
                    .env
                    .push(("LD_PRELOAD".into(), shim.path().display().to_string()));
                setup.env.push((shim::ENV.into(), conf));
                setup.readable.push(shim.path().to_path_buf());
                setup.shared.push(file.path().to_path_buf());
                setup.extra_time += self.plan.shim_budget;
            }
            log = Some(file);
        }
        if recipe.sched {
            if let Some(g) = recipe.gomaxprocs {
                setup.env.push(("GOMAXPROCS".into(), g.to_string()));
            }
            setup.start_cpu = recipe.start_cpu;
            setup.extra_time += 2 * self.plan.sched_budget;
        }
        Ok((setup, log))
    }

    fn run_one(
        &mut self,
        recipe: &Recipe,
    ) -> Result<Result<Observed, L::Error>, crate::PerturbError> {
        let (setup, log) = self.setup(recipe)?;
        let mut chaos: Option<Chaos> = None;
        let seed = recipe.seed;
        let budget = self.plan.sched_budget;
        let sched = recipe.sched;
        let ended = self.launch.launch(&setup, &mut |tree| {
            if sched {
                chaos = Some(Chaos::start(seed, budget, tree));
            }
        });
        let sched_report = chaos.map(Chaos::stop);
        let ended = match ended {
            Ok(e) => e,
            Err(e) => return Ok(Err(e)),
        };
        let shim_log = log.as_ref().map(LogFile::read).unwrap_or_default();
        Ok(Ok(Observed {
            ended,
            log: shim_log,
            sched: sched_report,
            shim_used: log.is_some(),
        }))
    }

    /// What applied in `o`, into `tally`, and as one line.
    fn account(&self, recipe: &Recipe, o: &Observed, tally: &mut Tally) -> String {
        let mut parts = Vec::new();
        let shim_name = match &recipe.shim {
            ShimPlan::Pct { .. } => Some("shim pct"),
            ShimPlan::Noise { .. } => Some("shim noise"),
            ShimPlan::List(_) => Some("shim list"),
            ShimPlan::Off => None,
        };
        if let Some(name) = shim_name {
            if !o.shim_used {
                let why = self
                    .no_shim
                    .clone()
                    .unwrap_or_else(|| "the shim is not installed".into());
                tally.refuse(name, &why);
                parts.push(format!("{name}: not run ({why})"));
            } else if !o.log.loaded() {
                let why = "the shim did not load in the program (a static binary, a runtime \
                           that does not use libc's pthreads, or LD_PRELOAD cleared)";
                tally.refuse(name, why);
                parts.push(format!("{name}: not loaded"));
            } else {
                let delays = o.log.delays().count() as u64;
                tally.add(name, delays.max(1));
                parts.push(format!(
                    "{name}: {} process(es), {} steps, {delays} points, {} µs",
                    o.log.processes.len(),
                    o.log.steps,
                    o.log.spent_us
                ));
            }
        }
        if let Some(s) = &o.sched {
            for (k, n) in &s.applied {
                tally.add(k, *n);
            }
            for (k, why) in &s.refused {
                if !s.applied.contains_key(k) {
                    tally.refuse(k, why);
                }
            }
            parts.push(format!("sched: {}", s.summary()));
        }
        if let Some(g) = recipe.gomaxprocs {
            tally.add("GOMAXPROCS (environment)", 1);
            parts.push(format!("GOMAXPROCS={g}"));
        }
        if let Some(c) = recipe.start_cpu {
            tally.add(crate::sched::START_SQUEEZE, 1);
            parts.push(format!("started on CPU #{c}"));
        }
        parts.join("; ")
    }

    /// Run `recipe` `n` times: how often it failed as `kind`.
    fn rate(
        &mut self,
        recipe: Option<&Recipe>,
        n: u64,
        kind: Kind,
    ) -> Result<Option<Rate>, Failed<L::Error>> {
        let mut failed = 0;
        let mut runs = 0;
        for _ in 0..n {
            if self.launch.cancelled() {
                return Ok(None);
            }
            let ended = match recipe {
                Some(r) => {
                    self.run_one(r)
                        .map_err(Failed::Setup)?
                        .map_err(Failed::Launch)?
                        .ended
                }
                None => self
                    .launch
                    .launch(&Setup::default(), &mut |_| {})
                    .map_err(Failed::Launch)?,
            };
            if ended.outcome == Outcome::Interrupted {
                return Ok(None);
            }
            runs += 1;
            if failure_kind(&ended) == Some(kind) {
                failed += 1;
            }
        }
        Ok(Some(Rate::wilson(failed, runs)))
    }

    /// Run the campaign.
    pub fn run(mut self) -> Result<PerturbReport, Failed<L::Error>> {
        let plan = self.plan.clone();
        let mut known = Knowledge {
            steps: plan.steps,
            depth: plan.depth,
            shim_reaches: self.shim.is_none().then_some(false),
        };
        let mut tally = Tally::default();
        let mut outcomes: BTreeMap<String, u64> = BTreeMap::new();
        let mut found: Vec<(Kind, Found)> = Vec::new();
        let mut slowed_runs = 0u64;
        let mut run_list = Vec::new();
        let mut stopped = None;
        let mut done = 0u64;
        let mut extra = Duration::ZERO;
        let modes = if plan.modes.is_empty() {
            PerturbMode::ALL.to_vec()
        } else {
            plan.modes.clone()
        };
        let started = Instant::now();
        for i in 0..plan.runs {
            if self.launch.cancelled() {
                stopped = Some("qualify was interrupted".to_string());
                break;
            }
            let mode = modes[(i % modes.len() as u64) as usize];
            let recipe = match &plan.replay {
                Some(r) => r.clone(),
                None => Recipe::derive(mode, run_seed(plan.seed, i), &known, plan.cpus),
            };
            extra = extra.max(self.setup_extra(&recipe));
            let o = self
                .run_one(&recipe)
                .map_err(Failed::Setup)?
                .map_err(Failed::Launch)?;
            if o.ended.outcome == Outcome::Interrupted {
                stopped = Some("qualify was interrupted".to_string());
                break;
            }
            done += 1;
            if o.shim_used {
                let reached = o.log.loaded();
                known.shim_reaches = Some(known.shim_reaches == Some(true) || reached);
                if plan.steps.is_none() && reached {
                    known.steps = Some(known.steps.unwrap_or(0).max(o.log.steps));
                }
            }
            let applied = self.account(&recipe, &o, &mut tally);
            *outcomes.entry(o.ended.outcome.to_string()).or_default() += 1;
            if slowed(&o.ended) {
                slowed_runs += 1;
            }
            self.launch.progress(&format!(
                "perturbed run {}/{}: seed {} {}: {} ({:.2} s) [{applied}]",
                i + 1,
                plan.runs,
                recipe.seed_text(),
                recipe.label(),
                o.ended.outcome,
                o.ended.wall_seconds
            ));
            if plan.list_runs {
                run_list.push(PerturbRun {
                    seed: recipe.seed_text(),
                    mode: recipe.label(),
                    outcome: o.ended.outcome,
                    wall_seconds: o.ended.wall_seconds,
                    applied,
                });
            }
            if let Some(kind) = failure_kind(&o.ended) {
                match found.iter_mut().find(|(k, _)| *k == kind) {
                    Some((_, f)) => {
                        f.count += 1;
                        if f.others.len() < 16 && plan.replay.is_none() {
                            f.others
                                .push(format!("{} {}", recipe.seed_text(), recipe.label()));
                        }
                    }
                    None => found.push((
                        kind,
                        Found {
                            first_run: i,
                            count: 1,
                            others: Vec::new(),
                            recipe: recipe.clone(),
                            detail: o.ended.detail.clone(),
                            log: o.log,
                        },
                    )),
                }
                if plan.stop_at_first {
                    stopped = Some(format!("stopped at the first failure (run {})", i + 1));
                    break;
                }
            }
        }
        let elapsed = started.elapsed().as_secs_f64();
        let runs_per_second = if elapsed > 0.0 {
            done as f64 / elapsed
        } else {
            0.0
        };

        // Bare runs beside the replays, then each failure replayed and minimised.
        let mut failures = Vec::new();
        let mut bare_outcomes: BTreeMap<String, u64> = BTreeMap::new();
        let mut bare: Vec<Ended> = Vec::new();
        if !found.is_empty() && plan.replays > 0 {
            self.launch.progress(&format!("{} bare runs", plan.replays));
            for _ in 0..plan.replays {
                if self.launch.cancelled() {
                    break;
                }
                let e = self
                    .launch
                    .launch(&Setup::default(), &mut |_| {})
                    .map_err(Failed::Launch)?;
                if e.outcome == Outcome::Interrupted {
                    break;
                }
                *bare_outcomes.entry(e.outcome.to_string()).or_default() += 1;
                bare.push(e);
            }
        }
        for (kind, f) in found.into_iter().take(4) {
            let replay = if plan.replay.is_some() {
                // The runs were replays of this one seed already.
                Some(Rate::wilson(f.count, done))
            } else if plan.replays > 0 {
                self.launch.progress(&format!(
                    "replaying seed {} {} times",
                    f.recipe.seed_text(),
                    plan.replays
                ));
                self.rate(Some(&f.recipe), plan.replays, kind)?
            } else {
                None
            };
            let replay = replay.unwrap_or_else(|| Rate::wilson(0, 0));
            let bare_failed = bare
                .iter()
                .filter(|e| failure_kind(e) == Some(kind))
                .count() as u64;
            let bare_rate = Rate::wilson(bare_failed, bare.len() as u64);
            let minimised = if plan.minimise && !self.launch.cancelled() {
                self.minimise(&f, kind)?
            } else {
                None
            };
            failures.push(PerturbFailure {
                outcome: kind.0,
                timeout_kind: kind.1,
                detail: f.detail,
                seed: f.recipe.seed_text(),
                mode: f.recipe.label(),
                first_run: f.first_run,
                count: f.count,
                other_seeds: f.others,
                replay,
                bare: bare_rate,
                only_under_perturbation: !bare.is_empty() && bare_failed == 0,
                replay_command: plan.command.replace("{flags}", &f.recipe.flags()),
                minimised,
            });
        }
        let cell = self.launch.cell_timeout();
        let deadline = Deadline {
            cell_seconds: cell.as_secs_f64(),
            perturbed_seconds: (cell + extra).as_secs_f64(),
            why: format!(
                "a perturbed run may be delayed up to {} ms by the shim and stopped about {} ms by freezes and quota bursts: its deadline is the cell's plus the first and twice the second, and a run that still reaches it while progressing, busy or idle counts as slowed, not failed",
                plan.shim_budget.as_millis(),
                plan.sched_budget.as_millis()
            ),
        };
        let mut mechanisms: Vec<MechanismUse> = tally.uses.into_values().collect();
        mechanisms.sort_by(|a, b| b.runs.cmp(&a.runs).then(a.name.cmp(&b.name)));
        Ok(PerturbReport {
            modes,
            seed: seed_text(plan.seed),
            runs: done,
            outcomes,
            failures,
            slowed: slowed_runs,
            bare_runs: bare.len() as u64,
            bare_outcomes,
            mechanisms,
            deadline,
            runs_per_second,
            stopped,
            run_list,
        })
    }

    fn setup_extra(&self, recipe: &Recipe) -> Duration {
        let mut d = Duration::ZERO;
        if !matches!(recipe.shim, ShimPlan::Off) && self.shim.is_some() {
            d += self.plan.shim_budget;
        }
        if recipe.sched {
            d += 2 * self.plan.sched_budget;
        }
        d
    }

    /// Drop the failing run's points while replaying the rest (as fixed delays) still fails as
    /// often as replaying them all.
    fn minimise(&mut self, f: &Found, kind: Kind) -> Result<Option<Minimised>, Failed<L::Error>> {
        let points: Vec<Point> = f.log.delays().cloned().collect();
        if points.is_empty() {
            return Ok(None);
        }
        let k = self.plan.replays.clamp(1, 10);
        let base_recipe = f.recipe.clone();
        self.launch.progress(&format!(
            "minimising seed {}: {} points",
            base_recipe.seed_text(),
            points.len()
        ));
        let all = self.rate(Some(&base_recipe.with_list(points.clone())), k, kind)?;
        let Some(mut all) = all else {
            return Ok(None);
        };
        if all.failed == 0 {
            // Fixed delays reproduce less often on a busy machine: one more, longer try before
            // the seed is called the smallest replay.
            match self.rate(Some(&base_recipe.with_list(points.clone())), 2 * k, kind)? {
                Some(again) => all = again,
                None => return Ok(None),
            }
        }
        let from = points.len() as u64;
        if all.failed == 0 {
            return Ok(Some(Minimised {
                from,
                to: from,
                replay: all,
                points: Vec::new(),
                note: Some(format!(
                    "replaying its {from} points as fixed delays reproduced it {}: it needs the seed's own decisions (PCT's holds wait on other threads), so the seed is the smallest replay",
                    all.text()
                )),
            }));
        }
        let mut last = all;
        let mut error: Option<Failed<L::Error>> = None;
        let budget = self.plan.minimise_tests;
        let reduced = crate::minimise::ddmin(points, budget, |subset| {
            if error.is_some() {
                return None;
            }
            match self.rate(Some(&base_recipe.with_list(subset.to_vec())), k, kind) {
                Ok(Some(r)) => {
                    let ok = r.failed > 0 && r.high >= all.low;
                    if ok {
                        last = r;
                    }
                    Some(ok)
                }
                Ok(None) => None,
                Err(e) => {
                    error = Some(e);
                    None
                }
            }
        });
        if let Some(e) = error {
            return Err(e);
        }
        let lines = crate::resolve::lines(&reduced.kept, &f.log.maps);
        let notes = reduced
            .kept
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let at = lines.get(&i).cloned();
                PointNote {
                    process: p.process,
                    thread: p.thread,
                    call_number: p.call_number,
                    call: p.call.clone(),
                    when: if p.after { "after" } else { "before" }.into(),
                    action: p.action.as_str().into(),
                    micros: p.micros,
                    object: format!("{:#x}", p.object),
                    text: point_sentence(p, at.as_deref()),
                    at,
                }
            })
            .collect();
        Ok(Some(Minimised {
            from,
            to: reduced.kept.len() as u64,
            replay: last,
            points: notes,
            note: if reduced.kept.is_empty() {
                Some(format!(
                    "replaying none of its {from} points still failed ({}): the failure does not need these delays (the bare runs say how often it fails unperturbed)",
                    last.text()
                ))
            } else {
                (!reduced.minimal).then(|| {
                    format!(
                        "stopped after {} tests (the budget): smaller sets may still fail",
                        reduced.tests
                    )
                })
            },
        }))
    }
}

/// Why a campaign could not finish.
#[derive(Debug)]
pub enum Failed<E> {
    /// Perturbation could not be set up (the shim, a log file).
    Setup(crate::PerturbError),
    /// The launch failed (the program could not be run at all).
    Launch(E),
}

impl<E: std::fmt::Display> std::fmt::Display for Failed<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failed::Setup(e) => e.fmt(f),
            Failed::Launch(e) => e.fmt(f),
        }
    }
}

impl<E: std::error::Error + 'static> std::error::Error for Failed<E> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Failed::Setup(e) => Some(e),
            Failed::Launch(e) => Some(e),
        }
    }
}

#[cfg(test)]
mod tests;
