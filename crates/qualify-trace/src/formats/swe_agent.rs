//! SWE-agent trajectories (`*.traj`): one JSON document `{trajectory: [{action, observation,
//! execution_time, state, …}], history, info, replay_config}`. Each step's `action` is a shell
//! command or one of SWE-agent's own tools ([`OWN_TOOLS`]: `open`, `goto`, `find_file`,
//! `search_*`, `submit`, `disassemble`, `decompile`, `debug_*`, `connect_*`, … — not shell
//! commands), of which `str_replace_editor create|str_replace|insert PATH`, `create PATH` and
//! `edit`/`insert` (on the open file) edit files; `execution_time` is its duration and
//! `observation` what it printed (a command the shell could not start is told by it; an edit
//! answered `Your proposed edit has introduced new syntax error(s)` or `No replacement was
//! performed` was not applied: an error, not an edit). Paths are made absolute against the
//! step's `working_dir` (`state`), so a file named relatively and absolutely is one file. The
//! format records no exit status: every command's result is unknown. The model is
//! `replay_config.agent.model.name`, token counts `info.model_stats.tokens_sent`/
//! `tokens_received`, the version `info.swe_agent_version`; the prompt is the task statement —
//! the user messages of `history` before the agent's first action, a demonstration excepted
//! (older trajectories mark no message type, newer ones mark the task an `observation`).

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
    observation: Value,
    #[serde(default)]
    execution_time: Option<f64>,
    #[serde(default)]
    state: Value,
}

/// SWE-agent's own tools (its `tools/*/config.yaml` bundles and the EnIGMA CTF tools): they
/// are not shell commands.
pub const OWN_TOOLS: &[&str] = &[
    "open",
    "open_file",
    "goto",
    "scroll_up",
    "scroll_down",
    "find_file",
    "search_dir",
    "search_file",
    "submit",
    "filemap",
    "set_cursors",
    "view_image",
    "exit_forfeit",
    "exit_cost",
    "exit_context",
    "exit_format",
    "exit_api",
    "forfeit",
    "skip",
    "disassemble",
    "decompile",
    "debug_start",
    "debug_add_breakpoint",
    "debug_continue",
    "debug_step",
    "debug_exec",
    "debug_stop",
    "connect_start",
    "connect_sendline",
    "connect_exec",
    "connect_stop",
    "open_site",
    "close_site",
    "screenshot_site",
    "click_mouse",
    "double_click_mouse",
    "move_mouse",
    "drag_mouse",
    "type_text",
    "scroll_on_page",
    "press_keys_on_page",
    "execute_script_on_page",
    "navigate_back",
    "navigate_forward",
    "reload_page",
    "get_console_output",
    "set_browser_window_size",
    "wait_time",
];

/// An edit SWE-agent refused to apply.
fn edit_refused(observation: &str) -> bool {
    observation.contains("Your proposed edit has introduced new syntax error(s)")
        || observation.contains("No replacement was performed")
        || observation.trim_start().starts_with("Usage: edit")
}

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
    // The task statement: user messages before the agent's first action, demonstrations
    // excepted.
    for h in t
        .history
        .iter()
        .take_while(|h| str_at(h, "role") != Some("assistant"))
    {
        let text = crate::session::text_of(h.get("content").unwrap_or(&Value::Null));
        let demo = str_at(h, "message_type") == Some("demonstration")
            || h.get("is_demo").and_then(Value::as_bool) == Some(true)
            || text.trim_start().starts_with("Here is a demonstration");
        if str_at(h, "role") == Some("user") && !demo {
            s.prompt(&text);
        }
    }
    for step in t.trajectory {
        s.entry(true, "step", None);
        let action = step.action.trim();
        if action.is_empty() {
            continue;
        }
        let state = match &step.state {
            Value::String(j) => serde_json::from_str::<Value>(j).unwrap_or(Value::Null),
            v => v.clone(),
        };
        let dir = str_at(&state, "working_dir").map(|d| d.trim_end_matches('/').to_string());
        if s.cwd.is_none() {
            s.cwd = dir.clone();
        }
        let absolute = |p: &str| -> String {
            let p = p.trim_matches(|c| c == '"' || c == '\'');
            match &dir {
                Some(d) if !p.starts_with('/') => {
                    format!("{d}/{}", p.trim_start_matches("./"))
                }
                _ => p.to_string(),
            }
        };
        let open_file = str_at(&state, "open_file")
            .filter(|f| !f.is_empty() && *f != "n/a")
            .map(str::to_string);
        let observation = crate::session::text_of(&step.observation);
        let words: Vec<&str> = action.split_whitespace().collect();
        let first = words.first().copied().unwrap_or("");
        let (tool, act) = match first {
            "str_replace_editor" | "edit_file" => match words.get(1).copied() {
                Some("create" | "str_replace" | "insert" | "undo_edit") => (
                    first,
                    words
                        .get(2)
                        .map_or(Action::Other, |p| Action::Edit(vec![absolute(p)])),
                ),
                _ => (first, Action::Other),
            },
            "create" => (
                "create",
                words
                    .get(1)
                    .map_or(Action::Other, |p| Action::Edit(vec![absolute(p)])),
            ),
            "edit" | "insert" => (
                first,
                open_file
                    .clone()
                    .map_or(Action::Other, |p| Action::Edit(vec![absolute(&p)])),
            ),
            _ if OWN_TOOLS.contains(&first) => (first, Action::Other),
            _ => ("bash", Action::Command(action.to_string())),
        };
        let mut call = Call::new(tool, act, None);
        call.duration = step.execution_time;
        if matches!(call.action, Action::Edit(_)) && edit_refused(&observation) {
            call.error = Some(true);
        }
        call.set_output(&observation);
        s.call(call);
    }
    Ok(s)
}
