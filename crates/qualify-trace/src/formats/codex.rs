//! OpenAI Codex CLI rollouts (`~/.codex/sessions/…/rollout-*.jsonl`): JSON Lines of
//! `{timestamp, type, payload}`. `session_meta` names the CLI version and working directory,
//! `turn_context` the model; `response_item` payloads are the conversation: `message` (a user
//! message is a prompt, unless it is injected context such as `<environment_context>`),
//! `function_call {name, arguments, call_id}` (`shell`'s argv, `shell_command`'s and
//! `exec_command`'s command line, `apply_patch`'s patch) and `function_call_output {call_id,
//! output}` (a JSON `{output, metadata: {exit_code, duration_seconds}}` or text with `Exit
//! code: N` and `Wall time: S seconds`), `custom_tool_call` / `custom_tool_call_output`,
//! `local_shell_call`, `web_search_call`; `event_msg` payloads echo the conversation for the
//! UI — `exec_command_end {call_id, exit_code, duration}` and the running `token_count` are
//! read from them.

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

pub fn parse(text: &str) -> Result<Session, Located> {
    let mut s = Session::new(Format::Codex);
    let mut pending: BTreeMap<String, usize> = BTreeMap::new();
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
            "response_item" => response_item(&mut s, &mut pending, p, at, line)?,
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
                "exec_command_end" => {
                    if let Some(Step::Call(call)) = str_at(p, "call_id")
                        .and_then(|id| pending.get(id))
                        .and_then(|i| s.steps.get_mut(*i))
                    {
                        if let Some(code) = p.get("exit_code").and_then(Value::as_i64) {
                            call.exit_code = Some(code);
                        }
                        if let Some(d) = p.get("duration").and_then(duration) {
                            call.duration = Some(d);
                        }
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
    Ok(s)
}

fn response_item(
    s: &mut Session,
    pending: &mut BTreeMap<String, usize>,
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
            let text = text_of(p.get("content").unwrap_or(&Value::Null));
            if !text.trim_start().starts_with('<') {
                s.prompt(&text);
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
            pending.insert(id, s.steps.len());
            s.call(Call::new(name.clone(), action(&name, &args), at));
        }
        "custom_tool_call" => {
            let name = need("name")?.to_string();
            let id = need("call_id")?.to_string();
            let input = p.get("input").cloned().unwrap_or(Value::Null);
            let action = match (&name[..], input.as_str()) {
                ("apply_patch", Some(patch)) => Action::Edit(patch_files(patch)),
                _ => action(&name, &input),
            };
            pending.insert(id, s.steps.len());
            s.call(Call::new(name, action, at));
        }
        "local_shell_call" => {
            let id = str_at(p, "call_id")
                .or_else(|| str_at(p, "id"))
                .unwrap_or("")
                .to_string();
            let cmd = p.pointer("/action/command").and_then(command_text);
            let action = cmd.map_or(Action::Other, Action::Command);
            pending.insert(id, s.steps.len());
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
            if let Some(Step::Call(call)) = pending.get(id).and_then(|i| s.steps.get_mut(*i)) {
                let (exit, secs, failed) = output_facts(p.get("output").unwrap_or(&Value::Null));
                if call.exit_code.is_none() {
                    call.exit_code = exit;
                }
                if call.duration.is_none() {
                    call.duration = secs.or_else(|| at.zip(call.at).map(|(b, a)| (b - a).max(0.0)));
                }
                call.error = failed.or(exit.map(|c| c != 0)).or(Some(false));
            }
        }
        _ => {}
    }
    Ok(())
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

/// Exit status, duration and failure from a tool output.
fn output_facts(output: &Value) -> (Option<i64>, Option<f64>, Option<bool>) {
    let text = match output {
        Value::String(t) => t.clone(),
        Value::Object(o) => {
            let failed = o.get("success").and_then(Value::as_bool).map(|ok| !ok);
            let content = o.get("content").map(text_of).unwrap_or_default();
            let (exit, secs, _) = output_facts(&Value::String(content));
            return (exit, secs, failed);
        }
        _ => return (None, None, None),
    };
    if let Ok(v) = serde_json::from_str::<Value>(&text)
        && let Some(meta) = v.get("metadata")
    {
        return (
            meta.get("exit_code").and_then(Value::as_i64),
            meta.get("duration_seconds").and_then(Value::as_f64),
            None,
        );
    }
    let mut exit = None;
    let mut secs = None;
    for line in text.lines().take(8) {
        let line = line.trim();
        if let Some(rest) = line
            .strip_prefix("Exit code:")
            .or_else(|| line.strip_prefix("Process exited with code"))
        {
            exit = rest.trim().parse().ok();
        } else if let Some(rest) = line.strip_prefix("Wall time:") {
            secs = rest.trim().trim_end_matches("seconds").trim().parse().ok();
        }
    }
    (exit, secs, None)
}
