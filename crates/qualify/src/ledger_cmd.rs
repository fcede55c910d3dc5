//! `qualify ledger list|show|stats|verify|controls`: read the ledger of receipts
//! (`.qualify/ledger.sqlite` by default, `--ledger PATH`). `verify` exits 0 when every stored
//! receipt's digest and every link of the hash chain hold, 1 naming the first broken link, 2 when
//! the ledger cannot be opened. The hidden `append` stores receipt files (used by tests that kill
//! a writer mid-transaction).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Subcommand};
use qualify_ledger::{Ledger, LedgerError};

use crate::error::{CliError, exit};

#[derive(Args, Debug)]
pub struct LedgerArgs {
    /// The ledger database.
    #[arg(long, value_name = "PATH", global = true, default_value = qualify_ledger::DEFAULT_PATH)]
    ledger: PathBuf,
    /// Print JSON on stdout.
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: LedgerCommand,
}

#[derive(Subcommand, Debug)]
enum LedgerCommand {
    /// Every stored receipt, oldest first.
    List,
    /// One stored receipt's full text, by digest prefix.
    Show {
        /// The first hex digits of the receipt's sha256.
        digest: String,
    },
    /// Accepted runs, failures by outcome, repeating failures, time from failure to pass.
    Stats,
    /// Recompute every receipt digest and every link of the hash chain.
    Verify,
    /// The regression controls later runs re-run.
    Controls {
        /// Only this artifact's controls.
        #[arg(long, value_name = "NAME")]
        artifact: Option<String>,
    },
    /// Store receipt files in the ledger (for tests and imports).
    #[command(hide = true)]
    Append {
        #[arg(required = true)]
        receipts: Vec<PathBuf>,
    },
}

/// A ledger that cannot be opened or read.
fn ledger_error(e: LedgerError) -> CliError {
    CliError::input_only(e.to_string())
}

fn open_existing(path: &Path) -> Result<Ledger, CliError> {
    if !path.exists() {
        return Err(CliError::input(
            format!("no ledger at {}", path.display()),
            "`qualify run` creates it, or pass --ledger PATH",
        ));
    }
    Ledger::open(path).map_err(ledger_error)
}

fn json<T: serde::Serialize>(value: &T) -> Result<(), CliError> {
    let text = serde_json::to_string_pretty(value)
        .map_err(|e| CliError::output(format!("cannot encode: {e}"), None))?;
    crate::print_stdout(&text);
    Ok(())
}

fn short(digest: &str) -> &str {
    &digest[..digest.len().min(12)]
}

pub fn run(args: LedgerArgs) -> Result<ExitCode, CliError> {
    let args = &args;
    match &args.command {
        LedgerCommand::Append { receipts } => {
            let mut ledger = Ledger::open(&args.ledger).map_err(ledger_error)?;
            for path in receipts {
                let text = std::fs::read_to_string(path).map_err(|e| {
                    CliError::input_only(format!("cannot read {}: {e}", path.display()))
                })?;
                let done = ledger
                    .append(&text)
                    .map_err(|e| CliError::input_only(format!("{}: {e}", path.display())))?;
                if args.json {
                    json(&done)?;
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        LedgerCommand::List => {
            let entries = open_existing(&args.ledger)?.list().map_err(ledger_error)?;
            if args.json {
                json(&entries)?;
                return Ok(ExitCode::SUCCESS);
            }
            let mut out = format!(
                "{:>4}  {:<12}  {:<20}  {:<10}  {:<9}  {:>5}  {:>5}  {:>8}\n",
                "seq", "digest", "artifact", "claim", "verdict", "cells", "fails", "controls"
            );
            for e in &entries {
                let verdict = if e.incomplete {
                    "incomplete"
                } else if e.supported {
                    "accepted"
                } else {
                    "refused"
                };
                out.push_str(&format!(
                    "{:>4}  {:<12}  {:<20}  {:<10}  {:<9}  {:>5}  {:>5}  {:>8}  {}\n",
                    e.seq,
                    short(&e.digest),
                    e.artifact,
                    e.claim_level,
                    verdict,
                    e.cells,
                    e.failures,
                    e.control_cells,
                    e.finished.as_deref().unwrap_or("")
                ));
            }
            out.push_str(&format!("{} receipt(s)", entries.len()));
            crate::print_stdout(&out);
            Ok(ExitCode::SUCCESS)
        }
        LedgerCommand::Show { digest } => {
            let ledger = open_existing(&args.ledger)?;
            match ledger.show(digest) {
                Ok((entry, text)) => {
                    if args.json {
                        crate::print_stdout(&text);
                    } else {
                        crate::print_stdout(&format!(
                            "receipt {} (seq {}, previous {})\n{text}",
                            entry.digest,
                            entry.seq,
                            entry.prev_digest.as_deref().unwrap_or("none")
                        ));
                    }
                    Ok(ExitCode::SUCCESS)
                }
                Err(e @ (LedgerError::NotFound(_) | LedgerError::Ambiguous { .. })) => {
                    Err(CliError::NotFound {
                        message: format!("{e} (see `qualify ledger list`)"),
                    })
                }
                Err(e) => Err(ledger_error(e)),
            }
        }
        LedgerCommand::Verify => {
            let v = open_existing(&args.ledger)?
                .verify()
                .map_err(ledger_error)?;
            if args.json {
                json(&v)?;
            } else {
                match &v.broken {
                    None => crate::print_stdout(&format!(
                        "ledger {}: {} receipt(s), every digest and link holds",
                        args.ledger.display(),
                        v.receipts
                    )),
                    Some(b) => crate::print_stdout(&format!(
                        "ledger {}: BROKEN at receipt seq {} ({}): {}",
                        args.ledger.display(),
                        b.seq,
                        b.digest,
                        b.reason
                    )),
                }
            }
            Ok(if v.broken.is_none() {
                ExitCode::SUCCESS
            } else {
                exit::refused()
            })
        }
        LedgerCommand::Controls { artifact } => {
            let controls = open_existing(&args.ledger)?
                .controls(artifact.as_deref())
                .map_err(ledger_error)?;
            if args.json {
                json(&controls)?;
                return Ok(ExitCode::SUCCESS);
            }
            let mut out = String::new();
            for c in &controls {
                out.push_str(&format!(
                    "{:>4}  {:<20}  {:<40}  first failed in {}\n",
                    c.id,
                    c.artifact,
                    c.signature,
                    short(&c.first_receipt)
                ));
            }
            out.push_str(&format!("{} control(s)", controls.len()));
            crate::print_stdout(&out);
            Ok(ExitCode::SUCCESS)
        }
        LedgerCommand::Stats => {
            let stats = open_existing(&args.ledger)?.stats().map_err(ledger_error)?;
            if args.json {
                json(&stats)?;
                return Ok(ExitCode::SUCCESS);
            }
            let mut out = format!(
                "{} receipt(s)\n\nruns per artifact and claim:\n",
                stats.receipts
            );
            for g in &stats.groups {
                let failures = if g.failures.is_empty() {
                    "no failures".to_string()
                } else {
                    g.failures
                        .iter()
                        .map(|(k, v)| format!("{k} {v}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                out.push_str(&format!(
                    "  {} @ {}: {} run(s), {} accepted; failing cells: {failures}\n",
                    g.artifact, g.claim_level, g.runs, g.accepted
                ));
            }
            out.push_str("\nrepeating failures (seen twice or more):\n");
            if stats.repeating.is_empty() {
                out.push_str("  none\n");
            }
            for r in &stats.repeating {
                out.push_str(&format!(
                    "  {} {}: {} time(s) in {} receipt(s), {} as a control\n",
                    r.artifact, r.signature, r.count, r.receipts, r.as_control
                ));
            }
            out.push_str("\nfrom first failure to first pass:\n");
            if stats.time_to_pass.is_empty() {
                out.push_str("  no failures recorded\n");
            }
            for t in &stats.time_to_pass {
                let pass = match (&t.first_pass_receipt, t.seconds_to_pass) {
                    (Some(d), Some(s)) => format!("passed after {s}s (receipt {})", short(d)),
                    _ => "not passed yet".to_string(),
                };
                out.push_str(&format!(
                    "  {} {}: first seen in {}, {pass}\n",
                    t.artifact,
                    t.signature,
                    short(&t.first_seen_receipt)
                ));
            }
            crate::print_stdout(out.trim_end());
            Ok(ExitCode::SUCCESS)
        }
    }
}
