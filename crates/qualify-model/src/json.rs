//! The one way qualify reads a JSON document it will judge (a receipt, a signed envelope, a
//! ledger entry): [`from_str`] / [`from_slice`], like `serde_json`'s, but a document with a key
//! twice in one object is refused, at the line and column of the second copy. JSON leaves
//! duplicate keys to the reader (RFC 8259 §4), and readers disagree on which copy wins: a
//! receipt with two `"payload"` keys could then say one thing to a strict signature checker and
//! another to a lenient gate. Refused here, every reader sees the one document that was signed.

use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// Parse `text` as JSON, refusing any object with a duplicate key. The error carries the line
/// and column (`serde_json::Error::line`/`column`) where the document stopped being acceptable.
pub fn from_str(text: &str) -> Result<Value, serde_json::Error> {
    serde_json::from_str::<Strict>(text).map(|s| s.0)
}

/// [`from_str`] over bytes (which must be UTF-8: an invalid byte is an error at its place).
pub fn from_slice(bytes: &[u8]) -> Result<Value, serde_json::Error> {
    serde_json::from_slice::<Strict>(bytes).map(|s| s.0)
}

/// A JSON value whose objects had no duplicate key.
struct Strict(Value);

impl<'de> Deserialize<'de> for Strict {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Strict, D::Error> {
        deserializer.deserialize_any(StrictVisitor).map(Strict)
    }
}

struct StrictVisitor;

impl<'de> Visitor<'de> for StrictVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        Number::from_f64(v)
            .map(Value::Number)
            .ok_or_else(|| E::custom("a number that is not finite"))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        Strict::deserialize(d).map(|s| s.0)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        while let Some(Strict(v)) = seq.next_element()? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if out.contains_key(&key) {
                return Err(de::Error::custom(format_args!(
                    "duplicate key `{key}` in one object (a document with two values for one key is ambiguous and refused)"
                )));
            }
            let Strict(value) = map.next_value()?;
            out.insert(key, value);
        }
        Ok(Value::Object(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_values_as_serde_json_without_duplicates() {
        let text = r#"{"a": [1, -2, 3.5, "x", null, true, {"b": {}}], "c": 18446744073709551615}"#;
        assert_eq!(
            from_str(text).unwrap(),
            serde_json::from_str::<Value>(text).unwrap()
        );
        assert_eq!(
            from_slice(text.as_bytes()).unwrap(),
            from_str(text).unwrap()
        );
    }

    #[test]
    fn a_duplicate_key_is_refused_at_its_place_at_any_depth() {
        let err = from_str("{\"payload\": \"a\",\n \"payload\": \"b\"}").unwrap_err();
        assert!(err.to_string().contains("duplicate key `payload`"), "{err}");
        assert_eq!(err.line(), 2, "{err}");
        assert!(err.column() > 0, "{err}");
        let nested = r#"{"signatures": [{"keyid": "k", "sig": "a", "sig": "b"}]}"#;
        assert!(from_str(nested).is_err());
        // The same key in two objects is not a duplicate.
        assert!(from_str(r#"[{"a": 1}, {"a": 2}]"#).is_ok());
    }

    #[test]
    fn truncated_and_invalid_utf8_are_errors_with_a_place() {
        let err = from_str("{\"a\": [1, 2").unwrap_err();
        assert!(err.is_eof(), "{err}");
        let err = from_slice(b"{\"a\": \"\xff\"}").unwrap_err();
        assert_eq!((err.line(), err.column()), (1, 8), "{err}");
    }
}
