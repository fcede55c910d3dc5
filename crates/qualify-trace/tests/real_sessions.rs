//! Sessions written by the real tools — Claude Code transcripts committed by a tool that reads
//! them, Codex rollouts recorded with the Codex CLI, an OpenHands evaluation's output, SWE-agent
//! trajectories (each folder's SOURCE.md names the repository, path, commit and licence) — read
//! into a record that agrees with the count made by hand beside each fixture
//! (`<fixture>.count.json`: commands, failures, edits, prompts, and what ran of the artifact);
//! and files as the agents leave them: a Claude Code project directory with its subagents and
//! saved tool outputs, a byte-order mark, a session still being written, one unreadable file
//! among readable ones.

use std::path::Path;

use qualify_trace::record::SkipReason;
use qualify_trace::{DevRecord, SpecView, TraceFile, read};
use serde_json::Value;

const FIXTURES: &[&str] = &[
    "claude-code/project",
    "claude-code/entire-rejected-write.jsonl",
    "claude-code/entire-clear.jsonl",
    "claude-code/entire-wrapper.jsonl",
    "codex/codex-0.125-tui.jsonl",
    "codex/codex-0.125-exec.jsonl",
    "codex/codex-0.171-exec.jsonl",
    "opencode/opencode-1.18-export.json",
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

/// A fixture file, or every file of a fixture directory (found in it, sorted by path).
fn files(rel: &str) -> Vec<TraceFile> {
    fn walk(dir: &Path, base: &Path, out: &mut Vec<TraceFile>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                walk(&p, base, out);
            } else {
                out.push(TraceFile {
                    path: p.strip_prefix(base).unwrap().display().to_string(),
                    bytes: std::fs::read(&p).unwrap(),
                    in_directory: true,
                });
            }
        }
    }
    let p = path(rel);
    if p.is_dir() {
        let mut out = Vec::new();
        walk(&p, &p, &mut out);
        out
    } else {
        vec![file(rel)]
    }
}

fn record(rel: &str) -> (DevRecord, Value) {
    let c = count(rel);
    let r = read(&files(rel), None, &spec(&c)).unwrap_or_else(|e| panic!("{rel}: {e}"));
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
        if c.get("sessions").is_some() {
            assert_eq!(r.sources.len() as u64, n(&c, "sessions"), "{rel}: sessions");
            let skipped = r
                .skipped
                .iter()
                .filter(|s| s.reason == SkipReason::NotATrace)
                .count() as u64;
            assert_eq!(skipped, n(&c, "not_a_trace"), "{rel}: {:?}", r.skipped);
        }
        assert_eq!(r.unreadable(), 0, "{rel}: {:?}", r.skipped);
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

/// A session saved with a byte-order mark reads as the same session.
#[test]
fn a_byte_order_mark_is_accepted() {
    let rel = "claude-code/entire-rejected-write.jsonl";
    let c = count(rel);
    let plain = read(&[file(rel)], None, &spec(&c)).unwrap();
    let mut f = file(rel);
    f.bytes.splice(0..0, "\u{feff}".bytes());
    let bom = read(&[f], None, &spec(&c)).unwrap();
    assert_eq!(
        (
            bom.events,
            bom.commands_total,
            bom.prompts.len(),
            &bom.files_edited
        ),
        (
            plain.events,
            plain.commands_total,
            plain.prompts.len(),
            &plain.files_edited
        )
    );
}

/// A session still being written (its last line cut mid-entry) is read up to its last complete
/// entry, and the record says what was cut; a whole malformed line elsewhere is still an error.
#[test]
fn a_session_being_written_is_read_up_to_its_last_complete_entry() {
    let rel = "codex/codex-0.125-tui.jsonl";
    let c = count(rel);
    let whole = read(&[file(rel)], None, &spec(&c)).unwrap();
    let mut f = file(rel);
    let text = String::from_utf8(f.bytes.clone()).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let last = lines[lines.len() - 1];
    let cut_at = last.len() / 2;
    f.bytes = format!(
        "{}\n{}",
        lines[..lines.len() - 1].join("\n"),
        &last[..cut_at]
    )
    .into_bytes();
    let r = read(std::slice::from_ref(&f), None, &spec(&c)).unwrap();
    let cut = r.sources[0].cut.clone().expect("the cut is recorded");
    assert_eq!((cut.line, cut.bytes), (lines.len(), cut_at as u64));
    assert_eq!(r.events, whole.events - 1);
    assert_eq!(r.commands_total, whole.commands_total);
    // The same break with a newline after it is not a session being written: malformed.
    f.bytes.push(b'\n');
    let e = read(&[f], None, &spec(&c)).unwrap_err();
    assert_eq!(e.line, Some(lines.len()), "{e}");
}

/// One unreadable file among readable ones is reported in the record, not fatal; alone, it is
/// the error. A file found in a directory that is no session is skipped and counted; named
/// alone, it is an error.
#[test]
fn one_unreadable_file_among_many_is_reported_not_fatal() {
    let good = "claude-code/entire-clear.jsonl";
    let c = count(good);
    let bad = "claude-code/malformed.jsonl";
    let r = read(&[file(good), file(bad)], None, &spec(&c)).unwrap();
    assert_eq!(r.sources.len(), 1);
    assert_eq!(r.unreadable(), 1);
    assert_eq!(r.skipped[0].path, bad);
    assert!(r.skipped[0].message.starts_with("3:"), "{:?}", r.skipped);
    assert_eq!(r.prompts.len() as u64, n(&c, "prompts"));
    let e = read(&[file(bad)], None, &spec(&c)).unwrap_err();
    assert_eq!((e.path.as_str(), e.line), (bad, Some(3)));
    let notes = |in_directory| TraceFile {
        path: "notes.txt".into(),
        bytes: b"just notes".to_vec(),
        in_directory,
    };
    let r = read(&[file(good), notes(true)], None, &spec(&c)).unwrap();
    assert_eq!((r.unreadable(), r.skipped.len()), (0, 1));
    let r = read(&[file(good), notes(false)], None, &spec(&c)).unwrap();
    assert_eq!(r.unreadable(), 1, "named by the user, it is reported");
    assert!(read(&[notes(true)], None, &spec(&c)).is_err());
}

/// Two entries written on one line without the newline between them (as some session files
/// hold: Entire's copy of a transcript has a `summary` glued to the entry before it) are both
/// read.
#[test]
fn two_entries_on_one_line_are_both_read() {
    let rel = "claude-code/entire-clear.jsonl";
    let c = count(rel);
    let whole = read(&[file(rel)], None, &spec(&c)).unwrap();
    let mut f = file(rel);
    let text = String::from_utf8(f.bytes.clone()).unwrap();
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    let second = lines.remove(1);
    lines[0].push_str(&second);
    f.bytes = (lines.join("\n") + "\n").into_bytes();
    let glued = read(&[f], None, &spec(&c)).unwrap();
    assert_eq!(
        (glued.events, glued.prompts.len(), &glued.files_edited),
        (whole.events, whole.prompts.len(), &whole.files_edited)
    );
}

/// The transfer example's Claude Code session with one more command: a heredoc that *writes* a
/// script holding `./transfer --threads 8 --rounds 100`. Writing is not running: development
/// still ran only threads = 1 and rounds = 10. Running the script afterwards is a run.
#[test]
fn a_heredoc_that_writes_a_script_is_not_a_run_of_what_it_holds() {
    let session =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/transfer/session.jsonl");
    let text = std::fs::read_to_string(session).unwrap();
    let spec = SpecView {
        command: [
            "./transfer",
            "--threads",
            "{threads}",
            "--rounds",
            "{rounds}",
        ]
        .map(String::from)
        .to_vec(),
        functional: Some("./transfer --check".into()),
        axes: vec!["threads".into(), "rounds".into()],
        ..SpecView::default()
    };
    let entry = |id: &str, kind: &str, content: serde_json::Value| {
        serde_json::json!({"sessionId": "s", "cwd": "/home/dev/transfer", "version": "2.0.14",
            "type": kind, "uuid": id, "timestamp": "2026-03-02T14:01:00.000Z",
            "message": {"role": kind, "content": content}})
        .to_string()
    };
    let bash = |id: &str, command: &str| {
        [
            entry(&format!("a{id}"), "assistant", serde_json::json!([{"type": "tool_use", "id": id, "name": "Bash", "input": {"command": command}}])),
            entry(&format!("u{id}"), "user", serde_json::json!([{"type": "tool_result", "tool_use_id": id, "content": "", "is_error": false}])),
        ]
        .join("\n")
    };
    let with = |extra: &str| TraceFile {
        path: "session.jsonl".into(),
        bytes: format!("{text}{extra}\n").into_bytes(),
        in_directory: false,
    };
    let heredoc = bash(
        "toolu_heredoc",
        "cat > stress.sh <<'EOF'\n./transfer --threads 8 --rounds 100\nEOF\nchmod +x stress.sh",
    );
    let before = read(&[with("")], None, &spec).unwrap();
    let r = read(&[with(&heredoc)], None, &spec).unwrap();
    assert_eq!(r.coverage.artifact_runs, before.coverage.artifact_runs);
    assert_eq!(
        r.coverage.axes[0].values,
        vec![qualify_model::Value::Int(1)]
    );
    assert_eq!(
        r.coverage.axes[1].values,
        vec![qualify_model::Value::Int(10)]
    );
    assert!(
        r.files_edited.contains(&"stress.sh".to_string()),
        "{:?}",
        r.files_edited
    );
    let ran = format!("{heredoc}\n{}", bash("toolu_run", "./stress.sh"));
    let r = read(&[with(&ran)], None, &spec).unwrap();
    assert_eq!(r.coverage.artifact_runs, before.coverage.artifact_runs + 1);
    assert_eq!(
        r.coverage.axes[0].values,
        vec![qualify_model::Value::Int(1), qualify_model::Value::Int(8)]
    );
}
