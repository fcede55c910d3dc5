//! `[target]`: the environment the claim is about (cores, nodes, memory). Every field is
//! optional; a `production` claim needs the table.

use serde::{Deserialize, Serialize};
use toml::{Spanned, Value};

use crate::check::Checker;

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Target {
    pub cores: Option<u64>,
    pub nodes: Option<u64>,
    pub memory_bytes: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawTarget {
    cores: Option<Spanned<i64>>,
    nodes: Option<Spanned<i64>>,
    memory: Option<Spanned<Value>>,
}

pub(crate) fn check(raw: RawTarget, ck: &mut Checker<'_>) -> Target {
    Target {
        cores: raw.cores.and_then(|c| ck.positive(&c, "target.cores")),
        nodes: raw.nodes.and_then(|n| ck.positive(&n, "target.nodes")),
        memory_bytes: raw.memory.and_then(|m| ck.size(&m)),
    }
}
