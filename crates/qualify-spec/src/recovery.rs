//! `[recovery]`: kill the service during its load and restart it — does it come back, and does
//! it keep what it acknowledged? Owns `signal` (default `SIGKILL`; the names `[service] stop`
//! takes), `at` (the kill's offset within the measured load phase, inside it), `ready_within`
//! (default 20 s: the restarted service must be ready again within it) and an optional write
//! check, `writes = { request, read, checker }` (`crate::writes`: HTTP or a TCP line protocol,
//! read back after the load — from the restarted service on the same data).

use std::ops::Range;
use std::time::Duration;

use serde::{Deserialize, Serialize, Serializer};
use toml::{Spanned, Value};

use crate::axis::Axis;
use crate::check::Checker;
use crate::faults::text;
use crate::load::{Load, zero_or_duration};
use crate::service::check_signal;
use crate::writes::{RawWrites, Writes};

pub const DEFAULT_READY_WITHIN: Duration = Duration::from_secs(20);

/// The checked `[recovery]` table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Recovery {
    /// The signal's name, e.g. `SIGKILL`.
    pub signal: String,
    /// Its number on Linux.
    pub signal_number: i32,
    /// Offset of the kill within the measured load phase.
    #[serde(rename = "at_seconds", serialize_with = "seconds")]
    pub at: Duration,
    /// The restarted service must be ready within this.
    #[serde(rename = "ready_within_seconds", serialize_with = "seconds")]
    pub ready_within: Duration,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub writes: Option<Writes>,
}

fn seconds<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawRecovery {
    signal: Option<Spanned<String>>,
    at: Option<Spanned<Value>>,
    ready_within: Option<Spanned<Value>>,
    writes: Option<Spanned<RawWrites>>,
}

/// Check `[recovery]` (spanning `span`) against the load (`None`: the spec has none; `spec.rs`
/// reports that).
pub(crate) fn check(
    raw: RawRecovery,
    span: Range<usize>,
    load: Option<(&Load, Range<usize>)>,
    axes: &[Axis],
    ck: &mut Checker<'_>,
) -> Recovery {
    let (signal, signal_number) = raw
        .signal
        .as_ref()
        .and_then(|s| check_signal(s, "recovery", ck))
        .unwrap_or_else(|| ("SIGKILL".to_string(), 9));
    let ready_within = raw
        .ready_within
        .as_ref()
        .and_then(|r| ck.duration(r))
        .unwrap_or(DEFAULT_READY_WITHIN);
    let at = match &raw.at {
        None => {
            ck.error_help(
                span.clone(),
                "[recovery] needs `at`: when, within the measured load phase, the service is killed",
                "add at = \"5s\" (an offset after the warmup, inside [load] duration)",
            );
            Duration::ZERO
        }
        Some(at) => {
            let offset = zero_or_duration(at, ck).unwrap_or(Duration::ZERO);
            if let Some((load, load_span)) = &load
                && offset >= load.plan.duration
            {
                let position = ck.position(load_span.start);
                ck.error_help(
                    at.span(),
                    format!(
                        "recovery.at {} lies outside the measured load phase, which lasts {} ([load] duration)",
                        text(offset),
                        text(load.plan.duration)
                    ),
                    format!(
                        "kill the service inside the measured phase (at < {}), or raise duration in [load] at {position}",
                        text(load.plan.duration)
                    ),
                );
            }
            offset
        }
    };
    let writes = raw.writes.and_then(|w| {
        crate::writes::check(w, "recovery", load.as_ref().map(|(l, _)| *l), axes, ck)
    });
    Recovery {
        signal,
        signal_number,
        at,
        ready_within,
        writes,
    }
}
