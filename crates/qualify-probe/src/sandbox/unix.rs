//! Host unix sockets by path: a channel out that a private network namespace does not close
//! (a pathname socket is found through the filesystem, whatever the namespace) and a read-only
//! mount does not either (connecting needs no write to the mount). Landlock scopes abstract
//! sockets only (ABI 6); its filesystem rules do not govern `connect` on a pathname socket on
//! the kernels qualify meets (up to ABI 7). So the mount namespace hides them: every socket
//! bound to a path in any of the host's network namespaces (`/proc/PID/net/unix`, one process
//! per namespace) gets `/dev/null` bound over it, and connecting there is refused.
//!
//! What stays open: a socket bound after the cell started (the list is read when its sandbox is
//! prepared), and one in a network namespace no process of the host is in.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long the list of network namespaces is reused (sockets are listed afresh every time).
const NAMESPACES_FOR: Duration = Duration::from_secs(2);

/// Paths of the unix sockets bound on this host (every network namespace a process is in),
/// that exist as sockets now.
pub(crate) fn bound_paths() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    let mut seen = HashSet::new();
    for table in tables() {
        let Ok(text) = std::fs::read_to_string(&table) else {
            continue;
        };
        for p in parse(&text) {
            if seen.insert(p.clone()) && is_socket(&p) {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// The `net/unix` tables to read: qualify's own, and one per other network namespace.
fn tables() -> Vec<PathBuf> {
    static CACHE: Mutex<Option<(Instant, Vec<PathBuf>)>> = Mutex::new(None);
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((at, t)) = cache.as_ref()
        && at.elapsed() < NAMESPACES_FOR
    {
        return t.clone();
    }
    let mut out = vec![PathBuf::from("/proc/self/net/unix")];
    let mut namespaces = HashSet::new();
    if let Ok(me) = std::fs::read_link("/proc/self/ns/net") {
        namespaces.insert(me);
    }
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .filter(|n| n.bytes().all(|b| b.is_ascii_digit()))
        else {
            continue;
        };
        let Ok(ns) = std::fs::read_link(format!("/proc/{pid}/ns/net")) else {
            continue;
        };
        if namespaces.insert(ns) {
            out.push(PathBuf::from(format!("/proc/{pid}/net/unix")));
        }
    }
    *cache = Some((Instant::now(), out.clone()));
    out
}

/// The absolute paths of a `net/unix` table (abstract sockets, `@…`, and unnamed ones left out).
fn parse(table: &str) -> Vec<PathBuf> {
    table
        .lines()
        .skip(1)
        .filter_map(|l| {
            let path = l.split_whitespace().nth(7)?;
            path.starts_with('/').then(|| PathBuf::from(path))
        })
        .collect()
}

fn is_socket(p: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_socket())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_read_from_the_table_and_abstract_ones_left_out() {
        let table = "Num       RefCount Protocol Flags    Type St Inode Path\n\
            0000000000000000: 00000002 00000000 00010000 0001 01 21 /run/x.sock\n\
            0000000000000000: 00000002 00000000 00010000 0001 01 22 @abstract\n\
            0000000000000000: 00000002 00000000 00000000 0002 01 23 /dev/log\n\
            0000000000000000: 00000003 00000000 00000000 0001 03 24\n";
        assert_eq!(
            parse(table),
            [PathBuf::from("/run/x.sock"), PathBuf::from("/dev/log")]
        );
    }

    #[test]
    fn a_listener_of_this_process_is_listed() {
        let dir = std::env::temp_dir().join(format!("qualify-unix-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("l.sock");
        let _l = std::os::unix::net::UnixListener::bind(&path).unwrap();
        assert!(bound_paths().contains(&path));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
