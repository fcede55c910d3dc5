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

use std::collections::{HashMap, HashSet};
use std::path::Path;

use rusqlite::types::Value as Sql;
use rusqlite::{Connection, Row};
use serde_json::Value;

use crate::anchor::{self, Anchor, Head};
use crate::receipt::{IndexedReceipt, params_key, signature};
use crate::{BrokenLink, Verification, schema, sha256_hex};

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
    let read = |p: &Path| match Anchor::read(p) {
        Ok(Some(a)) => Ok(a),
        Ok(None) => Err(format!(
            "the anchor {} is missing: without it a deleted tail cannot be detected (copy it with the database; qualify writes it only for a ledger it creates or upgrades)",
            p.display()
        )),
        Err(e) => Err(e.to_string()),
    };
    let anchor = match read(&path) {
        Ok(a) => a,
        Err(reason) => return Ok(Some(reason)),
    };
    if anchor.holds(&walked.head) {
        return Ok(None);
    }
    let tx = rusqlite::Transaction::new_unchecked(conn, rusqlite::TransactionBehavior::Immediate)?;
    let (head, links) = crate::chain_links(&tx)?;
    let again = read(&path);
    tx.finish()?;
    Ok(match again {
        Ok(a) => a.disagreement(&head, &links),
        Err(reason) => Some(reason),
    })
}

fn text(v: &str) -> Sql {
    Sql::Text(v.to_string())
}

fn opt_text(v: Option<&str>) -> Sql {
    v.map_or(Sql::Null, text)
}

fn flag(b: bool) -> Sql {
    Sql::Integer(i64::from(b))
}

fn show(v: &Sql) -> String {
    match v {
        Sql::Null => "NULL".into(),
        Sql::Integer(n) => n.to_string(),
        Sql::Real(x) => x.to_string(),
        Sql::Text(s) if s.chars().count() > 60 => {
            format!("`{}…`", s.chars().take(60).collect::<String>())
        }
        Sql::Text(s) => format!("`{s}`"),
        Sql::Blob(_) => "a blob".into(),
    }
}

fn values(row: &Row<'_>, n: usize) -> rusqlite::Result<Vec<Sql>> {
    (0..n).map(|i| row.get::<_, Sql>(i)).collect()
}

/// The first column where `stored` and `expected` differ, in words.
fn column_differs(
    columns: &[&str],
    stored: &[Sql],
    expected: &[Sql],
    source: &str,
) -> Option<String> {
    columns
        .iter()
        .zip(stored.iter().zip(expected))
        .find(|(_, (s, e))| s != e)
        .map(|(c, (s, e))| {
            format!(
                "its `{c}` column says {}, {source} says {}: the row was edited",
                show(s),
                show(e)
            )
        })
}

/// Compare a table's rows for one owner with the rows its source implies. `key` names a row
/// (`cell 3`); the first column of each row is its index.
fn rows_differ(
    query: &mut rusqlite::Statement<'_>,
    owner: i64,
    columns: &[&str],
    expected: &[Vec<Sql>],
    key: &str,
    source: &str,
) -> rusqlite::Result<Option<String>> {
    let stored: Vec<Vec<Sql>> = query
        .query_map([owner], |r| values(r, columns.len()))?
        .collect::<rusqlite::Result<_>>()?;
    for (s, e) in stored.iter().zip(expected) {
        if let Some(why) = column_differs(columns, s, e, source) {
            return Ok(Some(format!("{key} {}: {why}", show_key(&s[0]))));
        }
    }
    Ok(match stored.len().cmp(&expected.len()) {
        std::cmp::Ordering::Equal => None,
        std::cmp::Ordering::Less => Some(format!(
            "it has {} {key} row(s) where {source} has {}: rows were deleted",
            stored.len(),
            expected.len()
        )),
        std::cmp::Ordering::Greater => Some(format!(
            "it has {} {key} row(s) where {source} has {}: rows were added",
            stored.len(),
            expected.len()
        )),
    })
}

fn show_key(v: &Sql) -> String {
    match v {
        Sql::Integer(n) => n.to_string(),
        other => show(other),
    }
}

/// A control as `append` / `record_incident` create it: artifact, params, params_key, limits,
/// outcome, signature, first_receipt, created_at.
type ControlRow = Vec<Sql>;

const CONTROL_COLUMNS: [&str; 8] = [
    "artifact",
    "params",
    "params_key",
    "limits",
    "outcome",
    "signature",
    "first_receipt",
    "created_at",
];

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
    let mut cells_stmt = conn.prepare(
        "SELECT idx, params, params_key, outcome, signature, control, boundary FROM cells \
         WHERE receipt_seq = ?1 ORDER BY idx",
    )?;
    let mut failures_stmt = conn.prepare(
        "SELECT idx, artifact, outcome, params, params_key, signature, control, recorded_at \
         FROM failures WHERE receipt_seq = ?1 ORDER BY idx",
    )?;
    let mut development_stmt = conn.prepare(
        "SELECT receipt_seq, artifact, formats, commands, artifact_runs, failing_cells, outside, \
         inside, unknown, summary FROM development WHERE receipt_seq = ?1",
    )?;
    let mut chain = chain_stmt.query([])?;
    let mut receipt_rows = receipt_stmt.query([])?;
    let mut incident_rows = incident_stmt.query([])?;
    let mut previous: Option<String> = None;
    // Receipts seen so far: digest → (artifact, claim level).
    let mut seen: HashMap<String, (String, String)> = HashMap::new();
    let mut controls: Vec<ControlRow> = Vec::new();
    let mut control_keys: HashSet<(String, String)> = HashSet::new();
    let (mut cells_total, mut failures_total, mut development_total) = (0i64, 0i64, 0i64);
    let mut disagreement: Option<Break> = None;
    macro_rules! broken {
        ($b:expr) => {{
            w.broken = Some($b);
            return Ok(w);
        }};
    }
    while let Some(entry) = chain.next()? {
        let kind: String = entry.get(0)?;
        let chain_digest: String = entry.get(1)?;
        let chain_prev: Option<String> = entry.get(2)?;
        if kind == "receipt" {
            w.receipts += 1;
            let Some(row) = receipt_rows.next()? else {
                broken!(Break::new(
                    format!("receipt {chain_digest}"),
                    0,
                    &chain_digest,
                    "the chain lists a receipt whose row is missing: it was deleted"
                ));
            };
            let seq: i64 = row.get(0)?;
            let name = format!("receipt seq {seq}");
            let digest: String = row.get(1)?;
            let prev: Option<String> = row.get(2)?;
            let body: String = row.get(3)?;
            let recorded_at = row.get::<_, Sql>(4)?;
            let stored = (5..11)
                .map(|i| row.get::<_, Sql>(i))
                .collect::<rusqlite::Result<Vec<_>>>()?;
            let actual = sha256_hex(body.as_bytes());
            if actual != digest {
                broken!(Break::new(
                    &name,
                    seq,
                    &digest,
                    format!(
                        "the stored receipt text hashes to {actual}, not to its recorded digest: the row was modified"
                    )
                ));
            }
            if prev != previous {
                broken!(Break::new(
                    &name,
                    seq,
                    &digest,
                    format!(
                        "it records the previous receipt or incident as {}, but the entry before it is {}",
                        prev.as_deref().unwrap_or("(none)"),
                        previous.as_deref().unwrap_or("(none)")
                    )
                ));
            }
            let Sql::Integer(recorded_at) = recorded_at else {
                broken!(Break::new(
                    &name,
                    seq,
                    &digest,
                    format!(
                        "its `recorded_at` column says {}, not a time: the row was edited",
                        show(&recorded_at)
                    )
                ));
            };
            let ix = match IndexedReceipt::parse(&body) {
                Ok(ix) => ix,
                Err(e) => broken!(Break::new(
                    &name,
                    seq,
                    &digest,
                    format!("its stored text is not a receipt: {e}")
                )),
            };
            let expected = [
                text(&ix.artifact),
                text(&ix.claim_level),
                flag(ix.supported),
                flag(ix.incomplete),
                opt_text(ix.started.as_deref()),
                opt_text(ix.finished.as_deref()),
            ];
            let columns = [
                "artifact",
                "claim_level",
                "supported",
                "incomplete",
                "started",
                "finished",
            ];
            if let Some(why) = column_differs(&columns, &stored, &expected, "its stored receipt") {
                broken!(Break::new(&name, seq, &digest, why));
            }
            let cells: Vec<Vec<Sql>> = ix
                .cells
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    vec![
                        Sql::Integer(i as i64),
                        text(&c.params.to_string()),
                        text(&c.params_key),
                        text(&c.outcome),
                        text(&c.signature),
                        flag(c.control),
                        flag(c.boundary),
                    ]
                })
                .collect();
            let cell_columns = [
                "idx",
                "params",
                "params_key",
                "outcome",
                "signature",
                "control",
                "boundary",
            ];
            if let Some(why) = rows_differ(
                &mut cells_stmt,
                seq,
                &cell_columns,
                &cells,
                "cell",
                "its stored receipt",
            )? {
                broken!(Break::new(&name, seq, &digest, why));
            }
            let failing: Vec<(usize, &crate::IndexedCell)> = ix
                .cells
                .iter()
                .enumerate()
                .filter(|(_, c)| c.failed())
                .collect();
            let failures: Vec<Vec<Sql>> = failing
                .iter()
                .map(|(i, c)| {
                    vec![
                        Sql::Integer(*i as i64),
                        text(&ix.artifact),
                        text(&c.outcome),
                        text(&c.params.to_string()),
                        text(&c.params_key),
                        text(&c.signature),
                        flag(c.control),
                        Sql::Integer(recorded_at),
                    ]
                })
                .collect();
            let failure_columns = [
                "idx",
                "artifact",
                "outcome",
                "params",
                "params_key",
                "signature",
                "control",
                "recorded_at",
            ];
            if let Some(why) = rows_differ(
                &mut failures_stmt,
                seq,
                &failure_columns,
                &failures,
                "failure",
                "its stored receipt",
            )? {
                broken!(Break::new(&name, seq, &digest, why));
            }
            let development: Vec<Vec<Sql>> = ix
                .development
                .iter()
                .map(|d| {
                    vec![
                        Sql::Integer(seq),
                        text(&ix.artifact),
                        text(&d.formats),
                        Sql::Integer(d.commands),
                        Sql::Integer(d.artifact_runs),
                        Sql::Integer(d.failing_cells),
                        Sql::Integer(d.outside),
                        Sql::Integer(d.inside),
                        Sql::Integer(d.unknown),
                        text(&d.summary),
                    ]
                })
                .collect();
            let development_columns = [
                "receipt_seq",
                "artifact",
                "formats",
                "commands",
                "artifact_runs",
                "failing_cells",
                "outside",
                "inside",
                "unknown",
                "summary",
            ];
            if let Some(why) = rows_differ(
                &mut development_stmt,
                seq,
                &development_columns,
                &development,
                "development row",
                "its stored receipt",
            )? {
                broken!(Break::new(&name, seq, &digest, why));
            }
            cells_total += cells.len() as i64;
            failures_total += failures.len() as i64;
            development_total += development.len() as i64;
            for (_, c) in &failing {
                if control_keys.insert((ix.artifact.clone(), c.params_key.clone())) {
                    controls.push(vec![
                        text(&ix.artifact),
                        text(&c.params.to_string()),
                        text(&c.params_key),
                        text(&c.limits.to_string()),
                        text(&c.outcome),
                        text(&c.signature),
                        text(&digest),
                        Sql::Integer(recorded_at),
                    ]);
                }
            }
            // Reported only when nothing else breaks: a rewritten row (text and digest) shows
            // first as a broken link at the next entry.
            if (chain_digest != digest || chain_prev != prev) && disagreement.is_none() {
                disagreement = Some(Break::new(
                    &name,
                    seq,
                    &digest,
                    "its row and its chain entry disagree: one of them was modified",
                ));
            }
            w.head = w.head.next("receipt", &chain_digest, recorded_at);
            w.links.push(w.head.link.clone());
            seen.insert(digest.clone(), (ix.artifact, ix.claim_level));
            previous = Some(digest);
        } else {
            w.incidents += 1;
            let Some(row) = incident_rows.next()? else {
                broken!(Break::new(
                    format!("incident {chain_digest}"),
                    0,
                    &chain_digest,
                    "the chain lists an incident whose row is missing: it was deleted"
                ));
            };
            let id: i64 = row.get(0)?;
            let name = format!("incident {id}");
            let digest: String = row.get(1)?;
            let body: String = row.get(2)?;
            let recorded_at = row.get::<_, Sql>(3)?;
            let stored = (4..12)
                .map(|i| row.get::<_, Sql>(i))
                .collect::<rusqlite::Result<Vec<_>>>()?;
            let actual = sha256_hex(body.as_bytes());
            if actual != digest || digest != chain_digest {
                broken!(Break::new(
                    &name,
                    0,
                    &digest,
                    format!(
                        "the stored incident text hashes to {actual}, not to its recorded digest {chain_digest}: the row was modified"
                    )
                ));
            }
            if chain_prev != previous {
                broken!(Break::new(
                    &name,
                    0,
                    &digest,
                    format!(
                        "incident {digest} records the previous receipt or incident as {}, but the entry before it is {}",
                        chain_prev.as_deref().unwrap_or("(none)"),
                        previous.as_deref().unwrap_or("(none)")
                    )
                ));
            }
            let Sql::Integer(recorded_at) = recorded_at else {
                broken!(Break::new(
                    &name,
                    0,
                    &digest,
                    format!(
                        "its `recorded_at` column says {}, not a time: the row was edited",
                        show(&recorded_at)
                    )
                ));
            };
            let parsed = match IncidentText::parse(&body) {
                Ok(p) => p,
                Err(why) => broken!(Break::new(
                    &name,
                    0,
                    &digest,
                    format!("its stored text is not an incident: {why}")
                )),
            };
            let escaped_level = match &parsed.escaped_receipt {
                None => Sql::Null,
                Some(r) => match seen.get(r) {
                    Some((artifact, level)) if *artifact == parsed.artifact => text(level),
                    _ => broken!(Break::new(
                        &name,
                        0,
                        &digest,
                        format!(
                            "it names receipt {r} as the one it escaped from, which is no earlier receipt of `{}` in the chain",
                            parsed.artifact
                        )
                    )),
                },
            };
            let key = params_key(&parsed.params);
            let sig = signature(&parsed.outcome, &key);
            let params_text = parsed.params.to_string();
            let expected = [
                text(&parsed.artifact),
                text(&params_text),
                text(&key),
                text(&parsed.outcome),
                text(&sig),
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
                broken!(Break::new(&name, 0, &digest, why));
            }
            if control_keys.insert((parsed.artifact.clone(), key.clone())) {
                controls.push(vec![
                    text(&parsed.artifact),
                    text(&params_text),
                    text(&key),
                    text("null"),
                    text(&parsed.outcome),
                    text(&sig),
                    text(&digest),
                    Sql::Integer(recorded_at),
                ]);
            }
            w.head = w.head.next("incident", &chain_digest, recorded_at);
            w.links.push(w.head.link.clone());
            previous = Some(digest);
        }
    }
    if receipt_rows.next()?.is_some() || incident_rows.next()?.is_some() {
        broken!(Break::new(
            "rows outside the chain",
            0,
            "",
            "receipt or incident rows exist outside the chain: they were added behind the ledger's back"
        ));
    }
    // Rows of the derived tables that belong to no receipt.
    for (table, expected) in [
        ("cells", cells_total),
        ("failures", failures_total),
        ("development", development_total),
    ] {
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
        w.later = controls_differ(conn, &controls)?;
    }
    w.controls = controls.len() as i64;
    if w.later.is_none() {
        w.later = disagreement;
    }
    Ok(w)
}

/// The controls table against the controls the chain creates, in order.
fn controls_differ(conn: &Connection, expected: &[ControlRow]) -> rusqlite::Result<Option<Break>> {
    let mut stmt = conn.prepare(
        "SELECT id, artifact, params, params_key, limits, outcome, signature, first_receipt, \
         created_at FROM controls ORDER BY id",
    )?;
    let stored: Vec<(i64, Vec<Sql>)> = stmt
        .query_map([], |r| {
            Ok((
                r.get(0)?,
                (1..9)
                    .map(|i| r.get::<_, Sql>(i))
                    .collect::<rusqlite::Result<Vec<_>>>()?,
            ))
        })?
        .collect::<rusqlite::Result<_>>()?;
    for (i, e) in expected.iter().enumerate() {
        let name = |e: &ControlRow| format!("the control {} of {}", show(&e[5]), show(&e[0]));
        let first = |e: &ControlRow| match &e[6] {
            Sql::Text(d) => d.clone(),
            _ => String::new(),
        };
        match stored.get(i) {
            None => {
                return Ok(Some(Break::new(
                    name(e),
                    0,
                    &first(e),
                    format!(
                        "it is missing (its failure was first seen in {}): it was deleted, and the next run would not re-run it",
                        first(e)
                    ),
                )));
            }
            Some((id, s)) if s[0] != e[0] || s[2] != e[2] => {
                return Ok(Some(Break::new(
                    format!("control {id}"),
                    0,
                    &first(e),
                    format!(
                        "the chain's next control is {} (first seen in {}), the table's is {} of {}: controls were deleted, added or reordered",
                        name(e),
                        first(e),
                        show(&s[5]),
                        show(&s[0])
                    ),
                )));
            }
            Some((id, s)) => {
                if let Some(why) =
                    column_differs(&CONTROL_COLUMNS, s, e, "the failure that created it")
                {
                    return Ok(Some(Break::new(format!("control {id}"), 0, &first(e), why)));
                }
            }
        }
    }
    Ok(stored.get(expected.len()).map(|(id, s)| {
        Break::new(
            format!("control {id}"),
            0,
            "",
            format!(
                "control {id} ({}) has no failing cell or incident in the chain: it was added behind the ledger's back",
                show(&s[5])
            ),
        )
    }))
}

/// The fields of an incident's stored text ([`crate::incident`]'s canonical form).
struct IncidentText {
    artifact: String,
    params: Value,
    outcome: String,
    detail: Option<String>,
    escaped_receipt: Option<String>,
}

/// Why a stored incident text is not one `record_incident` writes.
#[derive(Debug, thiserror::Error)]
enum IncidentTextError {
    #[error("not JSON ({0})")]
    NotJson(#[source] serde_json::Error),
    #[error("`type` is not `{}`", crate::incident::TYPE)]
    Type,
    #[error("`{0}` is missing or not a string")]
    Text(&'static str),
    #[error("`params` is missing or not an object")]
    Params,
}

impl IncidentText {
    fn parse(text: &str) -> Result<IncidentText, IncidentTextError> {
        let doc = qualify_model::json::from_str(text).map_err(IncidentTextError::NotJson)?;
        let string = |k: &'static str| {
            doc.get(k)
                .and_then(Value::as_str)
                .map(str::to_string)
                .ok_or(IncidentTextError::Text(k))
        };
        let optional = |k: &'static str| match doc.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(IncidentTextError::Text(k)),
        };
        if string("type")? != crate::incident::TYPE {
            return Err(IncidentTextError::Type);
        }
        Ok(IncidentText {
            artifact: string("artifact")?,
            params: doc
                .get("params")
                .filter(|p| p.is_object())
                .cloned()
                .ok_or(IncidentTextError::Params)?,
            outcome: string("outcome")?,
            detail: optional("detail")?,
            escaped_receipt: optional("escaped_receipt")?,
        })
    }
}
