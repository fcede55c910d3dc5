//! `qualify-ledger`: the durable record of every receipt a qualify installation produced.
//!
//! A SQLite database (WAL mode, `.qualify/ledger.sqlite` by default) holds each receipt by digest
//! (sha256 of its bytes, whole text kept) with its cells and failures, and each *incident* (a
//! failure observed outside qualify, [`Ledger::record_incident`]), in one hash chain: each entry
//! records the digest of the entry before it, and [`Ledger::verify`] recomputes every digest and
//! every link. Every failing cell and every incident becomes a *control* ([`Control`]) that later
//! runs of the same artifact re-run. [`Ledger::stats`] does the accounting: accepted runs per
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
//! [`incident`] (incidents and the claimed-region test for escapes), [`stats`] (accounting).

pub mod incident;
pub mod receipt;
pub mod schema;
pub mod stats;

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

/// A failing cell kept as a regression control: later runs of `artifact` re-run `params`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Control {
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
    /// `None` when every digest and link holds.
    pub broken: Option<BrokenLink>,
}

/// The first place the chain does not hold.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BrokenLink {
    pub seq: i64,
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
    /// Open (creating if needed) the ledger at `path`, in WAL mode, migrated to the current schema.
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
        conn.pragma_update(None, "synchronous", "NORMAL")
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
        Ok(Ledger {
            conn,
            path: path.to_path_buf(),
        })
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
    pub fn append(&mut self, text: &str) -> Result<Appended> {
        let indexed = IndexedReceipt::parse(text).map_err(LedgerError::BadReceipt)?;
        let digest = sha256_hex(text.as_bytes());
        let now = unix_now();
        let path = self.path.display().to_string();
        let sql = |source| LedgerError::Sqlite {
            path: path.clone(),
            source,
        };
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
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
        tx.commit().map_err(sql)?;
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

    /// Recompute every stored receipt's and incident's digest and every link of the chain;
    /// report the first entry that does not hold. The chain gives the order; each receipt row
    /// (by `seq`) and incident row (by `id`) is matched to the next chain entry of its kind.
    pub fn verify(&self) -> Result<Verification> {
        let sql = |e| self.sql(e);
        let mut chain_stmt = self
            .conn
            .prepare("SELECT kind, digest, prev_digest FROM chain ORDER BY pos")
            .map_err(sql)?;
        let mut receipt_stmt = self
            .conn
            .prepare("SELECT seq, digest, prev_digest, text, artifact FROM receipts ORDER BY seq")
            .map_err(sql)?;
        let mut incident_stmt = self
            .conn
            .prepare("SELECT digest, text FROM incidents ORDER BY id")
            .map_err(sql)?;
        let mut chain = chain_stmt.query([]).map_err(sql)?;
        let mut receipt_rows = receipt_stmt.query([]).map_err(sql)?;
        let mut incident_rows = incident_stmt.query([]).map_err(sql)?;
        let mut receipts = 0;
        let mut previous: Option<String> = None;
        let mut disagreement: Option<(i64, i64, String)> = None;
        let broken = |receipts: i64, seq: i64, digest: &str, reason: String| {
            Ok(Verification {
                receipts,
                broken: Some(BrokenLink {
                    seq,
                    digest: digest.to_string(),
                    reason,
                }),
            })
        };
        while let Some(entry) = chain.next().map_err(sql)? {
            let kind: String = entry.get(0).map_err(sql)?;
            let chain_digest: String = entry.get(1).map_err(sql)?;
            let chain_prev: Option<String> = entry.get(2).map_err(sql)?;
            if kind == "receipt" {
                receipts += 1;
                let Some(row) = receipt_rows.next().map_err(sql)? else {
                    return broken(
                        receipts,
                        0,
                        &chain_digest,
                        "the chain lists a receipt whose row is missing: it was deleted".into(),
                    );
                };
                let seq: i64 = row.get(0).map_err(sql)?;
                let digest: String = row.get(1).map_err(sql)?;
                let prev: Option<String> = row.get(2).map_err(sql)?;
                let text: String = row.get(3).map_err(sql)?;
                let artifact: String = row.get(4).map_err(sql)?;
                let actual = sha256_hex(text.as_bytes());
                if actual != digest {
                    return broken(
                        receipts,
                        seq,
                        &digest,
                        format!(
                            "the stored receipt text hashes to {actual}, not to its recorded digest: the row was modified"
                        ),
                    );
                }
                if prev != previous {
                    return broken(
                        receipts,
                        seq,
                        &digest,
                        format!(
                            "it records the previous receipt or incident as {}, but the entry before it is {}",
                            prev.as_deref().unwrap_or("(none)"),
                            previous.as_deref().unwrap_or("(none)")
                        ),
                    );
                }
                match IndexedReceipt::parse(&text) {
                    Ok(ix) if ix.artifact == artifact => {}
                    Ok(ix) => {
                        return broken(
                            receipts,
                            seq,
                            &digest,
                            format!(
                                "its indexed artifact `{artifact}` differs from the receipt's `{}`",
                                ix.artifact
                            ),
                        );
                    }
                    Err(e) => {
                        return broken(
                            receipts,
                            seq,
                            &digest,
                            format!("its stored text is not a receipt: {e}"),
                        );
                    }
                }
                // Reported only when nothing else breaks: a rewritten row (text and digest)
                // shows first as a broken link at the next entry.
                if (chain_digest != digest || chain_prev != prev) && disagreement.is_none() {
                    disagreement = Some((receipts, seq, digest.clone()));
                }
                previous = Some(digest);
            } else {
                let Some(row) = incident_rows.next().map_err(sql)? else {
                    return broken(
                        receipts,
                        0,
                        &chain_digest,
                        "the chain lists an incident whose row is missing: it was deleted".into(),
                    );
                };
                let digest: String = row.get(0).map_err(sql)?;
                let text: String = row.get(1).map_err(sql)?;
                let actual = sha256_hex(text.as_bytes());
                if actual != digest || digest != chain_digest {
                    return broken(
                        receipts,
                        0,
                        &digest,
                        format!(
                            "the stored incident text hashes to {actual}, not to its recorded digest {chain_digest}: the row was modified"
                        ),
                    );
                }
                if chain_prev != previous {
                    return broken(
                        receipts,
                        0,
                        &digest,
                        format!(
                            "incident {digest} records the previous receipt or incident as {}, but the entry before it is {}",
                            chain_prev.as_deref().unwrap_or("(none)"),
                            previous.as_deref().unwrap_or("(none)")
                        ),
                    );
                }
                previous = Some(digest);
            }
        }
        if receipt_rows.next().map_err(sql)?.is_some()
            || incident_rows.next().map_err(sql)?.is_some()
        {
            return broken(
                receipts,
                0,
                "",
                "receipt or incident rows exist outside the chain: they were added behind the ledger's back"
                    .into(),
            );
        }
        if let Some((at, seq, digest)) = disagreement {
            return broken(
                at,
                seq,
                &digest,
                "its row and its chain entry disagree: one of them was modified".into(),
            );
        }
        Ok(Verification {
            receipts,
            broken: None,
        })
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
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(sql)?;
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
        tx.commit().map_err(sql)?;
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
    pub fn controls(&self, artifact: Option<&str>) -> Result<Vec<Control>> {
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
                Ok(Control {
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

/// The digest at the head of the chain (receipt or incident), if any.
fn chain_head(tx: &rusqlite::Transaction<'_>) -> rusqlite::Result<Option<String>> {
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
