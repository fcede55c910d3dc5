//! The process layer's inputs: a development trace (`--trace FILE`, JSON Lines) and the
//! workdir's git history (`--since REV`), read and summarised before the run.

use std::path::Path;
use std::process::Command;

use qualify_evidence as ev;

use crate::error::CliError;

/// Read and digest a development trace; errors are `FILE:LINE: error: …`.
pub fn load_trace(path: &Path) -> Result<ev::TraceSummary, CliError> {
    let bytes = std::fs::read(path).map_err(|e| {
        CliError::input(
            format!("--trace {}: {e}", path.display()),
            "give a JSON Lines development trace",
        )
    })?;
    let shown = path.display().to_string();
    ev::layers::process::parse_trace(&shown, &bytes).map_err(|e| {
        CliError::input_only(format!(
            "{shown}:{}: error: {}\n  help: a trace has one JSON object per line with a `type` and a timestamp (`ts`)",
            e.line, e.message
        ))
    })
}

/// `git log REV..HEAD` of `workdir`: commits, files changed, test files added or changed.
pub fn git_summary(workdir: &Path, since: &str) -> Result<ev::GitSummary, CliError> {
    let git = |args: &[&str]| -> Result<String, CliError> {
        let out = Command::new("git")
            .arg("-C")
            .arg(workdir)
            .args(args)
            .output()
            .map_err(|e| {
                CliError::input(
                    format!("--since {since}: cannot run git: {e}"),
                    "install git",
                )
            })?;
        if !out.status.success() {
            return Err(CliError::input_only(format!(
                "--since {since}: `git {}` in {} failed: {}",
                args.join(" "),
                workdir.display(),
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    };
    let head = git(&["rev-parse", "--short", "HEAD"])?.trim().to_string();
    let range = format!("{since}..HEAD");
    let log = git(&[
        "log",
        "--no-renames",
        "--name-status",
        "--format=commit %H",
        &range,
        "--",
    ])?;
    let mut commits = 0;
    let mut files = std::collections::BTreeSet::new();
    let mut tests = std::collections::BTreeSet::new();
    for line in log.lines() {
        if line.starts_with("commit ") {
            commits += 1;
            continue;
        }
        let mut parts = line.split('\t');
        let (Some(status), Some(path)) = (parts.next(), parts.next()) else {
            continue;
        };
        files.insert(path.to_string());
        if (status.starts_with('A') || status.starts_with('M'))
            && ev::layers::process::is_test_path(path)
        {
            tests.insert(path.to_string());
        }
    }
    Ok(ev::GitSummary {
        since: since.to_string(),
        head,
        commits,
        files_changed: files.len() as u64,
        test_files_changed: tests.into_iter().collect(),
    })
}
