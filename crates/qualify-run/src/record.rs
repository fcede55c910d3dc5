//! Stage 7: the written receipt appended to the ledger (unless `--no-ledger`): one transaction,
//! hash-chained to the previous receipt; its failing cells become controls for later runs.

use super::Context;
use super::prepare::Prepared;
use super::seal::Sealed;
use crate::error::Error;

pub fn record(ctx: &Context<'_>, prepared: &mut Prepared, sealed: &Sealed) -> Result<(), Error> {
    let Some(ledger) = prepared.ledger.as_mut() else {
        return Ok(());
    };
    let done = ledger.append(&sealed.text).map_err(|e| {
        Error::output(
            format!("the receipt was written but not recorded in the ledger: {e}"),
            Some("rerun with --no-ledger to skip the ledger"),
        )
    })?;
    ctx.say(&format!(
        "ledger: recorded receipt {} in {} ({} new control(s))",
        &done.digest[..12],
        ledger.path().display(),
        done.new_controls
    ));
    Ok(())
}
