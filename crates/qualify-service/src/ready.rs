//! Waiting for `[service] ready`: an HTTP GET answered 2xx, a TCP accept, or a command that
//! exits 0 (probed like the spec's own commands, in the service's network), bounded by
//! `within` and stopped early when the service ends or qualify stops.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use qualify_load::ready::{ReadyCheck as LoadReady, wait_ready};
use qualify_model::{Outcome, Params};
use qualify_probe::netns::Netns;
use qualify_probe::{BackendChoice, CancelToken};
use qualify_spec::{CommandLine, ReadyCheck, Spec};

use crate::SpecProbes;
use crate::error::NotReady;
use crate::instance::ServiceRun;
use crate::network::helper_network;

/// Wait until the service of `run` is ready (`check`, within `within`); `Err` says why not.
pub(crate) fn await_ready(
    spec: &Spec,
    backend: BackendChoice,
    cancel: &CancelToken,
    run: &ServiceRun,
    check: &ReadyCheck,
    bound: &Params,
    within: Duration,
) -> Result<(), NotReady> {
    // The readiness poll stops when the service ends or qualify stops.
    let stop = Arc::new(AtomicBool::new(false));
    let watcher = {
        let (stop, done, cancel) = (Arc::clone(&stop), Arc::clone(&run.done), Arc::clone(cancel));
        std::thread::spawn(move || {
            while !stop.load(Ordering::SeqCst) {
                if done.load(Ordering::SeqCst) || cancel.load(Ordering::SeqCst) {
                    stop.store(true, Ordering::SeqCst);
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        })
    };
    let result = match check {
        ReadyCheck::Http(path) => wait_ready(
            &LoadReady::Http { path: path.clone() },
            run.addr,
            within,
            &stop,
        )
        .map(|_| ())
        .map_err(NotReady::from),
        ReadyCheck::Tcp => wait_ready(&LoadReady::Tcp, run.addr, within, &stop)
            .map(|_| ())
            .map_err(NotReady::from),
        ReadyCheck::Command(command) => ready_command(
            spec,
            backend,
            cancel,
            command,
            bound,
            within,
            &stop,
            run.netns.as_ref(),
        ),
    };
    stop.store(true, Ordering::SeqCst);
    let _ = watcher.join();
    result
}

/// Run the ready command (placeholders and `{port}` rendered) until it exits 0.
#[allow(clippy::too_many_arguments)]
fn ready_command(
    spec: &Spec,
    backend: BackendChoice,
    cancel: &CancelToken,
    command: &CommandLine,
    bound: &Params,
    within: Duration,
    stop: &AtomicBool,
    netns: Option<&Arc<Netns>>,
) -> Result<(), NotReady> {
    let start = Instant::now();
    let argv: Vec<std::ffi::OsString> = command
        .render(bound)
        .argv()
        .into_iter()
        .map(Into::into)
        .collect();
    let mut last = String::from("not run");
    let mut pause = Duration::from_millis(20);
    while start.elapsed() < within {
        if stop.load(Ordering::SeqCst) {
            return Err(NotReady::Stopped {
                waited: start.elapsed(),
                last,
            });
        }
        let mut probe = spec.command_probe(argv.clone(), backend);
        probe.sandbox.network = helper_network(netns);
        let remaining = within
            .saturating_sub(start.elapsed())
            .max(Duration::from_millis(100));
        probe.limits.timeout_seconds = remaining.as_secs_f64().min(10.0);
        probe.limits.stall_seconds = probe.limits.timeout_seconds / 2.0;
        let r = qualify_probe::probe(&probe, cancel)?;
        if r.outcome == Outcome::Ok {
            return Ok(());
        }
        last = format!("`{command}` ended {}", r.outcome);
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(250));
    }
    Err(NotReady::TimedOut { within, last })
}
