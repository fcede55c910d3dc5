//! How many measured runs a cell gets: a fixed count, or `auto` (rounds until every cell's
//! estimate is precise enough, within a maximum and an optional budget). Serialized as the
//! number or the string `"auto"`, as the spec writes it.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Repeat {
    /// Exactly this many measured runs per cell.
    Fixed(u64),
    /// At least the minimum rounds, then more while a cell is imprecise.
    Auto,
}

impl std::fmt::Display for Repeat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Repeat::Fixed(n) => write!(f, "{n}"),
            Repeat::Auto => f.write_str("auto"),
        }
    }
}

impl Serialize for Repeat {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Repeat::Fixed(n) => s.serialize_u64(*n),
            Repeat::Auto => s.serialize_str("auto"),
        }
    }
}

impl<'de> Deserialize<'de> for Repeat {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Repeat, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            N(u64),
            S(String),
        }
        match Raw::deserialize(d)? {
            Raw::N(n) => Ok(Repeat::Fixed(n)),
            Raw::S(s) if s == "auto" => Ok(Repeat::Auto),
            Raw::S(s) => Err(serde::de::Error::custom(format!(
                "repeat: expected a number or \"auto\", found \"{s}\""
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serialized_as_the_spec_writes_it() {
        for (r, text) in [(Repeat::Fixed(5), "5"), (Repeat::Auto, "\"auto\"")] {
            assert_eq!(serde_json::to_string(&r).unwrap_or_default(), text);
            assert_eq!(serde_json::from_str::<Repeat>(text).ok(), Some(r));
        }
        assert!(serde_json::from_str::<Repeat>("\"often\"").is_err());
    }
}
