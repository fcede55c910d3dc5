//! Whether a runtime's report names the run's failure, and what it says. A report decides only a
//! run that ended by itself in failure, with the status the runtime ends a program with after
//! that report (its row's `ends`), and — unless the row's report may stand anywhere — as the last
//! thing on stderr (at most [`TRAILER`] bytes after it). Then it names the failure (deadlock, a
//! data race, out of memory at a limit, …) with the runtime's words, parsed detail and frames.
//! Otherwise it is context only, and says why. A report never makes a run look better than its
//! ending: an `ok` run has none, and a timeout, a kill or the kernel's memory kill keeps its
//! verdict.

use std::collections::BTreeMap;

use serde::Serialize;

use super::{Body, Ends, Row, Scanned, Table, limits};
use crate::backend::Counters;
use crate::limits::Limits;
use crate::result::Outcome;
use crate::runtimes::Runtimes;
use crate::stall::golang::{self, Goroutine};

/// Bytes that may follow a report on stderr for it still to be the one the program ended with
/// (a launcher's closing notes, the sanitizer's summary).
pub const TRAILER: u64 = 4096;
/// Goroutines a report keeps in the evidence (the rest are counted).
const GOROUTINES_KEPT: usize = 100;
/// Frames and goroutines named in the detail.
const NAMED: usize = 6;
/// Characters of the runtime's words in the detail.
const WORDS: usize = 200;

/// How the run ended, as far as a report is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// By itself, with this raw wait status.
    ByItself(i32),
    /// qualify or the kernel ended it (deadline, stall, memory kill, interruption); what ended it.
    Stopped(&'static str),
}

/// What the judgement needs to know about the run.
pub struct Context<'a> {
    pub ended: Ended,
    /// Command lines of the tree's processes qualify saw (the probed command first).
    pub commands: &'a [String],
    /// Values of the runtimes' option variables (`JAVA_TOOL_OPTIONS`, `NODE_OPTIONS`, …).
    pub options: &'a [String],
    pub limits: &'a Limits,
    pub counters: &'a Counters,
    /// Whether a pids ceiling refused a task (`pids_limit_hit`).
    pub pids_hit: bool,
}

/// A runtime's report as the evidence keeps it (`evidence.runtime_report`).
#[derive(Debug, Clone, Serialize)]
pub struct Reported {
    pub runtime: String,
    /// The table's row.
    pub report: String,
    pub cause: String,
    /// The runtime's words: the report's first line.
    pub said: String,
    /// What the report's lines say, parsed (`thread`, `kind`, `rank`, `bytes`, …).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub detail: BTreeMap<String, String>,
    /// The limit or ceiling that was hit, named.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<String>,
    /// Where: Java or native frames, the traceback (innermost first).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub frames: Vec<String>,
    /// A Go report's goroutines (at most 100; `goroutines_total` counts all).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub goroutines: Vec<Goroutine>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub goroutines_total: Option<u64>,
    /// Whether it named the outcome; if not, why not.
    pub decided: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_decided: Option<String>,
    /// Other reports the stream carried.
    #[serde(skip_serializing_if = "is_zero")]
    pub other_reports: u64,
    /// The outcome it names (decided only).
    #[serde(skip)]
    pub outcome: Option<Outcome>,
    /// The detail line's part: what the runtime said, where, and the limit.
    #[serde(skip)]
    pub sentence: String,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

fn failed(status: i32) -> bool {
    (libc::WIFEXITED(status) && libc::WEXITSTATUS(status) != 0) || libc::WIFSIGNALED(status)
}

fn status_text(status: i32) -> String {
    if libc::WIFEXITED(status) {
        format!("exited with status {}", libc::WEXITSTATUS(status))
    } else if libc::WIFSIGNALED(status) {
        format!(
            "was killed by {}",
            crate::classify::signal_name(libc::WTERMSIG(status))
        )
    } else {
        "ended".into()
    }
}

fn ends_text(ends: &[Ends]) -> String {
    ends.iter()
        .map(|e| e.describe())
        .collect::<Vec<_>>()
        .join(" or ")
}

/// The report on stderr that names the run's failure, or the one worth stating beside another
/// verdict; `None` for an `ok` run or a stderr without a report.
pub fn judge(
    table: &Table,
    runtimes: Option<&Runtimes>,
    scanned: &Scanned,
    ctx: &Context,
) -> Option<Reported> {
    let verdicts: Vec<&super::Capture> = scanned
        .reports
        .iter()
        .filter(|c| table.rows[c.row].outcome.is_some())
        .collect();
    if verdicts.is_empty() {
        return None;
    }
    let others = |_: &super::Capture| scanned.seen.saturating_sub(1);
    let status = match ctx.ended {
        Ended::ByItself(st) if !failed(st) => return None,
        Ended::ByItself(st) => st,
        Ended::Stopped(how) => {
            let c = verdicts
                .iter()
                .find(|c| table.rows[c.row].anywhere)
                .or(verdicts.last())?;
            let mut r = read(table, runtimes, scanned, c, ctx);
            r.not_decided = Some(format!(
                "the run did not end by itself ({how}): the report is context, not the verdict"
            ));
            r.other_reports = others(c);
            return Some(r);
        }
    };
    // The last report, if the program ended the way its runtime ends one after it.
    let last = scanned.reports.last()?;
    let last_row = &table.rows[last.row];
    let mut why_not = None;
    if last_row.outcome.is_some() && !last_row.anywhere {
        let after = scanned.after(last);
        if !last_row.ends.iter().any(|e| e.matches(status)) {
            why_not = Some(format!(
                "{} ends a program with {} after this report; this one {}",
                last_row.runtime,
                ends_text(&last_row.ends),
                status_text(status)
            ));
        } else if after > TRAILER {
            why_not = Some(format!(
                "{after} bytes followed it on stderr: not the report the program ended with"
            ));
        } else {
            let r = read(table, runtimes, scanned, last, ctx);
            if last_row.body == Body::Goroutines && r.goroutines_total.unwrap_or(0) == 0 {
                why_not = Some("no goroutine dump followed it".into());
            } else {
                return Some(decided(r, last_row, others(last)));
            }
        }
    }
    // A report that may stand anywhere (a sanitizer's), with its status at the end.
    if let Some(c) = verdicts.iter().find(|c| {
        let row = &table.rows[c.row];
        row.anywhere && row.ends.iter().any(|e| e.matches(status))
    }) {
        let row = &table.rows[c.row];
        let r = read(table, runtimes, scanned, c, ctx);
        return Some(decided(r, row, others(c)));
    }
    let c = verdicts.last()?;
    let row = &table.rows[c.row];
    let mut r = read(table, runtimes, scanned, c, ctx);
    r.not_decided = Some(why_not.unwrap_or_else(|| {
        if row.anywhere {
            format!(
                "{} fails a program with {} after this report; this one {}",
                row.runtime,
                ends_text(&row.ends),
                status_text(status)
            )
        } else {
            "other output followed it on stderr: not the report the program ended with".into()
        }
    }));
    r.other_reports = others(c);
    Some(r)
}

fn decided(mut r: Reported, row: &Row, others: u64) -> Reported {
    r.decided = true;
    r.outcome = row.outcome;
    r.other_reports = others;
    r
}

fn short(text: &str) -> String {
    let t = text.trim();
    if t.chars().count() <= WORDS {
        return t.to_string();
    }
    let cut: String = t.chars().take(WORDS).collect();
    format!("{cut}…")
}

/// Everything one report says.
fn read(
    table: &Table,
    runtimes: Option<&Runtimes>,
    scanned: &Scanned,
    c: &super::Capture,
    ctx: &Context,
) -> Reported {
    let row = &table.rows[c.row];
    let mut detail: BTreeMap<String, String> = BTreeMap::new();
    let mut grab = |re: &regex::Regex, text: &str| {
        if let Some(caps) = re.captures(text) {
            for name in re.capture_names().flatten() {
                if let Some(m) = caps.name(name) {
                    detail
                        .entry(name.to_string())
                        .or_insert_with(|| short(m.as_str()));
                }
            }
        }
    };
    grab(&row.line, &c.line);
    for re in &row.parse {
        for l in c.before.iter().map(String::as_str).chain(c.body.lines()) {
            grab(re, l);
        }
    }
    let mut frames = Vec::new();
    let mut goroutines = Vec::new();
    let mut goroutines_total = None;
    let mut at = None;
    match row.body {
        Body::Java => {
            frames = c
                .body
                .lines()
                .filter_map(|l| l.trim().strip_prefix("at "))
                .take(12)
                .map(String::from)
                .collect();
            // The program's own frame, below the JDK's.
            at = frames
                .iter()
                .find(|f| !JDK_FRAMES.iter().any(|p| f.starts_with(p)))
                .or(frames.first())
                .cloned();
        }
        Body::Python => {
            // The traceback before the line, innermost last: `  File "x.py", line 8, in <module>`.
            let mut fs: Vec<(bool, String)> = c
                .before
                .iter()
                .filter_map(|l| {
                    let l = l.trim();
                    let rest = l.strip_prefix("File \"")?;
                    let (path, rest) = rest.split_once("\", line ")?;
                    let (line, func) = rest.split_once(", in ").unwrap_or((rest, "?"));
                    let file = path.rsplit('/').next().unwrap_or(path);
                    let library = path.contains("/lib/python") || path.starts_with('<');
                    Some((library, format!("{func} ({file}:{line})")))
                })
                .collect();
            fs.reverse();
            // The program's own frame, below the standard library's.
            at = fs
                .iter()
                .find(|(library, _)| !library)
                .or(fs.first())
                .map(|(_, f)| f.clone());
            frames = fs.into_iter().map(|(_, f)| f).collect();
        }
        Body::Native | Body::Text => {
            frames = c
                .body
                .lines()
                .map(str::trim)
                .filter(|l| {
                    !l.is_empty()
                        && !l.starts_with("-----")
                        && !l.starts_with("====")
                        && !l.starts_with("at ")
                        && !l.starts_with("note: ")
                        && *l != "stack backtrace:"
                })
                .take(12)
                .map(short)
                .collect();
            at = detail.get("at").cloned();
        }
        Body::Goroutines => {
            let gs = golang::parse(&c.body);
            goroutines_total = Some(gs.len() as u64 + c.dropped_goroutines);
            goroutines = gs;
        }
    }
    let mut sentence = format!("{} (`{}`", fill(&row.said, &detail), short(&c.line));
    if let Some(a) = &at {
        sentence.push_str(&format!(" at {a}"));
    }
    sentence.push(')');
    if row.body == Body::Goroutines {
        let go = runtimes.and_then(|t| t.named("Go"));
        let named: Vec<String> = goroutines
            .iter()
            .filter(|g| match (row.cause.as_str(), go) {
                // A deadlock is every goroutine of the program; any other fatal error the one
                // that ran into it.
                ("deadlock", Some(go)) => golang::part(g, go) != golang::Part::Runtime,
                ("deadlock", None) => g.id != 0,
                _ => g.state == "running" && !g.at.is_empty(),
            })
            .map(|g| format!("goroutine {} [{}] {}", g.id, g.state, g.at))
            .collect();
        if !named.is_empty() {
            sentence.push_str(": ");
            sentence.push_str(&listed(named, c.dropped_goroutines));
        }
    }
    // What poisoned a lock: the first panic the stream carried.
    if let Some(context) = row.context.as_deref()
        && let Some(p) = scanned
            .reports
            .iter()
            .find(|p| table.rows[p.row].id == context && p.start < c.start)
    {
        let message = p.body.lines().next().map(short).unwrap_or_default();
        detail.insert("first_panic".into(), short(&p.line));
        sentence.push_str(&format!("; after `{}` {message}", short(&p.line)));
    }
    let limit = row.limit.map(|l| limits::name(l, &detail, ctx));
    if let Some(l) = &limit {
        let what = if row.limit == Some(super::Limit::Tasks) {
            "the ceiling"
        } else {
            "the limit"
        };
        sentence.push_str(&format!("; {what}: {l}"));
    }
    let kept = goroutines.len().min(GOROUTINES_KEPT);
    goroutines.truncate(kept);
    Reported {
        runtime: row.runtime.clone(),
        report: row.id.clone(),
        cause: row.cause.clone(),
        said: short(&c.line),
        detail,
        limit,
        frames,
        goroutines,
        goroutines_total,
        decided: false,
        not_decided: None,
        other_reports: 0,
        outcome: None,
        sentence,
    }
}

/// Frames of the JDK itself (the program's own frame is named).
const JDK_FRAMES: [&str; 5] = ["java.", "javax.", "jdk.", "sun.", "java.base/"];

/// `said` with `{name}` replaced by the detail's value (`?` when the report had none).
fn fill(said: &str, detail: &BTreeMap<String, String>) -> String {
    let mut out = String::with_capacity(said.len());
    let mut rest = said;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        match rest[open..].find('}') {
            Some(close) => {
                let name = &rest[open + 1..open + close];
                out.push_str(detail.get(name).map(String::as_str).unwrap_or("?"));
                rest = &rest[open + close + 1..];
            }
            None => {
                out.push_str(&rest[open..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

/// The first few items and how many more there were (`unkept`: beyond what the scan kept).
fn listed(items: Vec<String>, unkept: u64) -> String {
    let n = items.len();
    let mut shown: Vec<String> = items.into_iter().take(NAMED).collect();
    let more = n.saturating_sub(NAMED) as u64 + unkept;
    if more > 0 {
        shown.push(format!("… ({more} more)"));
    }
    shown.join("; ")
}
