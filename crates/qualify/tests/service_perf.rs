//! Service metrics in `[performance]`: `qualify run` on a real service (the corpus's
//! `service.py`) with `[performance]` measures each run's throughput, achieved rate, corrected
//! latencies and error and dropped rates from its load report, and the analysis receives them
//! as built-in metrics with their unit and direction — statistics per cell and the checks that
//! name them; overloaded cells are repeated too (their throughput is the capacity an `expect`
//! along a workers axis judges). A few seconds of load each.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

#[allow(unused_macros)]
mod common;

const QUALIFY: &str = env!("CARGO_BIN_EXE_qualify");

const METRICS: [(&str, &str, &str); 9] = [
    ("throughput", "req/s", "higher"),
    ("achieved_rate", "req/s", "higher"),
    ("latency_p50", "s", "lower"),
    ("latency_p90", "s", "lower"),
    ("latency_p99", "s", "lower"),
    ("latency_p999", "s", "lower"),
    ("latency_max", "s", "lower"),
    ("error_rate", "fraction", "lower"),
    ("dropped_rate", "fraction", "lower"),
];

/// The value of `metric` in one run's `result.load`, computed independently of qualify's code.
fn from_load(load: &Value, metric: &str) -> f64 {
    let f = |v: &Value| v.as_f64().unwrap_or_else(|| panic!("{metric}: {load}"));
    let n = |k: &str| load[k].as_u64().unwrap_or_else(|| panic!("{k}: {load}")) as f64;
    let errors: f64 = load["errors"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_u64().unwrap() as f64)
        .sum();
    match metric {
        "throughput" | "achieved_rate" => f(&load[metric]),
        "error_rate" => errors / n("sent"),
        "dropped_rate" => n("dropped") / (n("sent") + n("dropped")),
        latency => {
            let q = latency.trim_start_matches("latency_");
            f(&load["latency"]["corrected"][q])
        }
    }
}

#[test]
fn service_metrics_reach_the_performance_analysis_from_each_runs_load() {
    let d = common::test_dir("service_perf", "metrics");
    let dir: &Path = d.0.as_path();
    let spec = format!(
        r#"[artifact]
name = "svc"
command = ["python3", "{py}", "{{port}}", "ok", "1"]

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
duration = "1s"
timeout = "1s"
max_in_flight = 32

[[load.request]]
path = "/x/{{seq}}"

[[axis]]
name = "rps"
kind = "load"
values = [40]

[performance]
repeat = 3
warmup = 0

[performance.estimator]
latency_p99 = "mean"

[[performance.reference]]
params = {{ rps = 40 }}
metric = "throughput"
reference = 40
lower = -0.5
upper = 0.5

[[performance.reference]]
params = {{ rps = 40 }}
metric = "latency_p99"
reference = 0.5
lower = -1
upper = 1
"#,
        py = common::py("service.py")
    );
    std::fs::write(dir.join("qualify.toml"), spec).unwrap();
    let o = Command::new(QUALIFY)
        .current_dir(dir)
        .args(["run", "qualify.toml", "--no-ledger", "--receipt", "r.json"])
        .output()
        .expect("run qualify");
    let context = format!(
        "exit {:?}\n--- stdout ---\n{}\n--- stderr ---\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let receipt: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("r.json")).expect(&context))
            .unwrap();
    let p = &receipt["predicate"];
    let cell = &p["cells"][0];
    assert_eq!(cell["result"]["outcome"], "ok", "{context}\n{cell}");
    let runs = cell["result"]["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), 3, "three rounds: {context}");
    let perf = &p["performance"];
    assert!(
        perf["errors"].as_array().is_some_and(Vec::is_empty),
        "no measurement error: {}",
        perf["errors"]
    );

    // Declared with their unit and direction (and the estimator the spec chose).
    for (name, unit, better) in METRICS {
        let def = perf["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == name)
            .unwrap_or_else(|| panic!("metric {name} not declared: {}", perf["metrics"]));
        assert_eq!(def["unit"], unit, "{def}");
        assert_eq!(def["better"], better, "{def}");
    }
    // Per cell: one value per run, each the run's own load figure, in round order.
    for (name, _, _) in METRICS {
        let stat = perf["stats"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["metric"] == name)
            .unwrap_or_else(|| panic!("no stats for {name}: {}", perf["stats"]));
        assert_eq!(stat["n"], 3, "{name}: {stat}");
        let values: Vec<f64> = stat["values"]
            .as_array()
            .unwrap_or_else(|| panic!("{name}: {stat}"))
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect();
        let expected: Vec<f64> = runs.iter().map(|r| from_load(&r["load"], name)).collect();
        assert_eq!(values, expected, "{name}: {stat}");
    }
    let p99 = perf["stats"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["metric"] == "latency_p99")
        .unwrap();
    assert_eq!(p99["estimator"], "mean", "{p99}");
    // The references judge them: each check names its metric and estimator.
    for (metric, estimator) in [("throughput", "median"), ("latency_p99", "mean")] {
        let check = perf["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["metric"] == metric)
            .unwrap_or_else(|| panic!("no check on {metric}: {}", perf["checks"]));
        assert_eq!(check["estimator"], estimator, "{check}");
        assert!(
            ["held", "violated", "inconclusive"].contains(&check["verdict"].as_str().unwrap_or("")),
            "{check}"
        );
    }
}

/// The orders example offered more than either worker count can take: both cells end
/// `overloaded`, the rounds repeat them anyway (their throughput is the capacity), and a
/// `min_efficiency` expectation on `throughput` along `workers` is judged from those runs.
#[test]
fn throughput_of_overloaded_cells_is_measured_in_every_round_and_scaled_along_workers() {
    let d = common::test_dir("service_perf", "capacity");
    let dir: &Path = d.0.as_path();
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/orders");
    std::fs::copy(example.join("orders.py"), dir.join("orders.py")).unwrap();
    let spec = r#"[artifact]
name = "orders"
command = ["python3", "orders.py", "--port", "{port}", "--workers", "{workers}", "--service-time", "0.01"]

[claim]
level = "trial"

[limits]
timeout = "60s"

[service]
ready = { http = "/healthz", within = "10s" }
stop = { signal = "SIGTERM", grace = "2s" }

[load]
rate = "{rps}"
duration = "1s"
timeout = "2s"
max_in_flight = 16

[[load.request]]
method = "POST"
path = "/orders/{seq}"
body = '{"id": {seq}}'
expect_status = [201]

[[axis]]
name = "workers"
kind = "concurrency"
values = [1, 2]

[[axis]]
name = "rps"
kind = "load"
values = [400]

[performance]
repeat = 2
warmup = 0

[[performance.expect]]
axis = "workers"
metric = "throughput"
min_efficiency = 0.5
"#;
    std::fs::write(dir.join("qualify.toml"), spec).unwrap();
    let o = Command::new(QUALIFY)
        .current_dir(dir)
        .args(["run", "qualify.toml", "--no-ledger", "--receipt", "r.json"])
        .output()
        .expect("run qualify");
    let context = format!(
        "exit {:?}\n--- stdout ---\n{}\n--- stderr ---\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let receipt: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("r.json")).expect(&context))
            .unwrap();
    let p = &receipt["predicate"];
    let perf = &p["performance"];
    for cell in p["cells"].as_array().unwrap() {
        assert_eq!(cell["result"]["outcome"], "overloaded", "{context}\n{cell}");
        let runs = cell["result"]["runs"].as_array().expect("runs");
        assert_eq!(runs.len(), 2, "an overloaded cell is repeated: {cell}");
        let stat = perf["stats"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["metric"] == "throughput" && s["params"] == cell["params"])
            .unwrap_or_else(|| panic!("no throughput stats for {}", cell["params"]));
        assert_eq!(stat["n"], 2, "{stat}");
    }
    let scaling = perf["scaling"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["axis"] == "workers" && s["metric"] == "throughput")
        .unwrap_or_else(|| panic!("no scaling of throughput: {}", perf["scaling"]));
    assert_eq!(
        scaling["points"].as_array().map(Vec::len),
        Some(2),
        "{scaling}"
    );
    let check = perf["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["metric"] == "throughput")
        .unwrap_or_else(|| panic!("no throughput check: {}", perf["checks"]));
    assert_eq!(check["kind"], "min_efficiency", "{check}");
    assert!(
        ["held", "violated", "inconclusive"].contains(&check["verdict"].as_str().unwrap_or("")),
        "{check}"
    );
}
