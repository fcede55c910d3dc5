//! The rules that make one verdict of many nodes.
//!
//! While the launcher runs, [`live`] says whether to stop the cell:
//! - a node whose agent has answered before and then stays silent for
//!   [`Settings::node_timeout`] is lost ([`Stop::NodeLost`]): the cluster failed, not the artifact;
//! - every node of the allocation answered, every node with processes of the job is stuck, and
//!   the ranks alive across the nodes make up every rank of their worlds ([`Stop::Deadlock`]);
//! - some ranks are gone and every rank left is stuck, waiting for them ([`Stop::Abandoned`]);
//! - the launcher goes on for a stall window after an agent killed a process at the memory
//!   ceiling ([`Stop::AfterMemoryKill`]).
//!
//! When the launcher has ended (by itself or stopped), [`finish`] decides the cell's outcome, in
//! this order: qualify interrupted → `interrupted`; a node lost → `interrupted` (unless an agent
//! had already killed a rank for its memory: the artifact failed first); every rank stuck →
//! `deadlock`; otherwise the first artifact failure in time — a memory kill by an agent
//! (`oom_killed`), a task the launcher reports killed by a crash signal (`crash`), a task that
//! exited non-zero (`exit_failure`), a step daemon's memory kill (`oom_killed`) — naming the
//! node and rank; ranks left stuck after one ended with no word on how → `deadlock`, naming the
//! rank that ended; else the launcher's own result, a timeout's kind refined by the nodes'
//! states. The result carries `evidence.nodes`: the allocation, the placement (ranks per node,
//! from the ranks' own scheduler environment), every agent's summary and cost.
//!
//! Invariants: `deadlock` needs an answer from every node of the allocation and every rank of
//! every world alive and stuck; a lost node never yields an artifact verdict other than an
//! earlier memory kill; signals the launcher sends after a failure (`SIGKILL`, `SIGTERM`) are
//! consequences, never causes.

use std::collections::{BTreeMap, BTreeSet};

use qualify_model::{Outcome, ProbeResult, Strength, TimeoutKind, format_bytes};
use serde::Serialize;
use serde_json::{Value, json};

use crate::launcher::{self, How, TaskEnd};
use crate::report::{AgentReport, NodeStatus};

/// Per-node entries named in a one-line explanation before `…`.
const NAMED: usize = 8;

/// Thresholds of the live rules.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settings {
    /// A node whose report has not changed for this long (seconds) has stopped answering.
    pub node_timeout: f64,
    /// The stall window (seconds): how long the launcher may go on after a memory kill.
    pub stall: f64,
}

/// One node of the allocation as the coordinator sees it.
#[derive(Debug, Clone, Copy)]
pub struct NodeView<'a> {
    pub node: &'a str,
    /// Its agent's latest report, if any arrived.
    pub report: Option<&'a AgentReport>,
    /// Coordinator seconds when the report last changed (`None`: never reported).
    pub heard_at: Option<f64>,
    /// Coordinator seconds when a memory kill first appeared in the report.
    pub kill_seen_at: Option<f64>,
}

/// A rank on a node and what it was doing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RankLine {
    pub node: String,
    pub rank: u32,
    pub what: String,
}

/// Why the coordinator stopped the launcher.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "stop", rename_all = "snake_case")]
pub enum Stop {
    /// Every rank of every world on every node stuck.
    Deadlock {
        ranks: Vec<RankLine>,
        /// The shortest time any node had been still when it was judged stuck.
        still_seconds: f64,
        nodes: usize,
    },
    /// A node's agent stopped answering.
    NodeLost { node: String, silent_seconds: f64 },
    /// Ranks ended and every rank left is stuck.
    Abandoned {
        gone: Vec<RankLine>,
        ranks: Vec<RankLine>,
    },
    /// The launcher went on for a stall window after an agent's memory kill.
    AfterMemoryKill { node: String, rank: Option<u32> },
}

/// Whether to stop the cell now (see the module docs). `now` is the coordinator's clock.
pub fn live(now: f64, nodes: &[NodeView], s: &Settings) -> Option<Stop> {
    for n in nodes {
        if let (Some(heard), Some(r)) = (n.heard_at, n.report)
            && !r.finished
            && now - heard > s.node_timeout
        {
            return Some(Stop::NodeLost {
                node: n.node.to_string(),
                silent_seconds: now - heard,
            });
        }
    }
    if let Some(n) = nodes
        .iter()
        .filter(|n| n.kill_seen_at.is_some_and(|t| now - t >= s.stall))
        .min_by(|a, b| {
            a.kill_seen_at
                .partial_cmp(&b.kill_seen_at)
                .unwrap_or(std::cmp::Ordering::Equal)
        })
    {
        let rank = n
            .report
            .and_then(|r| r.memory_kills.first())
            .and_then(|k| k.rank);
        return Some(Stop::AfterMemoryKill {
            node: n.node.to_string(),
            rank,
        });
    }
    stuck_everywhere(nodes)
}

/// A world's size (when known) and its ranks: rank → (node, alive).
type World<'a> = (Option<u32>, BTreeMap<u32, (&'a str, bool)>);

/// Every node answered and every one with processes is stuck: a deadlock (all ranks alive) or
/// ranks abandoned by ones that ended.
fn stuck_everywhere(nodes: &[NodeView]) -> Option<Stop> {
    let reports: Vec<(&str, &AgentReport)> = nodes
        .iter()
        .map(|n| n.report.map(|r| (n.node, r)))
        .collect::<Option<Vec<_>>>()?;
    let busy: Vec<&(&str, &AgentReport)> =
        reports.iter().filter(|(_, r)| r.processes > 0).collect();
    if busy.is_empty() || !busy.iter().all(|(_, r)| r.state.is_stuck()) {
        return None;
    }
    // Worlds: every rank seen, alive or gone, with its node.
    let mut worlds: BTreeMap<&str, World> = BTreeMap::new();
    for (node, r) in &reports {
        for rk in &r.ranks {
            let w = worlds
                .entry(rk.world.as_str())
                .or_insert((rk.size, BTreeMap::new()));
            w.0 = w.0.or(rk.size);
            let e = w.1.entry(rk.rank).or_insert((node, rk.alive));
            e.1 |= rk.alive;
        }
    }
    let alive_worlds: Vec<_> = worlds
        .values()
        .filter(|(_, rs)| rs.values().any(|(_, a)| *a))
        .collect();
    if alive_worlds.is_empty() {
        return None;
    }
    let what = |node: &str, rank: u32| -> String {
        reports
            .iter()
            .find(|(n, _)| *n == node)
            .and_then(|(_, r)| match &r.state {
                NodeStatus::Stuck { ranks, kind, .. } => Some(
                    ranks
                        .get(&rank)
                        .cloned()
                        .unwrap_or_else(|| format!("stuck ({kind})")),
                ),
                _ => None,
            })
            .unwrap_or_else(|| "ended".to_string())
    };
    let mut alive_lines = Vec::new();
    let mut gone_lines = Vec::new();
    for (size, ranks) in &alive_worlds {
        // Every rank of the world must have been seen (alive or gone).
        let complete =
            size.is_some_and(|n| ranks.len() == n as usize && ranks.keys().all(|r| *r < n));
        if !complete {
            return None;
        }
        for (rank, (node, alive)) in ranks {
            if *alive {
                alive_lines.push(RankLine {
                    node: node.to_string(),
                    rank: *rank,
                    what: what(node, *rank),
                });
            } else {
                gone_lines.push(RankLine {
                    node: node.to_string(),
                    rank: *rank,
                    what: "ended".into(),
                });
            }
        }
    }
    alive_lines.sort_by_key(|l| l.rank);
    gone_lines.sort_by_key(|l| l.rank);
    if gone_lines.is_empty() {
        let still = busy
            .iter()
            .filter_map(|(_, r)| match &r.state {
                NodeStatus::Stuck { still_seconds, .. } => Some(*still_seconds),
                _ => None,
            })
            .fold(f64::INFINITY, f64::min);
        let nodes: BTreeSet<&str> = alive_lines.iter().map(|l| l.node.as_str()).collect();
        Some(Stop::Deadlock {
            nodes: nodes.len(),
            ranks: alive_lines,
            still_seconds: if still.is_finite() { still } else { 0.0 },
        })
    } else {
        Some(Stop::Abandoned {
            gone: gone_lines,
            ranks: alive_lines,
        })
    }
}

/// Everything the final merge needs.
#[derive(Debug, Clone)]
pub struct Final<'a> {
    /// The coordinator's probe of the launcher on the batch host (`interrupted` when the
    /// coordinator stopped it).
    pub launcher: ProbeResult,
    pub stop: Option<&'a Stop>,
    /// Coordinator seconds when it stopped the launcher.
    pub stopped_at: Option<f64>,
    pub nodes: &'a [NodeView<'a>],
    /// The allocation's nodes in order (the job's host list).
    pub allocation: &'a [String],
    /// qualify itself was interrupted (Ctrl-C, the job cancelled).
    pub interrupted: bool,
    pub coordinator_cpu_seconds: f64,
}

/// An artifact failure with the time it happened (Unix seconds; `None`: unknown, ordered last).
#[derive(Debug, Clone)]
struct Failure {
    at: Option<f64>,
    /// Ties and unknown times: memory kills first, then crashes, then exits.
    rank_order: u8,
    outcome: Outcome,
    node: String,
    rank: Option<u32>,
    text: String,
}

fn when_gone(nodes: &[NodeView], node: &str, rank: u32) -> Option<f64> {
    nodes
        .iter()
        .find(|n| n.node == node)
        .and_then(|n| n.report)
        .and_then(|r| r.ranks.iter().find(|rk| rk.rank == rank))
        .and_then(|rk| rk.gone_unix)
}

fn failures(f: &Final, ends: &[TaskEnd]) -> Vec<Failure> {
    let mut out = Vec::new();
    for n in f.nodes {
        for k in n.report.map(|r| r.memory_kills.as_slice()).unwrap_or(&[]) {
            let who = match k.rank {
                Some(r) => format!("{} rank {r}", n.node),
                None => format!("{} process {} ({})", n.node, k.pid, k.comm),
            };
            out.push(Failure {
                at: Some(k.unix_seconds),
                rank_order: 0,
                outcome: Outcome::OomKilled,
                node: n.node.to_string(),
                rank: k.rank,
                text: format!(
                    "{who} killed by qualify's agent at the memory ceiling: the job's processes on {} held {} over the {} per-node ceiling ({} {} alone; watchdog)",
                    n.node,
                    format_bytes(k.node_bytes),
                    format_bytes(k.ceiling),
                    k.comm,
                    format_bytes(k.bytes)
                ),
            });
        }
    }
    for e in ends {
        let (order, outcome) = match &e.how {
            // SIGKILL/SIGTERM/… (or a shell's 128 + one): what the launcher or the scheduler
            // does to the other tasks after a failure.
            h if h.is_consequence() => continue,
            h if h.is_crash() => (1, Outcome::Crash),
            How::Exit { .. } => (2, Outcome::ExitFailure),
            How::Signal { .. } => continue,
        };
        for &task in &e.tasks {
            out.push(Failure {
                at: when_gone(f.nodes, &e.node, task),
                rank_order: order,
                outcome,
                node: e.node.clone(),
                rank: Some(task),
                text: format!(
                    "{} rank {task} {} (the launcher: `{}`)",
                    e.node,
                    match (&e.how, e.how.wrapper_hint()) {
                        (How::Signal { signal }, _) => format!("crashed ({signal})"),
                        (How::Exit { code }, Some(hint)) =>
                            format!("exited with status {code} ({hint})"),
                        (How::Exit { code }, None) => format!("exited with status {code}"),
                    },
                    e.line
                ),
            });
        }
    }
    out.sort_by(|a, b| {
        let key = |x: &Failure| x.at.unwrap_or(f64::INFINITY);
        key(a)
            .total_cmp(&key(b))
            .then(a.rank_order.cmp(&b.rank_order))
    });
    out
}

fn listed(items: Vec<String>) -> String {
    let n = items.len();
    let mut shown: Vec<String> = items.into_iter().take(NAMED).collect();
    if n > NAMED {
        shown.push(format!("… ({} more)", n - NAMED));
    }
    shown.join("; ")
}

fn lines(ranks: &[RankLine]) -> String {
    listed(
        ranks
            .iter()
            .map(|l| format!("{} rank {}: {}", l.node, l.rank, l.what))
            .collect(),
    )
}

/// The placement: node → ranks seen on it (every world), from the ranks' own environment.
fn placement(f: &Final) -> BTreeMap<String, Vec<u32>> {
    let mut out: BTreeMap<String, Vec<u32>> = BTreeMap::new();
    for n in f.nodes {
        let Some(r) = n.report else { continue };
        let mut ranks: Vec<u32> = r.ranks.iter().map(|rk| rk.rank).collect();
        ranks.sort_unstable();
        ranks.dedup();
        if !ranks.is_empty() {
            out.insert(n.node.to_string(), ranks);
        }
    }
    out
}

fn evidence(f: &Final, ends: &[TaskEnd], decided_by: &str) -> Value {
    let placement = placement(f);
    let agents: Vec<Value> = f
        .nodes
        .iter()
        .map(|n| match n.report {
            Some(r) => json!({
                "node": n.node,
                "state": r.state.name(),
                "why": match &r.state { NodeStatus::Stuck { why, .. } => Some(why.clone()), _ => None },
                "stuck": match &r.state { NodeStatus::Stuck { evidence, .. } => evidence.clone(), _ => Value::Null },
                "samples": r.samples,
                "reports": r.seq,
                "processes": r.processes,
                "ranks": r.ranks,
                "peak_memory_bytes": r.peak_memory_bytes,
                "memory_ceiling": r.memory_ceiling,
                "memory_kills": r.memory_kills,
                "run_seconds": r.run_seconds,
                "agent_cpu_seconds": r.cpu_seconds,
                "finished": r.finished,
            }),
            None => json!({"node": n.node, "state": "unobserved"}),
        })
        .collect();
    let unobserved: Vec<&str> = f
        .nodes
        .iter()
        .filter(|n| n.report.is_none())
        .map(|n| n.node)
        .collect();
    let agents_cpu: f64 = f
        .nodes
        .iter()
        .filter_map(|n| n.report.map(|r| r.cpu_seconds))
        .sum();
    json!({
        "allocation": f.allocation,
        "placement": placement,
        "nodes_reached": placement.len(),
        "decided_by": decided_by,
        "stop": f.stop,
        "stopped_at_seconds": f.stopped_at,
        "agents": agents,
        "unobserved": unobserved,
        "task_ends": ends,
        "cost": {
            "coordinator_cpu_seconds": f.coordinator_cpu_seconds,
            "agents_cpu_seconds": agents_cpu,
        },
    })
}

fn unobserved_note(f: &Final) -> String {
    let missing: Vec<&str> = f
        .nodes
        .iter()
        .filter(|n| n.report.is_none())
        .map(|n| n.node)
        .collect();
    if missing.is_empty() {
        String::new()
    } else {
        format!(
            " ({} not observed: no agent report arrived)",
            missing.join(", ")
        )
    }
}

/// The cell's one result (see the module docs).
pub fn finish(f: Final) -> ProbeResult {
    let mut r = f.launcher.clone();
    let ends = launcher::task_ends(&r.stderr_tail);
    let steps_memory = launcher::memory_kills(&r.stderr_tail);
    let fails = failures(&f, &ends);
    let mut decided_by = "agents";
    let stopped_by_us = f.stop.is_some();
    let set = |r: &mut ProbeResult, outcome: Outcome, detail: String| {
        r.outcome = outcome;
        r.detail = detail;
        if outcome != Outcome::Timeout {
            r.timeout_kind = None;
        }
    };

    if f.interrupted {
        if r.outcome != Outcome::Interrupted {
            set(
                &mut r,
                Outcome::Interrupted,
                "qualify was interrupted; the launcher and its ranks were stopped (says nothing about the artifact)".into(),
            );
        }
        decided_by = "qualify interrupted";
    } else {
        match f.stop {
            Some(Stop::NodeLost {
                node,
                silent_seconds,
            }) => match fails.iter().find(|x| x.outcome == Outcome::OomKilled) {
                Some(first) => set(
                    &mut r,
                    Outcome::OomKilled,
                    format!("{} first; then {node} stopped answering", first.text),
                ),
                None => set(
                    &mut r,
                    Outcome::Interrupted,
                    format!(
                        "{node} stopped answering (its agent silent for {silent_seconds:.1} s: the node or its scheduler daemon failed): the cluster failed during the cell, not the artifact; the launcher and its ranks were stopped"
                    ),
                ),
            },
            Some(Stop::Deadlock {
                ranks,
                still_seconds,
                nodes,
            }) => set(
                &mut r,
                Outcome::Deadlock,
                format!(
                    "all {} ranks on {nodes} node(s) stuck — {}; nothing but CPU moved on any node for at least {still_seconds:.1}s (stall window; each node judged by its own agent)",
                    ranks.len(),
                    lines(ranks)
                ),
            ),
            Some(Stop::Abandoned { gone, ranks }) => match fails.first() {
                Some(first) => set(
                    &mut r,
                    first.outcome,
                    format!(
                        "{} first; the {} rank(s) left were stuck waiting for it ({})",
                        first.text,
                        ranks.len(),
                        lines(ranks)
                    ),
                ),
                None => set(
                    &mut r,
                    Outcome::Deadlock,
                    format!(
                        "{} ended (the launcher did not say how) and all {} rank(s) left are stuck waiting — {}",
                        listed(
                            gone.iter()
                                .map(|g| format!("{} rank {}", g.node, g.rank))
                                .collect()
                        ),
                        ranks.len(),
                        lines(ranks)
                    ),
                ),
            },
            Some(Stop::AfterMemoryKill { .. }) => match fails.first() {
                Some(first) => set(
                    &mut r,
                    first.outcome,
                    format!(
                        "{}; the launcher went on for a stall window after it and was stopped",
                        first.text
                    ),
                ),
                None => set(
                    &mut r,
                    Outcome::OomKilled,
                    "an agent killed a process at the memory ceiling; the launcher went on for a stall window after it and was stopped".into(),
                ),
            },
            None => {
                // A rank's failure explains a launcher that failed or hung after it.
                let artifact_failed = !matches!(r.outcome, Outcome::Ok | Outcome::Interrupted);
                if let Some(first) = fails
                    .iter()
                    .find(|x| x.outcome == Outcome::OomKilled || artifact_failed)
                {
                    let mut then: Vec<String> = Vec::new();
                    for x in fails
                        .iter()
                        .filter(|x| (&x.node, x.rank) != (&first.node, first.rank))
                    {
                        let who = match x.rank {
                            Some(rank) => format!("{} rank {rank} ({})", x.node, x.outcome),
                            None => format!("{} ({})", x.node, x.outcome),
                        };
                        if !then.contains(&who) {
                            then.push(who);
                        }
                    }
                    let then = if then.is_empty() {
                        String::new()
                    } else {
                        format!("; then {}", listed(then))
                    };
                    set(&mut r, first.outcome, format!("{}{then}", first.text));
                } else if let Some(m) = steps_memory.first()
                    && r.outcome != Outcome::Ok
                {
                    set(
                        &mut r,
                        Outcome::OomKilled,
                        format!(
                            "Slurm's step daemon on {} killed the step for its memory (`{}`)",
                            m.node, m.line
                        ),
                    );
                    r.enforcement.memory = Strength::Watchdog;
                    decided_by = "the scheduler's step daemon";
                } else {
                    decided_by = "launcher";
                    if r.outcome == Outcome::Timeout {
                        refine_timeout(&mut r, &f);
                    }
                }
            }
        }
    }
    if !stopped_by_us && r.outcome == Outcome::Interrupted && !f.interrupted {
        decided_by = "launcher";
    }
    r.detail.push_str(&unobserved_note(&f));
    // The ranks' CPU and memory ran on the nodes, not under the launcher.
    let node_cpu: f64 = f
        .nodes
        .iter()
        .filter_map(|n| n.report.map(|r| r.run_seconds))
        .sum();
    r.user_seconds += node_cpu;
    let node_peak = f
        .nodes
        .iter()
        .filter_map(|n| n.report.map(|r| r.peak_memory_bytes))
        .max();
    if let Some(p) = node_peak {
        r.peak_memory_bytes = Some(r.peak_memory_bytes.unwrap_or(0).max(p));
    }
    if fails.iter().any(|x| x.outcome == Outcome::OomKilled) && r.outcome == Outcome::OomKilled {
        r.enforcement.memory = Strength::Watchdog;
        r.enforcement.notes.push(
            "the per-node memory ceiling was enforced by qualify's agent on each node (watchdog)"
                .into(),
        );
    }
    let ev = evidence(&f, &ends, decided_by);
    if !r.evidence.is_object() {
        r.evidence = json!({});
    }
    if let Some(map) = r.evidence.as_object_mut() {
        map.insert("nodes".into(), ev);
        map.insert(
            "node_cpu_basis".into(),
            json!("user_seconds includes the ranks' CPU on every node (scheduler run time, user and system not split); peak_memory_bytes is the largest per-node peak"),
        );
    }
    r
}

/// A launcher that ran into the deadline: say what the nodes were doing.
fn refine_timeout(r: &mut ProbeResult, f: &Final) {
    let states: Vec<String> = f
        .nodes
        .iter()
        .map(|n| match n.report.map(|r| &r.state) {
            Some(NodeStatus::Stuck { .. }) => format!("{} stuck", n.node),
            Some(s) => format!("{} {}", n.node, s.name()),
            None => format!("{} unobserved", n.node),
        })
        .collect();
    let stuck = f
        .nodes
        .iter()
        .filter(|n| n.report.is_some_and(|r| r.state.is_stuck()))
        .count();
    let running = f
        .nodes
        .iter()
        .filter(|n| n.report.is_some_and(|r| r.state == NodeStatus::Running))
        .count();
    if stuck > 0 {
        r.timeout_kind = Some(TimeoutKind::AmbiguousSpin);
        r.detail = format!(
            "deadline of {:.1}s passed; some nodes stuck, not all proven ({}): not proven to be a deadlock",
            r.limits.timeout_seconds,
            states.join(", ")
        );
    } else if running > 0 {
        r.timeout_kind = Some(TimeoutKind::Busy);
        r.detail = format!(
            "deadline of {:.1}s passed; the ranks were still running ({})",
            r.limits.timeout_seconds,
            states.join(", ")
        );
    }
}

#[cfg(test)]
mod tests;
