//! Waiting for the next arrival with microsecond precision. Tokio's timer wheel has 1 ms
//! ticks, which would send every arrival up to a millisecond late and put that lag into
//! every corrected latency; a `timerfd` (an hrtimer) registered with the event loop does not.
//! Falls back to tokio's timer if no timerfd can be created. [`FineTimerSlack`] lowers the
//! calling thread's timer slack for the run and restores it afterwards.

use std::io;
use std::os::fd::{AsFd, AsRawFd, RawFd};
use std::time::{Duration, Instant};

use nix::sys::time::TimeSpec;
use nix::sys::timerfd::{ClockId, Expiration, TimerFd, TimerFlags, TimerSetTimeFlags};
use tokio::io::unix::AsyncFd;

struct Fd(TimerFd);

impl AsRawFd for Fd {
    fn as_raw_fd(&self) -> RawFd {
        self.0.as_fd().as_raw_fd()
    }
}

/// A one-shot precise timer for one task at a time.
pub(crate) struct Timer {
    fd: Option<AsyncFd<Fd>>,
}

impl Timer {
    /// Must be called inside the runtime.
    pub fn new() -> Timer {
        let fd = TimerFd::new(
            ClockId::CLOCK_MONOTONIC,
            TimerFlags::TFD_NONBLOCK | TimerFlags::TFD_CLOEXEC,
        )
        .ok()
        // SAFETY: `Fd` owns the timerfd, so the descriptor stays open and the same for the
        // whole life of the `AsyncFd` that owns the `Fd`.
        .and_then(|t| unsafe { AsyncFd::register(Fd(t)) }.ok());
        Timer { fd }
    }

    /// Return at `at` (immediately if it has passed).
    pub async fn sleep_until(&self, at: Instant) {
        let now = Instant::now();
        if at <= now {
            return;
        }
        if let Some(fd) = &self.fd
            && Self::precise(fd, at - now).await.is_ok()
        {
            return;
        }
        tokio::time::sleep_until(at.into()).await;
    }

    async fn precise(fd: &AsyncFd<Fd>, after: Duration) -> io::Result<()> {
        fd.get_ref()
            .0
            .set(
                Expiration::OneShot(TimeSpec::from_duration(after)),
                TimerSetTimeFlags::empty(),
            )
            .map_err(io::Error::from)?;
        loop {
            let mut guard = fd.readable().await?;
            match guard.try_io(|inner| inner.get_ref().0.wait().map_err(io::Error::from)) {
                Ok(result) => return result,
                Err(_would_block) => continue,
            }
        }
    }
}

/// Lowers the calling thread's timer slack (default 50 µs) to 1 µs while alive.
pub(crate) struct FineTimerSlack {
    previous: Option<u64>,
}

impl FineTimerSlack {
    pub fn set() -> FineTimerSlack {
        let previous = nix::sys::prctl::get_timerslack()
            .ok()
            .and_then(|ns| u64::try_from(ns).ok());
        if previous.is_some() {
            let _ = nix::sys::prctl::set_timerslack(1_000);
        }
        FineTimerSlack { previous }
    }
}

impl Drop for FineTimerSlack {
    fn drop(&mut self) {
        if let Some(ns) = self.previous {
            let _ = nix::sys::prctl::set_timerslack(ns);
        }
    }
}

/// CPU time the calling thread has used.
pub(crate) fn thread_cpu() -> Duration {
    nix::time::clock_gettime(nix::time::ClockId::CLOCK_THREAD_CPUTIME_ID)
        .map(Duration::from)
        .unwrap_or_default()
}
