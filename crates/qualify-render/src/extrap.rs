//! Extra-P JSON Lines (`*.jsonl`, Extra-P's "JSON Lines format"): one JSON object per line and
//! measured value, `{"params": {...}, "callpath": "...", "metric": "...", "value": ...}`.
//!
//! Extra-P takes the parameter names from the first line and reads every later line's
//! coordinates by those names, so every line carries the same numeric parameters. Parameters
//! that are not numeric in every cell (e.g. `mode = "fast"`) cannot be coordinates; they become
//! part of the callpath instead (`artifact->mode=fast`), which keeps distinct cells apart.
//!
//! Values come from `predicate.performance.stats[].values` (the repeats that finished; censored
//! runs are not measurements of the metric). Without `predicate.performance`, each cell that
//! ended `ok` contributes its single run: `wall` (s), `cpu` (user + system, s) and
//! `peak_memory` (bytes). Cells that did not end ok contribute nothing.

use serde_json::{Map, Value, json};

use crate::view::View;

fn split(
    params: &Map<String, Value>,
    numeric: &[String],
    artifact: &str,
) -> (Map<String, Value>, String) {
    let mut coords = Map::new();
    for k in numeric {
        if let Some(v) = params.get(k) {
            coords.insert(k.clone(), v.clone());
        }
    }
    let mut callpath = artifact.to_string();
    for (k, v) in params {
        if !numeric.contains(k) {
            callpath.push_str(&format!("->{k}={}", crate::text::value(v)));
        }
    }
    (coords, callpath)
}

/// Keys present and numeric in every parameter set.
fn numeric_keys<'a>(sets: impl Iterator<Item = &'a Map<String, Value>> + Clone) -> Vec<String> {
    let mut keys: Vec<String> = Vec::new();
    for s in sets.clone() {
        for k in s.keys() {
            if !keys.contains(k) {
                keys.push(k.clone());
            }
        }
    }
    keys.retain(|k| sets.clone().all(|s| s.get(k).is_some_and(Value::is_number)));
    keys
}

pub fn render(v: &View) -> String {
    let artifact = v.artifact();
    let mut out = String::new();
    let mut line = |params: Map<String, Value>, callpath: &str, metric: &str, value: f64| {
        let obj = json!({"params": params, "callpath": callpath, "metric": metric, "value": value});
        out.push_str(&obj.to_string());
        out.push('\n');
    };
    if let Some(p) = v.performance().filter(|p| !p.stats.is_empty()) {
        let numeric = numeric_keys(p.stats.iter().map(|s| &s.params));
        for s in &p.stats {
            let (coords, callpath) = split(&s.params, &numeric, &artifact);
            for val in &s.values {
                line(coords.clone(), &callpath, &s.metric, *val);
            }
        }
        return out;
    }
    let cells = v.cells();
    let ok: Vec<_> = cells.iter().filter(|c| c.outcome == "ok").collect();
    let numeric = numeric_keys(ok.iter().map(|c| &c.params));
    for c in ok {
        let (coords, callpath) = split(&c.params, &numeric, &artifact);
        for (metric, val) in [
            ("wall", c.wall),
            ("cpu", c.cpu),
            ("peak_memory", c.peak_memory),
        ] {
            if let Some(x) = val {
                line(coords.clone(), &callpath, metric, x);
            }
        }
    }
    out
}
