//! The machine qualify runs on, as the receipt's `tested` section states it: the facts come from
//! the environment fingerprint where one was taken (read once per run), the hostname and the
//! affinity mask otherwise.

use qualify_evidence::Machine;
use qualify_trust::Fingerprint;

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "unknown".into())
}

/// This machine, as tested.
pub fn machine(backend: String, fingerprint: Option<&Fingerprint>) -> Machine {
    let allowed = qualify_probe::allowed_cpus() as u64;
    Machine {
        hostname: hostname(),
        cores_online: fingerprint.and_then(|f| f.cores_online).unwrap_or(allowed),
        cores_allowed: fingerprint.and_then(|f| f.cores_allowed).or(Some(allowed)),
        nodes: 1,
        memory_bytes: fingerprint.and_then(|f| f.memory_bytes),
        backend,
    }
}
