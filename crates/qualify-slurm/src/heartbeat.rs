//! Heartbeats of a job's nodes, through the shared state directory of one cell: each step of a
//! multi-node service cell writes `<node>.beat` (a counter, every [`BEAT_EVERY`]) from a thread
//! of its own ([`Beat`]), and whoever must notice a lost node — the service cell watching its
//! dependencies' nodes, the dependency hosts watching the service's node, the executor watching
//! them all — reads them with a [`Watch`]. Silence is judged on the watcher's clock (a file's
//! content changing), never on file times or another node's clock. A step that ends cleanly
//! removes its file ([`Beat`]'s drop), so only a node that stopped without saying so falls
//! silent.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::renew::Renewer;

/// How often a step writes its heartbeat.
pub const BEAT_EVERY: Duration = Duration::from_millis(500);
/// A node whose heartbeat has not changed for this long is lost.
pub const SILENT_NODE: Duration = Duration::from_secs(5);

/// The file naming the cell's root node (the one whose step starts the others': the service's
/// node). When it falls silent, the others' steps die with it: it is the node named.
pub const ROOT_FILE: &str = "service-node";

/// Where the cell keeps its `evidence.cluster` (which node runs what) once its parts started,
/// for the executor to attach to a cell it ends for a lost node.
pub const EVIDENCE_FILE: &str = "cluster.json";

/// Name `node` as the root of the cell beating in `dir`.
pub fn write_root(dir: &Path, node: &str) -> std::io::Result<()> {
    std::fs::write(dir.join(ROOT_FILE), node)
}

/// The heartbeat file of `node` in `dir`.
pub fn beat_path(dir: &Path, node: &str) -> PathBuf {
    dir.join(format!("{node}.beat"))
}

/// Writes `<node>.beat` every [`BEAT_EVERY`] until dropped (then removes it).
pub struct Beat {
    renewer: Renewer,
}

impl Beat {
    /// Start beating for `node` in `dir` (the first beat is written before this returns).
    pub fn start(dir: &Path, node: &str) -> std::io::Result<Beat> {
        let renewer = Renewer::start(
            beat_path(dir, node),
            BEAT_EVERY,
            format!("qualify-beat-{node}"),
            |n| n.to_string(),
        )?;
        Ok(Beat { renewer })
    }
}

impl Drop for Beat {
    fn drop(&mut self) {
        self.renewer.stop();
        let _ = std::fs::remove_file(&self.renewer.path);
    }
}

#[cfg(test)]
fn write_beat(path: &Path, n: u64) -> std::io::Result<()> {
    crate::renew::write_atomically(path, &n.to_string())
}

/// Watches heartbeats in one directory: for each node, when its beat last changed (on this
/// clock).
#[derive(Debug)]
pub struct Watch {
    dir: PathBuf,
    /// Only these nodes (`None`: every `*.beat` in the directory).
    only: Option<Vec<String>>,
    seen: BTreeMap<String, (String, Instant)>,
}

impl Watch {
    /// Watch every node beating in `dir`.
    pub fn all(dir: &Path) -> Watch {
        Watch {
            dir: dir.to_path_buf(),
            only: None,
            seen: BTreeMap::new(),
        }
    }

    /// Watch only `nodes` in `dir`.
    pub fn nodes(dir: &Path, nodes: &[String]) -> Watch {
        Watch {
            dir: dir.to_path_buf(),
            only: Some(nodes.to_vec()),
            seen: BTreeMap::new(),
        }
    }

    /// Read the beats now; the first node silent for at least `limit` and how long, if any. A
    /// node counts from its first beat seen; a removed beat (a step that ended cleanly) is
    /// forgotten.
    pub fn silent(&mut self, limit: Duration) -> Option<(String, Duration)> {
        let now = Instant::now();
        let names: Vec<String> = match &self.only {
            Some(n) => n.clone(),
            None => std::fs::read_dir(&self.dir)
                .map(|d| {
                    d.filter_map(|e| e.ok())
                        .filter_map(|e| {
                            e.file_name()
                                .to_str()
                                .and_then(|n| n.strip_suffix(".beat"))
                                .map(str::to_string)
                        })
                        .collect()
                })
                .unwrap_or_default(),
        };
        let mut present = Vec::new();
        for node in names {
            let Ok(text) = std::fs::read_to_string(beat_path(&self.dir, &node)) else {
                continue;
            };
            present.push(node.clone());
            match self.seen.get_mut(&node) {
                Some((last, at)) if *last != text => {
                    *last = text;
                    *at = now;
                }
                Some(_) => {}
                None => {
                    self.seen.insert(node, (text, now));
                }
            }
        }
        self.seen.retain(|n, _| present.contains(n));
        let silent: Vec<(&String, Duration)> = self
            .seen
            .iter()
            .map(|(n, (_, at))| (n, now.duration_since(*at)))
            .filter(|(_, d)| *d >= limit)
            .collect();
        // The root's silence explains the others' (their steps hang off it).
        let root = std::fs::read_to_string(self.dir.join(ROOT_FILE)).ok();
        silent
            .iter()
            .find(|(n, _)| root.as_deref().is_some_and(|r| r.trim() == n.as_str()))
            .or_else(|| silent.iter().max_by_key(|(_, d)| *d))
            .map(|(n, d)| ((*n).clone(), *d))
    }

    /// Whether `node` has beaten at least once (and not removed its beat since).
    pub fn has_seen(&self, node: &str) -> bool {
        self.seen.contains_key(node)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_beating_node_is_never_silent_a_frozen_one_is_and_a_clean_end_is_forgotten() {
        let dir = tempfile::tempdir().unwrap();
        let beat = Beat::start(dir.path(), "node1").unwrap();
        // node2 beat once and then died (nothing removed its file).
        write_beat(&beat_path(dir.path(), "node2"), 7).unwrap();
        let mut watch = Watch::all(dir.path());
        let limit = Duration::from_millis(1200);
        let start = Instant::now();
        let mut found = None;
        while start.elapsed() < Duration::from_secs(3) && found.is_none() {
            found = watch.silent(limit);
            std::thread::sleep(Duration::from_millis(100));
        }
        let (node, d) = found.expect("node2 falls silent after the limit");
        assert_eq!(node, "node2");
        assert!(d >= limit);
        assert!(watch.has_seen("node1"));
        // Two silent nodes, one of them the root: the root is named.
        write_beat(&beat_path(dir.path(), "node3"), 1).unwrap();
        write_root(dir.path(), "node3").unwrap();
        std::thread::sleep(Duration::from_millis(1300));
        assert_eq!(watch.silent(limit).map(|(n, _)| n), Some("node2".into()));
        std::thread::sleep(Duration::from_millis(1300));
        assert_eq!(watch.silent(limit).map(|(n, _)| n), Some("node3".into()));
        std::fs::remove_file(beat_path(dir.path(), "node3")).unwrap();
        // node1, beating all along, is not silent; once it ends cleanly it is forgotten.
        std::fs::remove_file(beat_path(dir.path(), "node2")).unwrap();
        assert_eq!(watch.silent(limit), None);
        drop(beat);
        assert_eq!(watch.silent(Duration::ZERO), None);
        assert!(!watch.has_seen("node1"));
    }
}
