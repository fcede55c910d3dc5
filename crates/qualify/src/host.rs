//! Facts about the machine qualify runs on, for the receipt's `tested` section and the
//! scheduler's core budget.

use qualify_evidence::Machine;

/// CPUs this process may run on (affinity), at least 1.
pub fn allowed_cores() -> usize {
    nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0))
        .map(|set| {
            (0..nix::sched::CpuSet::count())
                .filter(|&i| set.is_set(i).unwrap_or(false))
                .count()
        })
        .unwrap_or(1)
        .max(1)
}

fn online_cores() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    if n > 0 {
        n as u64
    } else {
        allowed_cores() as u64
    }
}

fn memory_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "unknown".into())
}

/// This machine, as tested.
pub fn machine(backend: String) -> Machine {
    Machine {
        hostname: hostname(),
        cores_online: online_cores(),
        cores_allowed: Some(allowed_cores() as u64),
        nodes: 1,
        memory_bytes: memory_bytes(),
        backend,
    }
}
