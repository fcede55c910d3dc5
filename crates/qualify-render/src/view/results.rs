//! The cells' results as `qualify-model`'s own types (`ProbeResult`: its fault records, load,
//! objectives and `[perturb]` campaign), for the renderers that word them with the model's
//! sentences (the terminal summary). A cell whose result does not read as a `ProbeResult` (an
//! older or mistyped receipt) is left out; its parameters keep the receipt's axis order and are
//! written as JSON writes them (`2.0` stays `2.0`).

use qualify_model::ProbeResult;
use serde_json::{Map, Value};

use super::json::obj;

/// One cell, typed.
pub struct ResultCell {
    /// `threads=4, n=256`, or `(no parameters)`.
    pub label: String,
    /// Each parameter and its value's text, in the receipt's axis order.
    pub params: Vec<(String, String)>,
    pub result: ProbeResult,
}

/// A parameter's value as JSON writes it; text bare.
pub fn param_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn ordered(p: &Map<String, Value>, order: &[String]) -> Vec<(String, String)> {
    let mut keys: Vec<&String> = order.iter().filter(|k| p.contains_key(*k)).collect();
    keys.extend(p.keys().filter(|k| !order.contains(k)));
    keys.into_iter()
        .map(|k| (k.clone(), param_text(&p[k.as_str()])))
        .collect()
}

/// Every cell whose result reads as a `ProbeResult`, in the receipt's cell order.
pub(super) fn cells(cells: &[Value], order: &[String]) -> Vec<ResultCell> {
    cells
        .iter()
        .filter_map(|c| {
            let result: ProbeResult = serde_json::from_value(c.get("result")?.clone()).ok()?;
            let params = ordered(&obj(c.get("params")), order);
            let label = if params.is_empty() {
                "(no parameters)".to_string()
            } else {
                params
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            Some(ResultCell {
                label,
                params,
                result,
            })
        })
        .collect()
}
