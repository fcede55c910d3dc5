//! `qualify verify RECEIPT --key PUB [--artifact PATH]`: check a signed receipt on its own, the
//! way a third party would: the DSSE envelope's payload type, the signature over the PAE with the
//! given public key, the payload being an in-toto Statement, and with `--artifact` that the
//! receipt names the artifact in hand: a file must be its program (or the script an interpreter
//! runs), a directory its workdir (the tree digest, `qualify_run::subjects::tree_digest`) — the spec's
//! subject never stands for the artifact. Prints one line per check; the first failing check is
//! named. Exit 0 all checks passed, 1 a check failed, 2 the receipt or key cannot be read (a
//! receipt that is not one JSON document — truncated, a duplicate key, invalid UTF-8 — is
//! unreadable; a JSON document that is not a signed envelope fails the envelope check).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use qualify_trust::{Envelope, IN_TOTO_PAYLOAD_TYPE, VerifyError};
use serde_json::Value;

use crate::error::{CliError, exit};

/// One line on stdout (a closed pipe is ignored).
macro_rules! say {
    ($($t:tt)*) => {
        crate::shell::print_stdout(&format!($($t)*))
    };
}

#[derive(Args, Debug)]
pub struct VerifyArgs {
    /// The signed receipt (a DSSE envelope written by `qualify run --sign KEY`).
    receipt: PathBuf,
    /// The signer's public key (PREFIX.pub from `qualify keygen`).
    #[arg(long, value_name = "PUB")]
    key: PathBuf,
    /// Also check that a subject of the receipt matches this: the artifact's program or
    /// script (a file), or its workdir (a directory: the digest of its files, computed as
    /// `qualify run` does).
    #[arg(long, value_name = "PATH")]
    artifact: Option<PathBuf>,
}

pub fn run(args: VerifyArgs) -> Result<ExitCode, CliError> {
    let key = qualify_trust::keys::read_public_key(&args.key)
        .map_err(|e| CliError::input_only(e.to_string()))?;
    let text = std::fs::read_to_string(&args.receipt).map_err(|e| {
        CliError::input_only(format!(
            "cannot read receipt {}: {e}",
            args.receipt.display()
        ))
    })?;
    let artifact = args
        .artifact
        .as_deref()
        .map(qualify_run::subjects::InHand::read)
        .transpose()?;
    check(&args, &key, &text, artifact)
}

/// Every check in order; the first failure ends it.
fn check(
    args: &VerifyArgs,
    key: &qualify_trust::PublicKey,
    text: &str,
    artifact: Option<qualify_run::subjects::InHand>,
) -> Result<ExitCode, CliError> {
    let fail = |what: &str| {
        say!("FAILED: {what}");
        say!("  {} does not verify", args.receipt.display());
        exit::refused()
    };
    let envelope = match Envelope::from_json(text) {
        Ok(e) => e,
        Err(e @ VerifyError::NotJson { .. }) => {
            return Err(CliError::input(
                format!("cannot read receipt {}: {e}", args.receipt.display()),
                "give the file `qualify run --sign` wrote, whole and unedited",
            ));
        }
        Err(e) => return Ok(fail(&e.to_string())),
    };
    let payload = match envelope.verify(key, IN_TOTO_PAYLOAD_TYPE) {
        Ok(p) => p,
        Err(e) => return Ok(fail(&e.to_string())),
    };
    say!("ok: payload type {IN_TOTO_PAYLOAD_TYPE}");
    say!("ok: signature (key id {})", key.keyid());
    let statement: Value = match qualify_model::json::from_slice(&payload) {
        Ok(v) => v,
        Err(e) => {
            return Ok(fail(&format!(
                "statement check failed: the payload is not JSON: {e}"
            )));
        }
    };
    if statement.get("_type").and_then(Value::as_str) != Some(qualify_evidence::STATEMENT_TYPE) {
        return Ok(fail(&format!(
            "statement check failed: the payload is not an in-toto Statement (`_type` is not {})",
            qualify_evidence::STATEMENT_TYPE
        )));
    }
    say!("ok: in-toto Statement");
    if let Some(inhand) = artifact {
        match inhand.subject(&statement) {
            Ok(name) => say!(
                "ok: subject digest matches {} (subject {name})",
                inhand.path.display()
            ),
            Err(e) => return Ok(fail(&format!("subject digest check failed: {e}"))),
        }
    }
    say!("VERIFIED: {}", args.receipt.display());
    Ok(ExitCode::SUCCESS)
}
