//! `qualify run --executor slurm` against a real Slurm controller (ci/slurm-up.sh starts a
//! single-node one): a passing sweep, a deadlock, an OOM under the job's memory, a timeout, a
//! plan of 120 cells through job arrays, a job that never starts within the pending limit,
//! Ctrl-C cancelling the run's jobs, and the MPI example swept over ranks 1–4 (locally with
//! `mpirun --oversubscribe`, and under Slurm with the allocation sized by the ranks axis).
//!
//! Without a controller every Slurm test prints why it skips and passes, so `cargo test` stays
//! green on a laptop; with `QUALIFY_REQUIRE_SLURM=1` (CI) a missing controller fails instead.

#[allow(unused_macros)]
mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

const QUALIFY: &str = env!("CARGO_BIN_EXE_qualify");

fn skip_note(why: &str) {
    common::skip_note("slurm_cli", why);
}

/// Whether the Slurm tests can run; prints the reason when they skip.
fn slurm() -> bool {
    let answer = Command::new("scontrol").arg("ping").output();
    let up = matches!(&answer, Ok(o) if String::from_utf8_lossy(&o.stdout).contains("is UP"));
    if !up {
        let why = match answer {
            Ok(o) => String::from_utf8_lossy(&o.stdout)
                .lines()
                .next()
                .unwrap_or("no answer")
                .to_string(),
            Err(e) => format!("scontrol: {e}"),
        };
        assert!(
            std::env::var_os("QUALIFY_REQUIRE_SLURM").is_none(),
            "QUALIFY_REQUIRE_SLURM is set but no Slurm controller answers: {why}"
        );
        skip_note(&format!(
            "no Slurm controller answers ({why}); start one with ci/slurm-up.sh"
        ));
    }
    up
}

type Dir = common::TestDir;
type Out = common::Receipted;

fn scratch(name: &str) -> Dir {
    common::test_dir("slurm_cli", name)
}

/// `qualify run qualify.toml --receipt receipt.json EXTRA…` in `dir`.
fn run(dir: &Path, spec: &str, extra: &[&str]) -> Out {
    common::run_spec(dir, spec, extra)
}

fn outcome(cell: &Value) -> &str {
    cell["result"]["outcome"].as_str().unwrap_or("<none>")
}

fn slurm_of(cell: &Value) -> &Value {
    &cell["result"]["evidence"]["slurm"]
}

fn spec(command: &str, limits: &str, axes: &str) -> String {
    format!(
        "[artifact]\nname = \"t\"\ncommand = {command:?}\n\n[claim]\nlevel = \"trial\"\n\n[functional]\ncommand = \"true\"\n\n[executor]\nkind = \"slurm\"\n\n[limits]\n{limits}\n\n{axes}"
    )
}

#[test]
fn performance_rounds_run_as_one_job_array_per_round() {
    if !slurm() {
        return;
    }
    let dir = scratch("rounds");
    let axes = "[[axis]]\nname = \"n\"\nkind = \"workload\"\nvalues = [1, 2]\n\n[performance]\nrepeat = 3\nwarmup = 0\nseed = 5\n";
    let out = run(
        &dir,
        &spec(
            "sh -c 'echo cell {n}'",
            "timeout = \"30s\"\nstall = \"5s\"",
            axes,
        ),
        &[],
    );
    assert_eq!(out.code, 0, "{}", out.context());
    let perf = &out.receipt["predicate"]["performance"];
    assert_eq!(perf["rounds"]["rounds"], 3, "{}", out.context());
    assert_eq!(perf["rounds"]["seed"], 5);
    assert!(
        perf["rounds"]["schedule"]
            .as_str()
            .is_some_and(|s| s.contains("one job array per round")),
        "{}",
        perf["rounds"]
    );
    // Each cell ran three jobs; the jobs of one round belong to one array, each round's to
    // another.
    let arrays = |cell: &Value| -> Vec<String> {
        cell["result"]["runs"]
            .as_array()
            .map(|runs| {
                runs.iter()
                    .filter_map(|r| r["evidence"]["slurm"]["job_id"].as_str())
                    .map(|j| j.split('_').next().unwrap_or(j).to_string())
                    .collect()
            })
            .unwrap_or_default()
    };
    let cells = out.cells();
    assert_eq!(cells.len(), 2, "{}", out.context());
    let (a, b) = (arrays(&cells[0]), arrays(&cells[1]));
    assert_eq!(a.len(), 3, "{}", cells[0]);
    assert_eq!(a, b, "both cells' jobs of a round share its array");
    let distinct: std::collections::BTreeSet<&String> = a.iter().collect();
    assert_eq!(distinct.len(), 3, "one array per round: {a:?}");
}

#[test]
fn a_passing_sweep_runs_as_slurm_jobs() {
    if !slurm() {
        return;
    }
    let dir = scratch("pass");
    let out = run(
        &dir,
        &spec(
            "sh -c 'echo cell {n}'",
            "timeout = \"30s\"\nstall = \"5s\"",
            "[[axis]]\nname = \"n\"\nkind = \"workload\"\nvalues = [1, 2, 3]\n",
        ),
        &[],
    );
    assert_eq!(out.code, 0, "{}", out.context());
    assert_eq!(out.cells().len(), 3, "{}", out.context());
    for cell in out.cells() {
        assert_eq!(outcome(cell), "ok", "{cell}");
        let s = slurm_of(cell);
        // The job's script ended: Slurm says COMPLETED, or COMPLETING while its epilog still
        // runs (the executor takes the cell's result then; a busy machine's epilog is slower).
        assert!(
            s["state"] == "COMPLETED" || s["state"] == "COMPLETING",
            "{cell}"
        );
        assert_eq!(s["exit_code"], 0, "{cell}");
        assert!(
            s["job_id"].as_str().is_some_and(|j| j.contains('_')),
            "{cell}"
        );
        let n = cell["params"]["n"].as_i64().expect("n");
        assert!(
            cell["result"]["stdout_tail"]
                .as_str()
                .is_some_and(|t| t.contains(&format!("cell {n}"))),
            "the probe inside the job ran the cell's own command: {cell}"
        );
    }
    // The whole receipt and what the run printed: a Slurm run.
    common::assert_receipt_golden("pinned_slurm_receipt", &out.receipt);
    common::assert_transcript("pinned_slurm", &dir, &out.stdout, &out.stderr, &[]);
}

#[test]
fn a_deadlock_inside_a_job_is_classified_by_the_probe() {
    if !slurm() {
        return;
    }
    let dir = scratch("deadlock");
    let lockorder = common::bin("lockorder");
    let out = run(
        &dir,
        &spec(
            &format!("{lockorder} {{n}}"),
            "timeout = \"60s\"\nstall = \"2s\"",
            "[[axis]]\nname = \"n\"\nkind = \"workload\"\nvalues = [1]\n",
        ),
        &[],
    );
    assert_eq!(out.code, 1, "{}", out.context());
    let cell = &out.cells()[0];
    assert_eq!(outcome(cell), "deadlock", "{cell}");
    // The probe exits 1 for any outcome but ok; Slurm saw an ordinary failed job.
    assert_eq!(slurm_of(cell)["state"], "FAILED", "{cell}");
    assert_eq!(slurm_of(cell)["exit_code"], 1, "{cell}");
}

#[test]
fn an_oom_under_the_job_memory_is_oom_killed() {
    if !slurm() {
        return;
    }
    let dir = scratch("oom");
    let alloc = common::bin("alloc");
    let out = run(
        &dir,
        &spec(
            &format!("{alloc} {{mib}}"),
            "memory = \"64MiB\"\ntimeout = \"60s\"\nstall = \"5s\"",
            "[[axis]]\nname = \"mib\"\nkind = \"workload\"\nvalues = [16, 256]\n",
        ),
        &[],
    );
    assert_eq!(out.code, 1, "{}", out.context());
    for cell in out.cells() {
        let mib = cell["params"]["mib"].as_i64().expect("mib");
        let want = if mib == 16 { "ok" } else { "oom_killed" };
        assert_eq!(outcome(cell), want, "{cell}");
        assert!(slurm_of(cell)["job_id"].is_string(), "{cell}");
    }
}

#[test]
fn slurms_own_memory_kill_is_oom_killed_when_the_probe_had_no_ceiling() {
    if !slurm() {
        return;
    }
    let dir = scratch("slurm-oom");
    let alloc = common::bin("alloc");
    // No probe ceiling; the job's own allocation (sbatch_options come last) is 100 MiB, and
    // the program holds 400 MiB long enough for Slurm's memory accounting to see it.
    let text = spec(
        &format!("{alloc} {{mib}} 15"),
        "timeout = \"60s\"\nstall = \"30s\"",
        "[[axis]]\nname = \"mib\"\nkind = \"workload\"\nvalues = [400]\n",
    )
    .replace(
        "kind = \"slurm\"\n",
        "kind = \"slurm\"\nsbatch_options = [\"--mem=100M\"]\n",
    );
    let out = run(&dir, &text, &[]);
    assert_eq!(out.code, 1, "{}", out.context());
    let cell = &out.cells()[0];
    assert_eq!(outcome(cell), "oom_killed", "{cell}");
    assert_eq!(cell["result"]["enforcement"]["backend"], "slurm", "{cell}");
    assert_eq!(slurm_of(cell)["memory_kill"], true, "{cell}");
}

#[test]
fn a_timeout_inside_a_job_is_a_timeout() {
    if !slurm() {
        return;
    }
    let dir = scratch("timeout");
    let out = run(
        &dir,
        &spec(
            "sleep {s}",
            "timeout = \"2s\"\nstall = \"1s\"",
            "[[axis]]\nname = \"s\"\nkind = \"workload\"\nvalues = [60]\n",
        ),
        &[],
    );
    assert_eq!(out.code, 1, "{}", out.context());
    let cell = &out.cells()[0];
    assert_eq!(outcome(cell), "timeout", "{cell}");
    assert!(slurm_of(cell)["state"].is_string(), "{cell}");
}

#[test]
fn a_plan_of_120_cells_completes_through_the_scheduler() {
    if !slurm() {
        return;
    }
    let dir = scratch("many");
    let out = run(
        &dir,
        &spec(
            "test {i} -gt 0",
            "timeout = \"60s\"\nstall = \"10s\"",
            "[[axis]]\nname = \"i\"\nkind = \"workload\"\nrange = [1, 120]\nstep = 1\n",
        ),
        &[],
    );
    assert_eq!(out.code, 0, "{}", out.context());
    assert_eq!(out.cells().len(), 120, "{}", out.context());
    let mut jobs = std::collections::BTreeSet::new();
    for cell in out.cells() {
        assert_eq!(outcome(cell), "ok", "{cell}");
        let id = slurm_of(cell)["job_id"].as_str().expect("job id");
        jobs.insert(id.split('_').next().unwrap_or("").to_string());
    }
    assert!(
        jobs.len() < 120,
        "cells were batched into job arrays, not one job each: {jobs:?}"
    );
    assert_eq!(out.receipt["predicate"]["tested"]["cells_completed"], 120);
}

#[test]
fn a_job_that_never_starts_is_reported_as_not_started_not_as_a_failure() {
    if !slurm() {
        return;
    }
    let dir = scratch("pending");
    let text = spec(
        "true {n}",
        "timeout = \"30s\"",
        "[[axis]]\nname = \"n\"\nkind = \"workload\"\nvalues = [1]\n",
    )
    .replace(
        "kind = \"slurm\"\n",
        "kind = \"slurm\"\nsbatch_options = [\"--begin=now+1hour\"]\npending_limit = \"3s\"\n",
    );
    let out = run(&dir, &text, &[]);
    assert_eq!(
        out.code,
        130,
        "an unexamined cell leaves the run incomplete\n{}",
        out.context()
    );
    let cell = &out.cells()[0];
    assert_eq!(outcome(cell), "interrupted", "{cell}");
    assert_eq!(
        cell["result"]["detail"], "pending limit reached: not started",
        "{cell}"
    );
    let tested = &out.receipt["predicate"]["tested"];
    assert_eq!(tested["cells_completed"], 0, "{tested}");
    assert_eq!(tested["cells_interrupted"], 1, "{tested}");
    assert_ne!(
        out.receipt["predicate"]["layers"]["envelope"]["status"], "closed",
        "{}",
        out.receipt["predicate"]["layers"]
    );
}

#[test]
fn ctrl_c_cancels_the_runs_jobs() {
    if !slurm() {
        return;
    }
    let dir = scratch("cancel");
    std::fs::write(
        dir.join("qualify.toml"),
        spec(
            "sleep {s}",
            "timeout = \"120s\"\nstall = \"60s\"",
            "[[axis]]\nname = \"s\"\nkind = \"workload\"\nvalues = [100, 101, 102]\n",
        ),
    )
    .expect("write spec");
    let child = Command::new(QUALIFY)
        .args(["run", "qualify.toml", "--receipt", "receipt.json"])
        .current_dir(&*dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start qualify");
    let prefix = format!("qualify-{}-", child.id());
    let jobs = || -> usize {
        let out = Command::new("squeue")
            .args(["-h", "-r", "-o", "%j"])
            .output()
            .expect("squeue");
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| l.starts_with(&prefix))
            .count()
    };
    let start = Instant::now();
    while jobs() == 0 {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "qualify never submitted"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .expect("send SIGINT");
    let out = child.wait_with_output().expect("wait for qualify");
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let start = Instant::now();
    while jobs() > 0 {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the run's jobs were not cancelled"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let receipt: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("receipt.json")).expect("receipt written"),
    )
    .expect("receipt JSON");
    for cell in receipt["predicate"]["cells"].as_array().expect("cells") {
        assert_eq!(outcome(cell), "interrupted", "{cell}");
    }
}

fn mpi_available() -> bool {
    let ok = ["mpicc", "mpirun"].iter().all(|t| {
        Command::new(t)
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    });
    if !ok {
        assert!(
            std::env::var_os("QUALIFY_REQUIRE_SLURM").is_none(),
            "QUALIFY_REQUIRE_SLURM is set but mpicc/mpirun are missing (apt-get install openmpi-bin libopenmpi-dev)"
        );
        skip_note("mpicc/mpirun not installed (apt-get install openmpi-bin libopenmpi-dev)");
    }
    ok
}

fn mpi_example(name: &str) -> Dir {
    let dir = scratch(name);
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/mpi");
    for f in ["ring.c", "qualify.toml"] {
        std::fs::copy(src.join(f), dir.join(f)).expect("copy the MPI example");
    }
    dir
}

fn run_existing(dir: &Path, extra: &[&str]) -> Out {
    let spec = std::fs::read_to_string(dir.join("qualify.toml")).expect("read spec");
    run(dir, &spec, extra)
}

#[test]
fn the_mpi_example_sweeps_ranks_locally_and_flags_oversubscription() {
    if !mpi_available() {
        return;
    }
    let _cpu = common::cpu_heavy();
    let dir = mpi_example("mpi-local");
    let out = run_existing(&dir, &["--executor", "local"]);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as i64;
    assert_eq!(out.cells().len(), 4, "{}", out.context());
    for cell in out.cells() {
        let ranks = cell["params"]["ranks"].as_i64().expect("ranks");
        assert_eq!(outcome(cell), "ok", "{cell}");
        assert!(
            cell["result"]["stdout_tail"]
                .as_str()
                .is_some_and(|t| t.contains(&format!("{ranks} ranks"))),
            "{cell}"
        );
        let flagged = cell["result"]["flags"]
            .as_array()
            .is_some_and(|f| f.iter().any(|f| f == "oversubscribed"));
        assert_eq!(
            flagged,
            ranks > cores,
            "ranks {ranks} on {cores} cores: {cell}"
        );
    }
    let topo = &out.receipt["predicate"]["tested"]["topology"];
    assert_eq!(topo["ranks"], 4, "{topo}");
    assert_eq!(topo["nodes"], 1, "{topo}");
}

#[test]
fn under_slurm_the_ranks_axis_sizes_the_allocation() {
    if !slurm() {
        return;
    }
    let dir = scratch("ranks");
    let out = run(
        &dir,
        &spec(
            "hostname",
            "timeout = \"60s\"\nstall = \"10s\"",
            "[[axis]]\nname = \"ranks\"\nkind = \"topology\"\nvalues = [1, 2]\n",
        )
        .replace(
            "command = \"hostname\"\n",
            "command = \"hostname\"\nlauncher = \"srun -n {ranks}\"\n",
        ),
        &[],
    );
    assert_eq!(out.code, 0, "{}", out.context());
    for cell in out.cells() {
        let ranks = cell["params"]["ranks"].as_i64().expect("ranks");
        assert_eq!(outcome(cell), "ok", "{cell}");
        assert_eq!(slurm_of(cell)["ntasks"], ranks, "{cell}");
        let lines = cell["result"]["stdout_tail"]
            .as_str()
            .map_or(0, |t| t.lines().count());
        assert_eq!(
            lines as i64, ranks,
            "srun started one task per rank: {cell}"
        );
    }
    let topo = &out.receipt["predicate"]["tested"]["topology"];
    assert_eq!(topo["ranks"], 2, "{topo}");
    assert_eq!(topo["nodes"], 1, "{topo}");
}

#[test]
fn a_topology_the_cluster_cannot_host_is_not_examined() {
    if !slurm() {
        return;
    }
    let cpus: i64 = Command::new("sinfo")
        .args(["-h", "-o", "%C"])
        .output()
        .ok()
        .and_then(|o| {
            // allocated/idle/other/total
            let text = String::from_utf8_lossy(&o.stdout).into_owned();
            text.trim().split('/').nth(3)?.parse().ok()
        })
        .expect("sinfo -o %C");
    let too_many = cpus + 1;
    let dir = scratch("unhostable");
    let out = run(
        &dir,
        &spec(
            "true",
            "timeout = \"30s\"",
            &format!("[[axis]]\nname = \"ranks\"\nkind = \"topology\"\nvalues = [1, {too_many}]\n"),
        )
        .replacen(
            "command = \"true\"\n",
            "command = \"true\"\nlauncher = \"srun -n {ranks}\"\n",
            1,
        ),
        &[],
    );
    assert_eq!(out.code, 130, "{}", out.context());
    for cell in out.cells() {
        let ranks = cell["params"]["ranks"].as_i64().expect("ranks");
        if ranks == 1 {
            assert_eq!(outcome(cell), "ok", "{cell}");
        } else {
            assert_eq!(outcome(cell), "interrupted", "{cell}");
            let detail = cell["result"]["detail"].as_str().unwrap_or("");
            assert!(detail.contains("cannot host this allocation"), "{cell}");
        }
    }
    assert_eq!(out.receipt["predicate"]["tested"]["topology"]["ranks"], 1);
}
