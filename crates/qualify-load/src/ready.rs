//! Readiness: poll a starting service until it answers — `GET path` with a 2xx status, or a
//! TCP connection accepted — within a deadline. Blocking, on the calling thread (so it works
//! from a thread that joined the service's network namespace), bounded by the deadline and
//! checked against a cancel flag between attempts.

use std::fmt;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// What "ready" means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadyCheck {
    /// `GET path` answers 2xx.
    Http { path: String },
    /// The port accepts a TCP connection.
    Tcp,
}

/// The service did not become ready.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotReady {
    pub waited: Duration,
    pub attempts: u32,
    /// What the last attempt saw (`connection refused`, `HTTP 503`, …).
    pub last: String,
    pub cancelled: bool,
}

impl fmt::Display for NotReady {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.cancelled {
            write!(f, "cancelled after {:.1} s", self.waited.as_secs_f64())
        } else {
            write!(
                f,
                "not ready after {:.1} s ({} attempts; last: {})",
                self.waited.as_secs_f64(),
                self.attempts,
                self.last
            )
        }
    }
}

impl std::error::Error for NotReady {}

/// Longest single connect/read attempt.
const ATTEMPT: Duration = Duration::from_secs(1);
/// Shortest single attempt (the last one before the deadline gets at least this).
const MIN_ATTEMPT: Duration = Duration::from_millis(20);
const FIRST_PAUSE: Duration = Duration::from_millis(10);
const LONGEST_PAUSE: Duration = Duration::from_millis(250);

/// Poll `target` until `check` passes or `within` has passed; returns how long it took.
pub fn wait_ready(
    check: &ReadyCheck,
    target: SocketAddr,
    within: Duration,
    cancel: &AtomicBool,
) -> Result<Duration, NotReady> {
    let start = Instant::now();
    let deadline = start + within;
    let mut pause = FIRST_PAUSE;
    let mut attempts = 0;
    let mut last = String::from("no attempt made");
    loop {
        let not_ready = |cancelled, attempts, last: &str| NotReady {
            waited: start.elapsed(),
            attempts,
            last: last.to_string(),
            cancelled,
        };
        if cancel.load(Ordering::Relaxed) {
            return Err(not_ready(true, attempts, &last));
        }
        let remaining = deadline.saturating_duration_since(Instant::now());
        if remaining.is_zero() && attempts > 0 {
            return Err(not_ready(false, attempts, &last));
        }
        attempts += 1;
        match attempt(check, target, remaining.clamp(MIN_ATTEMPT, ATTEMPT)) {
            Ok(()) => return Ok(start.elapsed()),
            Err(seen) => last = seen.to_string(),
        }
        // Pause (in short steps, so a cancel is seen), never past the deadline.
        let until = (Instant::now() + pause).min(deadline);
        while !cancel.load(Ordering::Relaxed) {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            std::thread::sleep(left.min(Duration::from_millis(50)));
        }
        pause = (pause * 3 / 2).min(LONGEST_PAUSE);
    }
}

/// What one readiness attempt saw instead of an answer that says ready (the `last` of
/// [`NotReady`]).
#[derive(Debug, thiserror::Error)]
enum AttemptError {
    #[error("{0}")]
    Connect(std::io::Error),
    #[error("writing the request: {0}")]
    Write(std::io::Error),
    #[error("reading the answer: {0}")]
    Read(std::io::Error),
    #[error("HTTP {code} on {path}")]
    Status { code: u16, path: String },
    #[error("the connection closed without an answer to GET {path}")]
    Closed { path: String },
    #[error("not an HTTP answer: {line:?}")]
    NotHttp { line: String },
}

fn attempt(check: &ReadyCheck, target: SocketAddr, limit: Duration) -> Result<(), AttemptError> {
    let mut stream = TcpStream::connect_timeout(&target, limit).map_err(AttemptError::Connect)?;
    let ReadyCheck::Http { path } = check else {
        return Ok(());
    };
    let _ = stream.set_read_timeout(Some(limit));
    let _ = stream.set_write_timeout(Some(limit));
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: {target}\r\nConnection: close\r\nUser-Agent: qualify\r\n\r\n"
    );
    stream
        .write_all(request.as_bytes())
        .map_err(AttemptError::Write)?;
    let mut head = [0u8; 64];
    let mut len = 0;
    while len < 12 {
        match stream.read(&mut head[len..]) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(e) => return Err(AttemptError::Read(e)),
        }
    }
    let line = String::from_utf8_lossy(&head[..len]);
    let status = line
        .strip_prefix("HTTP/1.")
        .and_then(|rest| rest.get(2..5))
        .and_then(|code| code.parse::<u16>().ok());
    match status {
        Some(code) if (200..300).contains(&code) => Ok(()),
        Some(code) => Err(AttemptError::Status {
            code,
            path: path.clone(),
        }),
        None if len == 0 => Err(AttemptError::Closed { path: path.clone() }),
        None => Err(AttemptError::NotHttp {
            line: line.lines().next().unwrap_or("").to_string(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use std::net::TcpListener;

    use super::*;

    fn free_port() -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap()
    }

    #[test]
    fn tcp_ready_when_the_port_accepts() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let took = wait_ready(
            &ReadyCheck::Tcp,
            addr,
            Duration::from_secs(5),
            &AtomicBool::new(false),
        );
        assert!(took.is_ok(), "{took:?}");
    }

    #[test]
    fn nothing_listening_is_not_ready_by_the_deadline() {
        let addr = free_port();
        let start = Instant::now();
        let err = wait_ready(
            &ReadyCheck::Tcp,
            addr,
            Duration::from_millis(300),
            &AtomicBool::new(false),
        )
        .unwrap_err();
        assert!(err.attempts >= 2, "{err}");
        assert!(err.last.contains("refused"), "{err}");
        assert!(!err.cancelled);
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "bounded by the deadline"
        );
        let cancelled = wait_ready(
            &ReadyCheck::Tcp,
            addr,
            Duration::from_secs(60),
            &AtomicBool::new(true),
        )
        .unwrap_err();
        assert!(cancelled.cancelled);
        assert!(cancelled.to_string().starts_with("cancelled after"));
    }

    #[test]
    fn http_needs_a_2xx_answer() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            // Two 503s, then 200: ready on the third attempt.
            for status in [
                "503 Service Unavailable",
                "503 Service Unavailable",
                "200 OK",
            ] {
                let (mut conn, _) = listener.accept().unwrap();
                let mut buf = [0u8; 1024];
                let n = conn.read(&mut buf).unwrap();
                assert!(
                    String::from_utf8_lossy(&buf[..n]).starts_with("GET /healthz HTTP/1.1\r\n")
                );
                conn.write_all(
                    format!("HTTP/1.1 {status}\r\nContent-Length: 0\r\n\r\n").as_bytes(),
                )
                .unwrap();
            }
        });
        let check = ReadyCheck::Http {
            path: "/healthz".into(),
        };
        let took = wait_ready(
            &check,
            addr,
            Duration::from_secs(20),
            &AtomicBool::new(false),
        );
        assert!(took.is_ok(), "{took:?}");
        server.join().unwrap();
        // The server is gone: the last attempt says why it failed.
        let err = wait_ready(
            &check,
            addr,
            Duration::from_millis(200),
            &AtomicBool::new(false),
        )
        .unwrap_err();
        assert!(err.last.contains("refused"), "{err}");
    }
}
