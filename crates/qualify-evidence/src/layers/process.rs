//! The process layer: how the artifact was developed, from a development trace (`--trace FILE`,
//! JSON Lines) and the git history of its workdir (`--since REV`). `closed` when a trace was
//! recorded and digested, `partial` with only git history, `not_run` with neither. It supports
//! what the trace shows was exercised (test runs, repairs); it is never evidence of fitness for
//! deployment. Owns the trace parser ([`parse_trace`]) and the summaries kept in the receipt.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{Layer, LayerName, LayerStatus};
use crate::receipt::sha256_hex;

/// Event types a trace is expected to use; others are counted under their own name and listed
/// as unknown, never rejected.
pub const KNOWN_EVENT_TYPES: &[&str] = &[
    "plan",
    "tool_call",
    "edit",
    "test_run",
    "error",
    "repair",
    "message",
];

/// What the run recorded about the development process.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProcessRecord {
    pub trace: Option<TraceSummary>,
    pub git: Option<GitSummary>,
}

/// A digested development trace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceSummary {
    /// The file as given on the command line.
    pub path: String,
    /// sha256 of the file's bytes.
    pub sha256: String,
    pub events: u64,
    /// Events per `type`.
    pub counts: BTreeMap<String, u64>,
    /// Types outside [`KNOWN_EVENT_TYPES`].
    pub unknown_types: Vec<String>,
    /// Earliest and latest timestamps (RFC 3339), when any event had one.
    pub first: Option<String>,
    pub last: Option<String>,
    pub span_seconds: Option<f64>,
    /// Events without a readable timestamp.
    pub untimed: u64,
    pub test_runs: u64,
    /// `test_run` events whose `ok`/`passed` is false or `outcome`/`status` is a failure.
    pub failed_test_runs: u64,
    pub repairs: u64,
    pub errors: u64,
}

/// `git log REV..HEAD` of the artifact's workdir.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GitSummary {
    pub since: String,
    pub head: String,
    pub commits: u64,
    pub files_changed: u64,
    /// Paths that look like tests (`tests/`, `test/`, `*_test.*`, `test_*.py`, `*.test.*`,
    /// `*_spec.*`) added or changed.
    pub test_files_changed: Vec<String>,
}

/// A trace line that is not an event: `file:line: message`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceError {
    pub line: usize,
    pub message: String,
}

/// Parse a JSON Lines trace. Blank lines are skipped; every other line must be a JSON object
/// with a string `type`; the timestamp is `ts`, `timestamp` or `time` (RFC 3339 or Unix
/// seconds).
pub fn parse_trace(path: &str, bytes: &[u8]) -> Result<TraceSummary, TraceError> {
    let text = std::str::from_utf8(bytes).map_err(|e| TraceError {
        line: 1 + bytes[..e.valid_up_to()]
            .iter()
            .filter(|b| **b == b'\n')
            .count(),
        message: "not UTF-8 text".to_string(),
    })?;
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    let (mut first, mut last): (Option<f64>, Option<f64>) = (None, None);
    let (mut events, mut untimed, mut failed_test_runs) = (0, 0, 0);
    for (i, line) in text.lines().enumerate() {
        let line_no = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        let bad = |message: String| TraceError {
            line: line_no,
            message,
        };
        let event: Value = serde_json::from_str(line).map_err(|e| {
            bad(format!(
                "not a JSON object ({e}); each line must be one event"
            ))
        })?;
        let Some(obj) = event.as_object() else {
            return Err(bad("not a JSON object; each line must be one event".into()));
        };
        let Some(kind) = obj.get("type").and_then(Value::as_str) else {
            return Err(bad(
                "the event has no string `type` (plan, tool_call, edit, test_run, error, repair, message, …)"
                    .into(),
            ));
        };
        events += 1;
        *counts.entry(kind.to_string()).or_default() += 1;
        match ["ts", "timestamp", "time"]
            .iter()
            .find_map(|k| obj.get(*k))
            .and_then(timestamp)
        {
            Some(t) => {
                first = Some(first.map_or(t, |f| f.min(t)));
                last = Some(last.map_or(t, |l| l.max(t)));
            }
            None => untimed += 1,
        }
        if kind == "test_run" && test_failed(obj) {
            failed_test_runs += 1;
        }
    }
    let get = |k: &str| counts.get(k).copied().unwrap_or(0);
    Ok(TraceSummary {
        path: path.to_string(),
        sha256: sha256_hex(bytes),
        events,
        unknown_types: counts
            .keys()
            .filter(|k| !KNOWN_EVENT_TYPES.contains(&k.as_str()))
            .cloned()
            .collect(),
        first: first.map(rfc3339),
        last: last.map(rfc3339),
        span_seconds: first.zip(last).map(|(f, l)| l - f),
        untimed,
        test_runs: get("test_run"),
        failed_test_runs,
        repairs: get("repair"),
        errors: get("error"),
        counts,
    })
}

fn timestamp(v: &Value) -> Option<f64> {
    if let Some(n) = v.as_f64() {
        return Some(n);
    }
    let t = humantime::parse_rfc3339_weak(v.as_str()?).ok()?;
    Some(t.duration_since(std::time::UNIX_EPOCH).ok()?.as_secs_f64())
}

fn rfc3339(secs: f64) -> String {
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_secs_f64(secs.max(0.0));
    humantime::format_rfc3339_seconds(t).to_string()
}

fn test_failed(obj: &serde_json::Map<String, Value>) -> bool {
    for k in ["ok", "passed"] {
        if let Some(b) = obj.get(k).and_then(Value::as_bool) {
            return !b;
        }
    }
    for k in ["outcome", "status", "result"] {
        if let Some(s) = obj.get(k).and_then(Value::as_str) {
            return matches!(
                s.to_ascii_lowercase().as_str(),
                "fail" | "failed" | "failure" | "error" | "errored"
            );
        }
    }
    false
}

/// Whether `path` looks like a test file.
pub fn is_test_path(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    let in_test_dir = path
        .split('/')
        .rev()
        .skip(1)
        .any(|d| matches!(d, "tests" | "test" | "__tests__" | "spec"));
    let stem = name.split('.').next().unwrap_or(name);
    in_test_dir
        || stem.ends_with("_test")
        || stem.ends_with("_tests")
        || stem.ends_with("_spec")
        || (name.starts_with("test_") && name.ends_with(".py"))
        || name.contains(".test.")
        || name.contains(".spec.")
}

/// Assess the process layer.
pub fn assess(record: &ProcessRecord) -> Layer {
    let layer = |status, summary: String, untested: Vec<String>, evidence: Value, supports| {
        let mut l = Layer::new(LayerName::Process, status, summary, untested, evidence);
        if let Some(s) = supports {
            l.supports = s;
        }
        l
    };
    let history = || "how the artifact was planned, tested, debugged and refined".to_string();
    let evidence = json!({ "trace": record.trace, "git": record.git });
    let git_text = |g: &GitSummary| {
        format!(
            "git {}..{}: {} commit(s), {} file(s) changed, {} test file(s) added or changed",
            g.since,
            g.head,
            g.commits,
            g.files_changed,
            g.test_files_changed.len()
        )
    };
    match (&record.trace, &record.git) {
        (None, None) => layer(
            LayerStatus::NotRun,
            "no development trace or history was recorded for this run".to_string(),
            vec![history()],
            json!({}),
            None,
        ),
        (None, Some(g)) => layer(
            LayerStatus::Partial,
            format!("{} (no development trace was recorded)", git_text(g)),
            vec!["the development trace (plans, tool calls, test runs, repairs)".to_string()],
            evidence,
            Some(format!(
                "the commit history since {}: {} commit(s), {} test file(s) added or changed",
                g.since,
                g.commits,
                g.test_files_changed.len()
            )),
        ),
        (Some(t), git) => {
            let mut summary = format!(
                "trace digested: {} event(s) ({} test run(s), {} failed; {} repair(s); {} error(s))",
                t.events, t.test_runs, t.failed_test_runs, t.repairs, t.errors
            );
            if let Some(s) = t.span_seconds {
                summary.push_str(&format!(" over {s:.0}s"));
            }
            if let Some(g) = git {
                summary.push_str("; ");
                summary.push_str(&git_text(g));
            }
            let mut exercised = Vec::new();
            if t.test_runs > 0 {
                exercised.push(format!(
                    "the artifact's tests were run {} time(s) during development ({} failed)",
                    t.test_runs, t.failed_test_runs
                ));
            }
            if t.repairs > 0 {
                exercised.push(format!("{} repair(s) were made after errors", t.repairs));
            }
            if exercised.is_empty() {
                exercised.push("the recorded development steps (no test runs or repairs)".into());
            }
            let mut untested = Vec::new();
            if t.untimed > 0 {
                untested.push(format!("{} event(s) without a timestamp", t.untimed));
            }
            if !t.unknown_types.is_empty() {
                untested.push(format!(
                    "event types not interpreted (counted only): {}",
                    t.unknown_types.join(", ")
                ));
            }
            layer(
                LayerStatus::Closed,
                summary,
                untested,
                evidence,
                Some(exercised.join("; ")),
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trace_counts_unknown_types_and_measures_the_span() {
        let text = b"{\"type\":\"plan\",\"ts\":\"2026-11-30T00:00:00Z\"}\n\n{\"type\":\"test_run\",\"timestamp\":1795996860,\"status\":\"failed\"}\n{\"type\":\"dance\"}\n{\"type\":\"repair\",\"time\":\"2026-11-30T00:10:00Z\"}\n";
        let t = parse_trace("t.jsonl", text).unwrap();
        assert_eq!(t.events, 4);
        assert_eq!(t.counts["dance"], 1);
        assert_eq!(t.unknown_types, vec!["dance".to_string()]);
        assert_eq!(t.untimed, 1);
        assert_eq!(t.test_runs, 1);
        assert_eq!(t.failed_test_runs, 1);
        assert_eq!(t.repairs, 1);
        assert_eq!(t.span_seconds, Some(600.0));
        assert_eq!(t.first.as_deref(), Some("2026-11-30T00:00:00Z"));
        assert_eq!(t.sha256, sha256_hex(text));
    }

    #[test]
    fn malformed_lines_are_located() {
        let e = parse_trace("t", b"{\"type\":\"plan\"}\n[1]\n").unwrap_err();
        assert_eq!(e.line, 2);
        let e = parse_trace("t", b"\n\n{\"type\": 3}\n").unwrap_err();
        assert_eq!(e.line, 3);
        assert!(e.message.contains("type"));
        let e = parse_trace("t", b"{oops\n").unwrap_err();
        assert_eq!(e.line, 1);
    }

    #[test]
    fn statuses_follow_what_was_recorded() {
        assert_eq!(
            assess(&ProcessRecord::default()).status,
            LayerStatus::NotRun
        );
        let git = GitSummary {
            since: "v1".into(),
            head: "abc".into(),
            commits: 3,
            files_changed: 4,
            test_files_changed: vec!["tests/a.rs".into()],
        };
        let only_git = assess(&ProcessRecord {
            trace: None,
            git: Some(git.clone()),
        });
        assert_eq!(only_git.status, LayerStatus::Partial);
        let trace = parse_trace("t", b"{\"type\":\"test_run\",\"ts\":1}\n").unwrap();
        let both = assess(&ProcessRecord {
            trace: Some(trace),
            git: Some(git),
        });
        assert_eq!(both.status, LayerStatus::Closed);
        assert!(both.supports.contains("tests were run 1 time(s)"));
        assert!(
            both.cannot_establish
                .iter()
                .any(|c| c.contains("fitness for deployment"))
        );
    }

    #[test]
    fn test_paths() {
        for p in [
            "tests/a.rs",
            "src/foo_test.go",
            "test_x.py",
            "a/b.test.ts",
            "x/spec/y.rb",
        ] {
            assert!(is_test_path(p), "{p}");
        }
        for p in ["src/main.rs", "testing.md", "contest.py", "latest/x.c"] {
            assert!(!is_test_path(p), "{p}");
        }
    }
}
