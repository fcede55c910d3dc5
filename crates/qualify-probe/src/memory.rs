//! Has the memory threads and processes share changed? A spin-wait deadlock reads the memory
//! it polls but never changes it; a tight loop of completing synchronization calls (an MPI
//! collective over and over, a contended spin lock) looks the same in stack samples but writes
//! it constantly. This module digests, per sample, the memory through which a program's threads
//! and processes could release each other:
//!
//! - shared mappings (`/dev/shm` segments, SysV and anonymous shared memory): the transport of
//!   MPI ranks on one node;
//! - the writable data of the program and of user libraries (`.data`, `.bss`) and the `[heap]`:
//!   where threads keep shared variables and locks.
//!
//! Runtime and system libraries' own data (progress counters), stacks and thread-local storage
//! (the kernel rewrites `rseq` fields whenever a thread moves between CPUs) change in a deadlock
//! too and are left out. Memory is read through `/proc/PID/mem`; at most [`MAX_BYTES`] per
//! sample (what is left out is counted).

use std::collections::BTreeMap;
use std::io::{Read, Seek, SeekFrom};

use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::rules::Rules;

/// Bytes digested per sample at most; regions beyond are counted as not compared.
pub const MAX_BYTES: u64 = 256 << 20;

/// One region's digest in one sample.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Region {
    /// For people: `vader_segment.vm.0.2f36.0 (shared)`, `exchange .data (pid 12)`, `[heap]`.
    pub name: String,
    pub bytes: u64,
    pub digest: [u8; 32],
}

/// The digests of one sample, keyed so that one region has one key across samples (a shared
/// file mapped by several processes is read once).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Snapshot {
    #[serde(skip)]
    pub regions: BTreeMap<String, Region>,
    /// Bytes digested.
    pub compared_bytes: u64,
    /// Bytes of eligible regions left out (over the cap, or unreadable).
    pub not_compared_bytes: u64,
    /// Why some could not be read (first reason).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unreadable: Option<String>,
    /// Regions deliberately not compared, and why (a polling runtime's heap).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub left_out: Vec<String>,
}

impl Snapshot {
    /// Names of the regions whose digest differs from `earlier` (or appeared/vanished).
    pub fn changed_since(&self, earlier: &Snapshot) -> Vec<String> {
        let mut out: Vec<String> = self
            .regions
            .iter()
            .filter(|(k, r)| earlier.regions.get(*k).is_none_or(|e| e.digest != r.digest))
            .map(|(_, r)| r.name.clone())
            .collect();
        out.extend(
            earlier
                .regions
                .iter()
                .filter(|(k, _)| !self.regions.contains_key(*k))
                .map(|(_, r)| format!("{} (gone)", r.name)),
        );
        out
    }
}

/// One line of `/proc/PID/maps`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mapping {
    pub lo: u64,
    pub hi: u64,
    pub perms: String,
    pub offset: u64,
    pub dev: String,
    pub inode: u64,
    pub path: String,
}

pub fn parse_maps(text: &str) -> Vec<Mapping> {
    text.lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            let (lo, hi) = it.next()?.split_once('-')?;
            let perms = it.next()?.to_string();
            let offset = u64::from_str_radix(it.next()?, 16).ok()?;
            let dev = it.next()?.to_string();
            let inode = it.next()?.parse().ok()?;
            let path = it.collect::<Vec<_>>().join(" ");
            Some(Mapping {
                lo: u64::from_str_radix(lo, 16).ok()?,
                hi: u64::from_str_radix(hi, 16).ok()?,
                perms,
                offset,
                dev,
                inode,
                path,
            })
        })
        .collect()
}

/// Which mappings of one process are compared, with their keys and names. `exe` is the path
/// of the program (`/proc/PID/exe`).
pub fn eligible(
    pid: i32,
    maps: &[Mapping],
    exe: &str,
    rules: &Rules,
) -> Vec<(String, String, Mapping)> {
    let mut out = Vec::new();
    let heap_writer = rules
        .heap_writer(
            maps.iter()
                .map(|m| m.path.rsplit('/').next().unwrap_or(&m.path)),
        )
        .is_some();
    let mut prev_user_file: Option<&Mapping> = None;
    for m in maps {
        let base = m.path.rsplit('/').next().unwrap_or(&m.path).to_string();
        let shared = m.perms.as_bytes().get(3) == Some(&b's');
        let writable = m.perms.as_bytes().get(1) == Some(&b'w');
        let readable = m.perms.as_bytes().first() == Some(&b'r');
        let device = m.path.starts_with("/dev/")
            && !m.path.starts_with("/dev/shm/")
            && !m.path.starts_with("/dev/zero");
        if !readable || device {
            prev_user_file = None;
            continue;
        }
        if shared {
            let key = format!("shared:{}:{}:{}:{}", m.dev, m.inode, m.offset, m.hi - m.lo);
            out.push((key, format!("{base} (shared memory)"), m.clone()));
            prev_user_file = None;
            continue;
        }
        let is_file = m.path.starts_with('/');
        let user_file = is_file
            && (m.path == exe || rules.user_library(&base))
            && !m.path.ends_with(" (deleted)");
        if writable && user_file {
            out.push((
                format!("{pid}:{:x}", m.lo),
                format!("{base} data (pid {pid})"),
                m.clone(),
            ));
            prev_user_file = Some(m);
            continue;
        }
        if writable && m.path == "[heap]" && !heap_writer {
            out.push((
                format!("{pid}:heap"),
                format!("[heap] (pid {pid})"),
                m.clone(),
            ));
        } else if writable && m.path.is_empty() && prev_user_file.is_some_and(|p| p.hi == m.lo) {
            // The .bss beyond the file's last page continues as an anonymous mapping.
            out.push((
                format!("{pid}:{:x}", m.lo),
                format!("bss (pid {pid})"),
                m.clone(),
            ));
        }
        prev_user_file = if user_file { Some(m) } else { None };
    }
    out
}

/// Digest the eligible memory of `pids` (reading at most [`MAX_BYTES`]).
pub fn snapshot(pids: &[i32], rules: &Rules) -> Snapshot {
    let mut snap = Snapshot::default();
    for &pid in pids {
        let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/maps")) else {
            continue;
        };
        let exe = std::fs::read_link(format!("/proc/{pid}/exe"))
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default();
        let maps = parse_maps(&text);
        let regions = eligible(pid, &maps, &exe, rules);
        if let Some(runtime) = rules.heap_writer(
            maps.iter()
                .map(|m| m.path.rsplit('/').next().unwrap_or(&m.path)),
        ) && maps.iter().any(|m| m.path == "[heap]")
        {
            snap.left_out.push(format!(
                "[heap] (pid {pid}): {runtime}'s progress engine rewrites it while polling"
            ));
        }
        if regions.is_empty() {
            continue;
        }
        let mut mem = match std::fs::File::open(format!("/proc/{pid}/mem")) {
            Ok(f) => f,
            Err(e) => {
                snap.not_compared_bytes += regions.iter().map(|(_, _, m)| m.hi - m.lo).sum::<u64>();
                snap.unreadable
                    .get_or_insert_with(|| format!("/proc/{pid}/mem: {e}"));
                continue;
            }
        };
        for (key, name, m) in regions {
            let len = m.hi - m.lo;
            if snap.regions.contains_key(&key) {
                continue;
            }
            if snap.compared_bytes + len > MAX_BYTES {
                snap.not_compared_bytes += len;
                continue;
            }
            match digest_range(&mut mem, m.lo, len) {
                Ok(digest) => {
                    snap.compared_bytes += len;
                    snap.regions.insert(
                        key,
                        Region {
                            name,
                            bytes: len,
                            digest,
                        },
                    );
                }
                Err(e) => {
                    snap.not_compared_bytes += len;
                    snap.unreadable
                        .get_or_insert_with(|| format!("{name}: {e}"));
                }
            }
        }
    }
    snap
}

fn digest_range(mem: &mut std::fs::File, lo: u64, len: u64) -> std::io::Result<[u8; 32]> {
    mem.seek(SeekFrom::Start(lo))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut left = len;
    while left > 0 {
        let want = left.min(buf.len() as u64) as usize;
        let n = mem.read(&mut buf[..want])?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        left -= n as u64;
    }
    Ok(hasher.finalize().into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::TABLE;

    const MAPS: &str = "\
55d0a0000000-55d0a0001000 r--p 00000000 08:01 1234 /tmp/exchange
55d0a0003000-55d0a0004000 rw-p 00002000 08:01 1234 /tmp/exchange
55d0a0004000-55d0a0006000 rw-p 00000000 00:00 0 
55d0a1000000-55d0a1021000 rw-p 00000000 00:00 0                          [heap]
7f0000000000-7f0000400000 rw-s 00000000 00:1a 777 /dev/shm/vader_segment.vm.0.2f36.0
7f0000500000-7f0000501000 ---p 00000000 00:00 0 
7f0000501000-7f0000d01000 rw-p 00000000 00:00 0 
7f0001000000-7f0001001000 rw-p 00034000 08:01 55 /usr/lib/x86_64-linux-gnu/libopen-pal.so.40.30.2
7f0002000000-7f0002001000 rw-p 00004000 08:01 56 /usr/lib/x86_64-linux-gnu/libc.so.6
7f0003000000-7f0003001000 rw-p 00004000 08:01 57 /opt/app/lib/libsolver.so
7f0004000000-7f0004001000 rw-s 00000000 00:05 9 /dev/dri/card0
7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0                          [stack]
";

    #[test]
    fn compares_shared_memory_program_data_and_heap_not_runtime_data_or_stacks() {
        let rules = Rules::parse(TABLE).unwrap();
        let maps = parse_maps(MAPS);
        assert_eq!(maps.len(), 12);
        let names = |maps: &[Mapping]| -> Vec<String> {
            eligible(7, maps, "/tmp/exchange", &rules)
                .into_iter()
                .map(|(_, n, _)| n)
                .collect()
        };
        // An MPI rank (it maps Open MPI's libraries): its heap is the progress engine's.
        assert_eq!(
            names(&maps),
            [
                "exchange data (pid 7)",
                "bss (pid 7)",
                "vader_segment.vm.0.2f36.0 (shared memory)",
                "libsolver.so data (pid 7)",
            ]
        );
        // Without a polling runtime the heap is compared too.
        let plain: Vec<Mapping> = maps
            .iter()
            .filter(|m| !m.path.contains("libopen-pal"))
            .cloned()
            .collect();
        assert_eq!(
            names(&plain),
            [
                "exchange data (pid 7)",
                "bss (pid 7)",
                "[heap] (pid 7)",
                "vader_segment.vm.0.2f36.0 (shared memory)",
                "libsolver.so data (pid 7)",
            ]
        );
    }

    #[test]
    fn a_changed_or_vanished_region_is_named() {
        let region = |name: &str, b: u8| Region {
            name: name.into(),
            bytes: 4096,
            digest: [b; 32],
        };
        let mut a = Snapshot::default();
        a.regions.insert("1".into(), region("x", 1));
        a.regions.insert("2".into(), region("y", 1));
        let mut b = a.clone();
        assert!(b.changed_since(&a).is_empty());
        b.regions.insert("1".into(), region("x", 2));
        b.regions.remove("2");
        assert_eq!(b.changed_since(&a), ["x", "y (gone)"]);
    }

    /// Real processes: a sleeping one's memory stays the same, a shell counting in a loop
    /// changes its heap.
    #[test]
    fn a_still_process_keeps_its_digest_and_a_counting_one_changes_it() {
        struct Kill(std::process::Child);
        impl Drop for Kill {
            fn drop(&mut self) {
                let _ = self.0.kill();
                let _ = self.0.wait();
            }
        }
        let rules = Rules::parse(TABLE).unwrap();
        let twice = |args: &[&str]| {
            let child = Kill(
                std::process::Command::new(args[0])
                    .args(&args[1..])
                    .spawn()
                    .expect("spawn"),
            );
            std::thread::sleep(std::time::Duration::from_millis(300));
            let pid = child.0.id() as i32;
            let a = snapshot(&[pid], &rules);
            std::thread::sleep(std::time::Duration::from_millis(200));
            let b = snapshot(&[pid], &rules);
            (a, b)
        };
        let (a, b) = twice(&["sleep", "30"]);
        assert!(a.compared_bytes > 0, "{a:?}");
        assert!(b.changed_since(&a).is_empty(), "{:?}", b.changed_since(&a));
        let (a, b) = twice(&["sh", "-c", "i=0; while :; do i=$((i+1)); done"]);
        assert!(
            !b.changed_since(&a).is_empty(),
            "the counting shell's memory looked still"
        );
    }
}
