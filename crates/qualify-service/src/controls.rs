//! The `none` cells of a run — the controls: a cell whose every fault axis is `none` (and which
//! restarts nothing) puts no fault on anything, and how much its latency varied is the noise
//! floor of the faulted cells beside it (`qualify_faults::Noise`). [`Controls`] is shared by
//! the cells of one run, on any executor, and is the one place "controls first" is decided:
//!
//! - [`Controls::get_or_measure`] measures a combination's control once per run: the first
//!   cell of the combination to ask — the control itself, or a faulted cell before it runs —
//!   measures it, a cell asking meanwhile waits, every later one gets that result. So a faulted
//!   cell never runs before its control, one cell at a time, with `--jobs`, or under Slurm.
//!   It applies where the plan probes every combination's control ([`measured_first`]).
//! - A control registers its variation under the values of the axes other than the fault axes
//!   ([`group`]); a faulted cell with the same values reads it ([`Controls::noise_for`]). On a
//!   cluster each cell is its own job: the run reads a control's variation back from its result
//!   ([`noise_of`]) and hands it to the faulted cells' jobs (`qualify service-cell
//!   --control-noise`).

use std::sync::{Condvar, Mutex, MutexGuard};

pub use qualify_faults::Noise;
use qualify_model::{AxisKind, Params, ProbeResult, Value};
use qualify_spec::{Domain, Search, Spec};

/// The controls of a run: their variation, by [`group`], and each one's measurement.
#[derive(Debug, Default)]
pub struct Controls {
    seen: Mutex<Vec<(Params, Noise)>>,
    /// Each combination's control, by [`group`]: being measured, or its result.
    measured: Mutex<Vec<(Params, Slot)>>,
    done: Condvar,
}

#[derive(Debug)]
enum Slot {
    Measuring,
    Measured(Box<ProbeResult>),
}

impl Controls {
    pub fn new() -> Controls {
        Controls::default()
    }

    /// Record the variation of the control cell at `params` (a later run of the same control,
    /// e.g. a `[performance]` round, replaces it).
    pub fn register(&self, spec: &Spec, params: &Params, noise: Noise) {
        let key = group(spec, params);
        if let Ok(mut seen) = self.seen.lock() {
            match seen.iter_mut().find(|(k, _)| *k == key) {
                Some(entry) => entry.1 = noise,
                None => seen.push((key, noise)),
            }
        }
    }

    /// The variation of the control of the cell at `params`, if one was measured.
    pub fn noise_for(&self, spec: &Spec, params: &Params) -> Option<Noise> {
        let key = group(spec, params);
        self.seen
            .lock()
            .ok()?
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, n)| *n)
    }

    fn slots(&self) -> MutexGuard<'_, Vec<(Params, Slot)>> {
        self.measured.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The control of combination `group` ([`group`]), measured once per run by `measure`
    /// (which registers its variation): the first caller measures, a caller while that runs
    /// waits for it, every later one gets the same result. A measurement that unwinds
    /// measured nothing: the next caller measures.
    pub fn get_or_measure(
        &self,
        group: &Params,
        measure: impl FnOnce() -> ProbeResult,
    ) -> ProbeResult {
        let mut slots = self.slots();
        loop {
            match slots.iter().find(|(k, _)| k == group) {
                Some((_, Slot::Measured(r))) => return (**r).clone(),
                Some((_, Slot::Measuring)) => {
                    slots = self.done.wait(slots).unwrap_or_else(|e| e.into_inner());
                }
                None => {
                    slots.push((group.clone(), Slot::Measuring));
                    break;
                }
            }
        }
        drop(slots);
        // A measurement that unwinds ends the others' wait (and is measured again).
        let unwound = Unwound {
            controls: self,
            group,
        };
        let r = measure();
        std::mem::forget(unwound);
        let mut slots = self.slots();
        if let Some(entry) = slots.iter_mut().find(|(k, _)| k == group) {
            entry.1 = Slot::Measured(Box::new(r.clone()));
        }
        drop(slots);
        self.done.notify_all();
        r
    }
}

/// Ends the wait for a control whose measurement unwound.
struct Unwound<'a> {
    controls: &'a Controls,
    group: &'a Params,
}

impl Drop for Unwound<'_> {
    fn drop(&mut self) {
        self.controls.slots().retain(|(k, _)| k != self.group);
        self.controls.done.notify_all();
    }
}

/// Whether the plan of `spec` probes the control of every faulted cell, so each is measured
/// first ([`Controls::get_or_measure`]): a service whose every fault axis has `none`, no
/// restart, no boundary search (which may skip a combination's control). Elsewhere a faulted
/// cell is judged with whatever control was measured before it, and says when none was.
pub fn measured_first(spec: &Spec) -> bool {
    let faults: Vec<_> = spec
        .axes
        .iter()
        .filter(|a| a.kind == AxisKind::Fault)
        .collect();
    spec.service.is_some()
        && spec.recovery.is_none()
        && !faults.is_empty()
        && faults.iter().all(|a| match &a.domain {
            Domain::Values(v) => v.iter().any(|x| x.as_text() == Some("none")),
            Domain::Range(_) => false,
        })
        && spec.axes.iter().all(|a| a.search != Some(Search::Boundary))
}

/// The cell's values of every axis but the fault axes: the cells one control stands for.
pub fn group(spec: &Spec, params: &Params) -> Params {
    params
        .iter()
        .filter(|(name, _)| spec.axis(name).is_none_or(|a| a.kind != AxisKind::Fault))
        .map(|(name, value)| (name, value.clone()))
        .collect()
}

/// The variation a control registered, read back from its result: its fault record's
/// `noise_floor.control_p99`/`control_p50` are its own variation ([`Noise::of_control`], as
/// `judge` registers it). `None`: the result holds no judged control (the cell failed before
/// its load was judged).
pub fn noise_of(result: &ProbeResult) -> Option<Noise> {
    // Its latency over the whole measured load: the level a standing fault is compared with.
    let corrected = result
        .load
        .as_ref()
        .and_then(|l| l.report.as_ref())
        .map(|r| r.latency.corrected);
    result
        .faults
        .iter()
        .filter(|r| r.behaviour.verdict == "control")
        .find_map(|r| r.behaviour.noise_floor)
        .map(|n| Noise {
            p99: n.control_p99,
            p50: n.control_p50,
            latency_p99: corrected.and_then(|c| c.p99),
            latency_p50: corrected.and_then(|c| c.p50),
        })
}

/// The control of the cell at `params`: every fault axis `none`, the other axes as they are.
pub fn control_of(spec: &Spec, params: &Params) -> Params {
    params
        .iter()
        .map(|(name, value)| match spec.axis(name) {
            Some(a) if a.kind == AxisKind::Fault => (name, Value::Text("none".into())),
            _ => (name, value.clone()),
        })
        .collect()
}

/// Whether the cell at `params` is a control: the spec has fault axes, every one of them is
/// `none` for it, and it restarts nothing.
pub fn is_control(spec: &Spec, params: &Params) -> bool {
    let faults = spec.faults_for(params);
    spec.recovery.is_none()
        && !faults.is_empty()
        && faults
            .iter()
            .all(|(_, f)| f.kind == qualify_faults::FaultKind::None)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPEC: &str = r#"[artifact]
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

    fn cell(fault: &str, workers: i64) -> Params {
        [
            ("cache_fault", Value::Text(fault.into())),
            ("workers", Value::Int(workers)),
        ]
        .into_iter()
        .collect()
    }

    #[test]
    fn a_control_stands_for_the_faulted_cells_of_its_combination() {
        let spec = Spec::parse(SPEC, "qualify.toml").unwrap();
        assert!(is_control(&spec, &cell("none", 1)));
        assert!(!is_control(&spec, &cell("down", 1)));
        let controls = Controls::new();
        assert_eq!(controls.noise_for(&spec, &cell("down", 1)), None);
        let noise = Noise {
            p99: Some(2.5),
            p50: Some(1.1),
            ..Noise::default()
        };
        controls.register(&spec, &cell("none", 1), noise);
        assert_eq!(controls.noise_for(&spec, &cell("down", 1)), Some(noise));
        assert_eq!(
            controls.noise_for(&spec, &cell("down", 2)),
            None,
            "another combination of the other axes has its own control"
        );
        let again = Noise {
            p99: Some(3.0),
            p50: None,
            ..Noise::default()
        };
        controls.register(&spec, &cell("none", 1), again);
        assert_eq!(controls.noise_for(&spec, &cell("down", 1)), Some(again));
    }

    fn result(detail: &str) -> ProbeResult {
        qualify_probe::ProbeSpec::new(vec!["./svc".into()]).not_run(detail)
    }

    #[test]
    fn a_control_is_measured_once_before_the_faulted_cells_of_its_combination() {
        use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
        let spec = Spec::parse(SPEC, "qualify.toml").unwrap();
        assert!(measured_first(&spec));
        let without_none = SPEC.replace(r#"values = ["none", "down"]"#, r#"values = ["down"]"#);
        assert!(!measured_first(
            &Spec::parse(&without_none, "qualify.toml").unwrap()
        ));
        let controls = Controls::new();
        let runs = AtomicUsize::new(0);
        let run = |detail: &'static str| {
            runs.fetch_add(1, Ordering::SeqCst);
            result(detail)
        };
        // The faulted cell came first: it measures its control, which the control cell's own
        // call then gets.
        let g1 = group(&spec, &cell("down", 1));
        assert_eq!(g1, group(&spec, &cell("none", 1)));
        controls.get_or_measure(&g1, || run("for the faulted cell"));
        let r = controls.get_or_measure(&g1, || run("again"));
        assert_eq!(r.detail, "for the faulted cell");
        controls.get_or_measure(&g1, || run("again"));
        assert_eq!(runs.load(Ordering::SeqCst), 1, "one control run");
        // The control is being measured: a faulted cell waits for it rather than measuring it
        // again, whichever thread it runs on.
        let g2 = group(&spec, &cell("none", 2));
        let started = AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| {
                controls.get_or_measure(&g2, || {
                    started.store(true, Ordering::SeqCst);
                    std::thread::sleep(std::time::Duration::from_millis(200));
                    run("the planner's")
                })
            });
            while !started.load(Ordering::SeqCst) {
                std::thread::yield_now();
            }
            let r = controls.get_or_measure(&g2, || panic!("measured the control again"));
            assert_eq!(r.detail, "the planner's");
            assert_eq!(
                runs.load(Ordering::SeqCst),
                2,
                "the running control ended first"
            );
        });
        // A measurement that unwinds measured nothing: the next caller measures.
        let g3 = group(&spec, &cell("none", 3));
        let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            controls.get_or_measure(&g3, || panic!("the control could not run"))
        }));
        assert!(unwound.is_err());
        assert_eq!(controls.get_or_measure(&g3, || run("next")).detail, "next");
    }

    #[test]
    fn a_control_s_result_carries_its_variation_and_a_faulted_one_s_does_not() {
        let spec = Spec::parse(SPEC, "qualify.toml").unwrap();
        assert_eq!(control_of(&spec, &cell("down", 2)), cell("none", 2));
        let with = |faults: serde_json::Value| {
            let mut r = qualify_probe::ProbeSpec::new(vec!["./svc".into()]).not_run("");
            r.faults = qualify_model::fault::record::read_value(&faults);
            r
        };
        let control = with(serde_json::json!([{
            "dependency": "cache", "fault": "none",
            "behaviour": { "verdict": "control", "noise_floor": {
                "p99": 1.4, "p50": 1.2, "control_p99": 1.4, "control_p50": 1.2 } }
        }]));
        assert_eq!(
            noise_of(&control),
            Some(Noise {
                p99: Some(1.4),
                p50: Some(1.2),
                ..Noise::default()
            })
        );
        let faulted = with(serde_json::json!([{
            "dependency": "cache", "fault": "down",
            "behaviour": { "verdict": "fails_fast", "noise_floor": {
                "p99": 1.4, "p50": 1.2, "control_p99": 1.4, "control_p50": 1.2 } }
        }]));
        assert_eq!(noise_of(&faulted), None, "only a control's own variation");
        assert_eq!(noise_of(&with(serde_json::json!([]))), None, "not judged");
    }
}
