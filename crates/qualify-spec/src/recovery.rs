//! `[recovery]`: kill the service during its load and restart it — does it come back, and does
//! it keep what it acknowledged? Owns `signal` (default `SIGKILL`; the names `[service] stop`
//! takes), `at` (the kill's offset within the measured load phase, inside it), `ready_within`
//! (default 20 s: the restarted service must be ready again within it) and an optional write
//! check, `writes = { request = { method, path, body?, headers?, expect_status? }, read = {
//! method?, path, expect_status? } }`: the load sends `request` with each write's sequence
//! number in `{seq}` (an answer in `expect_status`, default 200–399, acknowledges it); after
//! the load, qualify sends `read` for every attempted `{seq}` — an answer in its
//! `expect_status` means the write is present — and checks that no acknowledged write was lost
//! (Jepsen's set check: lost, recovered, unexpected).
//!
//! Both templates must use `{seq}` (one write is told from another only by it); they know
//! `{seq}` and `{pad:N}` like `[[load.request]]`, and writes need an HTTP load.

use std::ops::Range;
use std::time::Duration;

use serde::{Deserialize, Serialize, Serializer};
use toml::{Spanned, Value};

use crate::axis::Axis;
use crate::check::Checker;
use crate::faults::text;
use crate::load::{HttpLoadRequest, Load, LoadRequestKind, RawHttp, check_http, zero_or_duration};
use crate::service::check_signal;

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

/// The write check: what is written under load, and how each write is read back.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Writes {
    pub request: HttpLoadRequest,
    pub read: HttpLoadRequest,
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

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWrites {
    request: Option<Spanned<RawHttp>>,
    read: Option<Spanned<RawHttp>>,
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
        let writes_span = w.span();
        if let Some((load, _)) = &load
            && load
                .plan
                .requests
                .iter()
                .any(|r| matches!(r.kind, LoadRequestKind::Tcp(_)))
        {
            ck.error_help(
                writes_span.clone(),
                "recovery.writes needs an HTTP load, but [load] sends tcp requests",
                "the write check sends and reads HTTP requests: drop writes, or make the load HTTP",
            );
        }
        check_writes(w.into_inner(), writes_span, axes, ck)
    });
    Recovery {
        signal,
        signal_number,
        at,
        ready_within,
        writes,
    }
}

fn check_writes(
    raw: RawWrites,
    span: Range<usize>,
    axes: &[Axis],
    ck: &mut Checker<'_>,
) -> Option<Writes> {
    let (Some(request), Some(read)) = (raw.request, raw.read) else {
        ck.error_help(
            span,
            "recovery.writes needs `request` (how a write is sent) and `read` (how it is read back)",
            "e.g. writes = { request = { method = \"PUT\", path = \"/items/{seq}\" }, read = { method = \"GET\", path = \"/items/{seq}\", expect_status = [200] } }",
        );
        return None;
    };
    let (request_span, read_span) = (request.span(), read.span());
    let request = request.into_inner();
    if request.method.is_none() {
        ck.error_help(
            request_span.clone(),
            "recovery.writes.request needs `method`",
            "a write changes state: e.g. method = \"PUT\" or \"POST\"",
        );
    }
    let request = check_http(request, "recovery.writes.request", axes, ck);
    let read = check_http(read.into_inner(), "recovery.writes.read", axes, ck);
    let seq = |r: &HttpLoadRequest| {
        r.path.contains("{seq}") || r.body.as_deref().is_some_and(|b| b.contains("{seq}"))
    };
    if !seq(&request) {
        ck.error_help(
            request_span,
            "recovery.writes.request does not use {seq}: every write would look the same",
            "put the write's sequence number in the path or body, e.g. path = \"/items/{seq}\"",
        );
    }
    if !read.path.contains("{seq}") {
        ck.error_help(
            read_span,
            "recovery.writes.read path does not use {seq}: qualify reads each write back by its number",
            "e.g. read = { method = \"GET\", path = \"/items/{seq}\", expect_status = [200] }",
        );
    }
    Some(Writes { request, read })
}
