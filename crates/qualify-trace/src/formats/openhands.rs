//! OpenHands trajectories: a JSON array of events (or an object whose `history` is one, or an
//! evaluation's `output.jsonl` — JSON Lines of `{instance_id, history, …}`, one session per
//! line), each `{id, timestamp, source, message}` plus either `action` + `args` or
//! `observation` + `content` + `extras` + `cause` (the id of the action it answers). `run`
//! actions carry `args.command` (one with `is_input` feeds a running command: not a command of
//! its own); their `run` observation's `extras.metadata.exit_code` (older: `extras.exit_code`)
//! is the exit status (−1: still running or timed out, a failure with no status) and its
//! `content` the output a command that never started is told by. `edit`/`write` name
//! `args.path` (an `edit` whose `command` is `view` only reads); an `error` observation, or an
//! edit or read observation whose content starts `ERROR:` (`No replacement was performed`, a
//! missing parameter), is a failed call — a failed edit is no edit; `browse` names `args.url`;
//! a `message` from the user is a prompt. Models and token usage come from
//! `tool_call_metadata.model_response.model` and `llm_metrics.accumulated_token_usage`.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

use super::{Located, command_text, document, str_at};
use crate::format::Format;
use crate::session::{Action, Call, Session, Step, Tokens, seconds};

#[derive(Deserialize)]
struct Event {
    #[serde(default)]
    id: Option<i64>,
    #[serde(default)]
    timestamp: Option<Value>,
    #[serde(default)]
    source: Option<String>,
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    action: Option<String>,
    #[serde(default)]
    args: Value,
    #[serde(default)]
    observation: Option<String>,
    #[serde(default)]
    content: Value,
    #[serde(default)]
    extras: Value,
    #[serde(default)]
    cause: Option<i64>,
    #[serde(default)]
    tool_call_metadata: Value,
    #[serde(default)]
    llm_metrics: Value,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Doc {
    Events(Vec<Event>),
    History { history: Vec<Event> },
}

const ACTIONS: &[&str] = &[
    "run",
    "run_ipython",
    "read",
    "write",
    "edit",
    "browse",
    "browse_interactive",
    "message",
    "system",
    "think",
    "finish",
    "reject",
    "delegate",
    "recall",
    "condensation",
    "condensation_request",
    "change_agent_state",
    "mcp",
    "null",
    "task_tracking",
];
const OBSERVATIONS: &[&str] = &[
    "run",
    "run_ipython",
    "read",
    "write",
    "edit",
    "browse",
    "error",
    "agent_state_changed",
    "user_rejected",
    "recall",
    "think",
    "null",
    "delegate",
    "mcp",
    "success",
    "condense",
    "task_tracking",
];

pub fn parse(text: &str) -> Result<Session, Located> {
    // An evaluation's output.jsonl: one `{history}` object per line, each its own session.
    let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    if serde_json::from_str::<Value>(first).is_ok_and(|v| v.get("history").is_some())
        && text.trim().lines().count() > 1
    {
        let mut histories = Vec::new();
        for item in super::jsonl::<Value>(text) {
            let (line, mut v) = item?;
            let h = v.get_mut("history").map(Value::take).unwrap_or(Value::Null);
            histories.push(events_of(h).map_err(|e| Located::at(line, e.message))?);
        }
        return Ok(session(histories));
    }
    let doc = match document::<Value>(text)? {
        v @ Value::Array(_) => v,
        Value::Object(mut o) => o.remove("history").unwrap_or(Value::Null),
        _ => Value::Null,
    };
    Ok(session(vec![events_of(doc)?]))
}

/// The events of one history, or which one is malformed.
fn events_of(events: Value) -> Result<Vec<Event>, Located> {
    match serde_json::from_value::<Doc>(events.clone()) {
        Ok(Doc::Events(e)) | Ok(Doc::History { history: e }) => Ok(e),
        Err(_) => {
            // Say which event is malformed.
            let items = events.as_array().ok_or_else(|| {
                Located::at(1, "an OpenHands trajectory is an array of events (or an object whose `history` is one)")
            })?;
            for (i, item) in items.iter().enumerate() {
                if let Err(e) = serde_json::from_value::<Event>(item.clone()) {
                    return Err(Located::at(1, format!("event {i}: {e}")));
                }
            }
            Ok(Vec::new())
        }
    }
}

fn session(histories: Vec<Vec<Event>>) -> Session {
    let mut s = Session::new(Format::OpenHands);
    s.set_agent("openhands", None);
    let mut usage: Option<Tokens> = None;
    for (n, events) in histories.iter().enumerate() {
        if n > 0 {
            s.steps.push(Step::Boundary);
        }
        let mut pending: BTreeMap<i64, usize> = BTreeMap::new();
        for e in events.iter() {
            let at = e.timestamp.as_ref().and_then(seconds);
            if let Some(model) = e
                .tool_call_metadata
                .pointer("/model_response/model")
                .and_then(Value::as_str)
            {
                s.model(model);
            }
            if let Some(u) = e.llm_metrics.get("accumulated_token_usage") {
                let n = |k: &str| u.get(k).and_then(Value::as_u64);
                usage = Some(Tokens {
                    input: n("prompt_tokens"),
                    output: n("completion_tokens"),
                    cache_read: n("cache_read_tokens"),
                    cache_write: n("cache_write_tokens"),
                    reasoning: None,
                });
            }
            match (&e.action, &e.observation) {
                (Some(a), _) => {
                    s.entry(ACTIONS.contains(&a.as_str()), &format!("action/{a}"), at);
                    let action = match a.as_str() {
                        "run" if e.args.get("is_input").and_then(Value::as_bool) == Some(true) => {
                            Some(Action::Other)
                        }
                        "run" => Some(
                            e.args
                                .get("command")
                                .and_then(command_text)
                                .map_or(Action::Other, Action::Command),
                        ),
                        "edit" if str_at(&e.args, "command") == Some("view") => Some(Action::Other),
                        "edit" | "write" => Some(
                            str_at(&e.args, "path")
                                .map_or(Action::Other, |p| Action::Edit(vec![p.to_string()])),
                        ),
                        "browse" => str_at(&e.args, "url").map(|u| Action::Doc(u.to_string())),
                        "message" => {
                            if e.source.as_deref() == Some("user") {
                                let text = str_at(&e.args, "content")
                                    .or(e.message.as_deref())
                                    .unwrap_or("");
                                s.prompt(text);
                            }
                            continue;
                        }
                        "read" | "run_ipython" | "browse_interactive" | "mcp" => {
                            Some(Action::Other)
                        }
                        _ => continue,
                    };
                    let Some(action) = action else { continue };
                    let mut call = Call::new(a.clone(), action, at);
                    if str_at(&e.args, "command") == Some("create") {
                        call.content = str_at(&e.args, "file_text").map(str::to_string);
                    } else if a == "write" {
                        call.content = str_at(&e.args, "content").map(str::to_string);
                    }
                    if let Some(id) = e.id {
                        pending.insert(id, s.steps.len());
                    }
                    s.call(call);
                }
                (None, Some(o)) => {
                    s.entry(
                        OBSERVATIONS.contains(&o.as_str()),
                        &format!("observation/{o}"),
                        at,
                    );
                    let Some(Step::Call(call)) = e
                        .cause
                        .and_then(|c| pending.remove(&c))
                        .and_then(|i| s.steps.get_mut(i))
                    else {
                        continue;
                    };
                    call.duration = at.zip(call.at).map(|(b, a)| (b - a).max(0.0));
                    let content = e.content.as_str().unwrap_or("");
                    call.set_output(content);
                    if o == "error" || (o != "run" && content.trim_start().starts_with("ERROR:")) {
                        call.error = Some(true);
                        continue;
                    }
                    if o != "run" {
                        call.error = Some(false);
                        continue;
                    }
                    let code = e
                        .extras
                        .pointer("/metadata/exit_code")
                        .or_else(|| e.extras.get("exit_code"))
                        .and_then(Value::as_i64);
                    match code {
                        Some(-1) => call.error = Some(true),
                        Some(c) => call.exit_code = Some(c),
                        None => call.error = Some(false),
                    }
                }
                (None, None) => s.entry(false, "event without action or observation", at),
            }
        }
    }
    if let Some(u) = usage {
        s.tokens.add(&u);
    }
    s
}
