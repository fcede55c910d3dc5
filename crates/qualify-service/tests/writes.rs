//! The write check reads writes back over a real socket with the load engine's HTTP client:
//! a store that answers its reads chunked, some after an interim `103 Early Hints`, on
//! keep-alive connections. Every id is read with one request on one of the readers'
//! connections, and only writes that are really missing count as lost. (Against this store
//! the binary's own client before it — `Content-Length` bodies only — counted 30 writes lost
//! instead of 2 and id 211 present though it was never written: a `103` was taken for the
//! answer, leaving the real one to be read as the next id's; the chunks left on a connection
//! failed the next read, 434 requests on 203 connections for 232 ids.)

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use qualify_load::{HttpRequest, LoadReport, SeqSet, Writes};
use qualify_service::writes::{HttpReadBack, check_writes};

/// A keep-alive HTTP/1.1 store on loopback: `GET /items/N` answers 200 (chunked, in two
/// chunks) when N is stored, 404 (chunked) otherwise; stored ids divisible by 7 get a `103
/// Early Hints` first; a read of an id in `drop` closes the connection without an answer.
struct Store {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    connections: Arc<AtomicU64>,
    requests: Arc<AtomicU64>,
    thread: Option<JoinHandle<()>>,
}

impl Store {
    fn start(stored: BTreeSet<u64>, drop: BTreeSet<u64>) -> Store {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let connections = Arc::new(AtomicU64::new(0));
        let requests = Arc::new(AtomicU64::new(0));
        let stored = Arc::new(stored);
        let drop = Arc::new(drop);
        let thread = {
            let (stop, connections, requests) = (
                Arc::clone(&stop),
                Arc::clone(&connections),
                Arc::clone(&requests),
            );
            std::thread::spawn(move || {
                let mut handlers = Vec::new();
                while !stop.load(Ordering::SeqCst) {
                    match listener.accept() {
                        Ok((stream, _)) => {
                            connections.fetch_add(1, Ordering::SeqCst);
                            let (stored, drop, requests) = (
                                Arc::clone(&stored),
                                Arc::clone(&drop),
                                Arc::clone(&requests),
                            );
                            handlers.push(std::thread::spawn(move || {
                                serve(stream, &stored, &drop, &requests);
                            }));
                        }
                        Err(_) => std::thread::sleep(Duration::from_millis(5)),
                    }
                }
                for h in handlers {
                    let _ = h.join();
                }
            })
        };
        Store {
            addr,
            stop,
            connections,
            requests,
            thread: Some(thread),
        }
    }
}

impl Drop for Store {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Answer requests on one connection until the client closes it.
fn serve(stream: TcpStream, stored: &BTreeSet<u64>, drop: &BTreeSet<u64>, requests: &AtomicU64) {
    stream.set_nonblocking(false).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut out = stream.try_clone().unwrap();
    let mut reader = BufReader::new(stream);
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header).unwrap_or(0) == 0 || header.trim().is_empty() {
                break;
            }
        }
        requests.fetch_add(1, Ordering::SeqCst);
        let id: Option<u64> = line
            .split_whitespace()
            .nth(1)
            .and_then(|p| p.strip_prefix("/items/"))
            .and_then(|n| n.parse().ok());
        if id.is_some_and(|n| drop.contains(&n)) {
            return;
        }
        let answer = match id {
            Some(n) if stored.contains(&n) => {
                let hints = if n % 7 == 0 {
                    "HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n"
                } else {
                    ""
                };
                let body = format!("item {n}\n");
                let (a, b) = body.split_at(3);
                format!(
                    "{hints}HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n{a}\r\n{:x}\r\n{b}\r\n0\r\n\r\n",
                    a.len(),
                    b.len()
                )
            }
            _ => "HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n9\r\nnot found\r\n0\r\n\r\n"
                .to_string(),
        };
        if out.write_all(answer.as_bytes()).is_err() {
            return;
        }
    }
}

/// A load report whose write record attempted `attempted` and acknowledged `acknowledged`.
fn report(attempted: &[u64], acknowledged: &[u64]) -> LoadReport {
    let mut report: LoadReport = serde_json::from_value(serde_json::json!({
        "model": "open", "offered_rate": 100.0, "users": null,
        "duration_seconds": 2.0, "measured_seconds": 2.0, "warmup_seconds": 0.0,
        "sent": 200, "completed": 200, "succeeded": 200, "dropped": 0, "shed": 0,
        "achieved_rate": 100.0, "throughput": 100.0,
        "errors": {"status_4xx": 0, "status_5xx": 0, "status_429": 0, "timeout": 0,
                   "refused": 0, "reset": 0, "unexpected_reply": 0, "other": 0},
        "latency": {
            "corrected": {"count": 200}, "uncorrected": {"count": 200},
            "corrected_histogram": "", "histogram_encoding": "", "histogram_unit": ""
        },
        "timeline": [],
        "generator": {"threads": 1, "cpu_seconds": 0.1, "wall_seconds": 2.0,
                      "saturated": false, "connections_opened": 1,
                      "schedule_lag": {"dispatched": 200, "late": 0}},
        "cancelled": false
    }))
    .unwrap();
    let set = |ids: &[u64]| {
        let mut s = SeqSet::new();
        for id in ids {
            s.insert(*id);
        }
        s
    };
    report.writes = Some(Writes {
        attempted: set(attempted),
        acknowledged: set(acknowledged),
        failed: SeqSet::new(),
    });
    report
}

#[test]
fn a_chunked_read_back_finds_every_write_that_is_there() {
    let attempted: Vec<u64> = (0..200).collect();
    // Acknowledged: all but the last ten attempted.
    let acknowledged: Vec<u64> = (0..190).collect();
    // Stored: what was acknowledged, but 5 and 6 (lost); 195 (attempted, not acknowledged:
    // recovered); 210 (never attempted: unexpected).
    let stored: BTreeSet<u64> = (0..190)
        .filter(|n| *n != 5 && *n != 6)
        .chain([195, 210])
        .collect();
    let store = Store::start(stored, BTreeSet::new());
    let read = HttpRequest {
        method: "GET".into(),
        path: "/items/{seq}".into(),
        body: None,
        headers: Default::default(),
        expect_status: vec![200],
    };
    let mut readers: Vec<HttpReadBack> = (0..4)
        .map(|_| HttpReadBack::new(store.addr, &read).unwrap())
        .collect();
    let check = check_writes(
        &report(&attempted, &acknowledged),
        &mut readers,
        Duration::from_secs(30),
    )
    .unwrap();
    assert_eq!(
        (check.ok, check.lost, check.recovered, check.unexpected),
        (188, 2, 1, 1),
        "{check:?}"
    );
    assert_eq!(check.first_lost, [5, 6]);
    assert_eq!(check.first_unexpected, [210]);
    assert!(!check.valid);
    // One request per id (200 attempted + 32 beyond), on the readers' kept-alive connections.
    assert_eq!(store.requests.load(Ordering::SeqCst), 232);
    let opened: u64 = readers.iter().map(HttpReadBack::connections).sum();
    assert_eq!(store.connections.load(Ordering::SeqCst), opened);
    assert!(opened <= 4, "{opened} connections for 4 readers");
}

/// Reads that get no answer — the store closes the connection instead — are unread: not lost,
/// and the history is not valid.
#[test]
fn writes_whose_read_got_no_answer_are_unread_not_lost() {
    let attempted: Vec<u64> = (0..50).collect();
    let stored: BTreeSet<u64> = (0..50).filter(|n| *n != 5).collect();
    let store = Store::start(stored, [20, 30].into());
    let read = HttpRequest {
        method: "GET".into(),
        path: "/items/{seq}".into(),
        body: None,
        headers: Default::default(),
        expect_status: vec![200],
    };
    let mut readers = vec![HttpReadBack::new(store.addr, &read).unwrap()];
    let check = check_writes(
        &report(&attempted, &attempted),
        &mut readers,
        Duration::from_secs(30),
    )
    .unwrap();
    assert_eq!(
        (check.ok, check.lost, check.unread, check.valid),
        (47, 1, 2, false),
        "{check:?}"
    );
    assert_eq!(check.first_lost, [5]);
}
