//! Stacks of a stuck tree: dumps with gdb (or eu-stack) taken before the tree is killed, so a
//! deadlock or livelock verdict shows *where* each thread waits; and quick samples (eu-stack,
//! or gdb) parsed into frames, which the spin-wait examination matches against the rules.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::rules::Frame;

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

/// A stack sampler on PATH, fastest first: eu-stack attaches and unwinds in tens of
/// milliseconds, gdb in most of a second.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tool {
    EuStack,
    Gdb,
}

impl Tool {
    pub fn find() -> Option<Tool> {
        if on_path("eu-stack") {
            Some(Tool::EuStack)
        } else if on_path("gdb") {
            Some(Tool::Gdb)
        } else {
            None
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Tool::EuStack => "eu-stack",
            Tool::Gdb => "gdb",
        }
    }
}

/// Why no sample can be taken: no stack sampler is on PATH.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "neither eu-stack nor gdb is on PATH; install elfutils (eu-stack) or gdb to recognise \
     threads spinning in synchronization calls"
)]
pub struct NoSampler;

/// Why a tool qualify runs on a stuck tree (gdb, eu-stack, jcmd, jstack, py-spy) gave no
/// answer: the text the evidence states (`(gdb failed: …)`, a runtime report's `not asked: …`).
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    /// It could not be started.
    #[error("{source}")]
    Spawn {
        program: String,
        source: std::io::Error,
    },
    /// The thread reading its standard output panicked.
    #[error("reader panicked")]
    ReaderPanicked,
    /// It printed nothing on stdout; `why` is the first line of its stderr.
    #[error("{program}: {why}")]
    NoOutput { program: String, why: String },
    /// No tool is known to ask this runtime.
    #[error("no tool to ask {runtime}")]
    NoTool { runtime: String },
    #[error("neither jcmd nor jstack is on PATH (Debian: default-jdk-headless)")]
    NoJvmTool,
    #[error("py-spy is not on PATH (pip install py-spy)")]
    NoPySpy,
    /// py-spy answered with something that is not its JSON thread list.
    #[error("py-spy printed no thread list: {0}")]
    PySpyOutput(#[source] serde_json::Error),
}

/// One process's stacks in one sample.
#[derive(Debug, Clone, Default)]
pub struct ProcStacks {
    pub pid: i32,
    /// Thread id → frames, innermost first.
    pub threads: Vec<(i32, Vec<Frame>)>,
    /// The tool's text, trimmed to thread headers and frames.
    pub text: String,
    /// Set when the tool showed no thread of this process (and why, if it said).
    pub error: Option<String>,
}

/// At most this many processes are sampled; a bigger tree is not examined.
pub const MAX_SAMPLED: usize = 64;
/// Processes sampled side by side.
const PARALLEL: usize = 8;
const SAMPLE_TIMEOUT: Duration = Duration::from_secs(10);

/// Sample the stacks of `pids` once with `tool` (several processes side by side).
pub fn sample(tool: Tool, pids: &[i32]) -> Vec<ProcStacks> {
    let mut out = Vec::with_capacity(pids.len());
    for chunk in pids.chunks(PARALLEL) {
        let results: Vec<ProcStacks> = std::thread::scope(|s| {
            let handles: Vec<_> = chunk
                .iter()
                .map(|&pid| s.spawn(move || sample_one(tool, pid)))
                .collect();
            handles
                .into_iter()
                .zip(chunk)
                .map(|(h, &pid)| {
                    h.join().unwrap_or_else(|_| ProcStacks {
                        pid,
                        error: Some("the sampling thread panicked".into()),
                        ..ProcStacks::default()
                    })
                })
                .collect()
        });
        out.extend(results);
    }
    out
}

fn sample_one(tool: Tool, pid: i32) -> ProcStacks {
    let mut cmd = match tool {
        Tool::EuStack => {
            let mut c = Command::new("eu-stack");
            c.args(["-m", "-n", "64", "-p", &pid.to_string()]);
            c
        }
        Tool::Gdb => {
            let mut c = Command::new("gdb");
            c.args(["-p", &pid.to_string(), "-batch", "-nx", "-q"])
                .args(["-ex", "set pagination off", "-ex", "thread apply all bt 64"]);
            c
        }
    };
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let (text, err) = match run_bounded_with_err(cmd, SAMPLE_TIMEOUT) {
        Ok(both) => both,
        Err(e) => (String::new(), e.to_string()),
    };
    let mut threads = match tool {
        Tool::EuStack => parse_eu_stack(&text),
        Tool::Gdb => parse_gdb(&text),
    };
    if threads
        .iter()
        .any(|(_, fs)| fs.iter().any(|f| f.module.is_none()))
    {
        resolve_modules(pid, &text, &mut threads);
    }
    let error = threads.is_empty().then(|| {
        let why = err.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
        if why.is_empty() {
            format!("{} showed no thread", tool.name())
        } else {
            format!("{} showed no thread: {why}", tool.name())
        }
    });
    ProcStacks {
        pid,
        threads,
        text: trim(&text),
        error,
    }
}

/// eu-stack -m: `TID 123:` then `#0  0x00007f… function - /path/module` (function may be
/// missing).
pub fn parse_eu_stack(text: &str) -> Vec<(i32, Vec<Frame>)> {
    let mut out: Vec<(i32, Vec<Frame>)> = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if let Some(tid) = line
            .strip_prefix("TID ")
            .and_then(|r| r.trim_end_matches(':').trim().parse().ok())
        {
            out.push((tid, Vec::new()));
            continue;
        }
        let Some(rest) = frame_body(line) else {
            continue;
        };
        let Some((_, rest)) = split_addr(rest) else {
            continue;
        };
        let (function, module) = if let Some(m) = rest.strip_prefix("- ") {
            (None, Some(m.trim()))
        } else if let Some((f, m)) = rest.rsplit_once(" - ") {
            (Some(f.trim()), Some(m.trim()))
        } else {
            (Some(rest.trim()), None)
        };
        if let Some((_, frames)) = out.last_mut() {
            frames.push(Frame::new(function.filter(|f| !f.is_empty()), module));
        }
    }
    out
}

/// gdb `thread apply all bt`: `Thread N (Thread 0x… (LWP 123) "name"):` then
/// `#0  0x… in function (args) [at file:line | from /path/module]`.
pub fn parse_gdb(text: &str) -> Vec<(i32, Vec<Frame>)> {
    let mut out: Vec<(i32, Vec<Frame>)> = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with("Thread ") {
            let tid = ["(LWP ", "(process "].iter().find_map(|key| {
                let at = line.find(key)? + key.len();
                let digits: String = line[at..]
                    .chars()
                    .take_while(char::is_ascii_digit)
                    .collect();
                digits.parse().ok()
            });
            if let Some(tid) = tid {
                out.push((tid, Vec::new()));
            }
            continue;
        }
        let Some(rest) = frame_body(line) else {
            continue;
        };
        let rest = match split_addr(rest) {
            Some((_, r)) => r.strip_prefix("in ").unwrap_or(r),
            None => rest,
        };
        let function = rest.split(" (").next().map(str::trim);
        let module = rest.rsplit_once(" from ").map(|(_, m)| m.trim());
        if let Some((_, frames)) = out.last_mut() {
            frames.push(Frame::new(function.filter(|f| !f.is_empty()), module));
        }
    }
    out
}

/// `#12  rest` → `rest`.
fn frame_body(line: &str) -> Option<&str> {
    let rest = line.strip_prefix('#')?;
    let digits = rest.find(|c: char| !c.is_ascii_digit())?;
    if digits == 0 {
        return None;
    }
    Some(rest[digits..].trim_start())
}

/// `0x00007f… rest` → (address, rest).
fn split_addr(rest: &str) -> Option<(u64, &str)> {
    let (addr, tail) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    let hex = addr.strip_prefix("0x")?;
    Some((u64::from_str_radix(hex, 16).ok()?, tail.trim_start()))
}

/// gdb names no module for frames with debug information: find it from the frame's address
/// in /proc/PID/maps.
fn resolve_modules(pid: i32, text: &str, threads: &mut [(i32, Vec<Frame>)]) {
    let Ok(maps) = std::fs::read_to_string(format!("/proc/{pid}/maps")) else {
        return;
    };
    let ranges: Vec<(u64, u64, &str)> = maps
        .lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            let (lo, hi) = it.next()?.split_once('-')?;
            let path = it.nth(4)?;
            path.starts_with('/').then_some((
                u64::from_str_radix(lo, 16).ok()?,
                u64::from_str_radix(hi, 16).ok()?,
                path,
            ))
        })
        .collect();
    // Addresses in the order the frames were printed.
    let mut addrs = text
        .lines()
        .filter_map(|l| frame_body(l.trim()))
        .map(|rest| split_addr(rest).map(|(a, _)| a));
    for (_, frames) in threads.iter_mut() {
        for f in frames.iter_mut() {
            let addr = addrs.next().flatten();
            if f.module.is_none()
                && let Some(a) = addr
                && let Some((_, _, path)) =
                    ranges.iter().find(|(lo, hi, _)| (*lo..*hi).contains(&a))
            {
                *f = Frame::new(f.function.as_deref(), Some(path));
            }
        }
    }
}

fn run_bounded(cmd: Command) -> Result<String, ToolError> {
    run_bounded_with_err(cmd, TOOL_TIMEOUT).map(|(out, _)| out)
}

/// Run a command to its end (killed after `limit`), returning stdout and stderr.
pub(crate) fn run_bounded_with_err(
    mut cmd: Command,
    limit: Duration,
) -> Result<(String, String), ToolError> {
    let mut child = cmd.spawn().map_err(|source| ToolError::Spawn {
        program: cmd.get_program().to_string_lossy().into_owned(),
        source,
    })?;
    let read = |pipe: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_string(&mut s);
            }
            s
        })
    };
    let out = read(child.stdout.take().map(|p| Box::new(p) as _));
    let err = read(child.stderr.take().map(|p| Box::new(p) as _));
    let start = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if start.elapsed() < limit => std::thread::sleep(Duration::from_millis(5)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                break;
            }
        }
    }
    let out = out.join().map_err(|_| ToolError::ReaderPanicked)?;
    let err = err.join().unwrap_or_default();
    Ok((out, err))
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

#[cfg(test)]
mod tests {
    use super::*;

    const EU_STACK: &str = "PID 4241 - process
TID 4241:
#0  0x00007f5263478e08 opal_progress - /usr/lib/x86_64-linux-gnu/libopen-pal.so.40.30.2
#1  0x00007f5261ec413d mca_pml_ob1_send - /usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/mca_pml_ob1.so
#2  0x00007f526382d29b PMPI_Send - /usr/lib/x86_64-linux-gnu/libmpi.so.40.30.4
#3  0x0000555be6918299 main - /tmp/exchange
TID 4245:
#0  0x00007f52636b826f __poll - /usr/lib/x86_64-linux-gnu/libc.so.6
#1  0x00007f52632da9b5 - /usr/lib/x86_64-linux-gnu/libevent_core-2.1.so.7.0.1
#2  0x00007f52632d2225 event_base_loop - /usr/lib/x86_64-linux-gnu/libevent_core-2.1.so.7.0.1
#3  0x00007f52636451f5 start_thread - /usr/lib/x86_64-linux-gnu/libc.so.6
";

    const GDB: &str = r#"[New LWP 4245]
Thread 2 (Thread 0x7f52632316c0 (LWP 4245) "exchange"):
#0  0x00007f52636b826f in __GI___poll (fds=0x7f525c000b70, nfds=1, timeout=3599976) at ../sysdeps/unix/sysv/linux/poll.c:29
#1  0x00007f52632da9b5 in ?? () from /lib/x86_64-linux-gnu/libevent_core-2.1.so.7
Thread 1 (Thread 0x7f526327d740 (LWP 4241) "exchange"):
#0  0x00007f5261f76e3d in ?? () from /usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/mca_btl_vader.so
#1  0x00007f5263478e1c in opal_progress () from /lib/x86_64-linux-gnu/libopen-pal.so.40
#2  0x00007f526382d29b in PMPI_Send () from /lib/x86_64-linux-gnu/libmpi.so.40
#3  0x0000555be6918299 in main (argc=<optimized out>, argv=<optimized out>) at exchange.c:14
#4  spin (n=3) at spin.c:7
"#;

    #[test]
    fn parses_eu_stack_frames_with_and_without_names() {
        let t = parse_eu_stack(EU_STACK);
        assert_eq!(t.len(), 2);
        assert_eq!(t[0].0, 4241);
        assert_eq!(
            t[0].1[0],
            Frame::new(Some("opal_progress"), Some("libopen-pal.so.40.30.2"))
        );
        assert_eq!(t[0].1[3], Frame::new(Some("main"), Some("exchange")));
        assert_eq!(t[1].0, 4245);
        assert_eq!(
            t[1].1[1],
            Frame::new(None, Some("libevent_core-2.1.so.7.0.1"))
        );
        assert_eq!(t[1].1.len(), 4);
    }

    #[test]
    fn parses_gdb_frames_and_thread_ids() {
        let t = parse_gdb(GDB);
        assert_eq!(
            t.iter().map(|(tid, _)| *tid).collect::<Vec<_>>(),
            [4245, 4241]
        );
        assert_eq!(t[0].1[0], Frame::new(Some("__GI___poll"), None));
        assert_eq!(
            t[0].1[1],
            Frame::new(Some("??"), Some("libevent_core-2.1.so.7"))
        );
        assert_eq!(t[0].1[1].name(), None);
        assert_eq!(
            t[1].1[1],
            Frame::new(Some("opal_progress"), Some("libopen-pal.so.40"))
        );
        assert_eq!(t[1].1[3], Frame::new(Some("main"), None));
        assert_eq!(t[1].1[4], Frame::new(Some("spin"), None));
    }

    #[test]
    fn a_tool_that_prints_nothing_gives_no_threads() {
        assert!(
            parse_eu_stack("eu-stack: dwfl_linux_proc_attach pid 1: No such process\n").is_empty()
        );
        assert!(parse_gdb("ptrace: Operation not permitted.\n").is_empty());
    }
}

#[cfg(test)]
mod live_tests {
    use super::*;

    /// Both samplers on a real sleeping process: its one thread, in libc.
    #[test]
    fn samples_a_real_process_with_each_tool_on_path() {
        struct Kill(std::process::Child);
        impl Drop for Kill {
            fn drop(&mut self) {
                let _ = self.0.kill();
                let _ = self.0.wait();
            }
        }
        let child = Kill(
            Command::new("sleep")
                .arg("30")
                .spawn()
                .expect("spawn sleep"),
        );
        let pid = child.0.id() as i32;
        std::thread::sleep(Duration::from_millis(200));
        let mut sampled = 0;
        for (tool, name) in [(Tool::EuStack, "eu-stack"), (Tool::Gdb, "gdb")] {
            if !on_path(name) {
                println!("skipping {name}: not on PATH");
                continue;
            }
            let s = sample(tool, &[pid]);
            assert_eq!(s.len(), 1);
            let p = &s[0];
            assert!(p.error.is_none(), "{name}: {:?}", p.error);
            assert_eq!(p.threads.len(), 1, "{name}: {p:?}");
            let (tid, frames) = &p.threads[0];
            assert_eq!(*tid, pid);
            assert!(
                frames
                    .iter()
                    .any(|f| f.module.as_deref().is_some_and(|m| m.starts_with("libc"))),
                "{name}: no frame in libc: {frames:?}"
            );
            assert!(!p.text.is_empty());
            sampled += 1;
        }
        if sampled == 0 {
            println!("skipping: neither eu-stack nor gdb is on PATH");
        }
    }
}
