//! What a long-running tree did to its own processes while its main process ran: a server that
//! kills and replaces its workers (gunicorn's `WORKER TIMEOUT`), a worker the kernel's OOM
//! killer took, a child that crashed. Watched for probes with a [`crate::Control`] (services
//! and dependencies).
//!
//! Two sources: the kernel's process events ([`ProcEvents`], the proc connector: every fork and
//! exit of the system with its wait status, filtered to the tree by following forks from the
//! main process; needs `CAP_NET_ADMIN`, opened before the program is spawned so no fork is
//! missed), and else the tree as the probe samples it ([`Tracker::sampled`]: a process that
//! vanished ended — a zombie's status is read —, one that lived less than a sample is missed).
//! [`Tracker::finish`] adds the line of the tree's own output that names each process by its
//! pid there (its PID namespace's), the server's reason.

use std::collections::{HashMap, HashSet};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::Instant;

use qualify_model::children::{ChildEnd, ChildWatch, Children};

use crate::sample::ProcSnap;

const NETLINK_CONNECTOR: libc::c_int = 11;
const CN_IDX_PROC: u32 = 1;
const CN_VAL_PROC: u32 = 1;
const PROC_CN_MCAST_LISTEN: u32 = 1;
const PROC_CN_MCAST_IGNORE: u32 = 2;
const NLMSG_DONE: u16 = 3;
const NLMSG_HDRLEN: usize = 16;
const CN_MSG_LEN: usize = 20;
/// Where `proc_event.what` starts in a message, and its union after `what`, `cpu` and the
/// timestamp.
const EVENT_AT: usize = NLMSG_HDRLEN + CN_MSG_LEN;
const DATA_AT: usize = EVENT_AT + 16;
const PROC_EVENT_FORK: u32 = 0x1;
const PROC_EVENT_EXEC: u32 = 0x2;
const PROC_EVENT_COMM: u32 = 0x200;
const PROC_EVENT_EXIT: u32 = 0x8000_0000;

/// A subscription to the kernel's process events.
pub(crate) struct ProcEvents {
    fd: OwnedFd,
}

impl ProcEvents {
    /// Subscribe, or `None` where the kernel refuses (no `CAP_NET_ADMIN`, no proc connector;
    /// `QUALIFY_SIMULATE_MISSING=proc_events` pretends so, to test the sampling fallback).
    pub(crate) fn open() -> Option<ProcEvents> {
        if crate::sandbox::simulated_missing("proc_events") {
            return None;
        }
        // The kernel sends process events only to its initial network namespace, and a service
        // cell's threads may have joined the service's: the socket is made on a short-lived
        // thread in the namespace of qualify's main thread (a socket keeps the one it was
        // made in).
        let main_ns =
            std::fs::File::open(format!("/proc/self/task/{}/ns/net", std::process::id())).ok()?;
        std::thread::scope(|s| {
            s.spawn(|| {
                // SAFETY: setns on this new, short-lived thread with an fd we hold.
                if unsafe { libc::setns(main_ns.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
                    return None;
                }
                ProcEvents::open_here()
            })
            .join()
            .ok()
            .flatten()
        })
    }

    /// Subscribe from the calling thread's network namespace.
    fn open_here() -> Option<ProcEvents> {
        // SAFETY: plain syscall; on success the fd is ours.
        let fd = unsafe {
            libc::socket(
                libc::AF_NETLINK,
                libc::SOCK_DGRAM | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK,
                NETLINK_CONNECTOR,
            )
        };
        if fd < 0 {
            return None;
        }
        // SAFETY: fd was just returned by socket().
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        // A roomy buffer: every process event of the machine lands here between two samples.
        let size: libc::c_int = 8 << 20;
        for opt in [libc::SO_RCVBUFFORCE, libc::SO_RCVBUF] {
            // SAFETY: setsockopt with a c_int we own.
            let ok = unsafe {
                libc::setsockopt(
                    fd.as_raw_fd(),
                    libc::SOL_SOCKET,
                    opt,
                    (&size as *const libc::c_int).cast(),
                    std::mem::size_of::<libc::c_int>() as libc::socklen_t,
                )
            } == 0;
            if ok {
                break;
            }
        }
        // SAFETY: zeroed sockaddr_nl is valid; fields set below.
        let mut addr: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
        addr.nl_family = libc::AF_NETLINK as libc::sa_family_t;
        addr.nl_groups = CN_IDX_PROC;
        // SAFETY: bind with a sockaddr_nl of the right size.
        let bound = unsafe {
            libc::bind(
                fd.as_raw_fd(),
                (&addr as *const libc::sockaddr_nl).cast(),
                std::mem::size_of::<libc::sockaddr_nl>() as libc::socklen_t,
            )
        } == 0;
        let events = ProcEvents { fd };
        (bound && events.control(PROC_CN_MCAST_LISTEN)).then_some(events)
    }

    /// Send a proc connector control operation (listen, ignore).
    fn control(&self, op: u32) -> bool {
        let len = NLMSG_HDRLEN + CN_MSG_LEN + 4;
        let mut m = Vec::with_capacity(len);
        m.extend_from_slice(&(len as u32).to_ne_bytes());
        m.extend_from_slice(&NLMSG_DONE.to_ne_bytes());
        m.extend_from_slice(&0u16.to_ne_bytes());
        m.extend_from_slice(&0u32.to_ne_bytes());
        m.extend_from_slice(&std::process::id().to_ne_bytes());
        m.extend_from_slice(&CN_IDX_PROC.to_ne_bytes());
        m.extend_from_slice(&CN_VAL_PROC.to_ne_bytes());
        m.extend_from_slice(&0u32.to_ne_bytes()); // seq
        m.extend_from_slice(&0u32.to_ne_bytes()); // ack
        m.extend_from_slice(&4u16.to_ne_bytes()); // len
        m.extend_from_slice(&0u16.to_ne_bytes()); // flags
        m.extend_from_slice(&op.to_ne_bytes());
        // SAFETY: send a buffer we own.
        let sent = unsafe { libc::send(self.fd.as_raw_fd(), m.as_ptr().cast(), m.len(), 0) };
        sent == m.len() as isize
    }

    /// Hand every event waiting in the socket to `tracker`.
    pub(crate) fn drain(&mut self, tracker: &mut Tracker) {
        let mut buf = vec![0u8; 8192];
        loop {
            // SAFETY: recv into a buffer we own.
            let n = unsafe {
                libc::recv(
                    self.fd.as_raw_fd(),
                    buf.as_mut_ptr().cast(),
                    buf.len(),
                    libc::MSG_DONTWAIT,
                )
            };
            if n < 0 {
                match std::io::Error::last_os_error().raw_os_error() {
                    Some(libc::ENOBUFS) => {
                        tracker.lost = true;
                        continue;
                    }
                    Some(libc::EINTR) => continue,
                    _ => return,
                }
            }
            if n == 0 {
                return;
            }
            let mut at = 0usize;
            let n = n as usize;
            while at + NLMSG_HDRLEN <= n {
                let len = u32_at(&buf, at) as usize;
                if len < NLMSG_HDRLEN || at + len > n {
                    break;
                }
                if let Some(event) = Event::parse(&buf[at..at + len]) {
                    tracker.event(event);
                }
                at += (len + 3) & !3;
            }
        }
    }
}

impl Drop for ProcEvents {
    fn drop(&mut self) {
        // Older kernels count listeners globally: say we stopped listening.
        let _ = self.control(PROC_CN_MCAST_IGNORE);
    }
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    b.get(at..at + 4)
        .map_or(0, |s| u32::from_ne_bytes([s[0], s[1], s[2], s[3]]))
}

fn i32_at(b: &[u8], at: usize) -> i32 {
    u32_at(b, at) as i32
}

/// One process event, as far as the tracker reads it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Event {
    Fork {
        parent_tgid: i32,
        child_pid: i32,
        child_tgid: i32,
    },
    Exec {
        tgid: i32,
    },
    Comm {
        pid: i32,
        tgid: i32,
        comm: String,
    },
    Exit {
        pid: i32,
        tgid: i32,
        status: u32,
    },
}

impl Event {
    fn parse(m: &[u8]) -> Option<Event> {
        if m.len() < DATA_AT + 8 {
            return None;
        }
        let what = u32_at(m, EVENT_AT);
        let d = DATA_AT;
        Some(match what {
            PROC_EVENT_FORK => Event::Fork {
                parent_tgid: i32_at(m, d + 4),
                child_pid: i32_at(m, d + 8),
                child_tgid: i32_at(m, d + 12),
            },
            PROC_EVENT_EXEC => Event::Exec {
                tgid: i32_at(m, d + 4),
            },
            PROC_EVENT_COMM => {
                let raw = m.get(d + 8..(d + 24).min(m.len()))?;
                let end = raw.iter().position(|b| *b == 0).unwrap_or(raw.len());
                Event::Comm {
                    pid: i32_at(m, d),
                    tgid: i32_at(m, d + 4),
                    comm: String::from_utf8_lossy(&raw[..end]).into_owned(),
                }
            }
            PROC_EVENT_EXIT => Event::Exit {
                pid: i32_at(m, d),
                tgid: i32_at(m, d + 4),
                status: u32_at(m, d + 8),
            },
            _ => return None,
        })
    }
}

/// A process of the tree.
#[derive(Debug, Clone)]
struct Proc {
    parent: i32,
    name: String,
    ns_pid: Option<i32>,
    ended: bool,
}

/// The tree's processes as forks, exits and samples reveal them.
pub(crate) struct Tracker {
    main: i32,
    start: Instant,
    watched_by: ChildWatch,
    procs: HashMap<i32, Proc>,
    /// Events in order: which parent started a process (for "replaced"), by sequence.
    starts: Vec<(i32, u64)>,
    ends: Vec<(ChildEnd, i32, u64)>,
    ended: u64,
    started: u64,
    seq: u64,
    sampled_once: bool,
    pub(crate) lost: bool,
}

/// Starts remembered for "replaced" (a server respawning forever stays bounded).
const MAX_STARTS: usize = 4096;

impl Tracker {
    pub(crate) fn new(main: i32, start: Instant, events: bool) -> Tracker {
        let mut procs = HashMap::new();
        procs.insert(
            main,
            Proc {
                parent: 0,
                name: comm(main).unwrap_or_default(),
                ns_pid: ns_pid(main),
                ended: false,
            },
        );
        Tracker {
            main,
            start,
            watched_by: if events {
                ChildWatch::ProcConnector
            } else {
                ChildWatch::Sampling
            },
            procs,
            starts: Vec::new(),
            ends: Vec::new(),
            ended: 0,
            started: 0,
            seq: 0,
            sampled_once: false,
            lost: false,
        }
    }

    fn now(&self) -> f64 {
        self.start.elapsed().as_secs_f64()
    }

    fn started_by(&mut self, parent: i32) {
        self.started += 1;
        self.seq += 1;
        if self.starts.len() < MAX_STARTS {
            self.starts.push((parent, self.seq));
        }
    }

    fn end(&mut self, pid: i32, exit_code: Option<i32>, signal: Option<String>) {
        let Some(p) = self.procs.get_mut(&pid) else {
            return;
        };
        if p.ended || pid == self.main {
            return;
        }
        p.ended = true;
        let (parent, name, ns) = (p.parent, p.name.clone(), p.ns_pid);
        self.ended += 1;
        self.seq += 1;
        if self.ends.len() < Children::KEPT {
            let at_seconds = self.now();
            self.ends.push((
                ChildEnd {
                    pid,
                    ns_pid: ns,
                    name,
                    at_seconds,
                    exit_code,
                    signal,
                    oom_killed: false,
                    replaced: false,
                    said: None,
                },
                parent,
                self.seq,
            ));
        }
    }

    /// A kernel process event.
    pub(crate) fn event(&mut self, e: Event) {
        match e {
            Event::Fork {
                parent_tgid,
                child_pid,
                child_tgid,
            } if child_pid == child_tgid
                && self.procs.get(&parent_tgid).is_some_and(|p| !p.ended) =>
            {
                let name = self
                    .procs
                    .get(&parent_tgid)
                    .map(|p| p.name.clone())
                    .unwrap_or_default();
                self.procs.insert(
                    child_tgid,
                    Proc {
                        parent: parent_tgid,
                        name,
                        ns_pid: ns_pid(child_tgid),
                        ended: false,
                    },
                );
                self.started_by(parent_tgid);
            }
            Event::Exec { tgid } => {
                if let (Some(name), Some(p)) = (comm(tgid), self.procs.get_mut(&tgid)) {
                    p.name = name;
                }
            }
            Event::Comm { pid, tgid, comm } if pid == tgid => {
                if let Some(p) = self.procs.get_mut(&tgid) {
                    p.name = comm;
                }
            }
            Event::Exit { pid, tgid, status } if pid == tgid => {
                let (code, signal) = if status & 0x7f != 0 {
                    (None, Some(crate::signal_name((status & 0x7f) as i32)))
                } else {
                    (Some(((status >> 8) & 0xff) as i32), None)
                };
                self.end(tgid, code, signal);
            }
            _ => {}
        }
    }

    /// The tree as one sample listed it: processes not known yet are added (started, after
    /// the first sample); without process events, one that vanished or is a zombie ended.
    pub(crate) fn sampled(&mut self, procs: &[ProcSnap]) {
        let listed: HashSet<i32> = procs.iter().map(|p| p.pid).collect();
        for p in procs {
            if let std::collections::hash_map::Entry::Vacant(slot) = self.procs.entry(p.pid) {
                slot.insert(Proc {
                    parent: p.ppid,
                    name: p.comm.clone(),
                    ns_pid: ns_pid(p.pid),
                    ended: false,
                });
                if self.sampled_once && self.watched_by == ChildWatch::Sampling {
                    self.started_by(p.ppid);
                }
            }
            if self.watched_by == ChildWatch::Sampling && p.is_zombie() {
                let code = procfs::process::Process::new(p.pid)
                    .and_then(|x| x.stat())
                    .ok()
                    .and_then(|s| s.exit_code);
                let (code, signal) = match code {
                    Some(s) if s & 0x7f != 0 => (None, Some(crate::signal_name(s & 0x7f))),
                    Some(s) => (Some((s >> 8) & 0xff), None),
                    None => (None, None),
                };
                self.end(p.pid, code, signal);
            }
        }
        if self.watched_by == ChildWatch::Sampling {
            let gone: Vec<i32> = self
                .procs
                .iter()
                .filter(|(pid, p)| !p.ended && !listed.contains(pid))
                .map(|(pid, _)| *pid)
                .collect();
            for pid in gone {
                self.end(pid, None, None);
            }
        }
        self.sampled_once = true;
    }

    /// What the tree did to its processes: each end with whether its parent started another
    /// after it, the OOM killer where the tree's counter says it killed (`oom_kills`), and the
    /// line of the tree's output naming it (`output`: its stderr and stdout tails).
    pub(crate) fn finish(self, output: &[&str], oom_kills: u64) -> Children {
        let mut oom_left = oom_kills;
        let ends = self
            .ends
            .into_iter()
            .map(|(mut e, parent, seq)| {
                e.replaced = self.starts.iter().any(|(p, s)| *p == parent && *s > seq);
                if oom_left > 0 && e.signal.as_deref() == Some("SIGKILL") {
                    e.oom_killed = true;
                    oom_left -= 1;
                }
                e.said = e.ns_pid.and_then(|ns| said(output, ns));
                e
            })
            .collect();
        Children {
            watched_by: self.watched_by,
            started: self.started,
            ended: self.ended,
            ends,
            lost_events: self.lost,
        }
    }
}

fn comm(pid: i32) -> Option<String> {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .ok()
        .map(|s| s.trim().to_string())
}

/// A process's pid in the innermost PID namespace it lives in (`NSpid`'s last field).
fn ns_pid(pid: i32) -> Option<i32> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("NSpid:"))?;
    line.split_whitespace().last()?.parse().ok()
}

/// Words of a line that says why a process ended (lowercase).
const ENDING_WORDS: [&str; 12] = [
    "timeout", "kill", "died", "dead", "exit", "terminat", "signal", "abort", "crash", "oom",
    "memory", "error",
];
/// Words of a line that only says a process started.
const STARTING_WORDS: [&str; 4] = ["boot", "start", "spawn", "listening"];

/// The first line of `output` naming `ns` as a pid and saying why something ended, trimmed of
/// leading bracketed timestamps (`[2026-12-03 19:31:06 +0000] [1] `).
fn said(output: &[&str], ns: i32) -> Option<String> {
    let pid = ns.to_string();
    output.iter().flat_map(|t| t.lines()).find_map(|line| {
        let rest = without_stamps(line);
        let lower = rest.to_lowercase();
        (mentions(rest, &pid)
            && ENDING_WORDS.iter().any(|w| lower.contains(w))
            && !STARTING_WORDS.iter().any(|w| lower.contains(w)))
        .then(|| rest.chars().take(200).collect())
    })
}

/// A log line without its leading bracketed groups that hold no letters (timestamps, pids).
fn without_stamps(line: &str) -> &str {
    let mut rest = line.trim();
    while let Some(inner) = rest.strip_prefix('[') {
        match inner.split_once(']') {
            Some((group, after)) if !group.chars().any(|c| c.is_ascii_alphabetic()) => {
                rest = after.trim_start();
            }
            _ => break,
        }
    }
    rest
}

/// Whether `line` names `pid` as a process: a whole number right after `pid`, `process`,
/// `child` or `worker` (`pid:12`, `pid 12`, `(pid: 12)`, `worker process 12`, `child 12`),
/// never a signal number or a count.
fn mentions(line: &str, pid: &str) -> bool {
    let lower = line.to_ascii_lowercase();
    lower.match_indices(pid).any(|(i, _)| {
        let before = lower[..i].chars().next_back();
        let after = lower[i + pid.len()..].chars().next();
        if before.is_some_and(|c| c.is_ascii_digit()) || after.is_some_and(|c| c.is_ascii_digit()) {
            return false;
        }
        let lead = lower[..i].trim_end_matches([' ', ':', '=', '#']);
        ["pid", "process", "child", "worker"]
            .iter()
            .any(|w| lead.ends_with(w))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forks_and_exits_of_the_tree_are_followed_and_replacements_seen() {
        let mut t = Tracker::new(1_000_000, Instant::now(), true);
        let main = 1_000_000;
        // Two workers; a process outside the tree forks too.
        for child in [1_000_001, 1_000_002] {
            t.event(Event::Fork {
                parent_tgid: main,
                child_pid: child,
                child_tgid: child,
            });
        }
        t.event(Event::Fork {
            parent_tgid: 77,
            child_pid: 78,
            child_tgid: 78,
        });
        // A thread of a worker: not a process.
        t.event(Event::Fork {
            parent_tgid: 1_000_001,
            child_pid: 1_000_009,
            child_tgid: 1_000_001,
        });
        t.event(Event::Comm {
            pid: 1_000_001,
            tgid: 1_000_001,
            comm: "gunicorn".into(),
        });
        // Worker 1 exits 1, is replaced; worker 2 is killed, not replaced; 78 is not ours.
        t.event(Event::Exit {
            pid: 1_000_001,
            tgid: 1_000_001,
            status: 1 << 8,
        });
        t.event(Event::Fork {
            parent_tgid: main,
            child_pid: 1_000_003,
            child_tgid: 1_000_003,
        });
        t.event(Event::Exit {
            pid: 1_000_002,
            tgid: 1_000_002,
            status: 9,
        });
        t.event(Event::Exit {
            pid: 78,
            tgid: 78,
            status: 0,
        });
        // The main process's own end is the probe's business.
        t.event(Event::Exit {
            pid: main,
            tgid: main,
            status: 0,
        });
        let c = t.finish(&[], 1);
        assert_eq!((c.started, c.ended), (3, 2));
        assert_eq!(c.watched_by, ChildWatch::ProcConnector);
        let (a, b) = (&c.ends[0], &c.ends[1]);
        assert_eq!((a.pid, a.exit_code, a.replaced), (1_000_001, Some(1), true));
        assert_eq!(a.name, "gunicorn");
        assert_eq!(
            (b.signal.as_deref(), b.replaced, b.oom_killed),
            (Some("SIGKILL"), false, true)
        );
    }

    #[test]
    fn the_servers_own_line_names_the_reason() {
        let out = "[2026-12-03 19:31:06 +0000] [1] [INFO] Booting worker with pid: 12\n\
                   [2026-12-03 19:31:09 +0000] [1] [CRITICAL] WORKER TIMEOUT (pid:12)\n\
                   [2026-12-03 19:31:09 +0000] [12] [INFO] Worker exiting (pid: 12)\n";
        assert_eq!(
            said(&[out], 12).as_deref(),
            Some("[CRITICAL] WORKER TIMEOUT (pid:12)")
        );
        assert_eq!(said(&[out], 1), None, "pid 1 is only a log prefix here");
        assert_eq!(said(&[out], 2), None);
        let killed = "[2026-12-03 19:40:15 +0000] [2] [WARNING] Worker with pid 3 was terminated due to signal 9\n";
        assert_eq!(said(&[killed], 9), None, "9 is the signal there");
        assert_eq!(
            said(&[killed], 3).as_deref(),
            Some("[WARNING] Worker with pid 3 was terminated due to signal 9")
        );
        let nginx = "2024/01/01 00:00:00 [alert] 1#1: worker process 12 exited on signal 9\n";
        assert!(said(&[nginx], 12).is_some_and(|s| s.contains("worker process 12")));
    }

    #[test]
    fn events_parse_from_the_kernels_layout() {
        let mut m = vec![0u8; DATA_AT + 24];
        m[EVENT_AT..EVENT_AT + 4].copy_from_slice(&PROC_EVENT_EXIT.to_ne_bytes());
        m[DATA_AT..DATA_AT + 4].copy_from_slice(&42i32.to_ne_bytes());
        m[DATA_AT + 4..DATA_AT + 8].copy_from_slice(&42i32.to_ne_bytes());
        m[DATA_AT + 8..DATA_AT + 12].copy_from_slice(&9u32.to_ne_bytes());
        assert_eq!(
            Event::parse(&m),
            Some(Event::Exit {
                pid: 42,
                tgid: 42,
                status: 9
            })
        );
    }
}
