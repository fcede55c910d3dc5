//! Reading a stream for runtime reports as it is written: lines are matched against the table's
//! first-line patterns, and a report keeps its lines before (a traceback) and after (a goroutine
//! dump, Java frames) — all bounded: a line is cut at [`MAX_LINE`] bytes, a report's body at
//! [`BODY_CAP`] (lines beyond are counted), and only the first and the last [`KEEP`] reports are
//! kept (the rest counted), so a program that prints gigabytes, or a million fake reports, costs
//! a few MiB at most.

use std::collections::VecDeque;

use super::Table;

/// Bytes of one line that are looked at (the rest of a longer line is dropped).
pub const MAX_LINE: usize = 4096;
/// Bytes of a report's body kept (lines beyond are counted, not kept).
pub const BODY_CAP: usize = 512 * 1024;
/// Reports kept from the start and from the end of the stream.
pub const KEEP: usize = 4;
/// Lines remembered for the reports whose context comes first (a Python traceback).
const RING: usize = 16;

/// One report as the stream carried it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capture {
    /// Index of its row in the table.
    pub row: usize,
    /// The line that started it.
    pub line: String,
    /// The lines before it the row asks for, oldest first.
    pub before: Vec<String>,
    /// The lines after it that belong to it (`\n`-separated, at most [`BODY_CAP`] bytes).
    pub body: String,
    /// Lines of its body beyond the cap.
    pub dropped_lines: u64,
    /// Goroutine headers (`goroutine N [`) among the dropped lines.
    pub dropped_goroutines: u64,
    /// Byte offset of the stream where it started and where its last line ended.
    pub start: u64,
    pub end: u64,
    /// Still taking lines when the stream ended.
    pub open: bool,
}

/// Everything the scan kept, once the stream ended.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Scanned {
    /// The first and the last reports, in stream order (no report twice).
    pub reports: Vec<Capture>,
    /// Reports seen in all (also those not kept).
    pub seen: u64,
    /// Bytes scanned.
    pub bytes: u64,
}

impl Scanned {
    /// Bytes the stream carried after a report ended.
    pub fn after(&self, c: &Capture) -> u64 {
        self.bytes.saturating_sub(c.end)
    }
}

/// The scan of one stream.
#[derive(Debug)]
pub struct Scanner {
    table: &'static Table,
    partial: Vec<u8>,
    ring: VecDeque<String>,
    current: Option<Capture>,
    first: Vec<Capture>,
    last: VecDeque<Capture>,
    seen: u64,
    /// Bytes consumed, and where the line being read started.
    offset: u64,
    line_start: u64,
}

impl Scanner {
    pub fn new(table: &'static Table) -> Scanner {
        Scanner {
            table,
            partial: Vec::new(),
            ring: VecDeque::with_capacity(RING),
            current: None,
            first: Vec::new(),
            last: VecDeque::new(),
            seen: 0,
            offset: 0,
            line_start: 0,
        }
    }

    /// Take the next bytes of the stream.
    pub fn feed(&mut self, mut chunk: &[u8]) {
        while !chunk.is_empty() {
            match memchr_newline(chunk) {
                Some(i) => {
                    self.take_partial(&chunk[..i]);
                    self.offset += i as u64 + 1;
                    let line = std::mem::take(&mut self.partial);
                    self.line(&line, self.offset);
                    self.line_start = self.offset;
                    chunk = &chunk[i + 1..];
                }
                None => {
                    self.take_partial(chunk);
                    self.offset += chunk.len() as u64;
                    chunk = &[];
                }
            }
        }
    }

    fn take_partial(&mut self, bytes: &[u8]) {
        let room = MAX_LINE.saturating_sub(self.partial.len());
        self.partial
            .extend_from_slice(&bytes[..bytes.len().min(room)]);
    }

    /// The stream ended: what was kept.
    pub fn finish(mut self) -> Scanned {
        if !self.partial.is_empty() {
            let line = std::mem::take(&mut self.partial);
            self.line(&line, self.offset);
        }
        if let Some(mut c) = self.current.take() {
            c.open = true;
            self.keep(c);
        }
        let mut reports = self.first;
        reports.extend(self.last);
        Scanned {
            reports,
            seen: self.seen,
            bytes: self.offset,
        }
    }

    /// One whole line (without its newline) that ended at byte `end`.
    fn line(&mut self, bytes: &[u8], end: u64) {
        let text = String::from_utf8_lossy(bytes);
        let text = text.trim_end_matches('\r');
        let start_row = self.table.start(text);
        if let Some(mut c) = self.current.take() {
            let row = &self.table.rows[c.row];
            if start_row.is_none() && row.until.as_ref().is_some_and(|u| u.is_match(text)) {
                append(&mut c, text);
                c.end = end;
                self.keep(c);
                self.remember(text);
                return;
            }
            if start_row.is_none() && row.follow.as_ref().is_some_and(|f| f.is_match(text)) {
                append(&mut c, text);
                c.end = end;
                self.current = Some(c);
                self.remember(text);
                return;
            }
            self.keep(c);
        }
        if let Some(row_index) = start_row {
            self.seen += 1;
            let row = &self.table.rows[row_index];
            let before: Vec<String> = self
                .ring
                .iter()
                .skip(self.ring.len().saturating_sub(row.before))
                .cloned()
                .collect();
            let c = Capture {
                row: row_index,
                line: text.to_string(),
                before,
                body: String::new(),
                dropped_lines: 0,
                dropped_goroutines: 0,
                start: self.line_start,
                end,
                open: false,
            };
            if row.follow.is_some() || row.until.is_some() {
                self.current = Some(c);
            } else {
                self.keep(c);
            }
        }
        self.remember(text);
    }

    fn remember(&mut self, text: &str) {
        if self.ring.len() == RING {
            self.ring.pop_front();
        }
        self.ring.push_back(text.to_string());
    }

    fn keep(&mut self, c: Capture) {
        if self.first.len() < KEEP {
            self.first.push(c);
            return;
        }
        if self.last.len() == KEEP {
            self.last.pop_front();
        }
        self.last.push_back(c);
    }
}

fn append(c: &mut Capture, text: &str) {
    if c.body.len() + text.len() < BODY_CAP {
        c.body.push_str(text);
        c.body.push('\n');
    } else {
        c.dropped_lines += 1;
        if text.starts_with("goroutine ") {
            c.dropped_goroutines += 1;
        }
    }
}

fn memchr_newline(bytes: &[u8]) -> Option<usize> {
    bytes.iter().position(|&b| b == b'\n')
}
