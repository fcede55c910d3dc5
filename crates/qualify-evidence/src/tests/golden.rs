//! The receipt's shape pinned byte for byte: a fixed, rich [`RunRecord`] (target, waivers,
//! functional with JUnit counts, held-out checks, trace and git, a fingerprint, repeats, cells of
//! several outcomes with flags and evidence, a boundary, a performance section with rounds and a
//! noisy cell, a control, dependencies with a fault axis and a fault cell whose `result.faults`
//! sets every field) is
//! rendered and compared with `golden/receipt.json`. A refactor must not change a byte; a change
//! of the receipt's shape is deliberate and is re-blessed with
//! `QUALIFY_BLESS=1 cargo test -p qualify-evidence golden` (review the diff).

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use qualify_model::{Flag, Outcome, TimeoutKind};
use serde_json::json;

use super::*;
use crate::holdout::{HoldoutCheck, HoldoutRun};
use crate::receipt::build;
use crate::record::{GitSummary, ProcessRecord, ReproducibilityDecl};

fn fingerprint() -> qualify_trust::Fingerprint {
    serde_json::from_value(json!({
        "os": {
            "name": "Debian GNU/Linux 12 (bookworm)",
            "id": "debian",
            "version_id": "12",
            "kernel": "Linux",
            "kernel_release": "6.1.0-test",
            "kernel_version": "#1 SMP"
        },
        "architecture": "x86_64",
        "cpu_model": "Test CPU @ 2.0GHz",
        "cores_online": 2,
        "cores_allowed": 2,
        "memory_bytes": 25769803776u64,
        "cgroup_version": "hybrid",
        "backend": "cgroup1",
        "tools": [{"command": "cc --version", "version": "cc 12.2.0", "status": "ok"}],
        "git": {"commit": "c".repeat(40), "tree": "d".repeat(40), "dirty": false},
        "lockfiles": [{"path": "Cargo.lock", "sha256": "e".repeat(64)}],
        "artifact_sha256": "a".repeat(64),
        "spec_sha256": "b".repeat(64),
        "qualify_version": "0.1.0",
        "env": {"LANG": "C.UTF-8", "API_TOKEN": "<redacted>"},
        "redacted": ["API_TOKEN"]
    }))
    .unwrap()
}

fn repeated(outcome: Outcome, n: usize) -> qualify_model::ProbeResult {
    let runs: Vec<_> = (0..n).map(|_| probe(outcome)).collect();
    qualify_model::ProbeResult::combine(runs).unwrap()
}

/// A development trace in qualify's own format: a failing test run, an edit, the tests
/// passing (a repair), and two runs of the artifact at n = 256 with one and two threads.
pub fn dev_record() -> qualify_trace::DevRecord {
    let lines = [
        r#"{"type":"message","role":"user","text":"(an invented prompt)","ts":"2027-01-15T07:00:00Z"}"#,
        r#"{"type":"test_run","command":"cargo test","ok":false,"ts":"2027-01-15T07:05:00Z","model":"test-model-1","agent":"test-agent","agent_version":"1.0"}"#,
        r#"{"type":"edit","file":"src/gemm.rs","ts":"2027-01-15T07:10:00Z"}"#,
        r#"{"type":"test_run","command":"cargo test","ok":true,"ts":"2027-01-15T07:15:00Z"}"#,
        r#"{"type":"tool_call","tool":"shell","command":"./gemm --threads 1 --n 256","exit_code":0,"duration":1.5,"ts":"2027-01-15T07:20:00Z"}"#,
        r#"{"type":"tool_call","tool":"shell","command":"./gemm --n 256 --threads 2","exit_code":0,"duration":1.0,"ts":"2027-01-15T07:30:00Z"}"#,
    ];
    let spec = qualify_trace::SpecView {
        command: ["./gemm", "--threads", "{threads}", "--n", "{n}"]
            .map(String::from)
            .to_vec(),
        axes: vec!["threads".into(), "n".into(), "db_fault".into()],
        ..Default::default()
    };
    let file = qualify_trace::TraceFile {
        path: "trace.jsonl".to_string(),
        bytes: lines.join("\n").into_bytes(),
        in_directory: false,
    };
    qualify_trace::read(&[file], None, &spec).unwrap()
}

/// A production claim on the design notes' big target, partly examined: a concurrency sweep,
/// a workload boundary search, one control, performance with one model and one check.
pub fn rich_record() -> RunRecord {
    let start = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
    let mut r = record();
    r.claim = ClaimLevel::Production;
    r.target = Target {
        concurrency: Some(8),
        workload: [("n".to_string(), 4096.0)].into_iter().collect(),
        ..big_target()
    };
    r.waivers = vec![
        Waiver {
            gap: "topology.nodes".to_string(),
            reason: "single-node CI".to_string(),
        },
        Waiver {
            gap: "faults.cache".to_string(),
            reason: "the cache is optional: misses go to db".to_string(),
        },
    ];
    r.dependencies = vec!["db".to_string(), "cache".to_string()];
    r.axes.push(axis(
        "db_fault".to_string(),
        AxisKind::Fault,
        AxisDomain::Values(vec![
            ParamValue::Text("none".to_string()),
            ParamValue::Text("latency(200ms)".to_string()),
        ]),
    ));
    r.functional = functional_with(
        Outcome::Ok,
        Some(JunitCounts {
            tests: 12,
            failures: 0,
            errors: 0,
            skipped: 1,
        }),
    );
    r.holdout = HoldoutRun {
        required: true,
        checks: Some(vec![
            HoldoutCheck {
                sha256: "1".repeat(64),
                outcome: "ok".to_string(),
            },
            HoldoutCheck {
                sha256: "2".repeat(64),
                outcome: "exit_failure".to_string(),
            },
        ]),
        secrecy: None,
    };
    r.artifact.tree = Some(crate::record::TreeDigest {
        path: "/work/gemm".to_string(),
        sha256: "9".repeat(64),
        method: "git".to_string(),
        files: 12,
    });
    r.process = ProcessRecord {
        trace: Some(dev_record()),
        git: Some(GitSummary {
            since: "HEAD~2".to_string(),
            head: "abc1234".to_string(),
            commits: 2,
            files_changed: 3,
            test_files_changed: vec!["tests/gemm.rs".to_string()],
        }),
    };
    r.environment = Some(fingerprint());
    r.reproducibility = ReproducibilityDecl::default();

    let mut cells = Vec::new();
    let mut control = cell(
        &[("threads", json!(2)), ("n", json!(1024))],
        Outcome::Deadlock,
    );
    control.control = true;
    control.result.detail = "every thread blocked in futex for the stall window".to_string();
    control.result.evidence = json!({"blocked": [{"pid": 10, "tid": 11, "wait": "futex"}]});
    cells.push(control);
    for t in [1, 2] {
        let mut c = Cell::new(
            [("threads", pv(json!(t))), ("n", pv(json!(256)))]
                .into_iter()
                .collect(),
            repeated(Outcome::Ok, 3),
            false,
        );
        c.result.stdout_tail = "x".repeat(3000);
        c.result.flags = vec![Flag::OutputTruncated];
        cells.push(c);
    }
    for (n, outcome) in [(512, Outcome::Ok), (2048, Outcome::OomKilled)] {
        cells.push(Cell::new(
            [("threads", pv(json!(2))), ("n", pv(json!(n)))]
                .into_iter()
                .collect(),
            probe(outcome),
            true,
        ));
    }
    let mut slow = cell(
        &[("threads", json!(4)), ("n", json!(256))],
        Outcome::Timeout,
    );
    slow.result.timeout_kind = Some(TimeoutKind::Busy);
    slow.result.flags = vec![Flag::Oversubscribed, Flag::CpuThrottled];
    cells.push(slow);
    cells.push(cell(
        &[("threads", json!(8)), ("n", json!(256))],
        Outcome::Interrupted,
    ));
    // Beyond the claimed region (n = 8192 > target 4096): explored, not claimed.
    cells.push(cell(
        &[("threads", json!(1)), ("n", json!(8192))],
        Outcome::Crash,
    ));
    // A service-style fault cell: db latency with a restart and a write check; dependency
    // `cache` got no fault (a waived gap).
    let mut faulted = cell(
        &[
            ("threads", json!(1)),
            ("n", json!(256)),
            ("db_fault", json!("latency(200ms)")),
        ],
        Outcome::NotRecovered,
    );
    faulted.result.detail = "SLOs did not hold again within recover_within 5 s".to_string();
    faulted.result.faults = vec![fault_record()];
    cells.push(faulted);
    r.headroom = qualify_model::Headroom {
        all: None,
        axes: [("n".to_string(), 1.5)].into_iter().collect(),
    };
    r.cells = cells;
    r.planned_cells = Some(6);
    r.boundaries = vec![boundary(json!({
        "axis": "n",
        "fixed": {"threads": 2},
        "last_pass": 512,
        "first_fail": 2048,
        "outcome": "oom_killed",
        "probes": 2,
        "monotonic": true
    }))];
    r.performance = Some(performance(json!({
        "repeat": "auto",
        "warmup": 0,
        "rounds": {"seed": 7, "rounds": 6, "precision": 0.05, "precision_metrics": ["cpu"],
                   "max_repeat": 20, "stopped": "every cell reached the precision (5%) after 6 round(s)",
                   "wall_seconds": 12.5, "schedule": "round 1: the plan's own order; later rounds shuffled"},
        "metrics": [{"name": "cpu", "unit": "s", "better": "lower", "estimator": "min"}],
        "models": [{
            "metric": "cpu",
            "axis": "n",
            "fixed": {"threads": 1},
            "estimator": "min",
            "form": "n^2", "exponent": 2.0, "log_exponent": 0, "effective_exponent": 2.0,
            "coefficients": [0.01, 1e-6], "error": 0.01, "fit_error": 0.008, "points": 4,
            "exponent_ci95": [1.9, 2.1],
            "censored_cells": 0
        }],
        "checks": [{"kind": "max_exponent", "axis": "n", "metric": "cpu", "limit": 2.5,
                    "observed": 2.0, "interval": [1.9, 2.1], "passed": true, "verdict": "held",
                    "samples": 6, "detail": "n^2 ≤ n^2.5"}],
        "stats": [{"params": {"n": 512, "threads": 1}, "metric": "cpu", "n": 6, "censored": 0,
                   "estimator": "min", "estimate": 0.5, "precision": 0.01, "precision_reached": true,
                   "noise": ["two clusters of runs (multimodal)"]}],
        "unfitted": [],
        "scaling": [],
        "predictions": [],
        "errors": []
    })));
    r.incomplete = true;
    r.started = start;
    r.finished = start + Duration::from_secs(95);
    r
}

/// Every field of a fault record set.
fn fault_record() -> crate::faults::FaultRecord {
    use crate::faults::*;
    let phase = |requests, errors, timeouts, p50, p99, peak, connections| PhaseRecord {
        requests,
        errors,
        timeouts,
        latency_p50: Some(p50),
        latency_p99: Some(p99),
        peak_in_flight: peak,
        succeeded: requests - errors,
        seconds: requests as f64 / 100.0,
        fast_errors: errors - timeouts,
        fast_error_p50: (errors > timeouts).then_some(0.2),
        fast_error_p99: (errors > timeouts).then_some(0.21),
        dependency: Some(DependencyPhaseRecord {
            connections_opened: connections,
            failed_connects: None,
            peak_connections: 10,
            peak_busy_connections: 10,
            requests: requests * 2,
            replies: requests * 2,
            bytes_upstream: requests * 60,
            bytes_downstream: requests * 20,
            resets: 0,
            http: Some(HttpPhaseRecord {
                statuses: [("200".to_string(), requests * 2)].into_iter().collect(),
                injected: 0,
                delayed: 0,
            }),
        }),
    };
    FaultRecord {
        dependency: Some("db".to_string()),
        fault: "latency(200ms)".to_string(),
        window: Some(WindowRecord {
            start_seconds: 3.0,
            end_seconds: 8.0,
        }),
        recover_within_seconds: Some(5.0),
        behaviour: BehaviourRecord {
            verdict: "hangs".to_string(),
            detail: "200 of 500 requests in the window timed out (no answer within 1.0 s), 0 failed fast; peak 64 in flight, not recovered by the end of the load; 151 threads left after the window (7 before it, 163 at the peak in it, 158 after the load ended)".to_string(),
            recovery_seconds: None,
            error_rate_before: Some(0.0),
            error_rate_during: Some(0.4),
            error_rate_after: Some(0.1),
            amplification_before: Some(AmplificationRecord {
                requests: 2.0,
                connections: 0.03,
            }),
            amplification_during: Some(AmplificationRecord {
                requests: 2.0,
                connections: 0.0,
            }),
            amplification_after: Some(AmplificationRecord {
                requests: 2.0,
                connections: 0.0,
            }),
            attempts_per_request: Some(0.0),
            pool: Some(PoolRecord {
                connections: 10,
                all_busy: true,
                requests_queued: true,
            }),
            noise_floor: Some(NoiseFloorRecord {
                p99: 2.1,
                p50: 1.5,
                control_p99: Some(2.1),
                control_p50: Some(1.2),
                before_window_p99: Some(1.3),
            }),
            left_after_window: vec![ResourceRecord {
                kind: "threads".to_string(),
                before: 7,
                peak_during: 163,
                end: 158,
            }],
            expected: Some(vec!["fails_fast".to_string(), "degrades".to_string()]),
        },
        phases: Some(PhasesRecord {
            before: phase(300, 0, 0, 0.001, 0.004, 3, 10),
            during: phase(500, 200, 200, 1.9, 2.0, 64, 0),
            after: phase(400, 40, 40, 0.002, 0.5, 64, 0),
        }),
        restart: Some(RestartRecord {
            signal: "SIGKILL".to_string(),
            at_seconds: 10.0,
            ready_after_seconds: Some(1.4),
            errors_during_restart: 37,
        }),
        writes: Some(WritesRecord {
            attempted: 4900,
            acknowledged: 4812,
            ok: 4810,
            lost: 2,
            recovered: 3,
            unexpected: 0,
            unread: 0,
            failed: Some(80),
            unknown: Some(8),
            first_lost: vec![4801, 4802],
            first_unexpected: Vec::new(),
            valid: false,
            history: Some(HistoryFile {
                path: "histories/0a1b.jsonl".to_string(),
                sha256: "0a1b".to_string(),
                lines: 4900,
            }),
            checker: Some(CheckerRecord {
                command: "python3 check.py histories/0a1b.jsonl".to_string(),
                verdict: "invalid".to_string(),
                exit: Some(1),
                detail: "2 of 4812 acknowledged writes lost".to_string(),
            }),
        }),
        killed_instance: None,
        process: Some(ProcessRecord {
            action: "kill".to_string(),
            signal: "SIGKILL".to_string(),
            processes: 3,
            down_at_seconds: Some(3.0),
            gone_at_seconds: Some(3.01),
            resumed_at_seconds: Some(8.0),
            ready_at_seconds: Some(9.5),
            stopped: Some(KilledInstance {
                outcome: qualify_model::Outcome::Killed,
                detail: "killed by the fault's SIGKILL".to_string(),
            }),
            errors: Vec::new(),
        }),
    }
}

fn golden_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src/tests/golden/receipt.json")
}

#[test]
fn golden_receipt_is_unchanged() {
    let text = build(&rich_record()).to_json().unwrap();
    let path = golden_path();
    if std::env::var_os("QUALIFY_BLESS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &text).unwrap();
        return;
    }
    let golden = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e}; create it with QUALIFY_BLESS=1 cargo test -p qualify-evidence golden",
            path.display()
        )
    });
    if text != golden {
        let (line, (got, want)) = text
            .lines()
            .zip(golden.lines())
            .enumerate()
            .find(|(_, (a, b))| a != b)
            .unwrap_or((
                text.lines().count().min(golden.lines().count()),
                ("<end>", "<end>"),
            ));
        panic!(
            "the receipt's JSON changed at line {}:\n  golden: {want}\n  now:    {got}\n(re-bless with QUALIFY_BLESS=1 only if the change is deliberate)",
            line + 1
        );
    }
}
