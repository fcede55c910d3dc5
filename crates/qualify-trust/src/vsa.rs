//! The SLSA Verification Summary Attestation (VSA) v1 the gate emits for a claim it accepted:
//! an in-toto Statement v1 with `predicateType` `https://slsa.dev/verification_summary/v1`
//! whose predicate has `verifier.id`, `timeVerified`, `resourceUri`, `policy`,
//! `inputAttestations` (the receipt file and its digest), `verificationResult` (`PASSED`; the
//! gate writes none for a refused claim) and `verifiedLevels` (`QUALIFY_<LEVEL>`: custom levels
//! must not start with `SLSA_`).

use std::collections::BTreeMap;

use serde_json::{Value, json};

/// The VSA v1 predicate type.
pub const VSA_PREDICATE_TYPE: &str = "https://slsa.dev/verification_summary/v1";
/// The verifier id written into every VSA.
pub const VERIFIER_ID: &str = "https://qualify.dev/gate";
/// The policy URI prefix; the claim level is appended as a fragment.
pub const POLICY_URI: &str = "https://qualify.dev/policy/default/v0.1";

/// What the gate knows when it accepted a claim.
#[derive(Debug, Clone)]
pub struct VsaInput {
    /// Subjects of the receipt (name + digest map), copied as they are.
    pub subjects: Vec<Value>,
    /// The artifact's name or path, used as `resourceUri`.
    pub resource_uri: String,
    /// The claim level that was accepted (`functional`, `trial`, `production`).
    pub level: String,
    /// Path of the receipt and its sha256.
    pub receipt_uri: String,
    pub receipt_sha256: String,
    /// Key id of the verified signature, when one was checked.
    pub signature_keyid: Option<String>,
    pub qualify_version: String,
    /// RFC 3339 UTC time.
    pub time_verified: String,
}

/// The VSA statement for an accepted claim.
pub fn statement(input: &VsaInput) -> Value {
    let level = format!("QUALIFY_{}", input.level.to_ascii_uppercase());
    let mut predicate = json!({
        "verifier": {
            "id": VERIFIER_ID,
            "version": { "qualify": input.qualify_version },
        },
        "timeVerified": input.time_verified,
        "resourceUri": input.resource_uri,
        "policy": { "uri": format!("{POLICY_URI}#{}", input.level) },
        "inputAttestations": [{
            "uri": input.receipt_uri,
            "digest": BTreeMap::from([("sha256", &input.receipt_sha256)]),
        }],
        "verificationResult": "PASSED",
        "verifiedLevels": [level],
    });
    if let (Some(keyid), Some(obj)) = (&input.signature_keyid, predicate.as_object_mut()) {
        obj.insert(
            "qualify_signature".into(),
            json!({ "checked": true, "keyid": keyid }),
        );
    }
    json!({
        "_type": "https://in-toto.io/Statement/v1",
        "subject": input.subjects,
        "predicateType": VSA_PREDICATE_TYPE,
        "predicate": predicate,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vsa_has_the_v1_shape() {
        let subject = json!({"name": "art", "digest": {"sha256": "ab"}});
        let v = statement(&VsaInput {
            subjects: vec![subject.clone()],
            resource_uri: "/srv/art".into(),
            level: "trial".into(),
            receipt_uri: "r.json".into(),
            receipt_sha256: "cd".into(),
            signature_keyid: Some("ef".into()),
            qualify_version: "0.1.0".into(),
            time_verified: "2026-11-30T01:00:00Z".into(),
        });
        assert_eq!(v["_type"], "https://in-toto.io/Statement/v1");
        assert_eq!(v["predicateType"], VSA_PREDICATE_TYPE);
        assert_eq!(v["subject"][0], subject);
        let p = &v["predicate"];
        // The fields VSA v1 requires, with their types.
        assert_eq!(p["verifier"]["id"], VERIFIER_ID);
        assert_eq!(p["verifier"]["version"]["qualify"], "0.1.0");
        assert_eq!(p["timeVerified"], "2026-11-30T01:00:00Z");
        assert_eq!(p["resourceUri"], "/srv/art");
        assert_eq!(p["policy"]["uri"], format!("{POLICY_URI}#trial"));
        assert_eq!(p["inputAttestations"][0]["uri"], "r.json");
        assert_eq!(p["inputAttestations"][0]["digest"]["sha256"], "cd");
        assert_eq!(p["verificationResult"], "PASSED");
        assert_eq!(p["verifiedLevels"], json!(["QUALIFY_TRIAL"]));
        assert!(
            !p["verifiedLevels"][0]
                .as_str()
                .unwrap()
                .starts_with("SLSA_")
        );
        assert_eq!(p["qualify_signature"]["keyid"], "ef");
    }
}
