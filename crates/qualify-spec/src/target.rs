//! `[target]`: the environment the claim is about (cores, nodes, memory, concurrency, workload
//! per workload axis: `workload = { n = 1e6 }`, and for services the offered `rate` it must
//! sustain). Every field is optional; a `production` claim
//! needs the table. A workload key that names no axis is never examined, so it stays a gap.

use std::collections::BTreeMap;

use serde::Deserialize;
use toml::{Spanned, Value};

use crate::check::Checker;

/// The target environment (the shared vocabulary's).
pub use qualify_model::Target;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawTarget {
    cores: Option<Spanned<i64>>,
    nodes: Option<Spanned<i64>>,
    memory: Option<Spanned<Value>>,
    concurrency: Option<Spanned<i64>>,
    workload: Option<BTreeMap<String, Spanned<Value>>>,
    rate: Option<Spanned<Value>>,
}

/// The target, with the span of each `workload` entry's value (for the cross-checks).
pub(crate) fn check(
    raw: RawTarget,
    ck: &mut Checker<'_>,
) -> (Target, BTreeMap<String, std::ops::Range<usize>>) {
    let spans = raw
        .workload
        .iter()
        .flatten()
        .map(|(k, v)| (k.clone(), v.span()))
        .collect();
    let target = Target {
        cores: raw.cores.and_then(|c| ck.positive(&c, "target.cores")),
        nodes: raw.nodes.and_then(|n| ck.positive(&n, "target.nodes")),
        memory_bytes: raw.memory.and_then(|m| ck.size(&m)),
        concurrency: raw
            .concurrency
            .and_then(|c| ck.positive(&c, "target.concurrency")),
        workload: raw
            .workload
            .unwrap_or_default()
            .into_iter()
            .filter_map(|(axis, v)| {
                let x = match v.get_ref() {
                    Value::Integer(i) => Some(*i as f64),
                    Value::Float(f) => Some(*f),
                    _ => None,
                };
                match x {
                    Some(x) if x > 0.0 && x.is_finite() => Some((axis, x)),
                    _ => {
                        ck.error_help(
                            v.span(),
                            format!("target.workload.{axis} must be a positive number"),
                            "give the workload the target runs at on that axis, e.g. workload = { n = 1000000 }",
                        );
                        None
                    }
                }
            })
            .collect(),
        rate: raw.rate.and_then(|r| match r.get_ref() {
            Value::Integer(i) if *i > 0 => Some(*i as f64),
            Value::Float(f) if *f > 0.0 && f.is_finite() => Some(*f),
            _ => {
                ck.error_help(
                    r.span(),
                    "target.rate must be a positive number",
                    "give the offered load the service must sustain in the target, e.g. rate = 500 (requests per second)",
                );
                None
            }
        }),
    };
    (target, spans)
}
