//! Jepsen's `checker/set` over write sequence numbers: which acknowledged writes survived.
//!
//! A write load attempts ids (`PUT /items/{seq}`); some are acknowledged (the service said ok);
//! after the faults heal, a final read says which ids are present. Then
//!
//! - `ok`: acknowledged and present;
//! - `lost`: acknowledged but missing — the service broke a promise;
//! - `recovered`: present but never acknowledged (the write landed, the answer did not);
//! - `unexpected`: present but never attempted — the store invented data;
//!
//! and the history is valid iff nothing is lost and nothing is unexpected. An acknowledged id is
//! attempted by definition: acknowledged ids missing from `attempted` are added to it. When a
//! read-back got no answer for some ids ([`check_set_read`]), acknowledged ones among them are
//! `unread` — unknown, never counted lost — and the history is not valid. With the failed
//! writes known ([`check_history`]) the check also counts `failed` and `unknown` attempts
//! (Jepsen's `:fail` and `:info`): neither is ever lost.

use std::collections::BTreeSet;

/// How many ids of each list are kept in full.
pub const FIRST_FEW: usize = 10;

/// The set check's result, as the receipt's write check (the vocabulary's).
pub use qualify_model::fault::SetCheck;

/// Check a history: ids attempted, acknowledged, and present in the final read (every id was
/// read).
pub fn check_set(
    attempted: impl IntoIterator<Item = u64>,
    acknowledged: impl IntoIterator<Item = u64>,
    present: impl IntoIterator<Item = u64>,
) -> SetCheck {
    check(attempted, acknowledged, None, None, present)
}

/// [`check_set`] when not every read answered: `read` are the ids whose read-back answered
/// (present or not). An acknowledged id that was never read is `unread` — not lost: nothing
/// is known of it — and keeps the history from being valid.
pub fn check_set_read(
    attempted: impl IntoIterator<Item = u64>,
    acknowledged: impl IntoIterator<Item = u64>,
    read: impl IntoIterator<Item = u64>,
    present: impl IntoIterator<Item = u64>,
) -> SetCheck {
    check(
        attempted,
        acknowledged,
        None,
        Some(read.into_iter().collect()),
        present,
    )
}

/// [`check_set_read`] with the attempted writes that `failed` (answered with a failure, or
/// refused before they were sent): the rest of the attempted, unacknowledged writes are
/// `unknown` — they may or may not have happened. Neither kind is ever counted lost; one found
/// present is `recovered`.
pub fn check_history(
    attempted: impl IntoIterator<Item = u64>,
    acknowledged: impl IntoIterator<Item = u64>,
    failed: impl IntoIterator<Item = u64>,
    read: impl IntoIterator<Item = u64>,
    present: impl IntoIterator<Item = u64>,
) -> SetCheck {
    check(
        attempted,
        acknowledged,
        Some(failed.into_iter().collect()),
        Some(read.into_iter().collect()),
        present,
    )
}

fn check(
    attempted: impl IntoIterator<Item = u64>,
    acknowledged: impl IntoIterator<Item = u64>,
    failed: Option<BTreeSet<u64>>,
    read: Option<BTreeSet<u64>>,
    present: impl IntoIterator<Item = u64>,
) -> SetCheck {
    let acknowledged: BTreeSet<u64> = acknowledged.into_iter().collect();
    let mut attempted: BTreeSet<u64> = attempted.into_iter().collect();
    attempted.extend(acknowledged.iter().copied());
    // Failed means attempted and not acknowledged; the other unacknowledged ones are unknown
    // (when the failures are known at all).
    let (failed, unknown) = match &failed {
        Some(f) => {
            let failed = attempted
                .iter()
                .filter(|id| f.contains(id) && !acknowledged.contains(id))
                .count() as u64;
            let unanswered = attempted.len() as u64 - acknowledged.len() as u64;
            (Some(failed), Some(unanswered - failed))
        }
        None => (None, None),
    };
    let present: BTreeSet<u64> = present.into_iter().collect();
    let was_read = |id: &u64| {
        read.as_ref()
            .is_none_or(|r| r.contains(id) || present.contains(id))
    };

    let ok = acknowledged.intersection(&present).count() as u64;
    let lost: Vec<u64> = acknowledged
        .difference(&present)
        .filter(|id| was_read(id))
        .copied()
        .collect();
    let unread = acknowledged.iter().filter(|id| !was_read(id)).count() as u64;
    let recovered = present
        .iter()
        .filter(|id| attempted.contains(id) && !acknowledged.contains(id))
        .count() as u64;
    let unexpected: Vec<u64> = present.difference(&attempted).copied().collect();
    SetCheck {
        attempted: attempted.len() as u64,
        acknowledged: acknowledged.len() as u64,
        ok,
        lost: lost.len() as u64,
        recovered,
        unexpected: unexpected.len() as u64,
        unread,
        failed,
        unknown,
        first_lost: lost.iter().take(FIRST_FEW).copied().collect(),
        first_unexpected: unexpected.iter().take(FIRST_FEW).copied().collect(),
        valid: lost.is_empty() && unexpected.is_empty() && unread == 0,
        history: None,
        checker: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_check_table() {
        struct Case {
            name: &'static str,
            attempted: Vec<u64>,
            acknowledged: Vec<u64>,
            present: Vec<u64>,
            // ok, lost, recovered, unexpected, valid
            expect: (u64, u64, u64, u64, bool),
            first_lost: Vec<u64>,
            first_unexpected: Vec<u64>,
        }
        let cases = vec![
            Case {
                name: "empty history is valid",
                attempted: vec![],
                acknowledged: vec![],
                present: vec![],
                expect: (0, 0, 0, 0, true),
                first_lost: vec![],
                first_unexpected: vec![],
            },
            Case {
                name: "every acknowledged write present",
                attempted: vec![1, 2, 3],
                acknowledged: vec![1, 2, 3],
                present: vec![1, 2, 3],
                expect: (3, 0, 0, 0, true),
                first_lost: vec![],
                first_unexpected: vec![],
            },
            Case {
                name: "acknowledged but missing is lost",
                attempted: vec![1, 2, 3, 4],
                acknowledged: vec![1, 2, 3],
                present: vec![1],
                expect: (1, 2, 0, 0, false),
                first_lost: vec![2, 3],
                first_unexpected: vec![],
            },
            Case {
                name: "unacknowledged but present is recovered, still valid",
                attempted: vec![1, 2, 3],
                acknowledged: vec![1],
                present: vec![1, 2],
                expect: (1, 0, 1, 0, true),
                first_lost: vec![],
                first_unexpected: vec![],
            },
            Case {
                name: "unacknowledged and missing is neither lost nor recovered",
                attempted: vec![1, 2],
                acknowledged: vec![1],
                present: vec![1],
                expect: (1, 0, 0, 0, true),
                first_lost: vec![],
                first_unexpected: vec![],
            },
            Case {
                name: "present but never attempted is unexpected",
                attempted: vec![1],
                acknowledged: vec![1],
                present: vec![1, 99],
                expect: (1, 0, 0, 1, false),
                first_lost: vec![],
                first_unexpected: vec![99],
            },
            Case {
                name: "an acknowledged id counts as attempted",
                attempted: vec![],
                acknowledged: vec![5],
                present: vec![5],
                expect: (1, 0, 0, 0, true),
                first_lost: vec![],
                first_unexpected: vec![],
            },
            Case {
                name: "duplicates in the inputs count once",
                attempted: vec![1, 1, 2, 2],
                acknowledged: vec![1, 1, 2],
                present: vec![2, 2],
                expect: (1, 1, 0, 0, false),
                first_lost: vec![1],
                first_unexpected: vec![],
            },
            Case {
                name: "only the first few lost ids are listed, smallest first",
                attempted: (0..100).rev().collect(),
                acknowledged: (0..100).rev().collect(),
                present: (0..50).collect(),
                expect: (50, 50, 0, 0, false),
                first_lost: (50..60).collect(),
                first_unexpected: vec![],
            },
        ];
        for c in cases {
            let r = check_set(c.attempted.clone(), c.acknowledged, c.present);
            assert_eq!(
                (r.ok, r.lost, r.recovered, r.unexpected, r.valid),
                c.expect,
                "{}",
                c.name
            );
            assert_eq!(r.first_lost, c.first_lost, "{}", c.name);
            assert_eq!(r.first_unexpected, c.first_unexpected, "{}", c.name);
            assert_eq!(
                r.ok + r.lost,
                r.acknowledged,
                "{}: ok + lost = acknowledged",
                c.name
            );
        }
    }

    #[test]
    fn serializes_with_the_receipt_names() {
        let r = check_set([1, 2, 3], [1, 2], [2, 3]);
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["acknowledged"], 2);
        assert_eq!(v["lost"], 1);
        assert_eq!(v["recovered"], 1);
        assert_eq!(v["unexpected"], 0);
        assert_eq!(v["first_lost"], serde_json::json!([1]));
        assert_eq!(v["valid"], false);
    }

    #[test]
    fn writes_never_read_are_unread_not_lost() {
        // 0..10 attempted and acknowledged; 3 and 4 read and missing; 8 and 9 never read.
        let c = check_set_read(0..10, 0..10, 0..8, (0..8).filter(|i| *i != 3 && *i != 4));
        assert_eq!((c.ok, c.lost, c.unread), (6, 2, 2));
        assert_eq!(c.first_lost, [3, 4]);
        assert!(!c.valid, "unread writes keep the history from being valid");
        // Everything read: as check_set.
        let all = check_set_read(0..10, 0..10, 0..10, 0..10);
        assert_eq!((all.ok, all.unread, all.valid), (10, 0, true));
        assert_eq!(all, check_set(0..10, 0..10, 0..10));
    }

    #[test]
    fn failed_and_unknown_writes_are_never_lost() {
        // 0..10 attempted: 0..6 acknowledged, 6 and 7 failed, 8 and 9 unknown (no answer).
        // After the fault 5 is missing (lost), 6 (failed) is present anyway, 8 (unknown) is
        // present and 9 (unknown) absent — neither of those two is lost.
        let c = check_history(0..10, 0..6, [6, 7], 0..10, [0, 1, 2, 3, 4, 6, 8]);
        assert_eq!(
            (c.ok, c.lost, c.failed, c.unknown),
            (5, 1, Some(2), Some(2))
        );
        assert_eq!(c.recovered, 2, "the failed 6 and the unknown 8 landed");
        assert_eq!(c.first_lost, [5]);
        assert!(!c.valid);
        // A failure id outside the attempted set, or one also acknowledged, is not counted.
        let c = check_history(0..4, 0..2, [1, 2, 99], 0..4, 0..2);
        assert_eq!(
            (c.failed, c.unknown, c.lost, c.valid),
            (Some(1), Some(1), 0, true)
        );
        let v = serde_json::to_value(&c).unwrap();
        assert_eq!(
            (v["failed"].as_u64(), v["unknown"].as_u64()),
            (Some(1), Some(1))
        );
        // Without the failures known, neither count is claimed.
        let c = check_set_read(0..4, 0..2, 0..4, 0..2);
        assert_eq!((c.failed, c.unknown), (None, None));
        assert!(serde_json::to_value(&c).unwrap().get("failed").is_none());
    }
}
