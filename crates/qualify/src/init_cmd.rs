//! `qualify init [PATH] [--service]`: write the commented starter spec (for a batch program, or
//! with `--service` for a server qualified under load).

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
    let text = if args.service {
        qualify_spec::SERVICE_STARTER_SPEC
    } else {
        qualify_spec::STARTER_SPEC
    };
    std::fs::write(&args.path, text).map_err(|e| {
        CliError::output(format!("cannot write {}: {e}", args.path.display()), None)
    })?;
    println!(
        "wrote {}: edit [artifact] and the axes, then run `qualify run {}`",
        args.path.display(),
        args.path.display()
    );
    Ok(ExitCode::SUCCESS)
}
