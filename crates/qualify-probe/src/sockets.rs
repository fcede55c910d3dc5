//! Sockets of a tree, from the kernel's own tables. Who is at the other end of a Unix socket:
//! the kernel's `sock_diag` netlink interface (`UNIX_DIAG_PEER`, what `ss -xp` uses), asked from
//! inside the process's network namespace (Unix sockets are listed per namespace; a cell has
//! its own); used to tell an event loop waiting on its own socketpair (asyncio's self-pipe) from
//! one waiting on the outside world. And which TCP ports the tree listens on ([`listening`],
//! `/proc/PID/net/tcp{,6}` matched to its file descriptors): what a service that was never
//! ready is told it listens on instead of the port it was given.

use std::collections::HashMap;
use std::fs::File;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

const SOCK_DIAG_BY_FAMILY: u16 = 20;
const NLM_F_REQUEST: u16 = 1;
const NLM_F_DUMP: u16 = 0x300;
const NLMSG_DONE: u16 = 3;
const NLMSG_ERROR: u16 = 2;
const UDIAG_SHOW_PEER: u32 = 4;
const UNIX_DIAG_PEER: u16 = 2;

/// Unix socket inode → the inode of its peer, for every connected Unix socket of the network
/// namespace `pid` lives in. Empty when the namespace cannot be entered or asked.
pub fn unix_peers(pid: i32) -> HashMap<u64, u64> {
    let Ok(ns) = File::open(format!("/proc/{pid}/ns/net")) else {
        return HashMap::new();
    };
    // A short-lived thread joins the namespace, so the caller's thread stays where it is.
    std::thread::scope(|s| {
        s.spawn(move || {
            // SAFETY: setns on this (new, short-lived) thread with an fd we hold.
            if unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
                return HashMap::new();
            }
            dump().unwrap_or_default()
        })
        .join()
        .unwrap_or_default()
    })
}

fn dump() -> std::io::Result<HashMap<u64, u64>> {
    // SAFETY: plain syscall; on success the fd is ours.
    let fd = unsafe {
        libc::socket(
            libc::AF_NETLINK,
            libc::SOCK_RAW | libc::SOCK_CLOEXEC,
            libc::NETLINK_SOCK_DIAG,
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: fd was just returned by socket().
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    // nlmsghdr (16) + unix_diag_req (24).
    let mut req = Vec::with_capacity(40);
    req.extend_from_slice(&40u32.to_ne_bytes());
    req.extend_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
    req.extend_from_slice(&(NLM_F_REQUEST | NLM_F_DUMP).to_ne_bytes());
    req.extend_from_slice(&1u32.to_ne_bytes()); // seq
    req.extend_from_slice(&0u32.to_ne_bytes()); // pid
    req.push(libc::AF_UNIX as u8); // sdiag_family
    req.push(0); // sdiag_protocol
    req.extend_from_slice(&0u16.to_ne_bytes()); // pad
    req.extend_from_slice(&u32::MAX.to_ne_bytes()); // udiag_states: all
    req.extend_from_slice(&0u32.to_ne_bytes()); // udiag_ino
    req.extend_from_slice(&UDIAG_SHOW_PEER.to_ne_bytes());
    req.extend_from_slice(&[0u8; 8]); // cookie
    // SAFETY: sending a buffer we own on our socket (the kernel is the default destination).
    let sent = unsafe { libc::send(fd.as_raw_fd(), req.as_ptr().cast(), req.len(), 0) };
    if sent < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let mut peers = HashMap::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        // SAFETY: receiving into a buffer we own.
        let n = unsafe { libc::recv(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
        if n <= 0 {
            return Ok(peers);
        }
        if parse(&buf[..n as usize], &mut peers) {
            return Ok(peers);
        }
    }
}

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_ne_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

/// Parse one datagram of answers into `peers`; `true` when the dump is done.
fn parse(mut b: &[u8], peers: &mut HashMap<u64, u64>) -> bool {
    while b.len() >= 16 {
        let (Some(len), Some(kind)) = (u32_at(b, 0), u16_at(b, 4)) else {
            return true;
        };
        let len = len as usize;
        if len < 16 || len > b.len() {
            return true;
        }
        if kind == NLMSG_DONE || kind == NLMSG_ERROR {
            return true;
        }
        let msg = &b[16..len];
        // unix_diag_msg: family, type, state, pad (1 byte each), ino (u32), cookie (2 × u32).
        if let Some(ino) = u32_at(msg, 4) {
            let mut attrs = msg.get(16..).unwrap_or(&[]);
            while attrs.len() >= 4 {
                let (Some(alen), Some(atype)) = (u16_at(attrs, 0), u16_at(attrs, 2)) else {
                    break;
                };
                let alen = alen as usize;
                if alen < 4 || alen > attrs.len() {
                    break;
                }
                if atype == UNIX_DIAG_PEER
                    && let Some(peer) = u32_at(attrs, 4)
                    && peer != 0
                {
                    peers.insert(u64::from(ino), u64::from(peer));
                }
                attrs = &attrs[(alen + 3) & !3..];
            }
        }
        b = &b[((len + 3) & !3).min(b.len())..];
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;
    use std::os::unix::net::UnixStream;

    /// A real socketpair of this process: each end's peer is the other end.
    #[test]
    fn finds_the_peer_of_a_socketpair() {
        let (a, b) = UnixStream::pair().expect("socketpair");
        let ino = |s: &UnixStream| {
            std::fs::metadata(format!("/proc/self/fd/{}", s.as_raw_fd()))
                .expect("fd")
                .ino()
        };
        let peers = unix_peers(std::process::id() as i32);
        if peers.is_empty() {
            println!("skipping: sock_diag unavailable here");
            return;
        }
        assert_eq!(peers.get(&ino(&a)), Some(&ino(&b)), "{peers:?}");
        assert_eq!(peers.get(&ino(&b)), Some(&ino(&a)), "{peers:?}");
    }
}

/// A TCP socket one of the tree's processes listens on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listener {
    pub addr: std::net::SocketAddr,
    pub pid: i32,
    /// The process's name (`comm`).
    pub comm: String,
}

/// The TCP ports the processes `pids` listen on (each socket once, by address), read in their
/// own network namespace's tables. Processes that are gone or unreadable are skipped.
pub fn listening(pids: &[i32]) -> Vec<Listener> {
    use procfs::net::TcpState;
    use procfs::process::{FDTarget, Process};
    let mut out: Vec<Listener> = Vec::new();
    for &pid in pids {
        let Ok(p) = Process::new(pid) else { continue };
        let Ok(fds) = p.fd() else { continue };
        let inodes: std::collections::HashSet<u64> = fds
            .flatten()
            .filter_map(|fd| match fd.target {
                FDTarget::Socket(inode) => Some(inode),
                _ => None,
            })
            .collect();
        if inodes.is_empty() {
            continue;
        }
        let comm = p.stat().map(|s| s.comm).unwrap_or_default();
        let tables = [p.tcp().unwrap_or_default(), p.tcp6().unwrap_or_default()];
        for e in tables.iter().flatten() {
            if e.state == TcpState::Listen
                && inodes.contains(&e.inode)
                && !out.iter().any(|l| l.addr == e.local_address)
            {
                out.push(Listener {
                    addr: e.local_address,
                    pid,
                    comm: comm.clone(),
                });
            }
        }
    }
    out.sort_by_key(|l| (l.addr.port(), l.addr.to_string()));
    out
}
