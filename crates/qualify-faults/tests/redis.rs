//! The fault proxy in front of a real redis-server: each fault's observable effect on a client,
//! the window's edges, the per-phase counters, and that nothing outlives `stop`.

mod common;

use std::io::{ErrorKind, Read, Write};
use std::time::{Duration, Instant};

use common::*;

fn tmp() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("qualify-faults-redis")
        .tempdir()
        .expect("temp dir")
}

const SLOW: Duration = Duration::from_secs(10);

#[test]
fn clean_traffic_is_counted_in_the_phase_it_happened() {
    let dir = tmp();
    let redis = redis(dir.path());
    let p = proxy(redis.addr, "none", 1_500, 3_500);
    let addr = p.local_addr();
    assert!(addr.ip().is_loopback());

    // Unarmed: warmup traffic on connection A.
    let mut a = connect(addr, SLOW).unwrap();
    for _ in 0..3 {
        ping(&mut a).unwrap();
    }
    p.arm(Instant::now()).unwrap();
    assert!(p.arm(Instant::now()).is_err(), "a proxy is armed once");
    // Before: a new connection B.
    let mut b = connect(addr, SLOW).unwrap();
    for _ in 0..5 {
        ping(&mut b).unwrap();
    }
    wait_window_start(&p);
    let mut c = connect(addr, SLOW).unwrap();
    for _ in 0..4 {
        ping(&mut c).unwrap();
    }
    wait_window_end(&p);
    let mut d = connect(addr, SLOW).unwrap();
    for _ in 0..2 {
        ping(&mut d).unwrap();
    }
    drop((a, b, c, d));
    let s = p.stop();

    let ping_len = resp(&[b"PING"]).len() as u64;
    let pong_len = b"+PONG\r\n".len() as u64;
    for (name, phase, opened, pings, peak) in [
        ("unarmed", &s.unarmed, 1, 3, 1),
        ("before", &s.before, 1, 5, 2),
        ("during", &s.during, 1, 4, 3),
        ("after", &s.after, 1, 2, 4),
    ] {
        assert_eq!(phase.connections_opened, opened, "{name}: {phase:?}");
        assert_eq!(phase.requests, pings, "{name}: {phase:?}");
        assert_eq!(phase.replies, pings, "{name}: {phase:?}");
        assert_eq!(phase.bytes_upstream, pings * ping_len, "{name}");
        assert_eq!(phase.bytes_downstream, pings * pong_len, "{name}");
        assert_eq!(
            phase.peak_connections, peak,
            "{name}: connections stay open"
        );
        assert_eq!(
            phase.peak_busy_connections, 1,
            "{name}: one request at a time"
        );
        assert_eq!(phase.faulted_connections, 0, "{name}: no fault");
        assert_eq!(phase.resets, 0);
    }
    // The series starts at arming, one bucket per 100 ms, and holds the peak per bucket.
    assert!((s.series.bucket_seconds - 0.1).abs() < 1e-9);
    assert!(s.series.open.len() >= 35, "{:?}", s.series.open);
    assert_eq!(s.series.open[0], 2, "A and B open right after arming");
    assert_eq!(s.series.open.iter().max(), Some(&4));
    assert!(s.errors.is_empty(), "{:?}", s.errors);
    let json = serde_json::to_value(&s).unwrap();
    assert_eq!(json["fault"], "none");
    assert_eq!(json["during"]["requests"], 4);
}

#[test]
fn latency_delays_replies_only_inside_the_window() {
    let dir = tmp();
    let redis = redis(dir.path());
    let latency = Duration::from_millis(400);
    let p = proxy(redis.addr, "latency(400ms)", 1_000, 3_500);
    let mut conn = connect(p.local_addr(), SLOW).unwrap();
    p.arm(Instant::now()).unwrap();
    let timed = |conn: &mut std::net::TcpStream| {
        let t = Instant::now();
        ping(conn).unwrap();
        t.elapsed()
    };
    let before = timed(&mut conn);
    wait_window_start(&p);
    let during: Vec<Duration> = (0..3).map(|_| timed(&mut conn)).collect();
    wait_window_end(&p);
    let after = timed(&mut conn);
    for d in &during {
        assert!(
            *d >= latency,
            "a reply inside the window took {d:?}, less than the latency"
        );
    }
    // Outside the window the proxy adds nothing; a stall of the whole latency would be needed
    // for these to fail on a loaded machine.
    assert!(before < latency, "before the window: {before:?}");
    assert!(after < latency, "after the window: {after:?}");
    let s = p.stop();
    assert_eq!(s.during.faulted_connections, 1);
    assert_eq!(s.during.requests, 3);
}

#[test]
fn latency_upstream_and_jitter_delay_each_request() {
    let dir = tmp();
    let redis = redis(dir.path());
    // Requests are held 200 ms ± 100 ms before redis sees them.
    let p = proxy(
        redis.addr,
        "latency(200ms, jitter 100ms)@upstream",
        0,
        60_000,
    );
    p.arm(Instant::now()).unwrap();
    wait_window_start(&p);
    let mut conn = connect(p.local_addr(), SLOW).unwrap();
    let mut delays = Vec::new();
    for _ in 0..8 {
        let t = Instant::now();
        ping(&mut conn).unwrap();
        delays.push(t.elapsed());
    }
    let min = *delays.iter().min().unwrap();
    let max = *delays.iter().max().unwrap();
    assert!(min >= Duration::from_millis(100), "{delays:?}");
    // The draws are seeded (same seed, same delays), and spread over ±100 ms.
    assert!(
        max - min >= Duration::from_millis(20),
        "no jitter: {delays:?}"
    );
    let s = p.stop();
    assert_eq!(s.during.requests, 8);
}

#[test]
fn down_refuses_connections_closes_open_ones_and_comes_back() {
    let dir = tmp();
    let redis = redis(dir.path());
    let p = proxy(redis.addr, "down", 500, 2_000);
    let addr = p.local_addr();
    let mut open = connect(addr, SLOW).unwrap();
    ping(&mut open).unwrap();
    p.arm(Instant::now()).unwrap();
    wait_window_start(&p);
    // The open connection was closed at the window's start (end of stream, not a hang).
    let mut buf = [0u8; 16];
    let n = open
        .read(&mut buf)
        .expect("closed connection reads end of stream");
    assert_eq!(n, 0);
    // New connections are refused by the kernel: the port is not listening.
    let e = std::net::TcpStream::connect(addr).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::ConnectionRefused, "{e}");
    assert_eq!(
        listening_on(addr.port()),
        0,
        "nothing listens during the outage"
    );
    wait_window_end(&p);
    // Same port, listening again.
    let mut again = connect(addr, SLOW).unwrap();
    ping(&mut again).unwrap();
    let s = p.stop();
    assert_eq!(
        s.during.faulted_connections, 1,
        "the open connection was dropped"
    );
    assert_eq!(
        s.during.connections_opened, 0,
        "refused connects never reach the proxy"
    );
    assert_eq!(s.after.connections_opened, 1);
    assert!(s.errors.is_empty(), "{:?}", s.errors);
}

#[test]
fn blackhole_swallows_requests_or_replies() {
    let dir = tmp();
    let redis = redis(dir.path());
    let mut direct = connect(redis.addr, SLOW).unwrap();
    let short = Duration::from_millis(300);

    // Both directions: the connection is accepted, the request never reaches redis.
    let p = proxy(redis.addr, "blackhole", 0, 60_000);
    p.arm(Instant::now()).unwrap();
    wait_window_start(&p);
    let mut conn = connect(p.local_addr(), short).unwrap();
    let e = command(&mut conn, &[b"SET", b"k1", b"v1"]).unwrap_err();
    assert!(is_timeout(&e), "expected a read timeout, got {e}");
    assert_eq!(command(&mut direct, &[b"GET", b"k1"]).unwrap(), b"(nil)");
    let s = p.stop();
    assert_eq!(s.during.requests, 1, "the swallowed request is counted");
    assert_eq!(s.during.replies, 0);
    assert_eq!(s.during.faulted_connections, 1);

    // Downstream only: redis did the write, the client never hears of it.
    let p = proxy(redis.addr, "blackhole@downstream", 0, 60_000);
    p.arm(Instant::now()).unwrap();
    wait_window_start(&p);
    let mut conn = connect(p.local_addr(), short).unwrap();
    let e = command(&mut conn, &[b"SET", b"k2", b"v2"]).unwrap_err();
    assert!(is_timeout(&e), "expected a read timeout, got {e}");
    assert_eq!(command(&mut direct, &[b"GET", b"k2"]).unwrap(), b"v2");
    let s = p.stop();
    assert_eq!(
        s.during.replies, 1,
        "redis answered; the answer was swallowed"
    );
}

#[test]
fn reset_resets_new_and_open_connections() {
    let dir = tmp();
    let redis = redis(dir.path());
    let p = proxy(redis.addr, "reset", 300, 60_000);
    let mut open = connect(p.local_addr(), SLOW).unwrap();
    ping(&mut open).unwrap();
    p.arm(Instant::now()).unwrap();
    wait_window_start(&p);
    let mut buf = [0u8; 16];
    let e = open
        .read(&mut buf)
        .expect_err("the open connection is reset");
    assert!(is_reset(&e), "expected a reset, got {e}");
    for _ in 0..3 {
        // The RST can beat the client's connect to the finish line: either way it is a reset.
        let e = connect(p.local_addr(), SLOW)
            .and_then(|mut conn| ping(&mut conn))
            .expect_err("a new connection is reset");
        assert!(is_reset(&e), "expected a reset, got {e}");
    }
    let s = p.stop();
    assert_eq!(s.during.resets, 4);
    assert_eq!(s.during.faulted_connections, 4);
    assert_eq!(s.during.connections_opened, 3);
}

#[test]
fn reset_with_a_direction_decides_whether_the_write_happened() {
    let dir = tmp();
    let redis = redis(dir.path());
    let mut direct = connect(redis.addr, SLOW).unwrap();
    for (fault, key, reached) in [
        ("reset@upstream", "up", false),
        ("reset@downstream", "down", true),
    ] {
        let p = proxy(redis.addr, fault, 0, 60_000);
        p.arm(Instant::now()).unwrap();
        wait_window_start(&p);
        let mut conn = connect(p.local_addr(), SLOW).unwrap();
        let e = command(&mut conn, &[b"SET", key.as_bytes(), b"v"]).unwrap_err();
        assert!(is_reset(&e), "{fault}: expected a reset, got {e}");
        let stored = command(&mut direct, &[b"GET", key.as_bytes()]).unwrap();
        assert_eq!(stored == b"v", reached, "{fault}: redis has {stored:?}");
        let s = p.stop();
        assert_eq!(s.during.resets, 1, "{fault}");
    }
}

#[test]
fn reset_toxicity_affects_the_drawn_share_of_connections() {
    let dir = tmp();
    let redis = redis(dir.path());
    let p = proxy(redis.addr, "reset×0.5", 0, 60_000);
    p.arm(Instant::now()).unwrap();
    wait_window_start(&p);
    let mut reset = 0;
    for _ in 0..40 {
        match connect(p.local_addr(), SLOW).and_then(|mut conn| ping(&mut conn)) {
            Ok(()) => {}
            Err(e) if is_reset(&e) => reset += 1,
            Err(e) => panic!("neither a reply nor a reset: {e}"),
        }
    }
    let s = p.stop();
    assert_eq!(s.during.resets, reset);
    assert!(
        (8..=32).contains(&reset),
        "{reset} of 40 reset at toxicity 0.5"
    );
}

#[test]
fn fail_first_resets_exactly_n_connections_then_passes() {
    let dir = tmp();
    let redis = redis(dir.path());
    let p = proxy(redis.addr, "fail_first(3)", 0, 60_000);
    // A connection opened before the window is not one of the first N.
    let mut early = connect(p.local_addr(), SLOW).unwrap();
    p.arm(Instant::now()).unwrap();
    wait_window_start(&p);
    let mut outcomes = Vec::new();
    for _ in 0..6 {
        outcomes.push(
            match connect(p.local_addr(), SLOW).and_then(|mut conn| ping(&mut conn)) {
                Ok(()) => "ok",
                Err(e) if is_reset(&e) => "reset",
                Err(e) => panic!("{e}"),
            },
        );
    }
    ping(&mut early).unwrap();
    assert_eq!(outcomes, ["reset", "reset", "reset", "ok", "ok", "ok"]);
    let s = p.stop();
    assert_eq!(s.during.resets, 3);
    assert_eq!(s.during.connections_opened, 6);
}

#[test]
fn bandwidth_paces_the_transfer() {
    let dir = tmp();
    let redis = redis(dir.path());
    let mut direct = connect(redis.addr, SLOW).unwrap();
    let value = vec![b'x'; 128 * 1024];
    assert_eq!(
        command(&mut direct, &[b"SET", b"big", &value]).unwrap(),
        b"+OK"
    );
    let p = proxy(redis.addr, "bandwidth(256KiB/s)", 0, 60_000);
    p.arm(Instant::now()).unwrap();
    wait_window_start(&p);
    let mut conn = connect(p.local_addr(), SLOW).unwrap();
    let t = Instant::now();
    let got = command(&mut conn, &[b"GET", b"big"]).unwrap();
    let took = t.elapsed();
    assert_eq!(got.len(), value.len());
    // 128 KiB at 256 KiB/s is 0.5 s; the first piece (1/20 s of traffic) goes at once.
    assert!(
        took >= Duration::from_millis(450),
        "128 KiB at 256 KiB/s took {took:?}"
    );
    let s = p.stop();
    assert!(s.during.bytes_downstream >= value.len() as u64);
    assert_eq!(s.during.faulted_connections, 1);
}

#[test]
fn slow_close_delays_the_end_of_stream() {
    let dir = tmp();
    let redis = redis(dir.path());
    let p = proxy(redis.addr, "slow_close(600ms)", 0, 60_000);
    p.arm(Instant::now()).unwrap();
    wait_window_start(&p);
    let mut conn = connect(p.local_addr(), SLOW).unwrap();
    // QUIT: redis answers +OK and closes; the proxy passes the close on 600 ms later.
    assert_eq!(command(&mut conn, &[b"QUIT"]).unwrap(), b"+OK");
    let t = Instant::now();
    let mut buf = [0u8; 8];
    assert_eq!(conn.read(&mut buf).unwrap(), 0, "end of stream");
    let took = t.elapsed();
    assert!(
        took >= Duration::from_millis(500),
        "the close came after {took:?}"
    );
    let s = p.stop();
    assert_eq!(s.during.faulted_connections, 1);
}

#[test]
fn concurrency_peaks_and_busy_connections_are_counted() {
    let dir = tmp();
    let redis = redis(dir.path());
    // Replies are held 300 ms: five clients with a request each are all busy at once.
    let p = proxy(redis.addr, "latency(300ms)", 0, 60_000);
    p.arm(Instant::now()).unwrap();
    wait_window_start(&p);
    let addr = p.local_addr();
    let handles: Vec<_> = (0..5)
        .map(|_| {
            std::thread::spawn(move || {
                let mut c = connect(addr, SLOW).unwrap();
                for _ in 0..3 {
                    ping(&mut c).unwrap();
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let s = p.stop();
    assert_eq!(s.during.connections_opened, 5);
    assert_eq!(s.during.peak_connections, 5);
    assert!(s.during.peak_busy_connections >= 2, "{:?}", s.during);
    assert_eq!(s.during.requests, 15);
    assert_eq!(
        *s.series.busy.iter().max().unwrap(),
        s.during.peak_busy_connections
    );
}

#[test]
fn stop_closes_everything_and_nothing_listens() {
    let dir = tmp();
    let redis = redis(dir.path());
    let threads_before = proxy_threads("stopper");
    let p = proxy_named("stopper", redis.addr, "down", 0, 60_000);
    let addr = p.local_addr();
    let mut open = connect(addr, SLOW).unwrap();
    ping(&mut open).unwrap();
    assert_eq!(listening_on(addr.port()), 1);
    assert_eq!(proxy_threads("stopper"), threads_before + 1);
    let s = p.stop();
    assert_eq!(s.unarmed.connections_opened, 1);
    assert_eq!(listening_on(addr.port()), 0, "nothing listens after stop");
    let e = std::net::TcpStream::connect(addr).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::ConnectionRefused);
    // The proxied connection was closed: the client reads end of stream.
    let mut buf = [0u8; 8];
    assert_eq!(open.read(&mut buf).unwrap_or(0), 0);
    assert_eq!(
        proxy_threads("stopper"),
        threads_before,
        "the proxy thread was joined"
    );

    // Dropping a proxy in the middle of an outage is the same.
    let p = proxy_named("stopper", redis.addr, "down", 0, 60_000);
    let addr = p.local_addr();
    p.arm(Instant::now()).unwrap();
    wait_window_start(&p);
    drop(p);
    assert_eq!(listening_on(addr.port()), 0);
    assert_eq!(proxy_threads("stopper"), threads_before);
    // And redis never noticed a thing.
    let mut direct = connect(redis.addr, SLOW).unwrap();
    direct.write_all(&resp(&[b"PING"])).unwrap();
    assert_eq!(read_reply(&mut direct).unwrap(), b"+PONG");
}
