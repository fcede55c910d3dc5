//! The process layer's inputs: the development trace (`--trace FILE|DIR`, repeated; every
//! file detected by content unless `--trace-format` names one) read by `qualify-trace` against
//! the spec's command template, and the workdir's git history (`--since REV`), read and
//! summarised before the run. A directory is read as the agents leave it: files in it that are
//! no session are skipped and counted, an unreadable one is reported in the record; only a
//! trace of which nothing can be read is a usage error (exit 2) naming the file, the place and
//! the formats.

use std::path::{Path, PathBuf};
use std::process::Command;

use qualify_evidence as ev;
use qualify_spec::{CommandLine, Spec};
use qualify_trace::{Format, SpecView, TraceFile};

use crate::error::Error;

/// What the trace reader needs of the spec: the artifact's command template, launcher and
/// environment, the functional check and build commands, the axes.
pub fn spec_view(spec: &Spec) -> SpecView {
    let mut view = SpecView {
        launcher: spec
            .artifact
            .launcher
            .as_deref()
            .map(|l| l.split_whitespace().map(String::from).collect())
            .unwrap_or_default(),
        env: spec
            .artifact
            .env
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        functional: spec.functional.as_ref().map(|f| f.command.to_string()),
        build: spec.artifact.build.as_ref().map(ToString::to_string),
        axes: spec.axes.iter().map(|a| a.name.clone()).collect(),
        ..SpecView::default()
    };
    match &spec.artifact.command {
        CommandLine::Argv(argv) => view.command = argv.clone(),
        CommandLine::Shell(line) => view.shell_command(line),
    }
    view
}

/// Every file a `--trace` names: the file itself, or a directory's regular files (recursively,
/// sorted by path, hidden entries skipped), each with whether it was found in a directory.
fn trace_files(path: &Path, out: &mut Vec<(PathBuf, bool)>) -> Result<(), Error> {
    trace_files_in(path, false, out)
}

fn trace_files_in(
    path: &Path,
    in_directory: bool,
    out: &mut Vec<(PathBuf, bool)>,
) -> Result<(), Error> {
    let cannot = |e: std::io::Error| {
        Error::input(
            format!("--trace {}: {e}", path.display()),
            "name a trace file or a directory of trace files",
        )
    };
    let meta = std::fs::metadata(path).map_err(cannot)?;
    if !meta.is_dir() {
        out.push((path.to_path_buf(), in_directory));
        return Ok(());
    }
    let mut entries: Vec<PathBuf> = std::fs::read_dir(path)
        .map_err(cannot)?
        .filter_map(Result::ok)
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .map(|e| e.path())
        .collect();
    entries.sort();
    for e in entries {
        trace_files_in(&e, true, out)?;
    }
    Ok(())
}

/// Read the trace files into one development record; `None` without `--trace`.
pub fn load_trace(
    spec: &Spec,
    paths: &[PathBuf],
    forced: Option<Format>,
) -> Result<Option<ev::DevRecord>, Error> {
    if paths.is_empty() {
        return Ok(None);
    }
    let mut files = Vec::new();
    for p in paths {
        trace_files(p, &mut files)?;
    }
    if files.is_empty() {
        return Err(Error::input(
            format!(
                "--trace {}: no trace file in it",
                paths
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(" ")
            ),
            format!(
                "name the session files; qualify reads {}",
                Format::listing()
            ),
        ));
    }
    let mut read = Vec::with_capacity(files.len());
    for (f, in_directory) in files {
        let bytes = std::fs::read(&f).map_err(|e| {
            Error::input(
                format!("--trace {}: {e}", f.display()),
                "give a readable development trace",
            )
        })?;
        read.push(TraceFile {
            path: f.display().to_string(),
            bytes,
            in_directory,
        });
    }
    qualify_trace::read(&read, forced, &spec_view(spec))
        .map(Some)
        .map_err(|e| Error::input_only(e.to_string()))
}

/// `git log REV..HEAD` of `workdir`: commits, files changed, test files added or changed.
pub fn git_summary(workdir: &Path, since: &str) -> Result<ev::GitSummary, Error> {
    let git = |args: &[&str]| -> Result<String, Error> {
        let out = Command::new("git")
            .arg("-C")
            .arg(workdir)
            .args(args)
            .output()
            .map_err(|e| {
                Error::input(
                    format!("--since {since}: cannot run git: {e}"),
                    "install git",
                )
            })?;
        if !out.status.success() {
            return Err(Error::input_only(format!(
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
