//! Reading a Go execution trace (`-test.trace`, the format of Go 1.11–1.21) for the goroutines
//! still alive when tracing stopped, with what each was doing (blocked on a channel, in a
//! `select`, on a mutex, asleep, …), where (the blocking event's stack) and which function it
//! ran. Only what that needs is read: the per-P batches of goroutine events, the stack table and
//! the strings; events are ordered by their timestamps (ticks synchronised across CPUs), a
//! blocking event before an unblocking one at the same tick.

use std::collections::{BTreeMap, HashMap};

/// Why a trace could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TraceError {
    #[error("not a Go execution trace (no `go 1.N trace` header)")]
    NotATrace,
    #[error("a Go {0} trace: only the format of Go 1.11–1.21 is read")]
    Version(String),
    #[error("the trace ends inside an event at byte {0}")]
    Truncated(usize),
}

/// A goroutine alive when tracing stopped.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Left {
    pub id: u64,
    /// `chan receive`, `chan send`, `select`, `sync`, `sync.Cond`, `blocked`, `stopped`,
    /// `network`, `sleep`, `syscall`, `runnable`, `running`.
    pub state: &'static str,
    /// Where it blocked: the program's innermost frame (`main.worker at /src/x.go:14`).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub at: String,
    /// The function it was started with.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub started_as: String,
}

impl Left {
    /// Blocked on another goroutine: a channel, `select`, lock, condition or a stop.
    pub fn blocked(&self) -> bool {
        matches!(
            self.state,
            "chan receive" | "chan send" | "select" | "sync" | "sync.Cond" | "blocked" | "stopped"
        )
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Running,
    Runnable,
    Dead,
    /// Waiting, with the stack id of the event.
    Waiting(&'static str, u64),
}

struct Reader<'a> {
    data: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn byte(&mut self) -> Option<u8> {
        let b = *self.data.get(self.at)?;
        self.at += 1;
        Some(b)
    }

    fn varint(&mut self) -> Result<u64, TraceError> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte().ok_or(TraceError::Truncated(self.at))?;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(TraceError::Truncated(self.at))
    }

    fn bytes(&mut self, n: u64) -> Result<&[u8], TraceError> {
        let n = usize::try_from(n).map_err(|_| TraceError::Truncated(self.at))?;
        let end = self
            .at
            .checked_add(n)
            .ok_or(TraceError::Truncated(self.at))?;
        let s = self
            .data
            .get(self.at..end)
            .ok_or(TraceError::Truncated(self.at))?;
        self.at = end;
        Ok(s)
    }
}

/// The version in the header (`go 1.19 trace`) as 1019.
fn version(header: &[u8]) -> Result<u32, TraceError> {
    let text = std::str::from_utf8(header.get(..16).ok_or(TraceError::NotATrace)?)
        .map_err(|_| TraceError::NotATrace)?;
    let rest = text.strip_prefix("go 1.").ok_or(TraceError::NotATrace)?;
    let (minor, tail) = rest.split_once(" trace").ok_or(TraceError::NotATrace)?;
    if !tail.bytes().all(|b| b == 0) {
        return Err(TraceError::NotATrace);
    }
    let minor: u32 = minor.parse().map_err(|_| TraceError::NotATrace)?;
    if !(11..=21).contains(&minor) {
        return Err(TraceError::Version(format!("1.{minor}")));
    }
    Ok(1000 + minor)
}

// Event types of the format (runtime/trace.go of Go 1.11–1.21).
const EV_BATCH: u8 = 1;
const EV_FREQUENCY: u8 = 2;
const EV_STACK: u8 = 3;
const EV_GO_CREATE: u8 = 13;
const EV_GO_START: u8 = 14;
const EV_GO_END: u8 = 15;
const EV_GO_STOP: u8 = 16;
const EV_GO_SCHED: u8 = 17;
const EV_GO_PREEMPT: u8 = 18;
const EV_GO_SLEEP: u8 = 19;
const EV_GO_BLOCK: u8 = 20;
const EV_GO_UNBLOCK: u8 = 21;
const EV_GO_BLOCK_SEND: u8 = 22;
const EV_GO_BLOCK_RECV: u8 = 23;
const EV_GO_BLOCK_SELECT: u8 = 24;
const EV_GO_BLOCK_SYNC: u8 = 25;
const EV_GO_BLOCK_COND: u8 = 26;
const EV_GO_BLOCK_NET: u8 = 27;
const EV_GO_SYS_EXIT: u8 = 29;
const EV_GO_SYS_BLOCK: u8 = 30;
const EV_GO_WAITING: u8 = 31;
const EV_GO_IN_SYSCALL: u8 = 32;
const EV_TIMER_GOROUTINE: u8 = 35;
const EV_STRING: u8 = 37;
const EV_GO_START_LOCAL: u8 = 38;
const EV_GO_UNBLOCK_LOCAL: u8 = 39;
const EV_GO_SYS_EXIT_LOCAL: u8 = 40;
const EV_GO_START_LABEL: u8 = 41;
const EV_GO_BLOCK_GC: u8 = 42;
const EV_USER_LOG: u8 = 48;
const EV_CPU_SAMPLE: u8 = 49;

/// Frames of the runtime and standard library a goroutine blocks inside.
const LIBRARY: [&str; 5] = ["runtime.", "sync.", "time.", "internal/", "runtime/"];

/// Every goroutine alive when the trace ends, but the runtime's and the tracer's own.
pub fn left(data: &[u8]) -> Result<Vec<Left>, TraceError> {
    let _version = version(data)?;
    let mut r = Reader { data, at: 16 };
    let mut strings: HashMap<u64, String> = HashMap::new();
    let mut stacks: HashMap<u64, Vec<(u64, u64, u64)>> = HashMap::new();
    let mut created: HashMap<u64, u64> = HashMap::new();
    let mut timers: Vec<u64> = Vec::new();
    // (timestamp, order among equal timestamps, goroutine, state), in file order.
    let mut changes: Vec<(u64, u8, u64, State)> = Vec::new();
    let mut last_ts = 0u64;
    let mut last_p = 0u64;
    let mut last_g = 0u64;
    let mut running: HashMap<u64, u64> = HashMap::new();
    while let Some(b) = r.byte() {
        let typ = b & 0x3f;
        let narg = (b >> 6) + 1;
        if typ == EV_STRING {
            let id = r.varint()?;
            let len = r.varint()?;
            let s = String::from_utf8_lossy(r.bytes(len)?).into_owned();
            strings.insert(id, s);
            continue;
        }
        let mut args: Vec<u64> = Vec::with_capacity(4);
        if narg < 4 {
            for _ in 0..narg {
                args.push(r.varint()?);
            }
        } else {
            let len = r.varint()?;
            let end = r.at + usize::try_from(len).map_err(|_| TraceError::Truncated(r.at))?;
            while r.at < end {
                args.push(r.varint()?);
            }
            if r.at != end {
                return Err(TraceError::Truncated(r.at));
            }
        }
        if typ == EV_USER_LOG {
            let len = r.varint()?;
            r.bytes(len)?;
        }
        let arg = |i: usize| args.get(i).copied().unwrap_or(0);
        match typ {
            EV_BATCH => {
                running.insert(last_p, last_g);
                last_p = arg(0);
                last_g = running.get(&last_p).copied().unwrap_or(0);
                last_ts = arg(1);
                continue;
            }
            EV_FREQUENCY => continue,
            EV_TIMER_GOROUTINE => {
                timers.push(arg(0));
                continue;
            }
            EV_STACK => {
                let n = usize::try_from(arg(1)).unwrap_or(0);
                let frames = (0..n)
                    .map(|i| (arg(3 + 4 * i), arg(4 + 4 * i), arg(5 + 4 * i)))
                    .collect();
                stacks.insert(arg(0), frames);
                continue;
            }
            // Its timestamp is absolute and written late, outside the batches' order.
            EV_CPU_SAMPLE => continue,
            _ => {}
        }
        last_ts = last_ts.wrapping_add(arg(0));
        let ts = last_ts;
        let mut change = |g: u64, order: u8, state: State| changes.push((ts, order, g, state));
        let stopped = |state: &'static str| State::Waiting(state, arg(1));
        match typ {
            EV_GO_CREATE => {
                created.insert(arg(1), arg(2));
                change(arg(1), 1, State::Runnable);
            }
            EV_GO_START | EV_GO_START_LOCAL | EV_GO_START_LABEL => {
                last_g = arg(1);
                change(last_g, 2, State::Running);
            }
            EV_GO_END => {
                change(last_g, 0, State::Dead);
                last_g = 0;
            }
            EV_GO_SCHED | EV_GO_PREEMPT | EV_GO_BLOCK_GC => {
                change(last_g, 0, State::Runnable);
                last_g = 0;
            }
            EV_GO_STOP | EV_GO_SLEEP | EV_GO_BLOCK | EV_GO_BLOCK_SEND | EV_GO_BLOCK_RECV
            | EV_GO_BLOCK_SELECT | EV_GO_BLOCK_SYNC | EV_GO_BLOCK_COND | EV_GO_BLOCK_NET => {
                let state = match typ {
                    EV_GO_STOP => "stopped",
                    EV_GO_SLEEP => "sleep",
                    EV_GO_BLOCK_SEND => "chan send",
                    EV_GO_BLOCK_RECV => "chan receive",
                    EV_GO_BLOCK_SELECT => "select",
                    EV_GO_BLOCK_SYNC => "sync",
                    EV_GO_BLOCK_COND => "sync.Cond",
                    EV_GO_BLOCK_NET => "network",
                    _ => "blocked",
                };
                change(last_g, 0, stopped(state));
                last_g = 0;
            }
            EV_GO_SYS_BLOCK => {
                change(last_g, 0, State::Waiting("syscall", 0));
                last_g = 0;
            }
            EV_GO_UNBLOCK | EV_GO_UNBLOCK_LOCAL | EV_GO_SYS_EXIT | EV_GO_SYS_EXIT_LOCAL => {
                change(arg(1), 1, State::Runnable);
            }
            EV_GO_WAITING => change(arg(1), 0, State::Waiting("blocked", 0)),
            EV_GO_IN_SYSCALL => change(arg(1), 0, State::Waiting("syscall", 0)),
            _ => {}
        }
    }
    changes.sort_by_key(|(ts, order, _, _)| (*ts, *order));
    let mut last: BTreeMap<u64, State> = BTreeMap::new();
    for (_, _, g, state) in changes {
        if g != 0 {
            last.insert(g, state);
        }
    }
    let string = |id: u64| strings.get(&id).map(String::as_str).unwrap_or("?");
    let entry = |g: u64| {
        created
            .get(&g)
            .and_then(|s| stacks.get(s))
            .and_then(|f| f.first())
            .map(|&(f, _, _)| string(f).to_string())
            .unwrap_or_default()
    };
    let mut out = Vec::new();
    for (g, state) in last {
        let started_as = entry(g);
        if timers.contains(&g)
            || started_as.starts_with("runtime")
            || started_as.starts_with("testing.")
            || started_as.starts_with("os/signal.")
        {
            continue;
        }
        let (state, stack) = match state {
            State::Dead => continue,
            State::Running => ("running", 0),
            State::Runnable => ("runnable", 0),
            State::Waiting(s, stack) => (s, stack),
        };
        let at = stacks
            .get(&stack)
            .and_then(|frames| {
                frames
                    .iter()
                    .find(|&&(f, _, _)| !LIBRARY.iter().any(|p| string(f).starts_with(p)))
                    .or(frames.first())
            })
            .map(|&(f, file, line)| format!("{} at {}:{line}", string(f), string(file)))
            .unwrap_or_default();
        out.push(Left {
            id: g,
            state,
            at,
            started_as,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const LEAKS: &[u8] = include_bytes!("testdata/leaks.trace");
    const NO_LEAKS: &[u8] = include_bytes!("testdata/noleaks.trace");

    #[test]
    fn goroutines_left_blocked_are_named_with_where_they_wait() {
        let left = left(LEAKS).expect("a Go 1.19 trace");
        let seen: Vec<(&str, bool, &str)> = left
            .iter()
            .map(|g| (g.state, g.blocked(), g.at.as_str()))
            .collect();
        assert_eq!(
            seen,
            [
                (
                    "chan send",
                    true,
                    "qualify.invalid/corpus/gostall.TestLeaks.func1 at /var/tmp/leaky/leak_test.go:17"
                ),
                (
                    "sync",
                    true,
                    "qualify.invalid/corpus/gostall.TestLeaks.func2 at /var/tmp/leaky/leak_test.go:23"
                ),
            ]
        );
        assert_eq!(
            left[0].started_as,
            "qualify.invalid/corpus/gostall.TestLeaks.func1"
        );
        assert!(super::left(NO_LEAKS).expect("trace").is_empty());
    }

    #[test]
    fn what_is_no_readable_trace_says_why() {
        assert_eq!(left(b"hello"), Err(TraceError::NotATrace));
        assert_eq!(
            left(b"go 1.22 trace\0\0\0"),
            Err(TraceError::Version("1.22".into()))
        );
        assert!(matches!(
            left(&LEAKS[..LEAKS.len() - 3]),
            Err(TraceError::Truncated(_))
        ));
    }
}
