//! The proxy in HTTP mode (`protocol = "http"`) in front of a real HTTP/1.1 server (Python's
//! `http.server`): keep-alive connections and chunked bodies pass through intact, requests and
//! reply statuses are counted per phase, and the HTTP faults do what they say — a share of
//! replies replaced (`status`), requests answered by the proxy with `Retry-After`
//! (`throttle`), each request held (`http_delay`).

mod common;

use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::*;

const SLOW: Duration = Duration::from_secs(10);

fn get(path: &str) -> Vec<u8> {
    format!("GET {path} HTTP/1.1\r\nHost: dep\r\n\r\n").into_bytes()
}

fn hits(server: &Server) -> u64 {
    let mut s = connect(server.addr, SLOW).unwrap();
    let r = http_exchange(&mut s, &get("/hits")).unwrap();
    String::from_utf8_lossy(&r.body).parse().unwrap()
}

#[test]
fn keep_alive_and_chunked_bodies_pass_through_and_statuses_are_counted() {
    let server = http_server();
    let p = http_proxy(server.addr, "none", 0, 60_000);
    let mut c = connect(p.local_addr(), SLOW).unwrap();
    // Unarmed: one exchange.
    assert_eq!(http_exchange(&mut c, &get("/a")).unwrap().body, b"got 0");
    p.arm(Instant::now()).unwrap();
    wait_window_start(&p);
    // In the window, on the same connection: a chunked request body, a chunked reply, a
    // Content-Length body, and a request split across writes.
    let chunked = b"POST /up HTTP/1.1\r\nHost: dep\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nabcd\r\n3\r\nefg\r\n0\r\n\r\n";
    assert_eq!(http_exchange(&mut c, chunked).unwrap().body, b"got 7");
    let r = http_exchange(&mut c, &get("/chunked")).unwrap();
    assert_eq!((r.status, r.body.as_slice()), (200, &b"hello world"[..]));
    let sized = b"POST /up HTTP/1.1\r\nHost: dep\r\nContent-Length: 5\r\n\r\n12345";
    assert_eq!(http_exchange(&mut c, sized).unwrap().body, b"got 5");
    let connections_before = p.stats().during.connections_opened;
    for _ in 0..20 {
        assert_eq!(http_exchange(&mut c, &get("/x")).unwrap().status, 200);
    }
    drop(c);
    let s = p.stop();
    assert_eq!(s.unarmed.requests, 1, "{:?}", s.unarmed);
    assert_eq!(
        s.during.requests, 23,
        "HTTP requests, not chunks: {:?}",
        s.during
    );
    assert_eq!(s.during.replies, 23);
    let http = s.during.http.as_ref().expect("HTTP counters");
    assert_eq!(http.statuses.get(&200), Some(&23), "{http:?}");
    assert_eq!((http.injected, http.delayed), (0, 0));
    assert_eq!(
        connections_before, 0,
        "one keep-alive connection carried every exchange"
    );
    assert_eq!(hits(&server), 24);
}

#[test]
fn a_share_of_replies_is_replaced_after_the_request_reached_the_dependency() {
    let server = http_server();
    let p = http_proxy(server.addr, "status(503, ×0.5)", 0, 60_000);
    p.arm(Instant::now()).unwrap();
    wait_window_start(&p);
    let mut c = connect(p.local_addr(), SLOW).unwrap();
    let mut replaced = 0;
    for _ in 0..200 {
        let r = http_exchange(&mut c, &get("/x")).unwrap();
        match r.status {
            503 => {
                assert!(r.body.is_empty());
                replaced += 1;
            }
            200 => assert_eq!(r.body, b"got 0"),
            other => panic!("status {other}"),
        }
    }
    drop(c);
    let s = p.stop();
    assert!((70..=130).contains(&replaced), "{replaced} of 200 replaced");
    let http = s.during.http.as_ref().unwrap();
    assert_eq!(http.statuses.get(&503).copied(), Some(replaced));
    assert_eq!(http.statuses.get(&200).copied(), Some(200 - replaced));
    assert_eq!(http.injected, replaced);
    assert_eq!(hits(&server), 200, "every request reached the dependency");
}

#[test]
fn throttled_requests_never_reach_the_dependency_and_carry_retry_after() {
    let server = http_server();
    let p = http_proxy(server.addr, "throttle(429, retry_after 2s)", 0, 60_000);
    p.arm(Instant::now()).unwrap();
    wait_window_start(&p);
    let mut c = connect(p.local_addr(), SLOW).unwrap();
    for _ in 0..3 {
        let body = b"POST /up HTTP/1.1\r\nHost: dep\r\nContent-Length: 3\r\n\r\nabc";
        let r = http_exchange(&mut c, body).unwrap();
        assert_eq!(r.status, 429);
        assert_eq!(r.header("retry-after"), Some("2"));
    }
    drop(c);
    let s = p.stop();
    assert_eq!(s.during.http.as_ref().unwrap().statuses.get(&429), Some(&3));
    assert_eq!(
        s.during.bytes_upstream as usize,
        3 * 51 + 9,
        "{:?}",
        s.during
    );
    assert_eq!(hits(&server), 0);
}

#[test]
fn each_request_is_held_once_in_the_window_and_not_after_it() {
    let server = http_server();
    let p = http_proxy(server.addr, "http_delay(200ms)", 0, 1_000);
    p.arm(Instant::now()).unwrap();
    wait_window_start(&p);
    let mut c: TcpStream = connect(p.local_addr(), SLOW).unwrap();
    let t = Instant::now();
    // A chunked reply is several chunks: it is still one delay.
    for _ in 0..3 {
        assert_eq!(http_exchange(&mut c, &get("/chunked")).unwrap().status, 200);
    }
    let held = t.elapsed();
    assert!(
        held >= Duration::from_millis(600) && held < Duration::from_millis(900),
        "{held:?}"
    );
    wait_window_end(&p);
    let t = Instant::now();
    http_exchange(&mut c, &get("/x")).unwrap();
    assert!(
        t.elapsed() < Duration::from_millis(150),
        "{:?}",
        t.elapsed()
    );
    drop(c);
    let s = p.stop();
    assert_eq!(s.during.http.as_ref().unwrap().delayed, 3);
    assert_eq!(s.after.http.as_ref().unwrap().delayed, 0);
}
