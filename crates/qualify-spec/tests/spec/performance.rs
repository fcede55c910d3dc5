//! `[performance]`: metrics, expectations, references, repetition and their errors.

use super::{Estimator, Repeat};

const BASE: &str = r#"[artifact]
name = "sort"
command = "./sort {n} {threads}"

[claim]
level = "trial"

[[axis]]
name = "n"
kind = "workload"
values = [1024, 2048, 4096, 8192, 16384]

[[axis]]
name = "threads"
kind = "concurrency"
values = [1, 2]
"#;

fn errors(extra: &str) -> Vec<String> {
    crate::support::errors(&format!("{BASE}{extra}"))
}

/// The single error, checking it points at the last `needle`.
fn error_at(extra: &str, needle: &str, message: &str) {
    crate::support::error_at(&format!("{BASE}{extra}"), needle, message);
}

#[test]
fn defaults_and_a_full_section() {
    let spec = crate::support::valid(&format!("{BASE}[performance]\n"));
    let p = spec.performance.unwrap_or_else(|| panic!("no section"));
    assert_eq!((p.repeat, p.warmup, p.regression), (Repeat::Auto, 1, None));
    assert_eq!(
        (p.precision, p.max_repeat, p.budget, p.seed),
        (0.05, 20, None, None)
    );
    assert_eq!(p.estimator_of("cpu"), Estimator::Min);
    assert_eq!(p.estimator_of("wall"), Estimator::Median);
    assert_eq!(p.estimator_of("peak_memory"), Estimator::Median);
    let full = r#"
[performance]
repeat = 7
warmup = 0
regression = 0.05
seed = 42

[performance.estimator]
cpu = "mean"

[[performance.metric]]
name = "gflops"
regex = "GFLOP/s: ([0-9.]+)"
better = "higher"
unit = "GFLOP/s"
estimator = "min"

[[performance.expect]]
axis = "n"
metric = "wall"
max_exponent = 1.2

[[performance.expect]]
axis = "threads"
metric = "gflops"
min_efficiency = 0.6

[[performance.reference]]
params = { n = 1024, threads = 2 }
metric = "gflops"
reference = 1.5
lower = -0.1
upper = 0.1
"#;
    let spec = crate::support::valid(&format!("{BASE}{full}"));
    let p = spec.performance.unwrap_or_else(|| panic!("no section"));
    assert_eq!(
        (p.repeat, p.warmup, p.regression, p.seed),
        (Repeat::Fixed(7), 0, Some(0.05), Some(42))
    );
    assert_eq!(p.estimator_of("cpu"), Estimator::Mean);
    assert_eq!(p.estimator_of("gflops"), Estimator::Min);
    let auto = crate::support::valid(&format!(
        "{BASE}[performance]\nrepeat = \"auto\"\nprecision = 0.02\nmax_repeat = 30\nbudget = \"5m\"\n"
    ));
    let pa = auto.performance.unwrap_or_else(|| panic!("no section"));
    assert_eq!(
        (pa.repeat, pa.precision, pa.max_repeat, pa.budget),
        (
            Repeat::Auto,
            0.02,
            30,
            Some(std::time::Duration::from_secs(300))
        )
    );
    assert_eq!(p.metrics[0].better, super::Better::Higher);
    assert_eq!(p.expects[0].rule, super::ExpectRule::MaxExponent(1.2));
    assert_eq!(p.expects[1].rule, super::ExpectRule::MinEfficiency(0.6));
    assert_eq!(p.references[0].params.len(), 2);
    assert_eq!(
        p.references[0].params.iter().next().map(|(k, _)| k),
        Some("n")
    );
    assert_eq!(p.metrics[0].extract("x\nGFLOP/s: 12.5\n").ok(), Some(12.5));
    let missing = p.metrics[0]
        .extract("nothing here")
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(missing.contains("matched nothing"), "{missing}");
    // No [performance] at all.
    let spec = crate::support::valid(BASE);
    assert!(spec.performance.is_none());
}

#[test]
fn repeat_warmup_and_regression_errors() {
    error_at(
        "[performance]\nrepeat = 0\n",
        "0\n",
        "performance.repeat must be a positive integer or \"auto\"",
    );
    error_at(
        "[performance]\nrepeat = \"often\"\n",
        "\"often\"",
        "performance.repeat must be a positive integer or \"auto\", found string \"often\"",
    );
    error_at(
        "[performance]\nrepeat = 5\nprecision = 0.01\n",
        "0.01",
        "performance.precision applies to repeat = \"auto\", but repeat = 5",
    );
    error_at(
        "[performance]\nprecision = 5\n",
        "5\n",
        "performance.precision must be between 0 and 1, found 5",
    );
    error_at(
        "[performance]\nmax_repeat = 3\n",
        "3\n",
        "performance.max_repeat must be at least 5, found 3",
    );
    error_at("[performance]\nbudget = \"soon\"\n", "\"soon\"", "");
    error_at(
        "[performance]\nseed = -1\n",
        "-1",
        "performance.seed must be 0 or more",
    );
    error_at(
        "[performance.estimator]\ncpu = \"mode\"\n",
        "\"mode\"",
        "[performance.estimator]: unknown estimator `mode`",
    );
    error_at(
        "[performance.estimator]\ngflops = \"min\"\n",
        "gflops",
        "[performance.estimator]: `gflops` is not a built-in metric",
    );
    error_at(
        "[[performance.metric]]\nname = \"x\"\nregex = 'x=(1)'\nbetter = \"lower\"\nestimator = \"max\"\n",
        "\"max\"",
        "metric `x`: unknown estimator `max`",
    );
    error_at(
        "[performance]\nwarmup = -1\n",
        "-1",
        "performance.warmup must be 0 or more",
    );
    error_at(
        "[performance]\nregression = -0.1\n",
        "-0.1",
        "performance.regression must be positive",
    );
    error_at(
        "[performance]\nregression = \"10%\"\n",
        "\"10%\"",
        "performance.regression must be a number",
    );
    let e = errors("[performance]\nrepeats = 3\n");
    assert!(
        e[0].contains("unknown key `repeats` in [performance]"),
        "{e:#?}"
    );
}

#[test]
fn metric_errors() {
    let m = |name: &str, regex: &str| {
        format!(
            "[[performance.metric]]\nname = \"{name}\"\nregex = '{regex}'\nbetter = \"higher\"\n"
        )
    };
    error_at(
        &m("gflops", "GFLOP/s: ([0-9.]+"),
        "'GFLOP",
        "invalid regex for metric `gflops`",
    );
    error_at(
        &m("gflops", "GFLOP/s: [0-9.]+"),
        "'GFLOP",
        "the regex of metric `gflops` has 0 capture groups",
    );
    error_at(
        &m("gflops", "(a)(b)"),
        "'(a)",
        "the regex of metric `gflops` has 2 capture groups",
    );
    error_at(
        &m("wall", "t=([0-9]+)"),
        "\"wall\"",
        "metric `wall` is built in",
    );
    let twice = format!("{}{}", m("x", "x=([0-9]+)"), m("x", "x=([0-9]+)"));
    error_at(&twice, "\"x\"", "duplicate metric `x`");
    let e = errors("[[performance.metric]]\nname = \"x\"\nregex = 'x=(1)'\nbetter = \"more\"\n");
    assert!(e[0].contains("unknown value `more`"), "{e:#?}");
    let e = errors("[[performance.metric]]\nname = \"x\"\nregex = 'x=(1)'\n");
    assert!(e[0].contains("missing key `better`"), "{e:#?}");
}

#[test]
fn expect_errors() {
    let x = |body: &str| format!("[[performance.expect]]\n{body}\n");
    error_at(
        &x("axis = \"m\"\nmetric = \"wall\"\nmax_exponent = 1"),
        "\"m\"",
        "performance.expect: no axis named `m`",
    );
    error_at(
        &x("axis = \"n\"\nmetric = \"gflops\"\nmax_exponent = 1"),
        "\"gflops\"",
        "performance.expect: unknown metric `gflops`",
    );
    error_at(
        &x("axis = \"n\"\nmetric = \"wall\""),
        "\"n\"",
        "performance.expect needs max_exponent or min_efficiency",
    );
    error_at(
        &x("axis = \"n\"\nmetric = \"wall\"\nmax_exponent = 1\nmin_efficiency = 0.5"),
        "0.5",
        "performance.expect takes max_exponent or min_efficiency, not both",
    );
    error_at(
        &x("axis = \"threads\"\nmetric = \"wall\"\nmax_exponent = 1"),
        "1\n",
        "max_exponent needs a workload axis; `threads` is a concurrency axis",
    );
    error_at(
        &x("axis = \"n\"\nmetric = \"wall\"\nmin_efficiency = 0.5"),
        "0.5",
        "min_efficiency needs a concurrency axis; `n` is a workload axis",
    );
    error_at(
        &x("axis = \"threads\"\nmetric = \"wall\"\nmin_efficiency = 1.5"),
        "1.5",
        "min_efficiency must be in (0, 1]",
    );
    error_at(
        &x("axis = \"n\"\nmetric = \"wall\"\nmax_exponent = -1"),
        "-1",
        "max_exponent must be 0 or more",
    );
    error_at(
        &x("axis = \"n\"\nmetric = \"wall\"\nmax_exponent = \"2\""),
        "\"2\"",
        "max_exponent must be a number",
    );
}

#[test]
fn reference_errors() {
    let r = |params: &str, lower: &str, upper: &str| {
        format!(
            "[[performance.reference]]\nparams = {params}\nmetric = \"wall\"\nreference = 1.5\nlower = {lower}\nupper = {upper}\n"
        )
    };
    error_at(
        &r("{ m = 1024 }", "-0.1", "0.1"),
        "m = ",
        "performance.reference: no axis named `m`",
    );
    error_at(
        &r("{ n = 1000 }", "-0.1", "0.1"),
        "1000",
        "`1000` is not a value of axis `n`",
    );
    error_at(
        &r("{ n = 1024 }", "0.2", "0.1"),
        "0.2",
        "lower (0.2) is greater than upper (0.1)",
    );
    error_at(
        &r("{ n = 1024 }", "0.05", "0.1"),
        "0.05",
        "lower must be between -1 and 0",
    );
    error_at(
        &r("{ n = 1024 }", "-2", "0.1"),
        "-2",
        "lower must be between -1 and 0",
    );
    error_at(
        &r("{ n = 1024 }", "-0.3", "-0.2"),
        "-0.2",
        "upper must be 0 or more",
    );
    error_at(
        &r("{ n = 1024 }", "-0.1", "\"a\""),
        "\"a\"",
        "upper must be a number",
    );
    error_at(
        &r("{}", "-0.1", "0.1"),
        "\"wall\"",
        "performance.reference: params is empty",
    );
    let unknown = r("{ n = 1024 }", "-0.1", "0.1").replace("\"wall\"", "\"gflops\"");
    error_at(
        &unknown,
        "\"gflops\"",
        "performance.reference: unknown metric `gflops`",
    );
    let e = errors(
        "[[performance.reference]]\nparams = { n = 1024 }\nmetric = \"wall\"\nreference = 1.5\nlower = -0.1\n",
    );
    assert!(e[0].contains("missing key `upper`"), "{e:#?}");
}

/// A service spec: `[service]` and `[load]` at the rate of a load axis, a workers axis.
const SERVICE: &str = r#"[artifact]
name = "orders"
command = ["./orders", "--port", "{port}", "--workers", "{workers}"]

[claim]
level = "trial"

[service]
ready = { http = "/healthz", within = "10s" }

[load]
rate = "{rps}"
duration = "2s"

[[load.request]]
path = "/orders/{seq}"

[[axis]]
name = "workers"
kind = "concurrency"
values = [1, 2]

[[axis]]
name = "rps"
kind = "load"
values = [100, 200]
"#;

#[test]
fn service_metrics_are_built_in_for_a_service_only() {
    let judged = r#"
[performance]
repeat = 3

[performance.estimator]
latency_p99 = "mean"

[[performance.expect]]
axis = "workers"
metric = "throughput"
min_efficiency = 0.8

[[performance.reference]]
params = { workers = 2, rps = 200 }
metric = "latency_p99"
reference = 0.05
lower = -1
upper = 1
"#;
    let spec = crate::support::valid(&format!("{SERVICE}{judged}"));
    let p = spec.performance.unwrap_or_else(|| panic!("no section"));
    assert!(p.service);
    for (name, _, _) in super::SERVICE_METRICS {
        assert!(p.has_metric(name), "{name}");
    }
    assert_eq!(p.estimator_of("latency_p99"), Estimator::Mean);
    assert_eq!(p.estimator_of("throughput"), Estimator::Median);
    // The names are the [[slo]] metrics', plus achieved_rate.
    for m in qualify_model::SloMetric::ALL {
        assert!(super::is_service_metric(m.as_str()), "{m}");
    }
    assert!(super::is_service_metric("achieved_rate"));

    // Without [service]: located errors that say why, in every place a metric is named.
    let batch = crate::support::valid(&format!("{BASE}[performance]\n"));
    assert!(
        !batch
            .performance
            .is_some_and(|p| p.service || p.has_metric("throughput"))
    );
    error_at(
        "[[performance.expect]]\naxis = \"threads\"\nmetric = \"throughput\"\nmin_efficiency = 0.5\n",
        "\"throughput\"",
        "performance.expect: `throughput` is a service metric, measured only when the spec has [service]",
    );
    error_at(
        "[[performance.reference]]\nparams = { n = 1024 }\nmetric = \"latency_p99\"\nreference = 0.1\nlower = -0.5\nupper = 0.5\n",
        "\"latency_p99\"",
        "performance.reference: `latency_p99` is a service metric, measured only when the spec has [service]",
    );
    error_at(
        "[performance.estimator]\nlatency_p99 = \"min\"\n",
        "latency_p99",
        "[performance.estimator]: `latency_p99` is not a built-in metric of a spec without [service]",
    );
    // A regex metric may take a service metric's name in a batch spec, not in a service's.
    crate::support::valid(&format!(
        "{BASE}[[performance.metric]]\nname = \"throughput\"\nregex = \"ops: ([0-9]+)\"\nbetter = \"higher\"\n"
    ));
    let clash = format!(
        "{SERVICE}[[performance.metric]]\nname = \"throughput\"\nregex = \"ops: ([0-9]+)\"\nbetter = \"higher\"\n"
    );
    crate::support::error_at(
        &clash,
        "\"throughput\"",
        "metric `throughput` is built in for a service",
    );
    // Parallel efficiency of a share of failures is never meaningful.
    let rate = format!(
        "{SERVICE}[[performance.expect]]\naxis = \"workers\"\nmetric = \"error_rate\"\nmin_efficiency = 0.5\n"
    );
    crate::support::error_at(
        &rate,
        "\"workers\"\nmetric",
        "min_efficiency of `error_rate` is never meaningful",
    );
}
