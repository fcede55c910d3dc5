//! qualify's end of `$QUALIFY_RUN` (the binary's `qualify-artifact`, the other end, speaks [`Request`] and [`Answer`]): while a held-out check runs, a
//! unix socket (in the directory of private layers, hidden from every cell) is bound into the
//! check's private `/tmp` with qualify's own executable beside it; each connection asks for one
//! run of the artifact, which qualify starts as it starts a cell — the spec's sandbox (held-out
//! directory hidden, a fresh private layer over the workdir), the artifact's environment, the
//! spec's limits — with the check's stdin, stdout and stderr, in the check's network namespace
//! (so a check can talk to a service it started), and answers with how it ended. A check that
//! ends takes its artifact runs with it (the connection closes).

use std::ffi::OsString;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::JoinHandle;

use nix::sys::socket::{ControlMessageOwned, MsgFlags, recvmsg};
use qualify_probe::{CancelToken, Control, ProbeSpec};
use serde::{Deserialize, Serialize};

use crate::error::Error;

/// The name qualify's executable is bound under in a held-out check's sandbox.
pub const NAME: &str = "qualify-artifact";
/// Where, in a held-out check's private `/tmp`, the executable and the socket are.
pub const DIR: &str = "/tmp/.qualify";
/// The variable naming the socket.
pub const SOCKET_VAR: &str = "QUALIFY_RUN_SOCKET";

/// The request.
#[derive(Debug, Serialize, Deserialize)]
pub struct Request {
    pub argv: Vec<String>,
}

/// The answer.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Answer {
    Exit(i32),
    Signal(i32),
    Error(String),
}

/// Artifact runs one check may have at once.
const MAX_AT_ONCE: usize = 8;

/// The server of one held-out check.
pub struct Runner {
    /// The check's directory: the socket and a link named `qualify-artifact`.
    dir: PathBuf,
    socket: PathBuf,
    exe: PathBuf,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Runner {
    /// Listen for `base`'s artifact runs (`base`: the artifact's probe without a program), in
    /// the network namespace of the check `check` watches once it has one.
    pub fn start(
        base: ProbeSpec,
        check: Arc<Control>,
        cancel: CancelToken,
    ) -> Result<Runner, Error> {
        static SEQ: AtomicUsize = AtomicUsize::new(0);
        let root = qualify_probe::sandbox::layer::layers_root();
        // One directory per check, named at random: without a mount namespace the check
        // reaches it by its path (traversable, not listable).
        let name = {
            use std::hash::{BuildHasher, Hasher};
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_usize(SEQ.fetch_add(1, Ordering::Relaxed));
            format!("run-{}-{:016x}", std::process::id(), h.finish())
        };
        let dir = root.join(name);
        let cannot = |e: std::io::Error| {
            Error::output(
                format!(
                    "cannot open the held-out checks' way to the artifact in {}: {e}",
                    dir.display()
                ),
                None,
            )
        };
        use std::os::unix::fs::PermissionsExt;
        std::fs::create_dir_all(&dir).map_err(cannot)?;
        for d in [&root, &dir] {
            let _ = std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o711));
        }
        let socket = dir.join("run.sock");
        let listener = UnixListener::bind(&socket).map_err(cannot)?;
        // The check runs as the sandbox's user: it must be able to connect.
        let _ = std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o666));
        let exe = std::env::current_exe().map_err(cannot)?;
        // Where no mount namespace binds the executable in as `qualify-artifact`, a link of that
        // name stands in for it.
        std::os::unix::fs::symlink(&exe, dir.join(NAME)).map_err(cannot)?;
        listener.set_nonblocking(true).map_err(cannot)?;
        let stop = Arc::new(AtomicBool::new(false));
        let s = Arc::clone(&stop);
        let thread = std::thread::spawn(move || accept(listener, base, check, cancel, s));
        Ok(Runner {
            dir,
            socket,
            exe,
            stop,
            thread: Some(thread),
        })
    }

    /// What the check's sandbox gets: qualify's executable as `qualify-artifact`, the socket
    /// (bound into its private `/tmp` when it has one, `inside`).
    pub fn binds(&self, inside: bool) -> Vec<(PathBuf, PathBuf)> {
        if !inside {
            return Vec::new();
        }
        vec![
            (self.exe.clone(), PathBuf::from(format!("{DIR}/{NAME}"))),
            (
                self.socket.clone(),
                PathBuf::from(format!("{DIR}/run.sock")),
            ),
        ]
    }

    /// What the check's environment gets: `QUALIFY_RUN` (the command) and the socket, where
    /// the check sees them.
    pub fn env(&self, inside: bool) -> Vec<(OsString, OsString)> {
        let (run, socket) = if inside {
            (
                PathBuf::from(format!("{DIR}/{NAME}")),
                PathBuf::from(format!("{DIR}/run.sock")),
            )
        } else {
            (self.dir.join(NAME), self.socket.clone())
        };
        vec![
            ("QUALIFY_RUN".into(), run.into_os_string()),
            (SOCKET_VAR.into(), socket.into_os_string()),
        ]
    }
}

impl Drop for Runner {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn accept(
    listener: UnixListener,
    base: ProbeSpec,
    check: Arc<Control>,
    cancel: CancelToken,
    stop: Arc<AtomicBool>,
) {
    let busy = Arc::new(AtomicUsize::new(0));
    let mut handlers: Vec<JoinHandle<()>> = Vec::new();
    while !stop.load(Ordering::SeqCst) {
        let mut pfd = libc::pollfd {
            fd: listener.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        unsafe { libc::poll(&mut pfd, 1, 100) };
        let Ok((stream, _)) = listener.accept() else {
            continue;
        };
        let _ = stream.set_nonblocking(false);
        if busy.load(Ordering::SeqCst) >= MAX_AT_ONCE {
            answer(
                &stream,
                &Answer::Error(format!(
                    "more than {MAX_AT_ONCE} runs of the artifact at once from one check"
                )),
            );
            continue;
        }
        busy.fetch_add(1, Ordering::SeqCst);
        let (base, check, cancel, busy) = (
            base.clone(),
            Arc::clone(&check),
            Arc::clone(&cancel),
            Arc::clone(&busy),
        );
        handlers.push(std::thread::spawn(move || {
            serve(stream, base, &check, &cancel);
            busy.fetch_sub(1, Ordering::SeqCst);
        }));
        handlers.retain(|h| !h.is_finished());
    }
    for h in handlers {
        let _ = h.join();
    }
}

fn answer(stream: &UnixStream, a: &Answer) {
    if let Ok(mut line) = serde_json::to_string(a) {
        line.push('\n');
        let _ = (&*stream).write_all(line.as_bytes());
    }
}

/// One artifact run for the check on the other end of `stream`.
fn serve(stream: UnixStream, mut probe: ProbeSpec, check: &Control, cancel: &CancelToken) {
    let (request, stdio) = match receive(&stream) {
        Ok(r) => r,
        Err(why) => return answer(&stream, &Answer::Error(why.to_string())),
    };
    probe.argv = request.argv.into_iter().map(Into::into).collect();
    probe.stdio = Some(Arc::new(stdio));
    if let Some(n) = check.netns() {
        probe.sandbox.network = qualify_probe::Network::Join(n);
    }
    // Ended when qualify stops, or when the check's end of the connection goes.
    let mine: CancelToken = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicBool::new(false));
    let watcher = {
        let (mine, done, cancel) = (Arc::clone(&mine), Arc::clone(&done), Arc::clone(cancel));
        let fd = stream.as_raw_fd();
        std::thread::spawn(move || {
            while !done.load(Ordering::SeqCst) {
                let mut pfd = libc::pollfd {
                    fd,
                    events: 0,
                    revents: 0,
                };
                // SAFETY: one valid pollfd; the stream outlives this thread (joined below).
                unsafe { libc::poll(&mut pfd, 1, 100) };
                if pfd.revents & (libc::POLLHUP | libc::POLLERR) != 0
                    || cancel.load(Ordering::Relaxed)
                {
                    mine.store(true, Ordering::SeqCst);
                    return;
                }
            }
        })
    };
    let result = qualify_probe::probe(&probe, &mine);
    done.store(true, Ordering::SeqCst);
    let _ = watcher.join();
    match result {
        Ok(r) => {
            let a = match (r.exit_code, r.signal.as_deref()) {
                (Some(code), _) => Answer::Exit(code),
                (None, Some(name)) => Answer::Signal(
                    name.parse::<nix::sys::signal::Signal>()
                        .map_or(libc::SIGKILL, |s| s as i32),
                ),
                (None, None) => Answer::Signal(libc::SIGKILL),
            };
            answer(&stream, &a);
        }
        Err(e) => answer(&stream, &Answer::Error(e.to_string())),
    }
}

/// Why a request could not be read.
#[derive(Debug, thiserror::Error)]
enum Bad {
    #[error("reading the request: {0}")]
    Read(#[from] std::io::Error),
    #[error("reading the request: {0}")]
    Recv(#[from] nix::Error),
    #[error("the request did not carry stdin, stdout and stderr")]
    NoStreams,
    #[error("a malformed request: {0}")]
    Json(#[from] serde_json::Error),
}

fn receive(stream: &UnixStream) -> Result<(Request, [OwnedFd; 3]), Bad> {
    let mut buf = vec![0u8; 64 * 1024];
    let mut space = nix::cmsg_space!([RawFd; 3]);
    let (n, fds) = {
        let mut iov = [std::io::IoSliceMut::new(&mut buf)];
        let msg = recvmsg::<()>(
            stream.as_raw_fd(),
            &mut iov,
            Some(&mut space),
            MsgFlags::MSG_CMSG_CLOEXEC,
        )?;
        let mut fds: Vec<OwnedFd> = Vec::new();
        for c in msg.cmsgs()? {
            if let ControlMessageOwned::ScmRights(raw) = c {
                // SAFETY: descriptors the kernel just installed for us.
                fds.extend(
                    raw.into_iter()
                        .map(|fd| unsafe { OwnedFd::from_raw_fd(fd) }),
                );
            }
        }
        (msg.bytes, fds)
    };
    buf.truncate(n);
    let mut rest = Vec::new();
    (&*stream).read_to_end(&mut rest)?;
    buf.extend(rest);
    let stdio: [OwnedFd; 3] = fds.try_into().map_err(|_| Bad::NoStreams)?;
    let request: Request = serde_json::from_slice(&buf)?;
    Ok((request, stdio))
}
