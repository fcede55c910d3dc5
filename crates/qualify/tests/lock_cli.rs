//! Concurrent `qualify run`s: one workdir is held by one run from its build to its receipt, so a
//! run never executes a program another run is rebuilding (which failed cells with status 126
//! and blamed the artifact); `--no-wait` names the holder and exits 2; Ctrl-C while waiting
//! exits 130 and writes nothing; a SIGKILLed holder frees the lock; measuring runs never
//! overlap, and a measuring run names the other runs that used the machine.

#[allow(unused_macros)]
mod common;

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::{QUALIFY, TestDir, test_dir};
use serde_json::Value;

/// The `sumsq` example in a fresh workdir, with a spec whose build step rewrites the program
/// every run executes.
fn sumsq_workdir(name: &str) -> TestDir {
    let dir = test_dir("lock", name);
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/sumsq/sumsq.c");
    std::fs::copy(&src, dir.join("sumsq.c")).expect("copy sumsq.c");
    std::fs::write(
        dir.join("qualify.toml"),
        r#"[artifact]
name = "sumsq"
command = "./sumsq --threads {threads} --n {n}"
build = "cc -O2 -pthread -o sumsq sumsq.c"

[claim]
level = "trial"

[functional]
command = "./sumsq --check"

[limits]
memory = "64MiB"
timeout = "20s"
stall = "2s"

[[axis]]
name = "threads"
kind = "concurrency"
values = [1, 2]

[[axis]]
name = "n"
kind = "workload"
values = [1000, 1000000]
"#,
    )
    .expect("write spec");
    dir
}

/// A spec in `dir` named `file` whose one cell sleeps `seconds`.
fn sleeper(dir: &Path, file: &str, seconds: u32) {
    std::fs::write(
        dir.join(file),
        format!(
            r#"[artifact]
name = "sleeper"
command = "sleep {seconds}"

[claim]
level = "functional"

[functional]
command = "true"

[limits]
timeout = "60s"
"#
        ),
    )
    .expect("write spec");
}

fn spawn_run(dir: &Path, spec: &str, receipt: &str, extra: &[&str]) -> Child {
    Command::new(QUALIFY)
        .args(["run", spec, "--receipt", receipt])
        .args(extra)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start qualify")
}

fn context(o: &Output) -> String {
    format!(
        "exit {:?}\n--- stdout\n{}\n--- stderr\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn receipt(path: &Path) -> Value {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("no receipt at {}: {e}", path.display()));
    serde_json::from_str(&text).expect("receipt is JSON")
}

/// Wait until the workdir lock in `dir` names a holder (its run passed the build's start).
fn wait_for_holder(dir: &Path, holder: &mut Child) -> u32 {
    let lock = dir.join(".qualify/run.lock");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(text) = std::fs::read_to_string(&lock)
            && let Ok(v) = serde_json::from_str::<Value>(&text)
            && v["pid"].as_u64() == Some(u64::from(holder.id()))
        {
            return holder.id();
        }
        if let Ok(Some(status)) = holder.try_wait() {
            panic!("the holder ended ({status}) before it took the workdir lock");
        }
        assert!(Instant::now() < deadline, "no holder in {}", lock.display());
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn three_runs_in_one_workdir_all_get_the_single_runs_verdict() {
    let dir = sumsq_workdir("three");
    let runs: Vec<Child> = (1..=3)
        .map(|i| spawn_run(&dir, "qualify.toml", &format!("receipt-{i}.json"), &[]))
        .collect();
    let outs: Vec<Output> = runs
        .into_iter()
        .map(|c| c.wait_with_output().expect("wait for qualify"))
        .collect();
    for (i, o) in outs.iter().enumerate() {
        assert_eq!(o.status.code(), Some(0), "run {}: {}", i + 1, context(o));
        let r = receipt(&dir.join(format!("receipt-{}.json", i + 1)));
        let p = &r["predicate"];
        assert_eq!(
            p["claim"]["supported"],
            true,
            "run {}: {}",
            i + 1,
            p["claim"]
        );
        assert_eq!(p["layers"]["functional"]["status"], "closed");
        for c in p["cells"].as_array().expect("cells") {
            assert_eq!(c["result"]["outcome"], "ok", "run {}: {c}", i + 1);
        }
    }
    // They did meet: the later ones waited, naming who they waited for.
    let waited = outs
        .iter()
        .filter(|o| {
            String::from_utf8_lossy(&o.stderr).contains("qualify: waiting for the run of pid")
        })
        .count();
    assert!(
        waited >= 1,
        "no run waited: {}",
        outs.iter().map(context).collect::<Vec<_>>().join("\n")
    );
    // The shared ledger holds three supported receipts and no failure of the artifact.
    let list = Command::new(QUALIFY)
        .args(["ledger", "list", "--json"])
        .current_dir(&*dir)
        .output()
        .expect("ledger list");
    let list: Value = serde_json::from_slice(&list.stdout).expect("ledger list is JSON");
    let entries = list.as_array().expect("an array");
    assert_eq!(entries.len(), 3, "{list:#}");
    for e in entries {
        assert_eq!(e["supported"], true, "{e}");
    }
}

#[test]
fn no_wait_names_the_holder_ctrl_c_while_waiting_writes_nothing_and_sigkill_frees_the_lock() {
    let dir = test_dir("lock", "holder");
    sleeper(&dir, "slow.toml", 30);
    sleeper(&dir, "quick.toml", 0);
    let mut holder = spawn_run(&dir, "slow.toml", "slow.json", &[]);
    let pid = wait_for_holder(&dir, &mut holder);

    // --no-wait: exit 2 at once, naming the holder.
    let started = Instant::now();
    let o = spawn_run(&dir, "quick.toml", "quick.json", &["--no-wait"])
        .wait_with_output()
        .expect("wait");
    assert_eq!(o.status.code(), Some(2), "{}", context(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(&format!("is in use by the run of pid {pid} (started"))
            && err.contains("slow.toml"),
        "{}",
        context(&o)
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "--no-wait waited"
    );
    assert!(!dir.join("quick.json").exists());

    // Waiting, then Ctrl-C: exit 130, nothing written.
    let waiter = spawn_run(&dir, "quick.toml", "waited.json", &[]);
    std::thread::sleep(Duration::from_millis(1500));
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(waiter.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .expect("SIGINT the waiter");
    let o = waiter.wait_with_output().expect("wait");
    assert_eq!(o.status.code(), Some(130), "{}", context(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(&format!("waiting for the run of pid {pid}"))
            && err.contains("nothing was run or written"),
        "{}",
        context(&o)
    );
    assert!(!dir.join("waited.json").exists());

    // The holder is SIGKILLed: the kernel drops its lock, the next run goes ahead at once.
    holder.kill().expect("SIGKILL the holder");
    let _ = holder.wait();
    let o = spawn_run(&dir, "quick.toml", "after.json", &["--no-wait"])
        .wait_with_output()
        .expect("wait");
    assert_eq!(o.status.code(), Some(0), "{}", context(&o));
    assert!(dir.join("after.json").exists());
    // Only the one finished run reached the ledger.
    let list = Command::new(QUALIFY)
        .args(["ledger", "list", "--json"])
        .current_dir(&*dir)
        .output()
        .expect("ledger list");
    let list: Value = serde_json::from_slice(&list.stdout).expect("ledger list is JSON");
    assert_eq!(list.as_array().map(Vec::len), Some(1), "{list:#}");
}

/// A measuring spec: `sumsq` in three rounds.
const MEASURING: &str = r#"[artifact]
name = "sumsq"
command = "./sumsq --threads {threads} --n 300000"
build = "cc -O2 -pthread -o sumsq sumsq.c"

[claim]
level = "trial"

[[axis]]
name = "threads"
kind = "concurrency"
values = [1, 2]

[performance]
repeat = 3
warmup = 0
"#;

fn measuring_workdir(name: &str) -> TestDir {
    let dir = test_dir("lock", name);
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/sumsq/sumsq.c");
    std::fs::copy(&src, dir.join("sumsq.c")).expect("copy sumsq.c");
    std::fs::write(dir.join("qualify.toml"), MEASURING).expect("write spec");
    dir
}

fn machine(r: &Value) -> &Value {
    &r["predicate"]["performance"]["rounds"]["machine"]
}

#[test]
fn measuring_runs_never_overlap_and_name_the_runs_beside_them() {
    let a = measuring_workdir("measure-a");
    let b = measuring_workdir("measure-b");
    let idle = test_dir("lock", "idle");
    sleeper(&idle, "qualify.toml", 4);
    // A run that does not measure, active while the others measure.
    let mut bystander = spawn_run(&idle, "qualify.toml", "idle.json", &["--no-ledger"]);
    wait_for_holder(&idle, &mut bystander);
    let ra = spawn_run(&a, "qualify.toml", "receipt.json", &["--no-ledger"]);
    let rb = spawn_run(&b, "qualify.toml", "receipt.json", &["--no-ledger"]);
    let (oa, ob) = (
        ra.wait_with_output().expect("wait"),
        rb.wait_with_output().expect("wait"),
    );
    let oi = bystander.wait_with_output().expect("wait");
    assert_eq!(oi.status.code(), Some(0), "{}", context(&oi));
    for o in [&oa, &ob] {
        assert_ne!(o.status.code(), Some(2), "{}", context(o));
    }
    let (ra, rb) = (
        receipt(&a.join("receipt.json")),
        receipt(&b.join("receipt.json")),
    );
    let (ma, mb) = (machine(&ra), machine(&rb));
    for m in [ma, mb] {
        assert_eq!(m["exclusive"], true, "{m}");
        assert_eq!(m["watched"], true, "{m}");
    }
    let span = |m: &Value| (m["from"].as_f64().unwrap(), m["to"].as_f64().unwrap());
    let ((a0, a1), (b0, b1)) = (span(ma), span(mb));
    assert!(a0 < a1 && b0 < b1, "{ma} {mb}");
    assert!(a1 <= b0 || b1 <= a0, "measurements overlapped: {ma} {mb}");
    // The one that measured first saw the bystander (it slept 4 s, longer than a round).
    let first = if a0 < b0 { &ra } else { &rb };
    let runs = machine(first)["concurrent_runs"].to_string();
    assert!(
        runs.contains(&format!("pid {}", oi_pid(&idle))),
        "the bystander is not named: {}",
        machine(first)
    );
    let layer = first["predicate"]["layers"]["performance"].to_string();
    assert!(
        layer.contains("other qualify run(s) used this machine while cells were measured"),
        "{layer}"
    );
}

/// The pid the bystander's receipt recorded as its holder: its lock file still names it.
fn oi_pid(dir: &Path) -> u64 {
    let text = std::fs::read_to_string(dir.join(".qualify/run.lock")).expect("lock file");
    let v: Value = serde_json::from_str(&text).expect("lock file is JSON");
    v["pid"].as_u64().expect("a pid")
}
