//! `qualify run --executor slurm` on a multi-node cluster (`ci/slurm-up.sh --nodes 3`: nodes in
//! network namespaces on a private bridge): cells whose ranks span nodes, watched by one qualify
//! agent per node and judged by the merge of their reports — an MPI program that passes on one to
//! three nodes, one that deadlocks only when its ranks span nodes (found by a `nodes` sweep,
//! drawn nodes × ranks), a rank over the per-node memory ceiling, a rank that crashes, and a node
//! that dies during a cell (`interrupted`, not examined).
//!
//! Without a cluster of at least three nodes these tests print why they skip and pass;
//! `QUALIFY_REQUIRE_SLURM_NODES=3` (CI) makes that a failure.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{RwLock, RwLockReadGuard};
use std::time::{Duration, Instant};

use serde_json::Value;

#[allow(unused_macros)]
mod common;

const QUALIFY: &str = env!("CARGO_BIN_EXE_qualify");
const NODES: usize = 3;

/// Tests share the cluster; the one that kills a node has it to itself.
static CLUSTER: RwLock<()> = RwLock::new(());

fn shared() -> RwLockReadGuard<'static, ()> {
    CLUSTER.read().unwrap_or_else(|e| e.into_inner())
}

fn skip_note(why: &str) {
    common::skip_note("nodes_cli", why);
}

fn required() -> bool {
    std::env::var_os("QUALIFY_REQUIRE_SLURM_NODES").is_some()
}

/// The cluster's nodes when a controller answers and it has at least three of them, and MPI
/// is installed; otherwise why the tests skip. Asked once per test binary (a controller that
/// does not answer makes every client call wait for its timeout).
fn cluster() -> Option<Vec<String>> {
    static ANSWER: std::sync::OnceLock<Result<Vec<String>, String>> = std::sync::OnceLock::new();
    let why = ANSWER.get_or_init(|| {
        let ping = Command::new("scontrol").arg("ping").output().ok();
        if !ping.is_some_and(|o| String::from_utf8_lossy(&o.stdout).contains("is UP")) {
            return Err(
                "no Slurm controller answers; start one with ci/slurm-up.sh --nodes 3".to_string(),
            );
        }
        let out = Command::new("sinfo")
            .args(["-h", "-N", "-o", "%N"])
            .output()
            .map_err(|e| format!("sinfo: {e}"))?;
        let mut nodes: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| l.trim().to_string())
            .filter(|l| !l.is_empty())
            .collect();
        nodes.sort();
        nodes.dedup();
        if nodes.len() < NODES {
            return Err(format!(
                "the cluster has {} node(s), these tests need {NODES} (ci/slurm-up.sh --nodes 3)",
                nodes.len()
            ));
        }
        let mpi = ["mpicc", "srun"].iter().all(|t| {
            Command::new(t)
                .arg("--version")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        });
        if !mpi {
            return Err(
                "mpicc is not installed (apt-get install openmpi-bin libopenmpi-dev)".into(),
            );
        }
        Ok(nodes)
    });
    match why {
        Ok(nodes) => Some(nodes.clone()),
        Err(why) => {
            assert!(!required(), "QUALIFY_REQUIRE_SLURM_NODES is set, but {why}");
            skip_note(why);
            None
        }
    }
}

/// A fresh directory for one test (with `shm/` for Open MPI's segments), removed when it passes.
fn scratch(name: &str) -> common::TestDir {
    let dir = common::test_dir("nodes_cli", name);
    std::fs::create_dir_all(dir.join("shm")).expect("create scratch dir");
    dir
}

/// Compile an MPI program into `dir`.
fn mpicc(dir: &Path, src: &str, name: &str) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(src);
    let out = Command::new("mpicc")
        .args(["-O2", "-o"])
        .arg(dir.join(name))
        .arg(&src)
        .output()
        .expect("run mpicc");
    assert!(
        out.status.success(),
        "mpicc {}: {}",
        src.display(),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A spec whose cells run as Slurm jobs with `srun --mpi=pmix` as the launcher.
fn spec(command: &str, limits: &str, axes: &str, extra: &str) -> String {
    format!(
        r#"[artifact]
name = "t"
command = {command}
launcher = "mpirun --oversubscribe -n {{ranks}}"

[artifact.env]
OMPI_ALLOW_RUN_AS_ROOT = "1"
OMPI_ALLOW_RUN_AS_ROOT_CONFIRM = "1"
# A rank killed by qualify cannot remove its shared-memory segment: keep them here.
OMPI_MCA_btl_vader_backing_directory = "shm"

[claim]
level = "trial"

[functional]
command = "true"

[executor]
kind = "slurm"
launcher = "srun --mpi=pmix -n {{ranks}}"
sbatch_options = ["--overcommit"]

[limits]
{limits}

{axes}
{extra}"#
    )
}

type Out = common::Receipted;

fn run(dir: &Path, spec: &str) -> Out {
    common::run_spec(dir, spec, &["--no-ledger"])
}

fn outcome(cell: &Value) -> &str {
    cell["result"]["outcome"].as_str().unwrap_or("<none>")
}

fn detail(cell: &Value) -> &str {
    cell["result"]["detail"].as_str().unwrap_or("")
}

fn int(cell: &Value, axis: &str) -> u64 {
    cell["params"][axis].as_u64().expect("integer axis")
}

/// node → ranks seen there (from the cell's `evidence.nodes.placement`).
fn placement(cell: &Value) -> Vec<(String, Vec<u64>)> {
    cell["result"]["evidence"]["nodes"]["placement"]
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(n, r)| {
                    let ranks = r
                        .as_array()
                        .map(|a| a.iter().filter_map(Value::as_u64).collect())
                        .unwrap_or_default();
                    (n.clone(), ranks)
                })
                .collect()
        })
        .unwrap_or_default()
}

fn node_of(cell: &Value, rank: u64) -> String {
    placement(cell)
        .into_iter()
        .find(|(_, ranks)| ranks.contains(&rank))
        .map(|(n, _)| n)
        .unwrap_or_else(|| panic!("rank {rank} not placed: {cell}"))
}

#[test]
fn an_mpi_program_passes_on_one_to_three_nodes_and_closes_the_nodes_gap() {
    let Some(_) = cluster() else { return };
    let _cluster = shared();
    let dir = scratch("ring");
    mpicc(&dir, "examples/mpi/ring.c", "ring");
    let out = run(
        &dir,
        &spec(
            "[\"./ring\", \"300\"]",
            "memory = \"512MiB\"\ntimeout = \"60s\"\nstall = \"5s\"",
            "[[axis]]\nname = \"nodes\"\nkind = \"topology\"\nvalues = [1, 2, 3]\n\n[[axis]]\nname = \"ranks\"\nkind = \"topology\"\nvalues = [3]\n",
            "[target]\nnodes = 3\n",
        ),
    );
    assert_eq!(out.code, 0, "{}", out.context());
    assert_eq!(out.cells().len(), 3, "{}", out.context());
    for cell in out.cells() {
        assert_eq!(outcome(cell), "ok", "{cell}");
        assert!(
            cell["result"]["stdout_tail"]
                .as_str()
                .is_some_and(|t| t.contains("ring: 3 ranks")),
            "{cell}"
        );
        // The ranks ran where Slurm placed them: one node per node asked for.
        let nodes = int(cell, "nodes") as usize;
        let placed = placement(cell);
        assert_eq!(placed.len(), nodes, "{cell}");
        let mut ranks: Vec<u64> = placed.iter().flat_map(|(_, r)| r.clone()).collect();
        ranks.sort_unstable();
        assert_eq!(ranks, [0, 1, 2], "{cell}");
        assert_eq!(cell["result"]["evidence"]["nodes"]["nodes_reached"], nodes);
    }
    let tested = &out.receipt["predicate"]["tested"]["topology"];
    assert_eq!(tested["nodes"], 3, "{tested}");
    let gaps = out.receipt["predicate"]["gap"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(
        gaps.iter().all(|g| g["name"] != "nodes"),
        "three nodes examined close the target's nodes gap: {gaps:?}"
    );
}

#[test]
fn a_deadlock_only_across_nodes_is_found_by_a_nodes_sweep_and_drawn_nodes_by_ranks() {
    let Some(_) = cluster() else { return };
    let _cluster = shared();
    let dir = scratch("node-ring");
    mpicc(&dir, "corpus/mpi/node_ring.c", "node_ring");
    let out = run(
        &dir,
        &spec(
            "[\"./node_ring\", \"0.3\"]",
            "memory = \"512MiB\"\ntimeout = \"60s\"\nstall = \"3s\"",
            "[[axis]]\nname = \"nodes\"\nkind = \"topology\"\nvalues = [1, 2, 3]\n\n[[axis]]\nname = \"ranks\"\nkind = \"topology\"\nvalues = [2, 3]\n",
            "",
        ),
    );
    assert_eq!(out.code, 1, "{}", out.context());
    assert_eq!(out.cells().len(), 6, "{}", out.context());
    for cell in out.cells() {
        let (nodes, ranks) = (int(cell, "nodes"), int(cell, "ranks"));
        let placed = placement(cell);
        if nodes == 1 {
            assert_eq!(outcome(cell), "ok", "{cell}");
            assert_eq!(placed.len(), 1, "{cell}");
            continue;
        }
        assert_eq!(
            outcome(cell),
            "deadlock",
            "nodes={nodes} ranks={ranks}: {cell}"
        );
        let d = detail(cell);
        let reached = placed.len();
        assert!(reached >= 2, "{cell}");
        assert!(
            d.starts_with(&format!("all {ranks} ranks on {reached} node(s) stuck — ")),
            "{d}"
        );
        // Per node and rank: the leaders in MPI_Recv, the others in MPI_Barrier.
        assert!(d.contains(": MPI_Recv (spinning in "), "{d}");
        for (node, ranks_there) in &placed {
            for r in ranks_there {
                assert!(
                    d.contains(&format!("{node} rank {r}: MPI_")),
                    "{node} rank {r}: {d}"
                );
            }
        }
        // Each agent saw only its own node's ranks — disjoint parts, none the whole world —
        // and called only its part stuck: the deadlock is the merge's.
        let mut all: Vec<u64> = placed.iter().flat_map(|(_, r)| r.clone()).collect();
        all.sort_unstable();
        assert_eq!(
            all,
            (0..ranks).collect::<Vec<_>>(),
            "disjoint and complete: {cell}"
        );
        let agents = cell["result"]["evidence"]["nodes"]["agents"]
            .as_array()
            .expect("agents");
        assert_eq!(agents.len(), nodes as usize, "one agent per node: {cell}");
        for a in agents
            .iter()
            .filter(|a| a["ranks"].as_array().is_some_and(|r| !r.is_empty()))
        {
            assert_eq!(a["state"], "stuck", "{a}");
            assert!(
                (a["ranks"].as_array().map_or(0, Vec::len) as u64) < ranks,
                "{a}"
            );
            assert!(
                a["why"]
                    .as_str()
                    .is_some_and(|w| w.contains("other ranks run elsewhere")),
                "{a}"
            );
        }
        assert_eq!(cell["result"]["evidence"]["nodes"]["decided_by"], "agents");
    }
    assert!(
        out.stdout.contains("failure map (nodes ↓, ranks →):"),
        "{}",
        out.stdout
    );
    let html = dir.join("report.html");
    let report = Command::new(QUALIFY)
        .args(["report", "receipt.json", "--html"])
        .arg(&html)
        .current_dir(&*dir)
        .output()
        .expect("qualify report");
    assert!(
        report.status.success(),
        "{}",
        String::from_utf8_lossy(&report.stderr)
    );
    let html = std::fs::read_to_string(html).expect("report.html");
    assert!(
        html.contains(r#"class="ptitle">ranks →</text>"#),
        "columns: ranks"
    );
    assert!(
        html.contains(r#"class="ptitle">nodes ↓</text>"#),
        "rows: nodes"
    );
    assert!(
        html.contains("rank 0: MPI_Recv"),
        "the failing cells name node and rank"
    );
}

fn fault_spec(mode: &str, limits: &str) -> String {
    spec(
        &format!("[\"./rank_fault\", \"{mode}\", \"4\", \"400\"]"),
        limits,
        "[[axis]]\nname = \"nodes\"\nkind = \"topology\"\nvalues = [3]\n\n[[axis]]\nname = \"ranks\"\nkind = \"topology\"\nvalues = [6]\n",
        "",
    )
}

#[test]
fn a_rank_over_the_memory_ceiling_on_one_node_is_oom_killed_there() {
    let Some(_) = cluster() else { return };
    let _cluster = shared();
    let dir = scratch("oom");
    mpicc(&dir, "corpus/mpi/rank_fault.c", "rank_fault");
    let out = run(
        &dir,
        &fault_spec(
            "alloc",
            "memory = \"256MiB\"\ntimeout = \"60s\"\nstall = \"3s\"",
        ),
    );
    assert_eq!(out.code, 1, "{}", out.context());
    let cell = &out.cells()[0];
    assert_eq!(outcome(cell), "oom_killed", "{cell}");
    let node = node_of(cell, 4);
    assert!(
        detail(cell).starts_with(&format!(
            "{node} rank 4 killed by qualify's agent at the memory ceiling: the job's processes on {node} held "
        )),
        "{}",
        detail(cell)
    );
    assert!(
        detail(cell).contains("over the 256 MiB per-node ceiling"),
        "{}",
        detail(cell)
    );
    assert_eq!(
        cell["result"]["enforcement"]["memory"], "watchdog",
        "{cell}"
    );
    let kills: Vec<Value> = cell["result"]["evidence"]["nodes"]["agents"]
        .as_array()
        .expect("agents")
        .iter()
        .flat_map(|a| a["memory_kills"].as_array().cloned().unwrap_or_default())
        .collect();
    assert_eq!(kills.len(), 1, "one process killed, on one node: {cell}");
    assert_eq!(kills[0]["rank"], 4);
}

#[test]
fn a_rank_that_crashes_on_one_node_is_a_crash_named_by_node_and_rank() {
    let Some(_) = cluster() else { return };
    let _cluster = shared();
    let dir = scratch("crash");
    mpicc(&dir, "corpus/mpi/rank_fault.c", "rank_fault");
    let out = run(
        &dir,
        &fault_spec(
            "crash",
            "memory = \"512MiB\"\ntimeout = \"60s\"\nstall = \"3s\"",
        ),
    );
    assert_eq!(out.code, 1, "{}", out.context());
    let cell = &out.cells()[0];
    assert_eq!(outcome(cell), "crash", "{cell}");
    let node = node_of(cell, 4);
    assert!(
        detail(cell).starts_with(&format!("{node} rank 4 crashed (SIGSEGV)")),
        "{}",
        detail(cell)
    );
    assert!(
        !detail(cell).contains("SIGKILL"),
        "the tasks killed after it are consequences, not failures: {}",
        detail(cell)
    );
}

/// Restarts a node killed by the test, whatever happens.
struct NodeBack {
    node: String,
    state: PathBuf,
}

fn nodes_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../ci/slurm-nodes.sh")
}

impl Drop for NodeBack {
    fn drop(&mut self) {
        let out = Command::new(nodes_script())
            .args(["start", &self.node])
            .env("QUALIFY_SLURM_STATE", &self.state)
            .output();
        if !std::thread::panicking() {
            let out = out.expect("ci/slurm-nodes.sh start");
            assert!(
                out.status.success(),
                "restarting {}: {}",
                self.node,
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}

#[test]
fn a_node_that_dies_during_a_cell_interrupts_it_and_examines_nothing() {
    let Some(nodes) = cluster() else { return };
    // The cluster's state directory holds its slurm.conf (ci/slurm-nodes.sh writes both).
    let Some(state) = std::env::var_os("SLURM_CONF")
        .map(PathBuf::from)
        .and_then(|c| c.parent().map(Path::to_path_buf))
        .filter(|s| s.join("cluster.env").exists())
    else {
        assert!(
            !required(),
            "QUALIFY_REQUIRE_SLURM_NODES is set, but SLURM_CONF does not point into a cluster of ci/slurm-nodes.sh"
        );
        skip_note(
            "SLURM_CONF is not a namespaced cluster of ci/slurm-nodes.sh: cannot kill a node",
        );
        return;
    };
    let _alone = CLUSTER.write().unwrap_or_else(|e| e.into_inner());
    let dir = scratch("node-dies");
    mpicc(&dir, "corpus/mpi/allreduce.c", "allreduce");
    let text = spec(
        "[\"./allreduce\", \"1000\", \"45\"]",
        "timeout = \"90s\"\nstall = \"3s\"",
        "[[axis]]\nname = \"nodes\"\nkind = \"topology\"\nvalues = [3]\n\n[[axis]]\nname = \"ranks\"\nkind = \"topology\"\nvalues = [3]\n",
        "",
    );
    std::fs::write(dir.join("qualify.toml"), &text).expect("write spec");
    let child = Command::new(QUALIFY)
        .args([
            "run",
            "qualify.toml",
            "--receipt",
            "receipt.json",
            "--no-ledger",
        ])
        .current_dir(&*dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start qualify");
    // Once the last node's agent reports, the ranks run there: kill that node.
    let victim = nodes.last().cloned().expect("a node");
    let start = Instant::now();
    let reported = loop {
        let found = walk(&dir.join(".qualify/slurm"))
            .into_iter()
            .any(|p| p.ends_with(format!("{victim}.json")) && has_ranks(&p));
        if found {
            break true;
        }
        if start.elapsed() > Duration::from_secs(60) {
            break false;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let back = NodeBack {
        node: victim.clone(),
        state: state.clone(),
    };
    let kill = Command::new(nodes_script())
        .args(["kill", &victim])
        .env("QUALIFY_SLURM_STATE", &state)
        .output()
        .expect("ci/slurm-nodes.sh kill");
    let out = child.wait_with_output().expect("wait for qualify");
    let out = common::receipted(&dir, out);
    assert!(
        reported,
        "{victim}'s agent never reported ranks\n{}",
        out.context()
    );
    assert!(
        kill.status.success(),
        "{}",
        String::from_utf8_lossy(&kill.stderr)
    );
    drop(back);
    assert_eq!(
        out.code,
        130,
        "an unexamined cell leaves the run incomplete\n{}",
        out.context()
    );
    let cell = &out.cells()[0];
    assert_eq!(outcome(cell), "interrupted", "{cell}");
    assert!(
        detail(cell).starts_with(&format!("{victim} stopped answering")),
        "{}",
        detail(cell)
    );
    assert!(detail(cell).contains("the cluster failed during the cell, not the artifact"));
    let tested = &out.receipt["predicate"]["tested"];
    assert_eq!(tested["cells_completed"], 0, "{tested}");
    assert_eq!(tested["cells_interrupted"], 1, "{tested}");
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

fn has_ranks(report: &Path) -> bool {
    std::fs::read(report)
        .ok()
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
        .is_some_and(|r| r["ranks"].as_array().is_some_and(|a| !a.is_empty()))
}

#[test]
fn the_coordinator_outside_an_allocation_and_a_malformed_selection_are_setup_errors() {
    let dir = scratch("setup");
    let out = Command::new(QUALIFY)
        .args([
            "agent",
            "coordinate",
            "--json",
            "--nodes-dir",
            "n",
            "--",
            "true",
        ])
        .current_dir(&*dir)
        .env_remove("SLURM_JOB_ID")
        .output()
        .expect("run qualify agent coordinate");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("runs inside a Slurm allocation, but SLURM_JOB_ID is not set"),
        "{err}"
    );
    let out = Command::new(QUALIFY)
        .args(["agent", "observe", "--dir", "n", "--select", "SLURM_JOB_ID"])
        .current_dir(&*dir)
        .output()
        .expect("run qualify agent observe");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--select \"SLURM_JOB_ID\" is not NAME=VALUE"),
        "{err}"
    );
}
