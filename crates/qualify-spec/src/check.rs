//! The validation context: collects diagnostics at source spans, and converts the spanned raw
//! values that several sections share (sizes, durations, CPU counts, positive integers,
//! templates) into checked values, reporting what was expected when they are not.

use std::ops::Range;
use std::path::Path;
use std::time::Duration;

use qualify_model::units::{self, Quantity};
use toml::{Spanned, Value};

use crate::error::{Diagnostic, diagnostic_at};
use crate::template::{LITERAL_BRACES_HELP, Placeholder, placeholders};

/// The largest count a spec may write where no smaller bound applies (a billion).
pub(crate) const MAX_COUNT: u64 = 1_000_000_000;

pub(crate) struct Checker<'a> {
    pub text: &'a str,
    path: &'a Path,
    diagnostics: Vec<Diagnostic>,
    /// How many templates had malformed braces (their placeholders are unknown).
    pub malformed_templates: usize,
}

/// A placeholder found in a template, with its byte offset in the spec source.
#[derive(Debug, Clone)]
pub(crate) struct PlaceholderUse {
    pub name: String,
    pub offset: usize,
    /// The character before the placeholder is `$` (a shell variable was probably meant).
    pub after_dollar: bool,
}

impl<'a> Checker<'a> {
    pub fn new(text: &'a str, path: &'a Path) -> Checker<'a> {
        Checker {
            text,
            path,
            diagnostics: Vec::new(),
            malformed_templates: 0,
        }
    }

    pub fn error(&mut self, span: Range<usize>, message: impl Into<String>) {
        self.push(span.start, message.into(), None);
    }

    pub fn error_help(
        &mut self,
        span: Range<usize>,
        message: impl Into<String>,
        help: impl Into<String>,
    ) {
        self.push(span.start, message.into(), Some(help.into()));
    }

    fn push(&mut self, offset: usize, message: String, help: Option<String>) {
        self.diagnostics
            .push(diagnostic_at(self.text, self.path, offset, message, help));
    }

    /// The span of key `key` inside an inline table spanning `table` (`{ n = 2.0 }`), found in
    /// the text; the table's own span when the key cannot be found (quoted or dotted keys).
    pub fn key_span(&self, table: Range<usize>, key: &str) -> Range<usize> {
        let inner = self.text.get(table.clone()).unwrap_or("");
        let bytes = inner.as_bytes();
        for (i, _) in inner.match_indices(key) {
            let before_ok = i == 0 || !is_key_char(bytes[i - 1]);
            let rest = inner[i + key.len()..].trim_start();
            if before_ok && rest.starts_with('=') {
                let start = table.start + i;
                return start..start + key.len();
            }
        }
        table
    }

    /// `"line:col"` of a byte offset, for help lines that point elsewhere.
    pub fn position(&self, offset: usize) -> String {
        let (line, column) = crate::error::line_col(self.text, offset);
        format!("{line}:{column}")
    }

    /// The diagnostics collected so far, in file order.
    pub fn finish(mut self) -> Vec<Diagnostic> {
        self.diagnostics
            .sort_by_key(|d| (d.line, d.column, d.message.clone()));
        self.diagnostics
    }

    /// A size with its unit (`512MiB`, `1.5G`, `4096B`). A bare number is refused with the
    /// fix: `512` could be bytes or MiB, so the spec never guesses (`units` documents the
    /// grammar: "every size and duration in qualify.toml carries its unit").
    pub fn size(&mut self, value: &Spanned<Value>) -> Option<u64> {
        let hint = Quantity::Size.hint();
        match value.get_ref() {
            Value::String(text) if units::is_bare_number(text) => {
                self.unitless(value.span(), Quantity::Size, text.trim());
                None
            }
            Value::String(text) => match units::parse_size(text) {
                Ok(bytes) => Some(bytes),
                Err(e) => {
                    self.error(value.span(), e.to_string());
                    None
                }
            },
            Value::Integer(n) if *n >= 1 => {
                self.unitless(value.span(), Quantity::Size, &n.to_string());
                None
            }
            Value::Integer(n) => {
                self.error(
                    value.span(),
                    format!("invalid size `{n}`: must be at least 1 byte; {hint}"),
                );
                None
            }
            Value::Float(x) if x.is_finite() && *x > 0.0 => {
                self.unitless(value.span(), Quantity::Size, &float_text(*x));
                None
            }
            other => {
                self.error(
                    value.span(),
                    format!("wrong type: found {}, {hint}", describe(other)),
                );
                None
            }
        }
    }

    /// A positive duration with its unit (`30s`, `250ms`, `1h30m`), at most
    /// [`units::MAX_DURATION`] (the bounds live in [`units`]). A bare number (`30`, `"30"`,
    /// `0.25`) is refused with the fix: `250` could be milliseconds or seconds, and a latency
    /// limit read in the wrong one can never fail.
    pub fn duration(&mut self, value: &Spanned<Value>) -> Option<Duration> {
        let hint = Quantity::Duration.hint();
        let number = match value.get_ref() {
            Value::String(text) if units::is_bare_number(text) => text.trim().to_string(),
            Value::String(text) => {
                return match units::parse_duration(text) {
                    Ok(d) if d.is_zero() => {
                        self.error(
                            value.span(),
                            format!("invalid duration `{text}`: must be positive; {hint}"),
                        );
                        None
                    }
                    Ok(d) => Some(d),
                    Err(e) => {
                        self.error(value.span(), e.to_string());
                        None
                    }
                };
            }
            Value::Integer(n) => n.to_string(),
            Value::Float(x) => float_text(*x),
            other => {
                self.error(
                    value.span(),
                    format!("wrong type: found {}, {hint}", describe(other)),
                );
                return None;
            }
        };
        match number.parse::<f64>() {
            Ok(x) if x.is_finite() && x > 0.0 => {
                self.unitless(value.span(), Quantity::Duration, &number)
            }
            _ => self.error(
                value.span(),
                format!("invalid duration `{number}`: must be positive; {hint}"),
            ),
        }
        None
    }

    /// A positive number written without the unit its key needs: the error, and the fix with
    /// the number in the units it could have meant.
    fn unitless(&mut self, span: Range<usize>, quantity: Quantity, number: &str) {
        let (what, fix) = match quantity {
            Quantity::Duration => (
                "a duration needs its unit",
                format!(
                    "write \"{number}ms\" or \"{number}s\" (ns, us, ms, s, m, h): qualify.toml takes no duration without its unit"
                ),
            ),
            Quantity::Size | Quantity::Rate => (
                "a size needs its unit",
                format!(
                    "write \"{number}MiB\", \"{number}GiB\" or \"{number}B\" for bytes (KiB/MiB/GiB are 1024-based, KB/MB/GB 1000-based): qualify.toml takes no size without its unit"
                ),
            ),
        };
        self.error_help(span, format!("`{number}` has no unit: {what}"), fix);
    }

    /// A CPU ceiling in cores: a number or a numeric string, from 0.01 to
    /// [`qualify_model::limits::MAX_CPUS`].
    pub fn cpus(&mut self, value: &Spanned<Value>) -> Option<f64> {
        let text = match value.get_ref() {
            Value::String(text) => text.clone(),
            Value::Integer(n) => n.to_string(),
            Value::Float(x) => x.to_string(),
            other => {
                self.error(
                    value.span(),
                    format!(
                        "wrong type: found {}, expected a number of cores such as 0.5 or 2",
                        describe(other)
                    ),
                );
                return None;
            }
        };
        match qualify_model::limits::parse_cpus(&text) {
            Ok(cpus) => Some(cpus),
            Err(message) => {
                self.error(value.span(), message);
                None
            }
        }
    }

    /// A positive integer up to [`MAX_COUNT`] (`what` names it in the message).
    pub fn positive(&mut self, value: &Spanned<i64>, what: &str) -> Option<u64> {
        self.positive_at_most(value, what, MAX_COUNT)
    }

    /// A positive integer up to `max`: counts that become runs, threads or allocations have
    /// their own, smaller bound.
    pub fn positive_at_most(&mut self, value: &Spanned<i64>, what: &str, max: u64) -> Option<u64> {
        match *value.get_ref() {
            n if n >= 1 && n as u64 <= max => Some(n as u64),
            n if n >= 1 => {
                self.error(
                    value.span(),
                    format!("{what} must be at most {max}, found {n}"),
                );
                None
            }
            n => {
                self.error(
                    value.span(),
                    format!("{what} must be a positive integer, found {n}"),
                );
                None
            }
        }
    }

    /// A non-empty string (`what` names it in the message).
    pub fn non_empty(&mut self, value: &Spanned<String>, what: &str) -> String {
        if value.get_ref().trim().is_empty() {
            self.error(value.span(), format!("{what} must not be empty"));
        }
        value.get_ref().clone()
    }

    /// The placeholders of a template string held at `span` in the source, reporting malformed
    /// braces at their own position.
    pub fn template(&mut self, template: &str, span: Range<usize>) -> Vec<PlaceholderUse> {
        match placeholders(template) {
            Ok(found) => found
                .into_iter()
                .map(|p| self.placeholder_use(template, &span, p))
                .collect(),
            Err(error) => {
                self.malformed_templates += 1;
                let token = &template[error.offset..error.offset + 1];
                let offset = self.string_offset(&span, template, error.offset, token);
                self.push(
                    offset,
                    error.message.clone(),
                    Some(LITERAL_BRACES_HELP.to_string()),
                );
                Vec::new()
            }
        }
    }

    fn placeholder_use(
        &self,
        template: &str,
        span: &Range<usize>,
        p: Placeholder,
    ) -> PlaceholderUse {
        let token = &template[p.start..p.end];
        PlaceholderUse {
            offset: self.string_offset(span, template, p.start, token),
            after_dollar: template[..p.start].ends_with('$'),
            name: p.name,
        }
    }

    /// An error at byte `offset_in_value` of the string `value` written at `span` (`token` is
    /// the text there, used to find it when the string has escapes).
    pub fn error_in_string(
        &mut self,
        span: &Range<usize>,
        value: &str,
        offset_in_value: usize,
        token: &str,
        message: impl Into<String>,
        help: impl Into<String>,
    ) {
        let offset = self.string_offset(span, value, offset_in_value, token);
        self.push(offset, message.into(), Some(help.into()));
    }

    /// Map a byte offset inside a string value to its offset in the source. Exact for literal
    /// strings and for basic strings without escapes; otherwise the first occurrence of `token`
    /// in the source string, or the string's start.
    fn string_offset(
        &self,
        span: &Range<usize>,
        value: &str,
        offset_in_value: usize,
        token: &str,
    ) -> usize {
        let Some(raw) = self.text.get(span.clone()) else {
            return span.start;
        };
        let delimiter = ["\"\"\"", "'''", "\"", "'"]
            .into_iter()
            .find(|d| raw.starts_with(d) && raw.len() >= 2 * d.len() && raw.ends_with(d));
        if let Some(d) = delimiter {
            let mut start = d.len();
            let mut inner = &raw[d.len()..raw.len() - d.len()];
            if d.len() == 3 {
                // A newline right after the opening delimiter is not part of the value.
                for newline in ["\r\n", "\n"] {
                    if let Some(rest) = inner.strip_prefix(newline) {
                        inner = rest;
                        start += newline.len();
                        break;
                    }
                }
            }
            if inner == value {
                return span.start + start + offset_in_value;
            }
        }
        raw.find(token).map_or(span.start, |i| span.start + i)
    }
}

/// How a TOML value is named in messages: `integer `3``, `string "x"`, `array`.
fn is_key_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

pub(crate) fn describe(value: &Value) -> String {
    match value {
        Value::String(s) => format!("string {s:?}"),
        Value::Integer(n) => format!("integer `{n}`"),
        Value::Float(x) => format!("float `{x}`"),
        Value::Boolean(b) => format!("boolean `{b}`"),
        Value::Datetime(d) => format!("datetime `{d}`"),
        Value::Array(_) => "array".to_string(),
        Value::Table(_) => "table".to_string(),
    }
}

/// A float as a message shows it: as written for everyday values, in exponent form when it
/// would be a screenful of digits (`1e300`).
fn float_text(x: f64) -> String {
    if x.is_finite() && (x.abs() >= 1e15 || (x != 0.0 && x.abs() < 1e-6)) {
        format!("{x:e}")
    } else {
        x.to_string()
    }
}
