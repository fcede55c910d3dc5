//! The sandbox of `qualify run`: the paths every probe of the artifact hides besides the homes
//! (the held-out directory, the signing key, qualify's state: `.qualify/` here and in the
//! workdir, the ledger and its anchor), set on the spec before anything runs so that every probe spec built
//! from it carries them; and the self-test at the start of the run, whose attempts (read a
//! canary in the state directory, list the held-out checks, create a file outside the workdir,
//! reach a listener on the host's loopback, signal qualify) are recorded in the receipt and
//! decide whether the held-out checks' secrecy was kernel-enforced.

use std::path::{Path, PathBuf};

use qualify_evidence as ev;
use qualify_probe::Role;
use qualify_probe::selftest::{SelfTest, Targets};
use qualify_spec::{SandboxMode, Spec};
use serde_json::{Value, json};

use super::{Context, RunArgs};
use crate::error::CliError;

/// qualify's state directory in the current directory (ledger, receipts, Slurm run files).
const STATE: &str = ".qualify";

/// Hide the run's secrets from every probe built from `spec`.
pub fn hide_run_paths(spec: &mut Spec, args: &RunArgs) {
    if spec.sandbox.mode == SandboxMode::Off {
        return;
    }
    let mut hide = |role: Role, p: PathBuf| {
        let p = std::path::absolute(&p).unwrap_or(p);
        if !spec.sandbox.hidden.iter().any(|(_, h)| *h == p) {
            spec.sandbox.hidden.push((role, p));
        }
    };
    let holdout = args.holdout.clone().or_else(|| {
        std::env::var_os("QUALIFY_HOLDOUT")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    });
    if let Some(h) = holdout {
        hide(Role::Holdout, h);
    }
    if let Some(k) = &args.sign {
        hide(Role::Key, k.clone());
    }
    // The state directory exists from the start, so that it can be hidden from the first probe.
    let _ = std::fs::create_dir_all(STATE);
    hide(Role::State, PathBuf::from(STATE));
    // The workdir's own state (its run lock), when the workdir is not the current directory.
    let workdir_state = spec.artifact.workdir.join(STATE);
    let _ = std::fs::create_dir_all(&workdir_state);
    hide(Role::State, workdir_state);
    if !args.no_ledger {
        hide(Role::State, args.ledger.clone());
        for p in qualify_ledger::Ledger::companion_files(&args.ledger) {
            hide(Role::State, p);
        }
    }
}

/// What the run records of its sandbox.
pub struct SandboxRun {
    pub self_test: Option<SelfTest>,
    /// `predicate.sandbox` of the receipt.
    pub record: Option<Value>,
}

impl SandboxRun {
    /// The held-out checks' secrecy: kernel-enforced when the sandbox is on, the self-test
    /// confirmed the hidden paths, and the held-out role is hidden by the kernel.
    pub fn secrecy(&self, spec: &Spec) -> ev::Secrecy {
        if spec.sandbox.mode == SandboxMode::Off {
            return ev::Secrecy {
                kernel_enforced: false,
                detail: "the sandbox is off ([sandbox] mode = \"off\")".into(),
            };
        }
        let Some(t) = &self.self_test else {
            return ev::Secrecy {
                kernel_enforced: false,
                detail: "the sandbox's self-test did not run".into(),
            };
        };
        let hidden = t.enforcement.as_ref().map(|e| &e.hidden);
        let by_kernel = hidden.and_then(|h| h.role_kernel_enforced(Role::Holdout));
        let blocked = t.read_hidden.blocked && t.list_holdout.as_ref().is_none_or(|a| a.blocked);
        let mechanisms = hidden
            .and_then(|h| h.paths.get(&Role::Holdout))
            .and_then(|p| p.first())
            .map(|p| p.by.join(" + "))
            .unwrap_or_default();
        match (by_kernel, blocked) {
            (Some(true), true) => ev::Secrecy {
                kernel_enforced: true,
                detail: format!("hidden by {mechanisms}; the self-test could not read them"),
            },
            (None, _) => ev::Secrecy {
                kernel_enforced: false,
                detail: "no held-out directory was hidden".into(),
            },
            (_, false) => ev::Secrecy {
                kernel_enforced: false,
                detail: "the self-test read a hidden path".into(),
            },
            (Some(false), true) => ev::Secrecy {
                kernel_enforced: false,
                detail: hidden
                    .and_then(|h| h.layer.reason.clone())
                    .unwrap_or_else(|| "no kernel mechanism hides them".into()),
            },
        }
    }
}

/// Run the self-test (unless the sandbox is off): a canary in the state directory, the held-out
/// directory, a file next to the workdir.
pub fn self_test(ctx: &Context<'_>) -> Result<SandboxRun, CliError> {
    let spec = ctx.spec;
    if spec.sandbox.mode == SandboxMode::Off {
        return Ok(SandboxRun {
            self_test: None,
            record: Some(json!({ "mode": "off" })),
        });
    }
    let canary = Path::new(STATE).join(format!("sandbox-canary-{}", std::process::id()));
    let canary = std::path::absolute(&canary).unwrap_or(canary);
    if let Err(e) = std::fs::write(&canary, b"qualify sandbox canary\n") {
        eprintln!(
            "qualify: warning: cannot write the sandbox's canary {}: {e}; the self-test is skipped",
            canary.display()
        );
        return Ok(SandboxRun {
            self_test: None,
            record: None,
        });
    }
    let workdir = &spec.artifact.workdir;
    let outside = workdir
        .parent()
        .unwrap_or(Path::new("/"))
        .join(format!(".qualify-self-test-{}", std::process::id()));
    let holdout = spec
        .sandbox
        .hidden
        .iter()
        .find(|(r, _)| *r == Role::Holdout)
        .map(|(_, p)| p.clone());
    let probe = spec.command_probe(vec!["qualify-self-test".into()], ctx.args.backend);
    let result = qualify_probe::selftest::run(
        &probe,
        &Targets {
            canary: canary.clone(),
            holdout,
            outside,
        },
        ctx.cancel,
    );
    let _ = std::fs::remove_file(&canary);
    match result {
        Ok((t, _)) => {
            let escaped: Vec<&str> = [
                (&t.read_hidden, "read a hidden path"),
                (&t.write_outside, "wrote outside its workdir"),
                (&t.connect_host, "reached the host's loopback"),
                (&t.signal_qualify, "could signal qualify"),
            ]
            .into_iter()
            .filter(|(a, _)| !a.blocked)
            .map(|(_, what)| what)
            .collect();
            if escaped.is_empty() {
                ctx.say("sandbox: self-test blocked every attempt");
            } else {
                eprintln!(
                    "qualify: warning: the sandbox's self-test {}: the receipt states those layers as not enforced",
                    escaped.join(", ")
                );
            }
            let record = json!({
                "mode": spec.sandbox.mode,
                "self_test": t,
            });
            Ok(SandboxRun {
                self_test: Some(t),
                record: Some(record),
            })
        }
        // `mode = "required"` on a host without a layer: the run stops here (exit 2).
        Err(e @ qualify_probe::ProbeError::SandboxRequired { .. }) => Err(e.into()),
        Err(e) => {
            eprintln!("qualify: warning: the sandbox's self-test could not run: {e}");
            Ok(SandboxRun {
                self_test: None,
                record: Some(json!({
                    "mode": spec.sandbox.mode,
                    "self_test_error": e.to_string(),
                })),
            })
        }
    }
}
