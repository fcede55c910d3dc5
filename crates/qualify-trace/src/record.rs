//! The normalised development record: one per `--trace` (however many files and formats it
//! came from). Built from the parsed sessions and the spec: commands classified (test, build,
//! the artifact, its functional check) and redacted, errors and the repairs after them (a
//! failed command, then an edit, then the same kind of command passing), files edited,
//! documentation consulted, models, tools, token usage, prompt digests, and the development
//! coverage of the operating region. This is what the receipt keeps.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::classify::{self, Kind, Known};
use crate::coverage::{Coverage, SpecView, Template};
use crate::format::Format;
use crate::session::{Action, Agent, Prompt, Session, Step, Tokens, rfc3339};
use crate::shell::{basename, simple_commands};

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
}

impl Command {
    /// `Some(true)` failed, `Some(false)` passed, `None` not recorded.
    pub fn failed(&self) -> Option<bool> {
        self.exit_code.map(|c| c != 0).or(self.error)
    }
}

/// Runs of one kind and how they ended.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunCount {
    pub runs: u64,
    pub passed: u64,
    pub failed: u64,
    /// Runs whose status the trace does not record.
    pub unknown: u64,
}

impl RunCount {
    fn add(&mut self, failed: Option<bool>) {
        self.runs += 1;
        match failed {
            Some(true) => self.failed += 1,
            Some(false) => self.passed += 1,
            None => self.unknown += 1,
        }
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
    /// Errors met: failed commands and tool calls, and error events.
    pub errors: u64,
    pub repairs: Vec<Repair>,
    pub docs: Vec<Doc>,
    /// Prompts, as digests only.
    pub prompts: Vec<Prompt>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<Tokens>,
    pub coverage: Coverage,
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
            errors: b.errors,
            repairs: b.repairs,
            docs: b.docs,
            prompts,
            tokens: (!tokens.is_empty()).then_some(tokens),
            coverage: b.coverage,
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
                    match &call.action {
                        Action::Command(text) => {
                            let at = call.at.map(rfc3339);
                            let (kind, key) = self.command(text, None);
                            self.record(text, &call.tool, kind, call, at.clone());
                            self.outcome(&mut open, kind, key, text, failed, at);
                        }
                        Action::Edit(paths) => edit(&mut open, &mut self.files, paths),
                        Action::Doc(target) => {
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
                    match command {
                        Some(text) => {
                            let (kind, key) = self.command(text, Some(Kind::Test));
                            let mut call =
                                crate::session::Call::new("test_run", Action::Other, None);
                            call.error = failed;
                            self.record(text, "test_run", kind, &call, at.clone());
                            self.outcome(&mut open, kind, key, text, failed, at);
                        }
                        None => {
                            self.runs.test.add(failed);
                            self.outcome(
                                &mut open,
                                Kind::Test,
                                "test".into(),
                                "(test run)",
                                failed,
                                at,
                            );
                        }
                    }
                }
                Step::Error => self.errors += 1,
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

    /// Classify a command line (and count its runs of the artifact for coverage): its kind
    /// and the key a repair is matched by.
    fn command(&mut self, text: &str, at_least: Option<Kind>) -> (Kind, String) {
        let mut kind = at_least.unwrap_or(Kind::Other);
        let mut key = String::new();
        let mut artifact = false;
        for simple in simple_commands(text) {
            let k = classify::kind(&simple, self.known);
            let runs = if k == Kind::Functional {
                self.coverage.functional_runs += 1;
                Vec::new()
            } else {
                self.template.runs(&simple)
            };
            let k = if runs.is_empty() { k } else { Kind::Artifact };
            for r in &runs {
                self.coverage.add(r);
                artifact = true;
            }
            if k < kind || key.is_empty() && k == kind && k != Kind::Other {
                kind = k;
                key = format!(
                    "{}:{}",
                    k.as_str(),
                    simple.program().map(basename).unwrap_or("")
                );
            }
        }
        if !artifact && kind != Kind::Functional {
            self.coverage.unmatched_commands += 1;
        }
        if key.is_empty() {
            key = format!(
                "{}:{}",
                kind.as_str(),
                text.split_whitespace().next().unwrap_or("")
            );
        }
        (kind, key)
    }

    fn record(
        &mut self,
        text: &str,
        tool: &str,
        kind: Kind,
        call: &crate::session::Call,
        at: Option<String>,
    ) {
        let (redacted, changed) = qualify_trust::fingerprint::redact_command(text);
        if changed {
            self.redacted += 1;
        }
        let failed = call.failed();
        match kind {
            Kind::Functional => {
                self.runs.functional.add(failed);
                self.runs.test.add(failed);
            }
            Kind::Test => self.runs.test.add(failed),
            Kind::Build => self.runs.build.add(failed),
            Kind::Artifact => self.runs.artifact.add(failed),
            Kind::Other => {}
        }
        self.commands.push(Command {
            command: cut(&redacted),
            tool: tool.to_string(),
            kind,
            exit_code: call.exit_code,
            error: call.error,
            duration_seconds: call.duration,
            at,
        });
    }

    /// A failure opens an error; a pass after an edit closes the open errors of its key as
    /// repairs (a pass without an edit in between closes them as gone by themselves).
    fn outcome(
        &mut self,
        open: &mut Vec<Open>,
        _kind: Kind,
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
