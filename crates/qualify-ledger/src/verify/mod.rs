//! [`Ledger::verify`](crate::Ledger::verify): everything the ledger shows is recomputed from what
//! the chain covers, and the first row that differs is named.
//!
//! The chain covers each entry's text (its digest), its kind, its recording time and the entry
//! before it (each link, [`crate::anchor`]); the anchor file covers the chain's length and last
//! link. Every other column is derived, and recomputed here: a receipt row's indexed fields
//! (artifact, claim level, supported, incomplete, start, finish) from its text; its `cells`,
//! `failures` and `development` rows likewise; an incident's columns from its text (its escape's
//! level from the receipt it names); the `controls` table by replaying, in chain order, how
//! `append` and `record_incident` create controls. A row edited, added or deleted in any of them,
//! or a table, index or trigger that is not the ledger's own ([`schema::check`]), is a break.
//! `derived` says what each text implies and compares it with what is stored.

mod derived;

use std::collections::HashMap;
use std::path::Path;

use rusqlite::types::Value as Sql;
use rusqlite::{Connection, Row};

use crate::anchor::{self, Anchor, Head};
use crate::receipt::{IndexedReceipt, params_key, signature};
use crate::{BrokenLink, Verification, incident, schema, sha256_hex};
use derived::{
    RECEIPT_COLUMNS, ReceiptRows, Replay, column_differs, controls_differ, opt_text, receipt_row,
    show, text,
};

/// A break found while walking: the row and why.
struct Break {
    row: String,
    seq: i64,
    digest: String,
    reason: String,
}

impl Break {
    fn new(row: impl Into<String>, seq: i64, digest: &str, reason: impl Into<String>) -> Break {
        Break {
            row: row.into(),
            seq,
            digest: digest.to_string(),
            reason: reason.into(),
        }
    }
}

/// What the walk over the chain found.
struct Walked {
    head: Head,
    /// `links[i]`: the link of entry `i + 1`.
    links: Vec<String>,
    receipts: i64,
    incidents: i64,
    controls: i64,
    /// The first break in chain order, then the first of the checks made after the walk.
    broken: Option<Break>,
    later: Option<Break>,
}

pub(crate) fn run(conn: &Connection, db: &Path) -> rusqlite::Result<Verification> {
    let walked = {
        let tx = conn.unchecked_transaction()?;
        let walked = walk(&tx)?;
        tx.finish()?;
        walked
    };
    let verification = |b: Option<Break>| Verification {
        receipts: walked.receipts,
        incidents: walked.incidents,
        controls: walked.controls,
        broken: b.map(|b| BrokenLink {
            row: b.row,
            seq: b.seq,
            digest: b.digest,
            reason: b.reason,
        }),
    };
    if walked.broken.is_some() {
        return Ok(verification(walked.broken));
    }
    if let Some(reason) = anchor_problem(conn, db, &walked)? {
        return Ok(verification(Some(Break::new(
            "the end of the chain",
            0,
            "",
            reason,
        ))));
    }
    Ok(verification(walked.later))
}

/// Why the anchor does not hold for the walked chain; re-checked under the write lock when it
/// seems not to (a writer may have committed after the walk's snapshot).
fn anchor_problem(
    conn: &Connection,
    db: &Path,
    walked: &Walked,
) -> rusqlite::Result<Option<String>> {
    let path = anchor::path_for(db);
    let anchor = match read_anchor(&path) {
        Ok(a) => a,
        Err(problem) => return Ok(Some(problem.0)),
    };
    if anchor.holds(&walked.head) {
        return Ok(None);
    }
    let tx = rusqlite::Transaction::new_unchecked(conn, rusqlite::TransactionBehavior::Immediate)?;
    let (head, links) = crate::chain_links(&tx)?;
    let again = read_anchor(&path);
    tx.finish()?;
    Ok(match again {
        Ok(a) => a.disagreement(&head, &links),
        Err(problem) => Some(problem.0),
    })
}

/// Why an anchor cannot be used, in words (a reason of the verification).
struct AnchorProblem(String);

fn read_anchor(path: &Path) -> Result<Anchor, AnchorProblem> {
    match Anchor::read(path) {
        Ok(Some(a)) => Ok(a),
        Ok(None) => Err(AnchorProblem(format!(
            "the anchor {} is missing: without it a deleted tail cannot be detected (copy it with the database; qualify writes it only for a ledger it creates or upgrades)",
            path.display()
        ))),
        Err(e) => Err(AnchorProblem(e.to_string())),
    }
}

fn walk(conn: &Connection) -> rusqlite::Result<Walked> {
    let mut w = Walked {
        head: Head::empty(),
        links: Vec::new(),
        receipts: 0,
        incidents: 0,
        controls: 0,
        broken: None,
        later: None,
    };
    if let Some(problem) = schema::check(conn)? {
        w.broken = Some(Break::new("the schema", 0, "", problem));
        return Ok(w);
    }
    let mut chain_stmt =
        conn.prepare("SELECT kind, digest, prev_digest FROM chain ORDER BY pos")?;
    let mut receipt_stmt = conn.prepare(
        "SELECT seq, digest, prev_digest, text, recorded_at, artifact, claim_level, supported, \
         incomplete, started, finished FROM receipts ORDER BY seq",
    )?;
    let mut incident_stmt = conn.prepare(
        "SELECT id, digest, text, recorded_at, artifact, params, params_key, outcome, signature, \
         detail, escaped_receipt, escaped_level FROM incidents ORDER BY id",
    )?;
    let mut derived = ReceiptRows::prepare(conn)?;
    let mut chain = chain_stmt.query([])?;
    let mut receipt_rows = receipt_stmt.query([])?;
    let mut incident_rows = incident_stmt.query([])?;
    let mut previous: Option<String> = None;
    // Receipts seen so far: digest → (artifact, claim level).
    let mut seen: HashMap<String, (String, String)> = HashMap::new();
    let mut replay = Replay::default();
    let mut disagreement: Option<Break> = None;
    while let Some(entry) = chain.next()? {
        let kind: String = entry.get(0)?;
        let chain_digest: String = entry.get(1)?;
        let chain_prev: Option<String> = entry.get(2)?;
        let receipt = kind == "receipt";
        let rows = if receipt {
            w.receipts += 1;
            &mut receipt_rows
        } else {
            w.incidents += 1;
            &mut incident_rows
        };
        let Some(row) = rows.next()? else {
            w.broken = Some(Break::new(
                format!("{kind} {chain_digest}"),
                0,
                &chain_digest,
                format!("the chain lists a {kind} whose row is missing: it was deleted"),
            ));
            return Ok(w);
        };
        let checked = if receipt {
            receipt_entry(row, &previous, &mut derived, &mut replay)?
        } else {
            incident_entry(
                row,
                &chain_digest,
                &chain_prev,
                &previous,
                &seen,
                &mut replay,
            )?
        };
        let entry = match checked {
            Ok(entry) => entry,
            Err(b) => {
                w.broken = Some(b);
                return Ok(w);
            }
        };
        if let Some((artifact, level)) = entry.receipt {
            // Reported only when nothing else breaks: a rewritten row (text and digest)
            // shows first as a broken link at the next entry.
            if (chain_digest != entry.digest || chain_prev != entry.prev) && disagreement.is_none()
            {
                disagreement = Some(Break::new(
                    format!("receipt seq {}", entry.seq),
                    entry.seq,
                    &entry.digest,
                    "its row and its chain entry disagree: one of them was modified",
                ));
            }
            seen.insert(entry.digest.clone(), (artifact, level));
        }
        w.head = w.head.next(&kind, &chain_digest, entry.recorded_at);
        w.links.push(w.head.link.clone());
        previous = Some(entry.digest);
    }
    if receipt_rows.next()?.is_some() || incident_rows.next()?.is_some() {
        w.broken = Some(Break::new(
            "rows outside the chain",
            0,
            "",
            "receipt or incident rows exist outside the chain: they were added behind the ledger's back",
        ));
        return Ok(w);
    }
    // Rows of the derived tables that belong to no receipt.
    for (table, expected) in derived.totals {
        let stored: i64 =
            conn.query_row(&format!("SELECT COUNT(*) FROM {table}"), [], |r| r.get(0))?;
        if stored != expected && w.later.is_none() {
            w.later = Some(Break::new(
                format!("table `{table}`"),
                0,
                "",
                format!(
                    "it has {stored} row(s) where the stored receipts have {expected}: rows that belong to no receipt were added"
                ),
            ));
        }
    }
    if w.later.is_none() {
        w.later = controls_differ(conn, &replay.rows)?;
    }
    w.controls = replay.rows.len() as i64;
    if w.later.is_none() {
        w.later = disagreement;
    }
    Ok(w)
}

/// One chain entry whose row holds: what the walk carries on.
struct Entry {
    seq: i64,
    digest: String,
    prev: Option<String>,
    recorded_at: i64,
    /// A receipt's artifact and claim level.
    receipt: Option<(String, String)>,
}

/// `recorded_at` as a time, or the break naming it.
fn time(value: Sql, name: &str, seq: i64, digest: &str) -> Result<i64, Break> {
    match value {
        Sql::Integer(t) => Ok(t),
        other => Err(Break::new(
            name,
            seq,
            digest,
            format!(
                "its `recorded_at` column says {}, not a time: the row was edited",
                show(&other)
            ),
        )),
    }
}

/// A receipt row: its text's digest, its link, its columns and derived rows; its failures
/// join the controls replay.
fn receipt_entry(
    row: &Row<'_>,
    previous: &Option<String>,
    derived: &mut ReceiptRows<'_>,
    replay: &mut Replay,
) -> rusqlite::Result<Result<Entry, Break>> {
    let seq: i64 = row.get(0)?;
    let name = format!("receipt seq {seq}");
    let digest: String = row.get(1)?;
    let prev: Option<String> = row.get(2)?;
    let body: String = row.get(3)?;
    let recorded_at = row.get::<_, Sql>(4)?;
    let stored = (5..11)
        .map(|i| row.get::<_, Sql>(i))
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let broken = |reason: String| Ok(Err(Break::new(&name, seq, &digest, reason)));
    let actual = sha256_hex(body.as_bytes());
    if actual != digest {
        return broken(format!(
            "the stored receipt text hashes to {actual}, not to its recorded digest: the row was modified"
        ));
    }
    if prev != *previous {
        return broken(format!(
            "it records the previous receipt or incident as {}, but the entry before it is {}",
            prev.as_deref().unwrap_or("(none)"),
            previous.as_deref().unwrap_or("(none)")
        ));
    }
    let recorded_at = match time(recorded_at, &name, seq, &digest) {
        Ok(t) => t,
        Err(b) => return Ok(Err(b)),
    };
    let ix = match IndexedReceipt::parse(&body) {
        Ok(ix) => ix,
        Err(e) => return broken(format!("its stored text is not a receipt: {e}")),
    };
    let expected = receipt_row(&ix);
    if let Some(why) = column_differs(&RECEIPT_COLUMNS, &stored, &expected, "its stored receipt") {
        return broken(why);
    }
    if let Some(why) = derived.differ(seq, &ix, recorded_at)? {
        return broken(why);
    }
    replay.receipt(&ix, &digest, recorded_at);
    Ok(Ok(Entry {
        seq,
        digest,
        prev,
        recorded_at,
        receipt: Some((ix.artifact, ix.claim_level)),
    }))
}

/// An incident row: its text's digest, its link, its columns (its escape's level from the
/// earlier receipt it names); it joins the controls replay.
fn incident_entry(
    row: &Row<'_>,
    chain_digest: &str,
    chain_prev: &Option<String>,
    previous: &Option<String>,
    seen: &HashMap<String, (String, String)>,
    replay: &mut Replay,
) -> rusqlite::Result<Result<Entry, Break>> {
    let id: i64 = row.get(0)?;
    let name = format!("incident {id}");
    let digest: String = row.get(1)?;
    let body: String = row.get(2)?;
    let recorded_at = row.get::<_, Sql>(3)?;
    let stored = (4..12)
        .map(|i| row.get::<_, Sql>(i))
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let broken = |reason: String| Ok(Err(Break::new(&name, 0, &digest, reason)));
    let actual = sha256_hex(body.as_bytes());
    if actual != digest || digest != chain_digest {
        return broken(format!(
            "the stored incident text hashes to {actual}, not to its recorded digest {chain_digest}: the row was modified"
        ));
    }
    if chain_prev != previous {
        return broken(format!(
            "incident {digest} records the previous receipt or incident as {}, but the entry before it is {}",
            chain_prev.as_deref().unwrap_or("(none)"),
            previous.as_deref().unwrap_or("(none)")
        ));
    }
    let recorded_at = match time(recorded_at, &name, 0, &digest) {
        Ok(t) => t,
        Err(b) => return Ok(Err(b)),
    };
    let parsed = match incident::Stored::parse(&body) {
        Ok(p) => p,
        Err(why) => return broken(format!("its stored text is not an incident: {why}")),
    };
    let escaped_level = match &parsed.escaped_receipt {
        None => Sql::Null,
        Some(r) => match seen.get(r) {
            Some((artifact, level)) if *artifact == parsed.artifact => text(level),
            _ => {
                return broken(format!(
                    "it names receipt {r} as the one it escaped from, which is no earlier receipt of `{}` in the chain",
                    parsed.artifact
                ));
            }
        },
    };
    let key = params_key(&parsed.params);
    let expected = [
        text(&parsed.artifact),
        text(&parsed.params.to_string()),
        text(&key),
        text(&parsed.outcome),
        text(&signature(&parsed.outcome, &key)),
        opt_text(parsed.detail.as_deref()),
        opt_text(parsed.escaped_receipt.as_deref()),
        escaped_level,
    ];
    let columns = [
        "artifact",
        "params",
        "params_key",
        "outcome",
        "signature",
        "detail",
        "escaped_receipt",
        "escaped_level",
    ];
    if let Some(why) = column_differs(&columns, &stored, &expected, "its stored incident") {
        return broken(why);
    }
    replay.incident(&expected[..5], &digest, recorded_at);
    Ok(Ok(Entry {
        seq: 0,
        digest,
        prev: chain_prev.clone(),
        recorded_at,
        receipt: None,
    }))
}
