//! The artifact as an adversary: each program of `corpus/adversary/` (see its README) is the
//! artifact of a real `qualify run`, trying one way to look better than it is or to harm the
//! host — read qualify's secrets, fork or fill without bound, leave a daemon behind, swap its own
//! binary, reach the host through a unix socket, read or recognise the held-out checks. Each test
//! asserts what the user relies on: the attempt fails, or its result never reaches the receipt,
//! the ledger or the reports, and the verdict says so.

#[allow(unused_macros)]
mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use common::{QUALIFY, TestDir};
use serde_json::Value;

/// `corpus/adversary/`.
fn adversary_src() -> PathBuf {
    common::corpus_src().join("adversary")
}

/// The adversary programs, compiled once per test binary (`*.c`) or copied (`*.sh`).
fn adversary_bin() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("adversary");
        std::fs::create_dir_all(&out).expect("create the adversary output dir");
        for e in std::fs::read_dir(adversary_src()).expect("read corpus/adversary") {
            let src = e.expect("an entry").path();
            let name = src.file_stem().unwrap().to_string_lossy().into_owned();
            let tmp = out.join(format!(".{name}.{}", std::process::id()));
            match src.extension().and_then(|e| e.to_str()) {
                Some("c") => {
                    let ok = Command::new("cc")
                        .args(["-O1", "-o"])
                        .arg(&tmp)
                        .arg(&src)
                        .status()
                        .expect("run cc")
                        .success();
                    assert!(ok, "cc failed for {}", src.display());
                    std::fs::rename(&tmp, out.join(&name)).expect("rename");
                }
                Some("sh") => {
                    std::fs::copy(&src, &tmp).expect("copy a script");
                    std::fs::rename(&tmp, out.join(src.file_name().unwrap())).expect("rename");
                }
                _ => {}
            }
        }
        out
    })
}

/// A workdir holding the adversary `program` (by its corpus name) and a spec around `command`.
struct Work {
    dir: TestDir,
    work: PathBuf,
}

fn work(name: &str, programs: &[&str], spec: &str) -> Work {
    let dir = common::test_dir("adversary", name);
    let work = dir.join("work");
    std::fs::create_dir_all(&work).expect("create the workdir");
    for p in programs {
        std::fs::copy(adversary_bin().join(p), work.join(p)).expect("copy the program");
    }
    std::fs::write(work.join("qualify.toml"), spec).expect("write the spec");
    Work { dir, work }
}

/// A spec whose one cell runs `command` (which must use `{n}`), claiming `level`.
fn spec(command: &str, level: &str, extra: &str) -> String {
    format!(
        "[artifact]\nname = \"adversary\"\ncommand = \"{command}\"\n\n[claim]\nlevel = \"{level}\"\n\n{extra}\n[[axis]]\nname = \"n\"\nkind = \"workload\"\nvalues = [1]\n"
    )
}

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Out {
    fn context(&self) -> String {
        format!(
            "exit {}\n--- stdout\n{}\n--- stderr\n{}",
            self.code, self.stdout, self.stderr
        )
    }
}

fn qualify(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Out {
    let _probing = common::probe_guard();
    let out = Command::new(QUALIFY)
        .args(args)
        .current_dir(dir)
        .envs(env.iter().copied())
        .env_remove("QUALIFY_HOLDOUT")
        .stdin(Stdio::null())
        .output()
        .expect("run qualify");
    Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn receipt(path: &Path) -> Value {
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    serde_json::from_str(&text).expect("receipt JSON")
}

/// The one cell's probe result.
fn cell(r: &Value) -> &Value {
    &r["predicate"]["cells"][0]["result"]
}

/// Every file under `dir`, as text.
fn texts_under(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if let Ok(bytes) = std::fs::read(&p) {
                out.push((p, String::from_utf8_lossy(&bytes).into_owned()));
            }
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Secrets stay out.

const KEY: &str = "sk-live-7f3a9c0e11d2b4";

#[test]
fn the_artifact_gets_an_allowlisted_environment_not_qualifys() {
    let w = work(
        "env",
        &["env_dump.sh"],
        &spec("./env_dump.sh {n}", "functional", ""),
    );
    let o = qualify(
        &w.work,
        &["run", "--receipt", "r.json", "--no-ledger"],
        &[
            ("MY_API_KEY", KEY),
            ("CI_JOB_TOKEN_FILE", "/x"),
            ("LANG", "C.UTF-8"),
        ],
    );
    assert!(o.code == 0 || o.code == 1, "{}", o.context());
    let r = receipt(&w.work.join("r.json"));
    let tail = cell(&r)["stdout_tail"].as_str().unwrap_or("");
    let names: Vec<&str> = tail.lines().filter_map(|l| l.split('=').next()).collect();
    assert!(names.contains(&"PATH") && names.contains(&"LANG"), "{tail}");
    for name in names {
        assert!(
            [
                "PATH", "HOME", "LANG", "LANGUAGE", "TZ", "TMPDIR", "PWD", "SHLVL", "_"
            ]
            .contains(&name)
                || name.starts_with("LC_")
                || name == "QUALIFY_PROBE_ID",
            "{name} of qualify's environment reached the artifact:\n{tail}"
        );
    }
    assert!(!r.to_string().contains(KEY), "the key is in the receipt");
}

#[test]
fn a_passed_or_named_secret_is_redacted_in_every_stored_text() {
    let w = work(
        "secret",
        &["env_dump.sh"],
        &spec("./env_dump.sh {n}", "functional", ""),
    );
    let plain = "opensesame-1234";
    let o = qualify(
        &w.work,
        &[
            "run",
            "--receipt",
            "r.json",
            "--pass-env",
            "MY_API_KEY",
            "--pass-env",
            "PLAIN_VALUE",
            "--secret",
            "PLAIN_VALUE",
        ],
        &[("MY_API_KEY", KEY), ("PLAIN_VALUE", plain)],
    );
    assert!(o.code == 0 || o.code == 1, "{}", o.context());
    let r = receipt(&w.work.join("r.json"));
    let tail = cell(&r)["stdout_tail"].as_str().unwrap_or("");
    assert!(tail.contains("MY_API_KEY=<redacted>"), "{tail}");
    assert!(tail.contains("PLAIN_VALUE=<redacted>"), "{tail}");
    // Every stored text: the receipt, the ledger, the reports.
    let o = qualify(
        &w.work,
        &["report", "r.json", "--html", "r.html", "--junit", "r.xml"],
        &[],
    );
    assert_eq!(o.code, 0, "{}", o.context());
    let md = qualify(&w.work, &["report", "r.json", "--markdown"], &[]);
    assert_eq!(md.code, 0, "{}", md.context());
    assert!(!md.stdout.contains(KEY) && !md.stdout.contains(plain));
    let ledger = qualify(&w.work, &["ledger", "list", "--json"], &[]);
    assert!(!ledger.stdout.contains(KEY), "{}", ledger.context());
    let stored = texts_under(&w.work);
    assert!(stored.iter().any(|(p, _)| p.ends_with("ledger.sqlite")));
    for (path, text) in stored {
        assert!(
            !text.contains(KEY) && !text.contains(plain),
            "a secret is stored in clear in {}",
            path.display()
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Ceilings by default.

#[test]
fn a_fork_bomb_without_a_pids_limit_ends_as_pids_exhausted() {
    let w = work(
        "forkbomb",
        &["forkbomb"],
        &spec("./forkbomb 100000 {n}", "trial", ""),
    );
    std::fs::write(
        w.work.join("qualify.toml"),
        spec("./forkbomb 100000 {n}", "trial", "").replace("values = [1]", "values = [20]"),
    )
    .unwrap();
    let o = qualify(&w.work, &["run", "--receipt", "r.json", "--no-ledger"], &[]);
    assert_eq!(o.code, 1, "{}", o.context());
    let r = receipt(&w.work.join("r.json"));
    let c = cell(&r);
    assert_eq!(c["outcome"], "pids_exhausted", "{c}");
    assert_eq!(c["limits"]["pids"], 4096, "{c}");
    assert_eq!(c["limits"]["guards"][0], "pids", "{c}");
    assert!(
        c["wall_seconds"].as_f64().unwrap() < 15.0,
        "the bomb was not stopped at once: {c}"
    );
}

#[test]
fn a_disk_fill_without_a_disk_limit_ends_as_disk_full() {
    let w = work(
        "diskfill",
        &["diskfill"],
        &spec("./diskfill /tmp/fill-{n} 2048", "trial", ""),
    );
    let o = qualify(&w.work, &["run", "--receipt", "r.json", "--no-ledger"], &[]);
    assert_eq!(o.code, 1, "{}", o.context());
    let r = receipt(&w.work.join("r.json"));
    let c = cell(&r);
    assert_eq!(c["outcome"], "disk_full", "{c}");
    // The private /tmp is a tmpfs of the ceiling's size: the kernel refused the writes.
    assert!(
        c["detail"]
            .as_str()
            .is_some_and(|d| d.contains("no space left on device")),
        "{c}"
    );
    let wrote: u64 = c["stdout_tail"]
        .as_str()
        .and_then(|t| t.split_whitespace().nth(1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(u64::MAX);
    assert!(
        wrote <= 1024,
        "wrote {wrote} MiB past the 1 GiB ceiling: {c}"
    );
    // Into the workdir: its private layer is measured, and the run ended at the ceiling.
    std::fs::write(
        w.work.join("qualify.toml"),
        spec("./diskfill fill-{n} 4096", "trial", ""),
    )
    .unwrap();
    let o = qualify(
        &w.work,
        &["run", "--receipt", "../w.json", "--no-ledger"],
        &[],
    );
    assert_eq!(o.code, 1, "{}", o.context());
    let r = receipt(&w.dir.join("w.json"));
    let c = cell(&r);
    assert_eq!(c["outcome"], "disk_full", "{c}");
    assert_eq!(c["enforcement"]["disk"], "watchdog", "{c}");
    assert!(
        !w.work.join("fill-1").exists(),
        "the fill reached the workdir"
    );
    // A ceiling the spec sets holds the same way.
    std::fs::write(
        w.work.join("qualify.toml"),
        spec(
            "./diskfill /tmp/fill-{n} 2048",
            "trial",
            "[limits]\ndisk = \"64MiB\"\n",
        ),
    )
    .unwrap();
    let o = qualify(
        &w.work,
        &["run", "--receipt", "r2.json", "--no-ledger"],
        &[],
    );
    assert_eq!(o.code, 1, "{}", o.context());
    let r = receipt(&w.work.join("r2.json"));
    assert_eq!(cell(&r)["outcome"], "disk_full", "{}", cell(&r));
    assert!(
        cell(&r)["stdout_tail"]
            .as_str()
            .is_some_and(|t| t.contains("wrote 63 MiB") || t.contains("wrote 64 MiB")),
        "{}",
        cell(&r)
    );
}

#[test]
fn a_daemon_that_outlives_its_cell_fails_trial_but_not_functional() {
    let w = work(
        "daemon",
        &["daemon.sh"],
        &spec(
            "./daemon.sh {n}",
            "trial",
            "[functional]\ncommand = \"true\"\n",
        ),
    );
    std::fs::write(
        w.work.join("qualify.toml"),
        spec(
            "./daemon.sh {n}",
            "trial",
            "[functional]\ncommand = \"true\"\n",
        )
        .replace("values = [1]", "values = [300]"),
    )
    .unwrap();
    let o = qualify(&w.work, &["run", "--receipt", "r.json", "--no-ledger"], &[]);
    assert_eq!(o.code, 1, "{}", o.context());
    let r = receipt(&w.work.join("r.json"));
    assert_eq!(cell(&r)["outcome"], "ok", "{}", cell(&r));
    assert_eq!(cell(&r)["flags"][0], "leaked_processes", "{}", cell(&r));
    let envelope = &r["predicate"]["layers"]["envelope"];
    assert_eq!(envelope["status"], "failed", "{envelope}");
    assert!(
        envelope["summary"]
            .as_str()
            .is_some_and(|s| s.contains("ok but leaked_processes at n=300")),
        "{envelope}"
    );
    let gate = qualify(&w.work, &["gate", "r.json", "--claim", "trial"], &[]);
    assert_eq!(gate.code, 1, "{}", gate.context());
    let gate = qualify(&w.work, &["gate", "r.json", "--claim", "functional"], &[]);
    assert_eq!(gate.code, 0, "{}", gate.context());
    drop(w.dir);
}

// ---------------------------------------------------------------------------------------------
// The subject is what ran.

fn sha256_of(path: &Path) -> String {
    let o = Command::new("sha256sum")
        .arg(path)
        .output()
        .expect("sha256sum");
    String::from_utf8_lossy(&o.stdout)
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_string()
}

#[test]
fn a_binary_swapped_during_a_cell_is_not_what_the_signed_receipt_names() {
    let w = work(
        "swap",
        &["swap"],
        &spec("./swap ./swap /bin/true {n}", "functional", ""),
    );
    let original = sha256_of(&w.work.join("swap"));
    let other = w.dir.join("other");
    std::fs::copy("/bin/true", &other).unwrap();
    let keygen = qualify(&w.dir, &["keygen", "--out", "k"], &[]);
    assert_eq!(keygen.code, 0, "{}", keygen.context());
    let key = w.dir.join("k");
    let public = w.dir.join("k.pub");
    let o = qualify(
        &w.work,
        &[
            "run",
            "--receipt",
            "../r.json",
            "--no-ledger",
            "--sign",
            key.to_str().unwrap(),
        ],
        &[],
    );
    assert!(o.code == 0 || o.code == 1, "{}", o.context());
    // The rename happened, in the cell's private layer only.
    assert_eq!(sha256_of(&w.work.join("swap")), original);
    let verify = |path: &Path| {
        qualify(
            &w.work,
            &[
                "verify",
                "../r.json",
                "--key",
                public.to_str().unwrap(),
                "--artifact",
                path.to_str().unwrap(),
            ],
            &[],
        )
    };
    let v = verify(&other);
    assert_eq!(v.code, 1, "the other file verified: {}", v.context());
    assert!(
        v.stdout.contains("subject digest check failed"),
        "{}",
        v.context()
    );
    let v = verify(&w.work.join("swap"));
    assert_eq!(v.code, 0, "{}", v.context());
    // The spec's own subject never stands for the artifact.
    let v = verify(&w.work.join("qualify.toml"));
    assert_eq!(v.code, 1, "{}", v.context());
    let gate = |path: &Path| {
        qualify(
            &w.work,
            &[
                "gate",
                "../r.json",
                "--claim",
                "functional",
                "--key",
                public.to_str().unwrap(),
                "--artifact",
                path.to_str().unwrap(),
            ],
            &[],
        )
    };
    let g = gate(&other);
    assert_eq!(g.code, 1, "{}", g.context());
    assert!(
        g.stdout.contains("not about the artifact in hand"),
        "{}",
        g.context()
    );
    // The workdir in hand is the receipt's (the receipt went beside it, not into it).
    let g = gate(&w.work);
    assert!(
        !g.stdout.contains("not about the artifact in hand"),
        "{}",
        g.context()
    );
}

#[test]
fn without_the_sandbox_a_swapped_binary_is_a_setup_failure_naming_it() {
    let w = work(
        "swap-off",
        &["swap"],
        &spec(
            "./swap ./swap /bin/true {n}",
            "functional",
            "[sandbox]\nmode = \"off\"\n",
        ),
    );
    let o = qualify(&w.work, &["run", "--receipt", "r.json", "--no-ledger"], &[]);
    assert_eq!(o.code, 2, "{}", o.context());
    assert!(
        o.stderr.contains(&format!(
            "the artifact's file {} changed during the run",
            w.work.join("swap").display()
        )),
        "{}",
        o.context()
    );
    assert!(!w.work.join("r.json").exists(), "a receipt was written");
}

// ---------------------------------------------------------------------------------------------
// No channel out.

/// A host service on a unix socket next to the workdir, answering every connection with a
/// banner (from a thread, until the test ends).
fn banner_listener(path: &Path) -> std::os::unix::net::UnixListener {
    let l = std::os::unix::net::UnixListener::bind(path).expect("bind a unix socket");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o777)).unwrap();
    let serve = l.try_clone().unwrap();
    std::thread::spawn(move || {
        for c in serve.incoming().flatten().take(16) {
            use std::io::Write;
            let _ = (&c).write_all(b"HOST-SERVICE-BANNER\n");
        }
    });
    l
}

#[test]
fn a_host_unix_socket_is_unreachable_without_the_host_network() {
    let dir = common::test_dir("adversary", "unix");
    let sock = dir.join("host.sock");
    let _listener = banner_listener(&sock);
    for (network, reached) in [("loopback", false), ("none", false), ("host", true)] {
        let work = dir.join(format!("work-{network}"));
        std::fs::create_dir_all(&work).unwrap();
        std::fs::copy(
            adversary_bin().join("unix_connect"),
            work.join("unix_connect"),
        )
        .unwrap();
        std::fs::write(
            work.join("qualify.toml"),
            spec(
                &format!("./unix_connect {} {{n}}", sock.display()),
                "functional",
                &format!("[sandbox]\nnetwork = \"{network}\"\n"),
            ),
        )
        .unwrap();
        let o = qualify(
            &work,
            &["run", "--receipt", "../r.json", "--no-ledger"],
            &[],
        );
        assert!(o.code == 0 || o.code == 1, "{network}: {}", o.context());
        let r = receipt(&dir.join("r.json"));
        let tail = cell(&r)["stdout_tail"].as_str().unwrap_or("");
        assert_eq!(
            tail.starts_with("connected HOST-SERVICE-BANNER"),
            reached,
            "{network}: {tail}"
        );
        let net = &cell(&r)["enforcement"]["sandbox"]["network"];
        if !reached {
            assert_eq!(net["enforced"], "kernel", "{net}");
            assert!(
                net.to_string().contains("host unix sockets by path"),
                "{net}"
            );
            // The run's self-test tried a socket of its own and says so.
            let t = &r["predicate"]["sandbox"]["self_test"]["connect_unix"];
            assert_eq!(t["blocked"], true, "{t}");
        }
    }
}

#[test]
fn without_a_mount_namespace_the_unix_channel_stays_open_and_is_stated() {
    let dir = common::test_dir("adversary", "unix-nomount");
    let sock = dir.join("host.sock");
    let _listener = banner_listener(&sock);
    let work = dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::copy(
        adversary_bin().join("unix_connect"),
        work.join("unix_connect"),
    )
    .unwrap();
    std::fs::write(
        work.join("qualify.toml"),
        spec(
            &format!("./unix_connect {} {{n}}", sock.display()),
            "functional",
            "",
        ),
    )
    .unwrap();
    let o = qualify(
        &work,
        &["run", "--receipt", "../r.json", "--no-ledger"],
        &[("QUALIFY_SIMULATE_MISSING", "mountns")],
    );
    assert!(o.code == 0 || o.code == 1, "{}", o.context());
    let r = receipt(&dir.join("r.json"));
    let net = &cell(&r)["enforcement"]["sandbox"]["network"];
    assert_eq!(net["enforced"], "none", "{net}");
    assert!(
        net["reason"]
            .as_str()
            .is_some_and(|s| s.contains("host unix sockets by path stay reachable")),
        "{net}"
    );
}

// ---------------------------------------------------------------------------------------------
// Held-out checks the artifact can neither read nor recognise.

const HELD: &str = "ZQXJ-held-out-secret-line-7f3a9c";

/// A workdir with every held-out peek script, a directory shared by every cell and check
/// (`[sandbox] writable`: the tests' window into what the artifact saw in a held-out run), and
/// a held-out directory with one check, `check-<marker>.sh`, whose body is `body`.
struct HeldOutWorld {
    dir: TestDir,
    work: PathBuf,
    shared: PathBuf,
    holdout: PathBuf,
}

fn held_out_world(name: &str, command: &str, body: &str, extra: &str) -> HeldOutWorld {
    let scripts = [
        "heldout_env.sh",
        "heldout_parent.sh",
        "heldout_init.sh",
        "heldout_files.sh",
        "heldout_stash.sh",
        "heldout_steal.sh",
    ];
    let w = work(name, &scripts, "");
    let shared = w.dir.join("shared");
    std::fs::create_dir_all(&shared).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o777)).unwrap();
    std::fs::write(
        w.work.join("qualify.toml"),
        spec(
            command,
            "functional",
            &format!(
                "[functional]\ncommand = \"true\"\n\n[sandbox]\nwritable = [\"{}\"]\n{extra}",
                shared.display()
            ),
        ),
    )
    .unwrap();
    let holdout = w.dir.join("held");
    std::fs::create_dir_all(&holdout).unwrap();
    let check = holdout.join(format!("check-{HELD}.sh"));
    std::fs::write(&check, format!("#!/bin/sh\n# {HELD}\n{body}\n")).unwrap();
    std::fs::set_permissions(&check, std::fs::Permissions::from_mode(0o755)).unwrap();
    HeldOutWorld {
        work: w.work,
        shared,
        holdout,
        dir: w.dir,
    }
}

fn run_held_out(h: &HeldOutWorld) -> (Out, Value) {
    let o = qualify(
        &h.work,
        &[
            "run",
            "--receipt",
            "../r.json",
            "--holdout",
            h.holdout.to_str().unwrap(),
        ],
        &[],
    );
    let r = receipt(&h.dir.join("r.json"));
    (o, r)
}

fn report_of(h: &HeldOutWorld) -> String {
    std::fs::read_to_string(h.shared.join("report")).unwrap_or_default()
}

#[test]
fn the_artifact_a_check_starts_sees_nothing_of_the_check() {
    let body = format!(
        "r={report}\n\
         \"$QUALIFY_RUN\" ./heldout_env.sh $r\n\
         \"$QUALIFY_RUN\" ./heldout_parent.sh {HELD} $r\n\
         \"$QUALIFY_RUN\" ./heldout_init.sh $r\n\
         \"$QUALIFY_RUN\" ./heldout_files.sh \"$(dirname \"$0\")/notes.txt\" $r\n\
         out=$(\"$QUALIFY_RUN\" ./heldout_env.sh) && [ \"$out\" = 'env tell: none' ]",
        report = "$QUALIFY_ARTIFACT_DIR/../shared/report",
    );
    let h = held_out_world("held-channels", "./heldout_env.sh {n}", &body, "");
    // Not a check (neither executable nor *.sh): a file of the held-out directory to read.
    std::fs::write(h.holdout.join("notes.txt"), HELD).unwrap();
    let (o, r) = run_held_out(&h);
    assert!(o.code == 0 || o.code == 1, "{}", o.context());
    let held = &r["predicate"]["layers"]["functional"]["evidence"]["held_out"];
    assert_eq!(
        held["passed"],
        1,
        "the check reached the artifact: {held}\n{}",
        o.context()
    );
    let report = report_of(&h);
    for line in [
        "env tell: none",
        "parent: nothing (ppid 1)",
        "init: nothing",
        "files: blocked",
    ] {
        assert!(report.contains(line), "{line:?} missing from:\n{report}");
    }
    // Every channel stated, closed and tried.
    let secrecy = &held["secrecy"];
    assert_eq!(secrecy["kernel_enforced"], true, "{secrecy}");
    let names: Vec<&str> = secrecy["channels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "files",
            "environment",
            "check_process",
            "qualify_command_line",
            "later_cells",
            "stored_text"
        ]
    );
    assert!(
        r["predicate"]["sandbox"]["held_out_self_test"]["check_process"]["blocked"] == true,
        "{}",
        r["predicate"]["sandbox"]
    );
}

#[test]
fn a_check_that_runs_the_artifact_directly_cannot_and_nothing_is_stolen() {
    // The artifact: started by the check, it copies the check from /proc/$PPID/cmdline
    // into the workdir and prints it from a later cell.
    let body = "./heldout_steal.sh \"$QUALIFY_ARTIFACT_DIR/../shared\"; echo direct $? >> \"$QUALIFY_ARTIFACT_DIR/../shared/report\"\n\
                \"$QUALIFY_RUN\" ./heldout_steal.sh \"$QUALIFY_ARTIFACT_DIR/../shared\"";
    let h = held_out_world(
        "held-steal",
        &format!("./heldout_steal.sh {} {{n}}", "../shared"),
        body,
        "",
    );
    std::fs::write(
        h.work.join("qualify.toml"),
        std::fs::read_to_string(h.work.join("qualify.toml"))
            .unwrap()
            .replace("values = [1]", "values = [1, 2]"),
    )
    .unwrap();
    let (o, r) = run_held_out(&h);
    assert!(o.code == 0 || o.code == 1, "{}", o.context());
    // Not executable from the check's cell; through qualify it ran, and found nothing.
    assert!(report_of(&h).contains("direct 126"), "{}", report_of(&h));
    let stolen = std::fs::read_to_string(h.shared.join("stolen-check")).unwrap_or_default();
    assert!(!stolen.contains(HELD), "the check was copied");
    assert!(!r.to_string().contains(HELD), "the check is in the receipt");
    let ledger = qualify(&h.work, &["ledger", "list", "--json"], &[]);
    assert!(!ledger.stdout.contains(HELD), "{}", ledger.context());
}

#[test]
fn a_check_that_leaks_itself_into_a_shared_path_is_redacted_in_every_stored_text() {
    // The check's author runs the artifact's script through an interpreter inside the check's
    // own cell (not through $QUALIFY_RUN): it steals the check into the shared path, and a
    // later cell prints it. What reaches the receipt is replaced.
    let body = "sh ./heldout_steal.sh \"$QUALIFY_ARTIFACT_DIR/../shared\"";
    let h = held_out_world(
        "held-redact",
        &format!("./heldout_steal.sh {} {{n}}", "../shared"),
        body,
        "",
    );
    let (o, r) = run_held_out(&h);
    assert!(o.code == 0 || o.code == 1, "{}", o.context());
    // The cell printed the stolen check (and then stole its own script: the shared copy is
    // overwritten); the receipt keeps neither line of it.
    let tail = cell(&r)["stdout_tail"].as_str().unwrap_or("");
    assert_eq!(tail, "<redacted: held-out check content>", "{tail}");
    let md = qualify(&h.work, &["report", "../r.json", "--markdown"], &[]);
    assert!(!md.stdout.contains(HELD));
    for (path, text) in texts_under(&h.work) {
        assert!(!text.contains(HELD), "{} holds the check", path.display());
    }
}

#[test]
fn nothing_a_check_or_cell_writes_in_the_workdir_reaches_a_later_cell() {
    let body = "\"$QUALIFY_RUN\" ./heldout_stash.sh from-the-check > /dev/null";
    let h = held_out_world("held-stash", "./heldout_stash.sh cell-{n}", body, "");
    std::fs::write(
        h.work.join("qualify.toml"),
        std::fs::read_to_string(h.work.join("qualify.toml"))
            .unwrap()
            .replace("values = [1]", "values = [1, 2]"),
    )
    .unwrap();
    let (o, r) = run_held_out(&h);
    assert!(o.code == 0 || o.code == 1, "{}", o.context());
    for c in r["predicate"]["cells"].as_array().unwrap() {
        assert_eq!(c["result"]["stdout_tail"], "stash: none\n", "{c}");
    }
    assert!(!h.work.join(".stash").exists());
    // Without the sandbox the same artifact finds what an earlier run left.
    std::fs::write(
        h.work.join("qualify.toml"),
        std::fs::read_to_string(h.work.join("qualify.toml"))
            .unwrap()
            .lines()
            .filter(|l| !l.starts_with("writable"))
            .collect::<Vec<_>>()
            .join("\n")
            .replace("[sandbox]\n", "[sandbox]\nmode = \"off\"\n"),
    )
    .unwrap();
    let (o, r) = run_held_out(&h);
    assert!(o.code == 0 || o.code == 1, "{}", o.context());
    let tails: Vec<&str> = r["predicate"]["cells"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["result"]["stdout_tail"].as_str())
        .collect();
    assert!(
        tails.iter().any(|t| t.starts_with("stash: from-the-check")),
        "{tails:?}"
    );
    let _ = std::fs::remove_file(h.work.join(".stash"));
}
