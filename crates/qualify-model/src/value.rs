//! Axis values and cell parameters: [`Value`] (one point on an axis) and [`Params`] (one cell's
//! point in the operating region, axis name → value, in axis order), and the one place either
//! becomes text (`Display` for commands, `receipt_text` for people, `json_text` as JSON). Both serialize the way a
//! receipt shows them: a value as a bare JSON number or string, params as a JSON object. The
//! spec declares axes with them, the planner expands them into cells, the evidence and the
//! ledger keep them: one type from the TOML file to the receipt.

use std::fmt;
use std::hash::{Hash, Hasher};

use serde::de::{MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// One point on an axis. Serialized untagged: `4`, `0.5`, `"ring"`.
///
/// Equality and hashing are structural (`Int(1)` and `Float(1.0)` are different values; floats
/// compare by bit pattern), so values can key the memo of executed cells.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Value {
    Int(i64),
    Float(f64),
    Text(String),
}

impl Value {
    /// The value as a number, if it is one.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Int(i) => Some(*i as f64),
            Value::Float(f) => Some(*f),
            Value::Text(_) => None,
        }
    }

    /// The value as an integer, if it is an `Int`.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Int(i) => Some(*i),
            _ => None,
        }
    }

    /// The value as a non-negative integer, if it is an `Int` ≥ 0.
    pub fn as_u64(&self) -> Option<u64> {
        self.as_i64().and_then(|i| u64::try_from(i).ok())
    }

    /// A number (not text).
    pub fn is_numeric(&self) -> bool {
        !matches!(self, Value::Text(_))
    }

    /// The text, if it is text.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Value::Text(s) => Some(s),
            _ => None,
        }
    }

    /// As JSON writes it: `4`, `2.0`, `"ring"` (quoted). What a sentence about a model or a
    /// check shows of its cell.
    pub fn json_text(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// As a receipt shows it to a person: text without quotes, numbers as JSON writes them
    /// (`2.0` stays `2.0`; [`Display`](fmt::Display), for commands, writes `2`).
    pub fn receipt_text(&self) -> String {
        match self {
            Value::Text(s) => s.clone(),
            other => other.json_text(),
        }
    }

    /// The same point on an axis: numbers compared by value (`4` is the point `4.0`), text by
    /// content. Unlike `==`, which is structural.
    pub fn same_point(&self, other: &Value) -> bool {
        match (self.as_f64(), other.as_f64()) {
            (Some(a), Some(b)) => a == b,
            _ => self == other,
        }
    }
}

impl PartialEq for Value {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Value::Int(a), Value::Int(b)) => a == b,
            (Value::Float(a), Value::Float(b)) => a.to_bits() == b.to_bits(),
            (Value::Text(a), Value::Text(b)) => a == b,
            _ => false,
        }
    }
}

impl Eq for Value {}

impl Hash for Value {
    fn hash<H: Hasher>(&self, state: &mut H) {
        match self {
            Value::Int(i) => {
                state.write_u8(0);
                i.hash(state);
            }
            Value::Float(f) => {
                state.write_u8(1);
                f.to_bits().hash(state);
            }
            Value::Text(s) => {
                state.write_u8(2);
                s.hash(state);
            }
        }
    }
}

/// As substituted into a command: `42`, `0.5` (Rust's shortest round-trip form, so `2.0` prints
/// as `2`), or the text itself.
impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Int(i) => write!(f, "{i}"),
            Value::Float(x) => write!(f, "{x}"),
            Value::Text(s) => f.write_str(s),
        }
    }
}

impl From<i64> for Value {
    fn from(v: i64) -> Self {
        Value::Int(v)
    }
}

impl From<f64> for Value {
    fn from(v: f64) -> Self {
        Value::Float(v)
    }
}

impl From<&str> for Value {
    fn from(v: &str) -> Self {
        Value::Text(v.to_owned())
    }
}

impl From<String> for Value {
    fn from(v: String) -> Self {
        Value::Text(v)
    }
}

/// One cell's parameters: axis name → value, in the order of the plan's axes (the order a
/// receipt and a progress line show them). Serialized as a JSON object in that order.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Params(Vec<(String, Value)>);

impl Params {
    pub fn new() -> Params {
        Params(Vec::new())
    }

    /// The value of axis `name`, if this cell has one.
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.0.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }

    /// Set axis `name`: replaces the value in place if present, appends otherwise.
    pub fn insert(&mut self, name: impl Into<String>, value: Value) {
        let name = name.into();
        match self.0.iter_mut().find(|(n, _)| *n == name) {
            Some(slot) => slot.1 = value,
            None => self.0.push((name, value)),
        }
    }

    /// Put axis `name` at `position` (clamped to the end); used to rebuild axis order.
    pub fn insert_at(&mut self, position: usize, name: &str, value: Value) {
        let position = position.min(self.0.len());
        self.0.insert(position, (name.to_owned(), value));
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &Value)> {
        self.0.iter().map(|(n, v)| (n.as_str(), v))
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// `threads=4, n=256`: each value's [`Value::receipt_text`], in axis order.
    pub fn receipt_text(&self) -> String {
        self.iter()
            .map(|(k, v)| format!("{k}={}", v.receipt_text()))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl<K: Into<String>> FromIterator<(K, Value)> for Params {
    fn from_iter<I: IntoIterator<Item = (K, Value)>>(iter: I) -> Self {
        let mut params = Params::new();
        for (name, value) in iter {
            params.insert(name, value);
        }
        params
    }
}

/// `threads=4 n=1024`; empty params print as `-`.
impl fmt::Display for Params {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return f.write_str("-");
        }
        for (i, (name, value)) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            write!(f, "{name}={value}")?;
        }
        Ok(())
    }
}

impl Serialize for Params {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (name, value) in &self.0 {
            map.serialize_entry(name, value)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Params {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ParamsVisitor;

        impl<'de> Visitor<'de> for ParamsVisitor {
            type Value = Params;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object of axis name to number or string")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Params, A::Error> {
                let mut params = Params::new();
                while let Some((name, value)) = access.next_entry::<String, Value>()? {
                    params.insert(name, value);
                }
                Ok(params)
            }
        }

        deserializer.deserialize_map(ParamsVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_reads_one_way_for_commands_one_for_people_and_one_as_json() {
        let two = Value::Float(2.0);
        let ring = Value::from("ring");
        assert_eq!(
            (two.to_string(), ring.to_string()),
            ("2".into(), "ring".into())
        );
        assert_eq!(
            (two.receipt_text(), ring.receipt_text()),
            ("2.0".into(), "ring".into())
        );
        assert_eq!(
            (two.json_text(), ring.json_text()),
            ("2.0".into(), "\"ring\"".into())
        );
        let p: Params = [("n", Value::Int(4)), ("mode", ring)].into_iter().collect();
        assert_eq!(p.receipt_text(), "n=4, mode=ring");
        assert_eq!(p.to_string(), "n=4 mode=ring");
    }

    #[test]
    fn value_serializes_untagged_and_round_trips() {
        let values = vec![Value::Int(4), Value::Float(0.5), Value::from("ring")];
        let json = serde_json::to_string(&values).unwrap();
        assert_eq!(json, r#"[4,0.5,"ring"]"#);
        let back: Vec<Value> = serde_json::from_str(&json).unwrap();
        assert_eq!(back, values);
    }

    #[test]
    fn params_keep_axis_order_in_json_and_display() {
        let mut p = Params::new();
        p.insert("threads", Value::Int(8));
        p.insert("n", Value::Int(1024));
        p.insert("algo", Value::from("ring"));
        assert_eq!(p.to_string(), "threads=8 n=1024 algo=ring");
        let json = serde_json::to_string(&p).unwrap();
        assert_eq!(json, r#"{"threads":8,"n":1024,"algo":"ring"}"#);
        let back: Params = serde_json::from_str(&json).unwrap();
        assert_eq!(back, p);
        p.insert("threads", Value::Int(2));
        assert_eq!(p.to_string(), "threads=2 n=1024 algo=ring");
    }

    #[test]
    fn int_and_float_are_distinct_values() {
        assert_ne!(Value::Int(1), Value::Float(1.0));
        assert_eq!(Value::Float(2.0).to_string(), "2");
    }
}
