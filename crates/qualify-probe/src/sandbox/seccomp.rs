//! The syscall layer: two seccomp-bpf programs (built with `seccompiler` in qualify, installed by
//! the program's process just before `exec`). Denied with `EPERM`: kernel keyrings, io_uring,
//! eBPF, perf events, userfaultfd, module and kexec loading, mounting and namespace changes
//! (`mount`, the new mount API, `unshare`, `setns`, `clone` with a namespace flag), swap,
//! accounting, reboot, quotas. `clone3` answers `ENOSYS` (its flags cannot be inspected; libc
//! falls back to `clone`). A syscall of another architecture (32-bit `int 0x80`) kills the
//! process. Everything else is allowed: the filter removes attack surface, it does not model a
//! program.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

use super::host::Missing;

/// The syscalls denied outright (names for the evidence).
#[cfg(target_arch = "x86_64")]
const DENIED: &[(&str, libc::c_long)] = &[
    ("keyctl", libc::SYS_keyctl),
    ("add_key", libc::SYS_add_key),
    ("request_key", libc::SYS_request_key),
    ("io_uring_setup", libc::SYS_io_uring_setup),
    ("io_uring_enter", libc::SYS_io_uring_enter),
    ("io_uring_register", libc::SYS_io_uring_register),
    ("bpf", libc::SYS_bpf),
    ("perf_event_open", libc::SYS_perf_event_open),
    ("userfaultfd", libc::SYS_userfaultfd),
    ("kexec_load", libc::SYS_kexec_load),
    ("kexec_file_load", libc::SYS_kexec_file_load),
    ("init_module", libc::SYS_init_module),
    ("finit_module", libc::SYS_finit_module),
    ("delete_module", libc::SYS_delete_module),
    ("mount", libc::SYS_mount),
    ("umount2", libc::SYS_umount2),
    ("pivot_root", libc::SYS_pivot_root),
    ("open_tree", libc::SYS_open_tree),
    ("move_mount", libc::SYS_move_mount),
    ("fsopen", libc::SYS_fsopen),
    ("fsconfig", libc::SYS_fsconfig),
    ("fsmount", libc::SYS_fsmount),
    ("fspick", libc::SYS_fspick),
    ("mount_setattr", libc::SYS_mount_setattr),
    ("unshare", libc::SYS_unshare),
    ("setns", libc::SYS_setns),
    ("swapon", libc::SYS_swapon),
    ("swapoff", libc::SYS_swapoff),
    ("acct", libc::SYS_acct),
    ("reboot", libc::SYS_reboot),
    ("quotactl", libc::SYS_quotactl),
];

#[cfg(not(target_arch = "x86_64"))]
const DENIED: &[(&str, libc::c_long)] = &[];

const NAMESPACE_FLAGS: [u64; 7] = [
    libc::CLONE_NEWUSER as u64,
    libc::CLONE_NEWNS as u64,
    libc::CLONE_NEWPID as u64,
    libc::CLONE_NEWNET as u64,
    libc::CLONE_NEWIPC as u64,
    libc::CLONE_NEWUTS as u64,
    libc::CLONE_NEWCGROUP as u64,
];

/// The policy in words, for the evidence.
pub(crate) fn policy() -> String {
    let names: Vec<&str> = DENIED.iter().map(|(n, _)| *n).collect();
    format!(
        "denied: {}, clone with a namespace flag (EPERM); clone3 (ENOSYS); other architectures' \
         syscalls kill the process",
        names.join(", ")
    )
}

/// The two programs, installed in order (compiled once per process).
pub(crate) fn programs() -> Result<Vec<BpfProgram>, Missing> {
    static ONCE: std::sync::OnceLock<Result<Vec<BpfProgram>, Missing>> = std::sync::OnceLock::new();
    ONCE.get_or_init(compile).clone()
}

fn compile() -> Result<Vec<BpfProgram>, Missing> {
    #[cfg(not(target_arch = "x86_64"))]
    {
        Err(Missing::SeccompArchitecture)
    }
    #[cfg(target_arch = "x86_64")]
    {
        let err = |e: seccompiler::BackendError| Missing::SeccompFilter(std::sync::Arc::new(e));
        let mut denied: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
        for (_, nr) in DENIED {
            denied.insert(*nr, Vec::new());
        }
        let mut clone_rules = Vec::new();
        for flag in NAMESPACE_FLAGS {
            let cond = SeccompCondition::new(
                0,
                SeccompCmpArgLen::Qword,
                SeccompCmpOp::MaskedEq(flag),
                flag,
            )
            .map_err(err)?;
            clone_rules.push(SeccompRule::new(vec![cond]).map_err(err)?);
        }
        denied.insert(libc::SYS_clone, clone_rules);
        let deny = SeccompFilter::new(
            denied,
            SeccompAction::Allow,
            SeccompAction::Errno(libc::EPERM as u32),
            TargetArch::x86_64,
        )
        .map_err(err)?;
        let mut clone3: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
        clone3.insert(libc::SYS_clone3, Vec::new());
        let no_clone3 = SeccompFilter::new(
            clone3,
            SeccompAction::Allow,
            SeccompAction::Errno(libc::ENOSYS as u32),
            TargetArch::x86_64,
        )
        .map_err(err)?;
        let a: BpfProgram = deny.try_into().map_err(err)?;
        let b: BpfProgram = no_clone3.try_into().map_err(err)?;
        Ok(vec![a, b])
    }
}

/// Install `program` on the calling thread (raw prctl; after `no_new_privs`).
pub(crate) fn install(program: &BpfProgram) -> Result<(), i32> {
    let prog = libc::sock_fprog {
        len: program.len() as u16,
        filter: program.as_ptr() as *mut libc::sock_filter,
    };
    // SAFETY: prog points at a valid filter that outlives the call.
    let r = unsafe {
        libc::prctl(
            libc::PR_SET_SECCOMP,
            libc::SECCOMP_MODE_FILTER as libc::c_ulong,
            &prog as *const libc::sock_fprog as libc::c_ulong,
            0,
            0,
        )
    };
    if r != 0 {
        return Err(crate::cell::errno());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_filter_builds_and_names_what_it_denies() {
        if cfg!(target_arch = "x86_64") {
            let progs = super::programs().unwrap();
            assert_eq!(progs.len(), 2);
            assert!(progs.iter().all(|p| !p.is_empty()));
        }
        let p = super::policy();
        assert!(p.contains("clone3"), "{p}");
    }
}
