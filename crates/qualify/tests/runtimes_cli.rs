//! Partial deadlocks in the runtimes people ship, under the real `qualify probe`: programs whose
//! deadlocked threads sit beside threads that keep ticking (a C timer thread, a Python daemon,
//! the JVM's housekeeping, a Go ticker), each asserted on its outcome and on the cycle, threads
//! and frames the result names; and their twins that only look stuck for a while (an untimed
//! wait a timed thread releases) and must end `ok`, never `deadlock`.
//!
//! Java (javac/java/jcmd), Go and py-spy are needed; a test whose tool is missing says so and
//! passes, unless `QUALIFY_REQUIRE_RUNTIMES` is set (CI), which makes it fail.

#[allow(unused_macros)]
mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use common::{Run, bin, probe, py};

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
        let sources: Vec<PathBuf> = ["Deadlock.java", "Latch.java"]
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

#[test]
fn go_mutexes_in_opposite_order_beside_a_ticker() {
    let Some(gostall) = go_binary() else {
        return;
    };
    let run = probe("auto", DEADLOCK, &[&gostall, "deadlock"]);
    check_deadlock(
        &run,
        &[
            "Go deadlock (the goroutine dump at the end of the cell)",
            "[semacquire] main.worker at ",
            "[select (no cases)] main.deadlock at ",
            "runtime goroutine(s)",
        ],
    );
    let wf = &run.json["evidence"]["wait_for"];
    assert!(
        wf["decided_by"]
            .as_str()
            .is_some_and(|d| d.contains("SIGQUIT")),
        "the evidence says the dump ended the program\n{run}"
    );
    let goroutines = wf["runtimes"][0]["goroutines"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(
        goroutines
            .iter()
            .filter(|g| g["state"] == "semacquire")
            .count()
            >= 2,
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
