//! Snapshots of the process tree from `/proc`: per-thread state and scheduler counters, per-process
//! I/O and memory, open files and sockets, and (without cgroups) the tree's membership itself.

use std::collections::{HashMap, HashSet};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;

use procfs::process::Process;

/// One thread at one instant.
#[derive(Debug, Clone)]
pub struct ThreadSnap {
    pub tid: i32,
    pub comm: String,
    pub state: char,
    /// utime + stime, clock ticks.
    pub cpu_ticks: u64,
    /// Time on CPU, ns (schedstat).
    pub run_ns: u64,
    /// Time runnable but waiting for a CPU, ns (schedstat).
    pub wait_ns: u64,
    /// Number of timeslices run.
    pub slices: u64,
}

/// One process at one instant.
#[derive(Debug, Clone)]
pub struct ProcSnap {
    pub pid: i32,
    pub ppid: i32,
    pub comm: String,
    pub starttime: u64,
    pub threads: Vec<ThreadSnap>,
    /// rchar + wchar.
    pub io_bytes: u64,
    /// Resident anonymous memory (resident minus file-backed/shared), bytes.
    pub anon_bytes: u64,
    /// Page faults so far (minor + major), all threads.
    pub faults: u64,
}

impl ProcSnap {
    pub fn is_zombie(&self) -> bool {
        self.threads.iter().all(|t| matches!(t.state, 'Z' | 'X'))
    }
}

/// A process's open file descriptors, and how many of them are sockets (`/proc/PID/fd`);
/// `(0, 0)` when it vanished or cannot be read.
pub fn fd_counts(pid: i32) -> (u64, u64) {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return (0, 0);
    };
    let (mut files, mut sockets) = (0, 0);
    for entry in dir.flatten() {
        files += 1;
        if std::fs::read_link(entry.path())
            .is_ok_and(|t| t.as_os_str().as_bytes().starts_with(b"socket:"))
        {
            sockets += 1;
        }
    }
    (files, sockets)
}

fn page_size() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let v = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if v > 0 { v as u64 } else { 4096 }
}

/// Read one process and all its threads. `None` if it vanished.
pub fn read_proc(pid: i32) -> Option<ProcSnap> {
    let p = Process::new(pid).ok()?;
    let stat = p.stat().ok()?;
    let mut threads = Vec::new();
    if let Ok(tasks) = p.tasks() {
        for task in tasks.flatten() {
            let Ok(ts) = task.stat() else { continue };
            let sched = task.schedstat().ok();
            threads.push(ThreadSnap {
                tid: task.tid,
                comm: ts.comm.clone(),
                state: ts.state,
                cpu_ticks: ts.utime + ts.stime,
                run_ns: sched.as_ref().map(|s| s.sum_exec_runtime).unwrap_or(0),
                wait_ns: sched.as_ref().map(|s| s.run_delay).unwrap_or(0),
                slices: sched.as_ref().map(|s| s.pcount).unwrap_or(0),
            });
        }
    }
    let io_bytes = p.io().map(|io| io.rchar + io.wchar).unwrap_or(0);
    let anon_bytes = p
        .statm()
        .map(|m| m.resident.saturating_sub(m.shared) * page_size())
        .unwrap_or(0);
    Some(ProcSnap {
        pid,
        ppid: stat.ppid,
        comm: stat.comm,
        starttime: stat.starttime,
        threads,
        io_bytes,
        anon_bytes,
        faults: stat.minflt + stat.majflt,
    })
}

/// `(pid, ppid)` of every process on the host.
fn all_ppids() -> Vec<(i32, i32)> {
    let Ok(iter) = procfs::process::all_processes() else {
        return Vec::new();
    };
    iter.flatten()
        .filter_map(|p| p.stat().ok().map(|s| (s.pid, s.ppid)))
        .collect()
}

/// Without cgroups: the probe's tree is every descendant of qualify's own children that carry
/// the probe's environment tag (the main process and orphans re-parented to qualify, which is a
/// child subreaper).
pub fn tree_by_tag(tag_key: &str, tag_value: &str, main_pid: i32) -> Vec<i32> {
    let me = std::process::id() as i32;
    let pairs = all_ppids();
    let mut children: HashMap<i32, Vec<i32>> = HashMap::new();
    for &(pid, ppid) in &pairs {
        children.entry(ppid).or_default().push(pid);
    }
    let mut roots: Vec<i32> = Vec::new();
    for &pid in children.get(&me).map(Vec::as_slice).unwrap_or(&[]) {
        if pid == main_pid || has_tag(pid, tag_key, tag_value) {
            roots.push(pid);
        }
    }
    let mut seen: HashSet<i32> = HashSet::new();
    let mut stack = roots;
    let mut out = Vec::new();
    while let Some(p) = stack.pop() {
        if !seen.insert(p) {
            continue;
        }
        out.push(p);
        if let Some(c) = children.get(&p) {
            stack.extend(c.iter().copied());
        }
    }
    out
}

/// Every (transitive) descendant of `root`, not `root` itself: a cell's tree below its init.
pub fn descendants(root: i32) -> Vec<i32> {
    let pairs = all_ppids();
    let mut children: HashMap<i32, Vec<i32>> = HashMap::new();
    for &(pid, ppid) in &pairs {
        children.entry(ppid).or_default().push(pid);
    }
    let mut seen: HashSet<i32> = HashSet::new();
    let mut stack: Vec<i32> = children.get(&root).cloned().unwrap_or_default();
    let mut out = Vec::new();
    while let Some(p) = stack.pop() {
        if !seen.insert(p) {
            continue;
        }
        out.push(p);
        if let Some(c) = children.get(&p) {
            stack.extend(c.iter().copied());
        }
    }
    out
}

fn has_tag(pid: i32, key: &str, value: &str) -> bool {
    let Ok(data) = std::fs::read(format!("/proc/{pid}/environ")) else {
        return false;
    };
    let want = format!("{key}={value}");
    data.split(|b| *b == 0)
        .any(|entry| OsStr::from_bytes(entry) == OsStr::new(&want))
}

/// Read the fields after the comm of `/proc/<pid>/stat` cheaply: `(state, ppid)`.
pub fn state_and_ppid(pid: i32) -> Option<(char, i32)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &text[text.rfind(')')? + 2..];
    let mut it = rest.split(' ');
    let state = it.next()?.chars().next()?;
    let ppid = it.next()?.parse().ok()?;
    Some((state, ppid))
}

/// A process's command line, arguments joined by spaces, cut at 4 KiB (empty when unreadable).
pub fn cmdline(pid: i32) -> String {
    use std::io::Read;
    let mut buf = Vec::new();
    if let Ok(f) = std::fs::File::open(format!("/proc/{pid}/cmdline")) {
        let _ = f.take(4096).read_to_end(&mut buf);
    }
    String::from_utf8_lossy(&buf)
        .split('\0')
        .filter(|a| !a.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}
