//! The gate's signature side: loading `--key`, refusing a claim whose receipt's signature is missing
//! or wrong (exit 1, naming the failed check), saying how the receipt was signed and which
//! waivers it lists, and writing the SLSA Verification Summary Attestation (`--vsa`).

use std::path::Path;
use std::process::ExitCode;

use qualify_evidence::receipt_file::{Receipt, ReceiptError, Signing};
use qualify_evidence::{ClaimLevel, GateVerdict};
use qualify_render::view::View;
use qualify_trust::PublicKey;
use serde_json::{Value, json};

use crate::error::{CliError, exit};

/// Read `--key`, if given.
pub fn load_key(path: Option<&Path>) -> Result<Option<PublicKey>, CliError> {
    let Some(path) = path else {
        return Ok(None);
    };
    qualify_trust::keys::read_public_key(path)
        .map(Some)
        .map_err(|e| CliError::input_only(format!("--key: {e}")))
}

/// A claim refused because the signature required by `--key` is missing or does not verify.
pub fn refuse_signature(
    receipt: &Path,
    claim: ClaimLevel,
    e: &ReceiptError,
    json: bool,
) -> ExitCode {
    if json {
        let v = json!({
            "level": claim,
            "supported": false,
            "reasons": [e.to_string()],
            "signature": {"status": "invalid", "message": e.to_string()},
        });
        crate::shell::print_stdout(&v.to_string());
    } else {
        crate::shell::print_stdout(&format!(
            "REFUSED: the receipt does not support the {claim} claim\n  - {e}\n  ({} was not accepted as evidence: its signature is required by --key)",
            receipt.display()
        ));
    }
    exit::refused()
}

/// One line on the signature plus the receipt's waivers.
pub fn notes(receipt: &Receipt) -> String {
    let mut s = String::new();
    s.push_str(&format!(
        "  signature: {}\n",
        signature_text(&receipt.signing)
    ));
    s.push_str(&qualify_render::terminal::waivers(&View::new(
        &receipt.statement,
    )));
    s
}

fn signature_text(signing: &Signing) -> String {
    match signing {
        Signing::Unsigned => "none (an unsigned receipt)".to_string(),
        Signing::SignedUnchecked { keyids } => format!(
            "NOT CHECKED (signed by key id {}; pass --key PUB to verify it)",
            keyids.join(", ")
        ),
        Signing::Verified { keyid } => format!("verified (key id {keyid})"),
    }
}

fn signature_json(signing: &Signing) -> Value {
    match signing {
        Signing::Unsigned => json!({"status": "unsigned"}),
        Signing::SignedUnchecked { keyids } => json!({"status": "not_checked", "keyids": keyids}),
        Signing::Verified { keyid } => json!({"status": "verified", "keyid": keyid}),
    }
}

/// The verdict as JSON, with the signature status and the receipt's waivers.
pub fn json_verdict(verdict: &GateVerdict, receipt: &Receipt) -> String {
    let mut v = serde_json::to_value(verdict).unwrap_or_else(|_| json!({}));
    if let Some(obj) = v.as_object_mut() {
        obj.insert("signature".into(), signature_json(&receipt.signing));
        if let Some(w) = receipt.statement.pointer("/predicate/waivers") {
            obj.insert("receipt_waivers".into(), w.clone());
        }
    }
    v.to_string()
}

/// Write the VSA for an accepted claim.
pub fn write_vsa(
    path: &Path,
    receipt_path: &Path,
    receipt: &Receipt,
    claim: ClaimLevel,
) -> Result<(), CliError> {
    let subjects = receipt
        .statement
        .get("subject")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let resource_uri = receipt
        .statement
        .pointer("/predicate/run/artifact/executable/path")
        .or_else(|| receipt.statement.pointer("/predicate/run/artifact/name"))
        .and_then(Value::as_str)
        .unwrap_or("unknown")
        .to_string();
    let (keyid, checked) = match &receipt.signing {
        Signing::Verified { keyid } => (Some(keyid.clone()), true),
        _ => (None, false),
    };
    let mut vsa = qualify_trust::vsa::statement(&qualify_trust::vsa::VsaInput {
        subjects,
        resource_uri,
        level: claim.to_string(),
        receipt_uri: receipt_path.display().to_string(),
        receipt_sha256: receipt.sha256.clone(),
        signature_keyid: keyid,
        qualify_version: env!("CARGO_PKG_VERSION").to_string(),
        time_verified: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
    });
    if !checked && let Some(p) = vsa.get_mut("predicate").and_then(Value::as_object_mut) {
        p.insert("qualify_signature".into(), signature_json(&receipt.signing));
    }
    let mut text = serde_json::to_string_pretty(&vsa)
        .map_err(|e| CliError::output(format!("cannot encode the VSA: {e}"), None))?;
    text.push('\n');
    std::fs::write(path, text)
        .map_err(|e| CliError::output(format!("--vsa: cannot write {}: {e}", path.display()), None))
}
