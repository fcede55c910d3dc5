//! The target gap: every difference between the target and what was tested, and its waivers.

use serde_json::{Value, json};

use super::*;
use crate::gap::Gap;
use crate::receipt::build;

fn gaps(r: &RunRecord) -> Vec<Gap> {
    build(r).predicate.gap
}

fn find<'a>(gaps: &'a [Gap], name: &str) -> &'a Gap {
    gaps.iter()
        .find(|g| g.name == name)
        .unwrap_or_else(|| panic!("no gap `{name}` in {gaps:?}"))
}

#[test]
fn no_target_no_gap() {
    assert!(gaps(&record()).is_empty());
}

#[test]
fn every_unreached_target_fact_is_a_gap() {
    let mut r = record();
    r.target = big_target();
    let g = gaps(&r);
    let names: Vec<&str> = g.iter().map(|g| g.name.as_str()).collect();
    assert_eq!(names, ["cores", "nodes", "memory", "concurrency"]);
    let cores = find(&g, "cores");
    assert_eq!(
        (cores.target.clone(), cores.tested.clone()),
        (json!(192), json!(2))
    );
    assert_eq!(find(&g, "nodes").tested, json!(1));
    assert_eq!(find(&g, "memory").tested, json!(24u64 << 30));
    let conc = find(&g, "concurrency");
    assert_eq!(
        (conc.target.clone(), conc.tested.clone()),
        (json!(192), json!(2))
    );
    assert!(conc.detail.contains("reached 2"), "{}", conc.detail);
    assert!(g.iter().all(|g| g.waiver.is_none()));
}

#[test]
fn concurrency_never_examined_is_tested_null() {
    let mut r = record();
    r.target.cores = Some(2);
    r.axes.retain(|a| a.name == "n");
    let g = gaps(&r);
    assert_eq!(g.len(), 1, "{g:?}");
    assert_eq!(g[0].name, "concurrency");
    assert_eq!(g[0].tested, Value::Null);
}

#[test]
fn reached_target_facts_are_no_gap_and_allowed_cores_count() {
    let mut r = record();
    r.target = Target {
        cores: Some(2),
        nodes: Some(1),
        memory_bytes: Some(16 << 30),
        ..Target::default()
    };
    assert!(gaps(&r).is_empty());

    r.machine.cores_online = 8;
    r.machine.cores_allowed = Some(1);
    let g = gaps(&r);
    assert_eq!(find(&g, "cores").tested, json!(1));
}

#[test]
fn workload_target_per_axis() {
    let mut r = record();
    r.target.workload.insert("n".to_string(), 1e6);
    let g = gaps(&r);
    let w = find(&g, "workload");
    assert_eq!(w.axis.as_deref(), Some("n"));
    assert_eq!(w.tested, json!(1024));
    assert_eq!(w.target, json!(1_000_000));
    assert_eq!(w.qualified_name(), "workload.n");
}

#[test]
fn waivers_accept_gaps_by_name_with_a_reason() {
    let mut r = record();
    r.target = big_target();
    r.target.workload.insert("n".to_string(), 1e6);
    r.waivers = vec![
        Waiver {
            gap: "nodes".to_string(),
            reason: "single-node deployment first".to_string(),
        },
        Waiver {
            gap: "workload.n".to_string(),
            reason: "n scales linearly, shown elsewhere".to_string(),
        },
        Waiver {
            gap: "memory".to_string(),
            reason: "  ".to_string(),
        },
        Waiver {
            gap: "gpus".to_string(),
            reason: "none".to_string(),
        },
    ];
    let s = build(&r);
    let g = &s.predicate.gap;
    assert_eq!(
        find(g, "nodes").waiver.as_deref(),
        Some("single-node deployment first")
    );
    assert!(find(g, "workload").is_waived());
    assert!(
        !find(g, "memory").is_waived(),
        "a blank reason waives nothing"
    );
    assert!(find(g, "cores").waiver.is_none());

    let uses = &s.predicate.waivers;
    assert!(uses[0].applied && uses[1].applied);
    assert!(!uses[2].applied);
    assert!(uses[2].note.as_deref().unwrap().contains("needs a reason"));
    assert!(!uses[3].applied);
    assert!(
        uses[3]
            .note
            .as_deref()
            .unwrap()
            .contains("no gap named `gpus`"),
        "{:?}",
        uses[3].note
    );
}

#[test]
fn the_nodes_gap_uses_the_topology_examined_not_the_axis_declared() {
    let mut r = record();
    r.target = Target {
        nodes: Some(2),
        ..Target::default()
    };
    r.axes.push(axis(
        "ranks".to_string(),
        AxisKind::Topology,
        AxisDomain::Values(vec![ParamValue::Int(1), ParamValue::Int(4)]),
    ));
    for (ranks, nodes) in [(1, 1), (4, 2)] {
        let mut c = cell(
            &[
                ("threads", json!(1)),
                ("n", json!(256)),
                ("ranks", json!(ranks)),
            ],
            Outcome::Ok,
        );
        c.result.evidence = json!({"slurm": {"job_id": "7_0", "nodes": nodes, "ntasks": ranks}});
        r.cells.push(c);
    }
    let receipt = build(&r);
    let topo = receipt
        .predicate
        .tested
        .topology
        .clone()
        .expect("tested.topology");
    assert_eq!((topo.nodes, topo.ranks, topo.cores_per_node), (2, 4, 2));
    assert!(receipt.predicate.gap.iter().all(|g| g.name != "nodes"));

    // Observed on every node: the allocation asked for 2 nodes, the ranks ran on one — one
    // node examined, the gap stays.
    for c in &mut r.cells {
        c.result.evidence["nodes"] =
            json!({"nodes_reached": 1, "placement": {"node1": [0, 1, 2, 3]}});
    }
    let receipt = build(&r);
    let topo = receipt
        .predicate
        .tested
        .topology
        .clone()
        .expect("tested.topology");
    assert_eq!((topo.nodes, topo.ranks), (1, 4));
    assert_eq!(find(&receipt.predicate.gap, "nodes").tested, json!(1));
    // Reached both: the gap closes.
    let last = r.cells.len() - 1;
    r.cells[last].result.evidence["nodes"]["nodes_reached"] = json!(2);
    let receipt = build(&r);
    assert_eq!(
        receipt
            .predicate
            .tested
            .topology
            .clone()
            .expect("topology")
            .nodes,
        2
    );
    assert!(receipt.predicate.gap.iter().all(|g| g.name != "nodes"));
    // An interrupted cell (a node lost) examined nothing.
    r.cells[last].result.outcome = Outcome::Interrupted;
    let receipt = build(&r);
    assert_eq!(
        receipt
            .predicate
            .tested
            .topology
            .clone()
            .expect("topology")
            .nodes,
        1
    );
    r.cells[last].result.outcome = Outcome::Ok;

    // The same ranks run locally (no allocation): one node examined, the gap stays.
    for c in &mut r.cells {
        c.result.evidence = Value::Null;
    }
    let receipt = build(&r);
    let topo = receipt
        .predicate
        .tested
        .topology
        .clone()
        .expect("tested.topology");
    assert_eq!((topo.nodes, topo.ranks), (1, 4));
    assert_eq!(find(&receipt.predicate.gap, "nodes").tested, json!(1));
}
