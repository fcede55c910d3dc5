//! `qualify init [PATH]`: write the commented starter spec.

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
}

pub fn run(args: InitArgs) -> Result<ExitCode, CliError> {
    if args.path.exists() && !args.force {
        return Err(CliError::input(
            format!("{} already exists", args.path.display()),
            "pass --force to overwrite it or name another path",
        ));
    }
    std::fs::write(&args.path, qualify_spec::STARTER_SPEC).map_err(|e| {
        CliError::output(format!("cannot write {}: {e}", args.path.display()), None)
    })?;
    println!(
        "wrote {}: edit [artifact] and the axes, then run `qualify run {}`",
        args.path.display(),
        args.path.display()
    );
    Ok(ExitCode::SUCCESS)
}
