//! What the stored texts imply for every derived row, and the comparison that names the first
//! row that differs: a receipt's indexed columns, its `cells`, `failures` and `development`
//! rows, an incident's columns, and the `controls` the chain creates ([`Replay`]), compared
//! column by column as SQLite holds them (so a text where a number belongs is a difference,
//! not an error).

use std::collections::HashSet;

use rusqlite::types::Value as Sql;
use rusqlite::{Connection, Row};

use super::Break;
use crate::receipt::IndexedReceipt;

pub(super) fn text(v: &str) -> Sql {
    Sql::Text(v.to_string())
}

pub(super) fn opt_text(v: Option<&str>) -> Sql {
    v.map_or(Sql::Null, text)
}

pub(super) fn flag(b: bool) -> Sql {
    Sql::Integer(i64::from(b))
}

pub(super) fn show(v: &Sql) -> String {
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

pub(super) fn values(row: &Row<'_>, n: usize) -> rusqlite::Result<Vec<Sql>> {
    (0..n).map(|i| row.get::<_, Sql>(i)).collect()
}

/// The first column where `stored` and `expected` differ, in words.
pub(super) fn column_differs(
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
pub(super) fn rows_differ(
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

pub(super) fn show_key(v: &Sql) -> String {
    match v {
        Sql::Integer(n) => n.to_string(),
        other => show(other),
    }
}

/// A control as `append` / `record_incident` create it: artifact, params, params_key, limits,
/// outcome, signature, first_receipt, created_at.
pub(super) type ControlRow = Vec<Sql>;

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

/// The columns of a receipt row derived from its text, and their values.
pub(super) const RECEIPT_COLUMNS: [&str; 6] = [
    "artifact",
    "claim_level",
    "supported",
    "incomplete",
    "started",
    "finished",
];

pub(super) fn receipt_row(ix: &IndexedReceipt) -> Vec<Sql> {
    vec![
        text(&ix.artifact),
        text(&ix.claim_level),
        flag(ix.supported),
        flag(ix.incomplete),
        opt_text(ix.started.as_deref()),
        opt_text(ix.finished.as_deref()),
    ]
}

/// The prepared queries of one receipt's derived rows.
pub(super) struct ReceiptRows<'c> {
    cells: rusqlite::Statement<'c>,
    failures: rusqlite::Statement<'c>,
    development: rusqlite::Statement<'c>,
    /// Rows the stored receipts imply so far, per table (for rows that belong to none).
    pub totals: [(&'static str, i64); 3],
}

impl<'c> ReceiptRows<'c> {
    pub fn prepare(conn: &'c Connection) -> rusqlite::Result<ReceiptRows<'c>> {
        Ok(ReceiptRows {
            cells: conn.prepare(
                "SELECT idx, params, params_key, outcome, signature, control, boundary FROM cells \
                 WHERE receipt_seq = ?1 ORDER BY idx",
            )?,
            failures: conn.prepare(
                "SELECT idx, artifact, outcome, params, params_key, signature, control, \
                 recorded_at FROM failures WHERE receipt_seq = ?1 ORDER BY idx",
            )?,
            development: conn.prepare(
                "SELECT receipt_seq, artifact, formats, commands, artifact_runs, failing_cells, \
                 outside, inside, unknown, summary FROM development WHERE receipt_seq = ?1",
            )?,
            totals: [("cells", 0), ("failures", 0), ("development", 0)],
        })
    }

    /// The first of receipt `seq`'s cell, failure and development rows that is not what its
    /// text `ix` (recorded at `recorded_at`) implies, in words.
    pub fn differ(
        &mut self,
        seq: i64,
        ix: &IndexedReceipt,
        recorded_at: i64,
    ) -> rusqlite::Result<Option<String>> {
        let source = "its stored receipt";
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
        let columns = [
            "idx",
            "params",
            "params_key",
            "outcome",
            "signature",
            "control",
            "boundary",
        ];
        if let Some(why) = rows_differ(&mut self.cells, seq, &columns, &cells, "cell", source)? {
            return Ok(Some(why));
        }
        let failures: Vec<Vec<Sql>> = ix
            .cells
            .iter()
            .enumerate()
            .filter(|(_, c)| c.failed())
            .map(|(i, c)| {
                vec![
                    Sql::Integer(i as i64),
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
        let columns = [
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
            &mut self.failures,
            seq,
            &columns,
            &failures,
            "failure",
            source,
        )? {
            return Ok(Some(why));
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
        let columns = [
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
            &mut self.development,
            seq,
            &columns,
            &development,
            "development row",
            source,
        )? {
            return Ok(Some(why));
        }
        for (total, n) in
            self.totals
                .iter_mut()
                .zip([cells.len(), failures.len(), development.len()])
        {
            total.1 += n as i64;
        }
        Ok(None)
    }
}

/// The controls the chain creates, in the order `append` and `record_incident` create them:
/// the first failure of each (artifact, parameters), by a failing cell or an incident.
#[derive(Default)]
pub(super) struct Replay {
    seen: HashSet<(String, String)>,
    pub rows: Vec<ControlRow>,
}

impl Replay {
    /// A receipt's failing cells.
    pub fn receipt(&mut self, ix: &IndexedReceipt, digest: &str, recorded_at: i64) {
        for c in ix.cells.iter().filter(|c| c.failed()) {
            self.add(vec![
                text(&ix.artifact),
                text(&c.params.to_string()),
                text(&c.params_key),
                text(&c.limits.to_string()),
                text(&c.outcome),
                text(&c.signature),
                text(digest),
                Sql::Integer(recorded_at),
            ]);
        }
    }

    /// An incident (its parameters as stored, its key and signature).
    pub fn incident(&mut self, row: &[Sql], digest: &str, recorded_at: i64) {
        // `row` is the incident's artifact, params, params_key, outcome, signature.
        self.add(vec![
            row[0].clone(),
            row[1].clone(),
            row[2].clone(),
            text("null"),
            row[3].clone(),
            row[4].clone(),
            text(digest),
            Sql::Integer(recorded_at),
        ]);
    }

    fn add(&mut self, row: ControlRow) {
        let key = |v: &Sql| match v {
            Sql::Text(s) => s.clone(),
            other => show(other),
        };
        if self.seen.insert((key(&row[0]), key(&row[2]))) {
            self.rows.push(row);
        }
    }
}

/// The controls table against the controls the chain creates, in order.
pub(super) fn controls_differ(
    conn: &Connection,
    expected: &[ControlRow],
) -> rusqlite::Result<Option<Break>> {
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
