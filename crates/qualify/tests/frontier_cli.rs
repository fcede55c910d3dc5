//! The capacity frontier, end to end on services of known capacity: a boundary search over the
//! offered rate crossed with a standing fault (a pool of 4 Redis connections, Redis held 50 ms
//! slower for the whole load: Little's law caps it at 4 ÷ 0.05 s = 80 req/s) and crossed with
//! two memory ceilings (a service that keeps 512 KiB per request: the smaller ceiling is
//! reached at any rate). Each capacity is asserted against what the arithmetic allows, and the
//! frontier is read where the user reads it (receipt, terminal, Markdown, HTML).

use std::path::Path;
use std::process::Command;

use serde_json::Value;

#[allow(unused_macros)]
mod common;

const QUALIFY: &str = env!("CARGO_BIN_EXE_qualify");

fn have_redis() -> bool {
    let found = Command::new("redis-server")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        assert!(
            std::env::var_os("QUALIFY_REQUIRE_REDIS").is_none(),
            "QUALIFY_REQUIRE_REDIS is set but redis-server is not installed"
        );
        common::skip_note("frontier_cli", "redis-server is not installed");
    }
    found
}

/// `qualify run` of `spec` in `dir` (one load at a time), with its terminal output and receipt.
fn run(dir: &Path, spec: &str) -> (i32, String, Value) {
    let _one_at_a_time = common::cpu_heavy();
    std::fs::write(dir.join("qualify.toml"), spec).expect("write spec");
    let o = Command::new(QUALIFY)
        .current_dir(dir)
        .args(["run", "qualify.toml", "--no-ledger", "--receipt", "r.json"])
        .output()
        .expect("run qualify");
    let text = format!(
        "exit {:?}\n--- stdout ---\n{}\n--- stderr ---\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let receipt: Value = std::fs::read_to_string(dir.join("r.json"))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_else(|| panic!("no receipt\n{text}"));
    (o.status.code().unwrap_or(-1), text, receipt)
}

/// The frontier's row whose condition `axis` is `value`.
fn row<'a>(frontier: &'a Value, axis: &str, value: &str) -> &'a Value {
    frontier["rows"]
        .as_array()
        .and_then(|rows| rows.iter().find(|r| r["conditions"][axis] == value))
        .unwrap_or_else(|| panic!("no frontier row {axis}={value}: {frontier}"))
}

#[test]
fn a_standing_latency_fault_lowers_capacity_as_littles_law_predicts() {
    if !have_redis() {
        return;
    }
    let d = common::test_dir("frontier_cli", "standing");
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/deps");
    std::fs::copy(
        example.join("cache_service.py"),
        d.0.join("cache_service.py"),
    )
    .expect("copy the service");
    let spec = std::fs::read_to_string(example.join("frontier.toml"))
        .expect("the example")
        .replace("duration = \"3s\"", "duration = \"2s\"")
        .replace("warmup = \"1s\"", "warmup = \"0.5s\"")
        .replace("range = [20, 400]", "range = [40, 160]");
    let (code, text, r) = run(&d.0, &spec);
    assert_eq!(
        code, 1,
        "cells beyond the capacity fail the envelope: {text}"
    );
    let f = &r["predicate"]["frontier"];
    assert_eq!(f["axis"], "rps", "{text}");
    assert_eq!(f["over"], serde_json::json!(["cache_fault"]), "{f}");
    let slow = row(f, "cache_fault", "latency(50ms)");
    let held = slow["holds_up_to"].as_f64().unwrap_or(0.0);
    let failed = slow["fails_from"]
        .as_f64()
        .unwrap_or_else(|| panic!("the slowed pool fails within the range: {slow}\n{text}"));
    // 4 connections, each busy 50 ms per request: at most 80 requests a second get through,
    // so nothing above holds and the queue grows from there on.
    assert!(held <= 80.0, "held {held} req/s, above 4 ÷ 0.05 s: {slow}");
    assert!(
        (60.0..=100.0).contains(&failed),
        "fails from {failed} req/s: the edge lies at the pool's 80 req/s: {slow}\n{text}"
    );
    assert!(held >= 40.0, "held only {held} req/s: {slow}\n{text}");
    // Without the fault the same pool carries more than it did with it.
    let clean = row(f, "cache_fault", "none");
    let clean_held = clean["holds_up_to"].as_f64().unwrap_or(0.0);
    assert!(
        clean_held >= failed,
        "without the fault it held {clean_held} req/s, not more than the {failed} that failed with it: {f}"
    );
    // Probes went near the edges, not over the whole grid (7 rates × 2 faults × 2 runs).
    let probes = f["probes"].as_u64().unwrap_or(u64::MAX);
    assert!(probes < 28, "{probes} probes: {f}");
    // Where the user reads it.
    assert!(text.contains("capacity frontier:"), "{text}");
    assert!(
        text.contains(f["sentence"].as_str().unwrap_or("?")),
        "the terminal says the sentence: {text}"
    );
    let md = Command::new(QUALIFY)
        .args(["report", "--markdown"])
        .arg(d.0.join("r.json"))
        .output()
        .expect("qualify report");
    let md = String::from_utf8_lossy(&md.stdout);
    assert!(
        md.contains("### Capacity frontier") && md.contains("| cache_fault | holds up to |"),
        "{md}"
    );
    let html_path = d.0.join("r.html");
    let html = Command::new(QUALIFY)
        .args(["report", "--html"])
        .arg(&html_path)
        .arg(d.0.join("r.json"))
        .output()
        .expect("qualify report --html");
    assert!(html.status.success(), "{html:?}");
    let html = std::fs::read_to_string(&html_path).expect("the HTML report");
    assert!(
        html.contains("<h2>Capacity frontier</h2>")
            && html.contains("aria-label=\"capacity per condition\""),
        "the HTML draws the frontier"
    );
}

#[test]
fn memory_ceilings_give_one_capacity_each_and_the_smaller_one_ooms() {
    let d = common::test_dir("frontier_cli", "memory");
    let spec = format!(
        r#"[artifact]
name = "keeper"
command = ["python3", "{py}", "{{port}}", "leak", "512"]

[claim]
level = "trial"

[functional]
command = "true"

[limits]
timeout = "60s"

[service]
ready = {{ http = "/", within = "10s" }}
stop = {{ signal = "SIGTERM", grace = "1s" }}

[load]
rate = "{{rps}}"
duration = "2s"
warmup = "0.5s"
timeout = "1s"
max_in_flight = 32

[[load.request]]
path = "/x/{{seq}}"

[[slo]]
metric = "latency_p99"
max = "500ms"

[[axis]]
name = "memory"
kind = "memory"
values = ["32MiB", "512MiB"]

[[axis]]
name = "rps"
kind = "load"
range = [20, 80]
step = 20
search = "boundary"
"#,
        py = common::py("service.py")
    );
    let (code, text, r) = run(&d.0, &spec);
    assert_eq!(code, 1, "{text}");
    let f = &r["predicate"]["frontier"];
    assert_eq!(f["over"], serde_json::json!(["memory"]), "{f}\n{text}");
    // 512 KiB per request: 20 req/s for 2.5 s keeps ~25 MiB beside Python's own ~10 MiB, so the
    // 32 MiB ceiling is reached even at the lowest rate; 80 req/s keeps ~100 MiB, far below
    // 512 MiB.
    let small = f["rows"]
        .as_array()
        .and_then(|rows| rows.iter().find(|r| r["holds_up_to"].is_null()))
        .unwrap_or_else(|| panic!("a row that held nowhere: {f}\n{text}"));
    assert_eq!(small["fails_from"], 20.0, "{small}");
    assert_eq!(small["beyond"], "oom_killed", "{small}\n{text}");
    let large = f["rows"]
        .as_array()
        .and_then(|rows| rows.iter().find(|r| !r["holds_up_to"].is_null()))
        .unwrap_or_else(|| panic!("a row that held: {f}\n{text}"));
    assert!(
        large["holds_up_to"].as_f64().unwrap_or(0.0) >= 40.0,
        "{large}\n{text}"
    );
    assert!(
        f["sentence"]
            .as_str()
            .is_some_and(|s| s.contains("not even 20 req/s") && s.contains("oom_killed")),
        "{f}"
    );
}
