//! Benchmark of the fault proxy (run by `bench/proxy.sh`, not a test).
//!
//! 1. Overhead at an offered rate (open model, as qualify's load generator drives a service):
//!    PINGs scheduled at a fixed rate over 8 connections, latency measured from each request's
//!    intended start, direct and through the proxy with no fault, alternating for R rounds;
//!    achieved rate and p50 side by side, with ratios.
//! 2. Overhead at saturation: a closed-loop PING stream over C connections, same alternation:
//!    the most the proxy can forward on this machine, next to redis direct.
//! 3. Reaction: for `reset`, `down` and `latency(50ms)`, the time from the window's scheduled
//!    start to the first request a client sees affected, over N trials (median, max), and the
//!    proxy's own lateness in switching the fault on.
//!
//! Usage: proxy_bench REDIS_ADDR [--seconds S] [--rounds R] [--trials N]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use qualify_faults::{Fault, Proxy, ProxyConfig, Window};

const PING: &[u8] = b"*1\r\n$4\r\nPING\r\n";
const PONG: &[u8] = b"+PONG\r\n";

fn ping(s: &mut TcpStream) -> std::io::Result<()> {
    s.write_all(PING)?;
    let mut buf = [0u8; 7];
    s.read_exact(&mut buf)?;
    if buf != PONG {
        // A benchmark's probe: the run stops on it with this message, nothing matches on it.
        return Err(std::io::Error::other("unexpected reply"));
    }
    Ok(())
}

fn connect(addr: SocketAddr) -> std::io::Result<TcpStream> {
    let s = TcpStream::connect(addr)?;
    s.set_nodelay(true)?;
    s.set_read_timeout(Some(Duration::from_secs(5)))?;
    Ok(s)
}

struct Stream {
    requests: u64,
    seconds: f64,
    p50_us: f64,
    p99_us: f64,
}

/// `connections` threads, each a PING loop for `seconds`; latencies in µs.
fn stream(addr: SocketAddr, connections: usize, seconds: f64) -> Stream {
    let deadline = Instant::now() + Duration::from_secs_f64(seconds);
    let start = Instant::now();
    let handles: Vec<_> = (0..connections)
        .map(|_| {
            std::thread::spawn(move || {
                let mut lat = Vec::with_capacity(200_000);
                let Ok(mut s) = connect(addr) else { return lat };
                while Instant::now() < deadline && lat.len() < 5_000_000 {
                    let t = Instant::now();
                    if ping(&mut s).is_err() {
                        break;
                    }
                    lat.push(t.elapsed().as_nanos() as u64);
                }
                lat
            })
        })
        .collect();
    let mut all: Vec<u64> = handles
        .into_iter()
        .flat_map(|h| h.join().unwrap_or_default())
        .collect();
    let elapsed = start.elapsed().as_secs_f64();
    all.sort_unstable();
    let pct = |q: f64| {
        if all.is_empty() {
            f64::NAN
        } else {
            all[((all.len() - 1) as f64 * q) as usize] as f64 / 1000.0
        }
    };
    Stream {
        requests: all.len() as u64,
        seconds: elapsed,
        p50_us: pct(0.5),
        p99_us: pct(0.99),
    }
}

/// Open model: `rate` requests/s spread over `connections` threads, each on its own schedule
/// (intended start i/rate_per_connection); a late request is sent at once and its wait counts.
fn open_stream(addr: SocketAddr, connections: usize, rate: f64, seconds: f64) -> Stream {
    let per = rate / connections as f64;
    let start = Instant::now() + Duration::from_millis(20);
    let handles: Vec<_> = (0..connections)
        .map(|k| {
            std::thread::spawn(move || {
                let mut lat = Vec::new();
                let Ok(mut s) = connect(addr) else { return lat };
                let offset = k as f64 / rate;
                let total = (per * seconds) as u64;
                for i in 0..total {
                    let intended = start + Duration::from_secs_f64(offset + i as f64 / per);
                    let now = Instant::now();
                    if intended > now {
                        std::thread::sleep(intended - now);
                    }
                    if ping(&mut s).is_err() {
                        break;
                    }
                    lat.push(intended.elapsed().as_nanos() as u64);
                }
                lat
            })
        })
        .collect();
    let mut all: Vec<u64> = handles
        .into_iter()
        .flat_map(|h| h.join().unwrap_or_default())
        .collect();
    let elapsed = start.elapsed().as_secs_f64();
    all.sort_unstable();
    let pct = |q: f64| {
        if all.is_empty() {
            f64::NAN
        } else {
            all[((all.len() - 1) as f64 * q) as usize] as f64 / 1000.0
        }
    };
    Stream {
        requests: all.len() as u64,
        seconds: elapsed,
        p50_us: pct(0.5),
        p99_us: pct(0.99),
    }
}

fn fail(message: &str) -> ! {
    eprintln!("proxy_bench: {message}");
    std::process::exit(2)
}

fn proxy(upstream: SocketAddr, fault: &str, start: Duration) -> Proxy {
    let fault: Fault = match fault.parse() {
        Ok(f) => f,
        Err(e) => fail(&format!("{fault}: {e}")),
    };
    let window = Window {
        start,
        end: start + Duration::from_secs(30),
    };
    match Proxy::start(ProxyConfig::new("bench", upstream, fault, window)) {
        Ok(p) => p,
        Err(e) => fail(&e.to_string()),
    }
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Seconds from the scheduled start to the first affected request (by its send time), and the
/// proxy's own lateness.
fn reaction(upstream: SocketAddr, fault: &str) -> Option<(f64, f64)> {
    let lead = Duration::from_millis(300);
    let p = proxy(upstream, fault, lead);
    let addr = p.local_addr();
    let mut conn = if fault.starts_with("latency") {
        connect(addr).ok()
    } else {
        None
    };
    let t0 = Instant::now();
    let scheduled = t0 + lead;
    p.arm(t0).ok()?;
    let give_up = scheduled + Duration::from_secs(2);
    let mut first = None;
    while Instant::now() < give_up {
        let sent = Instant::now();
        let affected = match conn.as_mut() {
            // latency: one connection; a reply that took ≥ 40 ms was delayed.
            Some(c) => ping(c).is_err() || sent.elapsed() >= Duration::from_millis(40),
            // reset/down: a fresh connection per request; any failure is the fault.
            None => connect(addr).and_then(|mut s| ping(&mut s)).is_err(),
        };
        if affected {
            first = Some(sent);
            break;
        }
    }
    let late = p.stats().activation?.started_late_by_seconds?;
    drop(p);
    let first = first?;
    Some((
        first.saturating_duration_since(scheduled).as_secs_f64(),
        late,
    ))
}

/// One table row: `run` direct and through a fresh no-fault proxy, alternating order per round.
fn compare(upstream: SocketAddr, rounds: usize, label: f64, run: impl Fn(SocketAddr) -> Stream) {
    let (mut d_rps, mut p_rps, mut d50, mut p50, mut d99, mut p99) =
        (vec![], vec![], vec![], vec![], vec![], vec![]);
    for round in 0..rounds {
        let p = proxy(upstream, "none", Duration::from_secs(3600));
        let via = p.local_addr();
        let order: [SocketAddr; 2] = if round % 2 == 0 {
            [upstream, via]
        } else {
            [via, upstream]
        };
        for addr in order {
            let s = run(addr);
            let rps = s.requests as f64 / s.seconds;
            if addr == upstream {
                d_rps.push(rps);
                d50.push(s.p50_us);
                d99.push(s.p99_us);
            } else {
                p_rps.push(rps);
                p50.push(s.p50_us);
                p99.push(s.p99_us);
            }
        }
        drop(p);
    }
    let (dr, pr) = (median(&mut d_rps), median(&mut p_rps));
    let (a, b) = (median(&mut d50), median(&mut p50));
    println!(
        "{label:>7}  {dr:>12.0} {pr:>12.0} {:>7.3}  {a:>7.1}us {b:>7.1}us {:>8.1}us  {:>7.1}us {:>7.1}us",
        pr / dr,
        b - a,
        median(&mut d99),
        median(&mut p99)
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let Some(upstream) = args.get(1).and_then(|a| a.parse::<SocketAddr>().ok()) else {
        eprintln!("usage: proxy_bench REDIS_ADDR [--seconds S] [--rounds R] [--trials N]");
        std::process::exit(2);
    };
    let flag = |name: &str, default: f64| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(default)
    };
    let seconds = flag("--seconds", 3.0);
    let rounds = flag("--rounds", 3.0) as usize;
    let trials = flag("--trials", 10.0) as usize;

    println!(
        "# overhead at an offered rate: open model over 8 connections, {seconds} s per run, {rounds} rounds, direct and proxied alternating; latency from intended start"
    );
    println!(
        "{:>7}  {:>12} {:>12} {:>7}  {:>9} {:>9} {:>10}  {:>9} {:>9}",
        "rate",
        "direct rps",
        "proxy rps",
        "ratio",
        "direct50",
        "proxy50",
        "added p50",
        "direct99",
        "proxy99"
    );
    for rate in [1_000.0, 5_000.0, 10_000.0] {
        compare(upstream, rounds, rate, |addr| {
            open_stream(addr, 8, rate, seconds)
        });
    }
    println!();
    println!(
        "# overhead at saturation: closed-loop PING stream, {seconds} s per run, {rounds} rounds, direct and proxied alternating"
    );
    println!(
        "{:>7}  {:>12} {:>12} {:>7}  {:>9} {:>9} {:>10}  {:>9} {:>9}",
        "conns",
        "direct rps",
        "proxy rps",
        "ratio",
        "direct50",
        "proxy50",
        "added p50",
        "direct99",
        "proxy99"
    );
    for connections in [1usize, 8, 32] {
        compare(upstream, rounds, connections as f64, |addr| {
            stream(addr, connections, seconds)
        });
    }

    println!();
    println!("# reaction: scheduled window start → first affected request ({trials} trials each)");
    println!(
        "{:>14}  {:>12} {:>12}  {:>14} {:>14}",
        "fault", "median", "max", "proxy late med", "proxy late max"
    );
    for fault in ["reset", "down", "latency(50ms)"] {
        let mut effect = Vec::new();
        let mut late = Vec::new();
        for _ in 0..trials {
            if let Some((e, l)) = reaction(upstream, fault) {
                effect.push(e * 1000.0);
                late.push(l * 1000.0);
            }
        }
        if effect.is_empty() {
            println!("{fault:>14}  no effect observed");
            continue;
        }
        let emax = effect.iter().cloned().fold(f64::MIN, f64::max);
        let lmax = late.iter().cloned().fold(f64::MIN, f64::max);
        println!(
            "{fault:>14}  {:>10.2}ms {emax:>10.2}ms  {:>12.2}ms {lmax:>12.2}ms",
            median(&mut effect),
            median(&mut late)
        );
    }
}
