//! Integration tests for `qualify probe`: the real binary, run on the real failure-mode programs
//! of `corpus/`, with assertions on the `--json` result.
//!
//! Every rule is a function `fn rule(backend: &str)`; `on_every_backend!` turns it into one test
//! per backend (`rule::rlimit` always, `rule::cgroup1` / `rule::cgroup2` where the host has them;
//! otherwise they print "skipping: backend X unavailable"). Timing bounds are deliberately
//! generous: the suite runs on small, noisy machines. Precise figures belong in `bench/probe.sh`.

#[macro_use]
mod common;

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{
    Run, assert_no_leftover_cgroups, bin, cpu_heavy, expected_memory_strength, is_cgroup, probe,
    probe_with_env, process_gone, py, qualify, scratch,
};
use serde_json::Value;

const SHA256_EXITING_WITH_0: &str =
    "f5e6c232c39e69b278c362ac057600f29be6e005d92eab41c7dac5777e0a27f2";
const MIB: u64 = 1 << 20;

// =============================================================================================
// Ordinary endings: ok, exit_failure, crash, killed.

on_every_backend!(
    ok_reports_output_and_digest,
    exit_failure_carries_exit_code,
    crash_segv,
    crash_abort,
    killed_by_own_sigterm,
);

fn ok_reports_output_and_digest(backend: &str) {
    let run = probe(backend, &["--timeout", "30s"], &[&bin("exit_code"), "0"]);
    run.expect_outcome("ok")
        .expect_code(0)
        .expect_backend(backend);
    assert_eq!(run.json["exit_code"], 0, "{run}");
    assert!(run.json["signal"].is_null(), "{run}");
    assert!(run.json["timeout_kind"].is_null(), "{run}");
    assert_eq!(
        run.str_field("stdout_tail"),
        Some("exiting with 0\n"),
        "{run}"
    );
    assert_eq!(run.u64_field("stdout_bytes"), 15, "{run}");
    assert_eq!(run.u64_field("stderr_bytes"), 0, "{run}");
    assert_eq!(
        run.str_field("stdout_sha256"),
        Some(SHA256_EXITING_WITH_0),
        "{run}"
    );
    assert!(run.flags().is_empty(), "a trivial program got flags\n{run}");
    assert!(run.wall() >= 0.0 && run.wall() < 10.0, "{run}");
    assert!(!run.str_field("detail").unwrap_or("").is_empty(), "{run}");
    for field in ["user_seconds", "system_seconds"] {
        assert!(run.f64_field(field) >= 0.0, "{field}\n{run}");
    }
    assert!(!run.enforcement("tree").is_empty(), "{run}");
    assert_eq!(run.json["limits"]["timeout_seconds"], 30.0, "{run}");
    assert!(
        run.json.get("runs").is_none() && run.json.get("distinct_outputs").is_none(),
        "`runs` and `distinct_outputs` belong to --repeat only\n{run}"
    );
}

fn exit_failure_carries_exit_code(backend: &str) {
    let run = probe(backend, &["--timeout", "30s"], &[&bin("exit_code"), "7"]);
    run.expect_outcome("exit_failure").expect_code(1);
    assert_eq!(run.json["exit_code"], 7, "{run}");
    assert!(run.json["signal"].is_null(), "{run}");
}

fn crash_segv(backend: &str) {
    let run = probe(backend, &["--timeout", "30s"], &[&bin("segv")]);
    run.expect_outcome("crash").expect_code(1);
    assert_eq!(run.str_field("signal"), Some("SIGSEGV"), "{run}");
    assert!(
        run.str_field("stderr_tail")
            .unwrap_or("")
            .contains("null pointer"),
        "{run}"
    );
}

fn crash_abort(backend: &str) {
    let run = probe(backend, &["--timeout", "30s"], &[&bin("abort")]);
    run.expect_outcome("crash").expect_code(1);
    assert_eq!(run.str_field("signal"), Some("SIGABRT"), "{run}");
}

fn killed_by_own_sigterm(backend: &str) {
    let run = probe(backend, &["--timeout", "30s"], &[&bin("sigterm_self")]);
    run.expect_outcome("killed").expect_code(1);
    assert_eq!(run.str_field("signal"), Some("SIGTERM"), "{run}");
}

// =============================================================================================
// Memory: oom_killed, also behind a wrapper shell; peak memory of the whole tree.

on_every_backend!(
    oom_killed_direct,
    oom_killed_behind_wrapper_shell,
    peak_memory_covers_the_whole_tree,
);

fn check_oom(run: &Run, backend: &str) {
    run.expect_outcome("oom_killed")
        .expect_code(1)
        .expect_backend(backend);
    assert_eq!(
        run.enforcement("memory"),
        expected_memory_strength(backend),
        "{run}"
    );
    assert_eq!(run.json["limits"]["memory_bytes"], 64 * MIB, "{run}");
    assert!(
        !run.str_field("stdout_tail")
            .unwrap_or("")
            .contains("allocated"),
        "the allocation completed: the ceiling was not enforced\n{run}"
    );
}

fn oom_killed_direct(backend: &str) {
    let run = probe(
        backend,
        &["--memory", "64M", "--timeout", "60s"],
        &[&bin("alloc"), "512"],
    );
    check_oom(&run, backend);
    assert_no_leftover_cgroups();
}

fn oom_killed_behind_wrapper_shell(backend: &str) {
    // The shell turns the kill into an ordinary `exit 3`; the verdict must still be oom_killed.
    let script = format!("'{}' 512; exit 3", bin("alloc"));
    let run = probe(
        backend,
        &["--memory", "64M", "--timeout", "60s"],
        &["sh", "-c", &script],
    );
    check_oom(&run, backend);
    assert_no_leftover_cgroups();
}

fn peak_memory_covers_the_whole_tree(backend: &str) {
    // The main process is a small shell; the 96 MiB live in its child, held for a second.
    let script = format!("'{}' 96 1; exit 0", bin("alloc"));
    let run = probe(
        backend,
        &["--memory", "512M", "--timeout", "60s"],
        &["sh", "-c", &script],
    );
    run.expect_outcome("ok").expect_code(0);
    let peak = run.u64_field("peak_memory_bytes");
    assert!(
        peak >= 90 * MIB,
        "peak {peak} below the child's 96 MiB\n{run}"
    );
    assert!(peak < 512 * MIB, "peak {peak} implausible\n{run}");
}

// =============================================================================================
// Deadlock: decided at the stall window, never for timed sleeps.

on_every_backend!(
    deadlock_lock_order,
    deadlock_pipe_between_processes,
    deadlock_behind_waiting_shell,
    deadlock_python_threads,
    timed_sleeps_are_not_deadlock,
);

/// A deadlock verdict with --stall 2s --timeout 60s: ended near the stall window (not at the
/// timeout), with per-thread evidence.
fn check_deadlock(run: &Run, blocking_call: &[&str]) {
    run.expect_outcome("deadlock").expect_code(1);
    let wall = run.wall();
    assert!(
        wall < 20.0,
        "deadlock decided after {wall:.1}s: not at the 2s stall window\n{run}"
    );
    assert!(
        wall >= 1.5,
        "deadlock decided after {wall:.1}s, before a 2s stall window could pass\n{run}"
    );
    assert!(run.json["timeout_kind"].is_null(), "{run}");
    let evidence = run.evidence_text();
    assert!(
        blocking_call.iter().any(|c| evidence.contains(c)),
        "evidence does not name the blocking call ({blocking_call:?})\n{run}"
    );
    assert!(
        evidence.contains("thread") || evidence.contains("tid"),
        "evidence does not list threads\n{run}"
    );
    assert!(
        evidence.contains("stack"),
        "evidence has neither a stack dump nor a note that none could be taken\n{run}"
    );
}

fn deadlock_lock_order(backend: &str) {
    let run = probe(
        backend,
        &["--stall", "2s", "--timeout", "60s"],
        &[&bin("lockorder")],
    );
    check_deadlock(&run, &["futex"]);
    assert_no_leftover_cgroups();
}

fn deadlock_pipe_between_processes(backend: &str) {
    let run = probe(
        backend,
        &["--stall", "2s", "--timeout", "60s"],
        &[&bin("pipe_deadlock")],
    );
    check_deadlock(&run, &["read", "pipe"]);
    assert_no_leftover_cgroups();
}

fn deadlock_behind_waiting_shell(backend: &str) {
    // The shell waits for its deadlocked child: waiting for a child counts as a wait only the
    // tree can release.
    let script = format!("'{}'; echo never", bin("lockorder"));
    let run = probe(
        backend,
        &["--stall", "2s", "--timeout", "60s"],
        &["sh", "-c", &script],
    );
    check_deadlock(&run, &["futex"]);
}

fn deadlock_python_threads(backend: &str) {
    let run = probe(
        backend,
        &["--stall", "2s", "--timeout", "60s"],
        &["python3", &py("py_deadlock.py")],
    );
    check_deadlock(&run, &["futex"]);
}

fn timed_sleeps_are_not_deadlock(backend: &str) {
    // 4 s of nothing but nanosleep, pthread_cond_timedwait and poll with timeouts, watched with
    // a 1 s stall window: must run to its end.
    let run = probe(
        backend,
        &["--stall", "1s", "--timeout", "30s"],
        &[&bin("timed_sleeps"), "4"],
    );
    run.expect_outcome("ok").expect_code(0);
    assert!(
        run.wall() >= 3.5,
        "ended after {:.1}s, before the program\n{run}",
        run.wall()
    );
    assert_eq!(run.str_field("stdout_tail"), Some("slept 4 s\n"), "{run}");
}

// =============================================================================================
// Livelock (only with a progress signal) and the kinds of timeout.

on_every_backend!(
    livelock_silent_spinner,
    printing_spinner_is_not_livelock,
    livelock_heartbeat,
    steady_heartbeat_is_not_livelock,
    timeout_busy,
    timeout_busy_beside_a_busy_neighbour,
    timeout_idle,
    timeout_blocked_external,
);

fn livelock_silent_spinner(backend: &str) {
    let _cpu = cpu_heavy();
    let run = probe(
        backend,
        &["--progress", "output", "--stall", "2s", "--timeout", "60s"],
        &[&bin("spin")],
    );
    run.expect_outcome("livelock").expect_code(1);
    let wall = run.wall();
    assert!(
        wall < 20.0,
        "livelock decided after {wall:.1}s, not at the stall window\n{run}"
    );
    assert!(wall >= 1.5, "livelock before the stall window\n{run}");
    assert!(
        run.f64_field("user_seconds") > 0.5,
        "spinner not busy?\n{run}"
    );
    assert_eq!(run.json["limits"]["progress"], "output", "{run}");
}

fn printing_spinner_is_not_livelock(backend: &str) {
    let _cpu = cpu_heavy();
    let run = probe(
        backend,
        &["--progress", "output", "--stall", "1s", "--timeout", "4s"],
        &[&bin("spin_progress"), "0", "200"],
    );
    run.expect_outcome("timeout").expect_code(1);
    assert_eq!(run.str_field("timeout_kind"), Some("progressing"), "{run}");
    assert!(run.u64_field("stdout_bytes") > 0, "{run}");
    assert!(run.wall() >= 3.5 && run.wall() < 20.0, "{run}");
}

fn livelock_heartbeat(backend: &str) {
    let _cpu = cpu_heavy();
    // Five beats 0.2 s apart, then spinning without a beat.
    let run = probe(
        backend,
        &[
            "--progress",
            "heartbeat",
            "--stall",
            "2s",
            "--timeout",
            "60s",
        ],
        &["python3", &py("heartbeat.py"), "5", "0.2"],
    );
    run.expect_outcome("livelock").expect_code(1);
    let wall = run.wall();
    assert!(wall < 20.0, "livelock decided after {wall:.1}s\n{run}");
    assert!(
        wall >= 2.0,
        "livelock after {wall:.1}s: the heartbeats were not seen\n{run}"
    );
    assert!(
        run.str_field("stderr_tail")
            .unwrap_or("")
            .contains("beats sent"),
        "the program never reached its spinning phase (QUALIFY_HEARTBEAT exported?)\n{run}"
    );
}

fn steady_heartbeat_is_not_livelock(backend: &str) {
    let _cpu = cpu_heavy();
    // Beats every 0.2 s for far longer than the deadline, busy in between.
    let run = probe(
        backend,
        &[
            "--progress",
            "heartbeat",
            "--stall",
            "1s",
            "--timeout",
            "4s",
        ],
        &["python3", &py("heartbeat.py"), "1000", "0.2"],
    );
    run.expect_outcome("timeout").expect_code(1);
    assert_eq!(run.str_field("timeout_kind"), Some("progressing"), "{run}");
}

fn timeout_busy(backend: &str) {
    let _cpu = cpu_heavy();
    // No progress signal declared: a spinner is not a livelock, only a busy timeout.
    let run = probe(
        backend,
        &["--stall", "1s", "--timeout", "3s"],
        &[&bin("spin")],
    );
    run.expect_outcome("timeout").expect_code(1);
    assert_eq!(run.str_field("timeout_kind"), Some("busy"), "{run}");
    assert!(run.wall() >= 2.5 && run.wall() < 20.0, "{run}");
}

/// The twin of `timeout_busy` on a machine whose other work takes the CPUs: five spinners
/// beside the probe on two cores leave the program a third of a core or less. It wanted a
/// whole one (the rest of the time it waited in the run queue): busy, never "idle".
fn timeout_busy_beside_a_busy_neighbour(backend: &str) {
    let _cpu = cpu_heavy();
    let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
    let mut hogs: Vec<std::process::Child> = (0..cpus * 2 + 1)
        .map(|_| {
            std::process::Command::new("sh")
                .args(["-c", "while :; do :; done"])
                .spawn()
                .expect("start a CPU hog")
        })
        .collect();
    let run = probe(
        backend,
        &["--stall", "1s", "--timeout", "3s"],
        &[&bin("spin")],
    );
    for h in &mut hogs {
        let _ = h.kill();
        let _ = h.wait();
    }
    run.expect_outcome("timeout").expect_code(1);
    assert_eq!(run.str_field("timeout_kind"), Some("busy"), "{run}");
}

fn timeout_idle(backend: &str) {
    let run = probe(
        backend,
        &["--stall", "1s", "--timeout", "3s"],
        &[&bin("timed_sleeps"), "60"],
    );
    run.expect_outcome("timeout").expect_code(1);
    assert_eq!(run.str_field("timeout_kind"), Some("idle"), "{run}");
    assert!(run.wall() >= 2.5 && run.wall() < 20.0, "{run}");
}

fn timeout_blocked_external(backend: &str) {
    // accept() on a socket nobody connects to: blocked on the outside world, not a deadlock.
    let run = probe(
        backend,
        &["--stall", "1s", "--timeout", "3s"],
        &[&bin("accept_block")],
    );
    run.expect_outcome("timeout").expect_code(1);
    assert_eq!(
        run.str_field("timeout_kind"),
        Some("blocked_external"),
        "{run}"
    );
    assert!(run.wall() >= 2.5 && run.wall() < 20.0, "{run}");
}

// =============================================================================================
// CPU and pids ceilings; oversubscription.

on_every_backend!(oversubscribed_flag, cpu_ceiling, pids_ceiling);

fn oversubscribed_flag(backend: &str) {
    let _cpu = cpu_heavy();
    let run = probe(
        backend,
        &["--cpus", "1", "--timeout", "60s"],
        &[&bin("oversubscribe"), "16", "2"],
    );
    run.expect_outcome("ok").expect_code(0);
    run.expect_flag("oversubscribed");
    assert!(
        run.str_field("stdout_tail")
            .unwrap_or("")
            .contains("16 threads"),
        "{run}"
    );
}

fn cpu_ceiling(backend: &str) {
    let _cpu = cpu_heavy();
    let run = probe(
        backend,
        &["--cpus", "0.2", "--timeout", "60s"],
        &[&bin("spin"), "3"],
    );
    run.expect_outcome("ok").expect_code(0);
    assert_eq!(run.json["limits"]["cpus"], 0.2, "{run}");
    if is_cgroup(backend) {
        assert_eq!(run.enforcement("cpus"), "kernel", "{run}");
        run.expect_flag("cpu_throttled");
        let cpu = run.f64_field("user_seconds") + run.f64_field("system_seconds");
        assert!(
            cpu < 2.0,
            "{cpu:.2}s of CPU in 3s under a 0.2-core ceiling\n{run}"
        );
    } else {
        assert_eq!(run.enforcement("cpus"), "none", "{run}");
    }
}

fn pids_ceiling(backend: &str) {
    for mode in ["threads", "procs"] {
        let run = probe(
            backend,
            &["--pids", "20", "--timeout", "60s"],
            &[&bin("forkbomb"), "200", mode, "1"],
        );
        assert_eq!(run.json["limits"]["pids"], 20, "{run}");
        if is_cgroup(backend) {
            run.expect_outcome("ok").expect_code(0);
            assert_eq!(run.enforcement("pids"), "kernel", "{run}");
            run.expect_flag("pids_limit_hit");
            let out = run.str_field("stdout_tail").unwrap_or("");
            let failed: u32 = out
                .split_whitespace()
                .nth(3)
                .and_then(|n| n.parse().ok())
                .unwrap_or_else(|| panic!("unexpected forkbomb output {out:?}\n{run}"));
            assert!(failed > 150, "only {failed} of 200 {mode} refused\n{run}");
        } else {
            // Without a kernel ceiling nothing is refused, but the task count (200 threads or
            // processes held for a second) exceeds the limit, and that is flagged.
            run.expect_outcome("ok").expect_code(0);
            assert_ne!(run.enforcement("pids"), "kernel", "{run}");
            run.expect_flag("pids_limit_hit");
        }
    }
}

// =============================================================================================
// The tree: leaked daemons, output floods, interruption.

on_every_backend!(
    leaked_daemon_is_flagged_and_killed,
    daemon_keeping_stdio_does_not_hang,
    output_flood_is_drained,
    interrupted_by_sigint,
    interrupted_by_sigterm,
);

fn check_daemon(backend: &str, extra: &[&str]) {
    let pidfile = scratch(&format!("daemon-{backend}-{}", extra.len()));
    let pidfile_str = pidfile.to_string_lossy().into_owned();
    let mut cmd = vec![bin("daemon"), pidfile_str];
    cmd.extend(extra.iter().map(|s| s.to_string()));
    let cmd: Vec<&str> = cmd.iter().map(String::as_str).collect();
    let scratch_dir = pidfile.parent().unwrap().to_string_lossy().into_owned();
    let run = probe(
        backend,
        &[
            "--stall",
            "2s",
            "--timeout",
            "30s",
            "--writable",
            &scratch_dir,
        ],
        &cmd,
    );
    // The daemon writes its pid as it sees it, inside the cell's PID namespace; the host pid
    // of the same process is the one the evidence lists as leaked.
    let _ns_pid: u32 = std::fs::read_to_string(&pidfile)
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or_else(|| panic!("daemon wrote no pid file\n{run}"));
    let leaked: Vec<u32> = run.json["evidence"]["leaked"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter(|l| l["comm"] == "daemon")
                .filter_map(|l| l["pid"].as_u64().map(|p| p as u32))
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(leaked.len(), 1, "one leaked daemon expected\n{run}");
    let pid = leaked[0];
    let gone = process_gone(pid, Duration::from_secs(3));
    if !gone {
        // Do not leave it running for the rest of the suite.
        let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
    }
    assert!(gone, "daemon {pid} outlived the probe\n{run}");
    let _ = std::fs::remove_file(&pidfile);
    run.expect_outcome("ok").expect_code(0);
    run.expect_flag("leaked_processes");
    assert!(
        run.wall() < 15.0,
        "qualify waited {:.1}s for the daemon\n{run}",
        run.wall()
    );
}

fn leaked_daemon_is_flagged_and_killed(backend: &str) {
    check_daemon(backend, &[]);
    assert_no_leftover_cgroups();
}

fn daemon_keeping_stdio_does_not_hang(backend: &str) {
    // The daemon keeps the probe's stdout/stderr pipes open: no EOF ever comes.
    check_daemon(backend, &["keep-stdio"]);
}

/// Spawn `qualify probe --backend B --json ... -- cmd` in the background.
fn spawn_probe(backend: &str, opts: &[&str], cmd: &[&str]) -> std::process::Child {
    let sandbox = common::test_sandbox_flags();
    let mut args = vec!["probe", "--backend", backend, "--json"];
    args.extend(sandbox.iter().map(String::as_str));
    args.extend_from_slice(opts);
    args.push("--");
    args.extend_from_slice(cmd);
    let child = Command::new(common::QUALIFY)
        .args(&args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn qualify");
    common::record_qualify_pid(child.id());
    child
}

/// Collect a spawned qualify's output (reading stdout/stderr on threads so it never blocks on a
/// full pipe), waiting at most `limit` before killing it.
fn finish(mut child: std::process::Child, started: Instant, limit: Duration) -> Run {
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let out_reader = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = out.read_to_end(&mut s);
        s
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = err.read_to_end(&mut s);
        s
    });
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for qualify") {
            break status;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("qualify still running after {limit:?}; killed it");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let stdout = String::from_utf8_lossy(&out_reader.join().unwrap()).into_owned();
    let stderr = String::from_utf8_lossy(&err_reader.join().unwrap()).into_owned();
    let json = serde_json::from_str(stdout.trim()).unwrap_or(Value::Null);
    common::record_evidence_cgroups(&json);
    Run {
        code: status.code().unwrap_or(-1),
        json,
        stdout,
        stderr,
        elapsed: started.elapsed(),
    }
}

/// VmHWM (peak resident set) of a live process, in bytes.
fn vm_hwm(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

fn output_flood_is_drained(backend: &str) {
    const FLOOD_MIB: u64 = 300;
    let _cpu = cpu_heavy();
    let expected_sha = {
        let script = format!("'{}' {FLOOD_MIB} | sha256sum", bin("flood"));
        let out = Command::new("sh").args(["-c", &script]).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        text.split_whitespace().next().unwrap_or("").to_owned()
    };
    let _probing = common::probe_guard();
    let started = Instant::now();
    let child = spawn_probe(
        backend,
        &["--timeout", "120s"],
        &[&bin("flood"), &FLOOD_MIB.to_string()],
    );
    let pid = child.id();
    // qualify's own peak RSS, sampled until it exits (VmHWM only grows).
    let sampler = std::thread::spawn(move || {
        let mut peak = 0;
        while let Some(hwm) = vm_hwm(pid) {
            peak = peak.max(hwm);
            std::thread::sleep(Duration::from_millis(10));
        }
        peak
    });
    let run = finish(child, started, Duration::from_secs(180));
    let qualify_peak = sampler.join().unwrap();
    assert!(run.json.is_object(), "no JSON\n{run}");
    run.expect_outcome("ok").expect_code(0);
    run.expect_flag("output_truncated");
    assert_eq!(run.u64_field("stdout_bytes"), FLOOD_MIB * MIB, "{run}");
    let tail = run.str_field("stdout_tail").unwrap_or("");
    assert!(tail.len() <= 65536, "tail of {} bytes\n{run}", tail.len());
    assert!(
        tail.len() >= 60000,
        "tail of only {} bytes\n{run}",
        tail.len()
    );
    // flood repeats one 1 MiB block of 32-byte numbered lines.
    let last_line = format!("flood line {:020}\n", MIB / 32 - 1);
    assert!(
        tail.ends_with(&last_line),
        "tail does not end with the last line\n{run}"
    );
    assert_eq!(
        run.str_field("stdout_sha256"),
        Some(expected_sha.as_str()),
        "{run}"
    );
    assert!(
        qualify_peak > 0 && qualify_peak < 64 * MIB,
        "qualify itself peaked at {} MiB while draining {FLOOD_MIB} MiB",
        qualify_peak / MIB
    );
}

fn check_interrupt(backend: &str, signal: &str) {
    let _probing = common::probe_guard();
    let started = Instant::now();
    let child = spawn_probe(backend, &["--timeout", "120s"], &["sleep", "100"]);
    let pid = child.id();
    // Wait until the probed `sleep` runs.
    let sleep_pid = loop {
        let found = common::descendants(pid)
            .into_iter()
            .find(|(_, comm)| comm == "sleep")
            .map(|(p, _)| p);
        if let Some(p) = found {
            break p;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the probed sleep never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    std::thread::sleep(Duration::from_millis(300));
    let sent = Command::new("kill")
        .args([&format!("-{signal}"), &pid.to_string()])
        .status()
        .expect("run kill");
    assert!(sent.success());
    let run = finish(child, started, Duration::from_secs(30));
    let gone = process_gone(sleep_pid, Duration::from_secs(3));
    if !gone {
        let _ = Command::new("kill")
            .args(["-9", &sleep_pid.to_string()])
            .status();
    }
    assert!(
        gone,
        "the probed sleep {sleep_pid} survived SIG{signal}\n{run}"
    );
    assert!(run.json.is_object(), "no JSON after SIG{signal}\n{run}");
    run.expect_code(130).expect_outcome("interrupted");
    assert!(run.elapsed < Duration::from_secs(20), "{run}");
}

fn interrupted_by_sigint(backend: &str) {
    check_interrupt(backend, "INT");
    assert_no_leftover_cgroups();
}

fn interrupted_by_sigterm(backend: &str) {
    check_interrupt(backend, "TERM");
    assert_no_leftover_cgroups();
}

// =============================================================================================
// --repeat.

on_every_backend!(
    repeat_deterministic,
    repeat_nondeterministic,
    repeat_with_one_failure
);

fn repeat_deterministic(backend: &str) {
    let run = probe(
        backend,
        &["--repeat", "3", "--timeout", "30s"],
        &[&bin("exit_code"), "0"],
    );
    run.expect_outcome("ok").expect_code(0);
    let runs = run.json["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), 3, "{run}");
    assert!(runs.iter().all(|r| r["outcome"] == "ok"), "{run}");
    assert_eq!(run.json["distinct_outputs"], 1, "{run}");
}

fn repeat_nondeterministic(backend: &str) {
    let run = probe(
        backend,
        &["--repeat", "3", "--timeout", "30s"],
        &[&bin("random_out")],
    );
    run.expect_outcome("ok").expect_code(0);
    assert_eq!(run.json["runs"].as_array().map(Vec::len), Some(3), "{run}");
    assert_eq!(run.json["distinct_outputs"], 3, "{run}");
}

fn repeat_with_one_failure(backend: &str) {
    // The second of three runs fails: the top level is that failure.
    let counter = scratch(&format!("repeat-counter-{backend}"));
    let _ = std::fs::remove_file(&counter);
    let script = format!(
        "n=$(cat '{c}' 2>/dev/null || echo 0); n=$((n+1)); echo $n > '{c}'; [ $n -ne 2 ]",
        c = counter.display()
    );
    let scratch_dir = counter.parent().unwrap().to_string_lossy().into_owned();
    let run = probe(
        backend,
        &[
            "--repeat",
            "3",
            "--timeout",
            "30s",
            "--writable",
            &scratch_dir,
        ],
        &["sh", "-c", &script],
    );
    let _ = std::fs::remove_file(&counter);
    run.expect_outcome("exit_failure").expect_code(1);
    let outcomes: Vec<&str> = run.json["runs"]
        .as_array()
        .expect("runs")
        .iter()
        .map(|r| r["outcome"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(outcomes, ["ok", "exit_failure", "ok"], "{run}");
    assert_eq!(run.json["distinct_outputs"], 1, "{run}");
}

// =============================================================================================
// Backend choice, human output, usage and setup errors (backend-independent).

#[test]
fn auto_picks_the_strongest_available_backend() {
    let expected = if common::backend_available("cgroup2") {
        "cgroup2"
    } else if common::backend_available("cgroup1") {
        "cgroup1"
    } else {
        "rlimit"
    };
    let run = qualify(&["probe", "--json", "--", "true"]);
    run.expect_outcome("ok")
        .expect_code(0)
        .expect_backend(expected);
}

#[test]
fn human_summary_without_json() {
    let run = qualify(&["probe", "--backend", "rlimit", "--", &bin("exit_code"), "3"]);
    assert_eq!(run.code, 1, "{run}");
    assert!(run.json.is_null(), "JSON without --json\n{run}");
    assert!(run.stdout.contains("exit_failure"), "{run}");
}

/// A usage or setup error: exit 2, no JSON on stdout, and a first stderr line naming `problem`.
#[track_caller]
fn check_usage_error(args: &[&str], problem: &str) -> Run {
    let run = qualify(args);
    assert_eq!(
        run.code,
        2,
        "`qualify {}` should be a usage error\n{run}",
        args.join(" ")
    );
    assert!(run.json.is_null(), "a usage error printed a result\n{run}");
    let first = run
        .stderr
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("");
    assert!(
        first.contains(problem),
        "first stderr line does not name `{problem}`: {first:?}\n{run}"
    );
    run
}

/// Errors that qualify itself reports (not clap) must be exactly one line.
#[track_caller]
fn check_one_line(run: &Run) {
    let lines: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| !l.trim().is_empty())
        .collect();
    assert_eq!(lines.len(), 1, "not a one-line message: {lines:?}");
}

#[test]
fn usage_unknown_flag() {
    for args in [
        &["probe", "--frobnicate", "--", "true"][..],
        &["probe", "--memory", "64M", "--frobnicate", "--", "true"][..],
    ] {
        let run = check_usage_error(args, "--frobnicate");
        let first = run.stderr.lines().next().unwrap_or("").to_lowercase();
        assert!(
            ["unknown", "unexpected", "unrecognized"]
                .iter()
                .any(|w| first.contains(w)),
            "an unknown flag must be reported as such, not as something else\n{run}"
        );
    }
}

#[test]
fn usage_bad_size() {
    let run = check_usage_error(&["probe", "--memory", "12X", "--", "true"], "12X");
    assert!(
        run.stderr.contains("expected a size"),
        "no hint at a fix\n{run}"
    );
}

#[test]
fn usage_bad_duration_and_backend() {
    check_usage_error(&["probe", "--timeout", "soon", "--", "true"], "soon");
    check_usage_error(&["probe", "--backend", "docker", "--", "true"], "docker");
    check_usage_error(&["probe", "--progress", "vibes", "--", "true"], "vibes");
}

#[test]
fn usage_missing_command() {
    let run = qualify(&["probe", "--json"]);
    assert_eq!(run.code, 2, "{run}");
}

#[test]
fn usage_command_not_found() {
    for missing in ["qualify-no-such-command-h1", "/nonexistent/qualify/cmd"] {
        for backend in ["rlimit", "cgroup1", "cgroup2"] {
            if !common::backend_available(backend) {
                continue;
            }
            let run = check_usage_error(
                &["probe", "--backend", backend, "--json", "--", missing],
                missing,
            );
            check_one_line(&run);
        }
    }
    assert_no_leftover_cgroups();
}

#[test]
fn usage_forced_backend_unavailable() {
    let mut checked = false;
    for backend in ["cgroup2", "cgroup1"] {
        if common::backend_available(backend) {
            println!("skipping: backend {backend} is available here, cannot test its absence");
            continue;
        }
        let run = check_usage_error(
            &["probe", "--backend", backend, "--json", "--", "true"],
            backend,
        );
        check_one_line(&run);
        checked = true;
    }
    if !checked {
        println!("skipping: every cgroup backend is available on this host");
    }
}

/// Without writable cgroups (an ordinary user on this host), `auto` falls back to rlimit with one
/// warning line, and the result says so.
#[test]
fn auto_falls_back_to_rlimit_with_a_one_line_warning_without_writable_cgroups() {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let setpriv = Path::new("/usr/bin/setpriv");
    if !root || !setpriv.exists() {
        eprintln!("skipping: needs root and setpriv to run qualify as an ordinary user");
        return;
    }
    let out = Command::new(setpriv)
        .args(["--reuid", "65534", "--regid", "65534", "--clear-groups"])
        .args([
            common::QUALIFY,
            "probe",
            "--json",
            "--memory",
            "64M",
            "--",
            "true",
        ])
        .output()
        .expect("run qualify as nobody");
    let stderr = String::from_utf8_lossy(&out.stderr);
    if stderr.contains("Permission denied") && out.stdout.is_empty() {
        eprintln!("skipping: the test binary is not reachable by an ordinary user: {stderr}");
        return;
    }
    assert_eq!(out.status.code(), Some(0), "stderr: {stderr}");
    let warnings: Vec<&str> = stderr.lines().filter(|l| l.contains("warning")).collect();
    assert_eq!(
        warnings.len(),
        1,
        "exactly one warning line expected: {stderr}"
    );
    assert!(warnings[0].contains("rlimit"), "{stderr}");
    let v: Value = serde_json::from_slice(&out.stdout).expect("JSON result");
    assert_eq!(v["enforcement"]["backend"], "rlimit");
    assert_eq!(v["enforcement"]["memory"], "watchdog");
    assert!(v["evidence"]["backend_fallback"].is_string());
}

// =============================================================================================
// Spin-wait deadlocks: MPI ranks, OpenMP teams and spin locks stuck at full CPU in a blocking
// synchronization call, recognised from stack samples at the stall window; and the programs
// that must never be called a deadlock (long collectives moving data, computing threads,
// printing, waiting on the network).

/// Where the MPI and OpenMP programs of `corpus/mpi` and `corpus/openmp` are built (once per
/// test binary), or why they cannot be: `Err` means skip (no mpicc/mpirun, no OpenMP), unless
/// QUALIFY_REQUIRE_MPI is set (CI), which makes it a failure.
fn parallel_corpus() -> Result<&'static Path, String> {
    static DIR: std::sync::OnceLock<Result<std::path::PathBuf, String>> =
        std::sync::OnceLock::new();
    let built = DIR.get_or_init(|| {
        let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("corpus-parallel");
        std::fs::create_dir_all(&out).map_err(|e| e.to_string())?;
        for (dir, compiler, flags) in [
            ("mpi", "mpicc", &["-O1"][..]),
            ("openmp", "cc", &["-O1", "-fopenmp"][..]),
        ] {
            let mut sources: Vec<std::path::PathBuf> =
                std::fs::read_dir(common::corpus_src().join(dir))
                    .map_err(|e| format!("corpus/{dir}: {e}"))?
                    .map(|e| e.map(|e| e.path()).map_err(|e| e.to_string()))
                    .collect::<Result<_, _>>()?;
            sources.retain(|p| p.extension().is_some_and(|e| e == "c"));
            sources.sort();
            for src in sources {
                let name = src.file_stem().unwrap().to_string_lossy().into_owned();
                let tmp = out.join(format!(".{name}.{}", std::process::id()));
                let status = Command::new(compiler)
                    .args(flags)
                    .arg("-o")
                    .arg(&tmp)
                    .arg(&src)
                    .stderr(Stdio::null())
                    .status()
                    .map_err(|e| format!("cannot run {compiler}: {e}"))?;
                if !status.success() {
                    return Err(format!("{compiler} cannot build {}", src.display()));
                }
                std::fs::rename(&tmp, out.join(&name)).map_err(|e| e.to_string())?;
            }
        }
        let mpirun = Command::new("mpirun")
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        if !mpirun.is_ok_and(|s| s.success()) {
            return Err("mpirun is not on PATH".into());
        }
        Ok(out)
    });
    match built {
        Ok(p) => Ok(p.as_path()),
        Err(e) if std::env::var_os("QUALIFY_REQUIRE_MPI").is_some() => {
            panic!("QUALIFY_REQUIRE_MPI is set but the MPI/OpenMP corpus cannot run: {e}")
        }
        Err(e) => Err(format!(
            "skipping: {e} (install openmpi-bin libopenmpi-dev and gcc with OpenMP)"
        )),
    }
}

/// The path of a built MPI/OpenMP program, or `None` (after saying why) to skip.
fn parallel_bin(name: &str) -> Option<String> {
    match parallel_corpus() {
        Ok(dir) => Some(dir.join(name).to_string_lossy().into_owned()),
        Err(why) => {
            println!("{why}");
            None
        }
    }
}

/// Run `mpirun -n RANKS PROGRAM ARGS` under the probe as a user would: Open MPI's defaults (no
/// MCA variables; TCP and shared-memory transports loaded), only the two variables root needs
/// to start it. The sandbox's private `/tmp` and `/dev/shm` take the session directory and the
/// shared-memory segments a killed run leaves.
fn probe_mpi(backend: &str, opts: &[&str], ranks: &str, program: &str, args: &[&str]) -> Run {
    let mut cmd = vec!["mpirun", "--oversubscribe", "-n", ranks, program];
    cmd.extend_from_slice(args);
    probe_with_env(
        backend,
        opts,
        &cmd,
        &[
            ("OMPI_ALLOW_RUN_AS_ROOT", "1"),
            ("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"),
        ],
    )
}

/// The same, tuned as the tests once ran every MPI program: shared memory only
/// (`OMPI_MCA_btl=self,vader`, no TCP sockets), segments and session directory in a directory
/// of this test. One test keeps it, to show both settings work.
fn probe_mpi_shared_memory_only(
    backend: &str,
    opts: &[&str],
    ranks: &str,
    program: &str,
    args: &[&str],
) -> Run {
    let dir = common::test_dir("probe_mpi", "mpi");
    let d = dir.to_string_lossy().into_owned();
    let mut cmd = vec!["mpirun", "--oversubscribe", "-n", ranks, program];
    cmd.extend_from_slice(args);
    // Open MPI's session directory is written inside the sandbox.
    let mut opts = opts.to_vec();
    opts.extend_from_slice(&["--writable", &d]);
    probe_with_env(
        backend,
        &opts,
        &cmd,
        &[
            ("OMPI_ALLOW_RUN_AS_ROOT", "1"),
            ("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"),
            ("OMPI_MCA_btl", "self,vader"),
            ("OMPI_MCA_btl_vader_backing_directory", &d),
            ("OMPI_MCA_orte_tmpdir_base", &d),
            ("TMPDIR", &d),
        ],
    )
}

/// A spin-wait deadlock with --stall 2s --timeout 60s: decided near the stall window (not at
/// the timeout) from stack samples, the detail naming the stuck call.
#[track_caller]
fn check_spin_deadlock(run: &Run, says: &[&str]) {
    run.expect_outcome("deadlock").expect_code(1);
    let wall = run.wall();
    assert!(
        wall < 30.0,
        "deadlock decided after {wall:.1}s: not at the 2s stall window\n{run}"
    );
    assert!(wall >= 1.5, "deadlock before a 2s stall window\n{run}");
    assert!(run.json["timeout_kind"].is_null(), "{run}");
    let detail = run.str_field("detail").unwrap_or("");
    for s in says {
        assert!(detail.contains(s), "the detail does not say {s:?}\n{run}");
    }
    let spin = &run.json["evidence"]["spin"];
    assert_eq!(spin["verdict"], "deadlock", "{run}");
    assert_eq!(
        spin["sample_seconds"].as_array().map(Vec::len),
        Some(3),
        "three stack samples\n{run}"
    );
    assert!(
        run.json["evidence"]["stacks"]["stacks"]
            .as_object()
            .is_some_and(|m| !m.is_empty()),
        "no stacks in the evidence\n{run}"
    );
    assert!(run.json["evidence"]["threads"].is_array(), "{run}");
}

on_every_backend!(spin_mpi_send_send_above_the_eager_limit);

fn spin_mpi_send_send_above_the_eager_limit(backend: &str) {
    let Some(exchange) = parallel_bin("exchange") else {
        return;
    };
    let _cpu = cpu_heavy();
    let run = probe_mpi_shared_memory_only(
        backend,
        &["--stall", "2s", "--timeout", "60s"],
        "2",
        &exchange,
        &["10000000"],
    );
    check_spin_deadlock(
        &run,
        &[
            "all 2 ranks in MPI_Send",
            // The frame each rank spins in is whatever the last sample caught (opal_progress,
            // mca_pml_ob1_send, …).
            "rank 0: MPI_Send (spinning in ",
            "rank 1: MPI_Send (spinning in ",
            "mpirun waiting for its ranks",
            "matched by function name",
        ],
    );
    let spin = &run.json["evidence"]["spin"];
    assert_eq!(spin["matched_by"], "function", "{run}");
    for rank in ["0", "1"] {
        assert!(
            spin["ranks"][rank]
                .as_str()
                .is_some_and(|s| s.starts_with("MPI_Send")),
            "rank {rank} not named in MPI_Send\n{run}"
        );
    }
    assert_eq!(spin["worlds"][0]["size"], 2, "{run}");
    assert_no_leftover_cgroups();
}

#[test]
fn spin_mpi_send_send_below_the_eager_limit_completes() {
    let Some(exchange) = parallel_bin("exchange") else {
        return;
    };
    let _cpu = cpu_heavy();
    let run = probe_mpi(
        "auto",
        &["--stall", "2s", "--timeout", "60s"],
        "2",
        &exchange,
        &["1000"],
    );
    run.expect_outcome("ok").expect_code(0);
    assert!(
        run.str_field("stdout_tail")
            .unwrap_or("")
            .contains("exchanged 1000 bytes"),
        "{run}"
    );
}

#[test]
fn spin_mpi_mismatched_collectives() {
    let Some(mismatch) = parallel_bin("mismatch") else {
        return;
    };
    let _cpu = cpu_heavy();
    let run = probe_mpi(
        "auto",
        &["--stall", "2s", "--timeout", "60s"],
        "2",
        &mismatch,
        &[],
    );
    check_spin_deadlock(
        &run,
        &[
            "all 2 ranks in blocking calls",
            "rank 0: MPI_Barrier",
            "rank 1: MPI_Allreduce",
            // Open MPI's defaults load the TCP transport, whose progress engine rewrites the
            // ranks' heaps while it polls: the evidence says that memory was left out.
            "heap left out",
            "progress engine rewrites it while polling",
        ],
    );
    let left_out = &run.json["evidence"]["spin"]["memory"]["left_out"];
    assert!(
        left_out.as_array().is_some_and(|a| a.len() >= 2),
        "every rank's heap is named as left out\n{run}"
    );
}

#[test]
fn spin_mpi_send_send_with_open_mpis_defaults() {
    let Some(exchange) = parallel_bin("exchange") else {
        return;
    };
    let _cpu = cpu_heavy();
    let run = probe_mpi(
        "auto",
        &["--stall", "2s", "--timeout", "60s"],
        "2",
        &exchange,
        &["10000000"],
    );
    check_spin_deadlock(
        &run,
        &[
            "all 2 ranks in MPI_Send",
            "mpirun waiting for its ranks",
            "heap left out",
        ],
    );
}

#[test]
fn spin_mpi_receive_from_the_wrong_rank() {
    let Some(wrong) = parallel_bin("wrong_source") else {
        return;
    };
    let _cpu = cpu_heavy();
    let run = probe_mpi(
        "auto",
        &["--stall", "2s", "--timeout", "60s"],
        "2",
        &wrong,
        &[],
    );
    check_spin_deadlock(&run, &["all 2 ranks in MPI_Recv", "rank 1: MPI_Recv"]);
}

#[test]
fn spin_mpi_long_collectives_moving_data_are_not_deadlocks() {
    let Some(allreduce) = parallel_bin("allreduce") else {
        return;
    };
    let _cpu = cpu_heavy();
    // Large buffers (8 MiB per call) and a tight loop of one-double calls: every rank sits in
    // MPI_Allreduce in nearly every stack sample, silently, for 5 stall windows.
    for doubles in ["1048576", "1"] {
        let run = probe_mpi(
            "auto",
            &["--stall", "1s", "--timeout", "60s"],
            "2",
            &allreduce,
            &[doubles, "5"],
        );
        run.expect_outcome("ok").expect_code(0);
        assert!(
            run.str_field("stdout_tail")
                .unwrap_or("")
                .contains("allreduces of"),
            "{run}"
        );
    }
}

#[test]
fn spin_mpi_rank_waiting_on_the_network_is_ambiguous_not_deadlock() {
    let Some(net_wait) = parallel_bin("net_wait") else {
        return;
    };
    let _cpu = cpu_heavy();
    let run = probe_mpi(
        "auto",
        &["--stall", "1s", "--timeout", "6s"],
        "2",
        &net_wait,
        &[],
    );
    run.expect_outcome("timeout").expect_code(1);
    assert_eq!(
        run.str_field("timeout_kind"),
        Some("ambiguous_spin"),
        "{run}"
    );
    let detail = run.str_field("detail").unwrap_or("");
    for s in [
        "rank 0: MPI_Recv",
        "outside the tree",
        "accept",
        "not proven",
    ] {
        assert!(detail.contains(s), "the detail does not say {s:?}\n{run}");
    }
    assert_eq!(
        run.json["evidence"]["spin"]["verdict"], "ambiguous",
        "{run}"
    );
}

/// OMP_WAIT_POLICY for the OpenMP programs (none: the default policy).
fn probe_omp(opts: &[&str], cmd: &[&str], policy: Option<&str>) -> Run {
    let env: Vec<(&str, &str)> = policy.map(|p| ("OMP_WAIT_POLICY", p)).into_iter().collect();
    probe_with_env("auto", opts, cmd, &env)
}

#[test]
fn spin_openmp_barrier_one_thread_skips_active_policy() {
    let Some(barrier) = parallel_bin("omp_barrier") else {
        return;
    };
    let _cpu = cpu_heavy();
    let run = probe_omp(
        &["--stall", "2s", "--timeout", "60s"],
        &[&barrier],
        Some("active"),
    );
    // Debian's libgomp is stripped: the barrier is `?? () from libgomp.so.1`.
    check_spin_deadlock(
        &run,
        &[
            "an OpenMP runtime call",
            "main._omp_fn",
            "libgomp",
            "matched by library",
        ],
    );
    assert_eq!(
        run.json["evidence"]["spin"]["matched_by"], "library",
        "{run}"
    );
}

#[test]
fn spin_openmp_barrier_one_thread_skips_default_policy_sleeps() {
    let Some(barrier) = parallel_bin("omp_barrier") else {
        return;
    };
    // The default policy spins briefly, then sleeps in untimed futex waits: the blocked-wait
    // rule decides, without stack samples.
    let run = probe_omp(&["--stall", "2s", "--timeout", "60s"], &[&barrier], None);
    run.expect_outcome("deadlock").expect_code(1);
    let detail = run.str_field("detail").unwrap_or("");
    assert!(
        detail.contains("untimed waits") && detail.contains("futex"),
        "{run}"
    );
    assert!(run.wall() < 30.0, "{run}");
}

#[test]
fn spin_openmp_lock_order_active_policy() {
    let Some(lockorder) = parallel_bin("omp_lockorder") else {
        return;
    };
    let _cpu = cpu_heavy();
    let run = probe_omp(
        &["--stall", "2s", "--timeout", "60s"],
        &[&lockorder],
        Some("active"),
    );
    check_spin_deadlock(
        &run,
        &[
            "2 thread(s) in an OpenMP runtime call",
            "main._omp_fn",
            "matched by library",
        ],
    );
}

#[test]
fn spin_openmp_thread_computing_beside_a_barrier_is_never_deadlock() {
    let Some(compute) = parallel_bin("omp_compute") else {
        return;
    };
    let _cpu = cpu_heavy();
    // Cut short: one thread computes, the other spins at the barrier — ambiguous, a timeout.
    let run = probe_omp(
        &["--stall", "1s", "--timeout", "5s"],
        &[&compute, "60"],
        Some("active"),
    );
    run.expect_outcome("timeout").expect_code(1);
    assert_eq!(
        run.str_field("timeout_kind"),
        Some("ambiguous_spin"),
        "{run}"
    );
    let detail = run.str_field("detail").unwrap_or("");
    // The computing thread is named by the frame the sample caught: its loop, or the clock it
    // reads (`now`, not inlined at -O1).
    assert!(
        (detail.contains("computing in main._omp_fn") || detail.contains("computing in now"))
            && detail.contains("OpenMP"),
        "{run}"
    );
    // Run to its end: ok.
    let run = probe_omp(
        &["--stall", "1s", "--timeout", "60s"],
        &[&compute, "3"],
        Some("active"),
    );
    run.expect_outcome("ok").expect_code(0);
    // Printing while it computes: progressing, not even examined.
    let run = probe_omp(
        &["--stall", "1s", "--timeout", "4s"],
        &[&compute, "60", "100"],
        Some("active"),
    );
    run.expect_outcome("timeout").expect_code(1);
    assert_eq!(run.str_field("timeout_kind"), Some("progressing"), "{run}");
}

#[test]
fn spin_lock_never_released() {
    let _cpu = cpu_heavy();
    let run = probe(
        "auto",
        &["--stall", "2s", "--timeout", "60s"],
        &[&bin("spinlock")],
    );
    check_spin_deadlock(
        &run,
        &[
            "1 thread(s) in pthread_spin_lock",
            "spinning in pthread_spin_lock",
            "1 thread(s) blocked in untimed waits",
        ],
    );
}

#[test]
fn spin_without_a_stack_sampler_stays_a_timeout_that_says_why() {
    let _cpu = cpu_heavy();
    let empty = common::test_dir("probe_spin", "empty-path");
    let path = empty.to_string_lossy().into_owned();
    let run = probe_with_env(
        "auto",
        &["--stall", "1s", "--timeout", "4s"],
        &[&bin("spinlock")],
        &[("PATH", &path)],
    );
    run.expect_outcome("timeout").expect_code(1);
    assert_eq!(run.str_field("timeout_kind"), Some("busy"), "{run}");
    let detail = run.str_field("detail").unwrap_or("");
    assert!(
        detail.contains("not examined for spin-waits") && detail.contains("eu-stack"),
        "{run}"
    );
    assert!(
        run.json["evidence"]["spin"]["unexamined"]
            .as_str()
            .is_some_and(|s| s.contains("gdb")),
        "{run}"
    );
}
