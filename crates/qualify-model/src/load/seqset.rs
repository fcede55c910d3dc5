//! [`SeqSet`]: a compact set of request sequence numbers (one bit each), for the record of
//! attempted and acknowledged writes. Serializes as sorted inclusive ranges `[[lo, hi], …]`,
//! which stays short for the mostly contiguous sets a load produces.

use serde::de::Deserializer;
use serde::ser::Serializer;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SeqSet {
    words: Vec<u64>,
    len: u64,
}

impl SeqSet {
    pub fn new() -> SeqSet {
        SeqSet::default()
    }

    /// Add `seq`; returns whether it was new.
    pub fn insert(&mut self, seq: u64) -> bool {
        let (word, bit) = ((seq / 64) as usize, seq % 64);
        if word >= self.words.len() {
            self.words.resize(word + 1, 0);
        }
        let mask = 1u64 << bit;
        let new = self.words[word] & mask == 0;
        self.words[word] |= mask;
        self.len += u64::from(new);
        new
    }

    pub fn contains(&self, seq: u64) -> bool {
        self.words
            .get((seq / 64) as usize)
            .is_some_and(|w| w & (1 << (seq % 64)) != 0)
    }

    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The members, ascending.
    pub fn iter(&self) -> impl Iterator<Item = u64> + '_ {
        self.words.iter().enumerate().flat_map(|(i, &w)| {
            let base = i as u64 * 64;
            let mut rest = w;
            std::iter::from_fn(move || {
                if rest == 0 {
                    return None;
                }
                let bit = u64::from(rest.trailing_zeros());
                rest &= rest - 1;
                Some(base + bit)
            })
        })
    }

    /// Maximal runs of consecutive members as inclusive `(lo, hi)`, ascending.
    pub fn ranges(&self) -> Vec<(u64, u64)> {
        let mut out: Vec<(u64, u64)> = Vec::new();
        for seq in self.iter() {
            match out.last_mut() {
                Some((_, hi)) if *hi + 1 == seq => *hi = seq,
                _ => out.push((seq, seq)),
            }
        }
        out
    }

    /// Add every member of `other`.
    pub fn union_with(&mut self, other: &SeqSet) {
        if other.words.len() > self.words.len() {
            self.words.resize(other.words.len(), 0);
        }
        for (mine, theirs) in self.words.iter_mut().zip(&other.words) {
            *mine |= theirs;
        }
        self.len = self.words.iter().map(|w| u64::from(w.count_ones())).sum();
    }

    /// Members of `self` that are not in `other`.
    pub fn difference(&self, other: &SeqSet) -> SeqSet {
        let mut out = SeqSet::new();
        for seq in self.iter().filter(|s| !other.contains(*s)) {
            out.insert(seq);
        }
        out
    }
}

impl Serialize for SeqSet {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.ranges()
            .into_iter()
            .map(|(lo, hi)| [lo, hi])
            .collect::<Vec<_>>()
            .serialize(s)
    }
}

impl<'de> Deserialize<'de> for SeqSet {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<SeqSet, D::Error> {
        let ranges = Vec::<[u64; 2]>::deserialize(d)?;
        let mut set = SeqSet::new();
        for [lo, hi] in ranges {
            if hi < lo || hi - lo > 1 << 40 {
                return Err(serde::de::Error::custom(format!("bad range [{lo}, {hi}]")));
            }
            for seq in lo..=hi {
                set.insert(seq);
            }
        }
        Ok(set)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_and_round_trip() {
        let mut s = SeqSet::new();
        for seq in [5, 0, 1, 2, 63, 64, 65, 200, 2] {
            s.insert(seq);
        }
        assert_eq!(s.len(), 8);
        assert_eq!(s.ranges(), [(0, 2), (5, 5), (63, 65), (200, 200)]);
        let json = serde_json::to_string(&s).unwrap();
        assert_eq!(json, "[[0,2],[5,5],[63,65],[200,200]]");
        let back: SeqSet = serde_json::from_str(&json).unwrap();
        assert_eq!(back, s);
        let mut t = SeqSet::new();
        t.insert(1);
        t.insert(200);
        assert_eq!(
            s.difference(&t).ranges(),
            [(0, 0), (2, 2), (5, 5), (63, 65)]
        );
        assert!(serde_json::from_str::<SeqSet>("[[3,1]]").is_err());
    }
}
