//! Reading receipt files back: plain Statements, DSSE envelopes and their errors.

use serde_json::{Value, json};

use super::*;
use crate::layers::LayerName;
use crate::policy::evaluate;
use crate::receipt::{Statement, build};
use crate::receipt_file::{ReceiptError, check, parse};

fn receipt_value() -> Value {
    serde_json::to_value(build(&record())).unwrap()
}

fn parse_value(v: &Value) -> Result<crate::receipt_file::Receipt, ReceiptError> {
    parse(&v.to_string())
}

#[test]
fn round_trip_receipt_json_gate() {
    let mut variants = vec![record()];
    let mut failing = record();
    failing.cells[0] = cell(
        &[("threads", json!(1)), ("n", json!(256))],
        Outcome::OomKilled,
    );
    variants.push(failing);
    let mut prod = record();
    prod.claim = ClaimLevel::Production;
    prod.target = big_target();
    prod.waivers = vec![Waiver {
        gap: "nodes".to_string(),
        reason: "one node first".to_string(),
    }];
    variants.push(prod);

    for r in &variants {
        let statement = build(r);
        let text = statement.to_json().unwrap();
        let receipt = parse(&text).unwrap();
        assert_eq!(receipt.claim_level, r.claim);
        assert_eq!(receipt.sha256, crate::receipt::sha256_hex(text.as_bytes()));
        for level in ClaimLevel::ALL {
            assert_eq!(
                receipt.evaluate(level),
                evaluate(&statement, level),
                "{level}"
            );
        }
        assert_eq!(receipt.evaluate(r.claim), statement.predicate.claim);

        // The typed form reads back too, cell parameters in declaration order.
        let typed: Statement = serde_json::from_str(&text).unwrap();
        assert_eq!(typed.predicate.claim, statement.predicate.claim);
        let names: Vec<&str> = typed.predicate.cells[0]
            .params
            .iter()
            .map(|(k, _)| k)
            .collect();
        assert_eq!(names, ["threads", "n"]);
    }
    let trial = check(&build(&variants[0]).to_json().unwrap(), ClaimLevel::Trial).unwrap();
    assert!(trial.supported);
    let refused = check(&build(&variants[1]).to_json().unwrap(), ClaimLevel::Trial).unwrap();
    assert!(!refused.supported);
    assert!(
        refused.reasons[0].starts_with("envelope layer is failed (trial needs it closed): 1 of 4 completed cells failed: oom_killed at threads=1, n=256"),
        "{:?}",
        refused.reasons
    );
    let prod = parse(&build(&variants[2]).to_json().unwrap()).unwrap();
    let v = prod.evaluate(ClaimLevel::Production);
    assert_eq!(v.waivers, ["nodes: one node first"]);
    assert!(!v.reasons.iter().any(|r| r.starts_with("gap nodes")));
}

#[test]
fn not_json_names_line_and_column() {
    let err = parse("{\n  \"_type\": ").unwrap_err();
    match &err {
        ReceiptError::NotJson { line, .. } => assert_eq!(*line, 2),
        other => panic!("{other:?}"),
    }
    assert!(
        err.to_string()
            .starts_with("not a JSON document (line 2, column"),
        "{err}"
    );
    assert!(matches!(
        parse("").unwrap_err(),
        ReceiptError::NotJson { .. }
    ));
}

#[test]
fn wrong_shapes_name_the_field() {
    let err = parse("[1, 2]").unwrap_err();
    assert_eq!(
        err.to_string(),
        "`(top level)` should be an object, found an array"
    );

    let mut v = receipt_value();
    v["_type"] = json!("https://in-toto.io/Statement/v0.1");
    let err = parse_value(&v).unwrap_err();
    assert!(matches!(err, ReceiptError::WrongStatementType { .. }));
    assert!(
        err.to_string().contains("not an in-toto Statement v1"),
        "{err}"
    );

    let mut v = receipt_value();
    v["predicateType"] = json!("https://slsa.dev/provenance/v1");
    let err = parse_value(&v).unwrap_err();
    assert!(
        err.to_string().contains("https://slsa.dev/provenance/v1"),
        "{err}"
    );

    let mut v = receipt_value();
    v.as_object_mut().unwrap().remove("subject");
    assert_eq!(
        parse_value(&v).unwrap_err().to_string(),
        "`subject` is missing"
    );

    let mut v = receipt_value();
    v["predicate"]["incomplete"] = json!("no");
    assert_eq!(
        parse_value(&v).unwrap_err().to_string(),
        "`predicate.incomplete` should be a boolean, found a string"
    );

    let mut v = receipt_value();
    v["predicate"]["claim"]["level"] = json!("bulletproof");
    assert!(matches!(
        parse_value(&v).unwrap_err(),
        ReceiptError::UnknownClaimLevel { .. }
    ));
}

#[test]
fn layer_errors_name_the_layer() {
    let mut v = receipt_value();
    v["predicate"].as_object_mut().unwrap().remove("layers");
    assert_eq!(
        parse_value(&v).unwrap_err().to_string(),
        "`predicate.layers` is missing"
    );

    let mut v = receipt_value();
    v["predicate"]["layers"]
        .as_object_mut()
        .unwrap()
        .remove("reproducibility");
    assert_eq!(
        parse_value(&v).unwrap_err(),
        ReceiptError::MissingLayer {
            layer: LayerName::Reproducibility
        }
    );

    let mut v = receipt_value();
    v["predicate"]["layers"]["security"] = json!({"status": "closed"});
    let err = parse_value(&v).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("`predicate.layers.security` is not a layer"),
        "{err}"
    );

    let mut v = receipt_value();
    v["predicate"]["layers"]["envelope"]["status"] = json!("green");
    let err = parse_value(&v).unwrap_err();
    assert_eq!(
        err.to_string(),
        "`predicate.layers.envelope.status` is `green`; expected one of: closed, partial, failed, not_run"
    );

    let mut v = receipt_value();
    v["predicate"]["layers"]["process"]
        .as_object_mut()
        .unwrap()
        .remove("status");
    assert_eq!(
        parse_value(&v).unwrap_err().to_string(),
        "`predicate.layers.process.status` is missing"
    );
}

#[test]
fn gap_errors_and_a_hand_edited_closed_layer() {
    let mut v = receipt_value();
    v["predicate"]["gap"] = json!([{"target": 3}]);
    let err = parse_value(&v).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("`predicate.gap[0]` is not a gap entry"),
        "{err}"
    );

    // The gate judges what the receipt says; statuses are read, not recomputed.
    let mut v = receipt_value();
    v["predicate"]["layers"]["functional"]["status"] = json!("failed");
    let r = parse_value(&v).unwrap();
    assert!(!r.evaluate(ClaimLevel::Functional).supported);
}

#[test]
fn signed_envelopes_are_recognised() {
    // Signed receipts (verification, tampering, --key) are tested in tests/signed.rs.
    let envelope = json!({
        "payloadType": "application/vnd.in-toto+json",
        "payload": "e30=",
        "signatures": [{"keyid": "", "sig": "AAAA"}],
    });
    // `{}` is not a Statement: the envelope was unwrapped and its payload checked.
    let err = parse_value(&envelope).unwrap_err();
    assert_eq!(
        err,
        ReceiptError::Missing {
            path: "_type".to_string()
        }
    );
}
