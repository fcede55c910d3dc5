//! Every step read back from its own command line is the step written, and what a step does
//! not hold is refused by name.

use std::path::PathBuf;

use super::*;
use crate::enforcement::{Mode, Role};
use crate::fault::Noise;
use crate::sandbox::{NetworkPolicy, SandboxPolicy};
use crate::{BackendChoice, Limits, Params, Progress, Value};

fn words(w: &[&str]) -> Vec<String> {
    w.iter().map(|s| s.to_string()).collect()
}

fn params() -> Params {
    let mut p = Params::new();
    // Not in alphabetical order: the order crosses as written.
    p.insert("workers", Value::Int(4));
    p.insert("ratio", Value::Float(0.5));
    p.insert("cache_fault", Value::Text("latency(200ms)".into()));
    p
}

fn cell() -> CellStep {
    CellStep {
        spec: "/shared/run dir/qualify.toml".into(),
        params: params(),
        backend: BackendChoice::Cgroup1,
        state_dir: Some("/shared/cell-3.nodes".into()),
        lease: Some("/shared/lease".into()),
        overrides: vec!["load.rate=200".into(), "limits.memory=\"1 GiB\"".into()],
        pass_env: vec!["OMPI_*".into()],
    }
}

#[test]
fn a_load_generator_reads_back_as_written() {
    let mut step = LoadGenStep {
        plan: "/tmp/g/plan.json".into(),
        target: "10.0.0.2:8080".into(),
        index: 2,
        of: 3,
        out: "/tmp/g/generator-2.json".into(),
        start_at: Some(1_700_000_000.25),
        heartbeat: Some("/shared/cell-1.nodes".into()),
    };
    assert_eq!(LoadGenStep::parse(&step.to_argv()), Ok(step.clone()));
    step.start_at = None;
    step.heartbeat = None;
    assert_eq!(LoadGenStep::parse(&step.to_argv()), Ok(step.clone()));
    assert_eq!(step.to_argv()[0], "load-gen");
    // A value may also follow its flag as the next word.
    let spaced = words(&[
        "load-gen", "--plan", "p.json", "--target", "h:1", "--index", "0", "--of", "1", "--out",
        "o.json",
    ]);
    assert_eq!(
        LoadGenStep::parse(&spaced).map(|s| (s.index, s.of, s.target)),
        Ok((0, 1, "h:1".to_string()))
    );
}

#[test]
fn a_service_cell_and_its_dependency_host_read_back_as_written() {
    let step = ServiceCellStep {
        cell: cell(),
        histories: Some("/shared/receipts/histories".into()),
        control_noise: Some(Noise {
            p99: Some(1.4),
            p50: Some(1.2),
            latency_p99: Some(12.5),
            latency_p50: None,
        }),
    };
    let back = ServiceCellStep::parse(&step.to_argv());
    assert_eq!(back, Ok(step.clone()));
    // The axis values keep their order (a JSON object's order is the writer's).
    let order: Vec<String> = back
        .map(|s| s.cell.params.iter().map(|(n, _)| n.to_string()).collect())
        .unwrap_or_default();
    assert_eq!(order, ["workers", "ratio", "cache_fault"]);
    // As the run writes it: no state directory or lease yet, no control measured.
    let bare = ServiceCellStep {
        cell: CellStep {
            state_dir: None,
            lease: None,
            overrides: Vec::new(),
            pass_env: Vec::new(),
            ..cell()
        },
        histories: None,
        control_noise: None,
    };
    assert_eq!(ServiceCellStep::parse(&bare.to_argv()), Ok(bare));

    let host = DependencyHostStep {
        cell: cell(),
        dependency: "cache".into(),
        service_node: "node1".into(),
    };
    assert_eq!(DependencyHostStep::parse(&host.to_argv()), Ok(host.clone()));
    assert!(matches!(
        ServiceCellStep::parse(&host.to_argv()),
        Err(StepError::NotThisStep { .. })
    ));
}

#[test]
fn a_probe_and_a_coordinator_read_back_as_written() {
    let mut sandbox = SandboxPolicy {
        network: NetworkPolicy::Host,
        writable: vec!["/w/out dir".into()],
        readable: vec!["/r".into()],
        user: Some("1000".into()),
        ..SandboxPolicy::default()
    };
    sandbox.hidden.push((Role::Key, "/k/key.pem".into()));
    sandbox.hidden.push((Role::Holdout, "/h".into()));
    sandbox.pass_env = vec!["SLURM_*".into(), "N".into()];
    sandbox.private_workdir = true;
    let mut step = ProbeStep {
        observe_nodes: false,
        nodes_dir: None,
        limits: Limits {
            memory_bytes: Some(64 << 20),
            cpus: Some(1.5),
            pids: Some(100),
            timeout_seconds: 30.0,
            stall_seconds: 2.5,
            progress: Progress::Output,
            disk_bytes: Some(1 << 30),
            guards: Vec::new(),
        },
        repeat: 3,
        backend: BackendChoice::Rlimit,
        sandbox,
        json: true,
        lease: Some("/shared/lease".into()),
        command: words(&["./prog", "--threads", "4", "it's"]),
    };
    assert_eq!(ProbeStep::parse(&step.to_argv()), Ok(step.clone()));
    assert_eq!(step.to_argv()[0], "probe");
    step.observe_nodes = true;
    step.nodes_dir = Some("/shared/cell-2.nodes".into());
    assert_eq!(ProbeStep::parse(&step.to_argv()), Ok(step.clone()));
    assert_eq!(
        step.to_argv()[..3],
        words(&["agent", "coordinate", "--nodes-dir=/shared/cell-2.nodes"])
    );
    // No sandbox: only the mode crosses; defaults stay defaults.
    step.observe_nodes = false;
    step.nodes_dir = None;
    step.sandbox = SandboxPolicy::off();
    step.repeat = 1;
    step.limits = Limits::default();
    step.lease = None;
    step.json = false;
    let argv = step.to_argv();
    assert!(argv.contains(&"--sandbox=off".to_string()), "{argv:?}");
    assert!(!argv.iter().any(|a| a.starts_with("--network")), "{argv:?}");
    assert_eq!(ProbeStep::parse(&argv), Ok(step));
}

#[test]
fn what_a_step_does_not_hold_is_refused_by_name() {
    let bad = |argv: &[&str]| LoadGenStep::parse(&words(argv)).map_err(|e| e.to_string());
    let full = [
        "load-gen",
        "--plan=p",
        "--target=h:1",
        "--index=0",
        "--of=1",
        "--out=o",
    ];
    assert!(bad(&full).is_ok());
    let e = bad(&[&full[..], &["--color=red"]].concat()).unwrap_err();
    assert!(e.contains("unknown flag \"--color=red\""), "{e}");
    let e = bad(&full[..5]).unwrap_err();
    assert!(e.contains("--out is required"), "{e}");
    let e = bad(&[&full[..], &["--index=1"]].concat()).unwrap_err();
    assert!(e.contains("--index given twice"), "{e}");
    let e = bad(&[
        "load-gen",
        "--plan=p",
        "--target=h:1",
        "--index=x",
        "--of=1",
        "--out=o",
    ])
    .unwrap_err();
    assert!(e.contains("--index \"x\""), "{e}");
    let e = bad(&["service-cell"]).unwrap_err();
    assert!(e.contains("`qualify load-gen` expected first"), "{e}");
    let e = bad(&[&full[..], &["extra"]].concat()).unwrap_err();
    assert!(e.contains("unexpected argument \"extra\""), "{e}");
    let e = bad(&["load-gen", "--plan"]).unwrap_err();
    assert!(e.contains("--plan needs a value"), "{e}");

    let params = |p: &str| {
        ServiceCellStep::parse(&words(&["service-cell", "--spec=s", p])).map_err(|e| e.to_string())
    };
    assert!(params("--params={\"a\":1}").is_ok());
    for p in [
        "--params=[1]",
        "--params={\"a\": [1]}",
        "--params={\"a\": true}",
        "--params=x",
    ] {
        let e = params(p).unwrap_err();
        assert!(e.contains("--params"), "{p}: {e}");
    }

    let probe = |argv: &[&str]| ProbeStep::parse(&words(argv)).map_err(|e| e.to_string());
    assert!(probe(&["probe", "--", "true"]).is_ok());
    assert!(
        probe(&["probe", "true"]).is_ok(),
        "the command may follow without --"
    );
    let e = probe(&["probe", "--json"]).unwrap_err();
    assert!(e.contains("COMMAND is required"), "{e}");
    let e = probe(&["probe", "--repeat=0", "--", "true"]).unwrap_err();
    assert!(e.contains("from 1 to 10000"), "{e}");
    let e = probe(&["probe", "--hide=key", "--", "true"]).unwrap_err();
    assert!(e.contains("expected ROLE=PATH"), "{e}");
    let e = probe(&["probe", "--nodes-dir=/d", "--", "true"]).unwrap_err();
    assert!(e.contains("unknown flag"), "{e}");
    let e = probe(&["probe", "--timeout=30", "--", "true"]).unwrap_err();
    assert!(e.contains("--timeout \"30\""), "{e}");
    assert_eq!(
        ProbeStep::parse(&words(&["probe", "--sandbox=required", "--", "x"]))
            .map(|s| s.sandbox.mode),
        Ok(Mode::Required)
    );
    assert_eq!(PathBuf::from("/a"), super::path("/a"));
}

#[test]
fn a_node_agent_reads_back_as_written_and_a_selection_needs_a_value() {
    let mut step = AgentStep {
        dir: "/shared/run dir/cell-2.nodes/run-1".into(),
        stall: std::time::Duration::from_millis(1500),
        memory: Some(96 << 20),
        select: vec![("SLURM_JOB_ID".into(), "12".into())],
        present: vec!["SLURM_STEP_ID".into()],
        exclude_own: vec!["SLURM_STEP_ID".into()],
        max_time: std::time::Duration::from_secs(150),
    };
    assert_eq!(&step.to_argv()[..2], ["agent", "observe"]);
    assert_eq!(AgentStep::parse(&step.to_argv()), Ok(step.clone()));
    step.memory = None;
    step.select.push(("A".into(), "b=c".into()));
    step.present.clear();
    assert_eq!(AgentStep::parse(&step.to_argv()), Ok(step.clone()));
    let e = AgentStep::parse(&words(&[
        "agent",
        "observe",
        "--dir=d",
        "--stall=1s",
        "--max-time=1s",
        "--select=SLURM_JOB_ID",
    ]))
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("--select \"SLURM_JOB_ID\": not NAME=VALUE"),
        "{e}"
    );
    let e = AgentStep::parse(&words(&["agent", "observe", "--stall=1s"]))
        .unwrap_err()
        .to_string();
    assert!(e.contains("--dir is required"), "{e}");
}
