//! Predictions at the target from the fitted models: along concurrency axes from USL (else
//! Amdahl) beyond the measured range, along workload axes from the workload model. Recorded as
//! predictions with a note, never as evidence.

use super::{Input, Model, Prediction, Scaling};
use crate::scaling::{self, Better};

/// Every prediction at the target: concurrency first (per scaling), then workload (per model).
pub(super) fn predictions(
    input: &Input,
    scalings: &[Scaling],
    models: &[Model],
) -> Vec<Prediction> {
    let note = "model prediction, not evidence".to_string();
    let mut out = Vec::new();
    if let Some(c) = input.target_concurrency {
        for s in scalings {
            let (Some(base), Some(max_p)) = (s.points.first(), s.points.last().map(|p| p.p)) else {
                continue;
            };
            if c <= max_p {
                continue;
            }
            let better = input
                .metrics
                .iter()
                .find(|m| m.name == s.metric)
                .map_or(Better::Lower, |m| m.better);
            let (name, speedup) = match (&s.usl, &s.amdahl) {
                (Some(u), _) => ("usl", u.speedup(c)),
                (None, Some(a)) => ("amdahl", a.speedup(c)),
                _ => continue,
            };
            out.push(Prediction {
                axis: s.axis.clone(),
                at: c,
                metric: s.metric.clone(),
                fixed: s.fixed.clone(),
                value: scaling::value_at(base.p, base.value, speedup, better),
                model: name.to_string(),
                note: note.clone(),
            });
        }
    }
    for m in models {
        if let Some(&at) = input.target_workload.get(&m.axis) {
            out.push(Prediction {
                axis: m.axis.clone(),
                at,
                metric: m.metric.clone(),
                fixed: m.fixed.clone(),
                value: m.fit.predict(at),
                model: m.fit.form.clone(),
                note: note.clone(),
            });
        }
    }
    out
}
