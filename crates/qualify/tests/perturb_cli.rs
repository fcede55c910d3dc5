//! `qualify probe --perturb` on real programs (`corpus/perturb/`, built with debug information):
//! a known failing seed of the atomicity violation replays as a lost update far more often than
//! bare runs show one, and minimises to points named by file and line; correct concurrent
//! programs under every mode are slower, never failed; a static binary, which the shim cannot
//! reach, still gets the scheduler-level perturbation, and says so; in `qualify run`, a cell that
//! fails only under perturbation fails the envelope, its twin is supported with its perturbed
//! runs counted. Each runs in seconds: small
//! N, fixed seeds, and bounds with a wide margin (never a rate that could pass by chance).

#[allow(unused_macros)]
mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use common::qualify;
use serde_json::Value;

/// `corpus/perturb/*.c` built once with `-g` (and `-static` copies where asked), beside the
/// other compiled corpus (not under /tmp: the sandbox's /tmp is private).
fn perturb_bin(name: &str) -> String {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    let dir = DIR.get_or_init(|| {
        let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("corpus-perturb");
        std::fs::create_dir_all(&out).expect("create corpus-perturb");
        let src = common::corpus_src().join("perturb");
        let mut sources: Vec<PathBuf> = std::fs::read_dir(&src)
            .expect("read corpus/perturb")
            .map(|e| e.expect("entry").path())
            .filter(|p| p.extension().is_some_and(|e| e == "c"))
            .collect();
        sources.sort();
        for s in sources {
            let stem = s.file_stem().unwrap().to_string_lossy().into_owned();
            for (name, extra) in [
                (stem.clone(), None),
                (format!("{stem}_static"), Some("-static")),
            ] {
                let tmp = out.join(format!(".{name}.{}", std::process::id()));
                let mut cc = Command::new("cc");
                cc.args(["-g", "-O1", "-pthread"]);
                cc.args(extra);
                let status = cc.arg("-o").arg(&tmp).arg(&s).status().expect("run cc");
                assert!(status.success(), "cc failed for {}", s.display());
                std::fs::rename(&tmp, out.join(&name)).expect("rename");
            }
        }
        out
    });
    let p = dir.join(name);
    assert!(p.exists(), "{name} not built");
    p.to_string_lossy().into_owned()
}

fn perturb(opts: &[&str], program: &str) -> (i32, Value) {
    let bin = perturb_bin(program);
    let mut args = vec![
        "probe",
        "--json",
        "--stall",
        "1s",
        "--timeout",
        "30s",
        "--perturb",
    ];
    args.extend_from_slice(opts);
    args.push("--");
    args.push(&bin);
    let run = qualify(&args);
    assert!(
        run.json["perturb"].is_object(),
        "no perturbation report (exit {}):\n{}\n{}",
        run.code,
        run.stdout,
        run.stderr
    );
    (run.code, run.json)
}

fn mechanism<'a>(report: &'a Value, name: &str) -> Option<&'a Value> {
    report["mechanisms"]
        .as_array()?
        .iter()
        .find(|m| m["name"] == name)
}

/// A seed of the noise mode that, measured on the 2-CPU development machine, replays the lost
/// update in 18 of 20 runs (95% CI 70–97%) while 0 of 20 bare runs lost one.
const ATOMICITY_SEED: &str = "ec4c5bee627011b3";

#[test]
fn a_known_failing_seed_replays_the_lost_update_and_minimises_to_its_lines() {
    let (code, r) = perturb(
        &[
            "--mode",
            "noise",
            "--seed",
            ATOMICITY_SEED,
            "--runs",
            "24",
            "--replays",
            "24",
        ],
        "atomicity",
    );
    assert_eq!(code, 1, "a failure found is a refused probe: {r}");
    let p = &r["perturb"];
    let f = &p["failures"][0];
    assert_eq!(f["outcome"], "exit_failure", "{p}");
    assert_eq!(f["seed"], ATOMICITY_SEED);
    // A replay's rate moves with the machine's load (≥ 70% measured on a quiet machine, 25%
    // beside other builds): it is a count with its interval, not a verdict. What the test
    // holds is that the seed reproduces: 24 replays at even 25% all pass with p ≈ 0.001.
    let replayed = f["replay"]["failed"].as_u64().unwrap();
    let replays = f["replay"]["runs"].as_u64().unwrap();
    assert!(replays >= 12, "{p}");
    assert!(
        replayed >= 1,
        "the seed reproduced {replayed}/{replays}: {p}"
    );
    // 24 bare runs at the measured ~0%: 5 or more would be a different program.
    let bare = f["bare"]["failed"].as_u64().unwrap();
    assert!(bare <= 4, "bare runs lost {bare}/24 updates: {p}");
    assert_eq!(f["only_under_perturbation"], bare == 0);
    assert!(
        f["replay_command"]
            .as_str()
            .unwrap()
            .contains(&format!("--perturb --mode noise --seed {ATOMICITY_SEED}")),
        "{f}"
    );
    // Minimised to a few of its points, each named at its line in atomicity.c.
    let m = &f["minimised"];
    let points = m["points"].as_array().expect("minimised points");
    if points.is_empty() {
        // Replaying the points as fixed delays can miss on a busy machine (timing is part of
        // the bug): then the receipt says so, with the replays that missed, and keeps the seed.
        // Or the lost update struck without any delay (a busy machine interleaves the two
        // threads by itself): then the receipt says the delays were not needed.
        let note = m["note"].as_str().unwrap_or("");
        if note.contains("so the seed is the smallest replay") {
            assert_eq!(m["replay"]["failed"], 0, "{m}");
            assert!(m["replay"]["runs"].as_u64() >= Some(20), "{m}");
        } else {
            assert!(
                note.contains("the failure does not need these delays"),
                "an empty minimisation says why: {m}"
            );
        }
    }
    assert!(points.len() as u64 <= m["from"].as_u64().unwrap(), "{m}");
    for pt in points {
        let text = pt["text"].as_str().unwrap();
        assert!(text.starts_with("thread "), "{text}");
        assert!(
            pt["at"]
                .as_str()
                .is_some_and(|a| a.starts_with("atomicity.c:")),
            "{pt}"
        );
    }
    // The shim reached the program inside the sandbox: its points were counted.
    let shim = mechanism(p, "shim noise").expect("shim noise");
    assert_eq!(shim["runs"], 24, "{shim}");
}

#[test]
fn correct_concurrent_programs_are_slower_under_every_mode_never_failed() {
    for program in [
        "bounded_queue",
        "handoff",
        "lost_wakeup_ok",
        "lock_order_ok",
    ] {
        let (code, r) = perturb(
            &[
                "--runs",
                "12",
                "--replays",
                "0",
                "--perturb-budget",
                "100ms",
            ],
            program,
        );
        let p = &r["perturb"];
        assert_eq!(code, 0, "{program}: {p}");
        assert!(
            p["failures"].as_array().unwrap().is_empty(),
            "{program}: {p}"
        );
        assert_eq!(p["outcomes"]["ok"], 12, "{program}: {p}");
        assert_eq!(p["slowed"], 0, "{program}: {p}");
        // The shim did perturb them (this is not a test of an idle shim).
        let pct = mechanism(p, "shim pct").expect("shim pct");
        assert!(pct["times"].as_u64().unwrap() > 0, "{program}: {pct}");
    }
}

#[test]
fn a_static_binary_gets_scheduler_level_perturbation_and_says_the_shim_did_not_load() {
    let (code, r) = perturb(
        &["--mode", "noise", "--runs", "4", "--replays", "0"],
        "bounded_queue_static",
    );
    let p = &r["perturb"];
    assert_eq!(code, 0, "{p}");
    let shim = mechanism(p, "shim noise").expect("shim noise");
    assert_eq!(shim["runs"], 0, "{shim}");
    assert_eq!(shim["not_applied"], 4, "{shim}");
    assert!(
        shim["why_not"].as_str().unwrap().contains("did not load"),
        "{shim}"
    );
    // From the second run on, the scheduler-level perturbation stands in (noise+sched).
    let runs = p["run_list"].as_array().unwrap();
    assert!(
        runs[1..].iter().all(|r| r["mode"] == "noise+sched"),
        "{runs:?}"
    );
    let outside = [
        "SCHED_IDLE",
        "nice 19",
        "affinity squeeze",
        "freeze",
        "affinity squeeze from exec",
    ];
    let applied: u64 = outside
        .iter()
        .filter_map(|m| mechanism(p, m))
        .map(|m| m["runs"].as_u64().unwrap())
        .sum();
    assert!(applied > 0, "no scheduler-level mechanism applied: {p}");
}

/// A directory with `program` copied in and a spec running it under `[perturb]`.
fn perturbed_spec(name: &str, program: &str, extra: &str) -> common::TestDir {
    let dir = common::test_dir("perturb_cli", name);
    std::fs::copy(perturb_bin(program), dir.join(program)).expect("copy the program");
    let spec = format!(
        "[artifact]\nname = \"{program}\"\ncommand = \"./{program}\"\n\n[claim]\nlevel = \"trial\"\n\n\
         [functional]\ncommand = \"true\"\n\n[limits]\ntimeout = \"20s\"\nstall = \"1s\"\n\n\
         [perturb]\nruns = 60\nmodes = [\"noise\"]\nreplays = 5\nminimise = false\n{extra}"
    );
    std::fs::write(dir.join("qualify.toml"), spec).expect("write the spec");
    dir
}

/// `qualify run qualify.toml` in `dir`: its exit status, stdout and stderr, and the receipt.
fn run_spec(dir: &Path) -> ((i32, String, String), Value) {
    let out = Command::new(common::QUALIFY)
        .args([
            "run",
            "qualify.toml",
            "--receipt",
            "receipt.json",
            "--no-ledger",
        ])
        .current_dir(dir)
        .output()
        .expect("run qualify");
    let run = (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    let text = std::fs::read_to_string(dir.join("receipt.json"))
        .unwrap_or_else(|e| panic!("no receipt ({e}):\n{}\n{}", run.1, run.2));
    (run, serde_json::from_str(&text).expect("receipt JSON"))
}

#[test]
fn a_cell_that_fails_only_under_perturbation_fails_the_envelope_and_the_gate_says_so() {
    // 60 noise runs at the ≥ 10% per-run rate measured for the lost update: all 60 pass with
    // probability < 0.002 (1.5e-6 at the 20% measured most often).
    let dir = perturbed_spec("lost-update", "atomicity", "");
    let ((code, stdout, _), receipt) = run_spec(&dir);
    assert_eq!(code, 1, "trial is not supported:\n{stdout}");
    let envelope = &receipt["predicate"]["layers"]["envelope"];
    assert_eq!(envelope["status"], "failed", "{envelope}");
    let summary = envelope["summary"].as_str().unwrap();
    assert!(
        summary.contains("exit_failure under perturbation"),
        "{summary}"
    );
    let cell = &receipt["predicate"]["cells"][0]["result"];
    assert_eq!(cell["outcome"], "ok", "its own run passed: {cell}");
    let p = &cell["perturb"];
    assert_eq!(p["failures"][0]["outcome"], "exit_failure", "{p}");
    assert!(
        p.get("run_list").is_none(),
        "the receipt keeps counts, not runs"
    );
    assert_eq!(envelope["evidence"]["perturbation"]["runs"], 60);
    assert!(stdout.contains("under perturbation:"), "{stdout}");
}

#[test]
fn its_correct_twin_is_supported_with_the_perturbed_runs_counted() {
    let dir = perturbed_spec("no-lost-update", "atomicity_ok", "");
    let ((code, stdout, stderr), receipt) = run_spec(&dir);
    assert_eq!(code, 0, "trial is supported:\n{stdout}\n{stderr}");
    let envelope = &receipt["predicate"]["layers"]["envelope"];
    assert_eq!(envelope["status"], "closed", "{envelope}");
    let p = &envelope["evidence"]["perturbation"];
    assert_eq!(
        (p["runs"].as_u64(), p["perturbed_cells"].as_u64()),
        (Some(60), Some(1))
    );
}

/// `--executor slurm` over a spec with `[perturb]` is refused before anything runs, as
/// `[executor] kind = "slurm"` is: perturbation acts from this machine, and skipping it
/// silently would leave a production claim's required perturbation unexamined without a word.
#[test]
fn the_slurm_executor_flag_with_perturb_is_refused_not_skipped() {
    let dir = perturbed_spec("slurm-flag", "atomicity_ok", "");
    let out = Command::new(common::QUALIFY)
        .args(["run", "qualify.toml", "--executor", "slurm", "--no-ledger"])
        .current_dir(&dir.0)
        .output()
        .expect("run qualify");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--executor slurm with [perturb] in qualify.toml")
            && stderr.contains("--executor local"),
        "{stderr}"
    );
    assert!(!dir.0.join("receipt.json").exists());
}
