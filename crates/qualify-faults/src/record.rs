//! A judged observation as the receipt keeps it: [`record`] turns what the fault harness saw
//! ([`Observation`]) and the verdict on it ([`Behaviour`]) into the vocabulary's
//! [`FaultRecord`] (`result.faults`), with the proxy's per-phase counters.

use qualify_model::fault::{
    AmplificationRecord, BehaviourRecord, DependencyPhaseRecord, Fault, FaultRecord,
    HttpPhaseRecord, NoiseFloorRecord, PhaseRecord, PhasesRecord, PoolRecord, ResourceRecord,
    RestartRecord, WindowRecord,
};

use crate::behaviour::{
    Amplification, Behaviour, Observation, PhaseLoad, PoolObservation, Recovery, ResourceKind,
};
use crate::stats::PhaseCounters;

/// The record of one judged observation: `dependency` (`None` for a restart only) with
/// `fault` on it, the window, the phases (service and, when proxied, dependency counters),
/// the restart (its `signal` left empty and its kill taken as the window's start: name both
/// with [`FaultRecord::with_restart`]) and the write check.
pub fn record(
    dependency: Option<&str>,
    fault: &Fault,
    observation: &Observation,
    behaviour: &Behaviour,
) -> FaultRecord {
    let o = observation;
    let dep = o.dependency.as_ref();
    let phase = |load: &PhaseLoad, counters: Option<&PhaseCounters>| PhaseRecord {
        requests: load.requests,
        errors: load.errors,
        timeouts: load.timeouts,
        latency_p50: load.latency_p50,
        latency_p99: load.latency_p99,
        peak_in_flight: load.peak_in_flight,
        succeeded: load.succeeded,
        seconds: load.seconds,
        fast_errors: load.fast_errors(),
        fast_error_p50: load.fast_error_p50,
        fast_error_p99: load.fast_error_p99,
        dependency: counters.map(DependencyPhaseRecord::from),
    };
    FaultRecord {
        dependency: dependency.map(str::to_string),
        fault: fault.to_string(),
        window: Some(WindowRecord {
            start_seconds: o.window_start,
            end_seconds: o.window_end,
        }),
        recover_within_seconds: Some(o.recover_within),
        behaviour: BehaviourRecord::from(behaviour),
        phases: Some(PhasesRecord {
            before: phase(&o.before, dep.map(|d| &d.before)),
            during: phase(&o.during, dep.map(|d| &d.during)),
            after: phase(&o.after, dep.map(|d| &d.after)),
        }),
        restart: o.restart.map(|r| RestartRecord {
            signal: String::new(),
            at_seconds: o.window_start,
            ready_after_seconds: r.ready_after,
            errors_during_restart: r.errors_during_restart,
        }),
        writes: o.writes.clone(),
        killed_instance: None,
        // The harness adds what it did to the dependency's processes.
        process: None,
    }
}

impl From<&Behaviour> for BehaviourRecord {
    fn from(b: &Behaviour) -> BehaviourRecord {
        let amp = |a: Option<Amplification>| {
            a.map(|a| AmplificationRecord {
                requests: a.requests,
                connections: a.connections,
            })
        };
        BehaviourRecord {
            verdict: b.verdict.as_str().to_string(),
            detail: b.detail.clone(),
            recovery_seconds: match (b.verdict, b.recovery) {
                // The control has nothing to recover from.
                (qualify_model::fault::Verdict::Control, _) => None,
                (_, Recovery::After(t)) => Some(t),
                (_, Recovery::NotRecovered | Recovery::NotExamined) => None,
            },
            error_rate_before: b.error_rate_before,
            error_rate_during: b.error_rate_during,
            error_rate_after: b.error_rate_after,
            amplification_before: amp(b.amplification_before),
            amplification_during: amp(b.amplification_during),
            amplification_after: amp(b.amplification_after),
            attempts_per_request: b.attempts_per_request,
            pool: b.pool.map(|p: PoolObservation| PoolRecord {
                connections: p.connections,
                all_busy: p.all_busy,
                requests_queued: p.requests_queued,
            }),
            noise_floor: b.noise_floor.map(|n| NoiseFloorRecord {
                p99: n.p99,
                p50: n.p50,
                control_p99: n.control.and_then(|c| c.p99),
                control_p50: n.control.and_then(|c| c.p50),
                before_window_p99: n.before_window_p99,
            }),
            left_after_window: b
                .left_after_window
                .iter()
                .map(|r| ResourceRecord {
                    kind: match r.kind {
                        ResourceKind::Threads => "threads",
                        ResourceKind::OpenFiles => "open_files",
                        ResourceKind::Sockets => "sockets",
                    }
                    .to_string(),
                    before: r.before,
                    peak_during: r.peak_during,
                    end: r.end,
                })
                .collect(),
            expected: None,
        }
    }
}

impl From<&PhaseCounters> for DependencyPhaseRecord {
    fn from(c: &PhaseCounters) -> DependencyPhaseRecord {
        DependencyPhaseRecord {
            connections_opened: c.connections_opened,
            failed_connects: c.failed_connects,
            peak_connections: c.peak_connections,
            peak_busy_connections: c.peak_busy_connections,
            requests: c.requests,
            replies: c.replies,
            bytes_upstream: c.bytes_upstream,
            bytes_downstream: c.bytes_downstream,
            resets: c.resets,
            http: c.http.as_ref().map(|h| HttpPhaseRecord {
                statuses: h
                    .statuses
                    .iter()
                    .map(|(code, n)| (code.to_string(), *n))
                    .collect(),
                injected: h.injected,
                delayed: h.delayed,
            }),
        }
    }
}
