//! `qualify init [PATH]`: write the commented starter spec.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use crate::EXIT_USAGE;

#[derive(Args, Debug)]
pub struct InitArgs {
    /// Where to write the spec.
    #[arg(default_value = "qualify.toml")]
    path: PathBuf,
    /// Overwrite an existing file.
    #[arg(long)]
    force: bool,
}

pub fn run(args: InitArgs) -> ExitCode {
    if args.path.exists() && !args.force {
        eprintln!(
            "qualify: error: {} already exists; pass --force to overwrite it or name another path",
            args.path.display()
        );
        return ExitCode::from(EXIT_USAGE);
    }
    if let Err(e) = std::fs::write(&args.path, qualify_spec::STARTER_SPEC) {
        eprintln!("qualify: error: cannot write {}: {e}", args.path.display());
        return ExitCode::from(EXIT_USAGE);
    }
    println!(
        "wrote {}: edit [artifact] and the axes, then run `qualify run {}`",
        args.path.display(),
        args.path.display()
    );
    ExitCode::SUCCESS
}
