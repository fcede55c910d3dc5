//! Signed receipts through the gate (verified, unchecked, tampered, unsigned with a key) and the
//! reproducibility layer's statuses (no fingerprint, no repeats, agreeing, differing,
//! nondeterministic with a tolerance check).

use std::collections::BTreeMap;

use qualify_model::{Outcome, ProbeResult};
use qualify_trust::fingerprint::{Fingerprint, Os};
use qualify_trust::{Algorithm, Envelope, IN_TOTO_PAYLOAD_TYPE, PrivateKey};
use serde_json::json;

use super::*;
use crate::layers::LayerStatus;
use crate::receipt::build;
use crate::receipt_file::{ReceiptError, Signing, parse, parse_with_key};

pub fn fingerprint() -> Fingerprint {
    Fingerprint {
        os: Os {
            name: Some("Debian GNU/Linux 13".into()),
            id: Some("debian".into()),
            version_id: Some("13".into()),
            kernel: Some("Linux".into()),
            kernel_release: Some("6.1.0".into()),
            kernel_version: Some("#1 SMP".into()),
        },
        architecture: "x86_64".into(),
        cpu_model: Some("Test CPU".into()),
        cores_online: Some(2),
        cores_allowed: Some(2),
        memory_bytes: Some(24 << 30),
        cgroup_version: "v2".into(),
        backend: "cgroup2".into(),
        tools: Vec::new(),
        git: None,
        lockfiles: Vec::new(),
        artifact_sha256: None,
        spec_sha256: "b".repeat(64),
        qualify_version: "0.1.0".into(),
        env: BTreeMap::from([("API_TOKEN".to_string(), "<redacted>".to_string())]),
        redacted: vec!["API_TOKEN".into()],
    }
}

fn signed_text(alg: Algorithm) -> (String, PrivateKey) {
    let key = PrivateKey::generate(alg);
    let statement = build(&record()).to_json().unwrap();
    let env = Envelope::sign(IN_TOTO_PAYLOAD_TYPE, statement.as_bytes(), &key);
    (env.to_json(), key)
}

#[test]
fn gate_reads_signed_receipts_and_verifies_with_a_key() {
    for alg in [Algorithm::Ed25519, Algorithm::P256] {
        let (text, key) = signed_text(alg);
        let public = key.public_key();
        let r = parse_with_key(&text, Some(&public)).unwrap();
        assert_eq!(
            r.signing,
            Signing::Verified {
                keyid: public.keyid()
            }
        );
        assert!(r.evaluate(ClaimLevel::Trial).supported);
        // Without a key the payload is read, and the receipt says the signature was not checked.
        let r = parse(&text).unwrap();
        assert_eq!(
            r.signing,
            Signing::SignedUnchecked {
                keyids: vec![public.keyid()]
            }
        );
        // Another key is refused.
        let other = PrivateKey::generate(alg).public_key();
        let err = parse_with_key(&text, Some(&other)).unwrap_err();
        assert!(err.is_signature_failure(), "{err}");
    }
}

#[test]
fn gate_with_a_key_refuses_tampered_and_unsigned_receipts() {
    let (text, key) = signed_text(Algorithm::Ed25519);
    let public = key.public_key();
    // Rewrite a layer status inside the payload and re-encode: the signature no longer matches.
    let mut env = Envelope::from_json(&text).unwrap();
    let payload = String::from_utf8(env.payload_unverified().unwrap()).unwrap();
    let forged = payload.replacen("\"status\": \"closed\"", "\"status\": \"failed\"", 1);
    assert_ne!(forged, payload);
    env.payload = base64_standard(forged.as_bytes());
    let err = parse_with_key(&env.to_json(), Some(&public)).unwrap_err();
    assert!(
        err.to_string().starts_with("signature check failed"),
        "{err}"
    );
    assert!(err.is_signature_failure());
    // Unchecked, the forged payload is readable: that is why the gate says so.
    assert!(parse(&env.to_json()).is_ok());

    let unsigned = build(&record()).to_json().unwrap();
    let err = parse_with_key(&unsigned, Some(&public)).unwrap_err();
    assert_eq!(err, ReceiptError::SignatureRequired);
    assert!(err.is_signature_failure());

    // A payload that is not a Statement is an unreadable receipt, not a signature failure.
    let junk = Envelope::sign(IN_TOTO_PAYLOAD_TYPE, b"not json", &key).to_json();
    let err = parse_with_key(&junk, Some(&public)).unwrap_err();
    assert!(matches!(err, ReceiptError::BadEnvelope { .. }), "{err}");
}

fn base64_standard(bytes: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(A[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn repeated(outputs: &[&str]) -> ProbeResult {
    let runs: Vec<ProbeResult> = outputs
        .iter()
        .map(|o| {
            let mut r = probe(Outcome::Ok);
            r.stdout_sha256 = (*o).to_string();
            r
        })
        .collect();
    ProbeResult::combine(runs).unwrap()
}

fn with_repeats(outputs_per_cell: &[&[&str]]) -> RunRecord {
    let mut r = record();
    r.environment = Some(fingerprint());
    for (cell, outs) in r.cells.iter_mut().zip(outputs_per_cell) {
        cell.result = repeated(outs);
    }
    r
}

fn repro(r: &RunRecord) -> crate::layers::Layer {
    build(r).predicate.layers.reproducibility
}

#[test]
fn reproducibility_without_a_fingerprint_is_not_run() {
    let layer = repro(&record());
    assert_eq!(layer.status, LayerStatus::NotRun);
    assert!(layer.summary.contains("no environment fingerprint"));
}

#[test]
fn reproducibility_traced_without_repeats_is_partial() {
    let mut r = record();
    r.environment = Some(fingerprint());
    let layer = repro(&r);
    assert_eq!(layer.status, LayerStatus::Partial, "{}", layer.summary);
    assert!(layer.summary.contains("no cell was repeated"));
    // The fingerprint lands in the receipt.
    let s = build(&r);
    assert_eq!(s.predicate.environment, Some(fingerprint()));
}

#[test]
fn reproducibility_closed_only_when_every_cell_repeated_and_agreed() {
    let all = with_repeats(&[&["a", "a"], &["b", "b", "b"], &["c", "c"], &["d", "d"]]);
    let layer = repro(&all);
    assert_eq!(layer.status, LayerStatus::Closed, "{}", layer.summary);
    assert_eq!(layer.evidence["repeated_cells"], json!(4));

    let some = with_repeats(&[&["a", "a"], &["b", "b"]]);
    let layer = repro(&some);
    assert_eq!(layer.status, LayerStatus::Partial, "{}", layer.summary);
    assert!(
        layer
            .summary
            .contains("2 completed cell(s) were not repeated")
    );
}

#[test]
fn reproducibility_fails_naming_the_differing_cells() {
    let r = with_repeats(&[&["a", "a"], &["b", "x"], &["c", "c"], &["d", "d"]]);
    let layer = repro(&r);
    assert_eq!(layer.status, LayerStatus::Failed);
    assert!(
        layer
            .summary
            .contains("threads=1, n=1024 (2 distinct outputs)"),
        "{}",
        layer.summary
    );
    assert_eq!(
        layer.evidence["differing_cells"].as_array().unwrap().len(),
        1
    );
}

#[test]
fn declared_nondeterminism_needs_a_passing_tolerance_check() {
    let mut r = with_repeats(&[&["a", "b"], &["b", "x"], &["c", "c"], &["d", "d"]]);
    r.reproducibility.nondeterministic = true;
    r.reproducibility.tolerance_check = Some("./within-tolerance".into());
    assert_eq!(repro(&r).status, LayerStatus::Partial);
    r.reproducibility.tolerance_result = Some(probe(Outcome::Ok));
    let layer = repro(&r);
    assert_eq!(layer.status, LayerStatus::Closed, "{}", layer.summary);
    assert!(layer.summary.contains("2 of 4 repeated cell(s) differed"));
    r.reproducibility.tolerance_result = Some(probe(Outcome::ExitFailure));
    assert_eq!(repro(&r).status, LayerStatus::Failed);
}
