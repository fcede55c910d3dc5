//! `writes = { request, read, checker }`: the acknowledged-writes check, in `[recovery]` (after
//! the service is killed and restarted) or in `[faults]` (after a dependency's fault window:
//! `kill`, `restart`, … — read back through the service). The load sends `request` with each
//! write's sequence number in `{seq}`; after it, qualify sends `read` for every attempted
//! `{seq}` and checks that no acknowledged write was lost (Jepsen's set check: lost,
//! recovered, unexpected; failed and unknown writes are never lost).
//!
//! Each of `request` and `read` is HTTP (`method`, `path`, `body`, `headers`, `expect_status`,
//! as `[[load.request]]`) or a TCP line protocol (`tcp = { send, expect }`): a write is
//! acknowledged when its reply line starts with `expect`; a read finds the write present when
//! the reply line — or the payload of a RESP bulk string (`$N`, Redis) — starts with its
//! `expect`, which may use `{seq}` (`GET k{seq}` → `v{seq}`). Both use the protocol of
//! `[load]` (the service's port speaks one). Both must use `{seq}`.
//!
//! `checker` (optional): a command (argv or a shell line) that receives the history of every
//! write as a JSON Lines file in `{history}` — `{"seq": 17, "outcome": "acknowledged" |
//! "failed" | "unknown", "read": "present" | "absent" | "unread"}` — and answers with its exit
//! status (0 valid, 1 invalid, anything else: it could not judge) and its last line of output.
//! It knows `{history}`, `{port}` (the service's) and the axes, and runs outside the sandbox
//! (it is the user's judge, like the build step) in the service's network.

use std::collections::BTreeMap;
use std::ops::Range;

use qualify_model::load::{RequestKind, TcpRequest};
use serde::{Deserialize, Serialize};
use toml::Spanned;

use crate::axis::Axis;
use crate::check::Checker;
use crate::command::{CommandLine, RawCommand, check_command};
use crate::load::{HttpLoadRequest, Load, RawHttp, RawTcp, check_http, template};

/// The placeholder the checker receives the history file's path in.
pub const HISTORY_PLACEHOLDER: &str = "history";

/// The write check: what is written under load, how each write is read back, and who judges
/// the history.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Writes {
    pub request: RequestKind,
    pub read: RequestKind,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checker: Option<CommandLine>,
}

impl Writes {
    /// The HTTP write request, when the check is HTTP.
    pub fn http_request(&self) -> Option<&HttpLoadRequest> {
        match &self.request {
            RequestKind::Http(r) => Some(r),
            RequestKind::Tcp(_) => None,
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawWrites {
    request: Option<Spanned<RawWriteRequest>>,
    read: Option<Spanned<RawWriteRequest>>,
    checker: Option<Spanned<RawCommand>>,
}

/// HTTP keys or a `tcp` table.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWriteRequest {
    method: Option<Spanned<String>>,
    path: Option<Spanned<String>>,
    body: Option<Spanned<String>>,
    headers: Option<BTreeMap<String, Spanned<String>>>,
    expect_status: Option<Spanned<Vec<Spanned<i64>>>>,
    tcp: Option<Spanned<RawTcp>>,
}

/// Which request of the check, for messages.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Part {
    Request,
    Read,
}

/// Check `writes` of `[recovery]` or `[faults]` (`table` names it: `recovery`, `faults`)
/// against the load's protocol (`load`: `None` when the spec has no `[load]`).
pub(crate) fn check(
    raw: Spanned<RawWrites>,
    table: &str,
    load: Option<&Load>,
    axes: &[Axis],
    ck: &mut Checker<'_>,
) -> Option<Writes> {
    let span = raw.span();
    let raw = raw.into_inner();
    let what = format!("{table}.writes");
    let (Some(request), Some(read)) = (raw.request, raw.read) else {
        ck.error_help(
            span,
            format!("{what} needs `request` (how a write is sent) and `read` (how it is read back)"),
            "e.g. writes = { request = { method = \"PUT\", path = \"/items/{seq}\" }, read = { method = \"GET\", path = \"/items/{seq}\", expect_status = [200] } }, or with tcp = { send = \"SET k{seq} v{seq}\\r\\n\", expect = \"+OK\" } for a line protocol",
        );
        return None;
    };
    let request_span = request.span();
    let read_span = read.span();
    let request = one(
        request.into_inner(),
        &what,
        Part::Request,
        request_span.clone(),
        axes,
        ck,
    );
    let read = one(
        read.into_inner(),
        &what,
        Part::Read,
        read_span.clone(),
        axes,
        ck,
    );
    let (request, read) = (request?, read?);
    let is_tcp = |k: &RequestKind| matches!(k, RequestKind::Tcp(_));
    if is_tcp(&request) != is_tcp(&read) {
        ck.error_help(
            read_span.clone(),
            format!("{what}.read and {what}.request speak different protocols"),
            "the service's port speaks one: make both HTTP (method, path, …) or both tcp = { send, expect }",
        );
    }
    if let Some(load) = load
        && let Some(first) = load.plan.requests.first()
        && is_tcp(&first.kind) != is_tcp(&request)
    {
        let (load_kind, write_kind) = if is_tcp(&first.kind) {
            ("tcp", "HTTP")
        } else {
            ("HTTP", "tcp")
        };
        ck.error_help(
            span.clone(),
            format!("{what} sends {write_kind} requests, but [load] sends {load_kind} requests"),
            format!(
                "the service's port speaks one protocol: write the check as {load_kind} requests, or change [[load.request]]"
            ),
        );
    }
    if !uses_seq(&request) {
        let example = if is_tcp(&request) {
            "send = \"SET k{seq} v{seq}\\r\\n\""
        } else {
            "path = \"/items/{seq}\""
        };
        ck.error_help(
            request_span,
            format!("{what}.request does not use {{seq}}: every write would look the same"),
            format!("put the write's sequence number in what is sent, e.g. {example}"),
        );
    }
    if !uses_seq(&read) {
        let example = if is_tcp(&read) {
            "read = { tcp = { send = \"GET k{seq}\\r\\n\", expect = \"v{seq}\" } }"
        } else {
            "read = { method = \"GET\", path = \"/items/{seq}\", expect_status = [200] }"
        };
        ck.error_help(
            read_span,
            format!(
                "{what}.read does not use {{seq}} in what it sends: qualify reads each write back by its number"
            ),
            format!("e.g. {example}"),
        );
    }
    let checker = raw.checker.map(|c| {
        let checker_span = c.span();
        let mut uses = Vec::new();
        let command = check_command(c, &format!("{what}.checker"), true, ck, &mut uses);
        let mut used = std::collections::BTreeSet::new();
        let names: std::collections::BTreeSet<String> =
            axes.iter().map(|a| a.name.clone()).collect();
        crate::dependency::placeholders(
            &uses,
            &[HISTORY_PLACEHOLDER, crate::service::PORT_PLACEHOLDER],
            &format!("{what}.checker"),
            &names,
            ck,
            &mut used,
        );
        if !uses.iter().any(|u| u.name == HISTORY_PLACEHOLDER) {
            ck.error_help(
                checker_span,
                format!("{what}.checker never names {{history}}: it would not see the writes"),
                "pass the history file, e.g. checker = [\"python3\", \"check.py\", \"{history}\"]",
            );
        }
        command
    });
    Some(Writes {
        request,
        read,
        checker,
    })
}

fn uses_seq(kind: &RequestKind) -> bool {
    match kind {
        RequestKind::Http(r) => {
            r.path.contains("{seq}") || r.body.as_deref().is_some_and(|b| b.contains("{seq}"))
        }
        RequestKind::Tcp(t) => t.send.contains("{seq}"),
    }
}

/// One of `request` and `read`: HTTP or tcp.
fn one(
    raw: RawWriteRequest,
    what: &str,
    part: Part,
    span: Range<usize>,
    axes: &[Axis],
    ck: &mut Checker<'_>,
) -> Option<RequestKind> {
    let name = match part {
        Part::Request => format!("{what}.request"),
        Part::Read => format!("{what}.read"),
    };
    if let Some(tcp) = raw.tcp {
        let http_keys = [
            raw.method.as_ref().map(Spanned::span),
            raw.path.as_ref().map(Spanned::span),
            raw.body.as_ref().map(Spanned::span),
            raw.expect_status.as_ref().map(Spanned::span),
            raw.headers
                .as_ref()
                .and_then(|h| h.values().next().map(Spanned::span)),
        ];
        if let Some(at) = http_keys.into_iter().flatten().next() {
            ck.error_help(
                at,
                format!("{name} is HTTP or tcp, not both"),
                "remove the HTTP keys (method, path, body, headers, expect_status) or the tcp table",
            );
        }
        let tcp = tcp.into_inner();
        let send = crate::load::check_tcp_send(&tcp, &format!("{name} tcp.send"), axes, ck);
        let expect = tcp.expect.get_ref().clone();
        if expect.is_empty() || expect.contains(['\r', '\n']) {
            ck.error_help(
                tcp.expect.span(),
                format!("{name} tcp.expect must be non-empty text without a line break"),
                "the reply line must start with it, e.g. expect = \"+OK\"",
            );
        }
        match part {
            Part::Request if expect.contains("{seq}") || expect.contains("{pad:") => {
                ck.error_help(
                    tcp.expect.span(),
                    format!("{name} tcp.expect is matched as written: placeholders are not substituted there"),
                    "a write's reply is the same for every write (e.g. expect = \"+OK\"); {seq} belongs in read's expect",
                );
            }
            Part::Read => template(&tcp.expect, &format!("{name} tcp.expect"), axes, ck),
            Part::Request => {}
        }
        return Some(RequestKind::Tcp(TcpRequest { send, expect }));
    }
    if part == Part::Request && raw.method.is_none() {
        ck.error_help(
            span,
            format!("{name} needs `method`"),
            "a write changes state: e.g. method = \"PUT\" or \"POST\"",
        );
    }
    let http = check_http(
        RawHttp {
            method: raw.method,
            path: raw.path,
            body: raw.body,
            headers: raw.headers,
            expect_status: raw.expect_status,
        },
        &name,
        axes,
        ck,
    );
    Some(RequestKind::Http(http))
}
