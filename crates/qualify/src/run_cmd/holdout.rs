//! Held-out checks (`--holdout DIR` / `QUALIFY_HOLDOUT`): found before the run, probed after the
//! functional check. Secret by construction: nothing here prints, returns or stores a check's
//! file name, content or output — only the sha256 of each file and its probe outcome. Errors
//! about a check name it by digest.

use std::path::{Path, PathBuf};

use qualify_evidence as ev;
use qualify_spec::Spec;

use super::Context;
use crate::error::CliError;

/// A held-out check found in the directory (the path is used to run it and then dropped).
struct Check {
    path: PathBuf,
    /// Run through `sh` (a non-executable `*.sh`).
    via_sh: bool,
    sha256: String,
    /// The file's text: its lines are kept out of every stored text.
    content: String,
}

/// The held-out checks of this run, if a directory was given.
pub struct HeldOut {
    checks: Option<Vec<Check>>,
    /// `[functional] holdout = "required"`.
    required: bool,
}

impl HeldOut {
    /// Find the checks in `--holdout` (else `QUALIFY_HOLDOUT`): executable regular files and
    /// `*.sh` files, sorted by digest. Refuses a directory inside the artifact's workdir.
    pub fn discover(spec: &Spec, flag: Option<&Path>) -> Result<HeldOut, CliError> {
        let checks = match holdout_dir(flag) {
            Some(dir) => Some(discover(&dir, &spec.artifact.workdir)?),
            None => None,
        };
        Ok(HeldOut {
            checks,
            required: spec
                .functional
                .as_ref()
                .is_some_and(|f| f.holdout == qualify_spec::Holdout::Required),
        })
    }

    /// Keep the checks' content out of every text the run stores.
    pub fn redact(&self, r: &mut qualify_trust::redact::Redactor) {
        for c in self.checks.iter().flatten() {
            r.held_out(&c.content);
        }
    }

    /// Run the checks (unless `skip`), printing only counts.
    pub fn run(&self, ctx: &Context<'_>, skip: bool) -> ev::HoldoutRun {
        let checks = match &self.checks {
            Some(found) if !skip => {
                ctx.say(&format!("held-out: running {} check(s)", found.len()));
                let results = probe_all(found, ctx);
                let passed = results.iter().filter(|c| c.passed()).count();
                ctx.say(&format!("held-out: {passed} of {} passed", results.len()));
                Some(results)
            }
            _ => None,
        };
        ev::HoldoutRun {
            required: self.required,
            checks,
            secrecy: None,
        }
    }
}

/// The held-out directory from `--holdout` or `QUALIFY_HOLDOUT`.
fn holdout_dir(flag: Option<&Path>) -> Option<PathBuf> {
    flag.map(Path::to_path_buf).or_else(|| {
        std::env::var_os("QUALIFY_HOLDOUT")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    })
}

fn discover(dir: &Path, workdir: &Path) -> Result<Vec<Check>, CliError> {
    let real = std::fs::canonicalize(dir).map_err(|e| {
        CliError::input(
            format!("--holdout {}: {e}", dir.display()),
            "give an existing directory of check commands (or unset QUALIFY_HOLDOUT)",
        )
    })?;
    if !real.is_dir() {
        return Err(CliError::input(
            format!("--holdout {}: not a directory", dir.display()),
            "give a directory of check commands",
        ));
    }
    let work = std::fs::canonicalize(workdir).unwrap_or_else(|_| workdir.to_path_buf());
    if real.starts_with(&work) {
        return Err(CliError::input(
            format!(
                "--holdout {} is inside the artifact's workdir {}: the artifact (and whoever built it) could read the checks, so they would not be held out",
                dir.display(),
                work.display()
            ),
            "move the directory outside the workdir",
        ));
    }
    let cannot_list = |e: std::io::Error| {
        CliError::input_only(format!("--holdout {}: cannot list it: {e}", dir.display()))
    };
    let mut checks = Vec::new();
    for entry in std::fs::read_dir(&real).map_err(cannot_list)? {
        let path = entry.map_err(cannot_list)?.path();
        let Ok(meta) = std::fs::metadata(&path) else {
            continue;
        };
        if !meta.is_file() {
            continue;
        }
        use std::os::unix::fs::PermissionsExt;
        let executable = meta.permissions().mode() & 0o111 != 0;
        let is_sh = path.extension().is_some_and(|e| e == "sh");
        if !executable && !is_sh {
            continue;
        }
        let bytes = std::fs::read(&path).map_err(|e| {
            CliError::input(
                format!(
                    "--holdout {}: a check file could not be read ({})",
                    dir.display(),
                    e.kind()
                ),
                "fix its permissions",
            )
        })?;
        checks.push(Check {
            path,
            via_sh: !executable,
            sha256: ev::sha256_hex(&bytes),
            content: String::from_utf8_lossy(&bytes).into_owned(),
        });
    }
    checks.sort_by(|a, b| a.sha256.cmp(&b.sha256));
    Ok(checks)
}

/// Run each check as a probe under the spec's limits in the artifact's workdir, with
/// `QUALIFY_ARTIFACT_DIR` set. Returns digests and outcomes only.
fn probe_all(checks: &[Check], ctx: &Context<'_>) -> Vec<ev::HoldoutCheck> {
    let workdir = ctx.spec.artifact.workdir.clone();
    checks
        .iter()
        .map(|c| {
            let mut argv: Vec<std::ffi::OsString> = Vec::new();
            if c.via_sh {
                argv.push("sh".into());
            }
            argv.push(c.path.clone().into_os_string());
            let mut probe = ctx.spec.command_probe(argv, ctx.args.backend);
            // The held-out checks see their own directory; nothing else of the run does.
            probe.sandbox.reveal(qualify_probe::Role::Holdout);
            if let Some(dir) = c.path.parent() {
                probe.sandbox.readable.push(dir.to_path_buf());
            }
            probe.env.push((
                "QUALIFY_ARTIFACT_DIR".into(),
                workdir.clone().into_os_string(),
            ));
            let outcome = match qualify_probe::probe(&probe, ctx.cancel) {
                Ok(r) => r.outcome.as_str().to_string(),
                // The error text may carry the path: keep only that it could not start.
                Err(_) => "not_started".to_string(),
            };
            ev::HoldoutCheck {
                sha256: c.sha256.clone(),
                outcome,
            }
        })
        .collect()
}
