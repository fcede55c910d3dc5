//! Stage 3: the functional check (`[functional] command`, and its JUnit counts when the spec
//! names a report), then the held-out checks. Decides whether the operating region is probed:
//! not after an interruption, and not after a failed functional check unless `--keep-going`.

use qualify_evidence as ev;
use qualify_probe::Outcome;
use qualify_service::SpecProbes;

use super::Context;
use super::build::Built;
use super::prepare::Prepared;
use crate::error::Error;

/// The functional and held-out results, and what happens next.
pub struct Checked {
    pub functional: ev::FunctionalRun,
    pub holdout: ev::HoldoutRun,
    pub next: Next,
}

/// Whether the operating region is probed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    Probe,
    /// qualify was interrupted before the region (during the build, the functional check, the
    /// held-out checks, or between them).
    SkipInterrupted,
    /// The functional check failed and `--keep-going` was not given.
    SkipFunctionalFailed,
}

pub fn run(ctx: &Context<'_>, prepared: &Prepared, built: Built) -> Result<Checked, Error> {
    let functional = functional(ctx, built)?;
    let interrupted_early = built == Built::Interrupted
        || matches!(&functional, ev::FunctionalRun::Ran(rec) if rec.result.outcome == Outcome::Interrupted);
    let holdout = prepared
        .held_out
        .run(ctx, interrupted_early || ctx.cancelled());
    let next = if interrupted_early || ctx.cancelled() {
        ctx.say("interrupted before the operating region was probed");
        Next::SkipInterrupted
    } else if !passed(&functional) && !ctx.args.keep_going {
        ctx.say(
            "functional layer failed: no operational probing (pass --keep-going to probe anyway)",
        );
        Next::SkipFunctionalFailed
    } else {
        Next::Probe
    };
    Ok(Checked {
        functional,
        holdout,
        next,
    })
}

fn functional(ctx: &Context<'_>, built: Built) -> Result<ev::FunctionalRun, Error> {
    let Some(f) = &ctx.spec.functional else {
        return Ok(ev::FunctionalRun::NotDeclared);
    };
    if built == Built::Interrupted {
        return Ok(ev::FunctionalRun::NotRun {
            reason: "the run was interrupted during the build step".into(),
        });
    }
    ctx.say(&format!("functional: {}", f.command));
    let mut probe = ctx.spec.command_probe(
        f.command.argv().into_iter().map(Into::into).collect(),
        ctx.args.backend,
    );
    // The check writes through a private layer like every cell; its JUnit report is read from
    // there before the layer goes.
    let layer = if probe.sandbox.private_workdir.wanted() {
        let l = qualify_probe::sandbox::layer::WorkdirLayer::create()?;
        probe.sandbox.private_workdir =
            qualify_probe::sandbox::PrivateWorkdir::Shared(std::sync::Arc::clone(&l));
        Some(l)
    } else {
        None
    };
    let result = qualify_probe::probe(&probe, ctx.cancel)?;
    let junit = match &f.junit {
        Some(path) if result.outcome != Outcome::Interrupted => {
            let workdir = &ctx.spec.artifact.workdir;
            let written = match (&layer, path.strip_prefix(workdir)) {
                (Some(l), Ok(rel)) => l.file(workdir, rel),
                _ => Some(path.clone()),
            };
            Some(super::junit_counts::read_as(
                path,
                written.as_deref().unwrap_or(path),
            )?)
        }
        _ => None,
    };
    Ok(ev::FunctionalRun::Ran(Box::new(ev::FunctionalRecord {
        command: f.command.to_string(),
        result,
        junit,
    })))
}

/// The functional check passed (or there was none to pass).
fn passed(functional: &ev::FunctionalRun) -> bool {
    match functional {
        ev::FunctionalRun::Ran(rec) => {
            rec.result.outcome == Outcome::Ok
                && rec.junit.is_none_or(|j| j.failures == 0 && j.errors == 0)
        }
        _ => true,
    }
}
