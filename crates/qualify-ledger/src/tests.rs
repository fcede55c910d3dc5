//! Unit tests of the ledger: chain, tampering, controls, stats, migrations.

use serde_json::json;

use super::*;

fn receipt(nonce: u32, supported: bool, cells: &[(&str, i64, bool)]) -> String {
    let cells: Vec<Value> = cells
        .iter()
        .map(|(outcome, threads, control)| {
            json!({
                "params": { "threads": threads, "rounds": 10 },
                "result": { "outcome": outcome, "limits": { "timeout_seconds": 30.0 } },
                "boundary": false,
                "control": control,
            })
        })
        .collect();
    serde_json::to_string_pretty(&json!({
        "_type": "https://in-toto.io/Statement/v1",
        "predicate": {
            "claim": { "level": "trial", "supported": supported },
            "incomplete": false,
            "cells": cells,
            "run": { "artifact": { "name": "transfer" }, "started": format!("n{nonce}"), "finished": "f" },
        }
    }))
    .unwrap()
}

fn open() -> (tempfile::TempDir, Ledger) {
    let dir = tempfile::tempdir().unwrap();
    let ledger = Ledger::open(&dir.path().join("sub/ledger.sqlite")).unwrap();
    (dir, ledger)
}

#[test]
fn appends_chain_and_verify() {
    let (_dir, mut l) = open();
    let a = l.append(&receipt(1, true, &[("ok", 1, false)])).unwrap();
    let b = l.append(&receipt(2, true, &[("ok", 1, false)])).unwrap();
    assert_eq!((a.seq, b.seq), (1, 2));
    let again = l.append(&receipt(2, true, &[("ok", 1, false)])).unwrap();
    assert!(again.already_present);
    let list = l.list().unwrap();
    assert_eq!(list.len(), 2);
    assert_eq!(list[1].prev_digest.as_deref(), Some(a.digest.as_str()));
    assert_eq!(list[0].prev_digest, None);
    let v = l.verify().unwrap();
    assert_eq!(v.receipts, 2);
    assert_eq!(v.broken, None);
    let (entry, text) = l.show(&b.digest[..8]).unwrap();
    assert_eq!(entry.digest, b.digest);
    assert_eq!(sha256_hex(text.as_bytes()), b.digest);
}

#[test]
fn tampered_text_and_links_are_named() {
    let (_dir, mut l) = open();
    for i in 0..3 {
        l.append(&receipt(i, false, &[("deadlock", 2, false)]))
            .unwrap();
    }
    l.conn
        .execute(
            "UPDATE receipts SET text = replace(text, '30.0', '31.0') WHERE seq = 2",
            [],
        )
        .unwrap();
    let broken = l.verify().unwrap().broken.unwrap();
    assert_eq!(broken.seq, 2);
    assert!(broken.reason.contains("modified"), "{}", broken.reason);

    // Re-hash the tampered row: now the next link breaks.
    let text: String = l
        .conn
        .query_row("SELECT text FROM receipts WHERE seq = 2", [], |r| r.get(0))
        .unwrap();
    l.conn
        .execute(
            "UPDATE receipts SET digest = ?1 WHERE seq = 2",
            [sha256_hex(text.as_bytes())],
        )
        .unwrap();
    let broken = l.verify().unwrap().broken.unwrap();
    assert_eq!(broken.seq, 3);
    assert!(
        broken.reason.contains("previous receipt"),
        "{}",
        broken.reason
    );
}

#[test]
fn failures_become_controls_once_and_repeats_are_counted() {
    let (_dir, mut l) = open();
    let first = l
        .append(&receipt(
            1,
            false,
            &[("ok", 1, false), ("deadlock", 2, false)],
        ))
        .unwrap();
    assert_eq!(first.new_controls, 1);
    let second = l
        .append(&receipt(
            2,
            false,
            &[("deadlock", 2, true), ("ok", 1, false)],
        ))
        .unwrap();
    assert_eq!(second.new_controls, 0);
    let controls = l.regressions(Some("transfer")).unwrap();
    assert_eq!(controls.len(), 1);
    assert_eq!(controls[0].signature, "deadlock@rounds=10,threads=2");
    assert_eq!(controls[0].first_receipt, first.digest);
    assert_eq!(controls[0].limits["timeout_seconds"], json!(30.0));
    assert!(l.regressions(Some("other")).unwrap().is_empty());

    let stats = l.stats().unwrap();
    assert_eq!(stats.receipts, 2);
    assert_eq!(stats.groups[0].runs, 2);
    assert_eq!(stats.groups[0].accepted, 0);
    assert_eq!(stats.groups[0].failures["deadlock"], 2);
    assert_eq!(stats.repeating.len(), 1);
    assert_eq!(stats.repeating[0].count, 2);
    assert_eq!(stats.repeating[0].as_control, 1);
    assert_eq!(stats.time_to_pass[0].first_pass_receipt, None);

    let third = l.append(&receipt(3, true, &[("ok", 2, true)])).unwrap();
    let stats = l.stats().unwrap();
    assert_eq!(
        stats.time_to_pass[0].first_pass_receipt.as_deref(),
        Some(third.digest.as_str())
    );
    assert!(stats.time_to_pass[0].seconds_to_pass.is_some());
    assert_eq!(stats.groups[0].accepted, 1);
}

#[test]
fn reopening_keeps_the_schema_and_refuses_newer_ones() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("l.sqlite");
    Ledger::open(&path)
        .unwrap()
        .append(&receipt(1, true, &[]))
        .unwrap();
    let l = Ledger::open(&path).unwrap();
    assert_eq!(l.list().unwrap().len(), 1);
    l.conn
        .execute("UPDATE schema_version SET version = 99", [])
        .unwrap();
    drop(l);
    let err = Ledger::open(&path).err().unwrap();
    assert!(err.to_string().contains("newer"), "{err}");
}

#[test]
fn bad_receipts_name_the_field() {
    let (_dir, mut l) = open();
    let err = l.append("{\"predicate\": {}}").unwrap_err().to_string();
    assert!(err.contains("predicate.run.artifact.name"), "{err}");
    assert!(l.append("nope").is_err());
    assert!(matches!(l.show("zz"), Err(LedgerError::NotFound(_))));
}

fn base64(bytes: &[u8]) -> String {
    const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n =
            chunk.iter().fold(0u32, |acc, b| (acc << 8) | u32::from(*b)) << (8 * (3 - chunk.len()));
        for i in 0..=chunk.len() {
            out.push(A[((n >> (18 - 6 * i)) & 63) as usize] as char);
        }
        out.push_str(&"=".repeat(3 - chunk.len()));
    }
    out
}

#[test]
fn signed_envelopes_are_indexed_by_their_payload_and_hashed_as_written() {
    let (_dir, mut l) = open();
    let statement = receipt(7, false, &[("oom_killed", 4, false)]);
    let envelope = serde_json::to_string(&json!({
        "payloadType": "application/vnd.in-toto+json",
        "payload": base64(statement.as_bytes()),
        "signatures": [{ "keyid": "k", "sig": "c2ln" }],
    }))
    .unwrap();
    let done = l.append(&envelope).unwrap();
    assert_eq!(done.digest, sha256_hex(envelope.as_bytes()));
    assert_eq!(done.new_controls, 1);
    let list = l.list().unwrap();
    assert_eq!(list[0].artifact, "transfer");
    assert_eq!(
        l.regressions(None).unwrap()[0].signature,
        "oom_killed@rounds=10,threads=4"
    );
    assert_eq!(l.verify().unwrap().broken, None);
}

/// A receipt with a claimed region: threads ≤ 4 (target), rounds over declared values 10, 20.
fn claimed_receipt(nonce: u32, supported: bool) -> String {
    serde_json::to_string_pretty(&json!({
        "_type": "https://in-toto.io/Statement/v1",
        "predicate": {
            "claim": { "level": "trial", "supported": supported },
            "incomplete": false,
            "cells": [{
                "params": { "threads": 2, "rounds": 10 },
                "result": { "outcome": "ok", "limits": {} },
            }],
            "claimed_region": [
                { "axis": "threads", "bound": { "value": 4.0, "source": "target.concurrency", "harder": "larger" } },
                { "axis": "rounds" }
            ],
            "tested": { "axes": [
                { "name": "threads", "declared": { "values": [1, 2, 8] } },
                { "name": "rounds", "declared": { "values": [10, 20] } }
            ] },
            "run": { "artifact": { "name": "transfer" }, "started": format!("n{nonce}"), "finished": "f" },
        }
    }))
    .unwrap()
}

fn incident(params: Value, receipt: Option<&str>) -> NewIncident {
    NewIncident {
        artifact: "transfer".into(),
        params: params.as_object().unwrap().clone(),
        outcome: "deadlock".into(),
        detail: Some("hung in production".into()),
        receipt: receipt.map(str::to_string),
    }
}

#[test]
fn incidents_become_controls_join_the_chain_and_count_as_escapes() {
    let (_dir, mut l) = open();
    // An unknown artifact is refused.
    let mut other = incident(json!({"threads": 2}), None);
    other.artifact = "nope".into();
    assert!(matches!(
        l.record_incident(&other),
        Err(LedgerError::UnknownArtifact(_))
    ));
    let refused = l.append(&claimed_receipt(1, false)).unwrap();
    let accepted = l.append(&claimed_receipt(2, true)).unwrap();

    // Inside the accepted receipt's claimed region: an escape from it.
    let r = l
        .record_incident(&incident(json!({"threads": 3, "rounds": 20}), None))
        .unwrap();
    assert_eq!(
        r.incident.escaped_receipt.as_deref(),
        Some(accepted.digest.as_str())
    );
    assert_eq!(r.incident.signature, "deadlock@rounds=20,threads=3");
    assert!(r.new_control, "{r:?}");
    assert!(r.escape_note.starts_with("an escape"), "{}", r.escape_note);
    // The control re-runs these parameters and says where it came from.
    let controls = l.regressions(Some("transfer")).unwrap();
    let c = controls
        .iter()
        .find(|c| c.signature == "deadlock@rounds=20,threads=3")
        .unwrap();
    assert_eq!(c.first_receipt, r.incident.digest);
    assert_eq!(c.params, json!({"threads": 3, "rounds": 20}));

    // Beyond the target (threads 8 > 4) or outside the declared values: not claimed.
    let beyond = l
        .record_incident(&incident(json!({"threads": 8}), None))
        .unwrap();
    assert_eq!(beyond.incident.escaped_receipt, None);
    let outside = l
        .record_incident(&incident(json!({"threads": 2, "rounds": 30}), None))
        .unwrap();
    assert_eq!(outside.incident.escaped_receipt, None);
    // Naming a receipt: an escape only if that receipt accepted its claim.
    let named = l
        .record_incident(&incident(
            json!({"threads": 9}),
            Some(&refused.digest[..10]),
        ))
        .unwrap();
    assert_eq!(named.incident.escaped_receipt, None);
    assert!(named.escape_note.starts_with("not an escape"));
    let named = l
        .record_incident(&incident(
            json!({"threads": 9}),
            Some(&accepted.digest[..10]),
        ))
        .unwrap();
    assert_eq!(named.incident.escaped_level.as_deref(), Some("trial"));
    assert!(matches!(
        l.record_incident(&incident(json!({"threads": 9}), Some("ffffffffff"))),
        Err(LedgerError::NotFound(_))
    ));

    // Accounting: 1 accepted trial receipt, 2 escapes.
    let stats = l.stats().unwrap();
    let g = &stats.groups[0];
    assert_eq!((g.accepted, g.escapes), (1, 2));
    assert_eq!(g.escape_rate, Some(2.0));
    assert_eq!(stats.incidents.len(), 5);

    // The chain covers incidents: receipts appended after them link to the last incident.
    let later = l.append(&claimed_receipt(3, true)).unwrap();
    let list = l.list().unwrap();
    let last = list.last().unwrap();
    assert_eq!(last.digest, later.digest);
    assert_eq!(
        last.prev_digest.as_deref(),
        Some(l.incidents(None).unwrap().last().unwrap().digest.as_str())
    );
    assert_eq!(l.verify().unwrap().broken, None);
    // An edited incident is found.
    l.conn
        .execute(
            "UPDATE incidents SET text = replace(text, 'hung', 'slow') WHERE id = 1",
            [],
        )
        .unwrap();
    let broken = l.verify().unwrap().broken.unwrap();
    assert!(broken.reason.contains("incident"), "{}", broken.reason);
    assert!(broken.reason.contains("modified"), "{}", broken.reason);
}

#[test]
fn a_version_1_ledger_is_migrated_with_its_chain() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.sqlite");
    {
        // Build a version-1 database the way version 1 wrote it.
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(
            "CREATE TABLE schema_version (version INTEGER NOT NULL); INSERT INTO schema_version VALUES (0);",
        )
        .unwrap();
        conn.execute_batch(schema::STEPS_FOR_TESTS[0]).unwrap();
        conn.execute("UPDATE schema_version SET version = 1", [])
            .unwrap();
        let mut prev: Option<String> = None;
        for i in 0..3 {
            let text = receipt(i, true, &[("ok", 1, false)]);
            let digest = sha256_hex(text.as_bytes());
            conn.execute(
                "INSERT INTO receipts (digest, prev_digest, text, artifact, claim_level, supported, incomplete, started, finished, recorded_at) VALUES (?1, ?2, ?3, 'transfer', 'trial', 1, 0, ?4, 'f', 0)",
                rusqlite::params![digest, prev, text, format!("n{i}")],
            )
            .unwrap();
            conn.execute(
                "INSERT INTO cells (receipt_seq, idx, params, params_key, outcome, signature, control, boundary) VALUES (?1, 0, '{\"rounds\":10,\"threads\":1}', 'rounds=10,threads=1', 'ok', 'ok@rounds=10,threads=1', 0, 0)",
                [i + 1],
            )
            .unwrap();
            prev = Some(digest);
        }
    }
    let mut l = Ledger::open(&path).unwrap();
    let v = l.verify().unwrap();
    assert_eq!((v.receipts, v.broken), (3, None));
    let next = l.append(&receipt(9, true, &[("ok", 1, false)])).unwrap();
    assert_eq!(next.seq, 4);
    assert_eq!(l.verify().unwrap().broken, None);
}

/// A receipt whose process layer carries a development record: `failing` failing cells, of
/// which `outside` lie where development never went and `inside` where it did.
fn developed_receipt(nonce: u32, failing: i64, outside: i64, inside: i64) -> String {
    let mut v: Value =
        serde_json::from_str(&receipt(nonce, false, &[("deadlock", 2, false)])).unwrap();
    v["predicate"]["layers"] = json!({
        "process": {
            "status": "closed",
            "evidence": {
                "trace": {
                    "sources": [{"format": "claude-code"}, {"format": "codex"}, {"format": "claude-code"}],
                    "commands_total": 12,
                    "coverage": {"artifact_runs": 3}
                },
                "coverage": {
                    "failing_cells": failing,
                    "outside": outside,
                    "inside": inside,
                    "unknown": failing - outside - inside,
                    "sentence": format!("sentence {nonce}")
                }
            }
        }
    });
    serde_json::to_string_pretty(&v).unwrap()
}

#[test]
fn development_summaries_are_kept_and_accounted_per_artifact() {
    let (_dir, mut l) = open();
    l.append(&developed_receipt(1, 4, 4, 0)).unwrap();
    l.append(&developed_receipt(2, 3, 1, 1)).unwrap();
    l.append(&developed_receipt(3, 0, 0, 0)).unwrap();
    // A receipt without a trace is not counted.
    l.append(&receipt(4, false, &[("deadlock", 2, false)]))
        .unwrap();
    let parsed = IndexedReceipt::parse(&developed_receipt(1, 4, 4, 0)).unwrap();
    let d = parsed.development.unwrap();
    assert_eq!(d.formats, "claude-code,codex");
    assert_eq!((d.commands, d.artifact_runs), (12, 3));
    let stats = l.stats().unwrap();
    assert_eq!(stats.development.len(), 1);
    let s = &stats.development[0];
    assert_eq!(s.artifact, "transfer");
    assert_eq!((s.receipts, s.receipts_with_failures), (3, 2));
    assert_eq!(
        (s.failing_cells, s.outside, s.inside, s.unknown),
        (7, 5, 1, 1)
    );
    assert_eq!(s.latest, "sentence 3");
    assert_eq!(l.verify().unwrap().broken, None);
}

#[test]
fn a_version_2_ledger_gains_the_development_table() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v2.sqlite");
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(
            "CREATE TABLE schema_version (version INTEGER NOT NULL); INSERT INTO schema_version VALUES (2);",
        )
        .unwrap();
        conn.execute_batch(schema::STEPS_FOR_TESTS[0]).unwrap();
        conn.execute_batch(schema::STEPS_FOR_TESTS[1]).unwrap();
    }
    let mut l = Ledger::open(&path).unwrap();
    l.append(&developed_receipt(1, 2, 2, 0)).unwrap();
    assert_eq!(l.stats().unwrap().development[0].outside, 2);
}

/// What the ledger says of a text it cannot index, byte for byte (pinned before the reasons
/// became a type).
#[test]
fn a_text_that_is_no_receipt_says_which_part_is_missing() {
    use base64::Engine as _;
    let why = |text: &str| IndexedReceipt::parse(text).unwrap_err().to_string();
    let json_error = serde_json::from_str::<serde_json::Value>("{")
        .unwrap_err()
        .to_string();
    assert_eq!(why("{"), format!("not JSON ({json_error})"));
    assert_eq!(why("{}"), "`predicate` is missing");
    assert_eq!(
        why(r#"{"predicate": {}}"#),
        "`predicate.run.artifact.name` is missing or not a string"
    );
    assert_eq!(
        why(r#"{"predicate": {"run": {"artifact": {"name": "a"}}}}"#),
        "`predicate.claim.level` is missing or not a string"
    );
    assert_eq!(
        why(r#"{"predicate": {"run": {"artifact": {"name": "a"}}, "claim": {"level": "trial"}}}"#),
        "`predicate.claim.supported` is missing or not a boolean"
    );
    assert_eq!(
        why(r#"{"predicate": {"run": {"artifact": {"name": "a"}},
                "claim": {"level": "trial", "supported": true}, "cells": [{}, {}]}}"#),
        "`predicate.cells[0].result.outcome` is missing"
    );
    let b64_error = base64::engine::general_purpose::STANDARD
        .decode("%%")
        .unwrap_err()
        .to_string();
    assert_eq!(
        why(r#"{"payload": "%%"}"#),
        format!("the envelope's `payload` is not base64 ({b64_error})")
    );
    let inner_error = serde_json::from_slice::<serde_json::Value>(b"nope")
        .unwrap_err()
        .to_string();
    let payload = base64::engine::general_purpose::STANDARD.encode("nope");
    assert_eq!(
        why(&format!(r#"{{"payload": "{payload}"}}"#)),
        format!("the envelope's payload is not JSON ({inner_error})")
    );
    assert_eq!(
        LedgerError::BadReceipt(IndexedReceipt::parse("{}").unwrap_err()).to_string(),
        "not a qualify receipt: `predicate` is missing"
    );
}
