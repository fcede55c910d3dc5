//! qualify's own trace format: JSON Lines, one event per line with a string `type` — `plan`,
//! `tool_call` (`tool`, `command`, `exit_code`, `ok`, `duration`, `output`), `edit` (`file`, `path` or
//! `files`), `test_run` (`command`; `ok`/`passed`, or `status`/`outcome`/`result` = `failed`,
//! …), `error`, `repair`, `message` (`role`, `text`: a user's is a prompt) — and a time
//! `ts`/`timestamp`/`time` (RFC 3339 or Unix seconds); any event may name its `model` and its
//! `agent` (with `agent_version`), and count `input_tokens` and `output_tokens`. Events of
//! other types are counted as not understood.

use serde_json::{Map, Value};

use super::Located;
use crate::format::{Format, NATIVE_TYPES};
use crate::session::{Action, Call, Session, Step, seconds};

pub fn parse(text: &str) -> Result<Session, Located> {
    let mut s = Session::new(Format::Native);
    for (i, line) in text.lines().enumerate() {
        let line_no = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        let v: Value = serde_json::from_str(line).map_err(|e| Located {
            line: line_no,
            column: (e.column() > 0).then_some(e.column()),
            message: format!(
                "not a JSON object ({}); each line must be one event",
                super::json_message(&e)
            ),
        })?;
        let Some(o) = v.as_object() else {
            return Err(Located::at(
                line_no,
                "not a JSON object; each line must be one event",
            ));
        };
        let Some(kind) = o.get("type").and_then(Value::as_str) else {
            return Err(Located::at(
                line_no,
                format!(
                    "the event has no string `type` ({}, …)",
                    NATIVE_TYPES.join(", ")
                ),
            ));
        };
        let at = ["ts", "timestamp", "time"]
            .iter()
            .find_map(|k| o.get(*k))
            .and_then(seconds);
        s.entry(NATIVE_TYPES.contains(&kind), kind, at);
        if let Some(m) = o.get("model").and_then(Value::as_str) {
            s.model(m);
        }
        let n = |k: &str| o.get(k).and_then(Value::as_u64);
        s.tokens.add(&crate::session::Tokens {
            input: n("input_tokens"),
            output: n("output_tokens"),
            ..Default::default()
        });
        if let Some(a) = o.get("agent").and_then(Value::as_str) {
            s.set_agent(a, o.get("agent_version").and_then(Value::as_str));
        }
        let text = |k: &str| o.get(k).and_then(Value::as_str).map(str::to_string);
        match kind {
            "tool_call" => {
                let tool = text("tool")
                    .or_else(|| text("name"))
                    .unwrap_or_else(|| "tool".into());
                let action = match o.get("command").and_then(super::command_text) {
                    Some(c) => Action::Command(c),
                    None => Action::Other,
                };
                let mut call = Call::new(tool, action, at);
                call.exit_code = o
                    .get("exit_code")
                    .or_else(|| o.get("exit"))
                    .and_then(Value::as_i64);
                call.error = o
                    .get("ok")
                    .and_then(Value::as_bool)
                    .map(|ok| !ok)
                    .or(o.get("error").and_then(Value::as_bool));
                call.duration = o.get("duration").and_then(Value::as_f64);
                if let Some(out) = o.get("output").and_then(Value::as_str) {
                    call.set_output(out);
                }
                s.call(call);
            }
            "edit" => {
                let mut files: Vec<String> = o
                    .get("files")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(|f| f.as_str().map(str::to_string))
                    .collect();
                files.extend(text("file").or_else(|| text("path")));
                if !files.is_empty() {
                    s.steps.push(Step::Edited(files));
                }
            }
            "test_run" => s.steps.push(Step::TestRun {
                command: o.get("command").and_then(super::command_text),
                passed: test_passed(o),
                at,
            }),
            "error" => s.steps.push(Step::Error),
            "repair" => s.steps.push(Step::Repair { at }),
            "message" if text("role").as_deref() == Some("user") => {
                s.prompt(&text("text").or_else(|| text("content")).unwrap_or_default());
            }
            _ => {}
        }
    }
    Ok(s)
}

fn test_passed(o: &Map<String, Value>) -> Option<bool> {
    for k in ["ok", "passed"] {
        if let Some(b) = o.get(k).and_then(Value::as_bool) {
            return Some(b);
        }
    }
    for k in ["outcome", "status", "result"] {
        if let Some(t) = o.get(k).and_then(Value::as_str) {
            return Some(!matches!(
                t.to_ascii_lowercase().as_str(),
                "fail" | "failed" | "failure" | "error" | "errored"
            ));
        }
    }
    None
}
