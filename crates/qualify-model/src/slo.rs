//! Service-level objectives: the metrics an `[[slo]]` can bound ([`SloMetric`], with their
//! contract strings and units) and one objective ([`Slo`]: a metric and a `max` or `min`
//! limit) and one objective judged ([`SloResult`], in the receipt's `load.slo`). The spec parses
//! them, the load generator's verdict evaluates them; both use these types, so a metric name is
//! spelled in one place.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::ParseError;

/// What an SLO bounds. Latencies are the coordinated-omission-corrected ones (measured from
/// each request's intended start), in seconds; rates are fractions; throughput is successful
/// requests per second.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SloMetric {
    LatencyP50,
    LatencyP90,
    LatencyP99,
    LatencyP999,
    LatencyMax,
    /// Failed requests (every error class) / requests sent.
    ErrorRate,
    /// Arrivals that never got a slot / arrivals scheduled.
    DroppedRate,
    /// Successful requests per second of the measured phase.
    Throughput,
}

impl SloMetric {
    /// Every metric, in contract order.
    pub const ALL: [SloMetric; 8] = [
        SloMetric::LatencyP50,
        SloMetric::LatencyP90,
        SloMetric::LatencyP99,
        SloMetric::LatencyP999,
        SloMetric::LatencyMax,
        SloMetric::ErrorRate,
        SloMetric::DroppedRate,
        SloMetric::Throughput,
    ];

    /// The contract string, e.g. `"latency_p99"`.
    pub fn as_str(self) -> &'static str {
        match self {
            SloMetric::LatencyP50 => "latency_p50",
            SloMetric::LatencyP90 => "latency_p90",
            SloMetric::LatencyP99 => "latency_p99",
            SloMetric::LatencyP999 => "latency_p999",
            SloMetric::LatencyMax => "latency_max",
            SloMetric::ErrorRate => "error_rate",
            SloMetric::DroppedRate => "dropped_rate",
            SloMetric::Throughput => "throughput",
        }
    }

    /// The unit of the metric's values and limits: `s`, `fraction` or `1/s`.
    pub fn unit(self) -> &'static str {
        match self {
            SloMetric::ErrorRate | SloMetric::DroppedRate => "fraction",
            SloMetric::Throughput => "1/s",
            _ => "s",
        }
    }

    /// Whether the metric is a latency (its limit is a duration).
    pub fn is_latency(self) -> bool {
        self.unit() == "s"
    }

    /// The quantile of a latency percentile metric (`latency_max` is 1.0); `None` otherwise.
    pub fn quantile(self) -> Option<f64> {
        match self {
            SloMetric::LatencyP50 => Some(0.5),
            SloMetric::LatencyP90 => Some(0.9),
            SloMetric::LatencyP99 => Some(0.99),
            SloMetric::LatencyP999 => Some(0.999),
            SloMetric::LatencyMax => Some(1.0),
            _ => None,
        }
    }

    /// The direction a sensible limit takes: `max` for latencies and rates of failure, `min`
    /// for throughput.
    pub fn natural_bound(self) -> BoundKind {
        match self {
            SloMetric::Throughput => BoundKind::Min,
            _ => BoundKind::Max,
        }
    }
}

impl fmt::Display for SloMetric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for SloMetric {
    type Err = ParseError;

    fn from_str(s: &str) -> Result<SloMetric, ParseError> {
        SloMetric::ALL
            .into_iter()
            .find(|m| m.as_str() == s)
            .ok_or_else(|| ParseError::new("SLO metric", s, SloMetric::ALL.map(SloMetric::as_str)))
    }
}

/// Whether a limit is an upper (`max`) or a lower (`min`) bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BoundKind {
    Max,
    Min,
}

impl BoundKind {
    pub fn as_str(self) -> &'static str {
        match self {
            BoundKind::Max => "max",
            BoundKind::Min => "min",
        }
    }

    /// Whether `value` satisfies a bound of this kind at `limit` (limits are inclusive).
    pub fn holds(self, value: f64, limit: f64) -> bool {
        match self {
            BoundKind::Max => value <= limit,
            BoundKind::Min => value >= limit,
        }
    }
}

impl fmt::Display for BoundKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The part of the measured phase an objective applies to, or was judged over.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SloPhase {
    /// The whole measured phase: a cell without a fault window, or the `none` control. As an
    /// objective's scope (the default): the steady state — the whole run, or in a cell with a
    /// fault window everything outside it and its recovery.
    #[default]
    WholeRun,
    /// Before the fault window, and after it once `recover_within` has passed.
    OutsideWindow,
    /// Inside the fault window (`[[slo]] phase = "fault"`): a latency there counts every
    /// request of the window, a timeout as slow as the moment it was given up on.
    Fault,
}

impl SloPhase {
    pub fn as_str(self) -> &'static str {
        match self {
            SloPhase::WholeRun => "whole_run",
            SloPhase::OutsideWindow => "outside_window",
            SloPhase::Fault => "fault",
        }
    }

    /// `whole run`, `outside the fault window`, `during the fault window`.
    pub fn words(self) -> &'static str {
        match self {
            SloPhase::WholeRun => "whole run",
            SloPhase::OutsideWindow => "outside the fault window",
            SloPhase::Fault => "during the fault window",
        }
    }
}

impl fmt::Display for SloPhase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One service-level objective: `metric` must stay at or below (`max`) or at or above (`min`)
/// `limit`, in the metric's unit ([`SloMetric::unit`]), over `phase`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Slo {
    pub metric: SloMetric,
    pub bound: BoundKind,
    pub limit: f64,
    /// `WholeRun` (the steady state, the default) or `Fault` (inside the fault window only).
    #[serde(default)]
    pub phase: SloPhase,
}

/// One objective, judged.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SloResult {
    pub metric: SloMetric,
    pub bound: BoundKind,
    pub limit: f64,
    /// `None` when the run measured nothing the metric could be computed from (no answer for
    /// a latency, nothing sent for a rate): the objective is then not held.
    pub value: Option<f64>,
    pub held: bool,
    /// Added by qualify (no `error_rate` objective was declared).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub implicit: bool,
    /// What it was judged over (receipts before this field: the whole run).
    #[serde(default)]
    pub phase: SloPhase,
}

impl SloResult {
    /// `latency_p99 = 350 ms, limit max 200 ms`.
    pub fn describe(&self) -> String {
        let value = self.value.map_or_else(
            || "not measured".to_string(),
            |v| format_value(self.metric, v),
        );
        format!(
            "{} = {value}, limit {} {}",
            self.metric,
            self.bound,
            format_value(self.metric, self.limit)
        )
    }

    /// [`SloResult::describe`] with the phase: `latency_p99 = 350 ms, limit max 200 ms (during
    /// the fault window)`.
    pub fn describe_with_phase(&self) -> String {
        format!("{} ({})", self.describe(), self.phase.words())
    }

    /// [`SloResult::describe`], with the phase when it is not the whole run (a cell without a
    /// fault window has no other).
    pub fn describe_scoped(&self) -> String {
        match self.phase {
            SloPhase::WholeRun => self.describe(),
            _ => self.describe_with_phase(),
        }
    }
}

/// A metric's value for people: milliseconds, percent or per second.
pub fn format_value(metric: SloMetric, v: f64) -> String {
    match metric.unit() {
        "s" => format!("{} ms", round(v * 1e3)),
        "fraction" => format!("{}%", round(v * 100.0)),
        _ => format!("{}/s", round(v)),
    }
}

fn round(v: f64) -> String {
    let digits = if v.abs() >= 100.0 {
        0
    } else if v.abs() >= 10.0 {
        1
    } else if v.abs() >= 1.0 {
        2
    } else {
        3
    };
    format!("{v:.digits$}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_names_list_the_choices() {
        for m in SloMetric::ALL {
            assert_eq!(m.as_str().parse::<SloMetric>(), Ok(m));
        }
        let err = "latency_p95".parse::<SloMetric>().unwrap_err();
        assert_eq!(err.input, "latency_p95");
        assert_eq!(err.accepted, SloMetric::ALL.map(SloMetric::as_str));
    }

    #[test]
    fn bounds_are_inclusive() {
        assert!(BoundKind::Max.holds(0.2, 0.2));
        assert!(!BoundKind::Max.holds(0.21, 0.2));
        assert!(BoundKind::Min.holds(100.0, 100.0));
        assert!(!BoundKind::Min.holds(99.9, 100.0));
    }
}
