//! A file renewed from a thread of its own: the mechanism under the run's lease
//! ([`crate::lease`]) and the nodes' heartbeats ([`crate::heartbeat`]). Each renewal writes a
//! new text (a sequence number) whole, by rename, so a reader on another node sees one renewal
//! or the next, never half of one; watchers judge a change of content, never a file time.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

/// Write `text` to `path` through a temporary file beside it and a rename: a reader on any node
/// sees the old text or the new one, never part of it.
pub fn write_atomically(path: &Path, text: &str) -> std::io::Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, path)
}

/// Rewrites a file with `text(seq)` every `period` until stopped; `seq` 0 is written before
/// [`Renewer::start`] returns.
pub(crate) struct Renewer {
    pub(crate) path: PathBuf,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Renewer {
    pub(crate) fn start(
        path: PathBuf,
        period: Duration,
        thread_name: String,
        text: impl Fn(u64) -> String + Send + 'static,
    ) -> std::io::Result<Renewer> {
        write_atomically(&path, &text(0))?;
        let stop = Arc::new(AtomicBool::new(false));
        let (p, s) = (path.clone(), Arc::clone(&stop));
        let thread = std::thread::Builder::new()
            .name(thread_name)
            .spawn(move || {
                let mut seq: u64 = 0;
                while !s.load(Ordering::SeqCst) {
                    std::thread::sleep(period);
                    seq += 1;
                    let _ = write_atomically(&p, &text(seq));
                }
            })?;
        Ok(Renewer {
            path,
            stop,
            thread: Some(thread),
        })
    }

    /// Stop renewing; returns once the thread wrote its last renewal.
    pub(crate) fn stop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
