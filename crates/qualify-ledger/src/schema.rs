//! The ledger's tables and their migrations. `schema_version` holds one row with the version the
//! database is at; [`migrate`] applies each missing step in its own transaction, so a killed
//! migration leaves the previous version intact. Tables: `receipts` (the hash chain: digest,
//! previous digest, whole text, indexed artifact / claim level / supported flag / timestamps),
//! `cells` (every cell of every receipt), `failures` (the failing ones, with their signature),
//! `controls` (one per artifact and failing parameter set), and since version 2 `incidents`
//! (failures observed outside qualify) and `chain` (one hash chain over receipts and incidents,
//! in the order they were recorded; version 1's receipt chain becomes its first entries), and
//! since version 3 `development` (per receipt with a development trace: its formats, commands,
//! runs of the artifact, and its failing cells outside, inside or not placeable relative to
//! what development ran), and since version 4 nothing new in the database: version 4 is the
//! ledger with an anchor file beside it ([`crate::anchor`]), which a writer of version 3 would not
//! update (so it must refuse the database as too new). [`check`] compares the tables, indexes
//! and triggers with the ones these steps create: a dropped table or an added trigger is a
//! broken ledger, not a different one.

use rusqlite::{Connection, OptionalExtension, TransactionBehavior};

/// The schema version this build writes.
pub const VERSION: i64 = 4;

/// Why the schema could not be brought up to date.
#[derive(Debug)]
pub enum MigrateError {
    Sqlite(rusqlite::Error),
    /// The database was written by a newer qualify.
    TooNew(i64),
}

impl From<rusqlite::Error> for MigrateError {
    fn from(e: rusqlite::Error) -> Self {
        MigrateError::Sqlite(e)
    }
}

/// Each step takes the schema from version `i` to `i + 1`.
const STEPS: &[&str] = &[
    // 0 → 1
    "CREATE TABLE receipts (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        digest TEXT NOT NULL UNIQUE,
        prev_digest TEXT,
        text TEXT NOT NULL,
        artifact TEXT NOT NULL,
        claim_level TEXT NOT NULL,
        supported INTEGER NOT NULL,
        incomplete INTEGER NOT NULL,
        started TEXT,
        finished TEXT,
        recorded_at INTEGER NOT NULL
     );
     CREATE TABLE cells (
        receipt_seq INTEGER NOT NULL REFERENCES receipts(seq),
        idx INTEGER NOT NULL,
        params TEXT NOT NULL,
        params_key TEXT NOT NULL,
        outcome TEXT NOT NULL,
        signature TEXT NOT NULL,
        control INTEGER NOT NULL,
        boundary INTEGER NOT NULL,
        PRIMARY KEY (receipt_seq, idx)
     );
     CREATE TABLE failures (
        receipt_seq INTEGER NOT NULL REFERENCES receipts(seq),
        idx INTEGER NOT NULL,
        artifact TEXT NOT NULL,
        outcome TEXT NOT NULL,
        params TEXT NOT NULL,
        params_key TEXT NOT NULL,
        signature TEXT NOT NULL,
        control INTEGER NOT NULL,
        recorded_at INTEGER NOT NULL,
        PRIMARY KEY (receipt_seq, idx)
     );
     CREATE INDEX failures_by_signature ON failures (artifact, signature);
     CREATE TABLE controls (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        artifact TEXT NOT NULL,
        params TEXT NOT NULL,
        params_key TEXT NOT NULL,
        limits TEXT NOT NULL,
        outcome TEXT NOT NULL,
        signature TEXT NOT NULL,
        first_receipt TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        UNIQUE (artifact, params_key)
     );",
    // 1 → 2: incidents (failures observed outside qualify) and one hash chain over receipts and
    // incidents in the order they were recorded.
    "CREATE TABLE chain (
        pos INTEGER PRIMARY KEY AUTOINCREMENT,
        kind TEXT NOT NULL CHECK (kind IN ('receipt', 'incident')),
        digest TEXT NOT NULL UNIQUE,
        prev_digest TEXT
     );
     INSERT INTO chain (kind, digest, prev_digest)
        SELECT 'receipt', digest, prev_digest FROM receipts ORDER BY seq;
     CREATE TABLE incidents (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        digest TEXT NOT NULL UNIQUE,
        text TEXT NOT NULL,
        artifact TEXT NOT NULL,
        params TEXT NOT NULL,
        params_key TEXT NOT NULL,
        outcome TEXT NOT NULL,
        signature TEXT NOT NULL,
        detail TEXT,
        escaped_receipt TEXT,
        escaped_level TEXT,
        recorded_at INTEGER NOT NULL
     );
     CREATE INDEX incidents_by_artifact ON incidents (artifact);",
    // 2 → 3: the development record's summary per receipt (receipts with a `--trace`): what
    // development ran, and how many failing cells lie outside or inside it. Earlier receipts
    // have no development coverage to index.
    "CREATE TABLE development (
        receipt_seq INTEGER PRIMARY KEY REFERENCES receipts(seq),
        artifact TEXT NOT NULL,
        formats TEXT NOT NULL,
        commands INTEGER NOT NULL,
        artifact_runs INTEGER NOT NULL,
        failing_cells INTEGER NOT NULL,
        outside INTEGER NOT NULL,
        inside INTEGER NOT NULL,
        unknown INTEGER NOT NULL,
        summary TEXT NOT NULL
     );
     CREATE INDEX development_by_artifact ON development (artifact);",
    // 3 → 4: the anchor file (written by `Ledger::open` for the chain as it is). No table
    // changes; a no-op statement keeps every step a statement.
    "SELECT 1;",
];

/// The migration steps, for tests that build an older database.
#[cfg(test)]
pub(crate) const STEPS_FOR_TESTS: &[&str] = STEPS;

/// Bring `conn` to [`VERSION`].
pub fn migrate(conn: &mut Connection) -> Result<(), MigrateError> {
    conn.execute_batch("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")?;
    loop {
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let current: Option<i64> = tx
            .query_row("SELECT version FROM schema_version", [], |r| r.get(0))
            .optional()?;
        let current = match current {
            Some(v) => v,
            None => {
                tx.execute("INSERT INTO schema_version (version) VALUES (0)", [])?;
                0
            }
        };
        if current > VERSION {
            return Err(MigrateError::TooNew(current));
        }
        if current == VERSION {
            tx.commit()?;
            return Ok(());
        }
        tx.execute_batch(STEPS[current as usize])?;
        tx.execute("UPDATE schema_version SET version = ?1", [current + 1])?;
        tx.commit()?;
    }
}

/// What differs between `conn`'s schema and the one [`migrate`] creates, in words; `None` when
/// they are the same (every table, index, trigger and view, by name and definition).
pub fn check(conn: &Connection) -> rusqlite::Result<Option<String>> {
    let mut reference = Connection::open_in_memory()?;
    if let Err(e) = migrate(&mut reference) {
        return Ok(Some(format!("the reference schema cannot be built: {e:?}")));
    }
    let objects = |c: &Connection| -> rusqlite::Result<Vec<(String, String, Option<String>)>> {
        let mut stmt = c.prepare(
            "SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' \
             ORDER BY type, name",
        )?;
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
            .collect()
    };
    let want = objects(&reference)?;
    let have = objects(conn)?;
    for (kind, name, sql) in &want {
        match have.iter().find(|(k, n, _)| k == kind && n == name) {
            None => {
                return Ok(Some(format!(
                    "the {kind} `{name}` is missing: it was dropped"
                )));
            }
            Some((_, _, s)) if s != sql => {
                return Ok(Some(format!(
                    "the {kind} `{name}` is not defined as qualify defines it: it was altered"
                )));
            }
            Some(_) => {}
        }
    }
    if let Some((kind, name, _)) = have
        .iter()
        .find(|(k, n, _)| !want.iter().any(|(wk, wn, _)| wk == k && wn == n))
    {
        return Ok(Some(format!(
            "the {kind} `{name}` is not part of the ledger's schema: it was added behind qualify's back"
        )));
    }
    let version: i64 = conn.query_row("SELECT version FROM schema_version", [], |r| r.get(0))?;
    let rows: i64 = conn.query_row("SELECT COUNT(*) FROM schema_version", [], |r| r.get(0))?;
    if version != VERSION || rows != 1 {
        return Ok(Some(format!(
            "`schema_version` holds {rows} row(s), version {version}; qualify keeps exactly one, {VERSION}"
        )));
    }
    Ok(None)
}
