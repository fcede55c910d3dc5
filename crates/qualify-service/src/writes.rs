//! The acknowledged-writes check (`writes` of `[recovery]` or `[faults]`): after the load (with
//! its kill and restart of the service, or its dependency fault), while the service still
//! runs, every attempted write id — and a few past the last, where anything present was never
//! attempted — is read back ([`read_back`]), and Jepsen's set check
//! (`qualify_faults::check_history`) says which acknowledged writes were lost, which
//! unacknowledged ones landed anyway and what was never written ([`judge`]). A write that
//! failed (an answer that said no) or whose outcome is unknown (no answer) is never lost; an
//! id whose read got no answer (a failed read, an error reply, or the budget ran out) is
//! unread, never lost. The history of every write — its outcome and what its read found — is
//! JSON Lines ([`history`]) for the spec's checker and the receipt's directory.
//!
//! How an id is read back is a [`ReadBack`]: [`HttpReadBack`] sends the spec's `read` request
//! with the load engine's HTTP client (keep-alive, `Content-Length`, chunked, 1xx; present when
//! the status is one of `expect_status`, a 5xx is no answer); [`TcpReadBack`] sends a line and
//! reads one reply line — or a RESP bulk string (`$N` then N bytes) — that starts with the
//! rendered `expect` when present (an error reply, `-…`, `ERROR`, `SERVER_ERROR …`, is no
//! answer). [`read_back`] reads with several readers at once (one connection each), each id up
//! to three times while its reads fail, bounded by a time budget.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use qualify_faults::SetCheck;
use qualify_load::template::{Template, TemplateError};
use qualify_load::{
    HttpClient, HttpRequest, LoadError, LoadReport, RequestKind, TcpRequest, Writes,
};

use crate::error::{ReadError, ReaderError};

/// Ids past the last attempted one that are read too: present there means never attempted.
const BEYOND: u64 = 32;
/// Each read, connecting included, must end within this.
const READ_TIMEOUT: Duration = Duration::from_secs(2);
/// Reads of one id while they fail (the service may still be reconnecting to its store).
const READ_ATTEMPTS: u32 = 3;
const READ_PAUSE: Duration = Duration::from_millis(100);

/// Reads one write back.
pub trait ReadBack: Send {
    /// Whether write `seq` is present; `Err` when it could not be read.
    fn present(&mut self, seq: u64) -> Result<bool, ReadError>;
}

impl<R: ReadBack + ?Sized> ReadBack for Box<R> {
    fn present(&mut self, seq: u64) -> Result<bool, ReadError> {
        (**self).present(seq)
    }
}

/// A reader for the spec's `read` request at `addr`, of its protocol.
pub fn reader(addr: SocketAddr, read: &RequestKind) -> Result<Box<dyn ReadBack>, ReaderError> {
    match read {
        RequestKind::Http(r) => HttpReadBack::new(addr, r)
            .map(|r| Box::new(r) as Box<dyn ReadBack>)
            .map_err(ReaderError::from),
        RequestKind::Tcp(r) => TcpReadBack::new(addr, r)
            .map(|r| Box::new(r) as Box<dyn ReadBack>)
            .map_err(ReaderError::from),
    }
}

/// An HTTP read-back: the `read` request with `{seq}` rendered; present when the answer's
/// status is one of `expect_status` (default 200–299); a 5xx answer is no answer (the service
/// could not read), not an absent write.
pub struct HttpReadBack {
    client: HttpClient,
    expect: Vec<u16>,
}

impl HttpReadBack {
    pub fn new(addr: SocketAddr, read: &HttpRequest) -> Result<HttpReadBack, LoadError> {
        Ok(HttpReadBack {
            client: HttpClient::new(addr, read, READ_TIMEOUT)?,
            expect: read.expect_status.clone(),
        })
    }

    /// Connections this reader opened.
    pub fn connections(&self) -> u64 {
        self.client.connections()
    }
}

impl ReadBack for HttpReadBack {
    fn present(&mut self, seq: u64) -> Result<bool, ReadError> {
        let status = self.client.status(seq)?;
        if self.expect.contains(&status) {
            return Ok(true);
        }
        if status >= 500 {
            return Err(ReadError::ServerError(status));
        }
        Ok(self.expect.is_empty() && (200..300).contains(&status))
    }
}

/// A line-protocol read-back: `send` with `{seq}` rendered; present when the reply line (or a
/// RESP bulk string's payload) starts with `expect` rendered for the same `{seq}`.
pub struct TcpReadBack {
    addr: SocketAddr,
    send: Template,
    expect: Template,
    conn: Option<BufReader<TcpStream>>,
    connections: u64,
}

impl TcpReadBack {
    pub fn new(addr: SocketAddr, read: &TcpRequest) -> Result<TcpReadBack, TemplateError> {
        Ok(TcpReadBack {
            addr,
            send: Template::parse(&read.send)?,
            expect: Template::parse(&read.expect)?,
            conn: None,
            connections: 0,
        })
    }

    /// Connections this reader opened.
    pub fn connections(&self) -> u64 {
        self.connections
    }

    fn connect(&mut self) -> Result<BufReader<TcpStream>, ReadError> {
        let stream =
            TcpStream::connect_timeout(&self.addr, READ_TIMEOUT).map_err(ReadError::Connect)?;
        let _ = stream.set_nodelay(true);
        stream
            .set_read_timeout(Some(READ_TIMEOUT))
            .and_then(|()| stream.set_write_timeout(Some(READ_TIMEOUT)))
            .map_err(ReadError::Timeouts)?;
        self.connections += 1;
        Ok(BufReader::new(stream))
    }

    fn exchange(&mut self, seq: u64) -> Result<bool, ReadError> {
        let mut conn = match self.conn.take() {
            Some(c) => c,
            None => self.connect()?,
        };
        conn.get_mut()
            .write_all(&self.send.render(seq))
            .map_err(ReadError::Write)?;
        let mut line = Vec::with_capacity(64);
        match conn.read_until(b'\n', &mut line) {
            Ok(0) => return Err(ReadError::ClosedBeforeReply),
            Ok(_) if line.last() != Some(&b'\n') => {
                return Err(ReadError::ClosedInReply);
            }
            Ok(_) => {}
            Err(e) => return Err(ReadError::Read(e)),
        }
        while matches!(line.last(), Some(b'\n' | b'\r')) {
            line.pop();
        }
        let expect = self.expect.render(seq);
        let found = if line.starts_with(b"-")
            || line == b"ERROR"
            || line.starts_with(b"SERVER_ERROR")
            || line.starts_with(b"CLIENT_ERROR")
        {
            Err(ReadError::ErrorReply(
                String::from_utf8_lossy(&line).into_owned(),
            ))
        } else if let Some(len) = line
            .strip_prefix(b"$")
            .and_then(|n| std::str::from_utf8(n).ok())
            .and_then(|n| n.parse::<i64>().ok())
        {
            // A RESP bulk string: its payload is the value (`$-1`: none).
            match usize::try_from(len) {
                Err(_) => Ok(false),
                Ok(len) => {
                    let mut payload = vec![0u8; len + 2];
                    conn.read_exact(&mut payload).map_err(ReadError::Read)?;
                    payload.truncate(len);
                    Ok(payload.starts_with(&expect))
                }
            }
        } else {
            Ok(line.starts_with(&expect))
        };
        if conn.buffer().is_empty() {
            self.conn = Some(conn);
        }
        found
    }
}

impl ReadBack for TcpReadBack {
    fn present(&mut self, seq: u64) -> Result<bool, ReadError> {
        let reused = self.conn.is_some();
        match self.exchange(seq) {
            // A kept connection the service closed meanwhile: once more on a fresh one.
            Err(_) if reused => self.exchange(seq),
            other => other,
        }
    }
}

/// Read back the writes `report` recorded with `readers` (each on a thread of its own, created
/// from the calling thread and so in its network namespace), within `budget`: every id whose
/// read answered, and whether it was present. `None` when the load recorded no writes.
pub fn read_back<R: ReadBack>(
    report: &LoadReport,
    readers: &mut [R],
    budget: Duration,
) -> Option<BTreeMap<u64, bool>> {
    let w = report.writes.as_ref()?;
    let last = w.attempted.iter().last().unwrap_or(0);
    let ids: Vec<u64> = w
        .attempted
        .iter()
        .chain(last + 1..last + 1 + BEYOND)
        .collect();
    let deadline = Instant::now() + budget;
    let next = Mutex::new(ids.into_iter());
    let answered = Mutex::new(BTreeMap::new());
    std::thread::scope(|scope| {
        for reader in readers.iter_mut() {
            let (next, answered) = (&next, &answered);
            scope.spawn(move || {
                while Instant::now() < deadline {
                    let Some(seq) = next.lock().ok().and_then(|mut n| n.next()) else {
                        break;
                    };
                    for attempt in 0..READ_ATTEMPTS {
                        if attempt > 0 {
                            std::thread::sleep(READ_PAUSE);
                        }
                        if Instant::now() >= deadline {
                            break;
                        }
                        if let Ok(present) = reader.present(seq) {
                            if let Ok(mut a) = answered.lock() {
                                a.insert(seq, present);
                            }
                            break;
                        }
                    }
                }
            });
        }
    });
    Some(answered.into_inner().unwrap_or_default())
}

/// The set check of the recorded `writes` against what the read-back found.
pub fn judge(writes: &Writes, answered: &BTreeMap<u64, bool>) -> SetCheck {
    qualify_faults::check_history(
        writes.attempted.iter(),
        writes.acknowledged.iter(),
        writes.failed.iter(),
        answered.keys().copied(),
        answered.iter().filter(|(_, p)| **p).map(|(seq, _)| *seq),
    )
}

/// Read back and judge in one (`None` when the load recorded no writes).
pub fn check_writes<R: ReadBack>(
    report: &LoadReport,
    readers: &mut [R],
    budget: Duration,
) -> Option<SetCheck> {
    let answered = read_back(report, readers, budget)?;
    Some(judge(report.writes.as_ref()?, &answered))
}

/// The history of every write as JSON Lines, ascending by id: each attempted write's outcome
/// (`acknowledged`, `failed`: an answer that said no or a refused connect, `unknown`: no
/// answer) and what its read found (`present`, `absent`, `unread`); then the ids never
/// attempted that were found present (`"outcome": "not_attempted"`).
pub fn history(writes: &Writes, answered: &BTreeMap<u64, bool>) -> String {
    let mut out = String::new();
    let read = |seq: u64| match answered.get(&seq) {
        Some(true) => "present",
        Some(false) => "absent",
        None => "unread",
    };
    let mut attempted: BTreeSet<u64> = writes.attempted.iter().collect();
    attempted.extend(writes.acknowledged.iter());
    for &seq in &attempted {
        let outcome = if writes.acknowledged.contains(seq) {
            "acknowledged"
        } else if writes.failed.contains(seq) {
            "failed"
        } else {
            "unknown"
        };
        out.push_str(&format!(
            "{{\"seq\":{seq},\"outcome\":\"{outcome}\",\"read\":\"{}\"}}\n",
            read(seq)
        ));
    }
    for (&seq, _) in answered
        .iter()
        .filter(|(s, p)| **p && !attempted.contains(s))
    {
        out.push_str(&format!(
            "{{\"seq\":{seq},\"outcome\":\"not_attempted\",\"read\":\"present\"}}\n"
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use qualify_load::SeqSet;

    fn set(ids: &[u64]) -> SeqSet {
        let mut s = SeqSet::new();
        for id in ids {
            s.insert(*id);
        }
        s
    }

    #[test]
    fn the_history_has_one_line_per_write_with_its_outcome_and_read() {
        let writes = Writes {
            attempted: set(&[0, 1, 2, 3]),
            acknowledged: set(&[0, 1]),
            failed: set(&[2]),
        };
        let answered: BTreeMap<u64, bool> =
            [(0, true), (1, false), (2, true), (40, true), (41, false)]
                .into_iter()
                .collect();
        assert_eq!(
            history(&writes, &answered),
            concat!(
                "{\"seq\":0,\"outcome\":\"acknowledged\",\"read\":\"present\"}\n",
                "{\"seq\":1,\"outcome\":\"acknowledged\",\"read\":\"absent\"}\n",
                "{\"seq\":2,\"outcome\":\"failed\",\"read\":\"present\"}\n",
                "{\"seq\":3,\"outcome\":\"unknown\",\"read\":\"unread\"}\n",
                "{\"seq\":40,\"outcome\":\"not_attempted\",\"read\":\"present\"}\n",
            )
        );
        let check = judge(&writes, &answered);
        assert_eq!(
            (
                check.ok,
                check.lost,
                check.failed,
                check.unknown,
                check.recovered,
                check.unexpected
            ),
            (1, 1, Some(1), Some(1), 1, 1)
        );
    }
}
