//! Dependency faults in a spec: `[[dependency]]`, `[faults]`, `kind = "fault"` axes,
//! `[recovery]`, `[target] dependencies` and the `faults.<name>` waivers — a full spec read
//! back, and every error with its position and help.

use std::time::Duration;

use crate::support::{PATH, at, errors};
use qualify_model::fault::FaultKind;
use qualify_model::load::RequestKind;
use qualify_model::{Params, Value as AxisValue};
use qualify_spec::*;

const FAULTS: &str = r#"[artifact]
name = "worker"
command = ["./worker", "--port", "{port}"]

[claim]
level = "trial"

[service]
ready = { tcp = true, within = "5s" }

[load]
rate = 100
duration = "12s"

[[load.request]]
method = "PUT"
path = "/items/{seq}"

[[dependency]]
name = "db"
start = ["redis-server", "--port", "{dep_port}", "--save", ""]
ready = { tcp = true, within = "10s" }
env = { REDIS_URL = "redis://127.0.0.1:{proxy_port}" }

[faults]
window = ["3s", "8s"]
recover_within = "2s"

[[axis]]
name = "db_fault"
kind = "fault"
values = ["none", "latency(200ms)", "down", "reset"]
dependency = "db"

[recovery]
signal = "SIGKILL"
at = "5s"
ready_within = "15s"
writes = { request = { method = "PUT", path = "/items/{seq}" }, read = { method = "GET", path = "/items/{seq}", expect_status = [200] } }
"#;

/// The diagnostics of `FAULTS` with `from` (which must occur once) replaced by `to`.
fn errors_with(from: &str, to: &str) -> (String, Vec<String>) {
    assert_eq!(FAULTS.matches(from).count(), 1, "`{from}` must occur once");
    let text = FAULTS.replace(from, to);
    let e = errors(&text);
    (text, e)
}

/// The single error of `FAULTS` with `from` replaced by `to` starts at the first `needle` of
/// the edited text (plus `shift` characters), says `message`, and its help mentions `help`.
fn single(from: &str, to: &str, needle: &str, shift: usize, message: &str, help: &str) {
    let (text, e) = errors_with(from, to);
    assert_eq!(e.len(), 1, "{e:#?}");
    expect(&e[0], &text, needle, shift, message, help);
}

fn expect(diagnostic: &str, text: &str, needle: &str, shift: usize, message: &str, help: &str) {
    let prefix = at(text, needle, 0, shift);
    assert!(
        diagnostic.starts_with(&format!("{prefix}{message}")),
        "expected `{prefix}{message}…`, got:\n{diagnostic}"
    );
    if !help.is_empty() {
        assert!(
            diagnostic.contains("\n  help: ") && diagnostic.contains(help),
            "help lacks `{help}`:\n{diagnostic}"
        );
    }
}

fn cell(fault: &str) -> Params {
    [("db_fault", AxisValue::Text(fault.to_string()))]
        .into_iter()
        .collect()
}

#[test]
fn a_fault_spec_is_read() {
    let spec = Spec::parse(FAULTS, PATH).unwrap();
    let db = spec.dependency("db").unwrap();
    assert!(matches!(&db.source, DependencySource::Start(_)));
    assert_eq!(db.ready.check, ReadyCheck::Tcp);
    assert_eq!(db.ready.within, Duration::from_secs(10));
    let params = cell("down");
    assert_eq!(
        db.start_argv(&params, 40001).unwrap(),
        ["redis-server", "--port", "40001", "--save", ""]
    );
    assert_eq!(
        db.service_env(&params, 40002, 40001),
        [(
            "REDIS_URL".to_string(),
            "redis://127.0.0.1:40002".to_string()
        )]
    );
    assert_eq!(db.upstream(40001), "127.0.0.1:40001");
    assert_eq!(db.fixed_port(), None);

    let faults = spec.faults.as_ref().unwrap();
    assert_eq!(
        (faults.start, faults.end, faults.recover_within),
        (
            Duration::from_secs(3),
            Duration::from_secs(8),
            Duration::from_secs(2)
        )
    );

    let axis = spec.axis("db_fault").unwrap();
    assert_eq!(axis.kind, AxisKind::Fault);
    assert_eq!(axis.fault.as_ref().unwrap().dependency, "db");
    let kinds: Vec<&str> = axis.faults().iter().map(|f| f.kind.name()).collect();
    assert_eq!(kinds, ["none", "latency", "down", "reset"]);
    // The runner gets parsed faults per cell, without parsing strings again.
    let put = spec.faults_for(&cell("latency(200ms)"));
    assert_eq!(put.len(), 1);
    assert_eq!(put[0].0.name, "db");
    assert_eq!(
        put[0].1.kind,
        FaultKind::Latency {
            latency: Duration::from_millis(200),
            jitter: Duration::ZERO
        }
    );
    assert!(spec.faults_for(&cell("none"))[0].1.is_none());
    assert!(spec.faults_for(&cell("slow_close(1s)")).is_empty());

    let recovery = spec.recovery.as_ref().unwrap();
    assert_eq!(
        (
            recovery.signal.as_str(),
            recovery.signal_number,
            recovery.at,
            recovery.ready_within
        ),
        (
            "SIGKILL",
            9,
            Duration::from_secs(5),
            Duration::from_secs(15)
        )
    );
    let writes = recovery.writes.as_ref().unwrap();
    let (RequestKind::Http(request), RequestKind::Http(read)) = (&writes.request, &writes.read)
    else {
        panic!("HTTP writes: {writes:?}");
    };
    assert_eq!(
        (request.method.as_str(), request.path.as_str()),
        ("PUT", "/items/{seq}")
    );
    assert_eq!(read.expect_status, [200]);
    assert_eq!(spec.writes(), Some(writes));
    // The dependency's defaults: tcp, stopped with SIGTERM and a 5 s grace.
    let db = spec.dependency("db").unwrap();
    assert_eq!(db.protocol, Protocol::Tcp);
    assert_eq!(
        (db.stop.signal.as_str(), db.stop.grace),
        ("SIGTERM", Duration::from_secs(5))
    );

    let json = serde_json::to_value(&spec).unwrap();
    assert_eq!(json["dependencies"][0]["name"], "db");
    assert_eq!(json["faults"]["window_end_seconds"], 8.0);
    assert_eq!(json["recovery"]["at_seconds"], 5.0);
    assert_eq!(json["axes"][0]["fault"]["faults"][1], "latency(200ms)");
}

#[test]
fn fault_values_are_kept_canonical_and_defaults_apply() {
    let text = FAULTS
        .replace(
            r#"values = ["none", "latency(200ms)", "down", "reset"]"#,
            r#"values = ["latency(0.2s, jitter=50ms)", "bandwidth(16384B/s)@upstream", "reset x0.5"]"#,
        )
        .replace("recover_within = \"2s\"\n", "")
        .replace("ready = { tcp = true, within = \"10s\" }\n", "")
        .replace("signal = \"SIGKILL\"\n", "")
        .replace("ready_within = \"15s\"\n", "");
    let spec = Spec::parse(&text, PATH).unwrap();
    let values: Vec<String> = spec
        .axis("db_fault")
        .unwrap()
        .points()
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        values,
        [
            "latency(200ms, jitter 50ms)",
            "bandwidth(16KiB/s)@upstream",
            "reset×0.5"
        ]
    );
    assert_eq!(spec.faults.unwrap().recover_within, DEFAULT_RECOVER_WITHIN);
    let db = &spec.dependencies[0];
    assert_eq!(
        (db.ready.check.clone(), db.ready.within),
        (ReadyCheck::Tcp, Duration::from_secs(30))
    );
    let recovery = spec.recovery.unwrap();
    assert_eq!(
        (recovery.signal.as_str(), recovery.ready_within),
        ("SIGKILL", DEFAULT_READY_WITHIN)
    );
}

#[test]
fn an_upstream_dependency_and_axis_placeholders() {
    let text = FAULTS
        .replace(
            "start = [\"redis-server\", \"--port\", \"{dep_port}\", \"--save\", \"\"]",
            "upstream = \"[::1]:6379\"",
        )
        .replace(
            "env = { REDIS_URL = \"redis://127.0.0.1:{proxy_port}\" }",
            "env = { REDIS_URL = \"redis://127.0.0.1:{proxy_port}/{dbn}\", REAL_PORT = \"{dep_port}\" }",
        )
        + "\n[[axis]]\nname = \"dbn\"\nkind = \"custom\"\nvalues = [0, 1]\n";
    // `dbn` is used only by the dependency's env: that counts as used.
    let spec = Spec::parse(&text, PATH).unwrap();
    let db = &spec.dependencies[0];
    assert_eq!(
        db.source,
        DependencySource::Upstream {
            host: "::1".into(),
            port: 6379
        }
    );
    assert_eq!(db.upstream(0), "[::1]:6379");
    assert_eq!(db.fixed_port(), Some(6379));
    assert!(db.start_argv(&Params::new(), 1).is_none());
    let params: Params = [("dbn", AxisValue::Int(1))].into_iter().collect();
    assert_eq!(
        db.service_env(&params, 40002, 6379),
        [
            ("REAL_PORT".to_string(), "6379".to_string()),
            (
                "REDIS_URL".to_string(),
                "redis://127.0.0.1:40002/1".to_string()
            )
        ]
    );
}

#[test]
fn a_fault_value_error_points_inside_the_string() {
    // The parser's span is a byte range inside the value; the diagnostic adds the value's
    // position and the opening quote.
    single(
        "\"latency(200ms)\"",
        "\"latncy(200ms)\"",
        "latncy",
        0,
        "fault axis `db_fault`: unknown fault `latncy`",
        "latency",
    );
    single(
        "\"latency(200ms)\"",
        "\"latency(200xs)\"",
        "200xs",
        0,
        "fault axis `db_fault`: invalid duration `200xs`",
        "",
    );
    single(
        "\"reset\"]",
        "\"reset@sideways\"]",
        "@sideways",
        0,
        "fault axis `db_fault`: unknown direction `@sideways`",
        "upstream",
    );
    // A literal string: same arithmetic.
    single(
        "\"down\", ",
        "'down×2', ",
        "×2'",
        0,
        "fault axis `db_fault`: toxicity 2 is outside (0, 1]",
        "",
    );
}

#[test]
fn fault_axis_errors() {
    single(
        "\"reset\"]",
        "3]",
        "3]",
        0,
        "wrong type: found integer `3`, fault axis `db_fault` lists faults as strings",
        "values = [\"none\"",
    );
    single(
        "\"reset\"]",
        "\"latency(0.2s)\"]",
        "\"latency(0.2s)\"",
        0,
        "duplicate value `latency(200ms)` in axis `db_fault`",
        "",
    );
    single(
        "values = [\"none\", \"latency(200ms)\", \"down\", \"reset\"]",
        "range = [1, 3]",
        "[1, 3]",
        0,
        "fault axis `db_fault` takes values, not a range",
        "list the faults",
    );
    single(
        "dependency = \"db\"\n",
        "",
        "\"fault\"",
        0,
        "fault axis `db_fault` needs `dependency`",
        "dependency = \"db\"",
    );
    single(
        "dependency = \"db\"\n",
        "dependency = \"cache\"\n",
        "\"cache\"",
        0,
        "fault axis `db_fault` names dependency `cache`, but no [[dependency]] is called that",
        "declared dependencies: db",
    );
    let (text, e) = errors_with(
        "[recovery]",
        "[[axis]]\nname = \"db_fault2\"\nkind = \"fault\"\nvalues = [\"down\"]\ndependency = \"db\"\n\n[recovery]",
    );
    assert_eq!(e.len(), 1, "{e:#?}");
    let second = text.rfind("dependency = \"db\"").unwrap() + "dependency = ".len();
    assert!(
        e[0].contains("error: a second fault axis on dependency `db`")
            && e[0].contains("list every fault in one axis"),
        "{e:#?}"
    );
    assert_eq!(
        e[0].split(':').nth(1).unwrap(),
        (text[..second].matches('\n').count() + 1).to_string()
    );
    // `dependency` on another kind of axis.
    let text = format!(
        "{FAULTS}\n[[axis]]\nname = \"w\"\nkind = \"custom\"\nvalues = [1]\ndependency = \"db\"\n"
    )
    .replace("\"./worker\",", "\"./worker\", \"{w}\",");
    let e = errors(&text);
    assert_eq!(e.len(), 1, "{e:#?}");
    let offset = text.rfind("\"db\"").unwrap();
    let line = text[..offset].matches('\n').count() + 1;
    assert!(
        e[0].starts_with(&format!("{PATH}:{line}:14: error: `dependency` applies only to an axis of kind = \"fault\", but axis `w` has kind `custom`")),
        "{e:#?}"
    );
}

#[test]
fn faults_and_fault_axes_come_together() {
    single(
        "[faults]\nwindow = [\"3s\", \"8s\"]\nrecover_within = \"2s\"\n",
        "",
        "\"db_fault\"",
        0,
        "fault axis `db_fault` needs [faults]",
        "window = [\"3s\", \"8s\"]",
    );
    let without_axis = FAULTS.replace(
        "[[axis]]\nname = \"db_fault\"\nkind = \"fault\"\nvalues = [\"none\", \"latency(200ms)\", \"down\", \"reset\"]\ndependency = \"db\"\n",
        "",
    );
    let e = errors(&without_axis);
    assert_eq!(e.len(), 1, "{e:#?}");
    expect(
        &e[0],
        &without_axis,
        "[faults]",
        0,
        "[faults] without a fault axis",
        "kind = \"fault\"",
    );
}

/// `window = "all"`: the faults are held for the whole measured load (the capacity under a
/// standing fault). Nothing to recover from, so `recover_within` is an error; a process fault
/// would never let its dependency run again, so it keeps a window.
#[test]
fn a_standing_fault_is_held_for_the_whole_load() {
    let text = FAULTS.replace(
        "window = [\"3s\", \"8s\"]\nrecover_within = \"2s\"",
        "window = \"all\"",
    );
    let faults = Spec::parse(&text, PATH).unwrap().faults.unwrap();
    assert!(faults.standing);
    assert_eq!(
        (faults.start, faults.end),
        (Duration::ZERO, Duration::from_secs(12))
    );
    single(
        "window = [\"3s\", \"8s\"]",
        "window = \"all\"",
        "\"2s\"\n",
        0,
        "faults.recover_within with window = \"all\": a standing fault never ends within the load",
        "remove recover_within",
    );
    single(
        "window = [\"3s\", \"8s\"]",
        "window = \"always\"",
        "\"always\"",
        0,
        "faults.window = \"always\": the only word a window can be is \"all\"",
        "window = \"all\"",
    );
    single(
        "window = [\"3s\", \"8s\"]",
        "window = 3",
        "3\nrecover",
        0,
        "faults.window must be a pair [start, end] or \"all\", found a integer",
        "window = \"all\"",
    );
    let text = FAULTS
        .replace(
            "window = [\"3s\", \"8s\"]\nrecover_within = \"2s\"",
            "window = \"all\"",
        )
        .replace("\"down\", \"reset\"]", "\"down\", \"kill\"]");
    let e = errors(&text);
    assert_eq!(e.len(), 1, "{e:#?}");
    expect(
        &e[0],
        &text,
        "\"kill\"",
        0,
        "`kill` acts on the processes of dependency `db`, which a fault held for the whole load (window = \"all\") cannot",
        "give [faults] a window",
    );
}

#[test]
fn the_window_lies_inside_the_measured_phase() {
    single(
        "window = [\"3s\", \"8s\"]",
        "window = [\"3s\", \"13s\"]",
        "\"13s\"]",
        0,
        "faults.window [3s, 13s] lies outside the measured load phase, which lasts 12s ([load] duration)",
        "raise duration in [load] at 11:1",
    );
    single(
        "window = [\"3s\", \"8s\"]",
        "window = [\"12s\", \"14s\"]",
        "[\"12s\"",
        1,
        "faults.window [12s, 14s] lies outside the measured load phase",
        "keep it inside 0..12s",
    );
    single(
        "window = [\"3s\", \"8s\"]",
        "window = [\"3s\", \"12s\"]",
        "\"12s\"]",
        0,
        "faults.window ends where the measured load phase ends (12s): nothing after it shows whether the service recovered",
        "end the window before 12s",
    );
    single(
        "window = [\"3s\", \"8s\"]",
        "window = [\"8s\", \"3s\"]",
        "[\"8s\"",
        0,
        "faults.window is empty: it starts at 8s and ends at 3s",
        "the end must come after the start",
    );
    single(
        "window = [\"3s\", \"8s\"]",
        "window = [\"3s\"]",
        "[\"3s\"]",
        0,
        "faults.window must have two elements [start, end], found 1",
        "window = [\"3s\", \"8s\"]",
    );
    single(
        "window = [\"3s\", \"8s\"]\n",
        "",
        "[faults]",
        0,
        "[faults] needs `window`",
        "window = [\"3s\", \"8s\"]",
    );
    // A window from the phase's start is fine (0 is an offset, not a duration).
    let text = FAULTS.replace("window = [\"3s\", \"8s\"]", "window = [0, \"500ms\"]");
    let faults = Spec::parse(&text, PATH).unwrap().faults.unwrap();
    assert_eq!(
        (faults.start, faults.end),
        (Duration::ZERO, Duration::from_millis(500))
    );
}

#[test]
fn dependency_errors() {
    single(
        "start = [\"redis-server\", \"--port\", \"{dep_port}\", \"--save\", \"\"]\n",
        "start = [\"redis-server\", \"--port\", \"{dep_port}\", \"--save\", \"\"]\nupstream = \"127.0.0.1:6379\"\n",
        "\"127.0.0.1:6379\"",
        0,
        "dependency `db` has both `start` and `upstream`",
        "keep start",
    );
    single(
        "start = [\"redis-server\", \"--port\", \"{dep_port}\", \"--save\", \"\"]\n",
        "",
        "\"db\"\n",
        0,
        "dependency `db` has neither `start` nor `upstream`",
        "upstream = \"127.0.0.1:5432\"",
    );
    single(
        "start = [\"redis-server\", \"--port\", \"{dep_port}\", \"--save\", \"\"]\n",
        "upstream = \"localhost\"\n",
        "\"localhost\"",
        0,
        "dependency `db` upstream \"localhost\" is not host:port",
        "127.0.0.1:5432",
    );
    single(
        "{proxy_port}\" }",
        "{proxyport}\" }",
        "{proxyport}",
        0,
        "unknown placeholder `{proxyport}` in dependency `db` env",
        "knows {proxy_port} and {dep_port}",
    );
    // An env that never names the proxy: the faults would change nothing.
    let (text, e) = errors_with("{proxy_port}\" }", "{dep_port}\" }");
    assert_eq!(e.len(), 1, "{e:#?}");
    expect(
        &e[0],
        &text,
        "\"db\"\n",
        0,
        "no env value of dependency `db` uses {proxy_port}: the service would never reach it through the fault proxy",
        "the variable your service reads",
    );
    single(
        "\"{dep_port}\", \"--save\"",
        "\"{port}\", \"--save\"",
        "{port}\", \"--save\"",
        0,
        "unknown placeholder `{port}` in dependency `db` start",
        "{port} is the service's port; here {dep_port} is the dependency's side",
    );
    single(
        "ready = { tcp = true, within = \"10s\" }",
        "ready = { command = \"redis-cli -p {db_port} ping\" }",
        "{db_port}",
        0,
        "unknown placeholder `{db_port}` in dependency `db` ready",
        "{dep_port}",
    );
    single(
        "ready = { tcp = true, within = \"10s\" }",
        "ready = { tcp = false }",
        "false",
        0,
        "dependency `db` ready.tcp must be true",
        "",
    );
    // A second dependency with the same name (and the same variable).
    let second = "[[dependency]]\nname = \"db\"\nupstream = \"127.0.0.1:6379\"\nenv = { REDIS_URL = \"redis://127.0.0.1:{proxy_port}\" }\n\n[faults]";
    let (text, e) = errors_with("[faults]", second);
    assert_eq!(e.len(), 2, "{e:#?}");
    let dup = text.rfind("\"db\"\nupstream").unwrap();
    let line = text[..dup].matches('\n').count() + 1;
    assert!(
        e[0].starts_with(&format!(
            "{PATH}:{line}:8: error: duplicate dependency name `db`"
        )) && e[0].contains("the first dependency `db` is at 20:8"),
        "{e:#?}"
    );
    assert!(
        e[1].contains("dependency `db` env sets `REDIS_URL`, which dependency `db` sets too"),
        "{e:#?}"
    );
    // (The fault axis's `dependency = "db"` then names no dependency: a second error.)
    let (text, e) = errors_with("name = \"db\"", "name = \"d b\"");
    expect(
        &e[0],
        &text,
        "\"d b\"",
        0,
        "dependency name \"d b\" cannot name a gap or a placeholder",
        "letters, digits",
    );
}

#[test]
fn a_dependency_needs_a_service() {
    let text = format!(
        "{}\n[[dependency]]\nname = \"db\"\nupstream = \"127.0.0.1:5432\"\nenv = {{ DB = \"{{proxy_port}}\" }}\n",
        crate::support::MINIMAL
    );
    let e = errors(&text);
    assert_eq!(e.len(), 1, "{e:#?}");
    expect(
        &e[0],
        &text,
        "[[dependency]]",
        0,
        "[[dependency]] needs [service]",
        "add [service]",
    );
}

#[test]
fn built_in_ports_are_not_axis_names_or_artifact_placeholders() {
    let text =
        format!("{FAULTS}\n[[axis]]\nname = \"proxy_port\"\nkind = \"custom\"\nvalues = [1]\n")
            .replace("\"./worker\",", "\"./worker\", \"{proxy_port}\",");
    let e = errors(&text);
    assert_eq!(e.len(), 1, "{e:#?}");
    assert!(
        e[0].contains("axis name `proxy_port` is taken: with [[dependency]], {proxy_port} is a port qualify assigns each cell"),
        "{e:#?}"
    );
    single(
        "\"--port\", \"{port}\"]",
        "\"--port\", \"{port}\", \"--db\", \"{proxy_port}\"]",
        "{proxy_port}\"]",
        0,
        "placeholder `{proxy_port}` has no axis named `proxy_port`",
        "{proxy_port} belongs to a [[dependency]]: give the service the proxy's address in that dependency's env",
    );
    // [artifact.env] and a dependency's env cannot both set one variable.
    let (text, e) = errors_with(
        "command = [\"./worker\", \"--port\", \"{port}\"]\n",
        "command = [\"./worker\", \"--port\", \"{port}\"]\nenv = { REDIS_URL = \"x\" }\n",
    );
    assert_eq!(e.len(), 1, "{e:#?}");
    expect(
        &e[0],
        &text,
        "\"redis://",
        0,
        "dependency `db` env sets `REDIS_URL`, which [artifact.env] sets too",
        "one value per variable",
    );
}

#[test]
fn recovery_errors() {
    single(
        "at = \"5s\"",
        "at = \"12s\"",
        "at = \"12s\"",
        5,
        "recovery.at 12s lies outside the measured load phase, which lasts 12s ([load] duration)",
        "at < 12s",
    );
    single(
        "at = \"5s\"\n",
        "",
        "[recovery]",
        0,
        "[recovery] needs `at`",
        "at = \"5s\"",
    );
    single(
        "signal = \"SIGKILL\"",
        "signal = \"SIGSTOP\"",
        "\"SIGSTOP\"",
        0,
        "unknown recovery signal `SIGSTOP`",
        "SIGKILL",
    );
    single(
        "request = { method = \"PUT\", path = \"/items/{seq}\" }",
        "request = { method = \"PUT\", path = \"/items\" }",
        "{ method = \"PUT\", path = \"/items\" }",
        0,
        "recovery.writes.request does not use {seq}: every write would look the same",
        "path = \"/items/{seq}\"",
    );
    single(
        "read = { method = \"GET\", path = \"/items/{seq}\"",
        "read = { method = \"GET\", path = \"/items\"",
        "{ method = \"GET\", path = \"/items\"",
        0,
        "recovery.writes.read does not use {seq} in what it sends",
        "read = {",
    );
    single(
        "request = { method = \"PUT\", path = \"/items/{seq}\" }",
        "request = { path = \"/items/{seq}\" }",
        "{ path = \"/items/{seq}\" }",
        0,
        "recovery.writes.request needs `method`",
        "PUT",
    );
    single(
        "request = { method = \"PUT\", path = \"/items/{seq}\" }",
        "request = { method = \"PUT\", path = \"/items/{seq}\", body = \"{pad:x}\" }",
        "{pad:x}",
        0,
        "recovery.writes.request body: `{pad:x}`: the filler size must be a whole number",
        "{seq}",
    );
    single(
        "read = { method = \"GET\", path = \"/items/{seq}\", expect_status = [200] }",
        "read = { method = \"GET\", path = \"/items/{seq}\", expect_status = [] }",
        "[] }",
        0,
        "recovery.writes.read expect_status is empty",
        "",
    );
    single(
        ", read = { method = \"GET\", path = \"/items/{seq}\", expect_status = [200] } }",
        " }",
        "{ request",
        0,
        "recovery.writes needs `request`",
        "read = {",
    );
    // Writes need an HTTP load.
    let (text, e) = errors_with(
        "method = \"PUT\"\npath = \"/items/{seq}\"\n",
        "tcp = { send = \"SET k{seq} 1\\r\\n\", expect = \"+OK\" }\n",
    );
    assert_eq!(e.len(), 1, "{e:#?}");
    expect(
        &e[0],
        &text,
        "{ request",
        0,
        "recovery.writes sends HTTP requests, but [load] sends tcp requests",
        "write the check as tcp requests",
    );
    // Without [service].
    let text = format!("{}\n[recovery]\nat = \"1s\"\n", crate::support::MINIMAL);
    let e = errors(&text);
    assert_eq!(e.len(), 1, "{e:#?}");
    expect(
        &e[0],
        &text,
        "[recovery]",
        0,
        "[recovery] needs [service]: only a service is killed and restarted under load",
        "add [service]",
    );
}

#[test]
fn target_dependencies_and_fault_waivers() {
    let text = FAULTS.replace(
        "[faults]",
        "[target]\ndependencies = [\"db\"]\n\n[[waiver]]\ngap = \"faults.db\"\nreason = \"the cache is examined elsewhere\"\n\n[[waiver]]\ngap = \"faults\"\nreason = \"r\"\n\n[faults]",
    );
    let spec = Spec::parse(&text, PATH).unwrap();
    assert_eq!(spec.target.unwrap().dependencies, ["db"]);
    assert_eq!(spec.waivers.len(), 2);

    single(
        "[faults]",
        "[target]\ndependencies = [\"db\", \"cache\"]\n\n[faults]",
        "\"cache\"",
        0,
        "target.dependencies names `cache`, but no [[dependency]] is called that",
        "declared dependencies: db",
    );
    single(
        "[faults]",
        "[[waiver]]\ngap = \"faults.cache\"\nreason = \"r\"\n\n[faults]",
        "\"faults.cache\"",
        0,
        "waiver names gap `faults.cache`, but no [[dependency]] is called `cache`",
        "faults, faults.db",
    );
    // Without dependencies there is no faults gap to waive.
    let text = format!(
        "{}\n[[waiver]]\ngap = \"faults\"\nreason = \"r\"\n",
        crate::support::MINIMAL
    );
    let e = errors(&text);
    assert_eq!(e.len(), 1, "{e:#?}");
    assert!(e[0].contains("waiver names gap `faults`"), "{e:#?}");
}

#[test]
fn faults_and_recovery_need_a_load() {
    let text = FAULTS.replace(
        "[load]\nrate = 100\nduration = \"12s\"\n\n[[load.request]]\nmethod = \"PUT\"\npath = \"/items/{seq}\"\n",
        "",
    );
    let e = errors(&text);
    assert_eq!(e.len(), 2, "{e:#?}");
    expect(
        &e[0],
        &text,
        "[faults]",
        0,
        "[faults] needs [load]: its window is an offset within the measured load phase",
        "add [service] and [load]",
    );
    expect(
        &e[1],
        &text,
        "[recovery]",
        0,
        "[recovery] needs [load]: the kill happens at an offset within the measured load phase",
        "add [load]",
    );
}

#[test]
fn the_service_starter_s_fault_examples_are_valid_uncommented() {
    // Uncomment every commented table header and `key = …` line after the dependency section
    // starts; prose and the alternative `# # upstream = …` stay commented.
    let start = SERVICE_STARTER_SPEC.find("# [[dependency]]").unwrap();
    let (head, tail) = SERVICE_STARTER_SPEC.split_at(start);
    let tail: String = tail
        .lines()
        .map(|line| match line.strip_prefix("# ") {
            Some(rest) if rest.starts_with('[') || is_key_line(rest) => format!("{rest}\n"),
            _ => format!("{line}\n"),
        })
        .collect();
    let text =
        format!("{head}{tail}").replace("# dependencies = [\"db\"]", "dependencies = [\"db\"]");
    let spec = Spec::parse(&text, "qualify.toml").unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(spec.dependencies.len(), 1);
    assert!(spec.faults.is_some());
    assert_eq!(spec.axis("db_fault").unwrap().faults().len(), 5);
    assert_eq!(
        spec.dependencies[0].stop.grace,
        std::time::Duration::from_secs(5)
    );
    assert_eq!(
        spec.axis("db_fault")
            .unwrap()
            .expected_of(&AxisValue::Text("down".into())),
        Some(&[qualify_model::fault::Verdict::FailsFast][..])
    );
    assert!(
        spec.slos
            .iter()
            .any(|s| s.phase == qualify_model::SloPhase::Fault)
    );
    let recovery = spec.recovery.unwrap();
    assert!(recovery.writes.is_some());
    assert_eq!(spec.target.unwrap().dependencies, ["db"]);
    for key in [
        "{dep_port}",
        "DEP_PORT",
        "upstream",
        "{proxy_port}",
        "window",
        "recover_within",
        "kind = \"fault\"",
        "fail_first",
        "@upstream",
        "signal",
        "ready_within",
        "expect_status",
        "faults.db",
        "protocol = \"http\"",
        "pause",
        "status(503",
        "{history}",
    ] {
        assert!(
            SERVICE_STARTER_SPEC.contains(key),
            "the service starter does not mention {key}"
        );
    }
}

/// `name = …` (a bare key, then `=`).
fn is_key_line(line: &str) -> bool {
    line.split_once(" = ").is_some_and(|(key, _)| {
        !key.is_empty() && key.chars().all(|c| c.is_ascii_lowercase() || c == '_')
    })
}

/// A service that is a database: Redis started by `[artifact] command`, written over its own
/// line protocol, killed by `[recovery]` and read back over the same protocol, with a checker.
const REDIS_SERVICE: &str = r#"[artifact]
name = "redis"
command = "redis-server --port {port} --appendonly {aof} --save ''"

[claim]
level = "trial"

[service]
ready = { tcp = true }

[load]
rate = 200
duration = "4s"

[[load.request]]
tcp = { send = "PING\r\n", expect = "+PONG" }

[recovery]
at = "2s"
writes = { request = { tcp = { send = "SET k{seq} v{seq}\r\n", expect = "+OK" } }, read = { tcp = { send = "GET k{seq}\r\n", expect = "v{seq}" } }, checker = ["python3", "check.py", "{history}", "{port}", "{aof}"] }

[[axis]]
name = "aof"
kind = "custom"
values = ["no", "yes"]
"#;

#[test]
fn a_line_protocol_write_check_with_a_checker_is_read() {
    let spec = Spec::parse(REDIS_SERVICE, PATH).unwrap();
    let writes = spec.writes().unwrap();
    let (RequestKind::Tcp(request), RequestKind::Tcp(read)) = (&writes.request, &writes.read)
    else {
        panic!("tcp writes: {writes:?}");
    };
    assert_eq!(
        (request.send.as_str(), request.expect.as_str()),
        ("SET k{seq} v{seq}\r\n", "+OK")
    );
    assert_eq!(
        (read.send.as_str(), read.expect.as_str()),
        ("GET k{seq}\r\n", "v{seq}")
    );
    let checker = writes.checker.as_ref().unwrap();
    assert_eq!(
        checker.argv(),
        ["python3", "check.py", "{history}", "{port}", "{aof}"]
    );

    let errors_in = |from: &str, to: &str| {
        assert_eq!(REDIS_SERVICE.matches(from).count(), 1, "`{from}` once");
        let text = REDIS_SERVICE.replace(from, to);
        let e = errors(&text);
        (text, e)
    };
    let one = |from: &str, to: &str, needle: &str, message: &str, help: &str| {
        let (text, e) = errors_in(from, to);
        assert_eq!(e.len(), 1, "{e:#?}");
        expect(&e[0], &text, needle, 0, message, help);
    };
    one(
        "expect = \"+OK\"",
        "expect = \"+OK {seq}\"",
        "\"+OK {seq}\"",
        "recovery.writes.request tcp.expect is matched as written",
        "{seq} belongs in read's expect",
    );
    one(
        "send = \"GET k{seq}\\r\\n\"",
        "send = \"GET k\\r\\n\"",
        "{ tcp = { send = \"GET k",
        "recovery.writes.read does not use {seq} in what it sends",
        "GET k{seq}",
    );
    one(
        "send = \"SET k{seq} v{seq}\\r\\n\"",
        "send = \"SET k{seq} v{seq}\"",
        "\"SET k{seq} v{seq}\"",
        "recovery.writes.request tcp.send must end with a newline",
        "\\r\\n",
    );
    one(
        "read = { tcp = { send = \"GET k{seq}\\r\\n\", expect = \"v{seq}\" } }",
        "read = { method = \"GET\", path = \"/k/{seq}\" }",
        "{ method = \"GET\", path = \"/k/{seq}\" }",
        "recovery.writes.read and recovery.writes.request speak different protocols",
        "both HTTP",
    );
    one(
        "\"{history}\", ",
        "",
        "[\"python3\", \"check.py\"",
        "recovery.writes.checker never names {history}",
        "\"{history}\"",
    );
    one(
        "\"{aof}\"",
        "\"{mode}\"",
        "{mode}",
        "unknown placeholder `{mode}` in recovery.writes.checker",
        "{history}",
    );
    // Written over HTTP while the load speaks tcp.
    one(
        "request = { tcp = { send = \"SET k{seq} v{seq}\\r\\n\", expect = \"+OK\" } }, read = { tcp = { send = \"GET k{seq}\\r\\n\", expect = \"v{seq}\" } }",
        "request = { method = \"PUT\", path = \"/k/{seq}\" }, read = { path = \"/k/{seq}\" }",
        "{ request",
        "recovery.writes sends HTTP requests, but [load] sends tcp requests",
        "write the check as tcp requests",
    );
}

#[test]
fn the_write_check_may_be_a_table_of_its_own() {
    let inline = REDIS_SERVICE
        .lines()
        .find(|l| l.starts_with("writes = "))
        .unwrap();
    let table = r#"[recovery.writes]
request = { tcp = { send = "SET k{seq} v{seq}\r\n", expect = "+OK" } }
read = { tcp = { send = "GET k{seq}\r\n", expect = "v{seq}" } }
checker = ["python3", "check.py", "{history}", "{port}", "{aof}"]"#;
    let text = REDIS_SERVICE
        .replace(&format!("{inline}\n"), "")
        .replace("[[axis]]", &format!("{table}\n\n[[axis]]"));
    let spec = Spec::parse(&text, PATH).unwrap();
    assert_eq!(
        spec.writes(),
        Spec::parse(REDIS_SERVICE, PATH).unwrap().writes()
    );
}

#[test]
fn process_and_http_faults_need_the_dependency_they_act_on() {
    // An HTTP dependency takes HTTP faults; a started one takes process faults.
    let text = FAULTS
        .replace(
            "values = [\"none\", \"latency(200ms)\", \"down\", \"reset\"]",
            "values = [\"none\", \"kill\", \"pause\", \"restart\", \"status(503, x0.5)\", \"throttle(429)\", \"http_delay(200ms)\"]",
        )
        .replace(
            "env = { REDIS_URL",
            "protocol = \"http\"\nstop = { signal = \"SIGINT\", grace = \"2s\" }\nenv = { REDIS_URL",
        );
    let spec = Spec::parse(&text, PATH).unwrap();
    let db = spec.dependency("db").unwrap();
    assert_eq!(db.protocol, Protocol::Http);
    assert_eq!(
        (db.stop.signal.as_str(), db.stop.grace),
        ("SIGINT", Duration::from_secs(2))
    );
    let faults = spec.axes[0].faults();
    assert_eq!(faults[4].to_string(), "status(503, ×0.5)");
    assert_eq!(faults[5].to_string(), "throttle(429, retry_after 1s)");

    // Without protocol = "http": the HTTP fault is refused at its value.
    let (text, e) = errors_with(
        "values = [\"none\", \"latency(200ms)\", \"down\", \"reset\"]",
        "values = [\"none\", \"status(503)\"]",
    );
    assert_eq!(e.len(), 1, "{e:#?}");
    expect(
        &e[0],
        &text,
        "\"status(503)\"",
        0,
        "`status(503)` is an HTTP fault, but dependency `db` is not declared protocol = \"http\"",
        "add protocol = \"http\"",
    );
    // A process fault on an upstream dependency.
    let text = FAULTS
        .replace(
            "start = [\"redis-server\", \"--port\", \"{dep_port}\", \"--save\", \"\"]",
            "upstream = \"127.0.0.1:6379\"",
        )
        .replace(
            "values = [\"none\", \"latency(200ms)\", \"down\", \"reset\"]",
            "values = [\"none\", \"kill\"]",
        );
    let e = errors(&text);
    assert_eq!(e.len(), 1, "{e:#?}");
    expect(
        &e[0],
        &text,
        "\"kill\"",
        0,
        "`kill` acts on the processes of dependency `db`, but it runs upstream",
        "start = [",
    );
    // An unknown protocol; a stop for an upstream.
    single(
        "env = { REDIS_URL",
        "protocol = \"grpc\"\nenv = { REDIS_URL",
        "\"grpc\"",
        0,
        "dependency `db` protocol `grpc` is unknown",
        "protocol = \"http\"",
    );
    let text = FAULTS.replace(
        "start = [\"redis-server\", \"--port\", \"{dep_port}\", \"--save\", \"\"]",
        "upstream = \"127.0.0.1:6379\"\nstop = { grace = \"1s\" }",
    );
    let e = errors(&text);
    assert_eq!(e.len(), 1, "{e:#?}");
    expect(
        &e[0],
        &text,
        "{ grace",
        0,
        "dependency `db` has `stop` but runs upstream",
        "remove stop",
    );
}

#[test]
fn a_write_check_after_a_dependency_fault_lives_in_faults() {
    let writes = "writes = { request = { method = \"PUT\", path = \"/items/{seq}\" }, read = { method = \"GET\", path = \"/items/{seq}\", expect_status = [200] } }\n";
    let text = FAULTS
        .replace(
            &format!("ready_within = \"15s\"\n{writes}"),
            "ready_within = \"15s\"\n",
        )
        .replace(
            "recover_within = \"2s\"\n",
            &format!("recover_within = \"2s\"\n{writes}"),
        );
    let spec = Spec::parse(&text, PATH).unwrap();
    assert!(spec.recovery.as_ref().unwrap().writes.is_none());
    assert!(spec.faults.as_ref().unwrap().writes.is_some());
    assert_eq!(spec.writes(), spec.faults.as_ref().unwrap().writes.as_ref());
    // In both tables: refused.
    let text = FAULTS.replace(
        "recover_within = \"2s\"\n",
        &format!("recover_within = \"2s\"\n{writes}"),
    );
    let e = errors(&text);
    assert_eq!(e.len(), 1, "{e:#?}");
    expect(
        &e[0],
        &text,
        "[recovery]",
        0,
        "writes is given in both [faults] and [recovery]",
        "keep one",
    );
}

#[test]
fn expectations_are_read_per_value_and_per_axis() {
    use qualify_model::fault::Verdict;
    let text = FAULTS.replace(
        "dependency = \"db\"\n",
        "dependency = \"db\"\nexpect = { \"latency(0.2s)\" = [\"unaffected\", \"degrades\", \"fails_fast\"], down = [\"fails_fast\"] }\n",
    );
    let spec = Spec::parse(&text, PATH).unwrap();
    let expected = |fault: &str| {
        spec.expectations_for(&cell(fault))
            .into_iter()
            .map(|(dep, f, e)| (dep.to_string(), f.to_string(), e))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        expected("latency(200ms)"),
        [(
            "db".to_string(),
            "latency(200ms)".to_string(),
            Some(vec![
                Verdict::Unaffected,
                Verdict::Degrades,
                Verdict::FailsFast
            ])
        )]
    );
    assert_eq!(expected("down")[0].2, Some(vec![Verdict::FailsFast]));
    assert_eq!(expected("reset")[0].2, None, "nothing stated for reset");
    assert_eq!(expected("none")[0].2, None, "none is the control");

    // One list for the whole axis: every value but the control.
    let text = FAULTS.replace(
        "dependency = \"db\"\n",
        "dependency = \"db\"\nexpect = [\"fails_fast\", \"recovers\"]\n",
    );
    let spec = Spec::parse(&text, PATH).unwrap();
    let axis = spec.axis("db_fault").unwrap();
    assert_eq!(
        axis.expected_of(&AxisValue::Text("reset".into())),
        Some(&[Verdict::FailsFast, Verdict::Recovers][..])
    );
    assert_eq!(axis.expected_of(&AxisValue::Text("none".into())), None);
}

#[test]
fn expectation_mistakes_are_located() {
    let add = |expect: &str| {
        errors_with(
            "dependency = \"db\"\n",
            &format!("dependency = \"db\"\nexpect = {expect}\n"),
        )
    };
    let one = |expect: &str, needle: &str, shift: usize, message: &str, help: &str| {
        let (text, e) = add(expect);
        assert_eq!(e.len(), 1, "{expect}: {e:#?}");
        self::expect(&e[0], &text, needle, shift, message, help);
    };
    one(
        r#"{ down = ["hang"] }"#,
        "\"hang\"",
        0,
        "fault axis `db_fault`: unknown behaviour `hang`; expected one of: ",
        "hangs: requests timed out",
    );
    one(
        r#"["control"]"#,
        "\"control\"",
        0,
        "fault axis `db_fault`: `control` is the none cell's verdict",
        "expect one of: ",
    );
    one(
        r#"{ "latency(300ms)" = ["degrades"] }"#,
        "\"latency(300ms)\"",
        0,
        "fault axis `db_fault`: `expect` names `latency(300ms)`, which is not one of its values",
        "none, latency(200ms), down, reset",
    );
    one(
        r#"{ none = ["unaffected"] }"#,
        "none = [",
        0,
        "fault axis `db_fault`: `none` is the control (no fault)",
        "compared with",
    );
    one(
        r#"{ down = [] }"#,
        "[]",
        0,
        "fault axis `db_fault`: an empty list of expected behaviours accepts nothing",
        "fails_fast",
    );
    one(
        r#"{ "latency(200ms)" = ["degrades"], "latency(0.2s)" = ["hangs"] }"#,
        "\"latency(0.2s)\"",
        0,
        "fault axis `db_fault`: a second expectation for `latency(200ms)`",
        "canonical form",
    );
    one(
        r#"{ "latency(200)" = ["degrades"] }"#,
        "\"latency(200)\"",
        0,
        "fault axis `db_fault`: `expect` names `latency(200)`, which is not a fault",
        "none, latency(200ms)",
    );
    // On another kind of axis.
    let text = format!(
        "{FAULTS}\n[[axis]]\nname = \"rps\"\nkind = \"custom\"\nvalues = [1]\nexpect = [\"hangs\"]\n"
    );
    let e = errors(&text);
    assert_eq!(e.len(), 1, "{e:#?}");
    self::expect(
        &e[0],
        &text,
        "[\"hangs\"]",
        0,
        "`expect` states behaviours under faults, but axis `rps` has kind `custom`",
        "kind = \"fault\"",
    );
}

#[test]
fn fault_objectives_are_read_and_need_a_fault_window() {
    use qualify_model::SloPhase;
    let slos = "\n[[slo]]\nmetric = \"latency_p99\"\nmax = \"300ms\"\nphase = \"fault\"\n\n[[slo]]\nmetric = \"error_rate\"\nmax = \"1%\"\nphase = \"steady\"\n";
    let spec = Spec::parse(&format!("{FAULTS}{slos}"), PATH).unwrap();
    assert_eq!(
        spec.slos.iter().map(|s| s.phase).collect::<Vec<_>>(),
        [SloPhase::Fault, SloPhase::WholeRun]
    );
    let text = format!(
        "{FAULTS}\n[[slo]]\nmetric = \"latency_p99\"\nmax = \"300ms\"\nphase = \"window\"\n"
    );
    let e = errors(&text);
    assert_eq!(e.len(), 1, "{e:#?}");
    expect(
        &e[0],
        &text,
        "\"window\"",
        0,
        "unknown [[slo]] phase `window`; expected `steady` or `fault`",
        "inside the fault window only",
    );
    // Without [faults] (and its fault axis) there is no window to judge it over.
    let plain = FAULTS
        .replace("[faults]\nwindow = [\"3s\", \"8s\"]\nrecover_within = \"2s\"\n", "")
        .replace(
            "[[axis]]\nname = \"db_fault\"\nkind = \"fault\"\nvalues = [\"none\", \"latency(200ms)\", \"down\", \"reset\"]\ndependency = \"db\"\n",
            "",
        );
    let text =
        format!("{plain}\n[[slo]]\nmetric = \"latency_p99\"\nmax = \"300ms\"\nphase = \"fault\"\n");
    let e = errors(&text);
    assert_eq!(e.len(), 1, "{e:#?}");
    expect(
        &e[0],
        &text,
        "\"fault\"\n",
        0,
        "an [[slo]] with phase = \"fault\" is judged inside the fault window, but the spec has no [faults]",
        "add [faults]",
    );
}

#[test]
fn a_dependency_runs_on_the_services_node_unless_it_asks_for_its_own() {
    let spec = Spec::parse(FAULTS, PATH).unwrap();
    assert_eq!(
        spec.dependency("db").unwrap().node,
        qualify_spec::Node::Service
    );
    let text = FAULTS.replace(
        "env = { REDIS_URL = \"redis://127.0.0.1:{proxy_port}\" }",
        "node = \"own\"\nenv = { REDIS_URL = \"redis://{proxy_host}:{proxy_port}\" }",
    );
    let spec = Spec::parse(&text, PATH).unwrap();
    let db = spec.dependency("db").unwrap();
    assert_eq!(db.node, qualify_spec::Node::Own);
    // `{proxy_host}`: the proxy's address, loopback unless the dependency's node is another.
    assert_eq!(
        db.service_env_at(&cell("down"), "10.77.0.12", 40002, 40001),
        [(
            "REDIS_URL".to_string(),
            "redis://10.77.0.12:40002".to_string()
        )]
    );
    assert_eq!(
        db.service_env(&cell("down"), 40002, 40001)[0].1,
        "redis://127.0.0.1:40002"
    );
    single(
        "ready = { tcp = true, within = \"10s\" }\nenv",
        "ready = { tcp = true, within = \"10s\" }\nnode = \"elsewhere\"\nenv",
        "\"elsewhere\"",
        0,
        "dependency `db` node `elsewhere` is unknown",
        "node = \"service\"",
    );
}
