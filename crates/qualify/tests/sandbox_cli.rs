//! The sandbox, end to end: `corpus/escape.c` tries everything an artifact must not do (read a
//! held-out check, the signing key; write the ledger, `/etc`, `$HOME`, the repository outside
//! its workdir; connect to a listener on the host's loopback; signal qualify; list `/proc`).
//! With the sandbox on every attempt is blocked and every layer is stated as kernel-enforced;
//! with it off every attempt gets through (so the test can fail); with each mechanism turned off
//! (`QUALIFY_SIMULATE_MISSING`, a host without it) the evidence states what is missing, and
//! what got through because of it; `--sandbox required` refuses a host without a layer.

#[allow(unused_macros)]
mod common;

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::{QUALIFY, TestDir};
use serde_json::Value;

/// A workdir with secrets around it.
struct World {
    _dir: TestDir,
    work: PathBuf,
    holdout: PathBuf,
    key: PathBuf,
    state: PathBuf,
    home: PathBuf,
    outside: PathBuf,
    listener: TcpListener,
}

fn world(name: &str) -> World {
    let dir = common::test_dir("sandbox", name);
    let mk = |p: &str| {
        let p = dir.join(p);
        std::fs::create_dir_all(&p).unwrap();
        p
    };
    let work = mk("work");
    let holdout = mk("holdout");
    std::fs::write(
        holdout.join("check.sh"),
        "#!/bin/sh\n# the held-out secret\nexit 0\n",
    )
    .unwrap();
    let key = dir.join("key.pem");
    std::fs::write(&key, "-----BEGIN PRIVATE KEY-----\nsecret\n").unwrap();
    let state = mk("state");
    std::fs::write(state.join("ledger.sqlite"), "ledger").unwrap();
    let home = mk("home");
    let outside = dir.join("repository-file");
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    World {
        work,
        holdout,
        key,
        state,
        home,
        outside,
        listener,
        _dir: dir,
    }
}

/// `qualify probe --json <opts> -- escape …` in the world's workdir; the attempts by name
/// (true: got through) and the whole result.
fn escape(w: &World, opts: &[&str], missing: &str) -> (BTreeMap<String, bool>, Value, String) {
    let port = w.listener.local_addr().unwrap().port().to_string();
    let hide = [
        format!("holdout={}", w.holdout.display()),
        format!("key={}", w.key.display()),
        format!("state={}", w.state.display()),
    ];
    let mut args: Vec<String> = vec!["probe".into(), "--json".into()];
    for h in &hide {
        args.push("--hide".into());
        args.push(h.clone());
    }
    args.extend(opts.iter().map(|s| s.to_string()));
    args.push("--".into());
    args.push(common::bin("escape"));
    for p in [
        w.holdout.join("check.sh"),
        w.key.clone(),
        w.state.join("ledger.sqlite"),
        w.home.clone(),
        w.outside.clone(),
    ] {
        args.push(p.display().to_string());
    }
    args.push(port);
    let _probing = common::probe_guard();
    let mut cmd = Command::new(QUALIFY);
    cmd.args(&args)
        .current_dir(&w.work)
        .env("HOME", &w.home)
        .stdin(Stdio::null());
    if !missing.is_empty() {
        cmd.env("QUALIFY_SIMULATE_MISSING", missing);
    }
    let out = cmd.output().expect("run qualify");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    common::record_evidence_cgroups(&v);
    let mut attempts = BTreeMap::new();
    for line in v["stdout_tail"].as_str().unwrap_or("").lines() {
        let mut it = line.split_whitespace();
        if let (Some(name), Some(verdict)) = (it.next(), it.next()) {
            attempts.insert(name.to_string(), verdict == "ok");
        }
    }
    (attempts, v, stderr)
}

const ATTEMPTS: [&str; 9] = [
    "read_holdout",
    "read_key",
    "write_ledger",
    "write_etc",
    "write_home",
    "write_outside",
    "connect_host",
    "signal_qualify",
    "list_proc",
];

fn layer<'a>(v: &'a Value, name: &str) -> &'a Value {
    &v["enforcement"]["sandbox"][name]
}

fn enforced(v: &Value, name: &str) -> String {
    layer(v, name)["enforced"]
        .as_str()
        .unwrap_or("?")
        .to_string()
}

fn mentions(v: &Value, name: &str, word: &str) -> bool {
    layer(v, name).to_string().contains(word)
}

#[test]
fn on_every_escape_is_blocked_and_every_layer_is_kernel_enforced() {
    let w = world("on");
    let (a, v, err) = escape(&w, &[], "");
    assert_eq!(v["outcome"], "ok", "{v}\n{err}");
    for name in ATTEMPTS {
        assert_eq!(a.get(name), Some(&false), "{name} got through: {a:?}\n{v}");
    }
    for l in ["filesystem", "hidden", "network", "pid", "user", "syscalls"] {
        assert_eq!(enforced(&v, l), "kernel", "{l}: {v}");
    }
    let paths = &layer(&v, "hidden")["paths"];
    assert_eq!(
        paths["holdout"][0]["path"], "(the held-out directory)",
        "{v}"
    );
    assert!(
        !v.to_string().contains(&w.holdout.display().to_string()),
        "the held-out directory is named in the result"
    );
    assert_eq!(paths["key"][0]["path"], w.key.display().to_string());
    assert_eq!(paths["state"][0]["path"], w.state.display().to_string());
    assert!(
        paths["home"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["path"] == w.home.display().to_string()),
        "{v}"
    );
    for role in ["holdout", "key", "state", "home"] {
        let by = paths[role][0]["by"].to_string();
        assert!(
            by.contains("mount namespace") && by.contains("landlock"),
            "{role}: {by}"
        );
    }
}

#[test]
fn off_every_escape_gets_through() {
    let w = world("off");
    let (a, v, err) = escape(&w, &["--sandbox", "off"], "");
    assert_eq!(v["outcome"], "ok", "{v}\n{err}");
    for name in ATTEMPTS {
        if name == "signal_qualify" {
            continue;
        }
        assert_eq!(a.get(name), Some(&true), "{name} was blocked: {a:?}\n{v}");
    }
    for l in ["filesystem", "hidden", "network", "user", "syscalls"] {
        assert_eq!(enforced(&v, l), "none", "{l}: {v}");
    }
    // The cell's PID namespace stays without the sandbox (the tree must die with qualify), so
    // qualify is out of reach; the evidence says why.
    assert_eq!(a.get("signal_qualify"), Some(&false), "{a:?}");
    assert!(mentions(&v, "pid", "the cell's guard"), "{v}");
    // Turning the cell's init off too shows the signal itself would get through.
    let (a, _, err) = escape(&w, &["--sandbox", "off"], "init");
    assert_eq!(a.get("signal_qualify"), Some(&true), "{a:?}\n{err}");
}

/// One mechanism missing: what the evidence states, what got through.
fn degraded(missing: &str) -> (BTreeMap<String, bool>, Value) {
    let w = world(&format!("without-{}", missing.replace(',', "-")));
    let (a, v, err) = escape(&w, &[], missing);
    assert_eq!(v["outcome"], "ok", "{missing}: {v}\n{err}");
    (a, v)
}

#[test]
fn without_a_mount_namespace_landlock_still_hides_and_the_evidence_says_so() {
    let (a, v) = degraded("mountns");
    assert_eq!(enforced(&v, "filesystem"), "kernel", "{v}");
    assert!(
        mentions(&v, "filesystem", "mount namespace: turned off"),
        "{v}"
    );
    let by = layer(&v, "hidden")["paths"]["key"][0]["by"].to_string();
    assert!(by.contains("landlock") && !by.contains("mount"), "{by}");
    for name in [
        "read_holdout",
        "read_key",
        "write_ledger",
        "write_etc",
        "write_outside",
    ] {
        assert_eq!(a.get(name), Some(&false), "{name}: {a:?}");
    }
    // Without its own /proc the tree sees the host's processes (and the evidence drops it).
    assert_eq!(a.get("list_proc"), Some(&true), "{a:?}");
    assert!(!mentions(&v, "pid", "/proc of the namespace"), "{v}");
}

#[test]
fn without_landlock_the_mount_namespace_still_hides_and_the_evidence_says_so() {
    let (a, v) = degraded("landlock");
    assert_eq!(enforced(&v, "filesystem"), "kernel", "{v}");
    assert!(mentions(&v, "filesystem", "landlock: turned off"), "{v}");
    let by = layer(&v, "hidden")["paths"]["key"][0]["by"].to_string();
    assert!(by.contains("mount") && !by.contains("landlock"), "{by}");
    for name in ATTEMPTS {
        assert_eq!(a.get(name), Some(&false), "{name}: {a:?}");
    }
}

#[test]
fn without_both_filesystem_layers_hidden_paths_are_readable_and_stated_none() {
    let (a, v) = degraded("mountns,landlock");
    assert_eq!(enforced(&v, "filesystem"), "none", "{v}");
    assert_eq!(enforced(&v, "hidden"), "none", "{v}");
    assert_eq!(
        layer(&v, "hidden")["paths"]["holdout"][0]["by"],
        Value::Array(vec![]),
        "{v}"
    );
    // Readable by anyone: only the (missing) sandbox kept it from the artifact.
    assert_eq!(a.get("read_holdout"), Some(&true), "{a:?}");
}

#[test]
fn without_a_network_namespace_the_host_listener_is_reached_and_stated() {
    let (a, v) = degraded("netns");
    assert_eq!(enforced(&v, "network"), "none", "{v}");
    assert!(mentions(&v, "network", "turned off"), "{v}");
    assert_eq!(a.get("connect_host"), Some(&true), "{a:?}");
    assert_eq!(a.get("read_key"), Some(&false), "{a:?}");
}

#[test]
fn without_a_pid_namespace_the_pid_layer_is_none() {
    let (a, v) = degraded("pidns");
    assert_eq!(enforced(&v, "pid"), "none", "{v}");
    assert_eq!(a.get("list_proc"), Some(&true), "{a:?}");
    // Landlock still hides and scopes signals; the user is still unprivileged.
    assert_eq!(a.get("read_key"), Some(&false), "{a:?}");
    assert_eq!(a.get("signal_qualify"), Some(&false), "{a:?}");
}

#[test]
fn without_setuid_the_user_layer_is_none_but_capabilities_are_gone() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        println!("skipping: the user switch only happens as root");
        return;
    }
    let (a, v) = degraded("setuid");
    assert_eq!(enforced(&v, "user"), "none", "{v}");
    assert!(mentions(&v, "user", "capabilities dropped"), "{v}");
    assert_eq!(a.get("write_etc"), Some(&false), "{a:?}");
}

#[test]
fn without_seccomp_the_syscall_layer_is_none() {
    let (_, v) = degraded("seccomp");
    assert_eq!(enforced(&v, "syscalls"), "none", "{v}");
    assert_eq!(enforced(&v, "filesystem"), "kernel", "{v}");
}

#[test]
fn required_refuses_a_host_without_a_layer_and_names_it() {
    let w = world("required");
    let (_, v, err) = escape(&w, &["--sandbox", "required"], "netns");
    assert!(v.is_null(), "nothing may run: {v}");
    assert!(err.contains("network layer cannot be enforced"), "{err}");
    assert!(err.contains("turned off"), "{err}");
    let (a, v, err) = escape(&w, &["--sandbox", "required"], "");
    assert_eq!(v["outcome"], "ok", "{v}\n{err}");
    assert!(a.values().all(|got_through| !got_through), "{a:?}");
}

#[test]
fn files_written_in_the_workdir_stay_the_users() {
    let w = world("owner");
    let _probing = common::probe_guard();
    let out = Command::new(QUALIFY)
        .args([
            "probe",
            "--json",
            "--",
            "sh",
            "-c",
            "id -u; echo data > made-here",
        ])
        .current_dir(&w.work)
        .output()
        .expect("run qualify");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    assert_eq!(v["outcome"], "ok", "{v}");
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(w.work.join("made-here")).expect("the file was written");
    let owner = std::fs::metadata(&w.work).unwrap().uid();
    assert_eq!(meta.uid(), owner, "the file belongs to the workdir's owner");
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        let inside: u32 = v["stdout_tail"].as_str().unwrap().trim().parse().unwrap();
        assert_ne!(inside, 0, "as root the artifact runs as another user: {v}");
    }
}

#[test]
fn a_program_in_a_hidden_path_is_refused_with_the_fix() {
    let w = world("hidden-program");
    let tool = w.home.join("tool");
    std::fs::write(&tool, "#!/bin/sh\necho hi\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = Command::new(QUALIFY)
        .args(["probe", "--json", "--"])
        .arg(&tool)
        .current_dir(&w.work)
        .env("HOME", &w.home)
        .output()
        .expect("run qualify");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("which the sandbox hides (home)"), "{err}");
    assert!(err.contains("--readable"), "{err}");
    let _ = Path::new(&tool);
}

#[test]
fn a_run_in_a_directory_under_tmp_passes_its_self_test() {
    // Outside a workdir directly under /tmp the self-test's file lands in the sandbox's own
    // tmpfs: nothing reaches the host, so it is no escape and no layer is downgraded.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: the mount layer needs root");
        return;
    }
    let dir = std::env::temp_dir().join(format!("qualify-selftest-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create a directory under /tmp");
    let dir = TestDir(dir.canonicalize().expect("canonicalize"));
    std::fs::write(
        dir.0.join("qualify.toml"),
        "[artifact]\nname = \"t\"\ncommand = \"true\"\n\n[claim]\nlevel = \"functional\"\n\n[functional]\ncommand = \"true\"\n",
    )
    .expect("write the spec");
    let _probing = common::probe_guard();
    let out = Command::new(QUALIFY)
        .args(["run", "--json"])
        .current_dir(&dir.0)
        .output()
        .expect("run qualify");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains("self-test wrote outside"), "{stderr}");
    let v: Value = serde_json::from_slice(&out.stdout).expect("receipt JSON");
    let t = &v["predicate"]["sandbox"]["self_test"];
    assert_eq!(t["write_outside"]["blocked"], true, "{t}");
    assert!(
        t["write_outside"]["result"]
            .as_str()
            .is_some_and(|r| r.contains("nothing reached the host")),
        "{t}"
    );
    assert_eq!(t["enforcement"]["filesystem"]["enforced"], "kernel", "{t}");
}

#[test]
fn a_spec_command_whose_program_the_sandbox_hides_is_a_setup_error() {
    // The command string runs as `sh -c "…"`: the shell is visible, the program it names under
    // the private /tmp is not. Without the check every cell would "exit 127" as if the artifact
    // had failed.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: the mount layer needs root");
        return;
    }
    let tmp = std::env::temp_dir().join(format!("qualify-hidden-prog-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).expect("create a directory under /tmp");
    let tmp = TestDir(tmp.canonicalize().expect("canonicalize"));
    let prog = tmp.0.join("prog");
    std::fs::copy("/bin/true", &prog).expect("copy a program");
    // An interpreter's script is the program too, also when it is not the script's first command.
    let script = tmp.0.join("svc.py");
    std::fs::write(&script, "print('up')\n").expect("write a script");
    for (command, hidden) in [
        (format!("{} --n 3", prog.display()), &prog),
        (
            format!("sleep 1 & python3 {} 8080; wait", script.display()),
            &script,
        ),
    ] {
        let w = common::test_dir("sandbox", "hidden-in-script");
        std::fs::write(
            w.join("qualify.toml"),
            format!(
                "[artifact]\nname = \"t\"\ncommand = \"{command}\"\n\n[claim]\nlevel = \"functional\"\n\n[functional]\ncommand = \"true\"\n",
            ),
        )
        .expect("write the spec");
        let _probing = common::probe_guard();
        let out = Command::new(QUALIFY)
            .args(["run", "--no-ledger"])
            .current_dir(&*w)
            .output()
            .expect("run qualify");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{command}: {stderr}");
        assert!(
            stderr.contains(&format!(
                "`{}` is {}, which the sandbox hides (the sandbox's /tmp is private)",
                hidden.display(),
                hidden.display()
            )) && stderr.contains("[sandbox] readable"),
            "{command}: {stderr}"
        );
    }
}

/// A `--hide` that is not `ROLE=PATH` is a usage error (exit 2) that names the value and the
/// form, before anything runs.
#[test]
fn a_bad_hide_value_is_a_usage_error_naming_the_form() {
    let cases = [
        (
            "key",
            "`key`: expected ROLE=PATH, e.g. key=/etc/qualify/key.pem",
        ),
        ("key=", "`key=`: the path is empty"),
        (
            "secret=/x",
            "unknown role `secret`; expected one of: holdout, key, state, home",
        ),
    ];
    for (value, message) in cases {
        let out = Command::new(QUALIFY)
            .args(["probe", "--hide", value, "--", "/bin/true"])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{value}: {stderr}");
        assert!(
            stderr.contains(&format!(
                "invalid value '{value}' for '--hide <ROLE=PATH>': {message}\n"
            )),
            "{value}: {stderr}"
        );
    }
}

/// Host unix sockets come and go (a Slurm node's step sockets, a desktop's): one listed while a
/// cell's sandbox was planned may be gone by the time its mount hides it. That must neither stop
/// the cell (a setup error once stopped a whole run) nor create a file where the socket was (the
/// host's filesystem is not the sandbox's to write). A thread binds and removes sockets under
/// a directory of the test as fast as it can, bounded in time, while cells start beside it.
#[test]
fn host_sockets_that_come_and_go_never_stop_a_cell_nor_leave_a_file() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    let d = common::test_dir("sandbox_cli", "churn");
    let dir = d.0.join("sockets");
    std::fs::create_dir_all(&dir).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let refused = Arc::new(AtomicU64::new(0));
    let bound = Arc::new(AtomicU64::new(0));
    let churn = {
        let (dir, stop, refused, bound) =
            (dir.clone(), stop.clone(), refused.clone(), bound.clone());
        std::thread::spawn(move || {
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) && std::time::Instant::now() < deadline {
                let path = dir.join(format!("s{}.sock", i % 16));
                i += 1;
                match std::os::unix::net::UnixListener::bind(&path) {
                    Ok(l) => {
                        bound.fetch_add(1, Ordering::Relaxed);
                        std::thread::sleep(std::time::Duration::from_micros(200));
                        drop(l);
                    }
                    // Something else is at the path: a file the sandbox created.
                    Err(_) => {
                        refused.fetch_add(1, Ordering::Relaxed);
                    }
                }
                let _ = std::fs::remove_file(&path);
            }
        })
    };
    let mut failures = Vec::new();
    for n in 0..20 {
        let out = Command::new(QUALIFY)
            .args(["probe", "--json", "--", "/bin/true"])
            .current_dir(&d.0)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        if out.status.code() != Some(0) {
            failures.push(format!(
                "cell {n}: exit {:?}: {}",
                out.status.code(),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
    }
    stop.store(true, Ordering::Relaxed);
    churn.join().unwrap();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(bound.load(Ordering::Relaxed) > 100, "the churn ran");
    assert_eq!(
        refused.load(Ordering::Relaxed),
        0,
        "a socket's path was taken by something else: the sandbox created a file on the host"
    );
}
