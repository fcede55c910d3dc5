//! Continuous draining of the child's stdout and stderr: every byte is counted (and stdout
//! hashed), only the last 64 KiB of each stream is kept, so a program that writes gigabytes
//! neither blocks nor grows qualify's memory. Stderr is also read whole for the runtimes' fatal
//! reports ([`crate::reports::Scanner`], bounded too).

use std::collections::VecDeque;
use std::io::Read;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use qualify_model::digest::hex;
use sha2::{Digest, Sha256};

use crate::reports::{Scanned, Scanner};

/// Bytes kept of each stream.
pub const TAIL_BYTES: usize = 64 * 1024;

/// Shared state of one drained stream.
#[derive(Debug, Default)]
pub struct Stream {
    pub bytes: AtomicU64,
    tail: Mutex<VecDeque<u8>>,
    hash: Mutex<Option<Sha256>>,
    scan: Mutex<Option<Scanner>>,
}

/// Both streams of one child, drained by two threads.
pub struct Drain {
    pub stdout: Arc<Stream>,
    pub stderr: Arc<Stream>,
    handles: Vec<JoinHandle<()>>,
    /// How many pump threads have reached the end of their stream (woken on each).
    ended: Arc<(Mutex<usize>, Condvar)>,
}

/// Counts a pump thread as ended when it returns (or unwinds).
struct EndGuard(Arc<(Mutex<usize>, Condvar)>);

impl Drop for EndGuard {
    fn drop(&mut self) {
        let (count, cv) = &*self.0;
        if let Ok(mut n) = count.lock() {
            *n += 1;
        }
        cv.notify_all();
    }
}

impl Drain {
    pub fn start(
        stdout: Option<impl Read + Send + 'static>,
        stderr: Option<impl Read + Send + 'static>,
    ) -> Drain {
        let out = Arc::new(Stream {
            hash: Mutex::new(Some(Sha256::new())),
            ..Stream::default()
        });
        let err = Arc::new(Stream {
            scan: Mutex::new(crate::reports::REPORTS.as_ref().ok().map(Scanner::new)),
            ..Stream::default()
        });
        let mut handles = Vec::new();
        let ended = Arc::new((Mutex::new(0usize), Condvar::new()));
        if let Some(s) = stdout {
            let st = out.clone();
            let guard = EndGuard(Arc::clone(&ended));
            handles.push(std::thread::spawn(move || {
                let _ended = guard;
                pump(s, &st)
            }));
        }
        if let Some(s) = stderr {
            let st = err.clone();
            let guard = EndGuard(Arc::clone(&ended));
            handles.push(std::thread::spawn(move || {
                let _ended = guard;
                pump(s, &st)
            }));
        }
        Drain {
            stdout: out,
            stderr: err,
            handles,
            ended,
        }
    }

    /// Total bytes seen on both streams so far (a progress signal).
    pub fn total_bytes(&self) -> u64 {
        self.stdout.bytes.load(Ordering::Relaxed) + self.stderr.bytes.load(Ordering::Relaxed)
    }

    /// Wait for both streams to reach end of file, at most `budget`. Returns `false` if a
    /// reader was still blocked (something outside the tree holds the pipe); its thread is
    /// left behind and the tail is taken as it stands.
    pub fn finish(self, budget: Duration) -> (Captured, Captured, bool) {
        let deadline = Instant::now() + budget;
        let mut complete = true;
        // Woken by each stream's end, not polled: a probe's clean-up waits no longer than the
        // pipes take to close.
        {
            let (count, cv) = &*self.ended;
            let mut n = count.lock().unwrap_or_else(|e| e.into_inner());
            while *n < self.handles.len() {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    break;
                }
                n = match cv.wait_timeout(n, left) {
                    Ok((n, _)) => n,
                    Err(e) => e.into_inner().0,
                };
            }
        }
        for h in self.handles {
            // Counted as ended: the thread is returning (a moment at most).
            while !h.is_finished() && Instant::now() < deadline {
                std::thread::yield_now();
            }
            if h.is_finished() {
                let _ = h.join();
            } else {
                complete = false;
            }
        }
        (self.stdout.capture(), self.stderr.capture(), complete)
    }
}

/// A finished stream.
#[derive(Debug, Default, Clone)]
pub struct Captured {
    pub tail: String,
    pub bytes: u64,
    pub truncated: bool,
    /// Lowercase hex sha256 of the whole stream (stdout only; empty otherwise).
    pub sha256: String,
    /// The runtimes' reports the whole stream carried (stderr only).
    pub reports: Scanned,
}

impl Stream {
    fn capture(&self) -> Captured {
        let bytes = self.bytes.load(Ordering::Relaxed);
        let tail: Vec<u8> = self
            .tail
            .lock()
            .map(|t| t.iter().copied().collect())
            .unwrap_or_default();
        let sha256 = self
            .hash
            .lock()
            .ok()
            .and_then(|mut h| h.take())
            .map(|h| hex(&h.finalize()))
            .unwrap_or_default();
        let reports = self
            .scan
            .lock()
            .ok()
            .and_then(|mut s| s.take())
            .map(Scanner::finish)
            .unwrap_or_default();
        Captured {
            tail: tail_text(&tail),
            bytes,
            truncated: bytes > TAIL_BYTES as u64,
            sha256,
            reports,
        }
    }
}

fn pump(mut src: impl Read, stream: &Stream) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match src.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        let chunk = &buf[..n];
        if let Ok(mut h) = stream.hash.lock()
            && let Some(h) = h.as_mut()
        {
            h.update(chunk);
        }
        if let Ok(mut scan) = stream.scan.lock()
            && let Some(scan) = scan.as_mut()
        {
            scan.feed(chunk);
        }
        if let Ok(mut tail) = stream.tail.lock() {
            if chunk.len() >= TAIL_BYTES {
                tail.clear();
                tail.extend(&chunk[chunk.len() - TAIL_BYTES..]);
            } else {
                tail.extend(chunk);
                let excess = tail.len().saturating_sub(TAIL_BYTES);
                tail.drain(..excess);
            }
        }
        stream.bytes.fetch_add(n as u64, Ordering::Relaxed);
    }
}

/// Text of a kept tail: starts at a character boundary and never exceeds [`TAIL_BYTES`] bytes,
/// even after invalid UTF-8 is replaced.
fn tail_text(tail: &[u8]) -> String {
    let start = tail
        .iter()
        .take(4)
        .position(|b| (b & 0xC0) != 0x80)
        .unwrap_or(0);
    let text = String::from_utf8_lossy(&tail[start..]).into_owned();
    if text.len() <= TAIL_BYTES {
        return text;
    }
    let mut cut = text.len() - TAIL_BYTES;
    while !text.is_char_boundary(cut) {
        cut += 1;
    }
    text[cut..].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_only_the_tail_but_counts_and_hashes_everything() {
        let data: Vec<u8> = (0..300_000u32).map(|i| b'a' + (i % 26) as u8).collect();
        let stream = Stream {
            hash: Mutex::new(Some(Sha256::new())),
            ..Stream::default()
        };
        pump(&data[..], &stream);
        let c = stream.capture();
        assert_eq!(c.bytes, 300_000);
        assert!(c.truncated);
        assert_eq!(c.tail.len(), TAIL_BYTES);
        assert_eq!(c.tail.as_bytes(), &data[data.len() - TAIL_BYTES..]);
        assert_eq!(c.sha256, hex(&Sha256::digest(&data)));
    }

    #[test]
    fn tail_never_starts_inside_a_character_nor_grows_past_the_limit() {
        let t = tail_text(&[0x80, 0x80, b'o', b'k']);
        assert_eq!(t, "ok");
        let binary = vec![0xFFu8; TAIL_BYTES];
        assert!(tail_text(&binary).len() <= TAIL_BYTES);
    }
}
