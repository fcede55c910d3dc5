//! Helpers for the `qualify probe` integration tests: the corpus compiled once per test binary,
//! running the real binary with `--json`, backend detection, and checks that nothing (processes,
//! cgroups) outlives a probe.

#![allow(dead_code)]

use std::collections::BTreeSet;
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, MutexGuard, OnceLock, RwLock, RwLockReadGuard};
use std::time::{Duration, Instant};

use serde_json::Value;

pub const QUALIFY: &str = env!("CARGO_BIN_EXE_qualify");

/// The corpus sources in the repository.
pub fn corpus_src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../corpus")
}

/// The directory with the compiled corpus (every `corpus/*.c` built once per test binary).
pub fn corpus_bin() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("corpus");
        std::fs::create_dir_all(&out).expect("create corpus output dir");
        let mut sources: Vec<PathBuf> = std::fs::read_dir(corpus_src())
            .expect("read corpus/")
            .map(|e| e.expect("corpus entry").path())
            .filter(|p| p.extension().is_some_and(|e| e == "c"))
            .collect();
        sources.sort();
        assert!(!sources.is_empty(), "no C programs in corpus/");
        for src in sources {
            let name = src.file_stem().unwrap().to_string_lossy().into_owned();
            // Build under a temporary name and rename, so a concurrent test binary never runs a
            // half-written executable.
            let tmp = out.join(format!(".{name}.{}", std::process::id()));
            let status = Command::new("cc")
                .args(["-O1", "-pthread", "-o"])
                .arg(&tmp)
                .arg(&src)
                .status()
                .unwrap_or_else(|e| panic!("cannot run cc for {}: {e}", src.display()));
            assert!(status.success(), "cc failed for {}", src.display());
            std::fs::rename(&tmp, out.join(&name)).expect("rename compiled program");
        }
        // The scripts go beside the programs: a checkout under /tmp is hidden from the cells
        // (the sandbox's /tmp is private), the target directory is not (`.ci/run` keeps it
        // outside /tmp).
        for e in std::fs::read_dir(corpus_src()).expect("read corpus/") {
            let src = e.expect("corpus entry").path();
            if src.extension().is_some_and(|e| e == "py") {
                let name = src.file_name().expect("a file name");
                let tmp = out.join(format!(
                    ".{}.{}",
                    name.to_string_lossy(),
                    std::process::id()
                ));
                std::fs::copy(&src, &tmp).expect("copy a corpus script");
                std::fs::rename(&tmp, out.join(name)).expect("rename a corpus script");
            }
        }
        out
    })
}

/// Path of a compiled corpus C program.
pub fn bin(name: &str) -> String {
    let p = corpus_bin().join(name);
    assert!(p.exists(), "corpus program {name} missing");
    p.to_string_lossy().into_owned()
}

/// Path of a corpus Python script (run it with `python3`), beside the compiled programs.
pub fn py(name: &str) -> String {
    let p = corpus_bin().join(name);
    assert!(p.exists(), "corpus script {name} missing");
    p.to_string_lossy().into_owned()
}

/// A scratch path for this test run (pid files and the like).
pub fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("scratch");
    std::fs::create_dir_all(&dir).expect("create scratch dir");
    dir.join(format!("{name}.{}", std::process::id()))
}

/// A test's own directory: removed when the test passes, kept (for a look) when it fails.
pub struct TestDir(pub PathBuf);

impl std::ops::Deref for TestDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for TestDir {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// A fresh, empty directory unique to this test (and this test binary's process), under
/// `CARGO_TARGET_TMPDIR/<suite>/`.
pub fn test_dir(suite: &str, name: &str) -> TestDir {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(suite)
        .join(format!(
            "{name}-{}-{}",
            std::process::id(),
            N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
    if dir.exists() {
        std::fs::remove_dir_all(&dir).expect("remove stale test dir");
    }
    std::fs::create_dir_all(&dir).expect("create test dir");
    TestDir(dir.canonicalize().expect("canonicalize test dir"))
}

// ---------------------------------------------------------------------------------------------
// Serialisation of tests that must not disturb each other.

/// Held by tests that burn CPU (spinners, oversubscription, throttling, floods), so that on a
/// small machine they do not distort each other's verdicts.
pub fn cpu_heavy() -> MutexGuard<'static, ()> {
    static CPU: Mutex<()> = Mutex::new(());
    CPU.lock().unwrap_or_else(|e| e.into_inner())
}

/// Every probe holds this for reading; the leftover-cgroup check holds it for writing, so it
/// looks at the hierarchy only while no probe of this test binary is running.
static PROBES: RwLock<()> = RwLock::new(());

pub fn probe_guard() -> RwLockReadGuard<'static, ()> {
    baseline_cgroups();
    PROBES.read().unwrap_or_else(|e| e.into_inner())
}

// ---------------------------------------------------------------------------------------------
// Running the binary.

/// One finished `qualify` invocation.
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
    /// The parsed JSON result (`Value::Null` when stdout was not JSON).
    pub json: Value,
    /// Wall time as seen by the test, including qualify's own start-up and teardown.
    pub elapsed: Duration,
}

impl Run {
    pub fn outcome(&self) -> &str {
        self.json["outcome"].as_str().unwrap_or("<none>")
    }
    pub fn flags(&self) -> Vec<String> {
        self.json["flags"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|f| f.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    }
    pub fn has_flag(&self, flag: &str) -> bool {
        self.flags().iter().any(|f| f == flag)
    }
    pub fn str_field(&self, field: &str) -> Option<&str> {
        self.json[field].as_str()
    }
    pub fn f64_field(&self, field: &str) -> f64 {
        self.json[field]
            .as_f64()
            .unwrap_or_else(|| panic!("field {field} missing or not a number\n{self}"))
    }
    pub fn u64_field(&self, field: &str) -> u64 {
        self.json[field]
            .as_u64()
            .unwrap_or_else(|| panic!("field {field} missing or not an integer\n{self}"))
    }
    pub fn wall(&self) -> f64 {
        self.f64_field("wall_seconds")
    }
    pub fn enforcement(&self, what: &str) -> &str {
        self.json["enforcement"][what].as_str().unwrap_or("<none>")
    }
    /// The evidence object as lower-case text, for loose "mentions" checks.
    pub fn evidence_text(&self) -> String {
        self.json["evidence"].to_string().to_lowercase()
    }

    /// Assert the outcome, with the whole result in the failure message.
    #[track_caller]
    pub fn expect_outcome(&self, outcome: &str) -> &Self {
        assert_eq!(self.outcome(), outcome, "unexpected outcome\n{self}");
        self
    }
    #[track_caller]
    pub fn expect_code(&self, code: i32) -> &Self {
        assert_eq!(self.code, code, "unexpected exit status of qualify\n{self}");
        self
    }
    #[track_caller]
    pub fn expect_flag(&self, flag: &str) -> &Self {
        assert!(self.has_flag(flag), "flag {flag} missing\n{self}");
        self
    }
    #[track_caller]
    pub fn expect_no_flag(&self, flag: &str) -> &Self {
        assert!(!self.has_flag(flag), "unexpected flag {flag}\n{self}");
        self
    }
    #[track_caller]
    pub fn expect_backend(&self, backend: &str) -> &Self {
        assert_eq!(
            self.enforcement("backend"),
            backend,
            "ran on another backend than requested\n{self}"
        );
        self
    }
}

impl fmt::Display for Run {
    /// The result for a failure message, with the output tails shortened.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut shown = self.json.clone();
        for tail in ["stdout_tail", "stderr_tail"] {
            let short = shown[tail].as_str().filter(|s| s.len() > 600).map(|s| {
                let cut = s.char_indices().nth_back(600).map_or(0, |(i, _)| i);
                format!("…{}", &s[cut..])
            });
            if let Some(short) = short {
                shown[tail] = Value::String(short);
            }
        }
        if let Some(runs) = shown.get_mut("runs").and_then(Value::as_array_mut) {
            for r in runs {
                r["stdout_tail"] = Value::String("…".into());
                r["stderr_tail"] = Value::String("…".into());
                r["evidence"] = Value::String("…".into());
            }
        }
        let pretty = serde_json::to_string_pretty(&shown).unwrap_or_default();
        let stdout = if self.json.is_null() {
            self.stdout.as_str()
        } else {
            "<json above>"
        };
        write!(
            f,
            "qualify exit status: {}  (elapsed {:.2}s)\n--- result ---\n{}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.code,
            self.elapsed.as_secs_f64(),
            pretty,
            stdout,
            self.stderr.trim_end()
        )
    }
}

/// `QUALIFY_TEST_SANDBOX=off` (or `required`) runs every `qualify probe` of these helpers with
/// `--sandbox off` (or `required`): the classification suite both ways.
fn with_test_sandbox<'a>(args: &[&'a str], mode: &'a Option<String>) -> Vec<&'a str> {
    let mut out = args.to_vec();
    if let Some(mode) = mode
        && out.first() == Some(&"probe")
    {
        out.insert(1, "--sandbox");
        out.insert(2, mode.as_str());
    }
    out
}

/// The `--sandbox MODE` flags `QUALIFY_TEST_SANDBOX` asks for (none when unset).
pub fn test_sandbox_flags() -> Vec<String> {
    match std::env::var("QUALIFY_TEST_SANDBOX") {
        Ok(mode) => vec!["--sandbox".into(), mode],
        Err(_) => Vec::new(),
    }
}

/// Run `qualify <args>` to completion (no JSON parsing expectations).
pub fn qualify(args: &[&str]) -> Run {
    let _probing = probe_guard();
    let start = Instant::now();
    let mode = std::env::var("QUALIFY_TEST_SANDBOX").ok();
    let args = with_test_sandbox(args, &mode);
    let child = Command::new(QUALIFY)
        .args(&args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run qualify");
    record_qualify_pid(child.id());
    let out = child.wait_with_output().expect("wait for qualify");
    let elapsed = start.elapsed();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let json = serde_json::from_str(stdout.trim()).unwrap_or(Value::Null);
    record_evidence_cgroups(&json);
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout,
        stderr,
        json,
        elapsed,
    }
}

/// `qualify probe --backend B --json <opts> -- <cmd>`; panics unless the output is one JSON
/// object.
pub fn probe(backend: &str, opts: &[&str], cmd: &[&str]) -> Run {
    let mut args = vec!["probe", "--backend", backend, "--json"];
    args.extend_from_slice(opts);
    args.push("--");
    args.extend_from_slice(cmd);
    let run = qualify(&args);
    assert!(
        run.json.is_object(),
        "`qualify {}` did not print a JSON object\n{run}",
        args.join(" ")
    );
    run
}

/// `qualify probe --backend B --json <opts> -- <cmd>` with extra environment for qualify (and
/// so for the probed tree).
pub fn probe_with_env(backend: &str, opts: &[&str], cmd: &[&str], env: &[(&str, &str)]) -> Run {
    let _probing = probe_guard();
    let sandbox = test_sandbox_flags();
    // Passed on by name: a sandboxed tree gets only a short list of qualify's variables.
    let pass: Vec<String> = env.iter().map(|(k, _)| format!("--pass-env={k}")).collect();
    let mut args = vec!["probe", "--backend", backend, "--json"];
    args.extend(sandbox.iter().map(String::as_str));
    args.extend(pass.iter().map(String::as_str));
    args.extend_from_slice(opts);
    args.push("--");
    args.extend_from_slice(cmd);
    let started = Instant::now();
    let child = Command::new(QUALIFY)
        .args(&args)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run qualify");
    record_qualify_pid(child.id());
    let out = child.wait_with_output().expect("wait for qualify");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let json: Value = serde_json::from_str(stdout.trim()).unwrap_or(Value::Null);
    record_evidence_cgroups(&json);
    let run = Run {
        code: out.status.code().unwrap_or(-1),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        stdout,
        json,
        elapsed: started.elapsed(),
    };
    assert!(
        run.json.is_object(),
        "`qualify {}` did not print a JSON object\n{run}",
        args.join(" ")
    );
    run
}

// ---------------------------------------------------------------------------------------------
// Backends.

/// Whether `--backend NAME` works on this host: a probe of `true` that exits 2 means the host
/// lacks it. Decided once per backend and test binary.
pub fn backend_available(name: &str) -> bool {
    static CACHE: Mutex<Vec<(String, bool)>> = Mutex::new(Vec::new());
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, ok)) = cache.iter().find(|(n, _)| n == name) {
        return *ok;
    }
    let run = qualify(&["probe", "--backend", name, "--json", "--", "true"]);
    let ok = run.code != 2;
    if !ok {
        eprintln!(
            "backend {name} unavailable here: {}",
            run.stderr.lines().next().unwrap_or("")
        );
    }
    cache.push((name.to_owned(), ok));
    ok
}

/// Whether a backend is one of the cgroup ones.
pub fn is_cgroup(backend: &str) -> bool {
    backend.starts_with("cgroup")
}

/// The strength a memory/pids ceiling must be enforced with on this backend.
pub fn expected_memory_strength(backend: &str) -> &'static str {
    if is_cgroup(backend) {
        "kernel"
    } else {
        "watchdog"
    }
}

/// Define one `#[test]` per backend for each listed rule function `fn rule(backend: &str)`:
/// `rule::rlimit` always runs, `rule::cgroup1` / `rule::cgroup2` run where the host has them and
/// otherwise print "skipping: backend X unavailable" and pass.
macro_rules! on_every_backend {
    ($($rule:ident),* $(,)?) => {$(
        mod $rule {
            #[test]
            fn rlimit() {
                super::$rule("rlimit");
            }
            #[test]
            fn cgroup1() {
                if crate::common::backend_available("cgroup1") {
                    super::$rule("cgroup1");
                } else {
                    println!("skipping: backend cgroup1 unavailable");
                }
            }
            #[test]
            fn cgroup2() {
                if crate::common::backend_available("cgroup2") {
                    super::$rule("cgroup2");
                } else {
                    println!("skipping: backend cgroup2 unavailable");
                }
            }
        }
    )*};
}

// ---------------------------------------------------------------------------------------------
// Processes and cgroups that must not outlive a probe.

/// Whether a process is gone (no /proc entry, or only a zombie/dead entry), waiting up to
/// `grace` for it to be reaped.
pub fn process_gone(pid: u32, grace: Duration) -> bool {
    let deadline = Instant::now() + grace;
    loop {
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|s| {
                s.rsplit_once(')')
                    .and_then(|(_, rest)| rest.split_whitespace().next().map(str::to_owned))
            });
        match state.as_deref() {
            None | Some("Z") | Some("X") => return true,
            Some(_) if Instant::now() >= deadline => return false,
            Some(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
}

/// Every (transitive) descendant of `pid`: (pid, comm).
pub fn descendants(pid: u32) -> Vec<(u32, String)> {
    let mut parent_of = Vec::new();
    if let Ok(dir) = std::fs::read_dir("/proc") {
        for e in dir.flatten() {
            let Ok(p) = e.file_name().to_string_lossy().parse::<u32>() else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) else {
                continue;
            };
            let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
                continue;
            };
            let comm = stat[open + 1..close].to_owned();
            let ppid = stat[close + 1..]
                .split_whitespace()
                .nth(1)
                .and_then(|s| s.parse::<u32>().ok())
                .unwrap_or(0);
            parent_of.push((p, ppid, comm));
        }
    }
    let mut found = Vec::new();
    let mut frontier = vec![pid];
    while let Some(parent) = frontier.pop() {
        for (p, ppid, comm) in &parent_of {
            if *ppid == parent {
                found.push((*p, comm.clone()));
                frontier.push(*p);
            }
        }
    }
    found
}

/// Directories named `qualify-*` anywhere under /sys/fs/cgroup/*.
pub fn qualify_cgroups() -> BTreeSet<PathBuf> {
    fn walk(dir: &Path, depth: usize, found: &mut BTreeSet<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let Ok(ft) = e.file_type() else { continue };
            if !ft.is_dir() {
                continue;
            }
            let path = e.path();
            if e.file_name().to_string_lossy().starts_with("qualify-") {
                found.insert(path.clone());
            }
            if depth < 8 {
                walk(&path, depth + 1, found);
            }
        }
    }
    let mut found = BTreeSet::new();
    walk(Path::new("/sys/fs/cgroup"), 0, &mut found);
    found
}

/// Pids of every qualify process this test binary started, and every cgroup path their results
/// named in `evidence`: together they tell our cgroups from those of other qualify runs that may
/// share the machine (other test binaries, other people).
static OUR_PIDS: Mutex<Vec<u32>> = Mutex::new(Vec::new());
static OUR_CGROUPS: Mutex<BTreeSet<PathBuf>> = Mutex::new(BTreeSet::new());

/// Remember a qualify process started by this test binary.
pub fn record_qualify_pid(pid: u32) {
    OUR_PIDS.lock().unwrap_or_else(|e| e.into_inner()).push(pid);
}

/// Remember every cgroup path mentioned anywhere in a result's `evidence`.
pub fn record_evidence_cgroups(result: &Value) {
    fn walk(v: &Value, found: &mut BTreeSet<PathBuf>) {
        match v {
            Value::String(s) if s.starts_with("/sys/fs/cgroup/") => {
                found.insert(PathBuf::from(s));
            }
            Value::Array(a) => a.iter().for_each(|x| walk(x, found)),
            Value::Object(o) => o.values().for_each(|x| walk(x, found)),
            _ => {}
        }
    }
    let mut ours = OUR_CGROUPS.lock().unwrap_or_else(|e| e.into_inner());
    walk(&result["evidence"], &mut ours);
    if let Some(runs) = result["runs"].as_array() {
        for r in runs {
            walk(&r["evidence"], &mut ours);
        }
    }
}

/// Whether a `qualify-*` cgroup belongs to this test binary: its name carries the pid of one of
/// our qualify processes (e.g. `qualify-4242-0`), or one of our results named it.
fn is_ours(path: &Path) -> bool {
    if OUR_CGROUPS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .contains(path)
    {
        return true;
    }
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let pids = OUR_PIDS.lock().unwrap_or_else(|e| e.into_inner());
    name.split(|c: char| !c.is_ascii_digit())
        .filter_map(|t| t.parse::<u32>().ok())
        .any(|n| pids.contains(&n))
}

/// The `qualify-*` cgroups that existed before this test binary probed anything (left by
/// others; not ours to judge).
fn baseline_cgroups() -> &'static BTreeSet<PathBuf> {
    static BASELINE: OnceLock<BTreeSet<PathBuf>> = OnceLock::new();
    BASELINE.get_or_init(qualify_cgroups)
}

/// Assert that no cgroup made by this test binary's qualify runs is left (a `qualify-*` directory
/// carrying one of their pids, or any cgroup a result named in its evidence). Waits until no
/// probe of this binary is running, and gives teardown a few seconds.
#[track_caller]
pub fn assert_no_leftover_cgroups() {
    let baseline = baseline_cgroups();
    let _quiet = PROBES.write().unwrap_or_else(|e| e.into_inner());
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let mut left: BTreeSet<PathBuf> = qualify_cgroups()
            .into_iter()
            .filter(|p| !baseline.contains(p) && is_ours(p))
            .collect();
        let named = OUR_CGROUPS
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        left.extend(named.into_iter().filter(|p| p.exists()));
        if left.is_empty() {
            return;
        }
        if Instant::now() >= deadline {
            panic!("cgroups left behind after the probe: {left:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

// ---------------------------------------------------------------------------------------------
// `qualify run` with a receipt.

/// Say once per test binary and reason, on the real stderr (not captured by the harness), why
/// tests skip.
pub fn skip_note(suite: &str, why: &str) {
    use std::io::Write;
    static SAID: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let mut said = SAID.lock().unwrap_or_else(|e| e.into_inner());
    if !said.iter().any(|s| s == why) {
        let _ = writeln!(std::io::stderr().lock(), "{suite}: skipping: {why}");
        said.push(why.to_string());
    }
}

/// One finished `qualify run` and the receipt it wrote.
pub struct Receipted {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
    pub receipt: Value,
}

impl Receipted {
    /// The exit status and output, for a failure message.
    pub fn context(&self) -> String {
        format!(
            "exit {}\n--- stdout\n{}\n--- stderr\n{}",
            self.code, self.stdout, self.stderr
        )
    }

    /// The receipt's cells (panics, with the context, when it has none).
    pub fn cells(&self) -> &Vec<Value> {
        self.receipt["predicate"]["cells"]
            .as_array()
            .unwrap_or_else(|| panic!("no cells in the receipt\n{}", self.context()))
    }
}

/// Write `spec` to `dir/qualify.toml` and run `qualify run qualify.toml --receipt receipt.json
/// EXTRA…` there to completion; panics when no receipt was written.
pub fn run_spec(dir: &Path, spec: &str, extra: &[&str]) -> Receipted {
    std::fs::write(dir.join("qualify.toml"), spec).expect("write spec");
    let out = Command::new(QUALIFY)
        .args(["run", "qualify.toml", "--receipt", "receipt.json"])
        .args(extra)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .expect("run qualify");
    receipted(dir, out)
}

/// A finished `qualify run` in `dir` with the receipt it wrote to `dir/receipt.json`.
pub fn receipted(dir: &Path, out: std::process::Output) -> Receipted {
    let mut o = Receipted {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        receipt: Value::Null,
    };
    let text = std::fs::read_to_string(dir.join("receipt.json"))
        .unwrap_or_else(|e| panic!("no receipt: {e}\n{}", o.context()));
    o.receipt = serde_json::from_str(&text).expect("receipt is JSON");
    o
}

// ---------------------------------------------------------------------------------------------
// Shapes of receipts whose figures vary from run to run.

/// Keys whose values depend on the host or on timing in ways a shape cannot pin (the probe's
/// evidence and enforcement, output tails and digests, error examples, flags, a pool seen or
/// not).
const VOLATILE: [&str; 10] = [
    "evidence",
    "enforcement",
    "stdout_tail",
    "stdout_sha256",
    "stderr_tail",
    "error_examples",
    "flags",
    "corrected_histogram",
    "pool",
    // Present only for a phase in which some request failed fast: timing decides, not the shape.
    "fast_error_histogram",
];

/// Keys, named `parent.key`, present only when timing says so: a generator that lagged on a busy
/// machine says why (`generator.detail`), a load stopped early says when.
/// A phase counts its timed-out requests only when some did (`phases.censored`).
/// How a service's own processes were watched depends on the host (the kernel's process
/// events as root, else sampling): `children.watched_by`.
const VOLATILE_IN: [&str; 5] = [
    "generator.detail",
    // A split load's generator that lagged says why, as the in-process one does.
    "generators.detail",
    "load.stopped_at_seconds",
    "phases.censored",
    "children.watched_by",
];

/// Keys whose identifier-like values depend on timing or content (the tests assert those they
/// rely on).
const JUDGED: [&str; 3] = ["outcome", "verdict", "sha256"];

/// The shape of `v`: every key (but [`VOLATILE`] ones), numbers and nulls as `#`, booleans as
/// `bool`, free text as `text` (identifier-like strings — outcomes, verdicts, faults, signals,
/// phase names — kept, but not [`JUDGED`] ones), arrays as their distinct element shapes in
/// order.
pub fn shape(v: &Value) -> Value {
    shape_of(None, v)
}

fn shape_of(key: Option<&str>, v: &Value) -> Value {
    match v {
        Value::Null | Value::Number(_) => Value::from("#"),
        Value::Bool(_) => Value::from("bool"),
        Value::String(s) => {
            let word = !s.is_empty()
                && !key.is_some_and(|k| JUDGED.contains(&k) || encoded_key(k))
                && !looks_encoded(s)
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_()@.×-".contains(c));
            Value::from(if word { s.as_str() } else { "text" })
        }
        Value::Array(items) => {
            let mut out: Vec<Value> = Vec::new();
            for s in items.iter().map(|i| shape_of(key, i)) {
                if !out.contains(&s) {
                    out.push(s);
                }
            }
            Value::Array(out)
        }
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| {
                    !VOLATILE.contains(&k.as_str())
                        && !key.is_some_and(|parent| {
                            VOLATILE_IN.contains(&format!("{parent}.{k}").as_str())
                        })
                })
                .map(|(k, v)| (k.clone(), shape_of(Some(k), v)))
                .collect(),
        ),
    }
}

/// Keys whose values are encoded blobs (histograms, digests, signatures, payloads): their
/// characters differ run to run, so they are never kept as words, whatever this run's encoding
/// happened to contain.
fn encoded_key(key: &str) -> bool {
    [
        "histogram",
        "sha256",
        "digest",
        "signature",
        "sig",
        "payload",
        "keyid",
    ]
    .iter()
    .any(|suffix| key.ends_with(suffix))
}

/// Whether `s` has the form of an encoded blob rather than an identifier: base64 or hex of
/// some length, with or without `+`, `/` and `=` (an unlucky run's base64 has none of them).
/// Identifiers in a receipt (outcomes, verdicts, phases, faults) are short, lower-case words
/// joined by `_`, `-` or `(…)`; a blob mixes cases and digits, or is a long run of hex.
fn looks_encoded(s: &str) -> bool {
    let base64 = s.len() >= 16
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"+/=".contains(&b))
        && s.bytes().any(|b| b.is_ascii_digit())
        && s.bytes().any(|b| b.is_ascii_uppercase())
        && s.bytes().any(|b| b.is_ascii_lowercase());
    let hex = s.len() >= 16 && s.bytes().all(|b| b.is_ascii_hexdigit());
    base64 || hex
}

/// Compare the shape of `value` with `tests/golden/<name>.json` (keys compared as a set: the
/// golden pins what a receipt says, not the order it says it in). Re-bless with
/// `QUALIFY_BLESS=1` only when the change is deliberate.
pub fn assert_shape(name: &str, value: &Value) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(format!("{name}.json"));
    let got = shape(value);
    if std::env::var_os("QUALIFY_BLESS").is_some() {
        std::fs::create_dir_all(path.parent().expect("golden dir")).expect("create golden dir");
        let text = serde_json::to_string_pretty(&got).expect("shape serializes") + "\n";
        std::fs::write(&path, text).expect("write golden");
        return;
    }
    let want: Value = std::fs::read_to_string(&path)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_else(|| {
            panic!(
                "{}: missing or not JSON; create it with QUALIFY_BLESS=1",
                path.display()
            )
        });
    assert!(
        got == want,
        "the shape of {name} changed (re-bless with QUALIFY_BLESS=1 only if deliberate):\n--- golden ---\n{}\n--- now ---\n{}",
        serde_json::to_string_pretty(&want).unwrap_or_default(),
        serde_json::to_string_pretty(&got).unwrap_or_default()
    );
}

// ---------------------------------------------------------------------------------------------
// Whole receipts and terminal transcripts, pinned so a move of the code that writes them is
// checked: what a run says and in which order, not its figures or this host's names.

/// Keys whose values name this host rather than the run (the backend the host allows, its
/// name, kernel and OS): reduced to `host` before a receipt is shaped, so a golden holds on any
/// machine CI runs on.
const HOST_KEYS: [&str; 8] = [
    "hostname",
    "architecture",
    "kernel_release",
    "os",
    "backend",
    "cores_online",
    "cores_allowed",
    "memory_bytes",
];

fn without_host(v: &Value) -> Value {
    match v {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let v = if HOST_KEYS.contains(&k.as_str()) && !v.is_object() {
                        Value::from("host")
                    } else if k == "environment"
                        && let Some(fingerprint) = v.as_object().filter(|o| o.contains_key("env"))
                    {
                        // The machine's fingerprint: which parts it has, not their values.
                        Value::Object(
                            fingerprint
                                .keys()
                                .map(|k| (k.clone(), Value::from("host")))
                                .collect(),
                        )
                    } else {
                        without_host(v)
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_host).collect()),
        other => other.clone(),
    }
}

/// Compare the shape of a whole receipt (its host's names left out) with
/// `tests/golden/<name>.json`: every section, layer, cell field and checklist entry it has. The
/// performance analysis keeps only its parts' names: which models, noise and outliers a run
/// finds follows the machine (`qualify-perf`'s own golden pins the analysis).
pub fn assert_receipt_golden(name: &str, receipt: &Value) {
    let mut r = without_host(receipt);
    if let Some(perf) = r
        .pointer_mut("/predicate/performance")
        .and_then(Value::as_object_mut)
    {
        for v in perf.values_mut() {
            *v = Value::from("…");
        }
    }
    assert_shape(name, &r);
}

/// Lines of a faulted cell's story whose wording follows timing (a recovery in ms or s, a pool
/// seen or not, a phase with or without a figure): left out of faulted runs' transcripts.
pub const TIMED_LINES: [&str; 4] = [
    "requests in the window",
    "no fault (the control)",
    "retried ",
    "connections plateaued",
];

/// A terminal transcript as a golden compares it: `dir` (the run's directory) as `<dir>`,
/// digests (words of 7 or more hex digits, letters and digits both) as `<hex>`, every other
/// number as `#` (decimals too), runs of blanks as one, lines trimmed, blank lines kept; a
/// per-cell figures table keeps each row's cell and outcome.
pub fn transcript(text: &str, dir: &Path) -> String {
    let text = text.replace(&*dir.to_string_lossy(), "<dir>");
    let mut out = String::new();
    // A table of per-cell figures (the service cells'): how fast and how many failed is
    // timing — a latency shown in ms one run and in s the next, errors `none` or a class —; its
    // rows keep the cell and the outcome (first and last column).
    let mut in_table = false;
    for line in text.lines() {
        if line.trim_end().ends_with("(sorted by the axes):") {
            in_table = true;
        } else if line.trim().is_empty() {
            in_table = false;
        } else if in_table && !line.trim_start().starts_with("cell ") {
            let words: Vec<&str> = line.split_whitespace().collect();
            let cell = line
                .trim_start()
                .split("  ")
                .next()
                .unwrap_or_default()
                .to_string();
            let outcome = words.last().copied().unwrap_or_default();
            out.push_str(&format!("{cell} … {outcome}\n"));
            continue;
        }
        let line: Vec<String> = line
            .split(' ')
            .map(|w| {
                let hex = w.len() >= 7
                    && w.bytes()
                        .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
                    && w.bytes().any(|b| b.is_ascii_digit())
                    && w.bytes().any(|b| b.is_ascii_alphabetic());
                if hex {
                    "<hex>".to_string()
                } else {
                    w.to_string()
                }
            })
            .collect();
        let line = line.join(" ");
        let mut l = String::new();
        let mut digits = false;
        let mut blank = false;
        for c in line.trim().chars() {
            if c.is_ascii_digit() {
                if !digits {
                    l.push('#');
                }
                digits = true;
                blank = false;
            } else if c.is_whitespace() {
                if !blank {
                    l.push(' ');
                }
                blank = true;
                digits = false;
            } else {
                l.push(c);
                digits = false;
                blank = false;
            }
        }
        // A figure is a figure however many digits its rounding kept (`56.9 ms`, `102 ms`).
        while l.contains("#.#") {
            l = l.replace("#.#", "#");
        }
        out.push_str(&l);
        out.push('\n');
    }
    out
}

/// Compare what `qualify run` printed (stdout, then stderr, each as [`transcript`]) with
/// `tests/golden/<name>.txt`; lines `skip` matches (timing-dependent ones) are left out of both.
/// Re-bless with `QUALIFY_BLESS=1` only when the change is deliberate.
pub fn assert_transcript(name: &str, dir: &Path, stdout: &str, stderr: &str, skip: &[&str]) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(format!("{name}.txt"));
    let keep = |t: String| -> String {
        t.lines()
            .filter(|l| !skip.iter().any(|s| l.contains(s)))
            .map(|l| format!("{l}\n"))
            .collect()
    };
    let got = format!(
        "--- stdout\n{}--- stderr\n{}",
        keep(transcript(stdout, dir)),
        keep(transcript(stderr, dir))
    );
    if std::env::var_os("QUALIFY_BLESS").is_some() {
        std::fs::write(&path, &got).expect("write golden transcript");
        return;
    }
    let want = std::fs::read_to_string(&path).unwrap_or_else(|_| {
        panic!(
            "{}: missing; create it with QUALIFY_BLESS=1",
            path.display()
        )
    });
    assert!(
        got == want,
        "what `qualify run` printed changed (re-bless with QUALIFY_BLESS=1 only if deliberate):\n--- golden ---\n{want}\n--- now ---\n{got}"
    );
}
