//! Network namespaces for services under the sandbox. A service cell with `network =
//! "loopback"` gets one namespace ([`Netns::loopback`]: only its own loopback, up) shared by
//! the service, its dependencies and its readiness command (each probe joins it through
//! [`crate::sandbox::Network::Join`]); qualify's load generator, readiness check and fault
//! proxies reach the service from threads that joined it ([`Netns::enter`], or [`enter`] with
//! the service's [`crate::Control`]). Nothing is exposed on the host's interfaces: the service's
//! port exists only inside the namespace, which disappears with its last process and handle.
//!
//! Joining is per thread (`setns`); threads created after it inherit the namespace (the load
//! generator's extra event loops). [`Entered`] puts the thread back where it was when dropped.
//! Making and joining a namespace needs `CAP_SYS_ADMIN` (qualify as root).

use std::fs::File;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::Arc;

use crate::errno::Errno;

/// Why qualify could not make a network namespace (the service then shares qualify's network,
/// and its evidence says so with this reason).
#[derive(Debug, thiserror::Error)]
pub enum NetnsError {
    /// `netns` is listed in `QUALIFY_SIMULATE_MISSING`.
    #[error("network namespaces turned off by QUALIFY_SIMULATE_MISSING")]
    Simulated,
    /// `unshare(CLONE_NEWNET)` was refused (qualify is not root).
    #[error(transparent)]
    Unshare(std::io::Error),
    /// The new namespace's loopback could not be brought up.
    #[error("{0}")]
    LoopbackUp(Errno),
    /// The new namespace could not be opened to be kept (`/proc/thread-self/ns/net`).
    #[error(transparent)]
    Open(std::io::Error),
    #[error("the thread making a network namespace panicked")]
    Panicked,
}

/// A network namespace held open by qualify.
#[derive(Debug)]
pub struct Netns {
    fd: OwnedFd,
}

impl Netns {
    /// A new namespace with only its loopback interface, up. Made on a short-lived thread (the
    /// caller's thread stays where it is).
    pub fn loopback() -> Result<Arc<Netns>, NetnsError> {
        if crate::sandbox::simulated_missing("netns") {
            return Err(NetnsError::Simulated);
        }
        std::thread::spawn(|| -> Result<Netns, NetnsError> {
            // SAFETY: unsharing the network namespace of this (new, short-lived) thread only.
            if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
                return Err(NetnsError::Unshare(std::io::Error::last_os_error()));
            }
            loopback_up().map_err(|e| NetnsError::LoopbackUp(Errno(e)))?;
            let f = File::open("/proc/thread-self/ns/net").map_err(NetnsError::Open)?;
            Ok(Netns {
                fd: OwnedFd::from(f),
            })
        })
        .join()
        .map_err(|_| NetnsError::Panicked)?
        .map(Arc::new)
    }

    /// Adopt an open namespace fd (`/proc/PID/ns/net`).
    pub(crate) fn from_fd(fd: OwnedFd) -> Netns {
        Netns { fd }
    }

    pub(crate) fn fd(&self) -> i32 {
        self.fd.as_raw_fd()
    }

    /// Move the calling thread into this namespace for good: for a thread that exists to talk
    /// to the namespace (a fault proxy's, in its prelude).
    pub fn join(&self) -> std::io::Result<()> {
        // SAFETY: plain syscall on an fd we hold.
        if unsafe { libc::setns(self.fd.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    }

    /// Move the calling thread into this namespace until the returned guard is dropped.
    pub fn enter(&self) -> std::io::Result<Entered> {
        let back = File::open("/proc/thread-self/ns/net")?;
        // SAFETY: plain syscall on an fd we hold.
        if unsafe { libc::setns(self.fd.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Entered {
            back: OwnedFd::from(back),
        })
    }
}

/// The calling thread is inside a namespace; dropping this puts it back.
#[derive(Debug)]
pub struct Entered {
    back: OwnedFd,
}

impl Drop for Entered {
    fn drop(&mut self) {
        // SAFETY: plain syscall on an fd we hold; going back to where the thread was.
        unsafe { libc::setns(self.back.as_raw_fd(), libc::CLONE_NEWNET) };
    }
}

/// Join the network namespace of the probe `control` watches (when it has one of its own, or
/// shares a service cell's): the helper for the threads that talk to a service. `Ok(None)` when
/// the probe shares qualify's network (nothing to join).
pub fn enter(control: &crate::Control) -> std::io::Result<Option<Entered>> {
    match control.netns() {
        Some(n) => n.enter().map(Some),
        None => Ok(None),
    }
}

/// Bring `lo` up in the caller's network namespace (raw syscalls: used in the cell's init).
pub(crate) fn loopback_up() -> Result<(), i32> {
    // SAFETY: a local socket and ifreq; plain syscalls.
    unsafe {
        let s = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if s < 0 {
            return Err(crate::cell::errno());
        }
        let mut req: libc::ifreq = std::mem::zeroed();
        for (i, b) in b"lo".iter().enumerate() {
            req.ifr_name[i] = *b as libc::c_char;
        }
        req.ifr_ifru.ifru_flags = (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
        let r = libc::ioctl(s, libc::SIOCSIFFLAGS, &req);
        let e = crate::cell::errno();
        libc::close(s);
        if r != 0 {
            return Err(e);
        }
    }
    Ok(())
}
