//! `qualify gate RECEIPT --claim LEVEL`: accept or refuse a claim against a receipt.
//! Exit 0 supported, 1 refused (one line per unmet requirement), 2 unreadable or invalid receipt.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use qualify_evidence::ClaimLevel;

use crate::EXIT_USAGE;

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
}

pub fn run(args: GateArgs) -> ExitCode {
    let text = match std::fs::read_to_string(&args.receipt) {
        Ok(t) => t,
        Err(e) => {
            eprintln!(
                "qualify: error: cannot read receipt {}: {e}; give the path `qualify run` printed",
                args.receipt.display()
            );
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let receipt = match qualify_evidence::parse(&text) {
        Ok(r) => r,
        Err(e) => {
            eprintln!(
                "qualify: error: {} is not a valid receipt: {e}",
                args.receipt.display()
            );
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let verdict = receipt.evaluate(args.claim);
    if receipt.incomplete && !args.json {
        eprintln!(
            "note: this receipt is from an interrupted run: only what finished counts as evidence"
        );
    }
    let out = if args.json {
        serde_json::to_string(&verdict).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
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
    crate::print_stdout(&out);
    if verdict.supported {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
