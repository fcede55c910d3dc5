//! Partial deadlocks and fatal reports in the runtimes people ship, under the real `qualify
//! probe`: programs whose deadlocked threads sit beside threads that keep ticking (a C timer
//! thread, a Python daemon, the JVM's housekeeping, a Go ticker), each asserted on its outcome
//! and on the cycle, threads and frames the result names; the runtimes' own fatal reports (Go,
//! the JVM, CPython, Node.js, Rust, glibc, the sanitizers, Open MPI, libgomp), each row of
//! `runtime_reports.toml` asserted on outcome, cause and evidence; goroutines a Go test binary
//! leaves blocked; and their twins that only look stuck or hit the same limit and recover, which
//! must end `ok`.
//!
//! Java (javac/java/jcmd), Go, Node.js, rustc, gcc's sanitizers, Open MPI and py-spy are needed;
//! a test whose tool is missing says so and passes, unless `QUALIFY_REQUIRE_RUNTIMES` is set
//! (CI), which makes it fail.

#[allow(unused_macros)]
mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use common::{Run, bin, probe, probe_with_env, py};

/// A missing tool: skip (saying why), or fail under `QUALIFY_REQUIRE_RUNTIMES`.
fn missing(what: &str) -> Option<String> {
    if std::env::var_os("QUALIFY_REQUIRE_RUNTIMES").is_some() {
        panic!("QUALIFY_REQUIRE_RUNTIMES is set but {what}");
    }
    println!("skipping: {what}");
    None
}

fn on_path(tool: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn runtimes_src() -> PathBuf {
    common::corpus_src().join("runtimes")
}

fn out_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("corpus-runtimes")
        .join(name);
    std::fs::create_dir_all(&dir).expect("create the runtimes corpus directory");
    dir
}

/// `corpus/runtimes/*.java` compiled once per test binary: the class directory.
fn java_classes() -> Option<String> {
    static DIR: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let built = DIR.get_or_init(|| {
        for tool in ["javac", "java", "jcmd"] {
            if !on_path(tool) {
                return Err(format!(
                    "{tool} is not on PATH (Debian: default-jdk-headless)"
                ));
            }
        }
        let out = out_dir(&format!("java-{}", std::process::id()));
        let sources: Vec<PathBuf> = ["Deadlock.java", "Latch.java", "Exhaust.java"]
            .iter()
            .map(|f| runtimes_src().join(f))
            .collect();
        let status = Command::new("javac")
            .arg("-d")
            .arg(&out)
            .args(&sources)
            .status()
            .map_err(|e| format!("cannot run javac: {e}"))?;
        if !status.success() {
            return Err("javac failed on corpus/runtimes".into());
        }
        Ok(out)
    });
    match built {
        Ok(p) => Some(p.to_string_lossy().into_owned()),
        Err(e) => missing(e),
    }
}

/// `corpus/runtimes/go` built once per test binary (offline, its own build cache).
fn go_binary() -> Option<String> {
    static BIN: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let built = BIN.get_or_init(|| {
        if !on_path("go") {
            return Err("go is not on PATH (Debian: golang-go)".into());
        }
        let out = out_dir("go");
        let tmp = out.join(format!(".gostall.{}", std::process::id()));
        let status = Command::new("go")
            .args(["build", "-o"])
            .arg(&tmp)
            .arg(".")
            .current_dir(runtimes_src().join("go"))
            .env("GOCACHE", out.join("cache"))
            .env("GOFLAGS", "-mod=mod")
            .env("GOPROXY", "off")
            .env("GOTOOLCHAIN", "local")
            .status()
            .map_err(|e| format!("cannot run go: {e}"))?;
        if !status.success() {
            return Err("go build failed on corpus/runtimes/go".into());
        }
        let bin = out.join("gostall");
        std::fs::rename(&tmp, &bin).map_err(|e| e.to_string())?;
        Ok(bin)
    });
    match built {
        Ok(p) => Some(p.to_string_lossy().into_owned()),
        Err(e) => missing(e),
    }
}

/// py-spy names the lines Python threads wait at.
fn py_spy() -> bool {
    on_path("py-spy") || missing("py-spy is not on PATH (pip install py-spy)").is_some()
}

/// A deadlock decided near the 2 s stall window (not at the deadline), with the examination in
/// `evidence.wait_for` and every phrase of `says` in the detail.
#[track_caller]
fn check_deadlock(run: &Run, says: &[&str]) {
    run.expect_outcome("deadlock").expect_code(1);
    let wall = run.wall();
    assert!(
        (1.5..15.0).contains(&wall),
        "deadlock decided after {wall:.1}s: not at the 2s stall window\n{run}"
    );
    let detail = run.str_field("detail").unwrap_or("");
    for s in says {
        assert!(detail.contains(s), "the detail does not say {s:?}\n{run}");
    }
    let wf = &run.json["evidence"]["wait_for"];
    assert_eq!(wf["verdict"], "deadlock", "{run}");
    assert!(wf["decided_by"].is_string(), "{run}");
    assert!(run.json["evidence"]["threads"].is_array(), "{run}");
}

/// A twin that only looks stuck: it runs to its end.
#[track_caller]
fn check_ok(run: &Run, prints: &str) {
    run.expect_outcome("ok").expect_code(0);
    assert!(
        run.str_field("stdout_tail").unwrap_or("").contains(prints),
        "{run}"
    );
}

const DEADLOCK: &[&str] = &["--stall", "2s", "--timeout", "30s"];
/// Twins: a 1 s stall window, released after 3 s — three windows of looking stuck.
const TWIN: &[&str] = &["--stall", "1s", "--timeout", "30s"];

// =============================================================================================
// C: glibc mutex owners from the futex words.

fn c_cycle(kind: &str, object: &str, how: &str) {
    c_cycle_with(&[kind], object, how);
}

fn c_cycle_with(args: &[&str], object: &str, how: &str) {
    let program = bin("lockorder_ticker");
    let mut cmd = vec![program.as_str()];
    cmd.extend_from_slice(args);
    let run = probe("auto", DEADLOCK, &cmd);
    check_deadlock(
        &run,
        &[
            "wait-for cycle: thread ",
            &format!("holds {object} 0x"),
            &format!("waits for {object} 0x"),
            ", which ",
            "1 thread(s) in a timed sleep loop",
        ],
    );
    let cycle = run.json["evidence"]["wait_for"]["cycle"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(cycle.len(), 2, "a cycle of the two workers\n{run}");
    // Each waits for what the other holds.
    assert_eq!(cycle[0]["held_by"], cycle[1]["tid"], "{run}");
    assert_eq!(cycle[1]["held_by"], cycle[0]["tid"], "{run}");
    assert!(
        cycle[0]["how"].as_str().is_some_and(
            |h| h.contains(how) && h.contains("in pthread_mutex_lock in its stack sample")
        ),
        "how the owner was read, confirmed by the waiter's stack\n{run}"
    );
}

#[test]
fn c_lock_order_beside_a_ticking_thread_is_a_named_cycle() {
    c_cycle("normal", "mutex", "glibc mutex owner field");
}

#[test]
fn c_lock_order_taken_after_a_pause_while_the_ticker_ticks() {
    // The workers take their second locks 300 ms in, after the tree went quiet.
    c_cycle_with(&["normal", "late"], "mutex", "glibc mutex owner field");
}

#[test]
fn c_robust_mutexes_name_their_owners_in_the_futex_word() {
    c_cycle("robust", "robust mutex", "robust mutex futex word");
}

#[test]
fn c_priority_inheritance_mutexes_are_a_deadlock_the_kernel_found() {
    // A PI lock-order inversion: the kernel's chain walk answers one FUTEX_LOCK_PI with
    // EDEADLK (glibc then parks that thread forever); the other waits in FUTEX_LOCK_PI for a
    // mutex whose futex word names the first as its owner.
    let run = probe("auto", DEADLOCK, &[&bin("lockorder_ticker"), "pi"]);
    check_deadlock(
        &run,
        &[
            "waits forever in pthread_mutex_lock",
            "the kernel found leading back to it",
            "in an untimed wait for PI mutex 0x",
            "1 thread(s) in a timed sleep loop",
        ],
    );
    let wf = &run.json["evidence"]["wait_for"];
    assert!(
        wf["decided_by"]
            .as_str()
            .is_some_and(|d| d.contains("EDEADLK")),
        "{run}"
    );
    let threads = wf["threads"].as_array().cloned().unwrap_or_default();
    let parked = &wf["cycle"][0]["tid"];
    assert!(
        threads.iter().any(|t| t["held_by"] == *parked
            && t["waits_for"]
                .as_str()
                .is_some_and(|o| o.starts_with("PI mutex"))),
        "the other worker's PI futex word names the parked thread as the owner\n{run}"
    );
}

#[test]
fn c_condvar_released_by_a_timed_thread_is_not_a_deadlock() {
    let run = probe("auto", TWIN, &[&bin("cond_release"), "3"]);
    check_ok(&run, "released after 3.0 s");
}

#[test]
fn c_server_idle_in_accept_is_blocked_on_the_named_socket() {
    let run = probe(
        "auto",
        &["--stall", "1s", "--timeout", "3s"],
        &[&bin("accept_block")],
    );
    run.expect_outcome("timeout").expect_code(1);
    assert_eq!(
        run.str_field("timeout_kind"),
        Some("blocked_external"),
        "{run}"
    );
    let detail = run.str_field("detail").unwrap_or("");
    assert!(
        detail.contains("accept") && detail.contains("socket:["),
        "the detail names the socket it waits on\n{run}"
    );
}

// =============================================================================================
// CPython: RLock owners from memory, py-spy's lines, asyncio's epoll set.

#[test]
fn python_rlock_cycle_beside_a_daemon_ticker() {
    python_rlock_cycle(&[]);
}

#[test]
fn python_rlock_cycle_taken_after_a_pause() {
    // Each worker sleeps 0.3 s between its locks: they wait after the process went quiet.
    python_rlock_cycle(&["late"]);
}

fn python_rlock_cycle(extra: &[&str]) {
    let spy = py_spy();
    let script = py("py_locks_ticker.py");
    let mut cmd = vec!["python3", script.as_str(), "rlock"];
    cmd.extend_from_slice(extra);
    let run = probe("auto", DEADLOCK, &cmd);
    check_deadlock(
        &run,
        &[
            "wait-for cycle: thread ",
            "holds RLock 0x",
            "waits for RLock 0x",
            "1 thread(s) in a timed sleep loop",
        ],
    );
    let wf = &run.json["evidence"]["wait_for"];
    assert!(
        wf["cycle"][0]["how"]
            .as_str()
            .is_some_and(|h| h.contains("CPython RLock owner")),
        "{run}"
    );
    if spy {
        let threads = wf["threads"].to_string();
        assert!(
            threads.contains("worker (py_locks_ticker.py:"),
            "py-spy's lines are in the evidence\n{run}"
        );
        assert!(
            run.str_field("detail")
                .unwrap_or("")
                .contains("(python3 at worker (py_locks_ticker.py:"),
            "the cycle names the lines its threads wait at\n{run}"
        );
    }
}

#[test]
fn python_locks_beside_a_daemon_ticker_stay_a_timeout_that_says_what_was_seen() {
    let spy = py_spy();
    let run = probe(
        "auto",
        &["--stall", "1s", "--timeout", "5s"],
        // As users write it: work (a sleep) between the locks, not a barrier.
        &["python3", &py("py_locks_ticker.py"), "lock", "late"],
    );
    run.expect_outcome("timeout").expect_code(1);
    assert_eq!(
        run.str_field("timeout_kind"),
        Some("ambiguous_wait"),
        "{run}"
    );
    let detail = run.str_field("detail").unwrap_or("");
    for s in [
        "3 thread(s) stayed in untimed waits only the tree could release",
        "1 thread(s) in a timed sleep loop",
        "keeps no owner",
        "not proven",
    ] {
        assert!(detail.contains(s), "the detail does not say {s:?}\n{run}");
    }
    assert!(
        !detail.contains(", timed waits only"),
        "three of four threads wait untimed: not 'timed waits only'\n{run}"
    );
    if spy {
        assert!(
            detail.contains("worker (py_locks_ticker.py:"),
            "the stuck threads' lines (py-spy)\n{run}"
        );
        assert!(
            detail.contains("at the end the runtimes said: CPython (py-spy): threads: "),
            "py-spy asked at the deadline\n{run}"
        );
    }
}

#[test]
fn python_event_set_by_a_timer_is_not_a_deadlock() {
    let run = probe("auto", TWIN, &["python3", &py("py_event_timer.py"), "3"]);
    check_ok(&run, "set after 3.0 s");
}

#[test]
fn asyncio_tasks_awaiting_each_other_on_the_loops_own_fds_are_a_deadlock() {
    let run = probe(
        "auto",
        DEADLOCK,
        &["python3", &py("py_asyncio.py"), "deadlock"],
    );
    run.expect_outcome("deadlock").expect_code(1);
    assert!(run.wall() < 15.0, "{run}");
    let threads = run.json["evidence"]["threads"].to_string();
    assert!(
        threads.contains("epoll_wait(no timeout) on fds whose other ends the tree holds")
            && threads.contains("socket:["),
        "the loop's epoll set is named as the tree's own\n{run}"
    );
    assert!(
        !run.str_field("detail")
            .unwrap_or("")
            .contains("outside the tree"),
        "{run}"
    );
}

#[test]
fn asyncio_event_set_later_by_the_loop_is_not_a_deadlock() {
    let run = probe(
        "auto",
        TWIN,
        &["python3", &py("py_asyncio.py"), "later", "3"],
    );
    check_ok(&run, "set after 3.0 s");
}

// =============================================================================================
// The JVM: its own deadlock report, its helper threads.

fn java_cycle(kind: &str, what: &str) {
    let Some(classes) = java_classes() else {
        return;
    };
    let run = probe(
        "auto",
        DEADLOCK,
        &["java", "-cp", &classes, "Deadlock", kind],
    );
    check_deadlock(
        &run,
        &[
            "Java-level deadlock (the JVM's report)",
            "\"first\" at Deadlock.",
            "\"second\" at Deadlock.",
            what,
            "held by \"second\"",
            "JVM helper thread(s)",
        ],
    );
    let report = &run.json["evidence"]["wait_for"]["runtimes"][0];
    assert_eq!(report["runtime"], "JVM", "{run}");
    assert_eq!(
        report["java_deadlock"].as_array().map(Vec::len),
        Some(2),
        "{run}"
    );
    assert!(
        report["java_deadlock"][0]["frames"]
            .as_array()
            .is_some_and(|fs| fs
                .iter()
                .any(|f| f.as_str().is_some_and(|f| f.contains("(Deadlock.java:")))),
        "the Java frames of the cycle\n{run}"
    );
}

#[test]
fn java_synchronized_blocks_in_opposite_order() {
    java_cycle("monitors", "a java.lang.Object");
}

#[test]
fn java_reentrant_locks_in_opposite_order() {
    java_cycle("locks", "ReentrantLock$NonfairSync");
}

#[test]
fn java_locks_beside_a_ticking_scheduled_executor() {
    // The tick keeps the JIT compiler working and reading files: housekeeping, not progress.
    java_cycle("ticking", "ReentrantLock$NonfairSync");
}

#[test]
fn java_latch_counted_down_by_a_scheduled_executor_is_not_a_deadlock() {
    let Some(classes) = java_classes() else {
        return;
    };
    let run = probe("auto", TWIN, &["java", "-cp", &classes, "Latch", "3"]);
    check_ok(&run, "counted down after 3.0 s");
}

// =============================================================================================
// Go: the goroutine dump at the end of the cell.

/// Goroutines deadlocked on two mutexes while a ticker goroutine keeps the Go runtime's timers
/// firing: a timer can release any goroutine (the Go runtime's own check waits for timers too,
/// and `ticks` below is such a program), so nothing is proven at the stall window; at the
/// deadline qualify takes the goroutine dump, which ends the program, and names every goroutine
/// at its frame.
#[test]
fn go_mutexes_in_opposite_order_beside_a_ticker_are_named_at_the_deadline() {
    let Some(gostall) = go_binary() else {
        return;
    };
    let run = probe(
        "auto",
        &["--stall", "1s", "--timeout", "4s"],
        &[&gostall, "deadlock"],
    );
    run.expect_outcome("timeout").expect_code(1);
    assert_eq!(
        run.str_field("timeout_kind"),
        Some("ambiguous_wait"),
        "{run}"
    );
    let detail = run.str_field("detail").unwrap_or("");
    for s in [
        "a Go program whose timers fire: one could still release its goroutines",
        "Go (goroutine dump (SIGQUIT, which ended the program)): blocked: ",
        "[semacquire] main.worker at ",
        "[select (no cases)] main.deadlock at ",
        "[chan receive] main.deadlock.func1 at ",
    ] {
        assert!(detail.contains(s), "the detail does not say {s:?}\n{run}");
    }
    let at_end = &run.json["evidence"]["at_end"][0];
    assert_eq!(at_end["runtime"], "Go", "{run}");
    assert!(
        at_end["goroutines"].as_array().is_some_and(|gs| gs
            .iter()
            .filter(|g| g["state"] == "semacquire")
            .count()
            == 2),
        "{run}"
    );
}

/// The twin the stall window cannot tell from it: a goroutine waits on a channel a ticker
/// goroutine fills after 30 ticks (3 s). It ends `ok` (it was once ended at the stall window
/// and called a deadlock).
#[test]
fn go_channel_filled_after_counting_ticker_ticks_is_not_a_deadlock() {
    let Some(gostall) = go_binary() else {
        return;
    };
    let run = probe("auto", TWIN, &[&gostall, "ticks", "3"]);
    check_ok(&run, "channel filled after 3.0 s");
}

/// A JVM still waiting at the deadline: its threads named at their frames (jcmd).
#[test]
fn java_threads_waiting_at_the_deadline_are_named() {
    let Some(classes) = java_classes() else {
        return;
    };
    let run = probe(
        "auto",
        &["--stall", "1s", "--timeout", "4s"],
        &["java", "-cp", &classes, "Latch", "60"],
    );
    run.expect_outcome("timeout");
    let detail = run.str_field("detail").unwrap_or("");
    assert!(
        detail
            .contains("JVM (jcmd): blocked: \"main\" WAITING (parking) at Latch.main(Latch.java:"),
        "{run}"
    );
}

#[test]
fn go_channel_filled_after_a_sleep_is_not_a_deadlock() {
    let Some(gostall) = go_binary() else {
        return;
    };
    let run = probe("auto", TWIN, &[&gostall, "sleep", "3"]);
    check_ok(&run, "channel filled after 3.0 s");
}

// =============================================================================================
// The runtimes' own fatal reports (crates/qualify-probe/src/runtime_reports.toml): each row's
// report from the real runtime, asserted on outcome, named cause and evidence, beside a twin
// that hits the same limit or looks the same and ends `ok`.

/// A program built once per test binary from `corpus/` into the target directory: `build`
/// writes the program at the path it is given; `Err` names what is missing.
fn built(
    cache: &'static OnceLock<Result<PathBuf, String>>,
    name: &str,
    build: impl FnOnce(&Path) -> Result<(), String>,
) -> Option<String> {
    let got = cache.get_or_init(|| {
        let out = out_dir("reports");
        let tmp = out.join(format!(".{name}.{}", std::process::id()));
        build(&tmp)?;
        let path = out.join(name);
        std::fs::rename(&tmp, &path).map_err(|e| e.to_string())?;
        Ok(path)
    });
    match got {
        Ok(p) => Some(p.to_string_lossy().into_owned()),
        Err(e) => missing(e),
    }
}

/// Run a build command; `Err` says which tool failed or is missing.
fn run_build(cmd: &mut Command, what: &str, package: &str) -> Result<(), String> {
    let tool = cmd.get_program().to_string_lossy().into_owned();
    if !on_path(&tool) {
        return Err(format!("{tool} is not on PATH (Debian: {package})"));
    }
    let out = cmd
        .output()
        .map_err(|e| format!("cannot run {tool}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{what} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(())
}

fn sanitized(kind: &str) -> Option<String> {
    static TSAN: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    static ASAN: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let (cache, src, flag) = match kind {
        "thread" => (&TSAN, "races.c", "-fsanitize=thread"),
        _ => (&ASAN, "memory.c", "-fsanitize=address"),
    };
    built(cache, &format!("{kind}-sanitized"), |out| {
        run_build(
            Command::new("cc")
                .args([flag, "-g", "-O1", "-pthread", "-o"])
                .arg(out)
                .arg(common::corpus_src().join("sanitizers").join(src)),
            &format!("cc {flag}"),
            "gcc (libtsan2, libasan8)",
        )
    })
}

fn rust_fail() -> Option<String> {
    static BIN: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    built(&BIN, "rust_fail", |out| {
        run_build(
            Command::new("rustc")
                .args(["-O", "--edition", "2021", "-o"])
                .arg(out)
                .arg(runtimes_src().join("rust_fail.rs")),
            "rustc",
            "rustc",
        )
    })
}

fn mpi_abort() -> Option<String> {
    static BIN: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    built(&BIN, "mpi_abort", |out| {
        if !on_path("mpirun") {
            return Err("mpirun is not on PATH (Debian: openmpi-bin)".into());
        }
        run_build(
            Command::new("mpicc")
                .args(["-O1", "-o"])
                .arg(out)
                .arg(common::corpus_src().join("mpi").join("abort.c")),
            "mpicc",
            "libopenmpi-dev",
        )
    })
}

fn omp_threads() -> Option<String> {
    static BIN: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    built(&BIN, "omp_threads", |out| {
        run_build(
            Command::new("cc")
                .args(["-O1", "-fopenmp", "-o"])
                .arg(out)
                .arg(common::corpus_src().join("openmp").join("omp_threads.c")),
            "cc -fopenmp",
            "gcc",
        )
    })
}

/// `corpus/runtimes/heap.js` beside the other built programs (the sandbox hides a checkout
/// under /tmp).
fn heap_js() -> Option<String> {
    static JS: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    built(&JS, "heap.js", |out| {
        if !on_path("node") {
            return Err("node is not on PATH (Debian: nodejs)".into());
        }
        std::fs::copy(runtimes_src().join("heap.js"), out)
            .map(|_| ())
            .map_err(|e| e.to_string())
    })
}

/// The run failed as the runtime's report says: its outcome, its named cause, decided by the
/// report, every phrase of `says` in the detail.
#[track_caller]
fn check_report(run: &Run, outcome: &str, cause: &str, says: &[&str]) {
    run.expect_outcome(outcome).expect_code(1);
    let report = &run.json["evidence"]["runtime_report"];
    assert_eq!(report["cause"], cause, "{run}");
    assert_eq!(report["decided"], true, "{run}");
    assert!(report["said"].is_string(), "the runtime's words\n{run}");
    let detail = run.str_field("detail").unwrap_or("");
    for s in says {
        assert!(detail.contains(s), "the detail does not say {s:?}\n{run}");
    }
}

/// A twin: the same runtime and limit, handled, ends `ok` with no report in its evidence.
#[track_caller]
fn check_twin(run: &Run, prints: &str) {
    check_ok(run, prints);
    assert!(
        run.json["evidence"]["runtime_report"].is_null(),
        "an ok run carries no runtime report\n{run}"
    );
}

const QUICK: &[&str] = &["--stall", "2s", "--timeout", "30s"];

// Go ---------------------------------------------------------------------------------------

#[test]
fn go_all_goroutines_asleep_is_the_runtimes_deadlock() {
    let Some(gostall) = go_binary() else {
        return;
    };
    let run = probe("auto", QUICK, &[&gostall, "asleep"]);
    check_report(
        &run,
        "deadlock",
        "deadlock",
        &[
            "the Go runtime found every goroutine asleep",
            "(`fatal error: all goroutines are asleep - deadlock!`)",
            "goroutine 1 [chan receive] main.main at ",
            "exited with status 2",
        ],
    );
    assert!(run.wall() < 5.0, "decided when the runtime said so\n{run}");
    let goroutines = run.json["evidence"]["runtime_report"]["goroutines"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(
        goroutines.iter().any(|g| g["state"] == "chan receive"
            && g["at"].as_str().is_some_and(|a| a.contains("main.go:"))),
        "each goroutine's wait reason and frame\n{run}"
    );
}

#[test]
fn go_channel_filled_by_a_timer_is_not_a_deadlock() {
    let Some(gostall) = go_binary() else {
        return;
    };
    let run = probe("auto", TWIN, &[&gostall, "timer", "3"]);
    check_twin(&run, "channel filled after 3.0 s");
}

#[test]
fn go_concurrent_map_writes_are_a_data_race() {
    let Some(gostall) = go_binary() else {
        return;
    };
    let run = probe("auto", QUICK, &[&gostall, "map"]);
    check_report(
        &run,
        "crash",
        "data_race",
        &[
            "(`fatal error: concurrent map writes`)",
            "[running] main.writeMap.func1 at ",
        ],
    );
    let twin = probe("auto", QUICK, &[&gostall, "map-locked"]);
    check_twin(&twin, "map of 100 keys written");
}

#[test]
fn go_stack_overflow_and_out_of_memory_are_named() {
    let Some(gostall) = go_binary() else {
        return;
    };
    let run = probe("auto", QUICK, &[&gostall, "stack"]);
    check_report(
        &run,
        "crash",
        "stack_overflow",
        &[
            "`fatal error: stack overflow`",
            "67108864-byte goroutine stack limit",
            "main.recurse at ",
        ],
    );
    let run = probe("auto", QUICK, &[&gostall, "memory"]);
    check_report(
        &run,
        "out_of_memory",
        "out_of_memory",
        &["could not get memory from the system", "the system refused"],
    );
}

#[test]
fn go_thread_exhaustion_names_the_pids_ceiling() {
    let Some(gostall) = go_binary() else {
        return;
    };
    let run = probe(
        "auto",
        &["--pids", "32", "--timeout", "30s"],
        &[&gostall, "threads", "64"],
    );
    check_report(
        &run,
        "exit_failure",
        "thread_exhaustion",
        &[
            "could not start another thread",
            "the ceiling: the pids ceiling of 32 tasks",
        ],
    );
    run.expect_flag("pids_limit_hit");
    let twin = probe(
        "auto",
        &["--pids", "256", "--timeout", "30s"],
        &[&gostall, "threads", "64"],
    );
    check_twin(&twin, "64 goroutines each held a thread");
}

// The JVM --------------------------------------------------------------------------------------

#[test]
fn java_heap_limit_is_out_of_memory_at_xmx_not_the_ceiling() {
    let Some(classes) = java_classes() else {
        return;
    };
    let run = probe(
        "auto",
        &["--memory", "512M", "--timeout", "30s"],
        &["java", "-Xmx32m", "-cp", &classes, "Exhaust", "heap"],
    );
    check_report(
        &run,
        "out_of_memory",
        "out_of_memory",
        &[
            "the JVM ran out of heap (Java heap space)",
            "at Exhaust.fill(Exhaust.java:",
            "the limit: -Xmx32m (the JVM's own maximum heap), not the 512 MiB memory ceiling",
        ],
    );
    assert_eq!(run.json["evidence"]["counters"]["oom_kills"], 0, "{run}");
    let twin = probe(
        "auto",
        &["--timeout", "30s"],
        &[
            "java",
            "-Xmx32m",
            "-cp",
            &classes,
            "Exhaust",
            "recover-heap",
        ],
    );
    check_twin(&twin, "recovered");
}

#[test]
fn java_gc_overhead_and_metaspace_limits_are_out_of_memory() {
    let Some(classes) = java_classes() else {
        return;
    };
    let run = probe(
        "auto",
        &["--timeout", "60s"],
        &[
            "java",
            "-Xmx24m",
            "-XX:+UseParallelGC",
            "-cp",
            &classes,
            "Exhaust",
            "gc",
        ],
    );
    check_report(
        &run,
        "out_of_memory",
        "out_of_memory",
        &["the limit: -Xmx24m"],
    );
    let kind = run.json["evidence"]["runtime_report"]["detail"]["kind"].as_str();
    assert!(
        matches!(kind, Some("GC overhead limit exceeded" | "Java heap space")),
        "{run}"
    );
    let run = probe(
        "auto",
        &["--timeout", "30s"],
        &[
            "java",
            "-XX:MaxMetaspaceSize=16m",
            "-cp",
            &classes,
            "Exhaust",
            "metaspace",
        ],
    );
    check_report(
        &run,
        "out_of_memory",
        "out_of_memory",
        &[
            "class metadata (Metaspace)",
            "the limit: -XX:MaxMetaspaceSize=16m",
        ],
    );
}

#[test]
fn java_native_threads_under_a_pids_ceiling_name_it() {
    let Some(classes) = java_classes() else {
        return;
    };
    let run = probe(
        "auto",
        &["--pids", "48", "--timeout", "30s"],
        &[
            "java", "-Xmx64m", "-cp", &classes, "Exhaust", "threads", "200",
        ],
    );
    check_report(
        &run,
        "exit_failure",
        "thread_exhaustion",
        &[
            "the JVM could not start another thread",
            "at Exhaust.main(Exhaust.java:",
            "the ceiling: the pids ceiling of 48 tasks",
        ],
    );
    let twin = probe(
        "auto",
        &["--pids", "400", "--timeout", "30s"],
        &[
            "java", "-Xmx64m", "-cp", &classes, "Exhaust", "threads", "200",
        ],
    );
    check_twin(&twin, "started 200 threads");
}

#[test]
fn java_stack_overflow_is_a_crash() {
    let Some(classes) = java_classes() else {
        return;
    };
    let run = probe(
        "auto",
        QUICK,
        &["java", "-cp", &classes, "Exhaust", "stack"],
    );
    check_report(
        &run,
        "crash",
        "stack_overflow",
        &[
            "`Exception in thread \"main\" java.lang.StackOverflowError`",
            "at Exhaust.depth(",
        ],
    );
    let twin = probe(
        "auto",
        QUICK,
        &["java", "-cp", &classes, "Exhaust", "recover-stack"],
    );
    check_twin(&twin, "recovered");
}

// CPython ----------------------------------------------------------------------------------------

#[test]
fn python_memory_error_and_recursion_limit() {
    let script = py("py_exhaust.py");
    let run = probe("auto", QUICK, &["python3", &script, "memory"]);
    check_report(
        &run,
        "out_of_memory",
        "out_of_memory",
        &[
            "(MemoryError)",
            "at <module> (py_exhaust.py:",
            "the system refused",
        ],
    );
    check_twin(
        &probe("auto", QUICK, &["python3", &script, "recover-memory"]),
        "recovered",
    );
    let run = probe("auto", QUICK, &["python3", &script, "recursion"]);
    check_report(
        &run,
        "crash",
        "stack_overflow",
        &["recursion limit", "at deep (py_exhaust.py:"],
    );
    check_twin(
        &probe("auto", QUICK, &["python3", &script, "recover-recursion"]),
        "recovered",
    );
}

#[test]
fn python_thread_exhaustion_names_the_pids_ceiling() {
    let script = py("py_exhaust.py");
    let run = probe(
        "auto",
        &["--pids", "24", "--timeout", "30s"],
        &["python3", &script, "threads", "100"],
    );
    check_report(
        &run,
        "exit_failure",
        "thread_exhaustion",
        &[
            "`RuntimeError: can't start new thread`",
            "the pids ceiling of 24 tasks",
        ],
    );
    check_twin(
        &probe(
            "auto",
            &["--pids", "200", "--timeout", "30s"],
            &["python3", &script, "threads", "100"],
        ),
        "started 100 threads",
    );
    // The workers that did start wait forever for the one that could not: qualify's own
    // verdict, the runtime's report beside it naming why.
    let run = probe(
        "auto",
        &["--pids", "24", "--stall", "1s", "--timeout", "20s"],
        &["python3", &script, "threads-wait", "60"],
    );
    assert_ne!(run.outcome(), "ok", "{run}");
    let detail = run.str_field("detail").unwrap_or("");
    assert!(
        detail
            .contains("stderr carried a runtime's report: CPython could not start another thread")
            && detail.contains("the pids ceiling of 24 tasks"),
        "{run}"
    );
    assert_eq!(
        run.json["evidence"]["runtime_report"]["decided"], false,
        "{run}"
    );
}

#[test]
fn python_fatal_error_is_a_crash() {
    let run = probe("auto", QUICK, &["python3", &py("py_exhaust.py"), "fatal"]);
    check_report(
        &run,
        "crash",
        "fatal_error",
        &["`Fatal Python error: ", "py_exhaust gave up"],
    );
}

// Node.js ----------------------------------------------------------------------------------------

#[test]
fn node_heap_limit_is_out_of_memory_at_max_old_space_size() {
    let Some(script) = heap_js() else {
        return;
    };
    let run = probe(
        "auto",
        QUICK,
        &["node", "--max-old-space-size=32", &script, "fill"],
    );
    check_report(
        &run,
        "out_of_memory",
        "out_of_memory",
        &[
            "V8 reached its heap limit",
            "JavaScript heap out of memory",
            "the limit: --max-old-space-size=32 (V8's own heap limit, 32 MB)",
        ],
    );
    let twin = probe(
        "auto",
        QUICK,
        &["node", "--max-old-space-size=32", &script, "some", "8"],
    );
    check_twin(&twin, "kept ");
}

// Rust -------------------------------------------------------------------------------------------

#[test]
fn rust_allocation_failure_and_poisoned_lock() {
    let Some(program) = rust_fail() else {
        return;
    };
    let run = probe("auto", QUICK, &[&program, "alloc"]);
    check_report(
        &run,
        "out_of_memory",
        "out_of_memory",
        &[
            "`memory allocation of 4611686018427387904 bytes failed`",
            "4194304 TiB",
        ],
    );
    check_twin(&probe("auto", QUICK, &[&program, "try-alloc"]), "went on");
    let run = probe("auto", QUICK, &[&program, "poison"]);
    check_report(
        &run,
        "exit_failure",
        "poisoned_lock",
        &[
            "a lock was poisoned",
            "worker failed while holding the lock",
            "exited with status 101",
        ],
    );
    check_twin(
        &probe("auto", QUICK, &[&program, "poison-recovered"]),
        "recovered 7",
    );
}

// glibc ------------------------------------------------------------------------------------------

#[test]
fn glibc_heap_corruption_and_a_refused_lock() {
    let run = probe("auto", QUICK, &[&bin("heap_corrupt"), "corrupt"]);
    check_report(
        &run,
        "crash",
        "memory_corruption",
        &["glibc's allocator found its heap corrupted"],
    );
    check_twin(
        &probe("auto", QUICK, &[&bin("heap_corrupt"), "fine"]),
        "freed the block",
    );
    let run = probe("auto", QUICK, &[&bin("edeadlk"), "errorcheck"]);
    check_report(
        &run,
        "deadlock",
        "deadlock_avoided",
        &[
            "(EDEADLK)",
            "`pthread_mutex_lock: Resource deadlock avoided`",
        ],
    );
    check_twin(
        &probe("auto", QUICK, &[&bin("edeadlk"), "recursive"]),
        "took the lock twice",
    );
}

// Sanitizers -------------------------------------------------------------------------------------

#[test]
fn thread_sanitizer_data_race_and_lock_order_inversion() {
    let Some(program) = sanitized("thread") else {
        return;
    };
    let run = probe("auto", QUICK, &[&program, "race"]);
    check_report(
        &run,
        "crash",
        "data_race",
        &["ThreadSanitizer found a data race", "races.c:"],
    );
    check_twin(
        &probe("auto", QUICK, &[&program, "locked"]),
        "counter 20000",
    );
    let run = probe("auto", QUICK, &[&program, "order"]);
    check_report(
        &run,
        "crash",
        "lock_order_inversion",
        &["(a potential deadlock)", "races.c:"],
    );
    assert!(
        run.json["evidence"]["runtime_report"]["detail"]["cycle"].is_string(),
        "{run}"
    );
    check_twin(&probe("auto", QUICK, &[&program, "ordered"]), "counter 2");
}

#[test]
fn address_sanitizer_use_after_free_and_overflow() {
    let Some(program) = sanitized("address") else {
        return;
    };
    let run = probe("auto", QUICK, &[&program, "use-after-free"]);
    check_report(
        &run,
        "crash",
        "use_after_free",
        &["AddressSanitizer caught a use of freed memory", "memory.c:"],
    );
    let run = probe("auto", QUICK, &[&program, "overflow"]);
    check_report(
        &run,
        "crash",
        "memory_error",
        &["heap-buffer-overflow", "memory.c:"],
    );
    check_twin(&probe("auto", QUICK, &[&program, "fine"]), "3");
}

// Open MPI and libgomp ---------------------------------------------------------------------------

const ROOT_MPI: &[(&str, &str)] = &[
    ("OMPI_ALLOW_RUN_AS_ROOT", "1"),
    ("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"),
];

#[test]
fn mpi_abort_names_the_rank_and_slots_refused_name_the_count() {
    let Some(program) = mpi_abort() else {
        return;
    };
    // Open MPI 4.1 loses its own MPI_ABORT message now and then (`ORTE_ERROR_LOG … show_help.c`,
    // also without qualify): a run whose stderr lacks it stays `exit_failure`, with no report.
    let mut reported = false;
    for _ in 0..6 {
        let run = probe_with_env(
            "auto",
            QUICK,
            &["mpirun", "-n", "2", &program, "1", "3"],
            ROOT_MPI,
        );
        if !run
            .str_field("stderr_tail")
            .unwrap_or("")
            .contains("MPI_ABORT was invoked")
        {
            run.expect_outcome("exit_failure");
            assert!(run.json["evidence"]["runtime_report"].is_null(), "{run}");
            continue;
        }
        check_report(
            &run,
            "exit_failure",
            "mpi_abort",
            &["rank 1 called MPI_Abort (errorcode 3)"],
        );
        assert_eq!(
            run.json["evidence"]["runtime_report"]["detail"]["rank"], "1",
            "{run}"
        );
        reported = true;
        break;
    }
    assert!(reported, "Open MPI printed no MPI_ABORT message in 6 runs");
    let twin = probe_with_env(
        "auto",
        QUICK,
        &["mpirun", "-n", "2", &program, "none"],
        ROOT_MPI,
    );
    check_twin(&twin, "every rank finalized");
    let run = probe_with_env(
        "auto",
        QUICK,
        &["mpirun", "-n", "64", &program, "none"],
        ROOT_MPI,
    );
    check_report(
        &run,
        "exit_failure",
        "not_enough_slots",
        &["mpirun refused to start 64 ranks: not enough slots"],
    );
    let twin = probe_with_env(
        "auto",
        QUICK,
        &["mpirun", "--oversubscribe", "-n", "3", &program, "none"],
        ROOT_MPI,
    );
    check_twin(&twin, "every rank finalized");
}

#[test]
fn openmp_threads_refused_by_the_pids_ceiling_name_it() {
    let Some(program) = omp_threads() else {
        return;
    };
    let run = probe(
        "auto",
        &["--pids", "16", "--timeout", "30s"],
        &[&program, "64"],
    );
    check_report(
        &run,
        "exit_failure",
        "thread_exhaustion",
        &[
            "libgomp could not start an OpenMP thread",
            "the pids ceiling of 16 tasks",
        ],
    );
    check_twin(
        &probe(
            "auto",
            &["--pids", "16", "--timeout", "30s"],
            &[&program, "4"],
        ),
        "4 threads",
    );
}

// Impostors ----------------------------------------------------------------------------------------

/// A program that prints a runtime's words is judged by how it ended, never by the words: on
/// stderr with exit 0 it is `ok`; on stdout with the runtime's own status it is that status's
/// outcome; on stderr and then hanging it is a timeout (the words are context, never a verdict
/// that shortens or softens it).
#[test]
fn printed_reports_decide_nothing_their_program_did_not_end_with() {
    let fake = bin("fake_report");
    let words: &[(&str, &str, &str)] = &[
        (
            "fatal error: all goroutines are asleep - deadlock!\n\ngoroutine 1 [chan receive]:\nmain.main()\n\t/src/main.go:9 +0x1",
            "exit:2",
            "exit_failure",
        ),
        ("fatal error: stack overflow", "exit:2", "exit_failure"),
        ("fatal error: out of memory", "exit:2", "exit_failure"),
        (
            "Exception in thread \"main\" java.lang.OutOfMemoryError: Metaspace\n\tat Meta.main(Meta.java:4)",
            "exit:1",
            "exit_failure",
        ),
        (
            "Fatal Python error: initialization failed",
            "abort",
            "crash",
        ),
        ("double free or corruption (out)", "abort", "crash"),
        (
            "==9==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x1\n==9==ABORTING",
            "exit:1",
            "exit_failure",
        ),
    ];
    for (text, ends, as_printed) in words {
        let ok = probe("auto", QUICK, &[&fake, "err", "exit:0", text]);
        check_twin(&ok, "");
        let out = probe("auto", QUICK, &[&fake, "out", ends, text]);
        out.expect_outcome(as_printed);
        assert!(
            out.json["evidence"]["runtime_report"].is_null(),
            "stdout is not where runtimes report\n{out}"
        );
    }
    let hung = probe(
        "auto",
        &["--stall", "1s", "--timeout", "3s"],
        &[&fake, "err", "hang", words[0].0],
    );
    assert!(
        matches!(hung.outcome(), "timeout" | "deadlock"),
        "qualify's own verdict on the hang\n{hung}"
    );
    assert_eq!(
        hung.json["evidence"]["runtime_report"]["decided"], false,
        "{hung}"
    );
    assert!(
        hung.str_field("detail")
            .unwrap_or("")
            .contains("stderr carried a runtime's report"),
        "{hung}"
    );
}

// Leaks at exit -------------------------------------------------------------------------------

/// `corpus/runtimes/go`'s test binary (`go test -c`, offline).
fn go_test_binary() -> Option<String> {
    static BIN: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    built(&BIN, "gostall.test", |out| {
        let cache = out_dir("go").join("cache");
        run_build(
            Command::new("go")
                .args(["test", "-c", "-o"])
                .arg(out)
                .arg(".")
                .current_dir(runtimes_src().join("go"))
                .env("GOCACHE", cache)
                .env("GOFLAGS", "-mod=mod")
                .env("GOPROXY", "off")
                .env("GOTOOLCHAIN", "local"),
            "go test -c",
            "golang-go",
        )
    })
}

/// A Go test binary whose tests pass but leave goroutines blocked: `ok`, flagged, each named
/// from the binary's own execution trace; its twin leaves none; a program no runtime can be
/// asked about says that leaks were not examined.
#[test]
fn goroutines_a_passing_go_test_leaves_blocked_are_counted() {
    let Some(test) = go_test_binary() else {
        return;
    };
    let run = probe("auto", QUICK, &[&test, "-test.run", "TestLeaks$"]);
    run.expect_outcome("ok").expect_flag("leaked_threads");
    let leaks = &run.json["evidence"]["leaks"];
    assert_eq!(leaks["blocked"], 2, "{run}");
    let states: Vec<&str> = leaks["goroutines"]
        .as_array()
        .map(|gs| gs.iter().filter_map(|g| g["state"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(states, ["chan send", "sync"], "{run}");
    let detail = run.str_field("detail").unwrap_or("");
    assert!(
        detail.contains("2 goroutine(s) left blocked when the tests ended")
            && detail.contains("TestLeaks.func1 at ")
            && detail.contains("leak_test.go:"),
        "{run}"
    );
    assert!(
        run.str_field("stdout_tail").unwrap_or("").contains("PASS"),
        "{run}"
    );

    let twin = probe("auto", QUICK, &[&test, "-test.run", "TestNoLeaks$"]);
    twin.expect_outcome("ok").expect_no_flag("leaked_threads");
    assert_eq!(twin.json["evidence"]["leaks"]["blocked"], 0, "{twin}");

    let other = probe("auto", QUICK, &[&bin("exit_code"), "0"]);
    assert!(
        other.json["evidence"]["leaks"]["not_examined"]
            .as_str()
            .is_some_and(|w| w.starts_with("not a Go test binary")),
        "{other}"
    );
}
