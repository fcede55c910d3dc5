//! DSSE v1 (Dead Simple Signing Envelope): the pre-authentication encoding, the envelope, signing
//! and verification.
//!
//! `PAE(type, body) = "DSSEv1" SP LEN(type) SP type SP LEN(body) SP body`, lengths as ASCII
//! decimal byte counts, SP one space. The signature covers the PAE, never the raw payload.
//! The envelope is `{"payloadType", "payload": base64(body), "signatures": [{"keyid", "sig"}]}`
//! with standard base64 (padded, canonical; the URL-safe alphabet is refused so that no two
//! spellings decode to the same bytes). Verification requires the payload type, a signature whose
//! `keyid` equals the key's id, and that signature to verify over the PAE: changing any byte of
//! the payload type, payload, key id or signature fails, and the error says which check failed.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Serialize};

use crate::keys::{PrivateKey, PublicKey};

/// The payload type of an in-toto Statement.
pub const IN_TOTO_PAYLOAD_TYPE: &str = "application/vnd.in-toto+json";

/// The DSSE v1 pre-authentication encoding of `payload_type` and `payload`.
pub fn pae(payload_type: &str, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(payload_type.len() + payload.len() + 32);
    out.extend_from_slice(b"DSSEv1 ");
    out.extend_from_slice(payload_type.len().to_string().as_bytes());
    out.push(b' ');
    out.extend_from_slice(payload_type.as_bytes());
    out.push(b' ');
    out.extend_from_slice(payload.len().to_string().as_bytes());
    out.push(b' ');
    out.extend_from_slice(payload);
    out
}

/// A DSSE envelope.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Envelope {
    #[serde(rename = "payloadType")]
    pub payload_type: String,
    /// Standard base64 of the payload bytes.
    pub payload: String,
    pub signatures: Vec<EnvelopeSignature>,
}

/// One signature of an envelope.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnvelopeSignature {
    /// The signing key's id (see [`PublicKey::keyid`]).
    pub keyid: String,
    /// Standard base64 of the signature bytes.
    pub sig: String,
}

/// Why an envelope did not verify. Each message names the check that failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    /// The text is not one JSON document (truncated, a duplicate key, invalid UTF-8): the
    /// receipt cannot be read at all, as opposed to one that was read and failed a check.
    #[error("not a JSON document (line {line}, column {column}): {message}")]
    NotJson {
        line: usize,
        column: usize,
        message: String,
    },
    #[error("envelope check failed: not a DSSE envelope: {0}")]
    NotEnvelope(String),
    #[error("payload type check failed: `payloadType` is `{found}`, expected `{expected}`")]
    PayloadType { found: String, expected: String },
    #[error("envelope check failed: `{field}` is not valid standard base64: {message}")]
    Base64 { field: String, message: String },
    #[error("signature check failed: the envelope has no signatures")]
    NoSignature,
    #[error(
        "signature check failed: no signature was made with this key (key id {expected}; the envelope's key ids: {found})"
    )]
    KeyId { expected: String, found: String },
    #[error(
        "signature check failed: the signature does not match the payload (key id {keyid}): the receipt was modified or signed by another key"
    )]
    BadSignature { keyid: String },
}

impl Envelope {
    /// Sign `payload` of `payload_type` with `key`.
    pub fn sign(payload_type: &str, payload: &[u8], key: &PrivateKey) -> Envelope {
        let sig = key.sign(&pae(payload_type, payload));
        Envelope {
            payload_type: payload_type.to_string(),
            payload: STANDARD.encode(payload),
            signatures: vec![EnvelopeSignature {
                keyid: key.public_key().keyid(),
                sig: STANDARD.encode(sig),
            }],
        }
    }

    /// The envelope file's text: compact JSON and a newline (no insignificant whitespace
    /// inside, so that no byte of the file can change without changing what it says).
    pub fn to_json(&self) -> String {
        let mut text = serde_json::to_string(self).unwrap_or_default();
        text.push('\n');
        text
    }

    /// Parse an envelope's JSON text (strictly: a duplicate key anywhere is refused, so that no
    /// reader can pick another copy of `payload` than the one checked).
    pub fn from_json(text: &str) -> Result<Envelope, VerifyError> {
        let doc = qualify_model::json::from_str(text).map_err(|e| VerifyError::NotJson {
            line: e.line(),
            column: e.column(),
            message: without_position(&e.to_string()),
        })?;
        Envelope::from_value(doc)
    }

    /// Parse an envelope out of a JSON value.
    pub fn from_value(value: serde_json::Value) -> Result<Envelope, VerifyError> {
        serde_json::from_value(value).map_err(|e| VerifyError::NotEnvelope(e.to_string()))
    }

    /// The payload bytes, WITHOUT checking any signature.
    pub fn payload_unverified(&self) -> Result<Vec<u8>, VerifyError> {
        decode("payload", &self.payload)
    }

    /// The key ids the envelope names.
    pub fn keyids(&self) -> Vec<String> {
        self.signatures.iter().map(|s| s.keyid.clone()).collect()
    }

    /// Check the payload type, then that a signature made by `key` verifies over the PAE.
    /// Returns the payload bytes.
    pub fn verify(&self, key: &PublicKey, payload_type: &str) -> Result<Vec<u8>, VerifyError> {
        if self.payload_type != payload_type {
            return Err(VerifyError::PayloadType {
                found: self.payload_type.clone(),
                expected: payload_type.to_string(),
            });
        }
        let payload = self.payload_unverified()?;
        if self.signatures.is_empty() {
            return Err(VerifyError::NoSignature);
        }
        let keyid = key.keyid();
        let mine: Vec<&EnvelopeSignature> = self
            .signatures
            .iter()
            .filter(|s| s.keyid == keyid)
            .collect();
        if mine.is_empty() {
            return Err(VerifyError::KeyId {
                expected: keyid,
                found: self.keyids().join(", "),
            });
        }
        let message = pae(&self.payload_type, &payload);
        for s in mine {
            let sig = decode("signatures[].sig", &s.sig)?;
            if !key.verify(&message, &sig) {
                return Err(VerifyError::BadSignature { keyid });
            }
        }
        Ok(payload)
    }
}

/// Whether a JSON document looks like a DSSE envelope (has `payloadType` and `payload`).
pub fn is_envelope(doc: &serde_json::Value) -> bool {
    doc.as_object()
        .is_some_and(|o| o.contains_key("payloadType") && o.contains_key("payload"))
}

/// serde_json appends " at line L column C"; [`VerifyError::NotJson`] carries them apart.
pub fn without_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(i) => message[..i].to_string(),
        None => message.to_string(),
    }
}

fn decode(field: &str, text: &str) -> Result<Vec<u8>, VerifyError> {
    STANDARD.decode(text).map_err(|e| VerifyError::Base64 {
        field: field.to_string(),
        message: e.to_string(),
    })
}
