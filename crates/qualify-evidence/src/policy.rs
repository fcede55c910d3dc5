//! The claim policy: which evidence a claim level needs, and the verdict for one level.
//! `functional` needs the functional layer closed; `trial` needs functional and envelope closed
//! (a behaviour under a fault the claim states no expectation for is stated, and accepted);
//! `production` needs all five layers closed, every target gap closed or waived by name with a
//! reason, and no `hangs`, `retry_storm`, `loses_writes`, `stops` or `recovers_late` under a
//! fault unless the claim expects it by name, and — with `[claim] perturb = "required"` — every
//! claimed cell of a concurrent artifact perturbed. Each unmet requirement becomes one reason
//! naming its layer, gap or fault.

use serde::{Deserialize, Serialize};

use crate::claim::ClaimLevel;
use crate::gap::Gap;
use crate::layers::{LayerName, LayerStatus};

/// Anything a claim can be judged against: a freshly built predicate or a parsed receipt.
pub trait Evidence {
    fn layer_status(&self, layer: LayerName) -> LayerStatus;
    /// The layer's one-line summary (may be empty).
    fn layer_summary(&self, layer: LayerName) -> &str;
    fn gaps(&self) -> &[Gap];
    /// Why the spec's held-out requirement (`holdout = "required"`) is unmet, if it is; see
    /// [`crate::holdout::unmet`].
    fn holdout_unmet(&self) -> Option<String> {
        None
    }
    /// The behaviours under faults `production` refuses (no expectation named them): one line
    /// each, from the envelope layer's `production_refuses`
    /// ([`crate::faults::refused_for_production`]).
    fn refused_behaviours(&self) -> Vec<String> {
        Vec::new()
    }
    /// Why `[claim] perturb = "required"` is unmet for `production`, if it is; see
    /// [`crate::perturb::unmet`].
    fn perturb_unmet(&self) -> Option<String> {
        None
    }
}

/// `production_refuses` of an envelope layer's evidence.
pub(crate) fn refused_in(envelope_evidence: &serde_json::Value) -> Vec<String> {
    envelope_evidence
        .get("production_refuses")
        .and_then(serde_json::Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// Whether one claim level is supported, and why not.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GateVerdict {
    pub level: ClaimLevel,
    pub supported: bool,
    /// One line per unmet requirement, each naming the layer or gap.
    pub reasons: Vec<String>,
    /// Gaps this verdict accepted because a waiver names them: `name: reason`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub waivers: Vec<String>,
}

/// The layers `level` needs `closed`.
pub fn required_layers(level: ClaimLevel) -> &'static [LayerName] {
    match level {
        ClaimLevel::Functional => &[LayerName::Functional],
        ClaimLevel::Trial => &[LayerName::Functional, LayerName::Envelope],
        ClaimLevel::Production => &LayerName::ALL,
    }
}

/// Judge `level` against `evidence`.
pub fn evaluate<E: Evidence + ?Sized>(evidence: &E, level: ClaimLevel) -> GateVerdict {
    let mut reasons = Vec::new();
    for &layer in required_layers(level) {
        let status = evidence.layer_status(layer);
        if status == LayerStatus::Closed {
            continue;
        }
        let summary = evidence.layer_summary(layer).trim();
        let mut reason = format!("{layer} layer is {status} ({level} needs it closed)");
        if !summary.is_empty() {
            reason.push_str(": ");
            reason.push_str(summary);
        }
        reasons.push(reason);
    }
    let mut waivers = Vec::new();
    if level == ClaimLevel::Production
        && let Some(why) = evidence.holdout_unmet()
    {
        reasons.push(format!("functional layer (held-out): {why}"));
    }
    if level == ClaimLevel::Production
        && let Some(why) = evidence.perturb_unmet()
    {
        reasons.push(format!("envelope layer (perturbation): {why}"));
    }
    if level == ClaimLevel::Production {
        for why in evidence.refused_behaviours() {
            reasons.push(format!("behaviour under a fault: {why}"));
        }
        for gap in evidence.gaps() {
            let name = gap.qualified_name();
            match &gap.waiver {
                Some(reason) if gap.is_waived() => waivers.push(format!("{name}: {reason}")),
                _ => reasons.push(format!(
                    "gap {name}: {} (not waived; production needs every target gap examined or waived by name)",
                    gap_detail(gap)
                )),
            }
        }
    }
    GateVerdict {
        level,
        supported: reasons.is_empty(),
        reasons,
        waivers,
    }
}

fn gap_detail(gap: &Gap) -> String {
    if !gap.detail.trim().is_empty() {
        return gap.detail.clone();
    }
    format!("target {}, tested {}", gap.target, gap.tested)
}
