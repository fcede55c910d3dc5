//! The generator's event loops run ahead of the machine's other work: an open-model generator
//! sleeps until each arrival is due, and on a machine whose other processes keep the cores
//! busy the woken thread waited tens of milliseconds for a CPU — arrivals went out late, the
//! run was "saturated" and no evidence about the service. Where the process may (root, or
//! `CAP_SYS_NICE`), each event-loop thread runs at nice [`GENERATOR_NICE`] for the load and is
//! put back afterwards; elsewhere nothing changes and the lag is reported as before. The
//! generator uses little CPU (it mostly waits), so this takes little from the service.

/// The nice value of a generator's event-loop thread during a load (the default is 0).
pub const GENERATOR_NICE: i32 = -10;

/// Holds the calling thread at [`GENERATOR_NICE`] until dropped, then restores its nice value.
pub(crate) struct Raised {
    tid: libc::id_t,
    before: Option<i32>,
}

impl Raised {
    /// Raise the calling thread's priority if the process may; a no-op otherwise.
    pub(crate) fn now() -> Raised {
        // A thread's id is its own `PRIO_PROCESS` target on Linux.
        let tid = nix::unistd::gettid().as_raw() as libc::id_t;
        let before = current(tid);
        let raised = match before {
            Some(nice) if nice > GENERATOR_NICE => {
                // SAFETY: setpriority reads no memory of ours; it changes only this thread's
                // nice value, or fails with EPERM/EACCES and changes nothing.
                let rc = unsafe { libc::setpriority(libc::PRIO_PROCESS, tid, GENERATOR_NICE) };
                rc == 0
            }
            _ => false,
        };
        Raised {
            tid,
            before: if raised { before } else { None },
        }
    }
}

impl Drop for Raised {
    fn drop(&mut self) {
        if let Some(nice) = self.before {
            // SAFETY: as above; lowering a priority is always allowed.
            unsafe {
                libc::setpriority(libc::PRIO_PROCESS, self.tid, nice);
            }
        }
    }
}

/// The thread's nice value (`None` when it cannot be read).
fn current(tid: libc::id_t) -> Option<i32> {
    // getpriority returns the nice value, and -1 both for nice -1 and for an error: errno
    // tells them apart.
    nix::errno::Errno::clear();
    // SAFETY: getpriority reads no memory of ours.
    let nice = unsafe { libc::getpriority(libc::PRIO_PROCESS, tid) };
    (nice != -1 || nix::errno::Errno::last_raw() == 0).then_some(nice)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Raised for the load, restored after: as root the thread runs at -10 meanwhile; without
    /// the privilege nothing changes.
    #[test]
    fn the_priority_is_raised_where_allowed_and_put_back() {
        std::thread::spawn(|| {
            let tid = nix::unistd::gettid().as_raw() as libc::id_t;
            let before = current(tid).expect("read nice");
            {
                let _raised = Raised::now();
                let during = current(tid).expect("read nice");
                // SAFETY: geteuid reads nothing of ours.
                if unsafe { libc::geteuid() } == 0 {
                    assert_eq!(during, GENERATOR_NICE.min(before));
                } else {
                    assert!(during >= GENERATOR_NICE);
                }
            }
            assert_eq!(current(tid), Some(before));
        })
        .join()
        .expect("the test thread");
    }
}
