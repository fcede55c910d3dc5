//! Claude Code session transcripts: JSON Lines, one entry per line with `type` (`user`,
//! `assistant`, and bookkeeping types such as `summary`, `system`, `file-history-snapshot`),
//! `timestamp`, `cwd`, `gitBranch`, `version` and `message`. An assistant message carries
//! `model`, `usage` and `content` blocks (`text`, `thinking`, `tool_use {id, name, input}`); a
//! user message carries the prompt (a string or `text` blocks) or `tool_result {tool_use_id,
//! content, is_error}` blocks. A tool call is paired with its result by id: the result's
//! `is_error` is the call's error flag, a leading `Exit code N` its exit status, its text the
//! output a command that never started is told by, and the time between the two entries its
//! duration; a result saying the person refused the call (`The user doesn't want to proceed
//! with this tool use`, a permission not granted) marks it refused — it never ran, and a refused
//! `Write` is no edit. A `Write`'s content is kept (a script the session may run next). A
//! message streamed over several entries (same `message.id`) counts its model and usage once.
//!
//! Prompts are what a person typed: a user entry's text, except meta entries (`isMeta`), a
//! subagent's entries (`isSidechain`: its prompt comes from the parent agent), compaction
//! summaries (`isCompactSummary`), and text the CLI writes in the person's name — slash-command
//! echoes (`<command-name>`, `<command-message>`, `<command-args>`), their output
//! (`<local-command-stdout>`), `<system-reminder>`s, `[Request interrupted by user…]`.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

use super::{Located, jsonl, str_at};
use crate::format::{CLAUDE_META_TYPES, Format};
use crate::session::{Action, Call, Session, Step, Tokens, seconds, text_of};

#[derive(Deserialize)]
struct Entry {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    timestamp: Option<Value>,
    #[serde(default)]
    cwd: Option<String>,
    #[serde(default)]
    version: Option<String>,
    #[serde(default, rename = "isMeta")]
    is_meta: bool,
    #[serde(default, rename = "isSidechain")]
    is_sidechain: bool,
    #[serde(default, rename = "isCompactSummary")]
    is_compact_summary: bool,
    #[serde(default)]
    message: Option<Message>,
}

#[derive(Deserialize)]
struct Message {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    content: Value,
    #[serde(default)]
    usage: Option<Usage>,
}

#[derive(Deserialize)]
struct Usage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    cache_creation_input_tokens: Option<u64>,
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
}

#[derive(Deserialize)]
#[serde(tag = "type")]
enum Block {
    #[serde(rename = "text")]
    Text { text: String },
    #[serde(rename = "tool_use", alias = "server_tool_use")]
    ToolUse {
        id: String,
        name: String,
        #[serde(default)]
        input: Value,
    },
    #[serde(rename = "tool_result")]
    ToolResult {
        tool_use_id: String,
        #[serde(default)]
        content: Value,
        #[serde(default)]
        is_error: Option<bool>,
    },
    #[serde(other)]
    Other,
}

pub fn parse(text: &str) -> Result<Session, Located> {
    let mut s = Session::new(Format::ClaudeCode);
    // tool_use id → index of its call in `s.steps`.
    let mut pending: BTreeMap<String, usize> = BTreeMap::new();
    // message id → (model, usage): a streamed message counts once.
    let mut messages: BTreeMap<String, (Option<String>, Tokens)> = BTreeMap::new();
    let mut anonymous = 0usize;
    for item in jsonl::<Entry>(text) {
        let (line, e) = item?;
        let at = e.timestamp.as_ref().and_then(seconds);
        let known = e.kind == "user"
            || e.kind == "assistant"
            || CLAUDE_META_TYPES.contains(&e.kind.as_str());
        s.entry(known, &e.kind, at);
        if s.cwd.is_none() {
            s.cwd = e.cwd.clone();
        }
        if let Some(v) = &e.version {
            s.set_agent("claude-code", Some(v));
        } else if s.agent.is_none() {
            s.set_agent("claude-code", None);
        }
        let Some(m) = e.message else { continue };
        let typed = e.kind == "user" && !e.is_meta && !e.is_sidechain && !e.is_compact_summary;
        let blocks = match &m.content {
            Value::String(t) => {
                if typed && typed_by_a_person(t) {
                    s.prompt(t);
                }
                Vec::new()
            }
            Value::Array(items) => items
                .iter()
                .enumerate()
                .map(|(i, b)| {
                    serde_json::from_value::<Block>(b.clone())
                        .map_err(|err| Located::at(line, format!("message.content[{i}]: {err}")))
                })
                .collect::<Result<Vec<_>, _>>()?,
            Value::Null => Vec::new(),
            _ => {
                return Err(Located::at(
                    line,
                    "message.content is neither text nor an array of content blocks",
                ));
            }
        };
        if e.kind == "assistant" {
            let key = m.id.clone().unwrap_or_else(|| {
                anonymous += 1;
                format!("#{anonymous}")
            });
            let tokens = m.usage.as_ref().map(|u| Tokens {
                input: u.input_tokens,
                output: u.output_tokens,
                cache_read: u.cache_read_input_tokens,
                cache_write: u.cache_creation_input_tokens,
                reasoning: None,
            });
            let entry = messages.entry(key).or_insert((None, Tokens::default()));
            if let Some(model) = m.model {
                entry.0 = Some(model);
            }
            if let Some(t) = tokens {
                entry.1 = t;
            }
        }
        for block in blocks {
            match block {
                Block::Text { text } if typed && typed_by_a_person(&text) => s.prompt(&text),
                Block::ToolUse { id, name, input } => {
                    let action = action(&name, &input);
                    let mut call = Call::new(name.clone(), action, at);
                    if name == "Write" {
                        call.content = str_at(&input, "content").map(str::to_string);
                    }
                    pending.insert(id, s.steps.len());
                    s.call(call);
                }
                Block::ToolResult {
                    tool_use_id,
                    content,
                    is_error,
                } => {
                    let Some(Step::Call(call)) = pending
                        .remove(&tool_use_id)
                        .and_then(|i| s.steps.get_mut(i))
                    else {
                        continue;
                    };
                    let error = is_error.unwrap_or(false);
                    let text = text_of(&content);
                    call.error = Some(error);
                    if error {
                        call.exit_code = exit_code(&text);
                        call.rejected = refused(&text);
                    }
                    call.set_output(&text);
                    call.duration = at.zip(call.at).map(|(b, a)| (b - a).max(0.0));
                }
                _ => {}
            }
        }
    }
    for (model, tokens) in messages.into_values() {
        if let Some(m) = model {
            s.model(&m);
        }
        s.tokens.add(&tokens);
    }
    Ok(s)
}

/// Text the CLI writes in the person's name (slash-command echoes and output, reminders,
/// interruption notices) is not a prompt.
fn typed_by_a_person(text: &str) -> bool {
    const INJECTED: &[&str] = &[
        "<command-name>",
        "<command-message>",
        "<command-args>",
        "<local-command-stdout>",
        "<local-command-stderr>",
        "<local-command-caveat>",
        "<system-reminder>",
        "<bash-input>",
        "<bash-stdout>",
        "<bash-stderr>",
        "<user-prompt-submit-hook>",
        "[Request interrupted by user",
        "Caveat: The messages below were generated by the user while running local commands",
    ];
    let t = text.trim_start();
    !t.is_empty() && !INJECTED.iter().any(|p| t.starts_with(p))
}

/// A tool result saying the person refused the call (it never ran).
fn refused(text: &str) -> bool {
    let t = text.trim_start();
    t.starts_with("The user doesn't want to proceed with this tool use")
        || t.starts_with("The user doesn't want to take this action")
        || (t.contains("requested permissions to") && t.contains("haven't granted it yet"))
}

/// `Exit code 2` at the start of a failed Bash result.
fn exit_code(text: &str) -> Option<i64> {
    text.trim_start()
        .strip_prefix("Exit code ")?
        .split(|c: char| !c.is_ascii_digit() && c != '-')
        .next()?
        .parse()
        .ok()
}

fn action(tool: &str, input: &Value) -> Action {
    match tool {
        "Bash" => {
            str_at(input, "command").map_or(Action::Other, |c| Action::Command(c.to_string()))
        }
        "Edit" | "MultiEdit" | "Write" => {
            str_at(input, "file_path").map_or(Action::Other, |p| Action::Edit(vec![p.to_string()]))
        }
        "NotebookEdit" => str_at(input, "notebook_path")
            .map_or(Action::Other, |p| Action::Edit(vec![p.to_string()])),
        "WebFetch" => str_at(input, "url").map_or(Action::Other, |u| Action::Doc(u.to_string())),
        "WebSearch" | "web_search" => {
            str_at(input, "query").map_or(Action::Other, |q| Action::Doc(q.to_string()))
        }
        _ if tool.starts_with("mcp__") => super::generic_action(tool, input),
        _ => Action::Other,
    }
}
