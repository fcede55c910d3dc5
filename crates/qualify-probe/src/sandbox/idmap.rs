//! Idmapped mounts, so that as root the program can run as an unprivileged user and still write
//! its workdir while the files stay the owner's: the workdir is bound through a user namespace
//! whose only mapping is sandbox user ↔ owner, so the owner's files appear as the sandbox
//! user's inside, and what the program creates lands on disk as the owner's. One user namespace
//! per mapping, made once per process (a child that unshares and waits while qualify writes its
//! maps and keeps its namespace open); support is tried once per filesystem.

use std::collections::HashMap;
use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::{Arc, Mutex};

use crate::cell::{clone_raw, close_others, errno};

/// `struct mount_attr` of `mount_setattr(2)`.
#[repr(C)]
pub(crate) struct MountAttr {
    pub attr_set: u64,
    pub attr_clr: u64,
    pub propagation: u64,
    pub userns_fd: u64,
}

pub(crate) const MOUNT_ATTR_RDONLY: u64 = 0x1;
pub(crate) const MOUNT_ATTR_IDMAP: u64 = 0x0010_0000;
pub(crate) const AT_RECURSIVE: u32 = 0x8000;
pub(crate) const OPEN_TREE_CLONE: u32 = 1;
pub(crate) const MOVE_MOUNT_F_EMPTY_PATH: u32 = 0x4;

/// (inside uid, inside gid, outside uid, outside gid).
type Mapping = (u32, u32, u32, u32);

/// The user namespace for `m`, made once.
pub(crate) fn userns(m: Mapping) -> Result<Arc<OwnedFd>, String> {
    static CACHE: Mutex<Vec<(Mapping, Arc<OwnedFd>)>> = Mutex::new(Vec::new());
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, fd)) = cache.iter().find(|(k, _)| *k == m) {
        return Ok(Arc::clone(fd));
    }
    let fd = Arc::new(make_userns(m)?);
    cache.push((m, Arc::clone(&fd)));
    Ok(fd)
}

fn make_userns((iu, ig, ou, og): Mapping) -> Result<OwnedFd, String> {
    let mut fds = [0; 2];
    // SAFETY: two out-slots.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(format!(
            "a pipe for the idmap namespace: {}",
            std::io::Error::last_os_error()
        ));
    }
    // SAFETY: both fds are ours.
    let (r, w) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // SAFETY: the child only reads a pipe and exits.
    let pid = unsafe { clone_raw(libc::CLONE_NEWUSER) };
    if pid < 0 {
        return Err(format!(
            "a user namespace for the idmapped workdir: {}",
            std::io::Error::from_raw_os_error(errno())
        ));
    }
    if pid == 0 {
        let mut b = 0u8;
        // SAFETY: raw syscalls in the child.
        unsafe {
            let _ = close_others(&[r.as_raw_fd()]);
            libc::read(r.as_raw_fd(), (&mut b as *mut u8).cast(), 1);
            libc::_exit(0);
        }
    }
    drop(r);
    let pid = pid as i32;
    let result = (|| -> Result<OwnedFd, String> {
        let write = |file: &str, text: String| {
            std::fs::write(format!("/proc/{pid}/{file}"), text)
                .map_err(|e| format!("writing the idmap namespace's {file}: {e}"))
        };
        // A mount's idmapping reads on-disk ids as ids inside the namespace: the owner's uid
        // inside maps to the sandbox user's outside.
        write("uid_map", format!("{ou} {iu} 1\n"))?;
        write("gid_map", format!("{og} {ig} 1\n"))?;
        let f = std::fs::File::open(format!("/proc/{pid}/ns/user"))
            .map_err(|e| format!("opening the idmap namespace: {e}"))?;
        Ok(OwnedFd::from(f))
    })();
    drop(w);
    let mut status = 0;
    // SAFETY: reaping our own child.
    unsafe { libc::waitpid(pid, &mut status, 0) };
    result
}

/// Whether the filesystem of `path` supports idmapped mounts with `userns`, tried once per
/// device in a throwaway child with its own mount namespace.
pub(crate) fn supported(path: &Path, userns: &OwnedFd) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    static CACHE: Mutex<Option<HashMap<u64, Result<(), String>>>> = Mutex::new(None);
    let dev = std::fs::metadata(path)
        .map_err(|e| format!("{}: {e}", path.display()))?
        .dev();
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    let cache = cache.get_or_insert_with(HashMap::new);
    if let Some(r) = cache.get(&dev) {
        return r.clone();
    }
    let r = try_idmap(path, userns);
    cache.insert(dev, r.clone());
    r
}

fn try_idmap(path: &Path, userns: &OwnedFd) -> Result<(), String> {
    let c = CString::new(path.as_os_str().as_bytes()).map_err(|_| "a NUL in the path")?;
    let ns = userns.as_raw_fd();
    // SAFETY: the child makes raw syscalls on prepared memory, then exits.
    let pid = unsafe { clone_raw(libc::CLONE_NEWNS) };
    if pid < 0 {
        return Err(format!(
            "a mount namespace to try an idmapped mount: {}",
            std::io::Error::from_raw_os_error(errno())
        ));
    }
    if pid == 0 {
        // SAFETY: raw syscalls in the child.
        unsafe {
            let fd = libc::syscall(
                libc::SYS_open_tree,
                libc::AT_FDCWD,
                c.as_ptr(),
                OPEN_TREE_CLONE | libc::O_CLOEXEC as u32,
            );
            if fd < 0 {
                libc::_exit(errno().clamp(1, 255));
            }
            let attr = MountAttr {
                attr_set: MOUNT_ATTR_IDMAP,
                attr_clr: 0,
                propagation: 0,
                userns_fd: ns as u64,
            };
            let r = libc::syscall(
                libc::SYS_mount_setattr,
                fd as i32,
                c"".as_ptr(),
                libc::AT_EMPTY_PATH as u32,
                &attr as *const MountAttr,
                std::mem::size_of::<MountAttr>(),
            );
            libc::_exit(if r < 0 { errno().clamp(1, 255) } else { 0 });
        }
    }
    let mut status = 0;
    // SAFETY: reaping our own child.
    unsafe { libc::waitpid(pid as i32, &mut status, 0) };
    if libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0 {
        return Ok(());
    }
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        libc::EINVAL
    };
    Err(format!(
        "the filesystem of {} does not support idmapped mounts ({})",
        path.display(),
        std::io::Error::from_raw_os_error(code)
    ))
}
