//! The runtimes table (`runtimes.toml`, compiled in): how to recognise a managed runtime in a
//! process (JVM, Go, CPython, Node.js), which of its threads are its own helpers, which states
//! and frames are blocking waits, and the memory layouts qualify reads owners from (glibc's
//! thread descriptor, CPython's lock objects). Data, like `spin_rules.toml`: adding a runtime or
//! a helper thread is a line there.

use std::sync::LazyLock;

use serde::Deserialize;

use crate::rules::{Pattern, TableError};

/// The table as shipped.
pub const TABLE: &str = include_str!("runtimes.toml");

fn no_pattern() -> Pattern {
    Pattern::new("")
}

/// One runtime.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Runtime {
    pub name: String,
    /// File name of the executable.
    #[serde(default = "no_pattern")]
    pub process: Pattern,
    /// A shared library the process maps.
    #[serde(default = "no_pattern")]
    pub libraries: Pattern,
    /// Bytes the executable holds (Go's build information).
    #[serde(default)]
    pub marker: String,
    /// How qualify asks it (`jcmd`, `goroutine dump`, `py-spy`; empty: not asked).
    pub tool: String,
    /// Thread names of the runtime's own helpers.
    #[serde(default = "no_pattern")]
    pub helpers: Pattern,
    #[serde(default = "no_pattern")]
    pub runtime_states: Pattern,
    #[serde(default = "no_pattern")]
    pub runtime_functions: Pattern,
    #[serde(default = "no_pattern")]
    pub blocking_states: Pattern,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Glibc {
    pub pthread_self_offset: u64,
    pub pthread_tid_offset: u64,
    /// Frames of a thread waiting for a mutex.
    pub mutex_frames: Pattern,
    /// Frames of a thread joining another.
    pub join_frames: Pattern,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CPython {
    pub rlock_type: String,
    pub lock_type: String,
    pub lock_field: u64,
    pub owner_field: u64,
    pub count_field: u64,
    pub tp_name: u64,
}

/// The whole table.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Runtimes {
    pub runtime: Vec<Runtime>,
    pub glibc: Glibc,
    pub cpython: CPython,
}

/// What identifies a process's runtime: the executable's file name, the shared objects it
/// maps, and whether the executable holds a runtime's marker.
#[derive(Debug, Clone, Default)]
pub struct ProcessFacts {
    pub exe: String,
    pub libraries: Vec<String>,
    /// Names of the runtimes whose `marker` the executable holds.
    pub markers: Vec<String>,
}

/// The shipped table, parsed once; `Err` says why not (a build defect, reported in the evidence).
pub static RUNTIMES: LazyLock<Result<Runtimes, TableError>> =
    LazyLock::new(|| Runtimes::parse(TABLE));

impl Runtimes {
    pub fn parse(text: &str) -> Result<Runtimes, TableError> {
        toml::from_str(text).map_err(|source| TableError::Toml {
            table: "runtimes",
            source,
        })
    }

    /// The runtime a process runs, if any.
    pub fn recognise(&self, facts: &ProcessFacts) -> Option<&Runtime> {
        self.runtime.iter().find(|r| {
            r.process.matches(&facts.exe)
                || facts.libraries.iter().any(|l| r.libraries.matches(l))
                || facts.markers.contains(&r.name)
        })
    }

    pub fn named(&self, name: &str) -> Option<&Runtime> {
        self.runtime.iter().find(|r| r.name == name)
    }

    /// Markers to look for in executables: (runtime, bytes).
    pub fn markers(&self) -> impl Iterator<Item = (&str, &[u8])> {
        self.runtime
            .iter()
            .filter(|r| !r.marker.is_empty())
            .map(|r| (r.name.as_str(), r.marker.as_bytes()))
    }
}

impl Runtime {
    /// Whether a thread (by its name) is one of the runtime's own helpers.
    pub fn is_helper(&self, comm: &str) -> bool {
        self.helpers.matches(comm)
    }
}

/// What identifies the runtime of a live process (exe name, mapped libraries, markers).
pub fn facts(pid: i32, table: &Runtimes) -> ProcessFacts {
    let exe = std::fs::read_link(format!("/proc/{pid}/exe"))
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_default();
    let mut libraries: Vec<String> = std::fs::read_to_string(format!("/proc/{pid}/maps"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .filter(|p| p.starts_with('/'))
        .filter_map(|p| p.rsplit('/').next().map(String::from))
        .collect();
    libraries.sort();
    libraries.dedup();
    let markers = exe_markers(pid, table);
    ProcessFacts {
        exe,
        libraries,
        markers,
    }
}

/// Runtimes whose marker the executable of `pid` holds within its first 64 MiB.
fn exe_markers(pid: i32, table: &Runtimes) -> Vec<String> {
    use std::io::Read;
    let wanted: Vec<(&str, &[u8])> = table.markers().collect();
    if wanted.is_empty() {
        return Vec::new();
    }
    let Ok(f) = std::fs::File::open(format!("/proc/{pid}/exe")) else {
        return Vec::new();
    };
    let mut data = Vec::new();
    if f.take(64 << 20).read_to_end(&mut data).is_err() {
        return Vec::new();
    }
    wanted
        .into_iter()
        .filter(|(_, m)| data.windows(m.len()).any(|w| w == *m))
        .map(|(n, _)| n.to_string())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> Runtimes {
        Runtimes::parse(TABLE).expect("the shipped table parses")
    }

    #[test]
    fn recognises_runtimes_by_executable_library_or_marker() {
        let t = table();
        let facts = |exe: &str, libs: &[&str], markers: &[&str]| ProcessFacts {
            exe: exe.into(),
            libraries: libs.iter().map(|s| s.to_string()).collect(),
            markers: markers.iter().map(|s| s.to_string()).collect(),
        };
        let name = |f: &ProcessFacts| t.recognise(f).map(|r| r.name.clone());
        assert_eq!(name(&facts("java", &[], &[])).as_deref(), Some("JVM"));
        assert_eq!(
            name(&facts("myapp", &["libjvm.so"], &[])).as_deref(),
            Some("JVM")
        );
        assert_eq!(
            name(&facts("python3.11", &[], &[])).as_deref(),
            Some("CPython")
        );
        assert_eq!(name(&facts("server", &[], &["Go"])).as_deref(), Some("Go"));
        assert_eq!(name(&facts("node", &[], &[])).as_deref(), Some("Node.js"));
        assert_eq!(name(&facts("lockorder", &["libc.so.6"], &[])), None);
    }

    #[test]
    fn jvm_helpers_are_the_vms_own_threads_not_the_programs() {
        let t = table();
        let jvm = t.named("JVM").expect("JVM");
        for helper in [
            "GC Thread#0",
            "G1 Main Marker",
            "C2 CompilerThre",
            "VM Periodic Tas",
            "Common-Cleaner",
            "Signal Dispatch",
        ] {
            assert!(jvm.is_helper(helper), "{helper}");
        }
        for user in ["java", "main", "Thread-0", "pool-1-thread-1", "worker"] {
            assert!(!jvm.is_helper(user), "{user}");
        }
    }
}
