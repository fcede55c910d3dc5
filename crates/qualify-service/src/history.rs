//! The write history of a cell beside its receipt, and the spec's `checker` on it. The
//! history ([`crate::writes::history`], JSON Lines) is written content-addressed into the
//! receipt's directory (`histories/<sha256>.jsonl`, named in the receipt with its digest), so
//! the file a receipt names is the one the checker judged. The checker (`writes.checker`)
//! runs outside the sandbox (it is the user's judge, like the build step), from the calling
//! thread and so in the service's network, with `{history}` (the file's absolute path),
//! `{port}` and the axes rendered; exit 0 is `valid`, 1 `invalid`, anything else (another
//! status, a signal, its 60 s deadline) `error`: the history was not judged.

use std::path::{Path, PathBuf};

use qualify_model::fault::{CheckerRecord, HistoryFile};
use qualify_model::{Outcome, Params};
use qualify_probe::{BackendChoice, CancelToken};
use qualify_spec::template::Overlay;
use qualify_spec::{CommandLine, HISTORY_PLACEHOLDER, Spec};

use crate::SpecProbes;
use crate::error::HistoryError;

/// The checker's deadline.
const CHECKER_TIMEOUT: f64 = 60.0;

/// Write `text` as `<dir>/<sha256>.jsonl` (`dir` is the receipt directory's `histories`); the
/// record names it relative to the receipt's directory.
pub fn write(dir: &Path, text: &str) -> Result<(HistoryFile, PathBuf), HistoryError> {
    let sha = qualify_model::sha256_hex(text.as_bytes());
    std::fs::create_dir_all(dir).map_err(|source| HistoryError::CreateDir {
        path: dir.to_path_buf(),
        source,
    })?;
    let path = dir.join(format!("{sha}.jsonl"));
    let tmp = dir.join(format!("{sha}.jsonl.partial"));
    std::fs::write(&tmp, text)
        .and_then(|()| std::fs::rename(&tmp, &path))
        .map_err(|source| HistoryError::Write {
            path: path.clone(),
            source,
        })?;
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "histories".into());
    Ok((
        HistoryFile {
            path: format!("{name}/{sha}.jsonl"),
            sha256: sha,
            lines: text.lines().count() as u64,
        },
        path,
    ))
}

/// Run the checker on the history at `history`; what it answered.
pub fn check(
    spec: &Spec,
    backend: BackendChoice,
    cancel: &CancelToken,
    command: &CommandLine,
    history: &Path,
    bound: &Params,
) -> CheckerRecord {
    let absolute = std::path::absolute(history).unwrap_or_else(|_| history.to_path_buf());
    let bindings = Overlay::new(bound).with(HISTORY_PLACEHOLDER, absolute.display());
    let rendered = command.render(&bindings);
    let text = rendered.to_string();
    let argv: Vec<std::ffi::OsString> = rendered.argv().into_iter().map(Into::into).collect();
    let mut probe = spec.command_probe(argv, backend);
    probe.sandbox = qualify_probe::Sandbox::off();
    probe.limits.memory_bytes = None;
    probe.limits.cpus = None;
    probe.limits.pids = None;
    probe.limits.timeout_seconds = CHECKER_TIMEOUT;
    probe.limits.stall_seconds = CHECKER_TIMEOUT / 2.0;
    let r = match qualify_probe::probe(&probe, cancel) {
        Ok(r) => r,
        Err(e) => {
            return CheckerRecord {
                command: text,
                verdict: "error".into(),
                exit: None,
                detail: format!("could not run: {e}"),
            };
        }
    };
    let last = |s: &str| {
        s.lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .map(|l| l.trim().to_string())
    };
    let said = last(&r.stdout_tail)
        .or_else(|| last(&r.stderr_tail))
        .unwrap_or_else(|| "(no output)".into());
    let (verdict, detail) = match (r.outcome, r.exit_code) {
        (Outcome::Ok, _) => ("valid", said),
        (Outcome::ExitFailure, Some(1)) => ("invalid", said),
        (Outcome::ExitFailure, Some(code)) => (
            "error",
            format!("exit {code} (neither 0, valid, nor 1, invalid): {said}"),
        ),
        (outcome, _) => ("error", format!("{outcome}: {}; {said}", r.detail)),
    };
    CheckerRecord {
        command: text,
        verdict: verdict.into(),
        exit: r.exit_code,
        detail,
    }
}
