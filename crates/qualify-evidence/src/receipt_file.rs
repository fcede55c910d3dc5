//! The gate's reading side: parse a receipt file's text into [`Receipt`], checking exactly what a
//! verdict depends on (statement type, predicate type, the five layers and their statuses, the
//! gap, the claim level) and naming what is wrong when a receipt is bad. Parsing goes text → JSON
//! → envelope unwrap → statement, so signed (DSSE) envelopes can be unwrapped and verified in the
//! unwrap step later without touching the rest. JSON is read strictly
//! ([`qualify_model::json`]): a key twice in one object (two `payload`s) makes the receipt
//! unreadable, so no reader can judge another copy than the one a signature covers.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::claim::ClaimLevel;
use crate::gap::Gap;
use crate::layers::{LayerName, LayerStatus};
use crate::policy::{self, Evidence, GateVerdict};
use crate::receipt::{PREDICATE_TYPE, STATEMENT_TYPE, sha256_hex};

/// What is wrong with a receipt. Each message names the offending field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReceiptError {
    #[error("not a JSON document (line {line}, column {column}): {message}")]
    NotJson {
        line: usize,
        column: usize,
        message: String,
    },
    #[error("`{path}` is missing")]
    Missing { path: String },
    #[error("`{path}` should be {expected}, found {found}")]
    WrongType {
        path: String,
        expected: &'static str,
        found: &'static str,
    },
    #[error(
        "`_type` is `{found}`, expected `{STATEMENT_TYPE}`: this is not an in-toto Statement v1"
    )]
    WrongStatementType { found: String },
    #[error(
        "`predicateType` is `{found}`, expected `{PREDICATE_TYPE}`: not a qualify receipt, or one from an incompatible version"
    )]
    WrongPredicateType { found: String },
    #[error(
        "`predicate.layers` has no `{layer}` layer; a receipt has exactly: functional, process, envelope, performance, reproducibility"
    )]
    MissingLayer { layer: LayerName },
    #[error(
        "`predicate.layers.{key}` is not a layer; a receipt has exactly: functional, process, envelope, performance, reproducibility"
    )]
    UnknownLayer { key: String },
    #[error(
        "`predicate.layers.{layer}.status` is `{found}`; expected one of: closed, partial, failed, not_run"
    )]
    UnknownStatus { layer: LayerName, found: String },
    #[error("`predicate.claim.level` is `{found}`; expected one of: functional, trial, production")]
    UnknownClaimLevel { found: String },
    #[error("`predicate.gap[{index}]` is not a gap entry: {message}")]
    BadGap { index: usize, message: String },
    /// A DSSE envelope that is malformed or whose payload is not JSON.
    #[error("the DSSE envelope is not readable: {message}")]
    BadEnvelope { message: String },
    /// A signature was required (`--key`) and did not verify; the message names the check.
    #[error("{0}")]
    Signature(qualify_trust::VerifyError),
    /// A signature was required (`--key`) but the receipt is a bare Statement.
    #[error(
        "the receipt is not signed, but a signature was required (--key): sign receipts with `qualify run --sign KEY`"
    )]
    SignatureRequired,
}

impl ReceiptError {
    /// The receipt was readable but its signature is missing or wrong (as opposed to a receipt
    /// that cannot be read at all).
    pub fn is_signature_failure(&self) -> bool {
        matches!(
            self,
            ReceiptError::Signature(_) | ReceiptError::SignatureRequired
        )
    }
}

/// How the receipt reached the gate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Signing {
    /// A bare Statement.
    Unsigned,
    /// A DSSE envelope whose payload was read WITHOUT checking its signature (no key given).
    SignedUnchecked { keyids: Vec<String> },
    /// A DSSE envelope whose signature verified with the given key.
    Verified { keyid: String },
}

/// A receipt as the gate reads it.
#[derive(Debug, Clone)]
pub struct Receipt {
    /// sha256 of the file's text (lowercase hex).
    pub sha256: String,
    pub signing: Signing,
    /// The level the receipt was produced for.
    pub claim_level: ClaimLevel,
    pub incomplete: bool,
    /// The whole Statement, for readers that want more than the gate needs.
    pub statement: Value,
    layers: BTreeMap<LayerName, (LayerStatus, String)>,
    gaps: Vec<Gap>,
}

impl Receipt {
    /// The verdict for `level` under the default policy.
    pub fn evaluate(&self, level: ClaimLevel) -> GateVerdict {
        policy::evaluate(self, level)
    }
}

impl Evidence for Receipt {
    fn layer_status(&self, layer: LayerName) -> LayerStatus {
        self.layers
            .get(&layer)
            .map_or(LayerStatus::NotRun, |(s, _)| *s)
    }
    fn layer_summary(&self, layer: LayerName) -> &str {
        self.layers.get(&layer).map_or("", |(_, s)| s.as_str())
    }
    fn gaps(&self) -> &[Gap] {
        &self.gaps
    }
    fn holdout_unmet(&self) -> Option<String> {
        let functional = self
            .statement
            .pointer("/predicate/layers/functional/evidence")?;
        crate::holdout::unmet(functional)
    }
    fn refused_behaviours(&self) -> Vec<String> {
        self.statement
            .pointer("/predicate/layers/envelope/evidence")
            .map(crate::policy::refused_in)
            .unwrap_or_default()
    }
    fn perturb_unmet(&self) -> Option<String> {
        crate::perturb::unmet(
            self.statement
                .pointer("/predicate/layers/envelope/evidence")?,
        )
    }
}

/// Parse and check a receipt file's text. A signed (DSSE) receipt's payload is read without
/// checking its signature ([`Signing::SignedUnchecked`]); use [`parse_with_key`] to require one.
pub fn parse(text: &str) -> Result<Receipt, ReceiptError> {
    parse_with_key(text, None)
}

/// Parse and check a receipt file's text; with `key`, require a DSSE envelope whose signature
/// verifies with it (payload type `application/vnd.in-toto+json`).
pub fn parse_with_key(
    text: &str,
    key: Option<&qualify_trust::PublicKey>,
) -> Result<Receipt, ReceiptError> {
    let doc: Value = qualify_model::json::from_str(text).map_err(|e| ReceiptError::NotJson {
        line: e.line(),
        column: e.column(),
        message: strip_position(&e.to_string()),
    })?;
    let (statement, signing) = unwrap_envelope(doc, key)?;
    let top = as_object(&statement, "(top level)")?;

    let statement_type = as_str(field(top, "_type", "_type")?, "_type")?;
    if statement_type != STATEMENT_TYPE {
        return Err(ReceiptError::WrongStatementType {
            found: statement_type.to_string(),
        });
    }
    as_array(field(top, "subject", "subject")?, "subject")?;
    let predicate_type = as_str(
        field(top, "predicateType", "predicateType")?,
        "predicateType",
    )?;
    if predicate_type != PREDICATE_TYPE {
        return Err(ReceiptError::WrongPredicateType {
            found: predicate_type.to_string(),
        });
    }
    let predicate = as_object(field(top, "predicate", "predicate")?, "predicate")?;

    let claim = as_object(
        field(predicate, "claim", "predicate.claim")?,
        "predicate.claim",
    )?;
    let level_text = as_str(
        field(claim, "level", "predicate.claim.level")?,
        "predicate.claim.level",
    )?;
    let claim_level =
        level_text
            .parse::<ClaimLevel>()
            .map_err(|_| ReceiptError::UnknownClaimLevel {
                found: level_text.to_string(),
            })?;

    let incomplete = match predicate.get("incomplete") {
        None => false,
        Some(Value::Bool(b)) => *b,
        Some(other) => {
            return Err(wrong_type("predicate.incomplete", "a boolean", other));
        }
    };

    let layers = parse_layers(as_object(
        field(predicate, "layers", "predicate.layers")?,
        "predicate.layers",
    )?)?;
    let gaps = parse_gaps(as_array(
        field(predicate, "gap", "predicate.gap")?,
        "predicate.gap",
    )?)?;

    Ok(Receipt {
        sha256: sha256_hex(text.as_bytes()),
        signing,
        claim_level,
        incomplete,
        layers,
        gaps,
        statement,
    })
}

/// Parse `text` and judge `level` against it.
pub fn check(text: &str, level: ClaimLevel) -> Result<GateVerdict, ReceiptError> {
    Ok(parse(text)?.evaluate(level))
}

/// Take the Statement out of whatever wraps it: a bare Statement as it is; a DSSE envelope
/// (`payloadType`, `payload`, `signatures`) verified with `key` when one is given, else read
/// unchecked. With `key`, a bare Statement is refused.
fn unwrap_envelope(
    doc: Value,
    key: Option<&qualify_trust::PublicKey>,
) -> Result<(Value, Signing), ReceiptError> {
    if !qualify_trust::dsse::is_envelope(&doc) {
        return match key {
            Some(_) => Err(ReceiptError::SignatureRequired),
            None => Ok((doc, Signing::Unsigned)),
        };
    }
    let envelope =
        qualify_trust::Envelope::from_value(doc).map_err(|e| ReceiptError::BadEnvelope {
            message: e.to_string(),
        })?;
    let (payload, signing) = match key {
        Some(key) => {
            let payload = envelope
                .verify(key, qualify_trust::IN_TOTO_PAYLOAD_TYPE)
                .map_err(ReceiptError::Signature)?;
            (payload, Signing::Verified { keyid: key.keyid() })
        }
        None => {
            let payload = envelope
                .payload_unverified()
                .map_err(|e| ReceiptError::BadEnvelope {
                    message: e.to_string(),
                })?;
            (
                payload,
                Signing::SignedUnchecked {
                    keyids: envelope.keyids(),
                },
            )
        }
    };
    let statement =
        qualify_model::json::from_slice(&payload).map_err(|e| ReceiptError::BadEnvelope {
            message: format!("the payload is not a JSON Statement: {e}"),
        })?;
    Ok((statement, signing))
}

fn parse_layers(
    layers: &Map<String, Value>,
) -> Result<BTreeMap<LayerName, (LayerStatus, String)>, ReceiptError> {
    if let Some(key) = layers.keys().find(|k| k.parse::<LayerName>().is_err()) {
        return Err(ReceiptError::UnknownLayer { key: key.clone() });
    }
    let mut out = BTreeMap::new();
    for layer in LayerName::ALL {
        let path = format!("predicate.layers.{layer}");
        let value = layers
            .get(layer.as_str())
            .ok_or(ReceiptError::MissingLayer { layer })?;
        let obj = as_object(value, &path)?;
        let status_path = format!("{path}.status");
        let status_text = as_str(field(obj, "status", &status_path)?, &status_path)?;
        let status =
            status_text
                .parse::<LayerStatus>()
                .map_err(|_| ReceiptError::UnknownStatus {
                    layer,
                    found: status_text.to_string(),
                })?;
        let summary = match obj.get("summary") {
            None | Some(Value::Null) => String::new(),
            Some(Value::String(s)) => s.clone(),
            Some(other) => {
                return Err(wrong_type(&format!("{path}.summary"), "a string", other));
            }
        };
        out.insert(layer, (status, summary));
    }
    Ok(out)
}

fn parse_gaps(gaps: &[Value]) -> Result<Vec<Gap>, ReceiptError> {
    gaps.iter()
        .enumerate()
        .map(|(index, v)| {
            serde_json::from_value::<Gap>(v.clone()).map_err(|e| ReceiptError::BadGap {
                index,
                message: e.to_string(),
            })
        })
        .collect()
}

fn field<'a>(
    obj: &'a Map<String, Value>,
    key: &str,
    path: &str,
) -> Result<&'a Value, ReceiptError> {
    obj.get(key).ok_or_else(|| ReceiptError::Missing {
        path: path.to_string(),
    })
}

fn as_object<'a>(v: &'a Value, path: &str) -> Result<&'a Map<String, Value>, ReceiptError> {
    v.as_object()
        .ok_or_else(|| wrong_type(path, "an object", v))
}

fn as_array<'a>(v: &'a Value, path: &str) -> Result<&'a [Value], ReceiptError> {
    v.as_array()
        .map(Vec::as_slice)
        .ok_or_else(|| wrong_type(path, "an array", v))
}

fn as_str<'a>(v: &'a Value, path: &str) -> Result<&'a str, ReceiptError> {
    v.as_str().ok_or_else(|| wrong_type(path, "a string", v))
}

fn wrong_type(path: &str, expected: &'static str, found: &Value) -> ReceiptError {
    ReceiptError::WrongType {
        path: path.to_string(),
        expected,
        found: kind(found),
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// serde_json appends " at line L column C"; the error carries those separately.
fn strip_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(i) => message[..i].to_string(),
        None => message.to_string(),
    }
}
