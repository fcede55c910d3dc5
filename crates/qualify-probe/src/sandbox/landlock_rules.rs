//! The Landlock layer: a ruleset built in qualify (the `landlock` crate, best effort against
//! the kernel's ABI) and applied by the program's process just before `exec` (a raw
//! `landlock_restrict_self` on the ruleset's fd). Landlock only allows, it cannot deny a path
//! beneath an allowed one, so read access is granted to every entry of `/` except the hidden
//! paths, descending into each ancestor of a hidden path and granting its other entries
//! (a hidden path beneath a writable or readable one stays reachable: only the mount layer
//! hides it, and the evidence says so). Write access: the workdir and `writable` paths, `/tmp`,
//! `/dev/shm`, the terminal and null devices, `/proc` (the program's own). Signals and abstract
//! UNIX sockets are scoped to the sandbox (ABI 6).

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access, AccessFs, BitFlags, PathBeneath, PathFd, Ruleset, RulesetAttr, RulesetCreatedAttr,
    Scope,
};

/// Devices a program may write to.
const DEVICES: [&str; 7] = [
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
    "/dev/ptmx",
];

/// The ABI the rules are written for (the crate degrades them on older kernels).
const TARGET: ABI = ABI::V6;

/// The read-only entries: every entry of `/` except the hidden paths, recursing into their
/// ancestors.
pub(crate) fn read_roots(hidden: &[PathBuf]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    descend(Path::new("/"), hidden, &mut out, 0);
    out
}

fn descend(dir: &Path, hidden: &[PathBuf], out: &mut Vec<PathBuf>, depth: usize) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if hidden.contains(&p) {
            continue;
        }
        if depth < 32 && hidden.iter().any(|h| h.starts_with(&p)) {
            descend(&p, hidden, out, depth + 1);
        } else {
            out.push(p);
        }
    }
}

/// What the ruleset grants beyond the read roots.
pub(crate) struct Grants<'a> {
    pub writable: &'a [PathBuf],
    pub readable: &'a [PathBuf],
    pub hidden: &'a [PathBuf],
}

/// Why the Landlock ruleset could not be built (the filesystem layer then says so and relies
/// on the mount namespace alone).
#[derive(Debug, thiserror::Error)]
pub(crate) enum LandlockError {
    #[error("building the Landlock ruleset: {0}")]
    Ruleset(#[source] landlock::RulesetError),
    #[error("adding a Landlock rule for {}: {source}", path.display())]
    Rule {
        path: PathBuf,
        source: landlock::RulesetError,
    },
    /// The crate's best effort left nothing to enforce on this kernel.
    #[error("the kernel accepted no Landlock ruleset")]
    NotAccepted,
}

/// Build the ruleset; returns its fd, or why it could not be built.
pub(crate) fn build(g: &Grants<'_>) -> Result<OwnedFd, LandlockError> {
    let all: BitFlags<AccessFs> = AccessFs::from_all(TARGET) & !AccessFs::IoctlDev;
    let read: BitFlags<AccessFs> = AccessFs::from_read(TARGET);
    let mut rs = Ruleset::default()
        .handle_access(all)
        .map_err(LandlockError::Ruleset)?
        .scope(Scope::Signal | Scope::AbstractUnixSocket)
        .map_err(LandlockError::Ruleset)?
        .create()
        .map_err(LandlockError::Ruleset)?;
    let mut add = |path: &Path, access: BitFlags<AccessFs>| -> Result<(), LandlockError> {
        // Paths that do not exist (a dangling link, a device the host lacks) grant nothing.
        let Ok(fd) = PathFd::new(path) else {
            return Ok(());
        };
        (&mut rs)
            .add_rule(PathBeneath::new(fd, access))
            .map_err(|source| LandlockError::Rule {
                path: path.to_path_buf(),
                source,
            })?;
        Ok(())
    };
    for p in read_roots(g.hidden) {
        add(&p, read)?;
    }
    for p in g.readable {
        add(p, read)?;
    }
    for p in g.writable {
        add(p, all)?;
    }
    for p in ["/tmp", "/dev/shm"] {
        add(Path::new(p), all)?;
    }
    for d in DEVICES {
        add(Path::new(d), AccessFs::ReadFile | AccessFs::WriteFile)?;
    }
    add(
        Path::new("/dev/pts"),
        AccessFs::ReadFile | AccessFs::WriteFile | AccessFs::ReadDir,
    )?;
    add(
        Path::new("/proc"),
        AccessFs::ReadFile | AccessFs::WriteFile | AccessFs::ReadDir,
    )?;
    let fd: Option<OwnedFd> = rs.into();
    fd.ok_or(LandlockError::NotAccepted)
}

/// Access bits of `landlock_path_beneath_attr` (the kernel's ABI).
const READ_FILE: u64 = 1 << 2;
const WRITE_FILE: u64 = 1 << 1;
const READ_DIR: u64 = 1 << 3;

/// Every filesystem right the ruleset handles on a kernel with `abi` (what [`build`] asked for,
/// cut to the kernel's ABI as the crate's best effort does): rights granted by rules added
/// later must stay within it.
pub(crate) fn handled(abi: i32) -> u64 {
    let mut m = (1u64 << 13) - 1; // ABI 1: execute … make_sym
    if abi >= 2 {
        m |= 1 << 13; // refer
    }
    if abi >= 3 {
        m |= 1 << 14; // truncate
    }
    m
}

/// Rules the init adds once its mounts exist: a rule on a path a new mount covers would be
/// ignored (Landlock skips covered mount points), so the private `/tmp`, `/dev/shm`, `/dev`,
/// `/dev/pts` and the namespace's `/proc` get rules of their own.
pub(crate) fn init_rules(abi: i32) -> Vec<(std::ffi::CString, u64)> {
    let all = handled(abi);
    vec![
        (c"/tmp".into(), all),
        (c"/dev/shm".into(), all),
        (c"/dev".into(), READ_FILE | READ_DIR),
        (c"/dev/pts".into(), READ_FILE | WRITE_FILE | READ_DIR),
        (c"/proc".into(), READ_FILE | WRITE_FILE | READ_DIR),
    ]
}

/// Everything a writable place allows (for a mount the init makes over one: the workdir's
/// private layer).
pub(crate) fn all_access(abi: i32) -> u64 {
    handled(abi)
}

/// `struct landlock_path_beneath_attr` (packed).
#[repr(C, packed)]
struct PathBeneathAttr {
    allowed_access: u64,
    parent_fd: i32,
}

/// Add a path-beneath rule to the ruleset `ruleset` (raw system calls: used in the init).
pub(crate) fn add_raw(ruleset: i32, path: &std::ffi::CStr, access: u64) -> Result<(), i32> {
    // SAFETY: a C string and a local attr; plain syscalls.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_PATH | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(crate::cell::errno());
        }
        let attr = PathBeneathAttr {
            allowed_access: access,
            parent_fd: fd,
        };
        let r = libc::syscall(
            libc::SYS_landlock_add_rule,
            ruleset,
            1u32, // LANDLOCK_RULE_PATH_BENEATH
            &attr as *const PathBeneathAttr,
            0u32,
        );
        let e = crate::cell::errno();
        libc::close(fd);
        if r != 0 {
            return Err(e);
        }
    }
    Ok(())
}

/// Whether Landlock hides `hidden`: it does unless a granted path contains it.
pub(crate) fn hides(hidden: &Path, granted: &[&Path]) -> bool {
    !granted.iter().any(|g| hidden.starts_with(g))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_roots_leave_out_hidden_paths_and_keep_their_siblings() {
        let dir = std::env::temp_dir().join(format!("qualify-ll-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("secret/inner")).unwrap();
        std::fs::create_dir_all(dir.join("open")).unwrap();
        let hidden = vec![dir.join("secret")];
        let roots = read_roots(&hidden);
        assert!(roots.contains(&dir.join("open")), "{roots:?}");
        assert!(!roots.iter().any(|r| r.starts_with(dir.join("secret"))));
        assert!(
            !roots.iter().any(|r| dir.starts_with(r)),
            "an ancestor was granted"
        );
        assert!(roots.contains(&PathBuf::from("/usr")));
        assert!(hides(&dir.join("secret"), &[Path::new("/usr")]));
        assert!(!hides(&dir.join("secret"), &[dir.as_path()]));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
