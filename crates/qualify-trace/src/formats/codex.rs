//! OpenAI Codex CLI rollouts (`~/.codex/sessions/…/rollout-*.jsonl`): JSON Lines of
//! `{timestamp, type, payload}`. `session_meta` names the CLI version and working directory,
//! `turn_context` the model; `response_item` payloads are the conversation: `message`,
//! `function_call {name, arguments, call_id}` (`shell`'s argv, `shell_command`'s and
//! `exec_command`'s command line, `apply_patch`'s patch) and `function_call_output {call_id,
//! output}` (a JSON `{output, metadata: {exit_code, duration_seconds}}`, or text with `Exit
//! code: N` / `Process exited with code N` and `Wall time: S seconds`), `custom_tool_call` /
//! `custom_tool_call_output`, `local_shell_call`, `web_search_call`; `event_msg` payloads echo
//! the conversation for the UI — `exec_command_end {call_id, exit_code, duration,
//! aggregated_output}`, `patch_apply_end {call_id, success}`, `item_completed` (a
//! `CommandExecution`'s exit status, a `UserMessage`), `user_message` and the running
//! `token_count` are read from them.
//!
//! One command, one result: `exec_command` (unified exec) answers `Process running with
//! session ID N` while the command still runs — its result is pending, not a success — and the
//! `write_stdin {session_id}` calls that poll it are folded into it (they are not commands of
//! their own); its exit status is the poll's `Process exited with code N` or the
//! `exec_command_end`'s, whichever comes, the end event's winning. Prompts are what the person
//! typed: `user_message` / `UserMessage` events when the rollout has them, else user messages
//! that are not injected context (`<environment_context>`, `# AGENTS.md instructions for …`).

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

use super::{Located, command_text, jsonl, patch_files, str_at};
use crate::format::{CODEX_TYPES, Format};
use crate::session::{Action, Call, Session, Step, Tokens, seconds, text_of};

#[derive(Deserialize)]
struct Line {
    #[serde(default)]
    timestamp: Option<Value>,
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    payload: Value,
}

const RESPONSE_ITEMS: &[&str] = &[
    "message",
    "reasoning",
    "function_call",
    "function_call_output",
    "custom_tool_call",
    "custom_tool_call_output",
    "local_shell_call",
    "web_search_call",
    "ghost_snapshot",
    "compaction",
    "compaction_summary",
];

/// Parse state: calls by id, running unified-exec sessions, polls, prompt candidates.
#[derive(Default)]
struct State {
    /// call_id → index of its call in the session's steps.
    pending: BTreeMap<String, usize>,
    /// unified exec session id → the call that started it.
    running: BTreeMap<String, usize>,
    /// a `write_stdin` call_id → the call it polls.
    polls: BTreeMap<String, usize>,
    /// Prompts from `user_message` / `UserMessage` events (what the person typed).
    typed: Vec<String>,
    /// User messages of the conversation that are not injected context.
    messages: Vec<String>,
}

pub fn parse(text: &str) -> Result<Session, Located> {
    let mut s = Session::new(Format::Codex);
    let mut st = State::default();
    let mut total: Option<Tokens> = None;
    for item in jsonl::<Line>(text) {
        let (line, l) = item?;
        let at = l.timestamp.as_ref().and_then(seconds);
        let p = &l.payload;
        let ptype = str_at(p, "type").unwrap_or("");
        let known = match l.kind.as_str() {
            "response_item" => RESPONSE_ITEMS.contains(&ptype),
            k => CODEX_TYPES.contains(&k),
        };
        let kind = if l.kind == "response_item" {
            format!("response_item/{ptype}")
        } else {
            l.kind.clone()
        };
        s.entry(known, &kind, at);
        if !p.is_object() && l.kind != "compacted" {
            return Err(Located::at(
                line,
                format!("`payload` of a `{}` line is not an object", l.kind),
            ));
        }
        match l.kind.as_str() {
            "session_meta" => {
                let meta = p.get("meta").unwrap_or(p);
                s.set_agent("codex", str_at(meta, "cli_version"));
                if let Some(cwd) = str_at(meta, "cwd") {
                    s.cwd = Some(cwd.to_string());
                }
            }
            "turn_context" => {
                if let Some(m) = str_at(p, "model") {
                    s.model(m);
                }
                if s.cwd.is_none() {
                    s.cwd = str_at(p, "cwd").map(str::to_string);
                }
            }
            "response_item" => response_item(&mut s, &mut st, p, at, line)?,
            "event_msg" => match ptype {
                "token_count" => {
                    if let Some(u) = p.pointer("/info/total_token_usage") {
                        let n = |k: &str| u.get(k).and_then(Value::as_u64);
                        total = Some(Tokens {
                            input: n("input_tokens"),
                            output: n("output_tokens"),
                            cache_read: n("cached_input_tokens"),
                            cache_write: None,
                            reasoning: n("reasoning_output_tokens"),
                        });
                    }
                }
                "user_message" => {
                    if let Some(m) = str_at(p, "message") {
                        st.typed.push(m.to_string());
                    }
                }
                "exec_command_end" => {
                    if let Some(call) = call_of(&mut s, &st, str_at(p, "call_id")) {
                        ended(call, p);
                    }
                }
                "patch_apply_end" => {
                    if let Some(call) = call_of(&mut s, &st, str_at(p, "call_id"))
                        && let Some(ok) = p.get("success").and_then(Value::as_bool)
                    {
                        call.error = Some(!ok);
                    }
                }
                "item_completed" => {
                    let item = p.get("item").unwrap_or(&Value::Null);
                    match str_at(item, "type") {
                        Some("UserMessage") => {
                            st.typed
                                .push(text_of(item.get("content").unwrap_or(&Value::Null)));
                        }
                        Some("CommandExecution") => {
                            if let Some(call) = call_of(&mut s, &st, str_at(item, "id")) {
                                ended(call, item);
                            }
                        }
                        _ => {}
                    }
                }
                _ => {}
            },
            _ => {}
        }
    }
    if let Some(t) = total {
        s.tokens.add(&t);
    }
    let prompts = if st.typed.is_empty() {
        st.messages
    } else {
        st.typed
    };
    for p in prompts {
        s.prompt(&p);
    }
    Ok(s)
}

/// The call a call_id names (or the command a poll's call_id polls).
fn call_of<'a>(s: &'a mut Session, st: &State, id: Option<&str>) -> Option<&'a mut Call> {
    let id = id?;
    let i = st.pending.get(id).or_else(|| st.polls.get(id))?;
    match s.steps.get_mut(*i) {
        Some(Step::Call(call)) => Some(call),
        _ => None,
    }
}

/// An end event (`exec_command_end`, a completed `CommandExecution`): the command's exit
/// status, duration and output, over anything read before.
fn ended(call: &mut Call, p: &Value) {
    if let Some(code) = p.get("exit_code").and_then(Value::as_i64) {
        call.exit_code = Some(code);
        call.error = None;
    }
    if let Some(d) = p.get("duration").and_then(duration) {
        call.duration = Some(d);
    }
    if let Some(out) = str_at(p, "aggregated_output").filter(|o| !o.is_empty()) {
        call.set_output(out);
    }
}

/// A user message of the conversation that a person may have typed: not context the CLI
/// injects (`<environment_context>`, `<user_instructions>`, `# AGENTS.md instructions for …`).
fn typed_by_a_person(text: &str) -> bool {
    let t = text.trim_start();
    !t.is_empty() && !t.starts_with('<') && !t.starts_with("# AGENTS.md instructions")
}

fn response_item(
    s: &mut Session,
    st: &mut State,
    p: &Value,
    at: Option<f64>,
    line: usize,
) -> Result<(), Located> {
    let need = |key: &str| {
        str_at(p, key).ok_or_else(|| {
            Located::at(
                line,
                format!(
                    "a `{}` response item has no string `{key}`",
                    str_at(p, "type").unwrap_or("?")
                ),
            )
        })
    };
    match str_at(p, "type").unwrap_or("") {
        "message" if str_at(p, "role") == Some("user") => {
            let content = p.get("content").unwrap_or(&Value::Null);
            // Injected context and the person's text may share one message: each block apart.
            let blocks: Vec<String> = match content {
                Value::Array(items) => items.iter().map(text_of_block).collect(),
                other => vec![text_of(other)],
            };
            let typed: Vec<String> = blocks
                .into_iter()
                .filter(|b| typed_by_a_person(b))
                .collect();
            if !typed.is_empty() {
                st.messages.push(typed.join("\n"));
            }
        }
        "function_call" => {
            let name = need("name")?.to_string();
            let id = need("call_id")?.to_string();
            let args: Value = match p.get("arguments") {
                Some(Value::String(a)) => {
                    serde_json::from_str(a).unwrap_or(Value::String(a.clone()))
                }
                Some(other) => other.clone(),
                None => Value::Null,
            };
            if name == "write_stdin" {
                // A poll of (or input to) a running command: part of that command.
                let session = args.get("session_id").map(|v| match v {
                    Value::String(t) => t.clone(),
                    other => other.to_string().trim_end_matches(".0").to_string(),
                });
                if let Some(i) = session.and_then(|k| st.running.get(&k).copied()) {
                    st.polls.insert(id, i);
                    return Ok(());
                }
            }
            st.pending.insert(id, s.steps.len());
            s.call(Call::new(name.clone(), action(&name, &args), at));
        }
        "custom_tool_call" => {
            let name = need("name")?.to_string();
            let id = need("call_id")?.to_string();
            let input = p.get("input").cloned().unwrap_or(Value::Null);
            let mut call = match (&name[..], input.as_str()) {
                ("apply_patch", Some(patch)) => {
                    let mut c = Call::new(name.clone(), Action::Edit(patch_files(patch)), at);
                    c.content = added_file(patch);
                    c
                }
                _ => Call::new(name.clone(), action(&name, &input), at),
            };
            call.tool = name;
            st.pending.insert(id, s.steps.len());
            s.call(call);
        }
        "local_shell_call" => {
            let id = str_at(p, "call_id")
                .or_else(|| str_at(p, "id"))
                .unwrap_or("")
                .to_string();
            let cmd = p.pointer("/action/command").and_then(command_text);
            let action = cmd.map_or(Action::Other, Action::Command);
            st.pending.insert(id, s.steps.len());
            s.call(Call::new("local_shell", action, at));
        }
        "web_search_call" => {
            let q = p.pointer("/action/query").and_then(Value::as_str);
            s.call(Call::new(
                "web_search",
                q.map_or(Action::Other, |q| Action::Doc(q.to_string())),
                at,
            ));
        }
        "function_call_output" | "custom_tool_call_output" => {
            let id = need("call_id")?;
            let poll = st.polls.contains_key(id);
            let Some(i) = st.pending.get(id).or_else(|| st.polls.get(id)).copied() else {
                return Ok(());
            };
            let Some(Step::Call(call)) = s.steps.get_mut(i) else {
                return Ok(());
            };
            let facts = output_facts(p.get("output").unwrap_or(&Value::Null));
            if let Some(session) = &facts.running {
                st.running.insert(session.clone(), i);
            }
            if call.exit_code.is_none() {
                call.exit_code = facts.exit;
            }
            if call.duration.is_none() && !poll {
                call.duration = facts
                    .secs
                    .or_else(|| at.zip(call.at).map(|(b, a)| (b - a).max(0.0)));
            }
            if let Some(f) = facts.failed {
                call.error = Some(f);
            }
            if !facts.text.is_empty() {
                let text = match (&call.output, poll) {
                    (Some(before), true) => format!("{before}\n{}", facts.text),
                    _ => facts.text,
                };
                call.set_output(&text);
            }
        }
        _ => {}
    }
    Ok(())
}

/// A text block's text (`input_text`, `output_text`, `text`).
fn text_of_block(b: &Value) -> String {
    match b {
        Value::String(t) => t.clone(),
        other => str_at(other, "text").unwrap_or("").to_string(),
    }
}

/// The content of the one file a patch adds (`*** Add File: p` then `+` lines), when that is
/// all it does: a script the session may run next.
fn added_file(patch: &str) -> Option<String> {
    let files = patch_files(patch);
    if files.len() != 1 || !patch.contains("*** Add File: ") {
        return None;
    }
    let body: Vec<&str> = patch
        .lines()
        .skip_while(|l| !l.starts_with("*** Add File: "))
        .skip(1)
        .take_while(|l| !l.starts_with("*** "))
        .filter_map(|l| l.strip_prefix('+'))
        .collect();
    Some(body.join("\n") + "\n")
}

fn action(name: &str, args: &Value) -> Action {
    match name {
        "shell" | "container.exec" | "local_shell" | "shell_command" | "exec_command" => args
            .get("command")
            .or_else(|| args.get("cmd"))
            .and_then(command_text)
            .map_or(Action::Other, Action::Command),
        "apply_patch" => {
            let patch = args
                .get("input")
                .and_then(Value::as_str)
                .or(args.as_str())
                .unwrap_or("");
            Action::Edit(patch_files(patch))
        }
        _ => super::generic_action(name, args),
    }
}

/// `{secs, nanos}`, or seconds as a number.
fn duration(v: &Value) -> Option<f64> {
    if let Some(n) = v.as_f64() {
        return Some(n);
    }
    let secs = v.get("secs")?.as_f64()?;
    Some(secs + v.get("nanos").and_then(Value::as_f64).unwrap_or(0.0) / 1e9)
}

/// What a tool output says.
#[derive(Default)]
struct Facts {
    exit: Option<i64>,
    secs: Option<f64>,
    /// The output's own success flag (`success: false` is a failure).
    failed: Option<bool>,
    /// `Process running with session ID N`: the command goes on, its result is pending.
    running: Option<String>,
    text: String,
}

/// Exit status, duration, failure and a running session from a tool output.
fn output_facts(output: &Value) -> Facts {
    let text = match output {
        Value::String(t) => t.clone(),
        Value::Object(o) => {
            let content = o.get("content").map(text_of).unwrap_or_default();
            let mut f = output_facts(&Value::String(content));
            f.failed = o.get("success").and_then(Value::as_bool).map(|ok| !ok);
            return f;
        }
        _ => return Facts::default(),
    };
    if let Ok(v) = serde_json::from_str::<Value>(&text)
        && let Some(meta) = v.get("metadata")
    {
        return Facts {
            exit: meta.get("exit_code").and_then(Value::as_i64),
            secs: meta.get("duration_seconds").and_then(Value::as_f64),
            text: str_at(&v, "output").unwrap_or("").to_string(),
            ..Facts::default()
        };
    }
    let mut f = Facts::default();
    for line in text.lines().take(8) {
        let line = line.trim();
        if let Some(rest) = line
            .strip_prefix("Exit code:")
            .or_else(|| line.strip_prefix("Process exited with code"))
        {
            f.exit = rest.trim().parse().ok();
        } else if let Some(rest) = line.strip_prefix("Process running with session ID") {
            f.running = Some(rest.trim().to_string());
        } else if let Some(rest) = line.strip_prefix("Wall time:") {
            f.secs = rest.trim().trim_end_matches("seconds").trim().parse().ok();
        }
    }
    f.text = text;
    f
}
