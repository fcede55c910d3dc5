//! Small helpers over the cgroup filesystems: finding mounts and our own cgroup paths, creating
//! and removing per-probe groups, reading counters, and sweeping groups left by a qualify that
//! died without cleaning up.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// A mounted cgroup hierarchy.
#[derive(Debug, Clone)]
pub struct Mount {
    pub path: PathBuf,
    /// `true` for cgroup2.
    pub unified: bool,
    /// v1: controllers bound to this hierarchy (from the super options).
    pub controllers: Vec<String>,
}

/// All cgroup mounts of this process's mount namespace.
pub fn mounts() -> Vec<Mount> {
    let Ok(text) = fs::read_to_string("/proc/self/mountinfo") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for line in text.lines() {
        // fields: id parent maj:min root mountpoint opts [optional...] - fstype source superopts
        let Some((left, right)) = line.split_once(" - ") else {
            continue;
        };
        let left: Vec<&str> = left.split(' ').collect();
        let right: Vec<&str> = right.split(' ').collect();
        if left.len() < 5 || right.len() < 3 {
            continue;
        }
        let mountpoint = unescape(left[4]);
        match right[0] {
            "cgroup2" => out.push(Mount {
                path: mountpoint.into(),
                unified: true,
                controllers: Vec::new(),
            }),
            "cgroup" => out.push(Mount {
                path: mountpoint.into(),
                unified: false,
                controllers: right[2].split(',').map(str::to_string).collect(),
            }),
            _ => {}
        }
    }
    out
}

fn unescape(s: &str) -> String {
    // mountinfo escapes space, tab, newline and backslash as \ooo
    let mut out = String::with_capacity(s.len());
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 4 <= b.len() {
            if let Ok(v) = u8::from_str_radix(s.get(i + 1..i + 4).unwrap_or(""), 8) {
                out.push(v as char);
                i += 4;
                continue;
            }
        }
        out.push(b[i] as char);
        i += 1;
    }
    out
}

/// Our own cgroup path in the hierarchy with `controller` (v1) or in the unified hierarchy
/// (`controller == None`), from `/proc/self/cgroup`.
pub fn own_path(controller: Option<&str>) -> Option<String> {
    let text = fs::read_to_string("/proc/self/cgroup").ok()?;
    for line in text.lines() {
        let mut parts = line.splitn(3, ':');
        let (_id, ctrls, path) = (parts.next()?, parts.next()?, parts.next()?);
        match controller {
            None if ctrls.is_empty() => return Some(path.to_string()),
            Some(c) if ctrls.split(',').any(|x| x == c) => return Some(path.to_string()),
            _ => {}
        }
    }
    None
}

/// Join a mount point and a cgroup path like `/a/b`.
pub fn join(mount: &Path, cgpath: &str) -> PathBuf {
    let rel = cgpath.trim_start_matches('/');
    if rel.is_empty() {
        mount.to_path_buf()
    } else {
        mount.join(rel)
    }
}

static SEQ: AtomicU64 = AtomicU64::new(0);

/// The name of a fresh per-probe group: `qualify-<pid>-<seq>`.
pub fn fresh_name() -> String {
    let n = SEQ.fetch_add(1, Ordering::Relaxed);
    format!("qualify-{}-{}", std::process::id(), n)
}

/// Pid encoded in a group name made by [`fresh_name`].
fn owner_pid(name: &str) -> Option<i32> {
    let rest = name.strip_prefix("qualify-")?;
    rest.split('-').next()?.parse().ok()
}

fn pid_alive(pid: i32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

/// Remove groups in `parent` left behind by a qualify process that no longer exists: kill what
/// is still inside (nothing may outlive its probe), then rmdir. Best effort.
pub fn sweep_stale(parent: &Path) {
    let Ok(entries) = fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some(pid) = owner_pid(name) else { continue };
        if pid_alive(pid) && pid != std::process::id() as i32 {
            continue;
        }
        if pid == std::process::id() as i32 {
            continue; // ours, in use
        }
        let dir = entry.path();
        for p in procs(&dir) {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(p),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        let _ = remove_dir_retry(&dir, Duration::from_millis(500));
    }
}

/// Pids listed in `dir/cgroup.procs`.
pub fn procs(dir: &Path) -> Vec<i32> {
    fs::read_to_string(dir.join("cgroup.procs"))
        .map(|t| t.lines().filter_map(|l| l.trim().parse().ok()).collect())
        .unwrap_or_default()
}

pub fn write(dir: &Path, file: &str, value: &str) -> io::Result<()> {
    let mut f = fs::OpenOptions::new().write(true).open(dir.join(file))?;
    f.write_all(value.as_bytes())
}

pub fn read(dir: &Path, file: &str) -> Option<String> {
    fs::read_to_string(dir.join(file)).ok()
}

pub fn read_u64(dir: &Path, file: &str) -> Option<u64> {
    read(dir, file)?.trim().parse().ok()
}

/// Value of `key` in a flat keyed file (`key value` per line), e.g. `memory.events`.
pub fn keyed(dir: &Path, file: &str, key: &str) -> Option<u64> {
    let text = read(dir, file)?;
    text.lines().find_map(|l| {
        let mut it = l.split_whitespace();
        (it.next()? == key).then(|| it.next()?.parse().ok())?
    })
}

/// `total=` of the `some` line of a pressure file, in microseconds.
pub fn pressure_some_total(dir: &Path, file: &str) -> Option<u64> {
    let text = read(dir, file)?;
    let line = text.lines().find(|l| l.starts_with("some"))?;
    line.split_whitespace()
        .find_map(|f| f.strip_prefix("total="))
        .and_then(|v| v.parse().ok())
}

/// rmdir with retries: a group stays busy for a moment after its last task exits.
pub fn remove_dir_retry(dir: &Path, budget: Duration) -> io::Result<()> {
    let start = Instant::now();
    loop {
        match fs::remove_dir(dir) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) => {
                if start.elapsed() >= budget {
                    return Err(e);
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_encode_the_owner() {
        let n = fresh_name();
        assert_eq!(owner_pid(&n), Some(std::process::id() as i32));
        assert_eq!(owner_pid("qualify-12-3"), Some(12));
        assert_eq!(owner_pid("other-12-3"), None);
    }

    #[test]
    fn unescapes_mountinfo() {
        assert_eq!(unescape("/a\\040b"), "/a b");
        assert_eq!(unescape("/plain"), "/plain");
    }
}
