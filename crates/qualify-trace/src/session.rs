//! What every format parser produces: one [`Session`] per file, a sequence of [`Step`]s (tool
//! calls with what they did, native test runs, errors, repairs) plus the facts around them
//! (agent, models, tokens, prompt digests, time span, how many events were understood).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::format::Format;

/// Token usage, summed over what the format records (absent fields stay `None`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tokens {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<u64>,
}

impl Tokens {
    pub fn is_empty(&self) -> bool {
        *self == Tokens::default()
    }

    pub fn add(&mut self, other: &Tokens) {
        let sum = |a: &mut Option<u64>, b: Option<u64>| {
            if let Some(b) = b {
                *a = Some(a.unwrap_or(0).saturating_add(b));
            }
        };
        sum(&mut self.input, other.input);
        sum(&mut self.output, other.output);
        sum(&mut self.cache_read, other.cache_read);
        sum(&mut self.cache_write, other.cache_write);
        sum(&mut self.reasoning, other.reasoning);
    }
}

/// The agent that wrote the session.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Agent {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

/// A prompt, kept only as a digest: its text never reaches a receipt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Prompt {
    pub sha256: String,
    pub chars: u64,
}

/// What a tool call did.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// A shell command line.
    Command(String),
    /// Files written or edited.
    Edit(Vec<String>),
    /// Documentation consulted: a URL fetched or a query searched.
    Doc(String),
    Other,
}

/// One tool call.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    pub tool: String,
    pub action: Action,
    /// Unix seconds when it was made.
    pub at: Option<f64>,
    pub duration: Option<f64>,
    pub exit_code: Option<i64>,
    /// The format's own error flag (`is_error`, a failed state, an error status).
    pub error: Option<bool>,
    /// What the tool returned, cut to [`MAX_OUTPUT`] (kept in memory to tell a command that
    /// never started from one that ran; never in the record).
    pub output: Option<String>,
    /// The person refused the call: it never ran.
    pub rejected: bool,
    /// A whole-file write's content (a script the session may run next).
    pub content: Option<String>,
}

/// How much of a tool's output a [`Call`] keeps: its head and its tail.
pub const MAX_OUTPUT: usize = 16 * 1024;

/// `text` cut to its first and last [`MAX_OUTPUT`]/2 bytes (on character boundaries).
pub fn excerpt(text: &str) -> String {
    if text.len() <= MAX_OUTPUT {
        return text.to_string();
    }
    let half = MAX_OUTPUT / 2;
    let mut head = half;
    while !text.is_char_boundary(head) {
        head -= 1;
    }
    let mut tail = text.len() - half;
    while !text.is_char_boundary(tail) {
        tail += 1;
    }
    format!("{}\n…\n{}", &text[..head], &text[tail..])
}

impl Call {
    pub fn new(tool: impl Into<String>, action: Action, at: Option<f64>) -> Call {
        Call {
            tool: tool.into(),
            action,
            at,
            duration: None,
            exit_code: None,
            error: None,
            output: None,
            rejected: false,
            content: None,
        }
    }

    /// Keep (an excerpt of) what the tool returned.
    pub fn set_output(&mut self, text: &str) {
        self.output = Some(excerpt(text));
    }

    /// `Some(true)` failed, `Some(false)` succeeded, `None` not recorded.
    pub fn failed(&self) -> Option<bool> {
        self.exit_code.map(|c| c != 0).or(self.error)
    }
}

/// One step of a session, in the order it happened.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    Call(Call),
    /// Files changed outside a tool call the parser counts (an opencode `patch` part, a
    /// native `edit` event).
    Edited(Vec<String>),
    /// A test run the trace recorded as such (the native format's `test_run`).
    TestRun {
        command: Option<String>,
        passed: Option<bool>,
        at: Option<f64>,
    },
    /// An error the trace recorded as such.
    Error,
    /// A repair the trace recorded as such.
    Repair {
        at: Option<f64>,
    },
    /// Another session begins in the same file (an evaluation's `output.jsonl` holds one per
    /// task): failures do not carry over, nor files its shell wrote.
    Boundary,
}

/// One file, parsed.
#[derive(Debug, Clone)]
pub struct Session {
    pub format: Format,
    /// Entries (lines, messages and parts, events, steps, spans) in the file.
    pub events: u64,
    /// Entries whose kind the parser knows (whether or not they carried anything it keeps).
    pub understood: u64,
    /// Entries of kinds the parser does not know, per kind.
    pub unknown: BTreeMap<String, u64>,
    pub agent: Option<Agent>,
    /// Model → calls (assistant turns, chat spans).
    pub models: BTreeMap<String, u64>,
    pub tokens: Tokens,
    pub prompts: Vec<Prompt>,
    pub steps: Vec<Step>,
    pub first: Option<f64>,
    pub last: Option<f64>,
    /// Entries without a readable time.
    pub untimed: u64,
    /// The working directory the session ran in, when recorded (edited paths are shown
    /// relative to it).
    pub cwd: Option<String>,
}

impl Session {
    pub fn new(format: Format) -> Session {
        Session {
            format,
            events: 0,
            understood: 0,
            unknown: BTreeMap::new(),
            agent: None,
            models: BTreeMap::new(),
            tokens: Tokens::default(),
            prompts: Vec::new(),
            steps: Vec::new(),
            first: None,
            last: None,
            untimed: 0,
            cwd: None,
        }
    }

    /// Count one entry: understood, or of the unknown kind `kind`.
    pub fn entry(&mut self, understood: bool, kind: &str, at: Option<f64>) {
        self.events += 1;
        if understood {
            self.understood += 1;
        } else {
            *self.unknown.entry(kind.to_string()).or_default() += 1;
        }
        match at {
            Some(t) => {
                self.first = Some(self.first.map_or(t, |f| f.min(t)));
                self.last = Some(self.last.map_or(t, |l| l.max(t)));
            }
            None => self.untimed += 1,
        }
    }

    pub fn model(&mut self, name: &str) {
        let name = name.trim();
        if !name.is_empty() && !name.starts_with('<') {
            *self.models.entry(name.to_string()).or_default() += 1;
        }
    }

    /// Keep a prompt as its digest (once per distinct text).
    pub fn prompt(&mut self, text: &str) {
        let text = text.trim();
        if text.is_empty() {
            return;
        }
        let sha256 = qualify_model::sha256_hex(text.as_bytes());
        if !self.prompts.iter().any(|p| p.sha256 == sha256) {
            self.prompts.push(Prompt {
                sha256,
                chars: text.chars().count() as u64,
            });
        }
    }

    pub fn call(&mut self, call: Call) {
        self.steps.push(Step::Call(call));
    }

    pub fn set_agent(&mut self, name: &str, version: Option<&str>) {
        if self.agent.is_none() || version.is_some() {
            self.agent = Some(Agent {
                name: name.to_string(),
                version: version.map(str::to_string),
            });
        }
    }
}

/// RFC 3339 (a missing offset is read as UTC) or a number of seconds since the Unix epoch.
pub fn seconds(v: &serde_json::Value) -> Option<f64> {
    if let Some(n) = v.as_f64() {
        return Some(n);
    }
    let t = humantime::parse_rfc3339_weak(v.as_str()?.trim()).ok()?;
    Some(t.duration_since(std::time::UNIX_EPOCH).ok()?.as_secs_f64())
}

/// `2026-11-30T00:00:00Z`.
pub fn rfc3339(secs: f64) -> String {
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_secs_f64(secs.max(0.0));
    humantime::format_rfc3339_seconds(t).to_string()
}

/// The text of a JSON value that may be a string or an array of `{type: text, text}` blocks.
pub fn text_of(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Array(items) => items
            .iter()
            .filter_map(|b| match b {
                serde_json::Value::String(s) => Some(s.as_str()),
                other => other.get("text").and_then(serde_json::Value::as_str),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}
