//! `[load]` and `[[load.request]]`: the load each service cell is driven with. `model` is
//! `open` (arrivals at `rate` per second whatever the answers; default) or `closed` (`users`
//! loops); `rate`/`users` is a number or one placeholder naming a `kind = "load"` axis
//! (`"{rps}"`). `duration` (default 10 s) is measured after `warmup` (default none);
//! `timeout` (default 2 s) bounds each request; `max_in_flight` (default 256) bounds
//! outstanding requests; `threads` (default 1) is how many event loops generate the load; `generators` (default 1) how
//! many generator processes share it (`rate / N` each, one merged report). Instead of `rate`
//! and `duration`, `stages = [{ rate, for }, …]` ramps the arrival rate linearly from stage to
//! stage (from `start_rate`, default 0); `arrivals` is `uniform` (default) or `poisson`
//! (exponential gaps from `seed`, default [`DEFAULT_SEED`]). Each
//! `[[load.request]]` is HTTP/1.1 (`method`, `path`, `body`,
//! `headers`, `expect_status`; default 200–399) or a TCP line protocol
//! (`tcp = { send, expect }`), never both kinds in one load, chosen by `weight` (default 1).
//!
//! Request templates know `{seq}` (the request's sequence number) and `{pad:N}` (N filler
//! bytes); every other brace is literal (JSON bodies need no escaping). They are not rendered
//! per cell: an axis placeholder there is an error. The grammar is `qualify_load::template`'s;
//! [`template_problems`] mirrors its checks (a test holds the two together).

use std::collections::BTreeMap;
use std::ops::Range;
use std::time::Duration;

use qualify_model::load::{
    Arrivals, HttpRequest, LoadPlan, Model, RequestKind, RequestTemplate, Stage, TcpRequest,
};
use serde::{Deserialize, Serialize};
use toml::{Spanned, Value};

use crate::axis::{Axis, AxisKind, Domain};
use crate::check::{Checker, describe};
use crate::template::is_placeholder_name;
use qualify_model::Value as AxisValue;

pub const DEFAULT_DURATION: Duration = Duration::from_secs(10);
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(2);
pub const DEFAULT_MAX_IN_FLIGHT: u32 = 256;
/// The most generator processes one load is split over.
pub const MAX_GENERATORS: i64 = 64;
/// The most requests in flight a load may allow.
pub const MAX_IN_FLIGHT: u64 = 1_000_000;
/// The most threads one load generator runs.
pub const MAX_THREADS: u64 = 1024;
/// The largest `{pad:N}`: 16 MiB.
pub const MAX_PAD: usize = 16 << 20;

/// The checked `[load]` table: the plan every cell runs, and where its rate or users come from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Load {
    /// The load as checked. Its model carries the fixed amount, or 1 as a stand-in for the
    /// load axis's value ([`Load::plan_for`] fills it per cell); `phases` and `record_writes`
    /// are the runner's (fault windows, `[recovery] writes`).
    pub plan: LoadPlan,
    /// Open model: arrivals per second; closed model: users.
    pub amount: Amount,
}

impl Load {
    /// The axis that sets the rate or users per cell, if any.
    pub fn axis(&self) -> Option<&str> {
        match &self.amount {
            Amount::Axis(name) => Some(name),
            Amount::Fixed(_) => None,
        }
    }

    /// The load model (`model = "open" | "closed"`).
    pub fn model(&self) -> LoadModel {
        match self.plan.model {
            Model::Open { .. } => LoadModel::Open,
            Model::Closed { .. } => LoadModel::Closed,
        }
    }

    /// The cell's rate (open) or users (closed): the fixed number, or the load axis's value in
    /// `params` (`None` when `params` lacks it or it is not a number).
    pub fn amount_for(&self, params: &qualify_model::Params) -> Option<f64> {
        match &self.amount {
            Amount::Fixed(x) => Some(*x),
            Amount::Axis(name) => params.get(name).and_then(AxisValue::as_f64),
        }
    }

    /// The cell's load plan: the checked plan with the cell's rate or users (`None` when the
    /// cell's amount is unknown).
    pub fn plan_for(&self, params: &qualify_model::Params) -> Option<LoadPlan> {
        let amount = self.amount_for(params)?;
        let mut plan = self.plan.clone();
        plan.model = model(self.model(), amount);
        Some(plan)
    }
}

/// The generator's model for `amount` (users rounded, at least 1).
fn model(kind: LoadModel, amount: f64) -> Model {
    match kind {
        LoadModel::Open => Model::Open { rate: amount },
        LoadModel::Closed => Model::Closed {
            users: amount.round().clamp(1.0, f64::from(u32::MAX)) as u32,
        },
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LoadModel {
    Open,
    Closed,
}

/// A number, or the name of the axis that gives it per cell (written `"{name}"`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Amount {
    Fixed(f64),
    Axis(String),
}

/// One `[[load.request]]`: the load generator's weighted template.
pub type LoadRequest = RequestTemplate;
/// HTTP or a TCP line protocol.
pub type LoadRequestKind = RequestKind;
/// An HTTP/1.1 request to `http://127.0.0.1:{port}` (statuses that count as success: empty
/// means 200–399).
pub type HttpLoadRequest = HttpRequest;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawLoad {
    model: Option<Spanned<String>>,
    rate: Option<Spanned<Value>>,
    users: Option<Spanned<Value>>,
    duration: Option<Spanned<Value>>,
    warmup: Option<Spanned<Value>>,
    timeout: Option<Spanned<Value>>,
    max_in_flight: Option<Spanned<i64>>,
    threads: Option<Spanned<i64>>,
    generators: Option<Spanned<i64>>,
    stages: Option<Spanned<Vec<Spanned<RawStage>>>>,
    start_rate: Option<Spanned<Value>>,
    arrivals: Option<Spanned<String>>,
    seed: Option<Spanned<i64>>,
    #[serde(default)]
    request: Vec<Spanned<RawRequest>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStage {
    rate: Spanned<Value>,
    #[serde(rename = "for")]
    duration: Spanned<Value>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRequest {
    weight: Option<Spanned<i64>>,
    method: Option<Spanned<String>>,
    path: Option<Spanned<String>>,
    body: Option<Spanned<String>>,
    headers: Option<BTreeMap<String, Spanned<String>>>,
    expect_status: Option<Spanned<Vec<Spanned<i64>>>>,
    tcp: Option<Spanned<RawTcp>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawTcp {
    pub send: Spanned<String>,
    pub expect: Spanned<String>,
}

/// A tcp request's `send` (`what` names it): it ends with a newline, and its template is
/// checked.
pub(crate) fn check_tcp_send(
    tcp: &RawTcp,
    what: &str,
    axes: &[Axis],
    ck: &mut Checker<'_>,
) -> String {
    let send = tcp.send.get_ref().clone();
    if !send.ends_with('\n') {
        ck.error_help(
            tcp.send.span(),
            format!("{what} must end with a newline"),
            "the server answers a line per request: end send with \\r\\n (Redis, memcached) or \\n",
        );
    }
    template(&tcp.send, what, axes, ck);
    send
}

/// Which axes `[load]` names in `rate`/`users` (valid or not), and whether that amount had
/// an error (then an unused load axis is not reported again).
pub(crate) struct AmountUse {
    pub axes: Vec<String>,
    pub failed: bool,
}

/// Check `[load]` (spanning `span`) against the declared axes.
pub(crate) fn check(
    raw: RawLoad,
    span: Range<usize>,
    axes: &[Axis],
    ck: &mut Checker<'_>,
) -> (Load, AmountUse) {
    let named = |v: &Option<Spanned<Value>>| match v.as_ref().map(Spanned::get_ref) {
        Some(Value::String(s)) => s
            .trim()
            .strip_prefix('{')
            .and_then(|t| t.strip_suffix('}'))
            .map(str::to_string),
        _ => None,
    };
    let mut amount_use = AmountUse {
        axes: [named(&raw.rate), named(&raw.users)]
            .into_iter()
            .flatten()
            .collect(),
        failed: false,
    };
    let model = match &raw.model {
        None => LoadModel::Open,
        Some(m) => match m.get_ref().as_str() {
            "open" => LoadModel::Open,
            "closed" => LoadModel::Closed,
            other => {
                ck.error_help(
                    m.span(),
                    format!("unknown load model `{other}`"),
                    "expected \"open\" (arrivals at `rate` per second) or \"closed\" (`users` loops)",
                );
                LoadModel::Open
            }
        },
    };
    let stages = raw
        .stages
        .as_ref()
        .map(|st| check_stages(st, &raw, model, ck));
    let amount = match (&raw.rate, &raw.users, model) {
        _ if stages.is_some() && raw.users.is_none() => stages.as_ref().and_then(|(stages, _)| {
            let peak = stages.iter().map(|s| s.rate).fold(0.0, f64::max);
            (peak > 0.0).then_some(Amount::Fixed(peak))
        }),
        (Some(_), Some(users), _) => {
            ck.error_help(
                users.span(),
                "[load] takes rate or users, not both",
                "rate drives the open model (arrivals per second), users the closed model (concurrent loops); keep the one model says",
            );
            None
        }
        (Some(rate), None, LoadModel::Open) => amount(rate, "rate", false, axes, ck),
        (None, Some(users), LoadModel::Closed) => amount(users, "users", true, axes, ck),
        (Some(rate), None, LoadModel::Closed) => {
            ck.error_help(
                rate.span(),
                "rate belongs to the open model, but model = \"closed\"",
                "give users = … for the closed model, or set model = \"open\"",
            );
            None
        }
        (None, Some(users), LoadModel::Open) => {
            ck.error_help(
                users.span(),
                "users belongs to the closed model, but the model is open",
                "set model = \"closed\" in [load], or give rate = … (arrivals per second)",
            );
            None
        }
        (None, None, model) => {
            let (key, example) = match model {
                LoadModel::Open => ("rate", "rate = 200 or rate = \"{rps}\""),
                LoadModel::Closed => ("users", "users = 16 or users = \"{users}\""),
            };
            ck.error_help(
                span.clone(),
                format!("[load] needs `{key}`"),
                format!("add {example}"),
            );
            None
        }
    };

    amount_use.failed = amount.is_none();
    let (stages, staged_duration) = stages.unwrap_or_default();
    let duration = match staged_duration {
        Some(d) => d,
        None => raw
            .duration
            .as_ref()
            .and_then(|d| ck.duration(d))
            .unwrap_or(DEFAULT_DURATION),
    };
    let warmup = raw
        .warmup
        .as_ref()
        .filter(|_| stages.is_empty())
        .and_then(|w| zero_or_duration(w, ck))
        .unwrap_or(Duration::ZERO);
    let start_rate = start_rate(&raw, !stages.is_empty(), ck);
    let arrivals = arrivals(&raw, model, ck);
    let timeout = raw
        .timeout
        .as_ref()
        .and_then(|t| ck.duration(t))
        .unwrap_or(DEFAULT_TIMEOUT);
    let max_in_flight = raw
        .max_in_flight
        .as_ref()
        .and_then(|m| ck.positive_at_most(m, "load.max_in_flight", MAX_IN_FLIGHT))
        .map_or(DEFAULT_MAX_IN_FLIGHT, |m| {
            u32::try_from(m).unwrap_or(u32::MAX)
        });

    let threads = raw
        .threads
        .as_ref()
        .and_then(|t| ck.positive_at_most(t, "load.threads", MAX_THREADS))
        .map_or(1, |t| u32::try_from(t).unwrap_or(u32::MAX));
    let generators = raw.generators.as_ref().map_or(1, |g| match *g.get_ref() {
        n @ 1..=MAX_GENERATORS => n as u32,
        n => {
            ck.error_help(
                g.span(),
                format!("load.generators must be between 1 and {MAX_GENERATORS}, found {n}"),
                "generators = 1 runs the load in qualify's own process; generators = N (2 or more) splits it over N `qualify load-gen` processes, each offering rate / N",
            );
            1
        }
    });

    if raw.request.is_empty() {
        ck.error_help(
            span,
            "[load] needs at least one [[load.request]]",
            "add [[load.request]] with method and path (HTTP), or tcp = { send = \"PING\\r\\n\", expect = \"+PONG\" }",
        );
    }
    let mut requests: Vec<LoadRequest> = Vec::new();
    for r in raw.request {
        let request_span = r.span();
        let Some(request) = check_request(r.into_inner(), request_span.clone(), axes, ck) else {
            continue;
        };
        let is_tcp = |r: &LoadRequest| matches!(r.kind, RequestKind::Tcp(_));
        if let Some(first) = requests.first()
            && is_tcp(first) != is_tcp(&request)
        {
            ck.error_help(
                request_span,
                "HTTP and tcp requests are mixed in one [load]",
                "a service's port speaks one protocol: make every [[load.request]] HTTP (method, path, …) or every one tcp = { send, expect }",
            );
        }
        requests.push(request);
    }
    let amount = amount.unwrap_or(Amount::Fixed(1.0));
    let fixed = match &amount {
        Amount::Fixed(x) => *x,
        Amount::Axis(_) => 1.0,
    };
    let load = Load {
        plan: LoadPlan {
            model: self::model(model, fixed),
            duration,
            warmup,
            timeout,
            max_in_flight,
            requests,
            phases: Vec::new(),
            record_writes: false,
            threads,
            generators,
            stages,
            start_rate,
            arrivals,
        },
        amount,
    };
    (load, amount_use)
}

/// The seed Poisson arrivals use when `[load] seed` is not given.
pub const DEFAULT_SEED: u64 = 1;

/// `stages = [{ rate, for }, …]`: each rate a positive number, each `for` a duration; never
/// with a fixed `rate`, `duration` or `warmup`, nor the closed model. The stages and their
/// total duration (`None` when a stage's duration was wrong).
fn check_stages(
    stages: &Spanned<Vec<Spanned<RawStage>>>,
    raw: &RawLoad,
    model: LoadModel,
    ck: &mut Checker<'_>,
) -> (Vec<Stage>, Option<Duration>) {
    let conflicts = [
        (
            raw.rate.as_ref().map(Spanned::span),
            "[load] takes stages or a fixed rate, not both",
            "stages set the arrival rate second by second (from start_rate, default 0): remove rate, or remove stages for a constant rate",
        ),
        (
            raw.duration.as_ref().map(Spanned::span),
            "[load] stages set the duration (the sum of their `for`): remove duration",
            "lengthen or add a stage instead",
        ),
        (
            raw.warmup.as_ref().map(Spanned::span),
            "[load] stages take no warmup: every stage is measured",
            "remove warmup; to warm up, start with a stage at a low rate (its seconds are measured too)",
        ),
    ];
    for (at, message, help) in conflicts {
        if let Some(at) = at {
            ck.error_help(at, message, help);
        }
    }
    if model == LoadModel::Closed {
        ck.error_help(
            stages.span(),
            "stages ramp an arrival rate: they need the open model, but model = \"closed\"",
            "remove model = \"closed\" (the open model is the default), or remove stages",
        );
    }
    if stages.get_ref().is_empty() {
        ck.error_help(
            stages.span(),
            "[load] stages is empty",
            "give one or more stages: stages = [{ rate = 100, for = \"10s\" }, { rate = 800, for = \"30s\" }]",
        );
        return (Vec::new(), None);
    }
    let mut out = Vec::new();
    let mut total = Some(Duration::ZERO);
    for (k, stage) in stages.get_ref().iter().enumerate() {
        let stage = stage.get_ref();
        let rate = match stage.rate.get_ref() {
            Value::Integer(n) if *n > 0 => Some(*n as f64),
            Value::Float(x) if x.is_finite() && *x > 0.0 => Some(*x),
            other => {
                ck.error_help(
                    stage.rate.span(),
                    format!(
                        "load.stages[{k}].rate must be a positive number of arrivals per second, found {}",
                        describe_value(other)
                    ),
                    "each stage ramps to its rate = N (> 0); to ramp down to nothing, end on a small rate and shorten the last stage",
                );
                None
            }
        };
        let duration = ck.duration(&stage.duration);
        total = match (total, duration) {
            (Some(t), Some(d)) => Some(t + d),
            _ => None,
        };
        if let (Some(rate), Some(duration)) = (rate, duration) {
            out.push(Stage { rate, duration });
        }
    }
    (out, total)
}

fn describe_value(v: &Value) -> String {
    match v {
        Value::Integer(n) => n.to_string(),
        Value::Float(x) => x.to_string(),
        other => describe(other).to_string(),
    }
}

/// `start_rate`: a number ≥ 0 the first stage ramps from (default 0); only with stages.
fn start_rate(raw: &RawLoad, staged: bool, ck: &mut Checker<'_>) -> f64 {
    let Some(v) = &raw.start_rate else {
        return 0.0;
    };
    if !staged {
        ck.error_help(
            v.span(),
            "load.start_rate is where the first stage ramps from, but there are no stages",
            "add stages = [{ rate = …, for = \"…\" }], or remove start_rate",
        );
        return 0.0;
    }
    match v.get_ref() {
        Value::Integer(n) if *n >= 0 => *n as f64,
        Value::Float(x) if x.is_finite() && *x >= 0.0 => *x,
        other => {
            ck.error_help(
                v.span(),
                format!(
                    "load.start_rate must be a number ≥ 0 (arrivals per second), found {}",
                    describe_value(other)
                ),
                "start_rate = 0 (the default) ramps the first stage up from nothing",
            );
            0.0
        }
    }
}

/// `arrivals = "uniform" | "poisson"` (open model) and `seed` (Poisson only).
fn arrivals(raw: &RawLoad, model: LoadModel, ck: &mut Checker<'_>) -> Arrivals {
    let kind = raw
        .arrivals
        .as_ref()
        .map(|a| (a.get_ref().as_str(), a.span()));
    let poisson = match kind {
        None | Some(("uniform", _)) => false,
        Some(("poisson", _)) => true,
        Some((other, at)) => {
            ck.error_help(
                at,
                format!("unknown arrivals `{other}`"),
                "expected \"uniform\" (evenly spaced at the current rate, the default) or \"poisson\" (exponential gaps, seeded)",
            );
            false
        }
    };
    if let (Some(a), LoadModel::Closed) = (&raw.arrivals, model) {
        ck.error_help(
            a.span(),
            "arrivals space the open model's arrivals, but model = \"closed\"",
            "remove arrivals: closed-model users send when their previous request ended",
        );
        return Arrivals::Uniform;
    }
    let seed = match &raw.seed {
        None => DEFAULT_SEED,
        Some(s) if !poisson => {
            ck.error_help(
                s.span(),
                "load.seed draws Poisson arrivals, but arrivals are uniform",
                "set arrivals = \"poisson\", or remove seed",
            );
            DEFAULT_SEED
        }
        Some(s) => match u64::try_from(*s.get_ref()) {
            Ok(n) => n,
            Err(_) => {
                ck.error_help(
                    s.span(),
                    format!("load.seed must be an integer ≥ 0, found {}", s.get_ref()),
                    "any seed ≥ 0 gives reproducible arrivals; the report records it",
                );
                DEFAULT_SEED
            }
        },
    };
    if poisson {
        Arrivals::Poisson { seed }
    } else {
        Arrivals::Uniform
    }
}

/// A warmup or an offset: zero (`0`, `"0s"`) or a duration.
pub(crate) fn zero_or_duration(value: &Spanned<Value>, ck: &mut Checker<'_>) -> Option<Duration> {
    let zero = match value.get_ref() {
        Value::Integer(0) => true,
        Value::Float(x) => *x == 0.0,
        Value::String(s) => {
            let digits = s.trim().trim_end_matches(|c: char| c.is_ascii_alphabetic());
            digits.trim().parse::<f64>().is_ok_and(|x| x == 0.0)
        }
        _ => false,
    };
    if zero {
        Some(Duration::ZERO)
    } else {
        ck.duration(value)
    }
}

/// `rate`/`users`: a positive number (an integer for users) or `"{axis}"` naming a load axis
/// whose values are such numbers.
fn amount(
    value: &Spanned<Value>,
    key: &str,
    integer: bool,
    axes: &[Axis],
    ck: &mut Checker<'_>,
) -> Option<Amount> {
    let what = if integer {
        "a positive integer"
    } else {
        "a positive number"
    };
    let help = format!(
        "write {key} = {} or {key} = \"{{name}}\" with a kind = \"load\" axis called name",
        if integer { "16" } else { "200" }
    );
    match value.get_ref() {
        Value::Integer(n) if *n >= 1 => Some(Amount::Fixed(*n as f64)),
        Value::Float(x) if !integer && x.is_finite() && *x > 0.0 => Some(Amount::Fixed(*x)),
        Value::String(text) => {
            let name = text
                .trim()
                .strip_prefix('{')
                .and_then(|t| t.strip_suffix('}'))
                .filter(|n| is_placeholder_name(n));
            let Some(name) = name else {
                ck.error_help(
                    value.span(),
                    format!("load.{key} {text:?} is neither a number nor one placeholder"),
                    help,
                );
                return None;
            };
            let Some(axis) = axes.iter().find(|a| a.name == name) else {
                ck.error_help(
                    value.span(),
                    format!("load.{key} uses `{{{name}}}`, but there is no axis named `{name}`"),
                    format!(
                        "declare [[axis]] name = \"{name}\" kind = \"load\" with the {key}s to run"
                    ),
                );
                return None;
            };
            if axis.kind != AxisKind::Load {
                ck.error_help(
                    value.span(),
                    format!(
                        "load.{key} uses axis `{name}`, a {} axis; it must be kind = \"load\"",
                        axis.kind
                    ),
                    "offered load is its own axis kind: set kind = \"load\" on that axis",
                );
                return None;
            }
            if let Some(bad) = bad_amount(axis, integer) {
                ck.error_help(
                    value.span(),
                    format!("axis `{name}` sets load.{key} but has the value {bad}; {key} must be {what}"),
                    format!("give axis `{name}` only {what}s"),
                );
                return None;
            }
            Some(Amount::Axis(name.to_string()))
        }
        other => {
            ck.error_help(
                value.span(),
                format!("load.{key} must be {what}, found {}", describe(other)),
                help,
            );
            None
        }
    }
}

/// A point of `axis` that is not a positive number (integer when `integer`), if any.
fn bad_amount(axis: &Axis, integer: bool) -> Option<String> {
    let bad = |v: &AxisValue| match v {
        AxisValue::Int(n) => *n < 1,
        AxisValue::Float(x) => integer || x.is_nan() || *x <= 0.0,
        AxisValue::Text(_) => true,
    };
    match &axis.domain {
        Domain::Values(values) => values.iter().find(|v| bad(v)).map(|v| format!("`{v}`")),
        Domain::Range(range) => {
            if range.lo.as_f64() <= 0.0 {
                Some(format!("`{}` (the range starts there)", range.lo))
            } else if integer && !range.is_integer() {
                Some("non-integer points (the range is not an integer lattice)".to_string())
            } else {
                None
            }
        }
    }
}

fn check_request(
    r: RawRequest,
    span: Range<usize>,
    axes: &[Axis],
    ck: &mut Checker<'_>,
) -> Option<LoadRequest> {
    let weight = r
        .weight
        .as_ref()
        .and_then(|w| ck.positive(w, "load.request weight"))
        .map_or(1, |w| u32::try_from(w).unwrap_or(u32::MAX));
    if let Some(tcp) = r.tcp {
        let http_keys = [
            r.method.as_ref().map(Spanned::span),
            r.path.as_ref().map(Spanned::span),
            r.body.as_ref().map(Spanned::span),
            r.expect_status.as_ref().map(Spanned::span),
            r.headers
                .as_ref()
                .and_then(|h| h.values().next().map(Spanned::span)),
        ];
        if let Some(at) = http_keys.into_iter().flatten().next() {
            ck.error_help(
                at,
                "a [[load.request]] is HTTP or tcp, not both",
                "remove the HTTP keys (method, path, body, headers, expect_status) or the tcp table",
            );
        }
        let tcp = tcp.into_inner();
        let send = check_tcp_send(&tcp, "load.request tcp.send", axes, ck);
        let expect = tcp.expect.get_ref().clone();
        if expect.is_empty() || expect.contains(['\r', '\n']) {
            ck.error_help(
                tcp.expect.span(),
                "tcp.expect must be non-empty text without a line break",
                "the reply line must start with it, e.g. expect = \"+OK\"",
            );
        }
        return Some(LoadRequest {
            weight,
            kind: RequestKind::Tcp(TcpRequest { send, expect }),
        });
    }

    let http = check_http(
        RawHttp {
            method: r.method,
            path: r.path,
            body: r.body,
            headers: r.headers,
            expect_status: r.expect_status,
        },
        "load.request",
        axes,
        ck,
    );
    let _ = span;
    Some(LoadRequest {
        weight,
        kind: LoadRequestKind::Http(http),
    })
}

/// The keys of an HTTP request (`[[load.request]]` without `tcp`, and `[recovery] writes`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawHttp {
    pub method: Option<Spanned<String>>,
    pub path: Option<Spanned<String>>,
    pub body: Option<Spanned<String>>,
    pub headers: Option<BTreeMap<String, Spanned<String>>>,
    pub expect_status: Option<Spanned<Vec<Spanned<i64>>>>,
}

/// Check an HTTP request (`what` names it in messages, e.g. `load.request`): method, a path
/// starting with `/`, `{seq}`/`{pad:N}` templates in path and body, header names and values,
/// expected statuses. Defaults: `GET`, `/`, 200–399.
pub(crate) fn check_http(
    r: RawHttp,
    what: &str,
    axes: &[Axis],
    ck: &mut Checker<'_>,
) -> HttpLoadRequest {
    let method = match &r.method {
        None => "GET".to_string(),
        Some(m) => {
            let token = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
            if m.get_ref().is_empty() || !m.get_ref().chars().all(token) {
                ck.error_help(
                    m.span(),
                    format!("`{}` is not an HTTP method", m.get_ref()),
                    "e.g. method = \"GET\", \"POST\", \"PUT\" or \"DELETE\"",
                );
            }
            m.get_ref().clone()
        }
    };
    let path = match &r.path {
        None => "/".to_string(),
        Some(p) => {
            if !p.get_ref().starts_with('/') || p.get_ref().contains(char::is_whitespace) {
                ck.error_help(
                    p.span(),
                    format!(
                        "{what} path `{}` must start with `/` and hold no spaces",
                        p.get_ref()
                    ),
                    "requests go to http://127.0.0.1:{port}{path}, e.g. path = \"/orders/{seq}\"",
                );
            }
            template(p, &format!("{what} path"), axes, ck);
            p.get_ref().clone()
        }
    };
    if let Some(body) = &r.body {
        template(body, &format!("{what} body"), axes, ck);
    }
    let mut headers = BTreeMap::new();
    for (name, value) in r.headers.unwrap_or_default() {
        let token = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
        if name.is_empty() || !name.chars().all(token) {
            ck.error(value.span(), format!("`{name}` is not an HTTP header name"));
        }
        if value.get_ref().contains(['\r', '\n', '\0']) {
            ck.error(
                value.span(),
                format!("the value of header `{name}` must not hold line breaks or NUL"),
            );
        }
        headers.insert(name, value.into_inner());
    }
    let mut expect_status = Vec::new();
    if let Some(list) = &r.expect_status {
        if list.get_ref().is_empty() {
            ck.error_help(
                list.span(),
                format!("{what} expect_status is empty"),
                "list the statuses that count as success, e.g. [200, 201], or leave it out for 200–399",
            );
        }
        for s in list.get_ref() {
            match u16::try_from(*s.get_ref()) {
                Ok(code) if (100..=599).contains(&code) => expect_status.push(code),
                _ => ck.error(
                    s.span(),
                    format!(
                        "expect_status {} is not an HTTP status (100–599)",
                        s.get_ref()
                    ),
                ),
            }
        }
    }
    HttpLoadRequest {
        method,
        path,
        body: r.body.map(Spanned::into_inner),
        headers,
        expect_status,
    }
}

/// Report the problems of a request template written at `value` (`what` names it, e.g.
/// `load.request path`).
pub(crate) fn template(value: &Spanned<String>, what: &str, axes: &[Axis], ck: &mut Checker<'_>) {
    let names: Vec<&str> = axes.iter().map(|a| a.name.as_str()).collect();
    for (offset, token, message) in template_problems(value.get_ref(), &names) {
        ck.error_in_string(
            &value.span(),
            value.get_ref(),
            offset,
            &token,
            format!("{what}: {message}"),
            "request templates know {seq} (the request's sequence number) and {pad:N} (N filler bytes); other braces are literal",
        );
    }
}

/// The problems of a request template: `(byte offset, token, message)` for each `{pad:…}`
/// that is not a size in `0..=16 MiB`, and each `{name}` naming an axis (or `port`), which
/// request templates do not substitute.
pub fn template_problems(text: &str, axis_names: &[&str]) -> Vec<(usize, String, String)> {
    let mut problems = Vec::new();
    let mut i = 0;
    while let Some(found) = text[i..].find('{') {
        let open = i + found;
        let rest = &text[open..];
        i = open + 1;
        if rest.starts_with("{seq}") {
            i = open + "{seq}".len();
        } else if let Some(after) = rest.strip_prefix("{pad:") {
            let Some(close) = after.find('}') else {
                problems.push((open, "{pad:".to_string(), "unclosed `{pad:`".to_string()));
                break;
            };
            let count = &after[..close];
            if count.trim().parse::<usize>().map_or(true, |n| n > MAX_PAD) {
                problems.push((
                    open,
                    format!("{{pad:{count}}}"),
                    format!("`{{pad:{count}}}`: the filler size must be a whole number of bytes from 0 to {MAX_PAD}"),
                ));
            }
            i = open + "{pad:".len() + close + 1;
        } else if let Some(close) = rest.find('}') {
            let name = &rest[1..close];
            if name == crate::service::PORT_PLACEHOLDER || axis_names.contains(&name) {
                problems.push((
                    open,
                    format!("{{{name}}}"),
                    format!("`{{{name}}}` is not substituted in request templates"),
                ));
            }
        }
    }
    problems
}
