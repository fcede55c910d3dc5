//! `[claim]`: the level of claim the user wants evidence for ([`ClaimLevel`], weakest first),
//! and the headroom it demands: `headroom = 1.5` (every axis the target names a value for) or
//! `headroom = { n = 2.0 }` (per axis) — the first failure beyond the target must lie at least
//! this factor beyond it. Which axes may carry a headroom is checked against `[target]` and the
//! axes in `spec.rs`. `perturb = "required"` is the gate's policy key for concurrent artifacts:
//! `production` then needs `[perturb]` evidence (off by default).

use std::collections::BTreeMap;
use std::ops::Range;

use serde::{Deserialize, Serialize};
use toml::Spanned;

use crate::check::{Checker, describe};

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Claim {
    pub level: ClaimLevel,
    pub headroom: Headroom,
    /// `perturb = "required"`: a `production` claim on a concurrent artifact needs every claimed
    /// cell perturbed (`[perturb]`) without a failure. Off (`"optional"`) by default.
    pub perturb_required: bool,
}

pub use qualify_model::ClaimLevel;

/// The headroom a claim demands beyond its target values (the shared vocabulary's).
pub use qualify_model::Headroom;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawClaim {
    pub level: Spanned<ClaimLevel>,
    pub headroom: Option<Spanned<toml::Value>>,
    pub perturb: Option<Spanned<String>>,
}

/// `[claim] perturb`: `"required"` or `"optional"` (the default).
pub(crate) fn check_perturb(raw: Option<&Spanned<String>>, ck: &mut Checker<'_>) -> bool {
    match raw.map(|r| (r, r.get_ref().as_str())) {
        None | Some((_, "optional")) => false,
        Some((_, "required")) => true,
        Some((r, other)) => {
            ck.error_help(
                r.span(),
                format!("claim.perturb is `{other}`"),
                "write perturb = \"required\" (a production claim on a concurrent artifact needs [perturb] evidence) or \"optional\"",
            );
            false
        }
    }
}

/// A headroom as written, with the spans the cross-checks point at.
pub(crate) struct CheckedHeadroom {
    pub headroom: Headroom,
    /// The whole value (`headroom = 1.5`).
    pub span: Option<Range<usize>>,
    /// Each per-axis key's span.
    pub axis_spans: BTreeMap<String, Range<usize>>,
}

const HELP: &str = "a factor ≥ 1, e.g. headroom = 1.5 (every axis the target names), or headroom = { n = 2.0 } per axis";

fn factor(value: &toml::Value) -> Option<f64> {
    match value {
        toml::Value::Integer(i) => Some(*i as f64),
        toml::Value::Float(x) => Some(*x),
        _ => None,
    }
}

pub(crate) fn check_headroom(
    raw: Option<Spanned<toml::Value>>,
    ck: &mut Checker<'_>,
) -> CheckedHeadroom {
    let mut out = CheckedHeadroom {
        headroom: Headroom::default(),
        span: None,
        axis_spans: BTreeMap::new(),
    };
    let Some(raw) = raw else {
        return out;
    };
    out.span = Some(raw.span());
    let one = |what: String, v: &toml::Value, span: Range<usize>, ck: &mut Checker<'_>| match factor(
        v,
    ) {
        Some(x) if x.is_finite() && x >= 1.0 => Some(x),
        Some(x) => {
            ck.error_help(
                    span,
                    format!("{what} must be at least 1, found {x}: a factor below 1 would accept a failure inside the target"),
                    HELP,
                );
            None
        }
        None => {
            ck.error_help(
                span,
                format!("wrong type: {what} is {}, expected a number", describe(v)),
                HELP,
            );
            None
        }
    };
    match raw.get_ref() {
        toml::Value::Table(table) => {
            // Spans of the keys: find each `name =` inside the table's text.
            for (axis, v) in table {
                let span = ck.key_span(raw.span(), axis);
                if let Some(x) = one(format!("claim.headroom.{axis}"), v, span.clone(), ck) {
                    out.headroom.axes.insert(axis.clone(), x);
                }
                out.axis_spans.insert(axis.clone(), span);
            }
        }
        v => out.headroom.all = one("claim.headroom".to_string(), v, raw.span(), ck),
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_order_weakest_first_and_parse() {
        assert!(ClaimLevel::Functional < ClaimLevel::Trial);
        assert!(ClaimLevel::Trial < ClaimLevel::Production);
        assert_eq!(
            "production".parse::<ClaimLevel>(),
            Ok(ClaimLevel::Production)
        );
        assert!(
            "prod"
                .parse::<ClaimLevel>()
                .unwrap_err()
                .to_string()
                .contains("expected one of")
        );
    }
}
