//! `qualify gate RECEIPT --claim LEVEL`: accept or refuse a claim against a receipt.
//! Exit 0 supported, 1 refused (one line per unmet requirement), 2 unreadable or invalid receipt.
//! With `--key PUB` the receipt must be a DSSE envelope whose signature verifies with that key;
//! a missing or failing signature refuses the claim (exit 1) and names the failed check. Without
//! `--key` a signed receipt's payload is read and the output says the signature was not checked.
//! `--vsa FILE` writes a SLSA Verification Summary Attestation for an accepted claim.
//! `--artifact PATH` binds the verdict to the artifact in hand: a receipt that does not name it
//! (its program, script or workdir digest) refuses the claim.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use qualify_evidence::ClaimLevel;

use crate::error::{CliError, exit};

#[derive(Args, Debug)]
pub struct GateArgs {
    /// The receipt written by `qualify run`.
    receipt: PathBuf,
    /// The claim to check: functional, trial or production.
    #[arg(long, value_name = "LEVEL")]
    claim: ClaimLevel,
    /// Print the verdict as one JSON object.
    #[arg(long)]
    json: bool,
    /// Require a valid signature by this public key (PREFIX.pub from `qualify keygen`).
    #[arg(long, value_name = "PUB")]
    key: Option<PathBuf>,
    /// When the claim is accepted, write a SLSA Verification Summary Attestation (v1) here.
    #[arg(long, value_name = "FILE")]
    vsa: Option<PathBuf>,
    /// The artifact in hand: accept only if the receipt names it — a file must be its program
    /// (or the script its interpreter runs), a directory its workdir (the digest of its files).
    #[arg(long, value_name = "PATH")]
    artifact: Option<PathBuf>,
}

pub fn run(args: GateArgs) -> Result<ExitCode, CliError> {
    let text = std::fs::read_to_string(&args.receipt).map_err(|e| {
        CliError::unreadable(
            "receipt",
            &args.receipt,
            &e,
            "give the path `qualify run` printed",
        )
    })?;
    let key = crate::gate_signature::load_key(args.key.as_deref())?;
    let receipt = match qualify_evidence::receipt_file::parse_with_key(&text, key.as_ref()) {
        Ok(r) => r,
        Err(e) if e.is_signature_failure() => {
            return Ok(crate::gate_signature::refuse_signature(
                &args.receipt,
                args.claim,
                &e,
                args.json,
            ));
        }
        Err(e) => {
            return Err(CliError::input_only(format!(
                "{} is not a valid receipt: {e}",
                args.receipt.display()
            )));
        }
    };
    let inhand = args
        .artifact
        .as_deref()
        .map(qualify_run::subjects::InHand::read)
        .transpose()?;
    let mut verdict = receipt.evaluate(args.claim);
    if let Some(Err(e)) = inhand.as_ref().map(|a| a.subject(&receipt.statement)) {
        verdict.supported = false;
        verdict.reasons.insert(
            0,
            format!("the receipt is not about the artifact in hand: {e}"),
        );
    }
    if receipt.incomplete && !args.json {
        eprintln!(
            "note: this receipt is from an interrupted run: only what finished counts as evidence"
        );
    }
    let out = if args.json {
        crate::gate_signature::json_verdict(&verdict, &receipt)
    } else {
        let mut s = String::new();
        if verdict.supported {
            s.push_str(&format!(
                "ACCEPTED: the receipt supports the {} claim\n",
                args.claim
            ));
        } else {
            s.push_str(&format!(
                "REFUSED: the receipt does not support the {} claim\n",
                args.claim
            ));
            for r in &verdict.reasons {
                s.push_str(&format!("  - {r}\n"));
            }
        }
        for w in &verdict.waivers {
            s.push_str(&format!("  waived: {w}\n"));
        }
        s
    };
    let mut out = out;
    if !args.json {
        out.push_str(&crate::gate_signature::notes(&receipt));
    }
    crate::shell::print_stdout(&out);
    if verdict.supported
        && let Some(path) = &args.vsa
    {
        crate::gate_signature::write_vsa(path, &args.receipt, &receipt, args.claim)?;
    }
    Ok(if verdict.supported {
        ExitCode::SUCCESS
    } else {
        exit::refused()
    })
}
