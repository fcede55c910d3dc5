//! One parser per format, each from the format's public description, each returning a
//! [`Session`] or a located error. Every parser deserializes into small serde models of just
//! the fields it reads; everything else in an entry is ignored, and an entry of a kind the
//! parser does not know is counted, never rejected.

pub mod claude;
pub mod codex;
pub mod native;
pub mod opencode;
pub mod openhands;
pub mod otel;
pub mod swe_agent;

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::format::Format;
use crate::session::{Action, Session};
use crate::shell::basename;

/// Where a file is malformed: a 1-based line, and column when known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located {
    pub line: usize,
    pub column: Option<usize>,
    pub message: String,
}

impl Located {
    pub fn at(line: usize, message: impl Into<String>) -> Located {
        Located {
            line,
            column: None,
            message: message.into(),
        }
    }

    /// A serde_json error of a whole document (its own line and column).
    pub fn json(e: &serde_json::Error) -> Located {
        Located {
            line: e.line().max(1),
            column: (e.column() > 0).then_some(e.column()),
            message: json_message(e),
        }
    }

    /// A serde_json error of one JSON Lines entry at `line`.
    pub fn in_line(line: usize, e: &serde_json::Error) -> Located {
        Located {
            line,
            column: (e.column() > 0).then_some(e.column()),
            message: json_message(e),
        }
    }
}

/// serde_json's message without its trailing ` at line L column C` (the location is ours).
fn json_message(e: &serde_json::Error) -> String {
    let text = e.to_string();
    match text.rfind(" at line ") {
        Some(i) => text[..i].to_string(),
        None => text,
    }
}

/// Parse `format` from `text`.
pub fn parse(format: Format, text: &str) -> Result<Session, Located> {
    match format {
        Format::ClaudeCode => claude::parse(text),
        Format::Codex => codex::parse(text),
        Format::OpenCode => opencode::parse(text),
        Format::OpenHands => openhands::parse(text),
        Format::SweAgent => swe_agent::parse(text),
        Format::Otel => otel::parse(text),
        Format::Native => native::parse(text),
    }
}

/// Each JSON value of each non-blank line of `text` as a `T`, with its 1-based line number. A
/// line holding several values one after the other (`{…}{…}`, two entries written without the
/// newline between them) yields each.
pub fn jsonl<'a, T: DeserializeOwned + 'a>(
    text: &'a str,
) -> impl Iterator<Item = Result<(usize, T), Located>> + 'a {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .flat_map(|(i, l)| {
            serde_json::Deserializer::from_str(l)
                .into_iter::<T>()
                .map(move |v| {
                    v.map(|v| (i + 1, v))
                        .map_err(|e| Located::in_line(i + 1, &e))
                })
                .scan(false, |failed, item| {
                    // After an error the rest of the line is not read.
                    if *failed {
                        return None;
                    }
                    *failed = item.is_err();
                    Some(item)
                })
        })
}

/// A whole JSON document as a `T`.
pub fn document<T: DeserializeOwned>(text: &str) -> Result<T, Located> {
    serde_json::from_str(text.trim_start_matches('\u{feff}')).map_err(|e| Located::json(&e))
}

/// The string at `key` of an object.
pub fn str_at<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

/// A command given as a string or as an argv array (`["bash", "-lc", "make"]` → `make`).
pub fn command_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Array(items) => {
            let words: Vec<&str> = items.iter().filter_map(Value::as_str).collect();
            if words.len() == 3
                && matches!(basename(words[0]), "bash" | "sh" | "zsh" | "dash")
                && words[1].starts_with('-')
                && words[1].ends_with('c')
            {
                return Some(words[2].to_string());
            }
            Some(
                words
                    .iter()
                    .map(|w| {
                        if w.is_empty()
                            || w.contains(|c: char| {
                                c.is_whitespace() || "'\"$`\\|&;<>(){}*?#".contains(c)
                            })
                        {
                            format!("'{}'", w.replace('\'', "'\\''"))
                        } else {
                            (*w).to_string()
                        }
                    })
                    .collect::<Vec<_>>()
                    .join(" "),
            )
        }
        _ => None,
    }
}

/// Files an `apply_patch`-style patch touches (`*** Add File: p`, `*** Update File: p`,
/// `*** Delete File: p`, `*** Move to: p`, and unified diff `+++ b/p` headers).
pub fn patch_files(patch: &str) -> Vec<String> {
    let mut files = Vec::new();
    for line in patch.lines() {
        let path = [
            "*** Add File: ",
            "*** Update File: ",
            "*** Delete File: ",
            "*** Move to: ",
            "+++ b/",
        ]
        .iter()
        .find_map(|p| line.strip_prefix(p));
        if let Some(p) = path
            .map(str::trim)
            .filter(|p| !p.is_empty() && *p != "/dev/null")
            && !files.iter().any(|f| f == p)
        {
            files.push(p.to_string());
        }
    }
    files
}

/// What a tool call did, from a tool's name and its input object, for tools named the way
/// most agents name them (`bash`/`shell`, `edit`/`write`, `webfetch`/`websearch`, doc tools).
pub fn generic_action(tool: &str, input: &Value) -> Action {
    let lower = tool.to_ascii_lowercase();
    let field = |keys: &[&str]| keys.iter().find_map(|k| input.get(*k)).cloned();
    let string = |keys: &[&str]| field(keys).and_then(|v| v.as_str().map(str::to_string));
    let shell_like = [
        "bash", "shell", "terminal", "exec", "run", "command", "execute",
    ]
    .iter()
    .any(|k| lower.contains(k));
    if shell_like
        && let Some(cmd) = field(&["command", "cmd", "script"])
            .as_ref()
            .and_then(command_text)
    {
        return Action::Command(cmd);
    }
    if ["edit", "write", "patch", "create", "replace", "insert"]
        .iter()
        .any(|k| lower.contains(k))
    {
        if let Some(p) = string(&["file_path", "filePath", "path", "file", "notebook_path"]) {
            return Action::Edit(vec![p]);
        }
        if let Some(patch) = string(&["patch", "patchText", "input", "diff"]) {
            let files = patch_files(&patch);
            if !files.is_empty() {
                return Action::Edit(files);
            }
        }
    }
    let doc_like = ["fetch", "search", "browse", "doc", "context7", "web"]
        .iter()
        .any(|k| lower.contains(k));
    if doc_like && !lower.contains("grep") && !lower.contains("file") {
        if let Some(t) = string(&["url", "query", "libraryName", "library", "topic", "q"]) {
            return Action::Doc(t);
        }
    }
    Action::Other
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argv_commands_and_patches() {
        let v: Value = serde_json::json!(["bash", "-lc", "cargo test && ./t --threads 1"]);
        assert_eq!(
            command_text(&v).as_deref(),
            Some("cargo test && ./t --threads 1")
        );
        let v: Value = serde_json::json!(["./t", "--name", "a b"]);
        assert_eq!(command_text(&v).as_deref(), Some("./t --name 'a b'"));
        let p = "*** Begin Patch\n*** Update File: src/a.c\n@@\n-x\n+y\n*** Add File: b.h\n+z\n*** End Patch\n";
        assert_eq!(patch_files(p), vec!["src/a.c", "b.h"]);
        assert_eq!(
            generic_action("bash", &serde_json::json!({"command": "ls"})),
            Action::Command("ls".into())
        );
        assert_eq!(
            generic_action("edit", &serde_json::json!({"filePath": "a.c"})),
            Action::Edit(vec!["a.c".into()])
        );
        assert_eq!(
            generic_action("webfetch", &serde_json::json!({"url": "https://d/x"})),
            Action::Doc("https://d/x".into())
        );
        assert_eq!(
            generic_action("read", &serde_json::json!({"filePath": "a.c"})),
            Action::Other
        );
    }
}
