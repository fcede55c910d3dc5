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
    /// Found in a directory the user named (a file there that is no session is skipped and
    /// counted), rather than named itself.
    pub in_directory: bool,
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

impl TraceError {
    /// `3:58: message` (the place within the file, then what).
    fn located(&self) -> String {
        match (self.line, self.column) {
            (Some(l), Some(c)) => format!("{l}:{c}: {}", self.message),
            (Some(l), None) => format!("{l}: {}", self.message),
            _ => self.message.clone(),
        }
    }
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

/// What one file turned out to be.
enum Read {
    Session(Box<(record::Source, session::Session)>),
    NotATrace(TraceError),
    Unreadable(TraceError),
}

/// Read `files` (each detected by content, or all as `forced`) into one record against `spec`.
///
/// A file found in a directory that is no session (a tool's saved output, a metadata file) is
/// skipped and counted; a file that cannot be read is reported in the record; neither stops
/// the others. The error is returned only when no file at all could be read. A byte-order mark
/// is accepted, and a JSON Lines session still being written (its last line incomplete) is read
/// up to its last complete entry, the cut recorded.
pub fn read(
    files: &[TraceFile],
    forced: Option<Format>,
    spec: &SpecView,
) -> Result<DevRecord, TraceError> {
    let mut sessions = Vec::with_capacity(files.len());
    let mut skipped = Vec::new();
    let mut first_error: Option<TraceError> = None;
    for file in files {
        match read_one(file, forced) {
            Read::Session(s) => sessions.push(*s),
            Read::NotATrace(e) if file.in_directory => skipped.push(record::Skipped {
                path: file.path.clone(),
                reason: record::SkipReason::NotATrace,
                message: e.located(),
            }),
            Read::NotATrace(e) | Read::Unreadable(e) => {
                skipped.push(record::Skipped {
                    path: file.path.clone(),
                    reason: record::SkipReason::Unreadable,
                    message: e.located(),
                });
                first_error.get_or_insert(e);
            }
        }
    }
    if sessions.is_empty() {
        return Err(first_error.unwrap_or_else(|| TraceError {
            path: files
                .iter()
                .map(|f| f.path.as_str())
                .collect::<Vec<_>>()
                .join(" "),
            line: None,
            column: None,
            message: format!(
                "none of the {} file(s) is a development trace qualify can read",
                files.len()
            ),
            help: format!("qualify reads {}", Format::listing()),
        }));
    }
    Ok(DevRecord::build_with(sessions, skipped, spec))
}

fn read_one(file: &TraceFile, forced: Option<Format>) -> Read {
    let err =
        |line: Option<usize>, column: Option<usize>, message: String, help: String| TraceError {
            path: file.path.clone(),
            line,
            column,
            message,
            help,
        };
    let text = match std::str::from_utf8(&file.bytes) {
        Ok(t) => t,
        Err(e) => {
            let line = 1 + file.bytes[..e.valid_up_to()]
                .iter()
                .filter(|b| **b == b'\n')
                .count();
            return Read::NotATrace(err(
                Some(line),
                None,
                "not UTF-8 text".into(),
                "a development trace is JSON or JSON Lines text".into(),
            ));
        }
    };
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let Some(format) = forced.or_else(|| format::detect(text)) else {
        return Read::NotATrace(err(
            None,
            None,
            "not a development trace qualify can read".into(),
            format!(
                "qualify reads {}; force one with --trace-format {}",
                Format::listing(),
                Format::ALL.map(|f| f.as_str()).join("|")
            ),
        ));
    };
    let (text, cut) = complete_entries(text);
    match formats::parse(format, text) {
        Ok(session) => {
            let source = record::Source {
                path: file.path.clone(),
                sha256: qualify_model::sha256_hex(&file.bytes),
                format,
                events: session.events,
                understood: session.understood,
                unknown: session.unknown.clone(),
                cut,
            };
            Read::Session(Box::new((source, session)))
        }
        Err(l) => Read::Unreadable(err(
            Some(l.line),
            l.column,
            format!("{} ({}): {}", format.as_str(), format.describe(), l.message),
            match forced {
                Some(_) => {
                    format!("the file was read as --trace-format {format}; is that its format?")
                }
                None => format!(
                    "it was detected as {format}; if it is another format, force it with --trace-format {}",
                    Format::names().replace(", ", "|")
                ),
            },
        )),
    }
}

/// A JSON Lines file whose last line is incomplete (no newline after it, and not JSON: the
/// agent was still writing it) without that line, and where it was cut. A JSON document (its
/// first line not a JSON value of its own) is returned as is.
fn complete_entries(text: &str) -> (&str, Option<record::Cut>) {
    // A line may hold several entries written one after the other (`{…}{…}`).
    let is_json = |t: &str| {
        let mut values = serde_json::Deserializer::from_str(t).into_iter::<serde::de::IgnoredAny>();
        values.next().is_some_and(|v| v.is_ok()) && values.all(|v| v.is_ok())
    };
    let lines = text
        .lines()
        .find(|l| !l.trim().is_empty())
        .is_some_and(is_json);
    if text.ends_with('\n') || !lines {
        return (text, None);
    }
    let start = text.rfind('\n').map_or(0, |i| i + 1);
    let last = &text[start..];
    if start == 0 || last.trim().is_empty() || is_json(last) {
        return (text, None);
    }
    let line = 1 + text[..start].matches('\n').count();
    (
        &text[..start],
        Some(record::Cut {
            line,
            bytes: last.len() as u64,
        }),
    )
}
