//! The ledger as evidence: every edit of a column something shows, every deleted or added row,
//! a changed schema and a deleted tail are found by `verify`, named by row, and refused by
//! `open_verified` and by writers.

use serde_json::json;

use super::*;

/// A receipt of `transfer` with one ok and one `outcome` cell at `threads`, and a development
/// record.
fn receipt(nonce: u32, supported: bool, outcome: &str, threads: i64) -> String {
    serde_json::to_string(&json!({
        "_type": "https://in-toto.io/Statement/v1",
        "predicate": {
            "claim": { "level": "trial", "supported": supported },
            "incomplete": false,
            "cells": [
                { "params": { "threads": 1 }, "result": { "outcome": "ok", "limits": {} } },
                { "params": { "threads": threads }, "result": { "outcome": outcome, "limits": { "timeout_seconds": 30.0 } } },
            ],
            "claimed_region": [{ "axis": "threads", "bound": { "value": 64.0, "harder": "larger" } }],
            "layers": { "process": { "evidence": {
                "trace": { "sources": [{ "format": "native" }], "commands_total": 3 },
                "coverage": { "failing_cells": 1, "outside": 1, "inside": 0, "unknown": 0, "sentence": "s" }
            } } },
            "run": { "artifact": { "name": "transfer" }, "started": format!("s{nonce}"), "finished": format!("f{nonce}") },
        }
    }))
    .unwrap()
}

/// Receipts 1 (refused, a deadlock at 2) and 2 (accepted, a crash at 4), an incident escaping
/// from 2, then receipt 3 (accepted, all ok).
fn ledger() -> (tempfile::TempDir, Ledger) {
    let dir = tempfile::tempdir().unwrap();
    let mut l = Ledger::open(&dir.path().join("ledger.sqlite")).unwrap();
    l.append(&receipt(1, false, "deadlock", 2)).unwrap();
    l.append(&receipt(2, true, "crash", 4)).unwrap();
    let inc = l
        .record_incident(&NewIncident {
            artifact: "transfer".into(),
            params: json!({"threads": 8}).as_object().unwrap().clone(),
            outcome: "oom_killed".into(),
            detail: Some("at a customer".into()),
            receipt: None,
        })
        .unwrap();
    assert!(inc.incident.escaped_receipt.is_some(), "{inc:?}");
    l.append(&receipt(3, true, "ok", 2)).unwrap();
    let v = l.verify().unwrap();
    assert_eq!((v.receipts, v.incidents, v.controls), (3, 1, 3));
    assert_eq!(v.broken, None);
    (dir, l)
}

fn broken_after(edit: &str) -> BrokenLink {
    let (_dir, l) = ledger();
    // Whoever edits the database is not bound by its foreign keys.
    l.conn.execute_batch("PRAGMA foreign_keys = OFF").unwrap();
    l.conn.execute_batch(edit).unwrap();
    let broken = l.verify().unwrap().broken;
    broken.unwrap_or_else(|| panic!("`{edit}` went unnoticed"))
}

#[test]
fn every_column_that_is_shown_is_recomputed_from_the_stored_text() {
    for (edit, row, needle) in [
        (
            "UPDATE receipts SET supported = 1 WHERE seq = 1",
            "receipt seq 1",
            "`supported` column says 1, its stored receipt says 0",
        ),
        (
            "UPDATE receipts SET supported = 'yes' WHERE seq = 1",
            "receipt seq 1",
            "`supported`",
        ),
        (
            "UPDATE receipts SET claim_level = 'production' WHERE seq = 2",
            "receipt seq 2",
            "`claim_level`",
        ),
        (
            "UPDATE receipts SET artifact = 'other' WHERE seq = 1",
            "receipt seq 1",
            "`artifact`",
        ),
        (
            "UPDATE receipts SET incomplete = 1 WHERE seq = 3",
            "receipt seq 3",
            "`incomplete`",
        ),
        (
            "UPDATE receipts SET started = 'x' WHERE seq = 2",
            "receipt seq 2",
            "`started`",
        ),
        (
            "UPDATE receipts SET finished = NULL WHERE seq = 2",
            "receipt seq 2",
            "`finished`",
        ),
        (
            "UPDATE receipts SET recorded_at = 'yesterday' WHERE seq = 2",
            "receipt seq 2",
            "`recorded_at`",
        ),
        (
            "UPDATE cells SET outcome = 'ok' WHERE receipt_seq = 1 AND idx = 1",
            "receipt seq 1",
            "cell 1: its `outcome` column says `ok`",
        ),
        (
            "UPDATE cells SET control = 1 WHERE receipt_seq = 3 AND idx = 0",
            "receipt seq 3",
            "cell 0: its `control`",
        ),
        (
            "UPDATE cells SET params_key = 'threads=3' WHERE receipt_seq = 2 AND idx = 1",
            "receipt seq 2",
            "`params_key`",
        ),
        (
            "DELETE FROM cells WHERE receipt_seq = 2 AND idx = 1",
            "receipt seq 2",
            "rows were deleted",
        ),
        (
            "INSERT INTO cells VALUES (3, 2, '{}', '', 'crash', 'crash', 0, 0)",
            "receipt seq 3",
            "rows were added",
        ),
        (
            "UPDATE failures SET outcome = 'timeout' WHERE receipt_seq = 1",
            "receipt seq 1",
            "failure 1: its `outcome`",
        ),
        (
            "DELETE FROM failures WHERE receipt_seq = 2",
            "receipt seq 2",
            "rows were deleted",
        ),
        (
            "UPDATE development SET outside = 0 WHERE receipt_seq = 2",
            "receipt seq 2",
            "`outside`",
        ),
        (
            "DELETE FROM development WHERE receipt_seq = 1",
            "receipt seq 1",
            "development row",
        ),
        (
            "INSERT INTO cells VALUES (99, 0, '{}', '', 'ok', 'ok', 0, 0)",
            "table `cells`",
            "belong to no receipt",
        ),
        (
            "UPDATE incidents SET escaped_level = 'production'",
            "incident 1",
            "`escaped_level`",
        ),
        (
            "UPDATE incidents SET escaped_receipt = NULL",
            "incident 1",
            "`escaped_receipt`",
        ),
        (
            "UPDATE incidents SET outcome = 'crash'",
            "incident 1",
            "`outcome`",
        ),
        (
            "UPDATE incidents SET artifact = 'x'",
            "incident 1",
            "`artifact`",
        ),
        (
            "DELETE FROM controls",
            "the control `deadlock@threads=2` of `transfer`",
            "it is missing",
        ),
        (
            "DELETE FROM controls WHERE outcome = 'oom_killed'",
            "the control `oom_killed@threads=8` of `transfer`",
            "it was deleted",
        ),
        (
            "UPDATE controls SET outcome = 'ok' WHERE id = 2",
            "control 2",
            "`outcome` column says `ok`",
        ),
        (
            "UPDATE controls SET created_at = 0 WHERE id = 1",
            "control 1",
            "`created_at`",
        ),
        (
            "INSERT INTO controls (artifact, params, params_key, limits, outcome, signature, first_receipt, created_at) VALUES ('transfer', '{}', 'threads=9', 'null', 'crash', 'crash@threads=9', 'x', 0)",
            "control 4",
            "added behind the ledger's back",
        ),
        (
            "CREATE TRIGGER always AFTER INSERT ON receipts BEGIN UPDATE receipts SET supported = 1; END",
            "the schema",
            "trigger `always`",
        ),
        ("DROP INDEX failures_by_signature", "the schema", "dropped"),
        (
            "UPDATE schema_version SET version = 3",
            "the schema",
            "schema_version",
        ),
    ] {
        let b = broken_after(edit);
        assert_eq!(b.row, row, "{edit}: {b:?}");
        assert!(b.reason.contains(needle), "{edit}: {}", b.reason);
    }
}

#[test]
fn a_deleted_tail_is_found_by_the_anchor() {
    // The last receipt, all its rows, its chain entry: every remaining link still holds.
    let b = broken_after(
        "DELETE FROM cells WHERE receipt_seq = 3; DELETE FROM development WHERE receipt_seq = 3; \
         DELETE FROM receipts WHERE seq = 3; DELETE FROM chain WHERE pos = (SELECT MAX(pos) FROM chain);",
    );
    assert_eq!(b.row, "the end of the chain", "{b:?}");
    assert!(
        b.reason
            .contains("the anchor records 4 entries, the ledger holds 3"),
        "{}",
        b.reason
    );
    assert!(b.reason.contains("the last was receipt"), "{}", b.reason);

    // An older copy of the whole database put back.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ledger.sqlite");
    let mut l = Ledger::open(&path).unwrap();
    l.append(&receipt(1, false, "deadlock", 2)).unwrap();
    let copy = dir.path().join("copy.sqlite");
    l.conn
        .execute("VACUUM INTO ?1", [copy.to_str().unwrap()])
        .unwrap();
    l.append(&receipt(2, true, "ok", 2)).unwrap();
    drop(l);
    for f in Ledger::companion_files(&path).iter().take(3) {
        let _ = std::fs::remove_file(f);
    }
    std::fs::rename(&copy, &path).unwrap();
    let mut l = Ledger::open(&path).unwrap();
    let b = l.verify().unwrap().broken.unwrap();
    assert!(
        b.reason
            .contains("1 entry at the end of the chain was deleted"),
        "{}",
        b.reason
    );
    // Nothing is added to, or counted from, a ledger that does not hold.
    let err = l.append(&receipt(3, true, "ok", 2)).unwrap_err();
    assert!(matches!(err, LedgerError::Broken { .. }), "{err}");
    assert!(
        err.to_string().contains("broken at the end of the chain"),
        "{err}"
    );
    let err = Ledger::open_verified(&path).err().unwrap();
    assert!(matches!(err, LedgerError::Broken { .. }), "{err}");
}

#[test]
fn a_rewritten_chain_and_a_changed_time_are_found_by_the_anchor() {
    // Receipt 3's time moved: no derived column names it (it has no failure), its link does.
    let b = broken_after("UPDATE receipts SET recorded_at = recorded_at - 86400 WHERE seq = 3");
    assert_eq!(b.row, "the end of the chain", "{b:?}");
    assert!(b.reason.contains("rewritten or removed"), "{}", b.reason);
    // Entries added behind qualify's back with a consistent chain (a text and its rows).
    let (_dir, l) = ledger();
    let text = receipt(4, true, "ok", 2);
    let digest = sha256_hex(text.as_bytes());
    let prev: String = l
        .conn
        .query_row(
            "SELECT digest FROM chain ORDER BY pos DESC LIMIT 1",
            [],
            |r| r.get(0),
        )
        .unwrap();
    l.conn
        .execute(
            "INSERT INTO chain (kind, digest, prev_digest) VALUES ('receipt', ?1, ?2)",
            [&digest, &prev],
        )
        .unwrap();
    l.conn
        .execute(
            "INSERT INTO receipts (digest, prev_digest, text, artifact, claim_level, supported, incomplete, started, finished, recorded_at) VALUES (?1, ?2, ?3, 'transfer', 'trial', 1, 0, 's4', 'f4', 0)",
            [&digest, &prev, &text],
        )
        .unwrap();
    for (idx, threads) in [(0, 1), (1, 2)] {
        l.conn
            .execute(
                "INSERT INTO cells VALUES (4, ?1, ?2, ?3, 'ok', ?4, 0, 0)",
                rusqlite::params![
                    idx,
                    format!("{{\"threads\":{threads}}}"),
                    format!("threads={threads}"),
                    format!("ok@threads={threads}")
                ],
            )
            .unwrap();
    }
    l.conn
        .execute(
            "INSERT INTO development VALUES (4, 'transfer', 'native', 3, 0, 1, 1, 0, 0, 's')",
            [],
        )
        .unwrap();
    let b = l.verify().unwrap().broken.unwrap();
    assert!(b.reason.contains("behind qualify's back"), "{b:?}");
}

#[test]
fn an_incident_is_covered_like_a_receipt_and_its_escape_must_name_an_earlier_receipt() {
    let b = broken_after(
        "UPDATE incidents SET text = replace(text, '\"escaped_receipt\":\"', '\"escaped_receipt\":\"0'), \
         digest = 'x'",
    );
    assert_eq!(b.row, "incident 1", "{b:?}");
    // The last entry an incident: deleting it is found by the anchor.
    let (_dir, mut l) = ledger();
    l.record_incident(&NewIncident {
        artifact: "transfer".into(),
        params: json!({"threads": 2}).as_object().unwrap().clone(),
        outcome: "deadlock".into(),
        detail: None,
        receipt: None,
    })
    .unwrap();
    assert_eq!(l.verify().unwrap().broken, None);
    l.conn
        .execute_batch(
            "DELETE FROM incidents WHERE id = 2; DELETE FROM chain WHERE pos = (SELECT MAX(pos) FROM chain);",
        )
        .unwrap();
    let b = l.verify().unwrap().broken.unwrap();
    assert!(b.reason.contains("the last was incident"), "{b:?}");
}

#[test]
fn a_writer_killed_between_its_two_anchor_steps_leaves_a_ledger_that_verifies() {
    let (dir, l) = ledger();
    let path = anchor::path_for(&dir.path().join("ledger.sqlite"));
    let settled = anchor::Anchor::read(&path).unwrap().unwrap();
    let (head, _) = chain_links(&l.conn).unwrap();
    assert_eq!(settled, anchor::Anchor::settled(head.clone()));
    // Announced but not committed: the database is one behind the pending entry.
    anchor::Anchor {
        version: 1,
        head: head.clone(),
        pending: Some(head.next("receipt", "not-committed", 1)),
    }
    .write(&path)
    .unwrap();
    assert_eq!(l.verify().unwrap().broken, None);
    // Committed but not settled: the database is at the pending entry.
    let mut before = head.clone();
    before.entries -= 1;
    before.link = "an earlier link".into();
    anchor::Anchor {
        version: 1,
        head: before,
        pending: Some(head),
    }
    .write(&path)
    .unwrap();
    assert_eq!(l.verify().unwrap().broken, None);
    // A missing or foreign anchor is a break, named.
    std::fs::write(&path, "{}").unwrap();
    let b = l.verify().unwrap().broken.unwrap();
    assert!(b.reason.contains("not an anchor qualify wrote"), "{b:?}");
    std::fs::remove_file(&path).unwrap();
    let b = l.verify().unwrap().broken.unwrap();
    assert!(b.reason.contains("is missing"), "{b:?}");
}

#[test]
fn a_version_3_ledger_gains_its_anchor_and_verifies() {
    let (dir, l) = ledger();
    let db = dir.path().join("ledger.sqlite");
    l.conn
        .execute("UPDATE schema_version SET version = 3", [])
        .unwrap();
    drop(l);
    std::fs::remove_file(anchor::path_for(&db)).unwrap();
    let l = Ledger::open_verified(&db).unwrap();
    assert!(anchor::path_for(&db).is_file());
    assert_eq!(l.verify().unwrap().receipts, 3);
}
