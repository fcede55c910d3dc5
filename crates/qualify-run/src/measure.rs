//! What a cell measured: its runs' samples per metric ([`measure`]: wall, cpu, peak memory,
//! the spec's figures from stdout, a service's load report) and which runs are measurements
//! ([`measured`]) or censored observations. The performance analysis (`analysis.rs`) and the
//! round scheduler (`rounds.rs`, whether a cell is precise yet) read a cell through it.

use std::collections::BTreeMap;

use qualify_perf::Sample;
use qualify_probe::{Outcome, ProbeResult};
use qualify_spec::Spec;

/// What one cell measured: samples per metric (wall, cpu = user + system, peak_memory, the
/// spec's regex figures from stdout and, for a service cell, the service metrics of each run's
/// load report — also of runs that ended `slo_violated` or `overloaded`: the service served
/// the whole load, and how it served it is the measurement) and the problems measuring it. A
/// figure that does not parse is an error of the cell, never a zero; runs that timed out or
/// were killed are censored ("≥ value"). Run `i` of `runs` was measured in round `i + 1` (`rounds.rs` appends
/// one run per round).
pub fn measure(spec: &Spec, result: &ProbeResult) -> (BTreeMap<String, Vec<Sample>>, Vec<String>) {
    let mut samples: BTreeMap<String, Vec<Sample>> = BTreeMap::new();
    let mut errors: Vec<String> = Vec::new();
    let single = [result.clone()];
    let runs: &[ProbeResult] = result.runs.as_deref().unwrap_or(&single);
    let metrics = spec
        .performance
        .as_ref()
        .map(|p| p.metrics.as_slice())
        .unwrap_or(&[]);
    let mut note = |message: String| {
        if !errors.contains(&message) {
            errors.push(message);
        }
    };
    for (i, run) in runs.iter().enumerate() {
        let cpu = run.user_seconds + run.system_seconds;
        let round = u32::try_from(i + 1).unwrap_or(u32::MAX);
        let mut push = |name: &str, s: Sample| {
            samples
                .entry(name.to_string())
                .or_default()
                .push(s.in_round(round))
        };
        let served = spec.service.is_some() && served(run.outcome);
        if served {
            // What the service did under the load is measured whether or not it held its
            // objectives: an overloaded service's throughput is its capacity.
            match service_metrics(run) {
                Ok(ServiceMeasures { values, missing }) => {
                    for (name, v) in values {
                        push(name, Sample::measured(v));
                    }
                    if !missing.is_empty() {
                        note(format!(
                            "run {}: the load report measured no {} (nothing answered in the measured phase)",
                            i + 1,
                            missing.join(", ")
                        ));
                    }
                }
                Err(e) => note(format!("run {}: {e}", i + 1)),
            }
        }
        if run.outcome == Outcome::Ok || served {
            push("wall", Sample::measured(run.wall_seconds));
            push("cpu", Sample::measured(cpu));
            match run.peak_memory_bytes {
                Some(b) => push("peak_memory", Sample::measured(b as f64)),
                None => note("peak_memory: not measured on this backend".to_string()),
            }
            for m in metrics {
                match m.extract(&run.stdout_tail) {
                    Ok(v) => push(&m.name, Sample::measured(v)),
                    Err(e) => note(format!("run {}: {e}", i + 1)),
                }
            }
        } else if censored(run.outcome) {
            push("wall", Sample::at_least(run.wall_seconds));
            push("cpu", Sample::at_least(cpu));
            if let Some(b) = run.peak_memory_bytes {
                push("peak_memory", Sample::at_least(b as f64));
            }
        } else if run.outcome != Outcome::Interrupted {
            note(format!(
                "run {} ended {}: no measurement ({})",
                i + 1,
                run.outcome,
                run.detail
            ));
        }
    }
    (samples, errors)
}

/// Whether a run that ended this way is a measurement the rounds repeat: `ok`, and for a
/// service also `slo_violated` and `overloaded` (an overloaded service's throughput is its
/// capacity, which `[[performance.expect]]` on `throughput` along a workers axis judges).
pub fn measured(spec: &Spec, outcome: Outcome) -> bool {
    outcome == Outcome::Ok || (spec.service.is_some() && served(outcome))
}

/// Whether a service cell that ended this way served its load to the end (kept up, or not):
/// its load report is a measurement of the service.
fn served(outcome: Outcome) -> bool {
    matches!(
        outcome,
        Outcome::Ok | Outcome::SloViolated | Outcome::Overloaded
    )
}

/// The service metrics ([`qualify_spec::SERVICE_METRICS`]) of a run's load report
/// (`result.load`), each computed as the `[[slo]]` evaluation computes it, and the names of
/// those the run could not measure (nothing answered: no latency).
fn service_metrics(run: &ProbeResult) -> Result<ServiceMeasures, NoLoadReport> {
    let Some(load) = &run.load else {
        return Err(NoLoadReport::Missing);
    };
    let Some(report) = &load.report else {
        return Err(NoLoadReport::Empty);
    };
    let mut values = Vec::new();
    let mut missing = Vec::new();
    for (name, _, _) in qualify_spec::SERVICE_METRICS {
        let value = match name {
            "achieved_rate" => (report.measured_seconds > 0.0).then_some(report.achieved_rate),
            other => other
                .parse::<qualify_model::SloMetric>()
                .ok()
                .and_then(|m| qualify_load::slo::value(m, report)),
        };
        match value.filter(|v| v.is_finite()) {
            Some(v) => values.push((name, v)),
            None => missing.push(name),
        }
    }
    Ok(ServiceMeasures { values, missing })
}

/// Why a service run has no service metrics (a problem of the cell's measurement, in its
/// record).
#[derive(Debug, thiserror::Error)]
enum NoLoadReport {
    #[error("no load report (result.load) to measure the service metrics from")]
    Missing,
    #[error("the load report (result.load) holds no measurement")]
    Empty,
}

/// A run's service metrics: the measured ones, and the names of those it could not measure.
struct ServiceMeasures {
    values: Vec<(&'static str, f64)>,
    missing: Vec<&'static str>,
}

/// Whether a run that ended this way is a censored observation (it would have taken at least
/// this long): stopped by the deadline, a signal, the memory ceiling or a stall.
fn censored(outcome: Outcome) -> bool {
    matches!(
        outcome,
        Outcome::Timeout
            | Outcome::Killed
            | Outcome::OomKilled
            | Outcome::OutOfMemory
            | Outcome::Deadlock
            | Outcome::Livelock
    )
}
