//! Judging a faulted or restarted cell's behaviour: the observation the behaviour rules read
//! (`qualify_faults::Observation`: the load's phases before, during and after the window, the
//! proxy's counters, the per-second timeline against the SLOs, the restart and the write
//! check) and one `result.faults` record per dependency ([`judge`]).

use qualify_faults::behaviour::{
    DependencyObservation, PhaseLoad, ProcessObservation, RestartObservation, SecondSlos,
    TimelineSecond,
};
use qualify_faults::{Behaviour, Fault, Observation, ProxyStats, SetCheck};
use qualify_load::{LoadReport, Phase};
use qualify_model::fault::ProcessRecord;
use qualify_model::{FaultRecord, SloMetric};
use qualify_spec::Spec;

use crate::harness::Injected;

/// The load of one phase, as the verdict reads it.
fn phase_load(report: &LoadReport, phase: Phase) -> PhaseLoad {
    let Some(p) = report.phases.iter().find(|p| p.phase == phase) else {
        return PhaseLoad::default();
    };
    PhaseLoad {
        requests: p.sent,
        errors: p.errors.total(),
        timeouts: p.errors.get(qualify_load::ErrorClass::Timeout),
        latency_p50: p.corrected.p50,
        latency_p99: p.corrected.p99,
        peak_in_flight: p.peak_in_flight,
    }
}

/// What a kill-and-restart saw.
#[derive(Debug, Clone, Default)]
pub struct RestartSeen {
    /// Seconds from the kill to ready (`None`: not ready within `ready_within`).
    pub ready_after: Option<f64>,
    /// The kill, seconds into the measured phase.
    pub at: f64,
}

/// Judge the cell's behaviour and build `result.faults`: one
/// record per dependency with its fault (`none` included), or one for a restart only. Returns
/// the verdict that speaks for the cell — of the dependency a fault was put on (else the
/// first) — and the records.
pub fn judge(
    spec: &Spec,
    report: &LoadReport,
    injected: &[Injected],
    restart: Option<&RestartSeen>,
    writes: Option<SetCheck>,
    max_in_flight: u32,
) -> (Behaviour, Vec<FaultRecord>) {
    let slo = |m: SloMetric| spec.slos.iter().find(|s| s.metric == m).map(|s| s.limit);
    let slos = SecondSlos::new(
        slo(SloMetric::ErrorRate).or(Some(qualify_load::slo::DEFAULT_ERROR_RATE)),
        slo(SloMetric::LatencyP99),
        spec.slos
            .iter()
            .find(|s| s.metric == SloMetric::Throughput && s.bound == qualify_model::BoundKind::Min)
            .map(|s| s.limit),
    );
    let (window_start, window_end, recover_within) = match (&spec.faults, restart) {
        (Some(f), _) => (
            f.start.as_secs_f64(),
            f.end.as_secs_f64(),
            f.recover_within.as_secs_f64(),
        ),
        (None, Some(r)) => (
            r.at,
            r.at + r.ready_after.unwrap_or(report.measured_seconds),
            spec.recovery
                .as_ref()
                .map_or(5.0, |x| x.ready_within.as_secs_f64()),
        ),
        (None, None) => (0.0, 0.0, 5.0),
    };
    let observation = |stats: Option<&ProxyStats>, process: Option<&ProcessRecord>| Observation {
        before: phase_load(report, Phase::Before),
        during: phase_load(report, Phase::During),
        after: phase_load(report, Phase::After),
        dependency: stats.map(|s| DependencyObservation {
            before: s.before.clone(),
            during: s.during.clone(),
            after: s.after.clone(),
            series: s.series.clone(),
        }),
        max_in_flight: u64::from(max_in_flight),
        window_start,
        window_end,
        recover_within,
        timeline: report
            .timeline
            .iter()
            .map(|t| TimelineSecond {
                sent: t.sent,
                completed: t.completed,
                errors: t.errors,
                p99: t.p99,
            })
            .collect(),
        slos,
        restart: restart.map(|r| RestartObservation {
            ready_after: r.ready_after,
            errors_during_restart: phase_load(report, Phase::During).errors,
        }),
        writes: writes.clone(),
        process: process.map(|p| ProcessObservation {
            down_at: p.down_at_seconds,
            ready_at: p.ready_at_seconds,
        }),
    };
    let restart_signal = spec.recovery.as_ref().map(|r| r.signal.clone());
    let mut records = Vec::new();
    let mut primary: Option<Behaviour> = None;
    let mut first: Option<Behaviour> = None;
    let none = Fault::NONE;
    type Target<'a> = (
        Option<&'a str>,
        &'a Fault,
        Option<&'a ProxyStats>,
        Option<&'a ProcessRecord>,
    );
    let targets: Vec<Target<'_>> = if injected.is_empty() {
        vec![(None, &none, None, None)]
    } else {
        injected
            .iter()
            .map(|i| {
                (
                    Some(i.dependency.as_str()),
                    &i.fault,
                    Some(&i.stats),
                    i.process.as_ref(),
                )
            })
            .collect()
    };
    for (dependency, fault, stats, process) in targets {
        let o = observation(stats, process);
        let behaviour = qualify_faults::judge(&o);
        let mut record = qualify_faults::record(dependency, fault, &o, &behaviour);
        record.process = process.cloned();
        if let (Some(signal), Some(r)) = (&restart_signal, restart) {
            record = record.with_restart(signal, r.at);
        }
        records.push(record);
        if fault.kind != qualify_faults::FaultKind::None && primary.is_none() {
            primary = Some(behaviour.clone());
        }
        if first.is_none() {
            first = Some(behaviour);
        }
    }
    let behaviour = primary
        .or(first)
        .unwrap_or_else(|| qualify_faults::judge(&observation(None, None)));
    (behaviour, records)
}
