//! `opencode export <session>`: one JSON document `{info, messages: [{info, parts}]}`. The
//! session's `info` names opencode's `version` and `directory`; a message's `info` its `role`,
//! `modelID`, `providerID`, `tokens {input, output, reasoning, cache {read, write}}` and
//! `time` (milliseconds). Parts: `text` (a user's is a prompt unless `synthetic`), `tool
//! {tool, callID, state {status, input, output, error, metadata, time {start, end}}}` — a
//! `completed` state succeeded, an `error` state failed (one whose error says the person
//! rejected the permission was refused: it never ran), `bash`'s `metadata.exit` is its exit
//! status and `output` what it printed —, `patch {files}`, and bookkeeping parts (`step-start`, `step-finish`, `reasoning`,
//! `snapshot`, `file`, `agent`, `subtask`, `retry`, `compaction`).

use serde::Deserialize;
use serde_json::Value;

use super::{Located, document, generic_action};
use crate::format::Format;
use crate::session::{Action, Call, Session, Step, Tokens};

#[derive(Deserialize)]
struct Export {
    info: SessionInfo,
    messages: Vec<Message>,
}

#[derive(Deserialize)]
struct SessionInfo {
    #[serde(default)]
    version: Option<String>,
    #[serde(default)]
    directory: Option<String>,
}

#[derive(Deserialize)]
struct Message {
    info: MessageInfo,
    #[serde(default)]
    parts: Vec<Part>,
}

#[derive(Deserialize)]
struct MessageInfo {
    role: String,
    #[serde(default, rename = "modelID")]
    model_id: Option<String>,
    #[serde(default)]
    tokens: Option<MessageTokens>,
    #[serde(default)]
    time: Option<Times>,
}

#[derive(Deserialize)]
struct MessageTokens {
    #[serde(default)]
    input: Option<u64>,
    #[serde(default)]
    output: Option<u64>,
    #[serde(default)]
    reasoning: Option<u64>,
    #[serde(default)]
    cache: Option<Cache>,
}

#[derive(Deserialize)]
struct Cache {
    #[serde(default)]
    read: Option<u64>,
    #[serde(default)]
    write: Option<u64>,
}

#[derive(Deserialize)]
struct Times {
    #[serde(default)]
    created: Option<f64>,
    #[serde(default)]
    start: Option<f64>,
    #[serde(default)]
    end: Option<f64>,
}

#[derive(Deserialize)]
#[serde(tag = "type")]
enum Part {
    #[serde(rename = "text")]
    Text {
        #[serde(default)]
        text: String,
        #[serde(default)]
        synthetic: bool,
    },
    #[serde(rename = "tool")]
    Tool { tool: String, state: ToolState },
    #[serde(rename = "patch")]
    Patch {
        #[serde(default)]
        files: Vec<String>,
    },
    #[serde(
        rename = "step-start",
        alias = "step-finish",
        alias = "reasoning",
        alias = "snapshot",
        alias = "file",
        alias = "agent",
        alias = "subtask",
        alias = "retry",
        alias = "compaction"
    )]
    Bookkeeping,
    #[serde(other)]
    Unknown,
}

#[derive(Deserialize)]
struct ToolState {
    status: String,
    #[serde(default)]
    input: Value,
    #[serde(default)]
    output: Value,
    #[serde(default)]
    error: Value,
    #[serde(default)]
    metadata: Value,
    #[serde(default)]
    time: Option<Times>,
}

pub fn parse(text: &str) -> Result<Session, Located> {
    let export: Export = document(text)?;
    let mut s = Session::new(Format::OpenCode);
    s.set_agent("opencode", export.info.version.as_deref());
    s.cwd = export.info.directory;
    for m in export.messages {
        let at = m
            .info
            .time
            .as_ref()
            .and_then(|t| t.created)
            .map(|ms| ms / 1000.0);
        let known = matches!(m.info.role.as_str(), "user" | "assistant");
        s.entry(known, &format!("message/{}", m.info.role), at);
        if m.info.role == "assistant" {
            if let Some(model) = &m.info.model_id {
                s.model(model);
            }
            if let Some(t) = &m.info.tokens {
                s.tokens.add(&Tokens {
                    input: t.input,
                    output: t.output,
                    reasoning: t.reasoning,
                    cache_read: t.cache.as_ref().and_then(|c| c.read),
                    cache_write: t.cache.as_ref().and_then(|c| c.write),
                });
            }
        }
        for part in m.parts {
            match part {
                Part::Text { text, synthetic } => {
                    s.entry(true, "text", at);
                    if m.info.role == "user" && !synthetic {
                        s.prompt(&text);
                    }
                }
                Part::Tool { tool, state } => {
                    let start = state
                        .time
                        .as_ref()
                        .and_then(|t| t.start)
                        .map(|ms| ms / 1000.0);
                    s.entry(true, "tool", start.or(at));
                    let mut call =
                        Call::new(tool.clone(), action(&tool, &state.input), start.or(at));
                    call.error = match state.status.as_str() {
                        "completed" => Some(false),
                        "error" => Some(true),
                        _ => None,
                    };
                    call.exit_code = state
                        .metadata
                        .get("exit")
                        .or_else(|| state.metadata.get("exitCode"))
                        .and_then(Value::as_i64);
                    let said = state.output.as_str().or(state.error.as_str()).unwrap_or("");
                    call.set_output(said);
                    call.rejected = call.error == Some(true)
                        && state
                            .error
                            .as_str()
                            .is_some_and(|e| e.contains("rejected permission"));
                    if tool == "write" {
                        call.content = state
                            .input
                            .get("content")
                            .and_then(Value::as_str)
                            .map(str::to_string);
                    }
                    call.duration = state
                        .time
                        .as_ref()
                        .and_then(|t| t.start.zip(t.end))
                        .map(|(a, b)| ((b - a) / 1000.0).max(0.0));
                    s.call(call);
                }
                Part::Patch { files } => {
                    s.entry(true, "patch", at);
                    if !files.is_empty() {
                        s.steps.push(Step::Edited(files));
                    }
                }
                Part::Bookkeeping => s.entry(true, "part", at),
                Part::Unknown => s.entry(false, "part/unknown", at),
            }
        }
    }
    Ok(s)
}

fn action(tool: &str, input: &Value) -> Action {
    match tool {
        "read" | "glob" | "grep" | "list" | "todoread" | "todowrite" | "task" => Action::Other,
        _ => generic_action(tool, input),
    }
}
