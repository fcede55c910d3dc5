//! `qualify keygen --out PREFIX [--algorithm ed25519|p256]`: write a signing key pair, `PREFIX`
//! (PKCS#8 PEM, mode 0600) and `PREFIX.pub` (SPKI PEM), and print the key id. Never overwrites.
//! Exit 0 written, 2 the files exist or cannot be written.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use qualify_trust::Algorithm;
use qualify_trust::keys::{public_path, write_key_pair};

use crate::error::CliError;

#[derive(Args, Debug)]
pub struct KeygenArgs {
    /// Path prefix: the private key is written to PREFIX, the public key to PREFIX.pub.
    #[arg(long, value_name = "PREFIX")]
    out: PathBuf,
    /// Signature algorithm: ed25519 (default) or p256 (ECDSA P-256, for cosign-style verifiers).
    #[arg(long, value_name = "ALG", default_value = "ed25519")]
    algorithm: Algorithm,
}

pub fn run(args: KeygenArgs) -> Result<ExitCode, CliError> {
    let public = write_key_pair(&args.out, args.algorithm)
        .map_err(|e| CliError::output(e.to_string(), None))?;
    crate::shell::print_stdout(&format!(
        "wrote {} key pair\n  private: {} (mode 0600; keep it secret)\n  public:  {}\n  key id:  {}",
        args.algorithm,
        args.out.display(),
        public_path(&args.out).display(),
        public.keyid()
    ));
    Ok(ExitCode::SUCCESS)
}
