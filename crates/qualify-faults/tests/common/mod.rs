//! Real dependencies for the proxy tests: redis-server and PostgreSQL started in temp
//! directories on free loopback ports, killed (whole process group) when their guard drops; a
//! minimal RESP and PostgreSQL wire client; and checks that nothing is left listening.
#![allow(dead_code)]

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use qualify_faults::{Fault, Proxy, ProxyConfig, Window};

/// A free loopback port (bound then released; the caller binds it right after).
pub fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    l.local_addr().expect("local addr").port()
}

/// A server process in its own process group. On drop it is asked to stop with `stop_signal`
/// (so it reaps its own children), then the whole group is killed.
pub struct Server {
    child: Child,
    pub addr: SocketAddr,
    pub name: &'static str,
    pub stop_signal: libc::c_int,
}

impl Drop for Server {
    fn drop(&mut self) {
        let pgid = self.child.id() as i32;
        unsafe {
            libc::kill(pgid, self.stop_signal);
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline && matches!(self.child.try_wait(), Ok(None)) {
            std::thread::sleep(Duration::from_millis(10));
        }
        unsafe {
            libc::kill(-pgid, libc::SIGKILL);
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Make the child its own process group leader, optionally drop to `uid`/`gid`, and have it
/// killed if the test process dies (set after the uid change, which would clear it).
fn contain(cmd: &mut Command, ids: Option<(u32, u32)>) {
    unsafe {
        cmd.pre_exec(move || {
            if libc::setpgid(0, 0) != 0 {
                return Err(io::Error::last_os_error());
            }
            if let Some((uid, gid)) = ids {
                if libc::setgroups(0, std::ptr::null()) != 0
                    || libc::setgid(gid) != 0
                    || libc::setuid(uid) != 0
                {
                    return Err(io::Error::last_os_error());
                }
            }
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) != 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

fn wait_until(what: &str, within: Duration, mut ready: impl FnMut() -> bool) {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if ready() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("{what} not ready within {within:?}");
}

/// redis-server on a free loopback port, no persistence, in `dir`.
pub fn redis(dir: &Path) -> Server {
    let port = free_port();
    let mut cmd = Command::new("redis-server");
    cmd.args([
        "--port",
        &port.to_string(),
        "--bind",
        "127.0.0.1",
        "--save",
        "",
        "--appendonly",
        "no",
        "--dir",
    ])
    .arg(dir)
    .stdin(Stdio::null())
    .stdout(Stdio::null())
    .stderr(Stdio::null());
    contain(&mut cmd, None);
    let child = cmd
        .spawn()
        .expect("start redis-server (Debian package redis-server; .ci/run installs it)");
    let server = Server {
        child,
        addr: SocketAddr::from(([127, 0, 0, 1], port)),
        name: "redis-server",
        stop_signal: libc::SIGTERM,
    };
    wait_until("redis-server", Duration::from_secs(10), || {
        TcpStream::connect(server.addr)
            .and_then(|mut s| {
                s.set_read_timeout(Some(Duration::from_secs(1)))?;
                ping(&mut s)
            })
            .is_ok()
    });
    server
}

/// A RESP command (array of bulk strings).
pub fn resp(args: &[&[u8]]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// Read one RESP reply: a simple line (`+OK`, `-ERR…`, `:1`) or a bulk string (its payload).
pub fn read_reply(s: &mut TcpStream) -> io::Result<Vec<u8>> {
    let line = read_line(s)?;
    if let Some(len) = line.strip_prefix(b"$") {
        let len: i64 = std::str::from_utf8(len)
            .ok()
            .and_then(|t| t.parse().ok())
            .ok_or_else(|| io::Error::other("bad bulk length"))?;
        if len < 0 {
            return Ok(b"(nil)".to_vec());
        }
        let mut body = vec![0u8; len as usize + 2];
        s.read_exact(&mut body)?;
        body.truncate(len as usize);
        return Ok(body);
    }
    Ok(line)
}

fn read_line(s: &mut TcpStream) -> io::Result<Vec<u8>> {
    let mut line = Vec::new();
    let mut byte = [0u8; 1];
    loop {
        let n = s.read(&mut byte)?;
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "connection closed",
            ));
        }
        if byte[0] == b'\n' {
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            return Ok(line);
        }
        line.push(byte[0]);
    }
}

/// Send a command and read its reply.
pub fn command(s: &mut TcpStream, args: &[&[u8]]) -> io::Result<Vec<u8>> {
    s.write_all(&resp(args))?;
    read_reply(s)
}

pub fn ping(s: &mut TcpStream) -> io::Result<()> {
    let reply = command(s, &[b"PING"])?;
    if reply == b"+PONG" {
        Ok(())
    } else {
        Err(io::Error::other(format!(
            "PING answered {:?}",
            String::from_utf8_lossy(&reply)
        )))
    }
}

/// Connect with read/write timeouts.
pub fn connect(addr: SocketAddr, timeout: Duration) -> io::Result<TcpStream> {
    let s = TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
    s.set_read_timeout(Some(timeout))?;
    s.set_write_timeout(Some(timeout))?;
    s.set_nodelay(true)?;
    Ok(s)
}

pub fn is_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

pub fn is_reset(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionReset
            | io::ErrorKind::BrokenPipe
            | io::ErrorKind::ConnectionAborted
    )
}

/// Start a proxy in front of `upstream` with `fault` (parsed) in `[start, end)` ms.
pub fn proxy(upstream: SocketAddr, fault: &str, start_ms: u64, end_ms: u64) -> Proxy {
    proxy_named("dep", upstream, fault, start_ms, end_ms)
}

pub fn proxy_named(
    name: &str,
    upstream: SocketAddr,
    fault: &str,
    start_ms: u64,
    end_ms: u64,
) -> Proxy {
    let fault: Fault = fault.parse().expect("fault parses");
    let window = Window {
        start: Duration::from_millis(start_ms),
        end: Duration::from_millis(end_ms),
    };
    let mut config = ProxyConfig::new(name, upstream, fault, window);
    config.bucket = Duration::from_millis(100);
    Proxy::start(config).expect("proxy starts")
}

/// Poll the proxy until the window has started (or ended), so a test acts inside a phase.
pub fn wait_window_start(p: &Proxy) {
    wait_until("the fault window's start", Duration::from_secs(20), || {
        p.stats()
            .activation
            .is_some_and(|a| a.started_late_by_seconds.is_some())
    });
}

pub fn wait_window_end(p: &Proxy) {
    wait_until("the fault window's end", Duration::from_secs(20), || {
        p.stats()
            .activation
            .is_some_and(|a| a.ended_late_by_seconds.is_some())
    });
}

/// Loopback TCP sockets in LISTEN state on `port`, from /proc/net/tcp and tcp6.
pub fn listening_on(port: u16) -> usize {
    let mut count = 0;
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(text) = std::fs::read_to_string(table) else {
            continue;
        };
        for line in text.lines().skip(1) {
            let fields: Vec<&str> = line.split_whitespace().collect();
            if fields.len() < 4 {
                continue;
            }
            let local_port = fields[1]
                .rsplit(':')
                .next()
                .and_then(|p| u16::from_str_radix(p, 16).ok());
            if local_port == Some(port) && fields[3] == "0A" {
                count += 1;
            }
        }
    }
    count
}

/// Threads of this process running the proxy of dependency `name`.
pub fn proxy_threads(name: &str) -> usize {
    let comm: String = format!("proxy-{name}").chars().take(15).collect();
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
        return 0;
    };
    dir.filter_map(|e| e.ok())
        .filter(|e| {
            std::fs::read_to_string(e.path().join("comm")).is_ok_and(|c| c.trim_end() == comm)
        })
        .count()
}

// ---- PostgreSQL ----

/// A PostgreSQL 15 cluster in a temp dir, run as `nobody` when we are root. `None` (with the
/// reason printed) only when the binaries are missing.
pub struct Postgres {
    pub server: Server,
    _dir: tempfile::TempDir,
}

pub const PG_BIN: &str = "/usr/lib/postgresql/15/bin";

pub fn postgres() -> Option<Postgres> {
    if !Path::new(PG_BIN).join("postgres").exists() {
        assert!(
            std::env::var_os("QUALIFY_REQUIRE_POSTGRES").is_none(),
            "QUALIFY_REQUIRE_POSTGRES is set but {PG_BIN}/postgres is missing (apt-get install postgresql-15)"
        );
        eprintln!(
            "SKIP: {PG_BIN}/postgres not found (Debian package postgresql-15; .ci/run installs it)"
        );
        return None;
    }
    let dir = tempfile::Builder::new()
        .prefix("qualify-faults-pg")
        .tempdir()
        .expect("temp dir");
    let ids = if unsafe { libc::geteuid() } == 0 {
        // PostgreSQL refuses to run as root: hand the directory to nobody.
        std::os::unix::fs::chown(dir.path(), Some(65534), Some(65534)).expect("chown to nobody");
        Some((65534, 65534))
    } else {
        None
    };
    let data = dir.path().join("data");
    let mut initdb = Command::new(Path::new(PG_BIN).join("initdb"));
    initdb
        .args([
            "-A",
            "trust",
            "-U",
            "postgres",
            "-E",
            "UTF8",
            "--locale=C",
            "--no-sync",
            "-D",
        ])
        .arg(&data)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    contain(&mut initdb, ids);
    let out = initdb.output().expect("run initdb");
    assert!(
        out.status.success(),
        "initdb failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let port = free_port();
    let mut cmd = Command::new(Path::new(PG_BIN).join("postgres"));
    cmd.arg("-D")
        .arg(&data)
        .args(["-p", &port.to_string(), "-c", "listen_addresses=127.0.0.1"])
        .arg("-c")
        .arg(format!("unix_socket_directories={}", dir.path().display()))
        .args([
            "-c",
            "fsync=off",
            "-c",
            "shared_buffers=16MB",
            "-c",
            "max_connections=40",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    contain(&mut cmd, ids);
    let child = cmd.spawn().expect("start postgres");
    let server = Server {
        child,
        addr: SocketAddr::from(([127, 0, 0, 1], port)),
        name: "postgres",
        // Immediate shutdown: the postmaster stops and reaps its backends.
        stop_signal: libc::SIGQUIT,
    };
    wait_until("postgres", Duration::from_secs(30), || {
        PgConn::connect(server.addr, Duration::from_secs(2)).is_ok()
    });
    Some(Postgres { server, _dir: dir })
}

/// A PostgreSQL wire-protocol (v3) session: startup with trust auth and simple queries.
pub struct PgConn {
    pub stream: TcpStream,
}

impl PgConn {
    pub fn connect(addr: SocketAddr, timeout: Duration) -> io::Result<PgConn> {
        let stream = connect(addr, timeout)?;
        let mut conn = PgConn { stream };
        conn.startup()?;
        Ok(conn)
    }

    /// The startup exchange on an already connected stream.
    pub fn startup(&mut self) -> io::Result<()> {
        let mut body = Vec::new();
        body.extend_from_slice(&196_608u32.to_be_bytes()); // protocol 3.0
        for (k, v) in [("user", "postgres"), ("database", "postgres")] {
            body.extend_from_slice(k.as_bytes());
            body.push(0);
            body.extend_from_slice(v.as_bytes());
            body.push(0);
        }
        body.push(0);
        let mut msg = ((body.len() + 4) as u32).to_be_bytes().to_vec();
        msg.extend_from_slice(&body);
        self.stream.write_all(&msg)?;
        self.until_ready().map(|_| ())
    }

    /// Messages up to ReadyForQuery; DataRow column values are returned. An ErrorResponse is
    /// an error.
    fn until_ready(&mut self) -> io::Result<Vec<Vec<u8>>> {
        let mut rows = Vec::new();
        loop {
            let mut head = [0u8; 5];
            self.stream.read_exact(&mut head)?;
            let len = u32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize;
            let mut body = vec![0u8; len.saturating_sub(4)];
            self.stream.read_exact(&mut body)?;
            match head[0] {
                b'Z' => return Ok(rows),
                b'E' => {
                    return Err(io::Error::other(format!(
                        "postgres error: {}",
                        String::from_utf8_lossy(&body)
                    )));
                }
                b'R' if body.len() >= 4 && body[..4] != [0, 0, 0, 0] => {
                    return Err(io::Error::other(
                        "postgres asks for a password; expected trust",
                    ));
                }
                b'D' => {
                    // int16 column count, then per column int32 length + bytes.
                    let mut at = 2;
                    while at + 4 <= body.len() {
                        let l = i32::from_be_bytes([
                            body[at],
                            body[at + 1],
                            body[at + 2],
                            body[at + 3],
                        ]);
                        at += 4;
                        if l >= 0 {
                            rows.push(body[at..at + l as usize].to_vec());
                            at += l as usize;
                        }
                    }
                }
                _ => {}
            }
        }
    }

    /// A simple query; returns every column value of every row.
    pub fn query(&mut self, sql: &str) -> io::Result<Vec<Vec<u8>>> {
        let mut msg = vec![b'Q'];
        msg.extend_from_slice(&((sql.len() + 5) as u32).to_be_bytes());
        msg.extend_from_slice(sql.as_bytes());
        msg.push(0);
        self.stream.write_all(&msg)?;
        self.until_ready()
    }
}

// ---- HTTP ----

/// A small HTTP/1.1 server (Python's standard library, keep-alive): `GET|POST /…` reads the
/// request body (`Content-Length` or chunked) and answers `got N` (its length), `/chunked`
/// answers `hello world` in two chunks, `/hits` the number of other requests it served.
const HTTP_SERVER: &str = r#"
import http.server, sys
hits = 0
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    def log_message(self, *a):
        pass
    def body(self):
        if self.headers.get("transfer-encoding", "").lower() == "chunked":
            data = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0], 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return data
                data += self.rfile.read(size)
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("content-length") or 0))
    def answer(self):
        global hits
        data = self.body()
        if self.path == "/hits":
            return self.send(str(hits).encode())
        hits += 1
        if self.path == "/chunked":
            self.send_response(200)
            self.send_header("transfer-encoding", "chunked")
            self.end_headers()
            for part in (b"hello ", b"world"):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
            self.wfile.write(b"0\r\n\r\n")
            return
        self.send(b"got %d" % len(data))
    def send(self, body):
        self.send_response(200)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    do_GET = answer
    do_POST = answer
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
"#;

/// The HTTP server above on a free loopback port.
pub fn http_server() -> Server {
    let port = free_port();
    let mut cmd = Command::new("/usr/bin/python3");
    cmd.args(["-c", HTTP_SERVER, &port.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    contain(&mut cmd, None);
    let child = cmd.spawn().expect("start python3's http.server");
    let server = Server {
        child,
        addr: SocketAddr::from(([127, 0, 0, 1], port)),
        name: "http.server",
        stop_signal: libc::SIGTERM,
    };
    wait_until("the HTTP server", Duration::from_secs(10), || {
        TcpStream::connect(server.addr).is_ok()
    });
    server
}

/// One HTTP reply as a test reads it.
#[derive(Debug)]
pub struct HttpReply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl HttpReply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Send `request` on `s` and read one reply (`Content-Length` or chunked body).
pub fn http_exchange(s: &mut TcpStream, request: &[u8]) -> io::Result<HttpReply> {
    s.write_all(request)?;
    let status_line = read_line(s)?;
    let status = String::from_utf8_lossy(&status_line)
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| io::Error::other(format!("bad status line {status_line:?}")))?;
    let mut headers = Vec::new();
    loop {
        let line = read_line(s)?;
        if line.is_empty() {
            break;
        }
        let text = String::from_utf8_lossy(&line);
        if let Some((n, v)) = text.split_once(':') {
            headers.push((n.trim().to_string(), v.trim().to_string()));
        }
    }
    let mut reply = HttpReply {
        status,
        headers,
        body: Vec::new(),
    };
    if reply
        .header("transfer-encoding")
        .is_some_and(|v| v.eq_ignore_ascii_case("chunked"))
    {
        loop {
            let size = usize::from_str_radix(&String::from_utf8_lossy(&read_line(s)?), 16)
                .map_err(|_| io::Error::other("bad chunk size"))?;
            if size == 0 {
                while !read_line(s)?.is_empty() {}
                break;
            }
            let mut chunk = vec![0u8; size + 2];
            s.read_exact(&mut chunk)?;
            chunk.truncate(size);
            reply.body.extend_from_slice(&chunk);
        }
    } else {
        let n: usize = reply
            .header("content-length")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        let mut body = vec![0u8; n];
        s.read_exact(&mut body)?;
        reply.body = body;
    }
    Ok(reply)
}

/// Start an HTTP-mode proxy in front of `upstream` with `fault` in `[start, end)` ms.
pub fn http_proxy(upstream: SocketAddr, fault: &str, start_ms: u64, end_ms: u64) -> Proxy {
    let fault: Fault = fault.parse().expect("fault parses");
    let window = Window {
        start: Duration::from_millis(start_ms),
        end: Duration::from_millis(end_ms),
    };
    let mut config = ProxyConfig::new("api", upstream, fault, window);
    config.http = true;
    Proxy::start(config).expect("proxy starts")
}
