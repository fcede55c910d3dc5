//! Regressions: every failure the ledger recorded for this artifact (its "controls", the
//! ledger's stored word), re-run first through the same [`Cells`] as the plan's cells and
//! kept in the receipt marked `control: true`. Not a service's `none` controls
//! (`qualify_service::Controls`).

use qualify_evidence as ev;
use qualify_ledger::Ledger;
use qualify_plan::Params;
use qualify_probe::{Outcome, ProbeResult};
use qualify_spec::Spec;

use crate::Context;
use crate::cells::Cells;
use crate::error::Error;

/// The artifact's controls, in the ledger's order, each with its result once run.
#[derive(Default)]
pub struct Regressions(Vec<(Params, Option<ProbeResult>)>);

impl Regressions {
    /// This artifact's controls whose axes are exactly the spec's (the others are skipped: the
    /// spec changed since they failed). Says how many will run and how many were skipped.
    pub fn load(ctx: &Context<'_>, ledger: &Ledger) -> Result<Regressions, Error> {
        let stored = ledger
            .regressions(Some(&ctx.spec.artifact.name))
            .map_err(|e| Error::input_only(e.to_string()))?;
        let mut controls = Vec::new();
        let mut skipped = 0;
        for c in &stored {
            match params(ctx.spec, &c.params) {
                Some(p) => controls.push((p, None)),
                None => skipped += 1,
            }
        }
        if !controls.is_empty() {
            ctx.say(&format!(
                "ledger: {} control(s) from earlier failures will run first",
                controls.len()
            ));
        }
        if skipped > 0 {
            ctx.say(&format!(
                "ledger: {skipped} control(s) skipped: their parameters no longer match the spec's axes"
            ));
        }
        Ok(Regressions(controls))
    }

    /// Run each control through `cells`, before the plan's cells.
    pub fn run(&mut self, cells: &Cells<'_>, bar: &dyn crate::Progress) {
        for (params, slot) in self.0.iter_mut() {
            if cells.cancelled() {
                break;
            }
            bar.set_message(format!("control {params}"));
            let result = cells.regression(params);
            if result.outcome != Outcome::Ok {
                bar.println(format!(
                    "  control {params}: {} — {} (an earlier failure, again)",
                    result.outcome, result.detail
                ));
            }
            *slot = Some(result);
        }
    }

    /// The controls that ran, as receipt cells marked `control: true`.
    pub fn cells(&self) -> Vec<ev::Cell> {
        self.0
            .iter()
            .filter_map(|(p, r)| {
                let mut cell = ev::Cell::new(p.clone(), r.clone()?, false);
                cell.control = true;
                Some(cell)
            })
            .collect()
    }
}

/// A stored control's parameters in the spec's axis order; `None` when its axes are not exactly
/// the spec's.
fn params(spec: &Spec, stored: &serde_json::Value) -> Option<Params> {
    let stored: Params = serde_json::from_value(stored.clone()).ok()?;
    if stored.len() != spec.axes.len() {
        return None;
    }
    spec.axes
        .iter()
        .map(|axis| Some((axis.name.clone(), stored.get(&axis.name)?.clone())))
        .collect()
}
