//! The sandbox's self-test: a probe (same sandbox as the cells) whose program is built in —
//! raw system calls in the program's process instead of an `exec`, so it needs no binary that the
//! sandbox might hide — and tries what the artifact must not do: read a canary in a hidden path,
//! list the held-out directory, create a file outside its workdir, connect to a listener qualify
//! opened on the host's loopback and to one it bound to a path on the host (a unix socket),
//! signal qualify, and count the processes `/proc` shows. Each
//! attempt that got through downgrades the layer that should have stopped it, in the returned
//! enforcement.

use std::ffi::CString;
use std::net::{Ipv4Addr, TcpListener};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::result::Strength;
use crate::sandbox::SandboxEnforcement;
use crate::{CancelToken, ProbeError, ProbeResult, ProbeSpec};

/// What the built-in program tries (prepared before the fork).
#[derive(Debug)]
pub(crate) struct Builtin {
    canary: CString,
    holdout: Option<CString>,
    outside: CString,
    port: u16,
    /// A unix socket qualify listens on, by path (`sockaddr_un`'s path, NUL-padded).
    unix: Option<[u8; 108]>,
    qualify: i32,
}

/// What the self-test found: the shared vocabulary's, so the receipt's record holds it as written.
pub use qualify_model::selftest::{Attempt, SelfTest};

/// What to try: a canary file inside a hidden path, the held-out directory (if any), a path
/// outside the workdir to create, a path on the host to bind a unix socket to (a directory the
/// sandbox neither hides nor makes private: the attempt must meet the socket hiding itself).
pub struct Targets {
    pub canary: PathBuf,
    pub holdout: Option<PathBuf>,
    pub outside: PathBuf,
    pub socket: Option<PathBuf>,
}

fn c(p: &Path) -> Result<CString, ProbeError> {
    CString::new(p.as_os_str().as_bytes()).map_err(|_| ProbeError::NulByte {
        what: "self-test path",
        text: p.display().to_string(),
    })
}

/// Run the self-test under `base`'s sandbox (its limits and hidden paths).
pub fn run(
    base: &ProbeSpec,
    targets: &Targets,
    cancel: &CancelToken,
) -> Result<(SelfTest, ProbeResult), ProbeError> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .map_err(|e| ProbeError::io("self-test: opening a loopback listener", e))?;
    let port = listener
        .local_addr()
        .map_err(|e| ProbeError::io("self-test: the listener's port", e))?
        .port();
    // Bound before the sandbox is prepared, as any host service's socket would be.
    let unix = match &targets.socket {
        Some(p) => {
            let _ = std::fs::remove_file(p);
            let bytes = p.as_os_str().as_bytes();
            if bytes.len() >= 108 {
                None
            } else {
                std::os::unix::net::UnixListener::bind(p).ok().map(|l| {
                    use std::os::unix::fs::PermissionsExt;
                    let _ = std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o777));
                    let mut path = [0u8; 108];
                    path[..bytes.len()].copy_from_slice(bytes);
                    (l, path)
                })
            }
        }
        None => None,
    };
    let builtin = Builtin {
        canary: c(&targets.canary)?,
        holdout: targets.holdout.as_deref().map(c).transpose()?,
        outside: c(&targets.outside)?,
        port,
        unix: unix.as_ref().map(|(_, p)| *p),
        qualify: std::process::id() as i32,
    };
    let mut spec = base.clone();
    spec.argv = vec!["qualify-self-test".into()];
    spec.control = None;
    spec.limits.timeout_seconds = 30.0;
    spec.limits.stall_seconds = 10.0;
    let r = crate::supervise::run_with(&spec, cancel, Some(&builtin));
    drop(listener);
    if unix.is_some()
        && let Some(p) = &targets.socket
    {
        let _ = std::fs::remove_file(p);
    }
    drop(unix);
    // A create that succeeded escaped only if the file reached the host's filesystem: outside a
    // workdir under /tmp it lands in the sandbox's own tmpfs, which vanished with the cell.
    let on_host = targets.outside.symlink_metadata().is_ok();
    let _ = std::fs::remove_file(&targets.outside);
    let r = r?;
    let mut t = parse(&r.stdout_tail, &builtin, targets);
    if !on_host && t.write_outside.result == "created the file" {
        t.write_outside.blocked = true;
        t.write_outside.result =
            "created only in the sandbox's private filesystem (nothing reached the host)".into();
    }
    let mut enforcement = r.enforcement.sandbox.clone();
    if let Some(e) = enforcement.as_mut() {
        downgrade(e, &t);
    }
    t.enforcement = enforcement;
    Ok((t, r))
}

fn attempt(target: String, errno: Option<i32>, success: &str) -> Attempt {
    match errno {
        Some(0) => Attempt {
            target,
            blocked: false,
            result: success.to_string(),
        },
        Some(e) => Attempt {
            target,
            blocked: true,
            result: std::io::Error::from_raw_os_error(e).to_string(),
        },
        None => Attempt {
            target,
            blocked: false,
            result: "not tried (the self-test did not report it)".into(),
        },
    }
}

fn parse(out: &str, b: &Builtin, t: &Targets) -> SelfTest {
    let get = |key: &str| {
        out.lines().find_map(|l| {
            let (k, v) = l.split_once(' ')?;
            (k == key).then(|| v.trim().parse::<i64>().ok())?
        })
    };
    let errno = |key: &str| get(key).map(|v| v as i32);
    SelfTest {
        read_hidden: attempt(
            format!("read {}", t.canary.display()),
            errno("read"),
            "read the canary",
        ),
        list_holdout: t.holdout.as_ref().map(|_| {
            attempt(
                "list the held-out directory".to_string(),
                errno("holdout"),
                "listed the held-out checks",
            )
        }),
        write_outside: attempt(
            format!("create {}", t.outside.display()),
            errno("write"),
            "created the file",
        ),
        connect_host: attempt(
            format!("connect 127.0.0.1:{} (a listener on the host)", b.port),
            errno("connect"),
            "connected",
        ),
        connect_unix: match (&t.socket, b.unix) {
            (Some(p), Some(_)) => Some(attempt(
                format!("connect {} (a unix socket bound on the host)", p.display()),
                errno("unix"),
                "connected",
            )),
            _ => None,
        },
        signal_qualify: attempt(
            format!("kill -0 {} (qualify)", b.qualify),
            errno("kill"),
            "qualify could be signalled",
        ),
        processes_visible: get("proc").and_then(|v| u64::try_from(v).ok()),
        enforcement: None,
    }
}

/// A layer whose attempt got through is not enforced, whatever was set up.
fn downgrade(e: &mut SandboxEnforcement, t: &SelfTest) {
    let why = |a: &Attempt| format!("the self-test got through: {} ({})", a.target, a.result);
    if !t.read_hidden.blocked || t.list_holdout.as_ref().is_some_and(|a| !a.blocked) {
        let a = if t.read_hidden.blocked {
            t.list_holdout.as_ref().unwrap_or(&t.read_hidden)
        } else {
            &t.read_hidden
        };
        e.hidden.layer.downgrade(why(a));
        for p in e.hidden.paths.values_mut().flatten() {
            p.by.clear();
        }
    }
    if !t.write_outside.blocked {
        e.filesystem.downgrade(why(&t.write_outside));
    }
    if !t.connect_host.blocked && e.network.enforced == Strength::Kernel {
        e.network.downgrade(why(&t.connect_host));
    }
    if let Some(a) = t.connect_unix.as_ref().filter(|a| !a.blocked)
        && e.network.enforced == Strength::Kernel
    {
        e.network.downgrade(why(a));
    }
    if !t.signal_qualify.blocked {
        e.pid.downgrade(why(&t.signal_qualify));
    }
}

impl Builtin {
    /// In the program's process instead of `exec`: try everything, print `key errno` lines
    /// (0: it worked) on stdout, exit 0.
    ///
    /// # Safety
    /// Raw system calls only (see `cell::raw`).
    pub(crate) unsafe fn run(&self) -> ! {
        // SAFETY: raw syscalls on prepared strings and local buffers.
        unsafe {
            let e = || crate::cell::errno();
            let fd = libc::open(self.canary.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC);
            let read = if fd >= 0 {
                let mut b = [0u8; 16];
                let n = libc::read(fd, b.as_mut_ptr().cast(), b.len());
                libc::close(fd);
                if n > 0 { 0 } else { libc::ENODATA }
            } else {
                e()
            };
            report(b"read ", read as i64);
            if let Some(h) = &self.holdout {
                let listed = count_entries(h, false);
                // Only `.` and `..` (an empty directory over it) is hidden.
                report(
                    b"holdout ",
                    match listed {
                        Ok(n) if n > 2 => 0,
                        Ok(_) => libc::ENOENT as i64,
                        Err(err) => err as i64,
                    },
                );
            }
            let fd = libc::open(
                self.outside.as_ptr(),
                libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_CLOEXEC,
                0o600,
            );
            let write = if fd >= 0 {
                libc::close(fd);
                0
            } else {
                e()
            };
            report(b"write ", write as i64);
            let s = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
            let connect = if s < 0 {
                e()
            } else {
                let addr = libc::sockaddr_in {
                    sin_family: libc::AF_INET as libc::sa_family_t,
                    sin_port: self.port.to_be(),
                    sin_addr: libc::in_addr {
                        s_addr: u32::from(Ipv4Addr::LOCALHOST).to_be(),
                    },
                    sin_zero: [0; 8],
                };
                let r = libc::connect(
                    s,
                    (&addr as *const libc::sockaddr_in).cast(),
                    std::mem::size_of::<libc::sockaddr_in>() as u32,
                );
                let err = if r == 0 { 0 } else { e() };
                libc::close(s);
                err
            };
            report(b"connect ", connect as i64);
            if let Some(path) = &self.unix {
                let s = libc::socket(libc::AF_UNIX, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
                let connect = if s < 0 {
                    e()
                } else {
                    let mut addr: libc::sockaddr_un = std::mem::zeroed();
                    addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
                    for (i, b) in path.iter().enumerate() {
                        addr.sun_path[i] = *b as libc::c_char;
                    }
                    let r = libc::connect(
                        s,
                        (&addr as *const libc::sockaddr_un).cast(),
                        std::mem::size_of::<libc::sockaddr_un>() as u32,
                    );
                    let err = if r == 0 { 0 } else { e() };
                    libc::close(s);
                    err
                };
                report(b"unix ", connect as i64);
            }
            let kill = if libc::kill(self.qualify, 0) == 0 {
                0
            } else {
                e()
            };
            report(b"kill ", kill as i64);
            if let Ok(n) = count_entries(c"/proc", true) {
                report(b"proc ", n as i64);
            }
            libc::_exit(0);
        }
    }
}

/// Entries of a directory (only numeric names with `numeric`), by raw `getdents64`.
fn count_entries(dir: &std::ffi::CStr, numeric: bool) -> Result<u64, i32> {
    // SAFETY: raw syscalls on a local buffer.
    unsafe {
        let fd = libc::open(
            dir.as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
        );
        if fd < 0 {
            return Err(crate::cell::errno());
        }
        let mut buf = [0u8; 8192];
        let mut count = 0u64;
        loop {
            let n = libc::syscall(libc::SYS_getdents64, fd, buf.as_mut_ptr(), buf.len());
            if n < 0 {
                let err = crate::cell::errno();
                libc::close(fd);
                return Err(err);
            }
            if n == 0 {
                break;
            }
            let mut off = 0usize;
            while off + 19 < n as usize {
                let reclen = u16::from_ne_bytes([buf[off + 16], buf[off + 17]]) as usize;
                if reclen == 0 {
                    break;
                }
                let name = &buf[off + 19..(off + reclen).min(buf.len())];
                let first = name.first().copied().unwrap_or(0);
                if !numeric || first.is_ascii_digit() {
                    count += 1;
                }
                off += reclen;
            }
        }
        libc::close(fd);
        Ok(count)
    }
}

/// Write `key value\n` to stdout without allocating.
fn report(key: &[u8], value: i64) {
    let mut buf = [0u8; 64];
    let mut n = 0;
    for &b in key {
        if n < buf.len() {
            buf[n] = b;
            n += 1;
        }
    }
    let mut digits = [0u8; 20];
    let mut d = 0;
    let mut v = value.unsigned_abs();
    if value < 0 && n < buf.len() {
        buf[n] = b'-';
        n += 1;
    }
    loop {
        digits[d] = b'0' + (v % 10) as u8;
        d += 1;
        v /= 10;
        if v == 0 || d == digits.len() {
            break;
        }
    }
    while d > 0 && n < buf.len() {
        d -= 1;
        buf[n] = digits[d];
        n += 1;
    }
    if n < buf.len() {
        buf[n] = b'\n';
        n += 1;
    }
    crate::cell::write_all(1, &buf[..n]);
}
