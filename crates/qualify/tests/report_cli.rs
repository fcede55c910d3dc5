//! End-to-end tests of `qualify report`: the real binary on receipts written by `qualify run`
//! (the fixtures of `crates/qualify-render/tests/fixtures`, and one written live from
//! `examples/sumsq`), asserting the files it writes, what it prints and its exit statuses.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use quick_xml::Reader;
use quick_xml::events::Event;
use serde_json::Value;

const QUALIFY: &str = env!("CARGO_BIN_EXE_qualify");

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(format!("../qualify-render/tests/fixtures/{name}.json"))
}

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("report-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn qualify(args: &[&str], cwd: &Path) -> Output {
    Command::new(QUALIFY)
        .args(args)
        .current_dir(cwd)
        .output()
        .expect("run qualify")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn without_flags_it_prints_markdown() {
    let dir = scratch("md");
    let out = qualify(&["report", fixture("transfer").to_str().unwrap()], &dir);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let md = text(&out.stdout);
    assert!(md.contains("trial claim NOT SUPPORTED"));
    assert!(md.contains("| layer | status | summary | untested |"));
    assert_eq!(md.matches("| deadlock |").count(), 4);
    assert_eq!(
        std::fs::read_dir(&dir).unwrap().count(),
        0,
        "no files written"
    );
}

#[test]
fn writes_html_junit_and_extrap_files() {
    let dir = scratch("files");
    let out = qualify(
        &[
            "report",
            fixture("perf").to_str().unwrap(),
            "--html",
            "r.html",
            "--junit",
            "r.xml",
            "--extrap",
            "r.jsonl",
        ],
        &dir,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(out.stdout.is_empty(), "no markdown unless asked for");
    let html = std::fs::read_to_string(dir.join("r.html")).unwrap();
    assert_eq!(html.matches("<svg").count(), 5);
    assert!(!html.contains("<script"));

    let xml = std::fs::read_to_string(dir.join("r.xml")).unwrap();
    let mut reader = Reader::from_str(&xml);
    let (mut cases, mut failures) = (0, 0);
    loop {
        match reader.read_event() {
            Ok(Event::Start(e)) | Ok(Event::Empty(e)) => match e.name().as_ref() {
                b"testcase" => cases += 1,
                b"failure" => failures += 1,
                _ => {}
            },
            Ok(Event::Eof) => break,
            Ok(_) => {}
            Err(e) => panic!("JUnit output is not well-formed: {e}"),
        }
    }
    assert_eq!((cases, failures), (18, 1));

    let jsonl = std::fs::read_to_string(dir.join("r.jsonl")).unwrap();
    let n = jsonl
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v["params"].is_object() && v["value"].is_number())
        .count();
    assert_eq!(n, 89);

    // --markdown with files: both.
    let out = qualify(
        &[
            "report",
            fixture("perf").to_str().unwrap(),
            "--markdown",
            "--junit",
            "again.xml",
        ],
        &dir,
    );
    assert_eq!(out.status.code(), Some(0));
    assert!(text(&out.stdout).contains("### Performance checks"));
    assert!(dir.join("again.xml").exists());
}

#[test]
fn bad_receipts_and_unwritable_outputs_exit_2_with_the_path() {
    let dir = scratch("bad");
    let out = qualify(&["report", "missing.json"], &dir);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.contains("cannot read receipt missing.json"), "{err}");

    std::fs::write(dir.join("notjson.json"), "{ nope").unwrap();
    let out = qualify(&["report", "notjson.json"], &dir);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("notjson.json is not a valid receipt: not a JSON document"));

    std::fs::write(dir.join("other.json"), r#"{"_type": "x"}"#).unwrap();
    let out = qualify(&["report", "other.json"], &dir);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("not a valid receipt"));

    let out = qualify(
        &[
            "report",
            fixture("transfer").to_str().unwrap(),
            "--html",
            "no/such/dir/r.html",
        ],
        &dir,
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("cannot write the HTML report to no/such/dir/r.html"));

    let out = qualify(&["report"], &dir);
    assert_eq!(
        out.status.code(),
        Some(2),
        "missing argument is a usage error"
    );
}

#[test]
fn reports_a_receipt_written_by_qualify_run() {
    let dir = scratch("live");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/sumsq");
    for entry in std::fs::read_dir(&src).unwrap() {
        let p = entry.unwrap().path();
        let name = p.file_name().unwrap().to_str().unwrap().to_string();
        if name.ends_with(".c") || name.ends_with(".toml") || name.ends_with(".py") {
            std::fs::copy(&p, dir.join(&name)).unwrap();
        }
    }
    let out = qualify(&["run", "qualify.toml", "--receipt", "r.json"], &dir);
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "qualify run failed: {}",
        text(&out.stderr)
    );
    let receipt: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("r.json")).unwrap()).unwrap();
    let cells = receipt["predicate"]["cells"].as_array().unwrap().len();
    let out = qualify(
        &[
            "report",
            "r.json",
            "--html",
            "r.html",
            "--junit",
            "r.xml",
            "--markdown",
        ],
        &dir,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("| functional |"));
    let html = std::fs::read_to_string(dir.join("r.html")).unwrap();
    assert!(html.contains("aria-label=\"envelope heatmap\""));
    let xml = std::fs::read_to_string(dir.join("r.xml")).unwrap();
    assert_eq!(xml.matches("<testcase ").count(), cells);
}
