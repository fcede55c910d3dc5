//! The golden-shape comparison itself (`common::shape`): what it keeps as a word and what it
//! reduces to `text`. A shape that kept a value whose characters vary run to run would make a
//! golden pass or fail by chance (a histogram's base64 without `+`, `/` or `=` once looked like
//! a word); these cases pin that it does not.

#[allow(unused_macros)]
mod common;

use serde_json::json;

#[test]
fn encoded_blobs_are_text_whatever_characters_this_run_drew() {
    // HdrHistogram V2 deflate base64 with and without `+`, `/`, `=`: both are text, under any
    // key and under a key that says what they are.
    let with = "HISTFAAAACl4nJNpmSzMwMDAyQABzFA+IxQLMpgAAWYCBA==";
    let without = "HISTFAAAACl4nJNpmSzMwMDAyQABzFAaJmsQLMpgAAWYCBA";
    for blob in [with, without] {
        assert_eq!(
            common::shape(&json!({ "x": blob })),
            json!({ "x": "text" }),
            "{blob}"
        );
        assert_eq!(
            common::shape(&json!({ "ended_histogram": blob })),
            json!({ "ended_histogram": "text" }),
            "{blob}"
        );
    }
    // A hex digest, and a short all-letters value under an encoded key.
    let digest = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
    assert_eq!(
        common::shape(&json!({ "d": digest })),
        json!({ "d": "text" })
    );
    assert_eq!(
        common::shape(&json!({ "signature": "abcdEFGH" })),
        json!({ "signature": "text" })
    );
}

#[test]
fn identifiers_stay_words_and_free_text_does_not() {
    let v = json!({
        "phase": "outside_window",
        "fault": "latency(200ms)",
        "signal": "SIGKILL",
        "encoding": "hdrhistogram-v2-deflate-base64",
        "unit": "microseconds",
        "detail": "a sentence, with spaces",
        "outcome": "ok",
        "n": 3,
        "held": true,
    });
    assert_eq!(
        common::shape(&v),
        json!({
            "phase": "outside_window",
            "fault": "latency(200ms)",
            "signal": "SIGKILL",
            "encoding": "hdrhistogram-v2-deflate-base64",
            "unit": "microseconds",
            "detail": "text",
            "outcome": "text",
            "n": "#",
            "held": "bool",
        })
    );
}

#[test]
fn keys_that_timing_adds_are_left_out_where_they_appear() {
    // A generator that lagged on a busy machine says why; one that kept its schedule does not.
    let lagged = json!({ "generator": { "threads": 1, "detail": "dispatched 3 late" } });
    let kept = json!({ "generator": { "threads": 1 } });
    assert_eq!(common::shape(&lagged), common::shape(&kept));
    // The same word elsewhere is kept: only the named place is volatile.
    assert_eq!(
        common::shape(&json!({ "cell": { "detail": "x y" } })),
        json!({ "cell": { "detail": "text" } })
    );
}
