//! The rows of the Service under load section: one per cell whose result carries `load` (the
//! shape `qualify_model::ServiceLoad` serializes: the load report plus the cell's `slo` — each
//! objective with the phase it was judged over —, `verdict`, `ready_seconds`, `stop` and
//! `memory_growth`; goodput beside answers per second, overall and per phase), read tolerantly
//! — a missing or mistyped part becomes `None`, empty text or an empty list.

use serde_json::{Map, Value};

use super::json::{arr, f, obj, s};
use crate::text::{self, num};

/// The error classes in the load generator's contract order; others follow, sorted.
const ERROR_CLASSES: [&str; 8] = [
    "status_4xx",
    "status_5xx",
    "status_429",
    "timeout",
    "refused",
    "reset",
    "unexpected_reply",
    "other",
];

/// Latency percentiles in seconds.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Percentiles {
    pub p50: Option<f64>,
    pub p90: Option<f64>,
    pub p99: Option<f64>,
    pub p999: Option<f64>,
    pub max: Option<f64>,
    pub mean: Option<f64>,
}

impl Percentiles {
    fn from_value(v: Option<&Value>) -> Percentiles {
        let g = |k: &str| f(v.and_then(|v| v.get(k)));
        Percentiles {
            p50: g("p50"),
            p90: g("p90"),
            p99: g("p99"),
            p999: g("p999"),
            max: g("max"),
            mean: g("mean"),
        }
    }
}

/// One objective as judged in the cell.
#[derive(Debug, Clone, PartialEq)]
pub struct SloRow {
    /// `latency_p99`, `error_rate`, …
    pub metric: String,
    /// `max` or `min`.
    pub bound: String,
    pub limit: Option<f64>,
    pub value: Option<f64>,
    pub held: bool,
    /// Added by qualify (no `error_rate` objective was declared).
    pub implicit: bool,
    /// What it was judged over: `whole_run` (also receipts without the field, whose objectives
    /// were all judged over the whole run), `outside_window` or `fault`.
    pub phase: String,
}

impl SloRow {
    /// `whole run`, `outside the fault window`, `during the fault window`.
    pub fn phase_words(&self) -> String {
        match self.phase.as_str() {
            "" | "whole_run" => "whole run".to_string(),
            "outside_window" => "outside the fault window".to_string(),
            "fault" => "during the fault window".to_string(),
            other => other.replace('_', " "),
        }
    }

    /// `latency_p99 158 ms ≤ 100 ms (outside the fault window): violated`.
    pub fn text(&self) -> String {
        let value = self.value.map_or_else(
            || "not measured".to_string(),
            |v| metric_value(&self.metric, v),
        );
        let op = match self.bound.as_str() {
            "min" => "≥",
            _ => "≤",
        };
        let limit = self
            .limit
            .map_or_else(|| "?".to_string(), |v| metric_value(&self.metric, v));
        format!(
            "{} {value} {op} {limit}{} ({}): {}",
            self.metric,
            if self.implicit { " (implicit)" } else { "" },
            self.phase_words(),
            if self.held { "held" } else { "violated" }
        )
    }

    /// A latency objective with an upper limit (drawn on the latency plots).
    pub fn latency_limit(&self) -> Option<f64> {
        (self.metric.starts_with("latency_") && self.bound != "min")
            .then_some(self.limit)
            .flatten()
    }

    /// [`SloRow::latency_limit`] of a steady objective (the plots draw the whole run; an
    /// objective for the fault window alone would be a line where it does not apply).
    pub fn steady_latency_limit(&self) -> Option<f64> {
        self.latency_limit().filter(|_| self.phase != "fault")
    }
}

/// One second of the measured phase.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Second {
    pub second: f64,
    pub sent: Option<f64>,
    pub completed: Option<f64>,
    pub errors: Option<f64>,
    /// Corrected p99 of the requests that completed in that second.
    pub p99: Option<f64>,
    /// A staged load: the rate its schedule offered in that second.
    pub offered: Option<f64>,
}

/// One phase window of the measured phase (`before`, `during`, `recovery`, `after`).
#[derive(Debug, Clone, PartialEq)]
pub struct PhaseRow {
    pub name: String,
    pub seconds: Option<f64>,
    pub sent: Option<f64>,
    /// Answers of every status.
    pub completed: Option<f64>,
    /// Answers that met `expect_status`.
    pub succeeded: Option<f64>,
    pub timeouts: Option<f64>,
    pub fast_errors: Option<f64>,
    pub fast_error_p99: Option<f64>,
}

impl PhaseRow {
    /// Answers per second of the phase.
    pub fn answered_rate(&self) -> Option<f64> {
        Some(self.completed? / self.seconds.filter(|s| *s > 0.0)?)
    }

    /// Successful answers per second of the phase.
    pub fn goodput(&self) -> Option<f64> {
        Some(self.succeeded? / self.seconds.filter(|s| *s > 0.0)?)
    }
}

/// Resident memory through the measured phase.
#[derive(Debug, Clone, PartialEq)]
pub struct Growth {
    pub grew_steadily: bool,
    pub slope_bytes_per_second: Option<f64>,
    pub seconds_to_ceiling: Option<f64>,
    pub detail: String,
}

/// What one service cell's load measured.
#[derive(Debug, Clone, PartialEq)]
pub struct ServiceRow {
    /// The cell's parameters, in the receipt's axis order.
    pub cell: String,
    pub params: Map<String, Value>,
    pub outcome: String,
    /// `open` or `closed`.
    pub model: String,
    /// Arrivals per second offered (open model).
    pub offered: Option<f64>,
    /// Concurrent users (closed model).
    pub users: Option<f64>,
    /// Answers per second during the measured phase.
    pub achieved: Option<f64>,
    /// Successful answers per second: goodput.
    pub throughput: Option<f64>,
    /// The phase windows around a fault (empty without one).
    pub phases: Vec<PhaseRow>,
    pub sent: Option<f64>,
    pub completed: Option<f64>,
    pub dropped: Option<f64>,
    /// Failed requests by class, the classes that occurred, in contract order.
    pub errors: Vec<(String, f64)>,
    pub corrected: Percentiles,
    pub uncorrected: Percentiles,
    /// Of the requests in the latency, those that timed out (counted at their timeout: a lower
    /// bound); `None` in receipts whose latency held answers only.
    pub censored: Option<f64>,
    pub slos: Vec<SloRow>,
    /// The service verdict's line.
    pub verdict: String,
    /// How the service ended when asked to stop.
    pub stop: String,
    /// The cell was flagged `slow_shutdown`.
    pub slow_shutdown: bool,
    pub memory: Option<Growth>,
    /// Seconds from the start until ready.
    pub ready: Option<f64>,
    pub generator_cpu: Option<f64>,
    /// The generator, not the service, limited the run.
    pub saturated: bool,
    pub timeline: Vec<Second>,
    /// A staged or Poisson load: its shape and, for a ramp, where objectives first failed.
    pub shape: Option<qualify_model::load::LoadShape>,
    /// A load split over generator processes: each one's share.
    pub generators: Vec<qualify_model::load::GeneratorSummary>,
}

impl ServiceRow {
    /// The cell's parameters, or `(no parameters)`.
    pub fn name(&self) -> &str {
        if self.cell.is_empty() {
            "(no parameters)"
        } else {
            &self.cell
        }
    }

    /// The x of the hockey stick: offered rate (open) or users (closed).
    pub fn amount(&self) -> Option<f64> {
        self.offered.or(self.users)
    }

    /// `100 req/s`, `64 users`, or `—`.
    pub fn offered_text(&self) -> String {
        match (self.offered, self.users) {
            (Some(o), _) => format!("{} req/s", num(o)),
            (None, Some(u)) => format!("{} users", num(u)),
            _ => "—".to_string(),
        }
    }

    /// `99.8 req/s` (answers per second), or `—`.
    pub fn achieved_text(&self) -> String {
        self.achieved
            .map_or_else(|| "—".to_string(), |a| format!("{} req/s", num(a)))
    }

    /// `98.2 req/s` (answers that met `expect_status` per second), or `—`.
    pub fn goodput_text(&self) -> String {
        self.throughput
            .map_or_else(|| "—".to_string(), |a| format!("{} req/s", num(a)))
    }

    /// `status_5xx 12, timeout 3`, or `none`.
    pub fn errors_text(&self) -> String {
        if self.errors.is_empty() {
            "none".to_string()
        } else {
            self.errors
                .iter()
                .map(|(k, n)| format!("{k} {}", num(*n)))
                .collect::<Vec<_>>()
                .join(", ")
        }
    }

    /// `grew steadily: 1.5 MiB/s, ceiling in 40 s`, `no steady growth`, or `—`.
    pub fn memory_text(&self) -> String {
        match &self.memory {
            None => "—".to_string(),
            Some(g) if g.grew_steadily => {
                let mut t = "grew steadily".to_string();
                if let Some(b) = g.slope_bytes_per_second {
                    t.push_str(&format!(": {} MiB/s", num(b / 1048576.0)));
                }
                if let Some(c) = g.seconds_to_ceiling {
                    t.push_str(&format!(", ceiling in {}", duration(c)));
                }
                t
            }
            Some(_) => "no steady growth".to_string(),
        }
    }

    /// The stop's line, with `slow_shutdown` named.
    pub fn stop_text(&self) -> String {
        let stop = if self.stop.is_empty() {
            "—".to_string()
        } else {
            self.stop.clone()
        };
        if self.slow_shutdown && !stop.contains("slow_shutdown") {
            format!("{stop} (slow_shutdown)")
        } else {
            stop
        }
    }

    /// Every objective held.
    pub fn slos_held(&self) -> bool {
        self.slos.iter().all(|x| x.held)
    }
}

/// A duration in seconds as people read it: `83 µs`, `43 ms`, `4.32 s`.
pub fn duration(x: f64) -> String {
    if !x.is_finite() {
        return num(x);
    }
    let a = x.abs();
    if a == 0.0 {
        "0 s".into()
    } else if a < 1e-3 {
        format!("{} µs", num(x * 1e6))
    } else if a < 1.0 {
        format!("{} ms", num(x * 1e3))
    } else {
        format!("{} s", num(x))
    }
}

/// A service metric's value: latencies as durations, rates in percent, throughput per second.
pub fn metric_value(metric: &str, v: f64) -> String {
    if metric.starts_with("latency") {
        duration(v)
    } else if metric.ends_with("_rate") {
        format!("{}%", num(v * 100.0))
    } else {
        format!("{}/s", num(v))
    }
}

/// Every cell with a `result.load` object, sorted by the axes in `order` (numbers by value,
/// text as text; a cell run twice keeps its runs in the receipt's order): the order every
/// renderer draws them in, terminal included.
pub(super) fn rows(cells: &[Value], order: &[String]) -> Vec<ServiceRow> {
    let mut rows: Vec<ServiceRow> = cells
        .iter()
        .filter_map(|c| {
            let r = c.get("result");
            let load = r.and_then(|r| r.get("load")).filter(|l| l.is_object())?;
            Some(row(c, r, load, order))
        })
        .collect();
    rows.sort_by(|a, b| by_axes(&a.params, &b.params, order));
    rows
}

/// Two cells' parameters compared axis by axis in `order`: numbers by value, otherwise as
/// text; a missing parameter first.
pub(super) fn by_axes(
    a: &Map<String, Value>,
    b: &Map<String, Value>,
    order: &[String],
) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    for axis in order {
        let o = match (a.get(axis), b.get(axis)) {
            (None, None) => Ordering::Equal,
            (None, Some(_)) => Ordering::Less,
            (Some(_), None) => Ordering::Greater,
            (Some(x), Some(y)) => match (x.as_f64(), y.as_f64()) {
                (Some(x), Some(y)) => x.total_cmp(&y),
                _ => text::value(x).cmp(&text::value(y)),
            },
        };
        if o != Ordering::Equal {
            return o;
        }
    }
    Ordering::Equal
}

fn row(c: &Value, r: Option<&Value>, load: &Value, order: &[String]) -> ServiceRow {
    let g = |k: &str| load.get(k);
    let params = obj(c.get("params"));
    let errors_map = obj(g("errors"));
    let mut errors: Vec<(String, f64)> = ERROR_CLASSES
        .iter()
        .filter_map(|k| Some((k.to_string(), f(errors_map.get(*k))?)))
        .collect();
    errors.extend(
        errors_map
            .iter()
            .filter(|(k, _)| !ERROR_CLASSES.contains(&k.as_str()))
            .filter_map(|(k, v)| Some((k.clone(), f(Some(v))?))),
    );
    errors.retain(|(_, n)| *n > 0.0);
    let latency = g("latency");
    let slos = arr(g("slo"))
        .iter()
        .map(|x| SloRow {
            metric: s(x.get("metric")),
            bound: s(x.get("bound")),
            limit: f(x.get("limit")),
            value: f(x.get("value")),
            held: x.get("held").and_then(Value::as_bool).unwrap_or(false),
            implicit: x.get("implicit").and_then(Value::as_bool).unwrap_or(false),
            phase: s(x.get("phase")),
        })
        .collect();
    let phases = arr(g("phases"))
        .iter()
        .map(|p| {
            let (start, end) = (f(p.get("start_seconds")), f(p.get("end_seconds")));
            PhaseRow {
                name: s(p.get("name")),
                seconds: start.zip(end).map(|(a, b)| b - a),
                sent: f(p.get("sent")),
                completed: f(p.get("completed")),
                succeeded: f(p.get("succeeded")),
                timeouts: f(p.get("errors").and_then(|e| e.get("timeout"))),
                fast_errors: f(p.get("fast_errors")),
                fast_error_p99: f(p.get("fast_error_latency").and_then(|l| l.get("p99"))),
            }
        })
        .collect();
    let memory = g("memory_growth")
        .filter(|m| m.is_object())
        .map(|m| Growth {
            grew_steadily: m
                .get("grew_steadily")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            slope_bytes_per_second: f(m.get("slope_bytes_per_second")),
            seconds_to_ceiling: f(m.get("seconds_to_ceiling")),
            detail: s(m.get("detail")),
        });
    let timeline = arr(g("timeline"))
        .iter()
        .enumerate()
        .map(|(i, t)| Second {
            second: f(t.get("second")).unwrap_or(i as f64),
            sent: f(t.get("sent")),
            completed: f(t.get("completed")),
            errors: f(t.get("errors")),
            p99: f(t.get("p99")),
            offered: f(t.get("offered")),
        })
        .collect();
    let flags = arr(r.and_then(|r| r.get("flags")));
    let generator = g("generator");
    let outcome = s(r.and_then(|r| r.get("outcome")));
    ServiceRow {
        cell: text::params(&params, order),
        params,
        outcome: if outcome.is_empty() {
            "unknown".into()
        } else {
            outcome
        },
        model: s(g("model")),
        offered: f(g("offered_rate")),
        users: f(g("users")),
        achieved: f(g("achieved_rate")),
        throughput: f(g("throughput")),
        phases,
        sent: f(g("sent")),
        completed: f(g("completed")),
        dropped: f(g("dropped")),
        errors,
        corrected: Percentiles::from_value(latency.and_then(|l| l.get("corrected"))),
        uncorrected: Percentiles::from_value(latency.and_then(|l| l.get("uncorrected"))),
        censored: f(latency.and_then(|l| l.get("censored"))),
        slos,
        verdict: s(g("verdict")),
        stop: s(g("stop")),
        slow_shutdown: flags.iter().any(|x| x.as_str() == Some("slow_shutdown")),
        memory,
        ready: f(g("ready_seconds")),
        generator_cpu: f(generator.and_then(|x| x.get("cpu_seconds"))),
        saturated: generator
            .and_then(|x| x.get("saturated"))
            .and_then(Value::as_bool)
            .unwrap_or(false),
        timeline,
        shape: g("shape").and_then(|v| serde_json::from_value(v.clone()).ok()),
        generators: g("generators")
            .and_then(|v| serde_json::from_value(v.clone()).ok())
            .unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_and_values_read_as_people_read_them() {
        assert_eq!(duration(0.000083), "83 µs");
        assert_eq!(duration(0.0429), "42.9 ms");
        assert_eq!(duration(4.321), "4.32 s");
        assert_eq!(metric_value("error_rate", 0.01), "1%");
        assert_eq!(metric_value("throughput", 180.8), "181/s");
        let slo = SloRow {
            metric: "latency_p99".into(),
            bound: "max".into(),
            limit: Some(0.1),
            value: Some(0.158),
            held: false,
            implicit: false,
            phase: "outside_window".into(),
        };
        assert_eq!(
            slo.text(),
            "latency_p99 158 ms ≤ 100 ms (outside the fault window): violated"
        );
        let old = SloRow {
            phase: String::new(),
            ..slo.clone()
        };
        assert_eq!(old.phase_words(), "whole run", "receipts before the field");
        assert_eq!(slo.latency_limit(), Some(0.1));
    }
}
