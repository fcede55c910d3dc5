//! OpenTelemetry GenAI spans as OTLP JSON: an `ExportTraceServiceRequest` (`{resourceSpans:
//! [{resource, scopeSpans: [{spans}]}]}`), or JSON Lines of them as the collector's file
//! exporter writes. A span is understood when it has `gen_ai.operation.name`:
//! `execute_tool` spans are tool calls (`gen_ai.tool.name`, `gen_ai.tool.call.arguments`,
//! `gen_ai.tool.call.result`; the span's error status or `error.type` is the error flag, its
//! start and end times the duration); `chat`, `text_completion`, `generate_content`,
//! `invoke_agent` spans name the model (`gen_ai.response.model`, else
//! `gen_ai.request.model`), count tokens (`gen_ai.usage.input_tokens`, `…output_tokens`) and
//! hold the prompts (`gen_ai.input.messages`, digested per distinct user text). Attribute
//! values are OTLP `AnyValue`s; 64-bit integers and times may be JSON strings.

use serde::Deserialize;
use serde_json::Value;

use super::{Located, command_text, generic_action, jsonl};
use crate::format::Format;
use crate::session::{Action, Call, Session, Tokens};

#[derive(Deserialize)]
struct Request {
    #[serde(rename = "resourceSpans")]
    resource_spans: Vec<ResourceSpans>,
}

#[derive(Deserialize)]
struct ResourceSpans {
    #[serde(default)]
    resource: Option<Resource>,
    #[serde(default, rename = "scopeSpans", alias = "instrumentationLibrarySpans")]
    scope_spans: Vec<ScopeSpans>,
}

#[derive(Deserialize)]
struct Resource {
    #[serde(default)]
    attributes: Vec<KeyValue>,
}

#[derive(Deserialize)]
struct ScopeSpans {
    #[serde(default)]
    spans: Vec<Span>,
}

#[derive(Deserialize)]
struct Span {
    name: String,
    #[serde(default, rename = "startTimeUnixNano")]
    start: Option<Value>,
    #[serde(default, rename = "endTimeUnixNano")]
    end: Option<Value>,
    #[serde(default)]
    attributes: Vec<KeyValue>,
    #[serde(default)]
    status: Option<Status>,
}

#[derive(Deserialize)]
struct Status {
    #[serde(default)]
    code: Option<Value>,
}

#[derive(Deserialize)]
struct KeyValue {
    key: String,
    #[serde(default)]
    value: Value,
}

/// An OTLP `AnyValue` as plain JSON.
fn any(v: &Value) -> Value {
    let Some(o) = v.as_object() else {
        return v.clone();
    };
    if let Some(s) = o.get("stringValue") {
        return s.clone();
    }
    if let Some(i) = o.get("intValue") {
        return match i {
            Value::String(t) => t.parse::<i64>().map(Value::from).unwrap_or(Value::Null),
            other => other.clone(),
        };
    }
    for k in ["doubleValue", "boolValue"] {
        if let Some(x) = o.get(k) {
            return x.clone();
        }
    }
    if let Some(values) = v.pointer("/arrayValue/values").and_then(Value::as_array) {
        return Value::Array(values.iter().map(any).collect());
    }
    Value::Null
}

fn attr(attrs: &[KeyValue], key: &str) -> Option<Value> {
    attrs.iter().find(|a| a.key == key).map(|a| any(&a.value))
}

fn nanos(v: &Option<Value>) -> Option<f64> {
    match v.as_ref()? {
        Value::String(s) => s.parse::<f64>().ok(),
        other => other.as_f64(),
    }
    .filter(|n| *n > 0.0)
    .map(|n| n / 1e9)
}

pub fn parse(text: &str) -> Result<Session, Located> {
    let requests: Vec<Request> =
        match serde_json::from_str::<Request>(text.trim_start_matches('\u{feff}')) {
            Ok(r) => vec![r],
            Err(whole) => {
                // JSON Lines of requests: several lines, the first a JSON value of its own.
                let lines = text.trim().lines().count() > 1
                    && text
                        .trim_start()
                        .lines()
                        .next()
                        .is_some_and(|l| serde_json::from_str::<Value>(l).is_ok());
                if !lines {
                    return Err(Located::json(&whole));
                }
                jsonl::<Request>(text)
                    .map(|r| r.map(|(_, r)| r))
                    .collect::<Result<_, _>>()?
            }
        };
    let mut s = Session::new(Format::Otel);
    for r in &requests {
        for rs in &r.resource_spans {
            let res = rs
                .resource
                .as_ref()
                .map(|r| r.attributes.as_slice())
                .unwrap_or(&[]);
            if let Some(Value::String(service)) = attr(res, "service.name") {
                let version = attr(res, "service.version");
                s.set_agent(&service, version.as_ref().and_then(Value::as_str));
            }
            for span in rs.scope_spans.iter().flat_map(|ss| &ss.spans) {
                self::span(&mut s, span);
            }
        }
    }
    Ok(s)
}

fn span(s: &mut Session, span: &Span) {
    let at = nanos(&span.start);
    let a = &span.attributes;
    let op = attr(a, "gen_ai.operation.name");
    let Some(op) = op.as_ref().and_then(Value::as_str) else {
        s.entry(false, "span without gen_ai.operation.name", at);
        return;
    };
    s.entry(true, op, at);
    if let Some(Value::String(agent)) = attr(a, "gen_ai.agent.name")
        && s.agent.is_none()
    {
        s.set_agent(&agent, None);
    }
    match op {
        "execute_tool" => {
            let tool = attr(a, "gen_ai.tool.name")
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_else(|| span.name.trim_start_matches("execute_tool ").to_string());
            let args = match attr(a, "gen_ai.tool.call.arguments") {
                Some(Value::String(j)) => serde_json::from_str(&j).unwrap_or(Value::String(j)),
                Some(v) => v,
                None => Value::Null,
            };
            let action = match &args {
                Value::String(cmd) if is_shell(&tool) => Action::Command(cmd.clone()),
                _ => match generic_action(&tool, &args) {
                    Action::Other if is_shell(&tool) => args
                        .get("command")
                        .and_then(command_text)
                        .map_or(Action::Other, Action::Command),
                    other => other,
                },
            };
            let mut call = Call::new(tool, action, at);
            call.duration = at.zip(nanos(&span.end)).map(|(a, b)| (b - a).max(0.0));
            let code = span.status.as_ref().and_then(|st| st.code.as_ref());
            let error = matches!(code, Some(Value::Number(n)) if n.as_i64() == Some(2))
                || matches!(code, Some(Value::String(c)) if c == "STATUS_CODE_ERROR")
                || attr(a, "error.type").is_some();
            call.error = Some(error);
            if let Some(result) = attr(a, "gen_ai.tool.call.result") {
                let result = match result {
                    Value::String(j) => serde_json::from_str(&j).unwrap_or(Value::Null),
                    v => v,
                };
                call.exit_code = ["exit_code", "exitCode", "exit"]
                    .iter()
                    .find_map(|k| result.get(*k).and_then(Value::as_i64));
            }
            s.call(call);
        }
        _ => {
            if let Some(Value::String(m)) =
                attr(a, "gen_ai.response.model").or_else(|| attr(a, "gen_ai.request.model"))
            {
                s.model(&m);
            }
            let n = |k: &str| attr(a, k).and_then(|v| v.as_u64());
            let tokens = Tokens {
                input: n("gen_ai.usage.input_tokens"),
                output: n("gen_ai.usage.output_tokens"),
                cache_read: n("gen_ai.usage.cache_read.input_tokens"),
                cache_write: n("gen_ai.usage.cache_creation.input_tokens"),
                reasoning: None,
            };
            s.tokens.add(&tokens);
            if let Some(messages) = attr(a, "gen_ai.input.messages") {
                let messages = match messages {
                    Value::String(j) => serde_json::from_str(&j).unwrap_or(Value::Null),
                    v => v,
                };
                for m in messages.as_array().into_iter().flatten() {
                    if m.get("role").and_then(Value::as_str) != Some("user") {
                        continue;
                    }
                    let text: Vec<&str> = m
                        .get("parts")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .filter_map(|p| p.get("content").and_then(Value::as_str))
                        .collect();
                    s.prompt(&text.join("\n"));
                }
            }
        }
    }
}

fn is_shell(tool: &str) -> bool {
    let t = tool.to_ascii_lowercase();
    [
        "bash",
        "shell",
        "terminal",
        "exec",
        "run_command",
        "execute_command",
    ]
    .iter()
    .any(|k| t.contains(k))
}
