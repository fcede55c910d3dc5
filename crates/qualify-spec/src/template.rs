//! `{name}` placeholders in command and environment templates: finding them ([`placeholders`]),
//! checking them, and substituting axis values ([`render`]). `{{` and `}}` stand for literal
//! braces. A placeholder name is an axis name: letters, digits, `_` and `-`, starting with a
//! letter or `_`.

use std::collections::BTreeMap;
use std::fmt;

/// One `{name}` in a template, with its byte range (braces included) in the template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placeholder {
    pub name: String,
    pub start: usize,
    pub end: usize,
}

/// A malformed template: an unclosed `{`, a lone `}`, or braces around something that is not a
/// placeholder name. `offset` is the byte offset of the offending brace in the template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateError {
    pub offset: usize,
    pub message: String,
}

impl fmt::Display for TemplateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// The help line that goes with every [`TemplateError`].
pub const LITERAL_BRACES_HELP: &str =
    "placeholders look like {axis_name}; write {{ and }} for literal braces";

/// Whether `name` can be an axis name and so a placeholder.
pub fn is_placeholder_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// Every placeholder in `template`, in order, or the first malformed brace.
pub fn placeholders(template: &str) -> Result<Vec<Placeholder>, TemplateError> {
    let scan = scan(template);
    match scan.errors.into_iter().next() {
        Some(error) => Err(error),
        None => Ok(scan
            .pieces
            .into_iter()
            .filter_map(|piece| match piece {
                Piece::Placeholder(p) => Some(p),
                Piece::Text(_) => None,
            })
            .collect()),
    }
}

/// Where placeholder values come from: a cell's parameters ([`qualify_model::Params`]), or any
/// map of displayable values (per-cell extras such as an assigned port).
pub trait Bindings {
    /// The text substituted for `{name}`, if `name` is bound.
    fn lookup(&self, name: &str) -> Option<String>;
}

impl Bindings for qualify_model::Params {
    fn lookup(&self, name: &str) -> Option<String> {
        self.get(name).map(ToString::to_string)
    }
}

impl<V: fmt::Display> Bindings for BTreeMap<String, V> {
    fn lookup(&self, name: &str) -> Option<String> {
        self.get(name).map(ToString::to_string)
    }
}

/// Built-in names bound over a cell's parameters (e.g. `{dep_port}` and `{proxy_port}` over
/// the axis values): a name in `extra` wins, any other comes from `base`.
pub struct Overlay<'a, B: ?Sized> {
    pub extra: Vec<(&'a str, String)>,
    pub base: &'a B,
}

impl<'a, B: Bindings + ?Sized> Overlay<'a, B> {
    pub fn new(base: &'a B) -> Overlay<'a, B> {
        Overlay {
            extra: Vec::new(),
            base,
        }
    }

    /// The same bindings with `{name}` bound to `value`.
    pub fn with(mut self, name: &'a str, value: impl fmt::Display) -> Overlay<'a, B> {
        self.extra.push((name, value.to_string()));
        self
    }
}

impl<B: Bindings + ?Sized> Bindings for Overlay<'_, B> {
    fn lookup(&self, name: &str) -> Option<String> {
        match self.extra.iter().find(|(n, _)| *n == name) {
            Some((_, value)) => Some(value.clone()),
            None => self.base.lookup(name),
        }
    }
}

/// Substitute each `{name}` by `params[name]` and `{{`/`}}` by `{`/`}`.
///
/// Never fails: a placeholder without a value and malformed braces are kept as written (a
/// validated spec has neither).
pub fn render<B: Bindings + ?Sized>(template: &str, params: &B) -> String {
    let mut out = String::with_capacity(template.len());
    for piece in scan(template).pieces {
        match piece {
            Piece::Text(text) => out.push_str(text),
            Piece::Placeholder(p) => match params.lookup(&p.name) {
                Some(value) => out.push_str(&value),
                None => out.push_str(&template[p.start..p.end]),
            },
        }
    }
    out
}

enum Piece<'a> {
    Text(&'a str),
    Placeholder(Placeholder),
}

struct Scan<'a> {
    pieces: Vec<Piece<'a>>,
    errors: Vec<TemplateError>,
}

/// Split a template into literal text and placeholders. Malformed braces are reported and kept
/// as literal text. Braces are ASCII, so byte indexing never splits a character.
fn scan(template: &str) -> Scan<'_> {
    let bytes = template.as_bytes();
    let mut pieces = Vec::new();
    let mut errors = Vec::new();
    let mut text_start = 0;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'{' | b'}' if bytes.get(i + 1) == Some(&bytes[i]) => {
                // Escaped brace: keep the first, drop the second.
                pieces.push(Piece::Text(&template[text_start..=i]));
                i += 2;
                text_start = i;
            }
            b'{' => {
                let Some(close) = template[i + 1..].find('}').map(|j| i + 1 + j) else {
                    errors.push(TemplateError {
                        offset: i,
                        message: "unclosed `{` in template".to_string(),
                    });
                    break;
                };
                let name = &template[i + 1..close];
                if is_placeholder_name(name) {
                    pieces.push(Piece::Text(&template[text_start..i]));
                    pieces.push(Piece::Placeholder(Placeholder {
                        name: name.to_string(),
                        start: i,
                        end: close + 1,
                    }));
                } else {
                    errors.push(TemplateError {
                        offset: i,
                        message: format!(
                            "`{}` is not a placeholder: a placeholder name is letters, digits, `_` or `-`, starting with a letter or `_`",
                            &template[i..=close]
                        ),
                    });
                    pieces.push(Piece::Text(&template[text_start..=close]));
                }
                i = close + 1;
                text_start = i;
            }
            b'}' => {
                errors.push(TemplateError {
                    offset: i,
                    message: "unmatched `}` in template".to_string(),
                });
                i += 1;
            }
            _ => i += 1,
        }
    }
    pieces.push(Piece::Text(&template[text_start..]));
    Scan { pieces, errors }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn renders_placeholders_and_escapes() {
        let p = params(&[("threads", "8"), ("n", "1024")]);
        assert_eq!(
            render("./gemm --threads {threads} --n {n}", &p),
            "./gemm --threads 8 --n 1024"
        );
        assert_eq!(
            render("awk '{{print $1}}' {n}{n}", &p),
            "awk '{print $1}' 10241024"
        );
        assert_eq!(render("é{n}é", &p), "é1024é");
        assert_eq!(render("{missing} {n}", &p), "{missing} 1024");
        assert_eq!(render("{{{n}}}", &p), "{1024}");
    }

    #[test]
    fn an_overlay_binds_built_ins_over_the_parameters() {
        let p = params(&[("n", "1024"), ("dep_port", "1")]);
        let o = Overlay::new(&p).with("dep_port", 6380);
        assert_eq!(render("{n}:{dep_port}:{other}", &o), "1024:6380:{other}");
    }

    #[test]
    fn finds_placeholders_with_offsets() {
        let found = placeholders("a {x} {{y}} {z-1}").unwrap();
        let names: Vec<_> = found.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["x", "z-1"]);
        assert_eq!((found[0].start, found[0].end), (2, 5));
        assert_eq!(found[1].start, 12);
    }

    #[test]
    fn malformed_braces_are_errors() {
        assert_eq!(placeholders("a {x").unwrap_err().offset, 2);
        assert!(
            placeholders("a {x")
                .unwrap_err()
                .message
                .contains("unclosed")
        );
        let lone = placeholders("a } b").unwrap_err();
        assert_eq!(lone.offset, 2);
        assert!(lone.message.contains("unmatched `}`"));
        let bad = placeholders("awk '{print $1}'").unwrap_err();
        assert_eq!(bad.offset, 5);
        assert!(bad.message.contains("`{print $1}` is not a placeholder"));
        // Malformed braces render as written.
        assert_eq!(render("awk '{print $1}'", &params(&[])), "awk '{print $1}'");
    }
}
