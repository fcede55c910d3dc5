//! Accounting over the ledger: per artifact and claim level, how many runs were recorded and
//! accepted, failures by outcome class, escapes (incidents an accepted receipt had claimed) and
//! the escape rate; failure signatures seen in two or more cells (a control
//! failing again counts here); and for each failure signature, the time from its first sighting to
//! the first later pass of the same parameters (same artifact, outcome `ok`); and per artifact,
//! over its receipts with a development trace, how many failing cells lay where development
//! never went, where it did, or could not be placed (the seed's question: did the tests examine
//! the conditions that failed?).

use std::collections::BTreeMap;

use rusqlite::Connection;
use serde::Serialize;

/// The whole accounting.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Stats {
    pub receipts: i64,
    pub groups: Vec<GroupStats>,
    /// Failure signatures seen at least twice, most frequent first.
    pub repeating: Vec<Repeat>,
    /// Every failure signature with its first sighting and first pass.
    pub time_to_pass: Vec<TimeToPass>,
    /// Failures observed outside qualify, oldest first.
    pub incidents: Vec<crate::Incident>,
    /// Per artifact, failures against what development ran (receipts with a trace only).
    pub development: Vec<DevelopmentStats>,
}

/// One artifact's failing cells against what development ran, over its receipts that had a
/// development trace.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DevelopmentStats {
    pub artifact: String,
    /// Receipts with a development trace, and of those the ones with a failing cell.
    pub receipts: i64,
    pub receipts_with_failures: i64,
    pub failing_cells: i64,
    /// Failing cells on a value development never ran.
    pub outside: i64,
    /// Failing cells whose every value development ran.
    pub inside: i64,
    /// Failing cells that could not be placed.
    pub unknown: i64,
    /// The latest receipt's coverage sentence.
    pub latest: String,
}

/// One artifact at one claim level.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GroupStats {
    pub artifact: String,
    pub claim_level: String,
    pub runs: i64,
    pub accepted: i64,
    /// Incidents that an accepted receipt of this artifact at this level had claimed.
    pub escapes: i64,
    /// `escapes / accepted` (`None` with no accepted receipt).
    pub escape_rate: Option<f64>,
    /// Failing cells per outcome (`deadlock` → 4).
    pub failures: BTreeMap<String, i64>,
}

/// A failure signature that occurred more than once.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Repeat {
    pub artifact: String,
    pub signature: String,
    pub count: i64,
    /// How many of those occurrences were control cells (a known failure re-run).
    pub as_control: i64,
    /// How many distinct receipts saw it.
    pub receipts: i64,
}

/// From a failure's first sighting to the first pass of the same parameters.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TimeToPass {
    pub artifact: String,
    pub signature: String,
    /// Digest of the first receipt that saw it fail, and when it was recorded (Unix seconds).
    pub first_seen_receipt: String,
    pub first_seen_at: i64,
    /// The first later receipt in which the same parameters passed, if any.
    pub first_pass_receipt: Option<String>,
    pub seconds_to_pass: Option<i64>,
}

pub(crate) fn compute(conn: &Connection) -> rusqlite::Result<Stats> {
    let receipts: i64 = conn.query_row("SELECT COUNT(*) FROM receipts", [], |r| r.get(0))?;

    let mut groups: BTreeMap<(String, String), GroupStats> = BTreeMap::new();
    let mut stmt = conn.prepare(
        "SELECT artifact, claim_level, COUNT(*), SUM(supported) FROM receipts \
         GROUP BY artifact, claim_level",
    )?;
    for row in stmt.query_map([], |r| {
        Ok((
            r.get::<_, String>(0)?,
            r.get::<_, String>(1)?,
            r.get::<_, i64>(2)?,
            r.get::<_, i64>(3)?,
        ))
    })? {
        let (artifact, claim_level, runs, accepted) = row?;
        groups.insert(
            (artifact.clone(), claim_level.clone()),
            GroupStats {
                artifact,
                claim_level,
                runs,
                accepted,
                escapes: 0,
                escape_rate: None,
                failures: BTreeMap::new(),
            },
        );
    }
    let mut stmt = conn.prepare(
        "SELECT r.artifact, r.claim_level, f.outcome, COUNT(*) FROM failures f \
         JOIN receipts r ON r.seq = f.receipt_seq GROUP BY r.artifact, r.claim_level, f.outcome",
    )?;
    for row in stmt.query_map([], |r| {
        Ok((
            r.get::<_, String>(0)?,
            r.get::<_, String>(1)?,
            r.get::<_, String>(2)?,
            r.get::<_, i64>(3)?,
        ))
    })? {
        let (artifact, level, outcome, n) = row?;
        if let Some(g) = groups.get_mut(&(artifact, level)) {
            g.failures.insert(outcome, n);
        }
    }

    let mut stmt = conn.prepare(
        "SELECT artifact, signature, COUNT(*), SUM(control), COUNT(DISTINCT receipt_seq) \
         FROM failures GROUP BY artifact, signature HAVING COUNT(*) >= 2 \
         ORDER BY COUNT(*) DESC, artifact, signature",
    )?;
    let repeating = stmt
        .query_map([], |r| {
            Ok(Repeat {
                artifact: r.get(0)?,
                signature: r.get(1)?,
                count: r.get(2)?,
                as_control: r.get(3)?,
                receipts: r.get(4)?,
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;

    // First sighting of each signature, then the first later receipt where the same artifact
    // passed the same parameters.
    let mut stmt = conn.prepare(
        "SELECT f.artifact, f.signature, f.params_key, r.digest, r.recorded_at, f.receipt_seq \
         FROM failures f JOIN receipts r ON r.seq = f.receipt_seq \
         WHERE f.receipt_seq = (SELECT MIN(g.receipt_seq) FROM failures g \
                                WHERE g.artifact = f.artifact AND g.signature = f.signature) \
         GROUP BY f.artifact, f.signature ORDER BY f.receipt_seq, f.signature",
    )?;
    let firsts = stmt
        .query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, String>(3)?,
                r.get::<_, i64>(4)?,
                r.get::<_, i64>(5)?,
            ))
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let mut pass = conn.prepare(
        "SELECT r.digest, r.recorded_at FROM cells c JOIN receipts r ON r.seq = c.receipt_seq \
         WHERE r.artifact = ?1 AND c.params_key = ?2 AND c.outcome = 'ok' AND r.seq > ?3 \
         ORDER BY r.seq LIMIT 1",
    )?;
    let mut time_to_pass = Vec::with_capacity(firsts.len());
    for (artifact, signature, key, digest, at, seq) in firsts {
        let passed: Option<(String, i64)> = pass
            .query_map(rusqlite::params![artifact, key, seq], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })?
            .next()
            .transpose()?;
        time_to_pass.push(TimeToPass {
            artifact,
            signature,
            first_seen_receipt: digest,
            first_seen_at: at,
            seconds_to_pass: passed.as_ref().map(|(_, t)| (t - at).max(0)),
            first_pass_receipt: passed.map(|(d, _)| d),
        });
    }

    let mut stmt = conn.prepare(
        "SELECT artifact, escaped_level, COUNT(*) FROM incidents \
         WHERE escaped_receipt IS NOT NULL GROUP BY artifact, escaped_level",
    )?;
    for row in stmt.query_map([], |r| {
        Ok((
            r.get::<_, String>(0)?,
            r.get::<_, String>(1)?,
            r.get::<_, i64>(2)?,
        ))
    })? {
        let (artifact, level, n) = row?;
        if let Some(g) = groups.get_mut(&(artifact, level)) {
            g.escapes = n;
        }
    }
    for g in groups.values_mut() {
        g.escape_rate = (g.accepted > 0).then(|| g.escapes as f64 / g.accepted as f64);
    }
    let mut stmt = conn.prepare(
        "SELECT id, digest, artifact, params, outcome, signature, detail, escaped_receipt, \
         escaped_level, recorded_at FROM incidents ORDER BY id",
    )?;
    let incidents = stmt
        .query_map([], |r| {
            let params: String = r.get(3)?;
            Ok(crate::Incident {
                id: r.get(0)?,
                digest: r.get(1)?,
                artifact: r.get(2)?,
                params: serde_json::from_str(&params).unwrap_or(serde_json::Value::Null),
                outcome: r.get(4)?,
                signature: r.get(5)?,
                detail: r.get(6)?,
                escaped_receipt: r.get(7)?,
                escaped_level: r.get(8)?,
                recorded_at: r.get(9)?,
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;

    let mut stmt = conn.prepare(
        "SELECT d.artifact, COUNT(*), SUM(d.failing_cells > 0), SUM(d.failing_cells), \
         SUM(d.outside), SUM(d.inside), SUM(d.unknown), \
         (SELECT e.summary FROM development e WHERE e.artifact = d.artifact \
          ORDER BY e.receipt_seq DESC LIMIT 1) \
         FROM development d GROUP BY d.artifact ORDER BY d.artifact",
    )?;
    let development = stmt
        .query_map([], |r| {
            Ok(DevelopmentStats {
                artifact: r.get(0)?,
                receipts: r.get(1)?,
                receipts_with_failures: r.get(2)?,
                failing_cells: r.get(3)?,
                outside: r.get(4)?,
                inside: r.get(5)?,
                unknown: r.get(6)?,
                latest: r.get(7)?,
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;

    Ok(Stats {
        receipts,
        groups: groups.into_values().collect(),
        repeating,
        time_to_pass,
        incidents,
        development,
    })
}
