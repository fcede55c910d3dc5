//! The "factory" around `qualify run`: held-out checks (`--holdout DIR` / `QUALIFY_HOLDOUT`),
//! the development trace (`--trace FILE`) and git history (`--since REV`) for the process layer,
//! and the ledger's controls turned back into plan parameters.
//!
//! Held-out checks are secret by construction: nothing here prints, returns or stores a check's
//! file name, content or output — only the sha256 of each file and its probe outcome. Errors
//! about a check name it by digest.

use std::path::{Path, PathBuf};
use std::process::Command;

use qualify_evidence as ev;
use qualify_plan as plan;
use qualify_probe::{BackendChoice, CancelToken, ProbeSpec};
use qualify_spec::Spec;

/// A held-out check found in the directory (kept private to this module's callers: the path is
/// used to run it and then dropped).
pub struct HoldoutCheck {
    path: PathBuf,
    /// Run through `sh` (a non-executable `*.sh`).
    via_sh: bool,
    pub sha256: String,
}

/// The held-out directory from `--holdout` or `QUALIFY_HOLDOUT`.
pub fn holdout_dir(flag: Option<&Path>) -> Option<PathBuf> {
    flag.map(Path::to_path_buf).or_else(|| {
        std::env::var_os("QUALIFY_HOLDOUT")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    })
}

/// Find the checks in `dir`: executable regular files and `*.sh` files, sorted by digest.
/// Refuses a directory inside the artifact's workdir.
pub fn discover_holdout(dir: &Path, workdir: &Path) -> Result<Vec<HoldoutCheck>, String> {
    let real = std::fs::canonicalize(dir).map_err(|e| {
        format!(
            "--holdout {}: {e}; give an existing directory of check commands (or unset QUALIFY_HOLDOUT)",
            dir.display()
        )
    })?;
    if !real.is_dir() {
        return Err(format!(
            "--holdout {}: not a directory; give a directory of check commands",
            dir.display()
        ));
    }
    let work = std::fs::canonicalize(workdir).unwrap_or_else(|_| workdir.to_path_buf());
    if real.starts_with(&work) {
        return Err(format!(
            "--holdout {} is inside the artifact's workdir {}: the artifact (and whoever built it) could read the checks, so they would not be held out; move the directory outside the workdir",
            dir.display(),
            work.display()
        ));
    }
    let entries = std::fs::read_dir(&real)
        .map_err(|e| format!("--holdout {}: cannot list it: {e}", dir.display()))?;
    let mut checks = Vec::new();
    for entry in entries {
        let entry =
            entry.map_err(|e| format!("--holdout {}: cannot list it: {e}", dir.display()))?;
        let path = entry.path();
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
            format!(
                "--holdout {}: a check file could not be read ({}); fix its permissions",
                dir.display(),
                e.kind()
            )
        })?;
        checks.push(HoldoutCheck {
            path,
            via_sh: !executable,
            sha256: ev::sha256_hex(&bytes),
        });
    }
    checks.sort_by(|a, b| a.sha256.cmp(&b.sha256));
    Ok(checks)
}

/// Run each check as a probe under the spec's limits in the artifact's workdir, with
/// `QUALIFY_ARTIFACT_DIR` set. Returns digests and outcomes only.
pub fn run_holdout(
    checks: &[HoldoutCheck],
    spec: &Spec,
    backend: BackendChoice,
    cancel: &CancelToken,
) -> Vec<ev::HoldoutCheck> {
    let workdir = spec.artifact.workdir.clone();
    checks
        .iter()
        .map(|c| {
            let mut argv: Vec<std::ffi::OsString> = Vec::new();
            if c.via_sh {
                argv.push("sh".into());
            }
            argv.push(c.path.clone().into_os_string());
            let probe = ProbeSpec {
                argv,
                workdir: Some(workdir.clone()),
                env: vec![(
                    "QUALIFY_ARTIFACT_DIR".into(),
                    workdir.clone().into_os_string(),
                )],
                limits: spec.limits.to_probe_limits(),
                backend,
            };
            let outcome = match qualify_probe::probe(&probe, cancel) {
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

/// Read and digest a development trace; errors are `FILE:LINE: error: …`.
pub fn load_trace(path: &Path) -> Result<ev::TraceSummary, String> {
    let bytes = std::fs::read(path).map_err(|e| {
        format!(
            "--trace {}: {e}; give a JSON Lines development trace",
            path.display()
        )
    })?;
    let shown = path.display().to_string();
    ev::layers::process::parse_trace(&shown, &bytes).map_err(|e| {
        format!(
            "{shown}:{}: error: {}\n  help: a trace has one JSON object per line with a `type` and a timestamp (`ts`)",
            e.line, e.message
        )
    })
}

/// `git log REV..HEAD` of `workdir`: commits, files changed, test files added or changed.
pub fn git_summary(workdir: &Path, since: &str) -> Result<ev::GitSummary, String> {
    let git = |args: &[&str]| -> Result<String, String> {
        let out = Command::new("git")
            .arg("-C")
            .arg(workdir)
            .args(args)
            .output()
            .map_err(|e| format!("--since {since}: cannot run git: {e}; install git"))?;
        if !out.status.success() {
            return Err(format!(
                "--since {since}: `git {}` in {} failed: {}",
                args.join(" "),
                workdir.display(),
                String::from_utf8_lossy(&out.stderr).trim()
            ));
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

/// A control's parameters as the planner's, in the spec's axis order; `None` when the control's
/// axes are not exactly the spec's (the spec changed since it failed).
pub fn control_params(spec: &Spec, params: &serde_json::Value) -> Option<plan::Params> {
    let obj = params.as_object()?;
    if obj.len() != spec.axes.len() {
        return None;
    }
    let mut out = plan::Params::new();
    for axis in &spec.axes {
        let value = match obj.get(&axis.name)? {
            serde_json::Value::String(s) => plan::Value::Text(s.clone()),
            serde_json::Value::Number(n) => match n.as_i64() {
                Some(i) => plan::Value::Int(i),
                None => plan::Value::Float(n.as_f64()?),
            },
            _ => return None,
        };
        out.insert(axis.name.clone(), value);
    }
    Some(out)
}

/// What `qualify run` sets up before probing: held-out checks found, the process record, the
/// open ledger and its controls for this artifact.
pub struct Prepared {
    holdout: Option<Vec<HoldoutCheck>>,
    holdout_required: bool,
    pub process: ev::ProcessRecord,
    ledger: Option<qualify_ledger::Ledger>,
    /// The artifact's controls as plan parameters, each with its result once run.
    pub controls: Vec<(plan::Params, Option<qualify_probe::ProbeResult>)>,
}

/// The factory flags of `qualify run`.
pub struct FactoryFlags<'a> {
    pub holdout: Option<&'a Path>,
    pub trace: Option<&'a Path>,
    pub since: Option<&'a str>,
    /// `None`: `--no-ledger`.
    pub ledger: Option<&'a Path>,
    pub quiet: bool,
}

impl Prepared {
    /// Check the flags and load what they name; every error is a usage/setup error (exit 2).
    pub fn new(spec: &Spec, flags: &FactoryFlags<'_>) -> Result<Prepared, String> {
        let say = |msg: String| {
            if !flags.quiet {
                eprintln!("{msg}");
            }
        };
        let holdout = match holdout_dir(flags.holdout) {
            Some(dir) => Some(discover_holdout(&dir, &spec.artifact.workdir)?),
            None => None,
        };
        let process = ev::ProcessRecord {
            trace: flags.trace.map(load_trace).transpose()?,
            git: flags
                .since
                .map(|rev| git_summary(&spec.artifact.workdir, rev))
                .transpose()?,
        };
        let mut controls = Vec::new();
        let ledger = match flags.ledger {
            None => None,
            Some(path) => {
                let ledger = qualify_ledger::Ledger::open(path).map_err(|e| {
                    format!("{e}; pass --ledger PATH to use another, or --no-ledger")
                })?;
                let stored = ledger
                    .controls(Some(&spec.artifact.name))
                    .map_err(|e| e.to_string())?;
                let mut skipped = 0;
                for c in &stored {
                    match control_params(spec, &c.params) {
                        Some(p) => controls.push((p, None)),
                        None => skipped += 1,
                    }
                }
                if !controls.is_empty() {
                    say(format!(
                        "ledger: {} control(s) from earlier failures will run first",
                        controls.len()
                    ));
                }
                if skipped > 0 {
                    say(format!(
                        "ledger: {skipped} control(s) skipped: their parameters no longer match the spec's axes"
                    ));
                }
                Some(ledger)
            }
        };
        Ok(Prepared {
            holdout,
            holdout_required: spec
                .functional
                .as_ref()
                .is_some_and(|f| f.holdout == qualify_spec::Holdout::Required),
            process,
            ledger,
            controls,
        })
    }

    /// Run the held-out checks (unless `skip`), printing only counts.
    pub fn run_holdout(
        &self,
        spec: &Spec,
        backend: BackendChoice,
        cancel: &CancelToken,
        skip: bool,
        quiet: bool,
    ) -> ev::HoldoutRun {
        let checks = match &self.holdout {
            Some(found) if !skip => {
                if !quiet {
                    eprintln!("held-out: running {} check(s)", found.len());
                }
                let results = run_holdout(found, spec, backend, cancel);
                if !quiet {
                    let passed = results.iter().filter(|c| c.passed()).count();
                    eprintln!("held-out: {passed} of {} passed", results.len());
                }
                Some(results)
            }
            _ => None,
        };
        ev::HoldoutRun {
            required: self.holdout_required,
            checks,
        }
    }

    /// Store the written receipt in the ledger (when one is open).
    pub fn record(&mut self, text: &str, quiet: bool) -> Result<(), String> {
        let Some(ledger) = self.ledger.as_mut() else {
            return Ok(());
        };
        let done = ledger.append(text).map_err(|e| {
            format!("the receipt was written but not recorded in the ledger: {e}; rerun with --no-ledger to skip the ledger")
        })?;
        if !quiet {
            eprintln!(
                "ledger: recorded receipt {} in {} ({} new control(s))",
                &done.digest[..12],
                ledger.path().display(),
                done.new_controls
            );
        }
        Ok(())
    }
}

/// Run each control through the plan's own cell runner before the plan's cells.
pub fn run_controls(
    controls: &mut [(plan::Params, Option<qualify_probe::ProbeResult>)],
    runner: &(dyn Fn(&plan::Params) -> qualify_probe::ProbeResult + Sync),
    cancel: &CancelToken,
    bar: &indicatif::ProgressBar,
) {
    for (params, slot) in controls.iter_mut() {
        if cancel.load(std::sync::atomic::Ordering::Relaxed) {
            break;
        }
        bar.set_message(format!("control {params}"));
        let result = runner(params);
        if result.outcome != qualify_probe::Outcome::Ok {
            bar.println(format!(
                "  control {params}: {} — {} (an earlier failure, again)",
                result.outcome, result.detail
            ));
        }
        *slot = Some(result);
    }
}

/// The receipt's cells: the controls that ran (marked), then the plan's.
pub fn with_controls(
    controls: &[(plan::Params, Option<qualify_probe::ProbeResult>)],
    to_cell: impl Fn(&plan::Params, qualify_probe::ProbeResult) -> ev::Cell,
    plan_cells: Vec<ev::Cell>,
) -> Vec<ev::Cell> {
    let mut cells: Vec<ev::Cell> = controls
        .iter()
        .filter_map(|(p, r)| {
            let mut cell = to_cell(p, r.clone()?);
            cell.control = true;
            Some(cell)
        })
        .collect();
    cells.extend(plan_cells);
    cells
}
