//! A started service instance ([`ServiceRun`]: its probe on a thread of its own, with a
//! [`Control`] to stop it gracefully) and the instances of one cell ([`Instances`]: the first,
//! and after a `[recovery]` kill the restarted one on the same port).

use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use qualify_load::ready::{ReadyCheck as LoadReady, wait_ready};
use qualify_model::{Params, Value};
use qualify_probe::netns::Netns;
use qualify_probe::{CancelToken, Control, ProbeError, ProbeResult, ProbeSpec};

use crate::error::ServiceError;
use qualify_spec::ReadyCheck;

use crate::judge::RestartSeen;

/// A started service: its probe running on a thread of its own.
pub struct ServiceRun {
    pub addr: SocketAddr,
    pub control: Arc<Control>,
    /// Set when the probe returned (the process tree is gone).
    pub(crate) done: Arc<AtomicBool>,
    /// Cancels this service's probe only.
    cancel: CancelToken,
    thread: Option<JoinHandle<Result<ProbeResult, ProbeError>>>,
    pub started: Instant,
    /// The service's network namespace, when it has one (its dependencies and readiness command
    /// join it too).
    pub netns: Option<Arc<Netns>>,
}

impl ServiceRun {
    /// Start the service of `probe` (which already carries the port) on a thread.
    pub fn start(mut probe: ProbeSpec, addr: SocketAddr) -> ServiceRun {
        let control = Arc::new(Control::default());
        probe.control = Some(Arc::clone(&control));
        let netns = match &probe.sandbox.network {
            qualify_probe::Network::Join(n) => Some(Arc::clone(n)),
            _ => None,
        };
        let done = Arc::new(AtomicBool::new(false));
        let cancel: CancelToken = Arc::new(AtomicBool::new(false));
        let (d, c) = (Arc::clone(&done), Arc::clone(&cancel));
        let thread = std::thread::spawn(move || {
            let r = qualify_probe::probe(&probe, &c);
            d.store(true, Ordering::SeqCst);
            r
        });
        ServiceRun {
            addr,
            control,
            done,
            cancel,
            thread: Some(thread),
            started: Instant::now(),
            netns,
        }
    }

    /// The process tree is gone (it ended on its own, or was stopped).
    pub fn ended(&self) -> bool {
        self.done.load(Ordering::SeqCst)
    }

    /// Ask the service to stop with `signal`; after `grace` the probe kills the tree and flags
    /// `slow_shutdown`. Then wait for the probe's result.
    pub fn stop(mut self, signal: i32, grace: Duration) -> Result<ProbeResult, ServiceError> {
        if !self.ended() {
            self.control.request_stop(signal, grace);
        }
        self.join()
    }

    /// Wait for the result of an instance already asked to stop.
    pub fn stop_now(mut self) -> Result<ProbeResult, ServiceError> {
        self.join()
    }

    /// Kill the tree now (qualify is stopping), then wait for the result.
    pub fn abort(mut self) -> Result<ProbeResult, ServiceError> {
        self.cancel.store(true, Ordering::SeqCst);
        self.join()
    }

    fn join(&mut self) -> Result<ProbeResult, ServiceError> {
        let Some(thread) = self.thread.take() else {
            return Err(ServiceError::AlreadyCollected);
        };
        thread
            .join()
            .map_err(|_| ServiceError::ProbeThreadPanicked)?
            .map_err(ServiceError::Probe)
    }
}

impl Drop for ServiceRun {
    /// Never leave a service running: a run dropped without `stop` kills its tree.
    fn drop(&mut self) {
        if let Some(thread) = self.thread.take() {
            self.cancel.store(true, Ordering::SeqCst);
            let _ = thread.join();
        }
    }
}

/// A free loopback port, chosen by the kernel (bound and released: a service that starts
/// right after takes it).
pub fn free_port() -> Result<u16, ProbeError> {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|source| ProbeError::Io {
            context: "cannot find a free loopback port for the service".into(),
            source,
        })
}

/// The cell's parameters plus its port (what `{port}` renders to).
pub fn with_port(params: &Params, port: u16) -> Params {
    let mut p = params.clone();
    p.insert(qualify_spec::PORT_PLACEHOLDER, Value::Int(i64::from(port)));
    p
}

/// The service's running instance, and what a kill and restart left of the first one.
pub(crate) struct Instances {
    current: Option<ServiceRun>,
    probe: ProbeSpec,
    addr: SocketAddr,
    /// The killed instance, stopped.
    killed: Option<ServiceRun>,
    /// The restarted one, starting and awaited on its own thread (`None` when not ready in time).
    restarting: Option<JoinHandle<(ServiceRun, Option<f64>)>>,
    killed_at: Option<Instant>,
    ready_after: Option<f64>,
}

impl Instances {
    pub(crate) fn new(run: ServiceRun, probe: ProbeSpec, addr: SocketAddr) -> Instances {
        Instances {
            current: Some(run),
            probe,
            addr,
            killed: None,
            restarting: None,
            killed_at: None,
            ready_after: None,
        }
    }

    /// Kill the service with `[recovery] signal` (once) and start it again on a thread that
    /// waits until it is ready (within `ready_within`).
    pub(crate) fn kill_and_restart(&mut self, r: &qualify_spec::Recovery, check: ReadyCheck) {
        if self.killed_at.is_some() {
            return;
        }
        let Some(current) = self.current.take() else {
            return;
        };
        let now = Instant::now();
        self.killed_at = Some(now);
        // The signal now; the grace only covers a signal the service may catch.
        current
            .control
            .request_stop(r.signal_number, Duration::from_secs(2));
        let gone = Arc::clone(&current.done);
        self.killed = Some(current);
        let (probe, addr, within) = (self.probe.clone(), self.addr, r.ready_within);
        self.restarting = Some(std::thread::spawn(move || {
            // The old instance must have let go of the port first.
            let start = Instant::now();
            while !gone.load(Ordering::SeqCst) && start.elapsed() < Duration::from_secs(5) {
                std::thread::sleep(Duration::from_millis(5));
            }
            let run = ServiceRun::start(probe, addr);
            let cancel = AtomicBool::new(false);
            let ok = match check {
                ReadyCheck::Http(path) => {
                    wait_ready(&LoadReady::Http { path }, addr, within, &cancel).is_ok()
                }
                ReadyCheck::Tcp | ReadyCheck::Command(_) => {
                    wait_ready(&LoadReady::Tcp, addr, within, &cancel).is_ok()
                }
            };
            (run, ok.then(|| now.elapsed().as_secs_f64()))
        }));
    }

    /// The service (the first instance, or the restarted one once started) is gone.
    pub(crate) fn ended(&self) -> bool {
        match (&self.current, &self.restarting) {
            (Some(run), _) => run.ended(),
            (None, Some(_)) => false,
            (None, None) => true,
        }
    }

    fn settle(&mut self) {
        if let Some(t) = self.restarting.take()
            && let Ok((run, ready_after)) = t.join()
        {
            self.current = Some(run);
            self.ready_after = ready_after;
        }
    }

    /// What the restart saw (None without one).
    pub(crate) fn restart_seen(&mut self, measured: Option<Instant>) -> Option<RestartSeen> {
        self.settle();
        let killed = self.killed_at?;
        Some(RestartSeen {
            ready_after: self.ready_after,
            at: measured
                .and_then(|m| killed.checked_duration_since(m))
                .map_or(0.0, |d| d.as_secs_f64()),
        })
    }

    pub(crate) fn memory_samples(&self) -> Vec<(Instant, u64)> {
        let mut all = Vec::new();
        for run in self.killed.iter().chain(self.current.iter()) {
            all.extend(run.control.memory_samples());
        }
        all
    }

    /// The tree's threads, open files and sockets at each sample of the first instance (none
    /// once it was killed: a restarted instance is another tree).
    pub(crate) fn count_samples(&self) -> Vec<(Instant, qualify_probe::TreeCounts)> {
        match (&self.killed, &self.current) {
            (None, Some(run)) => run.control.count_samples(),
            _ => Vec::new(),
        }
    }

    /// Stop the running instance; the result, and the killed instance's if there was one.
    pub(crate) fn stop(
        mut self,
        signal: i32,
        grace: Duration,
    ) -> Result<(ProbeResult, Option<ProbeResult>), ServiceError> {
        self.settle();
        let first = self.killed.take().map(ServiceRun::stop_now).transpose()?;
        let r = match self.current.take() {
            Some(run) => run.stop(signal, grace)?,
            None => return Err(never_started()),
        };
        Ok((r, first))
    }

    pub(crate) fn abort(mut self) -> Result<(ProbeResult, Option<ProbeResult>), ServiceError> {
        self.settle();
        let first = self.killed.take().map(ServiceRun::abort).transpose()?;
        let r = match self.current.take() {
            Some(run) => run.abort()?,
            None => return Err(never_started()),
        };
        Ok((r, first))
    }
}

fn never_started() -> ServiceError {
    ServiceError::NeverStarted
}
