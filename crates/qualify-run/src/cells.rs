//! A cell of the run above its executor ([`Cells`]), the same for every executor: a service's
//! control measured first, the `[performance]` warmups and round 1, `--repeat`'s runs, one more
//! run for a later round ([`Cells::again`], called by `rounds.rs`), and the one place a cell
//! that could not start stops the run. Where the runs happen is the [`Executor`]'s
//! (`executor.rs`); what they measured is `measure.rs`'s. The planner runs the plan's cells
//! through [`Cells::plan_cell`], the ledger's regressions go through [`Cells::regression`].

use std::sync::OnceLock;
use std::sync::atomic::Ordering;

use qualify_plan::Params;
use qualify_probe::{BackendChoice, CancelToken, Outcome, ProbeResult};
use qualify_service::controls as ctl;
use qualify_service::{Controls, SpecProbes};
use qualify_spec::Spec;

use crate::error::Error;
use crate::executor::{Dispatch, Executor};

/// The cells of one run, on its one executor.
pub struct Cells<'a> {
    spec: &'a Spec,
    backend: BackendChoice,
    /// Runs per cell compared by stdout digest (`--repeat`, `[reproducibility] repeat`).
    repeat: u64,
    cancel: &'a CancelToken,
    executor: &'a dyn Executor,
    /// The `none` cells: each measured once, before the faulted service cells of its
    /// combination; their noise floor.
    controls: &'a Controls,
    /// The first cell that could not start at all (command not found, backend missing, a
    /// dependency never ready, a job Slurm refused): it stops the run, which then fails with
    /// this error.
    setup_error: OnceLock<Error>,
}

impl<'a> Cells<'a> {
    pub fn new(
        spec: &'a Spec,
        backend: BackendChoice,
        repeat: u64,
        cancel: &'a CancelToken,
        executor: &'a dyn Executor,
        controls: &'a Controls,
    ) -> Cells<'a> {
        Cells {
            spec,
            backend,
            repeat,
            cancel,
            executor,
            controls,
            setup_error: OnceLock::new(),
        }
    }

    /// How the executor's cells share a machine.
    pub fn dispatch(&self) -> Dispatch {
        self.executor.dispatch()
    }

    /// The run was asked to stop, or a cell could not start.
    pub fn cancelled(&self) -> bool {
        self.cancel.load(Ordering::SeqCst)
    }

    /// The cell that could not start, if one did not.
    pub fn into_setup_error(self) -> Option<Error> {
        self.setup_error.into_inner()
    }

    /// A cell of the plan; with `[performance]` its round 1. A control of a service's faults
    /// is measured once ([`Controls::get_or_measure`]): before any faulted cell of its
    /// combination, which waits for it.
    pub fn plan_cell(&self, params: &Params) -> ProbeResult {
        self.control_first(params, true)
            .unwrap_or_else(|| self.first(params))
    }

    /// A regression from the ledger: run anew (also a control), after its control.
    pub fn regression(&self, params: &Params) -> ProbeResult {
        self.control_first(params, false)
            .unwrap_or_else(|| self.first(params))
    }

    /// One more measured run of a cell (a later round of `[performance]`): no warmup, one run.
    pub fn again(&self, params: &Params) -> ProbeResult {
        self.settle(params, self.executor.run(params, 1))
    }

    /// A service cell's control measured first, once per run ([`Controls::get_or_measure`]):
    /// a faulted cell waits for its control or measures it; the control cell itself gets that
    /// measurement when `claim` (the plan's call), else runs anew (a regression from the
    /// ledger). `None`: run the cell itself.
    fn control_first(&self, params: &Params, claim: bool) -> Option<ProbeResult> {
        if !ctl::measured_first(self.spec) {
            return None;
        }
        let group = ctl::group(self.spec, params);
        if ctl::is_control(self.spec, params) {
            return claim.then(|| self.controls.get_or_measure(&group, || self.first(params)));
        }
        let control = ctl::control_of(self.spec, params);
        self.controls
            .get_or_measure(&group, || self.first(&control));
        None
    }

    /// A cell's first runs and what its executor adds to them.
    fn first(&self, params: &Params) -> ProbeResult {
        let result = self
            .first_runs(params)
            .and_then(|r| self.executor.finish(params, r));
        self.settle(params, result)
    }

    /// With `[performance]`: the warmups (a warmup that does not end `ok` is the cell's
    /// result: repeating a failure only costs time), then one measured run kept in `runs` —
    /// round 1; the later rounds add theirs (`rounds.rs`). Otherwise `repeat` runs compared by
    /// stdout digest, or one run.
    fn first_runs(&self, params: &Params) -> Result<ProbeResult, Error> {
        if self.spec.performance.is_none() {
            return self.executor.run(params, self.repeat);
        }
        for _ in 0..self.warmups() {
            let r = self.executor.run(params, 1)?;
            if r.outcome != Outcome::Ok {
                return Ok(r);
            }
        }
        let mut r = self.executor.run(params, 1)?;
        r.runs = Some(vec![r.clone()]);
        Ok(r)
    }

    /// `[performance] warmup` discarded runs where one warms what the measured run uses: a
    /// command's cell on this machine. A service cell warms up inside each run (`[load]
    /// warmup`, on a fresh service each time); a Slurm job may land on any node.
    pub(crate) fn warmups(&self) -> u64 {
        match &self.spec.performance {
            Some(p) if self.spec.service.is_none() && self.dispatch() == Dispatch::Here => p.warmup,
            _ => 0,
        }
    }

    /// A cell's result, or — when it could not start — the run stopped: the first such error
    /// kept, the cancel token raised (no further cell starts), and an `interrupted` result
    /// that is never evidence.
    fn settle(&self, params: &Params, result: Result<ProbeResult, Error>) -> ProbeResult {
        result.unwrap_or_else(|e| {
            let _ = self.setup_error.set(e);
            self.cancel.store(true, Ordering::SeqCst);
            self.spec
                .cell_probe(params, self.backend)
                .not_run("not probed: the run was stopping")
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicBool;
    use std::sync::{Arc, Mutex};

    use qualify_plan::Value;

    use super::*;
    use crate::executor::scripted::{Scripted, run};

    fn spec(extra: &str) -> Spec {
        let text = format!(
            "[artifact]\nname = \"a\"\ncommand = \"./a {{n}}\"\n\n[claim]\nlevel = \"trial\"\n\n[[axis]]\nname = \"n\"\nkind = \"workload\"\nvalues = [1, 2]\n\n{extra}"
        );
        Spec::parse(&text, "dir/qualify.toml")
            .unwrap_or_else(|e| panic!("test spec does not parse: {e}"))
    }

    fn cell(n: i64) -> Params {
        [("n", Value::Int(n))].into_iter().collect()
    }

    fn ok(_: &Params, _: usize) -> ProbeResult {
        run(Outcome::Ok, 1.0)
    }

    /// The runs each call asked the executor for.
    fn runs_asked(executor: &Scripted) -> Vec<u64> {
        executor.calls().into_iter().map(|(_, runs)| runs).collect()
    }

    #[test]
    fn here_a_performance_cell_is_its_warmups_then_one_run_kept_as_round_one() {
        let spec = spec("[performance]\nwarmup = 2\nrepeat = 3\n");
        let executor = Scripted::new(Dispatch::Here, ok);
        let cancel = Arc::new(AtomicBool::new(false));
        let controls = Controls::new();
        let cells = Cells::new(&spec, BackendChoice::Auto, 1, &cancel, &executor, &controls);
        let r = cells.plan_cell(&cell(1));
        assert_eq!(runs_asked(&executor), vec![1, 1, 1], "two warmups, one run");
        assert_eq!(r.runs.as_ref().map(Vec::len), Some(1), "round 1 in runs");
        assert_eq!(cells.again(&cell(1)).outcome, Outcome::Ok);
        assert_eq!(runs_asked(&executor).len(), 4, "a later round: no warmup");
    }

    #[test]
    fn a_warmup_that_fails_is_the_cells_result_and_nothing_more_runs() {
        let spec = spec("[performance]\nwarmup = 3\n");
        let executor = Scripted::new(Dispatch::Here, |_, before| {
            if before == 0 {
                run(Outcome::Crash, 1.0)
            } else {
                run(Outcome::Ok, 1.0)
            }
        });
        let cancel = Arc::new(AtomicBool::new(false));
        let controls = Controls::new();
        let cells = Cells::new(&spec, BackendChoice::Auto, 1, &cancel, &executor, &controls);
        let r = cells.plan_cell(&cell(2));
        assert_eq!(r.outcome, Outcome::Crash);
        assert!(r.runs.is_none(), "a failed warmup is no measured run");
        assert_eq!(runs_asked(&executor), vec![1]);
    }

    #[test]
    fn on_a_batch_scheduler_a_performance_cell_has_no_warmup() {
        let spec = spec("[performance]\nwarmup = 2\n");
        let executor = Scripted::new(Dispatch::Batch, ok);
        let cancel = Arc::new(AtomicBool::new(false));
        let controls = Controls::new();
        let cells = Cells::new(&spec, BackendChoice::Auto, 1, &cancel, &executor, &controls);
        let r = cells.plan_cell(&cell(1));
        assert_eq!(runs_asked(&executor), vec![1]);
        assert_eq!(r.runs.as_ref().map(Vec::len), Some(1));
    }

    #[test]
    fn without_performance_the_executor_is_asked_for_the_repeats_in_one_place() {
        let spec = spec("");
        for dispatch in [Dispatch::Here, Dispatch::Batch] {
            let executor = Scripted::new(dispatch, ok);
            let cancel = Arc::new(AtomicBool::new(false));
            let controls = Controls::new();
            let cells = Cells::new(&spec, BackendChoice::Auto, 3, &cancel, &executor, &controls);
            cells.plan_cell(&cell(1));
            cells.regression(&cell(2));
            assert_eq!(runs_asked(&executor), vec![3, 3], "{dispatch:?}");
        }
    }

    const SERVICE: &str = r#"[artifact]
name = "svc"
command = "./svc {port} {workers}"

[claim]
level = "trial"

[service]
ready = { tcp = true }

[load]
rate = 10
duration = "4s"

[[load.request]]
path = "/"

[[dependency]]
name = "cache"
start = ["redis-server", "--port", "{dep_port}"]
env = { REDIS = "127.0.0.1:{proxy_port}" }

[faults]
window = ["1s", "2s"]

[[axis]]
name = "cache_fault"
kind = "fault"
dependency = "cache"
values = ["none", "down"]

[[axis]]
name = "workers"
kind = "concurrency"
values = [1, 2]
"#;

    fn service_cell(fault: &str, workers: i64) -> Params {
        [
            ("cache_fault", Value::Text(fault.into())),
            ("workers", Value::Int(workers)),
        ]
        .into_iter()
        .collect()
    }

    #[test]
    fn on_every_executor_a_faulted_cell_runs_after_its_control_which_runs_once() {
        let spec = Spec::parse(SERVICE, "qualify.toml")
            .unwrap_or_else(|e| panic!("test spec does not parse: {e}"));
        for dispatch in [Dispatch::Here, Dispatch::Batch] {
            let executor = Scripted::new(dispatch, ok);
            let cancel = Arc::new(AtomicBool::new(false));
            let controls = Controls::new();
            let cells = Cells::new(&spec, BackendChoice::Auto, 1, &cancel, &executor, &controls);
            cells.plan_cell(&service_cell("down", 1));
            cells.plan_cell(&service_cell("none", 1));
            cells.regression(&service_cell("none", 1));
            let ran: Vec<Params> = executor.calls().into_iter().map(|(p, _)| p).collect();
            assert_eq!(
                ran,
                vec![
                    service_cell("none", 1),
                    service_cell("down", 1),
                    service_cell("none", 1)
                ],
                "{dispatch:?}: the control first, the plan's control is that measurement, a \
                 regression runs anew"
            );
        }
    }

    /// The cells whose scripted run ended, and the faulted cells that started before their
    /// control ended (for the one test that runs cells side by side).
    static ENDED: Mutex<Vec<Params>> = Mutex::new(Vec::new());
    static EARLY: Mutex<Vec<Params>> = Mutex::new(Vec::new());

    fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
        m.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A service run of 20 ms that notes a faulted cell starting before its control ended.
    fn watched(params: &Params, _: usize) -> ProbeResult {
        if params.get("cache_fault") == Some(&Value::Text("down".into())) {
            let control: Params = params
                .iter()
                .map(|(k, v)| match k {
                    "cache_fault" => (k, Value::Text("none".into())),
                    _ => (k, v.clone()),
                })
                .collect();
            if !lock(&ENDED).contains(&control) {
                lock(&EARLY).push(params.clone());
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
        lock(&ENDED).push(params.clone());
        run(Outcome::Ok, 1.0)
    }

    #[test]
    fn with_cells_side_by_side_no_faulted_cell_starts_before_its_control_ended() {
        let spec = Spec::parse(SERVICE, "qualify.toml")
            .unwrap_or_else(|e| panic!("test spec does not parse: {e}"));
        let axes = spec.axes.iter().map(qualify_plan::Axis::declared).collect();
        let plan = qualify_plan::Plan::new(axes).unwrap_or_else(|e| panic!("{e}"));
        let executor = Scripted::new(Dispatch::Here, watched);
        let cancel = Arc::new(AtomicBool::new(false));
        let controls = Controls::new();
        let cells = Cells::new(&spec, BackendChoice::Auto, 1, &cancel, &executor, &controls);
        let opts = qualify_plan::ExecuteOptions::new().jobs(4).cores(4);
        let execution = plan.execute(&|p: &Params| cells.plan_cell(p), &opts);
        assert_eq!(execution.cells.len(), 4);
        assert_eq!(
            executor.calls().len(),
            4,
            "each cell once, its control among them"
        );
        assert_eq!(lock(&ENDED).len(), 4);
        let early = lock(&EARLY).clone();
        assert!(
            early.is_empty(),
            "started before their control ended: {early:?}"
        );
    }

    #[test]
    fn a_cell_that_cannot_start_stops_the_run_once_with_the_first_error() {
        let spec = spec("");
        let mut executor = Scripted::new(Dispatch::Here, ok);
        executor.fail_at = Some(2);
        let cancel = Arc::new(AtomicBool::new(false));
        let controls = Controls::new();
        let cells = Cells::new(&spec, BackendChoice::Auto, 1, &cancel, &executor, &controls);
        assert_eq!(cells.plan_cell(&cell(1)).outcome, Outcome::Ok);
        assert!(!cells.cancelled());
        let stopped = cells.plan_cell(&cell(2));
        assert_eq!(stopped.outcome, Outcome::Interrupted, "never evidence");
        assert!(cells.cancelled(), "no further cell starts");
        assert!(cancel.load(Ordering::SeqCst));
        let error = cells.into_setup_error().map(|e| e.to_string());
        assert_eq!(error.as_deref(), Some("scripted: the cell could not start"));
    }
}
