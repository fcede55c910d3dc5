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
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::host::Missing;
use crate::cell::{clone_raw, close_others, errno};
use crate::errno::Errno;

/// Why the sandbox's user cannot write a place through an idmapped mount (it then runs as root
/// without capabilities, and the `user` layer says why).
#[derive(Debug, Clone, thiserror::Error)]
pub(crate) enum IdmapError {
    /// `idmap` is listed in `QUALIFY_SIMULATE_MISSING`.
    #[error("turned off by QUALIFY_SIMULATE_MISSING")]
    Simulated,
    #[error("no mount namespace: {0}")]
    NoMountNamespace(Missing),
    #[error("a pipe for the idmap namespace: {0}")]
    Pipe(Errno),
    #[error("a user namespace for the idmapped workdir: {0}")]
    UserNamespace(Errno),
    /// Writing the namespace's `uid_map` or `gid_map`.
    #[error("writing the idmap namespace's {file}: {source}")]
    WriteMap {
        file: &'static str,
        source: Arc<std::io::Error>,
    },
    #[error("opening the idmap namespace: {0}")]
    OpenNamespace(Arc<std::io::Error>),
    /// The place to map cannot be looked at.
    #[error("{}: {source}", path.display())]
    Stat {
        path: PathBuf,
        source: Arc<std::io::Error>,
    },
    #[error("a NUL in the path")]
    NulInPath,
    #[error("a mount namespace to try an idmapped mount: {0}")]
    MountNamespace(Errno),
    /// The trial mount failed with this errno.
    #[error("the filesystem of {} does not support idmapped mounts ({errno})", path.display())]
    Unsupported { path: PathBuf, errno: Errno },
}

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
pub(crate) fn userns(m: Mapping) -> Result<Arc<OwnedFd>, IdmapError> {
    static CACHE: Mutex<Vec<(Mapping, Arc<OwnedFd>)>> = Mutex::new(Vec::new());
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, fd)) = cache.iter().find(|(k, _)| *k == m) {
        return Ok(Arc::clone(fd));
    }
    let fd = Arc::new(make_userns(m)?);
    cache.push((m, Arc::clone(&fd)));
    Ok(fd)
}

fn make_userns((iu, ig, ou, og): Mapping) -> Result<OwnedFd, IdmapError> {
    let mut fds = [0; 2];
    // SAFETY: two out-slots.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(IdmapError::Pipe(Errno::last()));
    }
    // SAFETY: both fds are ours.
    let (r, w) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // SAFETY: the child only reads a pipe and exits.
    let pid = unsafe { clone_raw(libc::CLONE_NEWUSER) };
    if pid < 0 {
        return Err(IdmapError::UserNamespace(Errno(errno())));
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
    let result = (|| -> Result<OwnedFd, IdmapError> {
        let write = |file: &'static str, text: String| {
            std::fs::write(format!("/proc/{pid}/{file}"), text).map_err(|e| IdmapError::WriteMap {
                file,
                source: Arc::new(e),
            })
        };
        // A mount's idmapping reads on-disk ids as ids inside the namespace: the owner's uid
        // inside maps to the sandbox user's outside.
        write("uid_map", format!("{ou} {iu} 1\n"))?;
        write("gid_map", format!("{og} {ig} 1\n"))?;
        let f = std::fs::File::open(format!("/proc/{pid}/ns/user"))
            .map_err(|e| IdmapError::OpenNamespace(Arc::new(e)))?;
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
pub(crate) fn supported(path: &Path, userns: &OwnedFd) -> Result<(), IdmapError> {
    use std::os::unix::fs::MetadataExt;
    static CACHE: Mutex<Option<HashMap<u64, Result<(), IdmapError>>>> = Mutex::new(None);
    let dev = std::fs::metadata(path)
        .map_err(|e| IdmapError::Stat {
            path: path.to_path_buf(),
            source: Arc::new(e),
        })?
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

fn try_idmap(path: &Path, userns: &OwnedFd) -> Result<(), IdmapError> {
    let c = CString::new(path.as_os_str().as_bytes()).map_err(|_| IdmapError::NulInPath)?;
    let ns = userns.as_raw_fd();
    // SAFETY: the child makes raw syscalls on prepared memory, then exits.
    let pid = unsafe { clone_raw(libc::CLONE_NEWNS) };
    if pid < 0 {
        return Err(IdmapError::MountNamespace(Errno(errno())));
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
    Err(IdmapError::Unsupported {
        path: path.to_path_buf(),
        errno: Errno(code),
    })
}
