//! Decision tables: how [`Watch`] ends a run from a sequence of made-up samples, and what
//! [`compose`] makes of an ending, the counters and the flags. No process runs here; the
//! real-process rules live in `crates/qualify/tests/probe_cli.rs`.

use std::time::{Duration, Instant};

use super::*;
use crate::backend::{Counters, Kind};
use crate::blocking::Class;
use crate::limits::{Limits, Progress};
use crate::testkit::{P, Scripted, T, mpi_tree, snaps, stacks};

const TICK_MS: u64 = 100;

fn limits(stall_s: f64, progress: Progress) -> Limits {
    Limits {
        stall_seconds: stall_s,
        timeout_seconds: 600.0,
        progress,
        ..Limits::default()
    }
}

/// What one scenario feeds the watch every tick.
struct Feed {
    /// Output bytes at tick i.
    output: fn(u64) -> u64,
    /// I/O bytes at tick i.
    io: fn(u64) -> u64,
}

const STILL: Feed = Feed {
    output: |_| 0,
    io: |_| 0,
};

/// Run the watch over `ticks` samples 100 ms apart; the ending and when it came (seconds).
fn watch_run(
    procs: &[P],
    inspect: &mut Scripted,
    limits: &Limits,
    ticks: u64,
    feed: &Feed,
) -> (Option<Ending>, f64, Watch, Instant) {
    let start = Instant::now();
    let mut w = Watch::new(limits, 2.0, start);
    for i in 1..=ticks {
        let now = start + Duration::from_millis(i * TICK_MS);
        let s = snaps(procs, i * TICK_MS, (feed.io)(i), 0);
        if let Some(end) = w.observe(now, &s, (feed.output)(i), None, inspect) {
            return (Some(end), (i * TICK_MS) as f64 / 1000.0, w, now);
        }
    }
    let end = start + Duration::from_millis(ticks * TICK_MS);
    (None, ticks as f64 * TICK_MS as f64 / 1000.0, w, end)
}

fn kind_of(end: &Option<Ending>) -> &'static str {
    match end {
        None => "none",
        Some(Ending::Deadlock(..)) => "deadlock",
        Some(Ending::SpinDeadlock(..)) => "spin_deadlock",
        Some(Ending::WaitFor(..)) => "wait_for",
        Some(Ending::Livelock { .. }) => "livelock",
        Some(Ending::Timeout(..)) => "timeout",
        Some(Ending::Watchdog { .. }) => "watchdog",
        Some(Ending::PidsExhausted { .. }) => "pids_exhausted",
        Some(Ending::DiskFull { .. }) => "disk_full",
        Some(Ending::Interrupted) => "interrupted",
        Some(Ending::Exited) => "exited",
    }
}

/// The watch's table: scenario → how the run ends (or, when it does not, the timeout kind),
/// and when.
#[test]
fn watch_decisions() {
    struct Case {
        what: &'static str,
        procs: Vec<P>,
        progress: Progress,
        feed: Feed,
        sampler: bool,
        memory_moves: bool,
        /// `deadlock`, `spin_deadlock`, `livelock`, or `timeout:<kind>` when nothing ends it.
        want: &'static str,
        /// Something the detail or the timeout reason must say.
        says: &'static str,
    }
    let omp = |stack| {
        vec![P::new(
            300,
            "omp_barrier",
            vec![
                T::running(300).stack(stack),
                T::running(301).stack(stacks::GOMP_WORKER),
            ],
        )]
    };
    let cases = vec![
        Case {
            what: "two threads in untimed futex waits, nothing moving",
            procs: vec![P::new(10, "lockorder", vec![T::futex(10), T::futex(11)])],
            progress: Progress::None,
            feed: STILL,
            sampler: true,
            memory_moves: false,
            want: "deadlock",
            says: "futex ×2",
        },
        Case {
            what: "timed waits only: idle, never a deadlock",
            procs: vec![P::new(10, "timed_sleeps", vec![T::timed(10), T::timed(11)])],
            progress: Progress::None,
            feed: STILL,
            sampler: true,
            memory_moves: false,
            want: "timeout:idle",
            says: "timed waits only",
        },
        Case {
            what: "blocked on a socket outside the tree",
            procs: vec![P::new(10, "accept_block", vec![T::external(10)])],
            progress: Progress::None,
            feed: STILL,
            sampler: true,
            memory_moves: false,
            want: "timeout:blocked_external",
            says: "accept",
        },
        Case {
            what: "busy and silent with an output progress signal: livelock",
            procs: vec![P::new(
                10,
                "spin",
                vec![T::running(10).stack(&[("spin", "spin")])],
            )],
            progress: Progress::Output,
            feed: STILL,
            sampler: true,
            memory_moves: false,
            want: "livelock",
            says: "no output",
        },
        Case {
            what: "busy and printing: progressing",
            procs: vec![P::new(
                10,
                "spin",
                vec![T::running(10).stack(&[("spin", "spin")])],
            )],
            progress: Progress::Output,
            feed: Feed {
                output: |i| i * 10,
                io: |i| i * 10,
            },
            sampler: true,
            memory_moves: false,
            want: "timeout:progressing",
            says: "progress",
        },
        Case {
            what: "busy computing without a progress signal: busy, not a deadlock",
            procs: vec![P::new(
                10,
                "spin",
                vec![T::running(10).stack(&[("spin", "spin")])],
            )],
            progress: Progress::None,
            feed: STILL,
            sampler: true,
            memory_moves: false,
            want: "timeout:busy",
            says: "busy",
        },
        Case {
            what: "MPI send-send: every rank spinning in MPI_Send",
            procs: mpi_tree(&[stacks::MPI_SEND, stacks::MPI_SEND], "2"),
            progress: Progress::None,
            feed: STILL,
            sampler: true,
            memory_moves: false,
            want: "spin_deadlock",
            says: "all 2 ranks in MPI_Send — rank 0: MPI_Send (spinning in opal_progress); rank 1: MPI_Send (spinning in opal_progress)",
        },
        Case {
            what: "mismatched collectives",
            procs: mpi_tree(&[stacks::MPI_BARRIER, stacks::MPI_ALLREDUCE], "2"),
            progress: Progress::None,
            feed: STILL,
            sampler: true,
            memory_moves: false,
            want: "spin_deadlock",
            says: "rank 0: MPI_Barrier (spinning in opal_progress); rank 1: MPI_Allreduce",
        },
        Case {
            what: "MPI deadlock also with an output progress signal (not a livelock)",
            procs: mpi_tree(&[stacks::MPI_SEND, stacks::MPI_SEND], "2"),
            progress: Progress::Output,
            feed: STILL,
            sampler: true,
            memory_moves: false,
            want: "spin_deadlock",
            says: "all 2 ranks in MPI_Send",
        },
        Case {
            what: "calls that keep completing: memory moves between digests",
            procs: mpi_tree(&[stacks::MPI_SEND, stacks::MPI_SEND], "2"),
            progress: Progress::None,
            feed: STILL,
            sampler: true,
            memory_moves: true,
            want: "timeout:busy",
            says: "busy",
        },
        Case {
            what: "bytes moving through pipes or sockets: never still",
            procs: mpi_tree(&[stacks::MPI_SEND, stacks::MPI_SEND], "2"),
            progress: Progress::None,
            feed: Feed {
                output: |_| 0,
                io: |i| i * 4096,
            },
            sampler: true,
            memory_moves: false,
            want: "timeout:busy",
            says: "busy",
        },
        Case {
            what: "two of four ranks in the tree: the others could release them",
            procs: mpi_tree(&[stacks::MPI_SEND, stacks::MPI_SEND], "4"),
            progress: Progress::None,
            feed: STILL,
            sampler: true,
            memory_moves: false,
            want: "timeout:ambiguous_spin",
            says: "only 2 of the 4 ranks",
        },
        Case {
            what: "one rank in MPI_Send, the other blocked on a socket outside the tree",
            procs: {
                let mut t = mpi_tree(&[stacks::MPI_SEND, stacks::MPI_SEND], "2");
                t[2].threads[0] =
                    T::external(210).stack(&[("accept", "libc.so.6"), ("main", "net_wait")]);
                t
            },
            progress: Progress::None,
            feed: STILL,
            sampler: true,
            memory_moves: false,
            want: "timeout:ambiguous_spin",
            says: "blocked on something outside the tree",
        },
        Case {
            what: "no stack sampler: busy, and the reason says why it was not examined",
            procs: mpi_tree(&[stacks::MPI_SEND, stacks::MPI_SEND], "2"),
            progress: Progress::None,
            feed: STILL,
            sampler: false,
            memory_moves: false,
            want: "timeout:busy",
            says: "not examined for spin-waits",
        },
        Case {
            what: "stripped libgomp barrier entered from user code, the worker in the runtime",
            procs: omp(stacks::GOMP_BARRIER),
            progress: Progress::None,
            feed: STILL,
            sampler: true,
            memory_moves: false,
            want: "spin_deadlock",
            says: "matched by library",
        },
        Case {
            what: "one OpenMP thread computing while the other spins in the barrier",
            procs: omp(stacks::COMPUTE),
            progress: Progress::None,
            feed: STILL,
            sampler: true,
            memory_moves: false,
            want: "timeout:busy",
            says: "busy",
        },
        Case {
            what: "one OpenMP thread computing while the other spins in an explicit barrier",
            procs: vec![P::new(
                300,
                "omp_compute",
                vec![
                    T::running(300).stack(stacks::COMPUTE),
                    T::running(301).stack(stacks::GOMP_BARRIER),
                ],
            )],
            progress: Progress::None,
            feed: STILL,
            sampler: true,
            memory_moves: false,
            want: "timeout:ambiguous_spin",
            says: "computing in main._omp_fn.0",
        },
        Case {
            what: "a spin lock: spinning worker, main thread joining it",
            procs: vec![P::new(
                400,
                "spinlock",
                vec![
                    T::futex(400),
                    T::running(401).stack(&[
                        ("pthread_spin_lock", "libc.so.6"),
                        ("worker", "spinlock"),
                        ("start_thread", "libc.so.6"),
                    ]),
                ],
            )],
            progress: Progress::None,
            feed: STILL,
            sampler: true,
            memory_moves: false,
            want: "spin_deadlock",
            says: "1 thread(s) in pthread_spin_lock",
        },
    ];
    for c in cases {
        let mut inspect = Scripted::new(c.procs.clone());
        inspect.memory_moves = c.memory_moves;
        if !c.sampler {
            inspect.sampler = Err(crate::stacks::NoSampler);
        }
        let l = limits(2.0, c.progress);
        // 6 s of samples: three stall windows.
        let (end, at, w, now) = watch_run(&c.procs, &mut inspect, &l, 60, &c.feed);
        let (got, text) = match &end {
            None => {
                let s = snaps(&c.procs, 6000, 0, 0);
                let (kind, why) = w.timeout_kind(now, &s, &mut inspect);
                (format!("timeout:{}", kind.as_str()), why)
            }
            Some(e) => {
                let text = match e {
                    Ending::SpinDeadlock(f) => f.why.clone(),
                    Ending::Deadlock(waits, q) => deadlock_detail(waits, *q),
                    Ending::Livelock { cores, quiet } => {
                        format!("busy {cores:.1} with no output for {quiet:?}")
                    }
                    _ => String::new(),
                };
                (kind_of(&end).to_string(), text)
            }
        };
        assert_eq!(got, c.want, "{}: {text}", c.what);
        assert!(
            text.contains(c.says),
            "{}: {text:?} lacks {:?}",
            c.what,
            c.says
        );
        if end.is_some() {
            // Decided at the stall window, not before it, and well before the timeout.
            assert!((2.0..=3.0).contains(&at), "{}: decided at {at}s", c.what);
        }
    }
}

/// Spin examinations cost stack samples: three per stall window at first, then fewer while the
/// tree stays still, and none for an idle tree.
#[test]
fn examinations_back_off_and_skip_idle_trees() {
    let l = limits(1.0, Progress::None);
    let busy = vec![P::new(
        10,
        "spin",
        vec![T::running(10).stack(&[("spin", "spin")])],
    )];
    let mut inspect = Scripted::new(busy.clone());
    // 64 s of a silent computation: one sample tells it computes, then pauses of 0, 1, 3, 7,
    // 15, 31 windows; no memory is digested for it.
    let (end, _, w, _) = watch_run(&busy, &mut inspect, &l, 640, &STILL);
    assert!(end.is_none());
    assert!(
        (5..=9).contains(&inspect.stack_calls),
        "{} stack samples in 64 s",
        inspect.stack_calls
    );
    assert_eq!(
        inspect.memory_calls, 0,
        "memory digested for a computing tree"
    );
    assert!(matches!(w.spin_conclusion(), Some(Conclusion::NotStuck(_))));

    // A tree in synchronization calls whose memory keeps moving: three samples per
    // examination, two digests before each of the last two.
    let mpi = mpi_tree(&[stacks::MPI_SEND, stacks::MPI_SEND], "2");
    let mut inspect = Scripted::new(mpi.clone());
    inspect.memory_moves = true;
    let (end, _, _, _) = watch_run(&mpi, &mut inspect, &l, 12, &STILL);
    assert!(end.is_none());
    assert_eq!((inspect.stack_calls, inspect.memory_calls), (3, 4));

    let idle = vec![P::new(10, "sleep", vec![T::timed(10)])];
    let mut inspect = Scripted::new(idle.clone());
    let (end, _, _, _) = watch_run(&idle, &mut inspect, &l, 100, &STILL);
    assert!(end.is_none());
    assert_eq!(inspect.stack_calls, 0, "an idle tree was sampled");
}

fn watch_with(samples: u64, runnable_each: u64, tasks: usize) -> Watch {
    let mut w = Watch::new(&Limits::default(), 1.0, Instant::now());
    w.samples = samples;
    w.runnable_sum = samples * runnable_each;
    w.max_runnable = runnable_each;
    w.max_tasks = tasks;
    w
}

/// The final decision's table: ending × status × counters × limits → outcome, exit code,
/// signal, timeout kind, flags and a phrase of the detail.
#[test]
fn compose_decisions() {
    let exit = |code: i32| code << 8;
    let sig = |s: i32| s;
    let waits = || {
        vec![
            ThreadWait {
                pid: 1,
                tid: 1,
                comm: "a".into(),
                state: "S".into(),
                class: Class::Internal,
                call: "futex(FUTEX_WAIT, no timeout)".into(),
                wchan: String::new(),
                futex: None,
                timeout_ms: None,
            };
            2
        ]
    };
    struct Case {
        ending: Ending,
        status: Option<i32>,
        counters: Counters,
        kind: Kind,
        limits: Limits,
        watch: Watch,
        leaked: usize,
        truncated: bool,
        disk_hit: bool,
        want: (
            &'static str,
            Option<i32>,
            Option<&'static str>,
            Option<&'static str>,
        ),
        flags: &'static [&'static str],
        says: &'static str,
        report: Option<crate::reports::Reported>,
    }
    let base = |ending: Ending, status: Option<i32>| Case {
        ending,
        status,
        counters: Counters::default(),
        kind: Kind::Cgroup2,
        limits: Limits::default(),
        watch: watch_with(0, 0, 0),
        leaked: 0,
        truncated: false,
        disk_hit: false,
        want: ("ok", None, None, None),
        flags: &[],
        says: "",
        report: None,
    };
    // A runtime's report as `reports::judge` hands it over.
    let report = |decided: Option<Outcome>| crate::reports::Reported {
        runtime: "Go".into(),
        report: "go.deadlock".into(),
        cause: "deadlock".into(),
        said: "fatal error: all goroutines are asleep - deadlock!".into(),
        detail: Default::default(),
        limit: None,
        frames: Vec::new(),
        goroutines: Vec::new(),
        goroutines_total: Some(2),
        decided: decided.is_some(),
        not_decided: None,
        other_reports: 0,
        outcome: decided,
        sentence: "the Go runtime found every goroutine asleep".into(),
    };
    let mut cases = Vec::new();
    // The runtime's report names a failure that ended the way the runtime ends one.
    cases.push(Case {
        report: Some(report(Some(Outcome::Deadlock))),
        want: ("deadlock", Some(2), None, None),
        says: "the Go runtime found every goroutine asleep; exited with status 2",
        ..base(Ending::Exited, Some(exit(2)))
    });
    cases.push(Case {
        report: Some(report(Some(Outcome::OutOfMemory))),
        want: ("out_of_memory", None, Some("SIGABRT"), None),
        says: "; was killed by SIGABRT",
        ..base(Ending::Exited, Some(sig(libc::SIGABRT)))
    });
    // Never an `ok` run, never over the kernel's memory kill.
    cases.push(Case {
        report: Some(report(Some(Outcome::Deadlock))),
        want: ("ok", Some(0), None, None),
        says: "exited with status 0",
        ..base(Ending::Exited, Some(exit(0)))
    });
    cases.push(Case {
        report: Some(report(Some(Outcome::Deadlock))),
        counters: Counters {
            oom_kills: 1,
            ..Counters::default()
        },
        want: ("oom_killed", Some(2), None, None),
        says: "memory ceiling (kernel) killed 1 process(es)",
        ..base(Ending::Exited, Some(exit(2)))
    });
    // Undecided: a failure keeps its own detail; a run qualify stopped states it beside.
    cases.push(Case {
        report: Some(report(None)),
        want: ("exit_failure", Some(1), None, None),
        says: "exited with status 1",
        ..base(Ending::Exited, Some(exit(1)))
    });
    cases.push(Case {
        report: Some(report(None)),
        want: ("timeout", None, None, Some("ambiguous_wait")),
        says: "not proven; stderr carried a runtime's report: the Go runtime found every goroutine asleep",
        ..base(
            Ending::Timeout(TimeoutKind::AmbiguousWait, "not proven".into()),
            None,
        )
    });
    cases.push(Case {
        want: ("ok", Some(0), None, None),
        says: "exited with status 0",
        ..base(Ending::Exited, Some(exit(0)))
    });
    cases.push(Case {
        want: ("exit_failure", Some(3), None, None),
        says: "exited with status 3",
        ..base(Ending::Exited, Some(exit(3)))
    });
    cases.push(Case {
        want: ("exit_failure", Some(139), None, None),
        says: "a SIGSEGV behind a wrapper shell?",
        ..base(Ending::Exited, Some(exit(139)))
    });
    cases.push(Case {
        want: ("crash", None, Some("SIGSEGV"), None),
        says: "crashed",
        ..base(Ending::Exited, Some(sig(libc::SIGSEGV)))
    });
    cases.push(Case {
        want: ("killed", None, Some("SIGTERM"), None),
        says: "a signal qualify did not send",
        ..base(Ending::Exited, Some(sig(libc::SIGTERM)))
    });
    cases.push(Case {
        want: ("killed", None, None, None),
        says: "wait status was lost",
        ..base(Ending::Exited, None)
    });
    cases.push(Case {
        counters: Counters {
            oom_kills: 1,
            ..Counters::default()
        },
        limits: Limits {
            memory_bytes: Some(64 << 20),
            ..Limits::default()
        },
        want: ("oom_killed", Some(3), None, None),
        says: "the 64.0 MiB memory ceiling (kernel) killed 1 process(es) in the tree; the main process then exited with status 3",
        ..base(Ending::Exited, Some(exit(3)))
    });
    cases.push(Case {
        counters: Counters {
            oom_kills: 2,
            ..Counters::default()
        },
        want: ("oom_killed", None, None, None),
        says: "the tree then deadlocked",
        ..base(Ending::Deadlock(waits(), Duration::from_secs(2)), None)
    });
    cases.push(Case {
        kind: Kind::Rlimit,
        limits: Limits {
            memory_bytes: Some(1 << 20),
            ..Limits::default()
        },
        want: ("oom_killed", None, None, None),
        says: "memory watchdog",
        ..base(Ending::Watchdog { used: 2 << 20 }, None)
    });
    cases.push(Case {
        want: ("interrupted", None, None, None),
        says: "says nothing about the artifact",
        ..base(Ending::Interrupted, None)
    });
    cases.push(Case {
        want: ("timeout", None, None, Some("busy")),
        says: "deadline of 600.0s passed; busy",
        ..base(
            Ending::Timeout(TimeoutKind::Busy, "busy (1.00 cores)".into()),
            None,
        )
    });
    cases.push(Case {
        want: ("timeout", None, None, Some("ambiguous_spin")),
        says: "not proven",
        ..base(
            Ending::Timeout(TimeoutKind::AmbiguousSpin, "not proven".into()),
            None,
        )
    });
    cases.push(Case {
        want: ("deadlock", None, None, None),
        says: "all 2 thread(s) in 1 process(es) blocked in untimed waits only the tree could release (futex ×2) and nothing moved for 2.0s",
        ..base(Ending::Deadlock(waits(), Duration::from_secs(2)), None)
    });
    cases.push(Case {
        limits: limits(2.0, Progress::Heartbeat),
        want: ("livelock", None, None, None),
        says: "CPU busy (1.50 cores) with no heartbeat for 2.0s",
        ..base(
            Ending::Livelock {
                cores: 1.5,
                quiet: Duration::from_secs(2),
            },
            None,
        )
    });
    // Flags.
    cases.push(Case {
        counters: Counters {
            nr_throttled: Some(5),
            memory_failcnt: Some(1),
            pids_max_events: Some(1),
            ..Counters::default()
        },
        limits: Limits {
            cpus: Some(0.5),
            memory_bytes: Some(64 << 20),
            ..Limits::default()
        },
        leaked: 1,
        truncated: true,
        want: ("ok", Some(0), None, None),
        flags: &[
            "cpu_throttled",
            "memory_pressure",
            "pids_limit_hit",
            "leaked_processes",
            "output_truncated",
        ],
        says: "exited with status 0",
        ..base(Ending::Exited, Some(exit(0)))
    });
    cases.push(Case {
        counters: Counters {
            nr_throttled: Some(5),
            ..Counters::default()
        },
        want: ("ok", Some(0), None, None),
        flags: &[],
        says: "",
        ..base(Ending::Exited, Some(exit(0)))
    });
    cases.push(Case {
        kind: Kind::Rlimit,
        limits: Limits {
            pids: Some(10),
            ..Limits::default()
        },
        watch: watch_with(10, 0, 11),
        want: ("ok", Some(0), None, None),
        flags: &["pids_limit_hit"],
        says: "",
        ..base(Ending::Exited, Some(exit(0)))
    });
    cases.push(Case {
        watch: watch_with(10, 4, 4),
        want: ("ok", Some(0), None, None),
        flags: &["oversubscribed"],
        says: "",
        ..base(Ending::Exited, Some(exit(0)))
    });
    cases.push(Case {
        watch: watch_with(10, 2, 2),
        want: ("ok", Some(0), None, None),
        flags: &[],
        says: "",
        ..base(Ending::Exited, Some(exit(0)))
    });
    // The guards: ceilings nobody asked for end the run with their own outcome.
    cases.push(Case {
        counters: Counters {
            pids_max_events: Some(3),
            ..Counters::default()
        },
        limits: Limits::default().guarded(),
        want: ("pids_exhausted", None, None, None),
        flags: &["pids_limit_hit"],
        says: "reached the 4096 pids ceiling qualify sets when the spec sets none",
        ..base(Ending::PidsExhausted { tasks: None }, None)
    });
    cases.push(Case {
        limits: Limits::default().guarded(),
        want: ("disk_full", None, None, None),
        flags: &["disk_limit_hit"],
        says: "writes to its writable places reached the 1.0 GiB disk ceiling qualify sets when the spec sets none ([limits] disk) (1.0 GiB counted)",
        ..base(Ending::DiskFull { used: 1 << 30 }, None)
    });
    // Filled between two samples, then exited on "no space left on device".
    cases.push(Case {
        limits: Limits {
            disk_bytes: Some(64 << 20),
            ..Limits::default()
        },
        disk_hit: true,
        want: ("disk_full", Some(1), None, None),
        flags: &["disk_limit_hit"],
        says: "reached the 64.0 MiB disk ceiling (writes failed: no space left on device); the main process then exited with status 1",
        ..base(Ending::Exited, Some(exit(1)))
    });
    // An OOM kill outranks a full disk.
    cases.push(Case {
        counters: Counters {
            oom_kills: 1,
            ..Counters::default()
        },
        limits: Limits::default().guarded(),
        disk_hit: true,
        want: ("oom_killed", None, Some("SIGKILL"), None),
        flags: &["disk_limit_hit"],
        says: "memory ceiling",
        ..base(Ending::Exited, Some(libc::SIGKILL))
    });
    for c in cases {
        let d = compose(&Facts {
            ending: &c.ending,
            status: c.status,
            counters: &c.counters,
            kind: c.kind,
            limits: &c.limits,
            watch: &c.watch,
            leaked: c.leaked,
            truncated: c.truncated,
            wall: Duration::from_secs(3),
            disk_hit: c.disk_hit,
            report: c.report.as_ref(),
        });
        let got = (
            d.outcome.as_str(),
            d.exit_code,
            d.signal.as_deref(),
            d.timeout_kind.map(TimeoutKind::as_str),
        );
        assert_eq!(got, c.want, "{}", d.detail);
        let flags: Vec<&str> = d.flags.iter().map(|f| f.as_str()).collect();
        assert_eq!(flags, c.flags, "{}", d.detail);
        assert!(
            d.detail.contains(c.says),
            "{:?} lacks {:?}",
            d.detail,
            c.says
        );
    }
}
