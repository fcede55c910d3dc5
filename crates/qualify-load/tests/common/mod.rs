//! Real servers for the load generator's tests: the `orders` example service (python3) and
//! `redis-server`, each started on a free loopback port and killed when its guard drops.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::AtomicBool;
use std::sync::mpsc;
use std::time::Duration;

use qualify_load::ready::{ReadyCheck, wait_ready};

/// A server process, killed (SIGKILL, then reaped) on drop.
pub struct Server {
    child: Child,
    pub addr: SocketAddr,
}

impl Server {
    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn orders_script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/orders/orders.py")
}

/// The orders service with `workers` workers and a fixed `service_time` (seconds), plus
/// `extra` arguments; ready (`/healthz` answers) when returned.
pub fn orders(workers: u32, service_time: f64, extra: &[&str]) -> Server {
    let mut child = Command::new("python3")
        .arg(orders_script())
        .args(["--port", "0", "--distribution", "fixed"])
        .args(["--workers", &workers.to_string()])
        .args(["--service-time", &service_time.to_string()])
        .args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("python3 runs examples/orders/orders.py");
    let stdout = child.stdout.take().expect("piped stdout");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let line = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("orders prints its address within 30 s");
    let addr: SocketAddr = line
        .split_whitespace()
        .nth(3)
        .and_then(|a| a.parse().ok())
        .unwrap_or_else(|| panic!("no address in {line:?}"));
    let server = Server { child, addr };
    let check = ReadyCheck::Http {
        path: "/healthz".into(),
    };
    wait_ready(
        &check,
        addr,
        Duration::from_secs(30),
        &AtomicBool::new(false),
    )
    .expect("orders answers /healthz");
    server
}

/// A loopback port nothing listens on (bound, then released).
pub fn free_addr() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
    listener.local_addr().expect("a bound address")
}

/// Whether the redis tests should run: redis-server is installed, or CI requires them
/// (`QUALIFY_REQUIRE_REDIS=1`: then a missing redis-server fails the test).
pub fn have_redis() -> bool {
    let found = Command::new("redis-server")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !found {
        assert!(
            std::env::var_os("QUALIFY_REQUIRE_REDIS").is_none(),
            "QUALIFY_REQUIRE_REDIS is set but redis-server is not installed (apt-get install redis-server)"
        );
        eprintln!("skipped: redis-server is not installed (apt-get install redis-server)");
    }
    found
}

/// redis-server on a free loopback port, without persistence, plus `extra` config arguments
/// (e.g. `["--maxmemory", "2mb"]`); ready (answers PING) when returned.
pub fn redis(extra: &[&str]) -> Server {
    for _ in 0..5 {
        let addr = free_addr();
        let child = Command::new("redis-server")
            .args(["--bind", "127.0.0.1", "--port", &addr.port().to_string()])
            .args(["--save", "", "--appendonly", "no", "--protected-mode", "no"])
            .args(["--loglevel", "warning"])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("redis-server starts");
        let server = Server { child, addr };
        let ready = wait_ready(
            &ReadyCheck::Tcp,
            addr,
            Duration::from_secs(20),
            &AtomicBool::new(false),
        );
        if ready.is_ok() && command(addr, "PING").starts_with("+PONG") {
            return server;
        }
        // The port was taken meanwhile: try another.
    }
    panic!("redis-server did not come up on a free port in 5 tries");
}

/// Send one inline command to a line-protocol server and return its first reply line.
pub fn command(addr: SocketAddr, line: &str) -> String {
    let Ok(mut stream) = TcpStream::connect_timeout(&addr, Duration::from_secs(5)) else {
        return String::new();
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    if stream.write_all(format!("{line}\r\n").as_bytes()).is_err() {
        return String::new();
    }
    let mut reply = Vec::new();
    let mut byte = [0u8; 1];
    while reply.last() != Some(&b'\n') && stream.read(&mut byte).is_ok_and(|n| n == 1) {
        reply.push(byte[0]);
    }
    String::from_utf8_lossy(&reply).trim_end().to_string()
}
