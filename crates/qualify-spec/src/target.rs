//! `[target]`: the environment the claim is about (cores, nodes, memory, concurrency, workload
//! per workload axis: `workload = { n = 1e6 }`, and for services the offered `rate` it must
//! sustain, and the `dependencies` it talks to there: `[[dependency]]` names, each of which a
//! production claim must have examined with a fault). Every field is optional; a `production`
//! claim needs the table. A workload key that names no axis is never examined, so it stays a gap.

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
    dependencies: Option<Vec<Spanned<String>>>,
}

/// Where the target's facts that name other sections were written (for the cross-checks).
#[derive(Default)]
pub(crate) struct TargetSpans {
    /// Each `workload` entry's value.
    pub workload: BTreeMap<String, std::ops::Range<usize>>,
    /// Each `dependencies` entry.
    pub dependencies: Vec<(String, std::ops::Range<usize>)>,
}

/// The target, with where its workload and dependency entries were written.
pub(crate) fn check(raw: RawTarget, ck: &mut Checker<'_>) -> (Target, TargetSpans) {
    let mut spans = TargetSpans {
        workload: raw
            .workload
            .iter()
            .flatten()
            .map(|(k, v)| (k.clone(), v.span()))
            .collect(),
        dependencies: Vec::new(),
    };
    let mut dependencies: Vec<String> = Vec::new();
    for d in raw.dependencies.unwrap_or_default() {
        if dependencies.contains(d.get_ref()) {
            ck.error_help(
                d.span(),
                format!("target.dependencies names `{}` twice", d.get_ref()),
                "list each dependency once",
            );
            continue;
        }
        dependencies.push(d.get_ref().clone());
        spans.dependencies.push((d.get_ref().clone(), d.span()));
    }
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
        dependencies,
    };
    (target, spans)
}
