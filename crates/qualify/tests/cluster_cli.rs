//! Service cells on a three-node Slurm cluster (`ci/slurm-up.sh --nodes 3`: nodes in network
//! namespaces on a private bridge): `examples/cluster` — a service on one node, its Redis on
//! another (`[[dependency]] node = "own"`, the fault proxy on that node's address) — judged as
//! locally, faults on the remote Redis (a blackhole, a kill) judged as the same spec's local run
//! judges them, two load generators on the other nodes merged into one verdict, and a node
//! killed mid-cell (the service's, the dependency's, the generator's) reported `interrupted`,
//! naming it, a faulted cell judged against its `none` control measured first (its noise
//! floor), and nothing of a cell left once the qualify that submitted it was SIGKILLed.
//!
//! Without a cluster of at least three nodes and redis-server these tests print why they skip
//! and pass; `QUALIFY_REQUIRE_SLURM_NODES=3` / `QUALIFY_REQUIRE_REDIS=1` (CI) make that a
//! failure.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{RwLock, RwLockReadGuard};
use std::time::{Duration, Instant};

use serde_json::Value;

#[allow(unused_macros)]
mod common;

const QUALIFY: &str = env!("CARGO_BIN_EXE_qualify");
const NODES: usize = 3;

/// Tests share the cluster; one that kills a node has it to itself.
static CLUSTER: RwLock<()> = RwLock::new(());

fn shared() -> RwLockReadGuard<'static, ()> {
    CLUSTER.read().unwrap_or_else(|e| e.into_inner())
}

fn skip_note(why: &str) {
    common::skip_note("cluster_cli", why);
}

/// The cluster's nodes when a controller answers with at least three and redis-server is
/// installed; otherwise why the tests skip (a failure under the require switches).
fn cluster() -> Option<Vec<String>> {
    static ANSWER: std::sync::OnceLock<Result<Vec<String>, (String, bool)>> =
        std::sync::OnceLock::new();
    let answer = ANSWER.get_or_init(|| {
        let redis = Command::new("redis-server")
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !redis {
            return Err(("redis-server is not installed".into(), true));
        }
        let ping = Command::new("scontrol").arg("ping").output().ok();
        if !ping.is_some_and(|o| String::from_utf8_lossy(&o.stdout).contains("is UP")) {
            return Err((
                "no Slurm controller answers; start one with ci/slurm-up.sh --nodes 3".into(),
                false,
            ));
        }
        let out = Command::new("sinfo")
            .args(["-h", "-N", "-o", "%N"])
            .output()
            .map_err(|e| (format!("sinfo: {e}"), false))?;
        let mut nodes: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| l.trim().to_string())
            .filter(|l| !l.is_empty())
            .collect();
        nodes.sort();
        nodes.dedup();
        if nodes.len() < NODES {
            return Err((
                format!(
                    "the cluster has {} node(s), these tests need {NODES} (ci/slurm-up.sh --nodes 3)",
                    nodes.len()
                ),
                false,
            ));
        }
        Ok(nodes)
    });
    match answer {
        Ok(nodes) => Some(nodes.clone()),
        Err((why, redis)) => {
            let switch = if *redis {
                "QUALIFY_REQUIRE_REDIS"
            } else {
                "QUALIFY_REQUIRE_SLURM_NODES"
            };
            assert!(
                std::env::var_os(switch).is_none()
                    && (*redis || std::env::var_os("QUALIFY_REQUIRE_SLURM").is_none()),
                "{switch} is set, but {why}"
            );
            skip_note(why);
            None
        }
    }
}

fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/cluster")
}

/// A fresh directory with the example's service, removed when the test passes.
fn scratch(name: &str) -> common::TestDir {
    let dir = common::test_dir("cluster_cli", name);
    std::fs::copy(example().join("counter.py"), dir.join("counter.py")).expect("copy counter.py");
    dir
}

/// The example's spec with `load` seconds of load and `extra` appended.
fn spec(load: u32, extra: &str) -> String {
    let text = std::fs::read_to_string(example().join("qualify.toml")).expect("read the example");
    assert!(text.contains("duration = \"4s\""), "the example's load");
    format!(
        "{}\n{extra}",
        text.replace("duration = \"4s\"", &format!("duration = \"{load}s\""))
    )
}

/// A blackhole on the cache (a wire fault, the proxy on the cache's node) and a kill of it (a
/// process fault, done there) from 1 s to 2.5 s of the load; failing fast is expected.
const BLACKHOLE: &str = r#"
[faults]
window = ["1s", "2.5s"]
recover_within = "1s"

[[axis]]
name = "cache_fault"
kind = "fault"
dependency = "cache"
values = ["blackhole", "kill"]
expect = { blackhole = ["fails_fast"], kill = ["fails_fast"] }
"#;

fn run(dir: &Path, spec: &str, executor: &str) -> common::Receipted {
    common::run_spec(dir, spec, &["--no-ledger", "--executor", executor])
}

fn result(out: &common::Receipted) -> &Value {
    let cells = out.cells();
    assert_eq!(cells.len(), 1, "{}", out.context());
    &cells[0]["result"]
}

fn outcome(r: &Value) -> &str {
    r["outcome"].as_str().unwrap_or("<none>")
}

#[test]
fn a_service_on_one_node_serves_through_its_redis_on_another_over_the_bridge() {
    let Some(_) = cluster() else { return };
    let _cluster = shared();
    let dir = scratch("ok");
    let out = run(&dir, &spec(4, ""), "slurm");
    let r = result(&out);
    assert_eq!(outcome(r), "ok", "{}\n{r}", out.context());
    let c = &r["evidence"]["cluster"];
    let service_node = c["service"]["node"].as_str().expect("the service's node");
    let address = c["service"]["address"].as_str().expect("its address");
    assert!(
        !address.starts_with("127.") && !address.starts_with("0.0.0.0"),
        "the service listens on its node's address: {c}"
    );
    let dep = &c["dependencies"][0];
    assert_eq!(dep["name"], "cache", "{c}");
    let dep_node = dep["node"].as_str().expect("the cache's node");
    assert_ne!(dep_node, service_node, "node = \"own\": {c}");
    let proxy = dep["proxy"].as_str().expect("the proxy's address");
    assert!(
        !proxy.starts_with("127.") && !proxy.starts_with("0.0.0.0"),
        "the proxy listens on the cache node's address: {c}"
    );
    // Every request went through the remote proxy and was answered by Redis.
    let load = &r["load"];
    assert!(load["sent"].as_u64().unwrap_or(0) >= 150, "{load}");
    assert_eq!(load["succeeded"], load["sent"], "{load}");
}

/// `--repeat` on the cluster: a service cell runs as one job per run, as it runs once per run
/// locally, and the reproducibility layer counts the runs that happened (it once got one job
/// and said no cell was repeated, the flag silently not honoured).
#[test]
fn a_repeated_service_cell_runs_one_job_per_run_on_the_cluster() {
    let Some(_) = cluster() else { return };
    let _cluster = shared();
    let dir = scratch("repeat");
    let out = common::run_spec(
        &dir,
        &spec(2, ""),
        &["--no-ledger", "--executor", "slurm", "--repeat", "2"],
    );
    let r = result(&out);
    assert_eq!(outcome(r), "ok", "{}\n{r}", out.context());
    let runs = r["runs"].as_array().map_or(0, Vec::len);
    assert_eq!(runs, 2, "two runs of the cell: {r}");
    let layer = &out.receipt["predicate"]["layers"]["reproducibility"];
    assert_eq!(layer["evidence"]["repeated_cells"], 1, "{layer}");
}

#[test]
fn a_blackhole_and_a_kill_of_the_remote_redis_are_judged_as_the_same_spec_locally() {
    let Some(_) = cluster() else { return };
    let _cluster = shared();
    let text = spec(4, BLACKHOLE);
    let local_dir = scratch("faults-local");
    let local = run(&local_dir, &text, "local");
    let dir = scratch("faults");
    let remote = run(&dir, &text, "slurm");
    assert_eq!(
        remote.code,
        local.code,
        "--- on the cluster ---\n{}\n--- locally ---\n{}",
        remote.context(),
        local.context()
    );
    let cell = |out: &common::Receipted, fault: &str| -> Value {
        out.cells()
            .iter()
            .find(|c| c["params"]["cache_fault"] == fault)
            .map(|c| c["result"].clone())
            .unwrap_or_else(|| panic!("no {fault} cell\n{}", out.context()))
    };
    for fault in ["blackhole", "kill"] {
        let (l, r) = (cell(&local, fault), cell(&remote, fault));
        assert!(r["evidence"]["cluster"].is_object(), "{r}");
        assert_eq!(
            outcome(&r),
            outcome(&l),
            "{fault}: local:\n{l}\n\nslurm:\n{r}"
        );
        assert_eq!(outcome(&r), "ok", "{fault} fails fast, as expected: {r}");
        let behaviour = |r: &Value| r["faults"][0]["behaviour"]["verdict"].clone();
        assert_eq!(behaviour(&r), "fails_fast", "{fault}: {r}");
        assert_eq!(behaviour(&r), behaviour(&l), "{fault}");
        // The proxy on the cache's node saw the window.
        let during = &r["faults"][0]["phases"]["during"];
        assert!(
            during["requests"].as_u64().unwrap_or(0) > 0,
            "{fault}: {during}"
        );
    }
    // The kill was done on the cache's node: killed, started again, ready again.
    let process = &cell(&remote, "kill")["faults"][0]["process"];
    assert_eq!(process["action"], "kill", "{process}");
    assert!(
        process["ready_at_seconds"].as_f64().is_some(),
        "ready again: {process}"
    );
}

/// A fault axis with its control: `none` and a blackhole of the cache.
const WITH_CONTROL: &str = r#"
[faults]
window = ["1s", "2.5s"]
recover_within = "1s"

[[axis]]
name = "cache_fault"
kind = "fault"
dependency = "cache"
values = ["none", "blackhole"]
"#;

#[test]
fn a_faulted_cell_on_the_cluster_is_judged_against_its_control_as_locally() {
    let Some(_) = cluster() else { return };
    let _cluster = shared();
    let text = spec(3, WITH_CONTROL);
    let local_dir = scratch("control-local");
    let local = run(&local_dir, &text, "local");
    let dir = scratch("control");
    let remote = run(&dir, &text, "slurm");
    let record = |out: &common::Receipted, fault: &str| -> Value {
        out.cells()
            .iter()
            .find(|c| c["params"]["cache_fault"] == fault)
            .map(|c| c["result"]["faults"][0].clone())
            .unwrap_or_else(|| panic!("no {fault} cell\n{}", out.context()))
    };
    for out in [&local, &remote] {
        let control = record(out, "none");
        assert_eq!(control["behaviour"]["verdict"], "control", "{control}");
        let own = &control["behaviour"]["noise_floor"];
        let floor = &record(out, "blackhole")["behaviour"]["noise_floor"];
        // The control's own variation is the faulted cell's: measured first, handed to its job.
        for p in ["control_p99", "control_p50"] {
            assert!(
                floor[p].as_f64().is_some(),
                "{p}: {floor}\n{}",
                out.context()
            );
            assert_eq!(
                floor[p], own[p],
                "{p}: the faulted cell's {floor}, the control's {own}"
            );
        }
    }
    // The whole receipt and what the run printed: a faulted service on Slurm.
    common::assert_receipt_golden("pinned_slurm_faulted_service_receipt", &remote.receipt);
    common::assert_transcript(
        "pinned_slurm_faulted_service",
        &dir,
        &remote.stdout,
        &remote.stderr,
        &common::TIMED_LINES,
    );
}

#[test]
fn a_killed_service_node_interrupts_the_cell_naming_it() {
    killed_node_interrupts("service", "kill-service");
}

#[test]
fn a_killed_dependency_node_interrupts_the_cell_naming_it() {
    killed_node_interrupts("dependency", "kill-dependency");
}

#[test]
fn a_killed_generator_node_interrupts_the_cell_naming_it() {
    killed_node_interrupts("generator", "kill-generator");
}

#[test]
fn two_generators_on_the_other_nodes_merge_into_one_verdict_whose_counts_are_their_sum() {
    let Some(_) = cluster() else { return };
    let _cluster = shared();
    let dir = scratch("generators");
    let text = spec(4, "").replace("rate = 50\n", "rate = 50\ngenerators = 2\n");
    assert!(text.contains("generators = 2"), "{text}");
    let out = run(&dir, &text, "slurm");
    let r = result(&out);
    assert_eq!(outcome(r), "ok", "{}\n{r}", out.context());
    let c = &r["evidence"]["cluster"];
    let service = c["service"]["node"].as_str().expect("the service's node");
    let cache = c["dependencies"][0]["node"]
        .as_str()
        .expect("the cache's node");
    let nodes: Vec<&str> = c["generators"]
        .as_array()
        .expect("the generators' nodes")
        .iter()
        .filter_map(|g| g["node"].as_str())
        .collect();
    assert_eq!(nodes.len(), 2, "{c}");
    assert!(
        !nodes.contains(&service),
        "generators on the other nodes: {c}"
    );
    assert_ne!(nodes[0], cache, "a node of its own first: {c}");
    assert_eq!(nodes[1], cache, "then beside the dependency: {c}");
    // One verdict on the merged report: its counts are the generators' sums.
    let load = &r["load"];
    let gens = load["generators"].as_array().expect("per generator");
    assert_eq!(gens.len(), 2, "{load}");
    for field in ["sent", "completed"] {
        let sum: u64 = gens.iter().map(|g| g[field].as_u64().unwrap_or(0)).sum();
        assert_eq!(load[field].as_u64(), Some(sum), "{field}: {load}");
    }
    assert!(load["sent"].as_u64().unwrap_or(0) >= 150, "{load}");
    for g in gens {
        assert!(
            g["sent"].as_u64().unwrap_or(0) > 0,
            "each generator sent: {g}"
        );
    }
}

/// Restarts a node killed by a test, whatever happens.
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

/// The cluster's state directory (it holds slurm.conf) when it is a namespaced one.
fn cluster_state() -> Option<PathBuf> {
    std::env::var_os("SLURM_CONF")
        .map(PathBuf::from)
        .and_then(|c| c.parent().map(Path::to_path_buf))
        .filter(|s| s.join("cluster.env").exists())
}

/// The cell's state directory once its dependency's host is ready: (state dir, dependency's
/// node).
fn await_dependency(dir: &Path, within: Duration) -> Option<(PathBuf, String)> {
    let start = Instant::now();
    while start.elapsed() < within {
        for ready in walk(&dir.join(".qualify/slurm")) {
            if ready.ends_with("dep-cache/ready.json")
                && let Ok(text) = std::fs::read_to_string(&ready)
                && let Ok(v) = serde_json::from_str::<Value>(&text)
                && let Some(node) = v["node"].as_str()
            {
                let state = ready.parent()?.parent()?.to_path_buf();
                return Some((state, node.to_string()));
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    None
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

fn killed_node_interrupts(role: &str, name: &str) {
    let Some(nodes) = cluster() else { return };
    let Some(state) = cluster_state() else {
        assert!(
            std::env::var_os("QUALIFY_REQUIRE_SLURM_NODES").is_none(),
            "QUALIFY_REQUIRE_SLURM_NODES is set, but SLURM_CONF does not point into a cluster of ci/slurm-nodes.sh"
        );
        skip_note(
            "SLURM_CONF is not a namespaced cluster of ci/slurm-nodes.sh: cannot kill a node",
        );
        return;
    };
    let _alone = CLUSTER.write().unwrap_or_else(|e| e.into_inner());
    let dir = scratch(name);
    // A load long enough to be cut short: the cell must end well before it would.
    let load = 20;
    std::fs::write(dir.join("qualify.toml"), spec(load, "")).expect("write spec");
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
    let found = await_dependency(&dir, Duration::from_secs(60));
    let Some((cell_state, dep_node)) = found else {
        let out = common::receipted(&dir, child.wait_with_output().expect("wait"));
        panic!("the cache's host never got ready\n{}", out.context());
    };
    let service_node = std::fs::read_to_string(cell_state.join("service-node"))
        .expect("the cell names the service's node");
    let victim = match role {
        "service" => service_node,
        "dependency" => dep_node,
        // The load's generator runs on the node nothing else runs on.
        _ => nodes
            .iter()
            .find(|n| **n != service_node && **n != dep_node)
            .cloned()
            .expect("a third node"),
    };
    // The service is started and ready, and the load runs: then the node dies.
    std::thread::sleep(Duration::from_secs(3));
    let back = NodeBack {
        node: victim.clone(),
        state: state.clone(),
    };
    let killed_at = Instant::now();
    let kill = Command::new(nodes_script())
        .args(["kill", &victim])
        .env("QUALIFY_SLURM_STATE", &state)
        .output()
        .expect("ci/slurm-nodes.sh kill");
    let out = common::receipted(&dir, child.wait_with_output().expect("wait for qualify"));
    let after_kill = killed_at.elapsed();
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
    let r = result(&out);
    assert_eq!(outcome(r), "interrupted", "{r}");
    let detail = r["detail"].as_str().unwrap_or("");
    assert!(
        detail.contains(&format!("node {victim}")) && detail.contains("fell silent"),
        "{detail}"
    );
    assert!(
        after_kill < Duration::from_secs(u64::from(load)),
        "a lost node ends the cell in seconds, not at the load's end ({after_kill:?})"
    );
    // Whoever ended the cell, the receipt says which node ran what.
    assert!(
        r["evidence"]["cluster"]["service"]["node"].is_string(),
        "{r}"
    );
    let tested = &out.receipt["predicate"]["tested"];
    assert_eq!(tested["cells_completed"], 0, "{tested}");
}

/// Processes still running whose command line names `needle`, or whose working directory is
/// `cwd`.
fn survivors(needle: &str, cwd: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return out;
    };
    for e in entries.flatten() {
        let pid = e.file_name().to_string_lossy().into_owned();
        if !pid.bytes().all(|b| b.is_ascii_digit()) || pid == std::process::id().to_string() {
            continue;
        }
        let cmdline = std::fs::read(e.path().join("cmdline"))
            .map(|b| String::from_utf8_lossy(&b).replace('\0', " "))
            .unwrap_or_default();
        let in_dir = std::fs::read_link(e.path().join("cwd")).is_ok_and(|d| d == cwd);
        if !cmdline.is_empty() && (cmdline.contains(needle) || in_dir) {
            out.push(format!("{pid}: {cmdline}"));
        }
    }
    out
}

#[test]
fn nothing_of_a_cluster_cell_outlives_the_qualify_that_submitted_it() {
    let Some(_) = cluster() else { return };
    let _alone = CLUSTER.write().unwrap_or_else(|e| e.into_inner());
    let dir = scratch("submitter-dies");
    std::fs::write(dir.join("qualify.toml"), spec(30, "")).expect("write spec");
    let mut child = Command::new(QUALIFY)
        .args(["run", "qualify.toml", "--no-ledger"])
        .current_dir(&*dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start qualify");
    let Some((cell_state, _)) = await_dependency(&dir, Duration::from_secs(60)) else {
        let _ = child.kill();
        panic!("the cache's host never got ready");
    };
    let ready: Value = serde_json::from_str(
        &std::fs::read_to_string(cell_state.join("dep-cache/ready.json")).expect("ready.json"),
    )
    .expect("ready.json parses");
    let redis = format!("--port {}", ready["dep_port"]);
    // The service serves and the load runs on the other nodes: then qualify dies.
    std::thread::sleep(Duration::from_secs(3));
    assert!(
        !survivors(&dir.to_string_lossy(), &dir).is_empty(),
        "the cell's processes run before qualify dies"
    );
    child.kill().expect("SIGKILL qualify");
    let _ = child.wait();
    // The run's lease lapses after 10 s: the job's steps end their parts and the job ends.
    let start = Instant::now();
    let mut left = Vec::new();
    while start.elapsed() < Duration::from_secs(40) {
        left = survivors(&dir.to_string_lossy(), &dir);
        left.extend(survivors(&redis, Path::new("/nonexistent")));
        let jobs = Command::new("squeue")
            .args(["-h", "-o", "%i %j"])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_default();
        if left.is_empty() && jobs.is_empty() {
            break;
        }
        if !jobs.is_empty() {
            left.push(format!("squeue: {jobs}"));
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    assert!(
        left.is_empty(),
        "still running {:.0} s after qualify died:\n{}",
        start.elapsed().as_secs_f64(),
        left.join("\n")
    );
}
