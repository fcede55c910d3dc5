//! Every format's fixture — the same invented session in each format's public shape: a failing
//! build, an edit, the build passing, the spec's functional check, one short run of the
//! artifact with one thread, a page of documentation, a push with a token in the command —
//! read into one development record, and one malformed file per format refused with its place.

use std::path::Path;

use qualify_model::Value;
use qualify_trace::classify::Kind;
use qualify_trace::{Format, SpecView, TraceFile, read};

const PROMPT: &str = "Make the transfer example build and pass its check.";

fn transfer_spec() -> SpecView {
    SpecView {
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
        build: Some("cc -O2 -pthread -o transfer transfer.c".into()),
        axes: vec!["threads".into(), "rounds".into()],
        ..SpecView::default()
    }
}

fn file(rel: &str) -> TraceFile {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(rel);
    TraceFile {
        path: rel.to_string(),
        bytes: std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())),
        in_directory: false,
    }
}

const FIXTURES: &[(&str, Format)] = &[
    ("claude-code/session.jsonl", Format::ClaudeCode),
    ("codex/rollout.jsonl", Format::Codex),
    ("opencode/export.json", Format::OpenCode),
    ("openhands/trajectory.json", Format::OpenHands),
    ("swe-agent/transfer.traj", Format::SweAgent),
    ("otel/spans.json", Format::Otel),
    ("native/trace.jsonl", Format::Native),
];

#[test]
fn every_format_yields_the_same_development_facts() {
    for (rel, format) in FIXTURES {
        let r = read(&[file(rel)], None, &transfer_spec()).unwrap_or_else(|e| panic!("{rel}: {e}"));
        let ctx = format!("{rel}: {r:#?}");
        assert_eq!(r.sources[0].format, *format, "{ctx}");
        // Coverage: the artifact ran once, with one thread and ten rounds; the functional
        // check is not an artifact run.
        let c = &r.coverage;
        assert_eq!(c.artifact.as_deref(), Some("transfer"), "{ctx}");
        assert_eq!(c.artifact_runs, 1, "{ctx}");
        assert_eq!(c.functional_runs, 1, "{ctx}");
        assert_eq!(c.axes[0].values, vec![Value::Int(1)], "{ctx}");
        assert_eq!(c.axes[1].values, vec![Value::Int(10)], "{ctx}");
        // The build and the push ran neither the artifact nor its check.
        assert_eq!(c.unmatched_commands, 3, "{ctx}");
        // Runs by kind.
        assert_eq!(r.runs.functional.runs, 1, "{ctx}");
        assert_eq!(r.runs.test.runs, 1, "{ctx}");
        assert_eq!(r.runs.build.runs, 2, "{ctx}");
        assert_eq!(r.runs.artifact.runs, 1, "{ctx}");
        assert!(
            r.files_edited.iter().any(|f| f.ends_with("transfer.c")),
            "{ctx}"
        );
        assert!(!r.models.is_empty(), "{ctx}");
        assert!(!r.agents.is_empty(), "{ctx}");
        // The prompt is a digest, and its text is nowhere in the record.
        assert_eq!(r.prompts.len(), 1, "{ctx}");
        assert_eq!(
            r.prompts[0].sha256,
            qualify_model::sha256_hex(PROMPT.as_bytes()),
            "{ctx}"
        );
        let json = serde_json::to_string(&r).unwrap();
        assert!(
            !json.contains("Make the transfer"),
            "{rel}: prompt text in the record"
        );
        // The token in the pushed command is redacted like the environment.
        assert!(
            !json.contains("fixture-not-a-real-token"),
            "{rel}: secret in the record"
        );
        assert_eq!(r.redacted_commands, 1, "{ctx}");
        let kinds: Vec<Kind> = r.commands.iter().map(|c| c.kind).collect();
        assert_eq!(
            kinds,
            vec![
                Kind::Build,
                Kind::Build,
                Kind::Functional,
                Kind::Artifact,
                Kind::Other
            ],
            "{ctx}"
        );
        if *format == Format::SweAgent {
            // SWE-agent records no exit status: nothing passed or failed, nothing repaired.
            assert_eq!(r.runs.build.unknown, 2, "{ctx}");
            assert!(r.repairs.is_empty(), "{ctx}");
            assert_eq!(r.errors, 0, "{ctx}");
        } else {
            assert_eq!((r.runs.build.failed, r.runs.build.passed), (1, 1), "{ctx}");
            assert_eq!(r.runs.functional.passed, 1, "{ctx}");
            // The failed build, the edit, the build passing: one repair.
            assert_eq!(r.repairs.len(), 1, "{ctx}");
            assert!(r.repairs[0].error.starts_with("cc -O2"), "{ctx}");
            assert!(
                r.repairs[0]
                    .edited
                    .iter()
                    .any(|f| f.ends_with("transfer.c")),
                "{ctx}"
            );
            // The build and the push failed.
            assert_eq!(r.errors, 2, "{ctx}");
            assert!(r.tokens.is_some(), "{ctx}");
        }
        if !matches!(format, Format::SweAgent | Format::Native) {
            assert_eq!(r.docs.len(), 1, "{ctx}");
        }
        let whole = *format != Format::Otel;
        assert_eq!(r.read_in_full(), whole, "{ctx}");
    }
}

#[test]
fn format_specifics_are_read() {
    let claude = read(&[file("claude-code/session.jsonl")], None, &transfer_spec()).unwrap();
    // Seven assistant messages, one streamed over two entries: usage counted once each.
    assert_eq!(claude.models[0].name, "claude-sonnet-4-5-20250929");
    assert_eq!(claude.models[0].calls, 7);
    assert_eq!(claude.tokens.as_ref().and_then(|t| t.input), Some(700));
    assert_eq!(claude.agents[0].version.as_deref(), Some("2.0.1"));
    assert_eq!(claude.files_edited, vec!["transfer.c"]);
    assert_eq!(claude.commands[0].exit_code, Some(1));
    assert_eq!(claude.commands[0].duration_seconds, Some(2.0));
    assert_eq!(claude.tools["Bash"], 5);

    let codex = read(&[file("codex/rollout.jsonl")], None, &transfer_spec()).unwrap();
    assert_eq!(codex.models[0].name, "gpt-5-codex");
    assert_eq!(codex.agents[0].version.as_deref(), Some("0.46.0"));
    let t = codex.tokens.unwrap();
    assert_eq!(
        (t.input, t.cache_read, t.reasoning),
        (Some(700), Some(300), Some(60))
    );
    assert_eq!(codex.commands[3].duration_seconds, Some(0.2));
    assert_eq!(codex.commands[2].duration_seconds, Some(0.1));

    let otel = read(&[file("otel/spans.json")], None, &transfer_spec()).unwrap();
    // The HTTP span is counted, not understood.
    assert_eq!((otel.events, otel.understood), (10, 9));
    assert_eq!(otel.sources[0].unknown.values().sum::<u64>(), 1);
    assert!(otel.models.iter().any(|m| m.name == "gpt-4.1-2025-04-14"));

    let oh = read(&[file("openhands/trajectory.json")], None, &transfer_spec()).unwrap();
    assert_eq!(oh.commands[0].exit_code, Some(1));
    assert_eq!(oh.tokens.and_then(|t| t.input), Some(700));
}

#[test]
fn several_files_make_one_record() {
    let r = read(
        &[
            file("claude-code/session.jsonl"),
            file("codex/rollout.jsonl"),
        ],
        None,
        &transfer_spec(),
    )
    .unwrap();
    assert_eq!(r.sources.len(), 2);
    assert_eq!(r.formats(), vec![Format::ClaudeCode, Format::Codex]);
    assert_eq!(r.coverage.artifact_runs, 2);
    assert_eq!(r.repairs.len(), 2);
    assert_eq!(r.prompts.len(), 1, "the same prompt digested once");
}

#[test]
fn a_malformed_file_of_each_format_is_refused_with_its_place() {
    let cases: &[(&str, usize, &str)] = &[
        ("claude-code/malformed.jsonl", 3, "EOF"),
        ("codex/malformed.jsonl", 2, "call_id"),
        ("opencode/malformed.json", 0, "state"),
        ("openhands/malformed.json", 0, "key must be a string"),
        ("swe-agent/malformed.traj", 0, "action"),
        ("otel/malformed.json", 0, "name"),
        ("native/malformed.jsonl", 2, "JSON object"),
    ];
    for (rel, line, word) in cases {
        let e = read(&[file(rel)], None, &transfer_spec()).unwrap_err();
        let text = e.to_string();
        assert!(text.starts_with(&format!("{rel}:")), "{text}");
        let at = e.line.unwrap_or_else(|| panic!("{rel}: no line: {text}"));
        if *line > 0 {
            assert_eq!(at, *line, "{text}");
        } else {
            assert!(
                at > 1 && e.column.is_some(),
                "{rel}: a document error names line and column: {text}"
            );
        }
        assert!(text.contains(word), "{rel}: {text}");
        assert!(text.contains("--trace-format"), "{rel}: {text}");
    }
}

#[test]
fn an_unknown_shape_names_the_formats_and_forcing_a_format_is_honoured() {
    let unknown = TraceFile {
        path: "notes.json".into(),
        bytes: br#"{"hello": "world"}"#.to_vec(),
        in_directory: false,
    };
    let e = read(&[unknown], None, &transfer_spec()).unwrap_err();
    let text = e.to_string();
    for f in Format::ALL {
        assert!(text.contains(f.as_str()), "{text}");
    }
    // A Claude transcript forced as codex is read as codex: every line is a type it does not
    // know, so nothing is understood.
    let r = read(
        &[file("claude-code/session.jsonl")],
        Some(Format::Codex),
        &transfer_spec(),
    );
    match r {
        Ok(r) => assert_eq!(r.understood, 0),
        Err(e) => assert!(e.to_string().contains("--trace-format codex"), "{e}"),
    }
}

#[test]
fn an_unknown_format_name_lists_every_format() {
    assert_eq!(
        "cursor".parse::<Format>().unwrap_err().to_string(),
        format!(
            "unknown trace format `cursor`; expected one of: {}",
            Format::names()
        )
    );
    assert_eq!(
        Format::names(),
        "claude-code, codex, opencode, openhands, swe-agent, otel, native"
    );
}
