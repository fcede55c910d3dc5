//! Stage 5: what the receipt says about the region: its cells (the controls first, marked), the
//! boundary searches' results, whether the run is incomplete, and — with `[performance]` — the
//! analysis `qualify-perf` makes of every cell's measurements ([`crate::measure::measure`]):
//! statistics, models, scaling, checks, predictions at the target and the `--baseline`
//! comparison.

use std::collections::BTreeMap;
use std::path::Path;

use qualify_evidence as ev;
use qualify_perf as perf;
use qualify_plan as plan;
use qualify_probe::Outcome;
use qualify_spec::Spec;

use super::Context;
use super::checks::{Checked, Next};
use super::prepare::Prepared;
use super::region::Region;
use crate::error::Error;

/// The region as the receipt states it.
pub struct Analysed {
    pub cells: Vec<ev::Cell>,
    pub boundaries: Vec<plan::Boundary>,
    pub performance: Option<perf::Performance>,
    /// The run was interrupted: whatever did not finish is not closed.
    pub incomplete: bool,
}

pub fn analyse(
    ctx: &Context<'_>,
    prepared: &Prepared,
    checked: &Checked,
    region: &Region,
) -> Analysed {
    let execution = region.execution.as_ref();
    let mut cells = prepared.regressions.cells();
    cells.extend(execution.into_iter().flat_map(|x| {
        x.cells.iter().map(|c| {
            ev::Cell::new(
                c.params.clone(),
                c.result.clone(),
                c.role.is_boundary_probe(),
            )
        })
    }));
    let boundaries = execution.map(|x| x.boundaries.clone()).unwrap_or_default();
    let incomplete = ctx.cancelled()
        || checked.next == Next::SkipInterrupted
        || execution.is_some_and(|x| !x.complete || x.cancelled);
    Analysed {
        cells,
        boundaries,
        performance: performance(
            ctx.spec,
            execution,
            region.rounds.clone(),
            prepared.baseline.clone(),
        ),
        incomplete,
    }
}

/// A previous receipt's performance section, read for `--baseline`.
pub fn load_baseline(path: Option<&Path>) -> Result<Option<perf::BaselineInput>, Error> {
    let Some(path) = path else {
        return Ok(None);
    };
    let fix = "give the path of a receipt written by `qualify run`";
    let text = std::fs::read_to_string(path).map_err(|e| {
        Error::input(
            format!(
                "--baseline {}: cannot read the receipt: {e}",
                path.display()
            ),
            fix,
        )
    })?;
    let json: serde_json::Value = qualify_model::json::from_str(&text).map_err(|e| {
        Error::input(
            format!("--baseline {}: not a JSON receipt ({e})", path.display()),
            fix,
        )
    })?;
    let performance = json
        .pointer("/predicate/performance")
        .filter(|p| p.is_object())
        .cloned()
        .ok_or_else(|| {
            Error::input_only(format!(
                "--baseline {}: the receipt has no predicate.performance; it was written by a run without [performance]",
                path.display()
            ))
        })?;
    Ok(Some(perf::BaselineInput {
        receipt: ev::sha256_hex(text.as_bytes()),
        performance,
    }))
}

/// The performance analysis of an execution and its rounds, when the spec has `[performance]`.
fn performance(
    spec: &Spec,
    execution: Option<&plan::Execution>,
    rounds: Option<perf::Rounds>,
    baseline: Option<perf::BaselineInput>,
) -> Option<perf::Performance> {
    let p = spec.performance.as_ref()?;
    let mut metrics: Vec<perf::MetricDef> = qualify_spec::BUILTIN_METRICS
        .iter()
        .map(|(name, unit)| perf::MetricDef {
            name: (*name).to_string(),
            unit: Some((*unit).to_string()),
            better: perf::Better::Lower,
            estimator: p.estimator_of(name),
        })
        .collect();
    if spec.service.is_some() {
        // A service cell's load report: throughput, latencies, error and dropped rates.
        metrics.extend(
            qualify_spec::SERVICE_METRICS
                .iter()
                .map(|(name, unit, better)| perf::MetricDef {
                    name: (*name).to_string(),
                    unit: Some((*unit).to_string()),
                    better: *better,
                    estimator: p.estimator_of(name),
                }),
        );
    }
    metrics.extend(p.metrics.iter().map(|m| perf::MetricDef {
        name: m.name.clone(),
        unit: m.unit.clone(),
        better: m.better,
        estimator: p.estimator_of(&m.name),
    }));
    let cells = execution
        .map(|x| {
            x.cells
                .iter()
                .filter(|c| c.result.outcome != Outcome::Interrupted)
                .map(|c| {
                    let (samples, errors) = crate::measure::measure(spec, &c.result);
                    perf::CellInput {
                        params: c.params.clone(),
                        samples,
                        errors,
                    }
                })
                .collect()
        })
        .unwrap_or_default();
    let input = perf::Input {
        repeat: p.repeat,
        warmup: usize::try_from(p.warmup).unwrap_or(usize::MAX),
        regression: p.regression,
        metrics,
        axes: spec
            .axes
            .iter()
            .map(|a| perf::AxisInput {
                name: a.name.clone(),
                kind: a.kind,
            })
            .collect(),
        cells,
        expects: p.expects.clone(),
        references: p.references.clone(),
        target_concurrency: spec.target.as_ref().and_then(|t| t.cores).map(|c| c as f64),
        target_workload: BTreeMap::new(),
        baseline,
        rounds,
    };
    Some(perf::analyze(&input))
}
