//! `qualify-trace` reads the sessions coding agents write into one normalised development
//! record. Pure: it reads only the bytes it is given and runs nothing.
//!
//! - [`format`]: the formats (Claude Code transcripts, Codex CLI rollouts, `opencode export`,
//!   OpenHands and SWE-agent trajectories, OpenTelemetry GenAI spans as OTLP JSON, qualify's
//!   own JSON Lines) and detection by content.
//! - [`formats`]: one parser per format, each a few serde models of the fields it reads.
//! - [`session`]: what a parser yields — tool calls with what they did, and the facts around
//!   them.
//! - [`shell`], [`classify`]: simple commands of a recorded command line; which were test,
//!   build or functional-check runs.
//! - [`coverage`]: the spec's command template matched against the recorded commands — which
//!   axis values development ran the artifact with.
//! - [`record`]: the normalised [`DevRecord`] the receipt keeps (secrets redacted, prompts as
//!   digests).
//!
//! No maintained crate reads these formats together: the ones on crates.io cover one or three
//! of them, each with its own conversation model, directory discovery and a date-time crate,
//! and the OTLP crates (`opentelemetry-proto` with serde) pull in prost for the few attributes
//! read here; small serde models per format are lighter and say exactly what is read.

pub mod classify;
pub mod coverage;
pub mod format;
pub mod formats;
pub mod record;
pub mod session;
pub mod shell;

use std::fmt;

pub use coverage::{Coverage, SpecView};
pub use format::Format;
pub use record::DevRecord;

/// One file of a trace.
#[derive(Debug, Clone)]
pub struct TraceFile {
    /// As the user named it (or as found in the directory they named).
    pub path: String,
    pub bytes: Vec<u8>,
}

/// A trace file that cannot be read: where, and what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceError {
    pub path: String,
    pub line: Option<usize>,
    pub column: Option<usize>,
    pub message: String,
    pub help: String,
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.path)?;
        if let Some(l) = self.line {
            write!(f, ":{l}")?;
            if let Some(c) = self.column {
                write!(f, ":{c}")?;
            }
        }
        write!(f, ": error: {}\n  help: {}", self.message, self.help)
    }
}

/// Read `files` (each detected by content, or all as `forced`) into one record against `spec`.
pub fn read(
    files: &[TraceFile],
    forced: Option<Format>,
    spec: &SpecView,
) -> Result<DevRecord, TraceError> {
    let mut sessions = Vec::with_capacity(files.len());
    for file in files {
        let err = |line: Option<usize>, column: Option<usize>, message: String, help: String| {
            TraceError {
                path: file.path.clone(),
                line,
                column,
                message,
                help,
            }
        };
        let text = std::str::from_utf8(&file.bytes).map_err(|e| {
            let line = 1 + file.bytes[..e.valid_up_to()]
                .iter()
                .filter(|b| **b == b'\n')
                .count();
            err(
                Some(line),
                None,
                "not UTF-8 text".into(),
                "a development trace is JSON or JSON Lines text".into(),
            )
        })?;
        let format = match forced.or_else(|| format::detect(text)) {
            Some(f) => f,
            None => {
                return Err(err(
                    None,
                    None,
                    "not a development trace qualify can read".into(),
                    format!(
                        "qualify reads {}; force one with --trace-format {}",
                        Format::listing(),
                        Format::ALL.map(|f| f.as_str()).join("|")
                    ),
                ));
            }
        };
        let session = formats::parse(format, text).map_err(|l| {
            err(
                Some(l.line),
                l.column,
                format!("{} ({}): {}", format.as_str(), format.describe(), l.message),
                match forced {
                    Some(_) => format!("the file was read as --trace-format {format}; is that its format?"),
                    None => format!(
                        "it was detected as {format}; if it is another format, force it with --trace-format {}",
                        Format::names().replace(", ", "|")
                    ),
                },
            )
        })?;
        let source = record::Source {
            path: file.path.clone(),
            sha256: qualify_model::sha256_hex(&file.bytes),
            format,
            events: session.events,
            understood: session.understood,
            unknown: session.unknown.clone(),
        };
        sessions.push((source, session));
    }
    Ok(DevRecord::build(sessions, spec))
}
