//! The run's lease: how a job learns that the `qualify run` that submitted it is gone. The
//! executor rewrites `<run dir>/lease` every second (a sequence number, atomically by rename);
//! each job's `qualify probe --lease <run dir>/lease` watches it, and when the lease stops
//! changing for [`STALE`], says `ended`, or is missing, the probe stops its tree (`interrupted`)
//! and the job ends — no `scancel` needed, so a submitter killed by SIGKILL, an OOM killer or
//! a lost login node leaves no job running for hours. The file's content is compared, not its
//! time stamp, so clocks of the submit host and the nodes need not agree.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::renew::{Renewer, write_atomically};

/// How often the executor renews the lease.
pub const PERIOD: Duration = Duration::from_secs(1);
/// A lease unchanged this long means its writer is gone.
pub const STALE: Duration = Duration::from_secs(10);
/// What a lease says once its run ended normally.
const ENDED: &str = "ended";

/// Renews a lease every [`PERIOD`] until dropped; then marks it `ended`.
pub struct LeaseWriter {
    renewer: Renewer,
}

impl LeaseWriter {
    /// Write the first lease at `path` and renew it from a thread of its own.
    pub fn start(path: PathBuf) -> std::io::Result<LeaseWriter> {
        let pid = std::process::id();
        let renewer = Renewer::start(path, PERIOD, "qualify-lease".into(), move |seq| {
            format!("qualify-lease pid={pid} seq={seq}\n")
        })?;
        Ok(LeaseWriter { renewer })
    }

    pub fn path(&self) -> &Path {
        &self.renewer.path
    }
}

impl Drop for LeaseWriter {
    fn drop(&mut self) {
        self.renewer.stop();
        let _ = write_atomically(&self.renewer.path, &format!("{ENDED}\n"));
    }
}

/// Why a watched lease was given up.
fn lapsed(text: Option<&str>) -> Option<&'static str> {
    match text.map(str::trim) {
        None => Some("its lease file is gone"),
        Some(ENDED) => Some("its lease says the run ended"),
        Some(_) => None,
    }
}

/// Watch the lease at `path` from a thread: when it lapses, print why on stderr and set
/// `cancel` (the probe then stops its tree and reports `interrupted`). Returns at once if the
/// lease has already lapsed (with `cancel` set).
pub fn watch(path: PathBuf, cancel: Arc<AtomicBool>) {
    let read = |p: &Path| std::fs::read_to_string(p).ok();
    let give_up = |why: &str, cancel: &AtomicBool| {
        eprintln!(
            "qualify: the qualify run that submitted this job is gone ({why}); stopping the cell"
        );
        cancel.store(true, Ordering::SeqCst);
    };
    let first = read(&path);
    if let Some(why) = lapsed(first.as_deref()) {
        give_up(why, &cancel);
        return;
    }
    let _ = std::thread::Builder::new()
        .name("qualify-lease-watch".into())
        .spawn(move || {
            let mut last = first;
            let mut changed = Instant::now();
            loop {
                std::thread::sleep(Duration::from_millis(250));
                if cancel.load(Ordering::SeqCst) {
                    return;
                }
                let now = read(&path);
                if let Some(why) = lapsed(now.as_deref()) {
                    give_up(why, &cancel);
                    return;
                }
                if now != last {
                    last = now;
                    changed = Instant::now();
                } else if changed.elapsed() >= STALE {
                    give_up(
                        &format!("its lease has not changed for {} s", STALE.as_secs()),
                        &cancel,
                    );
                    return;
                }
            }
        });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lease_is_renewed_and_marked_ended_when_dropped() {
        let dir = std::env::temp_dir().join(format!("qualify-lease-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("lease");
        let w = LeaseWriter::start(path.clone()).unwrap();
        let first = std::fs::read_to_string(&path).unwrap();
        std::thread::sleep(PERIOD + Duration::from_millis(500));
        let later = std::fs::read_to_string(&path).unwrap();
        assert_ne!(first, later, "the lease was not renewed");
        assert_eq!(lapsed(Some(&later)), None);
        drop(w);
        let ended = std::fs::read_to_string(&path).unwrap();
        assert!(lapsed(Some(&ended)).is_some(), "{ended}");
        let cancel = Arc::new(AtomicBool::new(false));
        watch(path, Arc::clone(&cancel));
        assert!(
            cancel.load(Ordering::SeqCst),
            "an ended lease stops the probe at once"
        );
        assert!(lapsed(None).is_some());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
