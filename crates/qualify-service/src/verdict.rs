//! The service cell's verdict, in order. The load's verdict (`qualify_load::verdict::decide`:
//! unavailable, interrupted, overloaded, slo_violated or ok — or "the process ended") is
//! judged, for a faulted or restarted cell, on the load outside the fault window and its
//! recovery ([`outside_window`]); for the `none` cell (the control) on the whole run. Then the
//! behaviour under the fault:
//!
//! 1. the control: never a fault verdict; an objective for the fault window it did not hold
//!    (with no fault at all) makes an `ok` cell `slo_violated`;
//! 2. lost writes → `lost_writes`, unless the claim expects `loses_writes` by name;
//! 3. a behaviour outside what the claim expects of the fault (`expect`) — with no `expect`, a
//!    hang (a hang fails by default; `expect` may accept it by name) — or an objective for the
//!    fault window (`[[slo]] phase = "fault"`) not held → `unexpected_behaviour`, the detail
//!    naming the expected and the observed, and a late recovery beside them when there was one;
//! 4. not recovered within `recover_within` (never, or late) → `not_recovered` (unless
//!    interrupted, or the claim expects the behaviour by name);
//! 5. otherwise the load's verdict stands and the behaviour is added to the detail.
//!
//! What the service did under the fault outranks how long it took to come back: a hang that
//! also recovered late is `unexpected_behaviour` whatever the recovery took (a busy machine
//! moves the recovery time, not the hang), and the late recovery is named beside it.
//!
//! Finally a probe verdict about the process tree (crash, oom_killed, deadlock, …) outranks
//! the service's: the service did not just serve badly, it failed ([`CellVerdict::apply`]).

use qualify_faults::{Behaviour, Recovery, Verdict as Behaved};
use qualify_load::slo::SloResult;
use qualify_load::verdict::Verdict;
use qualify_load::{ErrorCounts, LatencySummary, LoadReport, Phase, PhaseReport};
use qualify_model::fault::verdict::one_of;
use qualify_model::{FaultRecord, Outcome, ProbeResult, SloPhase};

/// What the verdict decided: the outcome for the cell (`None`: the probe's own
/// classification stands) and the detail line (also the load's `verdict`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CellVerdict {
    pub outcome: Option<Outcome>,
    pub detail: String,
}

/// A faulted, restarted or control cell's behaviour, and what the claim asked of it.
pub struct UnderFault<'a> {
    /// The behaviour that speaks for the cell.
    pub behaviour: &'a Behaviour,
    /// What the claim accepts of it (`None`: states nothing).
    pub expected: Option<&'a [Behaved]>,
    /// Every record of the cell (each with its own expectation).
    pub records: &'a [FaultRecord],
    /// The objectives for the fault window, judged over it.
    pub fault_slos: &'a [SloResult],
    pub recover_within: f64,
}

impl UnderFault<'_> {
    fn expects(&self, verdict: Behaved) -> bool {
        self.expected.is_some_and(|e| e.contains(&verdict))
    }

    /// Not recovered by the end of the load, or later than `recover_within`.
    fn late(&self) -> bool {
        match self.behaviour.recovery {
            Recovery::NotRecovered => true,
            Recovery::After(t) => t > self.recover_within,
            Recovery::NotExamined => false,
        }
    }

    /// A late recovery, named beside a verdict about the window that outranks it (empty when
    /// the service recovered in time, or the claim expects the behaviour by name).
    fn late_beside(&self) -> String {
        if !self.late() || self.expects(self.behaviour.verdict) {
            return String::new();
        }
        match self.behaviour.recovery {
            Recovery::NotRecovered => {
                "; and not recovered by the end of the load (not_recovered)".to_string()
            }
            Recovery::After(t) => format!(
                "; and recovered only {t:.1} s after the window, later than recover_within {:.1} s (not_recovered)",
                self.recover_within
            ),
            Recovery::NotExamined => String::new(),
        }
    }
}

/// A behaviour that fails with no expectation stated: a hang under a fault put on a
/// dependency (requests held until the client gave up). The claim may accept it by name.
fn default_refused(r: &FaultRecord) -> bool {
    r.injected() && r.behaviour.expected.is_none() && r.behaviour.verdict == "hangs"
}

/// Decide the cell's outcome from the load's verdict and, for a faulted cell, the behaviour
/// under the fault; `summary` is the detail of a verdict that has none of its own.
pub fn decide(
    verdict: &Verdict,
    under: Option<&UnderFault<'_>>,
    summary: impl FnOnce() -> String,
) -> CellVerdict {
    let (outcome, detail) = match verdict {
        // The process ended during the load: the probe's classification stands.
        Verdict::ProcessEnded => (None, String::new()),
        Verdict::Service { outcome, detail } => {
            (Some(*outcome), detail.clone().unwrap_or_else(summary))
        }
    };
    let Some(u) = under else {
        return CellVerdict { outcome, detail };
    };
    let b = u.behaviour;
    let failed_window: Vec<String> = u
        .fault_slos
        .iter()
        .filter(|s| !s.held)
        .map(SloResult::describe_with_phase)
        .collect();
    let judged = outcome.is_some_and(|o| o != Outcome::Interrupted);
    let (outcome, detail) = if b.verdict == Behaved::Control {
        let detail = format!("{detail}; {}", b.detail);
        match outcome {
            Some(Outcome::Ok) if !failed_window.is_empty() => (
                Some(Outcome::SloViolated),
                format!(
                    "{} with no fault at all; {detail}",
                    failed_window.join("; ")
                ),
            ),
            o => (o, detail),
        }
    } else if b.verdict == Behaved::LosesWrites && !u.expects(Behaved::LosesWrites) {
        (Some(Outcome::LostWrites), b.detail.clone())
    } else if let Some(r) = u
        .records
        .iter()
        .find(|r| r.behaviour.unexpected())
        .filter(|_| judged)
    {
        let expected = r
            .behaviour
            .expected
            .as_ref()
            .map(|e| {
                let parsed: Vec<Behaved> = e.iter().filter_map(|v| v.parse().ok()).collect();
                one_of(&parsed)
            })
            .unwrap_or_default();
        (
            Some(Outcome::UnexpectedBehaviour),
            format!(
                "under {}: expected {expected}, observed {} ({}){}",
                r.subject(),
                r.behaviour.verdict,
                r.behaviour.detail,
                u.late_beside()
            ),
        )
    } else if let Some(r) = u
        .records
        .iter()
        .find(|r| default_refused(r))
        .filter(|_| judged)
    {
        (
            Some(Outcome::UnexpectedBehaviour),
            format!(
                "under {}: observed {} ({}); a hang fails unless the claim expects it by name (expect = {{ \"{}\" = [\"hangs\"] }}){}",
                r.subject(),
                r.behaviour.verdict,
                r.behaviour.detail,
                r.fault,
                u.late_beside()
            ),
        )
    } else if judged && !failed_window.is_empty() {
        (
            Some(Outcome::UnexpectedBehaviour),
            format!(
                "{}; observed {} ({}){}",
                failed_window.join("; "),
                b.verdict,
                b.detail,
                u.late_beside()
            ),
        )
    } else if judged && u.late() && !u.expects(b.verdict) {
        (Some(Outcome::NotRecovered), b.detail.clone())
    } else if let Some(o) = outcome {
        let expected = if u.expects(b.verdict) {
            ", as the claim expects"
        } else {
            ""
        };
        (
            Some(o),
            format!(
                "{detail}; under the fault: {} ({}){expected}",
                b.verdict, b.detail
            ),
        )
    } else {
        (None, detail)
    };
    CellVerdict { outcome, detail }
}

impl CellVerdict {
    /// The write check's `checker` refused the history: a write violation like lost writes,
    /// which outranks everything but the probe's verdict about the tree.
    pub fn refused_by_checker(&mut self, checker: &qualify_model::fault::CheckerRecord) {
        if self.outcome == Some(Outcome::LostWrites) {
            self.detail = format!(
                "{}; the write checker refused the history too: {}",
                self.detail, checker.detail
            );
            return;
        }
        self.outcome = Some(Outcome::LostWrites);
        self.detail = format!("the write checker refused the history: {}", checker.detail);
    }

    /// Put the verdict on the service's probe result: its outcome and detail when the probe
    /// itself saw nothing wrong (`ok`); otherwise the probe's verdict about the tree stands
    /// (said to have happened during the load when the process ended before it did).
    pub fn apply(&self, r: &mut ProbeResult, alive: bool) {
        match self.outcome {
            Some(o) if r.outcome == Outcome::Ok => {
                r.outcome = o;
                r.detail = self.detail.clone();
            }
            Some(_) | None => {
                if !alive {
                    r.detail = format!("ended during the load: {}", r.detail);
                }
            }
        }
    }
}

/// The load outside the fault window and its recovery: a report of the phases before the
/// window and after `recover_within`, so a fault's errors count for recovery (and
/// `not_recovered`), not against the service's objectives.
pub fn outside_window(report: &LoadReport) -> LoadReport {
    let mut outside = report.clone();
    let phases: Vec<&PhaseReport> = report
        .phases
        .iter()
        .filter(|p| !matches!(p.phase, Phase::During | Phase::Recovery))
        .collect();
    if phases.is_empty() {
        return outside;
    }
    let mut errors = ErrorCounts::default();
    let (mut sent, mut completed, mut succeeded, mut dropped, mut shed) = (0, 0, 0, 0, 0);
    let mut seconds = 0.0;
    for p in &phases {
        errors.add_counts(&p.errors);
        sent += p.sent;
        completed += p.completed;
        succeeded += p.succeeded;
        dropped += p.dropped;
        shed += p.shed;
        seconds += p.end_seconds - p.start_seconds;
    }
    outside.sent = sent;
    outside.completed = completed;
    outside.succeeded = succeeded;
    outside.dropped = dropped;
    outside.shed = shed;
    outside.errors = errors;
    outside.measured_seconds = seconds;
    outside.throughput = if seconds > 0.0 {
        succeeded as f64 / seconds
    } else {
        0.0
    };
    outside.achieved_rate = if seconds > 0.0 {
        completed as f64 / seconds
    } else {
        0.0
    };
    // Latency outside the window: the worse of the phases' percentiles over every request
    // that ended (a timeout at its timeout), as the whole run's latency counts them.
    let worst = |f: fn(&LatencySummary) -> Option<f64>| {
        phases
            .iter()
            .filter_map(|p| f(&p.ended_latency))
            .reduce(f64::max)
    };
    outside.latency.corrected.p50 = worst(|l| l.p50);
    outside.latency.corrected.p90 = worst(|l| l.p90);
    outside.latency.corrected.p99 = worst(|l| l.p99);
    outside.latency.corrected.p999 = worst(|l| l.p999);
    outside.latency.corrected.max = worst(|l| l.max);
    outside.latency.censored = Some(phases.iter().map(|p| p.timeouts()).sum());
    outside
}

/// The load of the fault window alone, as the objectives for it read it: the window's
/// requests, their errors and dropped arrivals, its goodput, and as latency every request of
/// the window that ended (a timeout at the moment it was given up on: a request that hung is
/// as slow as its timeout, not absent). `None` without a window.
pub fn fault_window(report: &LoadReport) -> Option<LoadReport> {
    let p = report.phases.iter().find(|p| p.phase == Phase::During)?;
    let mut w = report.clone();
    let seconds = p.seconds();
    w.sent = p.sent;
    w.completed = p.completed;
    w.succeeded = p.succeeded;
    w.dropped = p.dropped;
    w.shed = p.shed;
    w.errors = p.errors;
    w.measured_seconds = seconds;
    w.throughput = p.goodput().unwrap_or(0.0);
    w.achieved_rate = p.answered_rate().unwrap_or(0.0);
    w.latency.corrected = p.ended_latency;
    w.latency.censored = Some(p.timeouts());
    w.phases = vec![p.clone()];
    Some(w)
}

/// `180.0 req/s of 180 offered, p99 12.3 ms; every objective held`, naming the phase the
/// objectives were judged over when it is not the whole run.
pub fn summary(report: Option<&LoadReport>, slos: &[SloResult]) -> String {
    let Some(rep) = report else {
        return "ran without load".to_string();
    };
    let p99 = rep
        .latency
        .corrected
        .p99
        .map(|s| format!("{:.1} ms", s * 1000.0))
        .unwrap_or_else(|| "—".into());
    let held = if slos.iter().all(|s| s.held) {
        match slos.first().map(|s| s.phase) {
            Some(phase) if slos.iter().all(|s| s.phase == phase) && phase != SloPhase::WholeRun => {
                format!("every objective held ({})", phase.words())
            }
            _ => "every objective held".to_string(),
        }
    } else {
        let failed: Vec<String> = slos
            .iter()
            .filter(|s| !s.held)
            .map(SloResult::describe_scoped)
            .collect();
        failed.join("; ")
    };
    match rep.offered_rate {
        Some(offered) => format!(
            "{:.1} req/s achieved of {offered:.0} offered, corrected p99 {p99}; {held}",
            rep.achieved_rate
        ),
        None => format!(
            "{:.1} req/s achieved, corrected p99 {p99}; {held}",
            rep.achieved_rate
        ),
    }
}

#[cfg(test)]
mod tests {
    use qualify_faults::Recovery;
    use qualify_load::{PhaseReport, Writes};
    use qualify_model::{Enforcement, Limits};

    use super::*;

    fn behaviour(verdict: Behaved, recovery: Recovery) -> Behaviour {
        Behaviour {
            verdict,
            detail: format!("{verdict} figures"),
            recovery,
            error_rate_before: None,
            error_rate_during: None,
            error_rate_after: None,
            amplification_before: None,
            amplification_during: None,
            amplification_after: None,
            attempts_per_request: None,
            pool: None,
            noise_floor: None,
            left_after_window: Vec::new(),
        }
    }

    /// A record of `verdict` with what the claim expects of it.
    fn record(verdict: Behaved, expected: Option<&[Behaved]>) -> FaultRecord {
        FaultRecord {
            dependency: Some("cache".into()),
            fault: "down".into(),
            behaviour: qualify_model::fault::BehaviourRecord {
                verdict: verdict.as_str().into(),
                detail: format!("{verdict} figures"),
                expected: expected.map(|e| e.iter().map(|v| v.as_str().to_string()).collect()),
                ..Default::default()
            },
            ..FaultRecord::default()
        }
    }

    fn fault_slo(held: bool) -> SloResult {
        SloResult {
            metric: qualify_model::SloMetric::LatencyP99,
            bound: qualify_model::BoundKind::Max,
            limit: 0.3,
            value: Some(if held { 0.2 } else { 1.0 }),
            held,
            implicit: false,
            phase: SloPhase::Fault,
        }
    }

    fn service(outcome: Outcome, detail: Option<&str>) -> Verdict {
        Verdict::Service {
            outcome,
            detail: detail.map(str::to_string),
        }
    }

    fn probe(outcome: Outcome, detail: &str) -> ProbeResult {
        ProbeResult::unobserved(
            outcome,
            detail,
            Enforcement::none("cgroup2"),
            Limits::default(),
        )
    }

    /// The cell's outcome and detail for every kind of load verdict × behaviour under the
    /// fault × what the probe saw of the process tree.
    #[test]
    fn the_service_verdict_order() {
        use Outcome::*;
        let recovered = || Recovery::After(1.2);
        let loses = behaviour(Behaved::LosesWrites, recovered());
        let not_recovered = behaviour(Behaved::Degrades, Recovery::NotRecovered);
        let recovers = behaviour(Behaved::Recovers, recovered());
        let stops_unrecovered = behaviour(Behaved::Stops, Recovery::NotRecovered);
        let late = behaviour(Behaved::RecoversLate, Recovery::After(4.0));
        let hangs = behaviour(Behaved::Hangs, recovered());
        let hangs_late = behaviour(Behaved::Hangs, Recovery::After(4.0));
        let fails_fast_unrecovered = behaviour(Behaved::FailsFast, Recovery::NotRecovered);
        let fails_fast = behaviour(Behaved::FailsFast, recovered());
        let control = behaviour(Behaved::Control, Recovery::NotRecovered);
        let held = [fault_slo(true)];
        let broken = [fault_slo(false)];
        struct Row<'a> {
            name: &'a str,
            verdict: Verdict,
            behaviour: Option<&'a Behaviour>,
            /// What the claim expects (and the window's objectives); none by default.
            expected: Option<&'a [Behaved]>,
            fault_slos: &'a [SloResult],
            /// The probe's own outcome, and whether the process was alive after the load.
            probe: Outcome,
            alive: bool,
            outcome: Outcome,
            detail: &'a str,
        }
        let rows = [
            Row {
                name: "kept up, no fault",
                verdict: service(Ok, None),
                behaviour: None,
                expected: None,
                fault_slos: &[],
                probe: Ok,
                alive: true,
                outcome: Ok,
                detail: "summary",
            },
            Row {
                name: "an objective failed, no fault",
                verdict: service(SloViolated, Some("latency_p99 = 150 ms")),
                behaviour: None,
                expected: None,
                fault_slos: &[],
                probe: Ok,
                alive: true,
                outcome: SloViolated,
                detail: "latency_p99 = 150 ms",
            },
            Row {
                name: "overloaded, no fault",
                verdict: service(Overloaded, Some("3 arrivals dropped")),
                behaviour: None,
                expected: None,
                fault_slos: &[],
                probe: Ok,
                alive: true,
                outcome: Overloaded,
                detail: "3 arrivals dropped",
            },
            Row {
                name: "refused while alive",
                verdict: service(Unavailable, Some("4 of 10 refused")),
                behaviour: None,
                expected: None,
                fault_slos: &[],
                probe: Ok,
                alive: true,
                outcome: Unavailable,
                detail: "4 of 10 refused",
            },
            Row {
                name: "the generator was the bottleneck",
                verdict: service(Interrupted, Some("not evidence about the service")),
                behaviour: None,
                expected: None,
                fault_slos: &[],
                probe: Ok,
                alive: true,
                outcome: Interrupted,
                detail: "not evidence about the service",
            },
            Row {
                name: "recovered from the fault: the verdict outside the window, the behaviour added",
                verdict: service(Ok, None),
                behaviour: Some(&recovers),
                expected: None,
                fault_slos: &[],
                probe: Ok,
                alive: true,
                outcome: Ok,
                detail: "summary; under the fault: recovers (recovers figures)",
            },
            Row {
                name: "not recovered outranks the objectives outside the window",
                verdict: service(SloViolated, Some("latency_p99 = 150 ms")),
                behaviour: Some(&not_recovered),
                expected: None,
                fault_slos: &[],
                probe: Ok,
                alive: true,
                outcome: NotRecovered,
                detail: "degrades figures",
            },
            Row {
                name: "not recovered after stopping to serve",
                verdict: service(Ok, None),
                behaviour: Some(&stops_unrecovered),
                expected: None,
                fault_slos: &[],
                probe: Ok,
                alive: true,
                outcome: NotRecovered,
                detail: "stops figures",
            },
            Row {
                name: "an interrupted run is never not_recovered",
                verdict: service(Interrupted, Some("the load was cancelled")),
                behaviour: Some(&not_recovered),
                expected: None,
                fault_slos: &[],
                probe: Ok,
                alive: true,
                outcome: Interrupted,
                detail: "the load was cancelled; under the fault: degrades (degrades figures)",
            },
            Row {
                name: "lost writes outrank everything the load said",
                verdict: service(Overloaded, Some("dropped")),
                behaviour: Some(&loses),
                expected: None,
                fault_slos: &[],
                probe: Ok,
                alive: true,
                outcome: LostWrites,
                detail: "loses_writes figures",
            },
            Row {
                name: "lost writes outrank an interruption too",
                verdict: service(Interrupted, Some("cancelled")),
                behaviour: Some(&loses),
                expected: None,
                fault_slos: &[],
                probe: Ok,
                alive: true,
                outcome: LostWrites,
                detail: "loses_writes figures",
            },
            Row {
                name: "the process ended: the probe's classification stands",
                verdict: Verdict::ProcessEnded,
                behaviour: None,
                expected: None,
                fault_slos: &[],
                probe: Crash,
                alive: false,
                outcome: Crash,
                detail: "ended during the load: killed by SIGSEGV",
            },
            Row {
                name: "the process ended under a fault: still the probe's",
                verdict: Verdict::ProcessEnded,
                behaviour: Some(&not_recovered),
                expected: None,
                fault_slos: &[],
                probe: OomKilled,
                alive: false,
                outcome: OomKilled,
                detail: "ended during the load: killed by SIGSEGV",
            },
            Row {
                name: "a probe verdict about the tree outranks lost writes",
                verdict: service(Ok, None),
                behaviour: Some(&loses),
                expected: None,
                fault_slos: &[],
                probe: Deadlock,
                alive: true,
                outcome: Deadlock,
                detail: "killed by SIGSEGV",
            },
            Row {
                name: "a probe verdict about the tree outranks the service's",
                verdict: service(SloViolated, Some("slow")),
                behaviour: None,
                expected: None,
                fault_slos: &[],
                probe: OomKilled,
                alive: true,
                outcome: OomKilled,
                detail: "killed by SIGSEGV",
            },
            Row {
                name: "a late recovery is not_recovered",
                verdict: service(Ok, None),
                behaviour: Some(&late),
                expected: None,
                fault_slos: &[],
                probe: Ok,
                alive: true,
                outcome: NotRecovered,
                detail: "recovers_late figures",
            },
            Row {
                name: "a late recovery the claim expects by name is not",
                verdict: service(Ok, None),
                behaviour: Some(&late),
                expected: Some(&[Behaved::RecoversLate, Behaved::FailsFast]),
                fault_slos: &[],
                probe: Ok,
                alive: true,
                outcome: Ok,
                detail: "summary; under the fault: recovers_late (recovers_late figures), as the claim expects",
            },
            Row {
                name: "a hang the claim does not expect",
                verdict: service(Ok, None),
                behaviour: Some(&hangs),
                expected: Some(&[Behaved::FailsFast, Behaved::Degrades, Behaved::Unaffected]),
                fault_slos: &[],
                probe: Ok,
                alive: true,
                outcome: UnexpectedBehaviour,
                detail: "under cache down: expected fails_fast, degrades or unaffected, observed hangs (hangs figures)",
            },
            Row {
                name: "the expected behaviour",
                verdict: service(Ok, None),
                behaviour: Some(&fails_fast),
                expected: Some(&[Behaved::FailsFast]),
                fault_slos: &held,
                probe: Ok,
                alive: true,
                outcome: Ok,
                detail: "summary; under the fault: fails_fast (fails_fast figures), as the claim expects",
            },
            Row {
                name: "without an expectation a hang fails by default",
                verdict: service(Ok, None),
                behaviour: Some(&hangs),
                expected: None,
                fault_slos: &[],
                probe: Ok,
                alive: true,
                outcome: UnexpectedBehaviour,
                detail: "under cache down: observed hangs (hangs figures); a hang fails unless the claim expects it by name (expect = { \"down\" = [\"hangs\"] })",
            },
            Row {
                name: "a hang the claim expects by name is accepted",
                verdict: service(Ok, None),
                behaviour: Some(&hangs),
                expected: Some(&[Behaved::Hangs]),
                fault_slos: &[],
                probe: Ok,
                alive: true,
                outcome: Ok,
                detail: "summary; under the fault: hangs (hangs figures), as the claim expects",
            },
            Row {
                name: "without an expectation other behaviours are stated and accepted",
                verdict: service(Ok, None),
                behaviour: Some(&fails_fast),
                expected: None,
                fault_slos: &[],
                probe: Ok,
                alive: true,
                outcome: Ok,
                detail: "summary; under the fault: fails_fast (fails_fast figures)",
            },
            Row {
                name: "a hang that also recovered late: the hang wins, the late recovery beside it",
                verdict: service(Ok, None),
                behaviour: Some(&hangs_late),
                expected: Some(&[Behaved::FailsFast]),
                fault_slos: &[],
                probe: Ok,
                alive: true,
                outcome: UnexpectedBehaviour,
                detail: "under cache down: expected fails_fast, observed hangs (hangs figures); and recovered only 4.0 s after the window, later than recover_within 3.0 s (not_recovered)",
            },
            Row {
                name: "a missed window objective and no recovery: the window wins, recovery beside it",
                verdict: service(Ok, None),
                behaviour: Some(&fails_fast_unrecovered),
                expected: None,
                fault_slos: &broken,
                probe: Ok,
                alive: true,
                outcome: UnexpectedBehaviour,
                detail: "latency_p99 = 1000 ms, limit max 300 ms (during the fault window); observed fails_fast (fails_fast figures); and not recovered by the end of the load (not_recovered)",
            },
            Row {
                name: "an objective for the window not held",
                verdict: service(Ok, None),
                behaviour: Some(&fails_fast),
                expected: Some(&[Behaved::FailsFast]),
                fault_slos: &broken,
                probe: Ok,
                alive: true,
                outcome: UnexpectedBehaviour,
                detail: "latency_p99 = 1000 ms, limit max 300 ms (during the fault window); observed fails_fast (fails_fast figures)",
            },
            Row {
                name: "the objectives outside the window outrank an expected behaviour",
                verdict: service(SloViolated, Some("latency_p99 = 150 ms")),
                behaviour: Some(&fails_fast),
                expected: Some(&[Behaved::FailsFast]),
                fault_slos: &held,
                probe: Ok,
                alive: true,
                outcome: SloViolated,
                detail: "latency_p99 = 150 ms; under the fault: fails_fast (fails_fast figures), as the claim expects",
            },
            Row {
                name: "an interrupted run is never unexpected_behaviour",
                verdict: service(Interrupted, Some("cancelled")),
                behaviour: Some(&hangs),
                expected: Some(&[Behaved::FailsFast]),
                fault_slos: &broken,
                probe: Ok,
                alive: true,
                outcome: Interrupted,
                detail: "cancelled; under the fault: hangs (hangs figures)",
            },
            Row {
                name: "the control: never a fault verdict, its recovery ignored",
                verdict: service(Ok, None),
                behaviour: Some(&control),
                expected: None,
                fault_slos: &held,
                probe: Ok,
                alive: true,
                outcome: Ok,
                detail: "summary; control figures",
            },
            Row {
                name: "a control that misses the window's objective without a fault",
                verdict: service(Ok, None),
                behaviour: Some(&control),
                expected: None,
                fault_slos: &broken,
                probe: Ok,
                alive: true,
                outcome: SloViolated,
                detail: "latency_p99 = 1000 ms, limit max 300 ms (during the fault window) with no fault at all; summary; control figures",
            },
        ];
        for row in rows {
            let records: Vec<FaultRecord> = row
                .behaviour
                .map(|b| vec![record(b.verdict, row.expected)])
                .unwrap_or_default();
            let under = row.behaviour.map(|b| UnderFault {
                behaviour: b,
                expected: row.expected,
                records: &records,
                fault_slos: row.fault_slos,
                recover_within: 3.0,
            });
            let decided = decide(&row.verdict, under.as_ref(), || "summary".to_string());
            let mut r = probe(row.probe, "killed by SIGSEGV");
            decided.apply(&mut r, row.alive);
            assert_eq!(
                (r.outcome, r.detail.as_str()),
                (row.outcome, row.detail),
                "{}",
                row.name
            );
        }
    }

    fn phase(phase: Phase, sent: u64, errors: u64, p99: f64, seconds: (f64, f64)) -> PhaseReport {
        let latency = LatencySummary {
            count: sent - errors,
            p99: Some(p99),
            max: Some(p99),
            ..LatencySummary::default()
        };
        PhaseReport {
            phase,
            start_seconds: seconds.0,
            end_seconds: seconds.1,
            sent,
            completed: sent - errors,
            succeeded: sent - errors,
            dropped: 0,
            shed: 0,
            errors: ErrorCounts {
                timeout: errors,
                ..ErrorCounts::default()
            },
            peak_in_flight: 4,
            corrected: latency,
            uncorrected: latency,
            fast_errors: 0,
            fast_error_latency: LatencySummary::default(),
            fast_error_histogram: String::new(),
            ended_latency: latency,
            ended_histogram: String::new(),
        }
    }

    /// The load outside the window counts only the phases before the window and after
    /// `recover_within`: the fault's errors and its latency are left to recovery.
    #[test]
    fn outside_the_window_is_before_and_after_only() {
        let mut report: LoadReport = serde_json::from_value(serde_json::json!({
            "model": "open", "offered_rate": 100.0, "users": null,
            "duration_seconds": 10.0, "measured_seconds": 10.0, "warmup_seconds": 0.0,
            "sent": 1000, "completed": 900, "succeeded": 900, "dropped": 0, "shed": 0,
            "achieved_rate": 90.0, "throughput": 90.0,
            "errors": {"status_4xx": 0, "status_5xx": 0, "status_429": 0, "timeout": 100,
                       "refused": 0, "reset": 0, "unexpected_reply": 0, "other": 0},
            "latency": {
                "corrected": {"count": 900, "p50": 0.01, "p90": 0.5, "p99": 2.0, "p999": 2.0,
                              "max": 2.0, "mean": 0.2},
                "uncorrected": {"count": 900, "p50": 0.01, "p90": 0.5, "p99": 2.0,
                                "p999": 2.0, "max": 2.0, "mean": 0.2},
                "corrected_histogram": "", "histogram_encoding": "", "histogram_unit": ""
            },
            "timeline": [],
            "generator": {"threads": 1, "cpu_seconds": 0.1, "wall_seconds": 10.0,
                          "saturated": false, "connections_opened": 4,
                          "schedule_lag": {"dispatched": 1000, "late": 0}},
            "cancelled": false
        }))
        .unwrap();
        report.phases = vec![
            phase(Phase::Before, 300, 0, 0.01, (0.0, 3.0)),
            phase(Phase::During, 300, 90, 2.0, (3.0, 6.0)),
            phase(Phase::Recovery, 200, 10, 0.8, (6.0, 8.0)),
            phase(Phase::After, 200, 0, 0.02, (8.0, 10.0)),
        ];
        report.writes = Some(Writes::default());
        let outside = outside_window(&report);
        assert_eq!((outside.sent, outside.completed), (500, 500));
        assert_eq!(outside.errors.total(), 0);
        assert_eq!(outside.measured_seconds, 5.0);
        assert_eq!(outside.throughput, 100.0);
        assert_eq!(outside.latency.corrected.p99, Some(0.02));

        // The window alone: its requests, its errors, and as latency every request that ended
        // — the 90 timeouts at the moment they were given up on, not left out.
        let during = report
            .phases
            .iter_mut()
            .find(|p| p.phase == Phase::During)
            .unwrap();
        during.ended_latency = LatencySummary {
            count: 300,
            p99: Some(1.0),
            ..LatencySummary::default()
        };
        let window = fault_window(&report).unwrap();
        assert_eq!((window.sent, window.errors.timeout), (300, 90));
        assert_eq!(window.measured_seconds, 3.0);
        assert_eq!(window.throughput, 70.0);
        assert_eq!(window.latency.corrected.p99, Some(1.0));
        let judged = qualify_load::slo::evaluate_fault(
            &[qualify_model::Slo {
                metric: qualify_model::SloMetric::LatencyP99,
                bound: qualify_model::BoundKind::Max,
                limit: 0.3,
                phase: SloPhase::Fault,
            }],
            &window,
        );
        assert!(
            !judged[0].held,
            "a request that hung is as slow as its timeout"
        );
        report.phases.retain(|p| p.phase != Phase::During);
        assert!(fault_window(&report).is_none());
    }
}
