//! The tolerant readers every row is built with: a missing or mistyped part becomes an empty
//! string, `None` or an empty list, never an error.

use serde_json::{Map, Value};

/// Text as people read it (`""` for a missing value or `null`).
pub(super) fn s(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => crate::text::value(other),
    }
}

/// Text as a table cell shows it: [`crate::text::value`], or `missing` when absent.
pub(super) fn cell(v: Option<&Value>, missing: &str) -> String {
    v.map(crate::text::value)
        .unwrap_or_else(|| missing.to_string())
}

/// A finite number.
pub(super) fn f(v: Option<&Value>) -> Option<f64> {
    v.and_then(Value::as_f64).filter(|x| x.is_finite())
}

pub(super) fn arr(v: Option<&Value>) -> &[Value] {
    v.and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

pub(super) fn obj(v: Option<&Value>) -> Map<String, Value> {
    v.and_then(Value::as_object).cloned().unwrap_or_default()
}

pub(super) fn nums(v: Option<&Value>) -> Vec<f64> {
    arr(v).iter().filter_map(|x| f(Some(x))).collect()
}

pub(super) fn pair(v: Option<&Value>) -> Option<(f64, f64)> {
    let n = nums(v);
    (n.len() == 2).then(|| (n[0], n[1]))
}

/// The first present key of an object, for fields whose name other tools spell differently.
pub(super) fn first_f(v: Option<&Value>, keys: &[&str]) -> Option<f64> {
    keys.iter().find_map(|k| f(v.and_then(|o| o.get(*k))))
}
