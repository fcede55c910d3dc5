//! Judging a faulted or restarted cell's behaviour: the observation the behaviour rules read
//! (`qualify_faults::Observation`: the load's phases before, during and after the window — what
//! each request met: an answer, a fast error with its latency, a timeout —, the proxy's
//! counters, the per-second timeline against the SLOs, the restart and the write check, the
//! control's variation and the service's threads, open files and sockets around the window)
//! and one `result.faults` record per dependency ([`judge`]), each with what the claim expects
//! of it.

use std::time::Instant;

use qualify_faults::behaviour::{
    DependencyObservation, PhaseLoad, ProcessObservation, RestartObservation, SecondSlos,
    TimelineSecond,
};
use qualify_faults::{
    Behaviour, Fault, Observation, ProxyStats, ResourceKind, ResourceObservation, SetCheck,
};
use qualify_load::{LoadPlan, LoadReport, Phase};
use qualify_model::fault::{ProcessRecord, Verdict};
use qualify_model::{FaultRecord, Params, SloMetric};
use qualify_probe::TreeCounts;
use qualify_spec::Spec;

use crate::controls::Controls;
use crate::harness::Injected;

/// The load of one phase, as the verdict reads it.
fn phase_load(report: &LoadReport, phase: Phase) -> PhaseLoad {
    let Some(p) = report.phases.iter().find(|p| p.phase == phase) else {
        return PhaseLoad::default();
    };
    PhaseLoad {
        requests: p.sent,
        errors: p.errors.total(),
        timeouts: p.timeouts(),
        latency_p50: p.corrected.p50,
        latency_p99: p.corrected.p99,
        peak_in_flight: p.peak_in_flight,
        succeeded: p.succeeded,
        fast_error_p50: p.fast_error_latency.p50,
        fast_error_p99: p.fast_error_latency.p99,
        seconds: p.seconds(),
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

/// Everything a judgement reads besides the spec.
pub struct Inputs<'a> {
    pub params: &'a Params,
    pub report: &'a LoadReport,
    pub plan: &'a LoadPlan,
    pub injected: &'a [Injected],
    pub restart: Option<&'a RestartSeen>,
    pub writes: Option<SetCheck>,
    pub controls: &'a Controls,
    /// The service's tree counts (the probe's samples) and the measured phase's start.
    pub counts: &'a [(Instant, TreeCounts)],
    pub measured_start: Option<Instant>,
    /// When the load had ended and its connections had closed (and their threads had had
    /// time to end): the counts from then are "after the window".
    pub settled: Instant,
}

/// The cell's behaviour and its records.
pub struct Judged {
    /// The behaviour that speaks for the cell: of the dependency a fault was put on (else the
    /// first record's).
    pub behaviour: Behaviour,
    /// What the claim accepts of that behaviour (`None`: states nothing).
    pub expected: Option<Vec<Verdict>>,
    /// One record per dependency (or one for a restart only), each with its expectation.
    pub records: Vec<FaultRecord>,
    /// The cell is the control (no fault, no restart).
    pub control: bool,
    /// How soon after the window the objectives had to hold again, seconds.
    pub recover_within: f64,
}

/// Judge the cell's behaviour and build `result.faults`: one
/// record per dependency with its fault (`none` included), or one for a restart only. A
/// control registers its variation in `controls`; a faulted cell reads its control's.
pub fn judge(spec: &Spec, i: &Inputs<'_>) -> Judged {
    let report = i.report;
    let slo = |m: SloMetric| {
        spec.slos
            .iter()
            .find(|s| s.metric == m && s.phase != qualify_model::SloPhase::Fault)
            .map(|s| s.limit)
    };
    let slos = SecondSlos::new(
        slo(SloMetric::ErrorRate).or(Some(qualify_load::slo::DEFAULT_ERROR_RATE)),
        slo(SloMetric::LatencyP99),
        spec.slos
            .iter()
            .find(|s| {
                s.metric == SloMetric::Throughput
                    && s.bound == qualify_model::BoundKind::Min
                    && s.phase != qualify_model::SloPhase::Fault
            })
            .map(|s| s.limit),
    );
    let (window_start, window_end, recover_within) = match (&spec.faults, i.restart) {
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
    let control = crate::controls::is_control(spec, i.params) && i.restart.is_none();
    let resources = match (i.restart, i.measured_start) {
        // The restarted instance is another tree: its counts say nothing about the first's.
        (None, Some(start)) => resources(i.counts, start, window_start, window_end, i.settled),
        _ => Vec::new(),
    };
    let control_noise = if control {
        None
    } else {
        i.controls.noise_for(spec, i.params)
    };
    let standing = spec.faults.as_ref().is_some_and(|f| f.standing) && i.restart.is_none();
    // A standing fault's cell has no before of its own: its control's level stands in for it.
    let before = match (standing, control_noise) {
        (true, Some(n)) => PhaseLoad {
            latency_p50: n.latency_p50,
            latency_p99: n.latency_p99,
            ..PhaseLoad::default()
        },
        (true, None) => PhaseLoad::default(),
        (false, _) => phase_load(report, Phase::Before),
    };
    let observation = |stats: Option<&ProxyStats>, process: Option<&ProcessRecord>| Observation {
        before: before.clone(),
        during: phase_load(report, Phase::During),
        after: phase_load(report, Phase::After),
        dependency: stats.map(|s| DependencyObservation {
            before: s.before.clone(),
            during: s.during.clone(),
            after: s.after.clone(),
            series: s.series.clone(),
        }),
        max_in_flight: u64::from(i.plan.max_in_flight),
        timeout: i.plan.timeout.as_secs_f64(),
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
        restart: i.restart.map(|r| RestartObservation {
            ready_after: r.ready_after,
            errors_during_restart: phase_load(report, Phase::During).errors,
        }),
        writes: i.writes.clone(),
        process: process.map(|p| ProcessObservation {
            down_at: p.down_at_seconds,
            ready_at: p.ready_at_seconds,
        }),
        control,
        control_noise,
        resources: resources.clone(),
        standing,
    };
    let expectations = spec.expectations_for(i.params);
    let expected_of = |dependency: Option<&str>| {
        expectations
            .iter()
            .find(|(d, _, _)| Some(*d) == dependency)
            .and_then(|(_, _, e)| e.clone())
    };
    let restart_signal = spec.recovery.as_ref().map(|r| r.signal.clone());
    let mut records = Vec::new();
    let mut primary: Option<(Behaviour, Option<Vec<Verdict>>)> = None;
    let mut first: Option<(Behaviour, Option<Vec<Verdict>>)> = None;
    let none = Fault::NONE;
    type Target<'a> = (
        Option<&'a str>,
        &'a Fault,
        Option<&'a ProxyStats>,
        Option<&'a ProcessRecord>,
    );
    let targets: Vec<Target<'_>> = if i.injected.is_empty() {
        vec![(None, &none, None, None)]
    } else {
        i.injected
            .iter()
            .map(|x| {
                (
                    Some(x.dependency.as_str()),
                    &x.fault,
                    Some(&x.stats),
                    x.process.as_ref(),
                )
            })
            .collect()
    };
    for (dependency, fault, stats, process) in targets {
        let o = observation(stats, process);
        if control && first.is_none() {
            i.controls.register(spec, i.params, o.own_noise());
        }
        let behaviour = qualify_faults::judge(&o);
        let expected = if fault.kind == qualify_faults::FaultKind::None {
            None
        } else {
            expected_of(dependency)
        };
        let mut record = qualify_faults::record(dependency, fault, &o, &behaviour);
        record.process = process.cloned();
        record.behaviour.expected = expected
            .as_ref()
            .map(|e| e.iter().map(|v| v.as_str().to_string()).collect());
        if let (Some(signal), Some(r)) = (&restart_signal, i.restart) {
            record = record.with_restart(signal, r.at);
        }
        records.push(record);
        if fault.kind != qualify_faults::FaultKind::None && primary.is_none() {
            primary = Some((behaviour.clone(), expected.clone()));
        }
        if first.is_none() {
            first = Some((behaviour, expected));
        }
    }
    let (behaviour, expected) = primary
        .or(first)
        .unwrap_or_else(|| (qualify_faults::judge(&observation(None, None)), None));
    Judged {
        behaviour,
        expected,
        records,
        control,
        recover_within,
    }
}

/// The tree's threads, open files and sockets before the window (the highest sample), at the
/// peak in it and after the load (the first sample once its connections had closed and
/// settled: what is left then was not serving the load).
fn resources(
    counts: &[(Instant, TreeCounts)],
    measured_start: Instant,
    window_start: f64,
    window_end: f64,
    settled: Instant,
) -> Vec<ResourceObservation> {
    let at = |t: &Instant| {
        t.checked_duration_since(measured_start)
            .map(|d| d.as_secs_f64())
    };
    let before: Vec<&TreeCounts> = counts
        .iter()
        .filter(|(t, _)| at(t).is_some_and(|s| s < window_start))
        .map(|(_, c)| c)
        .collect();
    let during: Vec<&TreeCounts> = counts
        .iter()
        .filter(|(t, _)| at(t).is_some_and(|s| s >= window_start && s < window_end))
        .map(|(_, c)| c)
        .collect();
    let last = counts.iter().find(|(t, _)| *t >= settled).map(|(_, c)| c);
    let (Some(last), false, false) = (last, before.is_empty(), during.is_empty()) else {
        return Vec::new();
    };
    let count = |kind: ResourceKind, c: &TreeCounts| match kind {
        ResourceKind::Threads => c.threads,
        ResourceKind::OpenFiles => c.open_files,
        ResourceKind::Sockets => c.sockets,
    };
    [
        ResourceKind::Threads,
        ResourceKind::OpenFiles,
        ResourceKind::Sockets,
    ]
    .into_iter()
    .map(|kind| ResourceObservation {
        kind,
        before: before.iter().map(|c| count(kind, c)).max().unwrap_or(0),
        peak_during: during.iter().map(|c| count(kind, c)).max().unwrap_or(0),
        end: count(kind, last),
    })
    .collect()
}
