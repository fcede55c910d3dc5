//! One run's shim log: a file qualify makes (sparse, [`SIZE`] bytes) with a header the shim
//! checks, the list of points to replay (minimisation), and then the records every process of
//! the program appends through a shared mapping (so a SIGKILLed run still leaves them). Read
//! after the run into a [`ShimLog`].
//!
//! The log is written inside the program: it is the program's own word. It decides no verdict;
//! it says where perturbation happened (and whether the shim loaded at all). Reading tolerates
//! anything: a torn or forged line is skipped, counts are bounded by the file's size.

use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::PerturbError;

/// Size of a log file (sparse: only what is written takes space): room for ~60,000 records.
pub const SIZE: u64 = 4 << 20;
const HEADER: u64 = 4096;
const MAGIC: &[u8; 8] = b"QPERTv1\0";

/// What the shim does at a point.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Action {
    Yield,
    Sleep,
    Hold,
    Priority,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Yield => "yield",
            Action::Sleep => "sleep",
            Action::Hold => "hold",
            Action::Priority => "priority",
        }
    }

    fn parse(s: &str) -> Option<Action> {
        Some(match s {
            "yield" => Action::Yield,
            "sleep" => Action::Sleep,
            "hold" => Action::Hold,
            "priority" => Action::Priority,
            _ => return None,
        })
    }

    /// The code the shim's list area uses.
    fn code(self) -> u32 {
        match self {
            Action::Yield => 1,
            Action::Sleep => 2,
            Action::Hold => 3,
            Action::Priority => 4,
        }
    }
}

/// One point the shim perturbed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Point {
    /// The shim's process number.
    pub process: u32,
    /// The shim's thread number in that process.
    pub thread: u32,
    /// The thread's n-th synchronisation call (from 1).
    pub call_number: u32,
    pub call: String,
    /// `true`: after the call; `false`: before it.
    pub after: bool,
    pub action: Action,
    pub micros: u32,
    pub object: u64,
    /// The caller's return address.
    pub ret: u64,
}

impl Point {
    /// The identity a replay list matches on.
    pub fn key(&self) -> (u32, u32, u32) {
        (self.process, self.thread, self.call_number)
    }

    /// Whether replaying it changes anything (a priority change is a decision, not a delay).
    pub fn delays(&self) -> bool {
        self.action != Action::Priority
    }
}

/// An executable mapping of a process the shim loaded in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mapping {
    pub process: u32,
    pub start: u64,
    pub end: u64,
    pub offset: u64,
    pub path: String,
}

/// A process the shim loaded in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Loaded {
    pub process: u32,
    pub pid: i64,
    pub exe: String,
}

/// Everything one run's log says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShimLog {
    pub processes: Vec<Loaded>,
    pub maps: Vec<Mapping>,
    pub points: Vec<Point>,
    /// Synchronisation calls seen, every process.
    pub steps: u64,
    /// Delay injected, microseconds, every thread of every process.
    pub spent_us: u64,
    /// Records dropped for lack of room.
    pub overflow: bool,
    /// Lines that were not records (torn by a kill, or not the shim's).
    pub skipped: u64,
}

impl ShimLog {
    /// Whether the shim ran in the program at all.
    pub fn loaded(&self) -> bool {
        !self.processes.is_empty()
    }

    /// Points that delayed a thread.
    pub fn delays(&self) -> impl Iterator<Item = &Point> {
        self.points.iter().filter(|p| p.delays())
    }
}

/// One run's log file; removed on drop.
#[derive(Debug)]
pub struct LogFile {
    path: PathBuf,
}

fn header(list_len: u64) -> Vec<u8> {
    let mut h = Vec::with_capacity(40);
    h.extend_from_slice(MAGIC);
    for v in [HEADER, list_len, HEADER + list_len, SIZE] {
        h.extend_from_slice(&v.to_le_bytes());
    }
    h
}

/// The list area: `process thread call action micros` per line, sorted by the first three.
fn list_text(list: &[Point]) -> String {
    let mut items: Vec<&Point> = list.iter().filter(|p| p.delays()).collect();
    items.sort_by_key(|p| p.key());
    items.dedup_by_key(|p| p.key());
    let mut s = String::new();
    for p in items {
        s.push_str(&format!(
            "{} {} {} {} {}\n",
            p.process,
            p.thread,
            p.call_number,
            p.action.code(),
            p.micros
        ));
    }
    s
}

impl LogFile {
    /// Where logs go: `/dev/shm` when it is a memory file system qualify can write (a log's
    /// pages are then never read from a disk), else the temporary directory. Either is private
    /// inside the sandbox, which binds each log in at its own path.
    pub fn default_dir() -> PathBuf {
        let shm = Path::new("/dev/shm");
        let writable = std::fs::metadata(shm).is_ok_and(|m| m.is_dir())
            && std::ffi::CString::new("/dev/shm").is_ok_and(|c| {
                // SAFETY: a valid C string.
                unsafe { libc::access(c.as_ptr(), libc::W_OK | libc::X_OK) == 0 }
            });
        if writable {
            shm.to_path_buf()
        } else {
            std::env::temp_dir()
        }
    }

    /// A fresh log in `dir` (the program may run as another user: it is made writable for all,
    /// like the probe's heartbeat file), with `list` as the points to replay.
    pub fn create(dir: &Path, list: &[Point]) -> Result<LogFile, PerturbError> {
        static SEQ: AtomicU64 = AtomicU64::new(0);
        let path = dir.join(format!(
            "qualify-perturb-{}-{}.log",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        ));
        let err = |source| PerturbError::LogIo {
            path: path.clone(),
            source,
        };
        let _ = std::fs::remove_file(&path);
        let mut f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .map_err(err)?;
        let list = list_text(list);
        let list_len = list.len() as u64;
        let fits = HEADER + list_len < SIZE / 2;
        let (list, list_len) = if fits {
            (list, list_len)
        } else {
            (String::new(), 0)
        };
        f.set_len(SIZE).map_err(err)?;
        f.write_all(&header(list_len)).map_err(err)?;
        f.seek(SeekFrom::Start(HEADER)).map_err(err)?;
        f.write_all(list.as_bytes()).map_err(err)?;
        f.set_permissions(std::fs::Permissions::from_mode(0o666))
            .map_err(err)?;
        Ok(LogFile { path })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Read what the shim wrote (nothing, if it never loaded or the file is gone).
    pub fn read(&self) -> ShimLog {
        let Ok(mut f) = std::fs::File::open(&self.path) else {
            return ShimLog::default();
        };
        let mut head = [0u8; 80];
        if f.read_exact(&mut head).is_err() || &head[..8] != MAGIC {
            return ShimLog::default();
        }
        let u64_at = |o: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&head[o..o + 8]);
            u64::from_le_bytes(b)
        };
        let u32_at = |o: usize| {
            let mut b = [0u8; 4];
            b.copy_from_slice(&head[o..o + 4]);
            u32::from_le_bytes(b)
        };
        let rec_off = u64_at(24).clamp(HEADER, SIZE);
        let used = u64_at(40).min(SIZE - rec_off);
        let mut log = ShimLog {
            steps: u64_at(48),
            spent_us: u64_at(56),
            overflow: u32_at(68) != 0,
            ..ShimLog::default()
        };
        let mut text = vec![0u8; used as usize];
        if f.seek(SeekFrom::Start(rec_off)).is_err() || f.read_exact(&mut text).is_err() {
            return log;
        }
        parse_records(&String::from_utf8_lossy(&text), &mut log);
        log
    }
}

impl Drop for LogFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

fn hex(s: &str) -> Option<u64> {
    u64::from_str_radix(s, 16).ok()
}

/// Parse the record lines into `log`; anything else is counted as skipped.
pub fn parse_records(text: &str, log: &mut ShimLog) {
    for line in text.split('\n') {
        // Reserved but never written (a process killed mid-record) reads as NUL bytes.
        let line = line.trim_matches('\0');
        if line.is_empty() {
            continue;
        }
        if parse_line(line, log).is_none() {
            log.skipped += 1;
        }
    }
}

fn parse_line(line: &str, log: &mut ShimLog) -> Option<()> {
    let mut f = line.split(' ');
    match f.next()? {
        "L" => {
            let process = f.next()?.parse().ok()?;
            let pid = f.next()?.parse().ok()?;
            let exe = f.collect::<Vec<_>>().join(" ");
            log.processes.push(Loaded { process, pid, exe });
        }
        "M" => {
            let process = f.next()?.parse().ok()?;
            let start = hex(f.next()?)?;
            let end = hex(f.next()?)?;
            let offset = hex(f.next()?)?;
            let path = f.collect::<Vec<_>>().join(" ");
            if !path.starts_with('/') {
                return None;
            }
            log.maps.push(Mapping {
                process,
                start,
                end,
                offset,
                path,
            });
        }
        "T" => {}
        "P" => {
            let process = f.next()?.parse().ok()?;
            let thread = f.next()?.parse().ok()?;
            let call_number = f.next()?.parse().ok()?;
            let call = f.next()?;
            if call.is_empty() || call.len() > 40 || !call.bytes().all(|b| b.is_ascii_graphic()) {
                return None;
            }
            let after = match f.next()? {
                "after" => true,
                "before" => false,
                _ => return None,
            };
            let action = Action::parse(f.next()?)?;
            let micros = f.next()?.parse().ok()?;
            let object = hex(f.next()?)?;
            let ret = hex(f.next()?)?;
            if f.next().is_some() {
                return None;
            }
            log.points.push(Point {
                process,
                thread,
                call_number,
                call: call.to_string(),
                after,
                action,
                micros,
                object,
                ret,
            });
        }
        _ => return None,
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_records_and_skips_torn_or_forged_lines() {
        let text = "L 0 41 /usr/bin/prog with space\n\
                    M 0 55d5 55d6 1000 /usr/bin/prog\n\
                    T 0 1 42 9\n\
                    P 0 1 2 pthread_mutex_lock before sleep 208 55d59a177080 55d59a17419e\n\
                    P 0 2 3 pthread_mutex_unlock after hold 316 10 20\n\
                    P 0 2 3 pthread_mutex_unlock sideways hold 316 10 20\n\
                    P 0 1 nonsense\n\
                    \0\0\0\0garbage line\n\
                    P 0 1 2 pthread_mutex_lock before sleep 208 55d59a1";
        let mut log = ShimLog::default();
        parse_records(text, &mut log);
        assert_eq!(log.processes.len(), 1);
        assert_eq!(log.processes[0].exe, "/usr/bin/prog with space");
        assert_eq!(log.maps[0].offset, 0x1000);
        // The torn last line (a process killed mid-record) is skipped like any malformed line.
        assert_eq!(log.points.len(), 2);
        assert_eq!(log.points[0].action, Action::Sleep);
        assert!(log.points[1].after);
        assert_eq!(log.skipped, 4);
    }

    #[test]
    fn a_log_file_round_trips_its_header_and_list() {
        let dir = tempfile::tempdir().unwrap();
        let p = |thread, call_number, micros| Point {
            process: 0,
            thread,
            call_number,
            call: "pthread_mutex_lock".into(),
            after: false,
            action: Action::Sleep,
            micros,
            object: 1,
            ret: 2,
        };
        let log = LogFile::create(dir.path(), &[p(2, 5, 40), p(1, 3, 10)]).unwrap();
        let bytes = std::fs::read(log.path()).unwrap();
        assert_eq!(bytes.len() as u64, SIZE);
        assert_eq!(&bytes[..8], MAGIC);
        let list = String::from_utf8_lossy(&bytes[4096..4096 + 16]).to_string();
        assert_eq!(list, "0 1 3 2 10\n0 2 5");
        // Nothing written by a shim: an empty, unloaded log.
        let read = log.read();
        assert!(!read.loaded() && read.points.is_empty());
        let path = log.path().to_path_buf();
        drop(log);
        assert!(!path.exists());
    }
}
