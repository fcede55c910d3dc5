//! `qualify init [PATH] [--service]`: write the commented starter spec (for a batch program, or
//! with `--service` for a server qualified under load) and, beside it unless a file of that
//! name exists, the stand-in program it runs (`my-program`, `my_service.py`), so the first
//! `qualify run` passes.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use crate::error::CliError;

#[derive(Args, Debug)]
pub struct InitArgs {
    /// Where to write the spec.
    #[arg(default_value = "qualify.toml")]
    path: PathBuf,
    /// Overwrite an existing file.
    #[arg(long)]
    force: bool,
    /// Write the starter for a service (a server qualified under load against objectives)
    /// instead of a batch program.
    #[arg(long)]
    service: bool,
}

pub fn run(args: InitArgs) -> Result<ExitCode, CliError> {
    if args.path.exists() && !args.force {
        return Err(CliError::input(
            format!("{} already exists", args.path.display()),
            "pass --force to overwrite it or name another path",
        ));
    }
    let (text, program, name, mode) = if args.service {
        (
            qualify_spec::SERVICE_STARTER_SPEC,
            qualify_spec::SERVICE_STARTER_PROGRAM,
            "my_service.py",
            0o644,
        )
    } else {
        (
            qualify_spec::STARTER_SPEC,
            qualify_spec::STARTER_PROGRAM,
            "my-program",
            0o755,
        )
    };
    std::fs::write(&args.path, text).map_err(|e| {
        CliError::output(format!("cannot write {}: {e}", args.path.display()), None)
    })?;
    // The starter's own example, beside it (never over a file of the user's): the first
    // `qualify run` passes with it before the spec is pointed at the real program.
    let dir = match args.path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let example = dir.join(name);
    let wrote_example = !example.exists();
    if wrote_example {
        std::fs::write(&example, program).map_err(|e| {
            CliError::output(format!("cannot write {}: {e}", example.display()), None)
        })?;
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&example, std::fs::Permissions::from_mode(mode)).map_err(|e| {
            CliError::output(
                format!("cannot make {} executable: {e}", example.display()),
                None,
            )
        })?;
    }
    let spec = args.path.display();
    if wrote_example {
        println!(
            "wrote {spec} and {}, a stand-in it runs: `qualify run {spec}` should pass as it is;\n\
             then point [artifact] command at your own {} and set [target] to what it must carry",
            example.display(),
            if args.service { "service" } else { "program" }
        );
    } else {
        println!(
            "wrote {spec} ({} exists and was left alone): edit [artifact] and the axes, then run `qualify run {spec}`",
            example.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}
