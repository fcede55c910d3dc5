//! What a sleeping thread is waiting for, from `/proc/<pid>/task/<tid>/syscall` and the fd
//! tables of the tree: an untimed wait only the tree itself could release (`Internal`), a timed
//! wait (`Timed`, never a deadlock), or something outside the tree (`External`).

use std::collections::HashMap;

use serde::Serialize;

use crate::sample::ProcSnap;

/// How one thread's wait is classified.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Class {
    /// On a CPU or runnable.
    Running,
    /// In a wait with a timeout (sleep, poll/futex with timeout): it will wake by itself.
    Timed,
    /// Untimed wait that only another member of the tree could release.
    Internal,
    /// Waiting on something outside the tree (socket, terminal, disk, signal, untimed poll).
    External,
    /// Exited or a zombie.
    Gone,
}

/// One thread's wait, for the verdict and the evidence.
#[derive(Debug, Clone, Serialize)]
pub struct ThreadWait {
    pub pid: i32,
    pub tid: i32,
    pub comm: String,
    pub state: String,
    pub class: Class,
    /// Human form of the blocking call, e.g. `futex(FUTEX_WAIT, no timeout)`.
    pub call: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub wchan: String,
    /// The futex a thread waits on (for owners and wait-for cycles); not part of the JSON.
    #[serde(skip)]
    pub futex: Option<FutexWait>,
    /// A poll-style wait's timeout in milliseconds, when the call shows it.
    #[serde(skip)]
    pub timeout_ms: Option<u64>,
}

/// A futex wait as the syscall file shows it: the word's address, the operation and the value
/// the thread expected there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FutexWait {
    pub addr: u64,
    pub op: u64,
    pub val: u64,
    /// The waiting thread's stack pointer (a word on its own stack is no shared lock).
    pub sp: Option<u64>,
}

impl FutexWait {
    /// `FUTEX_LOCK_PI`/`FUTEX_LOCK_PI2`: the kernel's priority-inheritance protocol, whose word
    /// holds the owner's TID.
    pub fn is_pi(&self) -> bool {
        matches!(self.op & FUTEX_CMD_MASK, 6 | 13)
    }
}

/// Raw contents of the syscall file.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Syscall {
    Running,
    Outside,
    In {
        nr: libc::c_long,
        args: [u64; 6],
        /// The thread's stack pointer.
        sp: Option<u64>,
    },
}

fn read_syscall(pid: i32, tid: i32) -> Option<Syscall> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/syscall")).ok()?;
    parse_syscall(&text)
}

fn parse_syscall(text: &str) -> Option<Syscall> {
    let text = text.trim();
    if text == "running" {
        return Some(Syscall::Running);
    }
    let mut it = text.split_whitespace();
    let nr: libc::c_long = it.next()?.parse().ok()?;
    if nr < 0 {
        return Some(Syscall::Outside);
    }
    let mut args = [0u64; 6];
    for a in args.iter_mut() {
        let s = it.next()?;
        *a = u64::from_str_radix(s.trim_start_matches("0x"), 16).ok()?;
    }
    let sp = it
        .next()
        .and_then(|s| u64::from_str_radix(s.trim_start_matches("0x"), 16).ok());
    Some(Syscall::In { nr, args, sp })
}

/// Who holds each pipe of the tree open, and how: inode → (pid, readable, writable); which
/// sockets the tree holds; and (asked once, when needed) the peers of Unix sockets.
#[derive(Default)]
struct Pipes {
    holders: HashMap<u64, Vec<(i32, bool, bool)>>,
    sockets: std::collections::HashSet<u64>,
    unix_peers: Option<HashMap<u64, u64>>,
}

impl Pipes {
    fn scan(procs: &[ProcSnap]) -> Pipes {
        let mut holders: HashMap<u64, Vec<(i32, bool, bool)>> = HashMap::new();
        let mut sockets = std::collections::HashSet::new();
        for p in procs {
            let Ok(dir) = std::fs::read_dir(format!("/proc/{}/fd", p.pid)) else {
                continue;
            };
            for e in dir.flatten() {
                if let Some(ino) = inode_of_link(&e.path(), "socket:[") {
                    sockets.insert(ino);
                    continue;
                }
                let Some(ino) = inode_of_link(&e.path(), "pipe:[") else {
                    continue;
                };
                let fd = e.file_name();
                let (r, w) = fd_mode(p.pid, &fd.to_string_lossy());
                holders.entry(ino).or_default().push((p.pid, r, w));
            }
        }
        Pipes {
            holders,
            sockets,
            unix_peers: None,
        }
    }

    /// Is there a holder in the tree that could feed (`want_writer`) or drain this pipe?
    fn other_end_in_tree(&self, ino: u64, want_writer: bool) -> bool {
        self.holders
            .get(&ino)
            .is_some_and(|hs| hs.iter().any(|&(_, r, w)| if want_writer { w } else { r }))
    }

    /// The peer of a Unix socket, when the tree holds it too.
    fn peer_in_tree(&mut self, pid: i32, ino: u64) -> Option<u64> {
        let peers = self
            .unix_peers
            .get_or_insert_with(|| crate::sockets::unix_peers(pid));
        peers
            .get(&ino)
            .copied()
            .filter(|p| self.sockets.contains(p))
    }
}

fn inode_of_link(link: &std::path::Path, kind: &str) -> Option<u64> {
    let target = std::fs::read_link(link).ok()?;
    let t = target.to_str()?;
    t.strip_prefix(kind)?.strip_suffix(']')?.parse().ok()
}

fn fd_target(pid: i32, fd: u64) -> String {
    std::fs::read_link(format!("/proc/{pid}/fd/{fd}"))
        .map(|t| t.to_string_lossy().into_owned())
        .unwrap_or_else(|_| "?".into())
}

/// `(readable, writable)` from the `flags:` line of fdinfo.
fn fd_mode(pid: i32, fd: &str) -> (bool, bool) {
    let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/fdinfo/{fd}")) else {
        return (true, true);
    };
    let flags = text
        .lines()
        .find_map(|l| l.strip_prefix("flags:"))
        .and_then(|v| u32::from_str_radix(v.trim(), 8).ok())
        .unwrap_or(2);
    match flags & 3 {
        0 => (true, false),
        1 => (false, true),
        _ => (true, true),
    }
}

const FUTEX_CMD_MASK: u64 = !(128 | 256);

fn futex_op_name(op: u64) -> &'static str {
    match op & FUTEX_CMD_MASK {
        0 => "FUTEX_WAIT",
        6 => "FUTEX_LOCK_PI",
        9 => "FUTEX_WAIT_BITSET",
        11 => "FUTEX_WAIT_REQUEUE_PI",
        13 => "FUTEX_LOCK_PI2",
        _ => "FUTEX_OP",
    }
}

/// Classify every thread of the tree. `procs` must be one snapshot of the whole tree.
pub fn classify(procs: &[ProcSnap]) -> Vec<ThreadWait> {
    let mut pipes: Option<Pipes> = None;
    let has_children = |pid: i32| procs.iter().any(|p| p.ppid == pid && p.pid != pid);
    let mut out = Vec::new();
    for p in procs {
        for t in &p.threads {
            let wchan = std::fs::read_to_string(format!("/proc/{}/task/{}/wchan", p.pid, t.tid))
                .unwrap_or_default();
            let wchan = if wchan == "0" { String::new() } else { wchan };
            let mut futex = None;
            let (class, call) = match t.state {
                'R' => (Class::Running, "running".to_string()),
                'Z' | 'X' => (Class::Gone, "exited".to_string()),
                'D' => (Class::External, format!("uninterruptible wait ({wchan})")),
                'T' | 't' => (Class::External, "stopped by a signal or tracer".to_string()),
                _ => match read_syscall(p.pid, t.tid) {
                    Some(Syscall::In { nr, args, sp }) => {
                        if nr == libc::SYS_futex {
                            futex = Some(FutexWait {
                                addr: args[0],
                                op: args[1],
                                val: args[2] & 0xffff_ffff,
                                sp,
                            });
                        }
                        classify_call(p.pid, nr, &args, procs, &mut pipes, &has_children)
                    }
                    Some(Syscall::Running) => (Class::Running, "running".into()),
                    Some(Syscall::Outside) => {
                        (Class::External, "sleeping outside a system call".into())
                    }
                    None => (Class::External, "unknown (syscall file unreadable)".into()),
                },
            };
            out.push(ThreadWait {
                pid: p.pid,
                tid: t.tid,
                comm: t.comm.clone(),
                state: t.state.to_string(),
                class,
                timeout_ms: timeout_of(&call),
                call,
                wchan,
                futex,
            });
        }
    }
    out
}

fn classify_call(
    pid: i32,
    nr: libc::c_long,
    a: &[u64; 6],
    procs: &[ProcSnap],
    pipes: &mut Option<Pipes>,
    has_children: &dyn Fn(i32) -> bool,
) -> (Class, String) {
    use libc as l;
    let timed = |ptr: u64| if ptr == 0 { "no timeout" } else { "timeout" };
    let nr_l = nr;
    if nr_l == l::SYS_futex {
        let op = a[1];
        let cmd = op & FUTEX_CMD_MASK;
        let waits = matches!(cmd, 0 | 6 | 9 | 11 | 13);
        let name = futex_op_name(op);
        if !waits {
            return (Class::External, format!("futex({name})"));
        }
        let class = if a[3] == 0 {
            Class::Internal
        } else {
            Class::Timed
        };
        return (class, format!("futex({name}, {})", timed(a[3])));
    }
    if nr_l == l::SYS_futex_waitv {
        let class = if a[3] == 0 {
            Class::Internal
        } else {
            Class::Timed
        };
        return (class, format!("futex_waitv({})", timed(a[3])));
    }
    if nr_l == l::SYS_read
        || nr_l == l::SYS_readv
        || nr_l == l::SYS_pread64
        || nr_l == l::SYS_preadv
    {
        return fd_wait(pid, a[0], false, procs, pipes, "read");
    }
    if nr_l == l::SYS_write || nr_l == l::SYS_writev || nr_l == l::SYS_pwrite64 {
        return fd_wait(pid, a[0], true, procs, pipes, "write");
    }
    let sockets = [
        (l::SYS_accept, "accept"),
        (l::SYS_accept4, "accept4"),
        (l::SYS_recvfrom, "recvfrom"),
        (l::SYS_recvmsg, "recvmsg"),
        (l::SYS_recvmmsg, "recvmmsg"),
        (l::SYS_connect, "connect"),
        (l::SYS_sendto, "sendto"),
        (l::SYS_sendmsg, "sendmsg"),
    ];
    if let Some((_, name)) = sockets.iter().find(|(n, _)| *n == nr_l) {
        return fd_wait(pid, a[0], false, procs, pipes, name);
    }
    if nr_l == l::SYS_flock || nr_l == l::SYS_fcntl {
        return (Class::External, "file lock wait (holder not traced)".into());
    }
    if nr_l == l::SYS_wait4 || nr_l == l::SYS_waitid {
        let name = if nr_l == l::SYS_wait4 {
            "wait4"
        } else {
            "waitid"
        };
        return if has_children(pid) {
            (Class::Internal, format!("{name} (waiting for a child)"))
        } else {
            (Class::External, format!("{name} (no child in the tree)"))
        };
    }
    if nr_l == l::SYS_nanosleep || nr_l == l::SYS_clock_nanosleep {
        return (Class::Timed, "nanosleep".into());
    }
    if nr_l == l::SYS_sched_yield {
        // Giving up the CPU and asking for it back at once: a spinning thread (MPI runtimes
        // yield this way when ranks outnumber cores).
        return (Class::Running, "sched_yield".into());
    }
    if nr_l == l::SYS_restart_syscall {
        // The kernel resumes only waits with a timeout this way (poll, nanosleep, futex with a
        // timeout) after a stop, e.g. by a stack sampler.
        return (
            Class::Timed,
            "restart_syscall (a timed wait resumed after a stop)".into(),
        );
    }
    if nr_l == l::SYS_ppoll || nr_l == l::SYS_pselect6 || nr_l == l::SYS_epoll_pwait2 {
        let idx = if nr_l == l::SYS_pselect6 {
            4
        } else if nr_l == l::SYS_ppoll {
            2
        } else {
            3
        };
        let name = if nr_l == l::SYS_ppoll {
            "ppoll"
        } else if nr_l == l::SYS_pselect6 {
            "pselect6"
        } else {
            "epoll_pwait2"
        };
        return if a[idx] == 0 {
            if nr_l == l::SYS_epoll_pwait2 {
                return epoll_untimed(pid, a[0], name, procs, pipes);
            }
            (Class::External, format!("{name}(no timeout)"))
        } else {
            (Class::Timed, format!("{name}(timeout)"))
        };
    }
    if nr_l == l::SYS_epoll_pwait {
        return match int_timeout("epoll_pwait", a[3]) {
            (Class::External, _) => epoll_untimed(pid, a[0], "epoll_pwait", procs, pipes),
            timed => timed,
        };
    }
    if nr_l == l::SYS_rt_sigtimedwait {
        return if a[2] == 0 {
            (Class::External, "rt_sigtimedwait(no timeout)".into())
        } else {
            (Class::Timed, "rt_sigtimedwait(timeout)".into())
        };
    }
    if nr_l == l::SYS_rt_sigsuspend {
        return (
            Class::External,
            "rt_sigsuspend (waiting for a signal)".into(),
        );
    }
    #[cfg(target_arch = "x86_64")]
    if nr_l == l::SYS_epoll_wait {
        return match int_timeout("epoll_wait", a[3]) {
            (Class::External, _) => epoll_untimed(pid, a[0], "epoll_wait", procs, pipes),
            timed => timed,
        };
    }
    if let Some(r) = arch_specific(nr_l, a) {
        return r;
    }
    (Class::External, format!("syscall {nr}"))
}

#[cfg(target_arch = "x86_64")]
fn arch_specific(nr: libc::c_long, a: &[u64; 6]) -> Option<(Class, String)> {
    use libc as l;
    if nr == l::SYS_poll {
        return Some(int_timeout("poll", a[2]));
    }
    if nr == l::SYS_select {
        return Some(if a[4] == 0 {
            (Class::External, "select(no timeout)".into())
        } else {
            (Class::Timed, "select(timeout)".into())
        });
    }
    if nr == l::SYS_pause {
        return Some((Class::External, "pause (waiting for a signal)".into()));
    }
    None
}

#[cfg(not(target_arch = "x86_64"))]
fn arch_specific(_nr: libc::c_long, _a: &[u64; 6]) -> Option<(Class, String)> {
    None
}

/// An untimed wait on an epoll set: only the tree could end it when every file the set watches
/// is the tree's own — a pipe or Unix socket whose other end the tree holds, an eventfd (an
/// in-process wake-up) — as in an asyncio loop whose only registration is its self-pipe. A
/// timerfd in the set makes it a timed wait; anything else is named as outside the tree.
fn epoll_untimed(
    pid: i32,
    epfd: u64,
    name: &str,
    procs: &[ProcSnap],
    pipes: &mut Option<Pipes>,
) -> (Class, String) {
    let info = std::fs::read_to_string(format!("/proc/{pid}/fdinfo/{epfd}")).unwrap_or_default();
    let tfds: Vec<u64> = info
        .lines()
        .filter_map(|l| l.strip_prefix("tfd:"))
        .filter_map(|r| r.split_whitespace().next()?.parse().ok())
        .collect();
    if tfds.is_empty() {
        return (
            Class::External,
            format!("{name}(no timeout) on an empty epoll set (waiting for a signal)"),
        );
    }
    let pipes = pipes.get_or_insert_with(|| Pipes::scan(procs));
    let mut own = Vec::new();
    let mut outside = Vec::new();
    for fd in tfds {
        let target = fd_target(pid, fd);
        let ino = |kind: &str| {
            target
                .strip_prefix(kind)
                .and_then(|t| t.strip_suffix(']'))
                .and_then(|t| t.parse::<u64>().ok())
        };
        if target == "anon_inode:[timerfd]" {
            return (
                Class::Timed,
                format!("{name}(no timeout) on an epoll set with a timerfd (fd {fd})"),
            );
        }
        let inside = if let Some(i) = ino("pipe:[") {
            // Readable when a writer exists; the tree's own when that writer is in the tree.
            pipes.other_end_in_tree(i, true)
        } else if let Some(i) = ino("socket:[") {
            pipes.peer_in_tree(pid, i).is_some()
        } else {
            target == "anon_inode:[eventfd]"
        };
        if inside {
            own.push(format!("fd {fd} = {target}"));
        } else {
            outside.push(format!("fd {fd} = {target}"));
        }
    }
    if outside.is_empty() {
        (
            Class::Internal,
            format!(
                "{name}(no timeout) on fds whose other ends the tree holds ({})",
                own.join(", ")
            ),
        )
    } else {
        (
            Class::External,
            format!(
                "{name}(no timeout) on {} (other end outside the tree)",
                outside.join(", ")
            ),
        )
    }
}

/// The milliseconds of `poll(timeout 99 ms)`, as [`int_timeout`] writes them.
fn timeout_of(call: &str) -> Option<u64> {
    let at = call.find("(timeout ")? + "(timeout ".len();
    call[at..].split_whitespace().next()?.parse().ok()
}

/// poll-style `int` timeout in milliseconds: negative means forever.
fn int_timeout(name: &str, raw: u64) -> (Class, String) {
    let ms = raw as u32 as i32;
    if ms < 0 {
        (Class::External, format!("{name}(no timeout)"))
    } else {
        (Class::Timed, format!("{name}(timeout {ms} ms)"))
    }
}

fn fd_wait(
    pid: i32,
    fd: u64,
    writing: bool,
    procs: &[ProcSnap],
    pipes: &mut Option<Pipes>,
    name: &str,
) -> (Class, String) {
    let target = fd_target(pid, fd);
    if let Some(ino) = target
        .strip_prefix("pipe:[")
        .and_then(|t| t.strip_suffix(']'))
        .and_then(|t| t.parse::<u64>().ok())
    {
        let pipes = pipes.get_or_insert_with(|| Pipes::scan(procs));
        // A reader waits for a writer; a writer (pipe full) waits for a reader.
        if pipes.other_end_in_tree(ino, !writing) {
            let other = if writing { "reader" } else { "writer" };
            return (
                Class::Internal,
                format!("{name}(fd {fd} = {target}, {other} end held in the tree)"),
            );
        }
        return (
            Class::External,
            format!("{name}(fd {fd} = {target}, other end outside the tree)"),
        );
    }
    (Class::External, format!("{name}(fd {fd} = {target})"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_syscall_file() {
        assert_eq!(parse_syscall("running\n"), Some(Syscall::Running));
        assert_eq!(parse_syscall("-1 0x7ffd 0x7f00\n"), Some(Syscall::Outside));
        assert_eq!(
            parse_syscall("202 0x55d0 0x80 0x2 0x0 0x0 0x0 0x7ffd 0x7f00\n"),
            Some(Syscall::In {
                nr: 202,
                args: [0x55d0, 0x80, 2, 0, 0, 0],
                sp: Some(0x7ffd)
            })
        );
    }

    #[test]
    fn poll_style_timeouts() {
        assert_eq!(int_timeout("poll", u64::MAX).0, Class::External);
        assert_eq!(int_timeout("poll", 0xffff_ffff).0, Class::External);
        assert_eq!(int_timeout("poll", 100).0, Class::Timed);
    }

    #[test]
    fn futex_without_timeout_is_internal_with_timeout_is_timed() {
        let empty: Vec<ProcSnap> = Vec::new();
        let mut pipes = None;
        let no = |_: i32| false;
        let (c, call) = classify_call(
            1,
            libc::SYS_futex,
            &[0, 128, 2, 0, 0, 0],
            &empty,
            &mut pipes,
            &no,
        );
        assert_eq!(c, Class::Internal);
        assert!(call.contains("FUTEX_WAIT"), "{call}");
        let (c, _) = classify_call(
            1,
            libc::SYS_futex,
            &[0, 137, 2, 0x7ff0, 0, 0],
            &empty,
            &mut pipes,
            &no,
        );
        assert_eq!(c, Class::Timed);
        let (c, _) = classify_call(
            1,
            libc::SYS_clock_nanosleep,
            &[0; 6],
            &empty,
            &mut pipes,
            &no,
        );
        assert_eq!(c, Class::Timed);
        let (c, _) = classify_call(1, libc::SYS_sched_yield, &[0; 6], &empty, &mut pipes, &no);
        assert_eq!(c, Class::Running);
        let (c, _) = classify_call(
            1,
            libc::SYS_restart_syscall,
            &[0; 6],
            &empty,
            &mut pipes,
            &no,
        );
        assert_eq!(c, Class::Timed);
    }
}
