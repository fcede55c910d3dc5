//! Incidents: failures observed outside qualify (production, a customer, a later CI) recorded in
//! the ledger. An incident becomes a control exactly like a failing cell (re-run first by the
//! next run of its artifact), joins the hash chain, and — when a receipt had accepted the claim
//! it refutes — counts as an **escape**: the incident names the receipt, or the latest accepted
//! receipt of the artifact whose claimed region contains the incident's parameters is found.

use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::receipt::{params_key, signature, statement_of};

/// What the user reports.
#[derive(Debug, Clone)]
pub struct NewIncident {
    pub artifact: String,
    /// The parameters it failed at: a JSON object of axis name → number or string.
    pub params: Map<String, Value>,
    /// How it failed, as a probe outcome string (e.g. `deadlock`).
    pub outcome: String,
    pub detail: Option<String>,
    /// A digest prefix of the receipt that accepted the claim it refutes, if known.
    pub receipt: Option<String>,
}

/// A recorded incident.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Incident {
    pub id: i64,
    pub digest: String,
    pub artifact: String,
    pub params: Value,
    pub outcome: String,
    /// `deadlock@threads=4,rounds=10`: the same signature a failing cell would have.
    pub signature: String,
    pub detail: Option<String>,
    /// The accepted receipt it escaped from, and that receipt's claim level.
    pub escaped_receipt: Option<String>,
    pub escaped_level: Option<String>,
    pub recorded_at: i64,
}

/// What recording an incident did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RecordedIncident {
    pub incident: Incident,
    /// A control was created (false: the artifact already had one for these parameters).
    pub new_control: bool,
    /// Why it is or is not an escape, in words.
    pub escape_note: String,
}

/// The `type` of an incident's text.
pub(crate) const TYPE: &str = "https://qualify.dev/incident/v1";

/// The canonical text of an incident (what its digest covers).
pub(crate) fn text(new: &NewIncident, escaped: Option<&str>, recorded: &str) -> String {
    json!({
        "type": TYPE,
        "artifact": new.artifact,
        "params": Value::Object(new.params.clone()),
        "outcome": new.outcome,
        "detail": new.detail,
        "escaped_receipt": escaped,
        "recorded": recorded,
    })
    .to_string()
}

/// The fields of an incident's stored text (the canonical form [`text`] writes), read back by
/// `verify`.
pub(crate) struct Stored {
    pub(crate) artifact: String,
    pub(crate) params: Value,
    pub(crate) outcome: String,
    pub(crate) detail: Option<String>,
    pub(crate) escaped_receipt: Option<String>,
}

/// Why a stored incident text is not one `record_incident` writes.
#[derive(Debug, thiserror::Error)]
pub(crate) enum StoredError {
    #[error("not JSON ({0})")]
    NotJson(#[source] serde_json::Error),
    #[error("`type` is not `{}`", TYPE)]
    Type,
    #[error("`{0}` is missing or not a string")]
    Text(&'static str),
    #[error("`params` is missing or not an object")]
    Params,
}

impl Stored {
    /// Read an incident's stored text; the error names what is missing.
    pub(crate) fn parse(text: &str) -> Result<Stored, StoredError> {
        let doc = qualify_model::json::from_str(text).map_err(StoredError::NotJson)?;
        let string = |k: &'static str| {
            doc.get(k)
                .and_then(Value::as_str)
                .map(str::to_string)
                .ok_or(StoredError::Text(k))
        };
        let optional = |k: &'static str| match doc.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(StoredError::Text(k)),
        };
        if string("type")? != TYPE {
            return Err(StoredError::Type);
        }
        Ok(Stored {
            artifact: string("artifact")?,
            params: doc
                .get("params")
                .filter(|p| p.is_object())
                .cloned()
                .ok_or(StoredError::Params)?,
            outcome: string("outcome")?,
            detail: optional("detail")?,
            escaped_receipt: optional("escaped_receipt")?,
        })
    }
}

pub(crate) fn key_and_signature(new: &NewIncident) -> (String, String) {
    let key = params_key(&Value::Object(new.params.clone()));
    let sig = signature(&new.outcome, &key);
    (key, sig)
}

/// Whether the receipt's claimed region contains `params`: every parameter names an axis of the
/// receipt and lies inside what its claim covers (up to a target value where the receipt states
/// one; the declared values or range otherwise).
pub fn claims(receipt_text: &str, params: &Map<String, Value>) -> bool {
    let Ok(doc) = qualify_model::json::from_str(receipt_text) else {
        return false;
    };
    let Ok(statement) = statement_of(&doc) else {
        return false;
    };
    let Some(predicate) = statement.get("predicate") else {
        return false;
    };
    params
        .iter()
        .all(|(axis, value)| axis_claims(predicate, axis, value))
}

fn axis_claims(predicate: &Value, axis: &str, value: &Value) -> bool {
    let claimed = predicate
        .get("claimed_region")
        .and_then(Value::as_array)
        .and_then(|list| {
            list.iter()
                .find(|c| c.get("axis").and_then(Value::as_str) == Some(axis))
        });
    if let Some(bound) = claimed.and_then(|c| c.get("bound")) {
        let (Some(t), Some(v)) = (bound.get("value").and_then(Value::as_f64), value.as_f64())
        else {
            return false;
        };
        return match bound.get("harder").and_then(Value::as_str) {
            Some("smaller") => v >= t,
            _ => v <= t,
        };
    }
    let declared = predicate
        .pointer("/tested/axes")
        .and_then(Value::as_array)
        .and_then(|list| {
            list.iter()
                .find(|a| a.get("name").and_then(Value::as_str) == Some(axis))
        })
        .and_then(|a| a.get("declared"));
    let Some(declared) = declared else {
        return false;
    };
    if let Some(values) = declared.get("values").and_then(Value::as_array) {
        return values.iter().any(|d| same(d, value));
    }
    if let Some(range) = declared.get("range") {
        let (Some(lo), Some(hi), Some(v)) = (
            range.get("min").and_then(Value::as_f64),
            range.get("max").and_then(Value::as_f64),
            value.as_f64(),
        ) else {
            return false;
        };
        return lo <= v && v <= hi;
    }
    false
}

/// Equal as axis values: numbers by value, text by content.
fn same(a: &Value, b: &Value) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}
