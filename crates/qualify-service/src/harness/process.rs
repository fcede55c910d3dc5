//! Process faults on a dependency (`kill`, `pause`, `restart`): what is done to its whole
//! process tree at the `[faults]` window's edges, and when it went down and was ready again.
//!
//! | fault | at the window's start | at its end |
//! |---|---|---|
//! | `kill` | SIGKILL to every process of the tree; gone | started again (same command, same data directory, same port), ready awaited |
//! | `pause` | SIGSTOP to every process of the tree | SIGCONT to every one (ready at once) |
//! | `restart` | the dependency's stop signal (`stop`, default SIGTERM) to every process; SIGKILL after its grace; started again as soon as it is gone, ready awaited | — |
//!
//! The faults act through [`DependencyProcesses`], the seam between a fault and wherever the
//! dependency's processes run: [`LocalDependency`] is a dependency this qualify started (its
//! probe's [`qualify_probe::Control`] signals the tree); one started elsewhere (another node)
//! would implement the same five operations there. A [`Nemesis`] thread drives one fault
//! from the measured phase's start and returns its [`ProcessRecord`] (times as offsets from
//! that start); stopped early (the load ended, qualify stops), it resumes a paused tree and
//! starts nothing more.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use qualify_model::fault::{FaultKind, KilledInstance, ProcessRecord, Window};
use qualify_probe::netns::Netns;
use qualify_probe::{CancelToken, ProbeResult, ProbeSpec};

use super::dependency::{self, ReadyWait};
use crate::error::{DependencyError, NotReady};
use crate::instance::ServiceRun;

/// How long a killed tree may take to be gone.
const GONE_WITHIN: Duration = Duration::from_secs(5);

/// What a process fault does to a dependency's processes, wherever they run.
pub trait DependencyProcesses: Send {
    /// Send `signal` to every process of the dependency at once; how many it reached.
    fn signal_all(&mut self, signal: i32) -> Result<usize, DependencyError>;
    /// Wait up to `within` for the running instance to be gone; how it ended (`None`: still
    /// running at the deadline).
    fn wait_gone(&mut self, within: Duration) -> Result<Option<KilledInstance>, DependencyError>;
    /// Start it again: the same command, in the same data directory, on the same port.
    fn start_again(&mut self) -> Result<(), DependencyError>;
    /// Wait until its ready check passes (within its `ready.within`).
    fn await_ready(&mut self, cancel: &CancelToken) -> Result<(), DependencyError>;
    /// The cell is over: continue it if it is stopped, then stop it with its `stop` signal
    /// and grace (killed after it).
    fn finish(&mut self);
}

/// A dependency this qualify started and supervises with a probe.
pub(crate) struct LocalDependency {
    name: String,
    run: Option<ServiceRun>,
    probe: ProbeSpec,
    addr: SocketAddr,
    netns: Option<Arc<Netns>>,
    ready: ReadyWait,
    stop: (i32, Duration),
    /// SIGSTOP sent, no SIGCONT yet.
    held: bool,
}

impl LocalDependency {
    pub(crate) fn new(
        name: &str,
        run: ServiceRun,
        probe: ProbeSpec,
        netns: Option<&Arc<Netns>>,
        ready: ReadyWait,
        stop: (i32, Duration),
    ) -> LocalDependency {
        LocalDependency {
            name: name.to_string(),
            addr: run.addr,
            run: Some(run),
            probe,
            netns: netns.cloned(),
            ready,
            stop,
            held: false,
        }
    }

    /// Its ready check.
    pub(crate) fn ready_wait(&self) -> &ReadyWait {
        &self.ready
    }

    /// Abort the running instance now (it never became ready at the cell's start); its result.
    pub(crate) fn abort(&mut self) -> Option<ProbeResult> {
        self.run.take().and_then(|r| r.abort().ok())
    }
}

fn ended(r: &ProbeResult) -> KilledInstance {
    KilledInstance {
        outcome: r.outcome,
        detail: r.detail.clone(),
    }
}

impl DependencyProcesses for LocalDependency {
    fn signal_all(&mut self, signal: i32) -> Result<usize, DependencyError> {
        let run = self
            .run
            .as_ref()
            .ok_or_else(|| DependencyError::NotRunning(self.name.clone()))?;
        let n = run
            .control
            .signal_tree(signal)
            .map_err(|source| DependencyError::Signal {
                dependency: self.name.clone(),
                source,
            })?;
        if signal == libc::SIGSTOP {
            self.held = true;
        } else if signal == libc::SIGCONT {
            self.held = false;
        }
        Ok(n)
    }

    fn wait_gone(&mut self, within: Duration) -> Result<Option<KilledInstance>, DependencyError> {
        let Some(run) = self.run.as_ref() else {
            return Err(DependencyError::NotRunning(self.name.clone()));
        };
        let deadline = Instant::now() + within;
        while !run.ended() {
            if Instant::now() >= deadline {
                return Ok(None);
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let run = self
            .run
            .take()
            .ok_or_else(|| DependencyError::NotRunning(self.name.clone()))?;
        run.stop_now()
            .map(|r| Some(ended(&r)))
            .map_err(|e| DependencyError::Collect {
                dependency: self.name.clone(),
                source: Box::new(e),
            })
    }

    fn start_again(&mut self) -> Result<(), DependencyError> {
        if self.run.is_some() {
            return Err(DependencyError::StillRunning(self.name.clone()));
        }
        let run = dependency::start(
            &self.name,
            self.probe.clone(),
            self.addr,
            self.netns.as_ref(),
        )
        .map_err(DependencyError::Start)?;
        self.run = Some(run);
        self.held = false;
        Ok(())
    }

    fn await_ready(&mut self, cancel: &CancelToken) -> Result<(), DependencyError> {
        let Some(run) = &self.run else {
            return Err(DependencyError::NotRunning(self.name.clone()));
        };
        // Stop waiting when it ends (it could not start on its data) or qualify stops.
        let stop: CancelToken = Arc::new(AtomicBool::new(false));
        let done = AtomicBool::new(false);
        let r = std::thread::scope(|scope| {
            scope.spawn(|| {
                while !done.load(Ordering::SeqCst) {
                    if run.ended() || cancel.load(Ordering::SeqCst) {
                        stop.store(true, Ordering::SeqCst);
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
            });
            let r = self.ready.wait(&stop);
            done.store(true, Ordering::SeqCst);
            r
        });
        match r {
            Err(e) if run.ended() => Err(DependencyError::NotReady(NotReady::Ended(Box::new(e)))),
            other => other.map_err(DependencyError::NotReady),
        }
    }

    fn finish(&mut self) {
        if self.held {
            let _ = self.signal_all(libc::SIGCONT);
        }
        if let Some(run) = self.run.take() {
            let _ = run.stop(self.stop.0, self.stop.1);
        }
    }
}

/// The dependency's processes, shared between the harness and a fault's thread.
pub(crate) type Shared = Arc<Mutex<Box<dyn DependencyProcesses>>>;

fn lock(p: &Shared) -> MutexGuard<'_, Box<dyn DependencyProcesses>> {
    p.lock().unwrap_or_else(|e| e.into_inner())
}

/// A process fault being driven on its own thread.
pub(crate) struct Nemesis {
    stop: Sender<()>,
    /// The driving thread, or the record of why there is none.
    thread: Result<JoinHandle<ProcessRecord>, ProcessRecord>,
}

/// How a `restart` stops the dependency: its `stop` signal (name, number) and grace.
#[derive(Debug, Clone)]
pub(crate) struct StopWith {
    pub name: String,
    pub number: i32,
    pub grace: Duration,
}

impl Nemesis {
    /// Drive `kind` on `processes` over `window` from `t0` (the measured phase's start).
    pub(crate) fn start(
        kind: FaultKind,
        window: Window,
        t0: Instant,
        processes: Shared,
        stop_with: StopWith,
        cancel: CancelToken,
    ) -> Nemesis {
        let (stop, stopped) = channel();
        let thread = std::thread::Builder::new()
            .name("dep-fault".into())
            .spawn(move || drive(kind, window, t0, &processes, &stop_with, &cancel, &stopped))
            // No thread, no fault: the record says so.
            .map_err(|e| ProcessRecord {
                action: kind.name().to_string(),
                errors: vec![format!("could not start the fault's thread: {e}")],
                ..ProcessRecord::default()
            });
        Nemesis { stop, thread }
    }

    /// Wait until the fault has run its course (the dependency ready again, or given up);
    /// with `early`, tell it the cell is over first. Its record.
    pub(crate) fn finish(self, early: bool) -> ProcessRecord {
        if early {
            let _ = self.stop.send(());
        }
        match self.thread {
            Ok(thread) => thread.join().unwrap_or_else(|_| ProcessRecord {
                errors: vec!["the fault's thread panicked".to_string()],
                ..ProcessRecord::default()
            }),
            Err(record) => record,
        }
    }
}

/// Sleep until `at` unless told to stop first; `false` when told.
fn sleep_until(at: Instant, stopped: &Receiver<()>) -> bool {
    let wait = at.saturating_duration_since(Instant::now());
    !matches!(
        stopped.recv_timeout(wait),
        Ok(()) | Err(RecvTimeoutError::Disconnected)
    )
}

fn drive(
    kind: FaultKind,
    window: Window,
    t0: Instant,
    processes: &Shared,
    stop_with: &StopWith,
    cancel: &CancelToken,
    stopped: &Receiver<()>,
) -> ProcessRecord {
    let at = || Instant::now().saturating_duration_since(t0).as_secs_f64();
    let signal = match kind {
        FaultKind::Kill => "SIGKILL".to_string(),
        FaultKind::Pause => "SIGSTOP".to_string(),
        _ => stop_with.name.clone(),
    };
    let mut rec = ProcessRecord {
        action: kind.name().to_string(),
        signal,
        ..ProcessRecord::default()
    };
    if !sleep_until(t0 + window.start, stopped) {
        return rec;
    }
    let number = match kind {
        FaultKind::Kill => libc::SIGKILL,
        FaultKind::Pause => libc::SIGSTOP,
        _ => stop_with.number,
    };
    let mut p = lock(processes);
    rec.down_at_seconds = Some(at());
    match p.signal_all(number) {
        Ok(n) => rec.processes = n as u64,
        Err(e) => {
            rec.errors.push(e.to_string());
            return rec;
        }
    }
    match kind {
        FaultKind::Pause => {
            drop(p);
            // Continued at the window's end — or now, when the cell ends first.
            let _ = sleep_until(t0 + window.end, stopped);
            let mut p = lock(processes);
            match p.signal_all(libc::SIGCONT) {
                Ok(_) => {
                    rec.resumed_at_seconds = Some(at());
                    rec.ready_at_seconds = rec.resumed_at_seconds;
                }
                Err(e) => rec.errors.push(e.to_string()),
            }
            return rec;
        }
        FaultKind::Kill => match p.wait_gone(GONE_WITHIN) {
            Ok(Some(mut ended)) => {
                rec.gone_at_seconds = Some(at());
                if ended.outcome == qualify_model::Outcome::Killed {
                    // The probe cannot know the fault sent it.
                    ended.detail = "killed by the fault's SIGKILL".to_string();
                }
                rec.stopped = Some(ended);
            }
            Ok(None) => {
                rec.errors.push(format!(
                    "still running {} s after SIGKILL",
                    GONE_WITHIN.as_secs()
                ));
                return rec;
            }
            Err(e) => {
                rec.errors.push(e.to_string());
                return rec;
            }
        },
        _ => {
            // restart: the stop signal, the grace, then SIGKILL.
            match p.wait_gone(stop_with.grace) {
                Ok(Some(ended)) => {
                    rec.gone_at_seconds = Some(at());
                    rec.stopped = Some(ended);
                }
                Ok(None) => {
                    let _ = p.signal_all(libc::SIGKILL);
                    match p.wait_gone(GONE_WITHIN) {
                        Ok(Some(mut ended)) => {
                            rec.gone_at_seconds = Some(at());
                            ended.detail = format!(
                                "not gone within its {:.1} s grace: killed ({})",
                                stop_with.grace.as_secs_f64(),
                                ended.detail
                            );
                            rec.stopped = Some(ended);
                        }
                        Ok(None) => {
                            rec.errors.push("still running after SIGKILL".to_string());
                            return rec;
                        }
                        Err(e) => {
                            rec.errors.push(e.to_string());
                            return rec;
                        }
                    }
                }
                Err(e) => {
                    rec.errors.push(e.to_string());
                    return rec;
                }
            }
        }
    }
    drop(p);
    // kill: down until the window's end; restart: started again at once.
    if kind == FaultKind::Kill && !sleep_until(t0 + window.end, stopped) {
        return rec;
    }
    let mut p = lock(processes);
    rec.resumed_at_seconds = Some(at());
    if let Err(e) = p.start_again() {
        rec.errors.push(format!("could not start it again: {e}"));
        return rec;
    }
    match p.await_ready(cancel) {
        Ok(()) => rec.ready_at_seconds = Some(at()),
        Err(e) => rec.errors.push(format!("not ready again: {e}")),
    }
    rec
}

#[cfg(test)]
mod tests {
    use super::*;
    use qualify_model::Outcome;
    use std::sync::atomic::AtomicBool;

    /// What the fault asked of the processes, in order; `gone_after` is how many `wait_gone`
    /// calls find the instance still there.
    #[derive(Default)]
    struct Calls {
        log: Vec<String>,
        gone_after: usize,
    }

    struct Recorded(Arc<Mutex<Calls>>);

    impl DependencyProcesses for Recorded {
        fn signal_all(&mut self, signal: i32) -> Result<usize, DependencyError> {
            self.0.lock().unwrap().log.push(format!("signal {signal}"));
            Ok(2)
        }
        fn wait_gone(
            &mut self,
            _within: Duration,
        ) -> Result<Option<KilledInstance>, DependencyError> {
            let mut c = self.0.lock().unwrap();
            c.log.push("wait_gone".into());
            if c.gone_after > 0 {
                c.gone_after -= 1;
                return Ok(None);
            }
            Ok(Some(KilledInstance {
                outcome: Outcome::Killed,
                detail: "killed".into(),
            }))
        }
        fn start_again(&mut self) -> Result<(), DependencyError> {
            self.0.lock().unwrap().log.push("start".into());
            Ok(())
        }
        fn await_ready(&mut self, _cancel: &CancelToken) -> Result<(), DependencyError> {
            self.0.lock().unwrap().log.push("ready".into());
            Ok(())
        }
        fn finish(&mut self) {}
    }

    fn run(
        kind: FaultKind,
        gone_after: usize,
        stop_after: Option<Duration>,
    ) -> (ProcessRecord, Vec<String>) {
        let calls = Arc::new(Mutex::new(Calls {
            log: Vec::new(),
            gone_after,
        }));
        let shared: Shared = Arc::new(Mutex::new(Box::new(Recorded(Arc::clone(&calls)))));
        let window = Window {
            start: Duration::from_millis(50),
            end: Duration::from_millis(250),
        };
        let stop_with = StopWith {
            name: "SIGTERM".into(),
            number: libc::SIGTERM,
            grace: Duration::from_millis(10),
        };
        let n = Nemesis::start(
            kind,
            window,
            Instant::now(),
            shared,
            stop_with,
            Arc::new(AtomicBool::new(false)),
        );
        let record = match stop_after {
            Some(d) => {
                std::thread::sleep(d);
                n.finish(true)
            }
            None => n.finish(false),
        };
        let log = calls.lock().unwrap().log.clone();
        (record, log)
    }

    #[test]
    fn each_fault_does_its_steps_at_the_window_s_edges() {
        let (r, log) = run(FaultKind::Kill, 0, None);
        assert_eq!(log, ["signal 9", "wait_gone", "start", "ready"]);
        let (down, resumed) = (r.down_at_seconds.unwrap(), r.resumed_at_seconds.unwrap());
        assert!((0.05..0.2).contains(&down), "{r:?}");
        assert!(
            (0.25..0.4).contains(&resumed),
            "started again at the window's end: {r:?}"
        );
        assert!(r.ready_at_seconds.unwrap() >= resumed);
        assert_eq!(r.processes, 2);
        assert_eq!(r.stopped.unwrap().detail, "killed by the fault's SIGKILL");

        let (r, log) = run(FaultKind::Pause, 0, None);
        assert_eq!(log, ["signal 19", "signal 18"]);
        assert!(r.resumed_at_seconds.unwrap() >= 0.25, "{r:?}");
        assert_eq!(r.ready_at_seconds, r.resumed_at_seconds);

        // restart: its stop signal, then started again at once (not at the window's end).
        let (r, log) = run(FaultKind::Restart, 0, None);
        assert_eq!(log, ["signal 15", "wait_gone", "start", "ready"]);
        assert!(r.resumed_at_seconds.unwrap() < 0.2, "{r:?}");
        // Not gone within the grace: SIGKILL, and the record says so.
        let (r, log) = run(FaultKind::Restart, 1, None);
        assert_eq!(
            log,
            [
                "signal 15",
                "wait_gone",
                "signal 9",
                "wait_gone",
                "start",
                "ready"
            ]
        );
        assert!(
            r.stopped
                .unwrap()
                .detail
                .starts_with("not gone within its 0.0 s grace: killed")
        );
    }

    #[test]
    fn a_cell_that_ends_early_leaves_nothing_stopped_and_starts_nothing() {
        // Ended inside the window: a paused tree is continued at once…
        let (r, log) = run(FaultKind::Pause, 0, Some(Duration::from_millis(120)));
        assert_eq!(log, ["signal 19", "signal 18"]);
        assert!(r.resumed_at_seconds.unwrap() < 0.2, "{r:?}");
        // …a killed one is not started again.
        let (r, log) = run(FaultKind::Kill, 0, Some(Duration::from_millis(120)));
        assert_eq!(log, ["signal 9", "wait_gone"]);
        assert_eq!((r.resumed_at_seconds, r.ready_at_seconds), (None, None));
        // Ended before the window: nothing at all.
        let (r, log) = run(FaultKind::Kill, 0, Some(Duration::from_millis(10)));
        assert!(log.is_empty(), "{log:?}");
        assert_eq!(r.down_at_seconds, None);
        assert!(r.text().contains("not done"), "{}", r.text());
    }
}
