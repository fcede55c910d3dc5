//! A backend engineer's first hour, end to end on a real service: `examples/capacity` — a WSGI
//! app under gunicorn (Debian's `gunicorn`, or `pip install gunicorn`), whose sync workers each
//! sleep a fixed service time, so its capacity is known (workers ÷ service time). Each test runs
//! the real binary on that example, shortened, as a user would: units that cannot be misread,
//! timed-out requests in the latency, the capacity sentence against the known capacity, the
//! per-cell table, what gunicorn did to its own workers, setup errors that name their cause,
//! starters whose first run passes and `--set` overrides. Each run is a few seconds of load.
//!
//! gunicorn missing: the tests skip, unless `QUALIFY_REQUIRE_GUNICORN` is set (CI sets it and
//! installs gunicorn in `.ci/run`).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

#[allow(unused_macros)]
mod common;

const QUALIFY: &str = env!("CARGO_BIN_EXE_qualify");

fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/capacity")
}

/// Whether gunicorn is installed; panics when it is not but `QUALIFY_REQUIRE_GUNICORN` is set.
fn have_gunicorn() -> bool {
    let found = Command::new("gunicorn")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !found {
        assert!(
            std::env::var_os("QUALIFY_REQUIRE_GUNICORN").is_none(),
            "QUALIFY_REQUIRE_GUNICORN is set but gunicorn is not installed (apt-get install gunicorn)"
        );
        common::skip_note(
            "capacity_cli",
            "gunicorn is not installed (apt-get install gunicorn, or pip install gunicorn)",
        );
    }
    found
}

/// A scratch directory holding the example's app.
fn scratch(name: &str) -> common::TestDir {
    let d = common::test_dir("capacity_cli", name);
    std::fs::copy(example().join("app.py"), d.0.join("app.py")).expect("copy app.py");
    d
}

/// The example's spec with each `(from, to)` replaced (each `from` must occur).
fn spec_with(edits: &[(&str, &str)]) -> String {
    let mut text = std::fs::read_to_string(example().join("qualify.toml")).expect("example spec");
    for (from, to) in edits {
        assert!(text.contains(from), "`{from}` is not in the example spec");
        text = text.replace(from, to);
    }
    text
}

/// `qualify run qualify.toml --no-ledger --receipt receipt.json EXTRA…` on `spec` in `dir`;
/// the receipt is `Null` when none was written.
fn run(dir: &Path, spec: &str, extra: &[&str]) -> common::Receipted {
    std::fs::write(dir.join("qualify.toml"), spec).expect("write spec");
    let _ = std::fs::remove_file(dir.join("receipt.json"));
    let out = Command::new(QUALIFY)
        .args([
            "run",
            "qualify.toml",
            "--no-ledger",
            "--receipt",
            "receipt.json",
        ])
        .args(extra)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .expect("run qualify");
    let receipt = std::fs::read_to_string(dir.join("receipt.json"))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(Value::Null);
    common::Receipted {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        receipt,
    }
}

fn outcome(c: &Value) -> &str {
    c["result"]["outcome"].as_str().unwrap_or("?")
}

/// A latency limit without its unit, or a ratio of 1, is refused before anything runs, at
/// the line and column with the fix; so is an objective the load can never fail.
#[test]
fn units_that_cannot_lie_are_refused_at_their_place_with_the_fix() {
    let d = scratch("units");
    let dir = d.0.as_path();
    for (edit, line_col, message, fix) in [
        (
            ("max = \"250ms\"", "max = 250"),
            "max = 250",
            "`250` has no unit: a duration needs its unit",
            "write \"250ms\" or \"250s\"",
        ),
        (
            ("max = \"1%\"", "max = 1"),
            "max = 1\n",
            "error_rate max = 1 means 100%: an objective that can never fail",
            "write \"1%\"",
        ),
        (
            ("max = \"250ms\"", "max = \"3s\""),
            "max = \"3s\"",
            "latency_p99 max \"3s\" can never fail: [load] timeout = \"2s\"",
            "raise [load] timeout",
        ),
    ] {
        let spec = spec_with(&[edit]);
        let out = run(dir, &spec, &[]);
        assert_eq!(out.code, 2, "{}", out.context());
        let offset = spec.find(line_col).unwrap() + "max = ".len();
        let line = spec[..offset].matches('\n').count() + 1;
        let col = offset - spec[..offset].rfind('\n').map_or(0, |i| i + 1) + 1;
        assert!(
            out.stderr
                .contains(&format!("qualify.toml:{line}:{col}: error: {message}")),
            "{}",
            out.context()
        );
        assert!(out.stderr.contains(fix), "{}", out.context());
        assert_eq!(out.receipt, Value::Null, "nothing ran");
    }
}

/// gunicorn with `--timeout 2` and one request in 20 sleeping 3 s, a client timeout of 2 s:
/// the slow requests time out, and the p99 counts them at their timeout (it is not the 50 ms
/// of the answers); the receipt says how many were censored.
#[test]
fn timed_out_requests_count_in_the_latency_at_their_timeout() {
    if !have_gunicorn() {
        return;
    }
    let d = scratch("censored");
    let dir = d.0.as_path();
    let spec = spec_with(&[
        ("rate = 20\n", ""),
        (
            "command = [\"gunicorn\", \"--workers\", \"2\",",
            "env = { SLOW_EVERY = \"20\", SLOW_SECONDS = \"3\" }\ncommand = [\"gunicorn\", \"--timeout\", \"2\", \"--workers\", \"4\",",
        ),
        ("rate = \"{rps}\"", "rate = 20"),
        ("duration = \"4s\"", "duration = \"3s\""),
        (
            "[[axis]]\nname = \"rps\"\nkind = \"load\"\nrange = [10, 80]\nsearch = \"boundary\"\n",
            "",
        ),
    ]);
    let out = run(dir, &spec, &[]);
    let c = &out.cells()[0];
    let load = &c["result"]["load"];
    let timeouts = load["errors"]["timeout"].as_u64().unwrap();
    assert!(
        timeouts >= 2,
        "one request in 20 sleeps past the 2 s timeout: {load}"
    );
    assert_eq!(
        load["latency"]["censored"].as_u64(),
        Some(timeouts),
        "{load}"
    );
    let counted = load["latency"]["corrected"]["count"].as_u64().unwrap();
    assert_eq!(
        counted,
        load["completed"].as_u64().unwrap()
            + load["errors"]["timeout"].as_u64().unwrap()
            + load["errors"]["reset"].as_u64().unwrap()
            + load["errors"]["refused"].as_u64().unwrap()
            + load["errors"]["other"].as_u64().unwrap(),
        "every request that ended is in the latency: {load}"
    );
    let p99 = load["latency"]["corrected"]["p99"].as_f64().unwrap();
    assert!(p99 >= 2.0, "p99 {p99} s hides {timeouts} timeouts: {load}");
    assert_ne!(outcome(c), "ok", "{}", out.context());
}
