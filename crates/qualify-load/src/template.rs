//! Request templates: literal text with `{seq}` (the request's sequence number) and `{pad:N}`
//! (N filler bytes). Every other brace is literal, so JSON bodies such as `{"id": {seq}}` need
//! no escaping. Parsed once per plan ([`Template::parse`]); rendered per request into a
//! reusable buffer ([`Template::render_into`]).

use std::fmt;

/// The largest `{pad:N}` accepted: 16 MiB per placeholder.
pub const MAX_PAD: usize = 16 << 20;

/// The byte a `{pad:N}` placeholder repeats.
pub const PAD_BYTE: u8 = b'x';

/// A parsed template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    pieces: Vec<Piece>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Literal(Vec<u8>),
    Seq,
    Pad(usize),
}

/// A `{pad:…}` whose count is not a number in `0..=MAX_PAD`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateError {
    /// Byte offset of the offending `{` in the template.
    pub offset: usize,
    pub message: String,
}

impl fmt::Display for TemplateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for TemplateError {}

impl Template {
    /// Parse `text`: `{seq}` and `{pad:N}` are placeholders, everything else is literal.
    pub fn parse(text: &str) -> Result<Template, TemplateError> {
        let mut pieces = Vec::new();
        let mut literal_start = 0;
        let mut i = 0;
        while let Some(found) = text[i..].find('{') {
            let open = i + found;
            let rest = &text[open..];
            let placeholder = if rest.starts_with("{seq}") {
                Some((Piece::Seq, "{seq}".len()))
            } else if let Some(after) = rest.strip_prefix("{pad:") {
                let Some(close) = after.find('}') else {
                    return Err(TemplateError {
                        offset: open,
                        message: "unclosed `{pad:` in template: write {pad:N} with N filler bytes"
                            .to_string(),
                    });
                };
                let count = &after[..close];
                let n = count
                    .trim()
                    .parse::<usize>()
                    .ok()
                    .filter(|n| *n <= MAX_PAD)
                    .ok_or_else(|| TemplateError {
                        offset: open,
                        message: format!(
                            "`{{pad:{count}}}`: the filler size must be a whole number of bytes from 0 to {MAX_PAD}"
                        ),
                    })?;
                Some((Piece::Pad(n), "{pad:".len() + close + 1))
            } else {
                None
            };
            match placeholder {
                Some((piece, len)) => {
                    if open > literal_start {
                        pieces.push(Piece::Literal(
                            text.as_bytes()[literal_start..open].to_vec(),
                        ));
                    }
                    pieces.push(piece);
                    i = open + len;
                    literal_start = i;
                }
                None => i = open + 1,
            }
        }
        if literal_start < text.len() {
            pieces.push(Piece::Literal(text.as_bytes()[literal_start..].to_vec()));
        }
        Ok(Template { pieces })
    }

    /// Whether the rendering is the same for every request (no `{seq}`).
    pub fn is_static(&self) -> bool {
        !self.pieces.contains(&Piece::Seq)
    }

    /// Whether the template uses `{seq}`.
    pub fn uses_seq(&self) -> bool {
        !self.is_static()
    }

    /// Append the rendering for request `seq` to `out`.
    pub fn render_into(&self, seq: u64, out: &mut Vec<u8>) {
        for piece in &self.pieces {
            match piece {
                Piece::Literal(bytes) => out.extend_from_slice(bytes),
                Piece::Seq => {
                    let mut digits = [0u8; 20];
                    let mut n = seq;
                    let mut at = digits.len();
                    loop {
                        at -= 1;
                        digits[at] = b'0' + (n % 10) as u8;
                        n /= 10;
                        if n == 0 {
                            break;
                        }
                    }
                    out.extend_from_slice(&digits[at..]);
                }
                Piece::Pad(n) => out.resize(out.len() + n, PAD_BYTE),
            }
        }
    }

    /// The rendering for request `seq`.
    pub fn render(&self, seq: u64) -> Vec<u8> {
        let mut out = Vec::new();
        self.render_into(seq, &mut out);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(text: &str, seq: u64) -> String {
        String::from_utf8(Template::parse(text).unwrap().render(seq)).unwrap()
    }

    #[test]
    fn seq_and_pad_are_substituted_other_braces_are_literal() {
        assert_eq!(render("/orders/{seq}", 42), "/orders/42");
        assert_eq!(render(r#"{"id": {seq}}"#, 7), r#"{"id": 7}"#);
        assert_eq!(render("SET k{seq} {pad:5}\r\n", 0), "SET k0 xxxxx\r\n");
        assert_eq!(
            render("{pad:0}|{seq}{seq}", 18446744073709551615),
            "|1844674407370955161518446744073709551615"
        );
        assert_eq!(render("{seq", 1), "{seq");
        assert_eq!(render("{{seq}}", 3), "{3}");
        assert_eq!(render("é{seq}é", 9), "é9é");
        assert!(Template::parse("/x").unwrap().is_static());
        assert!(Template::parse("/{seq}").unwrap().uses_seq());
    }

    #[test]
    fn bad_pads_are_errors_at_their_brace() {
        let e = Template::parse("ab{pad:lots}").unwrap_err();
        assert_eq!(e.offset, 2);
        assert!(e.message.contains("`{pad:lots}`"), "{e}");
        let e = Template::parse("{pad:99999999999}").unwrap_err();
        assert!(e.message.contains("from 0 to 16777216"), "{e}");
        let e = Template::parse("x {pad:3").unwrap_err();
        assert_eq!(e.offset, 2);
        assert!(e.message.contains("unclosed"), "{e}");
    }
}
