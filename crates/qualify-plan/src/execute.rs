//! Running a [`Plan`]: [`Plan::execute`] calls a function of a cell's parameters for each cell
//! (how a cell runs is the caller's: `qualify-run`'s `Cells` on its executor, closures in
//! tests), with the options of one execution ([`ExecuteOptions`]: jobs, CPU demand, progress,
//! cancellation, search slack), and returns its record ([`Execution`]: every executed cell in
//! start order, and one [`Boundary`] per search).
//!
//! One coordinator (the calling thread) owns all state; each cell runs on its own scoped thread
//! and reports back over a channel. Sweep cells and the first probe of every search are queued
//! in plan order; a search's next probe goes to the front of the queue, so searches proceed
//! depth-first (with `jobs = 1` one search finishes before the next starts) while different
//! combinations may run side by side. Within one search probes are strictly sequential. A cell
//! starts only when the CPU budget admits it (see `schedule`), and never more often than asked:
//! results are memoized by parameters (every run of them, in order), a search asking for a
//! cell that is already queued or running waits for it, and a search repeating a point at its
//! edge (`edge_runs`) gets a new run only once it has consumed every run there is.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;

use qualify_model::{Outcome, ProbeResult};
use serde::{Deserialize, Serialize};

use crate::plan::{Plan, SearchSpec};
use crate::schedule::CoreBudget;
use crate::search::{DEFAULT_EDGE_BUDGET, DEFAULT_SEARCH_SLACK, Search};
use qualify_model::{Params, Value};

/// The result of one cell: the probe's verdict. A cell passes when its outcome is `ok`.
pub type CellResult = ProbeResult;

/// Whether a cell passed.
pub fn passed(result: &CellResult) -> bool {
    result.outcome == Outcome::Ok
}

/// Why a cell ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum CellRole {
    /// A point of the cartesian sweep.
    Sweep,
    /// A probe of boundary search `boundary` (index into [`Execution::boundaries`]).
    Search { boundary: usize },
    /// The monotonicity check of boundary search `boundary`.
    Check { boundary: usize },
    /// A repeat, at the edge of boundary search `boundary`, of a point it already ran.
    Repeat { boundary: usize },
}

impl CellRole {
    /// Whether the cell was run by a boundary search (probe or check).
    pub fn is_boundary_probe(self) -> bool {
        !matches!(self, CellRole::Sweep)
    }
}

/// One executed cell.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ExecutedCell {
    /// Position in start order (also the index in [`Execution::cells`]).
    pub index: usize,
    pub params: Params,
    pub role: CellRole,
    pub result: CellResult,
}

/// Where one boundary search found the artifact to break, and its parts: the shared vocabulary's,
/// so the receipt's record holds the planner's result unconverted.
pub use qualify_model::boundary::{Boundary, EdgeRuns, Expectation, MonotonicCheck};

/// The record of one execution.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Execution {
    /// Every executed cell, in start order.
    pub cells: Vec<ExecutedCell>,
    /// One per search of the plan, in plan order.
    pub boundaries: Vec<Boundary>,
    /// True when every planned cell and search finished and no cell was `interrupted`.
    pub complete: bool,
    /// True when cancellation stopped cells from being issued.
    pub cancelled: bool,
}

impl Execution {
    /// Whether every executed cell passed.
    pub fn all_passed(&self) -> bool {
        self.cells.iter().all(|c| passed(&c.result))
    }
}

/// A cell starting or finishing, for progress display. Delivered on the calling thread.
#[derive(Debug)]
pub enum ProgressEvent<'a> {
    Started {
        index: usize,
        params: &'a Params,
        role: CellRole,
        /// Current estimate of how many cells the execution will run in all.
        total_estimate: usize,
    },
    Finished {
        index: usize,
        params: &'a Params,
        role: CellRole,
        result: &'a CellResult,
        /// Cells finished so far, this one included.
        finished: usize,
        total_estimate: usize,
    },
}

/// Cores a cell needs, as a function of its parameters.
pub type DemandFn<'a> = Box<dyn Fn(&Params) -> usize + 'a>;
/// Progress callback.
pub type ProgressFn<'a> = Box<dyn Fn(&ProgressEvent<'_>) + 'a>;

/// How to execute a plan.
pub struct ExecuteOptions<'a> {
    /// Cells that may run side by side (at least 1).
    pub jobs: usize,
    /// Cores the running cells' demands must fit in (at least 1).
    pub cores: usize,
    /// CPU demand of a cell; `None` means 1 per cell. Values below 1 count as 1.
    pub demand: Option<DemandFn<'a>>,
    pub progress: Option<ProgressFn<'a>>,
    /// When set, no further cell is started; running cells are awaited (the runner should stop
    /// them) and the execution is returned marked incomplete.
    pub cancel: Option<Arc<AtomicBool>>,
    /// Probes a boundary search may spend beyond plain bisection to gallop from the low end.
    pub search_slack: u32,
    /// Extra probes a search may spend repeating and widening its edge (searches whose axis
    /// asks for `edge_runs > 1`).
    pub edge_budget: u32,
}

impl Default for ExecuteOptions<'_> {
    fn default() -> Self {
        ExecuteOptions {
            jobs: 1,
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            demand: None,
            progress: None,
            cancel: None,
            search_slack: DEFAULT_SEARCH_SLACK,
            edge_budget: DEFAULT_EDGE_BUDGET,
        }
    }
}

impl<'a> ExecuteOptions<'a> {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn jobs(mut self, jobs: usize) -> Self {
        self.jobs = jobs;
        self
    }

    pub fn cores(mut self, cores: usize) -> Self {
        self.cores = cores;
        self
    }

    pub fn demand(mut self, demand: impl Fn(&Params) -> usize + 'a) -> Self {
        self.demand = Some(Box::new(demand));
        self
    }

    pub fn on_progress(mut self, progress: impl Fn(&ProgressEvent<'_>) + 'a) -> Self {
        self.progress = Some(Box::new(progress));
        self
    }

    pub fn cancel(mut self, token: Arc<AtomicBool>) -> Self {
        self.cancel = Some(token);
        self
    }

    pub fn search_slack(mut self, slack: u32) -> Self {
        self.search_slack = slack;
        self
    }

    pub fn edge_budget(mut self, budget: u32) -> Self {
        self.edge_budget = budget;
        self
    }

    fn is_cancelled(&self) -> bool {
        self.cancel
            .as_ref()
            .is_some_and(|c| c.load(Ordering::SeqCst))
    }

    fn demand_of(&self, params: &Params) -> usize {
        self.demand.as_ref().map_or(1, |f| f(params)).max(1)
    }
}

impl fmt::Debug for ExecuteOptions<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExecuteOptions")
            .field("jobs", &self.jobs)
            .field("cores", &self.cores)
            .field("demand", &self.demand.as_ref().map(|_| "fn"))
            .field("progress", &self.progress.as_ref().map(|_| "fn"))
            .field("cancel", &self.cancel)
            .field("search_slack", &self.search_slack)
            .field("edge_budget", &self.edge_budget)
            .finish()
    }
}

/// A demand function reading the cores from axis `axis` (e.g. the concurrency axis): an integer
/// value `n` demands `n` cores, a float is rounded up, anything else (or no such axis) demands 1.
pub fn axis_demand(axis: impl Into<String>) -> impl Fn(&Params) -> usize {
    let axis = axis.into();
    move |params: &Params| match params.get(&axis) {
        Some(Value::Int(n)) => usize::try_from(*n).unwrap_or(1).max(1),
        Some(Value::Float(x)) if x.is_finite() && *x >= 1.0 => x.ceil() as usize,
        _ => 1,
    }
}

impl Plan {
    /// Run each of the plan's cells by `run_cell` and return what happened. See the module docs
    /// for scheduling. `run_cell` is called from several threads at once when `jobs > 1`; one
    /// that honours a cancellation token should return `interrupted` when it fires (such a
    /// result is recorded but never taken as evidence about the artifact). A panic in it stops
    /// issuing cells and is resumed here once the running cells have finished.
    pub fn execute<F>(&self, run_cell: &F, opts: &ExecuteOptions<'_>) -> Execution
    where
        F: Fn(&Params) -> CellResult + Sync + ?Sized,
    {
        let mut co = Coordinator::new(self, opts);
        let mut cancelled = false;
        let mut panicked = None;
        std::thread::scope(|scope| {
            let (tx, rx) = mpsc::channel();
            loop {
                while panicked.is_none() && !co.queue.is_empty() {
                    if opts.is_cancelled() {
                        cancelled = true;
                        break;
                    }
                    let Some(index) = co.start_next() else { break };
                    let params = co.slots[index].params.clone();
                    let tx = tx.clone();
                    scope.spawn(move || {
                        let result = panic::catch_unwind(AssertUnwindSafe(|| run_cell(&params)));
                        // The coordinator outlives every cell thread; a failed send cannot happen.
                        let _ = tx.send((index, result));
                    });
                }
                if co.budget.running() == 0 {
                    break;
                }
                let Ok((index, result)) = rx.recv() else {
                    break;
                };
                co.budget.release(co.slots[index].demand);
                match result {
                    Ok(result) => co.finish(index, result),
                    Err(payload) => {
                        panicked.get_or_insert(payload);
                    }
                }
            }
        });
        if let Some(payload) = panicked {
            panic::resume_unwind(payload);
        }
        co.into_execution(cancelled)
    }
}

/// A started cell.
struct Slot {
    params: Params,
    role: CellRole,
    demand: usize,
    result: Option<CellResult>,
}

/// A cell waiting to start.
struct Work {
    params: Params,
    role: CellRole,
}

/// A search in progress.
struct Active<'p> {
    spec: &'p SearchSpec,
    search: Search,
    cells: Vec<usize>,
    /// Index the search waits for, if any.
    awaiting: Option<i128>,
}

/// All execution state; lives on the calling thread.
struct Coordinator<'p, 'o> {
    opts: &'o ExecuteOptions<'o>,
    slots: Vec<Slot>,
    queue: VecDeque<Work>,
    /// Params queued or running → searches waiting for their result.
    pending: HashMap<Params, Vec<usize>>,
    /// Params finished → their runs' slot indices, in the order they finished.
    memo: HashMap<Params, Vec<usize>>,
    searches: Vec<Active<'p>>,
    budget: CoreBudget,
    sweep_total: usize,
    finished: usize,
}

impl<'p, 'o> Coordinator<'p, 'o> {
    fn new(plan: &'p Plan, opts: &'o ExecuteOptions<'o>) -> Self {
        let mut co = Coordinator {
            opts,
            slots: Vec::new(),
            queue: VecDeque::new(),
            pending: HashMap::new(),
            memo: HashMap::new(),
            searches: Vec::new(),
            budget: CoreBudget::new(opts.jobs, opts.cores),
            sweep_total: plan.sweep_cells().len(),
            finished: 0,
        };
        for params in plan.sweep_cells() {
            co.pending.insert(params.clone(), Vec::new());
            co.queue.push_back(Work {
                params: params.clone(),
                role: CellRole::Sweep,
            });
        }
        for spec in plan.searches() {
            co.searches.push(Active {
                spec,
                search: Search::with_edge(
                    spec.ladder_len(),
                    opts.search_slack,
                    spec.edge_runs,
                    opts.edge_budget,
                ),
                cells: Vec::new(),
                awaiting: None,
            });
        }
        for id in 0..co.searches.len() {
            co.drive(id, false);
        }
        co
    }

    fn total_estimate(&self) -> usize {
        let searches: usize = self
            .searches
            .iter()
            .map(|a| a.search.estimated_total())
            .sum();
        (self.sweep_total + searches).max(self.slots.len())
    }

    /// Start the head of the queue if the budget admits it; returns its slot index.
    fn start_next(&mut self) -> Option<usize> {
        let demand = self.opts.demand_of(&self.queue.front()?.params);
        if !self.budget.fits(demand) {
            return None;
        }
        let work = self.queue.pop_front()?;
        self.budget.acquire(demand);
        let index = self.slots.len();
        self.slots.push(Slot {
            params: work.params,
            role: work.role,
            demand,
            result: None,
        });
        if let Some(progress) = &self.opts.progress {
            let slot = &self.slots[index];
            progress(&ProgressEvent::Started {
                index,
                params: &slot.params,
                role: slot.role,
                total_estimate: self.total_estimate(),
            });
        }
        Some(index)
    }

    /// Record a finished cell and move on every search that waited for it.
    fn finish(&mut self, index: usize, result: CellResult) {
        let outcome = result.outcome;
        self.slots[index].result = Some(result);
        self.finished += 1;
        let params = self.slots[index].params.clone();
        self.memo.entry(params.clone()).or_default().push(index);
        let waiting = self.pending.remove(&params).unwrap_or_default();
        for &id in &waiting {
            let active = &mut self.searches[id];
            if let Some(at) = active.awaiting.take() {
                active.cells.push(index);
                active.search.record(at, outcome);
            }
        }
        if let (Some(progress), Some(result)) = (&self.opts.progress, &self.slots[index].result) {
            let slot = &self.slots[index];
            progress(&ProgressEvent::Finished {
                index,
                params: &slot.params,
                role: slot.role,
                result,
                finished: self.finished,
                total_estimate: self.total_estimate(),
            });
        }
        for id in waiting {
            self.drive(id, true);
        }
    }

    /// Advance search `id` until it needs a cell that has not finished (queued at the front, or
    /// at the back while seeding) or it is done. Memoized cells are consumed without running.
    fn drive(&mut self, id: usize, front: bool) {
        loop {
            let active = &mut self.searches[id];
            if active.awaiting.is_some() {
                return;
            }
            let Some(at) = active.search.next() else {
                return;
            };
            let params = active.spec.params_at(at);
            // The search's next run of this point: one already finished that it has not
            // consumed, else a new one.
            let known = active.search.runs_at(at) as usize;
            if let Some(&index) = self.memo.get(&params).and_then(|runs| runs.get(known)) {
                let outcome = self.slots[index]
                    .result
                    .as_ref()
                    .map_or(Outcome::Interrupted, |r| r.outcome);
                active.cells.push(index);
                active.search.record(at, outcome);
                continue;
            }
            active.awaiting = Some(at);
            let role = if active.search.is_checking() {
                CellRole::Check { boundary: id }
            } else if known > 0 {
                CellRole::Repeat { boundary: id }
            } else {
                CellRole::Search { boundary: id }
            };
            if let Some(waiting) = self.pending.get_mut(&params) {
                waiting.push(id);
                return;
            }
            self.pending.insert(params.clone(), vec![id]);
            let work = Work { params, role };
            if front {
                self.queue.push_front(work);
            } else {
                self.queue.push_back(work);
            }
            return;
        }
    }

    fn into_execution(self, cancelled: bool) -> Execution {
        let cells: Vec<ExecutedCell> = self
            .slots
            .into_iter()
            .enumerate()
            .filter_map(|(index, slot)| {
                Some(ExecutedCell {
                    index,
                    params: slot.params,
                    role: slot.role,
                    result: slot.result?,
                })
            })
            .collect();
        let boundaries: Vec<Boundary> = self.searches.into_iter().map(boundary).collect();
        let complete = !cancelled
            && self.queue.is_empty()
            && boundaries.iter().all(|b| b.complete)
            && cells
                .iter()
                .all(|c| c.result.outcome != Outcome::Interrupted);
        Execution {
            cells,
            boundaries,
            complete,
            cancelled,
        }
    }
}

fn boundary(active: Active<'_>) -> Boundary {
    let Active {
        spec,
        search,
        cells,
        ..
    } = active;
    let first_fail = search.first_fail();
    let check = search.check();
    Boundary {
        axis: spec.axis.clone(),
        fixed: spec.fixed.clone(),
        last_pass: search.last_pass().map(|i| spec.value_at(i)),
        first_fail: first_fail.map(|(i, _)| spec.value_at(i)),
        outcome: first_fail.map(|(_, o)| o),
        probes: search.probes(),
        monotonic: check.map(|c| c.agrees()),
        monotonic_check: check.map(|c| MonotonicCheck {
            value: spec.value_at(c.index),
            outcome: c.outcome,
            expected: if c.expected_pass {
                Expectation::Pass
            } else {
                Expectation::Fail
            },
        }),
        complete: search.is_complete(),
        cells,
        edge_runs: spec.edge_runs,
        edge_confirmed: search.edge_confirmed(),
        edge: search
            .edge()
            .into_iter()
            .map(|(i, t)| EdgeRuns {
                value: spec.value_at(i),
                passed: t.passed,
                failed: t.failed,
                outcome: t.fail_outcome,
            })
            .collect(),
    }
}
