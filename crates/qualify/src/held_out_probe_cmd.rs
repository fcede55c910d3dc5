//! `qualify held-out-self-test` (hidden): the artifact of the held-out self-test. `qualify run`
//! starts a held-out check of its own (set up as every held-out check is), which starts this
//! through `$QUALIFY_RUN` exactly as a check starts the artifact; here, in the artifact's cell,
//! it tries what a hostile artifact would to read or recognise the check, and prints one JSON
//! line of [`Attempts`] on stdout (the check's stdout):
//!
//! - `environment`: a variable only a held-out run has (`QUALIFY_ARTIFACT_DIR`, `QUALIFY_RUN`,
//!   `QUALIFY_RUN_SOCKET`, `QUALIFY_HOLDOUT`);
//! - `check_process`: the check's marker in the command line or environment of any process it
//!   can see (its own excepted);
//! - `check_file`: reading a held-out check file (`--check-dir`, `--check-name`);
//! - `qualify_command_line`: qualify's held-out flag (`--holdout`, `QUALIFY_HOLDOUT`) in the
//!   command line or environment of any process it can see (the cell's init is a fork of
//!   qualify; without a PID namespace qualify itself is listed);
//! - `later_cells`: a file written into the workdir (`--workdir`): qualify then looks for it on
//!   the host, where a later cell would find it.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use qualify_probe::selftest::Attempt;

#[derive(Args, Debug)]
pub struct HeldOutSelfTestArgs {
    /// A string only the check's process carries (its command line).
    #[arg(long)]
    marker: String,
    /// The held-out directory and a check's file name in it, to try to read (apart: a path of an
    /// executable file among the arguments would be taken for the program to run).
    #[arg(long, requires = "check_name")]
    check_dir: Option<PathBuf>,
    #[arg(long)]
    check_name: Option<String>,
    /// The workdir, to write the later cells' marker into.
    #[arg(long)]
    workdir: PathBuf,
}

use qualify_run::sandbox::{Attempts, TELLS, later_cell_marker};

fn attempt(target: impl Into<String>, got_through: Option<String>, blocked: String) -> Attempt {
    match got_through {
        Some(what) => Attempt {
            target: target.into(),
            blocked: false,
            result: what,
        },
        None => Attempt {
            target: target.into(),
            blocked: true,
            result: blocked,
        },
    }
}

pub fn run(args: HeldOutSelfTestArgs) -> ExitCode {
    let found: Vec<&str> = TELLS
        .iter()
        .copied()
        .filter(|t| std::env::var_os(t).is_some())
        .collect();
    let environment = attempt(
        "find a variable only held-out runs have",
        (!found.is_empty()).then(|| format!("found {}", found.join(", "))),
        "none in the environment".into(),
    );

    // Every process it can see: the check's marker, or qualify's held-out flag (the cell's
    // init is a fork of qualify; without a PID namespace qualify itself is listed).
    let me = std::process::id().to_string();
    let mut seen = 0usize;
    let mut carrier = None;
    let mut flag = None;
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if !name.bytes().all(|b| b.is_ascii_digit()) || name == me {
            continue;
        }
        seen += 1;
        for what in ["cmdline", "environ"] {
            let Ok(bytes) = std::fs::read(format!("/proc/{name}/{what}")) else {
                continue;
            };
            let text = String::from_utf8_lossy(&bytes);
            if text.contains(&args.marker) {
                carrier = Some(format!(
                    "process {name}'s {what} carries the check's marker"
                ));
            }
            if text.contains("--holdout") || text.contains("QUALIFY_HOLDOUT=") {
                flag = Some(format!(
                    "process {name}'s {what} names the held-out directory"
                ));
            }
        }
    }
    let check_process = attempt(
        "find the check's process (its command line or environment) in /proc",
        carrier,
        format!("not among the {seen} other process(es) /proc lists"),
    );

    let check = args
        .check_dir
        .as_ref()
        .zip(args.check_name.as_ref())
        .map(|(d, n)| d.join(n));
    let check_file = check.as_ref().map(|c| {
        let read = std::fs::read(c);
        attempt(
            "read a held-out check file",
            read.as_ref()
                .ok()
                .filter(|b| !b.is_empty())
                .map(|b| format!("read {} bytes", b.len())),
            match read {
                Ok(_) => "empty (a hidden path)".into(),
                Err(e) => e.to_string(),
            },
        )
    });

    let qualify_command_line = attempt(
        "find qualify's held-out flag (--holdout, QUALIFY_HOLDOUT) in a process /proc lists",
        flag,
        format!(
            "not in the {seen} other process(es) /proc lists{}",
            match std::fs::read("/proc/1/cmdline") {
                Ok(b) if b.iter().all(|&c| c == 0) => " (the init's command line is wiped)",
                Err(_) => " (the init is not listed)",
                Ok(_) => "",
            }
        ),
    );

    let path = later_cell_marker(&args.workdir, &args.marker);
    let later_cells = match std::fs::write(&path, &args.marker) {
        Ok(()) => Attempt {
            target: format!("write {} for a later cell", path.display()),
            blocked: false,
            result: "written".into(),
        },
        Err(e) => Attempt {
            target: format!("write {} for a later cell", path.display()),
            blocked: true,
            result: e.to_string(),
        },
    };

    let attempts = Attempts {
        environment,
        check_process,
        check_file,
        qualify_command_line,
        later_cells,
    };
    match serde_json::to_string(&attempts) {
        Ok(line) => {
            println!("{line}");
            ExitCode::SUCCESS
        }
        Err(_) => ExitCode::from(crate::error::exit::USAGE),
    }
}
