//! Sessions written by the real tools — Claude Code transcripts committed by a tool that reads
//! them, Codex rollouts recorded with the Codex CLI, an OpenHands evaluation's output, SWE-agent
//! trajectories (each folder's SOURCE.md names the repository, path, commit and licence) — read
//! into a record that agrees with the count made by hand beside each fixture
//! (`<fixture>.count.json`: commands, failures, edits, prompts, and what ran of the artifact).

use std::path::Path;

use qualify_trace::{DevRecord, SpecView, TraceFile, read};
use serde_json::Value;

const FIXTURES: &[&str] = &[
    "claude-code/entire-rejected-write.jsonl",
    "claude-code/entire-clear.jsonl",
    "claude-code/entire-wrapper.jsonl",
    "codex/codex-0.125-tui.jsonl",
    "codex/codex-0.125-exec.jsonl",
    "openhands/ponyc-output.jsonl",
    "swe-agent/pydicom-1458.traj",
    "swe-agent/missing-colon.traj",
    "swe-agent/ctf-warmup.traj",
];

fn path(rel: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(rel)
}

fn file(rel: &str) -> TraceFile {
    TraceFile {
        path: rel.to_string(),
        bytes: std::fs::read(path(rel)).unwrap_or_else(|e| panic!("{rel}: {e}")),
        in_directory: false,
    }
}

fn count(rel: &str) -> Value {
    let p = path(&format!("{rel}.count.json"));
    serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap()
}

fn spec(c: &Value) -> SpecView {
    let s = &c["spec"];
    let strings = |v: &Value| -> Vec<String> {
        v.as_array()
            .into_iter()
            .flatten()
            .filter_map(|x| x.as_str().map(String::from))
            .collect()
    };
    SpecView {
        command: strings(&s["command"]),
        functional: s["functional"].as_str().map(String::from),
        build: s["build"].as_str().map(String::from),
        axes: strings(&s["axes"]),
        ..SpecView::default()
    }
}

fn record(rel: &str) -> (DevRecord, Value) {
    let c = count(rel);
    let r = read(&[file(rel)], None, &spec(&c)).unwrap_or_else(|e| panic!("{rel}: {e}"));
    (r, c)
}

fn n(c: &Value, key: &str) -> u64 {
    c[key]
        .as_u64()
        .unwrap_or_else(|| panic!("no `{key}` in the count"))
}

#[test]
fn every_real_session_agrees_with_its_hand_count() {
    for rel in FIXTURES {
        let (r, c) = record(rel);
        let ctx = format!("{rel}: {:#?}", (&r.commands, &r.coverage, &r.runs));
        assert!(r.read_in_full(), "{rel}: {:?}", r.sources[0].unknown);
        assert_eq!(r.commands_total, n(&c, "commands"), "commands: {ctx}");
        let line_failed =
            |cmd: &qualify_trace::record::Command| cmd.exit_code.map(|e| e != 0).or(cmd.error);
        let failed = r
            .commands
            .iter()
            .filter(|cmd| line_failed(cmd) == Some(true))
            .count() as u64;
        let unknown = r
            .commands
            .iter()
            .filter(|cmd| line_failed(cmd).is_none())
            .count() as u64;
        assert_eq!(failed, n(&c, "failed_commands"), "failures: {ctx}");
        assert_eq!(unknown, n(&c, "unknown_commands"), "unknown: {ctx}");
        let files: Vec<&str> = c["files_edited"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f.as_str().unwrap())
            .collect();
        assert_eq!(r.files_edited, files, "{rel}: files edited");
        assert_eq!(r.edits_failed, n(&c, "edits_failed"), "{rel}: failed edits");
        assert_eq!(
            r.edits_unconfirmed,
            n(&c, "edits_unconfirmed"),
            "{rel}: unconfirmed edits"
        );
        assert_eq!(r.rejected, n(&c, "rejected"), "{rel}: refused calls");
        assert_eq!(r.prompts.len() as u64, n(&c, "prompts"), "{rel}: prompts");
        if c.get("artifact_runs").is_some() {
            let cov = &r.coverage;
            assert_eq!(cov.artifact_runs, n(&c, "artifact_runs"), "runs: {ctx}");
            assert_eq!(
                cov.conditional_runs,
                n(&c, "conditional_runs"),
                "conditional runs: {ctx}"
            );
            assert_eq!(cov.attempts_total(), n(&c, "attempts"), "attempts: {ctx}");
        }
        if let Some(runs) = c.get("runs").and_then(Value::as_object) {
            for (kind, want) in runs {
                let got = match kind.as_str() {
                    "test" => r.runs.test,
                    "build" => r.runs.build,
                    "artifact" => r.runs.artifact,
                    "functional" => r.runs.functional,
                    other => panic!("unknown kind {other}"),
                };
                let got = [
                    got.runs,
                    got.passed,
                    got.failed,
                    got.unknown,
                    got.not_started,
                ];
                let want: Vec<u64> = want
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|x| x.as_u64().unwrap())
                    .collect();
                assert_eq!(got.to_vec(), want, "{rel}: {kind} runs: {ctx}");
            }
        }
    }
}

/// OpenHands: three attempts to run ponyc, none started — no run, no coverage; the edits
/// answered `ERROR:` are errors, not edits.
#[test]
fn attempts_that_never_started_are_not_runs() {
    let (r, _) = record("openhands/ponyc-output.jsonl");
    let c = &r.coverage;
    assert_eq!(c.artifact_runs, 0);
    assert!(c.axes[0].values.is_empty(), "{c:?}");
    assert_eq!(c.attempts.get("command not found"), Some(&1), "{c:?}");
    assert_eq!(
        c.attempts.get("No such file or directory"),
        Some(&2),
        "{c:?}"
    );
    let reasons: Vec<Option<&str>> = r
        .commands
        .iter()
        .filter(|cmd| cmd.command.contains("ponyc test.pony"))
        .map(|cmd| cmd.not_started.as_deref())
        .collect();
    assert_eq!(
        reasons,
        vec![
            Some("command not found"),
            Some("No such file or directory"),
            Some("No such file or directory")
        ]
    );
    // `make` failed inside (its own sub-shell could not cd): it ran, it did not "never start".
    let make: Vec<&qualify_trace::record::Command> = r
        .commands
        .iter()
        .filter(|cmd| cmd.command.ends_with("make"))
        .collect();
    assert_eq!(make.len(), 2);
    assert!(make.iter().all(|m| m.not_started.is_none()), "{make:?}");
}

/// Codex: a command started, then polled with `write_stdin`, has one result — its exit status —
/// counted once; the poll is not a command of its own.
#[test]
fn a_polled_codex_command_has_one_result() {
    for rel in [
        "codex/codex-0.125-tui.jsonl",
        "codex/codex-0.125-exec.jsonl",
    ] {
        let (r, _) = record(rel);
        let npm: Vec<_> = r
            .commands
            .iter()
            .filter(|c| c.command == "npm test")
            .collect();
        assert_eq!(npm.len(), 1, "{rel}");
        assert_eq!(npm[0].exit_code, Some(1), "{rel}");
        assert_ne!(
            npm[0].error,
            Some(false),
            "{rel}: error false beside exit 1"
        );
        assert_eq!(r.tool_errors, 4, "{rel}");
        assert_eq!(r.errors, 4, "{rel}");
        assert!(!r.tools.contains_key("write_stdin"), "{rel}: {:?}", r.tools);
        // The heredoc's `./transfer --threads 8 --rounds 100` is a file's content, not a run.
        let threads = &r.coverage.axes[0];
        assert_eq!(
            threads.values,
            vec![qualify_model::Value::Int(1)],
            "{rel}: {threads:?}"
        );
    }
}

/// Claude Code: a refused Write is no edit; the person's refusal is counted.
#[test]
fn a_refused_write_is_not_an_edit() {
    let (r, _) = record("claude-code/entire-rejected-write.jsonl");
    assert_eq!(r.files_edited, vec!["LICENSE"]);
    assert_eq!((r.edits_failed, r.rejected, r.errors), (1, 1, 1));
}

/// SWE-agent records no exit status: its runs are unknown, and nothing says "0 failed".
#[test]
fn swe_agent_results_are_unknown() {
    let (r, _) = record("swe-agent/pydicom-1458.traj");
    assert_eq!(
        r.runs.test.describe("test run", "test runs"),
        "2 test runs, results not recorded"
    );
    assert_eq!(r.results_known(), (0, 2));
}
