//! What this host offers the sandbox, asked once per process: user and PID namespaces (from the
//! cell), the Landlock ABI, `mount_setattr` (recursive read-only, idmapped mounts), seccomp.
//! Each answer that is "no" carries the reason the evidence will state.

use std::sync::OnceLock;

use super::simulated_missing;

pub(crate) struct Host {
    pub root: bool,
    /// Namespaces can be made (a PID, mount and network namespace; with a user namespace when
    /// not root), else why not.
    pub namespaces: Result<(), String>,
    /// The Landlock ABI version, else why none.
    pub landlock: Result<i32, String>,
    /// `mount_setattr` (Linux 5.12): recursive read-only remount and idmapped mounts.
    pub mount_setattr: Result<(), String>,
    /// seccomp filters can be installed here (x86-64 only: the filter names syscall numbers).
    pub seccomp: Result<(), String>,
}

const SIMULATED: &str = "turned off by QUALIFY_SIMULATE_MISSING";

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

fn landlock_abi() -> Result<i32, String> {
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
    let e = std::io::Error::last_os_error();
    Err(match e.raw_os_error() {
        Some(libc::ENOSYS) => "the kernel has no Landlock (Linux 5.13+ built with it)".into(),
        Some(libc::EOPNOTSUPP) => {
            "Landlock is built into the kernel but not enabled (add it to the lsm= boot \
             parameter)"
                .into()
        }
        _ => format!("Landlock is unavailable: {e}"),
    })
}

fn mount_setattr() -> Result<(), String> {
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
    let e = std::io::Error::last_os_error();
    if r < 0 && e.raw_os_error() == Some(libc::ENOSYS) {
        return Err("the kernel has no mount_setattr (Linux 5.12+)".into());
    }
    Ok(())
}

fn seccomp() -> Result<(), String> {
    if !cfg!(target_arch = "x86_64") {
        return Err("the seccomp filter is written for x86-64 only".into());
    }
    // SAFETY: plain prctl query.
    let r = unsafe { libc::prctl(libc::PR_GET_SECCOMP, 0, 0, 0, 0) };
    if r < 0 {
        return Err(format!(
            "the kernel has no seccomp: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}

impl Host {
    /// Namespaces for the sandbox (beyond the cell's PID namespace), or why not.
    pub fn namespaces(&self, mechanism: &str) -> Result<(), String> {
        if simulated_missing(mechanism) {
            return Err(SIMULATED.into());
        }
        self.namespaces.clone()
    }

    pub fn landlock(&self) -> Result<i32, String> {
        if simulated_missing("landlock") {
            return Err(SIMULATED.into());
        }
        self.landlock.clone()
    }

    pub fn seccomp(&self) -> Result<(), String> {
        if simulated_missing("seccomp") {
            return Err(SIMULATED.into());
        }
        self.seccomp.clone()
    }
}

pub(crate) fn simulated() -> &'static str {
    SIMULATED
}
