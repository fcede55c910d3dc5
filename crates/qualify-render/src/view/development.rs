//! Development coverage, from the process layer's `evidence.coverage` (the evidence crate's
//! `DevelopmentCoverage`): per axis the values development ran beside the values qualify
//! examined and the ones that failed, and the one sentence that says where the failures lie.

use serde_json::Value;

use super::json::{arr, s};
use crate::text;

/// One axis of the development-coverage strip.
pub struct DevAxis {
    pub axis: String,
    /// The axis appears in the spec's command template.
    pub in_template: bool,
    pub development: Vec<String>,
    /// The same values as the model writes them (`0.1234` stays `0.1234`), for the terminal.
    pub ran: Vec<String>,
    pub examined: Vec<String>,
    pub failed: Vec<String>,
}

impl DevAxis {
    /// Every value either side saw: numbers ascending, then text in first-seen order.
    pub fn values(&self) -> Vec<String> {
        let mut all: Vec<String> = Vec::new();
        for v in self.examined.iter().chain(&self.development) {
            if !all.contains(v) {
                all.push(v.clone());
            }
        }
        all.sort_by(|a, b| match (a.parse::<f64>(), b.parse::<f64>()) {
            (Ok(x), Ok(y)) => x.total_cmp(&y),
            (Ok(_), Err(_)) => std::cmp::Ordering::Less,
            (Err(_), Ok(_)) => std::cmp::Ordering::Greater,
            _ => std::cmp::Ordering::Equal,
        });
        all
    }
}

/// What development ran against the envelope.
pub struct Development {
    pub sentence: String,
    pub axes: Vec<DevAxis>,
    pub failing: u64,
    pub outside: u64,
    pub inside: u64,
    pub unknown: u64,
}

fn strings(v: Option<&Value>) -> Vec<String> {
    arr(v).iter().map(text::value).collect()
}

/// A value as `qualify_model::Value` displays it: integers and decimals exact (`2.0` as `2`).
fn exact(v: &Value) -> String {
    match v {
        Value::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => i.to_string(),
            (None, Some(x)) => x.to_string(),
            _ => n.to_string(),
        },
        other => s(Some(other)),
    }
}

/// `None` when the receipt has no development coverage (no trace).
pub fn read(process_evidence: Option<&Value>) -> Option<Development> {
    let c = process_evidence?
        .get("coverage")
        .filter(|c| c.is_object())?;
    let n = |k: &str| c.get(k).and_then(Value::as_u64).unwrap_or(0);
    Some(Development {
        sentence: s(c.get("sentence")),
        axes: arr(c.get("axes"))
            .iter()
            .map(|a| DevAxis {
                axis: s(a.get("axis")),
                in_template: a
                    .get("in_template")
                    .and_then(Value::as_bool)
                    .unwrap_or(false),
                development: strings(a.get("development")),
                ran: arr(a.get("development")).iter().map(exact).collect(),
                examined: strings(a.get("examined")),
                failed: strings(a.get("failed")),
            })
            .collect(),
        failing: n("failing_cells"),
        outside: n("outside"),
        inside: n("inside"),
        unknown: n("unknown"),
    })
}
