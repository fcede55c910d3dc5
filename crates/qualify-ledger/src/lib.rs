//! `qualify-ledger`: the durable record of every receipt a qualify installation produced.
//!
//! A SQLite database (WAL mode, `.qualify/ledger.sqlite` by default) holds each receipt by digest
//! (sha256 of its bytes, whole text kept) with its cells and failures, and each *incident* (a
//! failure observed outside qualify, [`Ledger::record_incident`]), in one hash chain: each entry
//! records the digest of the entry before it, and a file beside the database, its [`anchor`],
//! records the chain's length and last link. [`Ledger::verify`] recomputes every digest, link
//! and derived column from the stored texts, the controls from the chain, and the chain's end
//! from the anchor ([`verify`]); [`Ledger::open_verified`] refuses a ledger that does not hold,
//! naming the row. Every failing cell and every incident becomes a regression ([`Regression`],
//! stored as a *control*) that later runs of the same artifact re-run. [`Ledger::stats`] does the accounting: accepted runs per
//! artifact and claim level, failures by outcome, escapes (incidents an accepted receipt's claim
//! covered) and the escape rate, repeating failure signatures, time from a failure's first
//! sighting to its first pass, and for runs with a development trace how often failures appeared
//! where development never went versus where it did.
//!
//! The crate reads receipts as generic JSON (only the fields it indexes), so it depends on no
//! qualify crate but the vocabulary (for its digest). Every write is one transaction: a killed
//! writer leaves the ledger as it was before that write.
//!
//! Modules: [`schema`] (tables and migrations), [`receipt`] (what is indexed from a receipt),
//! [`incident`] (incidents and the claimed-region test for escapes), [`stats`] (accounting),
//! [`anchor`] (the chain's end, outside the database), `verify` (recomputing what is shown).

pub mod anchor;
pub mod incident;
pub mod receipt;
pub mod schema;
pub mod stats;
mod verify;

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use serde::Serialize;
use serde_json::Value;

pub use incident::{Incident, NewIncident, RecordedIncident};
pub use receipt::{IndexError, IndexedCell, IndexedDevelopment, IndexedReceipt, signature};
pub use stats::Stats;

/// The ledger's default location, relative to the current directory.
pub const DEFAULT_PATH: &str = ".qualify/ledger.sqlite";

/// What can go wrong opening, reading or writing the ledger.
#[derive(Debug, thiserror::Error)]
pub enum LedgerError {
    #[error("ledger {path}: {source}")]
    Sqlite {
        path: String,
        #[source]
        source: rusqlite::Error,
    },
    #[error("ledger {path}: cannot create its directory: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "ledger {path}: schema version {found} is newer than this qualify understands ({supported}); use a newer qualify"
    )]
    TooNew {
        path: String,
        found: i64,
        supported: i64,
    },
    #[error("not a qualify receipt: {0}")]
    BadReceipt(#[source] receipt::IndexError),
    #[error("no receipt in the ledger has a digest starting with `{0}`")]
    NotFound(String),
    #[error("digest prefix `{prefix}` is ambiguous: it matches {count} receipts; give more digits")]
    Ambiguous { prefix: String, count: usize },
    #[error(
        "no receipt of artifact `{0}` is in the ledger; `qualify ledger list` shows the artifacts it knows"
    )]
    UnknownArtifact(String),
    #[error("receipt {digest} is of artifact `{found}`, not `{wanted}`")]
    OtherArtifact {
        digest: String,
        found: String,
        wanted: String,
    },
    /// The ledger does not hold: a row was edited, added or deleted outside qualify.
    #[error("ledger {path} is broken at {}: {}", .broken.row, .broken.reason)]
    Broken { path: String, broken: BrokenLink },
    #[error("ledger: {0}")]
    Anchor(#[from] anchor::AnchorError),
}

pub type Result<T> = std::result::Result<T, LedgerError>;

/// An open ledger.
pub struct Ledger {
    conn: Connection,
    path: PathBuf,
}

/// One stored receipt, as `ledger list` shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Entry {
    /// Position in the chain, from 1.
    pub seq: i64,
    pub digest: String,
    /// The digest of the receipt before it (`None` for the first).
    pub prev_digest: Option<String>,
    pub artifact: String,
    pub claim_level: String,
    pub supported: bool,
    pub incomplete: bool,
    pub cells: i64,
    pub failures: i64,
    pub control_cells: i64,
    /// The receipt's own start and finish (RFC 3339), when it states them.
    pub started: Option<String>,
    pub finished: Option<String>,
    /// When the ledger stored it, seconds since the Unix epoch.
    pub recorded_at: i64,
}

/// What to do about a ledger that does not hold.
pub const BROKEN_FIX: &str = "nothing is added to or counted from a ledger someone edited: `qualify ledger verify` shows the row; restore the ledger (and its .anchor file) from a copy, or pass --ledger PATH for another";

/// A failing cell kept as a regression (stored as a "control", the ledger's word on disk and
/// in `qualify ledger controls`): later runs of `artifact` re-run `params` first. Not a
/// service's `none` control (`qualify_service::Controls`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Regression {
    pub id: i64,
    pub artifact: String,
    /// The cell's parameters (a JSON object in axis order).
    pub params: Value,
    /// The limits the failing cell ran under (as the probe result states them).
    pub limits: Value,
    /// The outcome that created it, e.g. `deadlock`.
    pub outcome: String,
    /// `deadlock@threads=4,rounds=10`.
    pub signature: String,
    /// Digest of the receipt that first saw it fail (or of the incident that reported it).
    pub first_receipt: String,
    pub created_at: i64,
}

/// The result of [`Ledger::verify`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verification {
    pub receipts: i64,
    pub incidents: i64,
    /// Controls the chain creates (and the table holds, when nothing is broken).
    pub controls: i64,
    /// `None` when every digest, link, derived column and the anchor hold.
    pub broken: Option<BrokenLink>,
}

/// The first place the ledger does not hold.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BrokenLink {
    /// The row, in words: `receipt seq 3`, `incident 2`, `control 5`, `the schema`, `the end of
    /// the chain`.
    pub row: String,
    /// The receipt's seq when the row is a receipt's (0 otherwise).
    pub seq: i64,
    /// The entry's digest, when there is one.
    pub digest: String,
    pub reason: String,
}

/// What [`Ledger::append`] did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Appended {
    pub seq: i64,
    pub digest: String,
    /// The receipt was already in the ledger (nothing was written).
    pub already_present: bool,
    /// Controls created from its failing cells (ones already known are not counted).
    pub new_controls: usize,
}

impl Ledger {
    /// Open (creating if needed) the ledger at `path`, in WAL mode, migrated to the current schema,
    /// with its anchor (written for the chain as it is when there is none: a new ledger, or one
    /// from before anchors). Nothing is verified: see [`Ledger::open_verified`].
    pub fn open(path: &Path) -> Result<Ledger> {
        let shown = path.display().to_string();
        if let Some(dir) = path.parent()
            && !dir.as_os_str().is_empty()
        {
            std::fs::create_dir_all(dir).map_err(|source| LedgerError::Io {
                path: shown.clone(),
                source,
            })?;
        }
        let sql = |source| LedgerError::Sqlite {
            path: shown.clone(),
            source,
        };
        let mut conn = Connection::open(path).map_err(sql)?;
        conn.busy_timeout(Duration::from_secs(30)).map_err(sql)?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(sql)?;
        // Each commit is on disk before the anchor says so: a power loss must not leave an
        // anchor ahead of the database (which would read as a deleted tail).
        conn.pragma_update(None, "synchronous", "FULL")
            .map_err(sql)?;
        conn.pragma_update(None, "foreign_keys", "ON")
            .map_err(sql)?;
        match schema::migrate(&mut conn) {
            Ok(()) => {}
            Err(schema::MigrateError::Sqlite(e)) => return Err(sql(e)),
            Err(schema::MigrateError::TooNew(found)) => {
                return Err(LedgerError::TooNew {
                    path: shown,
                    found,
                    supported: schema::VERSION,
                });
            }
        }
        let ledger = Ledger {
            conn,
            path: path.to_path_buf(),
        };
        ledger.ensure_anchor()?;
        Ok(ledger)
    }

    /// [`Ledger::open`], then [`Ledger::verify`]: a ledger that does not hold is refused
    /// ([`LedgerError::Broken`], naming the row). What `run`, `ledger incident` and `ledger stats`
    /// open, so that nothing is added to or counted from a ledger someone edited.
    pub fn open_verified(path: &Path) -> Result<Ledger> {
        let ledger = Ledger::open(path)?;
        match ledger.verify()?.broken {
            None => Ok(ledger),
            Some(broken) => Err(LedgerError::Broken {
                path: path.display().to_string(),
                broken,
            }),
        }
    }

    /// The files of the ledger at `path` besides the database itself: SQLite's (`-wal`, `-shm`,
    /// `-journal`) and the anchor. Whatever hides the ledger hides them too.
    pub fn companion_files(path: &Path) -> Vec<PathBuf> {
        let mut out: Vec<PathBuf> = ["-wal", "-shm", "-journal"]
            .iter()
            .map(|suffix| {
                let mut p = path.as_os_str().to_owned();
                p.push(suffix);
                PathBuf::from(p)
            })
            .collect();
        out.push(anchor::path_for(path));
        out
    }

    /// Write the anchor for the chain as it is when there is none (a new ledger, or one written
    /// before anchors). An existing anchor is never replaced here.
    fn ensure_anchor(&self) -> Result<()> {
        let path = anchor::path_for(&self.path);
        if path.exists() {
            return Ok(());
        }
        let tx = rusqlite::Transaction::new_unchecked(&self.conn, TransactionBehavior::Immediate)
            .map_err(|e| self.sql(e))?;
        if !path.exists() {
            let (head, _) = chain_links(&tx).map_err(|e| self.sql(e))?;
            anchor::Anchor::settled(head).write(&path)?;
        }
        tx.finish().map_err(|e| self.sql(e))
    }

    /// Inside a writer's transaction: the chain's head, refused unless the anchor records it.
    fn anchored_head(&self, tx: &rusqlite::Transaction<'_>) -> Result<anchor::Head> {
        let (head, links) = chain_links(tx).map_err(|e| self.sql(e))?;
        let path = anchor::path_for(&self.path);
        let reason = match anchor::Anchor::read(&path)? {
            None => None,
            Some(a) => a.disagreement(&head, &links),
        };
        match reason {
            None => Ok(head),
            Some(reason) => Err(LedgerError::Broken {
                path: self.path.display().to_string(),
                broken: BrokenLink {
                    row: "the end of the chain".into(),
                    seq: 0,
                    digest: String::new(),
                    reason,
                },
            }),
        }
    }

    /// Before a writer's commit: the anchor names the entry it adds as pending.
    fn announce(&self, head: &anchor::Head, next: &anchor::Head) -> Result<()> {
        anchor::Anchor {
            version: 1,
            head: head.clone(),
            pending: Some(next.clone()),
        }
        .write(&anchor::path_for(&self.path))?;
        Ok(())
    }

    /// After a writer's commit, under the write lock again: the anchor without `pending`, unless
    /// another writer has added to the chain since (its anchor is newer). A failure here leaves
    /// the pending anchor, which still holds.
    fn settle(&self, next: &anchor::Head) {
        let settle = || -> Result<()> {
            let tx =
                rusqlite::Transaction::new_unchecked(&self.conn, TransactionBehavior::Immediate)
                    .map_err(|e| self.sql(e))?;
            let (count, last): (i64, Option<String>) = tx
                .query_row(
                    "SELECT COUNT(*), (SELECT digest FROM chain ORDER BY pos DESC LIMIT 1) FROM chain",
                    [],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .map_err(|e| self.sql(e))?;
            if count == next.entries && last.as_ref() == next.last.as_ref().map(|(_, d)| d) {
                anchor::Anchor::settled(next.clone()).write(&anchor::path_for(&self.path))?;
            }
            tx.finish().map_err(|e| self.sql(e))
        };
        let _ = settle();
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn sql(&self, source: rusqlite::Error) -> LedgerError {
        LedgerError::Sqlite {
            path: self.path.display().to_string(),
            source,
        }
    }

    /// Store a receipt's text (as written to its file) with its cells and failures, chained to
    /// the current head, and turn each failing cell into a control. One transaction.
    /// Refused ([`LedgerError::Broken`]) when the chain's end is not what the anchor records.
    pub fn append(&mut self, text: &str) -> Result<Appended> {
        let indexed = IndexedReceipt::parse(text).map_err(LedgerError::BadReceipt)?;
        let digest = sha256_hex(text.as_bytes());
        let now = unix_now();
        let path = self.path.display().to_string();
        let sql = |source| LedgerError::Sqlite {
            path: path.clone(),
            source,
        };
        let tx = rusqlite::Transaction::new_unchecked(&self.conn, TransactionBehavior::Immediate)
            .map_err(sql)?;
        if let Some(seq) = tx
            .query_row(
                "SELECT seq FROM receipts WHERE digest = ?1",
                [&digest],
                |r| r.get::<_, i64>(0),
            )
            .optional()
            .map_err(sql)?
        {
            return Ok(Appended {
                seq,
                digest,
                already_present: true,
                new_controls: 0,
            });
        }
        let head = self.anchored_head(&tx)?;
        let next = head.next("receipt", &digest, now);
        let prev = chain_head(&tx).map_err(sql)?;
        tx.execute(
            "INSERT INTO chain (kind, digest, prev_digest) VALUES ('receipt', ?1, ?2)",
            params![digest, prev],
        )
        .map_err(sql)?;
        tx.execute(
            "INSERT INTO receipts (digest, prev_digest, text, artifact, claim_level, supported, \
             incomplete, started, finished, recorded_at) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            params![
                digest,
                prev,
                text,
                indexed.artifact,
                indexed.claim_level,
                indexed.supported,
                indexed.incomplete,
                indexed.started,
                indexed.finished,
                now,
            ],
        )
        .map_err(sql)?;
        let seq = tx.last_insert_rowid();
        if let Some(d) = &indexed.development {
            tx.execute(
                "INSERT INTO development (receipt_seq, artifact, formats, commands, artifact_runs, \
                 failing_cells, outside, inside, unknown, summary) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                params![
                    seq,
                    indexed.artifact,
                    d.formats,
                    d.commands,
                    d.artifact_runs,
                    d.failing_cells,
                    d.outside,
                    d.inside,
                    d.unknown,
                    d.summary,
                ],
            )
            .map_err(sql)?;
        }
        let mut new_controls = 0;
        for (idx, cell) in indexed.cells.iter().enumerate() {
            tx.execute(
                "INSERT INTO cells (receipt_seq, idx, params, params_key, outcome, signature, \
                 control, boundary) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                params![
                    seq,
                    idx as i64,
                    cell.params.to_string(),
                    cell.params_key,
                    cell.outcome,
                    cell.signature,
                    cell.control,
                    cell.boundary,
                ],
            )
            .map_err(sql)?;
            if !cell.failed() {
                continue;
            }
            tx.execute(
                "INSERT INTO failures (receipt_seq, idx, artifact, outcome, params, params_key, \
                 signature, control, recorded_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                params![
                    seq,
                    idx as i64,
                    indexed.artifact,
                    cell.outcome,
                    cell.params.to_string(),
                    cell.params_key,
                    cell.signature,
                    cell.control,
                    now,
                ],
            )
            .map_err(sql)?;
            new_controls += tx
                .execute(
                    "INSERT OR IGNORE INTO controls (artifact, params, params_key, limits, outcome, \
                     signature, first_receipt, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                    params![
                        indexed.artifact,
                        cell.params.to_string(),
                        cell.params_key,
                        cell.limits.to_string(),
                        cell.outcome,
                        cell.signature,
                        digest,
                        now,
                    ],
                )
                .map_err(sql)?;
        }
        self.announce(&head, &next)?;
        tx.commit().map_err(sql)?;
        self.settle(&next);
        Ok(Appended {
            seq,
            digest,
            already_present: false,
            new_controls,
        })
    }

    /// Every stored receipt, oldest first.
    pub fn list(&self) -> Result<Vec<Entry>> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT r.seq, r.digest, r.prev_digest, r.artifact, r.claim_level, r.supported, \
                 r.incomplete, r.started, r.finished, r.recorded_at, \
                 (SELECT COUNT(*) FROM cells c WHERE c.receipt_seq = r.seq), \
                 (SELECT COUNT(*) FROM failures f WHERE f.receipt_seq = r.seq), \
                 (SELECT COUNT(*) FROM cells c WHERE c.receipt_seq = r.seq AND c.control) \
                 FROM receipts r ORDER BY r.seq",
            )
            .map_err(|e| self.sql(e))?;
        let rows = stmt
            .query_map([], |r| {
                Ok(Entry {
                    seq: r.get(0)?,
                    digest: r.get(1)?,
                    prev_digest: r.get(2)?,
                    artifact: r.get(3)?,
                    claim_level: r.get(4)?,
                    supported: r.get(5)?,
                    incomplete: r.get(6)?,
                    started: r.get(7)?,
                    finished: r.get(8)?,
                    recorded_at: r.get(9)?,
                    cells: r.get(10)?,
                    failures: r.get(11)?,
                    control_cells: r.get(12)?,
                })
            })
            .map_err(|e| self.sql(e))?;
        rows.collect::<rusqlite::Result<Vec<_>>>()
            .map_err(|e| self.sql(e))
    }

    /// The stored text of the one receipt whose digest starts with `prefix`.
    pub fn show(&self, prefix: &str) -> Result<(Entry, String)> {
        let prefix = prefix.trim().to_ascii_lowercase();
        if prefix.is_empty() || !prefix.chars().all(|c| c.is_ascii_hexdigit()) {
            return Err(LedgerError::NotFound(prefix));
        }
        let matches: Vec<Entry> = self
            .list()?
            .into_iter()
            .filter(|e| e.digest.starts_with(&prefix))
            .collect();
        let entry = match matches.len() {
            0 => return Err(LedgerError::NotFound(prefix)),
            1 => matches
                .into_iter()
                .next()
                .ok_or(LedgerError::NotFound(prefix))?,
            count => return Err(LedgerError::Ambiguous { prefix, count }),
        };
        let text: String = self
            .conn
            .query_row(
                "SELECT text FROM receipts WHERE seq = ?1",
                [entry.seq],
                |r| r.get(0),
            )
            .map_err(|e| self.sql(e))?;
        Ok((entry, text))
    }

    /// Recompute every stored receipt's and incident's digest, every link of the chain, every
    /// column `list`, `stats` and `controls` show from the stored texts, the controls from the
    /// chain, the schema, and the chain's end from the anchor; report the first row that does
    /// not hold ([`verify`]).
    pub fn verify(&self) -> Result<Verification> {
        verify::run(&self.conn, &self.path).map_err(|e| self.sql(e))
    }

    /// Record a failure observed outside qualify: it joins the chain, becomes a control for its
    /// artifact, and is an escape when an accepted receipt's claim covered its parameters. One
    /// transaction.
    pub fn record_incident(&mut self, new: &NewIncident) -> Result<RecordedIncident> {
        let receipts = self.receipts_of(&new.artifact)?;
        if receipts.is_empty() {
            return Err(LedgerError::UnknownArtifact(new.artifact.clone()));
        }
        let (escaped, escape_note) = match &new.receipt {
            Some(prefix) => {
                let (entry, _) = self.show(prefix)?;
                if entry.artifact != new.artifact {
                    return Err(LedgerError::OtherArtifact {
                        digest: entry.digest,
                        found: entry.artifact,
                        wanted: new.artifact.clone(),
                    });
                }
                if entry.supported && !entry.incomplete {
                    let note = format!(
                        "an escape: receipt {} had accepted the {} claim",
                        short(&entry.digest),
                        entry.claim_level
                    );
                    (Some((entry.digest, entry.claim_level)), note)
                } else {
                    let note = format!(
                        "not an escape: receipt {} did not accept its claim",
                        short(&entry.digest)
                    );
                    (None, note)
                }
            }
            None => {
                let found = receipts
                    .iter()
                    .rev()
                    .filter(|(e, _)| e.supported && !e.incomplete)
                    .find(|(_, text)| incident::claims(text, &new.params));
                match found {
                    Some((e, _)) => (
                        Some((e.digest.clone(), e.claim_level.clone())),
                        format!(
                            "an escape: receipt {} (the latest accepted one whose claimed region contains these parameters) had accepted the {} claim",
                            short(&e.digest),
                            e.claim_level
                        ),
                    ),
                    None => (
                        None,
                        "not an escape: no accepted receipt of this artifact claimed these parameters"
                            .to_string(),
                    ),
                }
            }
        };
        let now = SystemTime::now();
        let recorded = humantime::format_rfc3339_nanos(now).to_string();
        let text = incident::text(new, escaped.as_ref().map(|e| e.0.as_str()), &recorded);
        let digest = sha256_hex(text.as_bytes());
        let (key, sig) = incident::key_and_signature(new);
        let params_text = Value::Object(new.params.clone()).to_string();
        let at = unix_now();
        let path = self.path.display().to_string();
        let sql = |source| LedgerError::Sqlite {
            path: path.clone(),
            source,
        };
        let tx = rusqlite::Transaction::new_unchecked(&self.conn, TransactionBehavior::Immediate)
            .map_err(sql)?;
        let head = self.anchored_head(&tx)?;
        let next = head.next("incident", &digest, at);
        let prev = chain_head(&tx).map_err(sql)?;
        tx.execute(
            "INSERT INTO chain (kind, digest, prev_digest) VALUES ('incident', ?1, ?2)",
            params![digest, prev],
        )
        .map_err(sql)?;
        tx.execute(
            "INSERT INTO incidents (digest, text, artifact, params, params_key, outcome, signature, \
             detail, escaped_receipt, escaped_level, recorded_at) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
            params![
                digest,
                text,
                new.artifact,
                params_text,
                key,
                new.outcome,
                sig,
                new.detail,
                escaped.as_ref().map(|e| &e.0),
                escaped.as_ref().map(|e| &e.1),
                at,
            ],
        )
        .map_err(sql)?;
        let id = tx.last_insert_rowid();
        let new_control = tx
            .execute(
                "INSERT OR IGNORE INTO controls (artifact, params, params_key, limits, outcome, \
                 signature, first_receipt, created_at) VALUES (?1, ?2, ?3, 'null', ?4, ?5, ?6, ?7)",
                params![new.artifact, params_text, key, new.outcome, sig, digest, at],
            )
            .map_err(sql)?
            > 0;
        self.announce(&head, &next)?;
        tx.commit().map_err(sql)?;
        self.settle(&next);
        Ok(RecordedIncident {
            incident: Incident {
                id,
                digest,
                artifact: new.artifact.clone(),
                params: Value::Object(new.params.clone()),
                outcome: new.outcome.clone(),
                signature: sig,
                detail: new.detail.clone(),
                escaped_receipt: escaped.as_ref().map(|e| e.0.clone()),
                escaped_level: escaped.map(|e| e.1),
                recorded_at: at,
            },
            new_control,
            escape_note,
        })
    }

    /// Incidents, oldest first; only `artifact`'s when given.
    pub fn incidents(&self, artifact: Option<&str>) -> Result<Vec<Incident>> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT id, digest, artifact, params, outcome, signature, detail, escaped_receipt, \
                 escaped_level, recorded_at FROM incidents WHERE ?1 IS NULL OR artifact = ?1 \
                 ORDER BY id",
            )
            .map_err(|e| self.sql(e))?;
        let rows = stmt
            .query_map([artifact], |r| {
                let params: String = r.get(3)?;
                Ok(Incident {
                    id: r.get(0)?,
                    digest: r.get(1)?,
                    artifact: r.get(2)?,
                    params: serde_json::from_str(&params).unwrap_or(Value::Null),
                    outcome: r.get(4)?,
                    signature: r.get(5)?,
                    detail: r.get(6)?,
                    escaped_receipt: r.get(7)?,
                    escaped_level: r.get(8)?,
                    recorded_at: r.get(9)?,
                })
            })
            .map_err(|e| self.sql(e))?;
        rows.collect::<rusqlite::Result<Vec<_>>>()
            .map_err(|e| self.sql(e))
    }

    /// `artifact`'s receipts, oldest first, with their text.
    fn receipts_of(&self, artifact: &str) -> Result<Vec<(Entry, String)>> {
        let entries: Vec<Entry> = self
            .list()?
            .into_iter()
            .filter(|e| e.artifact == artifact)
            .collect();
        let mut out = Vec::with_capacity(entries.len());
        for e in entries {
            let text: String = self
                .conn
                .query_row("SELECT text FROM receipts WHERE seq = ?1", [e.seq], |r| {
                    r.get(0)
                })
                .map_err(|err| self.sql(err))?;
            out.push((e, text));
        }
        Ok(out)
    }

    /// Controls, oldest first; only `artifact`'s when given.
    pub fn regressions(&self, artifact: Option<&str>) -> Result<Vec<Regression>> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT id, artifact, params, limits, outcome, signature, first_receipt, created_at \
                 FROM controls WHERE ?1 IS NULL OR artifact = ?1 ORDER BY id",
            )
            .map_err(|e| self.sql(e))?;
        let rows = stmt
            .query_map([artifact], |r| {
                let params: String = r.get(2)?;
                let limits: String = r.get(3)?;
                Ok(Regression {
                    id: r.get(0)?,
                    artifact: r.get(1)?,
                    params: serde_json::from_str(&params).unwrap_or(Value::Null),
                    limits: serde_json::from_str(&limits).unwrap_or(Value::Null),
                    outcome: r.get(4)?,
                    signature: r.get(5)?,
                    first_receipt: r.get(6)?,
                    created_at: r.get(7)?,
                })
            })
            .map_err(|e| self.sql(e))?;
        rows.collect::<rusqlite::Result<Vec<_>>>()
            .map_err(|e| self.sql(e))
    }

    /// The accounting over every stored receipt.
    pub fn stats(&self) -> Result<Stats> {
        stats::compute(&self.conn).map_err(|e| self.sql(e))
    }
}

pub use qualify_model::sha256_hex;

/// The chain's head and every entry's link, from its rows (no text is read: cheap enough for
/// every write). An entry whose row is missing links with an impossible time, so that it never
/// matches an anchor.
pub(crate) fn chain_links(conn: &Connection) -> rusqlite::Result<(anchor::Head, Vec<String>)> {
    let mut stmt = conn.prepare(
        "SELECT c.kind, c.digest, COALESCE(r.recorded_at, i.recorded_at) FROM chain c \
         LEFT JOIN receipts r ON c.kind = 'receipt' AND r.digest = c.digest \
         LEFT JOIN incidents i ON c.kind = 'incident' AND i.digest = c.digest ORDER BY c.pos",
    )?;
    let mut rows = stmt.query([])?;
    let mut head = anchor::Head::empty();
    let mut links = Vec::new();
    while let Some(r) = rows.next()? {
        let kind: String = r.get(0)?;
        let digest: String = r.get(1)?;
        let at = match r.get::<_, rusqlite::types::Value>(2)? {
            rusqlite::types::Value::Integer(n) => n,
            _ => i64::MIN,
        };
        head = head.next(&kind, &digest, at);
        links.push(head.link.clone());
    }
    Ok((head, links))
}

/// The digest at the head of the chain (receipt or incident), if any.
fn chain_head(tx: &Connection) -> rusqlite::Result<Option<String>> {
    tx.query_row(
        "SELECT digest FROM chain ORDER BY pos DESC LIMIT 1",
        [],
        |r| r.get(0),
    )
    .optional()
}

fn short(digest: &str) -> &str {
    &digest[..digest.len().min(12)]
}

fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod verify_tests;
