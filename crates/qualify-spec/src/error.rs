//! Errors a spec can produce: [`Diagnostic`] (one problem at a file position, with an optional
//! help line) and [`SpecError`] (the file could not be read, or it holds one or more problems).
//! Also owns the translation of `toml` deserializer errors into diagnostics.

use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};

/// One problem in a spec, at a 1-based line and column (columns count characters).
///
/// Displays as `path:line:col: error: message`, followed by `  help: ...` when there is help.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    pub path: PathBuf,
    pub line: usize,
    pub column: usize,
    pub message: String,
    pub help: Option<String>,
    /// The problem lies in a `--set` override, not the file: the flag (`--set
    /// load.duration=5`), shown in place of the file's position.
    pub flag: Option<String>,
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.flag {
            Some(flag) => write!(f, "{flag}: error: {}", self.message)?,
            None => write!(
                f,
                "{}:{}:{}: error: {}",
                self.path.display(),
                self.line,
                self.column,
                self.message
            )?,
        }
        if let Some(help) = &self.help {
            write!(f, "\n  help: {help}")?;
        }
        Ok(())
    }
}

/// Why a spec could not be loaded. The command line maps every variant to exit status 2.
#[derive(Debug, thiserror::Error)]
pub enum SpecError {
    /// The file could not be read.
    #[error("{}: error: cannot read the spec: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The file was read but is not a valid spec: one diagnostic per problem, in file order.
    #[error("{}", join_diagnostics(.0))]
    Invalid(Vec<Diagnostic>),
}

impl SpecError {
    /// The problems found, in file order (empty for [`SpecError::Read`]).
    pub fn diagnostics(&self) -> &[Diagnostic] {
        match self {
            SpecError::Read { .. } => &[],
            SpecError::Invalid(diagnostics) => diagnostics,
        }
    }
}

fn join_diagnostics(diagnostics: &[Diagnostic]) -> String {
    diagnostics
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}

/// 1-based line and column (in characters) of a byte offset into `text`.
pub(crate) fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before[line_start..].chars().count() + 1;
    (line, column)
}

/// The spec's bytes as text; invalid UTF-8 is a diagnostic at the first bad byte's line and
/// column (counted in the valid text before it).
pub(crate) fn utf8(bytes: Vec<u8>, path: &Path) -> Result<String, SpecError> {
    String::from_utf8(bytes).map_err(|e| {
        let error = e.utf8_error();
        let bytes = e.into_bytes();
        let valid = error.valid_up_to();
        let before = std::str::from_utf8(&bytes[..valid]).unwrap_or_default();
        let bad = &bytes[valid..valid + error.error_len().unwrap_or(bytes.len() - valid)];
        let shown: Vec<String> = bad.iter().map(|b| format!("0x{b:02x}")).collect();
        let d = diagnostic_at(
            before,
            path,
            valid,
            format!(
                "invalid UTF-8 (byte{} {}): a spec is UTF-8 text",
                if bad.len() == 1 { "" } else { "s" },
                shown.join(" ")
            ),
            Some("save the file as UTF-8; the text before this point was read".into()),
        );
        SpecError::Invalid(vec![d])
    })
}

/// A diagnostic at a byte offset of `text`.
pub(crate) fn diagnostic_at(
    text: &str,
    path: &Path,
    offset: usize,
    message: String,
    help: Option<String>,
) -> Diagnostic {
    let (line, column) = line_col(text, offset);
    Diagnostic {
        path: path.to_path_buf(),
        line,
        column,
        message,
        help,
        flag: None,
    }
}

/// Translate a syntax or shape error from the `toml` deserializer, rewording serde's messages
/// (`unknown field`, `unknown variant`, `missing field`, `invalid type`) into the spec's terms.
pub(crate) fn from_toml(error: &toml::de::Error, text: &str, path: &Path) -> Diagnostic {
    let span = error.span().unwrap_or(0..0);
    let raw = error.message().trim();
    let table = table_at(text, span.start);
    let (message, help) = reword(raw, table.as_deref(), text, &span);
    diagnostic_at(text, path, span.start, message, help)
}

fn reword(
    raw: &str,
    table: Option<&str>,
    text: &str,
    span: &Range<usize>,
) -> (String, Option<String>) {
    let within = match table {
        Some(table) => format!(" in {table}"),
        None => " at the top level".to_string(),
    };
    if let Some(rest) = raw.strip_prefix("unknown field ") {
        let (name, expected) = split_expected(rest);
        let help = if expected.is_empty() {
            "this table takes no keys".to_string()
        } else {
            format!("expected one of: {}", expected.join(", "))
        };
        return (format!("unknown key {name}{within}"), Some(help));
    }
    if let Some(rest) = raw.strip_prefix("unknown variant ") {
        let (name, expected) = split_expected(rest);
        return (
            format!("unknown value {name}"),
            Some(format!("expected one of: {}", expected.join(", "))),
        );
    }
    if let Some(rest) = raw.strip_prefix("missing field ") {
        // The spec's required top-level tables; no table has a required key of these names.
        let message = match (rest.trim_matches('`'), table) {
            (name @ ("artifact" | "claim"), _) => format!("missing table [{name}]"),
            (_, None) => format!("missing key {rest} at the top level"),
            (_, Some(table)) => format!("missing key {rest} in {table}"),
        };
        let help = match rest.trim_matches('`') {
            "artifact" => Some("add [artifact] with name, command and workdir".to_string()),
            "claim" => Some(
                "add [claim] with level = \"functional\", \"trial\" or \"production\"".to_string(),
            ),
            _ => None,
        };
        return (message, help);
    }
    if raw == "invalid type: map, expected a sequence" {
        let found = text.get(span.clone()).unwrap_or("").trim();
        if let Some(name) = found
            .strip_prefix('[')
            .and_then(|s| s.strip_suffix(']'))
            .filter(|s| !s.starts_with('['))
        {
            return (
                format!("[{name}] must be an array of tables"),
                Some(format!("write [[{name}]] (double brackets) for each entry")),
            );
        }
    }
    if let Some(rest) = raw.strip_prefix("invalid type: ") {
        return (format!("wrong type: found {rest}"), None);
    }
    if let Some(rest) = raw.strip_prefix("invalid value: ") {
        return (format!("invalid value: found {rest}"), None);
    }
    if raw == "duplicate key" {
        let key = text.get(span.clone()).unwrap_or("").trim();
        return (format!("duplicate key `{key}`{within}"), None);
    }
    (format!("invalid TOML: {raw}"), None)
}

/// Split serde's "`name`, expected one of `a`, `b`" / "`name`, expected `a` or `b`" /
/// "`name`, there are no fields" into the name and the expected names.
fn split_expected(rest: &str) -> (String, Vec<String>) {
    let (name, tail) = match rest.split_once(", ") {
        Some((name, tail)) => (name.to_string(), tail),
        None => (rest.to_string(), ""),
    };
    let expected = tail
        .split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect();
    (name, expected)
}

/// The table header (`[artifact]`, `[[axis]]`) that governs a byte offset, if any.
pub(crate) fn table_at(text: &str, offset: usize) -> Option<String> {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    // The current line counts only if the offset sits on the header itself.
    let line_end = text[offset..].find('\n').map_or(text.len(), |i| offset + i);
    text[..line_end].lines().rev().find_map(|line| {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.starts_with('[') && line.ends_with(']') {
            let inner = line.trim_start_matches('[').trim_end_matches(']').trim();
            let double = line.starts_with("[[");
            Some(if double {
                format!("[[{inner}]]")
            } else {
                format!("[{inner}]")
            })
        } else {
            None
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_and_column_are_one_based_and_count_characters() {
        let text = "ab\ncé=1\n";
        assert_eq!(line_col(text, 0), (1, 1));
        assert_eq!(line_col(text, 3), (2, 1));
        // 'é' is two bytes: the '=' after it is the third character.
        assert_eq!(line_col(text, 6), (2, 3));
        assert_eq!(line_col(text, 100), (3, 1));
    }

    #[test]
    fn table_headers_govern_following_lines() {
        let text = "top = 1\n[artifact]\nname = 1 # [x]\n\n[[axis]]\nname = 2\n";
        assert_eq!(table_at(text, 0), None);
        assert_eq!(table_at(text, 20).as_deref(), Some("[artifact]"));
        let axis = text.find("name = 2").unwrap_or(0);
        assert_eq!(table_at(text, axis).as_deref(), Some("[[axis]]"));
    }

    #[test]
    fn diagnostics_display_with_help() {
        let d = Diagnostic {
            path: "q.toml".into(),
            line: 3,
            column: 7,
            message: "bad".into(),
            help: Some("do this".into()),
            flag: None,
        };
        assert_eq!(d.to_string(), "q.toml:3:7: error: bad\n  help: do this");
    }
}
