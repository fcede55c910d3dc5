//! `qualify run` with `[performance]` on real programs of known complexity
//! (`examples/perf/complexity.c`): recovered exponents, checks turned into the performance
//! layer's verdict, rounds (seeded, auto repeats up to a maximum, failing cells not repeated),
//! estimators, censored runs, `--baseline`, and spec errors.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

const QUALIFY: &str = env!("CARGO_BIN_EXE_qualify");

#[allow(unused_macros)]
mod common;

/// A fresh directory holding a copy of complexity.c and the given spec as qualify.toml.
fn workspace(name: &str, spec: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("perf")
        .join(format!("{name}.{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create workspace");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/perf/complexity.c");
    std::fs::copy(&src, dir.join("complexity.c")).expect("copy complexity.c");
    std::fs::write(dir.join("qualify.toml"), spec).expect("write spec");
    dir
}

fn run(dir: &Path, extra: &[&str]) -> Output {
    Command::new(QUALIFY)
        .current_dir(dir)
        .args(["run", "qualify.toml", "--receipt", "receipt.json"])
        .args(extra)
        .output()
        .expect("run qualify")
}

fn receipt(dir: &Path) -> Value {
    let text = std::fs::read_to_string(dir.join("receipt.json")).expect("receipt written");
    serde_json::from_str(&text).expect("receipt is JSON")
}

fn spec(mode: &str, values: &str, perf: &str) -> String {
    format!(
        r#"[artifact]
name = "{mode}"
command = "./complexity {mode} {{n}}"
build = "cc -O2 -o complexity complexity.c"

[claim]
level = "trial"

[limits]
timeout = "30s"

[[axis]]
name = "n"
kind = "workload"
values = {values}

[performance]
{perf}

[[performance.metric]]
name = "work"
regex = "work: ([0-9]+)"
better = "lower"
"#
    )
}

fn model<'a>(perf: &'a Value, metric: &str) -> &'a Value {
    perf["models"]
        .as_array()
        .and_then(|ms| ms.iter().find(|m| m["metric"] == metric))
        .unwrap_or_else(|| panic!("no model of {metric}: {:#}", perf["unfitted"]))
}

fn exponent(perf: &Value, metric: &str) -> f64 {
    model(perf, metric)["exponent"].as_f64().expect("exponent")
}

#[test]
fn exponents_of_linear_and_quadratic_programs_are_recovered() {
    let cases = [
        (
            "linear",
            "[4000000, 8000000, 16000000, 32000000, 64000000, 128000000]",
            1.0,
            "1.3",
            "closed",
        ),
        (
            "quadratic",
            "[2000, 2828, 4000, 5657, 8000, 11314]",
            2.0,
            "1.5",
            "failed",
        ),
    ];
    for (mode, values, truth, limit, status) in cases {
        let perf_section = format!(
            "repeat = 3\nwarmup = 1\n\n[[performance.expect]]\naxis = \"n\"\nmetric = \"work\"\nmax_exponent = {limit}\n"
        );
        let dir = workspace(mode, &spec(mode, values, &perf_section));
        let out = run(&dir, &[]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let r = receipt(&dir);
        let perf = &r["predicate"]["performance"];
        assert_eq!(perf["repeat"], 3);
        assert_eq!(perf["rounds"]["rounds"], 3, "{:#}", perf["rounds"]);
        // 6 cells × (wall, cpu, peak_memory, work), 3 measured runs each.
        let stats = perf["stats"].as_array().expect("stats");
        assert_eq!(stats.len(), 24);
        assert!(
            stats.iter().all(|s| s["n"] == 3 && s["censored"] == 0),
            "{stats:#?}"
        );
        assert!(
            stats
                .iter()
                .all(|s| s["ci95"].is_array() && s["values"].as_array().map(Vec::len) == Some(3))
        );
        // The operation count is exact: its model is the true exponent.
        assert_eq!(exponent(perf, "work"), truth, "{:#}", model(perf, "work"));
        // CPU time: within ±0.2 of the true exponent.
        let cpu = exponent(perf, "cpu");
        assert!(
            (cpu - truth).abs() <= 0.2,
            "{mode}: cpu exponent {cpu}, model {:#}",
            model(perf, "cpu")
        );
        // The check decides the layer.
        let layer = &r["predicate"]["layers"]["performance"];
        assert_eq!(layer["status"], status, "{mode}: {layer:#}");
        if status == "failed" {
            let summary = layer["summary"].as_str().unwrap_or("");
            assert!(
                summary.contains("max_exponent") && summary.contains("limit 1.5"),
                "{summary}"
            );
        }
        assert!(stdout.contains("model    cpu along n:"), "{stdout}");
        assert!(stdout.contains("check    max_exponent"), "{stdout}");
    }
}

#[test]
fn auto_repeats_run_seeded_rounds_and_every_statistic_names_its_estimator() {
    // A wall-time precision of 0.1% no millisecond program reaches: every measured cell goes on
    // to max_repeat = 6 rounds unless it happened to be that precise; n = 0 fails (the
    // program refuses it) and is never repeated.
    let perf_section = "seed = 42\nmax_repeat = 6\nprecision = 0.001\nwarmup = 0\n\n[[performance.expect]]\naxis = \"n\"\nmetric = \"wall\"\nmax_exponent = 3\n";
    let values = "[0, 100000, 200000, 400000, 800000, 1600000]";
    let dir = workspace("rounds", &spec("linear", values, perf_section));
    let out = run(&dir, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("seed 42"), "{stderr}");
    let r = receipt(&dir);
    let perf = &r["predicate"]["performance"];
    assert_eq!(perf["repeat"], "auto");
    let rounds = &perf["rounds"];
    assert_eq!(rounds["seed"], 42, "{rounds:#}");
    assert_eq!(rounds["precision"], 0.001);
    assert_eq!(rounds["precision_metrics"], serde_json::json!(["wall"]));
    let ran = rounds["rounds"].as_u64().expect("rounds");
    assert!((5..=6).contains(&ran), "{rounds:#}");
    let stopped = rounds["stopped"].as_str().unwrap_or("");
    assert!(
        stopped.contains("max_repeat reached") || stopped.contains("every cell reached"),
        "{stopped}"
    );
    assert!(
        rounds["schedule"]
            .as_str()
            .unwrap_or("")
            .contains("shuffle")
    );
    // Every metric and every statistic names its estimator: min for cpu, median otherwise.
    for m in perf["metrics"].as_array().expect("metrics") {
        let want = if m["name"] == "cpu" { "min" } else { "median" };
        assert_eq!(m["estimator"], want, "{m:#}");
    }
    let stats = perf["stats"].as_array().expect("stats");
    for s in stats.iter().filter(|s| s["params"]["n"] != 0) {
        let want = if s["metric"] == "cpu" {
            "min"
        } else {
            "median"
        };
        assert_eq!(s["estimator"], want, "{s:#}");
        let n = s["n"].as_u64().unwrap_or(0);
        // At least 5 rounds; a cell stops early only once it is precise.
        assert!((5..=6).contains(&n), "{s:#}");
        let rounds_of_runs: Vec<u64> = s["rounds"]
            .as_array()
            .map(|a| a.iter().filter_map(|x| x.as_u64()).collect())
            .unwrap_or_default();
        assert_eq!(rounds_of_runs, (1..=n).collect::<Vec<_>>(), "{s:#}");
        if s["metric"] == "wall" {
            let precise = s["precision"].as_f64().is_some_and(|p| p <= 0.001);
            assert_eq!(s["precision_reached"], precise, "{s:#}");
            if n < ran {
                assert!(precise, "stopped early without the precision: {s:#}");
            }
        }
    }
    // The failing cell ran once: a failure is not repeated.
    let zero = r["predicate"]["cells"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["params"]["n"] == 0))
        .expect("cell n=0");
    assert_ne!(zero["result"]["outcome"], "ok", "{zero:#}");
    assert!(
        zero["result"]["runs"]
            .as_array()
            .is_none_or(|runs| runs.len() <= 1),
        "{zero:#}"
    );
    // Noise per metric and round; the check names its estimator and plausible terms.
    let noise = perf["noise"].as_array().expect("noise");
    let wall_noise = noise
        .iter()
        .find(|n| n["metric"] == "wall")
        .expect("wall noise");
    assert_eq!(
        wall_noise["rounds"].as_array().map(Vec::len),
        Some(ran as usize),
        "{wall_noise:#}"
    );
    let check = &perf["checks"][0];
    assert_eq!(check["estimator"], "median", "{check:#}");
    assert!(
        check["plausible"].as_array().is_some_and(|p| !p.is_empty()),
        "{check:#}"
    );
    // The whole receipt and what the run printed: a batch run with performance rounds.
    common::assert_receipt_golden("pinned_perf_receipt", &r);
    common::assert_transcript(
        "pinned_perf",
        &dir,
        &String::from_utf8_lossy(&out.stdout),
        &stderr,
        // The fitted models, their noise and verdicts (the layer's too), and why the rounds
        // stopped follow the machine's timing: those lines are left out.
        &[
            "model ",
            "noise ",
            "check ",
            "round(s)",
            "performance closed",
            "performance partial",
            "performance failed",
        ],
    );
}

#[test]
fn timed_out_runs_are_censored_and_a_baseline_is_compared() {
    let perf_section = "repeat = 3\nwarmup = 0\nregression = 0.5\n";
    let mut text = spec("quadratic", "[1000, 2000, 40000]", perf_section);
    // The stall window must be shorter than the deadline (a spec error otherwise).
    text = text.replace(
        "timeout = \"30s\"",
        "timeout = \"300ms\"\nstall = \"250ms\"",
    );
    // The build runs under the spec's limits too: compile outside so a loaded machine's slow
    // `cc` does not hit the 300 ms deadline meant for the cells.
    text = text.replace("build = \"cc -O2 -o complexity complexity.c\"\n", "");
    let dir = workspace("censored", &text);
    let cc = Command::new("cc")
        .current_dir(&dir)
        .args(["-O2", "-o", "complexity", "complexity.c"])
        .status()
        .expect("run cc");
    assert!(cc.success(), "cc failed");
    let out = run(&dir, &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let r = receipt(&dir);
    let perf = &r["predicate"]["performance"];
    let big = perf["stats"]
        .as_array()
        .and_then(|s| {
            s.iter()
                .find(|s| s["params"]["n"] == 40000 && s["metric"] == "wall")
        })
        .expect("stats of n=40000");
    assert_eq!(big["n"], 0, "{big:#}");
    // It timed out in round 1 and, like any cell that did not end ok, was not repeated.
    assert_eq!(big["censored"], 1, "{big:#}");
    assert!(big["median"].is_null());
    let at = big["censored_at"].as_array().expect("censored_at");
    assert!(
        at.iter().all(|v| v.as_f64().is_some_and(|s| s >= 0.29)),
        "{big:#}"
    );
    // Too few points for a model, and the layer says why.
    let reason = perf["unfitted"][0]["reason"].as_str().unwrap_or("");
    assert!(reason.contains("censored"), "{reason}");
    assert_eq!(r["predicate"]["layers"]["performance"]["status"], "partial");
    assert!(stdout.contains("did not finish"), "{stdout}");

    // The same run again, against the first receipt.
    std::fs::rename(dir.join("receipt.json"), dir.join("before.json")).expect("keep receipt");
    let out = run(&dir, &["--baseline", "before.json"]);
    assert!(
        out.status.code() != Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = receipt(&dir);
    let b = &r["predicate"]["performance"]["baseline"];
    assert_eq!(b["receipt"].as_str().map(str::len), Some(64));
    let changes = b["changes"].as_array().expect("changes");
    // n = 1000 and 2000 × 4 metrics; the censored cell has no median to compare.
    assert_eq!(changes.len(), 8, "{changes:#?}");
    let work = changes
        .iter()
        .find(|c| c["metric"] == "work")
        .expect("work change");
    assert_eq!(work["ratio"], 1.0);
    assert_eq!(work["significant"], false);
    let checks = r["predicate"]["performance"]["checks"]
        .as_array()
        .expect("checks");
    assert!(checks.iter().any(|c| c["kind"] == "baseline"
        && c["metric"] == "work"
        && c["passed"] == true
        && c["samples"] == 3));
}

#[test]
fn usage_errors_exit_2_and_name_the_place() {
    let bad = spec("linear", "[1, 2]", "repeat = 3").replace("work: ([0-9]+)", "work: [0-9]+");
    let dir = workspace("bad-regex", &bad);
    let out = run(&dir, &[]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr
            .contains("qualify.toml:22:9: error: the regex of metric `work` has 0 capture groups"),
        "{stderr}"
    );
    let dir = workspace("no-baseline", &spec("linear", "[1, 2]", "repeat = 1"));
    let out = run(&dir, &["--baseline", "missing.json"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--baseline missing.json: cannot read the receipt"),
        "{stderr}"
    );
}

#[test]
fn a_metric_that_does_not_parse_is_an_error_of_the_cell_not_a_zero() {
    let text = spec("linear", "[1000]", "repeat = 2\nwarmup = 0")
        .replace("work: ([0-9]+)", "flops: ([0-9]+)");
    let dir = workspace("unparsed", &text);
    let out = run(&dir, &[]);
    assert_ne!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = receipt(&dir);
    let perf = &r["predicate"]["performance"];
    let errors = perf["errors"].as_array().expect("errors");
    assert_eq!(errors.len(), 2, "{errors:#?}");
    assert!(
        errors[0]["message"]
            .as_str()
            .unwrap_or("")
            .contains("matched nothing"),
        "{errors:#?}"
    );
    let work = perf["stats"]
        .as_array()
        .and_then(|s| s.iter().find(|s| s["metric"] == "work"))
        .expect("work stats");
    assert_eq!(work["n"], 0);
    assert!(work["median"].is_null());
    assert_eq!(r["predicate"]["layers"]["performance"]["status"], "partial");
}

#[test]
fn a_concurrency_axis_gets_scaling_and_a_prediction_at_the_target() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("perf")
        .join(format!("threads.{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create workspace");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/sumsq/sumsq.c");
    std::fs::copy(&src, dir.join("sumsq.c")).expect("copy sumsq.c");
    let text = r#"[artifact]
name = "sumsq"
command = "./sumsq --threads {threads} --n 3000000"
build = "cc -O2 -pthread -o sumsq sumsq.c"

[claim]
level = "trial"

[target]
cores = 192

[[axis]]
name = "threads"
kind = "concurrency"
values = [1, 2]

[performance]
repeat = 3
warmup = 0

[[performance.expect]]
axis = "threads"
metric = "wall"
min_efficiency = 0.01
"#;
    std::fs::write(dir.join("qualify.toml"), text).expect("write spec");
    let out = run(&dir, &[]);
    assert_ne!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = receipt(&dir);
    let perf = &r["predicate"]["performance"];
    // Speedup analysis is for time-to-solution and figures of merit, not total CPU or memory.
    let scaling = perf["scaling"].as_array().expect("scaling");
    assert_eq!(scaling.len(), 1, "{scaling:#?}");
    let s = &scaling[0];
    assert_eq!(
        (s["axis"].as_str(), s["metric"].as_str()),
        (Some("threads"), Some("wall"))
    );
    let points = s["points"].as_array().expect("points");
    assert_eq!(points.len(), 2);
    assert_eq!(points[0]["speedup"], 1.0);
    assert!(points[1]["karp_flatt"].is_number() && points[1]["efficiency"].is_number());
    assert!(s["amdahl"]["serial_fraction"].is_number());
    assert!(s["usl"].is_null(), "USL needs 3 points");
    let pr = &perf["predictions"][0];
    assert_eq!(
        (pr["axis"].as_str(), pr["at"].as_f64()),
        (Some("threads"), Some(192.0))
    );
    assert_eq!(pr["model"], "amdahl");
    assert_eq!(pr["note"], "model prediction, not evidence");
    let layer = &r["predicate"]["layers"]["performance"];
    let untested = layer["untested"].as_array().expect("untested");
    assert!(
        untested
            .iter()
            .any(|u| u.as_str().unwrap_or("").contains("threads=192")),
        "{layer:#}"
    );
    let check = &perf["checks"][0];
    assert_eq!(check["kind"], "min_efficiency");
    assert_eq!(check["samples"], 3);
}
