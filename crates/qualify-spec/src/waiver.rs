//! `[[waiver]]`: a target gap the user accepts by name, with the reason. Kept for the gate;
//! this module checks that both fields are present and non-empty and that no gap is waived
//! twice (`coherence.rs` checks that the named gap can arise from `[target]`).

use std::collections::BTreeMap;
use std::ops::Range;

use serde::Deserialize;
use toml::Spanned;

use crate::check::Checker;

pub use qualify_model::Waiver;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawWaiver {
    gap: Spanned<String>,
    reason: Spanned<String>,
}

/// The waivers, each with the span of its `gap` value (for the cross-checks against `[target]`).
pub(crate) fn check(raw: Vec<RawWaiver>, ck: &mut Checker<'_>) -> Vec<(Waiver, Range<usize>)> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    raw.into_iter()
        .map(|w| {
            let gap = ck.non_empty(&w.gap, "waiver.gap");
            let reason = ck.non_empty(&w.reason, "waiver.reason");
            if let Some(first) = seen.get(&gap) {
                let help = format!("first waived at {}", ck.position(*first));
                ck.error_help(w.gap.span(), format!("gap `{gap}` is waived twice"), help);
            } else {
                seen.insert(gap.clone(), w.gap.span().start);
            }
            (Waiver { gap, reason }, w.gap.span())
        })
        .collect()
}
