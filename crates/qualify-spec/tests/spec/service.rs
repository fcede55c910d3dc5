//! Service specs: `[service]`, `[load]`, `[[slo]]`, the `load` axis kind and `{port}` — the
//! example's spec read back, and every error with its position and help.

use std::time::Duration;

use qualify_model::Value as AxisValue;
use qualify_spec::*;

const SERVICE: &str = r#"[artifact]
name = "orders"
command = ["./orders", "--port", "{port}", "--workers", "{workers}"]

[claim]
level = "trial"

[service]
ready = { http = "/healthz", within = "20s" }

[load]
rate = "{rps}"

[[load.request]]
path = "/orders/{seq}"

[[axis]]
name = "workers"
kind = "concurrency"
values = [1, 2]

[[axis]]
name = "rps"
kind = "load"
values = [50, 200]
"#;

fn parse(text: &str) -> Result<Spec, Vec<String>> {
    Spec::parse(text, "dir/qualify.toml")
        .map_err(|e| e.diagnostics().iter().map(ToString::to_string).collect())
}

/// The diagnostics of `SERVICE` with `from` replaced by `to` (which must occur once).
fn errors_with(from: &str, to: &str) -> Vec<String> {
    assert_eq!(SERVICE.matches(from).count(), 1, "`{from}` must occur once");
    match parse(&SERVICE.replace(from, to)) {
        Ok(_) => panic!("expected errors after replacing {from:?} by {to:?}"),
        Err(e) => e,
    }
}

/// `dir/qualify.toml:L:C: error: ` where `needle` first occurs in `text` (plus `shift`).
fn at(text: &str, needle: &str, shift: usize) -> String {
    let offset = text
        .find(needle)
        .unwrap_or_else(|| panic!("`{needle}` not in text"));
    let line = text[..offset].matches('\n').count() + 1;
    let line_start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
    let column = text[line_start..offset].chars().count() + 1 + shift;
    format!("dir/qualify.toml:{line}:{column}: error: ")
}

/// The single error of `SERVICE` with `from` replaced by `to`: it starts at `needle` in the
/// edited text and says `message`; its help mentions `help`.
fn single(from: &str, to: &str, needle: &str, message: &str, help: &str) {
    let text = SERVICE.replace(from, to);
    let errors = errors_with(from, to);
    assert_eq!(errors.len(), 1, "{errors:#?}");
    let prefix = at(&text, needle, 0);
    assert!(
        errors[0].starts_with(&format!("{prefix}{message}")),
        "expected `{prefix}{message}…`, got:\n{}",
        errors[0]
    );
    assert!(
        errors[0].contains(help),
        "help lacks `{help}`:\n{}",
        errors[0]
    );
}

#[test]
fn a_service_spec_is_read() {
    let spec = parse(SERVICE).unwrap();
    let service = spec.service.as_ref().unwrap();
    assert_eq!(service.ready.check, ReadyCheck::Http("/healthz".into()));
    assert_eq!(service.ready.within, Duration::from_secs(20));
    assert_eq!(service.stop, Stop::default());
    assert_eq!(
        (service.stop.signal.as_str(), service.stop.grace),
        ("SIGTERM", Duration::from_secs(5))
    );
    assert_eq!(service.port, None);
    let load = spec.load.as_ref().unwrap();
    assert_eq!(load.model(), LoadModel::Open);
    assert_eq!(load.amount, Amount::Axis("rps".into()));
    assert_eq!(load.axis(), Some("rps"));
    let params: qualify_model::Params =
        [("rps", AxisValue::Int(200)), ("workers", AxisValue::Int(2))]
            .into_iter()
            .collect();
    assert_eq!(load.amount_for(&params), Some(200.0));
    // The cell's plan is the checked plan with the axis's rate: no field copied by hand.
    let plan = load.plan_for(&params).unwrap();
    assert_eq!(plan.model, qualify_model::load::Model::Open { rate: 200.0 });
    assert_eq!(plan.requests, load.plan.requests);
    assert_eq!(load.plan_for(&qualify_model::Params::default()), None);
    assert_eq!(
        (
            load.plan.duration,
            load.plan.warmup,
            load.plan.timeout,
            load.plan.max_in_flight
        ),
        (
            Duration::from_secs(10),
            Duration::ZERO,
            Duration::from_secs(2),
            256
        )
    );
    let LoadRequestKind::Http(request) = &load.plan.requests[0].kind else {
        panic!("an HTTP request")
    };
    assert_eq!(
        (request.method.as_str(), request.path.as_str()),
        ("GET", "/orders/{seq}")
    );
    assert!(request.expect_status.is_empty());
    assert!(spec.slos.is_empty());
    assert_eq!(spec.axis("rps").unwrap().kind, AxisKind::Load);
    // {port} stays for the runner to fill in.
    let argv = spec.artifact.argv(&params);
    assert_eq!(argv, ["./orders", "--port", "{port}", "--workers", "2"]);
    let mut with_port = params.clone();
    with_port.insert(PORT_PLACEHOLDER, AxisValue::Int(40123));
    assert_eq!(spec.artifact.argv(&with_port)[2], "40123");
    let json = serde_json::to_value(&spec).unwrap();
    assert_eq!(json["load"]["amount"], "rps");
    assert_eq!(json["service"]["ready"]["check"]["http"], "/healthz");
}

#[test]
fn the_orders_example_spec_is_valid() {
    let text = include_str!("../../../../examples/orders/qualify.toml");
    let spec = Spec::parse(text, "examples/orders/qualify.toml").unwrap();
    let load = spec.load.unwrap();
    assert_eq!(load.axis(), Some("rps"));
    let LoadRequestKind::Http(request) = &load.plan.requests[0].kind else {
        panic!("an HTTP request")
    };
    assert_eq!(
        request.body.as_deref(),
        Some(r#"{"id": {seq}, "note": "{pad:32}"}"#)
    );
    assert_eq!(request.headers["content-type"], "application/json");
    assert_eq!(request.expect_status, [201]);
    assert_eq!(spec.slos.len(), 2);
    assert_eq!(
        spec.slos[0],
        Slo {
            metric: SloMetric::LatencyP99,
            bound: BoundKind::Max,
            limit: 0.1,
            phase: SloPhase::WholeRun,
        }
    );
    assert_eq!(
        spec.slos[1],
        Slo {
            metric: SloMetric::ErrorRate,
            bound: BoundKind::Max,
            limit: 0.01,
            phase: SloPhase::WholeRun,
        }
    );
}

#[test]
fn closed_model_tcp_requests_and_every_ready_kind() {
    let text = SERVICE
        .replace(
            "rate = \"{rps}\"",
            "model = \"closed\"\nusers = \"{rps}\"\nwarmup = \"0s\"\nduration = \"3s\"\nthreads = 2",
        )
        .replace(
            "path = \"/orders/{seq}\"",
            "tcp = { send = \"SET k{seq} {pad:64}\\r\\n\", expect = \"+OK\" }\nweight = 3",
        )
        .replace(
            "ready = { http = \"/healthz\", within = \"20s\" }",
            "ready = { command = \"redis-cli -p {port} ping\", within = \"5s\" }\nstop = { signal = \"int\", grace = \"1s\" }\nport = 6379",
        );
    let spec = parse(&text).unwrap();
    let service = spec.service.unwrap();
    assert!(
        matches!(&service.ready.check, ReadyCheck::Command(c) if c.to_string() == "redis-cli -p {port} ping")
    );
    assert_eq!(service.ready.within, Duration::from_secs(5));
    assert_eq!(
        (service.stop.signal.as_str(), service.stop.signal_number),
        ("SIGINT", 2)
    );
    assert_eq!(service.port, Some(6379));
    let load = spec.load.unwrap();
    assert_eq!(load.model(), LoadModel::Closed);
    assert_eq!(
        (load.plan.warmup, load.plan.duration),
        (Duration::ZERO, Duration::from_secs(3))
    );
    assert_eq!(load.plan.requests[0].weight, 3);
    let users: qualify_model::Params = [("rps", AxisValue::Float(7.6))].into_iter().collect();
    assert_eq!(
        load.plan_for(&users).unwrap().model,
        qualify_model::load::Model::Closed { users: 8 }
    );
    assert_eq!(
        load.plan.requests[0].kind,
        LoadRequestKind::Tcp(qualify_model::load::TcpRequest {
            send: "SET k{seq} {pad:64}\r\n".into(),
            expect: "+OK".into()
        })
    );
    let tcp = SERVICE.replace(
        "ready = { http = \"/healthz\", within = \"20s\" }",
        "ready = { tcp = true }",
    );
    let spec = parse(&tcp).unwrap();
    assert_eq!(spec.service.unwrap().ready.within, Duration::from_secs(30));
    // A service may take neither {port} nor $PORT: allowed.
    let fixed = SERVICE.replace("\"--port\", \"{port}\", ", "");
    assert!(parse(&fixed).is_ok());
}

#[test]
fn load_without_service() {
    let text = SERVICE.replace(
        "[service]\nready = { http = \"/healthz\", within = \"20s\" }\n",
        "",
    );
    let errors = parse(&text).unwrap_err();
    // {port} without [service] and [load] without [service]: both said, in file order.
    assert_eq!(errors.len(), 2, "{errors:#?}");
    assert!(errors[0].starts_with(&format!(
        "{}placeholder `{{port}}` has no axis named `port`",
        at(&text, "{port}", 0)
    )));
    assert!(errors[0].contains("add [service]"), "{}", errors[0]);
    assert!(
        errors[1].starts_with(&format!("{}[load] needs [service]", at(&text, "[load]", 0))),
        "{}",
        errors[1]
    );
}

#[test]
fn both_rate_and_users() {
    single(
        "rate = \"{rps}\"",
        "rate = \"{rps}\"\nusers = 4",
        "4\n",
        "[load] takes rate or users, not both",
        "keep the one model says",
    );
}

#[test]
fn rate_and_users_belong_to_their_model() {
    single(
        "rate = \"{rps}\"",
        "rate = \"{rps}\"\nmodel = \"closed\"",
        "\"{rps}\"",
        "rate belongs to the open model",
        "give users",
    );
    single(
        "rate = \"{rps}\"",
        "users = \"{rps}\"",
        "\"{rps}\"",
        "users belongs to the closed model",
        "set model = \"closed\"",
    );
    single(
        "rate = \"{rps}\"",
        "model = \"poisson\"\nrate = \"{rps}\"",
        "\"poisson\"",
        "unknown load model `poisson`",
        "\"open\"",
    );
    let text = SERVICE.replace("rate = \"{rps}\"\n", "");
    let errors = parse(&text).unwrap_err();
    assert!(
        errors
            .iter()
            .any(|e| e.starts_with(&format!("{}[load] needs `rate`", at(&text, "[load]", 0)))),
        "{errors:#?}"
    );
}

#[test]
fn rate_placeholders_name_a_load_axis_of_positive_numbers() {
    single(
        "rate = \"{rps}\"",
        "rate = \"{rate}\"",
        "\"{rate}\"",
        "load.rate uses `{rate}`, but there is no axis named `rate`",
        "kind = \"load\"",
    );
    single(
        "rate = \"{rps}\"",
        "rate = \"100/s\"",
        "\"100/s\"",
        "load.rate \"100/s\" is neither a number nor one placeholder",
        "rate = 200",
    );
    single(
        "rate = \"{rps}\"",
        "rate = 0",
        "0\n",
        "load.rate must be a positive number",
        "rate = 200",
    );
    single(
        "values = [50, 200]",
        "values = [0, 200]",
        "\"{rps}\"",
        "axis `rps` sets load.rate but has the value `0`",
        "positive number",
    );
    // A closed model's users must be whole.
    let text = SERVICE
        .replace("rate = \"{rps}\"", "model = \"closed\"\nusers = \"{rps}\"")
        .replace("values = [50, 200]", "values = [1.5, 2]");
    let errors = parse(&text).unwrap_err();
    assert!(
        errors[0].contains("axis `rps` sets load.users but has the value `1.5`"),
        "{errors:#?}"
    );
    // The rate's axis must be a load axis (and a workers axis used by [load] is no longer
    // used by the command either).
    let text = SERVICE.replace("rate = \"{rps}\"", "rate = \"{workers}\"");
    let errors = parse(&text).unwrap_err();
    assert!(
        errors.iter().any(|e| e.starts_with(&format!(
            "{}load.rate uses axis `workers`, a concurrency axis; it must be kind = \"load\"",
            at(&text, "\"{workers}\"\n", 0)
        ))),
        "{errors:#?}"
    );
}

#[test]
fn a_load_axis_not_used_by_load() {
    let text = SERVICE.replace("rate = \"{rps}\"", "rate = 100");
    let errors = parse(&text).unwrap_err();
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert!(
        errors[0].starts_with(&format!(
            "{}axis `rps` has kind = \"load\" but [load] does not use it",
            at(&text, "\"rps\"", 0)
        )),
        "{errors:#?}"
    );
    assert!(errors[0].contains("rate = \"{rps}\""), "{}", errors[0]);
    // Also without any [load].
    let text = SERVICE.replace(
        "[load]\nrate = \"{rps}\"\n\n[[load.request]]\npath = \"/orders/{seq}\"\n",
        "",
    );
    let errors = parse(&text).unwrap_err();
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert!(errors[0].contains("axis `rps` has kind = \"load\" but [load] does not use it"));
}

#[test]
fn tcp_and_http_requests_mixed() {
    let text = SERVICE.replace(
        "path = \"/orders/{seq}\"\n",
        "path = \"/orders/{seq}\"\n\n[[load.request]]\ntcp = { send = \"PING\\r\\n\", expect = \"+PONG\" }\n",
    );
    let errors = parse(&text).unwrap_err();
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert!(
        errors[0].contains("HTTP and tcp requests are mixed in one [load]"),
        "{errors:#?}"
    );
    assert!(errors[0].contains("speaks one protocol"));
    single(
        "path = \"/orders/{seq}\"",
        "path = \"/orders/{seq}\"\ntcp = { send = \"PING\\r\\n\", expect = \"+PONG\" }",
        "\"/orders/{seq}\"",
        "a [[load.request]] is HTTP or tcp, not both",
        "remove the HTTP keys",
    );
}

#[test]
fn request_checks() {
    single(
        "path = \"/orders/{seq}\"",
        "path = \"nowhere\"",
        "\"nowhere\"",
        "load.request path `nowhere` must start with `/`",
        "/orders/{seq}",
    );
    single(
        "path = \"/orders/{seq}\"",
        "path = \"/x\"\nmethod = \"GE T\"",
        "\"GE T\"",
        "`GE T` is not an HTTP method",
        "POST",
    );
    single(
        "path = \"/orders/{seq}\"",
        "path = \"/x\"\nexpect_status = [200, 700]",
        "700",
        "expect_status 700 is not an HTTP status",
        "",
    );
    single(
        "path = \"/orders/{seq}\"",
        "path = \"/x\"\nexpect_status = []",
        "[]",
        "load.request expect_status is empty",
        "200–399",
    );
    single(
        "path = \"/orders/{seq}\"",
        "path = \"/x\"\nweight = 0",
        "0\n",
        "load.request weight must be a positive integer",
        "",
    );
    // Template errors point at the brace.
    single(
        "path = \"/orders/{seq}\"",
        "path = \"/orders/{pad:big}\"",
        "{pad:big}",
        "load.request path: `{pad:big}`",
        "{seq} (the request's sequence number)",
    );
    single(
        "path = \"/orders/{seq}\"",
        "path = \"/x\"\nbody = '{\"w\": {workers}}'",
        "{workers}}",
        "load.request body: `{workers}` is not substituted in request templates",
        "other braces are literal",
    );
    single(
        "path = \"/orders/{seq}\"",
        "tcp = { send = \"PING\", expect = \"+PONG\" }",
        "\"PING\"",
        "load.request tcp.send must end with a newline",
        "\\r\\n",
    );
    single(
        "path = \"/orders/{seq}\"",
        "tcp = { send = \"PING\\n\", expect = \"\" }",
        "\"\" }",
        "tcp.expect must be non-empty",
        "+OK",
    );
    single(
        "path = \"/orders/{seq}\"",
        "path = \"/x\"\nwarmup = \"0s\"",
        "warmup",
        "unknown key `warmup` in [[load.request]]",
        "",
    );
    let text = SERVICE.replace("[[load.request]]\npath = \"/orders/{seq}\"\n", "");
    let errors = parse(&text).unwrap_err();
    assert!(
        errors[0].starts_with(&format!(
            "{}[load] needs at least one [[load.request]]",
            at(&text, "[load]", 0)
        )),
        "{errors:#?}"
    );
}

#[test]
fn service_checks() {
    let ready = "ready = { http = \"/healthz\", within = \"20s\" }";
    single(
        ready,
        "ready = { http = \"/healthz\", tcp = true }",
        "{ http",
        "service.ready takes one of http, tcp or command, not several",
        "tcp = true",
    );
    single(
        ready,
        "ready = { within = \"2s\" }",
        "{ within",
        "service.ready needs one of http, tcp or command",
        "",
    );
    single(
        ready,
        "ready = { tcp = false }",
        "false",
        "service.ready.tcp must be true",
        "",
    );
    single(
        ready,
        "ready = { http = \"healthz\" }",
        "\"healthz\"",
        "service.ready.http `healthz` must be a path starting with `/`",
        "GET http://127.0.0.1:{port}{path}",
    );
    single(
        ready,
        "ready = { tcp = true, within = \"soon\" }",
        "\"soon\"",
        "invalid duration `soon`",
        "",
    );
    single(
        ready,
        "ready = { tcp = true }\nstop = { signal = \"SIGSTOP\" }",
        "\"SIGSTOP\"",
        "unknown stop signal `SIGSTOP`",
        "SIGTERM, SIGINT",
    );
    single(
        ready,
        "ready = { tcp = true }\nport = 70000",
        "70000",
        "service.port must be a TCP port (1–65535)",
        "$PORT",
    );
    single(
        ready,
        "ready = { tcp = true }\nready_path = 1",
        "ready_path",
        "unknown key `ready_path` in [service]",
        "ready, stop, port",
    );
    single(
        ready,
        "ready = { command = \"check {prt}\" }",
        "{prt}",
        "placeholder `{prt}` has no axis named `prt`",
        "did you mean {port}?",
    );
    // An axis named `port` collides with the service's port.
    let text = format!("{SERVICE}\n[[axis]]\nname = \"port\"\nkind = \"custom\"\nvalues = [1]\n");
    let errors = parse(&text).unwrap_err();
    assert!(
        errors
            .iter()
            .any(|e| e.contains("axis name `port` is taken")),
        "{errors:#?}"
    );
}

#[test]
fn slo_checks() {
    let with = |slo: &str| format!("{SERVICE}\n[[slo]]\n{slo}\n");
    let ok = |slo: &str| parse(&with(slo)).unwrap().slos[0];
    assert_eq!(ok("metric = \"latency_p99\"\nmax = \"200ms\"").limit, 0.2);
    assert_eq!(ok("metric = \"latency_max\"\nmax = \"1.5s\"").limit, 1.5);
    assert_eq!(ok("metric = \"error_rate\"\nmax = \"0.5%\"").limit, 0.005);
    assert_eq!(ok("metric = \"dropped_rate\"\nmax = 0").limit, 0.0);
    let t = ok("metric = \"throughput\"\nmin = 45");
    assert_eq!(
        (t.metric, t.bound, t.limit),
        (SloMetric::Throughput, BoundKind::Min, 45.0)
    );
    let one = |slo: &str, needle: &str, message: &str, help: &str| {
        let text = with(slo);
        let errors = parse(&text).unwrap_err();
        assert_eq!(errors.len(), 1, "{errors:#?}");
        let prefix = at(&text, needle, 0);
        assert!(
            errors[0].starts_with(&format!("{prefix}{message}")),
            "expected `{prefix}{message}`, got {}",
            errors[0]
        );
        assert!(errors[0].contains(help), "{}", errors[0]);
    };
    one(
        "metric = \"latency_p95\"\nmax = \"1s\"",
        "\"latency_p95\"",
        "unknown SLO metric `latency_p95`; expected one of: latency_p50, latency_p90, latency_p99, latency_p999, latency_max, error_rate, dropped_rate, throughput",
        "corrected",
    );
    one(
        "metric = \"latency_p99\"\nmax = \"1s\"\nmin = \"1ms\"",
        "\"1ms\"",
        "an [[slo]] takes max or min, not both",
        "",
    );
    one(
        "metric = \"latency_p99\"",
        "\"latency_p99\"",
        "an [[slo]] needs max = … or min = …",
        "",
    );
    one(
        "metric = \"latency_p99\"\nmin = \"1s\"",
        "\"1s\"",
        "latency_p99 takes max (an upper bound), not min",
        "only throughput takes min",
    );
    // Units that cannot lie: a latency without its unit, a ratio of 1 or more.
    one(
        "metric = \"latency_p99\"\nmax = 250",
        "250\n",
        "`250` has no unit: a duration needs its unit",
        "write \"250ms\" or \"250s\"",
    );
    one(
        "metric = \"latency_p99\"\nmax = \"0.25\"",
        "\"0.25\"",
        "`0.25` has no unit: a duration needs its unit",
        "\"0.25ms\"",
    );
    one(
        "metric = \"error_rate\"\nmax = 1",
        "1\n",
        "error_rate max = 1 means 100%: an objective that can never fail",
        "1 means 100%; write \"1%\"",
    );
    one(
        "metric = \"error_rate\"\nmax = 5",
        "5\n",
        "error_rate max = 5 would be 500%",
        "write \"5%\"",
    );
    one(
        "metric = \"dropped_rate\"\nmax = \"100%\"",
        "\"100%\"",
        "dropped_rate max = string \"100%\" can never fail",
        "max = \"1%\"",
    );
    one(
        "metric = \"error_rate\"\nmax = -0.5",
        "-0.5",
        "the error_rate limit must be a fraction from 0 to 1 or a percentage",
        "\"1%\"",
    );
    // Objectives that can never fail or never pass under the spec's own load.
    one(
        "metric = \"latency_p99\"\nmax = \"2s\"",
        "\"2s\"",
        "latency_p99 max \"2s\" can never fail: [load] timeout = \"2s\" gives every request up by then",
        "lower the limit below the request timeout",
    );
    one(
        "metric = \"latency_max\"\nmax = \"5s\"\nphase = \"steady\"",
        "\"5s\"",
        "latency_max max \"5s\" can never fail",
        "raise [load] timeout",
    );
    one(
        "metric = \"throughput\"\nmin = 500",
        "500\n",
        "throughput min 500/s can never pass: the load offers at most 200 requests per second",
        "cannot exceed the offered rate",
    );
    one(
        "metric = \"throughput\"\nmin = 100",
        "100\n",
        "throughput min 100/s can never pass at the load axis's lower rates (from 50 requests per second)",
        "judge latency and error_rate along a load axis",
    );
    one(
        "metric = \"throughput\"\nmax = 200",
        "200\n",
        "throughput max 200/s can never fail: the load offers at most 200 requests per second",
        "",
    );
    one(
        "metric = \"throughput\"\nmin = \"fast\"",
        "\"fast\"",
        "the throughput limit must be a positive number",
        "",
    );
    one(
        "metric = \"latency_p99\"\nmax = \"1s\"\nunit = \"s\"",
        "unit",
        "unknown key `unit` in [[slo]]",
        "metric, max, min",
    );
    // An [[slo]] needs a load to judge.
    let text = format!(
        "{}\n[[slo]]\nmetric = \"latency_p99\"\nmax = \"1s\"\n",
        SERVICE
            .replace(
                "[load]\nrate = \"{rps}\"\n\n[[load.request]]\npath = \"/orders/{seq}\"\n",
                ""
            )
            .replace("kind = \"load\"", "kind = \"custom\"")
            .replace("\"{workers}\"]", "\"{workers}\", \"{rps}\"]")
    );
    let errors = parse(&text).unwrap_err();
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert!(
        errors[0].starts_with(&format!(
            "{}[[slo]] judges a load, but the spec has no [load]",
            at(&text, "[[slo]]", 0)
        )),
        "{errors:#?}"
    );
}

#[test]
fn request_template_checks_agree_with_the_load_generator() {
    use qualify_load::template::Template;
    for text in [
        "/orders/{seq}",
        "{\"id\": {seq}}",
        "{pad:0}{pad:16777216}",
        "{pad:16777217}",
        "{pad:-1}",
        "{pad:x}",
        "{pad:3",
        "{seq",
        "{{seq}}",
        "}{",
        "é{pad:2}é",
    ] {
        let spec_ok = template_problems(text, &[]).is_empty();
        let load_ok = Template::parse(text).is_ok();
        assert_eq!(spec_ok, load_ok, "{text:?}");
    }
    assert_eq!(template_problems("/a/{rps}/{port}", &["rps"]).len(), 2);
}

fn qualify_spec_search() -> qualify_spec::Search {
    qualify_spec::Search::Boundary
}

#[test]
fn the_service_starter_is_valid_and_explains_every_key() {
    let spec = Spec::parse(SERVICE_STARTER_SPEC, "qualify.toml").unwrap();
    assert!(spec.service.is_some() && spec.load.is_some());
    assert_eq!(spec.slos.len(), 2);
    assert!(spec.functional.is_some(), "a functional check");
    assert_eq!(
        spec.target.as_ref().and_then(|t| t.rate),
        Some(50.0),
        "the claimed region"
    );
    assert_eq!(
        spec.axis("rps").and_then(|a| a.search),
        Some(qualify_spec_search()),
        "a load-axis boundary search"
    );
    for key in [
        "{port}",
        "PORT",
        "ready",
        "within",
        "stop",
        "grace",
        "model",
        "rate",
        "users",
        "duration",
        "warmup",
        "timeout",
        "max_in_flight",
        "[[load.request]]",
        "method",
        "path",
        "body",
        "headers",
        "expect_status",
        "tcp",
        "{seq}",
        "{pad:N}",
        "weight",
        "[[slo]]",
        "metric",
        "max",
        "min",
        "kind = \"load\"",
        "boundary",
    ] {
        assert!(
            SERVICE_STARTER_SPEC.contains(key),
            "the service starter does not mention {key}"
        );
    }
    // The commented tcp request is valid on its own.
    let tcp = SERVICE_STARTER_SPEC
        .replace("method = \"POST\"\npath = \"/orders/{seq}\"\nbody = '{\"id\": {seq}}'\nheaders = { \"content-type\" = \"application/json\" }\nexpect_status = [201]   # default: 200–399\n", "")
        .replace("# tcp = {", "tcp = {");
    let spec = Spec::parse(&tcp, "qualify.toml").unwrap();
    assert!(matches!(
        spec.load.unwrap().plan.requests[0].kind,
        LoadRequestKind::Tcp { .. }
    ));
}

#[test]
fn generators_default_to_one_and_zero_is_refused_where_written() {
    let spec = parse(SERVICE).unwrap();
    assert_eq!(spec.load.as_ref().unwrap().plan.generators, 1);
    let two =
        parse(&SERVICE.replace("rate = \"{rps}\"", "rate = \"{rps}\"\ngenerators = 2")).unwrap();
    assert_eq!(two.load.as_ref().unwrap().plan.generators, 2);
    single(
        "rate = \"{rps}\"",
        "rate = \"{rps}\"\ngenerators = 0",
        "0\n",
        "load.generators must be between 1 and 64, found 0",
        "generators = 1 runs the load in qualify's own process",
    );
}

/// `SERVICE` with a ramp instead of the `rps` axis.
fn staged(load: &str) -> String {
    SERVICE.replace("rate = \"{rps}\"", load).replace(
        "\n[[axis]]\nname = \"rps\"\nkind = \"load\"\nvalues = [50, 200]\n",
        "",
    )
}

#[test]
fn stages_ramp_the_rate_and_poisson_arrivals_are_seeded() {
    let spec = parse(&staged(
        "stages = [{ rate = 100, for = \"10s\" }, { rate = 800.5, for = \"30s\" }]\narrivals = \"poisson\"\nseed = 7",
    ))
    .unwrap();
    let plan = &spec.load.as_ref().unwrap().plan;
    assert_eq!(plan.stages.len(), 2);
    assert_eq!(plan.stages[1].rate, 800.5);
    assert_eq!(plan.stages[0].duration, Duration::from_secs(10));
    assert_eq!(
        plan.duration,
        Duration::from_secs(40),
        "the sum of the stages"
    );
    assert_eq!(plan.start_rate, 0.0);
    assert_eq!(plan.rate(), Some(800.5), "the peak");
    assert_eq!(
        plan.arrivals,
        qualify_model::load::Arrivals::Poisson { seed: 7 }
    );
    let spec = parse(&staged(
        "stages = [{ rate = 5, for = \"1s\" }]\nstart_rate = 5\narrivals = \"poisson\"",
    ))
    .unwrap();
    let plan = &spec.load.as_ref().unwrap().plan;
    assert_eq!(plan.start_rate, 5.0);
    assert_eq!(
        plan.arrivals,
        qualify_model::load::Arrivals::Poisson { seed: 1 },
        "the default seed"
    );
    let plain = parse(SERVICE).unwrap();
    assert!(plain.load.as_ref().unwrap().plan.arrivals.is_uniform());
}

#[test]
fn stage_mistakes_are_refused_where_written() {
    let cases = [
        (
            "stages = [{ rate = 100, for = \"1s\" }]\nrate = 5",
            "5\n",
            "[load] takes stages or a fixed rate, not both",
            "remove rate",
        ),
        (
            "stages = [{ rate = 100, for = \"1s\" }]\nduration = \"3s\"",
            "\"3s\"",
            "[load] stages set the duration",
            "add a stage",
        ),
        (
            "stages = [{ rate = 100, for = \"1s\" }]\nwarmup = \"1s\"",
            "\"1s\"\n",
            "[load] stages take no warmup",
            "start with a stage at a low rate",
        ),
        (
            "stages = []",
            "[]",
            "[load] stages is empty",
            "give one or more stages",
        ),
        (
            "stages = [{ rate = 10, for = \"1s\" }, { rate = 0, for = \"1s\" }]",
            "0, for = \"1s\" }]",
            "load.stages[1].rate must be a positive number of arrivals per second, found 0",
            "rate = N (> 0)",
        ),
        (
            "stages = [{ rate = -3, for = \"1s\" }]",
            "-3",
            "load.stages[0].rate must be a positive number",
            "rate = N (> 0)",
        ),
        (
            "stages = [{ rate = 10, for = \"1s\" }]\narrivals = \"bursty\"",
            "\"bursty\"",
            "unknown arrivals `bursty`",
            "\"poisson\"",
        ),
        (
            "stages = [{ rate = 10, for = \"1s\" }]\nseed = 3",
            "3\n",
            "load.seed draws Poisson arrivals, but arrivals are uniform",
            "arrivals = \"poisson\"",
        ),
    ];
    for (load, needle, message, help) in cases {
        let text = staged(load);
        let errors = match parse(&text) {
            Ok(_) => panic!("{load} should be refused"),
            Err(e) => e,
        };
        assert_eq!(errors.len(), 1, "{load}: {errors:#?}");
        let prefix = at(&text, needle, 0);
        assert!(
            errors[0].starts_with(&format!("{prefix}{message}")),
            "expected `{prefix}{message}…`, got:\n{}",
            errors[0]
        );
        assert!(
            errors[0].contains(help),
            "{load}: help lacks `{help}`:\n{}",
            errors[0]
        );
    }
    let text = SERVICE.replace("rate = \"{rps}\"", "rate = \"{rps}\"\nstart_rate = 3");
    let errors = parse(&text).unwrap_err();
    assert!(
        errors[0].contains(
            "load.start_rate is where the first stage ramps from, but there are no stages"
        ),
        "{errors:#?}"
    );
}
