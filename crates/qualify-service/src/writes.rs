//! The acknowledged-writes check of `[recovery] writes`: after the load (with its kill and
//! restart), while the service still runs, every attempted write id — and a few past the last,
//! where anything present was never attempted — is read back, and Jepsen's set check
//! (`qualify_faults::check_set`) says which acknowledged writes were lost, which unacknowledged
//! ones landed anyway and what was never written. An id whose read got no answer (a failed
//! read, or the budget ran out) is unread, never lost.
//!
//! How an id is read back is a [`ReadBack`]: [`HttpReadBack`] sends the spec's `read` request
//! with the load engine's HTTP client (keep-alive, `Content-Length`, chunked, 1xx); a write
//! check over another protocol plugs in as another `ReadBack`. [`check_writes`] reads with
//! several readers at once (one connection each), bounded by a time budget.

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use qualify_faults::SetCheck;
use qualify_load::{HttpClient, HttpRequest, LoadError, LoadReport};

/// Ids past the last attempted one that are read too: present there means never attempted.
const BEYOND: u64 = 32;
/// Each read, connecting included, must end within this.
const READ_TIMEOUT: Duration = Duration::from_secs(2);

/// Reads one write back.
pub trait ReadBack: Send {
    /// Whether write `seq` is present; `Err` when it could not be read.
    fn present(&mut self, seq: u64) -> Result<bool, String>;
}

/// An HTTP read-back: the `read` request with `{seq}` rendered; present when the answer's
/// status is one of `expect_status` (default 200–299).
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
    fn present(&mut self, seq: u64) -> Result<bool, String> {
        let status = self.client.status(seq).map_err(|e| e.to_string())?;
        Ok(if self.expect.is_empty() {
            (200..300).contains(&status)
        } else {
            self.expect.contains(&status)
        })
    }
}

/// Read back the writes `report` recorded with `readers` (each on a thread of its own, created
/// from the calling thread and so in its network namespace), within `budget`; the set check.
/// `None` when the load recorded no writes.
pub fn check_writes<R: ReadBack>(
    report: &LoadReport,
    readers: &mut [R],
    budget: Duration,
) -> Option<SetCheck> {
    let w = report.writes.as_ref()?;
    let attempted: BTreeSet<u64> = w.attempted.iter().collect();
    let acknowledged: BTreeSet<u64> = w.acknowledged.iter().collect();
    let last = attempted.iter().next_back().copied().unwrap_or(0);
    let ids: Vec<u64> = attempted
        .iter()
        .copied()
        .chain(last + 1..last + 1 + BEYOND)
        .collect();
    let deadline = Instant::now() + budget;
    let next = Mutex::new(ids.into_iter());
    // Ids whose read answered, and whether each was present.
    let answered = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for reader in readers.iter_mut() {
            let (next, answered) = (&next, &answered);
            scope.spawn(move || {
                while Instant::now() < deadline {
                    let Some(seq) = next.lock().ok().and_then(|mut n| n.next()) else {
                        break;
                    };
                    if let Ok(present) = reader.present(seq)
                        && let Ok(mut a) = answered.lock()
                    {
                        a.push((seq, present));
                    }
                }
            });
        }
    });
    let answered = answered.into_inner().unwrap_or_default();
    let read = answered.iter().map(|(seq, _)| *seq);
    let present = answered.iter().filter(|(_, p)| *p).map(|(seq, _)| *seq);
    Some(qualify_faults::check_set_read(
        attempted,
        acknowledged,
        read,
        present,
    ))
}
