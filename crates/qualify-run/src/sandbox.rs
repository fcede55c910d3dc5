//! The sandbox of `qualify run`: the paths every probe of the artifact hides besides the homes
//! (the held-out directory, the signing key, qualify's state: `.qualify/` here and in the
//! workdir, the ledger and its anchor), set on the spec before anything runs so that every probe spec built
//! from it carries them; and the self-test at the start of the run, whose attempts (read a
//! canary in the state directory, list the held-out checks, create a file outside the workdir,
//! reach a listener on the host's loopback or a unix socket bound on the host, signal qualify)
//! are recorded in the receipt and
//! decide whether the held-out checks' secrecy was kernel-enforced.

use std::path::{Path, PathBuf};

use qualify_evidence as ev;
use qualify_probe::Role;
use qualify_probe::selftest::{Attempt, SelfTest, Targets};
use qualify_service::SpecProbes;
use qualify_spec::{SandboxMode, Spec};

use super::{Context, RunOptions};
use crate::error::Error;

/// qualify's state directory in the current directory (ledger, receipts, Slurm run files).
const STATE: &str = ".qualify";

/// Hide the run's secrets from every probe built from `spec`.
pub fn hide_run_paths(spec: &mut Spec, args: &RunOptions) {
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
    pub record: Option<ev::SandboxRecord>,
}

impl SandboxRun {
    /// The held-out checks' secrecy, channel by channel: how each is closed and what the
    /// self-tests (the run's, and the held-out one when checks ran) tried against it. Enforced
    /// only when every channel is closed and its attempt failed.
    pub fn secrecy(
        &self,
        spec: &Spec,
        held_out: Option<&HeldOutSelfTest>,
        redactor: &qualify_trust::redact::Redactor,
    ) -> ev::Secrecy {
        if spec.sandbox.mode == SandboxMode::Off {
            return ev::Secrecy {
                kernel_enforced: false,
                detail: "the sandbox is off ([sandbox] mode = \"off\")".into(),
                channels: Vec::new(),
            };
        }
        let Some(t) = &self.self_test else {
            return ev::Secrecy {
                kernel_enforced: false,
                detail: "the sandbox's self-test did not run".into(),
                channels: Vec::new(),
            };
        };
        let mut channels = Vec::new();
        let e = t.enforcement.as_ref();
        let hidden = e.map(|e| &e.hidden);
        let by_kernel = hidden.and_then(|h| h.role_kernel_enforced(Role::Holdout));
        let mechanisms = hidden
            .and_then(|h| h.paths.get(&Role::Holdout))
            .and_then(|p| p.first())
            .map(|p| p.by.join(" + "))
            .unwrap_or_default();
        let a = held_out.and_then(|h| h.attempts.as_ref());
        let tried = |x: Option<&Attempt>| {
            x.map(|x| {
                format!(
                    "{}: {} ({})",
                    x.target,
                    if x.blocked { "blocked" } else { "got through" },
                    x.result
                )
            })
        };
        let not_tried = || match held_out.and_then(|h| h.error.as_deref()) {
            Some(why) => format!("not tried: the held-out self-test did not run ({why})"),
            None => "not tried: the held-out self-test did not run".to_string(),
        };

        // files
        let mut file_attempts: Vec<&Attempt> = vec![&t.read_hidden];
        file_attempts.extend(t.list_holdout.as_ref());
        file_attempts.extend(a.and_then(|a| a.check_file.as_ref()));
        channels.push(ev::SecrecyChannel {
            name: "files".into(),
            closed: by_kernel == Some(true) && file_attempts.iter().all(|x| x.blocked),
            how: match by_kernel {
                Some(true) => format!(
                    "the held-out directory is hidden from every probe but the checks ({mechanisms})"
                ),
                Some(false) => hidden
                    .and_then(|h| h.layer.reason.clone())
                    .unwrap_or_else(|| "no kernel mechanism hides them".into()),
                None => "no held-out directory was hidden".into(),
            },
            checked: file_attempts
                .iter()
                .filter_map(|x| tried(Some(x)))
                .collect::<Vec<_>>()
                .join("; "),
        });
        // environment, the check's process, qualify's command line: what the artifact a check
        // starts can see in its own cell
        for (name, how, attempt) in [
            (
                "environment",
                "the artifact a check starts gets the artifact's environment (an allowlist of qualify's and the spec's env), as every cell: QUALIFY_ARTIFACT_DIR and QUALIFY_RUN are the check's own",
                a.map(|a| &a.environment),
            ),
            (
                "check_process",
                "the artifact runs in a cell qualify starts on the check's behalf ($QUALIFY_RUN: its own PID namespace and /proc, the check's stdio handed over); nothing in the workdir can be executed from the check's cell. A check that runs the artifact's code itself (an interpreter on its script, an import) runs it inside its own cell: keep to $QUALIFY_RUN",
                a.map(|a| &a.check_process),
            ),
            (
                "qualify_command_line",
                "the cell's init (a fork of qualify) wipes qualify's command line and environment from its memory, and /proc is mounted hidepid=2",
                a.map(|a| &a.qualify_command_line),
            ),
        ] {
            channels.push(ev::SecrecyChannel {
                name: name.into(),
                closed: attempt.is_some_and(|x| x.blocked),
                how: how.into(),
                checked: tried(attempt).unwrap_or_else(not_tried),
            });
        }
        // later cells
        let private = e.is_some_and(|e| {
            e.filesystem
                .mechanisms
                .iter()
                .any(|m| m.starts_with("overlay over the workdir"))
        });
        let reached = held_out.and_then(|h| h.later_cell_reached);
        channels.push(ev::SecrecyChannel {
            name: "later_cells".into(),
            closed: private && reached == Some(false),
            how: if private {
                "every cell writes the workdir through a private layer, removed after it ([sandbox] writable paths are shared: what a check or cell writes there, a later one reads)".into()
            } else {
                "the workdir is written in place: what one cell writes, a later one reads".into()
            },
            checked: match (a.map(|a| &a.later_cells), reached) {
                (Some(w), Some(r)) => format!(
                    "{}: {}; on the host afterwards: {}",
                    w.target,
                    w.result,
                    if r { "there (a later cell would read it)" } else { "not there" }
                ),
                _ => not_tried(),
            },
        });
        // stored text
        let sample = "the held-out line under test, 0123456789";
        let mut probe_redactor = redactor.clone();
        probe_redactor.held_out(sample);
        let replaced = probe_redactor
            .text(&format!("before\n{sample}\nafter"))
            .as_deref()
            == Some(qualify_trust::redact::HELD_OUT);
        channels.push(ev::SecrecyChannel {
            name: "stored_text".into(),
            closed: replaced,
            how: format!(
                "every string of the receipt (hence the ledger and the reports) that holds a line of a check (from {} characters) is replaced whole before it is written",
                qualify_trust::redact::MIN_HELD_OUT_LINE
            ),
            checked: format!(
                "a string holding a check's line was {}",
                if replaced { "replaced" } else { "kept" }
            ),
        });
        let open: Vec<&str> = channels
            .iter()
            .filter(|c| !c.closed)
            .map(|c| c.name.as_str())
            .collect();
        ev::Secrecy {
            kernel_enforced: open.is_empty(),
            detail: if open.is_empty() {
                format!(
                    "every channel closed and tried: hidden by {mechanisms}; the artifact runs in cells of its own"
                )
            } else {
                format!("open: {}", open.join(", "))
            },
            channels,
        }
    }
}

/// What the held-out self-test found.
pub struct HeldOutSelfTest {
    pub attempts: Option<Attempts>,
    /// Whether the file the artifact wrote into the workdir is there on the host afterwards.
    pub later_cell_reached: Option<bool>,
    /// Why it did not run (or its artifact said nothing).
    pub error: Option<String>,
}

/// The held-out self-test: a check of qualify's own, set up as every held-out check is, starts
/// `qualify held-out-self-test` through `$QUALIFY_RUN` as the artifact; that tries to read or
/// recognise the check (the binary's `qualify held-out-self-test`, which reports [`Attempts`]). `check_file`: a held-out check to try to
/// read.
pub fn held_out_self_test(ctx: &Context<'_>, check_file: Option<&Path>) -> HeldOutSelfTest {
    let failed = |why: String| HeldOutSelfTest {
        attempts: None,
        later_cell_reached: None,
        error: Some(why),
    };
    let marker = {
        use std::hash::{BuildHasher, Hasher};
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u32(std::process::id());
        format!("{:016x}", h.finish())
    };
    let workdir = &ctx.spec.artifact.workdir;
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => return failed(format!("qualify's own executable: {e}")),
    };
    let control = std::sync::Arc::new(qualify_probe::Control::default());
    let mut base = super::holdout::artifact_probe(ctx);
    // qualify's executable in the artifact's cell (bound into its /tmp; without a mount
    // namespace, where it is).
    let program = if ctx.spec.sandbox.mode != SandboxMode::Off
        && qualify_probe::sandbox::mount_namespace_available()
    {
        let inside = PathBuf::from(format!("{}/qualify", crate::runner::DIR));
        base.sandbox.binds.push((exe, inside.clone()));
        inside
    } else {
        exe
    };
    let runner = match super::runner::Runner::start(
        base,
        std::sync::Arc::clone(&control),
        std::sync::Arc::clone(ctx.cancel),
    ) {
        Ok(r) => r,
        Err(e) => return failed(e.to_string()),
    };
    let q = |p: &Path| qualify_slurm::job::shell_quote(&p.to_string_lossy());
    let script = format!(
        ": {marker}; \"$QUALIFY_RUN\" {} held-out-self-test --marker {marker} --workdir {}{}; exit 0",
        q(&program),
        q(workdir),
        check_file
            .and_then(|c| Some((c.parent()?, c.file_name()?)))
            .map(|(d, n)| format!(" --check-dir {} --check-name {}", q(d), q(Path::new(n))))
            .unwrap_or_default()
    );
    let probe = super::holdout::check_probe(
        ctx,
        vec!["sh".into(), "-c".into(), script.into()],
        check_file.and_then(Path::parent),
        &runner,
        &control,
    );
    let result = qualify_probe::probe(&probe, ctx.cancel);
    drop(runner);
    let marker_file = later_cell_marker(workdir, &marker);
    let reached = marker_file.exists();
    let _ = std::fs::remove_file(&marker_file);
    let r = match result {
        Ok(r) => r,
        Err(e) => return failed(e.to_string()),
    };
    let attempts = r
        .stdout_tail
        .lines()
        .rev()
        .find_map(|l| serde_json::from_str::<Attempts>(l).ok());
    match attempts {
        Some(a) => HeldOutSelfTest {
            attempts: Some(a),
            later_cell_reached: Some(reached),
            error: None,
        },
        None => failed(format!(
            "its artifact reported nothing ({}: {})",
            r.outcome,
            r.stderr_tail.lines().last().unwrap_or("")
        )),
    }
}

/// Run the self-test (unless the sandbox is off): a canary in the state directory, the held-out
/// directory, a file next to the workdir.
pub fn self_test(ctx: &Context<'_>) -> Result<SandboxRun, Error> {
    let spec = ctx.spec;
    if spec.sandbox.mode == SandboxMode::Off {
        return Ok(SandboxRun {
            self_test: None,
            record: Some(ev::SandboxRecord {
                mode: SandboxMode::Off,
                self_test: None,
                self_test_error: None,
                held_out_self_test: None,
            }),
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
    // A unix socket on the host, where the sandbox neither hides nor makes private: next to
    // the workdir, else in /var/tmp.
    let beside = workdir.parent().unwrap_or(Path::new("/"));
    let visible = |d: &Path| {
        let private = d.starts_with("/tmp") || d.starts_with("/dev/shm");
        let writable = nix::unistd::access(d, nix::unistd::AccessFlags::W_OK).is_ok();
        writable && !private && !spec.sandbox.hidden.iter().any(|(_, h)| d.starts_with(h))
    };
    let socket_dir = if visible(beside) {
        beside.to_path_buf()
    } else {
        PathBuf::from("/var/tmp")
    };
    let socket = socket_dir.join(format!(".qualify-self-test-{}.sock", std::process::id()));
    let probe = spec.command_probe(vec!["qualify-self-test".into()], ctx.args.backend);
    let result = qualify_probe::selftest::run(
        &probe,
        &Targets {
            canary: canary.clone(),
            holdout,
            outside,
            socket: Some(socket),
        },
        ctx.cancel,
    );
    let _ = std::fs::remove_file(&canary);
    match result {
        Ok((t, _)) => {
            let escaped: Vec<&str> = [
                (Some(&t.read_hidden), "read a hidden path"),
                (Some(&t.write_outside), "wrote outside its workdir"),
                (Some(&t.connect_host), "reached the host's loopback"),
                (t.connect_unix.as_ref(), "reached a unix socket on the host"),
                (Some(&t.signal_qualify), "could signal qualify"),
            ]
            .into_iter()
            .filter_map(|(a, what)| a.map(|a| (a, what)))
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
            let record = ev::SandboxRecord {
                mode: spec.sandbox.mode,
                self_test: Some(t.clone()),
                self_test_error: None,
                held_out_self_test: None,
            };
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
                record: Some(ev::SandboxRecord {
                    mode: spec.sandbox.mode,
                    self_test: None,
                    self_test_error: Some(e.to_string()),
                    held_out_self_test: None,
                }),
            })
        }
    }
}

/// What the artifact of the held-out self-test tried (the shared vocabulary's).
pub use qualify_model::selftest::HeldOutAttempts as Attempts;

/// The variables only a held-out check's environment has.
pub const TELLS: [&str; 4] = [
    "QUALIFY_ARTIFACT_DIR",
    "QUALIFY_RUN",
    "QUALIFY_RUN_SOCKET",
    "QUALIFY_HOLDOUT",
];

/// The file the artifact writes into the workdir.
pub fn later_cell_marker(workdir: &Path, marker: &str) -> PathBuf {
    workdir.join(format!(".qualify-held-out-self-test-{marker}"))
}
