//! The service cell's verdict (pure): from readiness, the load report, the judged SLOs and
//! whether the service's process was still alive, one of the contract outcomes (the one
//! [`Outcome`] enum) `ok`, `slo_violated`, `overloaded`, `unavailable`, or `interrupted` (not
//! evidence about the service: the run was cancelled, or the load generator was the
//! bottleneck) — or "the process ended": then the probe's classifier (crash, oom_killed,
//! exit_failure, deadlock) decides.
//!
//! Order of the rules: never ready → `unavailable`; cancelled → `interrupted`; process ended
//! → the probe decides; connections refused while alive → `unavailable`; generator saturated →
//! `interrupted` (detail: not evidence about the service) — unless the load was open-model, its
//! lag stayed under [`LAG_HELD`] and the service still held everything (not overloaded, every
//! SLO held): the corrected latency counts the generator's lag against the service, so a pass
//! despite it stands (`ok`, the lag named), while a failure might be the generator's own;
//! dropped arrivals, achieved < 90% of offered, or more than 1% of requests shed (429/503) →
//! `overloaded`; an SLO not held → `slo_violated`; else `ok`.

use qualify_model::Outcome;

use crate::report::LoadReport;
use crate::slo::SloResult;

/// Below this fraction of the offered rate a service did not keep up.
pub const KEPT_UP: f64 = 0.9;
/// More than this fraction of requests answered 429/503 means the service shed load.
pub const SHED_FRACTION: f64 = 0.01;
/// An open-model generator that fell behind its schedule by at most this much (seconds, its
/// worst dispatch) still offered the planned load, bunched: a service that held every
/// objective under it keeps its `ok`. Beyond it (a generator that drifts) the run is not
/// evidence about the service whatever it shows.
pub const LAG_HELD: f64 = 0.25;

/// What the verdict is decided from.
#[derive(Debug, Clone, Copy)]
pub struct CellFacts<'a> {
    /// `Some(why)` when the service never became ready (e.g. `no answer 2xx on /healthz
    /// within 20 s`).
    pub not_ready: Option<&'a str>,
    /// The load's report (`None` when no load ran: not ready, or a service without `[load]`).
    pub report: Option<&'a LoadReport>,
    pub slos: &'a [SloResult],
    /// The service's main process was alive when the load ended.
    pub process_alive: bool,
}

/// The decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The service's outcome: `ok`, `slo_violated`, `overloaded`, `unavailable`, or
    /// `interrupted` when the run is not evidence about the service.
    Service {
        outcome: Outcome,
        detail: Option<String>,
    },
    /// The process ended during the load: the probe's own outcome stands.
    ProcessEnded,
}

impl Verdict {
    fn of(outcome: Outcome, detail: impl Into<Option<String>>) -> Verdict {
        Verdict::Service {
            outcome,
            detail: detail.into(),
        }
    }

    /// The service outcome, if the verdict is one.
    pub fn outcome(&self) -> Option<Outcome> {
        match self {
            Verdict::Service { outcome, .. } => Some(*outcome),
            Verdict::ProcessEnded => None,
        }
    }

    pub fn detail(&self) -> Option<&str> {
        match self {
            Verdict::Service { detail, .. } => detail.as_deref(),
            Verdict::ProcessEnded => None,
        }
    }

    /// Whether the verdict says something about the service (not for a cancelled run or a
    /// saturated generator; when the process ended, the probe's own classification does).
    pub fn is_evidence(&self) -> bool {
        self.outcome() != Some(Outcome::Interrupted)
    }
}

/// Decide a service cell (see the module's rule order).
pub fn decide(facts: &CellFacts<'_>) -> Verdict {
    if let Some(why) = facts.not_ready {
        return Verdict::of(Outcome::Unavailable, format!("never ready: {why}"));
    }
    let Some(r) = facts.report else {
        return if facts.process_alive {
            Verdict::of(Outcome::Ok, None)
        } else {
            Verdict::ProcessEnded
        };
    };
    if r.cancelled {
        return Verdict::of(
            Outcome::Interrupted,
            "the load was cancelled before it ended".to_string(),
        );
    }
    if !facts.process_alive {
        return Verdict::ProcessEnded;
    }
    if r.errors.refused > 0 {
        return Verdict::of(
            Outcome::Unavailable,
            format!(
                "{} of {} requests were refused a connection while the service's process was alive",
                r.errors.refused, r.sent
            ),
        );
    }
    if r.generator.saturated {
        let why = r
            .generator
            .detail
            .as_deref()
            .unwrap_or("the load generator could not keep its schedule");
        let open = r.offered_rate.is_some();
        let bounded = r.generator.schedule_lag.max.is_some_and(|m| m <= LAG_HELD);
        let held = overload(r).is_none() && facts.slos.iter().all(|s| s.held);
        if open && bounded && held {
            return Verdict::of(
                Outcome::Ok,
                format!(
                    "every objective held although the load generator lagged ({why}): its lag counts against the service in the corrected latency, so the pass stands"
                ),
            );
        }
        return Verdict::of(
            Outcome::Interrupted,
            format!(
                "not evidence about the service: the load generator was the bottleneck ({why})"
            ),
        );
    }
    if let Some(detail) = overload(r) {
        return Verdict::of(Outcome::Overloaded, detail);
    }
    let failed: Vec<String> = facts
        .slos
        .iter()
        .filter(|s| !s.held)
        .map(SloResult::describe_scoped)
        .collect();
    if !failed.is_empty() {
        return Verdict::of(Outcome::SloViolated, failed.join("; "));
    }
    Verdict::of(Outcome::Ok, None)
}

/// Why the service did not keep up, if it did not.
fn overload(r: &LoadReport) -> Option<String> {
    let mut why = Vec::new();
    if let Some(offered) = r.offered_rate
        && offered > 0.0
    {
        let ratio = r.achieved_rate / offered;
        if ratio < KEPT_UP {
            why.push(format!(
                "answered {:.1}/s of {:.1}/s offered ({:.0}%)",
                r.achieved_rate,
                offered,
                ratio * 100.0
            ));
        }
    }
    if r.dropped > 0 {
        why.push(format!(
            "{} arrivals dropped (every slot was busy until the schedule ended)",
            r.dropped
        ));
    }
    if r.sent > 0 && r.shed as f64 > SHED_FRACTION * r.sent as f64 {
        why.push(format!(
            "shed load: {} of {} requests answered 429/503",
            r.shed, r.sent
        ));
    }
    if why.is_empty() {
        return None;
    }
    let errors = r.errors.describe();
    if !errors.is_empty() {
        why.push(format!("errors: {errors}"));
    }
    Some(why.join("; "))
}

#[cfg(test)]
mod tests {
    use qualify_model::{BoundKind, Slo, SloMetric};

    use super::*;
    use crate::report::tests_support::report;
    use crate::slo::evaluate;

    fn healthy() -> LoadReport {
        let mut r = report();
        r.completed = 1000;
        r.succeeded = 1000;
        r.dropped = 0;
        r.errors = Default::default();
        r.achieved_rate = 100.0;
        r.throughput = 100.0;
        r
    }

    fn decide_with(r: &LoadReport, slos: &[Slo], alive: bool) -> Verdict {
        let judged = evaluate(slos, r);
        decide(&CellFacts {
            not_ready: None,
            report: Some(r),
            slos: &judged,
            process_alive: alive,
        })
    }

    fn p99_under(limit: f64) -> Slo {
        Slo {
            metric: SloMetric::LatencyP99,
            bound: BoundKind::Max,
            limit,
            phase: Default::default(),
        }
    }

    #[test]
    fn verdict_table() {
        type Edit = fn(&mut LoadReport);
        type Row = (&'static str, Edit, Slo, bool, Option<Outcome>, &'static str);
        let table: [Row; 11] = [
            (
                "healthy",
                |_| {},
                p99_under(0.2),
                true,
                Some(Outcome::Ok),
                "",
            ),
            (
                "slow p99",
                |_| {},
                p99_under(0.1),
                true,
                Some(Outcome::SloViolated),
                "latency_p99 = 150 ms, limit max 100 ms",
            ),
            (
                "errors over the implicit 1%",
                |r| {
                    r.errors.status_5xx = 30;
                    r.succeeded = 970;
                },
                p99_under(0.2),
                true,
                Some(Outcome::SloViolated),
                "error_rate = 3.00%, limit max 1.00%",
            ),
            (
                "dropped arrivals",
                |r| r.dropped = 3,
                p99_under(0.2),
                true,
                Some(Outcome::Overloaded),
                "3 arrivals dropped",
            ),
            (
                "achieved below 90%",
                |r| {
                    r.achieved_rate = 85.0;
                    r.errors.timeout = 150;
                },
                p99_under(0.2),
                true,
                Some(Outcome::Overloaded),
                "answered 85.0/s of 100.0/s offered (85%); errors: timeout 150",
            ),
            (
                "achieved at 90% is kept up",
                |r| r.achieved_rate = 90.0,
                p99_under(0.2),
                true,
                Some(Outcome::Ok),
                "",
            ),
            (
                "shed with 503s",
                |r| {
                    r.shed = 200;
                    r.errors.status_5xx = 200;
                },
                p99_under(0.2),
                true,
                Some(Outcome::Overloaded),
                "shed load: 200 of 1000 requests answered 429/503",
            ),
            (
                "refused while alive",
                |r| r.errors.refused = 4,
                p99_under(0.2),
                true,
                Some(Outcome::Unavailable),
                "4 of 1000 requests were refused",
            ),
            (
                "process ended",
                |r| r.errors.refused = 4,
                p99_under(0.2),
                false,
                None,
                "",
            ),
            (
                "generator saturated",
                |r| {
                    r.generator.saturated = true;
                    r.generator.detail = Some("late".into());
                    r.dropped = 9;
                },
                p99_under(0.1),
                true,
                Some(Outcome::Interrupted),
                "not evidence about the service: the load generator was the bottleneck (late)",
            ),
            (
                "cancelled",
                |r| {
                    r.cancelled = true;
                    r.dropped = 9;
                },
                p99_under(0.1),
                false,
                Some(Outcome::Interrupted),
                "cancelled",
            ),
        ];
        for (name, edit, slo, alive, outcome, detail) in table {
            let mut r = healthy();
            edit(&mut r);
            let v = decide_with(&r, &[slo], alive);
            assert_eq!(v.outcome(), outcome, "{name}: {v:?}");
            if detail.is_empty() {
                assert_eq!(v.detail(), None, "{name}");
            } else {
                let got = v.detail().unwrap_or("");
                assert!(got.contains(detail), "{name}: `{got}` lacks `{detail}`");
            }
        }
    }

    #[test]
    fn readiness_and_services_without_load() {
        let v = decide(&CellFacts {
            not_ready: Some("no answer 2xx on /healthz within 20 s"),
            report: None,
            slos: &[],
            process_alive: true,
        });
        assert_eq!(v.outcome(), Some(Outcome::Unavailable));
        assert_eq!(
            v.detail(),
            Some("never ready: no answer 2xx on /healthz within 20 s")
        );
        let facts = |alive| CellFacts {
            not_ready: None,
            report: None,
            slos: &[],
            process_alive: alive,
        };
        assert_eq!(decide(&facts(true)).outcome(), Some(Outcome::Ok));
        assert_eq!(decide(&facts(false)), Verdict::ProcessEnded);
    }

    #[test]
    fn a_lagging_generator_spoils_a_failure_never_a_bounded_pass() {
        let lagged = |max: f64| {
            let mut r = healthy();
            r.generator.saturated = true;
            r.generator.detail = Some("late".into());
            r.generator.schedule_lag.max = Some(max);
            r
        };
        // Held everything although every lag counted against it: the pass stands, lag named.
        let v = decide_with(&lagged(0.05), &[p99_under(1.0)], true);
        assert_eq!(v.outcome(), Some(Outcome::Ok), "{v:?}");
        assert!(
            v.detail().is_some_and(|d| d.contains("lagged (late)")),
            "{v:?}"
        );
        // A failed objective may be the generator's own lag: not evidence.
        let v = decide_with(&lagged(0.05), &[p99_under(0.000_001)], true);
        assert_eq!(v.outcome(), Some(Outcome::Interrupted), "{v:?}");
        // A generator that drifted seconds behind did not offer the planned load.
        let v = decide_with(&lagged(2.0), &[p99_under(1.0)], true);
        assert_eq!(v.outcome(), Some(Outcome::Interrupted), "{v:?}");
        // A busy closed-model generator sent fewer requests than the users would have.
        let mut r = lagged(0.05);
        r.offered_rate = None;
        let v = decide_with(&r, &[p99_under(1.0)], true);
        assert_eq!(v.outcome(), Some(Outcome::Interrupted), "{v:?}");
    }

    #[test]
    fn closed_model_has_no_offered_rate_to_fall_short_of() {
        let mut r = healthy();
        r.offered_rate = None;
        r.achieved_rate = 1.0;
        assert_eq!(decide_with(&r, &[], true).outcome(), Some(Outcome::Ok));
        assert!(decide_with(&r, &[], true).is_evidence());
        r.generator.saturated = true;
        assert!(!decide_with(&r, &[], true).is_evidence());
    }
}
