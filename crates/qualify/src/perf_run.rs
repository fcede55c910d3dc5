//! `[performance]` in `qualify run`: each cell runs `warmup` discarded probes then `repeat`
//! measured ones ([`probe_cell`]); after the plan, every run's metrics are extracted (wall,
//! cpu = user + system, peak_memory, and the spec's regex figures from stdout — a figure that
//! does not parse is an error in the cell, never a zero), runs that timed out or were killed are
//! censored ("≥ value"), and `qualify-perf` computes statistics, models, scaling, checks,
//! predictions at the target and the `--baseline` comparison ([`analyze`]). Also owns the
//! short performance summary printed after the layer table ([`summary`]).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use qualify_evidence as ev;
use qualify_perf::{self as perf, Better, Sample};
use qualify_plan as plan;
use qualify_probe::{CancelToken, Outcome, ProbeError, ProbeResult, ProbeSpec};
use qualify_spec::{AxisKind, AxisValue, ExpectRule, Spec};

/// Probe one cell: without `[performance]` a single run; with it, `warmup` runs whose results
/// are discarded (a warmup that does not end `ok` is the cell's result: repeating a failure
/// only costs time), then `repeat` runs combined into one result with `runs`.
pub fn probe_cell(
    spec: &Spec,
    probe_spec: &ProbeSpec,
    cancel: &CancelToken,
) -> Result<ProbeResult, ProbeError> {
    let Some(p) = &spec.performance else {
        return qualify_probe::probe(probe_spec, cancel);
    };
    for _ in 0..p.warmup {
        let r = qualify_probe::probe(probe_spec, cancel)?;
        if r.outcome != Outcome::Ok {
            return Ok(r);
        }
    }
    let repeat = usize::try_from(p.repeat).unwrap_or(usize::MAX);
    let mut r = qualify_probe::probe_repeated(probe_spec, repeat, cancel, |_, _| {})?;
    if r.runs.is_none() {
        r.runs = Some(vec![r.clone()]);
    }
    Ok(r)
}

/// A previous receipt's performance section, read for `--baseline`.
pub fn load_baseline(path: Option<&Path>) -> Result<Option<perf::BaselineInput>, String> {
    let Some(path) = path else {
        return Ok(None);
    };
    let text = std::fs::read_to_string(path).map_err(|e| {
        format!(
            "--baseline {}: cannot read the receipt: {e}; give the path of a receipt written by `qualify run`",
            path.display()
        )
    })?;
    let json: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
        format!(
            "--baseline {}: not a JSON receipt ({e}); give the path of a receipt written by `qualify run`",
            path.display()
        )
    })?;
    let performance = json
        .pointer("/predicate/performance")
        .filter(|p| p.is_object())
        .cloned()
        .ok_or_else(|| {
            format!(
                "--baseline {}: the receipt has no predicate.performance; it was written by a run without [performance]",
                path.display()
            )
        })?;
    Ok(Some(perf::BaselineInput {
        receipt: ev::sha256_hex(text.as_bytes()),
        performance,
    }))
}

fn json_value(v: &plan::Value) -> serde_json::Value {
    match v {
        plan::Value::Int(i) => serde_json::json!(i),
        plan::Value::Float(f) => serde_json::json!(f),
        plan::Value::Text(s) => serde_json::json!(s),
    }
}

fn axis_json(v: &AxisValue) -> serde_json::Value {
    match v {
        AxisValue::Int(i) => serde_json::json!(i),
        AxisValue::Float(f) => serde_json::json!(f),
        AxisValue::Str(s) => serde_json::json!(s),
    }
}

/// Whether a run that ended this way is a censored observation (it would have taken at least
/// this long): stopped by the deadline, a signal, the memory ceiling or a stall.
fn censored(outcome: Outcome) -> bool {
    matches!(
        outcome,
        Outcome::Timeout
            | Outcome::Killed
            | Outcome::OomKilled
            | Outcome::Deadlock
            | Outcome::Livelock
    )
}

/// The samples and errors of one cell.
fn measure(spec: &Spec, result: &ProbeResult) -> (BTreeMap<String, Vec<Sample>>, Vec<String>) {
    let mut samples: BTreeMap<String, Vec<Sample>> = BTreeMap::new();
    let mut errors: Vec<String> = Vec::new();
    let single = [result.clone()];
    let runs: &[ProbeResult] = result.runs.as_deref().unwrap_or(&single);
    let metrics = spec
        .performance
        .as_ref()
        .map(|p| p.metrics.as_slice())
        .unwrap_or(&[]);
    let mut note = |message: String| {
        if !errors.contains(&message) {
            errors.push(message);
        }
    };
    for (i, run) in runs.iter().enumerate() {
        let cpu = run.user_seconds + run.system_seconds;
        let mut push = |name: &str, s: Sample| samples.entry(name.to_string()).or_default().push(s);
        if run.outcome == Outcome::Ok {
            push("wall", Sample::measured(run.wall_seconds));
            push("cpu", Sample::measured(cpu));
            match run.peak_memory_bytes {
                Some(b) => push("peak_memory", Sample::measured(b as f64)),
                None => note("peak_memory: not measured on this backend".to_string()),
            }
            for m in metrics {
                match m.extract(&run.stdout_tail) {
                    Ok(v) => push(&m.name, Sample::measured(v)),
                    Err(e) => note(format!("run {}: {e}", i + 1)),
                }
            }
        } else if censored(run.outcome) {
            push("wall", Sample::at_least(run.wall_seconds));
            push("cpu", Sample::at_least(cpu));
            if let Some(b) = run.peak_memory_bytes {
                push("peak_memory", Sample::at_least(b as f64));
            }
        } else if run.outcome != Outcome::Interrupted {
            note(format!(
                "run {} ended {}: no measurement ({})",
                i + 1,
                run.outcome,
                run.detail
            ));
        }
    }
    (samples, errors)
}

/// The performance analysis of an execution, when the spec has `[performance]`.
pub fn analyze(
    spec: &Spec,
    execution: Option<&plan::Execution>,
    baseline: Option<perf::BaselineInput>,
) -> Option<perf::Performance> {
    let p = spec.performance.as_ref()?;
    let better = |b: qualify_spec::Better| match b {
        qualify_spec::Better::Higher => Better::Higher,
        qualify_spec::Better::Lower => Better::Lower,
    };
    let mut metrics: Vec<perf::MetricDef> = qualify_spec::BUILTIN_METRICS
        .iter()
        .map(|(name, unit)| perf::MetricDef {
            name: (*name).to_string(),
            unit: Some((*unit).to_string()),
            better: Better::Lower,
        })
        .collect();
    metrics.extend(p.metrics.iter().map(|m| perf::MetricDef {
        name: m.name.clone(),
        unit: m.unit.clone(),
        better: better(m.better),
    }));
    let cells = execution
        .map(|x| {
            x.cells
                .iter()
                .filter(|c| c.result.outcome != Outcome::Interrupted)
                .map(|c| {
                    let (samples, errors) = measure(spec, &c.result);
                    perf::CellInput {
                        params: c
                            .params
                            .iter()
                            .map(|(k, v)| (k.to_string(), json_value(v)))
                            .collect(),
                        samples,
                        errors,
                    }
                })
                .collect()
        })
        .unwrap_or_default();
    let input = perf::Input {
        repeat: usize::try_from(p.repeat).unwrap_or(usize::MAX),
        warmup: usize::try_from(p.warmup).unwrap_or(usize::MAX),
        regression: p.regression,
        metrics,
        axes: spec
            .axes
            .iter()
            .map(|a| perf::AxisInput {
                name: a.name.clone(),
                role: match a.kind {
                    AxisKind::Workload => perf::AxisRole::Workload,
                    AxisKind::Concurrency => perf::AxisRole::Concurrency,
                    _ => perf::AxisRole::Other,
                },
            })
            .collect(),
        cells,
        expects: p
            .expects
            .iter()
            .map(|e| perf::Expect {
                axis: e.axis.clone(),
                metric: e.metric.clone(),
                kind: match e.rule {
                    ExpectRule::MaxExponent(x) => perf::ExpectKind::MaxExponent(x),
                    ExpectRule::MinEfficiency(x) => perf::ExpectKind::MinEfficiency(x),
                },
            })
            .collect(),
        references: p
            .references
            .iter()
            .map(|r| perf::Reference {
                params: r
                    .params
                    .iter()
                    .map(|(k, v)| (k.clone(), axis_json(v)))
                    .collect(),
                metric: r.metric.clone(),
                reference: r.reference,
                lower: r.lower,
                upper: r.upper,
            })
            .collect(),
        target_concurrency: spec.target.as_ref().and_then(|t| t.cores).map(|c| c as f64),
        target_workload: BTreeMap::new(),
        baseline,
    };
    Some(perf::analyze(&input))
}

fn fixed(m: &serde_json::Map<String, serde_json::Value>) -> String {
    if m.is_empty() {
        return String::new();
    }
    let parts: Vec<String> = m.iter().map(|(k, v)| format!("{k}={v}")).collect();
    format!(" [{}]", parts.join(","))
}

/// A few lines for the run's output: models, scaling, checks, predictions, censoring, errors.
pub fn summary(p: &perf::Performance) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "performance: {} measured run(s) per cell after {} warmup, {} metric(s)",
        p.repeat,
        p.warmup,
        p.metrics.len()
    );
    for m in &p.models {
        let _ = writeln!(
            out,
            "  model    {} along {}{}: {} (exponent {:.2}, 95% CI [{:.2}, {:.2}], cv error {:.1}%)",
            m.metric,
            m.axis,
            fixed(&m.fixed),
            m.fit.form,
            m.fit.exponent,
            m.exponent_ci95[0],
            m.exponent_ci95[1],
            m.fit.error * 100.0
        );
    }
    // One line per axis and reason: a single-valued axis leaves every group unfitted alike.
    let mut reasons: Vec<(&str, &str, usize)> = Vec::new();
    for u in &p.unfitted {
        match reasons
            .iter_mut()
            .find(|(a, r, _)| *a == u.axis && *r == u.reason)
        {
            Some(entry) => entry.2 += 1,
            None => reasons.push((&u.axis, &u.reason, 1)),
        }
    }
    for (axis, reason, count) in reasons {
        let _ = writeln!(
            out,
            "  no model along {axis} ({count} metric/group pair(s)): {reason}"
        );
    }
    for s in &p.scaling {
        let effs: Vec<String> = s
            .points
            .iter()
            .map(|pt| format!("{}:{:.2}", pt.p, pt.efficiency))
            .collect();
        let usl = s.usl.as_ref().map_or(String::new(), |u| {
            format!(
                ", USL σ={:.3} κ={:.4}{}",
                u.sigma,
                u.kappa,
                u.peak_concurrency
                    .map_or(String::new(), |p| format!(" peak≈{p:.0}"))
            )
        });
        let amdahl = s.amdahl.as_ref().map_or(String::new(), |a| {
            format!(", Amdahl serial {:.3}", a.serial_fraction)
        });
        let _ = writeln!(
            out,
            "  scaling  {} along {}{}: efficiency {}{amdahl}{usl}",
            s.metric,
            s.axis,
            fixed(&s.fixed),
            effs.join(" ")
        );
    }
    for c in &p.checks {
        let verdict = match c.verdict {
            perf::Verdict::Held => "held",
            perf::Verdict::Violated => "VIOLATED",
            perf::Verdict::Inconclusive => "inconclusive",
        };
        let _ = writeln!(out, "  check    {} {verdict}: {}", c.kind, c.detail);
    }
    for pr in &p.predictions {
        let _ = writeln!(
            out,
            "  predict  {} at {}={}{}: {:.4} ({}; {})",
            pr.metric,
            pr.axis,
            pr.at,
            fixed(&pr.fixed),
            pr.value,
            pr.model,
            pr.note
        );
    }
    let censored: Vec<&perf::analyze::CellStats> =
        p.stats.iter().filter(|s| s.stats.censored > 0).collect();
    if !censored.is_empty() {
        let runs: usize = censored
            .iter()
            .filter(|s| s.metric == "wall")
            .map(|s| s.stats.censored)
            .sum();
        let _ = writeln!(
            out,
            "  censored {runs} run(s) did not finish (timeout/killed): reported as ≥ their time, left out of models"
        );
    }
    if let Some(first) = p.errors.first() {
        let _ = writeln!(
            out,
            "  errors   {} measurement error(s); first{}: {}",
            p.errors.len(),
            fixed(&first.params),
            first.message
        );
    }
    if let Some(b) = &p.baseline {
        let significant = b.changes.iter().filter(|c| c.significant).count();
        let _ = writeln!(
            out,
            "  baseline {} shared cell/metric pair(s), {significant} significant change(s)",
            b.changes.len()
        );
    }
    out
}
