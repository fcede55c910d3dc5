//! The process layer: how the artifact was developed, from a development record (`--trace`:
//! agent sessions read by `qualify-trace`) and the git history of its workdir (`--since REV`),
//! and what development exercised of the operating region against what qualify examined and
//! where the envelope failed ([`DevelopmentCoverage`]).
//!
//! Every result is three-valued — passed, failed, not recorded — and every sentence says which:
//! a format that records no exit status gives "2 test runs, results not recorded", never "0
//! failed". An attempt that never started the artifact (not found, not executable, a `cd`
//! before it failed) is reported as an attempt, never as a run, and gives no coverage.
//!
//! `closed` only when earned: the trace was interpreted (every entry of every file of a known
//! kind, nothing cut or unreadable, its tool calls read), the artifact's runs in it were
//! executed with known results (every one of them, and most of the test, build and artifact
//! runs' results recorded), and development coverage could be stated (axis values recovered,
//! or the spec has no axes). Otherwise `partial`, each missing piece said in `untested`; git
//! history alone is `partial`; `not_run` with neither. It supports what development
//! exercised; it is never evidence of fitness for deployment.

use serde::{Deserialize, Serialize};
use serde_json::{Value as Json, json};

use super::{Layer, LayerName, LayerStatus};
use crate::record::{Cell, ParamValue, RunRecord};

use crate::record::{DevRecord, GitSummary};

/// Whether `path` looks like a test file.
pub fn is_test_path(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    let in_test_dir = path
        .split('/')
        .rev()
        .skip(1)
        .any(|d| matches!(d, "tests" | "test" | "__tests__" | "spec"));
    let stem = name.split('.').next().unwrap_or(name);
    in_test_dir
        || stem.ends_with("_test")
        || stem.ends_with("_tests")
        || stem.ends_with("_spec")
        || (name.starts_with("test_") && name.ends_with(".py"))
        || name.contains(".test.")
        || name.contains(".spec.")
}

/// One axis: the values development ran, the values qualify examined, where cells failed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AxisComparison {
    pub axis: String,
    /// The axis appears in the command template (else no recorded command can show it).
    pub in_template: bool,
    /// Values development ran the artifact with.
    pub development: Vec<ParamValue>,
    /// Values of the completed cells.
    pub examined: Vec<ParamValue>,
    /// Values of the completed cells that did not end ok.
    pub failed: Vec<ParamValue>,
    /// Examined values development never ran.
    pub examined_only: Vec<ParamValue>,
}

/// Development coverage of the operating region beside the envelope.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DevelopmentCoverage {
    pub axes: Vec<AxisComparison>,
    /// Completed cells that did not end ok.
    pub failing_cells: u64,
    /// … on a value of some axis that development never ran: outside what development
    /// exercised.
    pub outside: u64,
    /// … whose every axis value development ran.
    pub inside: u64,
    /// … that cannot be placed: development's values of one of their axes are not known.
    pub unknown: u64,
    /// One sentence: what development ran, and where the failures lie relative to it.
    pub sentence: String,
}

fn same(a: &ParamValue, b: &ParamValue) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

fn contains(values: &[ParamValue], v: &ParamValue) -> bool {
    values.iter().any(|x| same(x, v))
}

fn push(values: &mut Vec<ParamValue>, v: &ParamValue) {
    if !contains(values, v) {
        values.push(v.clone());
        qualify_trace::coverage::sort_values(values);
    }
}

fn list(values: &[ParamValue]) -> String {
    values
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Where a cell lies relative to what development ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    Outside,
    Inside,
    Unknown,
}

fn place(cell: &Cell, axes: &[AxisComparison]) -> Place {
    let mut unknown = false;
    for (name, v) in cell.params.iter() {
        let Some(a) = axes.iter().find(|a| a.axis == *name) else {
            continue;
        };
        if a.development.is_empty() {
            unknown = true;
        } else if !contains(&a.development, v) {
            return Place::Outside;
        }
    }
    if unknown {
        Place::Unknown
    } else {
        Place::Inside
    }
}

/// Compare the trace's development coverage with the completed cells; `None` without a trace.
pub fn development(record: &RunRecord) -> Option<DevelopmentCoverage> {
    let trace = record.process.trace.as_ref()?;
    let cells: Vec<&Cell> = record.cells.iter().filter(|c| c.completed()).collect();
    let mut axes: Vec<AxisComparison> = record
        .axes
        .iter()
        .map(|decl| {
            let dev = trace.coverage.axes.iter().find(|a| a.axis == decl.name);
            let mut a = AxisComparison {
                axis: decl.name.clone(),
                in_template: dev.is_some_and(|d| d.in_template),
                development: dev.map(|d| d.values.clone()).unwrap_or_default(),
                examined: Vec::new(),
                failed: Vec::new(),
                examined_only: Vec::new(),
            };
            for c in &cells {
                if let Some(v) = c.params.get(&decl.name) {
                    push(&mut a.examined, v);
                    if !c.passed() {
                        push(&mut a.failed, v);
                    }
                }
            }
            a.examined_only = a
                .examined
                .iter()
                .filter(|v| !contains(&a.development, v))
                .cloned()
                .collect();
            a
        })
        .collect();
    axes.retain(|a| !a.examined.is_empty() || !a.development.is_empty());
    let failing: Vec<&Cell> = cells.iter().copied().filter(|c| !c.passed()).collect();
    let places: Vec<Place> = failing.iter().map(|c| place(c, &axes)).collect();
    let count = |p: Place| places.iter().filter(|x| **x == p).count() as u64;
    let (outside, inside, unknown) = (
        count(Place::Outside),
        count(Place::Inside),
        count(Place::Unknown),
    );
    let sentence = sentence(trace, &axes, &failing, &places, cells.len());
    Some(DevelopmentCoverage {
        axes,
        failing_cells: failing.len() as u64,
        outside,
        inside,
        unknown,
        sentence,
    })
}

/// `command not found ×1, No such file or directory ×2`.
fn attempts_text(c: &qualify_trace::Coverage) -> String {
    c.attempts
        .iter()
        .map(|(why, n)| format!("{why} ×{n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `only threads = 1 and rounds = 10` / `threads = 1, 2; n = 256; mode (never set …)`.
fn ran_text(axes: &[AxisComparison]) -> String {
    let parts: Vec<String> = axes
        .iter()
        .map(|a| match a.development.len() {
            0 if !a.in_template => format!(
                "{} (not in the command template, so not recoverable)",
                a.axis
            ),
            0 => format!(
                "{} (never set: its default is not known to qualify)",
                a.axis
            ),
            _ => format!("{} = {}", a.axis, list(&a.development)),
        })
        .collect();
    if !axes.is_empty() && axes.iter().all(|a| a.development.len() == 1) {
        let joined = match parts.len() {
            1 => parts[0].clone(),
            n => format!("{} and {}", parts[..n - 1].join(", "), parts[n - 1]),
        };
        return format!("only {joined}");
    }
    parts.join("; ")
}

/// `deadlock at threads ≥ 2`: the outcomes, and the axis that separates the failures from
/// what development ran (`≥` when every examined value from the first failing one failed).
fn failure_text(failing: &[&Cell], axes: &[AxisComparison]) -> String {
    let mut outcomes: Vec<String> = Vec::new();
    for c in failing {
        let o = c.result.outcome.as_str().to_string();
        if !outcomes.contains(&o) {
            outcomes.push(o);
        }
    }
    let separating = axes.iter().find(|a| {
        !a.development.is_empty()
            && failing.iter().all(|c| {
                c.params
                    .get(&a.axis)
                    .is_some_and(|v| !contains(&a.development, v))
            })
    });
    let at = separating.map(|a| {
        let failed: Vec<&ParamValue> = a
            .failed
            .iter()
            .filter(|v| !contains(&a.development, v))
            .collect();
        let min = failed.first().and_then(|v| v.as_f64());
        let from_min = min.is_some_and(|m| {
            a.examined
                .iter()
                .filter(|v| v.as_f64().is_some_and(|x| x >= m))
                .all(|v| contains(&a.failed, v))
        });
        match (failed.len(), from_min) {
            (n, true) if n > 1 => format!(" at {} ≥ {}", a.axis, failed[0]),
            _ => format!(
                " at {} = {}",
                a.axis,
                failed
                    .iter()
                    .map(|v| v.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    });
    format!("{}{}", outcomes.join("/"), at.unwrap_or_default())
}

fn sentence(
    trace: &DevRecord,
    axes: &[AxisComparison],
    failing: &[&Cell],
    places: &[Place],
    completed: usize,
) -> String {
    let c = &trace.coverage;
    let artifact = c.artifact.as_deref().unwrap_or("the artifact");
    if c.artifact_runs == 0 {
        let why = c
            .unmatchable
            .as_deref()
            .map(|u| format!(" ({u})"))
            .unwrap_or_default();
        let mut also = Vec::new();
        if c.attempts_total() > 0 {
            also.push(format!(
                "{} attempt(s) to run it never started: {}",
                c.attempts_total(),
                attempts_text(c)
            ));
        }
        if c.conditional_runs > 0 {
            also.push(format!(
                "{} run(s) inside branches the trace cannot tell were taken, not counted",
                c.conditional_runs
            ));
        }
        let also = if also.is_empty() {
            String::new()
        } else {
            format!("; {}", also.join("; "))
        };
        return format!(
            "no recorded command ran `{artifact}`{why}: what development exercised of the operating region is not known ({} command(s) counted, none matched{also})",
            c.unmatched_commands
        );
    }
    let ran = if axes.is_empty() {
        format!("development ran `{artifact}` {} time(s)", c.artifact_runs)
    } else {
        format!("development ran {}", ran_text(axes))
    };
    if failing.is_empty() {
        return format!("{ran}; no completed cell failed ({completed} completed)");
    }
    let n = failing.len();
    let count = |p: Place| places.iter().filter(|x| **x == p).count();
    let (outside, inside, unknown) = (
        count(Place::Outside),
        count(Place::Inside),
        count(Place::Unknown),
    );
    let what = failure_text(failing, axes);
    if outside == n {
        return format!(
            "{ran}; the envelope's {n} failure(s) ({what}) lie outside anything development exercised"
        );
    }
    let mut parts = Vec::new();
    if inside > 0 {
        let cells: Vec<&Cell> = failing
            .iter()
            .zip(places)
            .filter(|(_, p)| **p == Place::Inside)
            .map(|(c, _)| *c)
            .collect();
        parts.push(format!(
            "{inside} lie inside what development exercised ({}) — development ran there and did not see it fail, or its tests did not check it",
            cells.iter().take(4).map(|c| c.label()).collect::<Vec<_>>().join("; ")
        ));
    }
    if outside > 0 {
        parts.push(format!(
            "{outside} lie outside anything development exercised"
        ));
    }
    if unknown > 0 {
        parts.push(format!(
            "{unknown} cannot be placed (development's values of an axis they vary are not known)"
        ));
    }
    format!(
        "{ran}; of the envelope's {n} failure(s) ({what}), {}",
        parts.join("; ")
    )
}

/// Assess the process layer.
pub fn assess(record: &RunRecord) -> Layer {
    let process = &record.process;
    let git_text = |g: &GitSummary| {
        format!(
            "git {}..{}: {} commit(s), {} file(s) changed, {} test file(s) added or changed",
            g.since,
            g.head,
            g.commits,
            g.files_changed,
            g.test_files_changed.len()
        )
    };
    let coverage = development(record);
    let evidence = json!({ "trace": process.trace, "git": process.git, "coverage": coverage });
    let layer = |status,
                 summary: String,
                 untested: Vec<String>,
                 evidence: Json,
                 supports: Option<String>| {
        let mut l = Layer::new(LayerName::Process, status, summary, untested, evidence);
        if let Some(s) = supports {
            l.supports = s;
        }
        l
    };
    let (t, dev) = match (&process.trace, coverage) {
        (Some(t), Some(dev)) => (t, dev),
        _ => {
            return match &process.git {
                None => layer(
                    LayerStatus::NotRun,
                    "no development trace or history was recorded for this run".to_string(),
                    vec!["how the artifact was planned, tested, debugged and refined".to_string()],
                    json!({}),
                    None,
                ),
                Some(g) => layer(
                    LayerStatus::Partial,
                    format!("{} (no development trace was recorded)", git_text(g)),
                    vec![
                        "the development trace (commands, test runs, repairs, what development ran of the operating region)"
                            .to_string(),
                    ],
                    evidence,
                    Some(format!(
                        "the commit history since {}: {} commit(s), {} test file(s) added or changed",
                        g.since,
                        g.commits,
                        g.test_files_changed.len()
                    )),
                ),
            };
        }
    };
    let formats: Vec<&str> = t.formats().iter().map(|f| f.as_str()).collect();
    let mut summary = format!(
        "trace read: {} file(s) ({}), {} entries, {:.0}% understood; {} command(s): {}, {}, {}; {} repair(s) after {} error(s)",
        t.sources.len(),
        formats.join(", "),
        t.events,
        t.understood_percent().floor(),
        t.commands_total,
        t.runs.test.describe("test run", "test runs"),
        t.runs.build.describe("build", "builds"),
        t.runs
            .artifact
            .describe("run of the artifact", "runs of the artifact"),
        t.repairs.len(),
        t.errors,
    );
    if let Some(s) = t.span_seconds {
        summary.push_str(&format!(" over {s:.0}s"));
    }
    let not_sessions = t
        .skipped
        .iter()
        .filter(|f| f.reason == qualify_trace::record::SkipReason::NotATrace)
        .count();
    if not_sessions > 0 {
        summary.push_str(&format!(
            "; {not_sessions} file(s) in the trace's directories are no session (skipped)"
        ));
    }
    if t.unreadable() > 0 {
        summary.push_str(&format!("; {} file(s) unreadable", t.unreadable()));
    }
    summary.push_str(&format!("; {}", dev.sentence));
    if let Some(g) = &process.git {
        summary.push_str("; ");
        summary.push_str(&git_text(g));
    }

    let mut untested = Vec::new();
    if !t.read_in_full() {
        let kinds: std::collections::BTreeMap<&str, u64> = t
            .sources
            .iter()
            .flat_map(|s| s.unknown.iter().map(|(k, n)| (k.as_str(), *n)))
            .fold(Default::default(), |mut m, (k, n)| {
                *m.entry(k).or_default() += n;
                m
            });
        untested.push(format!(
            "{} of {} trace entries were of kinds not understood (counted only: {}): the trace was read in part",
            t.events - t.understood,
            t.events,
            kinds.iter().map(|(k, n)| format!("{k} ×{n}")).collect::<Vec<_>>().join(", ")
        ));
    }
    let unreadable: Vec<String> = t
        .skipped
        .iter()
        .filter(|f| f.reason == qualify_trace::record::SkipReason::Unreadable)
        .map(|f| format!("{} ({})", f.path, f.message))
        .collect();
    if !unreadable.is_empty() {
        untested.push(format!(
            "{} trace file(s) could not be read and are not in the record: {}",
            unreadable.len(),
            unreadable.join("; ")
        ));
    }
    for (path, cut) in t.cut() {
        untested.push(format!(
            "{path} was still being written: its last entry (line {}, {} bytes) was incomplete and not read",
            cut.line, cut.bytes
        ));
    }
    if t.tool_calls == 0 {
        untested.push(
            "the trace records no tool call: no command, test run or edit could be read"
                .to_string(),
        );
    }
    let (known, classified) = t.results_known();
    if known < classified {
        let why = if t.formats().iter().all(|f| !f.records_results()) {
            format!("{} records no exit status", formats.join(", "))
        } else {
            "the command's status was not its own (a pipeline's earlier stage, before `;` or `||`) or was never recorded".to_string()
        };
        untested.push(format!(
            "the results of {} of {} test, build and artifact run(s): {why}",
            classified - known,
            classified
        ));
    }
    if t.coverage.attempts_total() > 0 {
        untested.push(format!(
            "{} attempt(s) to run `{}` never started ({}): attempts are not runs, and no coverage comes from them",
            t.coverage.attempts_total(),
            t.coverage.artifact.as_deref().unwrap_or("the artifact"),
            attempts_text(&t.coverage)
        ));
    }
    if t.coverage.conditional_runs > 0 {
        untested.push(format!(
            "{} run(s) of the artifact inside branches (`if`, `case`, `while`, after `||`) the trace cannot tell were taken: not counted",
            t.coverage.conditional_runs
        ));
    }
    if t.edits_unconfirmed > 0 {
        untested.push(format!(
            "{} edit(s) whose result the trace does not hold: not known to have landed",
            t.edits_unconfirmed
        ));
    }
    if t.unparsed_commands > 0 {
        untested.push(format!(
            "{} command line(s) a shell would refuse (unterminated quotes, syntax errors): they ran nothing",
            t.unparsed_commands
        ));
    }
    let c = &t.coverage;
    let stated = c.artifact_runs > 0 && (record.axes.is_empty() || c.runs_with_values > 0);
    if c.artifact_runs == 0 {
        untested.push(format!(
            "what development exercised of the operating region: {}",
            dev.sentence
        ));
    } else if !stated {
        untested.push(format!(
            "which axis values development ran: {} run(s) of the artifact set none of {}",
            c.artifact_runs,
            record
                .axes
                .iter()
                .map(|a| a.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    for a in &dev.axes {
        if !a.examined_only.is_empty() && !a.development.is_empty() {
            untested.push(format!(
                "development never ran {} = {} (examined only by qualify)",
                a.axis,
                list(&a.examined_only)
            ));
        }
    }
    if t.untimed > 0 && t.untimed == t.events {
        untested.push(
            "the trace has no timestamps: durations and order in time are not known".to_string(),
        );
    }

    let mut exercised = Vec::new();
    if c.artifact_runs > 0 {
        let results = if c.runs_unknown == c.artifact_runs {
            ", results not recorded".to_string()
        } else if c.runs_unknown > 0 {
            format!(
                ", {} passed, {} failed, {} not recorded",
                c.runs_passed, c.runs_failed, c.runs_unknown
            )
        } else {
            format!(", {} passed, {} failed", c.runs_passed, c.runs_failed)
        };
        exercised.push(format!(
            "development ran the artifact {} time(s){results}{}",
            c.artifact_runs,
            if dev.axes.iter().any(|a| !a.development.is_empty()) {
                format!(" ({})", ran_text(&dev.axes))
            } else {
                String::new()
            }
        ));
    }
    if t.runs.test.runs > 0 {
        let r = &t.runs.test;
        let results = if r.unknown == r.runs {
            "results not recorded".to_string()
        } else if r.unknown > 0 {
            format!(
                "{} passed, {} failed, {} not recorded",
                r.passed, r.failed, r.unknown
            )
        } else {
            format!("{} passed, {} failed", r.passed, r.failed)
        };
        exercised.push(format!(
            "tests were run {} time(s) during development ({results})",
            r.runs
        ));
    }
    if !t.repairs.is_empty() {
        exercised.push(format!(
            "{} repair(s) were made after errors",
            t.repairs.len()
        ));
    }
    if exercised.is_empty() {
        exercised.push(
            "the recorded development steps (no run of the artifact, no test run, no repair)"
                .into(),
        );
    }
    // Closed only when earned: everything read, the artifact's runs executed with known
    // results, most results recorded, coverage stated.
    let interpreted = t.read_in_full() && t.tool_calls > 0 && t.cut().is_empty();
    let all_read = unreadable.is_empty();
    let runs_known = c.artifact_runs > 0 && c.runs_unknown == 0;
    let mostly_known = 2 * known >= classified;
    let status = if interpreted && all_read && runs_known && mostly_known && stated {
        LayerStatus::Closed
    } else {
        LayerStatus::Partial
    };
    layer(
        status,
        summary,
        untested,
        evidence,
        Some(exercised.join("; ")),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_paths() {
        for p in [
            "tests/a.rs",
            "src/foo_test.go",
            "test_x.py",
            "a/b.test.ts",
            "x/spec/y.rb",
        ] {
            assert!(is_test_path(p), "{p}");
        }
        for p in ["src/main.rs", "testing.md", "contest.py", "latest/x.c"] {
            assert!(!is_test_path(p), "{p}");
        }
    }
}
