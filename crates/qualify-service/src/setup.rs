//! Why a service never became ready, in words that name the cause: a bind that failed because
//! its port was in use (read from the service's own last lines), and the ports the tree listens
//! on when it is not the one qualify gave it (`{port}`, `$PORT`). Only the text of a cell's
//! detail; nothing here decides an outcome.

use std::net::SocketAddr;

use qualify_model::ProbeResult;
use qualify_probe::sockets::Listener;

/// Lines a server writes when its bind failed because the address is taken (lowercase).
const IN_USE: [&str; 5] = [
    "address already in use",
    "eaddrinuse",
    "connection in use",
    "address in use",
    "port is already allocated",
];

/// `: its port was already in use (…)`, or `; its last output: …`, or nothing: what the
/// service's own output says about why it ended before it was ready.
pub fn why_it_ended(r: &ProbeResult, port: u16) -> String {
    let lines: Vec<&str> = r
        .stderr_tail
        .lines()
        .chain(r.stdout_tail.lines())
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    if let Some(line) = lines.iter().find(|l| {
        let lower = l.to_lowercase();
        IN_USE.iter().any(|p| lower.contains(p))
    }) {
        // The address is at the end of such a line; earlier numbers are times and dates.
        let other = ports_in(line).last().copied().filter(|p| *p != port);
        let whose = match other {
            Some(p) => format!(
                "; it binds port {p}, not the port qualify gave it ({{port}} = {port}): pass {{port}} or $PORT to it"
            ),
            None => String::new(),
        };
        return format!(
            " — its address was already in use (its output: `{}`){whose}",
            clip(line)
        );
    }
    match r.stderr_tail.lines().rev().find(|l| !l.trim().is_empty()) {
        Some(last) => format!(" — its last output: `{}`", clip(last.trim())),
        None => String::new(),
    }
}

/// `; it listens on 127.0.0.1:8000 (pid 12, gunicorn), not on {port}: …`, or `; it listens
/// on no TCP port`, for a service that was never ready at `addr`.
pub fn where_it_listens(listeners: &[Listener], addr: SocketAddr) -> String {
    let elsewhere: Vec<&Listener> = listeners
        .iter()
        .filter(|l| l.addr.port() != addr.port())
        .collect();
    if listeners.is_empty() {
        return "; nothing of the service listens on a TCP port".to_string();
    }
    if elsewhere.is_empty() {
        return String::new();
    }
    let named: Vec<String> = elsewhere
        .iter()
        .take(6)
        .map(|l| format!("{} (pid {}, {})", l.addr, l.pid, l.comm))
        .collect();
    format!(
        "; it listens on {} instead: pass {{port}} (or $PORT) to the service so it binds {}",
        named.join(", "),
        addr
    )
}

/// Port-like numbers in a line (`('127.0.0.1', 8000)`, `:8000`, `port 8000`): runs of digits
/// not part of a dotted address or a date.
fn ports_in(line: &str) -> Vec<u16> {
    let b = line.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if !b[i].is_ascii_digit() {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        let joined = |c: Option<&u8>| matches!(c, Some(b'.' | b'-' | b'/'));
        let dotted = joined(start.checked_sub(1).and_then(|k| b.get(k))) || joined(b.get(i));
        if !dotted
            && let Ok(p) = line[start..i].parse::<u16>()
            && p >= 80
        {
            out.push(p);
        }
    }
    out
}

fn clip(line: &str) -> String {
    let mut out: String = line.chars().take(200).collect();
    if out.len() < line.len() {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_taken_port_and_a_port_elsewhere_are_named() {
        let mut r = ProbeResult::unobserved(
            qualify_model::Outcome::ExitFailure,
            "exited with status 1",
            qualify_model::Enforcement::none("auto".to_string()),
            qualify_model::Limits::default(),
        );
        r.stderr_tail = "[2026-12-03 19:31:06 +0000] [2] [INFO] Starting gunicorn 20.1.0\n[2026-12-03 19:31:06 +0000] [2] [ERROR] Connection in use: ('127.0.0.1', 8000)\n[ERROR] Retrying in 1 second.\n".into();
        let why = why_it_ended(&r, 40123);
        assert!(why.contains("its address was already in use"), "{why}");
        assert!(
            why.contains("it binds port 8000, not the port qualify gave it ({port} = 40123)"),
            "{why}"
        );
        r.stderr_tail = "Traceback …\nModuleNotFoundError: No module named 'flask'\n".into();
        assert_eq!(
            why_it_ended(&r, 40123),
            " — its last output: `ModuleNotFoundError: No module named 'flask'`"
        );
        let at: SocketAddr = "127.0.0.1:40123".parse().unwrap();
        let l = Listener {
            addr: "127.0.0.1:8000".parse().unwrap(),
            pid: 12,
            comm: "gunicorn".into(),
        };
        let text = where_it_listens(&[l], at);
        assert!(
            text.contains("it listens on 127.0.0.1:8000 (pid 12, gunicorn) instead"),
            "{text}"
        );
        assert_eq!(
            where_it_listens(&[], at),
            "; nothing of the service listens on a TCP port"
        );
    }
}
