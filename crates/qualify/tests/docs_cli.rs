//! The documentation against the binary: every flag `qualify COMMAND --help` lists is in the
//! command line reference (`docs/reference/cli.md`), and the CI recipe of the guide
//! (`docs/guide/ci.md`: a GitHub Actions and a GitLab CI job) works as written — its `qualify`
//! commands, run in order by a shell as the CI would run them, write the HTML report and the
//! Markdown summary whatever the verdict and fail the job exactly when the gate refuses: on a
//! starter spec that passes and on `examples/transfer`, which is refused.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

#[allow(unused_macros)]
mod common;

const QUALIFY: &str = env!("CARGO_BIN_EXE_qualify");

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn help(args: &[&str]) -> String {
    let out = Command::new(QUALIFY)
        .args(args)
        .arg("--help")
        .output()
        .expect("qualify --help");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `--memory` and the like: every long flag of a help text but `--help`.
fn flags(help: &str) -> Vec<String> {
    help.lines()
        .filter_map(|l| {
            let l = l.trim_start();
            let l = l.strip_prefix("-h, ").unwrap_or(l);
            let flag = l.strip_prefix("--")?;
            let name: String = flag
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                .collect();
            (name != "help" && !name.is_empty()).then(|| format!("--{name}"))
        })
        .collect()
}

#[test]
fn every_flag_of_every_command_is_in_the_reference() {
    let reference = std::fs::read_to_string(repo().join("docs/reference/cli.md"))
        .expect("docs/reference/cli.md");
    let mut missing = Vec::new();
    let commands: &[&[&str]] = &[
        &["run"],
        &["gate"],
        &["report"],
        &["init"],
        &["probe"],
        &["keygen"],
        &["verify"],
        &["ledger"],
        &["ledger", "incident"],
        &["ledger", "list"],
        &["ledger", "controls"],
    ];
    for command in commands {
        let text = help(command);
        assert!(
            text.contains("Usage:"),
            "qualify {command:?} --help: {text}"
        );
        for flag in flags(&text) {
            if !reference.contains(&format!("`{flag}")) {
                missing.push(format!("qualify {} {flag}", command.join(" ")));
            }
        }
        let section = format!("## `qualify {}`", command[0]);
        assert!(
            reference.contains(&section),
            "no {section} in the reference"
        );
    }
    assert!(
        missing.is_empty(),
        "flags missing from docs/reference/cli.md:\n  {}",
        missing.join("\n  ")
    );
}

/// The `qualify` commands of the ```yaml blocks of the CI guide, per block, as written.
fn recipes() -> Vec<Vec<String>> {
    let text = std::fs::read_to_string(repo().join("docs/guide/ci.md")).expect("docs/guide/ci.md");
    let mut blocks = Vec::new();
    let mut current: Option<Vec<String>> = None;
    for line in text.lines() {
        let t = line.trim();
        match &mut current {
            None if t.starts_with("```yaml") => current = Some(Vec::new()),
            Some(_) if t.starts_with("```") => blocks.extend(current.take()),
            Some(commands) => {
                let command = t
                    .strip_prefix("run: ")
                    .or_else(|| t.strip_prefix("- "))
                    .filter(|c| c.starts_with("qualify "));
                commands.extend(command.map(str::to_string));
            }
            None => {}
        }
    }
    blocks
}

/// Run `commands` in `dir` as a CI job's shell steps would (qualify on `PATH`, the job summary
/// a file); the status of each.
fn job(dir: &Path, commands: &[String]) -> Vec<i32> {
    let bin = Path::new(QUALIFY).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    commands
        .iter()
        .map(|c| {
            Command::new("sh")
                .args(["-c", c])
                .current_dir(dir)
                .env("PATH", &path)
                .env("GITHUB_STEP_SUMMARY", dir.join("summary.md"))
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .expect("sh")
                .code()
                .unwrap_or(-1)
        })
        .collect()
}

#[test]
fn the_ci_recipes_report_whatever_the_verdict_and_fail_on_the_gate() {
    let blocks = recipes();
    assert_eq!(
        blocks.len(),
        2,
        "a GitHub Actions and a GitLab CI job: {blocks:?}"
    );
    for commands in &blocks {
        assert_eq!(commands.len(), 3, "run, report, gate: {commands:?}");
        assert!(
            commands[0].starts_with("qualify run ") && commands[2].starts_with("qualify gate ")
        );

        // A spec that passes: the starter of `qualify init`.
        let d = common::test_dir("docs_cli", "pass");
        let dir = d.0.as_path();
        let init = Command::new(QUALIFY)
            .current_dir(dir)
            .arg("init")
            .output()
            .unwrap();
        assert!(init.status.success());
        let status = job(dir, commands);
        assert_eq!(status, [0, 0, 0], "{commands:?}");
        assert!(dir.join("qualify-report.html").exists());

        // A spec that is refused: the job still writes the report and the summary, and the
        // gate fails it.
        let d = common::test_dir("docs_cli", "refused");
        let dir = d.0.as_path();
        let example = repo().join("examples/transfer");
        for f in ["qualify.toml", "transfer.c"] {
            std::fs::copy(example.join(f), dir.join(f)).unwrap();
        }
        let status = job(dir, commands);
        assert_eq!(status, [0, 0, 1], "{commands:?}");
        let html = std::fs::read_to_string(dir.join("qualify-report.html")).unwrap();
        assert!(
            html.contains("NOT SUPPORTED"),
            "the report says the verdict"
        );
        let summary = ["summary.md", "qualify-summary.md"]
            .iter()
            .find_map(|f| std::fs::read_to_string(dir.join(f)).ok())
            .expect("the Markdown summary was written");
        assert!(summary.contains("trial claim NOT SUPPORTED"), "{summary}");
    }
}
