//! `[[slo]]`: service-level objectives a load is judged by — `metric` (`latency_p50`, `_p90`,
//! `_p99`, `_p999`, `_max` on the corrected latency; `error_rate`; `dropped_rate`;
//! `throughput` in successful requests per second) and one bound, `max` or `min`. Latency
//! limits are durations (`"200ms"`), rates fractions (`0.01`) or percentages (`"1%"`),
//! throughput a number. Latencies and rates take `max`; throughput takes `min` or `max`.
//! Without an `error_rate` objective the verdict adds an implicit `error_rate max 1%`.
//! `phase = "fault"` makes an objective apply inside the fault window only (a steady-state
//! hypothesis for the fault: e.g. `latency_p99` ≤ 300 ms with any error rate — fail fast);
//! `phase = "steady"` (the default) is everything else: the whole run, or outside the window
//! and its recovery in a cell with a fault window. A fault objective needs `[faults]`
//! (`spec.rs`).

use std::ops::Range;

use qualify_model::{BoundKind, Slo, SloMetric, SloPhase};
use serde::Deserialize;
use toml::{Spanned, Value};

use crate::check::{Checker, describe};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawSlo {
    metric: Spanned<String>,
    max: Option<Spanned<Value>>,
    min: Option<Spanned<Value>>,
    phase: Option<Spanned<String>>,
}

/// A checked objective and where its limit was written (for the contradictions
/// `coherence::objectives` finds between it and `[load]`).
pub(crate) struct CheckedSlo {
    pub slo: Slo,
    pub limit_span: Range<usize>,
}

/// The checked objectives, and where each `phase = "fault"` was written.
pub(crate) fn check(
    raw: Vec<RawSlo>,
    ck: &mut Checker<'_>,
) -> (Vec<CheckedSlo>, Vec<Range<usize>>) {
    let fault_spans = raw
        .iter()
        .filter_map(|s| s.phase.as_ref())
        .filter(|p| p.get_ref() == "fault")
        .map(Spanned::span)
        .collect();
    let slos = raw.into_iter().filter_map(|s| check_one(s, ck)).collect();
    (slos, fault_spans)
}

fn check_one(raw: RawSlo, ck: &mut Checker<'_>) -> Option<CheckedSlo> {
    let phase = match raw.phase.as_ref().map(|p| p.get_ref().as_str()) {
        None | Some("steady") => SloPhase::WholeRun,
        Some("fault") => SloPhase::Fault,
        Some(other) => {
            let span = raw.phase.as_ref().map(Spanned::span).unwrap_or_default();
            ck.error_help(
                span,
                format!("unknown [[slo]] phase `{other}`; expected `steady` or `fault`"),
                "phase = \"fault\" judges the objective inside the fault window only; leave phase out (or write \"steady\") for the rest of the run",
            );
            return None;
        }
    };
    let metric = match raw.metric.get_ref().parse::<SloMetric>() {
        Ok(m) => Some(m),
        Err(message) => {
            ck.error_help(
                raw.metric.span(),
                message,
                "latencies are the corrected ones (from each request's intended start); throughput is successful requests per second",
            );
            None
        }
    };
    let (bound, value) = match (raw.max, raw.min) {
        (Some(_), Some(min)) => {
            ck.error_help(
                min.span(),
                "an [[slo]] takes max or min, not both",
                "write one [[slo]] per bound",
            );
            return None;
        }
        (None, None) => {
            ck.error_help(
                raw.metric.span(),
                "an [[slo]] needs max = … or min = …",
                "e.g. metric = \"latency_p99\" with max = \"200ms\", or metric = \"throughput\" with min = 500",
            );
            return None;
        }
        (Some(max), None) => (BoundKind::Max, max),
        (None, Some(min)) => (BoundKind::Min, min),
    };
    let metric = metric?;
    if bound == BoundKind::Min && metric != SloMetric::Throughput {
        ck.error_help(
            value.span(),
            format!("{metric} takes max (an upper bound), not min"),
            format!("write max = … for {metric}; only throughput takes min"),
        );
        return None;
    }
    let limit = match metric.unit() {
        "s" => ck.duration(&value).map(|d| d.as_secs_f64()),
        "fraction" => fraction(&value, metric, ck),
        _ => match value.get_ref() {
            Value::Integer(n) if *n > 0 => Some(*n as f64),
            Value::Float(x) if x.is_finite() && *x > 0.0 => Some(*x),
            other => {
                ck.error_help(
                    value.span(),
                    format!("the throughput limit must be a positive number of requests per second, found {}", describe(other)),
                    "e.g. min = 500",
                );
                None
            }
        },
    }?;
    Some(CheckedSlo {
        slo: Slo {
            metric,
            bound,
            limit,
            phase,
        },
        limit_span: value.span(),
    })
}

/// A fraction below 1: a number (`0.01`), or a percentage string (`"1%"`). A bare number of
/// 1 or more is refused with the fix (`max = 1` is 100%, an objective that can never fail;
/// `max = 5` was surely meant as `"5%"`), and so is a percentage of 100 or more.
fn fraction(value: &Spanned<Value>, metric: SloMetric, ck: &mut Checker<'_>) -> Option<f64> {
    let (v, percent) = match value.get_ref() {
        Value::Integer(n) => (Some(*n as f64), false),
        Value::Float(x) => (Some(*x), false),
        Value::String(s) => (
            s.trim()
                .strip_suffix('%')
                .and_then(|p| p.trim().parse::<f64>().ok())
                .map(|p| p / 100.0),
            true,
        ),
        _ => (None, false),
    };
    match v {
        Some(v) if v.is_finite() && (0.0..1.0).contains(&v) => Some(v),
        Some(v) if v.is_finite() && !percent && v >= 1.0 => {
            let n = describe_number(v);
            ck.error_help(
                value.span(),
                if v == 1.0 {
                    format!("{metric} max = 1 means 100%: an objective that can never fail")
                } else {
                    format!("{metric} max = {n} would be {}%: a rate is a fraction of the requests, at most 1", describe_number(v * 100.0))
                },
                format!("1 means 100%; write \"{n}%\" for {n} percent (a bare number is a fraction: 0.01 is 1%)"),
            );
            None
        }
        Some(v) if v.is_finite() && v >= 1.0 => {
            ck.error_help(
                value.span(),
                format!(
                    "{metric} max = {} can never fail: at most 100% of the requests can fail",
                    describe(value.get_ref())
                ),
                "give the share of failures the service may have, e.g. max = \"1%\"; to judge latency alone, keep an error objective anyway (without one qualify adds error_rate max 1%)",
            );
            None
        }
        _ => {
            ck.error_help(
                value.span(),
                format!(
                    "the {metric} limit must be a fraction from 0 to 1 or a percentage, found {}",
                    describe(value.get_ref())
                ),
                "e.g. max = 0.01 or max = \"1%\"",
            );
            None
        }
    }
}

/// `5`, `2.5`: a number as the user wrote it.
fn describe_number(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else {
        v.to_string()
    }
}
