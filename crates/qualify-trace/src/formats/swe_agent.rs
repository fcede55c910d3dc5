//! SWE-agent trajectories (`*.traj`): one JSON document `{trajectory: [{action, observation,
//! execution_time, state, …}], history, info, replay_config}`. Each step's `action` is a shell
//! command or one of SWE-agent's own tools (`str_replace_editor create|str_replace|insert
//! PATH`, `create PATH`, `edit N:M` on the open file, `open`, `goto`, `scroll_*`, `find_file`,
//! `search_*`, `submit`); `execution_time` is its duration. The format records no exit status:
//! commands are kept with their status unknown. The model is `replay_config.agent.model.name`,
//! token counts `info.model_stats.tokens_sent`/`tokens_received`, the version
//! `info.swe_agent_version`; user messages of `history` that are not observations are prompts.

use serde::Deserialize;
use serde_json::Value;

use super::{Located, document, str_at};
use crate::format::Format;
use crate::session::{Action, Call, Session, Tokens};

#[derive(Deserialize)]
struct Traj {
    trajectory: Vec<TrajStep>,
    #[serde(default)]
    history: Vec<Value>,
    #[serde(default)]
    info: Value,
    #[serde(default)]
    replay_config: Value,
}

#[derive(Deserialize)]
struct TrajStep {
    action: String,
    #[serde(default)]
    execution_time: Option<f64>,
    #[serde(default)]
    state: Value,
}

const OWN_TOOLS: &[&str] = &[
    "open",
    "goto",
    "scroll_up",
    "scroll_down",
    "find_file",
    "search_dir",
    "search_file",
    "submit",
    "filemap",
    "exit_forfeit",
    "exit_cost",
    "exit_context",
    "exit_format",
    "skip",
];

pub fn parse(text: &str) -> Result<Session, Located> {
    let t: Traj = document(text)?;
    let mut s = Session::new(Format::SweAgent);
    s.set_agent("swe-agent", str_at(&t.info, "swe_agent_version"));
    let config = match &t.replay_config {
        Value::String(j) => serde_json::from_str(j).unwrap_or(Value::Null),
        other => other.clone(),
    };
    if let Some(m) = config.pointer("/agent/model/name").and_then(Value::as_str) {
        s.model(m);
    }
    if let Some(stats) = t.info.get("model_stats") {
        s.tokens.add(&Tokens {
            input: stats.get("tokens_sent").and_then(Value::as_u64),
            output: stats.get("tokens_received").and_then(Value::as_u64),
            ..Tokens::default()
        });
    }
    for h in &t.history {
        let kind = str_at(h, "message_type").unwrap_or("");
        if str_at(h, "role") == Some("user") && !matches!(kind, "observation" | "demonstration") {
            s.prompt(&crate::session::text_of(
                h.get("content").unwrap_or(&Value::Null),
            ));
        }
    }
    for step in t.trajectory {
        s.entry(true, "step", None);
        let action = step.action.trim();
        if action.is_empty() {
            continue;
        }
        let words: Vec<&str> = action.split_whitespace().collect();
        let first = words.first().copied().unwrap_or("");
        let open_file = || {
            match &step.state {
                Value::String(j) => serde_json::from_str::<Value>(j)
                    .ok()
                    .and_then(|v| str_at(&v, "open_file").map(str::to_string)),
                v => str_at(v, "open_file").map(str::to_string),
            }
            .filter(|f| !f.is_empty() && f != "n/a")
        };
        let (tool, act) = match first {
            "str_replace_editor" | "edit_file" => match words.get(1).copied() {
                Some("create" | "str_replace" | "insert" | "undo_edit") => (
                    first,
                    words
                        .get(2)
                        .map_or(Action::Other, |p| Action::Edit(vec![(*p).to_string()])),
                ),
                _ => (first, Action::Other),
            },
            "create" => (
                "create",
                words
                    .get(1)
                    .map_or(Action::Other, |p| Action::Edit(vec![(*p).to_string()])),
            ),
            "edit" | "insert" => (
                first,
                open_file().map_or(Action::Other, |p| Action::Edit(vec![p])),
            ),
            _ if OWN_TOOLS.contains(&first) => (first, Action::Other),
            _ => ("bash", Action::Command(action.to_string())),
        };
        let mut call = Call::new(tool, act, None);
        call.duration = step.execution_time;
        s.call(call);
    }
    Ok(s)
}
