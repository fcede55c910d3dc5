//! The merge rules as tables: made-up agent reports and launcher results → stop decisions and
//! outcomes.

use std::collections::BTreeMap;

use qualify_model::{Enforcement, Limits, Outcome, ProbeResult, Strength, TimeoutKind};
use serde_json::Value;

use super::*;
use crate::report::{AgentReport, MemoryKill, NodeStatus, RankSeen};

const S: Settings = Settings {
    node_timeout: 5.0,
    stall: 2.0,
};

/// A node's report: `ranks` as (rank, alive, gone_unix), `stuck` → what each rank is in.
fn report(node: &str, ranks: &[(u32, bool, Option<f64>)], stuck: bool) -> AgentReport {
    let alive = ranks.iter().filter(|r| r.1).count();
    AgentReport {
        node: node.into(),
        pid: 1,
        seq: 1,
        started_unix: 0.0,
        written_unix: 1.0,
        samples: 10,
        interval_ms: 100,
        state: if alive == 0 {
            NodeStatus::Empty
        } else if stuck {
            NodeStatus::Stuck {
                kind: "spin".into(),
                why: "stuck".into(),
                still_seconds: 2.5,
                ranks: ranks
                    .iter()
                    .filter(|r| r.1)
                    .map(|r| {
                        (
                            r.0,
                            format!("MPI_Recv (spinning in opal_progress) #{}", r.0),
                        )
                    })
                    .collect(),
                evidence: Value::Null,
            }
        } else {
            NodeStatus::Running
        },
        ranks: ranks
            .iter()
            .map(|&(rank, alive, gone)| RankSeen {
                rank,
                size: Some(6),
                world: "9.0".into(),
                pids: vec![100 + rank as i32],
                comm: "prog".into(),
                alive,
                first_seen_unix: 0.5,
                gone_unix: gone,
            })
            .collect(),
        processes: alive,
        memory_bytes: 1 << 20,
        peak_memory_bytes: (2 << 20) * (1 + ranks.len() as u64),
        memory_ceiling: None,
        run_seconds: 1.0,
        memory_kills: Vec::new(),
        cpu_seconds: 0.01,
        finished: false,
    }
}

fn views<'a>(reports: &'a [AgentReport], heard: &[Option<f64>]) -> Vec<NodeView<'a>> {
    reports
        .iter()
        .zip(heard)
        .map(|(r, h)| NodeView {
            node: &r.node,
            report: h.map(|_| r),
            heard_at: *h,
            kill_seen_at: None,
        })
        .collect()
}

fn three(stuck: [bool; 3]) -> Vec<AgentReport> {
    vec![
        report("node1", &[(0, true, None), (1, true, None)], stuck[0]),
        report("node2", &[(2, true, None), (3, true, None)], stuck[1]),
        report("node3", &[(4, true, None), (5, true, None)], stuck[2]),
    ]
}

#[test]
fn live_rules() {
    let now = 10.0;
    let fresh = [Some(9.9); 3];
    // (what, reports, heard, expected stop kind)
    type LiveCase<'a> = (&'a str, Vec<AgentReport>, Vec<Option<f64>>, Option<&'a str>);
    let mut cases: Vec<LiveCase> = vec![
        (
            "all nodes stuck, all ranks alive",
            three([true; 3]),
            fresh.to_vec(),
            Some("deadlock"),
        ),
        (
            "one node running",
            three([true, false, true]),
            fresh.to_vec(),
            None,
        ),
        (
            "one node never answered: no deadlock without it",
            three([true; 3]),
            vec![Some(9.9), Some(9.9), None],
            None,
        ),
        (
            "a node silent past the timeout is lost",
            three([true, false, true]),
            vec![Some(9.9), Some(4.0), Some(9.9)],
            Some("node_lost"),
        ),
        (
            "silent, but not for long",
            three([false; 3]),
            vec![Some(9.9), Some(6.0), Some(9.9)],
            None,
        ),
    ];
    // Ranks 4 and 5 gone, everyone else stuck: abandoned.
    let mut gone = three([true; 3]);
    gone[2] = report(
        "node3",
        &[(4, false, Some(3.0)), (5, false, Some(3.1))],
        true,
    );
    cases.push((
        "ranks gone, the rest stuck",
        gone,
        fresh.to_vec(),
        Some("abandoned"),
    ));
    // A world whose ranks were not all seen (rank 5 never observed): no verdict.
    let mut missing = three([true; 3]);
    missing[2] = report("node3", &[(4, true, None)], true);
    cases.push(("a rank never seen", missing, fresh.to_vec(), None));
    // A node without ranks (ranks < nodes) does not block the verdict.
    let mut spare = three([true; 3]);
    spare[0] = report(
        "node1",
        &[(0, true, None), (1, true, None), (2, true, None)],
        true,
    );
    spare[1] = report(
        "node2",
        &[(3, true, None), (4, true, None), (5, true, None)],
        true,
    );
    spare[2] = report("node3", &[], false);
    cases.push(("an empty node", spare, fresh.to_vec(), Some("deadlock")));
    // A finished agent is not lost.
    let mut done = three([false; 3]);
    done[1].finished = true;
    cases.push((
        "a finished agent is not silent",
        done,
        vec![Some(9.9), Some(1.0), Some(9.9)],
        None,
    ));

    for (what, reports, heard, want) in cases {
        let v = views(&reports, &heard);
        let got = live(now, &v, &S);
        let kind = got.as_ref().map(|s| match s {
            Stop::Deadlock { .. } => "deadlock",
            Stop::NodeLost { .. } => "node_lost",
            Stop::Abandoned { .. } => "abandoned",
            Stop::AfterMemoryKill { .. } => "after_memory_kill",
        });
        assert_eq!(kind, want, "{what}: {got:?}");
    }
}

#[test]
fn a_memory_kill_stops_the_cell_after_a_stall_window() {
    let mut reports = three([false; 3]);
    reports[1].memory_kills.push(MemoryKill {
        pid: 103,
        comm: "prog".into(),
        rank: Some(3),
        bytes: 300 << 20,
        node_bytes: 310 << 20,
        ceiling: 256 << 20,
        unix_seconds: 5.0,
    });
    let mut v = views(&reports, &[Some(9.9); 3]);
    v[1].kill_seen_at = Some(9.0);
    assert_eq!(live(10.0, &v, &S), None, "within the stall window");
    assert_eq!(
        live(11.5, &v, &S),
        Some(Stop::AfterMemoryKill {
            node: "node2".into(),
            rank: Some(3)
        })
    );
}

fn launcher(outcome: Outcome, stderr: &str) -> ProbeResult {
    let mut r = ProbeResult::unobserved(
        outcome,
        "launcher",
        Enforcement {
            backend: "cgroup2".into(),
            memory: Strength::Kernel,
            cpus: Strength::None,
            pids: Strength::None,
            disk: Strength::None,
            tree: "cgroup".into(),
            on_qualify_death: String::new(),
            notes: Vec::new(),
            sandbox: None,
        },
        Limits::default(),
    );
    r.stderr_tail = stderr.into();
    r.evidence = serde_json::json!({"samples": 1});
    r
}

fn alloc() -> Vec<String> {
    vec!["node1".into(), "node2".into(), "node3".into()]
}

fn run(
    reports: &[AgentReport],
    heard: &[Option<f64>],
    launcher_result: ProbeResult,
    stop: Option<&Stop>,
    interrupted: bool,
) -> ProbeResult {
    let v = views(reports, heard);
    let a = alloc();
    finish(Final {
        launcher: launcher_result,
        stop,
        stopped_at: stop.map(|_| 10.0),
        nodes: &v,
        allocation: &a,
        interrupted,
        coordinator_cpu_seconds: 0.05,
    })
}

#[test]
fn a_deadlock_names_every_node_and_rank() {
    let reports = three([true; 3]);
    let v = views(&reports, &[Some(9.9); 3]);
    let stop = live(10.0, &v, &S).expect("stop");
    let r = run(
        &reports,
        &[Some(9.9); 3],
        launcher(Outcome::Interrupted, ""),
        Some(&stop),
        false,
    );
    assert_eq!(r.outcome, Outcome::Deadlock, "{}", r.detail);
    assert!(
        r.detail.starts_with("all 6 ranks on 3 node(s) stuck — node1 rank 0: MPI_Recv (spinning in opal_progress) #0; node1 rank 1:"),
        "{}",
        r.detail
    );
    assert!(r.detail.contains("node3 rank 5: MPI_Recv"), "{}", r.detail);
    let n = &r.evidence["nodes"];
    assert_eq!(n["nodes_reached"], 3);
    assert_eq!(n["placement"]["node2"], serde_json::json!([2, 3]));
    assert_eq!(n["decided_by"], "agents");
    assert_eq!(n["stop"]["stop"], "deadlock");
    assert_eq!(r.evidence["samples"], 1, "the launcher's evidence is kept");
    // The ranks' CPU and the largest node peak are the cell's.
    assert!((r.user_seconds - 3.0).abs() < 1e-9, "{}", r.user_seconds);
    assert_eq!(r.peak_memory_bytes, Some(6 << 20));
}

/// (what, stop, launcher outcome, launcher stderr, interrupted, expected outcome, detail part)
type Case<'a> = (
    &'a str,
    Option<Stop>,
    Outcome,
    &'a str,
    bool,
    Outcome,
    &'a str,
);

#[test]
fn final_rules() {
    let lost = Stop::NodeLost {
        node: "node3".into(),
        silent_seconds: 6.0,
    };
    let abandoned = Stop::Abandoned {
        gone: vec![RankLine {
            node: "node3".into(),
            rank: 5,
            what: "ended".into(),
        }],
        ranks: vec![RankLine {
            node: "node1".into(),
            rank: 0,
            what: "MPI_Recv".into(),
        }],
    };
    let segv = "srun: error: node3: task 5: Segmentation fault (core dumped)\nsrun: error: node1: tasks 0-1: Killed\n";
    let cases: Vec<Case> = vec![
        (
            "qualify interrupted",
            None,
            Outcome::Interrupted,
            "",
            true,
            Outcome::Interrupted,
            "",
        ),
        (
            "a node lost is the cluster's failure",
            Some(lost.clone()),
            Outcome::Interrupted,
            "srun: error: node3: tasks 4-5: Killed\n",
            false,
            Outcome::Interrupted,
            "node3 stopped answering",
        ),
        (
            "a node lost even when the launcher reports crashes after it",
            Some(lost.clone()),
            Outcome::Interrupted,
            segv,
            false,
            Outcome::Interrupted,
            "the cluster failed during the cell, not the artifact",
        ),
        (
            "a crash the launcher reports, first of the failures",
            None,
            Outcome::ExitFailure,
            segv,
            false,
            Outcome::Crash,
            "node3 rank 5 crashed (SIGSEGV)",
        ),
        (
            "killed tasks alone are consequences: the launcher's result stands",
            None,
            Outcome::ExitFailure,
            "srun: error: node1: tasks 0-1: Killed\n",
            false,
            Outcome::ExitFailure,
            "launcher",
        ),
        (
            "a non-zero exit of one task",
            None,
            Outcome::ExitFailure,
            "srun: error: node2: task 3: Exited with exit code 4\n",
            false,
            Outcome::ExitFailure,
            "node2 rank 3 exited with status 4",
        ),
        (
            "ranks abandoned by one that crashed",
            Some(abandoned.clone()),
            Outcome::Interrupted,
            segv,
            false,
            Outcome::Crash,
            "the 1 rank(s) left were stuck waiting for it",
        ),
        (
            "ranks abandoned by one that ended without a word",
            Some(abandoned),
            Outcome::Interrupted,
            "",
            false,
            Outcome::Deadlock,
            "node3 rank 5 ended (the launcher did not say how)",
        ),
        (
            "the step daemon's memory kill",
            None,
            Outcome::ExitFailure,
            "slurmstepd-node2: error: StepId=10.0 exceeded memory limit (328691712 > 52428800), being killed\nsrun: error: node2: task 1: Killed\n",
            false,
            Outcome::OomKilled,
            "Slurm's step daemon on node2 killed the step for its memory",
        ),
        (
            "a crash behind the rank's wrapper shell, and a shell's 137 after it",
            None,
            Outcome::ExitFailure,
            "srun: error: node3: task 5: Exited with exit code 139\nsrun: error: node2: task 3: Exited with exit code 137\n",
            false,
            Outcome::ExitFailure,
            "node3 rank 5 exited with status 139 (128+11: a SIGSEGV behind a wrapper shell?)",
        ),
        (
            "an ok launcher stays ok",
            None,
            Outcome::Ok,
            "",
            false,
            Outcome::Ok,
            "launcher",
        ),
    ];
    for (what, stop, outcome, stderr, interrupted, want, part) in cases {
        let mut reports = three([false; 3]);
        // Rank 5 vanished at 3.0: the crash line's time.
        reports[2] = report("node3", &[(4, true, None), (5, false, Some(3.0))], false);
        let r = run(
            &reports,
            &[Some(9.9); 3],
            launcher(outcome, stderr),
            stop.as_ref(),
            interrupted,
        );
        assert_eq!(r.outcome, want, "{what}: {}", r.detail);
        assert!(r.detail.contains(part), "{what}: {}", r.detail);
    }
}

#[test]
fn the_first_failure_in_time_decides() {
    let mut reports = three([false; 3]);
    // node1: an agent memory kill at 4.0; node3: rank 5 crashed, gone at 3.0 (earlier).
    reports[0].memory_kills.push(MemoryKill {
        pid: 100,
        comm: "prog".into(),
        rank: Some(0),
        bytes: 300 << 20,
        node_bytes: 301 << 20,
        ceiling: 256 << 20,
        unix_seconds: 4.0,
    });
    reports[2] = report("node3", &[(4, true, None), (5, false, Some(3.0))], false);
    let stderr =
        "srun: error: node1: task 0: Killed\nsrun: error: node3: task 5: Segmentation fault\n";
    let r = run(
        &reports,
        &[Some(9.9); 3],
        launcher(Outcome::ExitFailure, stderr),
        None,
        false,
    );
    assert_eq!(r.outcome, Outcome::Crash, "{}", r.detail);
    assert!(r.detail.starts_with("node3 rank 5 crashed"), "{}", r.detail);
    assert!(r.detail.contains("then node1 rank 0"), "{}", r.detail);

    // The memory kill first: oom_killed, enforced by the agent.
    reports[2] = report("node3", &[(4, true, None), (5, false, Some(9.0))], false);
    let r = run(
        &reports,
        &[Some(9.9); 3],
        launcher(Outcome::ExitFailure, stderr),
        None,
        false,
    );
    assert_eq!(r.outcome, Outcome::OomKilled, "{}", r.detail);
    assert!(
        r.detail
            .starts_with("node1 rank 0 killed by qualify's agent at the memory ceiling"),
        "{}",
        r.detail
    );
    assert!(
        r.detail.contains("256 MiB per-node ceiling"),
        "{}",
        r.detail
    );
    assert_eq!(r.enforcement.memory, Strength::Watchdog);

    // A memory kill outranks a node lost after it.
    let lost = Stop::NodeLost {
        node: "node2".into(),
        silent_seconds: 7.0,
    };
    let r = run(
        &reports,
        &[Some(9.9); 3],
        launcher(Outcome::Interrupted, ""),
        Some(&lost),
        false,
    );
    assert_eq!(r.outcome, Outcome::OomKilled, "{}", r.detail);
    assert!(
        r.detail.contains("then node2 stopped answering"),
        "{}",
        r.detail
    );
}

#[test]
fn a_timeout_says_what_the_nodes_were_doing() {
    let mut reports = three([true, false, true]);
    reports[1].state = NodeStatus::Running;
    let mut l = launcher(Outcome::Timeout, "");
    l.timeout_kind = Some(TimeoutKind::BlockedExternal);
    let r = run(&reports, &[Some(9.9), Some(9.9), None], l, None, false);
    assert_eq!(r.outcome, Outcome::Timeout);
    assert_eq!(
        r.timeout_kind,
        Some(TimeoutKind::AmbiguousSpin),
        "{}",
        r.detail
    );
    assert!(
        r.detail
            .contains("node1 stuck, node2 running, node3 unobserved"),
        "{}",
        r.detail
    );
    assert!(
        r.detail
            .ends_with("(node3 not observed: no agent report arrived)"),
        "{}",
        r.detail
    );
    assert_eq!(
        r.evidence["nodes"]["unobserved"],
        serde_json::json!(["node3"])
    );
    let _: BTreeMap<String, Value> = serde_json::from_value(r.evidence["nodes"].clone()).unwrap();
}
