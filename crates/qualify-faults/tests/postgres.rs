//! The fault proxy in front of a real PostgreSQL 15 (started as `nobody` in a temp dir): each
//! fault as a client of the wire protocol sees it, and the per-phase counters of a session.
//! One server for the whole file (initdb takes a while); the scenarios run in sequence.

mod common;

use std::io::ErrorKind;
use std::time::{Duration, Instant};

use common::*;

const SLOW: Duration = Duration::from_secs(10);

#[test]
fn postgres_through_the_fault_proxy() {
    let Some(pg) = postgres() else { return };
    let upstream = pg.server.addr;

    // No fault: the protocol passes, and queries are counted per phase.
    {
        let p = proxy(upstream, "none", 1_000, 2_500);
        let mut conn = PgConn::connect(p.local_addr(), SLOW).unwrap();
        assert_eq!(conn.query("SELECT 1").unwrap(), vec![b"1".to_vec()]);
        p.arm(Instant::now()).unwrap();
        for _ in 0..2 {
            conn.query("SELECT 2").unwrap();
        }
        wait_window_start(&p);
        for _ in 0..3 {
            conn.query("SELECT 3").unwrap();
        }
        wait_window_end(&p);
        assert_eq!(conn.query("SELECT 40 + 2").unwrap(), vec![b"42".to_vec()]);
        drop(conn);
        let addr = p.local_addr();
        let s = p.stop();
        assert_eq!(s.unarmed.connections_opened, 1);
        assert!(
            s.unarmed.requests >= 2,
            "startup and a query: {:?}",
            s.unarmed
        );
        assert_eq!(s.before.requests, 2, "{:?}", s.before);
        assert_eq!(s.during.requests, 3, "{:?}", s.during);
        assert_eq!(s.after.requests, 1, "{:?}", s.after);
        assert_eq!(s.during.peak_connections, 1);
        assert_eq!(s.during.peak_busy_connections, 1);
        assert_eq!(listening_on(addr.port()), 0, "nothing listens after stop");
    }

    // latency: every round trip in the window takes at least the latency.
    {
        let p = proxy(upstream, "latency(200ms)", 0, 60_000);
        p.arm(Instant::now()).unwrap();
        wait_window_start(&p);
        let mut conn = PgConn::connect(p.local_addr(), SLOW).unwrap();
        let t = Instant::now();
        conn.query("SELECT 1").unwrap();
        let took = t.elapsed();
        assert!(took >= Duration::from_millis(200), "SELECT 1 took {took:?}");
        let s = p.stop();
        assert_eq!(s.during.faulted_connections, 1);
    }

    // down: the client's connect is refused.
    {
        let p = proxy(upstream, "down", 0, 60_000);
        p.arm(Instant::now()).unwrap();
        wait_window_start(&p);
        let e = PgConn::connect(p.local_addr(), SLOW)
            .err()
            .expect("refused");
        assert_eq!(e.kind(), ErrorKind::ConnectionRefused, "{e}");
        p.stop();
    }

    // reset: the session is reset before it starts.
    {
        let p = proxy(upstream, "reset", 0, 60_000);
        p.arm(Instant::now()).unwrap();
        wait_window_start(&p);
        let e = PgConn::connect(p.local_addr(), SLOW).err().expect("reset");
        assert!(is_reset(&e), "expected a reset, got {e}");
        let s = p.stop();
        assert_eq!(s.during.resets, 1);
    }

    // blackhole: connected, and the startup is never answered.
    {
        let p = proxy(upstream, "blackhole", 0, 60_000);
        p.arm(Instant::now()).unwrap();
        wait_window_start(&p);
        let e = PgConn::connect(p.local_addr(), Duration::from_millis(300))
            .err()
            .expect("no answer");
        assert!(is_timeout(&e), "expected a read timeout, got {e}");
        let s = p.stop();
        assert_eq!(s.during.connections_opened, 1);
        assert_eq!(s.during.requests, 1, "the startup message was swallowed");
        assert_eq!(s.during.replies, 0);
    }

    // fail_first(2): two sessions reset, then sessions work.
    {
        let p = proxy(upstream, "fail_first(2)", 0, 60_000);
        p.arm(Instant::now()).unwrap();
        wait_window_start(&p);
        let outcomes: Vec<&str> = (0..4)
            .map(|_| match PgConn::connect(p.local_addr(), SLOW) {
                Ok(mut c) => {
                    c.query("SELECT 1").unwrap();
                    "ok"
                }
                Err(e) if is_reset(&e) => "reset",
                Err(e) => panic!("{e}"),
            })
            .collect();
        assert_eq!(outcomes, ["reset", "reset", "ok", "ok"]);
        let s = p.stop();
        assert_eq!(s.during.resets, 2);
    }

    // bandwidth: a 64 KiB result at 128 KiB/s takes about half a second.
    {
        let p = proxy(upstream, "bandwidth(128KiB/s)", 0, 60_000);
        let mut conn = PgConn::connect(p.local_addr(), SLOW).unwrap();
        p.arm(Instant::now()).unwrap();
        wait_window_start(&p);
        let t = Instant::now();
        let rows = conn.query("SELECT repeat('x', 65536)").unwrap();
        let took = t.elapsed();
        assert_eq!(rows[0].len(), 65536);
        assert!(
            took >= Duration::from_millis(400),
            "64 KiB at 128 KiB/s took {took:?}"
        );
        p.stop();
    }
}
