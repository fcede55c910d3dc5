//! Starting the probed program: its own process group, a parent-death signal, membership of the
//! probe's cgroups before `exec`, stdin from /dev/null, stdout/stderr into pipes, and the
//! environment tag that lets qualify recognise its descendants without cgroups.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};

use crate::{ProbeError, ProbeSpec};

/// Environment variable carrying the probe's id into every descendant.
pub const TAG_KEY: &str = "QUALIFY_PROBE_ID";

pub fn spawn(
    spec: &ProbeSpec,
    tag: &str,
    join: &[File],
    extra_env: &[(String, String)],
) -> Result<Child, ProbeError> {
    let Some(program) = spec.argv.first() else {
        return Err(ProbeError::EmptyCommand);
    };
    let mut cmd = Command::new(program);
    cmd.args(&spec.argv[1..])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env_clear()
        .envs(spec.sandbox.inherited_env())
        .env(TAG_KEY, tag)
        .process_group(0);
    for (k, v) in &spec.env {
        cmd.env(k, v);
    }
    for (k, v) in extra_env {
        cmd.env(k, v);
    }
    if let Some(dir) = &spec.workdir {
        cmd.current_dir(dir);
    }
    let fds: Vec<i32> = join.iter().map(|f| f.as_raw_fd()).collect();
    // SAFETY: getpid has no preconditions.
    let parent = unsafe { libc::getpid() };
    // SAFETY: the closure only calls async-signal-safe functions (prctl, getppid, write) on
    // memory prepared before fork.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            ) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            if libc::getppid() != parent {
                // qualify died between fork and prctl: nobody would supervise us.
                libc::_exit(127);
            }
            for &fd in &fds {
                let buf = b"0\n";
                if libc::write(fd, buf.as_ptr().cast(), buf.len()) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
    let name = program.to_string_lossy().into_owned();
    cmd.spawn().map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => ProbeError::CommandNotFound { program: name },
        std::io::ErrorKind::PermissionDenied => ProbeError::CannotExecute {
            program: name,
            source: e,
        },
        _ if e.raw_os_error() == Some(libc::ENOEXEC) => ProbeError::CannotExecute {
            program: name,
            source: e,
        },
        _ => ProbeError::io(format!("starting `{name}` (joining its cgroups)"), e),
    })
}
