//! `[service]`: its presence makes the artifact a service — each cell starts it, waits until it
//! is ready, drives it with `[load]`, then stops it. Owns `ready` (`{ http = "/healthz" }`: a
//! `GET` answers 2xx; `{ tcp = true }`: the port accepts; `{ command = … }`: a command exits 0 —
//! each with `within`, default 30 s), `stop` (`signal`, default SIGTERM; `grace`, default 5 s:
//! not gone by then → flag `slow_shutdown`, then SIGKILL) and an optional fixed `port`.
//!
//! The port: qualify assigns a free loopback port per cell, substitutes it for `{port}` (in
//! the command, `[artifact.env]` and a ready command) and exports it as `PORT`. A service that
//! takes neither still runs (qualify cannot tell whether it reads `PORT`); one that always
//! listens on the same port says so with `port = N` — its cells then cannot run side by side.

use std::time::Duration;

use serde::{Deserialize, Serialize, Serializer};
use toml::{Spanned, Value};

use crate::check::{Checker, PlaceholderUse};
use crate::command::{CommandLine, RawCommand, check_command};

/// The name of the placeholder (and, upper-cased, the environment variable) that carries a
/// service cell's port.
pub const PORT_PLACEHOLDER: &str = "port";

/// The checked `[service]` table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Service {
    pub ready: Ready,
    pub stop: Stop,
    /// A fixed port the service always listens on (`None`: qualify assigns one per cell).
    pub port: Option<u16>,
}

/// When a started service counts as ready.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Ready {
    pub check: ReadyCheck,
    #[serde(rename = "within_seconds", serialize_with = "seconds")]
    pub within: Duration,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ReadyCheck {
    /// `GET path` on the service's port answers 2xx.
    Http(String),
    /// The service's port accepts a TCP connection.
    Tcp,
    /// The command exits 0 (run repeatedly in the workdir; `{port}` and axis placeholders are
    /// substituted).
    Command(CommandLine),
}

/// How a service is stopped after its load.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Stop {
    /// The signal's name, e.g. `SIGTERM`.
    pub signal: String,
    /// Its number on Linux.
    pub signal_number: i32,
    #[serde(rename = "grace_seconds", serialize_with = "seconds")]
    pub grace: Duration,
}

impl Default for Stop {
    fn default() -> Stop {
        Stop {
            signal: "SIGTERM".to_string(),
            signal_number: 15,
            grace: DEFAULT_GRACE,
        }
    }
}

pub const DEFAULT_WITHIN: Duration = Duration::from_secs(30);
pub const DEFAULT_GRACE: Duration = Duration::from_secs(5);

/// The signals a service can be stopped (or, by `[recovery]`, killed) with (Linux numbers).
const SIGNALS: [(&str, i32); 7] = [
    ("SIGTERM", 15),
    ("SIGINT", 2),
    ("SIGQUIT", 3),
    ("SIGHUP", 1),
    ("SIGUSR1", 10),
    ("SIGUSR2", 12),
    ("SIGKILL", 9),
];

fn seconds<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawService {
    ready: Option<Spanned<RawReady>>,
    stop: Option<Spanned<RawStop>>,
    port: Option<Spanned<i64>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawReady {
    http: Option<Spanned<String>>,
    tcp: Option<Spanned<bool>>,
    command: Option<Spanned<RawCommand>>,
    within: Option<Spanned<Value>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawStop {
    signal: Option<Spanned<String>>,
    grace: Option<Spanned<Value>>,
}

/// Check `[service]`; placeholders of a ready command are added to `uses`.
pub(crate) fn check(
    raw: RawService,
    ck: &mut Checker<'_>,
    uses: &mut Vec<PlaceholderUse>,
) -> Service {
    let ready = match raw.ready {
        None => Ready {
            check: ReadyCheck::Tcp,
            within: DEFAULT_WITHIN,
        },
        Some(r) => check_ready(r, "service.ready", "{port}", DEFAULT_WITHIN, ck, uses),
    };
    let stop = match raw.stop {
        None => Stop::default(),
        Some(s) => check_stop(s.into_inner(), ck),
    };
    let port =
        raw.port.and_then(|p| match u16::try_from(*p.get_ref()) {
            Ok(port) if port > 0 => Some(port),
            _ => {
                ck.error_help(
                p.span(),
                format!("service.port must be a TCP port (1–65535), found {}", p.get_ref()),
                "or leave it out: qualify then assigns a free port per cell as {port} and $PORT",
            );
                None
            }
        });
    Service { ready, stop, port }
}

/// Check a `ready = { … }` table (`what` names it in messages, e.g. `service.ready`; `port`
/// is the placeholder of the port it checks, e.g. `{port}`); the placeholders of a ready
/// command are added to `uses`.
pub(crate) fn check_ready(
    raw: Spanned<RawReady>,
    what: &str,
    port: &str,
    default_within: Duration,
    ck: &mut Checker<'_>,
    uses: &mut Vec<PlaceholderUse>,
) -> Ready {
    let span = raw.span();
    let r = raw.into_inner();
    let within = r
        .within
        .as_ref()
        .and_then(|w| ck.duration(w))
        .unwrap_or(default_within);
    let given = usize::from(r.http.is_some())
        + usize::from(r.tcp.is_some())
        + usize::from(r.command.is_some());
    let help = "write ready = { http = \"/healthz\", within = \"20s\" }, { tcp = true, within = \"20s\" } or { command = \"…\", within = \"20s\" }";
    if given != 1 {
        let message = if given == 0 {
            format!("{what} needs one of http, tcp or command")
        } else {
            format!("{what} takes one of http, tcp or command, not several")
        };
        ck.error_help(span, message, help);
        return Ready {
            check: ReadyCheck::Tcp,
            within,
        };
    }
    let check = if let Some(path) = r.http {
        if !path.get_ref().starts_with('/') {
            ck.error_help(
                path.span(),
                format!(
                    "{what}.http `{}` must be a path starting with `/`",
                    path.get_ref()
                ),
                format!(
                    "qualify sends GET http://127.0.0.1:{port}{{path}}, e.g. http = \"/healthz\""
                ),
            );
        }
        ReadyCheck::Http(path.into_inner())
    } else if let Some(tcp) = r.tcp {
        if !*tcp.get_ref() {
            ck.error_help(tcp.span(), format!("{what}.tcp must be true"), help);
        }
        ReadyCheck::Tcp
    } else if let Some(command) = r.command {
        ReadyCheck::Command(check_command(
            command,
            &format!("{what}.command"),
            true,
            ck,
            uses,
        ))
    } else {
        ReadyCheck::Tcp
    };
    Ready { check, within }
}

pub(crate) fn check_stop(raw: RawStop, ck: &mut Checker<'_>) -> Stop {
    let mut stop = Stop::default();
    if let Some(signal) = raw.signal
        && let Some((name, number)) = check_signal(&signal, "stop", ck)
    {
        stop.signal = name;
        stop.signal_number = number;
    }
    if let Some(grace) = raw.grace.as_ref().and_then(|g| ck.duration(g)) {
        stop.grace = grace;
    }
    stop
}

/// A signal's name (`SIGTERM`, `term`, `sigkill`: case and the `SIG` prefix optional) as its
/// canonical name and Linux number; an unknown one is reported as an unknown `what` signal.
pub(crate) fn check_signal(
    signal: &Spanned<String>,
    what: &str,
    ck: &mut Checker<'_>,
) -> Option<(String, i32)> {
    let written = signal.get_ref().trim().to_ascii_uppercase();
    let name = if written.starts_with("SIG") {
        written
    } else {
        format!("SIG{written}")
    };
    match SIGNALS.iter().find(|(n, _)| *n == name) {
        Some((n, number)) => Some(((*n).to_string(), *number)),
        None => {
            ck.error_help(
                signal.span(),
                format!("unknown {what} signal `{}`", signal.get_ref()),
                format!("expected one of: {}", SIGNALS.map(|(n, _)| n).join(", ")),
            );
            None
        }
    }
}
