//! The normalised development record: one per `--trace` (however many files and formats it
//! came from). Built from the parsed sessions and the spec: every command line parsed as a shell
//! parses it, its simple commands classified (test, build, the artifact, its functional check)
//! with a three-valued result each (passed, failed, not recorded) — or none when it never
//! started (not found, not executable, a `cd` before it failed) —, redacted; errors and the
//! repairs after them (a failed command, then an edit, then the same kind of command passing);
//! files edited (a failed or refused edit is an error, not an edit); documentation consulted,
//! models, tools, token usage, prompt digests, the files skipped or cut, and the development
//! coverage of the operating region. This is what the receipt keeps.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::classify::{self, Kind, Known};
use crate::coverage::{Coverage, SpecView, Template};
use crate::format::Format;
use crate::session::{Action, Agent, Call, Prompt, Session, Step, Tokens, rfc3339};
use crate::shell::{Parsed, Shell, Status};

/// How many commands the record keeps; test, build, artifact and functional runs first.
pub const MAX_COMMANDS: usize = 200;
/// How many characters of a command the record keeps.
pub const MAX_COMMAND_CHARS: usize = 300;
/// How many documentation entries and repairs the record keeps.
const MAX_LISTED: usize = 50;

/// One file of the trace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Source {
    pub path: String,
    pub sha256: String,
    pub format: Format,
    /// Entries in the file, and how many of them are of kinds the reader knows.
    pub events: u64,
    pub understood: u64,
    /// Entries of unknown kinds, per kind (counted, not interpreted).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub unknown: BTreeMap<String, u64>,
    /// The last entry was incomplete (a session still being written) and was not read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cut: Option<Cut>,
}

/// The incomplete end of a file that was not read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cut {
    /// The line the incomplete entry starts on.
    pub line: usize,
    /// Its length in bytes.
    pub bytes: u64,
}

/// Why a file was not read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SkipReason {
    /// Found in a directory, and not a session of any format (a tool's saved output, a
    /// metadata file): counted, not read.
    NotATrace,
    /// A session that could not be read (malformed, not UTF-8): reported.
    Unreadable,
}

/// A file of the trace that was not read, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Skipped {
    pub path: String,
    pub reason: SkipReason,
    /// Where and what (`3:58: codex (…): expected value`).
    pub message: String,
}

/// A model and how many calls (assistant turns, chat spans) used it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelUse {
    pub name: String,
    pub calls: u64,
}

/// One recorded command.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Command {
    /// As recorded, secrets redacted, cut at [`MAX_COMMAND_CHARS`].
    pub command: String,
    pub tool: String,
    pub kind: Kind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i64>,
    /// The format's error flag, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_seconds: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<String>,
    /// How the command of its kind (the test runner, the artifact, …) ended; the line's exit
    /// status is not its own when it ran before the end of a pipeline or a `;` list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<Outcome>,
    /// Why it never started, when it did not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_started: Option<String>,
}

impl Command {
    /// `Some(true)` failed, `Some(false)` passed, `None` not recorded: the classified
    /// command's outcome when recorded (older records: the line's status).
    pub fn failed(&self) -> Option<bool> {
        match self.outcome {
            Some(o) => o.failed(),
            None => self.exit_code.map(|c| c != 0).or(self.error),
        }
    }
}

/// How one run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Passed,
    Failed,
    /// The trace does not say.
    Unknown,
    /// It never started (not found, not executable, a `cd` before it failed).
    NotStarted,
}

impl Outcome {
    fn of(failed: Option<bool>) -> Outcome {
        match failed {
            Some(true) => Outcome::Failed,
            Some(false) => Outcome::Passed,
            None => Outcome::Unknown,
        }
    }

    /// `Some(true)` failed (or never started), `Some(false)` passed, `None` not recorded.
    pub fn failed(self) -> Option<bool> {
        match self {
            Outcome::Passed => Some(false),
            Outcome::Failed | Outcome::NotStarted => Some(true),
            Outcome::Unknown => None,
        }
    }
}

/// Runs of one kind and how they ended.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunCount {
    /// Runs that started: passed + failed + unknown.
    pub runs: u64,
    pub passed: u64,
    pub failed: u64,
    /// Runs whose result the trace does not record.
    pub unknown: u64,
    /// Attempts that never started (not found, not executable, a `cd` before it failed).
    #[serde(default)]
    pub not_started: u64,
}

impl RunCount {
    fn add(&mut self, outcome: Outcome) {
        if outcome == Outcome::NotStarted {
            self.not_started += 1;
            return;
        }
        self.runs += 1;
        match outcome {
            Outcome::Failed => self.failed += 1,
            Outcome::Passed => self.passed += 1,
            _ => self.unknown += 1,
        }
    }

    /// `3 test runs (1 passed, 1 failed, 1 not recorded)`, `2 test runs, results not
    /// recorded`: what is known and what is not, never a count of failures that hides unknowns.
    pub fn describe(&self, one: &str, many: &str) -> String {
        let mut text = format!("{} {}", self.runs, if self.runs == 1 { one } else { many });
        let attempts = (self.not_started > 0)
            .then(|| format!("{} attempt(s) never started", self.not_started));
        if self.runs > 0 && self.unknown == self.runs {
            text.push_str(", results not recorded");
            if let Some(a) = attempts {
                text.push_str(&format!(" ({a})"));
            }
            return text;
        }
        let mut parts = Vec::new();
        if self.runs > 0 {
            parts.push(format!("{} passed", self.passed));
            parts.push(format!("{} failed", self.failed));
            if self.unknown > 0 {
                parts.push(format!("{} not recorded", self.unknown));
            }
        }
        let mut inside = parts.join(", ");
        if let Some(a) = attempts {
            if !inside.is_empty() {
                inside.push_str("; ");
            }
            inside.push_str(&a);
        }
        if !inside.is_empty() {
            text.push_str(&format!(" ({inside})"));
        }
        text
    }
}

/// Test, build, artifact and functional-check runs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Runs {
    /// Test runners and the spec's functional check.
    pub test: RunCount,
    pub build: RunCount,
    /// The artifact itself, run by hand.
    pub artifact: RunCount,
    /// The spec's `[functional] command` (also counted in `test`).
    pub functional: RunCount,
}

/// An error met and the repair after it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Repair {
    /// The command that failed (redacted), or what the trace recorded.
    pub error: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<String>,
    /// Files edited between the failure and the passing re-run.
    pub edited: Vec<String>,
    /// The command whose passing re-run closed it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fixed_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fixed_at: Option<String>,
}

/// Documentation consulted: a URL fetched or a query searched, and the tool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Doc {
    pub tool: String,
    pub target: String,
}

/// The development record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DevRecord {
    pub sources: Vec<Source>,
    /// Entries over all files, and how many were understood.
    pub events: u64,
    pub understood: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub span_seconds: Option<f64>,
    /// Entries without a readable time.
    pub untimed: u64,
    pub agents: Vec<Agent>,
    pub models: Vec<ModelUse>,
    /// Tool calls per tool.
    pub tools: BTreeMap<String, u64>,
    pub tool_calls: u64,
    /// Tool calls that failed (an error flag or a non-zero exit status).
    pub tool_errors: u64,
    /// Commands recorded (all of them) and the ones kept in `commands`.
    pub commands_total: u64,
    pub commands: Vec<Command>,
    /// Commands whose text had a secret redacted.
    pub redacted_commands: u64,
    pub runs: Runs,
    pub files_edited: Vec<String>,
    /// Edits that failed or that the person refused: errors, not edits.
    #[serde(default)]
    pub edits_failed: u64,
    /// Edits whose result the trace does not hold although the format records results (a
    /// session cut short): not known to have landed, not in `files_edited`.
    #[serde(default)]
    pub edits_unconfirmed: u64,
    /// Tool calls the person refused (they never ran).
    #[serde(default)]
    pub rejected: u64,
    /// Command lines a shell would refuse (unterminated quotes, syntax errors): they ran
    /// nothing.
    #[serde(default)]
    pub unparsed_commands: u64,
    /// Errors met: failed commands and tool calls, failed or refused edits, and error events.
    pub errors: u64,
    pub repairs: Vec<Repair>,
    pub docs: Vec<Doc>,
    /// Prompts, as digests only.
    pub prompts: Vec<Prompt>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<Tokens>,
    pub coverage: Coverage,
    /// Files not read: not sessions (found in a directory), or unreadable.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<Skipped>,
}

impl DevRecord {
    /// The formats the files were in.
    pub fn formats(&self) -> Vec<Format> {
        let set: BTreeSet<Format> = self.sources.iter().map(|s| s.format).collect();
        set.into_iter().collect()
    }

    /// Every entry of every file was of a kind the reader knows.
    pub fn read_in_full(&self) -> bool {
        self.understood == self.events
    }

    /// Files that could not be read, and files read only up to an incomplete last entry.
    pub fn unreadable(&self) -> usize {
        self.skipped
            .iter()
            .filter(|s| s.reason == SkipReason::Unreadable)
            .count()
    }

    /// Files whose incomplete last entry was not read.
    pub fn cut(&self) -> Vec<(&str, &Cut)> {
        self.sources
            .iter()
            .filter_map(|s| s.cut.as_ref().map(|c| (s.path.as_str(), c)))
            .collect()
    }

    /// Classified runs (test, build, artifact) whose result the trace records, of those that
    /// started: `(known, all)`.
    pub fn results_known(&self) -> (u64, u64) {
        let r = &self.runs;
        let all = r.test.runs + r.build.runs + r.artifact.runs;
        let unknown = r.test.unknown + r.build.unknown + r.artifact.unknown;
        (all - unknown, all)
    }

    /// The share of entries understood, in percent (100 for an empty trace).
    pub fn understood_percent(&self) -> f64 {
        if self.events == 0 {
            100.0
        } else {
            100.0 * self.understood as f64 / self.events as f64
        }
    }

    /// Build the record of `sessions` (one per file, with its source) against the spec.
    pub fn build(sessions: Vec<(Source, Session)>, spec: &SpecView) -> DevRecord {
        DevRecord::build_with(sessions, Vec::new(), spec)
    }

    /// [`DevRecord::build`], with the files that were not read.
    pub fn build_with(
        sessions: Vec<(Source, Session)>,
        skipped: Vec<Skipped>,
        spec: &SpecView,
    ) -> DevRecord {
        let template = Template::new(spec);
        let known = Known {
            functional: spec.functional.as_deref().and_then(Known::words_of),
            build: spec.build.as_deref().and_then(Known::words_of),
        };
        let mut b = Builder {
            template: &template,
            known: &known,
            coverage: Coverage::new(&template, &spec.axes),
            commands: Vec::new(),
            runs: Runs::default(),
            files: BTreeSet::new(),
            errors: 0,
            repairs: Vec::new(),
            docs: Vec::new(),
            tools: BTreeMap::new(),
            tool_calls: 0,
            tool_errors: 0,
            redacted: 0,
            edits_failed: 0,
            edits_unconfirmed: 0,
            rejected: 0,
            unparsed: 0,
        };
        let mut sources = Vec::new();
        let mut agents: BTreeSet<Agent> = BTreeSet::new();
        let mut models: BTreeMap<String, u64> = BTreeMap::new();
        let mut tokens = Tokens::default();
        let mut prompts: Vec<Prompt> = Vec::new();
        let (mut first, mut last): (Option<f64>, Option<f64>) = (None, None);
        let (mut events, mut understood, mut untimed) = (0, 0, 0);
        for (source, session) in sessions {
            events += session.events;
            understood += session.understood;
            untimed += session.untimed;
            if let Some(f) = session.first {
                first = Some(first.map_or(f, |x| x.min(f)));
            }
            if let Some(l) = session.last {
                last = Some(last.map_or(l, |x| x.max(l)));
            }
            agents.extend(session.agent.clone());
            for (m, n) in &session.models {
                *models.entry(m.clone()).or_default() += n;
            }
            tokens.add(&session.tokens);
            for p in &session.prompts {
                if !prompts.iter().any(|q| q.sha256 == p.sha256) {
                    prompts.push(p.clone());
                }
            }
            b.session(&session);
            sources.push(source);
        }
        let mut models: Vec<ModelUse> = models
            .into_iter()
            .map(|(name, calls)| ModelUse { name, calls })
            .collect();
        models.sort_by(|a, b| b.calls.cmp(&a.calls).then(a.name.cmp(&b.name)));
        let commands_total = b.commands.len() as u64;
        DevRecord {
            sources,
            events,
            understood,
            first: first.map(rfc3339),
            last: last.map(rfc3339),
            span_seconds: first.zip(last).map(|(f, l)| l - f),
            untimed,
            agents: agents.into_iter().collect(),
            models,
            tools: b.tools,
            tool_calls: b.tool_calls,
            tool_errors: b.tool_errors,
            commands_total,
            commands: keep_commands(b.commands),
            redacted_commands: b.redacted,
            runs: b.runs,
            files_edited: b.files.into_iter().collect(),
            edits_failed: b.edits_failed,
            edits_unconfirmed: b.edits_unconfirmed,
            rejected: b.rejected,
            unparsed_commands: b.unparsed,
            errors: b.errors,
            repairs: b.repairs,
            docs: b.docs,
            prompts,
            tokens: (!tokens.is_empty()).then_some(tokens),
            coverage: b.coverage,
            skipped,
        }
    }
}

/// The first [`MAX_COMMANDS`], preferring test, build, artifact and functional runs.
fn keep_commands(all: Vec<Command>) -> Vec<Command> {
    if all.len() <= MAX_COMMANDS {
        return all;
    }
    let classified = all.iter().filter(|c| c.kind != Kind::Other).count();
    let mut others_left = MAX_COMMANDS.saturating_sub(classified);
    let mut kept = Vec::with_capacity(MAX_COMMANDS);
    for c in all {
        if kept.len() == MAX_COMMANDS {
            break;
        }
        if c.kind == Kind::Other {
            if others_left == 0 {
                continue;
            }
            others_left -= 1;
        }
        kept.push(c);
    }
    kept
}

/// A failure waiting for its repair.
struct Open {
    key: String,
    error: String,
    at: Option<String>,
    edited: Vec<String>,
}

struct Builder<'a> {
    template: &'a Template,
    known: &'a Known,
    coverage: Coverage,
    commands: Vec<Command>,
    runs: Runs,
    files: BTreeSet<String>,
    errors: u64,
    repairs: Vec<Repair>,
    docs: Vec<Doc>,
    tools: BTreeMap<String, u64>,
    tool_calls: u64,
    tool_errors: u64,
    redacted: u64,
    edits_failed: u64,
    edits_unconfirmed: u64,
    rejected: u64,
    unparsed: u64,
}

/// A command line's classification: its kind, the key a repair is matched by, how the command
/// of that kind ended, and why it never started.
struct Classified {
    kind: Kind,
    key: String,
    outcome: Outcome,
    not_started: Option<String>,
}

impl Builder<'_> {
    fn session(&mut self, session: &Session) {
        let cwd = session.cwd.as_deref().map(|c| c.trim_end_matches('/'));
        let relative = |p: &str| -> String {
            match cwd
                .and_then(|c| p.strip_prefix(c))
                .and_then(|r| r.strip_prefix('/'))
            {
                Some(r) if !r.is_empty() => r.to_string(),
                _ => p.to_string(),
            }
        };
        let mut shell = Shell::default();
        let mut open: Vec<Open> = Vec::new();
        let edit = |open: &mut Vec<Open>, files: &mut BTreeSet<String>, paths: &[String]| {
            for p in paths {
                let p = relative(p);
                for o in open.iter_mut() {
                    if !o.edited.contains(&p) {
                        o.edited.push(p.clone());
                    }
                }
                files.insert(p);
            }
        };
        for step in &session.steps {
            match step {
                Step::Call(call) => {
                    *self.tools.entry(call.tool.clone()).or_default() += 1;
                    self.tool_calls += 1;
                    let failed = call.failed();
                    if failed == Some(true) {
                        self.tool_errors += 1;
                    }
                    if call.rejected {
                        self.rejected += 1;
                    }
                    match &call.action {
                        Action::Command(text) => {
                            let at = call.at.map(rfc3339);
                            let parsed = shell.parse(text);
                            if parsed.unparsed {
                                self.unparsed += 1;
                            }
                            let c = self.command(&parsed, call, None);
                            for w in &parsed.writes {
                                // A file of the workdir written by the shell is an edit too
                                // (scratch files elsewhere, `/tmp/…`, are not).
                                // Resolved against a `cd` the writer ran after.
                                let dir = w.by.and_then(|i| parsed.commands.get(i)).and_then(|c| {
                                    c.after.iter().rev().find_map(|j| {
                                        let d = parsed.commands.get(*j)?;
                                        (d.program() == Some("cd"))
                                            .then(|| d.words.get(1).cloned())
                                            .flatten()
                                    })
                                });
                                let path = match dir {
                                    Some(d) if !w.path.starts_with('/') => {
                                        format!("{}/{}", d.trim_end_matches('/'), w.path)
                                    }
                                    _ => w.path.clone(),
                                };
                                let inside = !path.starts_with('/')
                                    || cwd.is_some_and(|c| path.starts_with(&format!("{c}/")));
                                let writer_failed = match w.by.and_then(|i| parsed.commands.get(i))
                                {
                                    Some(c) => c.status.result(failed),
                                    None => failed,
                                };
                                if writer_failed != Some(true) && inside {
                                    edit(&mut open, &mut self.files, std::slice::from_ref(&path));
                                }
                            }
                            self.record(text, &call.tool, &c, call, at.clone());
                            self.outcome(&mut open, c.key, text, c.outcome.failed(), at);
                        }
                        Action::Edit(paths) => {
                            if failed == Some(true) || call.rejected {
                                self.edits_failed += 1;
                                self.errors += 1;
                            } else if failed.is_none() && session.format.records_results() {
                                // The format records each edit's result, and this one has
                                // none (the session was cut): not known to have landed.
                                self.edits_unconfirmed += 1;
                            } else {
                                if let (Some(content), [path]) = (&call.content, paths.as_slice()) {
                                    shell.wrote(path, content);
                                }
                                edit(&mut open, &mut self.files, paths);
                            }
                        }
                        Action::Doc(target) => {
                            if failed == Some(true) {
                                self.errors += 1;
                            }
                            let (target, _) = qualify_trust::fingerprint::redact_command(target);
                            let doc = Doc {
                                tool: call.tool.clone(),
                                target: cut(&target),
                            };
                            if self.docs.len() < MAX_LISTED && !self.docs.contains(&doc) {
                                self.docs.push(doc);
                            }
                        }
                        Action::Other => {
                            if failed == Some(true) {
                                self.errors += 1;
                            }
                        }
                    }
                }
                Step::Edited(paths) => edit(&mut open, &mut self.files, paths),
                Step::TestRun {
                    command,
                    passed,
                    at,
                } => {
                    let at = at.map(rfc3339);
                    let failed = passed.map(|p| !p);
                    let mut call = Call::new("test_run", Action::Other, None);
                    call.error = failed;
                    match command {
                        Some(text) => {
                            let parsed = shell.parse(text);
                            let c = self.command(&parsed, &call, Some(Kind::Test));
                            self.record(text, "test_run", &c, &call, at.clone());
                            self.outcome(&mut open, c.key, text, c.outcome.failed(), at);
                        }
                        None => {
                            self.runs.test.add(Outcome::of(failed));
                            self.outcome(&mut open, "test:".into(), "(test run)", failed, at);
                        }
                    }
                }
                Step::Error => self.errors += 1,
                Step::Boundary => {
                    open.clear();
                    shell = Shell::default();
                }
                Step::Repair { at } => {
                    if self.repairs.len() < MAX_LISTED {
                        self.repairs.push(Repair {
                            error: "(a repair the trace recorded)".to_string(),
                            at: at.map(rfc3339),
                            edited: Vec::new(),
                            fixed_by: None,
                            fixed_at: None,
                        });
                    }
                }
            }
        }
    }

    /// Classify a parsed command line and count its runs of the artifact for coverage. The
    /// most significant simple command gives the line its kind, and its own result: the line's
    /// status only when the line's status is its own ([`Status`]); `at_least` is a kind the
    /// trace itself gave the line (a native `test_run`), whose result is the line's.
    fn command(&mut self, parsed: &Parsed, call: &Call, at_least: Option<Kind>) -> Classified {
        let line_failed = call.failed();
        let mut best: Option<(Kind, usize)> = None;
        let mut artifact = false;
        let mut started_of: Vec<Option<String>> = Vec::with_capacity(parsed.commands.len());
        for (i, simple) in parsed.commands.iter().enumerate() {
            if simple.conditional {
                // In a branch the trace cannot tell was taken: not a run, not counted as one.
                let anchor = self.template.anchor_word(simple);
                if anchor.is_some() && not_started(parsed, i, call, anchor).is_none() {
                    self.coverage.conditional_runs += 1;
                }
                started_of.push(None);
                continue;
            }
            let k = classify::kind(simple, self.known);
            let runs = if k == Kind::Functional {
                Vec::new()
            } else {
                self.template.runs(simple)
            };
            let k = if runs.is_empty() { k } else { Kind::Artifact };
            let why = if k == Kind::Other {
                None
            } else {
                let anchor = self.template.anchor_word(simple);
                not_started(parsed, i, call, anchor)
            };
            let result = simple.status.result(line_failed);
            if k == Kind::Functional && why.is_none() {
                self.coverage.functional_runs += 1;
            }
            for r in &runs {
                artifact = true;
                match &why {
                    Some(w) => self.coverage.attempt(w),
                    None => self.coverage.add(r, result),
                }
            }
            started_of.push(why);
            // The most significant kind; of equals, the later (its status is more often the
            // line's).
            let better = match best {
                None => k != Kind::Other,
                Some((b, _)) => k <= b,
            };
            if better {
                best = Some((k, i));
            }
        }
        if !artifact && best.map(|b| b.0) != Some(Kind::Functional) {
            self.coverage.unmatched_commands += 1;
        }
        let line_kind = at_least.unwrap_or(Kind::Other);
        match best {
            Some((k, i)) if at_least.is_none_or(|a| k <= a) => {
                let simple = &parsed.commands[i];
                let why = started_of[i].clone();
                let outcome = match (&why, at_least) {
                    (Some(_), _) => Outcome::NotStarted,
                    (None, Some(_)) => Outcome::of(line_failed),
                    (None, None) => Outcome::of(simple.status.result(line_failed)),
                };
                Classified {
                    kind: k,
                    key: format!("{}:{}", k.as_str(), simple.program().unwrap_or("")),
                    outcome,
                    not_started: why,
                }
            }
            _ => {
                let program = parsed
                    .commands
                    .last()
                    .and_then(|s| s.program())
                    .unwrap_or("");
                Classified {
                    kind: line_kind,
                    key: format!("{}:{program}", line_kind.as_str()),
                    outcome: Outcome::of(line_failed),
                    not_started: None,
                }
            }
        }
    }

    fn record(&mut self, text: &str, tool: &str, c: &Classified, call: &Call, at: Option<String>) {
        let (redacted, changed) = qualify_trust::fingerprint::redact_command(text);
        if changed {
            self.redacted += 1;
        }
        match c.kind {
            Kind::Functional => {
                self.runs.functional.add(c.outcome);
                self.runs.test.add(c.outcome);
            }
            Kind::Test => self.runs.test.add(c.outcome),
            Kind::Build => self.runs.build.add(c.outcome),
            Kind::Artifact => self.runs.artifact.add(c.outcome),
            Kind::Other => {}
        }
        self.commands.push(Command {
            command: cut(&redacted),
            tool: tool.to_string(),
            kind: c.kind,
            exit_code: call.exit_code,
            error: call.error,
            duration_seconds: call.duration,
            at,
            outcome: Some(c.outcome),
            not_started: c.not_started.clone(),
        });
    }

    /// A failure opens an error; a pass after an edit closes the open errors of its key as
    /// repairs (a pass without an edit in between closes them as gone by themselves).
    fn outcome(
        &mut self,
        open: &mut Vec<Open>,
        key: String,
        text: &str,
        failed: Option<bool>,
        at: Option<String>,
    ) {
        let (shown, _) = qualify_trust::fingerprint::redact_command(text);
        match failed {
            Some(true) => {
                self.errors += 1;
                open.push(Open {
                    key,
                    error: cut(&shown),
                    at,
                    edited: Vec::new(),
                });
            }
            Some(false) => {
                let (same, rest): (Vec<Open>, Vec<Open>) =
                    open.drain(..).partition(|o| o.key == key);
                *open = rest;
                for o in same.into_iter().filter(|o| !o.edited.is_empty()) {
                    if self.repairs.len() < MAX_LISTED {
                        self.repairs.push(Repair {
                            error: o.error,
                            at: o.at,
                            edited: o.edited,
                            fixed_by: Some(cut(&shown)),
                            fixed_at: at.clone(),
                        });
                    }
                }
            }
            None => {}
        }
    }
}

fn cut(text: &str) -> String {
    let text = text.trim();
    if text.chars().count() <= MAX_COMMAND_CHARS {
        return text.to_string();
    }
    let mut s: String = text.chars().take(MAX_COMMAND_CHARS).collect();
    s.push('…');
    s
}

/// Why the simple command `i` of a line never started, from what the shell said and the line's
/// status: the shell reporting its program (or the script `anchor` it runs) not found or not
/// executable; a `cd` it depended on (`cd x && ./t`) failing; or exit status 126/127 when its
/// status is the line's.
fn not_started(parsed: &Parsed, i: usize, call: &Call, anchor: Option<&str>) -> Option<String> {
    let simple = &parsed.commands[i];
    let text = call.output.as_deref().unwrap_or("");
    let mut names: Vec<&str> = simple
        .words
        .first()
        .map(String::as_str)
        .into_iter()
        .collect();
    names.extend(anchor);
    for line in text.lines() {
        for name in &names {
            if name.is_empty() {
                continue;
            }
            // `bash: ./t: No such file or directory`, `sh: 1: t: not found`, `zsh: command not
            // found: t` — the name a whole token (`main.go: no such file` is not about `go`).
            let said = |msg: &str| {
                mentions(line, &format!("{name}: {msg}"))
                    || line.ends_with(&format!(": {msg}: {name}"))
            };
            if said("command not found") || said("not found") {
                return Some("command not found".into());
            }
            if said("No such file or directory") || said("no such file or directory") {
                return Some("No such file or directory".into());
            }
            if said("Permission denied") || said("permission denied") {
                return Some("Permission denied".into());
            }
            if (line.contains("can't open file") || line.contains("Cannot find module"))
                && line.contains(name)
            {
                return Some("No such file or directory".into());
            }
        }
    }
    // A shell error naming a command it depended on (`cd x && ./t`, `echo > dir/f && ./t`):
    // the chain stopped there.
    if call.failed() == Some(true) {
        let shell_error = |l: &str| {
            [
                "No such file or directory",
                "no such file or directory",
                "can't cd",
                "Not a directory",
                "Permission denied",
                "command not found",
                ": not found",
            ]
            .iter()
            .any(|m| l.contains(m))
        };
        for j in &simple.after {
            let Some(before) = parsed.commands.get(*j) else {
                continue;
            };
            // The words a shell error about it would name: its operands (a `cd`'s directory,
            // a program) and the files it redirects to, never its options.
            let named = |l: &str| {
                let program = before.words.first().is_some_and(|p| {
                    l.contains(&format!("{p}: command not found"))
                        || l.contains(&format!("{p}: not found"))
                });
                program
                    || before
                        .words
                        .iter()
                        .skip(1)
                        .chain(&before.redirects)
                        .filter(|w| w.len() > 1 && !w.starts_with('-'))
                        .any(|w| mentions(l, w))
            };
            if text.lines().any(|l| shell_error(l) && named(l)) {
                return Some(match before.program() {
                    Some("cd") => "a `cd` before it failed".into(),
                    _ => format!(
                        "`{}` before it failed",
                        before.program().unwrap_or("a command")
                    ),
                });
            }
        }
    }
    match (simple.status, call.exit_code) {
        (Status::Decides, Some(127)) => Some("exit status 127 (not found)".into()),
        (Status::Decides, Some(126)) => Some("exit status 126 (not executable)".into()),
        _ => None,
    }
}

/// `line` names `word` as a whole token (bounded by the line's ends, blanks, quotes or `:`), so a
/// directory is not found inside a longer path.
fn mentions(line: &str, word: &str) -> bool {
    let edge = |c: Option<char>| {
        c.is_none_or(|c| c.is_whitespace() || matches!(c, ':' | '\'' | '"' | '`'))
    };
    line.match_indices(word).any(|(i, _)| {
        edge(line[..i].chars().next_back()) && edge(line[i + word.len()..].chars().next())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::Call;

    fn why(line: &str, output: &str, exit: Option<i64>) -> Vec<Option<String>> {
        let parsed = Shell::default().parse(line);
        let mut call = Call::new("Bash", Action::Command(line.into()), None);
        call.exit_code = exit;
        call.set_output(output);
        (0..parsed.commands.len())
            .map(|i| not_started(&parsed, i, &call, None))
            .collect()
    }

    #[test]
    fn run_counts_say_what_is_known_and_what_is_not() {
        let c = |runs, passed, failed, unknown, not_started| RunCount {
            runs,
            passed,
            failed,
            unknown,
            not_started,
        };
        let d = |r: RunCount| r.describe("test run", "test runs");
        assert_eq!(d(c(0, 0, 0, 0, 0)), "0 test runs");
        assert_eq!(d(c(2, 0, 0, 2, 0)), "2 test runs, results not recorded");
        assert_eq!(
            d(c(3, 1, 1, 1, 0)),
            "3 test runs (1 passed, 1 failed, 1 not recorded)"
        );
        assert_eq!(
            d(c(1, 1, 0, 0, 2)),
            "1 test run (1 passed, 0 failed; 2 attempt(s) never started)"
        );
        assert_eq!(
            d(c(0, 0, 0, 0, 3)),
            "0 test runs (3 attempt(s) never started)"
        );
    }

    #[test]
    fn a_command_never_started_only_when_the_shell_says_so_about_it() {
        let nf = Some("No such file or directory".to_string());
        assert_eq!(
            why(
                "./t --threads 2",
                "/bin/bash: line 1: ./t: No such file or directory",
                Some(127)
            ),
            vec![nf.clone()]
        );
        assert_eq!(
            why("t 1", "zsh: command not found: t", Some(127)),
            vec![Some("command not found".into())]
        );
        assert_eq!(
            why("ponyc x.pony", "sh: 1: ponyc: not found", Some(127)),
            vec![Some("command not found".into())]
        );
        // A message about another file, or from the program itself, is not about it.
        assert_eq!(
            why(
                "go test ./...",
                "    Output: stat ./cmd/entire/main.go: no such file or directory",
                Some(1)
            ),
            vec![None]
        );
        // A failed `cd` before it in an `&&` chain: it never ran; with `;` it ran elsewhere.
        assert_eq!(
            why(
                "cd /nope && ./t 1",
                "bash: cd: /nope: No such file or directory",
                Some(1)
            ),
            vec![None, Some("a `cd` before it failed".into())]
        );
        assert_eq!(
            why(
                "cd /nope; ./t 1",
                "bash: cd: /nope: No such file or directory",
                Some(0)
            ),
            vec![None, None]
        );
        // Exit 127 tells only about the command whose status is the line's.
        assert_eq!(
            why("./t 1 && ./missing", "", Some(127)),
            vec![None, Some("exit status 127 (not found)".into())]
        );
    }
}
