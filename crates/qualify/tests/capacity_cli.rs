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
/// The example at one fixed rate, 20 req/s (no target, no axis), with `edits` after.
fn fixed_rate(edits: &[(&str, &str)]) -> String {
    let mut all: Vec<(&str, &str)> = vec![
        ("rate = 20\n", ""),
        ("rate = \"{rps}\"", "rate = 20"),
        (
            "[[axis]]\nname = \"rps\"\nkind = \"load\"\nrange = [10, 80]\nsearch = \"boundary\"\n",
            "",
        ),
    ];
    all.extend_from_slice(edits);
    spec_with(&all)
}

fn run(dir: &Path, spec: &str, extra: &[&str]) -> common::Receipted {
    run_env(dir, spec, extra, &[])
}

/// [`run`] with extra environment variables.
fn run_env(dir: &Path, spec: &str, extra: &[&str], env: &[(&str, &str)]) -> common::Receipted {
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
        .envs(env.iter().copied())
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

/// [`run_env`], again (at most three runs) while a cell says it is no evidence because the
/// load generator was the bottleneck: on a machine busy with other builds the generator's
/// thread is not always scheduled on time, and such a cell rightly judges nothing.
fn run_judged(dir: &Path, spec: &str, env: &[(&str, &str)]) -> common::Receipted {
    judged(dir, spec, &[], env)
}

/// [`run_judged`] with extra arguments.
fn run_judged_with(dir: &Path, spec: &str, extra: &[&str]) -> common::Receipted {
    judged(dir, spec, extra, &[])
}

fn judged(dir: &Path, spec: &str, extra: &[&str], env: &[(&str, &str)]) -> common::Receipted {
    let mut out = run_env(dir, spec, extra, env);
    for _ in 0..2 {
        let bottleneck = out.receipt["predicate"]["cells"]
            .as_array()
            .is_some_and(|cells| {
                cells.iter().any(|c| {
                    c["result"]["detail"]
                        .as_str()
                        .is_some_and(|d| d.contains("the load generator was the bottleneck"))
                })
            });
        if !bottleneck {
            break;
        }
        out = run_env(dir, spec, extra, env);
    }
    out
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
/// of the answers); the receipt says how many were censored. gunicorn's master kills each
/// stuck worker and starts another: the cell names them, the checklist's timeout and
/// partial-failure rows say so, and memory growth from the new workers is not a leak.
#[test]
fn timed_out_requests_count_in_the_latency_and_killed_workers_are_named() {
    if !have_gunicorn() {
        return;
    }
    let d = scratch("censored");
    let dir = d.0.as_path();
    let spec = fixed_rate(&[
        (
            "command = [\"gunicorn\", \"--workers\", \"2\",",
            "env = { SLOW_EVERY = \"20\", SLOW_SECONDS = \"3\" }\ncommand = [\"gunicorn\", \"--timeout\", \"2\", \"--workers\", \"4\",",
        ),
        ("duration = \"4s\"", "duration = \"3s\""),
    ]);
    let out = run_judged(dir, &spec, &[]);
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

    // What gunicorn did to its own workers: its watchdog ended each one stuck past --timeout
    // (exit status 1 after SIGABRT), named by its own log line, and started another.
    let children = &c["result"]["children"];
    assert_eq!(children["watched_by"], "proc_connector", "{children}");
    let ends = children["ends"].as_array().unwrap();
    assert!(ends.len() >= 2, "{children}");
    for e in ends {
        assert_eq!(e["name"], "gunicorn", "{e}");
        assert_eq!(e["replaced"], true, "{e}");
        assert_eq!(e["exit_code"], 1, "{e}");
        assert!(
            e["said"]
                .as_str()
                .unwrap_or("")
                .contains("WORKER TIMEOUT (pid:"),
            "{e}"
        );
    }
    let detail = c["result"]["detail"].as_str().unwrap();
    assert!(
        detail.contains("of the service's processes ended while it ran")
            && detail.contains(
                "`gunicorn` processes exited with status 1 (its log: `[CRITICAL] WORKER TIMEOUT (pid:"
            ),
        "{detail}"
    );
    let rows = &out.receipt["predicate"]["checklist"]["failure_behaviour"];
    let timeout = rows["timeout"].as_str().unwrap();
    assert!(
        timeout.contains("the service's own watchdog ended")
            && timeout.contains("and replaced them"),
        "{rows}"
    );
    let partial = rows["partial_failure"].as_str().unwrap();
    assert!(
        !partial.starts_with("no partial failure observed") && partial.contains("WORKER TIMEOUT"),
        "{rows}"
    );
    let growth = load["memory_growth"]["grew_steadily"].as_bool();
    assert_ne!(
        growth,
        Some(true),
        "respawned workers are not a leak: {load}"
    );

    // The same service where the kernel's process events are not available (an ordinary
    // user): the ends are still seen, by sampling, without how they ended.
    let twin = run_judged(dir, &spec, &[("QUALIFY_SIMULATE_MISSING", "proc_events")]);
    let children = &twin.cells()[0]["result"]["children"];
    assert_eq!(children["watched_by"], "sampling", "{children}");
    assert!(children["ended"].as_u64().unwrap() >= 1, "{children}");
    assert!(
        twin.cells()[0]["result"]["detail"]
            .as_str()
            .unwrap()
            .contains("seen by sampling"),
        "{}",
        twin.context()
    );
}

/// Setup errors name their cause. A service binding a port already taken (here: with the
/// host's network, a port this test holds) is told so from its own output, with the port it
/// binds beside the one qualify gave it; a service listening on another port than `{port}`
/// is told where it listens; a script whose interpreter (its `#!` line, through a venv's
/// link) lies under a home directory the sandbox hides is refused before it runs, naming the
/// path and the `[sandbox] readable` fix.
#[test]
fn setup_errors_name_the_port_in_use_the_port_listened_on_and_the_hidden_interpreter() {
    if !have_gunicorn() {
        return;
    }
    let d = scratch("setup");
    let dir = d.0.as_path();
    let holder = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let taken = holder.local_addr().unwrap().port();
    let fixed_port = |port: u16, extra: &str| {
        fixed_rate(&[
            (
                "\"127.0.0.1:{port}\"",
                &format!("\"127.0.0.1:{port}\", \"--log-level\", \"info\""),
            ),
            ("[service]", &format!("{extra}[service]")),
        ])
    };
    // The port is in use (qualify's network is shared: `network = "host"`).
    let out = run(
        dir,
        &fixed_port(taken, "[sandbox]\nnetwork = \"host\"\n\n"),
        &[],
    );
    let c = &out.cells()[0];
    let detail = c["result"]["detail"].as_str().unwrap();
    assert!(
        detail.starts_with("exited before it was ready")
            && detail.contains("its address was already in use")
            && detail.contains(&format!(
                "it binds port {taken}, not the port qualify gave it"
            )),
        "{}",
        out.context()
    );
    drop(holder);

    // Listening on 8000 (its own network), never on {port}.
    let spec = fixed_port(8000, "").replace("within = \"20s\"", "within = \"3s\"");
    let out = run(dir, &spec, &[]);
    let c = &out.cells()[0];
    assert_eq!(outcome(c), "unavailable", "{}", out.context());
    let detail = c["result"]["detail"].as_str().unwrap();
    assert!(
        detail.contains("it listens on 127.0.0.1:8000 (pid ")
            && detail.contains("pass {port} (or $PORT) to the service"),
        "{}",
        out.context()
    );

    // A venv's script whose interpreter links into a home directory.
    let home = PathBuf::from(std::env::var_os("HOME").expect("HOME"));
    let hidden = home.join(format!(
        ".cache/qualify-capacity-cli-{}",
        std::process::id()
    ));
    std::fs::create_dir_all(hidden.join("bin")).unwrap();
    std::fs::copy("/bin/sh", hidden.join("bin/python3")).unwrap();
    let venv = dir.join("venv/bin");
    std::fs::create_dir_all(&venv).unwrap();
    std::os::unix::fs::symlink(hidden.join("bin/python3"), venv.join("python")).unwrap();
    let script = venv.join("gunicorn");
    std::fs::write(
        &script,
        format!(
            "#!{}\nexec gunicorn \"$@\"\n",
            venv.join("python").display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = run(
        dir,
        &fixed_rate(&[("[\"gunicorn\",", "[\"./venv/bin/gunicorn\",")]),
        &[],
    );
    let _ = std::fs::remove_dir_all(&hidden);
    assert_eq!(out.code, 2, "{}", out.context());
    let real = hidden.join("bin/python3");
    for needle in [
        "`./venv/bin/gunicorn` runs under ".to_string(),
        format!("which is {}: the sandbox hides it", real.display()),
        format!(
            "add \"{}\" to [sandbox] readable",
            home.join(".cache").display()
        ),
    ] {
        assert!(out.stderr.contains(&needle), "{needle}\n{}", out.context());
    }
}

/// The capacity in one sentence, against a service of known capacity: gunicorn's 2 sync
/// workers × 50 ms complete at most 40 req/s. The boundary search over the offered rate repeats
/// the two points at its edge, and the sentence — in the terminal, the Markdown and the HTML —
/// names the objectives, the rate they hold up to, the rate they fail from and what failed,
/// never finer than the repeats agree. The terminal shows the per-cell table sorted by rate.
#[test]
fn the_capacity_sentence_brackets_the_known_capacity_with_repeated_edges() {
    if !have_gunicorn() {
        return;
    }
    let d = scratch("sentence");
    let dir = d.0.as_path();
    let spec = spec_with(&[
        (
            "range = [10, 80]",
            "values = [20, 30, 36, 40, 44, 48, 56, 64]",
        ),
        ("duration = \"4s\"", "duration = \"2s\""),
        ("warmup = \"1s\"", "warmup = \"500ms\""),
    ]);
    let out = run_judged(dir, &spec, &[]);
    let b = &out.receipt["predicate"]["boundaries"][0];
    let last = b["last_pass"]
        .as_f64()
        .unwrap_or_else(|| panic!("{}", out.context()));
    let first = b["first_fail"]
        .as_f64()
        .unwrap_or_else(|| panic!("{}", out.context()));
    // Within capacity (40/s) the objectives hold; a cell is ok while it answers ≥ 90% of what
    // is offered, so no pass lies beyond 40 / 0.9 ≈ 44.4/s; beyond it the queue grows.
    assert!(
        (30.0..=44.0).contains(&last) && (40.0..=52.0).contains(&first) && last < first,
        "holds up to {last}, fails from {first}: {b}\n{}",
        out.context()
    );
    // Each edge point was run twice and agreed with itself (or the interval says it is not
    // confirmed); the boundary lists them.
    assert_eq!(b["edge_runs"], 2, "{b}");
    let edge = b["edge"].as_array().unwrap();
    for v in [last, first] {
        let point = edge
            .iter()
            .find(|p| p["value"].as_f64() == Some(v))
            .unwrap_or_else(|| panic!("{v} not among the edge's runs: {b}"));
        assert!(
            point["passed"].as_u64().unwrap() + point["failed"].as_u64().unwrap() >= 2
                || b["edge_confirmed"] == false,
            "{point}"
        );
    }
    let sentence = b["capacity"].as_str().unwrap();
    let want = format!("holds latency_p99 ≤ 250 ms and error_rate ≤ 1% up to {last} req/s");
    assert!(sentence.starts_with(&want), "{sentence}");
    assert!(
        sentence.contains(&format!("fails from {first} req/s (")),
        "{sentence}"
    );
    assert!(
        sentence.contains("both edges held on 2 runs each")
            || sentence.contains("the runs disagreed")
            || sentence.contains("not confirmed"),
        "{sentence}"
    );
    // Said once, where people look.
    assert!(
        out.stdout.contains("capacity:\n") && out.stdout.contains(sentence),
        "{}",
        out.context()
    );
    let table = out
        .stdout
        .split("service cells (sorted by the axes):\n")
        .nth(1)
        .unwrap_or_else(|| panic!("{}", out.context()));
    let rates: Vec<f64> = table
        .lines()
        .skip(1)
        .take_while(|l| l.trim_start().starts_with("rps="))
        .map(|l| {
            l.trim_start()["rps=".len()..]
                .split_whitespace()
                .next()
                .unwrap()
                .parse()
                .unwrap()
        })
        .collect();
    assert!(
        rates.len() >= 5 && rates.windows(2).all(|w| w[0] <= w[1]),
        "{table}"
    );
    let md = Command::new(QUALIFY)
        .args([
            "report",
            "receipt.json",
            "--markdown",
            "--html",
            "report.html",
        ])
        .current_dir(dir)
        .output()
        .unwrap();
    let md = String::from_utf8_lossy(&md.stdout);
    assert!(md.contains("### Capacity") && md.contains(sentence), "{md}");
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(
        html.contains("<h2>Capacity</h2>"),
        "no capacity in the HTML"
    );
}

/// `--set KEY=VALUE` changes the spec for one quick run, checked like the file: a wrong value
/// is refused at the flag (never at a line of a file the user did not write), a good one runs,
/// and the receipt lists what differed from the file.
#[test]
fn overrides_for_quick_runs_are_checked_like_the_file_and_located_at_the_flag() {
    let d = scratch("overrides");
    let dir = d.0.as_path();
    let spec = spec_with(&[]);
    for (flags, message) in [
        (
            vec!["--set", "load.duration=5"],
            "--set load.duration=5: error: `5` has no unit: a duration needs its unit",
        ),
        (
            vec!["--set", "axis.users=1,2"],
            "--set axis.users=1,2: error: no [[axis]] with name = \"users\": the spec's [[axis]] are rps",
        ),
        (
            vec!["--set", "slo.latency_p99.max=3s"],
            "--set slo.latency_p99.max=3s: error: latency_p99 max \"3s\" can never fail",
        ),
        (
            vec!["--set", "load.durration=5s"],
            "--set load.durration=5s: error: unknown key `durration` in [load]",
        ),
        (vec!["--set", "load.duration"], "expected KEY=VALUE"),
    ] {
        let out = run(dir, &spec, &flags);
        assert_eq!(out.code, 2, "{flags:?}\n{}", out.context());
        assert!(out.stderr.contains(message), "{flags:?}\n{}", out.context());
    }
    if !have_gunicorn() {
        return;
    }
    let out = run_judged_with(
        dir,
        &spec,
        &[
            "--set",
            "axis.rps=10,20",
            "--set",
            "load.duration=1s",
            "--set",
            "load.warmup=0s",
        ],
    );
    let rates: Vec<i64> = out
        .cells()
        .iter()
        .map(|c| c["params"]["rps"].as_i64().unwrap())
        .collect();
    assert!(rates.iter().all(|r| [10, 20].contains(r)), "{rates:?}");
    assert_eq!(
        out.receipt["predicate"]["run"]["spec_overrides"],
        serde_json::json!(["axis.rps=10,20", "load.duration=1s", "load.warmup=0s"])
    );
    assert_eq!(
        out.cells()[0]["result"]["load"]["duration_seconds"],
        1.0,
        "{}",
        out.context()
    );
}
