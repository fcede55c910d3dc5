//! The formats qualify reads, their names (`--trace-format`), and detection by content: a JSON
//! document is told by its top-level keys, a JSON Lines file by its first entries' shape.

use std::fmt;
use std::str::FromStr;

use qualify_model::ParseError;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A development trace format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Format {
    /// Claude Code session transcripts (JSON Lines).
    #[serde(rename = "claude-code")]
    ClaudeCode,
    /// OpenAI Codex CLI rollouts (JSON Lines of `{timestamp, type, payload}`).
    #[serde(rename = "codex")]
    Codex,
    /// `opencode export` (one JSON document).
    #[serde(rename = "opencode")]
    OpenCode,
    /// OpenHands trajectories (a JSON array of events).
    #[serde(rename = "openhands")]
    OpenHands,
    /// SWE-agent `.traj` files (one JSON document).
    #[serde(rename = "swe-agent")]
    SweAgent,
    /// OpenTelemetry GenAI spans as OTLP JSON.
    #[serde(rename = "otel")]
    Otel,
    /// qualify's own JSON Lines events (`{"type": "test_run", …}`).
    #[serde(rename = "native")]
    Native,
}

impl Format {
    pub const ALL: [Format; 7] = [
        Format::ClaudeCode,
        Format::Codex,
        Format::OpenCode,
        Format::OpenHands,
        Format::SweAgent,
        Format::Otel,
        Format::Native,
    ];

    /// The name `--trace-format` takes and the receipt records.
    pub fn as_str(self) -> &'static str {
        match self {
            Format::ClaudeCode => "claude-code",
            Format::Codex => "codex",
            Format::OpenCode => "opencode",
            Format::OpenHands => "openhands",
            Format::SweAgent => "swe-agent",
            Format::Otel => "otel",
            Format::Native => "native",
        }
    }

    /// Whether the format records each tool call's result (an edit without one was cut off);
    /// SWE-agent and qualify's own format do not.
    pub fn records_results(self) -> bool {
        !matches!(self, Format::SweAgent | Format::Native)
    }

    /// What files of this format are.
    pub fn describe(self) -> &'static str {
        match self {
            Format::ClaudeCode => "Claude Code session transcripts (JSON Lines)",
            Format::Codex => "OpenAI Codex CLI rollouts (JSON Lines)",
            Format::OpenCode => "`opencode export` JSON",
            Format::OpenHands => "OpenHands trajectories (JSON)",
            Format::SweAgent => "SWE-agent .traj files (JSON)",
            Format::Otel => "OpenTelemetry GenAI spans as OTLP JSON",
            Format::Native => "qualify's own JSON Lines events",
        }
    }

    /// `claude-code (Claude Code session transcripts (JSON Lines)), codex (…), …`.
    pub fn listing() -> String {
        Format::ALL
            .iter()
            .map(|f| format!("{} ({})", f.as_str(), f.describe()))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The names alone: `claude-code, codex, …`.
    pub fn names() -> String {
        Format::ALL
            .iter()
            .map(|f| f.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Format {
    type Err = ParseError;
    fn from_str(s: &str) -> Result<Format, ParseError> {
        Format::ALL
            .into_iter()
            .find(|f| f.as_str() == s)
            .ok_or_else(|| ParseError::new("trace format", s, Format::ALL.map(Format::as_str)))
    }
}

/// Claude Code entry types (besides `user` and `assistant`) that carry no development step.
pub(crate) const CLAUDE_META_TYPES: &[&str] = &[
    "summary",
    "system",
    "file-history-snapshot",
    "queue-operation",
    "permission-mode",
    "checkpoint",
    "progress",
    "attachment",
    "custom-title",
    "agent-name",
    "last-prompt",
    "tag",
    "pr-link",
    // Claude Code 2.1.3xx bookkeeping: request shapes and copies, latches, costs.
    "atis-latch",
    "api-request-shape",
    "api-request-blob",
    "api-request",
    "tools-used",
    "cost-state",
];

/// Codex rollout line types.
pub(crate) const CODEX_TYPES: &[&str] = &[
    "session_meta",
    "response_item",
    "event_msg",
    "turn_context",
    "compacted",
    "world_state",
    "token_usage_record",
];

/// The native format's event types.
pub const NATIVE_TYPES: &[&str] = &[
    "plan",
    "tool_call",
    "edit",
    "test_run",
    "error",
    "repair",
    "message",
];

/// Which format a file is in, from its content; `None` when none fits.
pub fn detect(text: &str) -> Option<Format> {
    let trimmed = text.trim_start_matches('\u{feff}').trim_start();
    if let Ok(doc) = serde_json::from_str::<Value>(trimmed) {
        if let Some(f) = document(&doc) {
            return Some(f);
        }
    } else if let Some(first) = trimmed.lines().find(|l| !l.trim().is_empty())
        && line_values(first).is_none()
        && (trimmed.starts_with('{') || trimmed.starts_with('['))
    {
        // A JSON document that does not parse: tell it by the keys near its start, so its
        // parser can say where it breaks.
        let head: String = trimmed.chars().take(8192).collect();
        let has = |k: &str| head.contains(&format!("\"{k}\""));
        return if has("resourceSpans") {
            Some(Format::Otel)
        } else if has("trajectory") {
            Some(Format::SweAgent)
        } else if has("messages") && has("info") {
            Some(Format::OpenCode)
        } else if trimmed.starts_with('[') && (has("observation") || has("action")) {
            Some(Format::OpenHands)
        } else {
            None
        };
    }
    // JSON Lines: the first entries that say what they are.
    for line in trimmed.lines().filter(|l| !l.trim().is_empty()).take(50) {
        for v in line_values(line).into_iter().flatten() {
            if let Some(f) = line_format(&v) {
                return Some(f);
            }
        }
    }
    None
}

/// The JSON values of one line (usually one; several when entries were written without the
/// newline between them), or `None` when it is not JSON.
fn line_values(line: &str) -> Option<Vec<Value>> {
    serde_json::Deserializer::from_str(line)
        .into_iter::<Value>()
        .collect::<Result<Vec<_>, _>>()
        .ok()
        .filter(|v| !v.is_empty())
}

fn document(doc: &Value) -> Option<Format> {
    match doc {
        Value::Object(o) if o.contains_key("resourceSpans") => Some(Format::Otel),
        Value::Object(o) if o.get("trajectory").is_some_and(Value::is_array) => {
            Some(Format::SweAgent)
        }
        Value::Object(o)
            if o.get("messages").is_some_and(Value::is_array)
                && o.get("info").is_some_and(Value::is_object) =>
        {
            Some(Format::OpenCode)
        }
        Value::Array(items) if !items.is_empty() && items.iter().all(is_openhands_event) => {
            Some(Format::OpenHands)
        }
        Value::Object(o)
            if o.get("history")
                .and_then(Value::as_array)
                .is_some_and(|h| !h.is_empty() && h.iter().all(is_openhands_event)) =>
        {
            Some(Format::OpenHands)
        }
        _ => None,
    }
}

fn is_openhands_event(v: &Value) -> bool {
    v.get("action").is_some_and(Value::is_string)
        || v.get("observation").is_some_and(Value::is_string)
}

fn line_format(v: &Value) -> Option<Format> {
    let o = v.as_object()?;
    if o.contains_key("resourceSpans") {
        return Some(Format::Otel);
    }
    if o.get("history")
        .and_then(Value::as_array)
        .is_some_and(|h| !h.is_empty() && h.iter().all(is_openhands_event))
    {
        // An OpenHands evaluation's output.jsonl: one task's history per line.
        return Some(Format::OpenHands);
    }
    let kind = o.get("type").and_then(Value::as_str)?;
    if o.contains_key("payload") && CODEX_TYPES.contains(&kind) {
        return Some(Format::Codex);
    }
    let claude_like =
        o.contains_key("sessionId") || o.contains_key("uuid") || o.contains_key("message");
    if claude_like && (kind == "user" || kind == "assistant" || CLAUDE_META_TYPES.contains(&kind)) {
        return Some(Format::ClaudeCode);
    }
    if NATIVE_TYPES.contains(&kind) {
        return Some(Format::Native);
    }
    None
}
