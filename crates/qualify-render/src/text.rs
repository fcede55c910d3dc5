//! Escaping (XML/HTML, Markdown table cells) and compact number formats shared by the renderers.

use serde_json::{Map, Value};

/// Escape text for XML/HTML content and attribute values.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            // Control characters other than tab/newline are not allowed in XML 1.0.
            c if (c as u32) < 0x20 && c != '\t' && c != '\n' && c != '\r' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

/// Make text safe inside one Markdown table cell: no line breaks, no unescaped pipes.
pub fn md_cell(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('|', "\\|")
        .replace(['\n', '\r'], " ")
}

/// A number in at most 3 significant digits; integers below a million as they are; very large
/// or small magnitudes as `2.1e-9`.
pub fn num(x: f64) -> String {
    if !x.is_finite() {
        return if x.is_nan() {
            "NaN".into()
        } else if x > 0.0 {
            "∞".into()
        } else {
            "-∞".into()
        };
    }
    if x == 0.0 {
        return "0".into();
    }
    let a = x.abs();
    if x.fract() == 0.0 && a < 1e6 {
        return format!("{x:.0}");
    }
    if !(1e-3..1e6).contains(&a) {
        let s = format!("{x:.2e}");
        // 1.00e8 -> 1e8, 2.10e-9 -> 2.1e-9
        if let Some((m, e)) = s.split_once('e') {
            let m = trim_zeros(m);
            return format!("{m}e{e}");
        }
        return s;
    }
    let digits = (2 - a.log10().floor() as i32).max(0) as usize;
    trim_zeros(&format!("{x:.digits$}"))
}

fn trim_zeros(s: &str) -> String {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s.to_string()
    }
}

/// A JSON value as people read it: strings bare, numbers compact, null as an em dash.
pub fn value(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "—".into(),
        Value::Number(n) => n.as_f64().map(num).unwrap_or_else(|| n.to_string()),
        Value::Bool(b) => b.to_string(),
        Value::Array(a) => format!("[{}]", a.iter().map(value).collect::<Vec<_>>().join(", ")),
        Value::Object(_) => v.to_string(),
    }
}

/// `threads=2, rounds=10`, keys in `order` first (the receipt's axis order), then the rest.
pub fn params(p: &Map<String, Value>, order: &[String]) -> String {
    let mut keys: Vec<&String> = order.iter().filter(|k| p.contains_key(*k)).collect();
    keys.extend(p.keys().filter(|k| !order.contains(k)));
    keys.iter()
        .map(|k| format!("{k}={}", value(&p[k.as_str()])))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `threads=2, mode=fast`: every entry of `m`, in its order (the other axes of a model, a
/// scaling series or a boundary).
pub fn fixed(m: &Map<String, Value>) -> String {
    m.iter()
        .map(|(k, v)| format!("{k}={}", value(v)))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_compact() {
        assert_eq!(num(100000000.0), "1e8");
        assert_eq!(num(2.1e-9), "2.1e-9");
        assert_eq!(num(0.0218), "0.0218");
        assert_eq!(num(12.345), "12.3");
        assert_eq!(num(192.0), "192");
        assert_eq!(num(0.5), "0.5");
    }

    #[test]
    fn escaping() {
        assert_eq!(
            esc("a<b & \"c\"\u{1}"),
            "a&lt;b &amp; &quot;c&quot;\u{FFFD}"
        );
        assert_eq!(md_cell("a|b\nc"), "a\\|b c");
    }
}
