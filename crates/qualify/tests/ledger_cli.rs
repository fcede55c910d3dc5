//! End-to-end tests of the ledger, controls, held-out checks and the process layer: the real
//! binary in fresh directories, the ledger opened independently (python3's sqlite3 module) to
//! tamper with it, and `qualify` SIGKILLed while it writes.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

const QUALIFY: &str = env!("CARGO_BIN_EXE_qualify");

#[allow(unused_macros)]
mod common;

use common::TestDir;

/// A fresh, empty directory unique to this test.
fn scratch(name: &str) -> TestDir {
    common::test_dir("ledger_cli", name)
}

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Out {
    fn context(&self) -> String {
        format!(
            "exit {}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.code, self.stdout, self.stderr
        )
    }
}

fn out(o: Output) -> Out {
    Out {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

fn qualify_env(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Out {
    let mut cmd = Command::new(QUALIFY);
    cmd.args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .env_remove("QUALIFY_HOLDOUT");
    for (k, v) in env {
        cmd.env(k, v);
    }
    out(cmd.output().expect("run qualify"))
}

fn qualify(dir: &Path, args: &[&str]) -> Out {
    qualify_env(dir, args, &[])
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn stdout_json(o: &Out) -> Value {
    serde_json::from_str(o.stdout.trim())
        .unwrap_or_else(|e| panic!("not JSON: {e}\n{}", o.context()))
}

fn sha256_file(path: &Path) -> String {
    let o = Command::new("sha256sum").arg(path).output().unwrap();
    String::from_utf8_lossy(&o.stdout)
        .split_whitespace()
        .next()
        .unwrap()
        .to_string()
}

/// Run SQL against the ledger with python3's sqlite3 module (independent of qualify).
fn sql(db: &Path, statement: &str) -> String {
    let o = Command::new("python3")
        .args([
            "-c",
            "import sqlite3,sys\nc=sqlite3.connect(sys.argv[1])\nr=c.execute(sys.argv[2]).fetchall()\nc.commit()\nprint(r)",
        ])
        .arg(db)
        .arg(statement)
        .output()
        .expect("python3");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

fn copy_example(name: &str, to: &Path) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(name);
    for f in ["qualify.toml", &format!("{name}.c")] {
        std::fs::copy(src.join(f), to.join(f)).unwrap();
    }
}

// ---------------------------------------------------------------------------------------------
// Ledger and controls.

#[test]
fn transfer_twice_reruns_controls_counts_repeats_and_detects_tampering() {
    let dir = scratch("transfer");
    copy_example("transfer", &dir);
    let first = qualify(&dir, &["run", "qualify.toml", "--receipt", "r1.json"]);
    assert_eq!(first.code, 1, "{}", first.context());
    assert!(
        first.stderr.contains("ledger: recorded receipt"),
        "{}",
        first.context()
    );
    let r1 = read_json(&dir.join("r1.json"));
    let failing1 = r1["predicate"]["cells"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["result"]["outcome"] != "ok")
        .count();
    assert!(failing1 >= 1, "transfer should fail somewhere");
    assert!(
        r1["predicate"]["cells"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c.get("control").is_none()),
        "first run has no controls"
    );

    let controls = qualify(&dir, &["ledger", "controls", "--json"]);
    assert_eq!(controls.code, 0, "{}", controls.context());
    let controls = stdout_json(&controls);
    assert_eq!(controls.as_array().unwrap().len(), failing1);
    let sig = controls[0]["signature"].as_str().unwrap();
    assert!(sig.contains('@') && sig.contains("threads="), "{sig}");
    assert_eq!(controls[0]["artifact"], "transfer");
    assert!(controls[0]["limits"]["timeout_seconds"].is_number());

    let second = qualify(&dir, &["run", "qualify.toml", "--receipt", "r2.json"]);
    assert_eq!(second.code, 1, "{}", second.context());
    assert!(
        second.stderr.contains("control(s) from earlier failures"),
        "{}",
        second.context()
    );
    let r2 = read_json(&dir.join("r2.json"));
    let cells2 = r2["predicate"]["cells"].as_array().unwrap();
    assert_eq!(
        cells2.len(),
        r1["predicate"]["cells"].as_array().unwrap().len() + failing1
    );
    for c in &cells2[..failing1] {
        assert_eq!(c["control"], true, "controls come first: {c}");
        assert_ne!(c["result"]["outcome"], "ok", "the control fails again: {c}");
    }
    assert!(
        cells2[failing1..]
            .iter()
            .all(|c| c.get("control").is_none())
    );
    assert_eq!(r2["predicate"]["layers"]["envelope"]["status"], "failed");

    let stats = stdout_json(&qualify(&dir, &["ledger", "stats", "--json"]));
    assert_eq!(stats["receipts"], 2);
    assert_eq!(stats["groups"][0]["runs"], 2);
    assert_eq!(stats["groups"][0]["accepted"], 0);
    let repeating = stats["repeating"].as_array().unwrap();
    assert_eq!(repeating.len(), failing1, "{stats}");
    for r in repeating {
        assert_eq!(r["count"], 3, "plan cell twice + control once: {r}");
        assert_eq!(r["as_control"], 1);
        assert_eq!(r["receipts"], 2);
    }
    let text_stats = qualify(&dir, &["ledger", "stats"]);
    assert!(
        text_stats.stdout.contains("repeating failures"),
        "{}",
        text_stats.context()
    );
    assert!(text_stats.stdout.contains("not passed yet"));

    // The ledger holds each receipt by the digest of its file, chained.
    let list = stdout_json(&qualify(&dir, &["ledger", "list", "--json"]));
    let d1 = sha256_file(&dir.join("r1.json"));
    let d2 = sha256_file(&dir.join("r2.json"));
    assert_eq!(list[0]["digest"], d1.as_str());
    assert_eq!(list[1]["digest"], d2.as_str());
    assert_eq!(list[1]["prev_digest"], d1.as_str());
    assert_eq!(list[1]["control_cells"], failing1);
    let show = qualify(&dir, &["ledger", "show", &d2[..10], "--json"]);
    assert_eq!(show.code, 0, "{}", show.context());
    assert_eq!(
        show.stdout.trim_end(),
        std::fs::read_to_string(dir.join("r2.json"))
            .unwrap()
            .trim_end()
    );
    assert_eq!(qualify(&dir, &["ledger", "show", "0000000"]).code, 1);

    let ok = qualify(&dir, &["ledger", "verify"]);
    assert_eq!(ok.code, 0, "{}", ok.context());
    assert!(ok.stdout.contains("2 receipt(s)"), "{}", ok.context());

    // Tamper with the first stored receipt: verify names it.
    let db = dir.join(".qualify/ledger.sqlite");
    sql(
        &db,
        "UPDATE receipts SET text = replace(text, '\"trial\"', '\"production\"') WHERE seq = 1",
    );
    let bad = qualify(&dir, &["ledger", "verify"]);
    assert_eq!(bad.code, 1, "{}", bad.context());
    assert!(
        bad.stdout.contains("seq 1") && bad.stdout.contains(&d1),
        "{}",
        bad.context()
    );
    assert!(bad.stdout.contains("modified"), "{}", bad.context());
    let v = stdout_json(&qualify(&dir, &["ledger", "verify", "--json"]));
    assert_eq!(v["broken"]["seq"], 1);

    // Rewrite its digest to match: now the second receipt's link breaks.
    let text = sql(&db, "SELECT text FROM receipts WHERE seq = 1");
    assert!(text.contains("production"));
    let fixed_digest = {
        let o = Command::new("python3")
            .args([
                "-c",
                "import sqlite3,sys,hashlib\nc=sqlite3.connect(sys.argv[1])\nt=c.execute('SELECT text FROM receipts WHERE seq=1').fetchone()[0]\nd=hashlib.sha256(t.encode()).hexdigest()\nc.execute('UPDATE receipts SET digest=? WHERE seq=1',(d,))\nc.commit()\nprint(d)",
            ])
            .arg(&db)
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).trim().to_string()
    };
    assert_eq!(fixed_digest.len(), 64);
    // Its digest now holds, and the next receipt's link still names the old one; but first the
    // row's own indexed claim level no longer matches its text.
    let bad = qualify(&dir, &["ledger", "verify"]);
    assert_eq!(bad.code, 1, "{}", bad.context());
    assert!(
        bad.stdout.contains("receipt seq 1") && bad.stdout.contains("`claim_level`"),
        "{}",
        bad.context()
    );
    sql(
        &db,
        "UPDATE receipts SET claim_level = 'production' WHERE seq = 1",
    );
    let bad = qualify(&dir, &["ledger", "verify"]);
    assert_eq!(bad.code, 1, "{}", bad.context());
    assert!(
        bad.stdout.contains("seq 2") && bad.stdout.contains(&d2),
        "{}",
        bad.context()
    );
}

/// A ledger of three `fake_receipt`s (the first one refused with failures) and an incident,
/// written through the binary, at `dir/l.sqlite`.
fn small_ledger(dir: &Path) -> PathBuf {
    let db = dir.join("l.sqlite");
    let files: Vec<String> = (0..3)
        .map(|i| {
            let p = dir.join(format!("f{i}.json"));
            std::fs::write(&p, fake_receipt(3 * i, 4)).unwrap();
            p.to_str().unwrap().to_string()
        })
        .collect();
    let mut args = vec!["ledger", "--ledger", db.to_str().unwrap(), "append"];
    args.extend(files.iter().map(String::as_str));
    let o = qualify(dir, &args);
    assert_eq!(o.code, 0, "{}", o.context());
    let o = qualify(
        dir,
        &[
            "ledger",
            "--ledger",
            db.to_str().unwrap(),
            "incident",
            "--artifact",
            "a0",
            "--params",
            "threads=7,n=7",
            "--outcome",
            "crash",
        ],
    );
    assert_eq!(o.code, 0, "{}", o.context());
    db
}

/// The attacks of issue 31 on the ledger itself: an edited `supported`, `claim_level` or cell
/// outcome, deleted controls, a deleted last row. Each is named by `ledger verify` (exit 1) and
/// refused by `run`, `ledger incident` and `ledger stats` (exit 2, naming the row).
#[test]
fn an_edited_ledger_is_named_by_verify_and_refused_by_run_incident_and_stats() {
    let dir = scratch("edited");
    std::fs::write(
        dir.join("qualify.toml"),
        "[artifact]\nname = \"a0\"\ncommand = \"echo {n}\"\n\n[claim]\nlevel = \"functional\"\n\n[functional]\ncommand = \"true\"\n\n[[axis]]\nname = \"n\"\nkind = \"workload\"\nvalues = [1]\n",
    )
    .unwrap();
    for (i, (edit, row, column)) in [
        (
            "UPDATE receipts SET supported = 1 WHERE seq = 1",
            "receipt seq 1",
            "`supported`",
        ),
        (
            "UPDATE receipts SET claim_level = 'production' WHERE seq = 2",
            "receipt seq 2",
            "`claim_level`",
        ),
        (
            "UPDATE cells SET outcome = 'ok' WHERE receipt_seq = 1 AND idx = 0",
            "receipt seq 1",
            "`outcome`",
        ),
        (
            "DELETE FROM controls",
            "the control `deadlock@n=0,threads=0`",
            "missing",
        ),
        ("DELETE FROM incidents", "incident", "deleted"),
    ]
    .into_iter()
    .chain([(
        "DELETE FROM cells WHERE receipt_seq = 3; DELETE FROM failures WHERE receipt_seq = 3; \
         DELETE FROM receipts WHERE seq = 3; DELETE FROM chain WHERE kind = 'receipt' AND \
         pos = (SELECT MAX(pos) FROM chain WHERE kind = 'receipt'); DELETE FROM incidents; \
         DELETE FROM chain WHERE kind = 'incident'",
        "the end of the chain",
        "deleted",
    )])
    .enumerate()
    {
        let case = dir.join(format!("case{i}"));
        std::fs::create_dir_all(&case).unwrap();
        let db = small_ledger(&case);
        let ok = qualify(
            &case,
            &["ledger", "--ledger", db.to_str().unwrap(), "verify"],
        );
        assert_eq!(ok.code, 0, "{}", ok.context());
        // Deleting controls or the tail needs the foreign keys off, as an editor has them.
        let o = Command::new("python3")
            .args(["-c", "import sqlite3,sys\nc=sqlite3.connect(sys.argv[1])\nc.executescript(sys.argv[2])\nc.commit()"])
            .arg(&db)
            .arg(edit)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let v = qualify(
            &case,
            &["ledger", "--ledger", db.to_str().unwrap(), "verify"],
        );
        assert_eq!(v.code, 1, "{edit}: {}", v.context());
        assert!(
            v.stdout.contains(&format!("BROKEN at {row}")) && v.stdout.contains(column),
            "{edit}: {}",
            v.context()
        );
        let ledger = db.to_str().unwrap();
        for args in [
            vec!["ledger", "--ledger", ledger, "stats"],
            vec![
                "ledger",
                "--ledger",
                ledger,
                "incident",
                "--artifact",
                "a0",
                "--params",
                "n=1",
                "--outcome",
                "crash",
            ],
            vec!["run", "--ledger", ledger, "--receipt", "r.json"],
        ] {
            std::fs::copy(dir.join("qualify.toml"), case.join("qualify.toml")).unwrap();
            let o = qualify(&case, &args);
            assert_eq!(o.code, 2, "{edit}: {args:?}: {}", o.context());
            assert!(
                o.stderr.contains(&format!("is broken at {row}"))
                    && o.stderr.contains("qualify ledger verify"),
                "{edit}: {args:?}: {}",
                o.context()
            );
        }
        assert!(!case.join("r.json").exists(), "{edit}: nothing was run");
    }
}

#[test]
fn no_ledger_flag_and_missing_ledger() {
    let dir = scratch("noledger");
    std::fs::write(
        dir.join("qualify.toml"),
        "[artifact]\nname = \"echoer\"\ncommand = \"echo {n}\"\n\n[claim]\nlevel = \"trial\"\n\n[functional]\ncommand = \"true\"\n\n[[axis]]\nname = \"n\"\nkind = \"workload\"\nvalues = [1]\n",
    )
    .unwrap();
    let o = qualify(&dir, &["run", "--no-ledger", "--receipt", "r.json"]);
    assert_eq!(o.code, 0, "{}", o.context());
    assert!(!dir.join(".qualify/ledger.sqlite").exists());
    let o = qualify(&dir, &["ledger", "list"]);
    assert_eq!(o.code, 2, "{}", o.context());
    assert!(o.stderr.contains("no ledger at"), "{}", o.context());
    let o = qualify(
        &dir,
        &[
            "run",
            "--ledger",
            "elsewhere/l.sqlite",
            "--receipt",
            "r.json",
        ],
    );
    assert_eq!(o.code, 0, "{}", o.context());
    let o = qualify(
        &dir,
        &["ledger", "--ledger", "elsewhere/l.sqlite", "verify"],
    );
    assert_eq!(o.code, 0, "{}", o.context());
}

/// A receipt-shaped document with `cells` cells, distinct per `nonce`.
fn fake_receipt(nonce: usize, cells: usize) -> String {
    let cells: Vec<Value> = (0..cells)
        .map(|i| {
            json!({
                "params": { "threads": i % 8, "n": i },
                "result": {
                    "outcome": if i % 3 == 0 { "deadlock" } else { "ok" },
                    "limits": { "timeout_seconds": 30.0 },
                    "stdout_tail": "x".repeat(512),
                },
            })
        })
        .collect();
    serde_json::to_string_pretty(&json!({
        "_type": "https://in-toto.io/Statement/v1",
        "predicate": {
            "claim": { "level": "trial", "supported": false },
            "cells": cells,
            "run": { "artifact": { "name": format!("a{}", nonce % 3) }, "started": nonce.to_string() },
        }
    }))
    .unwrap()
}

/// A cheap pseudo-random number (no timing is asserted on it).
fn jitter(seed: &mut u64) -> u64 {
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    *seed
}

#[test]
fn sigkill_during_writes_leaves_a_ledger_that_opens_and_verifies() {
    let dir = scratch("kill9");
    let db = dir.join("ledger.sqlite");
    let mut seed = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
        | 1;
    let mut killed_while_running = 0;
    for round in 0..30 {
        let files: Vec<PathBuf> = (0..40)
            .map(|i| {
                let p = dir.join(format!("r{round}-{i}.json"));
                std::fs::write(&p, fake_receipt(round * 1000 + i, 150)).unwrap();
                p
            })
            .collect();
        let mut child = Command::new(QUALIFY)
            .args(["ledger", "--ledger", db.to_str().unwrap(), "append"])
            .args(&files)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(jitter(&mut seed) % 250));
        if child.try_wait().unwrap().is_none() {
            killed_while_running += 1;
        }
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        // Every few rounds, the ledger must open and verify between kills too.
        if round % 10 == 9 {
            let v = qualify(
                &dir,
                &["ledger", "--ledger", db.to_str().unwrap(), "verify"],
            );
            assert_eq!(v.code, 0, "after round {round}: {}", v.context());
        }
    }
    eprintln!("killed {killed_while_running} of 30 writers while they were running");
    assert_eq!(sql(&db, "PRAGMA integrity_check"), "[('ok',)]");
    let v = qualify(
        &dir,
        &[
            "ledger",
            "--ledger",
            db.to_str().unwrap(),
            "verify",
            "--json",
        ],
    );
    assert_eq!(v.code, 0, "{}", v.context());
    let v = stdout_json(&v);
    assert_eq!(v["broken"], Value::Null);
    // Each stored receipt has all its cells (no half-written receipt).
    let partial = sql(
        &db,
        "SELECT COUNT(*) FROM receipts r WHERE (SELECT COUNT(*) FROM cells c WHERE c.receipt_seq = r.seq) != 150",
    );
    assert_eq!(partial, "[(0,)]");
    // And the ledger still takes writes.
    let extra = dir.join("extra.json");
    std::fs::write(&extra, fake_receipt(999_999, 3)).unwrap();
    let o = qualify(
        &dir,
        &[
            "ledger",
            "--ledger",
            db.to_str().unwrap(),
            "append",
            extra.to_str().unwrap(),
        ],
    );
    assert_eq!(o.code, 0, "{}", o.context());
    let v = qualify(
        &dir,
        &["ledger", "--ledger", db.to_str().unwrap(), "verify"],
    );
    assert_eq!(v.code, 0, "{}", v.context());
}

// ---------------------------------------------------------------------------------------------
// Held-out checks.

const MARKER: &str = "ZQXJ-heldout-7f3a9";

fn tiny_spec(dir: &Path, extra_functional: &str, level: &str) {
    std::fs::create_dir_all(dir.join("work")).unwrap();
    std::fs::write(
        dir.join("work/qualify.toml"),
        format!(
            "[artifact]\nname = \"echoer\"\ncommand = \"echo {{n}}\"\n\n[claim]\nlevel = \"{level}\"\n\n[target]\ncores = 1\n\n[functional]\ncommand = \"true\"\n{extra_functional}\n[[axis]]\nname = \"n\"\nkind = \"workload\"\nvalues = [1]\n"
        ),
    )
    .unwrap();
}

fn holdout_dir(dir: &Path, failing: bool) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let h = dir.join(format!("held-{MARKER}"));
    std::fs::create_dir_all(&h).unwrap();
    std::fs::write(
        h.join(format!("check-{MARKER}.sh")),
        format!("# {MARKER}\necho {MARKER}\necho {MARKER} >&2\ntest -n \"$QUALIFY_ARTIFACT_DIR\" && test -f \"$QUALIFY_ARTIFACT_DIR/qualify.toml\"\n"),
    )
    .unwrap();
    let exe = h.join(format!("exec-{MARKER}"));
    let status = if failing { 3 } else { 0 };
    std::fs::write(
        &exe,
        format!("#!/bin/sh\n# {MARKER}\necho {MARKER}-out\necho {MARKER}-err >&2\nexit {status}\n"),
    )
    .unwrap();
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(h.join("notes.txt"), MARKER).unwrap(); // neither executable nor .sh: ignored
    h
}

fn everything_under(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push((p.clone(), std::fs::read(&p).unwrap()));
            }
        }
    }
    out
}

#[test]
fn held_out_content_names_and_output_never_appear_anywhere() {
    let dir = scratch("holdout");
    tiny_spec(&dir, "", "trial");
    let h = holdout_dir(&dir, true);
    let work = dir.join("work");
    let mut outputs = Vec::new();
    let o = qualify(
        &work,
        &[
            "run",
            "--holdout",
            h.to_str().unwrap(),
            "--receipt",
            "r.json",
        ],
    );
    assert_eq!(
        o.code,
        1,
        "a failing held-out check fails the functional layer: {}",
        o.context()
    );
    outputs.push(o);
    let r = read_json(&work.join("r.json"));
    let f = &r["predicate"]["layers"]["functional"];
    assert_eq!(f["status"], "failed", "{f}");
    assert_eq!(f["evidence"]["visible_status"], "closed");
    let held = &f["evidence"]["held_out"];
    assert_eq!(held["checks"], 2, "{held}");
    assert_eq!(held["passed"], 1);
    assert_eq!(held["failed"], 1);
    let mut digests: Vec<String> = held["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["sha256"].as_str().unwrap().to_string())
        .collect();
    digests.sort();
    let mut expected = vec![
        sha256_file(&h.join(format!("check-{MARKER}.sh"))),
        sha256_file(&h.join(format!("exec-{MARKER}"))),
    ];
    expected.sort();
    assert_eq!(digests, expected);

    // The same through QUALIFY_HOLDOUT, printing JSON.
    let o = qualify_env(
        &work,
        &["run", "--receipt", "r2.json", "--json"],
        &[("QUALIFY_HOLDOUT", h.to_str().unwrap())],
    );
    assert_eq!(o.code, 1, "{}", o.context());
    assert_eq!(
        stdout_json(&o)["predicate"]["layers"]["functional"]["evidence"]["held_out"]["checks"],
        2
    );
    outputs.push(o);
    for args in [
        vec!["ledger", "list"],
        vec!["ledger", "stats"],
        vec!["ledger", "stats", "--json"],
        vec!["ledger", "controls", "--json"],
        vec!["ledger", "list", "--json"],
    ] {
        outputs.push(qualify(&work, &args));
    }
    let list = stdout_json(outputs.last().unwrap());
    let d = list[0]["digest"].as_str().unwrap().to_string();
    outputs.push(qualify(&work, &["ledger", "show", &d[..12]]));
    outputs.push(qualify(&work, &["gate", "r.json", "--claim", "trial"]));

    for o in &outputs {
        for needle in [MARKER, "check-", "exec-"] {
            assert!(
                !o.stdout.contains(needle) && !o.stderr.contains(needle),
                "`{needle}` leaked into output: {}",
                o.context()
            );
        }
    }
    for (path, bytes) in everything_under(&work) {
        let text = String::from_utf8_lossy(&bytes);
        assert!(
            !text.contains(MARKER) && !text.contains("exec-") && !text.contains("check-"),
            "held-out content or names leaked into {}",
            path.display()
        );
    }
}

#[test]
fn holdout_required_gates_production_only() {
    let dir = scratch("holdout-required");
    tiny_spec(&dir, "holdout = \"required\"\n", "production");
    let work = dir.join("work");
    let o = qualify(&work, &["run", "--receipt", "none.json", "--no-ledger"]);
    assert_eq!(o.code, 1, "{}", o.context());
    let g = qualify(
        &work,
        &["gate", "none.json", "--claim", "production", "--json"],
    );
    assert_eq!(g.code, 1);
    assert!(
        g.stdout.contains("held-out checks did not run"),
        "{}",
        g.context()
    );
    let g = qualify(&work, &["gate", "none.json", "--claim", "functional"]);
    assert_eq!(
        g.code,
        0,
        "functional does not need held-out checks: {}",
        g.context()
    );

    let h = holdout_dir(&dir, false);
    let o = qualify(
        &work,
        &[
            "run",
            "--holdout",
            h.to_str().unwrap(),
            "--receipt",
            "pass.json",
            "--no-ledger",
        ],
    );
    let r = read_json(&work.join("pass.json"));
    assert_eq!(
        r["predicate"]["layers"]["functional"]["status"],
        "closed",
        "{}",
        o.context()
    );
    let g = qualify(
        &work,
        &["gate", "pass.json", "--claim", "production", "--json"],
    );
    assert!(!g.stdout.contains("held-out"), "{}", g.context());

    let bad = dir.join("bad");
    std::fs::create_dir_all(&bad).unwrap();
    std::fs::write(
        bad.join("qualify.toml"),
        "[artifact]\nname = \"x\"\ncommand = \"true\"\n\n[claim]\nlevel = \"trial\"\n\n[functional]\ncommand = \"true\"\nholdout = \"sometimes\"\n",
    )
    .unwrap();
    let o = qualify(&bad, &["run", "--no-ledger"]);
    assert_eq!(o.code, 2, "{}", o.context());
    assert!(o.stderr.contains("qualify.toml:10:"), "{}", o.context());
    assert!(o.stderr.contains("holdout"), "{}", o.context());
}

#[test]
fn holdout_inside_the_workdir_is_refused() {
    let dir = scratch("holdout-inside");
    tiny_spec(&dir, "", "trial");
    let work = dir.join("work");
    std::fs::create_dir_all(work.join("secret")).unwrap();
    let o = qualify(
        &work,
        &["run", "--holdout", "secret", "--receipt", "r.json"],
    );
    assert_eq!(o.code, 2, "{}", o.context());
    assert!(
        o.stderr.contains("inside the artifact's workdir"),
        "{}",
        o.context()
    );
    assert!(!work.join("r.json").exists());
    let o = qualify(
        &work,
        &["run", "--holdout", "nowhere", "--receipt", "r.json"],
    );
    assert_eq!(o.code, 2, "{}", o.context());
}

// ---------------------------------------------------------------------------------------------
// Process layer.

#[test]
fn process_layer_from_trace_and_git_history() {
    let dir = scratch("process");
    tiny_spec(&dir, "", "trial");
    let work = dir.join("work");
    let layer = |r: &Value| r["predicate"]["layers"]["process"].clone();

    let o = qualify(&work, &["run", "--receipt", "none.json", "--no-ledger"]);
    assert_eq!(o.code, 0, "{}", o.context());
    assert_eq!(
        layer(&read_json(&work.join("none.json")))["status"],
        "not_run"
    );

    // qualify's own format: a failing test run, an edit, a passing one (a repair), and the
    // artifact run by hand with n = 1 — plus an event type no reader knows.
    let events = concat!(
        "{\"type\":\"plan\",\"ts\":\"2026-11-30T00:00:00Z\",\"model\":\"test-model\"}\n",
        "{\"type\":\"test_run\",\"command\":\"true\",\"ts\":\"2026-11-30T00:01:00Z\",\"ok\":false}\n",
        "\n",
        "{\"type\":\"edit\",\"file\":\"main.c\",\"ts\":\"2026-11-30T00:02:00Z\"}\n",
        "{\"type\":\"test_run\",\"command\":\"true\",\"ts\":1795996980,\"ok\":true}\n",
        "{\"type\":\"tool_call\",\"tool\":\"shell\",\"command\":\"echo 1\",\"exit_code\":0,\"ts\":\"2026-11-30T00:04:00Z\"}\n",
    );
    std::fs::write(
        dir.join("trace.jsonl"),
        format!("{events}{{\"type\":\"telepathy\",\"ts\":\"2026-11-30T00:04:00Z\"}}\n"),
    )
    .unwrap();
    std::fs::write(dir.join("whole.jsonl"), events).unwrap();
    let trace = dir.join("trace.jsonl");
    let run = |file: &str, receipt: &str| {
        let o = qualify(
            &work,
            &[
                "run",
                "--trace",
                dir.join(file).to_str().unwrap(),
                "--receipt",
                receipt,
                "--no-ledger",
            ],
        );
        assert_eq!(o.code, 0, "{}", o.context());
        layer(&read_json(&work.join(receipt)))
    };
    // Read in part: partial, with the share understood.
    let p = run("trace.jsonl", "t.json");
    assert_eq!(p["status"], "partial", "{p}");
    assert!(
        p["summary"].as_str().unwrap().contains("83% understood"),
        "{p}"
    );
    assert!(p["untested"].to_string().contains("telepathy ×1"), "{p}");
    let t = &p["evidence"]["trace"];
    assert_eq!(t["events"], 6);
    assert_eq!(t["understood"], 5);
    assert_eq!(t["sources"][0]["format"], "native");
    assert_eq!(t["sources"][0]["unknown"]["telepathy"], 1);
    assert_eq!(t["runs"]["test"]["runs"], 2);
    assert_eq!(t["runs"]["test"]["failed"], 1);
    assert_eq!(t["repairs"].as_array().unwrap().len(), 1);
    assert_eq!(t["span_seconds"], 240.0);
    assert_eq!(t["sources"][0]["sha256"], sha256_file(&trace).as_str());
    assert_eq!(t["coverage"]["axes"][0]["values"], json!([1]));
    // Every entry understood and the artifact's values recovered: closed.
    let p = run("whole.jsonl", "w.json");
    assert_eq!(p["status"], "closed", "{p}");
    assert!(
        p["supports"]
            .as_str()
            .unwrap()
            .contains("tests were run 2 time(s)"),
        "{p}"
    );
    assert!(p["supports"].as_str().unwrap().contains("repair"), "{p}");
    assert!(
        p["summary"]
            .as_str()
            .unwrap()
            .contains("development ran only n = 1; no completed cell failed"),
        "{p}"
    );
    assert!(
        p["cannot_establish"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c.as_str().unwrap().contains("deployment")),
        "{p}"
    );

    std::fs::write(
        dir.join("bad.jsonl"),
        "{\"type\":\"plan\",\"ts\":1}\n{\"ts\":2}\n",
    )
    .unwrap();
    let o = qualify(
        &work,
        &[
            "run",
            "--trace",
            dir.join("bad.jsonl").to_str().unwrap(),
            "--no-ledger",
        ],
    );
    assert_eq!(o.code, 2, "{}", o.context());
    assert!(o.stderr.contains("bad.jsonl:2:"), "{}", o.context());
    std::fs::write(dir.join("bad2.jsonl"), "{\"type\":\"plan\"}\nnot json\n").unwrap();
    let o = qualify(
        &work,
        &[
            "run",
            "--trace",
            dir.join("bad2.jsonl").to_str().unwrap(),
            "--no-ledger",
        ],
    );
    assert_eq!(o.code, 2, "{}", o.context());
    assert!(o.stderr.contains("bad2.jsonl:2:"), "{}", o.context());

    // Git history only: partial.
    let git = |args: &[&str]| {
        let s = Command::new("git")
            .args([
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "-c",
                "commit.gpgsign=false",
            ])
            .args(args)
            .current_dir(&work)
            .output()
            .unwrap();
        assert!(s.status.success(), "{}", String::from_utf8_lossy(&s.stderr));
    };
    git(&["init", "-q"]);
    git(&["add", "qualify.toml"]);
    git(&["commit", "-q", "-m", "spec"]);
    git(&["tag", "base"]);
    std::fs::create_dir_all(work.join("tests")).unwrap();
    std::fs::write(work.join("tests/basic.sh"), "true\n").unwrap();
    std::fs::write(work.join("main.c"), "int main(){}\n").unwrap();
    git(&["add", "tests/basic.sh", "main.c"]);
    git(&["commit", "-q", "-m", "code and tests"]);
    let o = qualify(
        &work,
        &[
            "run",
            "--since",
            "base",
            "--receipt",
            "g.json",
            "--no-ledger",
        ],
    );
    assert_eq!(o.code, 0, "{}", o.context());
    let p = layer(&read_json(&work.join("g.json")));
    assert_eq!(p["status"], "partial", "{p}");
    assert_eq!(p["evidence"]["git"]["commits"], 1);
    assert_eq!(p["evidence"]["git"]["files_changed"], 2);
    assert_eq!(
        p["evidence"]["git"]["test_files_changed"],
        json!(["tests/basic.sh"])
    );
    let o = qualify(&work, &["run", "--since", "no-such-rev", "--no-ledger"]);
    assert_eq!(o.code, 2, "{}", o.context());
    assert!(o.stderr.contains("--since no-such-rev"), "{}", o.context());
}

/// The transfer example with the session in which the agent only ever ran one thread
/// (`examples/transfer/session.jsonl`, a Claude Code transcript): the process layer states
/// that the deadlocks lie where development never went.
#[test]
fn transfer_session_shows_the_failures_lie_outside_what_development_ran() {
    let dir = scratch("transfer-session");
    copy_example("transfer", &dir);
    let session =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/transfer/session.jsonl");
    let o = qualify(
        &dir,
        &[
            "run",
            "--trace",
            session.to_str().unwrap(),
            "--receipt",
            "r.json",
        ],
    );
    assert_eq!(o.code, 1, "the trial claim is refused: {}", o.context());
    // The ledger keeps the development summary: the failures appeared where development never
    // went.
    let stats = stdout_json(&qualify(&dir, &["ledger", "stats", "--json"]));
    let d = &stats["development"][0];
    assert_eq!(d["artifact"], "transfer", "{stats}");
    assert_eq!(
        (
            d["failing_cells"].as_i64(),
            d["outside"].as_i64(),
            d["inside"].as_i64()
        ),
        (Some(4), Some(4), Some(0))
    );
    let text = qualify(&dir, &["ledger", "stats"]);
    assert!(
        text.stdout
            .contains("4 failing cell(s): 4 where development never went, 0 where it did"),
        "{}",
        text.context()
    );
    let r = read_json(&dir.join("r.json"));
    let p = &r["predicate"]["layers"]["process"];
    assert_eq!(p["status"], "closed", "{p}");
    let sentence = p["evidence"]["coverage"]["sentence"].as_str().unwrap();
    assert_eq!(
        sentence,
        "development ran only threads = 1 and rounds = 10; the envelope's 4 failure(s) (deadlock at threads ≥ 2) lie outside anything development exercised"
    );
    let c = &p["evidence"]["coverage"];
    assert_eq!(
        (c["failing_cells"].as_u64(), c["outside"].as_u64()),
        (Some(4), Some(4))
    );
    let threads = &c["axes"][0];
    assert_eq!(threads["development"], json!([1]));
    assert_eq!(threads["examined"], json!([1, 2, 4]));
    assert_eq!(threads["failed"], json!([2, 4]));
    assert!(o.stdout.contains(sentence), "{}", o.context());
    // The terminal's failure map says it too.
    assert!(
        o.stdout.contains("development ran: threads 1  rounds 10"),
        "{}",
        o.context()
    );
    // The checklist's examined facts say it, per axis beside what qualify examined.
    let examined = r["predicate"]["checklist"]["examined_facts"].to_string();
    assert!(
        examined.contains("threads: development 1, qualify 1, 2, 4, failed at 2, 4"),
        "{examined}"
    );
    // Traceability from the record: the model is named, the prompt only digested.
    let rows = r["predicate"]["checklist"]["traceability"]
        .as_array()
        .unwrap();
    let row = |name: &str| rows.iter().find(|t| t["item"] == name).unwrap().clone();
    let model = row("model_and_prompts");
    assert_eq!(model["recorded"], true, "{model}");
    assert!(
        model["detail"]
            .as_str()
            .unwrap()
            .contains("claude-sonnet-4-5"),
        "{model}"
    );
    assert!(
        row("tools")["detail"]
            .as_str()
            .unwrap()
            .contains("Bash ×5, Edit ×1, Read ×1"),
        "{}",
        row("tools")
    );
    let text = std::fs::read_to_string(dir.join("r.json")).unwrap();
    assert!(
        !text.contains("loses money"),
        "the prompt's text reached the receipt"
    );
}

/// Traces that cannot be read are usage errors that name the file and the formats; a trace of
/// another agent than the spec's artifact is read, but leaves the layer partial.
#[test]
fn unreadable_or_unmatched_traces() {
    let dir = scratch("trace-errors");
    tiny_spec(&dir, "", "trial");
    let work = dir.join("work");
    std::fs::write(dir.join("notes.json"), "{\"hello\": 1}\n").unwrap();
    let o = qualify(
        &work,
        &[
            "run",
            "--trace",
            dir.join("notes.json").to_str().unwrap(),
            "--no-ledger",
        ],
    );
    assert_eq!(o.code, 2, "{}", o.context());
    for f in [
        "claude-code",
        "codex",
        "opencode",
        "openhands",
        "swe-agent",
        "otel",
        "native",
    ] {
        assert!(o.stderr.contains(f), "{f}: {}", o.context());
    }
    let o = qualify(
        &work,
        &[
            "run",
            "--trace",
            dir.join("missing").to_str().unwrap(),
            "--no-ledger",
        ],
    );
    assert_eq!(o.code, 2, "{}", o.context());
    let o = qualify(
        &work,
        &[
            "run",
            "--trace-format",
            "teletype",
            "--trace",
            "x",
            "--no-ledger",
        ],
    );
    assert_eq!(o.code, 2, "{}", o.context());
    // A directory of sessions: one record. Neither runs `echo`, the artifact: partial.
    let traces = dir.join("sessions");
    std::fs::create_dir_all(traces.join("nested")).unwrap();
    std::fs::write(
        traces.join("a.jsonl"),
        "{\"type\":\"tool_call\",\"tool\":\"shell\",\"command\":\"make\",\"exit_code\":0}\n",
    )
    .unwrap();
    std::fs::write(
        traces.join("nested/b.jsonl"),
        "{\"type\":\"tool_call\",\"tool\":\"shell\",\"command\":\"ls -la\",\"exit_code\":0}\n",
    )
    .unwrap();
    let o = qualify(
        &work,
        &[
            "run",
            "--trace",
            traces.to_str().unwrap(),
            "--receipt",
            "d.json",
            "--no-ledger",
        ],
    );
    assert_eq!(o.code, 0, "{}", o.context());
    let p = read_json(&work.join("d.json"))["predicate"]["layers"]["process"].clone();
    assert_eq!(p["status"], "partial", "{p}");
    assert_eq!(
        p["evidence"]["trace"]["sources"].as_array().unwrap().len(),
        2
    );
    assert!(
        p["evidence"]["coverage"]["sentence"]
            .as_str()
            .unwrap()
            .starts_with("no recorded command ran `echo`"),
        "{p}"
    );
}

// ---------------------------------------------------------------------------------------------
// Incidents: what comes back after release.

#[test]
fn an_incident_is_an_escape_a_control_and_part_of_the_chain() {
    let dir = scratch("incident");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/sumsq");
    for f in ["qualify.toml", "sumsq.c"] {
        std::fs::copy(src.join(f), dir.join(f)).unwrap();
    }
    let first = qualify(&dir, &["run", "qualify.toml", "--receipt", "r1.json"]);
    assert_eq!(first.code, 0, "sumsq is trial-ready: {}", first.context());
    let d1 = sha256_file(&dir.join("r1.json"));

    // Bad input: exit 2 with the fix.
    for (args, needle) in [
        (vec!["--outcome", "ok"], "use one of: exit_failure"),
        (vec!["--outcome", "hung"], "is not a failure outcome"),
        (vec!["--params", "threads"], "is not NAME=VALUE"),
        (vec!["--artifact", "nope"], "no receipt of artifact `nope`"),
        (vec!["--receipt", "ffffffffff"], "--receipt: no receipt"),
    ] {
        let mut flags = vec![
            ("--artifact", "sumsq"),
            ("--params", "threads=2,n=1000000"),
            ("--outcome", "deadlock"),
        ];
        match flags.iter_mut().find(|(f, _)| *f == args[0]) {
            Some(slot) => slot.1 = args[1],
            None => flags.push((args[0], args[1])),
        }
        let mut full = vec!["ledger", "incident"];
        for (f, v) in flags {
            full.extend([f, v]);
        }
        let o = qualify(&dir, &full);
        assert_eq!(o.code, 2, "{}", o.context());
        assert!(o.stderr.contains(needle), "{needle}: {}", o.context());
    }

    let inc = qualify(
        &dir,
        &[
            "ledger",
            "incident",
            "--artifact",
            "sumsq",
            "--params",
            "threads=2,n=1000000",
            "--outcome",
            "deadlock",
            "--detail",
            "hung at a customer site",
            "--json",
        ],
    );
    assert_eq!(inc.code, 0, "{}", inc.context());
    let inc = stdout_json(&inc);
    assert_eq!(inc["incident"]["escaped_receipt"], d1.as_str(), "{inc}");
    assert_eq!(inc["incident"]["escaped_level"], "trial");
    assert_eq!(inc["new_control"], true);

    let stats = stdout_json(&qualify(&dir, &["ledger", "stats", "--json"]));
    assert_eq!(stats["groups"][0]["accepted"], 1, "{stats}");
    assert_eq!(stats["groups"][0]["escapes"], 1, "{stats}");
    assert_eq!(stats["groups"][0]["escape_rate"], 1.0, "{stats}");
    let text = qualify(&dir, &["ledger", "stats"]);
    assert!(
        text.stdout.contains("1 escape(s) (escape rate 1.00)")
            && text
                .stdout
                .contains("deadlock@n=1000000,threads=2: an escape from receipt"),
        "{}",
        text.context()
    );
    let verify = qualify(&dir, &["ledger", "verify"]);
    assert_eq!(verify.code, 0, "{}", verify.context());

    // The next run re-runs the incident's parameters first, as a control.
    let second = qualify(&dir, &["run", "qualify.toml", "--receipt", "r2.json"]);
    assert!(
        second.stderr.contains("1 control(s) from earlier failures"),
        "{}",
        second.context()
    );
    let r2 = read_json(&dir.join("r2.json"));
    let c0 = &r2["predicate"]["cells"][0];
    assert_eq!(c0["control"], true, "{c0}");
    assert_eq!(c0["params"], json!({"threads": 2, "n": 1000000}));
    // The receipt after the incident links to it in the chain.
    let list = stdout_json(&qualify(&dir, &["ledger", "list", "--json"]));
    assert_eq!(list[1]["prev_digest"], inc["incident"]["digest"]);
    assert_eq!(qualify(&dir, &["ledger", "verify"]).code, 0);
}

/// The anchor is hidden like the ledger: an artifact run with the ledger in its workdir can
/// neither read nor replace it (the sandbox's default), so it cannot cut the chain's tail and
/// re-anchor it.
#[test]
fn the_artifact_can_neither_read_nor_replace_the_anchor() {
    let dir = scratch("anchor-hidden");
    std::fs::write(
        dir.join("qualify.toml"),
        "[artifact]\nname = \"snoop\"\ncommand = \"sh -c 'cat l.sqlite.anchor; echo tampered > l.sqlite.anchor; echo n={n}'\"\n\n[claim]\nlevel = \"functional\"\n\n[functional]\ncommand = \"true\"\n\n[[axis]]\nname = \"n\"\nkind = \"workload\"\nvalues = [1]\n",
    )
    .unwrap();
    for receipt in ["r1.json", "r2.json"] {
        let o = qualify(&dir, &["run", "--ledger", "l.sqlite", "--receipt", receipt]);
        assert_eq!(o.code, 0, "{}", o.context());
    }
    let r2 = read_json(&dir.join("r2.json"));
    let tail = r2["predicate"]["cells"][0]["result"]["stdout_tail"]
        .as_str()
        .unwrap();
    assert_eq!(
        tail, "n=1\n",
        "the anchor's text reached the artifact: {tail}"
    );
    let anchor = std::fs::read_to_string(dir.join("l.sqlite.anchor")).unwrap();
    assert!(anchor.contains("\"entries\":2"), "{anchor}");
    let v = qualify(&dir, &["ledger", "--ledger", "l.sqlite", "verify"]);
    assert_eq!(v.code, 0, "{}", v.context());
}
