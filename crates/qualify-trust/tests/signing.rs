//! Keys and DSSE: the spec's PAE vector, round trips for both algorithms, every flipped byte
//! failing, wrong keys, key files and their modes.

use std::os::unix::fs::PermissionsExt;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use qualify_trust::dsse::is_envelope;
use qualify_trust::keys::{public_path, read_private_key, read_public_key, write_key_pair};
use qualify_trust::{Algorithm, Envelope, IN_TOTO_PAYLOAD_TYPE, PrivateKey, VerifyError, pae};

#[test]
fn pae_matches_the_dsse_spec_vector() {
    // secure-systems-lab/dsse protocol.md, "Test Vectors".
    assert_eq!(
        pae("http://example.com/HelloWorld", b"hello world"),
        b"DSSEv1 29 http://example.com/HelloWorld 11 hello world".to_vec()
    );
    // Lengths are byte counts, not characters.
    assert_eq!(
        pae("t", "é".as_bytes()),
        "DSSEv1 1 t 2 é".as_bytes().to_vec()
    );
    assert_eq!(pae("", b""), b"DSSEv1 0  0 ".to_vec());
}

fn round_trip(alg: Algorithm) {
    let key = PrivateKey::generate(alg);
    let public = key.public_key();
    let payload = br#"{"_type":"https://in-toto.io/Statement/v1","x":1}"#;
    let env = Envelope::sign(IN_TOTO_PAYLOAD_TYPE, payload, &key);
    assert_eq!(env.signatures[0].keyid, public.keyid());
    assert_eq!(public.keyid().len(), 64);
    let text = env.to_json();
    assert!(is_envelope(&serde_json::from_str(&text).unwrap()));
    let back = Envelope::from_json(&text).unwrap();
    assert_eq!(back.verify(&public, IN_TOTO_PAYLOAD_TYPE).unwrap(), payload);
    // PEM round trip keeps the same key.
    let again = PrivateKey::from_pem(&key.to_pem().unwrap()).unwrap();
    assert_eq!(again.algorithm(), alg);
    assert_eq!(again.public_key(), public);
    let pub_again = qualify_trust::PublicKey::from_pem(&public.to_pem().unwrap()).unwrap();
    assert_eq!(pub_again.keyid(), public.keyid());
    // Another key of the same algorithm is refused by key id; a forged key id by signature.
    let other = PrivateKey::generate(alg).public_key();
    assert!(matches!(
        back.verify(&other, IN_TOTO_PAYLOAD_TYPE),
        Err(VerifyError::KeyId { .. })
    ));
    let mut forged = back.clone();
    forged.signatures[0].keyid = other.keyid();
    assert!(matches!(
        forged.verify(&other, IN_TOTO_PAYLOAD_TYPE),
        Err(VerifyError::BadSignature { .. })
    ));
    // The wrong expected payload type is named.
    let err = back.verify(&public, "text/plain").unwrap_err();
    assert!(
        err.to_string().starts_with("payload type check failed"),
        "{err}"
    );
}

#[test]
fn ed25519_signs_and_verifies() {
    round_trip(Algorithm::Ed25519);
}

#[test]
fn p256_signs_and_verifies() {
    round_trip(Algorithm::P256);
}

/// Rebuild an envelope with one byte of the decoded payload / signature / payload type flipped.
fn flipped_variants(env: &Envelope, stride: usize) -> Vec<(String, Envelope)> {
    let payload = STANDARD.decode(&env.payload).unwrap();
    let sig = STANDARD.decode(&env.signatures[0].sig).unwrap();
    let mut out = Vec::new();
    for i in (0..payload.len()).step_by(stride) {
        for mask in [0x01u8, 0x80] {
            let mut p = payload.clone();
            p[i] ^= mask;
            let mut e = env.clone();
            e.payload = STANDARD.encode(&p);
            out.push((format!("payload[{i}]^{mask:#x}"), e));
        }
    }
    for i in 0..sig.len() {
        for mask in [0x01u8, 0x80] {
            let mut s = sig.clone();
            s[i] ^= mask;
            let mut e = env.clone();
            e.signatures[0].sig = STANDARD.encode(&s);
            out.push((format!("sig[{i}]^{mask:#x}"), e));
        }
    }
    for i in 0..env.payload_type.len() {
        let mut t = env.payload_type.clone().into_bytes();
        t[i] ^= 0x01;
        let mut e = env.clone();
        e.payload_type = String::from_utf8_lossy(&t).into_owned();
        out.push((format!("payloadType[{i}]"), e));
    }
    out
}

#[test]
fn every_flipped_payload_signature_or_type_byte_fails_ed25519() {
    let key = PrivateKey::generate(Algorithm::Ed25519);
    let public = key.public_key();
    let payload = br#"{"_type":"https://in-toto.io/Statement/v1","subject":[],"ok":true}"#;
    let env = Envelope::sign(IN_TOTO_PAYLOAD_TYPE, payload, &key);
    let variants = flipped_variants(&env, 1);
    assert!(variants.len() > 2 * payload.len() + 2 * 64);
    for (what, e) in variants {
        assert!(
            e.verify(&public, IN_TOTO_PAYLOAD_TYPE).is_err(),
            "{what} still verified"
        );
    }
}

#[test]
fn flipped_bytes_fail_p256_sampled() {
    let key = PrivateKey::generate(Algorithm::P256);
    let public = key.public_key();
    let payload = br#"{"_type":"https://in-toto.io/Statement/v1","subject":[],"ok":true}"#;
    let env = Envelope::sign(IN_TOTO_PAYLOAD_TYPE, payload, &key);
    // Every signature byte, every 3rd payload byte (ECDSA verification is slow in debug builds).
    for (what, e) in flipped_variants(&env, 3) {
        assert!(
            e.verify(&public, IN_TOTO_PAYLOAD_TYPE).is_err(),
            "{what} still verified"
        );
    }
}

#[test]
fn every_flipped_byte_of_the_envelope_file_fails() {
    // Not only the decoded fields: any byte of the file text (JSON keys, quotes, base64
    // characters, padding, key id, trailing newline) changed in place must fail.
    let key = PrivateKey::generate(Algorithm::Ed25519);
    let public = key.public_key();
    let env = Envelope::sign(IN_TOTO_PAYLOAD_TYPE, br#"{"a":1}"#, &key);
    let text = env.to_json().into_bytes();
    let mut checked = 0;
    for i in 0..text.len() {
        for mask in [0x01u8, 0x02, 0x20, 0x80] {
            let mut t = text.clone();
            t[i] ^= mask;
            let Ok(s) = String::from_utf8(t) else {
                continue; // not even text: no reader gets as far as a signature
            };
            let ok = Envelope::from_json(&s)
                .and_then(|e| e.verify(&public, IN_TOTO_PAYLOAD_TYPE))
                .is_ok();
            assert!(!ok, "flipping byte {i} with {mask:#x} still verified: {s}");
            checked += 1;
        }
    }
    assert!(checked >= text.len() * 3);
}

#[test]
fn url_safe_base64_is_refused() {
    let key = PrivateKey::generate(Algorithm::Ed25519);
    let mut env = Envelope::sign(IN_TOTO_PAYLOAD_TYPE, &[0xfb; 30], &key);
    assert!(env.payload.contains('+') || env.payload.contains('/'));
    env.payload = env.payload.replace('+', "-").replace('/', "_");
    let err = env
        .verify(&key.public_key(), IN_TOTO_PAYLOAD_TYPE)
        .unwrap_err();
    assert!(matches!(err, VerifyError::Base64 { .. }), "{err}");
}

#[test]
fn keygen_writes_a_private_key_0600_and_refuses_to_overwrite() {
    let dir = std::env::temp_dir().join(format!("qualify-keys-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for alg in [Algorithm::Ed25519, Algorithm::P256] {
        let prefix = dir.join(format!("k-{alg}"));
        let public = write_key_pair(&prefix, alg).unwrap();
        let mode = std::fs::metadata(&prefix).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{alg} private key mode");
        let private_text = std::fs::read_to_string(&prefix).unwrap();
        assert!(private_text.starts_with("-----BEGIN PRIVATE KEY-----"));
        let pub_text = std::fs::read_to_string(public_path(&prefix)).unwrap();
        assert!(pub_text.starts_with("-----BEGIN PUBLIC KEY-----"));
        assert_eq!(read_public_key(&public_path(&prefix)).unwrap(), public);
        assert_eq!(read_private_key(&prefix).unwrap().public_key(), public);
        let again = write_key_pair(&prefix, alg).unwrap_err();
        assert!(again.to_string().contains("already exists"), "{again}");
        // A public key where a private one is expected is named.
        let wrong = read_private_key(&public_path(&prefix)).err().unwrap();
        assert!(wrong.to_string().contains("PKCS#8"), "{wrong}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `(r, s)` → `(r, n − s)`: the same ECDSA signature spelt the other way, still DER.
fn flip_s(der: &[u8]) -> Vec<u8> {
    let sig = p256::ecdsa::Signature::from_der(der).unwrap();
    let (r, s) = sig.split_scalars();
    let twin = p256::ecdsa::Signature::from_scalars(r, -s).unwrap();
    twin.to_der().as_bytes().to_vec()
}

#[test]
fn p256_signatures_are_low_s_and_a_high_s_twin_is_refused() {
    let key = PrivateKey::generate(Algorithm::P256);
    let public = key.public_key();
    let payload = br#"{"_type":"https://in-toto.io/Statement/v1","subject":[]}"#;
    // Without normalisation half of all signatures would be high-S: 24 in a row low is a
    // one-in-sixteen-million accident.
    for i in 0..24 {
        let env = Envelope::sign(
            IN_TOTO_PAYLOAD_TYPE,
            &[payload.as_slice(), &[b' '; 1][..i % 2]].concat(),
            &key,
        );
        let der = STANDARD.decode(&env.signatures[0].sig).unwrap();
        let sig = p256::ecdsa::Signature::from_der(&der).unwrap();
        assert!(sig.normalize_s().is_none(), "signature {i} is high-S");
        assert!(env.verify(&public, IN_TOTO_PAYLOAD_TYPE).is_ok());
        // Its twin verifies mathematically, and is refused.
        let mut twin = env.clone();
        twin.signatures[0].sig = STANDARD.encode(flip_s(&der));
        assert_ne!(twin.signatures[0].sig, env.signatures[0].sig);
        let err = twin.verify(&public, IN_TOTO_PAYLOAD_TYPE).unwrap_err();
        assert!(matches!(err, VerifyError::BadSignature { .. }), "{err}");
    }
}

#[test]
fn an_envelope_with_a_duplicate_key_is_not_json_we_read() {
    let key = PrivateKey::generate(Algorithm::Ed25519);
    let env = Envelope::sign(IN_TOTO_PAYLOAD_TYPE, br#"{"a":1}"#, &key);
    let other = STANDARD.encode(br#"{"a":2}"#);
    let text = env.to_json();
    // A second `payload` after the signed one, and one inside a signature.
    for forged in [
        text.replacen(
            "\"signatures\"",
            &format!("\"payload\":\"{other}\",\"signatures\""),
            1,
        ),
        text.replacen("\"sig\"", "\"keyid\":\"x\",\"sig\"", 1),
    ] {
        let err = Envelope::from_json(&forged).unwrap_err();
        assert!(matches!(err, VerifyError::NotJson { .. }), "{err}");
        assert!(err.to_string().contains("duplicate key"), "{err}");
    }
}
