//! The admission checklist every receipt answers (see DESIGN.md), derived only from what the
//! run recorded: the claim; facts that exist only in the target; what the probes examined versus
//! what remains assumed; what the artifact did on timeout, resource exhaustion and partial
//! failure; and which of artifact, spec, tools, environment and measurements can be traced.

use qualify_model::{Flag, Outcome, Strength, format_bytes};
use serde::{Deserialize, Serialize};

use std::collections::BTreeMap;

use crate::claim::ClaimLevel;
use crate::claimed::ClaimedAxis;
use crate::faults::{self, FaultRecord};
use crate::gap::Gap;
use crate::record::{Boundary, Cell, FunctionalRun, RunRecord, opt_param_text, sorted_by_name};
use crate::region::{DimensionCoverage, Tested};

/// Answers to the admission questions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Checklist {
    /// Which claim is being made.
    pub claim: String,
    /// Which load, concurrency, dependency and resource facts exist only in the target.
    pub target_only_facts: Vec<String>,
    /// Which facts the executed probes examined.
    pub examined_facts: Vec<String>,
    /// Which facts remain assumptions.
    pub assumptions: Vec<String>,
    /// What the artifact did on timeout, resource exhaustion and partial failure.
    pub failure_behaviour: FailureBehaviour,
    /// Whether model, tools, prompts, dependencies, hardware, artifact and measurements can be
    /// traced.
    pub traceability: Vec<TraceItem>,
}

/// Observed behaviour under the three failure modes the checklist asks about.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailureBehaviour {
    pub timeout: String,
    pub resource_exhaustion: String,
    pub partial_failure: String,
}

/// One traceability question and its answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceItem {
    /// `artifact`, `spec`, `tools`, `environment`, `hardware`, `dependencies`,
    /// `model_and_prompts`, `measurements`.
    pub item: String,
    pub recorded: bool,
    pub detail: String,
}

/// Answer the checklist for `record`.
pub fn answer(
    record: &RunRecord,
    tested: &Tested,
    dimensions: &[DimensionCoverage],
    gaps: &[Gap],
    claimed: &[ClaimedAxis],
) -> Checklist {
    Checklist {
        claim: claim(record.claim),
        target_only_facts: target_only(dimensions, gaps),
        examined_facts: examined(record, tested, claimed),
        assumptions: assumptions(record, tested, gaps),
        failure_behaviour: failure_behaviour(record),
        traceability: traceability(record, tested),
    }
}

fn claim(level: ClaimLevel) -> String {
    format!("{level}: {}", level.meaning())
}

fn target_only(dimensions: &[DimensionCoverage], gaps: &[Gap]) -> Vec<String> {
    let mut out: Vec<String> = gaps
        .iter()
        .map(|g| {
            let waived = match &g.waiver {
                Some(reason) => format!(" (waived: {reason})"),
                None => String::new(),
            };
            format!("{}: {}{waived}", g.qualified_name(), g.detail)
        })
        .collect();
    out.extend(
        dimensions
            .iter()
            .filter(|d| !d.examined)
            .map(|d| format!("{}: {} ({})", d.dimension, d.detail, d.material_because)),
    );
    if !dimensions
        .iter()
        .any(|d| d.dimension == crate::record::Dimension::Dependencies)
    {
        out.push(
            "dependencies: latency, outages, resets and restarts of dependencies were not probed"
                .to_string(),
        );
    }
    out
}

fn examined(record: &RunRecord, tested: &Tested, claimed: &[ClaimedAxis]) -> Vec<String> {
    let mut out = Vec::new();
    if let FunctionalRun::Ran(f) = &record.functional {
        let junit = match f.junit {
            Some(j) => format!(
                "; junit: {} tests, {} failures, {} errors, {} skipped",
                j.tests, j.failures, j.errors, j.skipped
            ),
            None => String::new(),
        };
        out.push(format!(
            "functional: `{}` ended {}{junit}",
            f.command, f.result.outcome
        ));
    }
    for axis in tested.axes.iter().filter(|a| !a.values.is_empty()) {
        out.push(format!(
            "{} axis {} in {} completed cell(s)",
            axis.kind.as_str(),
            axis.describe(),
            axis.cells
        ));
    }
    for d in tested.dependencies.iter().filter(|d| !d.faults.is_empty()) {
        out.push(format!(
            "faults on dependency {}: {} in {} completed cell(s)",
            d.name,
            d.faults.join(", "),
            d.cells
        ));
    }
    for (signal, n) in crate::faults::restarts(record) {
        out.push(format!(
            "{signal} and restart of the service under load in {n} completed cell(s)"
        ));
    }
    if !tested.memory_ceilings.is_empty() {
        let list: Vec<String> = tested
            .memory_ceilings
            .iter()
            .map(|b| format_bytes(*b))
            .collect();
        out.push(format!("memory ceiling(s): {}", list.join(", ")));
    }
    if !tested.timeouts_seconds.is_empty() {
        let list: Vec<String> = tested
            .timeouts_seconds
            .iter()
            .map(|s| format!("{s} s"))
            .collect();
        out.push(format!("timeout(s): {}", list.join(", ")));
    }
    for b in &record.boundaries {
        out.push(format!("boundary: {}", boundary_text(b)));
    }
    if let Some(dev) = crate::layers::process::development(record) {
        let per_axis: Vec<String> = dev
            .axes
            .iter()
            .map(|a| {
                let vals = |v: &[crate::record::ParamValue]| {
                    if v.is_empty() {
                        "none".to_string()
                    } else {
                        v.iter()
                            .map(ToString::to_string)
                            .collect::<Vec<_>>()
                            .join(", ")
                    }
                };
                format!(
                    "{}: development {}, qualify {}, failed at {}",
                    a.axis,
                    vals(&a.development),
                    vals(&a.examined),
                    vals(&a.failed)
                )
            })
            .collect();
        let axes = if per_axis.is_empty() {
            String::new()
        } else {
            format!(" ({})", per_axis.join("; "))
        };
        out.push(format!("development (trace): {}{axes}", dev.sentence));
    }
    for c in claimed.iter().filter(|c| c.bound.is_some()) {
        out.push(format!("claimed region: {}", c.claims));
        if let Some(h) = &c.headroom {
            let required = c
                .required_headroom
                .map(|r| format!(" (required: {r}×)"))
                .unwrap_or_default();
            out.push(format!("headroom: {}{required}", h.describe(&c.axis)));
        }
    }
    out.push(format!(
        "machine: {} with {} core(s) allowed of {} online, {}, enforcement backend {}",
        if tested.hostname.is_empty() {
            "(unnamed host)"
        } else {
            &tested.hostname
        },
        tested.cores_allowed.unwrap_or(tested.cores_online),
        tested.cores_online,
        tested
            .memory_bytes
            .map(|m| format!("{} memory", format_bytes(m)))
            .unwrap_or_else(|| "memory unknown".to_string()),
        tested.backend
    ));
    out
}

fn boundary_text(b: &Boundary) -> String {
    let fixed = sorted_by_name(&b.fixed);
    let fixed = if fixed.is_empty() {
        String::new()
    } else {
        let parts: Vec<String> = fixed
            .iter()
            .map(|(k, v)| format!("{k}={}", v.receipt_text()))
            .collect();
        format!(" with {}", parts.join(", "))
    };
    format!(
        "{}{fixed}: last pass {}, first fail {} ({}), {} probe(s)",
        b.axis,
        opt_param_text(b.last_pass.as_ref()),
        opt_param_text(b.first_fail.as_ref()),
        b.outcome.map_or("null", |o| o.as_str()),
        b.probes
    )
}

fn assumptions(record: &RunRecord, tested: &Tested, gaps: &[Gap]) -> Vec<String> {
    let mut out = Vec::new();
    if tested.cells_completed > 0 {
        out.push(
            "behaviour between and beyond the examined values is assumed, not observed".to_string(),
        );
    }
    for b in &record.boundaries {
        let axis = &b.axis;
        let check = match b.monotonic {
            Some(true) => "held in the extra probe beyond the boundary",
            Some(false) => "VIOLATED in the extra probe beyond the boundary",
            None => "not checked",
        };
        out.push(format!(
            "failure is monotonic in `{axis}` (boundary search); {check}"
        ));
    }
    for g in gaps {
        let status = match &g.waiver {
            Some(reason) => format!("waived: {reason}"),
            None => "not waived".to_string(),
        };
        out.push(format!(
            "the target's {} behaves as examined here, though {} ({status})",
            g.qualified_name(),
            g.detail
        ));
    }
    let watchdog_only = record.cells.iter().any(|c| {
        c.result.limits.memory_bytes.is_some() && c.result.enforcement.memory != Strength::Kernel
    });
    if watchdog_only {
        out.push(
            "memory ceilings were not kernel-enforced in every cell: a fast allocation can overshoot between samples"
                .to_string(),
        );
    }
    if matches!(record.functional, FunctionalRun::NotDeclared) {
        out.push("results are correct: no functional check was declared".to_string());
    }
    out
}

fn count(cells: &[&Cell], pred: impl Fn(&Cell) -> bool) -> usize {
    cells.iter().filter(|c| pred(c)).count()
}

fn failure_behaviour(record: &RunRecord) -> FailureBehaviour {
    let cells: Vec<&Cell> = record.cells.iter().filter(|c| c.completed()).collect();
    let n = cells.len();
    if n == 0 {
        let none = "not observed: no cell completed".to_string();
        return FailureBehaviour {
            timeout: none.clone(),
            resource_exhaustion: none.clone(),
            partial_failure: none,
        };
    }
    let of = |o: Outcome| count(&cells, |c| c.result.outcome == o);
    let flagged = |f: Flag| count(&cells, |c| c.result.has_flag(f));

    let (timeouts, deadlocks, livelocks) = (
        of(Outcome::Timeout),
        of(Outcome::Deadlock),
        of(Outcome::Livelock),
    );
    let mut capacity = crate::load::capacity_sentences(record, &cells);
    // What the services did to their own processes belongs to the same rows.
    let children = crate::load::children_sentences(&cells);
    capacity.timeout.extend(children.timeout);
    capacity
        .resource_exhaustion
        .extend(children.resource_exhaustion);
    let largest = capacity
        .largest
        .as_deref()
        .map(|l| format!(" (up to {l})"))
        .unwrap_or_default();
    let timeout = if timeouts + deadlocks + livelocks == 0 {
        if capacity.cells == 0 {
            format!(
                "no cell reached its deadline or stalled ({n} completed cells); behaviour on timeout not observed"
            )
        } else if capacity.timeout.is_empty() {
            format!(
                "no cell reached its deadline or stalled ({n} completed cells) and under load no request ran past its timeout{largest}; behaviour on timeout not observed"
            )
        } else {
            format!(
                "no cell reached its deadline or stalled ({n} completed cells); under load: {}",
                listed(&capacity.timeout, LOAD_SOURCE)
            )
        }
    } else {
        let mut parts = Vec::new();
        if timeouts > 0 {
            let mut kinds: Vec<&str> = cells
                .iter()
                .filter(|c| c.result.outcome == Outcome::Timeout)
                .filter_map(|c| c.result.timeout_kind.map(|k| k.as_str()))
                .collect();
            kinds.sort_unstable();
            kinds.dedup();
            let kinds = if kinds.is_empty() {
                String::new()
            } else {
                format!(" ({})", kinds.join(", "))
            };
            parts.push(format!("{timeouts} cell(s) ran past the deadline{kinds}"));
        }
        if deadlocks > 0 {
            parts.push(format!("{deadlocks} cell(s) deadlocked"));
        }
        if livelocks > 0 {
            parts.push(format!("{livelocks} cell(s) livelocked"));
        }
        format!(
            "{} (of {n} cells); the artifact did not stop on its own: qualify killed the process tree{}",
            parts.join(", "),
            under_load(&capacity.timeout)
        )
    };

    let ooms = of(Outcome::OomKilled);
    let runtime_ooms = of(Outcome::OutOfMemory);
    let pressure = flagged(Flag::MemoryPressure);
    let pids = flagged(Flag::PidsLimitHit);
    let throttled = flagged(Flag::CpuThrottled);
    let resource_exhaustion = if ooms + runtime_ooms + pressure + pids + throttled == 0 {
        if capacity.cells == 0 {
            "no cell reached a resource ceiling; behaviour under exhaustion not observed"
                .to_string()
        } else if capacity.resource_exhaustion.is_empty() {
            format!(
                "no cell reached a resource ceiling and every offered load was served{largest}; behaviour under exhaustion not observed"
            )
        } else {
            format!(
                "no cell reached a resource ceiling; under load: {}",
                listed(&capacity.resource_exhaustion, LOAD_SOURCE)
            )
        }
    } else {
        let mut parts = Vec::new();
        if ooms > 0 {
            parts.push(format!(
                "{ooms} cell(s) were killed at the memory ceiling (did not degrade or shed load)"
            ));
        }
        if runtime_ooms > 0 {
            parts.push(format!(
                "{runtime_ooms} cell(s) ran out of memory as their runtime reported it (its own limit or a refused allocation; the limit in evidence.runtime_report)"
            ));
        }
        if pressure > 0 {
            parts.push(format!(
                "{pressure} cell(s) ran under memory pressure without being killed"
            ));
        }
        if pids > 0 {
            parts.push(format!("{pids} cell(s) hit the process/thread limit"));
        }
        if throttled > 0 {
            parts.push(format!("{throttled} cell(s) were CPU-throttled"));
        }
        format!(
            "{} (of {n} cells){}",
            parts.join("; "),
            under_load(&capacity.resource_exhaustion)
        )
    };

    let exits = of(Outcome::ExitFailure);
    let crashes = of(Outcome::Crash);
    let killed = of(Outcome::Killed);
    let leaked = flagged(Flag::LeakedProcesses);
    let leaked_threads = flagged(Flag::LeakedThreads);
    let mut parts = Vec::new();
    if exits > 0 {
        parts.push(format!(
            "{exits} cell(s) stopped with a non-zero exit status"
        ));
    }
    if crashes > 0 {
        parts.push(format!("{crashes} cell(s) crashed"));
    }
    if killed > 0 {
        parts.push(format!(
            "{killed} cell(s) were killed by a signal from outside"
        ));
    }
    if leaked > 0 {
        parts.push(format!(
            "{leaked} cell(s) left processes behind that qualify had to kill"
        ));
    }
    if leaked_threads > 0 {
        parts.push(format!(
            "{leaked_threads} cell(s) exited with goroutines or threads still blocked (leaked_threads; where in evidence.leaks)"
        ));
    }
    let observed = match (parts.is_empty(), children.partial_failure.is_empty()) {
        (true, true) => "no partial failure observed".to_string(),
        (true, false) => format!(
            "no cell failed as a whole, but processes of the service did: {}",
            listed(&children.partial_failure, CHILDREN_SOURCE)
        ),
        (false, true) => format!("{} (of {n} cells)", parts.join("; ")),
        (false, false) => format!(
            "{} (of {n} cells); processes of the service failed too: {}",
            parts.join("; "),
            listed(&children.partial_failure, CHILDREN_SOURCE)
        ),
    };
    let faults = FaultSentences::of(record, &cells);
    let with = |text: String, sentences: &[String]| {
        if sentences.is_empty() {
            text
        } else {
            format!(
                "{text}; under dependency faults: {}",
                listed(sentences, FAULT_SOURCE)
            )
        }
    };
    let partial_failure = if !faults.partial_failure.is_empty() {
        format!(
            "{observed}; {}",
            listed(&faults.partial_failure, FAULT_SOURCE)
        )
    } else if faults.any {
        format!(
            "{observed}; no outage, reset or restart was injected: the faults only slowed dependencies down"
        )
    } else {
        format!(
            "{observed}; recovery, retry and reconciliation were not examined: no faults were injected"
        )
    };
    FailureBehaviour {
        timeout: with(timeout, &faults.timeout),
        resource_exhaustion: with(resource_exhaustion, &faults.resource_exhaustion),
        partial_failure,
    }
}

/// How many sentences a failure-behaviour row lists before `(+N more …)`.
const LISTED_SENTENCES: usize = 6;

/// Where the sentences a row leaves out are found.
const FAULT_SOURCE: &str = "the cells' result.faults";
const CHILDREN_SOURCE: &str = "the cells' result.children";
const LOAD_SOURCE: &str = "the cells' result.load";

/// `; under load: …` for the service cells' sentences, or nothing.
fn under_load(sentences: &[String]) -> String {
    if sentences.is_empty() {
        String::new()
    } else {
        format!("; under load: {}", listed(sentences, LOAD_SOURCE))
    }
}

fn listed(sentences: &[String], source: &str) -> String {
    let mut text = sentences
        .iter()
        .take(LISTED_SENTENCES)
        .cloned()
        .collect::<Vec<_>>()
        .join("; ");
    if sentences.len() > LISTED_SENTENCES {
        text.push_str(&format!(
            " (+{} more in {source})",
            sentences.len() - LISTED_SENTENCES
        ));
    }
    text
}

/// The completed cells' fault records as checklist sentences, per row they answer.
struct FaultSentences {
    /// Some completed cell put a fault other than `none` on a dependency, or restarted the
    /// service.
    any: bool,
    timeout: Vec<String>,
    resource_exhaustion: Vec<String>,
    partial_failure: Vec<String>,
}

impl FaultSentences {
    fn of(record: &RunRecord, cells: &[&Cell]) -> FaultSentences {
        let mut out = FaultSentences {
            any: false,
            timeout: Vec::new(),
            resource_exhaustion: Vec::new(),
            partial_failure: Vec::new(),
        };
        let per_cell: Vec<(&Cell, &[FaultRecord])> = cells
            .iter()
            .map(|c| (*c, faults::read(&c.result)))
            .filter(|(_, r)| !r.is_empty())
            .collect();
        // A fault named in several cells gets the cell's other parameters: `db down [rps=200]`.
        let mut seen: BTreeMap<String, usize> = BTreeMap::new();
        for (_, records) in &per_cell {
            for r in records.iter().filter(|r| r.injected()) {
                *seen.entry(r.subject()).or_default() += 1;
            }
        }
        let restart_cells = per_cell
            .iter()
            .filter(|(_, records)| records.iter().any(|r| r.restart_text().is_some()))
            .count();
        for (cell, records) in &per_cell {
            let label = faults::label_without_faults(cell, record);
            let at = |subject: String, n: usize| {
                if n > 1 && !label.is_empty() {
                    format!("{subject} [{label}]")
                } else {
                    subject
                }
            };
            for r in records.iter().filter(|r| r.injected()) {
                out.any = true;
                let rows = faults::rows(r);
                let subject = r.subject();
                let n = seen.get(&subject).copied().unwrap_or(1);
                let sentence = format!(
                    "{}: {}{}",
                    at(subject, n),
                    r.behaviour_text(),
                    r.expectation_text()
                );
                if rows.timeout {
                    out.timeout.push(sentence.clone());
                }
                if rows.resource_exhaustion {
                    out.resource_exhaustion.push(sentence.clone());
                }
                if rows.partial_failure {
                    out.partial_failure.push(sentence);
                }
            }
            // The restart and its write check are the cell's: stated once.
            let restarted = records
                .iter()
                .find(|r| r.restart.is_some() || r.writes.is_some());
            if let Some((r, text)) = restarted.and_then(|r| Some((r, r.restart_text()?))) {
                out.any = true;
                // A restart-only record's verdict is the restart's; a fault record's verdict
                // was stated with its fault.
                let verdict = if r.behaviour.verdict.is_empty() || r.injected() {
                    String::new()
                } else {
                    format!(" ({})", r.behaviour.verdict)
                };
                let prefix = if restart_cells > 1 && !label.is_empty() {
                    format!("[{label}] ")
                } else {
                    String::new()
                };
                out.partial_failure.push(format!("{prefix}{text}{verdict}"));
            }
        }
        out
    }
}

/// The development agent and the tools it called, from the trace.
fn agent_tools(t: &crate::record::DevRecord) -> String {
    let agents: Vec<String> = t
        .agents
        .iter()
        .map(|a| match &a.version {
            Some(v) => format!("{} {v}", a.name),
            None => a.name.clone(),
        })
        .collect();
    let mut tools: Vec<(&String, &u64)> = t.tools.iter().collect();
    tools.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    format!(
        "development agent (trace): {}; its tools: {}",
        if agents.is_empty() {
            "not named".to_string()
        } else {
            agents.join(", ")
        },
        if tools.is_empty() {
            "none recorded".to_string()
        } else {
            tools
                .iter()
                .map(|(k, n)| format!("{k} ×{n}"))
                .collect::<Vec<_>>()
                .join(", ")
        }
    )
}

/// Models named and prompts digested, from the trace; `no` with the reason.
fn model_and_prompts(record: &RunRecord) -> TraceItem {
    let item = |recorded: bool, detail: String| TraceItem {
        item: "model_and_prompts".to_string(),
        recorded,
        detail,
    };
    let Some(t) = &record.process.trace else {
        return item(
            false,
            "no development trace was supplied (--trace)".to_string(),
        );
    };
    let files: Vec<String> = t
        .sources
        .iter()
        .map(|s| format!("{} ({}) sha256:{}", s.path, s.format, s.sha256))
        .collect();
    let prompts = match t.prompts.len() {
        0 => "no prompt recorded".to_string(),
        n => format!("{n} prompt(s) kept as sha256 digests (text not kept)"),
    };
    if t.models.is_empty() {
        return item(
            false,
            format!(
                "the trace names no model; {prompts}; trace {}",
                files.join("; ")
            ),
        );
    }
    let models: Vec<String> = t
        .models
        .iter()
        .map(|m| format!("{} ({} call(s))", m.name, m.calls))
        .collect();
    item(
        true,
        format!(
            "models: {}; {prompts}; trace {}",
            models.join(", "),
            files.join("; ")
        ),
    )
}

/// Every row reads the record the receipt itself carries — the environment fingerprint, the
/// process trace, the cells — so no row can contradict the layers or the fingerprint.
fn traceability(record: &RunRecord, tested: &Tested) -> Vec<TraceItem> {
    let item = |item: &str, recorded: bool, detail: String| TraceItem {
        item: item.to_string(),
        recorded,
        detail,
    };
    let a = &record.artifact;
    let mut parts: Vec<String> = Vec::new();
    if let Some(e) = &a.executable {
        parts.push(format!("{} sha256:{}", e.path, e.sha256));
    }
    if let Some(t) = &a.tree {
        parts.push(format!(
            "workdir {}/ sha256:{} ({} {} file(s))",
            t.path.trim_end_matches('/'),
            t.sha256,
            t.files,
            if t.method == "git" {
                "git-tracked"
            } else {
                "regular"
            }
        ));
    }
    if let Some(i) = &a.interpreter {
        parts.push(format!(
            "run by the interpreter `{}`{} (a tool of the environment, not a subject)",
            i.command,
            i.path
                .as_deref()
                .map(|p| format!(" at {p}"))
                .unwrap_or_default()
        ));
    }
    let artifact = if a.executable.is_some() || a.tree.is_some() {
        item("artifact", true, parts.join("; "))
    } else {
        let mut detail = format!("no file of `{}` could be found and hashed", a.name);
        for p in parts {
            detail.push_str("; ");
            detail.push_str(&p);
        }
        item("artifact", false, detail)
    };
    let fp = record.environment.as_ref();
    let mut tools = match fp.map(|f| &f.tools) {
        Some(tools) if !tools.is_empty() => {
            let listed: Vec<String> = tools
                .iter()
                .map(|t| match &t.version {
                    Some(v) => format!("`{}`: {v}", t.command),
                    None => format!("`{}`: {}", t.command, t.status),
                })
                .collect();
            let all_ok = tools.iter().all(|t| t.version.is_some());
            item(
                "tools",
                all_ok,
                format!(
                    "qualify {}; {}{}",
                    record.qualify_version,
                    listed.join("; "),
                    if all_ok {
                        ""
                    } else {
                        " (a tool's version could not be read)"
                    }
                ),
            )
        }
        Some(_) => item(
            "tools",
            false,
            format!(
                "qualify {}; no toolchain command was fingerprinted (list them in [environment] tools)",
                record.qualify_version
            ),
        ),
        None => item(
            "tools",
            false,
            format!(
                "qualify {}; other toolchain versions are not recorded",
                record.qualify_version
            ),
        ),
    };
    if let Some(t) = &record.process.trace {
        tools.detail.push_str(&format!("; {}", agent_tools(t)));
    }
    let environment = match fp {
        Some(f) => item(
            "environment",
            true,
            format!(
                "{} (kernel {}), {}, cgroup {}, backend {}; {} environment variable(s) recorded, {} redacted{}",
                f.os.name.as_deref().unwrap_or("unknown OS"),
                f.os.kernel_release.as_deref().unwrap_or("unknown"),
                f.architecture,
                f.cgroup_version,
                f.backend,
                f.env.len(),
                f.redacted.len(),
                match &f.git {
                    Some(g) => format!(
                        "; git {}{}",
                        g.commit
                            .as_deref()
                            .map(|c| &c[..c.len().min(12)])
                            .unwrap_or("?"),
                        if g.dirty == Some(true) {
                            " (dirty)"
                        } else {
                            ""
                        }
                    ),
                    None => String::new(),
                }
            ),
        ),
        None => item(
            "environment",
            false,
            format!(
                "only host `{}` and enforcement backend `{}` are recorded; no OS, kernel or environment fingerprint",
                tested.hostname, tested.backend
            ),
        ),
    };
    let memory = tested
        .memory_bytes
        .map(|m| format!(", {}", format_bytes(m)))
        .unwrap_or_default();
    let hardware = match fp.and_then(|f| f.cpu_model.as_deref()) {
        Some(model) => item(
            "hardware",
            true,
            format!(
                "{model}; {} core(s) online, {} node(s){memory}",
                tested.cores_online, tested.nodes
            ),
        ),
        None => item(
            "hardware",
            false,
            format!(
                "{} core(s) online, {} node(s){memory}; CPU model not recorded",
                tested.cores_online, tested.nodes
            ),
        ),
    };
    let dependencies = match fp.map(|f| &f.lockfiles) {
        Some(locks) if !locks.is_empty() => item(
            "dependencies",
            true,
            locks
                .iter()
                .map(|l| format!("{} sha256:{}", l.path, l.sha256))
                .collect::<Vec<_>>()
                .join("; "),
        ),
        Some(_) => item(
            "dependencies",
            false,
            "no lockfile was found in the artifact's workdir: dependency versions are not pinned by this receipt".to_string(),
        ),
        None => item(
            "dependencies",
            false,
            "dependency versions and lockfile digests are not recorded".to_string(),
        ),
    };
    let model = model_and_prompts(record);
    let cells = record.cells.len();
    vec![
        artifact,
        item(
            "spec",
            true,
            format!("{} sha256:{}", record.spec.path, record.spec.sha256),
        ),
        tools,
        environment,
        hardware,
        dependencies,
        model,
        item(
            "measurements",
            cells > 0,
            format!("{cells} cell result(s) with stdout digests are kept in this receipt"),
        ),
    ]
}
