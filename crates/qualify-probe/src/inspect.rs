//! The seam between the watch's decisions and the running system: everything
//! [`crate::classify::Watch`] asks beyond the per-sample `/proc` snapshot — how each thread waits
//! (syscall files, fd tables), stack samples (eu-stack or gdb), digests of shared memory and
//! program data, and process environments (rank identity); and for stalled trees the words
//! of process memory that name lock owners, which runtime a process runs, and the runtime's own
//! report (`jcmd`, `py-spy`). [`Live`] asks the real system; decision tests answer from tables.

use crate::blocking::{self, ThreadWait};
use crate::memory::{self, Snapshot};
use crate::rules::Rules;
use crate::sample::ProcSnap;
use crate::stacks::{self, NoSampler, ProcStacks, Tool, ToolError};

pub trait Inspect {
    /// How every thread of one snapshot of the tree waits.
    fn waits(&mut self, procs: &[ProcSnap]) -> Vec<ThreadWait>;
    /// The name of the stack sampler, or why there is none.
    fn sampler(&self) -> Result<&'static str, NoSampler>;
    /// One stack sample of `pids`.
    fn stacks(&mut self, pids: &[i32]) -> Vec<ProcStacks>;
    /// Digests of the memory through which `pids` could release each other.
    fn memory(&mut self, pids: &[i32], rules: &Rules) -> Snapshot;
    /// A process's environment (`NAME`, `value`), as it was when it started.
    fn environ(&mut self, pid: i32) -> Vec<(String, String)>;
    /// qualify's own value of an environment variable (what children merely inherit).
    fn own_env(&self, name: &str) -> Option<String>;
    /// `len` bytes of a process's memory at `addr` (`None` when unreadable).
    fn read_mem(&mut self, _pid: i32, _addr: u64, _len: usize) -> Option<Vec<u8>> {
        None
    }
    /// Addresses (8-byte aligned) in a process's private writable memory holding `value`.
    fn find_word(&mut self, _pid: i32, _value: u64) -> Vec<u64> {
        Vec::new()
    }
    /// The runtime a process runs (a name of the runtimes table), if any.
    fn runtime(&mut self, _pid: i32) -> Option<String> {
        None
    }
    /// Ask a process's runtime for its threads with the runtime's tool (`jcmd`, `py-spy`):
    /// the tool's output, or why there is none.
    fn ask_runtime(&mut self, _pid: i32, runtime: &str) -> Result<String, ToolError> {
        Err(ToolError::NoTool {
            runtime: runtime.to_string(),
        })
    }
    /// Bytes one thread read and wrote so far (`rchar + wchar` of its task), if readable.
    fn thread_io(&mut self, _pid: i32, _tid: i32) -> Option<u64> {
        None
    }
    /// (TID in the process's own PID namespace, TID here) for each of its threads.
    fn ns_tids(&mut self, _pid: i32) -> Vec<(i32, i32)> {
        Vec::new()
    }
}

/// The real system.
pub struct Live {
    tool: Option<Tool>,
    /// pid → (start time, name, runtime), so a reused pid or an exec is looked at again.
    runtimes: std::collections::HashMap<i32, (u64, String, Option<String>)>,
}

impl Live {
    pub fn new() -> Live {
        Live {
            tool: Tool::find(),
            runtimes: std::collections::HashMap::new(),
        }
    }
}

/// How long a runtime's tool may take before it is given up on.
const TOOL_LIMIT: std::time::Duration = std::time::Duration::from_secs(10);
/// Bytes of private memory searched for one word at most.
const FIND_LIMIT: u64 = 256 << 20;

fn on_path(tool: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|d| d.join(tool).is_file()))
}

pub(crate) fn run_tool(program: &str, args: &[String]) -> Result<String, ToolError> {
    let mut cmd = std::process::Command::new(program);
    cmd.args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let (out, err) = stacks::run_bounded_with_err(cmd, TOOL_LIMIT)?;
    if out.trim().is_empty() {
        let why = err
            .lines()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("no output");
        return Err(ToolError::NoOutput {
            program: program.to_string(),
            why: why.to_string(),
        });
    }
    Ok(out)
}

impl Inspect for Live {
    fn waits(&mut self, procs: &[ProcSnap]) -> Vec<ThreadWait> {
        blocking::classify(procs)
    }

    fn sampler(&self) -> Result<&'static str, NoSampler> {
        self.tool.map(Tool::name).ok_or(NoSampler)
    }

    fn stacks(&mut self, pids: &[i32]) -> Vec<ProcStacks> {
        match self.tool {
            Some(tool) => stacks::sample(tool, pids),
            None => Vec::new(),
        }
    }

    fn memory(&mut self, pids: &[i32], rules: &Rules) -> Snapshot {
        memory::snapshot(pids, rules)
    }

    fn environ(&mut self, pid: i32) -> Vec<(String, String)> {
        crate::observe::environ(pid)
    }

    fn own_env(&self, name: &str) -> Option<String> {
        std::env::var(name).ok()
    }

    fn read_mem(&mut self, pid: i32, addr: u64, len: usize) -> Option<Vec<u8>> {
        use std::os::unix::fs::FileExt;
        let f = std::fs::File::open(format!("/proc/{pid}/mem")).ok()?;
        let mut buf = vec![0u8; len];
        f.read_exact_at(&mut buf, addr).ok()?;
        Some(buf)
    }

    fn find_word(&mut self, pid: i32, value: u64) -> Vec<u64> {
        use std::os::unix::fs::FileExt;
        let Ok(maps) = std::fs::read_to_string(format!("/proc/{pid}/maps")) else {
            return Vec::new();
        };
        let Ok(f) = std::fs::File::open(format!("/proc/{pid}/mem")) else {
            return Vec::new();
        };
        let needle = value.to_le_bytes();
        let mut found = Vec::new();
        let mut budget = FIND_LIMIT;
        let mut buf = vec![0u8; 1 << 20];
        for m in memory::parse_maps(&maps) {
            let private_rw = m.perms.starts_with("rw") && m.perms.as_bytes().get(3) == Some(&b'p');
            if !private_rw || !(m.path.is_empty() || m.path == "[heap]") {
                continue;
            }
            let mut at = m.lo;
            while at < m.hi && budget > 0 {
                let n = ((m.hi - at) as usize).min(buf.len());
                if f.read_exact_at(&mut buf[..n], at).is_err() {
                    break;
                }
                budget = budget.saturating_sub(n as u64);
                for (i, w) in buf[..n].chunks_exact(8).enumerate() {
                    if w == needle {
                        found.push(at + 8 * i as u64);
                    }
                }
                at += n as u64;
            }
        }
        found
    }

    fn thread_io(&mut self, pid: i32, tid: i32) -> Option<u64> {
        let text = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/io")).ok()?;
        let field = |name: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|v| v.trim().parse::<u64>().ok())
        };
        Some(field("rchar:")? + field("wchar:")?)
    }

    fn runtime(&mut self, pid: i32) -> Option<String> {
        // The same process (pid and start time) that has not exec'd since (same name): a
        // process seen before it execs the runtime is asked again after.
        let (start, comm) = crate::sample::read_proc(pid)
            .map(|p| (p.starttime, p.comm))
            .unwrap_or_default();
        if let Some((s, c, r)) = self.runtimes.get(&pid)
            && *s == start
            && *c == comm
        {
            return r.clone();
        }
        let table = crate::runtimes::RUNTIMES.as_ref().ok()?;
        let facts = crate::runtimes::facts(pid, table);
        let r = table.recognise(&facts).map(|r| r.name.clone());
        self.runtimes.insert(pid, (start, comm, r.clone()));
        r
    }

    fn ask_runtime(&mut self, pid: i32, runtime: &str) -> Result<String, ToolError> {
        let pid_s = pid.to_string();
        match runtime {
            "JVM" => {
                if on_path("jcmd") {
                    run_tool("jcmd", &[pid_s, "Thread.print".into()])
                } else if on_path("jstack") {
                    run_tool("jstack", &[pid_s])
                } else {
                    Err(ToolError::NoJvmTool)
                }
            }
            "CPython" => {
                if on_path("py-spy") {
                    run_tool(
                        "py-spy",
                        &["dump".into(), "--pid".into(), pid_s, "--json".into()],
                    )
                } else {
                    Err(ToolError::NoPySpy)
                }
            }
            other => Err(ToolError::NoTool {
                runtime: other.to_string(),
            }),
        }
    }

    fn ns_tids(&mut self, pid: i32) -> Vec<(i32, i32)> {
        let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
            return Vec::new();
        };
        dir.flatten()
            .filter_map(|e| {
                let tid: i32 = e.file_name().to_str()?.parse().ok()?;
                let status = std::fs::read_to_string(e.path().join("status")).ok()?;
                let ns: i32 = status
                    .lines()
                    .find_map(|l| l.strip_prefix("NSpid:"))?
                    .split_whitespace()
                    .last()?
                    .parse()
                    .ok()?;
                Some((ns, tid))
            })
            .collect()
    }
}
