//! Stage 2: the spec's `[artifact] build` command, once, as a probe under the spec's limits. A
//! build that does not end `ok` stops the run (exit 2) with its last stderr lines; one that was
//! interrupted leaves the rest of the run to record an incomplete receipt.

use qualify_probe::Outcome;
use qualify_service::SpecProbes;

use super::Context;
use crate::error::Error;

/// How the build stage ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Built {
    /// Built, or nothing to build.
    Ready,
    /// qualify was interrupted during the build.
    Interrupted,
}

pub fn build(ctx: &Context<'_>) -> Result<Built, Error> {
    let Some(build) = &ctx.spec.artifact.build else {
        return Ok(Built::Ready);
    };
    ctx.say(&format!("building: {build}"));
    let mut probe = ctx.spec.command_probe(
        build.argv().into_iter().map(Into::into).collect(),
        ctx.args.backend,
    );
    // The build is the user's own tool chain (network, caches in $HOME): it runs outside the
    // sandbox (the cell's init still holds its tree); what it builds runs inside.
    probe.sandbox = qualify_probe::Sandbox::off();
    let r = qualify_probe::probe(&probe, ctx.cancel)?;
    match r.outcome {
        Outcome::Ok => Ok(Built::Ready),
        Outcome::Interrupted => Ok(Built::Interrupted),
        _ => Err(Error::Build {
            command: build.to_string(),
            outcome: r.outcome.to_string(),
            detail: r.detail,
            tail: last_lines(&r.stderr_tail, 10),
        }),
    }
}

/// The last `n` lines of `text`, each indented as `  | line`.
pub fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.trim_end().lines().collect();
    lines[lines.len().saturating_sub(n)..]
        .iter()
        .map(|l| format!("  | {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}
