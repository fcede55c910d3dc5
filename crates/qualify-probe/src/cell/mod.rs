//! The cell: every probed program runs under a small init process that qualify forks (without
//! `exec`) as the first process of a new PID namespace. The init starts the program as its child,
//! reports the program's exit status, reaps everything the tree orphans, and holds the read end
//! of a *life pipe* whose only writer is qualify. When qualify dies by any signal — SIGKILL
//! included — the pipe reaches end of file: the init kills every process of its namespace
//! (`kill(-1, SIGKILL)` as pid 1), reaps them, removes the probe's cgroups and exits; and when
//! the init itself dies the kernel kills whatever is left in the namespace. Nothing the program
//! started can leave the namespace, so nothing outlives qualify.
//!
//! Without a PID namespace (an ordinary user on a host without user namespaces, or the layer
//! turned off) the init is a child subreaper instead: orphans re-parent to it, and on qualify's
//! death it kills its children until none is left.
//!
//! What the classifier sees does not change: the main process is the program (its exit status
//! and rusage come from the init's report), the tree is the program and its descendants (the
//! init is outside it and outside the probe's cgroups), every pid is a host pid.
//!
//! Everything the forked processes do is prepared here before the fork (strings, fds, mount
//! and credential plans); after it, the init and the program's process make raw system calls
//! only — no allocation, no locks — because they are copies of a multi-threaded process.
//! [`raw`] holds that code.

mod raw;

use std::ffi::{CString, OsStr, OsString};
use std::fs::File;
use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::errno::Errno;
use crate::sandbox::Plan as SandboxPlan;
use crate::{ProbeError, ProbeSpec};

pub(crate) use raw::{Stage, Step, clone_raw, close_others, errno, write_all};

/// How the tree is held when qualify dies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Guard {
    /// The init is pid 1 of a PID namespace.
    PidNamespace,
    /// No PID namespace (why): the init is a child subreaper.
    Subreaper(NoPidNamespace),
}

/// Why a cell has no PID namespace: the text `enforcement.on_qualify_death` and the sandbox's
/// `pid` layer state.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoPidNamespace {
    #[error("turned off by QUALIFY_SIMULATE_MISSING")]
    Simulated,
    /// As root, the kernel refused `CLONE_NEWPID`.
    #[error("the kernel refused a PID namespace: {0}")]
    Refused(Errno),
    /// Not root: a PID namespace needs a user namespace, and the kernel refused one.
    #[error(
        "not root, and the kernel refused an unprivileged user namespace: {0} (enable user \
         namespaces, e.g. sysctl kernel.unprivileged_userns_clone=1)"
    )]
    UserNamespaceRefused(Errno),
    /// The host allows them, but this cell's were refused when it started (e.g. a limit on
    /// namespaces reached).
    #[error("the kernel refused the namespaces: {0}")]
    RefusedAtStart(Errno),
}

impl Guard {
    /// The sentence for `enforcement.on_qualify_death`.
    pub fn describe(&self) -> String {
        match self {
            Guard::PidNamespace => "killed: the tree lives in a PID namespace whose init exits \
                                    with qualify (a life pipe), taking every process with it"
                .into(),
            Guard::Subreaper(why) => format!(
                "killed by a subreaper init that outlives qualify briefly and kills its children \
                 until none is left (no PID namespace: {why}); a process that leaves the tree \
                 through a service manager is not seen"
            ),
        }
    }
}

/// A started cell: the init (our child) and the program's process (the init's child).
pub struct Cell {
    /// Host pid of the init.
    pub init: i32,
    /// Host pid of the program (the probe's main process).
    pub main: i32,
    pub guard: Guard,
    /// The program's stdout and stderr.
    pub stdout: Option<File>,
    pub stderr: Option<File>,
    /// The init's reports (the program's exit); readable when it ended, EOF when the init died.
    report: File,
    /// qualify's end of the life pipe: closing it (qualify dying) makes the init kill the tree.
    life: Option<File>,
    /// The program's network namespace, when it has its own (open for joining).
    pub netns: Option<OwnedFd>,
    status: Option<(Option<i32>, libc::rusage)>,
    init_rusage: Option<libc::rusage>,
    reaped: bool,
}

/// A message of the init: the program's exit status and rusage.
#[repr(C)]
#[derive(Clone, Copy)]
struct Report {
    kind: u32,
    status: i32,
    rusage: libc::rusage,
}

const FORKED: u32 = 1;
const EXITED: u32 = 2;

/// A setup step that failed in the init or the program's process.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct Failure {
    stage: u32,
    index: u32,
    errno: i32,
}

/// What the forked processes need, prepared before the fork.
pub(crate) struct Prepared<'a> {
    pub program: CString,
    pub argv: Vec<CString>,
    pub argv_ptrs: Vec<*const libc::c_char>,
    pub envp: Vec<CString>,
    pub envp_ptrs: Vec<*const libc::c_char>,
    pub cwd: Option<CString>,
    pub stdin: OwnedFd,
    pub stdout_w: OwnedFd,
    pub stderr_w: OwnedFd,
    pub life_r: OwnedFd,
    pub report_w: OwnedFd,
    pub fail_w: OwnedFd,
    pub go_r: OwnedFd,
    /// `cgroup.procs` files the program writes `0` into before `exec`.
    pub join: Vec<RawFd>,
    /// Cgroup directories the init removes when qualify died: (its parent, opened by qualify —
    /// the init's own view of `/sys` may be read-only —, its name).
    pub cgroup_dirs: Vec<(RawFd, CString)>,
    /// `uid_map`/`gid_map` lines when the init is in a new user namespace.
    pub maps: Option<(CString, CString)>,
    pub pidns: bool,
    /// The init is in a new mount namespace (the sandbox's mount steps run only then).
    pub newns: bool,
    pub sandbox: Option<&'a SandboxPlan>,
    /// A built-in program run instead of `exec` (the sandbox's self-test).
    pub builtin: Option<&'a crate::selftest::Builtin>,
    /// Every fd the init keeps (sorted); all others are closed first thing.
    pub keep: Vec<RawFd>,
    /// qualify's command line and environment in the init's copy of its memory (start, end):
    /// wiped first thing, so that `/proc/1/cmdline` of the cell shows nothing of qualify's
    /// flags (a held-out directory, a key) and `/proc/1/environ` nothing of its variables.
    pub wipe: [(usize, usize); 2],
}

/// Where qualify's command line and environment lie in its memory (`/proc/self/stat` fields
/// 48–51), read once; empty areas when they cannot be read.
fn own_areas() -> [(usize, usize); 2] {
    static AREAS: std::sync::OnceLock<[(usize, usize); 2]> = std::sync::OnceLock::new();
    *AREAS.get_or_init(|| {
        let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
            return [(0, 0); 2];
        };
        let Some(after) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
            return [(0, 0); 2];
        };
        // Fields from the 3rd (state) on: arg_start is the 48th field, env_end the 51st.
        let f: Vec<usize> = after
            .split_whitespace()
            .skip(45)
            .take(4)
            .filter_map(|v| v.parse().ok())
            .collect();
        match f.as_slice() {
            [a, b, c, d] if a <= b && c <= d => [(*a, *b), (*c, *d)],
            _ => [(0, 0); 2],
        }
    })
}

fn cstring(s: &OsStr, what: &'static str) -> Result<CString, ProbeError> {
    CString::new(s.as_bytes()).map_err(|_| ProbeError::NulByte {
        what,
        text: s.to_string_lossy().into_owned(),
    })
}

fn pipe() -> Result<(OwnedFd, OwnedFd), ProbeError> {
    let mut fds = [0; 2];
    // SAFETY: two valid out-slots; O_CLOEXEC so no exec'd process inherits them.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(ProbeError::io(
            "creating a pipe for the probed program",
            std::io::Error::last_os_error(),
        ));
    }
    // SAFETY: both fds were just created and are ours.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Find `program` the way `execvp` would: a name with a slash is used as given (relative to the
/// workdir); otherwise the first executable file of that name in `PATH` (the program's
/// environment's `PATH` when the spec sets one).
pub(crate) fn resolve(
    program: &OsStr,
    path_var: Option<&OsStr>,
    workdir: Option<&Path>,
) -> Option<PathBuf> {
    resolve_visible(program, path_var, workdir, &|_| false)
}

/// [`resolve`], skipping `PATH` directories the sandbox hides (`hidden`): a command is found
/// where the sandboxed program could run it.
pub(crate) fn resolve_visible(
    program: &OsStr,
    path_var: Option<&OsStr>,
    workdir: Option<&Path>,
    hidden: &dyn Fn(&Path) -> bool,
) -> Option<PathBuf> {
    if program.as_bytes().contains(&b'/') {
        return Some(PathBuf::from(program));
    }
    let default = OsString::from("/usr/local/bin:/usr/bin:/bin");
    let path_var = path_var.unwrap_or(&default);
    for dir in std::env::split_paths(path_var) {
        let dir = if dir.as_os_str().is_empty() {
            PathBuf::from(".")
        } else {
            dir
        };
        let candidate = dir.join(program);
        let on_disk = match (candidate.is_relative(), workdir) {
            (true, Some(w)) => w.join(&candidate),
            _ => candidate.clone(),
        };
        if hidden(&on_disk) {
            continue;
        }
        if is_executable_file(&on_disk) {
            return Some(candidate);
        }
    }
    None
}

fn is_executable_file(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// What [`launch`] is asked to start.
pub(crate) struct Launch<'a> {
    pub spec: &'a ProbeSpec,
    /// Added to the environment after the spec's own (tag, heartbeat).
    pub extra_env: &'a [(String, String)],
    /// `cgroup.procs` files to join.
    pub join: &'a [File],
    /// The probe's cgroup directories (removed by the init if qualify dies).
    pub cgroup_dirs: Vec<PathBuf>,
    pub sandbox: Option<&'a SandboxPlan>,
    pub builtin: Option<&'a crate::selftest::Builtin>,
}

/// Whether this host lets qualify make the namespaces a cell needs, decided once: `Ok` with the
/// extra `clone` flags (a user namespace for an ordinary user), `Err` with the reason.
fn namespaces_possible() -> &'static Result<libc::c_int, NoPidNamespace> {
    static ONCE: std::sync::OnceLock<Result<libc::c_int, NoPidNamespace>> =
        std::sync::OnceLock::new();
    ONCE.get_or_init(|| {
        if crate::sandbox::simulated_missing("pidns") {
            return Err(NoPidNamespace::Simulated);
        }
        // SAFETY: geteuid has no preconditions.
        let root = unsafe { libc::geteuid() } == 0;
        let flags = if root { 0 } else { libc::CLONE_NEWUSER };
        raw::try_namespaces(libc::CLONE_NEWPID | flags)
            .map(|()| flags)
            .map_err(|errno| {
                if root {
                    NoPidNamespace::Refused(Errno(errno))
                } else {
                    NoPidNamespace::UserNamespaceRefused(Errno(errno))
                }
            })
    })
}

/// The clone flags a cell gets on this host and, without a PID namespace, why not.
pub(crate) fn base_flags() -> (libc::c_int, Option<NoPidNamespace>) {
    match namespaces_possible() {
        Ok(user) => (libc::CLONE_NEWPID | user, None),
        Err(why) => (0, Some(why.clone())),
    }
}

/// Start the program of `l.spec` in a new cell.
pub(crate) fn launch(l: &Launch<'_>) -> Result<Cell, ProbeError> {
    let spec = l.spec;
    let Some(program) = spec.argv.first() else {
        return Err(ProbeError::EmptyCommand);
    };
    let name = program.to_string_lossy().into_owned();
    let env_path = spec
        .env
        .iter()
        .rev()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| v.clone())
        .or_else(|| std::env::var_os("PATH"));
    let workdir = spec.workdir.as_deref();
    let resolved = if l.builtin.is_some() {
        PathBuf::from(program)
    } else {
        l.sandbox
            .and_then(|sb| resolve_visible(program, env_path.as_deref(), workdir, &|p| sb.hides(p)))
            // Found only where the sandbox hides it: `check_visible` says so.
            .or_else(|| resolve(program, env_path.as_deref(), workdir))
            .ok_or_else(|| ProbeError::CommandNotFound {
                program: name.clone(),
            })?
    };
    if let Some(sb) = l.sandbox
        && l.builtin.is_none()
    {
        sb.check_visible(&resolved, workdir, &name)?;
        sb.check_interpreters(&resolved, env_path.as_deref(), workdir, &name)?;
        sb.check_command(&spec.argv, workdir)?;
    }

    // The environment: what the sandbox lets through of qualify's, then the spec's, then the
    // tag and extras (last one wins).
    let mut env: Vec<(OsString, OsString)> = spec.sandbox.inherited_env();
    let mut set = |k: OsString, v: OsString| {
        env.retain(|(key, _)| *key != k);
        env.push((k, v));
    };
    for (k, v) in &spec.env {
        set(k.clone(), v.clone());
    }
    for (k, v) in l.extra_env {
        set(k.into(), v.into());
    }
    let mut envp = Vec::with_capacity(env.len());
    for (k, v) in &env {
        let mut kv = k.as_bytes().to_vec();
        kv.push(b'=');
        kv.extend_from_slice(v.as_bytes());
        envp.push(cstring(OsStr::from_bytes(&kv), "environment variable")?);
    }
    let argv: Vec<CString> = spec
        .argv
        .iter()
        .map(|a| cstring(a, "argument"))
        .collect::<Result<_, _>>()?;
    let program_c = cstring(resolved.as_os_str(), "program")?;
    // Always enter the workdir by path: an inherited working directory would still point at
    // the mount it was on before the sandbox's mounts covered it.
    let cwd = spec
        .workdir
        .clone()
        .or_else(|| std::env::current_dir().ok())
        .map(|w| cstring(w.as_os_str(), "workdir"))
        .transpose()?;

    // qualify's streams (stdin from /dev/null, stdout and stderr into pipes), or the ones the
    // spec hands over (a held-out check's, for the artifact it starts).
    let dup = |fd: &OwnedFd| {
        fd.try_clone()
            .map_err(|e| ProbeError::io("taking over the program's stdin/stdout/stderr", e))
    };
    let (stdin, stdout_r, stdout_w, stderr_r, stderr_w) = match &spec.stdio {
        Some(io) => (dup(&io[0])?, None, dup(&io[1])?, None, dup(&io[2])?),
        None => {
            let devnull = File::open("/dev/null")
                .map_err(|e| ProbeError::io("opening /dev/null for the program's stdin", e))?;
            let (stdout_r, stdout_w) = pipe()?;
            let (stderr_r, stderr_w) = pipe()?;
            (
                OwnedFd::from(devnull),
                Some(stdout_r),
                stdout_w,
                Some(stderr_r),
                stderr_w,
            )
        }
    };
    let (life_r, life_w) = pipe()?;
    let (report_r, report_w) = pipe()?;
    let (fail_r, fail_w) = pipe()?;
    let (go_r, go_w) = pipe()?;

    let (mut flags, no_ns) = base_flags();
    let mut guard = match no_ns {
        None => Guard::PidNamespace,
        Some(why) => Guard::Subreaper(why),
    };
    if let Some(sb) = l.sandbox {
        flags |= sb.clone_flags(flags & libc::CLONE_NEWPID != 0);
    }
    let maps = if flags & libc::CLONE_NEWUSER != 0 {
        // SAFETY: getuid/getgid have no preconditions.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        Some((
            CString::new(format!("{uid} {uid} 1")).unwrap_or_default(),
            CString::new(format!("{gid} {gid} 1")).unwrap_or_default(),
        ))
    } else {
        None
    };
    let join: Vec<RawFd> = l.join.iter().map(AsRawFd::as_raw_fd).collect();
    let mut parents: Vec<File> = Vec::new();
    let mut cgroup_dirs: Vec<(RawFd, CString)> = Vec::new();
    for d in &l.cgroup_dirs {
        let (Some(parent), Some(name)) = (d.parent(), d.file_name()) else {
            continue;
        };
        let Ok(name) = CString::new(name.as_bytes()) else {
            continue;
        };
        use std::os::unix::fs::OpenOptionsExt;
        if let Ok(f) = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECTORY | libc::O_CLOEXEC)
            .open(parent)
        {
            cgroup_dirs.push((f.as_raw_fd(), name));
            parents.push(f);
        }
    }
    let mut keep: Vec<RawFd> = vec![
        stdin.as_raw_fd(),
        stdout_w.as_raw_fd(),
        stderr_w.as_raw_fd(),
        life_r.as_raw_fd(),
        report_w.as_raw_fd(),
        fail_w.as_raw_fd(),
        go_r.as_raw_fd(),
    ];
    keep.extend(&join);
    keep.extend(cgroup_dirs.iter().map(|(fd, _)| *fd));
    if let Some(sb) = l.sandbox {
        keep.extend(sb.fds());
    }
    keep.sort_unstable();
    keep.dedup();

    let mut prepared = Prepared {
        program: program_c,
        argv_ptrs: Vec::new(),
        argv,
        envp_ptrs: Vec::new(),
        envp,
        cwd,
        stdin,
        stdout_w,
        stderr_w,
        life_r,
        report_w,
        fail_w,
        go_r,
        join,
        cgroup_dirs,
        maps,
        pidns: flags & libc::CLONE_NEWPID != 0,
        newns: flags & libc::CLONE_NEWNS != 0,
        sandbox: l.sandbox,
        builtin: l.builtin,
        keep,
        wipe: own_areas(),
    };
    prepared.argv_ptrs = prepared.argv.iter().map(|a| a.as_ptr()).collect();
    prepared.argv_ptrs.push(std::ptr::null());
    prepared.envp_ptrs = prepared.envp.iter().map(|a| a.as_ptr()).collect();
    prepared.envp_ptrs.push(std::ptr::null());

    // SAFETY: the child runs only raw system calls on `prepared` (see `raw`), then exits.
    let init = unsafe { raw::start_init(&prepared, flags) };
    let init = match init {
        Ok(pid) => pid,
        Err(errno) if flags != 0 && l.sandbox.is_none() && no_ns_errno(errno) => {
            // The namespaces were refused for this cell (e.g. a limit on namespaces reached):
            // a subreaper init still holds the tree. (A sandboxed cell is never started with
            // less than its plan states: that is an error instead.)
            guard = Guard::Subreaper(NoPidNamespace::RefusedAtStart(Errno(errno)));
            prepared.pidns = false;
            prepared.newns = false;
            prepared.maps = None;
            // SAFETY: as above.
            unsafe { raw::start_init(&prepared, 0) }.map_err(|e| {
                ProbeError::io(
                    format!("starting `{name}`"),
                    std::io::Error::from_raw_os_error(e),
                )
            })?
        }
        Err(errno) => {
            return Err(ProbeError::io(
                format!("starting `{name}`"),
                std::io::Error::from_raw_os_error(errno),
            ));
        }
    };
    // The child's ends are the child's now (and it has its own copies of the cgroup parents).
    drop(parents);
    let Prepared {
        stdin,
        stdout_w,
        stderr_w,
        life_r,
        report_w,
        fail_w,
        go_r,
        ..
    } = prepared;
    drop((stdin, stdout_w, stderr_w, life_r, report_w, fail_w, go_r));

    let mut cell = Cell {
        init,
        main: 0,
        guard,
        stdout: stdout_r.map(File::from),
        stderr: stderr_r.map(File::from),
        report: File::from(report_r),
        life: Some(File::from(life_w)),
        netns: None,
        status: None,
        init_rusage: None,
        reaped: false,
    };
    let mut fail = File::from(fail_r);
    let failed = |cell: &mut Cell, fail: &mut File| -> ProbeError {
        let f = read_failure(fail);
        cell.kill();
        cell.reap(Duration::from_secs(5));
        failure_error(f, &name, l)
    };
    // 1. The init forked the program's process (or failed setting up).
    match read_report(&mut cell.report) {
        Some(r) if r.kind == FORKED => {}
        _ => return Err(failed(&mut cell, &mut fail)),
    }
    // 2. Its host pid: the init's only child, which waits for our go.
    match only_child(init) {
        Some(pid) => cell.main = pid,
        None => return Err(failed(&mut cell, &mut fail)),
    }
    if flags & libc::CLONE_NEWNET != 0 {
        cell.netns = File::open(format!("/proc/{init}/ns/net"))
            .ok()
            .map(OwnedFd::from);
    }
    let mut go = File::from(go_w);
    use std::io::Write;
    if go.write_all(b"g").is_err() {
        return Err(failed(&mut cell, &mut fail));
    }
    drop(go);
    // 3. The program runs once the failure pipe closes without a word (exec closed it).
    let mut buf = [0u8; std::mem::size_of::<Failure>()];
    match fail.read(&mut buf) {
        Ok(0) => Ok(cell),
        _ => {
            let f = failure_from(&buf);
            cell.kill();
            cell.reap(Duration::from_secs(5));
            Err(failure_error(Some(f), &name, l))
        }
    }
}

fn no_ns_errno(errno: i32) -> bool {
    matches!(
        errno,
        libc::EPERM | libc::EINVAL | libc::ENOSPC | libc::EUSERS
    )
}

fn read_report(f: &mut File) -> Option<Report> {
    let mut buf = [0u8; std::mem::size_of::<Report>()];
    f.read_exact(&mut buf).ok()?;
    // SAFETY: Report is plain old data of exactly this size, written by the init.
    Some(unsafe { std::ptr::read_unaligned(buf.as_ptr().cast::<Report>()) })
}

fn failure_from(buf: &[u8; std::mem::size_of::<Failure>()]) -> Failure {
    // SAFETY: Failure is plain old data of exactly this size.
    unsafe { std::ptr::read_unaligned(buf.as_ptr().cast::<Failure>()) }
}

fn read_failure(f: &mut File) -> Option<Failure> {
    let mut buf = [0u8; std::mem::size_of::<Failure>()];
    f.read_exact(&mut buf).ok()?;
    Some(failure_from(&buf))
}

/// The error for a failed start: exec errors as the probe always reported them, setup steps
/// named with what they touched.
fn failure_error(f: Option<Failure>, name: &str, l: &Launch<'_>) -> ProbeError {
    let Some(f) = f else {
        return ProbeError::InitEnded {
            program: name.to_string(),
        };
    };
    let err = std::io::Error::from_raw_os_error(f.errno);
    let stage = Stage::from_u32(f.stage);
    match stage {
        Some(Stage::Exec) => match f.errno {
            libc::ENOENT => ProbeError::CommandNotFound {
                program: name.to_string(),
            },
            libc::EACCES | libc::ENOEXEC | libc::EPERM => ProbeError::CannotExecute {
                program: name.to_string(),
                source: err,
            },
            _ => ProbeError::io(format!("starting `{name}`"), err),
        },
        Some(Stage::Chdir) => ProbeError::io(
            format!(
                "starting `{name}`: cannot enter the workdir {}",
                l.spec
                    .workdir
                    .as_deref()
                    .map(|p| p.display().to_string())
                    .unwrap_or_default()
            ),
            err,
        ),
        Some(Stage::Cgroup) => {
            ProbeError::io(format!("starting `{name}` (joining its cgroups)"), err)
        }
        Some(s) => {
            let what = l
                .sandbox
                .map(|sb| sb.describe_step(s, f.index))
                .unwrap_or_else(|| s.describe().to_string());
            ProbeError::io(format!("starting `{name}`: {what}"), err)
        }
        None => ProbeError::io(format!("starting `{name}`"), err),
    }
}

/// The single child of `pid` (from `/proc/PID/task/PID/children`).
fn only_child(pid: i32) -> Option<i32> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).ok()?;
    let mut it = text.split_whitespace().filter_map(|s| s.parse().ok());
    let first = it.next()?;
    it.next().is_none().then_some(first)
}

impl Cell {
    /// The report fd: readable when the program ended (or the init died).
    pub fn report_fd(&self) -> RawFd {
        self.report.as_raw_fd()
    }

    /// The program's exit status and rusage once it ended (`(None, zero)` if the init died
    /// without saying: the status is lost). Non-blocking.
    pub fn try_status(&mut self) -> Option<(Option<i32>, libc::rusage)> {
        if self.status.is_some() {
            return self.status;
        }
        let mut pfd = libc::pollfd {
            fd: self.report.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd, no wait.
        if unsafe { libc::poll(&mut pfd, 1, 0) } <= 0 {
            return None;
        }
        match read_report(&mut self.report) {
            Some(r) if r.kind == EXITED => self.status = Some((Some(r.status), r.rusage)),
            // SAFETY: a zeroed rusage is valid.
            _ => self.status = Some((None, unsafe { std::mem::zeroed() })),
        }
        self.status
    }

    /// Kill everything in the cell: the init's namespace goes with it (or, as a subreaper, it
    /// kills its children first).
    pub fn kill(&mut self) {
        if self.reaped {
            return;
        }
        match self.guard {
            Guard::PidNamespace => {
                // SAFETY: plain syscall; the init is our unreaped child, so its pid is ours.
                unsafe { libc::kill(self.init, libc::SIGKILL) };
            }
            Guard::Subreaper(_) => {
                if let Some(life) = self.life.as_mut() {
                    use std::io::Write;
                    if life.write_all(b"K").is_err() {
                        // SAFETY: as above.
                        unsafe { libc::kill(self.init, libc::SIGKILL) };
                    }
                }
            }
        }
    }

    /// Wait (up to `budget`) for the init to end and reap it: when it has, every process of a
    /// PID namespace is gone. Returns the init's rusage, which includes every process it reaped.
    pub fn reap(&mut self, budget: Duration) -> Option<libc::rusage> {
        if self.reaped {
            return self.init_rusage;
        }
        let deadline = Instant::now() + budget;
        // Woken when the init ends (its pidfd becomes readable) instead of polling.
        // SAFETY: plain syscall; on success the fd is ours.
        let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, self.init, 0) };
        let pidfd = (pidfd >= 0).then(|| {
            // SAFETY: a fresh fd we own.
            unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(pidfd as RawFd) }
        });
        loop {
            let mut status = 0;
            // SAFETY: zeroed rusage is a valid out-parameter.
            let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
            // SAFETY: plain syscall with valid pointers.
            let r = unsafe { libc::wait4(self.init, &mut status, libc::WNOHANG, &mut ru) };
            if r == self.init {
                self.reaped = true;
                self.init_rusage = Some(ru);
                return self.init_rusage;
            }
            if r < 0 {
                self.reaped = true;
                return None;
            }
            if Instant::now() >= deadline {
                return None;
            }
            match &pidfd {
                Some(fd) => {
                    let mut pfd = libc::pollfd {
                        fd: fd.as_raw_fd(),
                        events: libc::POLLIN,
                        revents: 0,
                    };
                    let left = deadline.saturating_duration_since(Instant::now());
                    let ms = left.as_millis().clamp(1, 100) as i32;
                    // SAFETY: one valid pollfd.
                    unsafe { libc::poll(&mut pfd, 1, ms) };
                }
                None => std::thread::sleep(Duration::from_millis(1)),
            }
        }
    }
}

impl Drop for Cell {
    /// A cell is never left behind: kill, reap, and only then let the life pipe close.
    fn drop(&mut self) {
        if !self.reaped {
            self.kill();
            if self.reap(Duration::from_secs(5)).is_none() && !self.reaped {
                // The init would not die (a process in uninterruptible sleep): closing the life
                // pipe still makes it clean up on its own once it can.
            }
        }
        self.life.take();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_like_execvp() {
        let path = OsString::from("/nonexistent:/bin:/usr/bin");
        let sh = resolve(OsStr::new("sh"), Some(&path), None).unwrap();
        assert!(sh.ends_with("sh") && sh.is_absolute(), "{sh:?}");
        assert_eq!(
            resolve(OsStr::new("./x"), Some(&path), None),
            Some(PathBuf::from("./x"))
        );
        assert_eq!(
            resolve(OsStr::new("no-such-prog-q"), Some(&path), None),
            None
        );
    }

    #[test]
    fn qualifys_command_line_is_found_in_its_memory() {
        let [(a, b), (c, d)] = own_areas();
        assert!(a < b && b <= c && c <= d, "{a:x} {b:x} {c:x} {d:x}");
        // SAFETY: the area the kernel names as this process's command line.
        let args = unsafe { std::slice::from_raw_parts(a as *const u8, b - a) };
        let first = std::env::args_os().next().unwrap();
        use std::os::unix::ffi::OsStrExt;
        assert!(args.starts_with(first.as_bytes()));
    }

    #[test]
    fn reports_and_failures_fit_an_atomic_pipe_write() {
        assert!(std::mem::size_of::<Report>() <= libc::PIPE_BUF);
        assert!(std::mem::size_of::<Failure>() <= libc::PIPE_BUF);
    }
}
