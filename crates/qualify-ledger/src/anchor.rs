//! The ledger's anchor: a small file beside the database (`ledger.sqlite.anchor`) naming how many
//! entries the chain has and the *link* of the last one, so that deleting entries from the end of
//! the chain — which leaves every remaining digest and link intact — is still detected.
//!
//! A link covers one chain entry and, through the link before it, every entry before it:
//! `link(i) = sha256("qualify-ledger-entry/v1\n" kind "\n" digest "\n" recorded_at "\n" link(i-1))`,
//! `link(0)` empty. Whoever can change the database but not this file (the artifact never sees
//! either: the sandbox hides both) can neither cut the tail nor rewrite the chain unnoticed.
//!
//! A writer updates the anchor while it holds the database's write lock: before its commit it
//! records the entry it is about to add as `pending`, after its commit (in a second locked step)
//! the anchor without `pending`. The database and the anchor are consistent when the chain's
//! length and last link equal the anchor's, or its `pending` ones: a writer killed between the
//! two steps leaves a ledger that still verifies, and only that one announced entry may be
//! missing or present.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::sha256_hex;

/// The anchor file of the database at `db`: `db` with `.anchor` appended.
pub fn path_for(db: &Path) -> PathBuf {
    let mut s = db.as_os_str().to_owned();
    s.push(".anchor");
    PathBuf::from(s)
}

/// The link of an entry after `prev` (the empty string before the first).
pub fn link(prev: &str, kind: &str, digest: &str, recorded_at: i64) -> String {
    sha256_hex(
        format!("qualify-ledger-entry/v1\n{kind}\n{digest}\n{recorded_at}\n{prev}").as_bytes(),
    )
}

/// A position in the chain: its length and the link of its last entry, and which entry that is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Head {
    pub entries: i64,
    /// Empty for an empty chain.
    pub link: String,
    /// The last entry's kind (`receipt`, `incident`) and digest, to name it when it goes missing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last: Option<(String, String)>,
}

impl Head {
    pub fn empty() -> Head {
        Head {
            entries: 0,
            link: String::new(),
            last: None,
        }
    }

    /// The head after appending one entry.
    pub fn next(&self, kind: &str, digest: &str, recorded_at: i64) -> Head {
        Head {
            entries: self.entries + 1,
            link: link(&self.link, kind, digest, recorded_at),
            last: Some((kind.to_string(), digest.to_string())),
        }
    }

    fn same(&self, other: &Head) -> bool {
        self.entries == other.entries && self.link == other.link
    }
}

/// What the anchor file says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Anchor {
    /// The format, `1`.
    pub version: u32,
    pub head: Head,
    /// The entry a writer is adding (between its two steps).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending: Option<Head>,
}

/// Why the anchor file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum AnchorError {
    #[error("cannot read the anchor {path}: {source}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("the anchor {path} is not an anchor qualify wrote: {message}")]
    Unreadable { path: String, message: String },
    #[error("cannot write the anchor {path}: {source}")]
    Write {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

impl Anchor {
    pub fn settled(head: Head) -> Anchor {
        Anchor {
            version: 1,
            head,
            pending: None,
        }
    }

    /// Whether the chain ending at `head` is what the anchor records.
    pub fn holds(&self, head: &Head) -> bool {
        self.head.same(head) || self.pending.as_ref().is_some_and(|p| p.same(head))
    }

    /// The anchor at `path`; `None` when there is no such file.
    pub fn read(path: &Path) -> Result<Option<Anchor>, AnchorError> {
        let shown = || path.display().to_string();
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => {
                return Err(AnchorError::Read {
                    path: shown(),
                    source,
                });
            }
        };
        let unreadable = |message: String| AnchorError::Unreadable {
            path: shown(),
            message,
        };
        let value = qualify_model::json::from_str(&text).map_err(|e| unreadable(e.to_string()))?;
        let anchor: Anchor =
            serde_json::from_value(value).map_err(|e| unreadable(e.to_string()))?;
        if anchor.version != 1 {
            return Err(unreadable(format!(
                "version {} (this qualify writes 1)",
                anchor.version
            )));
        }
        Ok(Some(anchor))
    }

    /// Replace the anchor at `path` (a new file renamed over the old one, synced first, so that a
    /// reader sees the old or the new anchor whole).
    pub fn write(&self, path: &Path) -> Result<(), AnchorError> {
        let err = |source| AnchorError::Write {
            path: path.display().to_string(),
            source,
        };
        let mut tmp = path.as_os_str().to_owned();
        tmp.push(".tmp");
        let tmp = PathBuf::from(tmp);
        let mut text = serde_json::to_string(self).unwrap_or_default();
        text.push('\n');
        let mut file = std::fs::File::create(&tmp).map_err(err)?;
        file.write_all(text.as_bytes()).map_err(err)?;
        file.sync_all().map_err(err)?;
        drop(file);
        std::fs::rename(&tmp, path).map_err(err)
    }

    /// Why the chain ending at `head` (whose links are `links`, `links[i]` the link of entry
    /// `i + 1`) is not what the anchor records, in words; `None` when it is.
    pub fn disagreement(&self, head: &Head, links: &[String]) -> Option<String> {
        if self.holds(head) {
            return None;
        }
        let recorded = self.pending.as_ref().unwrap_or(&self.head);
        let named = |h: &Head| match &h.last {
            Some((kind, digest)) => format!(" (the last was {kind} {digest})"),
            None => String::new(),
        };
        if self.head.entries > head.entries {
            return Some(format!(
                "the anchor records {} entries, the ledger holds {}: {} entr{} at the end of the chain {} deleted{}",
                self.head.entries,
                head.entries,
                self.head.entries - head.entries,
                if self.head.entries - head.entries == 1 {
                    "y"
                } else {
                    "ies"
                },
                if self.head.entries - head.entries == 1 {
                    "was"
                } else {
                    "were"
                },
                named(&self.head)
            ));
        }
        let at = usize::try_from(self.head.entries).unwrap_or(usize::MAX);
        let prefix_holds = if at == 0 {
            self.head.link.is_empty()
        } else {
            links.get(at - 1) == Some(&self.head.link)
        };
        if prefix_holds {
            return Some(format!(
                "the anchor records {} entries and the ledger holds {}: entries were added behind qualify's back (not through `qualify run` or `qualify ledger incident`)",
                recorded.entries, head.entries
            ));
        }
        Some(format!(
            "the chain's first {} entries no longer link to what the anchor records: entries were rewritten or removed{}",
            self.head.entries,
            named(&self.head)
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_cover_the_entry_and_everything_before_it() {
        let a = Head::empty().next("receipt", "d1", 10);
        let b = a.next("incident", "d2", 11);
        assert_eq!(b.entries, 2);
        assert_ne!(b.link, Head::empty().next("incident", "d2", 11).link);
        assert_ne!(b.link, a.next("incident", "d2", 12).link);
        assert_ne!(b.link, a.next("receipt", "d2", 11).link);
        let anchor = Anchor::settled(b.clone());
        let links = vec![a.link.clone(), b.link.clone()];
        assert_eq!(anchor.disagreement(&b, &links), None);
        let cut = anchor.disagreement(&a, &links[..1]).unwrap();
        assert!(
            cut.contains("1 entry at the end of the chain was deleted"),
            "{cut}"
        );
        assert!(cut.contains("incident d2"), "{cut}");
        let added = Anchor::settled(a.clone()).disagreement(&b, &links).unwrap();
        assert!(added.contains("behind qualify's back"), "{added}");
        let pending = Anchor {
            version: 1,
            head: a.clone(),
            pending: Some(b.clone()),
        };
        assert!(pending.holds(&a) && pending.holds(&b));
    }

    #[test]
    fn the_file_round_trips_and_a_foreign_one_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = path_for(&dir.path().join("l.sqlite"));
        assert!(path.ends_with("l.sqlite.anchor"));
        assert!(Anchor::read(&path).unwrap().is_none());
        let anchor = Anchor::settled(Head::empty().next("receipt", "d", 1));
        anchor.write(&path).unwrap();
        assert_eq!(Anchor::read(&path).unwrap(), Some(anchor));
        std::fs::write(&path, "{\"version\":1,\"head\":{},\"head\":{}}").unwrap();
        let err = Anchor::read(&path).unwrap_err().to_string();
        assert!(err.contains("duplicate key"), "{err}");
    }
}
