//! Stage 1: everything `qualify run` checks and loads before it runs anything, so a bad flag
//! never wastes a run: the signing key (`--sign`), the baseline receipt (`--baseline`), the
//! held-out checks (`--holdout` / `QUALIFY_HOLDOUT`), the process layer's inputs (`--trace`,
//! `--since`), and the ledger with this artifact's regressions (`--ledger`, `--no-ledger`), verified
//! first (a ledger that does not hold is refused, naming the row). Every error here is a
//! usage/setup error (exit 2).

use qualify_evidence as ev;
use qualify_ledger::Ledger;
use qualify_perf::BaselineInput;
use qualify_trust::PrivateKey;

use super::Context;
use super::holdout::HeldOut;
use super::regressions::Regressions;
use crate::error::Error;

/// What the flags named, loaded and checked.
pub struct Prepared {
    pub signing_key: Option<PrivateKey>,
    pub baseline: Option<BaselineInput>,
    pub held_out: HeldOut,
    pub process: ev::ProcessRecord,
    /// `None` with `--no-ledger`.
    pub ledger: Option<Ledger>,
    /// The ledger's regressions for this artifact, each with its result once run.
    pub regressions: Regressions,
    /// `predicate.sandbox`: the sandbox's self-test (filled after it ran).
    pub sandbox: Option<ev::SandboxRecord>,
    /// What never reaches a stored text: secret values, held-out checks' content.
    pub redactor: qualify_trust::redact::Redactor,
}

pub fn prepare(ctx: &Context<'_>) -> Result<Prepared, Error> {
    let args = ctx.args;
    let signing_key = super::signing::load_key(args.sign.as_deref())?;
    let baseline = super::analysis::load_baseline(args.baseline.as_deref())?;
    let (mut redactor, problems) = qualify_trust::redact::Redactor::from_env(
        std::env::vars_os().map(|(k, v)| {
            (
                k.to_string_lossy().into_owned(),
                v.to_string_lossy().into_owned(),
            )
        }),
        &args.secret,
    );
    for p in problems {
        eprintln!("qualify: warning: {p}");
    }
    let held_out = HeldOut::discover(ctx.spec, args.holdout.as_deref())?;
    held_out.redact(&mut redactor);
    let process = ev::ProcessRecord {
        trace: super::process_inputs::load_trace(ctx.spec, &args.trace, args.trace_format)?,
        git: args
            .since
            .as_deref()
            .map(|rev| super::process_inputs::git_summary(&ctx.spec.artifact.workdir, rev))
            .transpose()?,
    };
    let (ledger, regressions) = if args.no_ledger {
        (None, Regressions::default())
    } else {
        let ledger = Ledger::open_verified(&args.ledger).map_err(|e| match e {
            qualify_ledger::LedgerError::Broken { .. } => {
                Error::input(e.to_string(), qualify_ledger::BROKEN_FIX)
            }
            other => Error::input(
                other.to_string(),
                "pass --ledger PATH to use another, or --no-ledger",
            ),
        })?;
        let regressions = Regressions::load(ctx, &ledger)?;
        (Some(ledger), regressions)
    };
    Ok(Prepared {
        signing_key,
        baseline,
        held_out,
        process,
        ledger,
        regressions,
        sandbox: None,
        redactor,
    })
}
