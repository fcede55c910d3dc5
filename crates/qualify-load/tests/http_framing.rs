//! The HTTP client's framing against a real socket with canned answers: Content-Length,
//! chunked bodies with trailers, interim 100 answers, `Connection: close`, HTTP/1.0, bodies
//! delimited by close, HEAD and 204 answers without bodies, malformed answers, and a server
//! that closes idle keep-alive connections. Each case checks the requests succeeded (or how
//! they failed) and how many connections they took.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use qualify_load::{ErrorClass, Flow, HttpRequest, LoadPlan, LoadReport, Model, RequestKind, run};

/// A server thread answering every request on every connection with `answer`, then closing
/// the connection when `close_after` requests were served on it (0: never).
fn serve(answer: &'static [u8], close_after: usize) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(conn) = conn else { return };
            std::thread::spawn(move || handle(conn, answer, close_after));
        }
    });
    addr
}

fn handle(mut conn: TcpStream, answer: &[u8], close_after: usize) {
    let _ = conn.set_read_timeout(Some(Duration::from_secs(10)));
    let mut served = 0;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        // One request: its head, then its Content-Length body.
        let head_end = loop {
            if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break at + 4;
            }
            match conn.read(&mut chunk) {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        };
        let head = String::from_utf8_lossy(&buf[..head_end]).to_ascii_lowercase();
        let length: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0);
        while buf.len() < head_end + length {
            match conn.read(&mut chunk) {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
        buf.drain(..head_end + length);
        if conn.write_all(answer).is_err() {
            return;
        }
        served += 1;
        if close_after > 0 && served == close_after {
            return;
        }
    }
}

fn load(addr: SocketAddr, method: &str) -> LoadReport {
    let mut plan = LoadPlan::http_get(Model::Open { rate: 20.0 }, "/x/{seq}");
    plan.duration = Duration::from_millis(500);
    plan.timeout = Duration::from_secs(2);
    plan.max_in_flight = 1;
    if let RequestKind::Http(HttpRequest {
        method: m, body, ..
    }) = &mut plan.requests[0].kind
    {
        *m = method.to_string();
        if method == "POST" {
            *body = Some("{\"n\": {seq}, \"pad\": \"{pad:100}\"}".to_string());
        }
    }
    run(&plan, addr, &AtomicBool::new(false), &mut |_| {
        Flow::Continue
    })
    .unwrap()
}

/// How many connections a load should have taken.
enum Conns {
    /// One, kept alive throughout.
    One,
    /// One per request.
    EachRequest,
}

/// The 10 arrivals were sent (an arrival may still wait for the one slot when the schedule
/// ends on a busy machine) and every one succeeded, over the expected connections.
fn ok(report: &LoadReport, conns: Conns) {
    assert_eq!(report.sent + report.dropped, 10, "{report:#?}");
    assert!(report.sent >= 5, "{report:#?}");
    assert_eq!(
        report.succeeded, report.sent,
        "{:?} {:?}",
        report.errors, report.error_examples
    );
    let expected = match conns {
        Conns::One => 1,
        Conns::EachRequest => report.sent,
    };
    assert_eq!(report.generator.connections_opened, expected, "{report:#?}");
}

#[test]
fn content_length_and_keep_alive() {
    let addr = serve(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", 0);
    ok(&load(addr, "GET"), Conns::One);
    ok(&load(addr, "POST"), Conns::One);
}

#[test]
fn chunked_bodies_with_trailers() {
    let addr = serve(
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n1a\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\nX-Trailer: 1\r\n\r\n",
        0,
    );
    ok(&load(addr, "GET"), Conns::One);
}

#[test]
fn interim_answers_are_skipped() {
    let addr = serve(
        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok",
        0,
    );
    ok(&load(addr, "POST"), Conns::One);
}

#[test]
fn closing_answers_take_a_connection_each() {
    let close = serve(
        b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok",
        1,
    );
    ok(&load(close, "GET"), Conns::EachRequest);
    let http10 = serve(b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok", 1);
    ok(&load(http10, "GET"), Conns::EachRequest);
    let until_close = serve(
        b"HTTP/1.1 200 OK\r\n\r\nthe body ends when the connection does",
        1,
    );
    ok(&load(until_close, "GET"), Conns::EachRequest);
}

#[test]
fn bodiless_answers() {
    // A HEAD answer announces a length it does not send; a 204 has no body.
    let head = serve(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n", 0);
    ok(&load(head, "HEAD"), Conns::One);
    let no_content = serve(b"HTTP/1.1 204 No Content\r\n\r\n", 0);
    ok(&load(no_content, "DELETE"), Conns::One);
}

#[test]
fn a_server_closing_idle_connections_costs_no_request() {
    // The server closes each connection after one answer without saying so: the idle
    // connection is found closed before the next request is written to it.
    let addr = serve(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", 1);
    ok(&load(addr, "GET"), Conns::EachRequest);
}

#[test]
fn malformed_and_truncated_answers_are_errors() {
    let garbage = serve(b"SMTP ready\r\n\r\n", 0);
    let r = load(garbage, "GET");
    assert!(r.sent >= 5 && r.errors.other == r.sent, "{:?}", r.errors);
    assert!(
        r.error_examples[&ErrorClass::Other].starts_with("invalid HTTP answer"),
        "{:?}",
        r.error_examples
    );
    let truncated = serve(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort", 1);
    let r = load(truncated, "GET");
    assert!(r.sent >= 5 && r.errors.reset == r.sent, "{:?}", r.errors);
    assert_eq!(
        r.error_examples[&ErrorClass::Reset],
        "the connection closed in the middle of the body"
    );
    assert_eq!(r.completed, 0, "an incomplete answer is no answer");
}
