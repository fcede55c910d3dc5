//! The report's head: the artifact, the run's facts (spec, times, qualify version, machine), the
//! claim with its verdict and reasons, and the interrupted-run warning.

use std::fmt::Write;

use crate::text::esc;
use crate::view::View;

pub(super) fn header(h: &mut String, v: &View) {
    let _ = write!(
        h,
        "<h1>qualify report: {}</h1>\n<p class=\"meta\">",
        esc(&v.artifact())
    );
    h.push_str(&meta(v).join(" · "));
    h.push_str("</p>\n");
    if let Some(sig) = v.signature() {
        let cls = match sig {
            crate::view::Signature::Verified { .. } => "yes",
            crate::view::Signature::NotChecked { .. } => "no",
            crate::view::Signature::Unsigned => "unknown",
        };
        let _ = writeln!(
            h,
            "<p class=\"meta\"><span class=\"verdict {cls}\">{}</span></p>",
            esc(&sig.line())
        );
    }
    let level = v.claim_level();
    let (cls, word) = match v.supported() {
        Some(true) => ("yes", "SUPPORTED"),
        Some(false) => ("no", "NOT SUPPORTED"),
        None => ("unknown", "NO VERDICT"),
    };
    let _ = writeln!(
        h,
        "<p>Claim: <b>{}</b> &nbsp;<span class=\"verdict {cls}\">{} claim {word}</span></p>",
        esc(&level),
        esc(&level)
    );
    let reasons = v.reasons();
    if !reasons.is_empty() {
        h.push_str("<ul>");
        for r in reasons {
            let _ = write!(h, "<li>{}</li>", esc(&r));
        }
        h.push_str("</ul>\n");
    }
    if v.incomplete() {
        h.push_str(
            "<p class=\"warn\">This receipt is from an interrupted run: only what finished counts \
             as evidence.</p>\n",
        );
    }
}

/// The run's facts the receipt records, as escaped HTML fragments.
fn meta(v: &View) -> Vec<String> {
    let mut meta = Vec::new();
    let spec = v.spec_path();
    if !spec.is_empty() {
        meta.push(format!("spec <code>{}</code>", esc(&spec)));
    }
    let (a, b) = (v.run_field("started"), v.run_field("finished"));
    if !a.is_empty() {
        meta.push(format!("run {} – {}", esc(&a), esc(&b)));
    }
    let ver = v.run_field("qualify_version");
    if !ver.is_empty() {
        meta.push(format!("qualify {}", esc(&ver)));
    }
    if let Some(m) = v.machine() {
        meta.push(format!(
            "machine {} ({} cores allowed, backend {})",
            esc(&m.hostname),
            esc(&m.cores_allowed),
            esc(&m.backend)
        ));
    }
    meta
}
