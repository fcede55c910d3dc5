//! Stack dumps of a stuck tree with gdb (or eu-stack), taken before the tree is killed, so a
//! deadlock or livelock verdict shows *where* each thread waits.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// At most this many processes are dumped, each trimmed to this many bytes.
const MAX_PROCS: usize = 4;
const MAX_BYTES: usize = 12 * 1024;
const TOOL_TIMEOUT: Duration = Duration::from_secs(20);

fn on_path(tool: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|d| d.join(tool).is_file()))
}

/// Dump the stacks of `pids` (first [`MAX_PROCS`]). Returns `{"tool": .., "stacks": {pid: text}}`
/// or `{"unavailable": reason}`.
pub fn dump(pids: &[i32]) -> Value {
    let tool = if on_path("gdb") {
        "gdb"
    } else if on_path("eu-stack") {
        "eu-stack"
    } else {
        return json!({
            "unavailable": "neither gdb nor eu-stack is on PATH; install gdb (Debian package `gdb`) \
                            for stack dumps of stuck threads"
        });
    };
    let mut stacks = serde_json::Map::new();
    for &pid in pids.iter().take(MAX_PROCS) {
        let mut cmd = if tool == "gdb" {
            let mut c = Command::new("gdb");
            c.args(["-p", &pid.to_string(), "-batch", "-nx", "-q"])
                .args(["-ex", "set pagination off", "-ex", "thread apply all bt 30"]);
            c
        } else {
            let mut c = Command::new("eu-stack");
            c.args(["-p", &pid.to_string()]);
            c
        };
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let text = run_bounded(cmd).unwrap_or_else(|e| format!("({tool} failed: {e})"));
        stacks.insert(pid.to_string(), Value::String(trim(&text)));
    }
    json!({ "tool": tool, "stacks": stacks })
}

fn run_bounded(mut cmd: Command) -> Result<String, String> {
    let mut child = cmd.spawn().map_err(|e| e.to_string())?;
    let mut out = child.stdout.take();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        if let Some(o) = out.as_mut() {
            use std::io::Read;
            let _ = o.read_to_string(&mut s);
        }
        s
    });
    let start = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if start.elapsed() < TOOL_TIMEOUT => {
                std::thread::sleep(Duration::from_millis(20))
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                break;
            }
        }
    }
    reader.join().map_err(|_| "reader panicked".to_string())
}

/// Keep only the interesting lines (thread headers and frames), bounded in size.
fn trim(text: &str) -> String {
    let kept: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("Thread ") || l.starts_with('#') || l.starts_with("TID "))
        .collect();
    let mut s = if kept.is_empty() {
        text.to_string()
    } else {
        kept.join("\n")
    };
    if s.len() > MAX_BYTES {
        let mut cut = MAX_BYTES;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        s.truncate(cut);
        s.push_str("\n…");
    }
    s
}
