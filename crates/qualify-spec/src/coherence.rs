//! Contradictions between sections of a spec: each is an error with its place and a fix, never
//! something to "run anyway". Checked after every section parsed on its own:
//!
//! - `[claim] headroom` on an axis the target names no value for (nothing to measure it from),
//!   or on a memory axis (smaller is harder there: no boundary search maps it);
//! - a `[[waiver]]` naming a gap that `[target]` (or a `[[dependency]]`: `faults.<name>`)
//!   cannot produce;
//! - a fault axis's `dependency` or a `[target] dependencies` entry naming no `[[dependency]]`,
//!   or two fault axes on one dependency (a cell puts one fault on it);
//! - a `[target] workload` key naming an axis that is not a workload axis;
//! - `[performance]`: two `expect`s on one axis and metric, `min_efficiency` of a metric that
//!   grows with concurrency by design (`cpu`, `peak_memory`), `max_exponent` along an axis with
//!   fewer distinct values than a model needs;
//! - `[[slo]]` objectives that can never fail or never pass under `[load]`: a latency limit at
//!   or above the request timeout, a throughput floor above the offered rate (or above the
//!   lower rates of a load axis), a throughput ceiling at or above it.
//!
//! (`stall ≥ timeout` is checked in `limits.rs`: both values live there.)

use std::collections::BTreeMap;
use std::ops::Range;

use qualify_model::{AxisKind, Harder, Target};

use crate::axis::{CheckedAxis, Domain};
use crate::check::Checker;
use crate::claim::CheckedHeadroom;
use crate::dependency::{Dependency, DependencySource, Protocol};
use crate::performance::{ExpectRule, Performance};
use crate::waiver::Waiver;

/// Distinct points a scaling model needs (the analysis fits nothing with fewer).
pub const MODEL_POINTS: usize = 5;

pub(crate) fn headroom(
    headroom: &CheckedHeadroom,
    target: Option<&Target>,
    axes: &[CheckedAxis],
    ck: &mut Checker<'_>,
) {
    let empty = Target::default();
    let target = target.unwrap_or(&empty);
    for (axis, span) in &headroom.axis_spans {
        let Some(a) = axes.iter().find(|a| &a.axis.name == axis) else {
            let names: Vec<&str> = axes.iter().map(|a| a.axis.name.as_str()).collect();
            ck.error_help(
                span.clone(),
                format!("claim.headroom: no axis named `{axis}`"),
                format!("expected one of: {}", names.join(", ")),
            );
            continue;
        };
        match target.bound_for(axis, a.axis.kind) {
            None => ck.error_help(
                span.clone(),
                format!(
                    "claim.headroom.{axis}: [target] names no value for axis `{axis}`, so there is no target to measure headroom from"
                ),
                bound_help(axis, a.axis.kind),
            ),
            Some(b) if b.harder == Harder::Smaller => ck.error_help(
                span.clone(),
                format!(
                    "claim.headroom.{axis}: `{axis}` is a memory axis, where smaller is harder; headroom is measured along axes where larger is harder"
                ),
                "remove it; a memory axis's claim covers ceilings from target.memory up",
            ),
            Some(_) => {}
        }
    }
    if headroom.headroom.all.is_some()
        && let Some(span) = &headroom.span
        && !axes.iter().any(|a| {
            target
                .bound_for(&a.axis.name, a.axis.kind)
                .is_some_and(|b| b.harder == Harder::Larger)
        })
    {
        ck.error_help(
            span.clone(),
            "claim.headroom: no axis has a target value to measure headroom from",
            "name the target on an axis, e.g. [target] workload = { n = 10000 } for a workload axis `n`",
        );
    }
}

fn bound_help(axis: &str, kind: AxisKind) -> String {
    match kind {
        AxisKind::Workload => format!("add [target] workload = {{ {axis} = … }}"),
        AxisKind::Concurrency => "add [target] concurrency = … (or cores)".to_string(),
        AxisKind::Topology if axis == "nodes" => "add [target] nodes = …".to_string(),
        AxisKind::Topology => "add [target] cores = …".to_string(),
        AxisKind::Memory => "add [target] memory = …".to_string(),
        AxisKind::Load => {
            "add [target] rate = … (the offered load the target must sustain)".to_string()
        }
        AxisKind::Custom => "a custom axis has no target value; remove its headroom".to_string(),
        AxisKind::Fault => "a fault axis has no target value; remove its headroom".to_string(),
    }
}

/// The gap names a spec can produce: the target's facts ([`Target::possible_gaps`]) and, for
/// the declared dependencies, `faults` and `faults.<name>` (a dependency no fault examined).
pub(crate) fn possible_gaps(target: Option<&Target>, dependencies: &[String]) -> Vec<String> {
    let mut possible = target.map(Target::possible_gaps).unwrap_or_default();
    if !dependencies.is_empty() {
        possible.push("faults".to_string());
        possible.extend(dependencies.iter().map(|d| format!("faults.{d}")));
    }
    possible
}

pub(crate) fn waivers(
    waivers: &[(Waiver, Range<usize>)],
    target: Option<&Target>,
    dependencies: &[String],
    ck: &mut Checker<'_>,
) {
    let possible = possible_gaps(target, dependencies);
    for (w, span) in waivers {
        if possible.contains(&w.gap) {
            continue;
        }
        let help = if possible.is_empty() {
            "this spec's target can have no gap: remove the waiver (or add the fact to [target])"
                .to_string()
        } else {
            format!("the gaps this target can have: {}", possible.join(", "))
        };
        let message = if let Some(dependency) = w.gap.strip_prefix("faults.") {
            format!(
                "waiver names gap `{}`, but no [[dependency]] is called `{dependency}`",
                w.gap
            )
        } else {
            format!(
                "waiver names gap `{}`, which this spec's [target] cannot produce",
                w.gap
            )
        };
        ck.error_help(span.clone(), message, help);
    }
}

pub(crate) fn target_workload(
    spans: &BTreeMap<String, Range<usize>>,
    axes: &[CheckedAxis],
    ck: &mut Checker<'_>,
) {
    for (key, span) in spans {
        if let Some(a) = axes
            .iter()
            .find(|a| &a.axis.name == key && a.axis.kind != AxisKind::Workload)
        {
            ck.error_help(
                span.clone(),
                format!(
                    "target.workload.{key}: axis `{key}` is a {} axis, not a workload axis",
                    a.axis.kind
                ),
                match a.axis.kind {
                    AxisKind::Concurrency => "give its target as [target] concurrency = …",
                    AxisKind::Memory => "give its target as [target] memory = …",
                    _ => "name a kind = \"workload\" axis, or remove the entry",
                },
            );
        }
    }
}

pub(crate) fn performance(
    p: &Performance,
    spans: &[Range<usize>],
    axes: &[CheckedAxis],
    ck: &mut Checker<'_>,
) {
    let mut first: BTreeMap<(&str, &str), usize> = BTreeMap::new();
    for (e, span) in p.expects.iter().zip(spans) {
        let key = (e.axis.as_str(), e.metric.as_str());
        if let Some(at) = first.get(&key) {
            let help = format!(
                "the first is at {}; keep one expectation per axis and metric",
                ck.position(*at)
            );
            ck.error_help(
                span.clone(),
                format!(
                    "a second [[performance.expect]] on axis `{}` and metric `{}`: two thresholds for one curve contradict each other",
                    e.axis, e.metric
                ),
                help,
            );
        } else {
            first.insert(key, span.start);
        }
        match e.rule {
            ExpectRule::MinEfficiency(_) if matches!(e.metric.as_str(), "cpu" | "peak_memory") => {
                ck.error_help(
                    span.clone(),
                    format!(
                        "min_efficiency of `{}` is never measured: it grows with concurrency by design, so no speedup is computed from it",
                        e.metric
                    ),
                    "judge parallel efficiency on `wall` or on a throughput metric",
                );
            }
            ExpectRule::MinEfficiency(_)
                if matches!(e.metric.as_str(), "error_rate" | "dropped_rate") =>
            {
                ck.error_help(
                    span.clone(),
                    format!(
                        "min_efficiency of `{}` is never meaningful: a share of failed requests has no speedup (it is 0 where the service keeps up)",
                        e.metric
                    ),
                    "judge a service's scaling on `throughput` (or `achieved_rate`); bound error and dropped rates with [[slo]]",
                );
            }
            ExpectRule::MaxExponent(_) => {
                let Some(a) = axes.iter().find(|a| a.axis.name == e.axis) else {
                    continue;
                };
                if a.axis.search.is_some() || a.axis.kind != AxisKind::Workload {
                    continue;
                }
                let points = match &a.axis.domain {
                    Domain::Values(v) => v.len(),
                    Domain::Range(_) => a.axis.points().len(),
                };
                if points < MODEL_POINTS {
                    ck.error_help(
                        span.clone(),
                        format!(
                            "max_exponent along `{}` is never judged: a scaling model needs {MODEL_POINTS} distinct values and the axis has {points}",
                            e.axis
                        ),
                        format!("give axis `{}` at least {MODEL_POINTS} values", e.axis),
                    );
                }
            }
            _ => {}
        }
    }
}

/// Faults a dependency can take: a process fault (`kill`, `pause`, `restart`) needs a
/// dependency qualify starts (`start`), an HTTP fault (`status`, `throttle`, `http_delay`) one
/// declared `protocol = "http"`. A standing fault (`window = "all"`) is one on the wire or in
/// HTTP: a process fault ends or stops a dependency and keeps its window. Reported at the value.
pub(crate) fn fault_kinds(
    dependencies: &[Dependency],
    axes: &[CheckedAxis],
    standing: bool,
    ck: &mut Checker<'_>,
) {
    for a in axes {
        let Some(fault) = &a.axis.fault else {
            continue;
        };
        let Some(dep) = dependencies.iter().find(|d| d.name == fault.dependency) else {
            continue;
        };
        for (f, span) in fault.faults.iter().zip(&a.value_spans) {
            if f.kind.is_process() && standing {
                ck.error_help(
                    span.clone(),
                    format!(
                        "`{f}` acts on the processes of dependency `{}`, which a fault held for the whole load (window = \"all\") cannot: it would never run again",
                        dep.name
                    ),
                    "give [faults] a window = [\"3s\", \"8s\"] for process faults, or use a wire fault such as `latency(50ms)` or `down` as a standing one",
                );
                continue;
            }
            if f.kind.is_process() && matches!(dep.source, DependencySource::Upstream { .. }) {
                ck.error_help(
                    span.clone(),
                    format!(
                        "`{f}` acts on the processes of dependency `{}`, but it runs upstream: qualify does not own them",
                        dep.name
                    ),
                    format!(
                        "start the dependency per cell (start = [\"…\"] in its [[dependency]]) to {} it, or put a wire fault such as `down` on the upstream",
                        f.kind.name()
                    ),
                );
            }
            if f.kind.is_http() && dep.protocol != Protocol::Http {
                ck.error_help(
                    span.clone(),
                    format!(
                        "`{f}` is an HTTP fault, but dependency `{}` is not declared protocol = \"http\"",
                        dep.name
                    ),
                    format!(
                        "add protocol = \"http\" to [[dependency]] `{}` (the proxy then relays HTTP/1.1 requests), or use a wire fault",
                        dep.name
                    ),
                );
            }
        }
    }
}

/// Names that must be declared `[[dependency]]`s: each fault axis's `dependency` (and no two
/// fault axes on one dependency) and each `[target] dependencies` entry.
pub(crate) fn dependencies(
    declared: &[String],
    axes: &[CheckedAxis],
    target: &[(String, Range<usize>)],
    ck: &mut Checker<'_>,
) {
    let known = if declared.is_empty() {
        "the spec declares no [[dependency]]: add one with name, start (or upstream) and env"
            .to_string()
    } else {
        format!("declared dependencies: {}", declared.join(", "))
    };
    let mut faulted: BTreeMap<&str, usize> = BTreeMap::new();
    for a in axes {
        let (Some(fault), Some(span)) = (&a.axis.fault, &a.dependency_span) else {
            continue;
        };
        let dependency = fault.dependency.as_str();
        if !declared.iter().any(|d| d == dependency) {
            ck.error_help(
                span.clone(),
                format!(
                    "fault axis `{}` names dependency `{dependency}`, but no [[dependency]] is called that",
                    a.axis.name
                ),
                known.clone(),
            );
        } else if let Some(first) = faulted.get(dependency) {
            let help = format!(
                "the first is at {}; a cell puts one fault on a dependency: list every fault in one axis",
                ck.position(*first)
            );
            ck.error_help(
                span.clone(),
                format!("a second fault axis on dependency `{dependency}`"),
                help,
            );
        } else {
            faulted.insert(dependency, span.start);
        }
    }
    for (name, span) in target {
        if !declared.contains(name) {
            ck.error_help(
                span.clone(),
                format!("target.dependencies names `{name}`, but no [[dependency]] is called that"),
                format!(
                    "declare it with [[dependency]] name = \"{name}\" (so qualify can put faults on it), or remove it; {known}"
                ),
            );
        }
    }
}

/// Objectives that can never fail or never pass under the spec's own `[load]`: a latency
/// limit at or above the request timeout (a request is given up at the timeout, so — without
/// a wait for a free slot — none is ever slower; the objective judges nothing), a throughput
/// floor above every rate the load offers (it can never pass), a throughput ceiling at or above
/// it (it can never fail). Each is refused at the limit, naming the key it contradicts.
pub(crate) fn objectives(
    slos: &[crate::slo::CheckedSlo],
    load: Option<&crate::load::Load>,
    axes: &[CheckedAxis],
    ck: &mut Checker<'_>,
) {
    use qualify_model::slo::format_value;
    use qualify_model::{BoundKind, SloMetric};
    let Some(load) = load else {
        return;
    };
    let timeout = load.plan.timeout.as_secs_f64();
    // The largest and smallest arrival rates any cell offers (open model only).
    let offered: Option<(f64, f64)> = match (&load.amount, load.model()) {
        (_, crate::load::LoadModel::Closed) => None,
        (crate::load::Amount::Fixed(x), _) => Some((*x, *x)),
        (crate::load::Amount::Axis(name), _) => axes
            .iter()
            .find(|a| &a.axis.name == name)
            .and_then(|a| match &a.axis.domain {
                Domain::Values(values) => {
                    let rates: Vec<f64> = values.iter().filter_map(|v| v.as_f64()).collect();
                    let lo = rates.iter().copied().reduce(f64::min)?;
                    let hi = rates.iter().copied().reduce(f64::max)?;
                    Some((lo, hi))
                }
                Domain::Range(r) => Some((r.lo.as_f64(), r.hi.as_f64())),
            }),
    };
    for c in slos {
        let s = &c.slo;
        let span = c.limit_span.clone();
        if s.metric.is_latency() && s.limit >= timeout {
            ck.error_help(
                span,
                format!(
                    "{} max {} can never fail: [load] timeout = \"{}\" gives every request up by then, so none is counted slower",
                    s.metric,
                    duration_text(s.limit),
                    qualify_model::units::DurationText(load.plan.timeout),
                ),
                "lower the limit below the request timeout, or raise [load] timeout above the limit (a timed-out request counts at its timeout)",
            );
            continue;
        }
        let (Some((lo, hi)), SloMetric::Throughput) = (offered, s.metric) else {
            continue;
        };
        match s.bound {
            BoundKind::Min if s.limit > hi => ck.error_help(
                span,
                format!(
                    "throughput min {} can never pass: the load offers at most {} requests per second",
                    format_value(s.metric, s.limit),
                    trim_rate(hi)
                ),
                "throughput counts successful answers per second, which cannot exceed the offered rate: lower the floor, or offer more",
            ),
            BoundKind::Max if s.limit >= hi => ck.error_help(
                span,
                format!(
                    "throughput max {} can never fail: the load offers at most {} requests per second",
                    format_value(s.metric, s.limit),
                    trim_rate(hi)
                ),
                "a ceiling on successful answers per second must be below the offered rate to judge anything; remove it, or lower it",
            ),
            BoundKind::Min if lo < hi && s.limit > lo => {
                // Cells offering less than the floor fail by arithmetic, not by the service.
                ck.error_help(
                    span,
                    format!(
                        "throughput min {} can never pass at the load axis's lower rates (from {} requests per second)",
                        format_value(s.metric, s.limit),
                        trim_rate(lo)
                    ),
                    "those cells would fail whatever the service does: judge latency and error_rate along a load axis, and throughput at a fixed rate",
                )
            }
            _ => {}
        }
    }
}

/// A latency limit as written: `"2s"`, `"250ms"`.
fn duration_text(seconds: f64) -> String {
    let d = std::time::Duration::from_secs_f64(seconds.clamp(0.0, 1e12));
    format!("\"{}\"", qualify_model::units::DurationText(d))
}

/// `200`, `37.5`.
fn trim_rate(x: f64) -> String {
    if x.fract() == 0.0 {
        format!("{x:.0}")
    } else {
        format!("{x}")
    }
}
