//! `Control::signal_tree` and `Control::set_frozen` on a real process tree: every process of it is
//! stopped (or frozen), continued and
//! killed at once, and a tree stopped on purpose is never judged a deadlock while it is.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use qualify_probe::{Control, Outcome, ProbeSpec, Sandbox};

/// The states (`/proc/PID/stat` field 3) of the tree under `root` (root included).
fn states(root: u32) -> Vec<(u32, char)> {
    let mut out = Vec::new();
    let mut stack = vec![root];
    while let Some(pid) = stack.pop() {
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let Some((_, rest)) = stat.rsplit_once(") ") else {
            continue;
        };
        let state = rest.chars().next().unwrap_or('?');
        out.push((pid, state));
        for task in std::fs::read_dir(format!("/proc/{pid}/task"))
            .into_iter()
            .flatten()
            .flatten()
        {
            let children =
                std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
            stack.extend(
                children
                    .split_whitespace()
                    .filter_map(|c| c.parse::<u32>().ok()),
            );
        }
    }
    out
}

/// Two processes, each waiting forever for a lock it holds itself: a deadlock after the stall
/// window — unless the tree is held.
fn two_deadlocked(dir: &std::path::Path, control: &Arc<Control>) -> ProbeSpec {
    let program =
        "import os, threading\nos.fork()\nl = threading.Lock()\nl.acquire()\nl.acquire()\n";
    let mut spec = ProbeSpec::new(
        ["/usr/bin/python3", "-c", program]
            .iter()
            .map(Into::into)
            .collect(),
    );
    spec.workdir = Some(dir.to_path_buf());
    spec.limits.stall_seconds = 1.0;
    spec.limits.timeout_seconds = 30.0;
    spec.control = Some(Arc::clone(control));
    spec.sandbox = Sandbox::off();
    spec
}

fn test_dir(name: &str) -> std::path::PathBuf {
    let d = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("control-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Wait until the tree under the control's main process has `n` processes.
fn await_tree(control: &Control, n: usize) -> u32 {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(pid) = control.pid()
            && states(pid).len() >= n
        {
            return pid;
        }
        assert!(
            Instant::now() < deadline,
            "the tree never had {n} processes"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_held_tree_is_stopped_whole_and_judged_only_after_it_is_continued() {
    let dir = test_dir("hold");
    let control = Arc::new(Control::default());
    let spec = two_deadlocked(&dir, &control);
    let cancel = Arc::new(AtomicBool::new(false));
    let run = std::thread::spawn(move || qualify_probe::probe(&spec, &cancel));
    let main = await_tree(&control, 2);
    let sent = control.signal_tree(libc::SIGSTOP).unwrap();
    assert!(sent >= 2, "the shell and cat: {sent}");
    std::thread::sleep(Duration::from_millis(100));
    let stopped = states(main);
    assert!(
        stopped.iter().all(|(_, s)| *s == 'T'),
        "every process is stopped: {stopped:?}"
    );
    // Held for three stall windows: no verdict meanwhile.
    std::thread::sleep(Duration::from_secs(3));
    assert!(!run.is_finished(), "a held tree was judged");
    let continued = Instant::now();
    control.signal_tree(libc::SIGCONT).unwrap();
    let r = run.join().unwrap().unwrap();
    assert_eq!(r.outcome, Outcome::Deadlock, "{}", r.detail);
    assert!(
        continued.elapsed() >= Duration::from_secs(1),
        "the stall window counts from SIGCONT: judged {:?} after it",
        continued.elapsed()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_killed_tree_is_gone_at_once() {
    let dir = test_dir("kill");
    let control = Arc::new(Control::default());
    let mut spec = two_deadlocked(&dir, &control);
    spec.limits.stall_seconds = 20.0;
    let cancel = Arc::new(AtomicBool::new(false));
    let run = std::thread::spawn(move || qualify_probe::probe(&spec, &cancel));
    let main = await_tree(&control, 2);
    let pids: Vec<u32> = states(main).into_iter().map(|(p, _)| p).collect();
    let sent = control.signal_tree(libc::SIGKILL).unwrap();
    assert!(sent >= 2, "{sent}");
    let r = run.join().unwrap().unwrap();
    assert_eq!(r.outcome, Outcome::Killed, "{}", r.detail);
    for pid in pids {
        let gone = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map_or(true, |s| s.contains(") Z "));
        assert!(gone, "process {pid} survived");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_frozen_tree_is_judged_only_after_it_is_thawed() {
    let dir = test_dir("freeze");
    let control = Arc::new(Control::default());
    let spec = two_deadlocked(&dir, &control);
    let cancel = Arc::new(AtomicBool::new(false));
    let run = std::thread::spawn(move || qualify_probe::probe(&spec, &cancel));
    await_tree(&control, 2);
    if !control.set_frozen(true) {
        // No cgroup freezer on this host (rlimit backend, no unified hierarchy): nothing to
        // test here; the caller stops the tree by signal instead (the test above).
        control.signal_tree(libc::SIGKILL).unwrap();
        let _ = run.join();
        eprintln!("no cgroup.freeze for the probe's tree: skipped");
        return;
    }
    // Frozen for three stall windows: no verdict meanwhile.
    std::thread::sleep(Duration::from_secs(3));
    assert!(!run.is_finished(), "a frozen tree was judged");
    let thawed = Instant::now();
    assert!(control.set_frozen(false));
    let r = run.join().unwrap().unwrap();
    assert_eq!(r.outcome, Outcome::Deadlock, "{}", r.detail);
    assert!(
        thawed.elapsed() >= Duration::from_secs(1),
        "the stall window counts from the thaw: judged {:?} after it",
        thawed.elapsed()
    );
    let _ = std::fs::remove_dir_all(&dir);
}
