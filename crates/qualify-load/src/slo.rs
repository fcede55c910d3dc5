//! Evaluating `[[slo]]` objectives against a [`LoadReport`] (pure). Latency metrics use the
//! corrected latencies. When the spec declares no `error_rate` objective, an implicit
//! `error_rate max 1%` is evaluated too (flagged `implicit`), so a service that answers every
//! request with an error is never `ok` for want of an objective. Objectives for the fault
//! window (`phase = "fault"`) are judged apart, on the window's own report
//! ([`evaluate_fault`]), never with the steady ones.

use qualify_model::{BoundKind, Slo, SloMetric, SloPhase};

use crate::report::LoadReport;
use qualify_model::load::LoadShape;

/// The implicit error-rate limit.
pub const DEFAULT_ERROR_RATE: f64 = 0.01;

/// The objective judged when the spec declares no `error_rate` one.
const IMPLICIT: Slo = Slo {
    metric: SloMetric::ErrorRate,
    bound: BoundKind::Max,
    limit: DEFAULT_ERROR_RATE,
    phase: SloPhase::WholeRun,
};

pub use qualify_model::slo::{SloResult, format_value};

/// The metric's value in `report` (see [`SloResult::value`]).
pub fn value(metric: SloMetric, report: &LoadReport) -> Option<f64> {
    match metric {
        SloMetric::ErrorRate => report.error_rate(),
        SloMetric::DroppedRate => report.dropped_rate(),
        SloMetric::Throughput => (report.measured_seconds > 0.0).then_some(report.throughput),
        latency => latency
            .quantile()
            .and_then(|q| report.latency.corrected.at(q)),
    }
}

fn judge(slo: &Slo, report: &LoadReport, implicit: bool, phase: SloPhase) -> SloResult {
    let value = value(slo.metric, report);
    SloResult {
        metric: slo.metric,
        bound: slo.bound,
        limit: slo.limit,
        value,
        held: value.is_some_and(|v| slo.bound.holds(v, slo.limit)),
        implicit,
        phase,
    }
}

/// Judge every steady objective (all but `phase = "fault"`, and the implicit error-rate one
/// when none is declared) over the whole measured phase.
pub fn evaluate(slos: &[Slo], report: &LoadReport) -> Vec<SloResult> {
    evaluate_as(slos, report, SloPhase::WholeRun)
}

/// [`evaluate`] on `report`, which covers `phase` (e.g. the load outside a fault window).
pub fn evaluate_as(slos: &[Slo], report: &LoadReport, phase: SloPhase) -> Vec<SloResult> {
    let steady: Vec<&Slo> = slos.iter().filter(|s| s.phase != SloPhase::Fault).collect();
    let mut out: Vec<SloResult> = steady
        .iter()
        .map(|s| judge(s, report, false, phase))
        .collect();
    if !steady.iter().any(|s| s.metric == SloMetric::ErrorRate) {
        out.push(judge(&IMPLICIT, report, true, phase));
    }
    out
}

/// Judge the objectives for the fault window (`phase = "fault"`) on `window`, the report of
/// the window's requests; no implicit objective (a window may allow any error rate).
pub fn evaluate_fault(slos: &[Slo], window: &LoadReport) -> Vec<SloResult> {
    slos.iter()
        .filter(|s| s.phase == SloPhase::Fault)
        .map(|s| judge(s, window, false, SloPhase::Fault))
        .collect()
}

/// A staged load's first failing second, written into `shape` (`first_failed_at_rate`,
/// `first_failed_second`, `first_failed_because`; all `None` when every second held): seconds
/// by the intended start of their requests, in order, skipping those that offered nothing. A
/// second fails when any of its arrivals was dropped; when its failed / sent requests exceed
/// a steady `error_rate` objective (the implicit 1% without one); or when a steady latency
/// objective's quantile of its requests' corrected latency (a timeout at its timeout) breaks the limit.
/// Throughput and `dropped_rate` objectives are not judged per second (a ramp's low start is
/// not a throughput failure; a drop fails the second by itself).
pub fn judge_seconds(slos: &[Slo], shape: &mut LoadShape) {
    judge_seconds_under(slos, shape, None);
}

/// What a ramp's first failure is measured against: the load's request timeout and its
/// `max_in_flight` (the delay budgets of an error-rate and of a dropped-arrival failure).
#[derive(Debug, Clone, Copy)]
pub struct RampLimits {
    pub timeout: f64,
    pub max_in_flight: u32,
}

/// [`judge_seconds`], and with `limits` how far the first failure can overstate the steady
/// capacity (`first_failed_overstates_by`, see [`LoadShape`]).
pub fn judge_seconds_under(slos: &[Slo], shape: &mut LoadShape, limits: Option<RampLimits>) {
    let steady: Vec<&Slo> = slos.iter().filter(|s| s.phase != SloPhase::Fault).collect();
    let mut error_slos: Vec<&Slo> = steady
        .iter()
        .copied()
        .filter(|s| s.metric == SloMetric::ErrorRate)
        .collect();
    if error_slos.is_empty() {
        error_slos.push(&IMPLICIT);
    }
    let failed = shape.seconds.iter().find_map(|sec| {
        if sec.sent + sec.dropped == 0 {
            return None;
        }
        if sec.dropped > 0 {
            return Some((
                sec,
                format!(
                    "{} of its arrivals dropped (no free slot before the schedule ended)",
                    sec.dropped
                ),
                Budget::Slots,
            ));
        }
        if sec.sent > 0 {
            let rate = sec.errors as f64 / sec.sent as f64;
            if let Some(slo) = error_slos.iter().find(|s| !s.bound.holds(rate, s.limit)) {
                return Some((
                    sec,
                    format!(
                        "error_rate {} of its requests ({} of {}) breaks {} {}",
                        format_value(SloMetric::ErrorRate, rate),
                        sec.errors,
                        sec.sent,
                        slo.bound,
                        format_value(SloMetric::ErrorRate, slo.limit)
                    ),
                    Budget::Timeout,
                ));
            }
        }
        steady.iter().find_map(|slo| {
            let v = sec.latency.at(slo.metric.quantile()?)?;
            (!slo.bound.holds(v, slo.limit)).then(|| {
                (
                    sec,
                    format!(
                        "{} {} of its requests breaks {} {}",
                        slo.metric,
                        format_value(slo.metric, v),
                        slo.bound,
                        format_value(slo.metric, slo.limit)
                    ),
                    Budget::Latency(slo.limit),
                )
            })
        })
    });
    let (rate, second, because, budget) = match failed {
        Some((sec, why, budget)) => (Some(sec.offered_rate), Some(sec.second), Some(why), budget),
        None => (None, None, None, Budget::None),
    };
    let overstates = match (rate, second, limits) {
        (Some(rate), Some(second), Some(limits)) => {
            let before = second
                .checked_sub(1)
                .and_then(|s| shape.seconds.get(s as usize))
                .map(|s| s.offered_rate);
            let slope = before.map(|b| rate - b).filter(|a| *a > 0.0);
            let delay = match budget {
                Budget::Latency(limit) => Some(limit),
                Budget::Timeout => Some(limits.timeout),
                Budget::Slots if rate > 0.0 => Some(f64::from(limits.max_in_flight) / rate),
                _ => None,
            };
            slope
                .zip(delay)
                .map(|(a, l)| (2.0 * a * rate * l).sqrt() + a)
        }
        _ => None,
    };
    shape.first_failed_at_rate = rate;
    shape.first_failed_second = second;
    shape.first_failed_because = because;
    shape.first_failed_overstates_by = overstates;
}

/// The delay a ramp's failing second ran out of.
enum Budget {
    None,
    /// A latency objective's limit, seconds.
    Latency(f64),
    /// Requests failed: the request timeout.
    Timeout,
    /// Arrivals dropped: the slots were full.
    Slots,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::tests_support::report;

    fn slo(metric: SloMetric, bound: BoundKind, limit: f64) -> Slo {
        Slo {
            metric,
            bound,
            limit,
            phase: SloPhase::WholeRun,
        }
    }

    #[test]
    fn every_metric_is_judged_against_its_bound() {
        // 1000 sent over 10 s: 990 answered (980 ok, 10 5xx), 10 timeouts, 5 dropped;
        // corrected p50 10 ms, p90 20 ms, p99 150 ms, p999 400 ms, max 900 ms.
        let r = report();
        use BoundKind::{Max, Min};
        use SloMetric::*;
        let table = [
            (slo(LatencyP50, Max, 0.010), Some(0.010), true),
            (slo(LatencyP90, Max, 0.019), Some(0.020), false),
            (slo(LatencyP99, Max, 0.200), Some(0.150), true),
            (slo(LatencyP999, Max, 0.300), Some(0.400), false),
            (slo(LatencyMax, Max, 1.0), Some(0.900), true),
            (slo(ErrorRate, Max, 0.01), Some(0.02), false),
            (slo(ErrorRate, Max, 0.05), Some(0.02), true),
            (slo(DroppedRate, Max, 0.001), Some(5.0 / 1005.0), false),
            (slo(Throughput, Min, 98.0), Some(98.0), true),
            (slo(Throughput, Min, 100.0), Some(98.0), false),
        ];
        for (s, value, held) in table {
            let got = evaluate(&[s], &r)[0];
            assert_eq!(got.value, value, "{:?}", s.metric);
            assert_eq!(got.held, held, "{}", got.describe());
            assert!(!got.implicit);
        }
    }

    #[test]
    fn an_error_rate_objective_is_implicit_unless_declared() {
        let r = report();
        let results = evaluate(&[slo(SloMetric::LatencyP99, BoundKind::Max, 0.2)], &r);
        assert_eq!(results.len(), 2);
        let implicit = results[1];
        assert!(implicit.implicit && !implicit.held);
        assert_eq!(implicit.describe(), "error_rate = 2.00%, limit max 1.00%");
        let declared = evaluate(&[slo(SloMetric::ErrorRate, BoundKind::Max, 0.05)], &r);
        assert_eq!(declared.len(), 1);
    }

    #[test]
    fn nothing_measured_is_not_held() {
        let mut r = report();
        r.sent = 0;
        r.dropped = 0;
        r.latency.corrected = Default::default();
        let results = evaluate(&[slo(SloMetric::LatencyP99, BoundKind::Max, 1.0)], &r);
        assert_eq!(results[0].value, None);
        assert!(!results[0].held);
        assert_eq!(
            results[0].describe(),
            "latency_p99 = not measured, limit max 1000 ms"
        );
        assert_eq!(results[1].value, None, "no error rate without requests");
    }

    #[test]
    fn fault_objectives_are_judged_only_over_the_window() {
        let r = report();
        let fault = Slo {
            phase: SloPhase::Fault,
            ..slo(SloMetric::LatencyP99, BoundKind::Max, 0.1)
        };
        let error_budget = Slo {
            phase: SloPhase::Fault,
            ..slo(SloMetric::ErrorRate, BoundKind::Max, 1.0)
        };
        // The steady judgement leaves them out (and keeps its implicit error rate: the fault
        // window's error budget is not the steady state's).
        let steady = evaluate_as(&[fault, error_budget], &r, SloPhase::OutsideWindow);
        assert_eq!(steady.len(), 1);
        assert!(steady[0].implicit && steady[0].phase == SloPhase::OutsideWindow);
        let during = evaluate_fault(&[fault, error_budget], &r);
        assert_eq!(during.len(), 2);
        assert!(
            during
                .iter()
                .all(|x| x.phase == SloPhase::Fault && !x.implicit)
        );
        assert!(!during[0].held, "p99 150 ms > 100 ms");
        assert!(during[1].held);
        assert_eq!(
            during[0].describe_with_phase(),
            "latency_p99 = 150 ms, limit max 100 ms (during the fault window)"
        );
    }

    #[test]
    fn values_are_formatted_in_their_units() {
        assert_eq!(format_value(SloMetric::LatencyP99, 0.35), "350 ms");
        assert_eq!(format_value(SloMetric::LatencyP50, 0.000_042), "0.042 ms");
        assert_eq!(format_value(SloMetric::DroppedRate, 0.125), "12.5%");
        assert_eq!(format_value(SloMetric::Throughput, 812.4), "812/s");
    }

    fn ramp_second(
        second: u32,
        rate: f64,
        p99: f64,
        errors: u64,
    ) -> qualify_model::load::ShapeSecond {
        qualify_model::load::ShapeSecond {
            second,
            offered_rate: rate,
            sent: rate as u64,
            answered: rate as u64 - errors,
            errors,
            dropped: 0,
            censored: 0,
            latency: crate::report::LatencySummary {
                count: rate as u64,
                p50: Some(p99 / 4.0),
                p90: Some(p99 / 2.0),
                p99: Some(p99),
                p999: Some(p99),
                max: Some(p99),
                mean: Some(p99 / 4.0),
            },
        }
    }

    fn shape(seconds: Vec<qualify_model::load::ShapeSecond>) -> LoadShape {
        LoadShape {
            stages: Vec::new(),
            start_rate: 0.0,
            arrivals: Default::default(),
            seconds,
            first_failed_at_rate: None,
            first_failed_second: None,
            first_failed_because: None,
            first_failed_overstates_by: None,
        }
    }

    #[test]
    fn a_ramp_fails_at_the_first_second_that_breaks_an_objective() {
        let p99 = [slo(SloMetric::LatencyP99, BoundKind::Max, 0.1)];
        let mut s = shape(vec![
            ramp_second(0, 0.0, 0.0, 0),
            ramp_second(1, 100.0, 0.01, 0),
            ramp_second(2, 200.0, 0.05, 0),
            ramp_second(3, 300.0, 0.4, 0),
            ramp_second(4, 400.0, 0.02, 0),
        ]);
        s.seconds[0].sent = 0;
        judge_seconds(&p99, &mut s);
        assert_eq!(s.first_failed_at_rate, Some(300.0));
        assert_eq!(s.first_failed_second, Some(3));
        assert_eq!(
            s.first_failed_because.as_deref(),
            Some("latency_p99 400 ms of its requests breaks max 100 ms")
        );
        // Errors: the implicit 1% without an error objective, the declared one with it.
        s.seconds[2].errors = 3;
        judge_seconds(&p99, &mut s);
        assert_eq!(
            s.first_failed_second,
            Some(2),
            "{:?}",
            s.first_failed_because
        );
        let lenient = [p99[0], slo(SloMetric::ErrorRate, BoundKind::Max, 0.05)];
        judge_seconds(&lenient, &mut s);
        assert_eq!(s.first_failed_second, Some(3));
        // A drop fails its second by itself; a fault-window objective is not judged here.
        s.seconds[1].dropped = 1;
        judge_seconds(&lenient, &mut s);
        assert_eq!(s.first_failed_at_rate, Some(100.0));
        let mut window = p99[0];
        window.phase = SloPhase::Fault;
        let mut ok = shape(vec![ramp_second(0, 50.0, 0.4, 0)]);
        judge_seconds(&[window], &mut ok);
        assert_eq!(ok.first_failed_at_rate, None);
        assert_eq!(ok.first_failed_because, None);
    }

    /// A ramp 10 → 80 req/s over 30 s (+2.33 req/s each second) against a p99 of 250 ms first
    /// fails near 43.8 req/s while the steady capacity is about 37: the backlog needed time to
    /// build. The overstatement bound covers that gap and says so.
    #[test]
    fn a_ramps_first_failure_says_how_far_it_can_overstate_steady_capacity() {
        let p99 = [slo(SloMetric::LatencyP99, BoundKind::Max, 0.25)];
        let a = 70.0 / 30.0;
        let seconds: Vec<_> = (0..30)
            .map(|k| {
                let rate = 10.0 + a * (f64::from(k) + 0.5);
                ramp_second(k, rate, if rate > 43.0 { 0.4 } else { 0.1 }, 0)
            })
            .collect();
        let mut s = shape(seconds);
        s.start_rate = 10.0;
        s.stages = vec![qualify_model::load::Stage {
            rate: 80.0,
            duration: std::time::Duration::from_secs(30),
        }];
        let limits = RampLimits {
            timeout: 2.0,
            max_in_flight: 256,
        };
        judge_seconds_under(&p99, &mut s, Some(limits));
        let rate = s.first_failed_at_rate.unwrap();
        let by = s.first_failed_overstates_by.unwrap();
        assert!((43.0..45.0).contains(&rate), "{rate}");
        let expected = (2.0 * a * rate * 0.25).sqrt() + a;
        assert!((by - expected).abs() < 1e-9, "{by} vs {expected}");
        assert!(rate - by < 37.0 && rate - by > 30.0, "{rate} - {by}");
        let text = s.first_failed_text().unwrap();
        assert!(
            text.contains("a ramp overstates steady capacity")
                && text.contains(&format!("up to {by:.1} req/s above")),
            "{text}"
        );
        // Without the load's limits (or a ramp that does not rise) nothing is claimed.
        judge_seconds(&p99, &mut s);
        assert_eq!(s.first_failed_overstates_by, None);
    }
}
