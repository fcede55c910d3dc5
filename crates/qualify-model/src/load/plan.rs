//! [`LoadPlan`]: what one cell's load is — the model (open: arrivals at a rate; closed: user
//! loops), how long it is measured and warmed up, the per-request timeout, the slot limit, the
//! weighted request templates (HTTP/1.1 or a TCP line protocol), optional named phases and
//! whether acknowledged writes are recorded. The spec's `[load]` is checked into one; the load
//! engine (`qualify-load`) compiles and drives it.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::fault::Phase;

/// A cell's load. Serializes with durations in seconds (`duration_seconds`, …).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadPlan {
    #[serde(flatten)]
    pub model: Model,
    /// The measured phase, after the warmup.
    #[serde(rename = "duration_seconds", with = "seconds")]
    pub duration: Duration,
    /// Load sent before the measured phase and not measured (zero: none).
    #[serde(rename = "warmup_seconds", with = "seconds", default)]
    pub warmup: Duration,
    /// Per request, from the moment it is sent (connecting included); past it the request is
    /// an error of class `timeout`.
    #[serde(rename = "timeout_seconds", with = "seconds")]
    pub timeout: Duration,
    /// Open model: at most this many requests outstanding; later arrivals wait for a slot and
    /// their wait counts in the corrected latency. Not used by the closed model (its `users`
    /// are its concurrency).
    pub max_in_flight: u32,
    /// One or more, all HTTP or all TCP; request `seq` uses template number
    /// `pick(seq mod total weight)`, so the mix is exact and reproducible.
    pub requests: Vec<RequestTemplate>,
    /// Named windows of the measured phase with their own statistics (requests belong to the
    /// phase their intended start falls in).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub phases: Vec<PhaseWindow>,
    /// Record the sequence numbers attempted and acknowledged (warmup included), for a
    /// durability check after a restart.
    #[serde(default)]
    pub record_writes: bool,
    /// Event loops (threads) the generator runs on (default 1; at most `max_in_flight`, or
    /// `users`). Arrivals are dealt round-robin, slots and users split evenly. One loop
    /// drives some 20–40 thousand requests per second; the report's `generator.saturated`
    /// says when that was not enough.
    #[serde(default = "one")]
    pub threads: u32,
    /// Generator processes the load is split over (default 1: the engine runs in the cell's
    /// own process). With N > 1 each is a `qualify load-gen` offering `rate / N` (open model:
    /// every N-th arrival of the one schedule, so together they offer the plan's schedule) or
    /// `users / N` (closed), with `max_in_flight / N` slots and `threads` event loops of its
    /// own; their reports merge losslessly into one (`qualify_load::merge`).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub generators: u32,
    /// Open model: a ramping arrival rate instead of the constant `rate` (k6's
    /// ramping-arrival-rate): stage `k` moves the rate linearly from the previous stage's
    /// `rate` (the first stage: from `start_rate`) to its own over its `duration`. The
    /// measured phase is their sum (`duration` holds it), with no warmup; `rate` holds the
    /// highest stage rate. Empty: the constant `rate`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stages: Vec<Stage>,
    /// The rate the first stage ramps from (default 0, as k6's `startRate`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub start_rate: f64,
    /// How arrivals are spaced at the current rate (default evenly).
    #[serde(default, skip_serializing_if = "Arrivals::is_uniform")]
    pub arrivals: Arrivals,
}

/// One stage of a ramping arrival rate: reach `rate` (arrivals per second) by the end of
/// `duration`, linearly from where the previous stage ended.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Stage {
    pub rate: f64,
    #[serde(rename = "for_seconds", with = "seconds")]
    pub duration: Duration,
}

/// How arrivals are spaced. `Uniform`: arrival `i` when the schedule's expected count reaches
/// `i` (at a constant rate, every `1 / rate`). `Poisson`: exponential gaps at the current rate
/// (a non-homogeneous Poisson process by time rescaling), drawn from `seed`: the same seed,
/// plan and split give the same arrival times.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Arrivals {
    #[default]
    Uniform,
    Poisson {
        seed: u64,
    },
}

impl Arrivals {
    pub fn is_uniform(&self) -> bool {
        *self == Arrivals::Uniform
    }
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

/// Open: arrivals at `rate` per second, request `i` intended at `start + i / rate`, whatever
/// the responses. Closed: `users` loops, each sending its next request when the previous one
/// ended (latency then has no schedule to be corrected against: corrected = uncorrected).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "model", rename_all = "snake_case")]
pub enum Model {
    Open { rate: f64 },
    Closed { users: u32 },
}

/// One weighted request template.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequestTemplate {
    #[serde(default = "one")]
    pub weight: u32,
    #[serde(flatten)]
    pub kind: RequestKind,
}

fn one() -> u32 {
    1
}

fn is_one(n: &u32) -> bool {
    *n == 1
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RequestKind {
    Http(HttpRequest),
    Tcp(TcpRequest),
}

/// An HTTP/1.1 request to `http://TARGET`. `path` and `body` are templates (`{seq}`,
/// `{pad:N}`); header values are taken literally.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HttpRequest {
    #[serde(default = "get")]
    pub method: String,
    #[serde(default = "root")]
    pub path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// Statuses that count as success; empty: 200–399.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub expect_status: Vec<u16>,
}

fn get() -> String {
    "GET".to_string()
}

fn root() -> String {
    "/".to_string()
}

/// A line protocol over TCP: write `send` (a template), read one line; success when it starts
/// with `expect`. Replies must be single lines (Redis `SET`/`INCR`/`PING`, memcached `set`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TcpRequest {
    pub send: String,
    pub expect: String,
}

/// A window `[start, end)` of the measured phase, as offsets from its start, named by where it
/// falls around a fault (or a restart, or a pause): its statistics are the report's
/// `phases[]` of that name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PhaseWindow {
    #[serde(rename = "name")]
    pub phase: Phase,
    #[serde(rename = "start_seconds", with = "seconds")]
    pub start: Duration,
    #[serde(rename = "end_seconds", with = "seconds")]
    pub end: Duration,
}

impl LoadPlan {
    /// A plan with one HTTP `GET path` template and the given model; the other fields take
    /// the spec's defaults (10 s, no warmup, 2 s timeout, 256 slots).
    pub fn http_get(model: Model, path: &str) -> LoadPlan {
        LoadPlan {
            model,
            duration: Duration::from_secs(10),
            warmup: Duration::ZERO,
            timeout: Duration::from_secs(2),
            max_in_flight: 256,
            requests: vec![RequestTemplate {
                weight: 1,
                kind: RequestKind::Http(HttpRequest {
                    method: get(),
                    path: path.to_string(),
                    body: None,
                    headers: BTreeMap::new(),
                    expect_status: Vec::new(),
                }),
            }],
            phases: Vec::new(),
            record_writes: false,
            threads: 1,
            generators: 1,
            stages: Vec::new(),
            start_rate: 0.0,
            arrivals: Arrivals::Uniform,
        }
    }

    /// A plan with one TCP line-protocol template and the given model (defaults as
    /// [`LoadPlan::http_get`]).
    pub fn tcp_line(model: Model, send: &str, expect: &str) -> LoadPlan {
        LoadPlan {
            requests: vec![RequestTemplate {
                weight: 1,
                kind: RequestKind::Tcp(TcpRequest {
                    send: send.to_string(),
                    expect: expect.to_string(),
                }),
            }],
            ..LoadPlan::http_get(model, "/")
        }
    }

    /// The offered rate (open model).
    pub fn rate(&self) -> Option<f64> {
        match self.model {
            Model::Open { rate } => Some(rate),
            Model::Closed { .. } => None,
        }
    }
}

/// Serde for durations as (fractional) seconds.
pub(crate) mod seconds {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let secs = f64::deserialize(d)?;
        Duration::try_from_secs_f64(secs).map_err(serde::de::Error::custom)
    }
}
