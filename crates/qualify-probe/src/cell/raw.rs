//! The code that runs after the fork, in the init and in the program's process: raw system
//! calls on memory prepared before the fork, nothing else (no allocation, no locks, no panics —
//! the processes are copies of a multi-threaded qualify, so another thread may have held any
//! lock at the instant of the fork). Forks here are raw `clone` calls, so no `atfork` handler
//! runs either. A step that fails writes a [`super::Failure`] (stage, index, errno) to the
//! failure pipe and exits 127.

use super::{EXITED, FORKED, Failure, Prepared, Report};

/// A setup step, as reported when it fails.
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    CloseFds = 1,
    UserMap,
    /// A mount step of the sandbox (index: the step).
    Mount,
    Proc,
    Network,
    Signals,
    Fork,
    Session,
    Stdio,
    Cgroup,
    Chdir,
    Credentials,
    Capabilities,
    NoNewPrivs,
    Landlock,
    Seccomp,
    Go,
    Exec,
}

impl Stage {
    pub fn from_u32(v: u32) -> Option<Stage> {
        use Stage::*;
        [
            CloseFds,
            UserMap,
            Mount,
            Proc,
            Network,
            Signals,
            Fork,
            Session,
            Stdio,
            Cgroup,
            Chdir,
            Credentials,
            Capabilities,
            NoNewPrivs,
            Landlock,
            Seccomp,
            Go,
            Exec,
        ]
        .into_iter()
        .find(|s| *s as u32 == v)
    }

    pub fn describe(self) -> &'static str {
        match self {
            Stage::CloseFds => "closing inherited file descriptors",
            Stage::UserMap => "mapping the user in a new user namespace",
            Stage::Mount => "setting up the sandbox's mounts",
            Stage::Proc => "mounting /proc for the PID namespace",
            Stage::Network => "bringing up the loopback interface",
            Stage::Signals => "setting up the init's signals",
            Stage::Fork => "forking the program's process",
            Stage::Session => "starting a new session",
            Stage::Stdio => "connecting stdin/stdout/stderr",
            Stage::Cgroup => "joining the probe's cgroups",
            Stage::Chdir => "entering the workdir",
            Stage::Credentials => "switching to the sandbox's user",
            Stage::Capabilities => "dropping capabilities",
            Stage::NoNewPrivs => "setting no_new_privs",
            Stage::Landlock => "applying the Landlock ruleset",
            Stage::Seccomp => "installing the seccomp filter",
            Stage::Go => "waiting for qualify",
            Stage::Exec => "executing the program",
        }
    }
}

/// A failed step: (stage, index, errno).
pub type Step = (Stage, u32, i32);

pub fn errno() -> i32 {
    // SAFETY: reading errno of the calling thread.
    unsafe { *libc::__errno_location() }
}

/// `fork` as a raw system call (no atfork handlers), with extra `clone` flags.
///
/// # Safety
/// The child may only make raw system calls.
pub unsafe fn clone_raw(flags: libc::c_int) -> libc::c_long {
    // SAFETY: clone with a null stack behaves like fork; the argument order of the remaining
    // (zero) arguments does not matter.
    unsafe {
        libc::syscall(
            libc::SYS_clone,
            (flags | libc::SIGCHLD) as libc::c_ulong,
            0usize,
            0usize,
            0usize,
            0usize,
        )
    }
}

/// Whether `clone(flags)` works here: a child that exits at once.
pub fn try_namespaces(flags: libc::c_int) -> Result<(), i32> {
    // SAFETY: the child only calls _exit.
    let pid = unsafe { clone_raw(flags) };
    if pid < 0 {
        return Err(errno());
    }
    if pid == 0 {
        // SAFETY: ends the child.
        unsafe { libc::_exit(0) };
    }
    let mut status = 0;
    // SAFETY: reaping our own child.
    unsafe { libc::waitpid(pid as i32, &mut status, 0) };
    Ok(())
}

/// Start the init with `flags`. Returns its host pid, or the errno of `clone`.
///
/// # Safety
/// `p` must stay valid (it is copied into the child by the fork).
pub unsafe fn start_init(p: &Prepared<'_>, flags: libc::c_int) -> Result<i32, i32> {
    // SAFETY: the child runs `init_main`, which only makes raw system calls and never returns.
    let pid = unsafe { clone_raw(flags) };
    if pid < 0 {
        return Err(errno());
    }
    if pid == 0 {
        // SAFETY: in the child.
        unsafe { init_main(p) }
    }
    Ok(pid as i32)
}

pub fn write_all(fd: i32, bytes: &[u8]) -> bool {
    let mut off = 0;
    while off < bytes.len() {
        // SAFETY: valid buffer slice.
        let n = unsafe { libc::write(fd, bytes[off..].as_ptr().cast(), bytes.len() - off) };
        if n < 0 {
            if errno() == libc::EINTR {
                continue;
            }
            return false;
        }
        off += n as usize;
    }
    true
}

fn as_bytes<T: Copy>(v: &T) -> &[u8] {
    // SAFETY: T is plain old data (repr(C) structs of integers).
    unsafe { std::slice::from_raw_parts((v as *const T).cast::<u8>(), std::mem::size_of::<T>()) }
}

/// Report a failed step and exit.
fn fail(p: &Prepared<'_>, (stage, index, errno): Step) -> ! {
    let f = Failure {
        stage: stage as u32,
        index,
        errno,
    };
    write_all(std::os::fd::AsRawFd::as_raw_fd(&p.fail_w), as_bytes(&f));
    // SAFETY: ends the process.
    unsafe { libc::_exit(127) }
}

/// Close every fd except the sorted `keep`.
pub fn close_others(keep: &[i32]) -> Result<(), i32> {
    let mut lo: u32 = 0;
    for &k in keep {
        let k = k as u32;
        if k > lo {
            close_range(lo, k - 1)?;
        }
        lo = k + 1;
    }
    close_range(lo, u32::MAX)
}

fn close_range(lo: u32, hi: u32) -> Result<(), i32> {
    // SAFETY: plain syscall.
    let r = unsafe { libc::syscall(libc::SYS_close_range, lo, hi, 0u32) };
    if r == 0 {
        return Ok(());
    }
    if errno() != libc::ENOSYS {
        return Err(errno());
    }
    // Old kernels: close one by one up to the fd limit.
    // SAFETY: zeroed rlimit is a valid out-parameter.
    let mut rl: libc::rlimit = unsafe { std::mem::zeroed() };
    // SAFETY: plain syscall.
    let max = if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl) } == 0 {
        rl.rlim_cur.min(1 << 20) as u32
    } else {
        4096
    };
    let mut fd = lo;
    while fd <= hi && fd < max {
        // SAFETY: closing an fd we may or may not have.
        unsafe { libc::close(fd as i32) };
        fd += 1;
    }
    Ok(())
}

/// Write `bytes` to the file at `path` (a NUL-terminated C string).
pub fn write_file(path: &std::ffi::CStr, bytes: &[u8]) -> Result<(), i32> {
    // SAFETY: valid C string.
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(errno());
    }
    let ok = write_all(fd, bytes);
    let e = errno();
    // SAFETY: our fd.
    unsafe { libc::close(fd) };
    if ok { Ok(()) } else { Err(e) }
}

fn sleep_ms(ms: i64) {
    let ts = libc::timespec {
        tv_sec: ms / 1000,
        tv_nsec: (ms % 1000) * 1_000_000,
    };
    // SAFETY: valid timespec.
    unsafe { libc::nanosleep(&ts, std::ptr::null_mut()) };
}

fn now_ms() -> i64 {
    // SAFETY: zeroed timespec is a valid out-parameter.
    let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
    // SAFETY: plain syscall.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec * 1000 + ts.tv_nsec / 1_000_000
}

/// Block every signal; return a signalfd for SIGCHLD.
fn signals() -> Result<i32, i32> {
    // SAFETY: sigset operations on a local set, then plain syscalls.
    unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        if libc::sigprocmask(libc::SIG_BLOCK, &all, std::ptr::null_mut()) != 0 {
            return Err(errno());
        }
        let mut chld: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut chld);
        libc::sigaddset(&mut chld, libc::SIGCHLD);
        let fd = libc::signalfd(-1, &chld, libc::SFD_CLOEXEC | libc::SFD_NONBLOCK);
        if fd < 0 {
            return Err(errno());
        }
        Ok(fd)
    }
}

/// # Safety
/// Only in the freshly forked init.
unsafe fn init_main(p: &Prepared<'_>) -> ! {
    use std::os::fd::AsRawFd;
    for (start, end) in p.wipe {
        if end > start {
            // SAFETY: the kernel's own record of where this process's (a copy of qualify's)
            // command line and environment lie; nothing in the init reads them.
            unsafe { std::ptr::write_bytes(start as *mut u8, 0, end - start) };
        }
    }
    if let Err(e) = close_others(&p.keep) {
        fail(p, (Stage::CloseFds, 0, e));
    }
    if let Some((uid_map, gid_map)) = &p.maps {
        let steps: [(&std::ffi::CStr, &[u8]); 3] = [
            (c"/proc/self/setgroups", b"deny"),
            (c"/proc/self/uid_map", uid_map.as_bytes()),
            (c"/proc/self/gid_map", gid_map.as_bytes()),
        ];
        for (i, (path, bytes)) in steps.iter().enumerate() {
            if let Err(e) = write_file(path, bytes) {
                fail(p, (Stage::UserMap, i as u32, e));
            }
        }
    }
    if let Some(sb) = p.sandbox
        // SAFETY: we are the init, in the new namespaces.
        && let Err(step) = unsafe { sb.setup_init(p.newns) }
    {
        fail(p, step);
    }
    let sigfd = match signals() {
        Ok(fd) => fd,
        Err(e) => fail(p, (Stage::Signals, 0, e)),
    };
    // SAFETY: plain prctl calls.
    unsafe {
        if !p.pidns {
            libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
        }
        libc::prctl(libc::PR_SET_NAME, c"qualify-init".as_ptr(), 0, 0, 0);
    }
    // SAFETY: the child runs `main_child` (raw system calls only).
    let main = unsafe { clone_raw(0) };
    if main < 0 {
        fail(p, (Stage::Fork, 0, errno()));
    }
    if main == 0 {
        // SAFETY: in the program's process.
        unsafe { main_child(p) }
    }
    let main = main as i32;
    // The program's ends are the program's; the init keeps the life pipe and the report pipe.
    // SAFETY: closing fds this process holds.
    unsafe {
        for fd in [
            p.stdin.as_raw_fd(),
            p.stdout_w.as_raw_fd(),
            p.stderr_w.as_raw_fd(),
            p.fail_w.as_raw_fd(),
            p.go_r.as_raw_fd(),
        ] {
            libc::close(fd);
        }
        for &fd in &p.join {
            libc::close(fd);
        }
        if let Some(sb) = p.sandbox {
            for &fd in sb.fds() {
                libc::close(fd);
            }
        }
    }
    let report = p.report_w.as_raw_fd();
    // SAFETY: a zeroed rusage is valid.
    let forked = Report {
        kind: FORKED,
        status: 0,
        rusage: unsafe { std::mem::zeroed() },
    };
    write_all(report, as_bytes(&forked));
    let life = p.life_r.as_raw_fd();
    let mut fds = [
        libc::pollfd {
            fd: life,
            events: libc::POLLIN,
            revents: 0,
        },
        libc::pollfd {
            fd: sigfd,
            events: libc::POLLIN,
            revents: 0,
        },
    ];
    loop {
        // SAFETY: two valid pollfds.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) };
        if n < 0 {
            continue;
        }
        if fds[1].revents != 0 {
            let mut info = [0u8; 128];
            // SAFETY: draining the non-blocking signalfd into a local buffer.
            while unsafe { libc::read(sigfd, info.as_mut_ptr().cast(), info.len()) } > 0 {}
            reap_reporting(main, report);
        }
        if fds[0].revents != 0 {
            let mut b = 0u8;
            // SAFETY: one byte into a local.
            let r = unsafe { libc::read(life, (&mut b as *mut u8).cast(), 1) };
            if r < 0 && errno() == libc::EINTR {
                continue;
            }
            kill_tree(p.pidns);
            if !(r == 1 && b == b'K') {
                // qualify is gone: nobody else will remove the probe's cgroups.
                remove_dirs(p);
            }
            // SAFETY: ends the init.
            unsafe { libc::_exit(0) };
        }
    }
}

/// Reap every ended child; report the program's status and rusage when it is among them.
fn reap_reporting(main: i32, report: i32) {
    loop {
        let mut status = 0;
        // SAFETY: zeroed rusage is a valid out-parameter.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: plain syscall.
        let r = unsafe { libc::wait4(-1, &mut status, libc::WNOHANG, &mut ru) };
        if r <= 0 {
            return;
        }
        if r == main {
            let rep = Report {
                kind: EXITED,
                status,
                rusage: ru,
            };
            write_all(report, as_bytes(&rep));
        }
    }
}

/// Kill every process of the cell and reap it, within a few seconds. In a PID namespace pid 1's
/// `kill(-1)` reaches all of them; a subreaper kills its children until none is left (orphans
/// re-parent to it as their parents die).
fn kill_tree(pidns: bool) {
    let give_up = now_ms() + 5000;
    let mut buf = [0u8; 4096];
    loop {
        if pidns {
            // SAFETY: plain syscall.
            unsafe { libc::kill(-1, libc::SIGKILL) };
        } else {
            // SAFETY: a fixed path, a local buffer.
            let fd = unsafe {
                libc::open(
                    c"/proc/thread-self/children".as_ptr(),
                    libc::O_RDONLY | libc::O_CLOEXEC,
                )
            };
            if fd >= 0 {
                // SAFETY: reading into a local buffer.
                let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
                // SAFETY: our fd.
                unsafe { libc::close(fd) };
                let n = if n > 0 { n as usize } else { 0 };
                let mut pid: i32 = 0;
                let mut digits = false;
                for &c in buf.iter().take(n).chain(std::iter::once(&b' ')) {
                    if c.is_ascii_digit() {
                        pid = pid.saturating_mul(10).saturating_add((c - b'0') as i32);
                        digits = true;
                    } else if digits {
                        // SAFETY: plain syscall.
                        unsafe { libc::kill(pid, libc::SIGKILL) };
                        pid = 0;
                        digits = false;
                    }
                }
            }
        }
        let mut status = 0;
        let any_left = loop {
            // SAFETY: plain syscall.
            let r = unsafe { libc::wait4(-1, &mut status, libc::WNOHANG, std::ptr::null_mut()) };
            if r <= 0 {
                break r == 0;
            }
        };
        if !any_left || now_ms() >= give_up {
            return;
        }
        sleep_ms(1);
    }
}

/// Remove the probe's cgroups (they empty a moment after their last task is reaped).
fn remove_dirs(p: &Prepared<'_>) {
    let give_up = now_ms() + 2000;
    for (parent, name) in &p.cgroup_dirs {
        loop {
            // SAFETY: an fd we keep and a valid C string.
            if unsafe { libc::unlinkat(*parent, name.as_ptr(), libc::AT_REMOVEDIR) } == 0
                || errno() == libc::ENOENT
            {
                break;
            }
            if now_ms() >= give_up {
                break;
            }
            sleep_ms(10);
        }
    }
}

/// Make `fd` the program's `target` fd (0, 1, 2), inheritable across exec.
fn dup_to(fd: i32, target: i32) -> Result<(), i32> {
    // SAFETY: plain syscalls.
    unsafe {
        if fd == target {
            let flags = libc::fcntl(fd, libc::F_GETFD);
            if flags < 0 || libc::fcntl(fd, libc::F_SETFD, flags & !libc::FD_CLOEXEC) < 0 {
                return Err(errno());
            }
            return Ok(());
        }
        if libc::dup2(fd, target) < 0 {
            return Err(errno());
        }
    }
    Ok(())
}

/// # Safety
/// Only in the freshly forked program's process.
unsafe fn main_child(p: &Prepared<'_>) -> ! {
    use std::os::fd::AsRawFd;
    // SAFETY: plain syscalls on locals and prepared memory.
    unsafe {
        let mut none: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut none);
        libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
        // Rust ignores SIGPIPE in qualify; an ignored signal would stay ignored across exec.
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        if !p.pidns {
            // Without a namespace the init's death must still reach the program.
            libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            );
        }
        if libc::setsid() < 0 {
            fail(p, (Stage::Session, 0, errno()));
        }
        for (i, &fd) in p.join.iter().enumerate() {
            if !write_all(fd, b"0\n") {
                fail(p, (Stage::Cgroup, i as u32, errno()));
            }
        }
        let mut b = 0u8;
        loop {
            let r = libc::read(p.go_r.as_raw_fd(), (&mut b as *mut u8).cast(), 1);
            if r == 1 {
                break;
            }
            if r < 0 && errno() == libc::EINTR {
                continue;
            }
            // qualify went away before the start: nobody supervises us.
            libc::_exit(127);
        }
        for (fd, target) in [
            (p.stdin.as_raw_fd(), 0),
            (p.stdout_w.as_raw_fd(), 1),
            (p.stderr_w.as_raw_fd(), 2),
        ] {
            if let Err(e) = dup_to(fd, target) {
                fail(p, (Stage::Stdio, target as u32, e));
            }
        }
        if let Some(cwd) = &p.cwd
            && libc::chdir(cwd.as_ptr()) != 0
        {
            fail(p, (Stage::Chdir, 0, errno()));
        }
        if let Some(sb) = p.sandbox
            && let Err(step) = sb.setup_main()
        {
            fail(p, step);
        }
        if let Some(b) = p.builtin {
            // The failure pipe closes as if the program had been executed.
            libc::close(p.fail_w.as_raw_fd());
            b.run();
        }
        libc::execve(
            p.program.as_ptr(),
            p.argv_ptrs.as_ptr(),
            p.envp_ptrs.as_ptr(),
        );
        fail(p, (Stage::Exec, 0, errno()));
    }
}
