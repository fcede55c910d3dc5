//! `qualify run spec.toml --set KEY=VALUE`: a quick run's changes to the spec file, checked as
//! the file is and located at the flag when wrong. [`Override`] is one flag; [`apply`] edits
//! the spec's text where each key is (or inserts it into its table) and maps every problem
//! the checker then finds back — to the flag when it lies in an edited value, else to the
//! file's own line and column.
//!
//! Keys are dotted paths of tables (`load.duration`, `limits.timeout`,
//! `service.ready.within`); `axis.NAME` replaces the values of the axis called NAME (`100,200`:
//! a comma-separated list; its `range`, `step` and `scale` go), `axis.NAME.KEY` sets one key of
//! it, `slo.METRIC.KEY` one key of the `[[slo]]` with that metric, `dependency.NAME.KEY` one of
//! that `[[dependency]]`. A value is TOML when it reads as TOML (`5`, `[1, 2]`, `true`,
//! `"5s"`), else a string (`5s` is `"5s"`), so units are required exactly as in the file.

use std::fmt;
use std::ops::Range;
use std::path::Path;
use std::str::FromStr;

use toml::Spanned;
use toml::de::{DeTable, DeValue};

use crate::error::{Diagnostic, line_col};

/// One `--set KEY=VALUE`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Override {
    /// The flag's argument as given.
    pub text: String,
    key: Vec<String>,
    value: String,
}

impl Override {
    /// `--set load.duration=5s`, as messages name it.
    pub fn flag(&self) -> String {
        format!("--set {}", self.text)
    }
}

impl fmt::Display for Override {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// A `--set` argument that is not `KEY=VALUE`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "--set {text}: expected KEY=VALUE with a dotted key, e.g. --set load.duration=5s or --set axis.rps=100,200"
)]
pub struct OverrideSyntax {
    pub text: String,
}

impl FromStr for Override {
    type Err = OverrideSyntax;

    fn from_str(text: &str) -> Result<Override, OverrideSyntax> {
        let bad = || OverrideSyntax {
            text: text.to_string(),
        };
        let (key, value) = text.split_once('=').ok_or_else(bad)?;
        let key: Vec<String> = key.trim().split('.').map(str::to_string).collect();
        let word = |s: &String| {
            !s.is_empty()
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        };
        if !key.iter().all(word) {
            return Err(bad());
        }
        Ok(Override {
            text: text.to_string(),
            key,
            value: value.trim().to_string(),
        })
    }
}

/// One change to the text.
#[derive(Debug, Clone)]
struct Edit {
    /// The bytes of the original text it replaces (empty: an insertion).
    at: Range<usize>,
    text: String,
    /// The override it comes from.
    from: usize,
}

/// The spec's text with the overrides applied, and how to map a position back.
#[derive(Debug, Clone)]
pub(crate) struct Edited {
    pub text: String,
    edits: Vec<Edit>,
    overrides: Vec<Override>,
    original: String,
}

impl Edited {
    /// `d` (a diagnostic of the edited text) where the user wrote its cause: at the flag when
    /// it lies inside an edited value, else at the file's own line and column.
    pub fn map(&self, mut d: Diagnostic) -> Diagnostic {
        let Some(offset) = offset_of(&self.text, d.line, d.column) else {
            return d;
        };
        let mut shift: isize = 0;
        for e in &self.edits {
            let start = (e.at.start as isize + shift) as usize;
            let end = start + e.text.len();
            if offset >= start && offset < end.max(start + 1) {
                d.flag = Some(self.overrides[e.from].flag());
                return d;
            }
            if offset < start {
                break;
            }
            shift += e.text.len() as isize - e.at.len() as isize;
        }
        let original = (offset as isize - shift).max(0) as usize;
        let (line, column) = line_col(&self.original, original);
        d.line = line;
        d.column = column;
        d
    }
}

/// The byte offset of 1-based `line` and `column` (characters) in `text`.
fn offset_of(text: &str, line: usize, column: usize) -> Option<usize> {
    let mut start = 0;
    for _ in 1..line {
        start += text[start..].find('\n')? + 1;
    }
    let rest = &text[start..];
    let within = rest
        .char_indices()
        .nth(column.saturating_sub(1))
        .map_or(rest.len(), |(i, _)| i);
    Some(start + within)
}

/// A problem with an override before the spec is checked (no such axis, a table path through
/// a value): at the flag.
fn at_flag(path: &Path, o: &Override, message: String, help: &str) -> Diagnostic {
    Diagnostic {
        path: path.to_path_buf(),
        line: 0,
        column: 0,
        message,
        help: Some(help.to_string()),
        flag: Some(o.flag()),
    }
}

/// The override's value as TOML text: itself when it parses as a TOML value, else a string.
fn toml_value(value: &str) -> String {
    if DeValue::parse(value).is_ok() {
        value.to_string()
    } else {
        toml_string(value)
    }
}

fn toml_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// `100,200` as a TOML array of values (each TOML, or a string).
fn toml_list(value: &str) -> String {
    if value.trim_start().starts_with('[') {
        return toml_value(value);
    }
    let items: Vec<String> = value
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(toml_value)
        .collect();
    format!("[{}]", items.join(", "))
}

/// Where a table's entries can be changed.
struct TableAt<'a, 'i> {
    table: &'a DeTable<'i>,
    /// The table's own span: its header (`[load]`), or the inline table (`{ … }`).
    span: Range<usize>,
    inline: bool,
}

impl TableAt<'_, '_> {
    fn entry(&self, key: &str) -> Option<(Range<usize>, Range<usize>)> {
        self.table
            .iter()
            .find(|(k, _)| k.get_ref().as_ref() == key)
            .map(|(k, v)| (k.span(), v.span()))
    }

    /// Set `key` to `value` (TOML text): replace its value, or insert it.
    fn set(&self, text: &str, key: &str, value: String, from: usize) -> Edit {
        if let Some((_, v)) = self.entry(key) {
            return Edit {
                at: v,
                text: value,
                from,
            };
        }
        if self.inline {
            // Before the closing brace.
            let close = self.span.end.saturating_sub(1);
            let empty = self.table.is_empty();
            return Edit {
                at: close..close,
                text: format!("{}{key} = {value} ", if empty { " " } else { ", " }),
                from,
            };
        }
        // The table's own `key = value` lines (a sub-table's header, `[[load.request]]`, holds
        // its key inside its span and lies elsewhere in the file).
        let last = self
            .table
            .iter()
            .filter(|(k, v)| k.span().end <= v.span().start)
            .map(|(_, v)| v.span().end)
            .max()
            .unwrap_or(self.span.end);
        let line_end = text[last..].find('\n').map_or(text.len(), |i| last + i);
        Edit {
            at: line_end..line_end,
            text: format!("\n{key} = {value}"),
            from,
        }
    }

    /// Remove `key` and its value (the line keeps its comment, if any).
    fn remove(&self, key: &str, from: usize) -> Option<Edit> {
        let (k, v) = self.entry(key)?;
        Some(Edit {
            at: k.start..v.end,
            text: String::new(),
            from,
        })
    }
}

fn table_of<'a, 'i>(text: &str, v: &'a Spanned<DeValue<'i>>) -> Option<TableAt<'a, 'i>> {
    match v.get_ref() {
        DeValue::Table(t) => Some(TableAt {
            table: t,
            span: v.span(),
            inline: text.get(v.span()).is_some_and(|s| s.starts_with('{')),
        }),
        _ => None,
    }
}

/// The element of an array of tables (`[[axis]]`) whose `field` is `name`.
fn element<'a, 'i>(
    root: &'a DeTable<'i>,
    array: &str,
    field: &str,
    name: &str,
) -> Result<TableAt<'a, 'i>, Vec<String>> {
    let Some((_, v)) = root.iter().find(|(k, _)| k.get_ref().as_ref() == array) else {
        return Err(Vec::new());
    };
    let DeValue::Array(items) = v.get_ref() else {
        return Err(Vec::new());
    };
    let mut names = Vec::new();
    for item in items.iter() {
        let DeValue::Table(t) = item.get_ref() else {
            continue;
        };
        let this = t
            .iter()
            .find(|(k, _)| k.get_ref().as_ref() == field)
            .and_then(|(_, v)| match v.get_ref() {
                DeValue::String(s) => Some(s.to_string()),
                _ => None,
            });
        if this.as_deref() == Some(name) {
            return Ok(TableAt {
                table: t,
                span: item.span(),
                inline: false,
            });
        }
        names.extend(this);
    }
    Err(names)
}

/// Apply `overrides` to the spec `text` (read from `path`): the edited text, or problems at
/// the flags.
pub(crate) fn apply(
    text: &str,
    path: &Path,
    overrides: &[Override],
) -> Result<Edited, Vec<Diagnostic>> {
    let root = match DeTable::parse(text) {
        Ok(root) => root,
        // The file's own syntax error is reported as the file's, by the checker.
        Err(_) => {
            return Ok(Edited {
                text: text.to_string(),
                edits: Vec::new(),
                overrides: overrides.to_vec(),
                original: text.to_string(),
            });
        }
    };
    let root = root.get_ref();
    let mut edits: Vec<Edit> = Vec::new();
    let mut problems = Vec::new();
    for (i, o) in overrides.iter().enumerate() {
        match edits_for(text, root, o, i) {
            Ok(mut e) => edits.append(&mut e),
            Err((message, help)) => problems.push(at_flag(path, o, message, help)),
        }
    }
    // Two overrides of one key: the last one wins, as on a command line.
    edits.sort_by_key(|e| (e.at.start, e.at.end));
    let mut kept: Vec<Edit> = Vec::new();
    for e in edits {
        match kept.last_mut() {
            Some(last) if last.at == e.at && !e.at.is_empty() => *last = e,
            Some(last) if last.at.end > e.at.start && !e.at.is_empty() && !last.at.is_empty() => {
                problems.push(at_flag(
                    path,
                    &overrides[e.from],
                    format!(
                        "{} changes what {} changes",
                        overrides[e.from].flag(),
                        overrides[last.from].flag()
                    ),
                    "give each key once",
                ));
            }
            _ => kept.push(e),
        }
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    let mut out = String::with_capacity(text.len() + 64);
    let mut at = 0;
    for e in &kept {
        out.push_str(&text[at..e.at.start]);
        out.push_str(&e.text);
        at = e.at.end;
    }
    out.push_str(&text[at..]);
    Ok(Edited {
        text: out,
        edits: kept,
        overrides: overrides.to_vec(),
        original: text.to_string(),
    })
}

type Problem = (String, &'static str);

fn edits_for(
    text: &str,
    root: &DeTable<'_>,
    o: &Override,
    from: usize,
) -> Result<Vec<Edit>, Problem> {
    let key: Vec<&str> = o.key.iter().map(String::as_str).collect();
    let by_name = |array: &str, field: &str, name: &str| {
        element(root, array, field, name).map_err(|names| {
            let what = if names.is_empty() {
                format!("the spec has no [[{array}]]")
            } else {
                format!("the spec's [[{array}]] are {}", names.join(", "))
            };
            (
                format!("no [[{array}]] with {field} = \"{name}\": {what}"),
                "name one the spec declares",
            )
        })
    };
    match key.as_slice() {
        ["axis", name] => {
            let axis = by_name("axis", "name", name)?;
            let mut e = vec![axis.set(text, "values", toml_list(&o.value), from)];
            for gone in ["range", "step", "scale"] {
                e.extend(axis.remove(gone, from));
            }
            Ok(e)
        }
        ["axis", name, field] => {
            let axis = by_name("axis", "name", name)?;
            Ok(vec![axis.set(text, field, toml_value(&o.value), from)])
        }
        ["slo", metric, field] => {
            let slo = by_name("slo", "metric", metric)?;
            Ok(vec![slo.set(text, field, toml_value(&o.value), from)])
        }
        ["dependency", name, rest @ ..] if !rest.is_empty() => {
            let dep = by_name("dependency", "name", name)?;
            set_path(text, dep, rest, &o.value, from, o)
        }
        ["axis" | "slo" | "dependency", ..] => Err((
            format!("{} does not say which entry", o.flag()),
            "axis.NAME=VALUES, axis.NAME.KEY=VALUE, slo.METRIC.KEY=VALUE, dependency.NAME.KEY=VALUE",
        )),
        [] => Err((
            format!("{}: no key", o.flag()),
            "e.g. --set load.duration=5s",
        )),
        [first, rest @ ..] => {
            let Some((_, v)) = root.iter().find(|(k, _)| k.get_ref().as_ref() == *first) else {
                if rest.is_empty() {
                    return Err((
                        format!("{} sets a top-level key", o.flag()),
                        "keys live in tables: e.g. --set limits.timeout=30s",
                    ));
                }
                // A table the file does not have: appended at its end.
                let header = format!("\n[{}]\n", key[..key.len() - 1].join("."));
                let Some(last) = key.last() else {
                    return Err((
                        format!("{}: no key", o.flag()),
                        "e.g. --set load.duration=5s",
                    ));
                };
                return Ok(vec![Edit {
                    at: text.len()..text.len(),
                    text: format!("{header}{last} = {}\n", toml_value(&o.value)),
                    from,
                }]);
            };
            match table_of(text, v) {
                Some(t) if !rest.is_empty() => set_path(text, t, rest, &o.value, from, o),
                _ => Err((
                    format!("{}: `{first}` is not a table", o.flag()),
                    "give the key inside its table, e.g. --set load.duration=5s",
                )),
            }
        }
    }
}

/// Set `path` (one or more keys) below table `t`.
fn set_path(
    text: &str,
    t: TableAt<'_, '_>,
    path: &[&str],
    value: &str,
    from: usize,
    o: &Override,
) -> Result<Vec<Edit>, Problem> {
    match path {
        [key] => Ok(vec![t.set(text, key, toml_value(value), from)]),
        [first, rest @ ..] => {
            let entry = t
                .table
                .iter()
                .find(|(k, _)| k.get_ref().as_ref() == *first)
                .map(|(_, v)| v);
            match entry {
                Some(v) => match v.get_ref() {
                    DeValue::Table(inner) => {
                        let inline = text.get(v.span()).is_some_and(|s| s.starts_with('{'));
                        set_path(
                            text,
                            TableAt {
                                table: inner,
                                span: v.span(),
                                inline,
                            },
                            rest,
                            value,
                            from,
                            o,
                        )
                    }
                    _ => Err((
                        format!("{}: `{first}` is not a table", o.flag()),
                        "give the key of a table",
                    )),
                },
                None => Err((
                    format!(
                        "{}: the spec has no `{first}` there to set a key in",
                        o.flag()
                    ),
                    "set a key the spec has a table for, or add the table to the file",
                )),
            }
        }
        [] => Err((
            format!("{}: no key", o.flag()),
            "e.g. --set load.duration=5s",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPEC: &str = "[artifact]\nname = \"x\"\n\n[load]\nrate = \"{rps}\" # the axis\nduration = \"4s\"\n\n[[load.request]]\npath = \"/\"\n\n[service]\nready = { http = \"/\", within = \"2s\" }\n\n[[axis]]\nname = \"rps\"\nkind = \"load\"\nrange = [10,\n 80]\nsearch = \"boundary\"\n";

    fn edited(sets: &[&str]) -> Result<String, Vec<Diagnostic>> {
        let o: Vec<Override> = sets.iter().map(|s| s.parse().unwrap()).collect();
        apply(SPEC, Path::new("q.toml"), &o).map(|e| e.text)
    }

    #[test]
    fn keys_are_replaced_or_inserted_where_they_belong() {
        let t = edited(&["load.duration=5s", "load.warmup=0s"]).unwrap();
        assert!(t.contains("duration = \"5s\"\nwarmup = \"0s\"\n"), "{t}");
        let t = edited(&["service.ready.within=9s"]).unwrap();
        assert!(
            t.contains("ready = { http = \"/\", within = \"9s\" }"),
            "{t}"
        );
        let t = edited(&["axis.rps=100,200"]).unwrap();
        assert!(t.contains("values = [100, 200]"), "{t}");
        assert!(
            !t.contains("range") && t.contains("search = \"boundary\""),
            "{t}"
        );
        let t = edited(&["limits.timeout=30s"]).unwrap();
        assert!(t.ends_with("\n[limits]\ntimeout = \"30s\"\n"), "{t}");
        let t = edited(&["load.rate=5", "load.rate=7"]).unwrap();
        assert!(t.contains("rate = 7 # the axis"), "the last one wins: {t}");
    }

    #[test]
    fn wrong_overrides_are_named_at_the_flag() {
        let e = edited(&["axis.users=1,2"]).unwrap_err();
        assert_eq!(e[0].flag.as_deref(), Some("--set axis.users=1,2"));
        assert!(
            e[0].message
                .contains("no [[axis]] with name = \"users\": the spec's [[axis]] are rps"),
            "{}",
            e[0]
        );
        assert!(
            e[0].to_string()
                .starts_with("--set axis.users=1,2: error: "),
            "{}",
            e[0]
        );
        assert!("load.duration".parse::<Override>().is_err());
        assert!("load..x=1".parse::<Override>().is_err());
    }

    #[test]
    fn positions_map_back_to_the_file_or_the_flag() {
        let o: Vec<Override> = ["load.duration=5", "axis.rps=1,2,3"]
            .iter()
            .map(|s| s.parse().unwrap())
            .collect();
        let e = apply(SPEC, Path::new("q.toml"), &o).unwrap();
        let at = |needle: &str| {
            let off = e.text.find(needle).unwrap();
            let (line, column) = line_col(&e.text, off);
            e.map(Diagnostic {
                path: "q.toml".into(),
                line,
                column,
                message: "m".into(),
                help: None,
                flag: None,
            })
        };
        assert_eq!(at("5\n").flag.as_deref(), Some("--set load.duration=5"));
        assert_eq!(
            at("[1, 2, 3]").flag.as_deref(),
            Some("--set axis.rps=1,2,3")
        );
        // After the axis's two-line range became one line, `search` is still where it was.
        let d = at("search");
        assert_eq!(d.flag, None);
        assert_eq!(
            (d.line, d.column),
            line_col(SPEC, SPEC.find("search").unwrap())
        );
    }
}
