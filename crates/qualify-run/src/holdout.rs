//! Held-out checks (`--holdout DIR` / `QUALIFY_HOLDOUT`): found before the run, probed after the
//! functional check. Secret by construction: nothing here prints, returns or stores a check's
//! file name, content or output — only the sha256 of each file and its probe outcome. Errors
//! about a check name it by digest. A check reaches the artifact through `$QUALIFY_RUN`
//! ([`super::runner`]): the artifact runs in a cell of its own, never in the check's.

use std::path::{Path, PathBuf};

use qualify_evidence as ev;
use qualify_service::SpecProbes;
use qualify_spec::Spec;

use super::Context;
use crate::error::Error;

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
    pub fn discover(spec: &Spec, flag: Option<&Path>) -> Result<HeldOut, Error> {
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

    /// A check's file (for the held-out self-test to try to read), when any was found.
    pub fn first_check(&self) -> Option<&Path> {
        self.checks.as_ref()?.first().map(|c| c.path.as_path())
    }

    /// Keep the checks' content, their names and their directory out of every text the run
    /// stores.
    pub fn redact(&self, r: &mut qualify_trust::redact::Redactor) {
        for c in self.checks.iter().flatten() {
            r.held_out(&c.content);
            if let Some(name) = c.path.file_name().map(|n| n.to_string_lossy())
                && name.chars().count() >= qualify_trust::redact::MIN_NAMED
            {
                r.secret(&name);
            }
            if let Some(dir) = c.path.parent() {
                r.secret(&dir.to_string_lossy());
            }
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

fn discover(dir: &Path, workdir: &Path) -> Result<Vec<Check>, Error> {
    let real = std::fs::canonicalize(dir).map_err(|e| {
        Error::input(
            format!("--holdout {}: {e}", dir.display()),
            "give an existing directory of check commands (or unset QUALIFY_HOLDOUT)",
        )
    })?;
    if !real.is_dir() {
        return Err(Error::input(
            format!("--holdout {}: not a directory", dir.display()),
            "give a directory of check commands",
        ));
    }
    let work = std::fs::canonicalize(workdir).unwrap_or_else(|_| workdir.to_path_buf());
    if real.starts_with(&work) {
        return Err(Error::input(
            format!(
                "--holdout {} is inside the artifact's workdir {}: the artifact (and whoever built it) could read the checks, so they would not be held out",
                dir.display(),
                work.display()
            ),
            "move the directory outside the workdir",
        ));
    }
    let cannot_list = |e: std::io::Error| {
        Error::input_only(format!("--holdout {}: cannot list it: {e}", dir.display()))
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
            Error::input(
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

/// The probe of a held-out check `argv` (in the artifact's workdir, under the spec's limits):
/// it sees the held-out directory, gets `QUALIFY_ARTIFACT_DIR` and `QUALIFY_RUN` (its way to the
/// artifact, `runner`), and cannot execute anything in the workdir — the artifact's programs run
/// only in cells of their own, never inside the check's. `dir`: the checks' directory.
pub fn check_probe(
    ctx: &Context<'_>,
    argv: Vec<std::ffi::OsString>,
    dir: Option<&Path>,
    runner: &super::runner::Runner,
    control: &std::sync::Arc<qualify_probe::Control>,
) -> qualify_probe::ProbeSpec {
    let mut probe = ctx.spec.command_probe(argv, ctx.args.backend);
    // The held-out checks see their own directory; nothing else of the run does.
    probe.sandbox.reveal(qualify_probe::Role::Holdout);
    if let Some(dir) = dir {
        probe.sandbox.readable.push(dir.to_path_buf());
    }
    probe.sandbox.workdir_noexec = true;
    // In the check's private /tmp, or (no sandbox, no mount namespace) where they are.
    let inside = probe.sandbox.mode != qualify_probe::SandboxMode::Off
        && qualify_probe::sandbox::mount_namespace_available();
    probe.sandbox.binds.extend(runner.binds(inside));
    probe.env.push((
        "QUALIFY_ARTIFACT_DIR".into(),
        ctx.spec.artifact.workdir.clone().into_os_string(),
    ));
    probe.env.extend(runner.env(inside));
    probe.control = Some(std::sync::Arc::clone(control));
    probe
}

/// The artifact's probe as a held-out check starts it (its program given by the check): a cell
/// like every other, with the artifact's environment.
pub fn artifact_probe(ctx: &Context<'_>) -> qualify_probe::ProbeSpec {
    let mut probe = ctx.spec.command_probe(Vec::new(), ctx.args.backend);
    probe.env = ctx
        .spec
        .artifact
        .env(&qualify_model::Params::default())
        .into_iter()
        .map(|(k, v)| (k.into(), v.into()))
        .collect();
    probe
}

/// Run each check as a probe: digests and outcomes only.
fn probe_all(checks: &[Check], ctx: &Context<'_>) -> Vec<ev::HoldoutCheck> {
    checks
        .iter()
        .map(|c| {
            let mut argv: Vec<std::ffi::OsString> = Vec::new();
            if c.via_sh {
                argv.push("sh".into());
            }
            argv.push(c.path.clone().into_os_string());
            let control = std::sync::Arc::new(qualify_probe::Control::default());
            let outcome = match super::runner::Runner::start(
                artifact_probe(ctx),
                std::sync::Arc::clone(&control),
                std::sync::Arc::clone(ctx.cancel),
            ) {
                Ok(runner) => {
                    let probe = check_probe(ctx, argv, c.path.parent(), &runner, &control);
                    match qualify_probe::probe(&probe, ctx.cancel) {
                        Ok(r) => r.outcome.as_str().to_string(),
                        // The error text may carry the path: keep only that it could not start.
                        Err(_) => "not_started".to_string(),
                    }
                }
                Err(e) => {
                    eprintln!("qualify: warning: {e}");
                    "not_started".to_string()
                }
            };
            ev::HoldoutCheck {
                sha256: c.sha256.clone(),
                outcome,
            }
        })
        .collect()
}
