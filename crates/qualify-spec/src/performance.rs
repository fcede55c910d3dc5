//! `[performance]`: repeated, statistically summarized measurement of every cell, in shuffled
//! rounds. Owns the section's keys — `repeat` (`"auto"`, the default, or a fixed count of
//! rounds), `precision` (default 5%), `max_repeat` (default 20) and `budget` (wall time) for
//! `"auto"`, `seed` (of the rounds' shuffles; random when absent), `warmup` (default 1),
//! `regression` (the baseline threshold), `[performance.estimator]` (the location estimator of
//! the built-in `wall`, `cpu`, `peak_memory`), `[[performance.metric]]` (figures of merit parsed
//! from stdout with a one-group regex, each with its `estimator`), `[[performance.expect]]`
//! (`max_exponent` on a workload axis, `min_efficiency` on a concurrency axis) and
//! `[[performance.reference]]` (ReFrame-style reference with relative `lower`/`upper`
//! tolerances for a named cell) — their checks, and the extraction of a metric from a run's
//! output ([`PerfMetric::extract`]).

use std::collections::BTreeMap;
use std::time::Duration;

use qualify_model::limits::MAX_REPEAT;
use serde::{Deserialize, Serialize};
use toml::Spanned;

use crate::axis::{Axis, AxisKind, Domain, Value};
use crate::check::{Checker, describe};

/// The metrics every run yields without a regex: name, unit.
pub const BUILTIN_METRICS: [(&str, &str); 3] =
    [("wall", "s"), ("cpu", "s"), ("peak_memory", "bytes")];

/// The metrics every run of a service cell yields from its load report (`result.load`): name,
/// unit, which direction is better. Built in only for a spec with `[service]`. Latencies are
/// the corrected ones (from each request's intended start), in seconds; `throughput` counts
/// successful answers per second, `achieved_rate` every answer; the rates are fractions of
/// the requests sent (`error_rate`) or of the arrivals scheduled (`dropped_rate`). The names
/// are the `[[slo]]` metrics' (`qualify_model::SloMetric`), plus `achieved_rate`.
pub const SERVICE_METRICS: [(&str, &str, Better); 9] = [
    ("throughput", "req/s", Better::Higher),
    ("achieved_rate", "req/s", Better::Higher),
    ("latency_p50", "s", Better::Lower),
    ("latency_p90", "s", Better::Lower),
    ("latency_p99", "s", Better::Lower),
    ("latency_p999", "s", Better::Lower),
    ("latency_max", "s", Better::Lower),
    ("error_rate", "fraction", Better::Lower),
    ("dropped_rate", "fraction", Better::Lower),
];

/// Whether `name` is one of [`SERVICE_METRICS`].
pub fn is_service_metric(name: &str) -> bool {
    SERVICE_METRICS.iter().any(|(m, _, _)| *m == name)
}

/// Rounds every cell gets before `repeat = "auto"` looks at the precision (Extra-P asks for at
/// least 5 repetitions per point).
pub const MIN_ROUNDS: u64 = 5;
/// `precision` when the spec gives none: a 95% half-width of 5% of the estimate.
pub const DEFAULT_PRECISION: f64 = 0.05;
/// `max_repeat` when the spec gives none.
pub const DEFAULT_MAX_REPEAT: u64 = 20;

/// A checked `[performance]` section.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Performance {
    /// Measured runs (rounds) per cell after the warmup runs: a fixed count, or `auto`.
    pub repeat: Repeat,
    /// `auto`: the relative 95% half-width of its estimator a cell must reach to stop.
    pub precision: f64,
    /// `auto`: the most rounds a cell is measured in.
    pub max_repeat: u64,
    /// `auto`: no round starts once the performance run has taken this long.
    pub budget: Option<Duration>,
    /// Seed of the rounds' shuffles (`None`: drawn at run time and recorded in the receipt).
    pub seed: Option<u64>,
    /// Estimators of the built-in metrics given in `[performance.estimator]`.
    pub estimators: BTreeMap<String, Estimator>,
    /// Runs per cell whose measurements are discarded.
    pub warmup: u64,
    /// Relative change beyond which a significant regression against `--baseline` fails.
    pub regression: Option<f64>,
    /// Figures of merit parsed from stdout (the built-in `wall`, `cpu`, `peak_memory` are always
    /// measured).
    pub metrics: Vec<PerfMetric>,
    pub expects: Vec<PerfExpect>,
    pub references: Vec<PerfReference>,
    /// The spec has `[service]`: [`SERVICE_METRICS`] are built in too.
    pub service: bool,
}

impl Performance {
    /// The estimator of a built-in or declared metric: as declared, else the default
    /// ([`Estimator::default_for`]).
    pub fn estimator_of(&self, metric: &str) -> Estimator {
        self.estimators
            .get(metric)
            .copied()
            .or_else(|| {
                self.metrics
                    .iter()
                    .find(|m| m.name == metric)
                    .and_then(|m| m.estimator)
            })
            .unwrap_or_else(|| Estimator::default_for(metric))
    }

    /// Whether `name` is a built-in (for a service: a service metric too) or declared metric.
    pub fn has_metric(&self, name: &str) -> bool {
        BUILTIN_METRICS.iter().any(|(b, _)| *b == name)
            || (self.service && is_service_metric(name))
            || self.metrics.iter().any(|m| m.name == name)
    }
}

/// Whether a smaller or a larger value of a metric is better, how a cell's runs are located,
/// how often a cell is measured (the shared vocabulary's).
pub use qualify_model::{Better, Estimator, Repeat};

/// `[[performance.metric]]`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PerfMetric {
    pub name: String,
    /// A regular expression with exactly one capture group: the number.
    pub regex: String,
    pub better: Better,
    pub unit: Option<String>,
    /// `None`: the default for declared metrics (`median`).
    pub estimator: Option<Estimator>,
}

impl PerfMetric {
    /// The metric's value in a run's stdout: the capture group of the last match, as a number.
    /// Errors say what was not found, for the cell's record.
    pub fn extract(&self, stdout: &str) -> Result<f64, MetricError> {
        let re = regex::Regex::new(&self.regex).map_err(|source| MetricError::InvalidRegex {
            metric: self.name.clone(),
            source,
        })?;
        let Some(caps) = re.captures_iter(stdout).last() else {
            return Err(MetricError::NoMatch {
                metric: self.name.clone(),
                regex: self.regex.clone(),
            });
        };
        let text = caps.get(1).map_or("", |m| m.as_str());
        text.trim()
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite())
            .ok_or_else(|| MetricError::NotANumber {
                metric: self.name.clone(),
                captured: text.to_string(),
                regex: self.regex.clone(),
            })
    }
}

/// Why a `[[performance.metric]]` has no value in a run's stdout (an error of the cell, never
/// a zero): the metric, its regex and what it found.
#[derive(Debug, thiserror::Error)]
pub enum MetricError {
    #[error("metric `{metric}`: invalid regex: {source}")]
    InvalidRegex {
        metric: String,
        source: regex::Error,
    },
    #[error("metric `{metric}`: regex `{regex}` matched nothing in stdout")]
    NoMatch { metric: String, regex: String },
    #[error("metric `{metric}`: captured `{captured}` is not a number (regex `{regex}`)")]
    NotANumber {
        metric: String,
        captured: String,
        regex: String,
    },
}

/// `[[performance.expect]]` and `[[performance.reference]]`: the shared vocabulary's, so the
/// analysis judges them unconverted.
pub use qualify_model::performance::{
    Expect as PerfExpect, ExpectRule, Reference as PerfReference,
};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawPerformance {
    repeat: Option<Spanned<toml::Value>>,
    precision: Option<Spanned<toml::Value>>,
    max_repeat: Option<Spanned<i64>>,
    budget: Option<Spanned<toml::Value>>,
    seed: Option<Spanned<i64>>,
    #[serde(default)]
    estimator: BTreeMap<Spanned<String>, Spanned<String>>,
    warmup: Option<Spanned<i64>>,
    regression: Option<Spanned<toml::Value>>,
    #[serde(default)]
    metric: Vec<RawMetric>,
    #[serde(default)]
    expect: Vec<RawExpect>,
    #[serde(default)]
    reference: Vec<RawReference>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMetric {
    name: Spanned<String>,
    regex: Spanned<String>,
    better: Spanned<Better>,
    unit: Option<Spanned<String>>,
    estimator: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawExpect {
    axis: Spanned<String>,
    metric: Spanned<String>,
    max_exponent: Option<Spanned<toml::Value>>,
    min_efficiency: Option<Spanned<toml::Value>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawReference {
    params: Spanned<BTreeMap<Spanned<String>, Spanned<toml::Value>>>,
    metric: Spanned<String>,
    reference: Spanned<toml::Value>,
    lower: Spanned<toml::Value>,
    upper: Spanned<toml::Value>,
}

fn number(value: &Spanned<toml::Value>, what: &str, ck: &mut Checker<'_>) -> Option<f64> {
    match value.get_ref() {
        toml::Value::Integer(n) => Some(*n as f64),
        toml::Value::Float(x) if x.is_finite() => Some(*x),
        other => {
            ck.error(
                value.span(),
                format!("{what} must be a number, found {}", describe(other)),
            );
            None
        }
    }
}

/// An estimator's name, or an error at its place.
fn estimator(value: &Spanned<String>, what: &str, ck: &mut Checker<'_>) -> Option<Estimator> {
    let e = Estimator::parse(value.get_ref());
    if e.is_none() {
        ck.error_help(
            value.span(),
            format!("{what}: unknown estimator `{}`", value.get_ref()),
            "expected min (deterministic CPU-bound work: noise only adds), median (robust, the default) or mean (every run's cost counts)",
        );
    }
    e
}

/// `repeat`, `precision`, `max_repeat` and `budget`: a fixed count of rounds, or `auto` with
/// its precision, maximum and budget (those three are errors beside a fixed count).
fn repetition(raw: &RawPerformance, ck: &mut Checker<'_>) -> (Repeat, f64, u64, Option<Duration>) {
    let repeat = match &raw.repeat {
        None => Repeat::Auto,
        Some(r) => match r.get_ref() {
            toml::Value::String(s) if s == "auto" => Repeat::Auto,
            toml::Value::Integer(n) if *n >= 1 && *n as u64 <= MAX_REPEAT => {
                Repeat::Fixed(*n as u64)
            }
            toml::Value::Integer(n) if *n >= 1 => {
                ck.error(
                    r.span(),
                    format!("performance.repeat must be at most {MAX_REPEAT}, found {n}"),
                );
                Repeat::Auto
            }
            toml::Value::Integer(n) => {
                ck.error(
                    r.span(),
                    format!("performance.repeat must be a positive integer or \"auto\", found {n}"),
                );
                Repeat::Auto
            }
            other => {
                ck.error_help(
                    r.span(),
                    format!(
                        "performance.repeat must be a positive integer or \"auto\", found {}",
                        describe(other)
                    ),
                    "repeat = \"auto\" measures at least 5 rounds, then more while a cell is imprecise; repeat = 5 measures exactly 5",
                );
                Repeat::Auto
            }
        },
    };
    if let Repeat::Fixed(n) = repeat {
        for (key, span) in [
            ("precision", raw.precision.as_ref().map(Spanned::span)),
            ("max_repeat", raw.max_repeat.as_ref().map(Spanned::span)),
            ("budget", raw.budget.as_ref().map(Spanned::span)),
        ] {
            if let Some(span) = span {
                ck.error_help(
                    span,
                    format!("performance.{key} applies to repeat = \"auto\", but repeat = {n}"),
                    format!("remove {key}, or write repeat = \"auto\""),
                );
            }
        }
    }
    let precision = raw
        .precision
        .as_ref()
        .and_then(|p| {
            let v = number(p, "performance.precision", ck)?;
            if v > 0.0 && v < 1.0 {
                Some(v)
            } else {
                ck.error_help(
                    p.span(),
                    format!("performance.precision must be between 0 and 1, found {v}"),
                    "a relative 95% half-width: 0.05 repeats a cell until its estimate is known within ±5%",
                );
                None
            }
        })
        .unwrap_or(DEFAULT_PRECISION);
    let max_repeat = match &raw.max_repeat {
        Some(m) if *m.get_ref() < MIN_ROUNDS as i64 => {
            ck.error_help(
                m.span(),
                format!(
                    "performance.max_repeat must be at least {MIN_ROUNDS}, found {}",
                    m.get_ref()
                ),
                format!(
                    "repeat = \"auto\" measures every cell in at least {MIN_ROUNDS} rounds; for fewer write repeat = N"
                ),
            );
            DEFAULT_MAX_REPEAT
        }
        Some(m) if *m.get_ref() as u64 > MAX_REPEAT => {
            ck.error(
                m.span(),
                format!(
                    "performance.max_repeat must be at most {MAX_REPEAT}, found {}",
                    m.get_ref()
                ),
            );
            DEFAULT_MAX_REPEAT
        }
        Some(m) => *m.get_ref() as u64,
        None => DEFAULT_MAX_REPEAT,
    };
    let budget = raw.budget.as_ref().and_then(|b| ck.duration(b));
    (repeat, precision, max_repeat, budget)
}

fn metric_names(metrics: &[PerfMetric], service: bool) -> String {
    BUILTIN_METRICS
        .iter()
        .map(|(n, _)| (*n).to_string())
        .chain(
            SERVICE_METRICS
                .iter()
                .filter(|_| service)
                .map(|(n, _, _)| (*n).to_string()),
        )
        .chain(metrics.iter().map(|m| m.name.clone()))
        .collect::<Vec<_>>()
        .join(", ")
}

fn known_metric(
    name: &Spanned<String>,
    metrics: &[PerfMetric],
    service: bool,
    what: &str,
    ck: &mut Checker<'_>,
) {
    let n = name.get_ref();
    let known = BUILTIN_METRICS.iter().any(|(b, _)| b == n)
        || (service && is_service_metric(n))
        || metrics.iter().any(|m| &m.name == n);
    if !known && is_service_metric(n) {
        ck.error_help(
            name.span(),
            format!(
                "{what}: `{n}` is a service metric, measured only when the spec has [service]"
            ),
            format!(
                "qualify a service under load with [service] and [load] (see `qualify init --service`), or judge one of: {}",
                metric_names(metrics, false)
            ),
        );
    } else if !known {
        ck.error_help(
            name.span(),
            format!("{what}: unknown metric `{n}`"),
            format!(
                "expected one of: {}; declare others with [[performance.metric]]",
                metric_names(metrics, service)
            ),
        );
    }
}

fn axis_names(axes: &[Axis]) -> String {
    axes.iter()
        .map(|a| a.name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The section, with the span of each accepted expectation's `axis` (for `coherence.rs`).
/// `service`: the spec has `[service]` (the service metrics are built in).
pub(crate) fn check(
    raw: RawPerformance,
    axes: &[Axis],
    service: bool,
    ck: &mut Checker<'_>,
) -> (Performance, Vec<std::ops::Range<usize>>) {
    let (repeat, precision, max_repeat, budget) = repetition(&raw, ck);
    let seed = match &raw.seed {
        Some(s) if *s.get_ref() < 0 => {
            ck.error(
                s.span(),
                format!("performance.seed must be 0 or more, found {}", s.get_ref()),
            );
            None
        }
        Some(s) => Some(*s.get_ref() as u64),
        None => None,
    };
    let mut estimators = BTreeMap::new();
    for (name, value) in &raw.estimator {
        let builtin = BUILTIN_METRICS.iter().any(|(b, _)| b == name.get_ref())
            || (service && is_service_metric(name.get_ref()));
        if !builtin {
            let listed = if service {
                "wall, cpu, peak_memory or a service metric (throughput, latency_p99, …)"
            } else {
                "wall, cpu or peak_memory"
            };
            ck.error_help(
                name.span(),
                format!(
                    "[performance.estimator]: `{}` is not a built-in metric{}",
                    name.get_ref(),
                    if is_service_metric(name.get_ref()) {
                        " of a spec without [service]"
                    } else {
                        ""
                    }
                ),
                format!(
                    "name {listed} here; a declared metric takes estimator = \"…\" in its [[performance.metric]]"
                ),
            );
            continue;
        }
        if let Some(e) = estimator(value, "[performance.estimator]", ck) {
            estimators.insert(name.get_ref().clone(), e);
        }
    }
    let warmup = match &raw.warmup {
        Some(w) if *w.get_ref() < 0 => {
            ck.error(
                w.span(),
                format!(
                    "performance.warmup must be 0 or more, found {}",
                    w.get_ref()
                ),
            );
            1
        }
        Some(w) if *w.get_ref() as u64 > MAX_REPEAT => {
            ck.error(
                w.span(),
                format!(
                    "performance.warmup must be at most {MAX_REPEAT}, found {}",
                    w.get_ref()
                ),
            );
            1
        }
        Some(w) => *w.get_ref() as u64,
        None => 1,
    };
    let regression = raw.regression.as_ref().and_then(|r| {
        let v = number(r, "performance.regression", ck)?;
        if v > 0.0 {
            Some(v)
        } else {
            ck.error_help(
                r.span(),
                format!("performance.regression must be positive, found {v}"),
                "a relative change, e.g. 0.1 fails a significant slowdown of more than 10%",
            );
            None
        }
    });

    let mut metrics: Vec<PerfMetric> = Vec::new();
    for m in raw.metric {
        let name = ck.non_empty(&m.name, "performance.metric name");
        if BUILTIN_METRICS.iter().any(|(b, _)| *b == name) {
            ck.error_help(
                m.name.span(),
                format!("metric `{name}` is built in"),
                "wall, cpu and peak_memory are always measured; give a parsed metric another name",
            );
        } else if service && is_service_metric(&name) {
            ck.error_help(
                m.name.span(),
                format!("metric `{name}` is built in for a service"),
                "a service cell's throughput, achieved_rate, latencies and error and dropped rates come from its load report; give a parsed metric another name",
            );
        } else if metrics.iter().any(|x| x.name == name) {
            ck.error(m.name.span(), format!("duplicate metric `{name}`"));
        }
        match regex::Regex::new(m.regex.get_ref()) {
            Err(e) => {
                let first = e.to_string();
                let first = first.lines().last().unwrap_or("").trim().to_string();
                ck.error_help(
                    m.regex.span(),
                    format!("invalid regex for metric `{name}`: {first}"),
                    "write a regular expression with one capture group, e.g. \"GFLOP/s: ([0-9.]+)\"",
                );
            }
            Ok(re) if re.captures_len() != 2 => ck.error_help(
                m.regex.span(),
                format!(
                    "the regex of metric `{name}` has {} capture groups; it needs exactly one",
                    re.captures_len() - 1
                ),
                "put the number in one group, e.g. \"GFLOP/s: ([0-9.]+)\"; use (?:...) for other groups",
            ),
            Ok(_) => {}
        }
        let metric_estimator = m
            .estimator
            .as_ref()
            .and_then(|e| estimator(e, &format!("metric `{name}`"), ck));
        metrics.push(PerfMetric {
            name,
            regex: m.regex.get_ref().clone(),
            better: *m.better.get_ref(),
            unit: m.unit.map(|u| u.into_inner()),
            estimator: metric_estimator,
        });
    }

    let mut expects = Vec::new();
    let mut expect_spans = Vec::new();
    for e in raw.expect {
        known_metric(&e.metric, &metrics, service, "performance.expect", ck);
        let axis = axes.iter().find(|a| &a.name == e.axis.get_ref());
        if axis.is_none() {
            ck.error_help(
                e.axis.span(),
                format!("performance.expect: no axis named `{}`", e.axis.get_ref()),
                format!("expected one of: {}", axis_names(axes)),
            );
        }
        let rule = match (&e.max_exponent, &e.min_efficiency) {
            (Some(_), Some(m)) => {
                ck.error_help(
                    m.span(),
                    "performance.expect takes max_exponent or min_efficiency, not both",
                    "write one [[performance.expect]] per rule",
                );
                None
            }
            (None, None) => {
                ck.error_help(
                    e.axis.span(),
                    "performance.expect needs max_exponent or min_efficiency",
                    "e.g. max_exponent = 1.2 on a workload axis, min_efficiency = 0.6 on a concurrency axis",
                );
                None
            }
            (Some(x), None) => {
                let v = number(x, "max_exponent", ck);
                if let Some(a) = axis.filter(|a| a.kind != AxisKind::Workload) {
                    ck.error_help(
                        x.span(),
                        format!(
                            "max_exponent needs a workload axis; `{}` is a {} axis",
                            a.name, a.kind
                        ),
                        "scaling models are fitted along kind = \"workload\" axes",
                    );
                }
                match v {
                    Some(v) if v < 0.0 => {
                        ck.error(
                            x.span(),
                            format!("max_exponent must be 0 or more, found {v}"),
                        );
                        None
                    }
                    v => v.map(ExpectRule::MaxExponent),
                }
            }
            (None, Some(x)) => {
                let v = number(x, "min_efficiency", ck);
                if let Some(a) = axis.filter(|a| a.kind != AxisKind::Concurrency) {
                    ck.error_help(
                        x.span(),
                        format!(
                            "min_efficiency needs a concurrency axis; `{}` is a {} axis",
                            a.name, a.kind
                        ),
                        "parallel efficiency is measured along kind = \"concurrency\" axes",
                    );
                }
                match v {
                    Some(v) if !(v > 0.0 && v <= 1.0) => {
                        ck.error_help(
                            x.span(),
                            format!("min_efficiency must be in (0, 1], found {v}"),
                            "efficiency is speedup / concurrency: 1 is perfect scaling",
                        );
                        None
                    }
                    v => v.map(ExpectRule::MinEfficiency),
                }
            }
        };
        if let Some(rule) = rule {
            expect_spans.push(e.axis.span());
            expects.push(PerfExpect {
                axis: e.axis.get_ref().clone(),
                metric: e.metric.get_ref().clone(),
                rule,
            });
        }
    }

    let mut references = Vec::new();
    for r in raw.reference {
        known_metric(&r.metric, &metrics, service, "performance.reference", ck);
        let mut params = qualify_model::Params::new();
        let mut entries: Vec<(Spanned<String>, Spanned<toml::Value>)> =
            r.params.into_inner().into_iter().collect();
        entries.sort_by_key(|(k, _)| k.span().start);
        if entries.is_empty() {
            ck.error_help(
                r.metric.span(),
                "performance.reference: params is empty",
                "name the cell, e.g. params = { n = 1024 }",
            );
        }
        for (key, value) in entries {
            let Some(axis) = axes.iter().find(|a| &a.name == key.get_ref()) else {
                ck.error_help(
                    key.span(),
                    format!("performance.reference: no axis named `{}`", key.get_ref()),
                    format!("expected one of: {}", axis_names(axes)),
                );
                continue;
            };
            let v = match value.get_ref() {
                toml::Value::Integer(n) => Value::Int(*n),
                toml::Value::Float(x) => Value::Float(*x),
                toml::Value::String(s) => Value::Text(s.clone()),
                other => {
                    ck.error(
                        value.span(),
                        format!(
                            "wrong type: found {}, expected an axis value",
                            describe(other)
                        ),
                    );
                    continue;
                }
            };
            if !in_domain(axis, &v) {
                ck.error_help(
                    value.span(),
                    format!("`{v}` is not a value of axis `{}`", axis.name),
                    "a reference names a cell the run measures",
                );
            }
            params.insert(axis.name.clone(), v);
        }
        let reference = number(&r.reference, "reference", ck);
        let lower = number(&r.lower, "lower", ck);
        let upper = number(&r.upper, "upper", ck);
        let help = "tolerances are relative to the reference: lower = -0.1, upper = 0.1 allow ±10%";
        match (lower, upper) {
            (Some(lo), Some(up)) if lo > up => ck.error_help(
                r.lower.span(),
                format!("lower ({lo}) is greater than upper ({up})"),
                help,
            ),
            _ => {
                if let Some(lo) = lower.filter(|lo| *lo > 0.0 || *lo < -1.0) {
                    ck.error_help(
                        r.lower.span(),
                        format!("lower must be between -1 and 0, found {lo}"),
                        help,
                    );
                }
                if let Some(up) = upper.filter(|up| *up < 0.0) {
                    ck.error_help(
                        r.upper.span(),
                        format!("upper must be 0 or more, found {up}"),
                        help,
                    );
                }
            }
        }
        if let (Some(reference), Some(lower), Some(upper)) = (reference, lower, upper) {
            references.push(PerfReference {
                params,
                metric: r.metric.get_ref().clone(),
                reference,
                lower,
                upper,
            });
        }
    }

    (
        Performance {
            repeat,
            precision,
            max_repeat,
            budget,
            seed,
            estimators,
            warmup,
            regression,
            metrics,
            expects,
            references,
            service,
        },
        expect_spans,
    )
}

fn in_domain(axis: &Axis, v: &Value) -> bool {
    let same = |a: &Value| match (a.as_f64(), v.as_f64()) {
        (Some(x), Some(y)) => x == y,
        _ => a == v,
    };
    match &axis.domain {
        Domain::Values(values) => values.iter().any(same),
        Domain::Range(r) => v
            .as_f64()
            .is_some_and(|x| x >= r.lo.as_f64() && x <= r.hi.as_f64()),
    }
}
