//! OpenHands trajectories: a JSON array of events (or an object whose `history` is one), each
//! `{id, timestamp, source, message}` plus either `action` + `args` or `observation` +
//! `content` + `extras` + `cause` (the id of the action it answers). `run` actions carry
//! `args.command`; their `run` observation's `extras.metadata.exit_code` (older:
//! `extras.exit_code`) is the exit status (−1: still running or timed out, a failure with no
//! status); `edit`/`write` name `args.path`, `browse` `args.url`; a `message` from the user is a
//! prompt. Models and token usage come from `tool_call_metadata.model_response.model` and
//! `llm_metrics.accumulated_token_usage`.

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
    let events = match document::<Value>(text)? {
        v @ Value::Array(_) => v,
        Value::Object(mut o) => o.remove("history").unwrap_or(Value::Null),
        _ => Value::Null,
    };
    let events: Vec<Event> = match serde_json::from_value::<Doc>(events.clone()) {
        Ok(Doc::Events(e)) | Ok(Doc::History { history: e }) => e,
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
            Vec::new()
        }
    };
    let mut s = Session::new(Format::OpenHands);
    s.set_agent("openhands", None);
    let mut pending: BTreeMap<i64, usize> = BTreeMap::new();
    let mut usage: Option<Tokens> = None;
    for (i, e) in events.iter().enumerate() {
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
                    "run" => e
                        .args
                        .get("command")
                        .and_then(command_text)
                        .map(Action::Command),
                    "edit" | "write" => {
                        str_at(&e.args, "path").map(|p| Action::Edit(vec![p.to_string()]))
                    }
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
                    "read" | "run_ipython" | "browse_interactive" | "mcp" => Some(Action::Other),
                    _ => continue,
                };
                let Some(action) = action else {
                    return Err(Located::at(
                        1,
                        format!("event {i}: a `{a}` action without its argument"),
                    ));
                };
                if let Some(id) = e.id {
                    pending.insert(id, s.steps.len());
                }
                s.call(Call::new(a.clone(), action, at));
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
                if o == "error" {
                    call.error = Some(true);
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
    if let Some(u) = usage {
        s.tokens.add(&u);
    }
    Ok(s)
}
