//! `$QUALIFY_RUN ARGS…` in a held-out check: qualify's own executable, bound into the check's
//! sandbox as `qualify-artifact`, asks the `qualify run` that started the check to run ARGS as
//! the artifact — in a cell of its own, like every cell (its own PID namespace and `/proc`, the
//! held-out directory hidden, a fresh private layer over the workdir, the artifact's
//! environment), with the check's stdin, stdout and stderr handed over — and exits as it did
//! (its exit status, or 128 + the signal that ended it). So the artifact never runs inside the
//! check's cell: it cannot see the check's process (command line, environment, working
//! directory, open files) nor its files.
//!
//! The exchange, on the unix socket `$QUALIFY_RUN_SOCKET`: one message, `{"argv": [...]}` with
//! the three descriptors attached (`SCM_RIGHTS`), then one JSON line back: `{"exit": N}`,
//! `{"signal": N}` or `{"error": "…"}` (qualify could not start it: exit 125).

use std::ffi::OsString;
use std::io::{BufRead, BufReader, IoSlice};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::process::ExitCode;

use nix::sys::socket::{ControlMessage, MsgFlags, sendmsg};

use qualify_run::runner::{Answer, DIR, NAME, Request, SOCKET_VAR};

/// Status of `qualify-artifact` when qualify could not run the artifact.
const CANNOT_RUN: u8 = 125;

fn cannot(why: impl std::fmt::Display) -> ExitCode {
    eprintln!("{NAME}: {why}");
    ExitCode::from(CANNOT_RUN)
}

/// Run `args` (after the program name) as the artifact, through the socket.
pub fn main(args: Vec<OsString>) -> ExitCode {
    let argv: Vec<String> = args
        .into_iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    if argv.is_empty() {
        return cannot("usage: $QUALIFY_RUN PROGRAM [ARGS...] (runs the artifact's PROGRAM)");
    }
    let socket =
        std::env::var_os(SOCKET_VAR).unwrap_or_else(|| OsString::from(format!("{DIR}/run.sock")));
    let stream = match UnixStream::connect(&socket) {
        Ok(s) => s,
        Err(e) => {
            return cannot(format!(
                "cannot reach qualify at {}: {e} (only a held-out check run by `qualify run` can start the artifact this way)",
                socket.to_string_lossy()
            ));
        }
    };
    let body = match serde_json::to_vec(&Request { argv }) {
        Ok(b) => b,
        Err(e) => return cannot(e),
    };
    let fds = [0, 1, 2];
    let sent = sendmsg::<()>(
        stream.as_raw_fd(),
        &[IoSlice::new(&body)],
        &[ControlMessage::ScmRights(&fds)],
        MsgFlags::empty(),
        None,
    );
    if let Err(e) = sent {
        return cannot(format!("cannot ask qualify: {e}"));
    }
    let _ = stream.shutdown(std::net::Shutdown::Write);
    let mut line = String::new();
    if let Err(e) = BufReader::new(&stream).read_line(&mut line) {
        return cannot(format!("no answer from qualify: {e}"));
    }
    match serde_json::from_str::<Answer>(line.trim()) {
        Ok(Answer::Exit(code)) => ExitCode::from(code.clamp(0, 255) as u8),
        Ok(Answer::Signal(sig)) => ExitCode::from((128 + sig).clamp(0, 255) as u8),
        Ok(Answer::Error(why)) => cannot(why),
        Err(_) => cannot("qualify ended before the artifact did (interrupted?)"),
    }
}
