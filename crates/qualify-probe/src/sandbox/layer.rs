//! The workdir's private writable layer: an overlay whose lower layer is the workdir (read-only
//! underneath) and whose upper layer is a directory of qualify's own, so that what a cell writes
//! never reaches the workdir — not the artifact's own files (a binary renamed over, a script
//! rewritten), nor a later cell (no state carried from one cell to the next). One
//! [`WorkdirLayer`] per cell: a probe asked for [`super::PrivateWorkdir::PerProbe`] makes its
//! own and removes it when it ends; the probes of one service cell (the service, its restart)
//! share one ([`super::PrivateWorkdir::Shared`]), so that data survives a kill and restart.
//!
//! Layers live in `$QUALIFY_LAYER_DIR`, else `/dev/shm/qualify-layers-<uid>` (a tmpfs: what a
//! cell writes into its workdir is held in memory, as what it writes to `/tmp`, and counts
//! against its memory ceiling too), else `/var/tmp/qualify-layers-<uid>` ([`layers_root`]), as
//! `<pid>-<n>/upper` and `…/work`; the directory is out of every cell's sight, and a run that
//! finds directories of dead processes there removes them. What a layer holds counts against
//! the disk ceiling, sampled by walking it ([`WorkdirLayer::usage`]).
//!
//! Cost: an overlay mount per probe (no copy of the workdir); a file the cell writes to is copied
//! up once, whole. Measured by `bench/sandbox.sh`.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use super::host::Missing;
use crate::ProbeError;
use crate::cell::{clone_raw, errno};
use crate::errno::Errno;

static SEQ: AtomicU64 = AtomicU64::new(0);

/// Where layers are made: `$QUALIFY_LAYER_DIR`, else the first of `/dev/shm/qualify-layers-<uid>`
/// (a tmpfs: making and removing a layer costs microseconds, not a journal's milliseconds) and
/// `/var/tmp/qualify-layers-<uid>` where an overlay can be made, decided once.
pub fn layers_root() -> PathBuf {
    if let Some(d) = std::env::var_os("QUALIFY_LAYER_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(d);
    }
    static ROOT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    ROOT.get_or_init(|| {
        // SAFETY: getuid has no preconditions.
        let uid = unsafe { libc::getuid() };
        let candidates = [
            PathBuf::from(format!("/dev/shm/qualify-layers-{uid}")),
            PathBuf::from(format!("/var/tmp/qualify-layers-{uid}")),
        ];
        candidates
            .iter()
            .find(|c| try_overlay(c).is_ok())
            .unwrap_or(&candidates[1])
            .clone()
    })
    .clone()
}

/// A cell's private writable layer over the workdir.
#[derive(Debug)]
pub struct WorkdirLayer {
    dir: PathBuf,
}

impl WorkdirLayer {
    /// A new, empty layer (its `upper` and `work` directories).
    pub fn create() -> Result<Arc<WorkdirLayer>, ProbeError> {
        Self::create_in(&layers_root())
    }

    fn create_in(root: &Path) -> Result<Arc<WorkdirLayer>, ProbeError> {
        let root = root.to_path_buf();
        std::fs::create_dir_all(&root).map_err(|e| {
            ProbeError::io(
                format!(
                    "creating the directory of private layers {}",
                    root.display()
                ),
                e,
            )
        })?;
        use std::os::unix::fs::PermissionsExt;
        // Traversable (a held-out check's way to qualify lives here too), not listable.
        let _ = std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o711));
        sweep(&root);
        let dir = root.join(format!(
            "{}-{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        for sub in ["upper", "work"] {
            std::fs::create_dir_all(dir.join(sub)).map_err(|e| {
                ProbeError::io(format!("creating a private layer in {}", dir.display()), e)
            })?;
        }
        // Reached only through the overlay: nobody else may enter.
        let _ = std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700));
        Ok(Arc::new(WorkdirLayer { dir }))
    }

    /// The upper layer: what the cell wrote.
    pub fn upper(&self) -> PathBuf {
        self.dir.join("upper")
    }

    pub(crate) fn work(&self) -> PathBuf {
        self.dir.join("work")
    }

    /// Remove the mark a volatile overlay leaves in its work directory (`work/incompat/
    /// volatile`, mode 000), which a new mount of the same layer refuses.
    pub(crate) fn clear_volatile_mark(&self) {
        use std::os::unix::fs::PermissionsExt;
        let work = self.work().join("work");
        let incompat = work.join("incompat");
        if !incompat.exists() {
            return;
        }
        for d in [&work, &incompat, &incompat.join("volatile")] {
            let _ = std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o700));
        }
        let _ = std::fs::remove_dir_all(&incompat);
    }

    /// The file `relative` (to the workdir) as the cell left it: its copy in the upper layer
    /// when the cell wrote it, else the workdir's own, `None` when the cell deleted it.
    pub fn file(&self, workdir: &Path, relative: &Path) -> Option<PathBuf> {
        use std::os::unix::fs::FileTypeExt;
        let up = self.upper().join(relative);
        match std::fs::symlink_metadata(&up) {
            // A whiteout: the cell deleted it.
            Ok(m) if m.file_type().is_char_device() => None,
            Ok(_) => Some(up),
            Err(_) => {
                let low = workdir.join(relative);
                low.exists().then_some(low)
            }
        }
    }

    /// Bytes the layer holds (allocated blocks, and a page per entry), counted up to `limit`:
    /// the walk stops once it is reached.
    pub fn usage(&self, limit: u64) -> u64 {
        use std::os::unix::fs::MetadataExt;
        let mut used = 0u64;
        let mut stack = vec![self.upper()];
        while let Some(d) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&d) else {
                continue;
            };
            for e in entries.flatten() {
                let Ok(m) = e.metadata() else { continue };
                used += m.blocks() * 512 + 4096;
                if used >= limit {
                    return used;
                }
                if m.is_dir() {
                    stack.push(e.path());
                }
            }
        }
        used
    }
}

impl Drop for WorkdirLayer {
    fn drop(&mut self) {
        self.clear_volatile_mark();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Remove the layers of processes that are gone (a qualify killed by SIGKILL leaves its own).
fn sweep(root: &Path) {
    static DONE: Mutex<bool> = Mutex::new(false);
    let mut done = DONE.lock().unwrap_or_else(|e| e.into_inner());
    if *done {
        return;
    }
    *done = true;
    for e in std::fs::read_dir(root).into_iter().flatten().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = name.split('-').next().and_then(|p| p.parse::<i32>().ok()) else {
            continue;
        };
        if pid != std::process::id() as i32 && !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

/// `lowerdir` takes `:`-separated layers: a path's `:`, `,` and `\` are escaped.
pub(crate) fn escape_lower(p: &Path) -> Result<CString, ProbeError> {
    let mut out = Vec::new();
    for &b in p.as_os_str().as_bytes() {
        if matches!(b, b':' | b',' | b'\\') {
            out.push(b'\\');
        }
        out.push(b);
    }
    CString::new(out).map_err(|_| ProbeError::NulByte {
        what: "workdir",
        text: p.display().to_string(),
    })
}

pub(crate) const FSOPEN_CLOEXEC: u32 = 1;
pub(crate) const FSCONFIG_SET_FLAG: u32 = 0;
pub(crate) const FSCONFIG_SET_STRING: u32 = 1;
pub(crate) const FSCONFIG_CMD_CREATE: u32 = 6;
pub(crate) const FSMOUNT_CLOEXEC: u32 = 1;

/// Make an overlay mount (`lower`, `upper`, `work` as paths) and return its detached mount fd.
///
/// # Safety
/// Raw system calls only (used after a fork).
pub(crate) unsafe fn overlay(
    lower: &std::ffi::CStr,
    upper: &std::ffi::CStr,
    work: &std::ffi::CStr,
    userxattr: bool,
) -> Result<i32, i32> {
    // SAFETY: raw syscalls on prepared strings.
    unsafe {
        let fs = libc::syscall(libc::SYS_fsopen, c"overlay".as_ptr(), FSOPEN_CLOEXEC);
        if fs < 0 {
            return Err(errno());
        }
        let fs = fs as i32;
        let set = |key: &std::ffi::CStr, value: Option<&std::ffi::CStr>| -> bool {
            let (cmd, v) = match value {
                Some(v) => (FSCONFIG_SET_STRING, v.as_ptr()),
                None => (FSCONFIG_SET_FLAG, std::ptr::null()),
            };
            libc::syscall(libc::SYS_fsconfig, fs, cmd, key.as_ptr(), v, 0) == 0
        };
        // `volatile`: no sync of the upper layer (it is thrown away); older kernels lack it.
        let ok = set(c"lowerdir", Some(lower))
            && set(c"upperdir", Some(upper))
            && set(c"workdir", Some(work))
            && (!userxattr || set(c"userxattr", None));
        let _ = ok && set(c"volatile", None);
        let ok = ok
            && libc::syscall(
                libc::SYS_fsconfig,
                fs,
                FSCONFIG_CMD_CREATE,
                std::ptr::null::<u8>(),
                std::ptr::null::<u8>(),
                0,
            ) == 0;
        if !ok {
            let e = errno();
            libc::close(fs);
            return Err(e);
        }
        let mnt = libc::syscall(libc::SYS_fsmount, fs, FSMOUNT_CLOEXEC, 0);
        let e = errno();
        libc::close(fs);
        if mnt < 0 {
            return Err(e);
        }
        Ok(mnt as i32)
    }
}

/// Whether an overlay can be made here with its upper layer in [`layers_root`]: tried once per
/// process, in a throwaway child with a mount namespace of its own (and, not as root, a user
/// namespace mapping qualify's user to root).
pub(crate) fn supported() -> Result<(), Missing> {
    static CACHE: Mutex<Option<Result<(), Missing>>> = Mutex::new(None);
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(r) = cache.as_ref() {
        return r.clone();
    }
    let r = try_overlay(&layers_root());
    *cache = Some(r.clone());
    r
}

fn try_overlay(root: &Path) -> Result<(), Missing> {
    let layer = WorkdirLayer::create_in(root).map_err(|e| Missing::Overlay(e.to_string()))?;
    let lower = layer.dir.join("lower");
    std::fs::create_dir_all(&lower).map_err(|e| Missing::Overlay(e.to_string()))?;
    let c = |p: &Path| {
        CString::new(p.as_os_str().as_bytes()).map_err(|_| Missing::Overlay("a NUL".into()))
    };
    let (l, u, w) = (c(&lower)?, c(&layer.upper())?, c(&layer.work())?);
    // SAFETY: geteuid has no preconditions.
    let as_root = unsafe { libc::geteuid() } == 0;
    let flags = if as_root {
        libc::CLONE_NEWNS
    } else {
        libc::CLONE_NEWNS | libc::CLONE_NEWUSER
    };
    let mut fds = [0; 2];
    // SAFETY: two out-slots.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(Missing::Overlay(Errno::last().to_string()));
    }
    // SAFETY: the child makes raw syscalls on prepared memory, then exits.
    let pid = unsafe { clone_raw(flags) };
    if pid < 0 {
        let e = Errno::last();
        // SAFETY: our fds.
        unsafe {
            libc::close(fds[0]);
            libc::close(fds[1]);
        }
        return Err(Missing::Overlay(format!(
            "a mount namespace to try it: {e}"
        )));
    }
    if pid == 0 {
        // SAFETY: raw syscalls in the child.
        unsafe {
            libc::close(fds[1]);
            let mut b = 0u8;
            // Not as root: wait until the parent wrote the maps.
            libc::read(fds[0], (&mut b as *mut u8).cast(), 1);
            let r = overlay(&l, &u, &w, !as_root);
            libc::_exit(match r {
                Ok(_) => 0,
                Err(e) => e.clamp(1, 255),
            });
        }
    }
    let pid = pid as i32;
    // SAFETY: our fd.
    unsafe { libc::close(fds[0]) };
    if !as_root {
        // SAFETY: getuid/getgid have no preconditions.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        let _ = std::fs::write(format!("/proc/{pid}/setgroups"), "deny");
        let _ = std::fs::write(format!("/proc/{pid}/uid_map"), format!("0 {uid} 1\n"));
        let _ = std::fs::write(format!("/proc/{pid}/gid_map"), format!("0 {gid} 1\n"));
    }
    // SAFETY: our fd; closing it lets the child go on.
    unsafe { libc::close(fds[1]) };
    let mut status = 0;
    // SAFETY: reaping our own child.
    unsafe { libc::waitpid(pid, &mut status, 0) };
    if libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0 {
        return Ok(());
    }
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        libc::EINVAL
    };
    Err(Missing::Overlay(format!(
        "the kernel refused an overlay with its upper layer in {} ({})",
        root.display(),
        Errno(code)
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lower_paths_are_escaped() {
        assert_eq!(
            escape_lower(Path::new("/w/a:b,c\\d")).unwrap().as_bytes(),
            b"/w/a\\:b\\,c\\\\d"
        );
    }
}
