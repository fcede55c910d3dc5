//! The gate's policy: which layer statuses and gaps support which claim level.

use serde_json::{Value, json};

use super::*;
use crate::gap::Gap;
use crate::layers::{LayerName, LayerStatus};
use crate::policy::{Evidence, evaluate};
use crate::receipt::build;

/// Hand-built evidence: every layer `status`, plus `gaps`.
struct Fake {
    statuses: Vec<(LayerName, LayerStatus)>,
    gaps: Vec<Gap>,
}

impl Fake {
    fn all(status: LayerStatus) -> Fake {
        Fake {
            statuses: LayerName::ALL.into_iter().map(|l| (l, status)).collect(),
            gaps: Vec::new(),
        }
    }
    fn set(mut self, layer: LayerName, status: LayerStatus) -> Fake {
        for s in &mut self.statuses {
            if s.0 == layer {
                s.1 = status;
            }
        }
        self
    }
}

impl Evidence for Fake {
    fn layer_status(&self, layer: LayerName) -> LayerStatus {
        self.statuses
            .iter()
            .find(|s| s.0 == layer)
            .map_or(LayerStatus::NotRun, |s| s.1)
    }
    fn layer_summary(&self, _: LayerName) -> &str {
        "why"
    }
    fn gaps(&self) -> &[Gap] {
        &self.gaps
    }
}

fn cores_gap(waiver: Option<&str>) -> Gap {
    Gap {
        name: "cores".to_string(),
        axis: None,
        target: json!(192),
        tested: json!(2),
        detail: "target has 192 cores, the tested machine allowed 2".to_string(),
        waiver: waiver.map(str::to_string),
    }
}

#[test]
fn each_level_needs_its_layers_closed() {
    let closed = Fake::all(LayerStatus::Closed);
    for level in ClaimLevel::ALL {
        let v = evaluate(&closed, level);
        assert!(v.supported, "{level}: {:?}", v.reasons);
        assert!(v.reasons.is_empty());
    }

    let e = Fake::all(LayerStatus::Closed).set(LayerName::Envelope, LayerStatus::Partial);
    assert!(evaluate(&e, ClaimLevel::Functional).supported);
    let v = evaluate(&e, ClaimLevel::Trial);
    assert!(!v.supported);
    assert_eq!(
        v.reasons,
        ["envelope layer is partial (trial needs it closed): why"]
    );

    let e = Fake::all(LayerStatus::Closed).set(LayerName::Functional, LayerStatus::Failed);
    for level in ClaimLevel::ALL {
        let v = evaluate(&e, level);
        assert!(!v.supported);
        assert_eq!(
            v.reasons,
            [format!(
                "functional layer is failed ({level} needs it closed): why"
            )]
        );
    }

    // Process, performance, reproducibility matter only to production.
    let e = Fake::all(LayerStatus::Closed).set(LayerName::Performance, LayerStatus::NotRun);
    assert!(evaluate(&e, ClaimLevel::Trial).supported);
    let v = evaluate(&e, ClaimLevel::Production);
    assert_eq!(
        v.reasons,
        ["performance layer is not_run (production needs it closed): why"]
    );
}

#[test]
fn production_needs_every_gap_closed_or_waived_with_a_reason() {
    let mut e = Fake::all(LayerStatus::Closed);
    e.gaps = vec![cores_gap(None)];
    assert!(
        evaluate(&e, ClaimLevel::Trial).supported,
        "gaps don't matter to trial"
    );
    let v = evaluate(&e, ClaimLevel::Production);
    assert!(!v.supported);
    assert_eq!(
        v.reasons,
        [
            "gap cores: target has 192 cores, the tested machine allowed 2 (not waived; production needs every target gap examined or waived by name)"
        ]
    );

    e.gaps = vec![cores_gap(Some("scaling shown on the cluster run"))];
    let v = evaluate(&e, ClaimLevel::Production);
    assert!(v.supported, "{:?}", v.reasons);
    assert_eq!(v.waivers, ["cores: scaling shown on the cluster run"]);

    e.gaps = vec![cores_gap(Some(""))];
    assert!(!evaluate(&e, ClaimLevel::Production).supported);
}

#[test]
fn the_receipt_claim_is_the_verdict_at_the_spec_level() {
    let r = record();
    let s = build(&r);
    assert_eq!(s.predicate.claim, evaluate(&s, ClaimLevel::Trial));
    assert!(
        s.predicate.claim.supported,
        "{:?}",
        s.predicate.claim.reasons
    );

    let mut r = record();
    r.claim = ClaimLevel::Production;
    r.target = big_target();
    let s = build(&r);
    let claim = &s.predicate.claim;
    assert_eq!(claim.level, ClaimLevel::Production);
    assert!(!claim.supported);
    let layer_reasons: Vec<&String> = claim
        .reasons
        .iter()
        .filter(|r| r.contains(" layer is "))
        .collect();
    assert_eq!(layer_reasons.len(), 4, "{:?}", claim.reasons);
    // Two target nodes make topology material; one node never examines it.
    assert!(
        claim
            .reasons
            .iter()
            .any(|r| r.starts_with("envelope layer is partial") && r.contains("topology")),
        "{:?}",
        claim.reasons
    );
    for layer in ["process", "performance", "reproducibility"] {
        assert!(
            claim
                .reasons
                .iter()
                .any(|r| r.starts_with(&format!("{layer} layer is not_run"))),
            "{:?}",
            claim.reasons
        );
    }
    for gap in ["cores", "nodes", "memory", "concurrency"] {
        assert!(
            claim
                .reasons
                .iter()
                .any(|r| r.starts_with(&format!("gap {gap}:"))),
            "{:?}",
            claim.reasons
        );
    }
    let as_json: Value = serde_json::to_value(claim).unwrap();
    assert_eq!(as_json["level"], "production");
}
