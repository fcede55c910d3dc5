//! Fatal reports runtimes print before they end a program — Go's "all goroutines are asleep",
//! the JVM's `OutOfMemoryError`, CPython's `MemoryError`, V8's heap limit, Rust's allocation
//! failure, glibc's heap checks, the sanitizers', Open MPI's and libgomp's — read into the
//! outcome vocabulary. The table is data (`runtime_reports.toml`, compiled in); [`scan`] reads
//! the program's whole stderr as it is written, keeping only bounded reports; [`judge`] decides
//! whether one names the run's failure (only a failure that ended the way the runtime ends a
//! program after that report, the report last on stderr) and names the limit that was hit
//! ([`limits`]).

pub mod judge;
pub mod limits;
pub mod scan;

use std::sync::LazyLock;

use regex::{Regex, RegexSet};
use serde::Deserialize;

use crate::result::Outcome;
use crate::rules::TableError;

pub use judge::{Context, Reported, judge};
pub use scan::{Capture, Scanned, Scanner};

/// The table as shipped.
pub const TABLE: &str = include_str!("../runtime_reports.toml");

/// The shipped table, compiled once; `Err` says why not (a build defect, stated in the
/// evidence of every run that needed it).
pub static REPORTS: LazyLock<Result<Table, TableError>> = LazyLock::new(|| Table::parse(TABLE));

/// How a row's report ends a program (a status it is taken for).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ends {
    Exit(i32),
    ExitNonZero,
    Signal(i32),
}

impl Ends {
    fn parse(text: &str) -> Option<Ends> {
        let (kind, value) = text.split_once(':')?;
        match (kind, value) {
            ("exit", "nonzero") => Some(Ends::ExitNonZero),
            ("exit", n) => n.parse().ok().map(Ends::Exit),
            ("signal", name) => name
                .parse::<nix::sys::signal::Signal>()
                .ok()
                .map(|s| Ends::Signal(s as i32)),
            _ => None,
        }
    }

    /// Whether a raw wait status is this ending (a signal also as a wrapper shell's 128+N).
    pub fn matches(self, status: i32) -> bool {
        let exited = libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status));
        let signalled = libc::WIFSIGNALED(status).then(|| libc::WTERMSIG(status));
        match self {
            Ends::Exit(n) => exited == Some(n),
            Ends::ExitNonZero => exited.is_some_and(|c| c != 0),
            Ends::Signal(s) => signalled == Some(s) || exited == Some(128 + s),
        }
    }

    /// `status 2`, `a non-zero status`, `SIGABRT`.
    pub fn describe(self) -> String {
        match self {
            Ends::Exit(n) => format!("status {n}"),
            Ends::ExitNonZero => "a non-zero status".into(),
            Ends::Signal(s) => crate::classify::signal_name(s),
        }
    }
}

/// How the lines after (or before) a report's first line are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Body {
    /// A Go goroutine dump.
    Goroutines,
    /// Java `at` frames.
    Java,
    /// The Python traceback before the line.
    Python,
    /// Native frames (V8's, Rust's backtrace).
    Native,
    Text,
}

/// Which limit a report says was hit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Limit {
    JvmHeap,
    JvmMetaspace,
    JvmStack,
    NodeHeap,
    GoStack,
    PythonRecursion,
    Allocator,
    Tasks,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRow {
    id: String,
    runtime: String,
    line: String,
    #[serde(default)]
    before: usize,
    #[serde(default)]
    parse: Vec<String>,
    follow: Option<String>,
    until: Option<String>,
    body: Body,
    #[serde(default)]
    anywhere: bool,
    ends: Vec<String>,
    outcome: String,
    cause: String,
    limit: Option<Limit>,
    said: String,
    context: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTable {
    report: Vec<RawRow>,
}

/// One report a runtime prints.
#[derive(Debug, Clone)]
pub struct Row {
    pub id: String,
    pub runtime: String,
    pub line: Regex,
    /// Lines before the first line that belong to it (a traceback).
    pub before: usize,
    /// Patterns for the detail, matched against the report's other lines.
    pub parse: Vec<Regex>,
    pub follow: Option<Regex>,
    pub until: Option<Regex>,
    pub body: Body,
    /// Taken wherever it stands on stderr (a sanitizer's, printed while the program runs).
    pub anywhere: bool,
    pub ends: Vec<Ends>,
    /// `None`: context only, never a verdict (the dump qualify asked a Go program for).
    pub outcome: Option<Outcome>,
    /// `deadlock`, `data_race`, `out_of_memory`, `thread_exhaustion`, …
    pub cause: String,
    pub limit: Option<Limit>,
    /// What the runtime says, for people: `the Go runtime found every goroutine asleep`;
    /// `{name}` stands for a detail.
    pub said: String,
    /// A context row whose first report is quoted beside this one.
    pub context: Option<String>,
}

/// The whole table, with every first-line pattern in one set.
#[derive(Debug, Clone)]
pub struct Table {
    pub rows: Vec<Row>,
    pub starts: RegexSet,
}

impl Table {
    pub fn parse(text: &str) -> Result<Table, TableError> {
        let raw: RawTable = toml::from_str(text).map_err(|source| TableError::Toml {
            table: "runtime reports",
            source,
        })?;
        let regex = |id: &str, field: &'static str, p: &str| {
            Regex::new(p).map_err(|source| TableError::Regex {
                report: id.to_string(),
                field,
                source,
            })
        };
        let mut rows = Vec::with_capacity(raw.report.len());
        for r in raw.report {
            let bad = |field: &'static str, value: &str| TableError::Field {
                report: r.id.clone(),
                field,
                value: value.to_string(),
            };
            let outcome = match r.outcome.as_str() {
                "none" => None,
                o => Some(o.parse::<Outcome>().map_err(|_| bad("outcome", o))?),
            };
            let ends = r
                .ends
                .iter()
                .map(|e| Ends::parse(e).ok_or_else(|| bad("ends", e)))
                .collect::<Result<Vec<_>, _>>()?;
            if outcome.is_some() && ends.is_empty() {
                return Err(bad("ends", "[]"));
            }
            rows.push(Row {
                line: regex(&r.id, "line", &r.line)?,
                parse: r
                    .parse
                    .iter()
                    .map(|p| regex(&r.id, "parse", p))
                    .collect::<Result<_, _>>()?,
                follow: r
                    .follow
                    .as_deref()
                    .map(|p| regex(&r.id, "follow", p))
                    .transpose()?,
                until: r
                    .until
                    .as_deref()
                    .map(|p| regex(&r.id, "until", p))
                    .transpose()?,
                id: r.id,
                runtime: r.runtime,
                before: r.before,
                body: r.body,
                anywhere: r.anywhere,
                ends,
                outcome,
                cause: r.cause,
                limit: r.limit,
                said: r.said,
                context: r.context,
            });
        }
        let starts = RegexSet::new(rows.iter().map(|r| r.line.as_str())).map_err(|source| {
            TableError::Regex {
                report: "(all)".into(),
                field: "line",
                source,
            }
        })?;
        Ok(Table { rows, starts })
    }

    /// The first row (in table order) whose first line this is.
    pub fn start(&self, line: &str) -> Option<usize> {
        self.starts.matches(line).iter().next()
    }

    pub fn row(&self, id: &str) -> Option<&Row> {
        self.rows.iter().find(|r| r.id == id)
    }
}

#[cfg(test)]
mod tests;
