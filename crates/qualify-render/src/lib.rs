//! `qualify-render` renders a receipt (the in-toto Statement `qualify run` writes, read as a
//! `serde_json::Value`) for people and for other tools. Rendering only: nothing here judges a claim
//! or runs a process, and every renderer tolerates missing optional parts (a receipt without
//! `predicate.performance`, without boundaries, without a target) by leaving those sections out.
//!
//! - [`html()`]: one self-contained HTML file (inline SVG, no script, no network): the claim and
//!   verdict, the layer table, the envelope heatmap, scaling curves on log–log axes with the
//!   fitted model and confidence whiskers, concurrency speedup and efficiency, boundaries, service
//!   cells under load (corrected latency against offered rate, achieved rate, per-cell
//!   timelines), dependency faults, the target gap and the admission checklist.
//! - [`markdown()`]: GitHub-flavoured Markdown for CI job summaries.
//! - [`junit()`]: JUnit XML, one `<testcase>` per cell.
//! - [`extrap_jsonl`]: the measurements as Extra-P JSON Lines.
//! - [`terminal`]: `qualify run`'s terminal summary (layers, failure map, service cells, faults,
//!   capacity, boundaries, gap, verdict, performance lines) and a `[perturb]` campaign's lines.
//!
//! Modules: [`view`] (the row model: every section's rows, built once from the receipt's JSON
//! and tolerant of missing parts), `perf_tables` (the checks and models tables, as rows of
//! text every renderer formats), [`svg`] (plot primitives), `html` (one module per report
//! section), `markdown`, `terminal`, `junit`, `extrap` (the renderers: they format rows and
//! never read the JSON), `text` (escaping and number formats).

mod extrap;
mod html;
mod junit;
mod markdown;
mod perf_tables;
pub mod svg;
pub mod terminal;
mod text;
pub mod view;

use serde_json::Value;

/// The receipt as one self-contained HTML document.
pub fn html(receipt: &Value) -> String {
    html::render(&view::View::new(receipt))
}

/// The receipt as one self-contained HTML document, with the signature line the caller
/// established (`qualify report` verifies with `--key`, or says it did not).
pub fn html_signed(receipt: &Value, signature: view::Signature) -> String {
    html::render(&view::View::new(receipt).with_signature(signature))
}

/// The receipt as Markdown, with the signature line the caller established.
pub fn markdown_signed(receipt: &Value, signature: view::Signature) -> String {
    markdown::render(&view::View::new(receipt).with_signature(signature))
}

/// The receipt as GitHub-flavoured Markdown (for CI job summaries).
pub fn markdown(receipt: &Value) -> String {
    markdown::render(&view::View::new(receipt))
}

/// The cells as JUnit XML: one `<testcase>` per cell, a `<failure>` for each cell that did not end
/// `ok` (a `<skipped>` for cells cut short by an interruption, which say nothing about the artifact).
pub fn junit(receipt: &Value) -> String {
    junit::render(&view::View::new(receipt))
}

/// The measurements as Extra-P JSON Lines: one object per measured value,
/// `{"params": {...}, "callpath": "...", "metric": "...", "value": ...}`.
pub fn extrap_jsonl(receipt: &Value) -> String {
    extrap::render(&view::View::new(receipt))
}
