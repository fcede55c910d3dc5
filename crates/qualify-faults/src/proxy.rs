//! A TCP fault proxy for one dependency: loopback listener → the dependency's address, with one
//! fault active during a window.
//!
//! The proxy runs a single-threaded tokio runtime on its own thread. [`Proxy::start_with`] runs a
//! caller's closure first on that thread — e.g. `setns` into the cell's network namespace, which
//! is per thread — so the listener and every socket live in that namespace.
//!
//! Time: [`Proxy::arm`] sets `t0` (the load's measured phase start); the window is `[t0 + start,
//! t0 + end)`. Before arming and outside the window traffic passes clean. Inside it:
//!
//! | fault | effect |
//! |---|---|
//! | `down` | the listener stops listening (connects are refused, the port stays reserved); open connections are closed at the window's start; listening resumes at its end |
//! | `blackhole` | data in the fault's direction(s) is read and dropped; nothing is answered |
//! | `reset` | new connections are reset (RST) as accepted, open ones at the window's start; with `@dir`, a connection is reset on its next chunk in that direction |
//! | `fail_first(N)` | the first N connections accepted in the window are reset (as `reset`); later ones pass |
//! | `latency(d, jitter j)` | each chunk read in the window is written `d ± j` after it was read (order kept) |
//! | `bandwidth(r)` | writes are paced to `r` bytes/s (the reader waits: back-pressure) |
//! | `slow_close(d)` | an end of stream in the window is passed on `d` later |
//!
//! Toxicity is the probability, drawn per connection from the seed, that a connection is
//! affected. Counters are kept per phase (see [`crate::stats`]). Dropping or stopping the proxy
//! closes every socket and joins the thread: nothing is left listening.

use std::collections::VecDeque;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use socket2::SockRef;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};
use tokio::time::sleep_until;

use crate::fault::{Direction, Fault, FaultKind};
use crate::stats::{Activation, Counters, Meta, NetnsCounter, Phase, ProxyStats};

/// The fault window, as offsets from the armed instant (the vocabulary's).
pub use qualify_model::fault::Window;

/// What to proxy, and how to break it.
#[derive(Debug, Clone)]
pub struct ProxyConfig {
    /// The dependency's name (thread name, messages, stats).
    pub dependency: String,
    /// Where the dependency listens.
    pub upstream: SocketAddr,
    /// Where the proxy listens: a loopback address; port 0 picks a free port.
    pub listen: SocketAddr,
    pub fault: Fault,
    pub window: Window,
    /// Seeds toxicity draws and jitter: same seed, same connections affected.
    pub seed: u64,
    /// Width of the concurrency time series' buckets.
    pub bucket: Duration,
    /// How long a connect to the dependency may take before the client is reset.
    pub connect_timeout: Duration,
    /// Count failed TCP connects in the proxy thread's network namespace per phase
    /// ([`crate::stats::PhaseCounters::failed_connects`]). Meaningful only when the proxy runs
    /// in the cell's own namespace (see [`Proxy::start_with`]); in a shared one it counts
    /// everyone's failures.
    pub count_failed_connects: bool,
    /// The dependency speaks HTTP/1.1 (`protocol = "http"`): unless the fault is on the wire,
    /// the proxy relays exchange by exchange, counts requests and reply statuses, and applies
    /// the HTTP faults ([`crate::http`]).
    pub http: bool,
}

impl ProxyConfig {
    /// Defaults: listen on 127.0.0.1 (port 0, or ::1 for an IPv6 upstream), seed 0, 1 s buckets,
    /// 5 s connect timeout.
    pub fn new(
        dependency: &str,
        upstream: SocketAddr,
        fault: Fault,
        window: Window,
    ) -> ProxyConfig {
        let listen = if upstream.is_ipv6() {
            SocketAddr::from((std::net::Ipv6Addr::LOCALHOST, 0))
        } else {
            SocketAddr::from((std::net::Ipv4Addr::LOCALHOST, 0))
        };
        ProxyConfig {
            dependency: dependency.to_string(),
            upstream,
            listen,
            fault,
            window,
            seed: 0,
            bucket: Duration::from_secs(1),
            connect_timeout: Duration::from_secs(5),
            count_failed_connects: false,
            http: false,
        }
    }
}

/// Why the proxy could not start or be driven.
#[derive(Debug, thiserror::Error)]
pub enum ProxyError {
    #[error(
        "fault proxy for `{dependency}`: listen address {addr} is not a loopback address; the proxy listens on 127.0.0.0/8 or ::1 only"
    )]
    NotLoopback {
        dependency: String,
        addr: SocketAddr,
    },
    #[error(
        "fault proxy for `{dependency}`: the window ends ({end:?}) before it starts ({start:?}); give [start, end] with start ≤ end"
    )]
    BadWindow {
        dependency: String,
        start: Duration,
        end: Duration,
    },
    #[error("fault proxy for `{dependency}`: the bucket width must be positive")]
    BadBucket { dependency: String },
    #[error(
        "fault proxy for `{dependency}`: cannot listen on {addr}: {source}; choose a free loopback port (or port 0)"
    )]
    Listen {
        dependency: String,
        addr: SocketAddr,
        source: io::Error,
    },
    #[error(
        "fault proxy for `{dependency}`: the set-up run on the proxy's thread failed: {source}"
    )]
    Prelude {
        dependency: String,
        source: io::Error,
    },
    #[error("fault proxy for `{dependency}`: cannot start its thread or runtime: {source}")]
    Runtime {
        dependency: String,
        source: io::Error,
    },
    #[error(
        "fault proxy for `{dependency}`: already armed; a proxy's window is set once (start a new proxy per cell)"
    )]
    AlreadyArmed { dependency: String },
    #[error("fault proxy for `{dependency}`: its thread ended unexpectedly")]
    Gone { dependency: String },
}

enum Control {
    Arm(Instant),
    Stop,
}

pub(crate) struct Shared {
    counters: Mutex<Counters>,
    meta: Meta,
}

impl Shared {
    pub(crate) fn lock(&self) -> MutexGuard<'_, Counters> {
        // A panic while holding the lock leaves counters that are still counters.
        self.counters.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A running proxy. Stop it with [`Proxy::stop`] (or drop it): every socket is closed and the
/// thread joined before that returns.
pub struct Proxy {
    addr: SocketAddr,
    dependency: String,
    control: mpsc::UnboundedSender<Control>,
    shared: Arc<Shared>,
    armed: AtomicBool,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for Proxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Proxy")
            .field("dependency", &self.dependency)
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

const BACKLOG: i32 = 1024;
const READ_BUFFER: usize = 16 * 1024;
/// At most this many bytes wait in a latency queue per direction; the reader pauses beyond.
const MAX_QUEUED_BYTES: usize = 4 * 1024 * 1024;

impl Proxy {
    /// Start the proxy on a new thread.
    pub fn start(config: ProxyConfig) -> Result<Proxy, ProxyError> {
        Proxy::start_with(config, || Ok(()))
    }

    /// Start the proxy on a new thread that runs `prelude` first (e.g. joining a network
    /// namespace); the listener and all sockets are created after it, on that thread.
    pub fn start_with<F>(config: ProxyConfig, prelude: F) -> Result<Proxy, ProxyError>
    where
        F: FnOnce() -> io::Result<()> + Send + 'static,
    {
        let dependency = config.dependency.clone();
        if !config.listen.ip().is_loopback() {
            return Err(ProxyError::NotLoopback {
                dependency,
                addr: config.listen,
            });
        }
        if config.window.end < config.window.start {
            return Err(ProxyError::BadWindow {
                dependency,
                start: config.window.start,
                end: config.window.end,
            });
        }
        if config.bucket.is_zero() {
            return Err(ProxyError::BadBucket { dependency });
        }
        let (ready_tx, ready_rx) =
            std::sync::mpsc::channel::<Result<(SocketAddr, Arc<Shared>), ProxyError>>();
        let (control, control_rx) = mpsc::unbounded_channel();
        let name = format!("proxy-{}", config.dependency);
        let thread = std::thread::Builder::new()
            .name(name.chars().take(15).collect())
            .spawn(move || {
                let dependency = config.dependency.clone();
                if let Err(source) = prelude() {
                    let _ = ready_tx.send(Err(ProxyError::Prelude { dependency, source }));
                    return;
                }
                let runtime = match tokio::runtime::Builder::new_current_thread()
                    .enable_io()
                    .enable_time()
                    .build()
                {
                    Ok(rt) => rt,
                    Err(source) => {
                        let _ = ready_tx.send(Err(ProxyError::Runtime { dependency, source }));
                        return;
                    }
                };
                runtime.block_on(async move {
                    let listener = match listen(&config) {
                        Ok(l) => l,
                        Err(e) => {
                            let _ = ready_tx.send(Err(e));
                            return;
                        }
                    };
                    let addr = match listener.local_addr() {
                        Ok(a) => a,
                        Err(source) => {
                            let _ = ready_tx.send(Err(ProxyError::Listen {
                                dependency,
                                addr: config.listen,
                                source,
                            }));
                            return;
                        }
                    };
                    let mut counters = Counters::new();
                    if config.count_failed_connects {
                        let tid = unsafe { libc::gettid() } as i64;
                        match NetnsCounter::of_thread(tid) {
                            Ok(c) => counters.count_failed_connects(c),
                            Err(e) => counters
                                .errors
                                .push(format!("failed connects are not counted: {e}")),
                        }
                    }
                    let shared = Arc::new(Shared {
                        counters: Mutex::new(counters),
                        meta: Meta {
                            dependency: config.dependency.clone(),
                            fault: config.fault,
                            listen: addr.to_string(),
                            upstream: config.upstream.to_string(),
                        },
                    });
                    if ready_tx.send(Ok((addr, shared.clone()))).is_err() {
                        return;
                    }
                    serve(listener, Arc::new(config), shared.clone(), control_rx).await;
                    // The namespace counter is readable only while this thread lives.
                    shared.lock().take_failed_connects();
                });
                // Dropping the runtime drops every connection task and so closes its sockets.
                drop(runtime);
            })
            .map_err(|source| ProxyError::Runtime {
                dependency: dependency.clone(),
                source,
            })?;
        match ready_rx.recv() {
            Ok(Ok((addr, shared))) => Ok(Proxy {
                addr,
                dependency,
                control,
                shared,
                armed: AtomicBool::new(false),
                thread: Some(thread),
            }),
            Ok(Err(e)) => {
                let _ = thread.join();
                Err(e)
            }
            Err(_) => {
                let _ = thread.join();
                Err(ProxyError::Gone { dependency })
            }
        }
    }

    /// The address clients connect to.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Set `t0`, the instant the window's offsets count from (may be in the past). Once.
    pub fn arm(&self, t0: Instant) -> Result<(), ProxyError> {
        if self.armed.swap(true, Ordering::SeqCst) {
            return Err(ProxyError::AlreadyArmed {
                dependency: self.dependency.clone(),
            });
        }
        self.control
            .send(Control::Arm(t0))
            .map_err(|_| ProxyError::Gone {
                dependency: self.dependency.clone(),
            })
    }

    /// The counters so far.
    pub fn stats(&self) -> ProxyStats {
        self.shared
            .lock()
            .snapshot(Instant::now(), &self.shared.meta)
    }

    /// Stop: close the listener and every connection, join the thread, return the final counters.
    pub fn stop(mut self) -> ProxyStats {
        self.shutdown();
        self.stats()
    }

    fn shutdown(&mut self) {
        let _ = self.control.send(Control::Stop);
        if let Some(thread) = self.thread.take() {
            if thread.join().is_err() {
                self.shared
                    .lock()
                    .errors
                    .push("the proxy thread panicked".to_string());
            }
        }
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Bind the listener on an explicit port: a socket bound to port 0 would lose its port when
/// `down` stops it listening (the kernel releases autobound ports), so port 0 is resolved first.
fn listen(config: &ProxyConfig) -> Result<TcpListener, ProxyError> {
    let fail = |source: io::Error| ProxyError::Listen {
        dependency: config.dependency.clone(),
        addr: config.listen,
        source,
    };
    let mut last = None;
    for _ in 0..16 {
        let mut addr = config.listen;
        if addr.port() == 0 {
            let probe = std::net::TcpListener::bind(addr).map_err(fail)?;
            addr = probe.local_addr().map_err(fail)?;
        }
        let socket = socket2::Socket::new(
            socket2::Domain::for_address(addr),
            socket2::Type::STREAM,
            Some(socket2::Protocol::TCP),
        )
        .map_err(fail)?;
        socket.set_reuse_address(true).map_err(fail)?;
        match socket.bind(&addr.into()) {
            Ok(()) => {}
            // Another socket took the probed port in between: probe again.
            Err(e) if e.kind() == io::ErrorKind::AddrInUse && config.listen.port() == 0 => {
                last = Some(e);
                continue;
            }
            Err(e) => return Err(fail(e)),
        }
        socket.listen(BACKLOG).map_err(fail)?;
        socket.set_nonblocking(true).map_err(fail)?;
        let std_listener: std::net::TcpListener = socket.into();
        return TcpListener::from_std(std_listener).map_err(fail);
    }
    Err(fail(last.unwrap_or_else(|| {
        io::Error::from(io::ErrorKind::AddrInUse)
    })))
}

/// splitmix64: the per-connection and per-chunk random draws.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = x;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A uniform draw in [0, 1) from a seed and an index.
pub(crate) fn unit(seed: u64, n: u64) -> f64 {
    (mix(seed ^ mix(n)) >> 11) as f64 / (1u64 << 53) as f64
}

async fn serve(
    listener: TcpListener,
    config: Arc<ProxyConfig>,
    shared: Arc<Shared>,
    mut control: mpsc::UnboundedReceiver<Control>,
) {
    let (state_tx, _) = watch::channel(Phase::Unarmed);
    let fault = config.fault;
    let far = tokio::time::Instant::now() + Duration::from_secs(86_400 * 365);
    let timer = sleep_until(far);
    tokio::pin!(timer);
    // The next scheduled transition: when, and into which phase.
    let mut next: Option<(Instant, Phase)> = None;
    let mut t0 = None;
    // Listening, or parked during `down`. Parked means deregistered from the reactor too: tokio
    // keeps a socket's read-closed readiness forever, so the socket shut down for the outage gets
    // a fresh registration when it listens again.
    let mut active = Some(listener);
    let mut parked: Option<std::net::TcpListener> = None;
    let mut connections: u64 = 0;
    let mut fail_first_left = match fault.kind {
        FaultKind::FailFirst { n } => n,
        _ => 0,
    };
    loop {
        tokio::select! {
            biased;
            message = control.recv() => match message {
                Some(Control::Arm(at)) => {
                    t0 = Some(at);
                    let mut c = shared.lock();
                    c.arm(at, config.bucket);
                    c.activation = Some(Activation {
                        scheduled_start_seconds: config.window.start.as_secs_f64(),
                        scheduled_end_seconds: config.window.end.as_secs_f64(),
                        started_late_by_seconds: None,
                        ended_late_by_seconds: None,
                    });
                    c.enter(Phase::Before, Instant::now());
                    drop(c);
                    let _ = state_tx.send(Phase::Before);
                    let start = at + config.window.start;
                    next = Some((start, Phase::During));
                    timer.as_mut().reset(start.into());
                }
                Some(Control::Stop) | None => break,
            },
            () = &mut timer, if next.is_some() => {
                let Some((scheduled, phase)) = next.take() else { continue };
                let now = Instant::now();
                let late = now.saturating_duration_since(scheduled).as_secs_f64();
                let mut c = shared.lock();
                c.enter(phase, now);
                if let Some(a) = c.activation.as_mut() {
                    match phase {
                        Phase::During => a.started_late_by_seconds = Some(late),
                        _ => a.ended_late_by_seconds = Some(late),
                    }
                }
                drop(c);
                if fault.kind == FaultKind::Down {
                    let result = if phase == Phase::During {
                        park(&mut active, &mut parked)
                    } else {
                        unpark(&mut active, &mut parked)
                    };
                    if let Err(e) = result {
                        shared.lock().errors.push(e.to_string());
                    }
                }
                let _ = state_tx.send(phase);
                if phase == Phase::During {
                    if let Some(at) = t0 {
                        let end = at + config.window.end;
                        next = Some((end, Phase::After));
                        timer.as_mut().reset(end.into());
                    }
                }
            }
            accepted = accept(&active), if active.is_some() => {
                let (stream, _) = match accepted {
                    Ok(a) => a,
                    Err(e) => {
                        // Out of descriptors and the like: let the condition pass.
                        if !matches!(e.kind(), io::ErrorKind::ConnectionAborted | io::ErrorKind::ConnectionReset) {
                            tokio::time::sleep(Duration::from_millis(5)).await;
                        }
                        continue;
                    }
                };
                connections += 1;
                let id = connections;
                let now = Instant::now();
                let phase = shared.lock().opened(now);
                let toxic = unit(config.seed, id) < fault.toxicity;
                let doomed = phase == Phase::During && match fault.kind {
                    FaultKind::FailFirst { .. } if fail_first_left > 0 => {
                        fail_first_left -= 1;
                        true
                    }
                    FaultKind::Reset => toxic,
                    _ => false,
                };
                if doomed && fault.resets_at_once() {
                    {
                        let mut c = shared.lock();
                        c.faulted();
                        c.reset();
                    }
                    rst(&stream);
                    drop(stream);
                    shared.lock().closed(false, Instant::now());
                    continue;
                }
                let conn = Conn {
                    id,
                    config: config.clone(),
                    shared: shared.clone(),
                    toxic,
                    doomed,
                    busy: AtomicBool::new(false),
                    faulted: AtomicBool::new(false),
                };
                tokio::spawn(conn.run(stream, state_tx.subscribe()));
            }
        }
    }
}

async fn accept(listener: &Option<TcpListener>) -> io::Result<(TcpStream, SocketAddr)> {
    match listener {
        Some(l) => l.accept().await,
        None => std::future::pending().await,
    }
}

/// Why the `down` fault could not park or unpark the proxy's listener: recorded in the
/// proxy's errors (the receipt's fault record), the cell goes on.
#[derive(Debug, thiserror::Error)]
pub(crate) enum DownError {
    #[error("down: could not stop listening at the window's start: {0}")]
    Park(io::Error),
    #[error(
        "down: could not listen again at the window's end: {0}; the dependency stayed unreachable"
    )]
    Unpark(io::Error),
}

/// `down` starts: stop listening but keep the port bound, so connects are refused meanwhile.
fn park(
    active: &mut Option<TcpListener>,
    parked: &mut Option<std::net::TcpListener>,
) -> Result<(), DownError> {
    let Some(listener) = active.take() else {
        return Ok(());
    };
    let listener = listener.into_std().map_err(DownError::Park)?;
    let result = SockRef::from(&listener)
        .shutdown(std::net::Shutdown::Read)
        .map_err(DownError::Park);
    *parked = Some(listener);
    result
}

/// `down` ends: listen again on the same socket and port.
fn unpark(
    active: &mut Option<TcpListener>,
    parked: &mut Option<std::net::TcpListener>,
) -> Result<(), DownError> {
    let Some(listener) = parked.take() else {
        return Ok(());
    };
    SockRef::from(&listener)
        .listen(BACKLOG)
        .map_err(DownError::Unpark)?;
    *active = Some(TcpListener::from_std(listener).map_err(DownError::Unpark)?);
    Ok(())
}

/// Close with RST instead of FIN.
pub(crate) fn rst(stream: &TcpStream) {
    let _ = SockRef::from(stream).set_linger(Some(Duration::ZERO));
}

/// One proxied connection.
pub(crate) struct Conn {
    pub(crate) id: u64,
    pub(crate) config: Arc<ProxyConfig>,
    pub(crate) shared: Arc<Shared>,
    /// Drawn against the toxicity: the fault applies to this connection.
    toxic: bool,
    /// Chosen in the window to be reset (`fail_first`, `reset`); with a direction, on its first
    /// chunk in that direction.
    doomed: bool,
    pub(crate) busy: AtomicBool,
    faulted: AtomicBool,
}

/// How a pump (one direction) or the connection ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum End {
    /// End of stream passed on (FIN).
    Eof,
    /// Close both sides now (FIN): `down` at the window's start.
    Close,
    /// Reset both sides (RST): the fault, or a peer reset / write failure.
    Reset,
}

impl Conn {
    pub(crate) fn mark_faulted(&self) {
        if !self.faulted.swap(true, Ordering::Relaxed) {
            self.shared.lock().faulted();
        }
    }

    async fn run(self, mut client: TcpStream, mut state: watch::Receiver<Phase>) {
        let _guard = OpenGuard { conn: &self };
        let upstream = match tokio::time::timeout(
            self.config.connect_timeout,
            TcpStream::connect(self.config.upstream),
        )
        .await
        {
            Ok(Ok(s)) => s,
            _ => {
                self.shared.lock().upstream_failure();
                rst(&client);
                return;
            }
        };
        let mut upstream = upstream;
        let _ = client.set_nodelay(true);
        let _ = upstream.set_nodelay(true);
        let fault = self.config.fault;
        let on_the_wire = !(fault.is_none() || fault.kind.is_process() || fault.kind.is_http());
        if self.config.http && !on_the_wire {
            crate::http::relay(&self, client, upstream).await;
            return;
        }
        let end = {
            let (mut cr, mut cw) = client.split();
            let (mut ur, mut uw) = upstream.split();
            let up = self.pump(Direction::Upstream, &mut cr, &mut uw);
            let down = self.pump(Direction::Downstream, &mut ur, &mut cw);
            tokio::pin!(up, down);
            let (mut up_done, mut down_done) = (false, false);
            loop {
                tokio::select! {
                    end = &mut up, if !up_done => {
                        if end != End::Eof { break end; }
                        up_done = true;
                    }
                    end = &mut down, if !down_done => {
                        if end != End::Eof { break end; }
                        down_done = true;
                    }
                    changed = state.changed() => {
                        if changed.is_err() {
                            break End::Close; // the proxy is stopping
                        }
                        let phase = *state.borrow_and_update();
                        if phase == Phase::During {
                            if fault.kind == FaultKind::Down {
                                self.mark_faulted();
                                break End::Close;
                            }
                            if fault.kind == FaultKind::Reset && fault.resets_at_once() && self.toxic {
                                self.mark_faulted();
                                break End::Reset;
                            }
                        }
                    }
                }
                if up_done && down_done {
                    break End::Eof;
                }
            }
        };
        if end == End::Reset {
            self.shared.lock().reset();
            rst(&client);
            rst(&upstream);
        }
        // Both sockets close here (RST when lingering is off).
    }

    /// Copy one direction, applying the fault to chunks read during the window.
    async fn pump<R, W>(&self, d: Direction, reader: &mut R, writer: &mut W) -> End
    where
        R: AsyncRead + Unpin,
        W: AsyncWrite + Unpin,
    {
        let fault = self.config.fault;
        let acts = self.toxic && fault.acts_on(d);
        let doomed_here = self.doomed && fault.direction == Some(d);
        let mut buf = vec![0u8; READ_BUFFER];
        // Chunks waiting for their due time (latency), oldest first.
        let mut queue: VecDeque<(Instant, Vec<u8>)> = VecDeque::new();
        let mut queued_bytes = 0usize;
        let mut last_due: Option<Instant> = None;
        let mut chunk_index: u64 = 0;
        let mut next_free = Instant::now();
        let mut eof = false;
        let mut eof_in_window = false;
        loop {
            if eof && queue.is_empty() {
                if eof_in_window {
                    if let FaultKind::SlowClose { delay } = fault.kind {
                        self.mark_faulted();
                        tokio::time::sleep(delay).await;
                    }
                }
                let _ = writer.shutdown().await;
                return End::Eof;
            }
            let due = queue.front().map(|(t, _)| *t);
            tokio::select! {
                biased;
                () = sleep_until(due.unwrap_or_else(Instant::now).into()), if due.is_some() => {
                    if let Some((_, data)) = queue.pop_front() {
                        queued_bytes -= data.len();
                        if writer.write_all(&data).await.is_err() {
                            return End::Reset;
                        }
                    }
                }
                read = reader.read(&mut buf), if !eof && queued_bytes < MAX_QUEUED_BYTES => {
                    let n = match read {
                        Ok(0) => {
                            eof = true;
                            eof_in_window = acts && self.shared.lock().phase == Phase::During;
                            continue;
                        }
                        Ok(n) => n,
                        Err(_) => return End::Reset,
                    };
                    let now = Instant::now();
                    let phase = self.shared.lock().chunk(d, n, &self.busy, now);
                    if doomed_here {
                        self.mark_faulted();
                        return End::Reset;
                    }
                    let active = acts && phase == Phase::During;
                    let mut due = now;
                    if active {
                        match fault.kind {
                            FaultKind::Blackhole => {
                                self.mark_faulted();
                                continue;
                            }
                            FaultKind::Reset => {
                                self.mark_faulted();
                                return End::Reset;
                            }
                            FaultKind::Latency { latency, jitter } => {
                                self.mark_faulted();
                                chunk_index += 1;
                                let draw = unit(self.config.seed ^ self.id.rotate_left(32) ^ d as u64, chunk_index);
                                let offset = jitter.as_secs_f64() * (2.0 * draw - 1.0);
                                let delay = (latency.as_secs_f64() + offset).max(0.0);
                                due = now + Duration::from_secs_f64(delay);
                            }
                            _ => {}
                        }
                    }
                    // Keep the order of chunks whatever their delays.
                    if let Some(last) = last_due {
                        due = due.max(last);
                    }
                    last_due = Some(due);
                    if queue.is_empty() && due <= now {
                        let result = match fault.kind {
                            FaultKind::Bandwidth { bytes_per_second } if active => {
                                self.mark_faulted();
                                paced_write(writer, &buf[..n], bytes_per_second, &mut next_free).await
                            }
                            _ => writer.write_all(&buf[..n]).await,
                        };
                        if result.is_err() {
                            return End::Reset;
                        }
                    } else {
                        queued_bytes += n;
                        queue.push_back((due, buf[..n].to_vec()));
                    }
                }
            }
        }
    }
}

/// Write `data` at no more than `rate` bytes/s, in pieces of at most 1/20 s of traffic.
async fn paced_write<W: AsyncWrite + Unpin>(
    writer: &mut W,
    data: &[u8],
    rate: u64,
    next_free: &mut Instant,
) -> io::Result<()> {
    let piece = usize::try_from(rate / 20)
        .unwrap_or(usize::MAX)
        .clamp(1, READ_BUFFER);
    for part in data.chunks(piece) {
        let now = Instant::now();
        if *next_free > now {
            sleep_until((*next_free).into()).await;
        }
        writer.write_all(part).await?;
        *next_free =
            (*next_free).max(now) + Duration::from_secs_f64(part.len() as f64 / rate as f64);
    }
    Ok(())
}

/// Counts the connection closed however its task ends (also when the runtime is dropped).
struct OpenGuard<'a> {
    conn: &'a Conn,
}

impl Drop for OpenGuard<'_> {
    fn drop(&mut self) {
        let busy = self.conn.busy.load(Ordering::Relaxed);
        self.conn.shared.lock().closed(busy, Instant::now());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toxicity_draws_are_uniform_enough_and_reproducible() {
        let hits = (1..=10_000).filter(|n| unit(7, *n) < 0.3).count();
        assert!((2_700..3_300).contains(&hits), "{hits} of 10000 below 0.3");
        assert_eq!(unit(7, 42), unit(7, 42));
        assert_ne!(unit(7, 42), unit(8, 42));
    }

    #[test]
    fn refuses_non_loopback_and_inverted_windows() {
        let up: SocketAddr = "127.0.0.1:9".parse().unwrap();
        let window = Window {
            start: Duration::from_secs(1),
            end: Duration::from_secs(2),
        };
        let mut c = ProxyConfig::new("db", up, Fault::NONE, window);
        c.listen = "0.0.0.0:0".parse().unwrap();
        let e = Proxy::start(c).unwrap_err();
        assert!(matches!(e, ProxyError::NotLoopback { .. }), "{e}");
        assert!(e.to_string().contains("loopback"));
        let mut c = ProxyConfig::new("db", up, Fault::NONE, window);
        c.window = Window {
            start: Duration::from_secs(2),
            end: Duration::from_secs(1),
        };
        assert!(matches!(
            Proxy::start(c).unwrap_err(),
            ProxyError::BadWindow { .. }
        ));
    }

    #[test]
    fn a_failing_prelude_is_reported_and_nothing_listens() {
        let up: SocketAddr = "127.0.0.1:9".parse().unwrap();
        let window = Window {
            start: Duration::ZERO,
            end: Duration::ZERO,
        };
        let c = ProxyConfig::new("db", up, Fault::NONE, window);
        let e = Proxy::start_with(c, || Err(io::Error::other("setns refused"))).unwrap_err();
        assert!(e.to_string().contains("setns refused"), "{e}");
    }
}
