//! Enforcement backends: where a probe's ceilings come from and how its tree is contained.
//!
//! - `cgroup2`: a per-probe group in the unified hierarchy with the memory (and cpu, pids)
//!   controllers; the kernel enforces every ceiling, `cgroup.kill` ends the tree.
//! - `cgroup1`: per-probe groups in the v1 memory, cpu, cpuacct and pids hierarchies; on hybrid
//!   hosts also a group in the controller-less v2 hierarchy for `cgroup.kill`, `cpu.stat` and
//!   pressure files.
//! - `rlimit`: no cgroups; the tree is tracked through process group, child subreaper and an
//!   environment tag, and the memory ceiling is a user-space watchdog.
//!
//! [`Containment`] is one probe's groups; dropping it removes them.

pub(crate) mod cgroupfs;

use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::ProbeError;
use crate::limits::Limits;
use crate::result::{Enforcement, Strength};

/// Which enforcement backend to use: the vocabulary's (a Slurm job and `qualify probe --backend`
/// name it the same way).
pub use qualify_model::BackendChoice;

/// Why a cgroup backend cannot contain a probe here (`--backend cgroup2|cgroup1` refuses with
/// it; `auto` states both in its fallback warning).
#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    #[error("no cgroup2 hierarchy is mounted")]
    NoCgroup2,
    /// Every candidate parent group refused, each for its reason.
    #[error("{}", join(.0))]
    NoUsableParent(Vec<ParentRefused>),
    #[error("no cgroup v1 memory hierarchy is mounted")]
    NoV1Memory,
    /// Neither qualify's own v1 memory group nor the hierarchy's root took a new group.
    #[error(
        "cannot create a group in the v1 memory hierarchy at {} (not writable: run as root)",
        .0.display()
    )]
    V1MemoryNotWritable(PathBuf),
    /// `--backend cgroup1` with a ceiling whose v1 controller has no writable hierarchy.
    #[error("no writable v1 {controller} hierarchy for {flag}")]
    NoV1Controller {
        controller: &'static str,
        flag: &'static str,
    },
    /// A ceiling could not be written into the probe's group.
    #[error("cannot write {value} to {}/{file}: {source}", dir.display())]
    Write {
        dir: PathBuf,
        file: &'static str,
        value: String,
        source: std::io::Error,
    },
}

/// Why one candidate parent group of the unified hierarchy cannot hold a probe's group.
#[derive(Debug, thiserror::Error)]
pub enum ParentRefused {
    #[error(
        "{} lacks the {} controller(s) (available: {})",
        parent.display(),
        missing.join(", "),
        if available.is_empty() { "none".to_string() } else { available.join(" ") }
    )]
    LacksControllers {
        parent: PathBuf,
        missing: Vec<&'static str>,
        available: Vec<String>,
    },
    #[error(
        "cannot enable {controller} in {}/cgroup.subtree_control: {source} (a delegated parent \
         must hold no processes; set QUALIFY_CGROUP_PARENT to an empty delegated cgroup)",
        parent.display()
    )]
    CannotEnable {
        parent: PathBuf,
        controller: &'static str,
        source: std::io::Error,
    },
    #[error("cannot create a group in {}: {source}", parent.display())]
    CannotCreate {
        parent: PathBuf,
        source: std::io::Error,
    },
}

fn join(reasons: &[ParentRefused]) -> String {
    reasons
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

/// Which backend is in force for one probe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Cgroup2,
    Cgroup1,
    Rlimit,
}

/// Counters read from a probe's cgroups. `None` where the host does not provide the file.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Counters {
    pub oom_kills: u64,
    pub memory_peak: Option<u64>,
    pub memory_current: Option<u64>,
    pub memory_failcnt: Option<u64>,
    pub cpu_user_usec: Option<u64>,
    pub cpu_system_usec: Option<u64>,
    pub cpu_usage_usec: Option<u64>,
    pub nr_throttled: Option<u64>,
    pub throttled_usec: Option<u64>,
    pub pids_max_events: Option<u64>,
    pub pids_peak: Option<u64>,
    pub memory_pressure_some_usec: Option<u64>,
    pub cpu_pressure_some_usec: Option<u64>,
}

/// One probe's groups (or none, for rlimit) and how each ceiling is enforced.
#[derive(Debug)]
pub struct Containment {
    pub kind: Kind,
    /// Group in the unified hierarchy (pure v2, or the controller-less v2 of a hybrid host).
    v2: Option<PathBuf>,
    v1_memory: Option<PathBuf>,
    v1_cpu: Option<PathBuf>,
    v1_cpuacct: Option<PathBuf>,
    v1_pids: Option<PathBuf>,
    pub enforcement: Enforcement,
    /// Set when `auto` had to fall back to a weaker backend: why.
    pub fallback_warning: Option<String>,
    created: Vec<PathBuf>,
}

impl Containment {
    /// Create the groups for one probe and apply `limits`.
    pub fn create(choice: BackendChoice, limits: &Limits) -> Result<Containment, ProbeError> {
        let unavailable = |backend: &str, reason: BackendError| ProbeError::BackendUnavailable {
            backend: backend.to_string(),
            reason,
        };
        match choice {
            BackendChoice::Cgroup2 => try_cgroup2(limits).map_err(|r| unavailable("cgroup2", r)),
            BackendChoice::Cgroup1 => {
                try_cgroup1(limits, true).map_err(|r| unavailable("cgroup1", r))
            }
            BackendChoice::Rlimit => Ok(rlimit(limits, None)),
            BackendChoice::Auto => {
                let v2 = match try_cgroup2(limits) {
                    Ok(c) => return Ok(c),
                    Err(r) => r,
                };
                let v1 = match try_cgroup1(limits, false) {
                    Ok(c) => return Ok(c),
                    Err(r) => r,
                };
                Ok(rlimit(
                    limits,
                    Some(format!(
                        "no usable cgroup hierarchy (cgroup2: {v2}; cgroup1: {v1}); falling back to \
                         the rlimit backend: the memory ceiling is a user-space watchdog and cpu/pids \
                         ceilings are not enforced"
                    )),
                ))
            }
        }
    }

    /// `cgroup.procs` files the child writes `0` into (before exec) to join its groups.
    pub fn join_files(&self) -> Result<Vec<File>, ProbeError> {
        let dirs = [
            &self.v2,
            &self.v1_memory,
            &self.v1_cpu,
            &self.v1_cpuacct,
            &self.v1_pids,
        ];
        let mut files = Vec::new();
        let mut seen: Vec<&PathBuf> = Vec::new();
        for dir in dirs.into_iter().flatten() {
            if seen.contains(&dir) {
                continue;
            }
            seen.push(dir);
            let path = dir.join("cgroup.procs");
            let f = std::fs::OpenOptions::new()
                .write(true)
                .open(&path)
                .map_err(|e| ProbeError::io(format!("opening {}", path.display()), e))?;
            files.push(f);
        }
        Ok(files)
    }

    /// The group that tracks membership, if any.
    fn membership_dir(&self) -> Option<&Path> {
        self.v2.as_deref().or(self.v1_memory.as_deref())
    }

    /// The directory whose `cgroup.procs` lists the tree (`None` for rlimit).
    pub fn membership(&self) -> Option<PathBuf> {
        self.membership_dir().map(Path::to_path_buf)
    }

    /// Every process in the tree, from the kernel's membership list. `None` for rlimit.
    pub fn members(&self) -> Option<Vec<i32>> {
        self.membership_dir().map(cgroupfs::procs)
    }

    /// The group with CPU bandwidth control (v2 `cpu.max`, v1 `cpu.cfs_quota_us`), when the
    /// probe has one (a v1 cpu group only exists under a CPU ceiling).
    pub fn cpu_dir(&self) -> Option<PathBuf> {
        self.v2
            .as_ref()
            .filter(|d| d.join("cpu.max").exists())
            .or(self.v1_cpu.as_ref())
            .cloned()
    }

    /// The unified group whose `cgroup.freeze` stops the whole tree without a signal the
    /// program could see, when the probe has one.
    pub fn freeze_dir(&self) -> Option<PathBuf> {
        self.v2
            .as_ref()
            .filter(|d| d.join("cgroup.freeze").exists())
            .cloned()
    }

    /// The groups' directories (deepest last), for the cell's init to remove if qualify dies.
    pub fn dirs(&self) -> Vec<PathBuf> {
        self.created.iter().rev().cloned().collect()
    }

    /// Paths of the groups, for the evidence.
    pub fn paths(&self) -> Vec<String> {
        self.created
            .iter()
            .map(|p| p.display().to_string())
            .collect()
    }

    /// Kill everything in the groups. Returns `false` for rlimit (the caller kills by pid).
    pub fn kill_all(&self) -> bool {
        if let Some(v2) = &self.v2
            && v2.join("cgroup.kill").exists()
            && cgroupfs::write(v2, "cgroup.kill", "1").is_ok()
        {
            return true;
        }
        let Some(dir) = self.membership_dir() else {
            return false;
        };
        for _ in 0..100 {
            let pids = cgroupfs::procs(dir);
            if pids.is_empty() {
                break;
            }
            for p in pids {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(p),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        true
    }

    /// Read every counter the host provides.
    pub fn counters(&self) -> Counters {
        let mut c = Counters::default();
        if self.kind == Kind::Cgroup2 {
            if let Some(d) = &self.v2 {
                c.oom_kills = cgroupfs::keyed(d, "memory.events", "oom_kill").unwrap_or(0);
                c.memory_peak = cgroupfs::read_u64(d, "memory.peak");
                c.memory_current = cgroupfs::read_u64(d, "memory.current");
                c.memory_failcnt = cgroupfs::keyed(d, "memory.events", "max");
                c.pids_max_events = cgroupfs::keyed(d, "pids.events", "max");
                c.pids_peak = cgroupfs::read_u64(d, "pids.peak");
            }
        }
        if let Some(d) = &self.v1_memory {
            c.oom_kills = cgroupfs::keyed(d, "memory.oom_control", "oom_kill").unwrap_or(0);
            c.memory_peak = cgroupfs::read_u64(d, "memory.max_usage_in_bytes");
            c.memory_current = cgroupfs::read_u64(d, "memory.usage_in_bytes");
            c.memory_failcnt = cgroupfs::read_u64(d, "memory.failcnt");
        }
        if let Some(d) = &self.v1_pids {
            c.pids_max_events = cgroupfs::keyed(d, "pids.events", "max");
            c.pids_peak = cgroupfs::read_u64(d, "pids.peak");
        }
        if let Some(d) = &self.v1_cpuacct {
            let hz = clock_ticks();
            let to_usec = |ticks: u64| ticks.saturating_mul(1_000_000) / hz;
            c.cpu_user_usec = cgroupfs::keyed(d, "cpuacct.stat", "user").map(to_usec);
            c.cpu_system_usec = cgroupfs::keyed(d, "cpuacct.stat", "system").map(to_usec);
            c.cpu_usage_usec = cgroupfs::read_u64(d, "cpuacct.usage").map(|ns| ns / 1000);
        }
        if let Some(d) = &self.v1_cpu {
            c.nr_throttled = cgroupfs::keyed(d, "cpu.stat", "nr_throttled");
            c.throttled_usec = cgroupfs::keyed(d, "cpu.stat", "throttled_time").map(|ns| ns / 1000);
        }
        if let Some(d) = &self.v2 {
            // cpu.stat's usage lines exist in every v2 group, with or without the cpu controller.
            if let Some(u) = cgroupfs::keyed(d, "cpu.stat", "usage_usec") {
                c.cpu_usage_usec = Some(u);
                c.cpu_user_usec = cgroupfs::keyed(d, "cpu.stat", "user_usec");
                c.cpu_system_usec = cgroupfs::keyed(d, "cpu.stat", "system_usec");
            }
            if self.kind == Kind::Cgroup2 {
                c.nr_throttled = cgroupfs::keyed(d, "cpu.stat", "nr_throttled");
                c.throttled_usec = cgroupfs::keyed(d, "cpu.stat", "throttled_usec");
            }
            c.memory_pressure_some_usec = cgroupfs::pressure_some_total(d, "memory.pressure");
            c.cpu_pressure_some_usec = cgroupfs::pressure_some_total(d, "cpu.pressure");
        }
        c
    }

    /// Remove the groups (waiting briefly for them to empty). Returns what could not be removed.
    pub fn remove(&mut self) -> Vec<String> {
        let mut failed = Vec::new();
        for dir in self.created.drain(..).rev() {
            if let Err(e) = cgroupfs::remove_dir_retry(&dir, Duration::from_secs(2)) {
                failed.push(format!("{}: {e}", dir.display()));
            }
        }
        failed
    }
}

impl Drop for Containment {
    fn drop(&mut self) {
        if !self.created.is_empty() {
            self.kill_all();
            let _ = self.remove();
        }
    }
}

fn clock_ticks() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let v = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if v > 0 { v as u64 } else { 100 }
}

fn rlimit(limits: &Limits, fallback_warning: Option<String>) -> Containment {
    let mut notes = vec![
        "no cgroup: the tree is tracked by process group, child subreaper and an environment tag; \
         a descendant that escapes all three is not seen"
            .to_string(),
    ];
    let memory = if limits.memory_bytes.is_some() {
        notes.push(
            "memory ceiling enforced by a user-space watchdog sampling the tree's anonymous RSS; \
             a fast allocator can overshoot between samples"
                .to_string(),
        );
        Strength::Watchdog
    } else {
        Strength::None
    };
    if limits.cpus.is_some() {
        notes.push(
            "cpu ceiling not enforced: the rlimit backend has no CPU bandwidth control".into(),
        );
    }
    if limits.pids.is_some() {
        notes.push(
            "pids ceiling not enforced: the task count is observed, and exceeding it is flagged"
                .into(),
        );
    }
    Containment {
        kind: Kind::Rlimit,
        v2: None,
        v1_memory: None,
        v1_cpu: None,
        v1_cpuacct: None,
        v1_pids: None,
        enforcement: Enforcement {
            backend: "rlimit".into(),
            memory,
            cpus: Strength::None,
            pids: Strength::None,
            disk: Strength::None,
            tree: "process-group+subreaper".into(),
            on_qualify_death: String::new(),
            notes,
            sandbox: None,
        },
        fallback_warning,
        created: Vec::new(),
    }
}

fn cpu_quota_us(cpus: f64) -> u64 {
    ((cpus * 100_000.0).round() as u64).max(1000)
}

fn try_cgroup2(limits: &Limits) -> Result<Containment, BackendError> {
    let mounts = cgroupfs::mounts();
    let Some(mount) = mounts.iter().find(|m| m.unified) else {
        return Err(BackendError::NoCgroup2);
    };
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Some(p) = std::env::var_os("QUALIFY_CGROUP_PARENT") {
        candidates.push(PathBuf::from(p));
    }
    if let Some(own) = cgroupfs::own_path(None) {
        candidates.push(cgroupfs::join(&mount.path, &own));
    }
    candidates.push(mount.path.clone());
    candidates.dedup();

    let mut wanted = vec!["memory"];
    if limits.cpus.is_some() {
        wanted.push("cpu");
    }
    if limits.pids.is_some() {
        wanted.push("pids");
    }
    let mut reasons = Vec::new();
    for parent in candidates {
        let available = cgroupfs::read(&parent, "cgroup.controllers").unwrap_or_default();
        let available: Vec<&str> = available.split_whitespace().collect();
        let missing: Vec<&str> = wanted
            .iter()
            .copied()
            .filter(|c| !available.contains(c))
            .collect();
        if !missing.is_empty() {
            reasons.push(ParentRefused::LacksControllers {
                parent,
                missing,
                available: available.iter().map(|c| c.to_string()).collect(),
            });
            continue;
        }
        let subtree = cgroupfs::read(&parent, "cgroup.subtree_control").unwrap_or_default();
        let mut enable_failed = None;
        for c in wanted.iter().chain(["pids"].iter()) {
            let enabled = subtree.split_whitespace().any(|s| s == *c);
            if !available.contains(c) || enabled {
                continue;
            }
            let write = cgroupfs::write(&parent, "cgroup.subtree_control", &format!("+{c}"));
            if let Err(source) = write
                && wanted.contains(c)
            {
                enable_failed = Some(ParentRefused::CannotEnable {
                    parent: parent.clone(),
                    controller: c,
                    source,
                });
                break;
            }
        }
        if let Some(r) = enable_failed {
            reasons.push(r);
            continue;
        }
        cgroupfs::sweep_stale(&parent);
        let dir = parent.join(cgroupfs::fresh_name());
        if let Err(source) = std::fs::create_dir(&dir) {
            reasons.push(ParentRefused::CannotCreate { parent, source });
            continue;
        }
        let mut c = Containment {
            kind: Kind::Cgroup2,
            v2: Some(dir.clone()),
            v1_memory: None,
            v1_cpu: None,
            v1_cpuacct: None,
            v1_pids: None,
            enforcement: Enforcement {
                backend: "cgroup2".into(),
                memory: Strength::None,
                cpus: Strength::None,
                pids: Strength::None,
                disk: Strength::None,
                tree: "cgroup".into(),
                on_qualify_death: String::new(),
                notes: Vec::new(),
                sandbox: None,
            },
            fallback_warning: None,
            created: vec![dir.clone()],
        };
        let set = |file: &'static str, value: String| {
            cgroupfs::write(&dir, file, &value).map_err(|source| BackendError::Write {
                dir: dir.clone(),
                file,
                value,
                source,
            })
        };
        if let Some(m) = limits.memory_bytes {
            set("memory.max", m.to_string())?;
            if dir.join("memory.swap.max").exists() {
                set("memory.swap.max", "0".into())?;
            }
            c.enforcement.memory = Strength::Kernel;
        }
        if let Some(cpus) = limits.cpus {
            set("cpu.max", format!("{} 100000", cpu_quota_us(cpus)))?;
            c.enforcement.cpus = Strength::Kernel;
        }
        if let Some(p) = limits.pids {
            set("pids.max", p.to_string())?;
            c.enforcement.pids = Strength::Kernel;
        }
        return Ok(c);
    }
    Err(BackendError::NoUsableParent(reasons))
}

fn try_cgroup1(limits: &Limits, forced: bool) -> Result<Containment, BackendError> {
    let mounts = cgroupfs::mounts();
    let find = |ctrl: &str| {
        mounts
            .iter()
            .find(|m| !m.unified && m.controllers.iter().any(|c| c == ctrl))
    };
    let mut created: Vec<PathBuf> = Vec::new();
    let name = cgroupfs::fresh_name();
    // Create `name` under our own group in the hierarchy, or under its root.
    let make = |ctrl: Option<&str>, mount: &Path, created: &mut Vec<PathBuf>| -> Option<PathBuf> {
        let own = cgroupfs::own_path(ctrl).unwrap_or_default();
        let mut parents = vec![cgroupfs::join(mount, &own), mount.to_path_buf()];
        parents.dedup();
        for parent in parents {
            let dir = parent.join(&name);
            if dir.exists() {
                return Some(dir); // co-mounted controllers share a directory
            }
            cgroupfs::sweep_stale(&parent);
            if std::fs::create_dir(&dir).is_ok() {
                created.push(dir.clone());
                return Some(dir);
            }
        }
        None
    };
    let Some(mem_mount) = find("memory") else {
        return Err(BackendError::NoV1Memory);
    };
    let Some(memory) = make(Some("memory"), &mem_mount.path, &mut created) else {
        return Err(BackendError::V1MemoryNotWritable(mem_mount.path.clone()));
    };
    let mut notes = Vec::new();
    let cleanup = |created: &mut Vec<PathBuf>| {
        for d in created.drain(..).rev() {
            let _ = std::fs::remove_dir(d);
        }
    };
    let cpu = find("cpu").and_then(|m| make(Some("cpu"), &m.path.clone(), &mut created));
    let cpuacct =
        find("cpuacct").and_then(|m| make(Some("cpuacct"), &m.path.clone(), &mut created));
    let pids = find("pids").and_then(|m| make(Some("pids"), &m.path.clone(), &mut created));
    let v2 = mounts
        .iter()
        .find(|m| m.unified)
        .and_then(|m| make(None, &m.path.clone(), &mut created));

    let mut enforcement = Enforcement {
        backend: "cgroup1".into(),
        memory: Strength::None,
        cpus: Strength::None,
        pids: Strength::None,
        disk: Strength::None,
        tree: if v2.is_some() {
            "cgroup (v1 memory + v2 membership, cgroup.kill)".into()
        } else {
            "cgroup (v1 memory)".into()
        },
        on_qualify_death: String::new(),
        notes: Vec::new(),
        sandbox: None,
    };
    let set = |dir: &Path, file: &'static str, value: String| {
        cgroupfs::write(dir, file, &value).map_err(|source| BackendError::Write {
            dir: dir.to_path_buf(),
            file,
            value,
            source,
        })
    };
    let result = (|| -> Result<(), BackendError> {
        if let Some(m) = limits.memory_bytes {
            set(&memory, "memory.limit_in_bytes", m.to_string())?;
            if memory.join("memory.memsw.limit_in_bytes").exists() {
                // keep swap out of the ceiling; may fail where swap accounting is off
                if set(&memory, "memory.memsw.limit_in_bytes", m.to_string()).is_err() {
                    notes.push(
                        "swap accounting unavailable: swap may extend the memory ceiling".into(),
                    );
                }
            }
            enforcement.memory = Strength::Kernel;
        }
        if let Some(cpus) = limits.cpus {
            match &cpu {
                Some(d) => {
                    set(d, "cpu.cfs_period_us", "100000".into())?;
                    set(d, "cpu.cfs_quota_us", cpu_quota_us(cpus).to_string())?;
                    enforcement.cpus = Strength::Kernel;
                }
                None if forced => {
                    return Err(BackendError::NoV1Controller {
                        controller: "cpu",
                        flag: "--cpus",
                    });
                }
                None => notes.push("cpu ceiling not enforced: no writable v1 cpu hierarchy".into()),
            }
        }
        if let Some(p) = limits.pids {
            match &pids {
                Some(d) => {
                    set(d, "pids.max", p.to_string())?;
                    enforcement.pids = Strength::Kernel;
                }
                None if forced => {
                    return Err(BackendError::NoV1Controller {
                        controller: "pids",
                        flag: "--pids",
                    });
                }
                None => {
                    notes.push("pids ceiling not enforced: no writable v1 pids hierarchy".into())
                }
            }
        }
        Ok(())
    })();
    if let Err(e) = result {
        cleanup(&mut created);
        return Err(e);
    }
    if v2.is_none() {
        notes.push("no v2 group: the tree is killed pid by pid from the v1 membership list".into());
    }
    enforcement.notes = notes;
    Ok(Containment {
        kind: Kind::Cgroup1,
        v2,
        v1_memory: Some(memory),
        v1_cpu: cpu,
        v1_cpuacct: cpuacct,
        v1_pids: pids,
        enforcement,
        fallback_warning: None,
        created,
    })
}
