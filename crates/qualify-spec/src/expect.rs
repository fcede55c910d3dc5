//! `expect` on a fault axis: the behaviours the claim accepts of the service under each fault
//! (`qualify_model::fault::Verdict`'s names, a closed list). Either one list for every fault of
//! the axis, or a table per fault value:
//!
//! ```toml
//! expect = ["fails_fast", "degrades", "unaffected"]
//! expect = { "latency(200ms)" = ["unaffected", "degrades", "fails_fast"], down = ["fails_fast"] }
//! ```
//!
//! Keys are faults in the axis's grammar (`latency(0.2s)` names the value `latency(200ms)`);
//! `none` is the control and has nothing to expect. A value without an expectation fails on a
//! hang (the service verdict's default) and is otherwise judged by the claim level alone
//! (`trial` states the behaviour and accepts it; `production` refuses `hangs`, `retry_storm`,
//! `loses_writes`, `stops` and `recovers_late`). Mistakes — an unknown
//! behaviour, `control`, a value not on the axis, an empty list, `expect` on another kind of
//! axis — are located errors.

use std::fmt;

use qualify_model::Fault;
use qualify_model::fault::Verdict;
use serde::Deserialize;
use serde::de::{Deserializer, MapAccess, SeqAccess, Visitor};
use toml::Spanned;

use crate::axis::Value;
use crate::check::Checker;

/// A list of behaviours as written.
type RawList = Vec<Spanned<String>>;

/// `expect` as written.
#[derive(Debug)]
pub(crate) enum RawExpect {
    /// One list for every fault of the axis.
    All(RawList),
    /// A list per fault value (key as written, the list).
    PerValue(Vec<(Spanned<String>, Spanned<RawList>)>),
}

impl<'de> Deserialize<'de> for RawExpect {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<RawExpect, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawExpect;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(
                    "a list of behaviours, or a table of fault values to lists of behaviours",
                )
            }

            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<RawExpect, A::Error> {
                let mut out = Vec::new();
                while let Some(v) = seq.next_element::<Spanned<String>>()? {
                    out.push(v);
                }
                Ok(RawExpect::All(out))
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawExpect, A::Error> {
                let mut out = Vec::new();
                while let Some(k) = map.next_key::<Spanned<String>>()? {
                    let v = map.next_value::<Spanned<RawList>>()?;
                    out.push((k, v));
                }
                Ok(RawExpect::PerValue(out))
            }
        }
        deserializer.deserialize_any(V)
    }
}

/// The expectation of each value of the fault axis `name` (in value order; `None`: nothing
/// stated), or `None` when `raw` has errors (reported on `ck`).
pub(crate) fn check(
    name: &str,
    values: &[Value],
    raw: &Spanned<RawExpect>,
    ck: &mut Checker<'_>,
) -> Option<Vec<Option<Vec<Verdict>>>> {
    let is_none = |v: &Value| v.to_string() == "none";
    let mut ok = true;
    let mut out: Vec<Option<Vec<Verdict>>> = vec![None; values.len()];
    match raw.get_ref() {
        RawExpect::All(list) => {
            let verdicts = verdicts(name, raw.span(), list, ck);
            ok &= verdicts.is_some();
            if let Some(v) = verdicts {
                for (slot, value) in out.iter_mut().zip(values) {
                    if !is_none(value) {
                        *slot = Some(v.clone());
                    }
                }
            }
        }
        RawExpect::PerValue(entries) => {
            if entries.is_empty() {
                ck.error_help(
                    raw.span(),
                    format!("fault axis `{name}`: `expect` is an empty table"),
                    "list the behaviours each fault may have, e.g. expect = { down = [\"fails_fast\"] }, or remove expect",
                );
                return None;
            }
            // In file order (a table's keys may come sorted).
            let mut entries: Vec<_> = entries.iter().collect();
            entries.sort_by_key(|(key, _)| key.span().start);
            for (key, list) in entries {
                let Some(index) = value_index(name, values, key, ck) else {
                    ok = false;
                    continue;
                };
                if out[index].is_some() {
                    ck.error_help(
                        key.span(),
                        format!(
                            "fault axis `{name}`: a second expectation for `{}`",
                            values[index]
                        ),
                        "give each fault value one list (faults are compared in canonical form: latency(0.2s) is latency(200ms))",
                    );
                    ok = false;
                    continue;
                }
                match verdicts(name, list.span(), list.get_ref(), ck) {
                    Some(v) => out[index] = Some(v),
                    None => ok = false,
                }
            }
        }
    }
    ok.then_some(out)
}

/// Which value of the axis `key` names.
fn value_index(
    name: &str,
    values: &[Value],
    key: &Spanned<String>,
    ck: &mut Checker<'_>,
) -> Option<usize> {
    let listed = values
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    let canonical = match key.get_ref().parse::<Fault>() {
        Ok(f) => f.to_string(),
        Err(e) => {
            ck.error_help(
                key.span(),
                format!(
                    "fault axis `{name}`: `expect` names `{}`, which is not a fault: {e}",
                    key.get_ref()
                ),
                format!("name one of the axis's values: {listed}"),
            );
            return None;
        }
    };
    if canonical == "none" {
        ck.error_help(
            key.span(),
            format!("fault axis `{name}`: `none` is the control (no fault), it has no behaviour to expect"),
            "remove it: the none cell is what the other cells are compared with",
        );
        return None;
    }
    match values.iter().position(|v| v.to_string() == canonical) {
        Some(i) => Some(i),
        None => {
            ck.error_help(
                key.span(),
                format!(
                    "fault axis `{name}`: `expect` names `{canonical}`, which is not one of its values"
                ),
                format!("the axis's values are: {listed}; add the fault to values, or correct the key"),
            );
            None
        }
    }
}

/// A list of behaviours, each one of the closed list.
fn verdicts(
    name: &str,
    span: std::ops::Range<usize>,
    list: &[Spanned<String>],
    ck: &mut Checker<'_>,
) -> Option<Vec<Verdict>> {
    if list.is_empty() {
        ck.error_help(
            span,
            format!("fault axis `{name}`: an empty list of expected behaviours accepts nothing"),
            format!(
                "list the behaviours the claim accepts, from: {}",
                Verdict::expectable_names()
            ),
        );
        return None;
    }
    let mut out = Vec::new();
    let mut ok = true;
    for item in list {
        match item.get_ref().parse::<Verdict>() {
            Ok(Verdict::Control) => {
                ck.error_help(
                    item.span(),
                    format!("fault axis `{name}`: `control` is the none cell's verdict, not a behaviour a fault can have"),
                    format!("expect one of: {}", Verdict::expectable_names()),
                );
                ok = false;
            }
            Ok(v) if !out.contains(&v) => out.push(v),
            Ok(_) => {}
            Err(message) => {
                ck.error_help(
                    item.span(),
                    format!("fault axis `{name}`: {message}"),
                    "fails_fast: errors came back fast; hangs: requests timed out; degrades: slower within the objectives (docs/guide/faults.md)",
                );
                ok = false;
            }
        }
    }
    ok.then_some(out)
}
