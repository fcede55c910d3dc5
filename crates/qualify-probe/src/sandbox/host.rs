//! What this host offers the sandbox, asked once per process: user and PID namespaces (from the
//! cell), the Landlock ABI, `mount_setattr` (recursive read-only, idmapped mounts), seccomp.
//! Each answer that is "no" carries the reason the evidence will state ([`Missing`]).

use std::sync::{Arc, OnceLock};

use super::simulated_missing;
use crate::cell::NoPidNamespace;
use crate::errno::Errno;

pub(crate) struct Host {
    pub root: bool,
    /// Namespaces can be made (a PID, mount and network namespace; with a user namespace when
    /// not root), else why not.
    pub namespaces: Result<(), NoPidNamespace>,
    /// The Landlock ABI version, else why none.
    pub landlock: Result<i32, Missing>,
    /// `mount_setattr` (Linux 5.12): recursive read-only remount and idmapped mounts.
    pub mount_setattr: Result<(), Missing>,
    /// seccomp filters can be installed here (x86-64 only: the filter names syscall numbers).
    pub seccomp: Result<(), Missing>,
}

/// Why a mechanism of the sandbox is missing here: the text its layer's `reason` states.
#[derive(Debug, Clone, thiserror::Error)]
pub(crate) enum Missing {
    /// Listed in `QUALIFY_SIMULATE_MISSING`.
    #[error("turned off by QUALIFY_SIMULATE_MISSING")]
    Simulated,
    /// The sandbox's namespaces are made beside the cell's PID namespace, and there is none.
    #[error("no PID namespace to make it with: {0}")]
    NoPidNamespace(NoPidNamespace),
    #[error("the kernel has no Landlock (Linux 5.13+ built with it)")]
    NoLandlock,
    #[error(
        "Landlock is built into the kernel but not enabled (add it to the lsm= boot parameter)"
    )]
    LandlockNotEnabled,
    /// The Landlock version query failed otherwise.
    #[error("Landlock is unavailable: {0}")]
    LandlockUnavailable(Errno),
    #[error("the kernel has no mount_setattr (Linux 5.12+)")]
    NoMountSetattr,
    /// The filter names x86-64 system call numbers.
    #[error("the seccomp filter is written for x86-64 only")]
    SeccompArchitecture,
    #[error("the kernel has no seccomp: {0}")]
    NoSeccomp(Errno),
    /// The workdir's private layer cannot be made here (why).
    #[error("{0}")]
    Overlay(String),
    /// qualify's own filter did not compile (a defect of qualify, stated rather than hidden).
    #[error("building the seccomp filter: {0}")]
    SeccompFilter(Arc<seccompiler::BackendError>),
}

pub(crate) fn host() -> &'static Host {
    static HOST: OnceLock<Host> = OnceLock::new();
    HOST.get_or_init(|| {
        // SAFETY: geteuid has no preconditions.
        let root = unsafe { libc::geteuid() } == 0;
        let namespaces = match crate::cell::base_flags() {
            (_, None) => Ok(()),
            (_, Some(why)) => Err(why),
        };
        Host {
            root,
            namespaces,
            landlock: landlock_abi(),
            mount_setattr: mount_setattr(),
            seccomp: seccomp(),
        }
    })
}

fn landlock_abi() -> Result<i32, Missing> {
    // SAFETY: the version query takes no ruleset.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<u8>(),
            0usize,
            1u32, // LANDLOCK_CREATE_RULESET_VERSION
        )
    };
    if v > 0 {
        return Ok(v as i32);
    }
    Err(match Errno::last() {
        Errno(libc::ENOSYS) => Missing::NoLandlock,
        Errno(libc::EOPNOTSUPP) => Missing::LandlockNotEnabled,
        e => Missing::LandlockUnavailable(e),
    })
}

fn mount_setattr() -> Result<(), Missing> {
    // An invalid fd: EBADF means the call exists.
    // SAFETY: no memory is passed that the kernel could write.
    let r = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            -1i32,
            c"".as_ptr(),
            0u32,
            std::ptr::null::<u8>(),
            0usize,
        )
    };
    if r < 0 && Errno::last() == Errno(libc::ENOSYS) {
        return Err(Missing::NoMountSetattr);
    }
    Ok(())
}

fn seccomp() -> Result<(), Missing> {
    if !cfg!(target_arch = "x86_64") {
        return Err(Missing::SeccompArchitecture);
    }
    // SAFETY: plain prctl query.
    let r = unsafe { libc::prctl(libc::PR_GET_SECCOMP, 0, 0, 0, 0) };
    if r < 0 {
        return Err(Missing::NoSeccomp(Errno::last()));
    }
    Ok(())
}

impl Host {
    /// Namespaces for the sandbox (beyond the cell's PID namespace), or why not: without the
    /// cell's PID namespace there are none, simulated or not.
    pub fn namespaces(&self, mechanism: &str) -> Result<(), Missing> {
        self.namespaces.clone().map_err(Missing::NoPidNamespace)?;
        if simulated_missing(mechanism) {
            return Err(Missing::Simulated);
        }
        Ok(())
    }

    pub fn landlock(&self) -> Result<i32, Missing> {
        if simulated_missing("landlock") {
            return Err(Missing::Simulated);
        }
        self.landlock.clone()
    }

    pub fn seccomp(&self) -> Result<(), Missing> {
        if simulated_missing("seccomp") {
            return Err(Missing::Simulated);
        }
        self.seccomp.clone()
    }
}
