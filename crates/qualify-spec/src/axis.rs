//! `[[axis]]`: one dimension of the operating region — its name (the `{placeholder}`), its kind,
//! and its domain: listed `values`, or a numeric `range = [lo, hi]` with a lattice given by
//! `scale` and `step`. `search = "boundary"` asks for the failure boundary instead of a sweep
//! and needs an ordered numeric axis. An axis of kind `memory` holds sizes (in bytes) and sets
//! the memory ceiling of each cell. An axis of kind `fault` lists faults (`none`,
//! `latency(200ms)`, `down`, … — [`qualify_model::Fault`]'s grammar) put on the `[[dependency]]`
//! its `dependency` key names; its values are kept in canonical form, parsed once here
//! ([`Axis::fault`]). A parse error points inside the string. A fault axis may state the
//! behaviours the claim accepts under each fault (`expect`, checked in `expect.rs`).

use std::collections::BTreeMap;
use std::ops;

use serde::Deserialize;
use toml::Spanned;

use crate::check::{Checker, describe};
use crate::expect::{self, RawExpect};
use crate::template::is_placeholder_name;
use qualify_model::Fault;
use qualify_model::range::{Number, NumericRange, Scale};

/// The most points a swept range (one without `search`) may expand to.
pub const MAX_SWEEP_POINTS: usize = 1000;

/// The most points a searched range other than a unit-step integer one may have (those are
/// listed for the planner; a unit-step integer range is searched by index, at any size).
pub const MAX_SEARCH_POINTS: usize = 100_000;

/// The checked axis is the vocabulary's ([`qualify_model::axis`]): the spec checks it, the
/// planner plans it, the evidence and the analysis read it.
pub use qualify_model::axis::{Axis, Domain, FaultAxis, Search};
pub use qualify_model::{AxisKind, Value};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawAxis {
    name: Spanned<String>,
    kind: Spanned<AxisKind>,
    values: Option<Spanned<Vec<Spanned<toml::Value>>>>,
    range: Option<Spanned<Vec<Spanned<toml::Value>>>>,
    search: Option<Spanned<Search>>,
    step: Option<Spanned<toml::Value>>,
    scale: Option<Spanned<Scale>>,
    dependency: Option<Spanned<String>>,
    expect: Option<Spanned<RawExpect>>,
}

impl RawAxis {
    pub(crate) fn name(&self) -> &str {
        self.name.get_ref()
    }

    pub(crate) fn kind(&self) -> AxisKind {
        *self.kind.get_ref()
    }
}

/// A checked axis and where its name was written (and, for a fault axis, its `dependency`).
pub(crate) struct CheckedAxis {
    pub axis: Axis,
    pub name_span: ops::Range<usize>,
    pub dependency_span: Option<ops::Range<usize>>,
    /// Where each of `values` was written (empty for a range).
    pub value_spans: Vec<ops::Range<usize>>,
}

pub(crate) fn check_all(raw: Vec<RawAxis>, ck: &mut Checker<'_>) -> Vec<CheckedAxis> {
    let mut first_seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut memory_axis: Option<usize> = None;
    let mut checked = Vec::new();
    for raw in raw {
        let name = raw.name.get_ref().clone();
        let name_span = raw.name.span();
        if !is_placeholder_name(&name) {
            ck.error_help(
                name_span.clone(),
                format!("axis name {name:?} cannot be used as a placeholder"),
                "use letters, digits, `_` and `-`, starting with a letter or `_`",
            );
        }
        if let Some(first) = first_seen.get(&name) {
            let help = format!("the first axis `{name}` is at {}", ck.position(*first));
            ck.error_help(
                name_span.clone(),
                format!("duplicate axis name `{name}`"),
                help,
            );
        } else {
            first_seen.insert(name.clone(), name_span.start);
        }
        let kind = *raw.kind.get_ref();
        if kind == AxisKind::Memory {
            if let Some(first) = memory_axis {
                let help = format!(
                    "the first memory axis is at {}; one ceiling per cell needs one memory axis",
                    ck.position(first)
                );
                ck.error_help(raw.kind.span(), "more than one axis of kind `memory`", help);
            } else {
                memory_axis = Some(raw.kind.span().start);
            }
        }
        let dependency_span = raw.dependency.as_ref().map(Spanned::span);
        let value_spans = raw
            .values
            .as_ref()
            .map(|v| v.get_ref().iter().map(Spanned::span).collect())
            .unwrap_or_default();
        if let Some(axis) = check_one(raw, kind, ck) {
            checked.push(CheckedAxis {
                axis,
                name_span,
                dependency_span,
                value_spans,
            });
        }
    }
    checked
}

fn check_one(raw: RawAxis, kind: AxisKind, ck: &mut Checker<'_>) -> Option<Axis> {
    let name = raw.name.get_ref().clone();
    let dependency = match (&raw.dependency, kind) {
        (Some(d), AxisKind::Fault) => Some(d.get_ref().clone()),
        (Some(d), _) => {
            ck.error_help(
                d.span(),
                format!("`dependency` applies only to an axis of kind = \"fault\", but axis `{name}` has kind `{kind}`"),
                "remove it, or set kind = \"fault\" to put the listed faults on that dependency",
            );
            None
        }
        (None, AxisKind::Fault) => {
            ck.error_help(
                raw.kind.span(),
                format!("fault axis `{name}` needs `dependency`: the [[dependency]] its faults are put on"),
                "add dependency = \"db\" (the name of a [[dependency]])",
            );
            None
        }
        (None, _) => None,
    };
    if kind == AxisKind::Fault {
        if let Some(range) = &raw.range {
            ck.error_help(
                range.span(),
                format!("fault axis `{name}` takes values, not a range"),
                "list the faults: values = [\"none\", \"latency(200ms)\", \"down\"]",
            );
            return None;
        }
        if let Some(search) = &raw.search {
            ck.error_help(
                search.span(),
                format!("search = \"boundary\" needs an ordered numeric axis; fault axis `{name}` lists faults"),
                "drop search: every listed fault is run",
            );
            return None;
        }
    }
    let domain = match (raw.values, raw.range) {
        (None, None) => {
            ck.error_help(
                raw.name.span(),
                format!("axis `{name}` has neither `values` nor `range`"),
                "give values = [1, 2, 4] (the points to run) or range = [lo, hi] (numeric bounds)",
            );
            return None;
        }
        (Some(_), Some(range)) => {
            ck.error_help(
                range.span(),
                format!("axis `{name}` has both `values` and `range`"),
                "keep one: values lists the points to run, range gives numeric bounds",
            );
            return None;
        }
        (Some(values), None) => {
            for (key, given) in [
                ("step", raw.step.as_ref().map(Spanned::span)),
                ("scale", raw.scale.as_ref().map(Spanned::span)),
            ] {
                if let Some(span) = given {
                    ck.error_help(
                        span,
                        format!("`{key}` applies only to an axis with `range`"),
                        "remove it, or replace values with range = [lo, hi]",
                    );
                }
            }
            Domain::Values(check_values(&name, kind, values, ck)?)
        }
        (None, Some(range)) => Domain::Range(check_range(
            &name,
            kind,
            range,
            raw.step,
            raw.scale,
            raw.search.is_some(),
            ck,
        )?),
    };
    if let Some(e) = raw.expect.as_ref().filter(|_| kind != AxisKind::Fault) {
        ck.error_help(
            e.span(),
            format!("`expect` states behaviours under faults, but axis `{name}` has kind `{kind}`"),
            "remove it, or put it on the axis with kind = \"fault\"",
        );
        return None;
    }
    let fault = match (&domain, kind) {
        (Domain::Values(values), AxisKind::Fault) => Some(FaultAxis {
            dependency: dependency.unwrap_or_default(),
            faults: values
                .iter()
                .map(|v| v.to_string().parse().unwrap_or_default())
                .collect(),
            expect: match &raw.expect {
                Some(e) => expect::check(&name, values, e, ck)?,
                None => Vec::new(),
            },
        }),
        _ => None,
    };
    let mut axis = Axis {
        name,
        kind,
        domain,
        search: raw.search.as_ref().map(|s| *s.get_ref()),
        fault,
    };
    if let Some(search) = raw.search.as_ref().filter(|_| !axis.is_numeric()) {
        ck.error_help(
            search.span(),
            format!(
                "search = \"boundary\" needs an ordered numeric axis, but axis `{}` has non-numeric values",
                axis.name
            ),
            "use numeric values or a range = [lo, hi], or drop search to sweep the listed values",
        );
        return None;
    }
    if let (Some(_), Domain::Values(values)) = (axis.search, &mut axis.domain) {
        values.sort_by(|a, b| {
            a.as_f64()
                .unwrap_or(0.0)
                .total_cmp(&b.as_f64().unwrap_or(0.0))
        });
    }
    Some(axis)
}

fn check_values(
    name: &str,
    kind: AxisKind,
    values: Spanned<Vec<Spanned<toml::Value>>>,
    ck: &mut Checker<'_>,
) -> Option<Vec<Value>> {
    if values.get_ref().is_empty() {
        ck.error_help(
            values.span(),
            format!("axis `{name}` has no values"),
            "list at least one value, e.g. values = [1, 2, 4], or give range = [lo, hi]",
        );
        return None;
    }
    let mut out: Vec<Value> = Vec::new();
    let mut ok = true;
    for value in values.get_ref() {
        let converted = match kind {
            AxisKind::Memory => ck.size(value).map(|bytes| Value::Int(bytes as i64)),
            AxisKind::Fault => fault_value(name, value, ck),
            _ => axis_value(value, ck),
        };
        match converted {
            Some(v) if out.iter().any(|seen| same(seen, &v)) => {
                ck.error(
                    value.span(),
                    format!("duplicate value `{v}` in axis `{name}`"),
                );
                ok = false;
            }
            Some(v) => out.push(v),
            None => ok = false,
        }
    }
    ok.then_some(out)
}

/// A fault axis's value: a fault text, kept in its canonical form (`latency(0.2s)` becomes
/// `latency(200ms)`, so equal faults are one value); a parse error points inside the string.
fn fault_value(name: &str, value: &Spanned<toml::Value>, ck: &mut Checker<'_>) -> Option<Value> {
    let toml::Value::String(text) = value.get_ref() else {
        ck.error_help(
            value.span(),
            format!(
                "wrong type: found {}, fault axis `{name}` lists faults as strings",
                describe(value.get_ref())
            ),
            "e.g. values = [\"none\", \"latency(200ms)\", \"down\", \"reset\"]",
        );
        return None;
    };
    match text.parse::<Fault>() {
        Ok(fault) => Some(Value::Text(fault.to_string())),
        Err(error) => {
            let token = text.get(error.span.clone()).unwrap_or("");
            ck.error_in_string(
                &value.span(),
                text,
                error.span.start,
                token,
                format!("fault axis `{name}`: {error}"),
                error.help(),
            );
            None
        }
    }
}

fn same(a: &Value, b: &Value) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

fn axis_value(value: &Spanned<toml::Value>, ck: &mut Checker<'_>) -> Option<Value> {
    match value.get_ref() {
        toml::Value::String(s) => Some(Value::Text(s.clone())),
        other => {
            number(value, other, "expected an integer, a float or a string", ck).map(Value::from)
        }
    }
}

fn number(
    spanned: &Spanned<toml::Value>,
    value: &toml::Value,
    expected: &str,
    ck: &mut Checker<'_>,
) -> Option<Number> {
    match value {
        toml::Value::Integer(n) => Some(Number::Int(*n)),
        toml::Value::Float(x) if x.is_finite() => Some(Number::Float(*x)),
        toml::Value::Float(x) => {
            ck.error(
                spanned.span(),
                format!("invalid value: found float `{x}`, expected a finite number"),
            );
            None
        }
        other => {
            ck.error(
                spanned.span(),
                format!("wrong type: found {}, {expected}", describe(other)),
            );
            None
        }
    }
}

/// A range bound or linear step: a size (bytes) on a memory axis, a number otherwise.
fn bound(value: &Spanned<toml::Value>, kind: AxisKind, ck: &mut Checker<'_>) -> Option<Number> {
    if kind == AxisKind::Memory {
        ck.size(value).map(|bytes| Number::Int(bytes as i64))
    } else {
        number(value, value.get_ref(), "expected a number", ck)
    }
}

fn check_range(
    name: &str,
    kind: AxisKind,
    range: Spanned<Vec<Spanned<toml::Value>>>,
    step: Option<Spanned<toml::Value>>,
    scale: Option<Spanned<Scale>>,
    searched: bool,
    ck: &mut Checker<'_>,
) -> Option<NumericRange> {
    let span = range.span();
    let [lo, hi] = range.get_ref().as_slice() else {
        ck.error_help(
            span,
            format!(
                "range of axis `{name}` must have two elements [lo, hi], found {}",
                range.get_ref().len()
            ),
            "write range = [lo, hi], e.g. range = [256, 65536]",
        );
        return None;
    };
    let (lo, hi) = (bound(lo, kind, ck), bound(hi, kind, ck));
    let (lo, hi) = (lo?, hi?);
    if lo.as_f64() > hi.as_f64() {
        ck.error_help(
            span,
            format!("range of axis `{name}` is empty: lo {lo} is greater than hi {hi}"),
            format!("write range = [lo, hi] with lo <= hi, e.g. range = [{hi}, {lo}]"),
        );
        return None;
    }
    let scale_value = scale.as_ref().map_or(Scale::Linear, |s| *s.get_ref());
    if scale_value == Scale::Log && lo.as_f64() <= 0.0 {
        let scale_span = scale.as_ref().map_or(span.clone(), Spanned::span);
        ck.error_help(
            scale_span,
            format!(
                "scale = \"log\" needs a positive lower bound, but axis `{name}` starts at {lo}"
            ),
            "raise lo above 0 or use scale = \"linear\"",
        );
        return None;
    }
    let step = match (&step, scale_value) {
        (Some(s), Scale::Linear) => {
            let n = bound(s, kind, ck)?;
            if n.as_f64() <= 0.0 {
                ck.error(
                    s.span(),
                    format!("step of axis `{name}` must be positive, found {n}"),
                );
                return None;
            }
            n
        }
        (Some(s), Scale::Log) => {
            let n = number(s, s.get_ref(), "expected a factor greater than 1", ck)?;
            if n.as_f64() <= 1.0 {
                ck.error_help(
                    s.span(),
                    format!(
                        "step of log-scale axis `{name}` must be a factor greater than 1, found {n}"
                    ),
                    "on scale = \"log\" each point is the previous one times step, e.g. step = 2",
                );
                return None;
            }
            n
        }
        (None, Scale::Log) => Number::Int(2),
        (None, Scale::Linear) => match (lo, hi) {
            (Number::Int(_), Number::Int(_)) => Number::Int(1),
            _ => {
                ck.error_help(
                    span,
                    format!("range of axis `{name}` has float bounds but no `step`"),
                    "add step = ... (the spacing of points), or scale = \"log\"",
                );
                return None;
            }
        },
    };
    let range = NumericRange {
        lo,
        hi,
        step,
        scale: scale_value,
    };
    if !searched {
        let count = range.points().take(MAX_SWEEP_POINTS + 1).count();
        if count > MAX_SWEEP_POINTS {
            ck.error_help(
                span,
                format!(
                    "range of axis `{name}` would sweep more than {MAX_SWEEP_POINTS} points"
                ),
                "add search = \"boundary\" to search it, a larger step, scale = \"log\", or list values",
            );
            return None;
        }
    } else if !range.is_unit_integer() {
        // The planner bisects a unit-step integer range by index; any other searched lattice
        // is listed point by point (`qualify_plan::Axis::declared`), so its size is bounded too.
        let count = range.points().take(MAX_SEARCH_POINTS + 1).count();
        if count > MAX_SEARCH_POINTS {
            ck.error_help(
                span,
                format!(
                    "range of axis `{name}` searched on this lattice has more than {MAX_SEARCH_POINTS} points"
                ),
                "search integers with step 1 (any size), or use a larger step or scale = \"log\"",
            );
            return None;
        }
    }
    Some(range)
}
