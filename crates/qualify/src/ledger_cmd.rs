//! `qualify ledger list|show|stats|verify|controls|incident`: read the ledger of receipts
//! (`.qualify/ledger.sqlite` by default, `--ledger PATH`) and record incidents (failures seen
//! outside qualify, which become controls and, when an accepted receipt claimed them, escapes).
//! `verify` exits 0 when every digest, link, derived column, control and the anchor hold, 1
//! naming the first row that does not, 2 when the ledger cannot be opened. `incident` and
//! `stats` refuse a ledger that does not hold (exit 2, naming the row), as `run` does. The hidden
//! `append` stores receipt files (used by tests that kill a writer mid-transaction); like every
//! writer it refuses a chain whose end is not the anchor's.

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
    /// Record a failure observed outside qualify (production, a customer, a later CI): it
    /// becomes a control the next run of the artifact re-runs first, and an escape when an
    /// accepted receipt's claim covered it.
    Incident {
        /// The artifact, as its receipts name it.
        #[arg(long, value_name = "NAME")]
        artifact: String,
        /// Where it failed: axis values, e.g. threads=4,n=1024.
        #[arg(long, value_name = "K=V[,K=V…]")]
        params: String,
        /// How it failed: a probe outcome (deadlock, oom_killed, crash, timeout, …).
        #[arg(long, value_name = "OUTCOME")]
        outcome: String,
        /// What was seen, in words.
        #[arg(long, value_name = "TEXT")]
        detail: Option<String>,
        /// The receipt (digest prefix) that had accepted the claim this failure refutes; without
        /// it, the latest accepted receipt whose claimed region contains the parameters.
        #[arg(long, value_name = "DIGEST-PREFIX")]
        receipt: Option<String>,
    },
    /// Store receipt files in the ledger (for tests and imports).
    #[command(hide = true)]
    Append {
        #[arg(required = true)]
        receipts: Vec<PathBuf>,
    },
}

/// A ledger that cannot be opened or read, or does not hold.
fn ledger_error(e: LedgerError) -> CliError {
    match e {
        LedgerError::Broken { .. } => CliError::input(e.to_string(), qualify_ledger::BROKEN_FIX),
        other => CliError::input_only(other.to_string()),
    }
}

fn open_existing(path: &Path) -> Result<Ledger, CliError> {
    exists(path)?;
    Ledger::open(path).map_err(ledger_error)
}

/// [`open_existing`], refused unless every row holds ([`Ledger::open_verified`]).
fn open_verified(path: &Path) -> Result<Ledger, CliError> {
    exists(path)?;
    Ledger::open_verified(path).map_err(ledger_error)
}

fn exists(path: &Path) -> Result<(), CliError> {
    if path.exists() {
        return Ok(());
    }
    Err(CliError::input(
        format!("no ledger at {}", path.display()),
        "`qualify run` creates it, or pass --ledger PATH",
    ))
}

fn json<T: serde::Serialize>(value: &T) -> Result<(), CliError> {
    let text = serde_json::to_string_pretty(value)
        .map_err(|e| CliError::output(format!("cannot encode: {e}"), None))?;
    crate::shell::print_stdout(&text);
    Ok(())
}

/// `threads=4,n=1024` → an object of axis values (integers, then numbers, else text).
fn parse_params(text: &str) -> Result<serde_json::Map<String, serde_json::Value>, CliError> {
    let fix =
        "give axis values as NAME=VALUE pairs separated by commas, e.g. --params threads=4,n=1024";
    let mut out = serde_json::Map::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let Some((k, v)) = part.split_once('=') else {
            return Err(CliError::input(
                format!("--params: `{part}` is not NAME=VALUE"),
                fix,
            ));
        };
        let (k, v) = (k.trim(), v.trim());
        if k.is_empty() || v.is_empty() {
            return Err(CliError::input(
                format!("--params: `{part}` needs both a name and a value"),
                fix,
            ));
        }
        if out.contains_key(k) {
            return Err(CliError::input(
                format!("--params: `{k}` is given twice"),
                fix,
            ));
        }
        let value = if let Ok(i) = v.parse::<i64>() {
            serde_json::json!(i)
        } else if let Some(x) = v.parse::<f64>().ok().filter(|x| x.is_finite()) {
            serde_json::json!(x)
        } else {
            serde_json::json!(v)
        };
        out.insert(k.to_string(), value);
    }
    if out.is_empty() {
        return Err(CliError::input("--params: no axis values given", fix));
    }
    Ok(out)
}

/// A failure outcome: any probe outcome but `ok` and `interrupted`.
fn incident_outcome(text: &str) -> Result<String, CliError> {
    let failures: Vec<&str> = qualify_model::Outcome::ALL
        .iter()
        .filter(|o| o.severity() == 2)
        .map(|o| o.as_str())
        .collect();
    match text.parse::<qualify_model::Outcome>() {
        Ok(o) if o.severity() == 2 => Ok(o.as_str().to_string()),
        _ => Err(CliError::input(
            format!("--outcome: `{text}` is not a failure outcome"),
            format!("use one of: {}", failures.join(", ")),
        )),
    }
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
        LedgerCommand::Incident {
            artifact,
            params,
            outcome,
            detail,
            receipt,
        } => {
            let new = qualify_ledger::NewIncident {
                artifact: artifact.clone(),
                params: parse_params(params)?,
                outcome: incident_outcome(outcome)?,
                detail: detail.clone(),
                receipt: receipt.clone(),
            };
            let mut ledger = open_verified(&args.ledger)?;
            let done = ledger.record_incident(&new).map_err(|e| match e {
                LedgerError::NotFound(_) | LedgerError::Ambiguous { .. } => CliError::input(
                    format!("--receipt: {e}"),
                    "give a digest prefix `qualify ledger list` shows",
                ),
                other => ledger_error(other),
            })?;
            if args.json {
                json(&done)?;
            } else {
                crate::shell::print_stdout(&format!(
                    "recorded incident {} for {}: {}\n  control: {}\n  {}",
                    short(&done.incident.digest),
                    done.incident.artifact,
                    done.incident.signature,
                    if done.new_control {
                        "created: the next run of the artifact re-runs these parameters first"
                    } else {
                        "already known: the next run re-runs these parameters first"
                    },
                    done.escape_note
                ));
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
            crate::shell::print_stdout(&out);
            Ok(ExitCode::SUCCESS)
        }
        LedgerCommand::Show { digest } => {
            let ledger = open_existing(&args.ledger)?;
            match ledger.show(digest) {
                Ok((entry, text)) => {
                    if args.json {
                        crate::shell::print_stdout(&text);
                    } else {
                        crate::shell::print_stdout(&format!(
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
                    None => crate::shell::print_stdout(&format!(
                        "ledger {}: {} receipt(s), {} incident(s), {} control(s): every digest, link, column and control holds, and the chain ends where its anchor says",
                        args.ledger.display(),
                        v.receipts,
                        v.incidents,
                        v.controls
                    )),
                    Some(b) if b.digest.is_empty() => crate::shell::print_stdout(&format!(
                        "ledger {}: BROKEN at {}: {}",
                        args.ledger.display(),
                        b.row,
                        b.reason
                    )),
                    Some(b) => crate::shell::print_stdout(&format!(
                        "ledger {}: BROKEN at {} ({}): {}",
                        args.ledger.display(),
                        b.row,
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
                .regressions(artifact.as_deref())
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
            crate::shell::print_stdout(&out);
            Ok(ExitCode::SUCCESS)
        }
        LedgerCommand::Stats => {
            let stats = open_verified(&args.ledger)?.stats().map_err(ledger_error)?;
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
                let escapes = match g.escape_rate {
                    Some(rate) => format!(", {} escape(s) (escape rate {rate:.2})", g.escapes),
                    None => format!(", {} escape(s)", g.escapes),
                };
                out.push_str(&format!(
                    "  {} @ {}: {} run(s), {} accepted{escapes}; failing cells: {failures}\n",
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
            out.push_str("\nincidents (failures observed outside qualify):\n");
            if stats.incidents.is_empty() {
                out.push_str("  none\n");
            }
            for i in &stats.incidents {
                let escape = match (&i.escaped_receipt, &i.escaped_level) {
                    (Some(r), Some(level)) => {
                        format!("an escape from receipt {} ({level})", short(r))
                    }
                    _ => "not an escape".to_string(),
                };
                out.push_str(&format!(
                    "  {} {} {}: {escape}{}\n",
                    short(&i.digest),
                    i.artifact,
                    i.signature,
                    i.detail
                        .as_deref()
                        .map(|d| format!(" — {d}"))
                        .unwrap_or_default()
                ));
            }
            out.push_str(
                "\nfailures against what development ran (receipts with a development trace):\n",
            );
            if stats.development.is_empty() {
                out.push_str("  no receipt had a development trace (qualify run --trace)\n");
            }
            for d in &stats.development {
                out.push_str(&format!(
                    "  {}: {} receipt(s), {} with failures; {} failing cell(s): {} where development never went, {} where it did, {} not placeable\n    latest: {}\n",
                    d.artifact,
                    d.receipts,
                    d.receipts_with_failures,
                    d.failing_cells,
                    d.outside,
                    d.inside,
                    d.unknown,
                    d.latest
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
            crate::shell::print_stdout(out.trim_end());
            Ok(ExitCode::SUCCESS)
        }
    }
}
