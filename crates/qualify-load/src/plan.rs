//! [`LoadPlan`]: what one cell's load is — the model (open: arrivals at a rate; closed: user
//! loops), how long it is measured and warmed up, the per-request timeout, the slot limit, the
//! weighted request templates (HTTP/1.1 or a TCP line protocol), optional named phases and
//! whether acknowledged writes are recorded (the vocabulary's type, re-exported). [`compile`]
//! checks a plan and turns it into the engine's ready-to-send form.

use crate::error::LoadError;
use crate::template::Template;

pub use qualify_model::load::{
    HttpRequest, LoadPlan, Model, PhaseWindow, RequestKind, RequestTemplate, TcpRequest,
};

/// Check the plan; the error says which field is wrong and what it takes.
pub fn compile(plan: &LoadPlan) -> Result<Compiled, LoadError> {
    let bad = |m: String| Err(LoadError::Plan(m));
    match plan.model {
        Model::Open { rate } if !(rate.is_finite() && rate > 0.0) => {
            return bad(format!(
                "rate must be a positive number of arrivals per second, found {rate}"
            ));
        }
        Model::Open { rate } if rate * (plan.warmup + plan.duration).as_secs_f64() > 1e12 => {
            return bad(format!(
                "rate {rate}/s over {:?} schedules more than 10^12 arrivals",
                plan.warmup + plan.duration
            ));
        }
        Model::Closed { users: 0 } => return bad("users must be at least 1".to_string()),
        _ => {}
    }
    if plan.duration.is_zero() {
        return bad("duration must be positive".to_string());
    }
    if plan.timeout.is_zero() {
        return bad("timeout must be positive".to_string());
    }
    if plan.max_in_flight == 0 {
        return bad("max_in_flight must be at least 1".to_string());
    }
    if plan.threads == 0 {
        return bad("threads must be at least 1".to_string());
    }
    let (each, what) = match plan.model {
        Model::Open { .. } => (plan.max_in_flight, "max_in_flight"),
        Model::Closed { users } => (users, "users"),
    };
    if plan.generators == 0 || plan.generators > each {
        return bad(format!(
            "generators must be between 1 and {what} ({each}): each generator process needs at least one of its {what}, found {}",
            plan.generators
        ));
    }
    if plan.requests.is_empty() {
        return bad("a load needs at least one request template".to_string());
    }
    let mut protocol = None;
    let mut requests = Vec::new();
    let mut cumulative = Vec::new();
    let mut total: u64 = 0;
    for (i, r) in plan.requests.iter().enumerate() {
        if r.weight == 0 {
            return bad(format!("request {}: weight must be at least 1", i + 1));
        }
        total += u64::from(r.weight);
        cumulative.push(total);
        let this = match r.kind {
            RequestKind::Http(_) => Protocol::Http,
            RequestKind::Tcp(_) => Protocol::Tcp,
        };
        if protocol.is_some_and(|p| p != this) {
            return bad(format!(
                "request {}: HTTP and TCP requests cannot be mixed in one load (one target port speaks one protocol)",
                i + 1
            ));
        }
        protocol = Some(this);
        let template = |text: &str, what: &str| {
            Template::parse(text)
                .map_err(|e| LoadError::Plan(format!("request {}: {what}: {e}", i + 1)))
        };
        requests.push(match &r.kind {
            RequestKind::Http(h) => {
                if !is_token(&h.method) {
                    return bad(format!("request {}: `{}` is not an HTTP method", i + 1, h.method));
                }
                if !h.path.starts_with('/') || h.path.contains(|c: char| c.is_whitespace() || c.is_control()) {
                    return bad(format!(
                        "request {}: path `{}` must start with `/` and hold no spaces or control characters (it is sent to http://TARGET{{path}})",
                        i + 1,
                        h.path
                    ));
                }
                let mut block = Vec::new();
                let mut has_host = false;
                for (name, value) in &h.headers {
                    if !is_token(name) {
                        return bad(format!("request {}: `{name}` is not a header name", i + 1));
                    }
                    if value.contains(['\r', '\n', '\0']) {
                        return bad(format!(
                            "request {}: the value of header `{name}` must not hold line breaks or NUL",
                            i + 1
                        ));
                    }
                    if name.eq_ignore_ascii_case("content-length") || name.eq_ignore_ascii_case("transfer-encoding") {
                        return bad(format!(
                            "request {}: header `{name}` is set by the generator from the body",
                            i + 1
                        ));
                    }
                    has_host |= name.eq_ignore_ascii_case("host");
                    block.extend_from_slice(format!("{name}: {}\r\n", value.trim()).as_bytes());
                }
                if let Some(s) = h.expect_status.iter().find(|s| !(100..=599).contains(*s)) {
                    return bad(format!("request {}: expect_status {s} is not an HTTP status (100–599)", i + 1));
                }
                CompiledRequest::Http {
                    method: h.method.clone(),
                    path: template(&h.path, "path")?,
                    body: h.body.as_deref().map(|b| template(b, "body")).transpose()?,
                    headers: HeaderBlock { block, has_host },
                    expect_status: h.expect_status.clone(),
                }
            }
            RequestKind::Tcp(t) => {
                if t.send.is_empty() {
                    return bad(format!("request {}: tcp.send is empty", i + 1));
                }
                if t.expect.contains('\n') {
                    return bad(format!("request {}: tcp.expect must fit on one line", i + 1));
                }
                CompiledRequest::Tcp {
                    send: template(&t.send, "tcp.send")?,
                    expect: t.expect.as_bytes().to_vec(),
                }
            }
        });
    }
    let mut names = std::collections::BTreeSet::new();
    for p in &plan.phases {
        if p.end <= p.start {
            return bad(format!("phase `{}`: end must be after start", p.phase));
        }
        if !names.insert(p.phase) {
            return bad(format!("phase `{}` is named twice", p.phase));
        }
    }
    Ok(Compiled {
        protocol: protocol.unwrap_or(Protocol::Http),
        requests,
        cumulative,
        total_weight: total,
    })
}

/// The protocol a load speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    Http,
    Tcp,
}

/// A checked plan's requests, ready to render.
#[derive(Debug, Clone)]
pub struct Compiled {
    pub protocol: Protocol,
    pub(crate) requests: Vec<CompiledRequest>,
    cumulative: Vec<u64>,
    total_weight: u64,
}

#[derive(Debug, Clone)]
pub(crate) enum CompiledRequest {
    Http {
        method: String,
        path: Template,
        body: Option<Template>,
        headers: HeaderBlock,
        expect_status: Vec<u16>,
    },
    Tcp {
        send: Template,
        expect: Vec<u8>,
    },
}

/// A template's headers, rendered once: `Name: value\r\n` lines.
#[derive(Debug, Clone)]
pub(crate) struct HeaderBlock {
    pub block: Vec<u8>,
    /// The template sets `Host` itself.
    pub has_host: bool,
}

/// An HTTP token (method, header name): visible ASCII without separators.
fn is_token(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c))
}

impl Compiled {
    /// The index of the template request `seq` uses: weights in order, cycling.
    pub fn pick(&self, seq: u64) -> usize {
        let at = seq % self.total_weight;
        self.cumulative.partition_point(|c| *c <= at)
    }

    pub(crate) fn request(&self, seq: u64) -> &CompiledRequest {
        &self.requests[self.pick(seq).min(self.requests.len() - 1)]
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn plan() -> LoadPlan {
        LoadPlan::http_get(Model::Open { rate: 100.0 }, "/x/{seq}")
    }

    #[test]
    fn weights_pick_templates_in_exact_proportion() {
        let mut p = plan();
        p.requests.push(RequestTemplate {
            weight: 3,
            ..p.requests[0].clone()
        });
        let c = compile(&p).unwrap();
        let picks: Vec<usize> = (0..8).map(|s| c.pick(s)).collect();
        assert_eq!(picks, [0, 1, 1, 1, 0, 1, 1, 1]);
    }

    #[test]
    fn invalid_plans_say_what_is_wrong() {
        type Edit = Box<dyn Fn(&mut LoadPlan)>;
        let cases: Vec<(Edit, &str)> = vec![
            (
                Box::new(|p| p.model = Model::Open { rate: 0.0 }),
                "rate must be a positive",
            ),
            (
                Box::new(|p| p.model = Model::Open { rate: f64::NAN }),
                "rate must be a positive",
            ),
            (
                Box::new(|p| p.model = Model::Closed { users: 0 }),
                "users must be at least 1",
            ),
            (
                Box::new(|p| p.duration = Duration::ZERO),
                "duration must be positive",
            ),
            (
                Box::new(|p| p.timeout = Duration::ZERO),
                "timeout must be positive",
            ),
            (Box::new(|p| p.max_in_flight = 0), "max_in_flight"),
            (
                Box::new(|p| p.generators = 0),
                "generators must be between 1",
            ),
            (
                Box::new(|p| {
                    p.model = Model::Closed { users: 2 };
                    p.generators = 3;
                }),
                "generators must be between 1 and users (2)",
            ),
            (Box::new(|p| p.requests.clear()), "at least one request"),
            (Box::new(|p| p.requests[0].weight = 0), "weight"),
            (
                Box::new(|p| {
                    p.requests.push(
                        LoadPlan::tcp_line(Model::Closed { users: 1 }, "PING\r\n", "+PONG")
                            .requests[0]
                            .clone(),
                    )
                }),
                "cannot be mixed",
            ),
            (
                Box::new(|p| {
                    if let RequestKind::Http(h) = &mut p.requests[0].kind {
                        h.path = "x".into()
                    }
                }),
                "must start with `/`",
            ),
            (
                Box::new(|p| {
                    if let RequestKind::Http(h) = &mut p.requests[0].kind {
                        h.method = "GE T".into()
                    }
                }),
                "not an HTTP method",
            ),
            (
                Box::new(|p| {
                    if let RequestKind::Http(h) = &mut p.requests[0].kind {
                        h.body = Some("{pad:x}".into())
                    }
                }),
                "request 1: body: `{pad:x}`",
            ),
            (
                Box::new(|p| {
                    if let RequestKind::Http(h) = &mut p.requests[0].kind {
                        h.expect_status = vec![200, 999]
                    }
                }),
                "expect_status 999",
            ),
            (
                Box::new(|p| {
                    p.phases = vec![PhaseWindow {
                        phase: qualify_model::Phase::During,
                        start: Duration::from_secs(2),
                        end: Duration::from_secs(1),
                    }]
                }),
                "end must be after start",
            ),
        ];
        for (edit, expected) in cases {
            let mut p = plan();
            edit(&mut p);
            let err = compile(&p).unwrap_err().to_string();
            assert!(err.contains(expected), "{err} should contain {expected}");
        }
    }

    #[test]
    fn plans_serialize_with_seconds_and_a_model_tag() {
        let mut p = LoadPlan::tcp_line(Model::Closed { users: 4 }, "SET k{seq} {pad:8}\r\n", "+OK");
        p.warmup = Duration::from_millis(500);
        let json = serde_json::to_value(&p).unwrap();
        assert_eq!(json["model"], "closed");
        assert_eq!(json["users"], 4);
        assert_eq!(json["warmup_seconds"], 0.5);
        assert_eq!(json["requests"][0]["tcp"]["expect"], "+OK");
        let back: LoadPlan = serde_json::from_value(json).unwrap();
        assert_eq!(back, p);
        let minimal: LoadPlan = serde_json::from_str(
            r#"{"model":"open","rate":50,"duration_seconds":1,"timeout_seconds":2,"max_in_flight":8,"requests":[{"http":{}}]}"#,
        )
        .unwrap();
        assert_eq!(minimal.requests[0].weight, 1);
        assert!(
            matches!(&minimal.requests[0].kind, RequestKind::Http(h) if h.method == "GET" && h.path == "/")
        );
    }
}
