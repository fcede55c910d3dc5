//! `qualify report RECEIPT [--html FILE] [--markdown] [--junit FILE] [--extrap FILE]`: render a
//! receipt for people (self-contained HTML, Markdown for CI job summaries) and for other tools
//! (JUnit XML, Extra-P JSON Lines). With `--key` the signature is verified first and the report
//! says "signature: verified by key …"; a signed receipt rendered without `--key` says its
//! signature was NOT CHECKED; a signature that does not verify renders nothing (exit 1). The rendering lives in `qualify-render`; this module reads and
//! validates the receipt, writes the files and maps errors to exit codes: 0 written, 2 for an
//! unreadable or invalid receipt or an output file that cannot be written.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;

use qualify_evidence::receipt_file::Signing;
use qualify_render::view::Signature;

use crate::error::CliError;

#[derive(Args, Debug)]
pub struct ReportArgs {
    /// The receipt written by `qualify run`.
    receipt: PathBuf,
    /// Write a self-contained HTML report (inline SVG plots, no network, no JavaScript).
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
    /// Print GitHub-flavoured Markdown to stdout (the default when no other output is asked for).
    #[arg(long)]
    markdown: bool,
    /// Write JUnit XML: one test case per cell.
    #[arg(long, value_name = "FILE")]
    junit: Option<PathBuf>,
    /// Write the measurements as Extra-P JSON Lines.
    #[arg(long, value_name = "FILE")]
    extrap: Option<PathBuf>,
    /// Verify the receipt's signature with this public key before rendering (PREFIX.pub from
    /// `qualify keygen`); a signature that does not verify renders nothing (exit 1).
    #[arg(long, value_name = "PUB")]
    key: Option<PathBuf>,
}

fn write(path: &Path, what: &str, text: &str) -> Result<(), CliError> {
    std::fs::write(path, text).map_err(|e| {
        CliError::output(
            format!("cannot write the {what} to {}: {e}", path.display()),
            Some("check that its directory exists and is writable"),
        )
    })
}

pub fn run(args: ReportArgs) -> Result<ExitCode, CliError> {
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
            return Err(CliError::Refused {
                message: format!(
                    "{} was not rendered: {e} (its signature is required by --key)",
                    args.receipt.display()
                ),
            });
        }
        Err(e) => {
            return Err(CliError::input_only(format!(
                "{} is not a valid receipt: {e}",
                args.receipt.display()
            )));
        }
    };
    let signature = match &receipt.signing {
        Signing::Unsigned => Signature::Unsigned,
        Signing::SignedUnchecked { keyids } => Signature::NotChecked {
            keyids: keyids.clone(),
        },
        Signing::Verified { keyid } => Signature::Verified {
            keyid: keyid.clone(),
        },
    };
    let statement = &receipt.statement;
    let mut outputs: Vec<(&Path, &str, String)> = Vec::new();
    if let Some(p) = &args.html {
        outputs.push((
            p,
            "HTML report",
            qualify_render::html_signed(statement, signature.clone()),
        ));
    }
    if let Some(p) = &args.junit {
        outputs.push((p, "JUnit report", qualify_render::junit(statement)));
    }
    if let Some(p) = &args.extrap {
        outputs.push((
            p,
            "Extra-P JSON Lines",
            qualify_render::extrap_jsonl(statement),
        ));
    }
    let print_markdown = args.markdown || outputs.is_empty();
    for (path, what, body) in &outputs {
        write(path, what, body)?;
        eprintln!("wrote {what}: {}", path.display());
    }
    if print_markdown {
        crate::shell::print_stdout(&qualify_render::markdown_signed(statement, signature));
    }
    Ok(ExitCode::SUCCESS)
}
