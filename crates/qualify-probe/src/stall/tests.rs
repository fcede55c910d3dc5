//! The partial-stall table: made-up quiet trees (threads, futex words in memory, the runtimes
//! they run, what the runtimes' tools print) → deadlock or not proven — and what the finding
//! names; and what the runtimes say of a tree qualify ends (threads, goroutines by what they do). No process runs here; the real runtimes are in
//! `crates/qualify/tests/runtimes_cli.rs`.

use std::time::{Duration, Instant};

use super::*;
use crate::blocking::Class;
use crate::testkit::{P, Scripted, T, mutex_bytes, snaps};

const FUTEX_WAIT_PRIVATE: u64 = 128;
const FUTEX_LOCK_PI_PRIVATE: u64 = 6 | 128;

fn futex(tid: i32) -> T {
    T::new(tid, Class::Internal, "futex(FUTEX_WAIT, no timeout)")
}

fn sleeper(tid: i32) -> T {
    T::new(tid, Class::Timed, "nanosleep").ticking()
}

/// Two workers deadlocked on mutexes at 0x1000 / 0x2000 (each holding one), a ticker, and the
/// main thread joining worker 11.
fn c_tree() -> Vec<P> {
    vec![P::new(
        10,
        "lockorder",
        vec![
            T::new(10, Class::Internal, "futex(FUTEX_WAIT_BITSET, no timeout)")
                .on_futex(0x9000, 0x109, 11),
            futex(11).on_futex(0x2000, FUTEX_WAIT_PRIVATE, 2),
            futex(12).on_futex(0x1000, FUTEX_WAIT_PRIVATE, 2),
            sleeper(13),
        ],
    )]
}

fn c_memory(s: &mut Scripted) {
    // m1 at 0x1000 held by 11, m2 at 0x2000 held by 12, the join word of thread 11.
    s.mem.push((10, 0x1000, mutex_bytes(2, 11, 0)));
    s.mem.push((10, 0x2000, mutex_bytes(2, 12, 0)));
    s.mem.push((10, 0x9000, mutex_bytes(11, 0, 0)));
}

/// Run the watch over `secs` of 100 ms samples of a quiet tree; the stop and when it came.
fn run(
    procs: &[P],
    inspect: &mut Scripted,
    stall_s: u64,
    secs: u64,
) -> (Option<Stop>, f64, StallWatch) {
    let start = Instant::now();
    let mut w = StallWatch::new(Duration::from_secs(stall_s), start);
    let mut tasks: Vec<i32> = procs
        .iter()
        .flat_map(|p| p.threads.iter().map(|t| t.tid))
        .collect();
    tasks.sort_unstable();
    for i in 1..=secs * 10 {
        let now = start + Duration::from_millis(i * 100);
        let s = snaps(procs, i * 100, 0, 0);
        let sig = Signature {
            output: 5,
            heartbeat: None,
            io_bytes: 100,
            tasks: tasks.clone(),
        };
        if let Some(stop) = w.observe(now, &s, sig, 0.001, None, inspect) {
            return (Some(stop), i as f64 / 10.0, w);
        }
    }
    (None, secs as f64, w)
}

fn why_of(stop: &Option<Stop>, w: &StallWatch) -> (&'static str, String) {
    match stop {
        Some(Stop::Deadlock(f)) => ("deadlock", f.why.clone()),
        None => (
            "none",
            w.conclusion().map(|f| f.why.clone()).unwrap_or_default(),
        ),
    }
}

#[test]
fn stall_decisions() {
    let jvm_helpers = || {
        vec![
            T::new(41, Class::Internal, "futex(FUTEX_WAIT_BITSET, no timeout)")
                .named("GC Thread#0"),
            T::new(42, Class::Timed, "futex(FUTEX_WAIT_BITSET, timeout)")
                .ticking()
                .named("VM Periodic Tas"),
        ]
    };
    let jvm_tree = |user: Vec<T>| {
        let mut threads = jvm_helpers();
        threads.extend(user);
        vec![P::new(40, "java", threads)]
    };
    type Setup = Box<dyn Fn(&mut Scripted)>;
    let none: fn() -> Setup = || Box::new(|_: &mut Scripted| {});
    let cases: Vec<(&str, Vec<P>, Setup, &str, &str)> = vec![
        (
            "a mutex cycle beside a ticking thread: owners from the futex words",
            {
                let mut t = c_tree();
                let lock: &[(&str, &str)] = &[
                    ("__GI___lll_lock_wait", "libc.so.6"),
                    ("__pthread_mutex_lock@GLIBC_2.2.5", "libc.so.6"),
                    ("worker", "lockorder"),
                ];
                t[0].threads[1] = t[0].threads[1].clone().stack(lock);
                t[0].threads[2] = t[0].threads[2].clone().stack(lock);
                t
            },
            Box::new(c_memory),
            "deadlock",
            "wait-for cycle: thread 11 (lockorder) holds mutex 0x1000 and waits for mutex 0x2000 held by 12, which 12 (lockorder) waits for mutex 0x1000 held by 11; nothing else moved for 2.0s (stall window); besides: 1 thread(s) in a timed sleep loop, 1 thread(s) in an untimed wait for the exit of thread 11",
        ),
        (
            "words that look like mutexes, but the stacks show the threads in sem_wait: no edge",
            {
                let mut t = c_tree();
                let sem: &[(&str, &str)] = &[
                    ("__futex_abstimed_wait_common", "libc.so.6"),
                    ("sem_wait", "libc.so.6"),
                    ("worker", "lockorder"),
                ];
                t[0].threads[1] = t[0].threads[1].clone().stack(sem);
                t[0].threads[2] = t[0].threads[2].clone().stack(sem);
                t
            },
            Box::new(c_memory),
            "none",
            "no wait-for cycle proven",
        ),
        (
            "the same with the owners unreadable: not proven, and the timeout says what was seen",
            c_tree(),
            none(),
            "none",
            "3 thread(s) stayed in untimed waits only the tree could release for 2.0s",
        ),
        (
            "robust mutexes: the owner is in the futex word",
            vec![P::new(
                10,
                "robust",
                vec![
                    futex(11).on_futex(0x2000, FUTEX_WAIT_PRIVATE, 0x8000_000c),
                    futex(12).on_futex(0x1000, FUTEX_WAIT_PRIVATE, 0x8000_000b),
                    sleeper(13),
                ],
            )],
            Box::new(|s: &mut Scripted| {
                s.mem
                    .push((10, 0x1000, mutex_bytes(0x8000_000bu32 as i32, 0, 16)));
                s.mem
                    .push((10, 0x2000, mutex_bytes(0x8000_000cu32 as i32, 0, 16)));
            }),
            "deadlock",
            "holds robust mutex 0x1000 and waits for robust mutex 0x2000 held by 12",
        ),
        (
            "PI mutexes: FUTEX_LOCK_PI on a word naming its owner",
            vec![P::new(
                10,
                "pi",
                vec![
                    futex(11).on_futex(0x2000, FUTEX_LOCK_PI_PRIVATE, 0),
                    futex(12).on_futex(0x1000, FUTEX_LOCK_PI_PRIVATE, 0),
                    sleeper(13),
                ],
            )],
            Box::new(|s: &mut Scripted| {
                s.mem
                    .push((10, 0x1000, mutex_bytes(0x8000_000bu32 as i32, 0, 32)));
                s.mem
                    .push((10, 0x2000, mutex_bytes(0x8000_000cu32 as i32, 0, 32)));
            }),
            "deadlock",
            "holds PI mutex 0x1000 and waits for PI mutex 0x2000 held by 12",
        ),
        (
            "a condition variable (no owner) released by a thread in a long timed wait",
            vec![P::new(
                10,
                "cond_release",
                vec![
                    futex(10).on_futex(0x3000, FUTEX_WAIT_PRIVATE, 0),
                    T::new(11, Class::Timed, "nanosleep"),
                    sleeper(12),
                ],
            )],
            Box::new(|s: &mut Scripted| s.mem.push((10, 0x3000, vec![0; 24]))),
            "none",
            "1 thread(s) in a timed wait that has not ended (nanosleep)",
        ),
        (
            "every thread but the runtime's helpers waits untimed: deadlock",
            jvm_tree(vec![futex(43).named("main"), futex(44).named("Thread-0")]),
            Box::new(|s: &mut Scripted| s.runtimes.push((40, "JVM"))),
            "deadlock",
            "2 thread(s) in untimed waits only the tree could release",
        ),
        (
            "the JVM's own report names a Java-level deadlock",
            jvm_tree(vec![
                futex(43).named("main"),
                T::new(44, Class::Timed, "futex(FUTEX_WAIT_BITSET, timeout)")
                    .ticking()
                    .named("first"),
            ]),
            Box::new(|s: &mut Scripted| {
                s.runtimes.push((40, "JVM"));
                s.reports.push((40, "Found one Java-level deadlock:\n=============================\n\"first\":\n  waiting to lock monitor 0x1 (object 0x2, a java.lang.Object),\n  which is held by \"second\"\n\n\"second\":\n  waiting to lock monitor 0x3 (object 0x4, a java.lang.Object),\n  which is held by \"first\"\n\nJava stack information for the threads listed above:\n===================================================\n\"first\":\n\tat Deadlock.monitors(Deadlock.java:31)\n\nFound 1 deadlock.\n".into()));
            }),
            "deadlock",
            "Java-level deadlock (the JVM's report): \"first\" at Deadlock.monitors(Deadlock.java:31) waits for monitor 0x1",
        ),
        (
            "a JVM whose report finds no deadlock, a user thread in a long timed wait",
            jvm_tree(vec![
                futex(43).named("main"),
                T::new(44, Class::Timed, "futex(FUTEX_WAIT_BITSET, timeout)")
                    .named("pool-1-thread-1"),
            ]),
            Box::new(|s: &mut Scripted| {
                s.runtimes.push((40, "JVM"));
                s.reports.push((
                    40,
                    "\"main\" #1 prio=5\n   java.lang.Thread.State: WAITING (parking)\n".into(),
                ));
            }),
            "none",
            "2 JVM helper thread(s) (runtime housekeeping)",
        ),
        (
            "a Go program whose threads wait untimed while its timers fire: not proven (a timer could release them), no dump",
            vec![P::new(
                50,
                "gostall",
                vec![
                    futex(50),
                    T::new(51, Class::Timed, "epoll_pwait(timeout 99 ms)")
                        .ticking()
                        .timeout(99),
                    futex(52),
                ],
            )],
            Box::new(|s: &mut Scripted| s.runtimes.push((50, "Go"))),
            "none",
            "a Go program whose timers fire: one could still release its goroutines",
        ),
        (
            "a Go program waiting for a timer 5 s away is not dumped",
            vec![P::new(
                50,
                "gostall",
                vec![
                    futex(50),
                    T::new(51, Class::Timed, "epoll_pwait(timeout 5000 ms)")
                        .ticking()
                        .timeout(5000),
                    futex(52),
                ],
            )],
            Box::new(|s: &mut Scripted| s.runtimes.push((50, "Go"))),
            "none",
            "in a timed wait that has not ended (epoll_pwait(timeout 5000 ms))",
        ),
    ];
    for (what, procs, setup, want, says) in cases {
        let mut inspect = Scripted::new(procs.clone());
        setup(&mut inspect);
        let (stop, at, w) = run(&procs, &mut inspect, 2, 5);
        let (got, why) = why_of(&stop, &w);
        assert_eq!(got, want, "{what}: {why}");
        assert!(why.contains(says), "{what}: {why:?} lacks {says:?}");
        if stop.is_some() {
            assert!((2.0..=2.3).contains(&at), "{what}: decided at {at}s");
        }
    }
}

/// The JVM is asked once per examination, and examinations back off while the tree stays
/// quiet: 1, 2, 4, … stall windows apart.
#[test]
fn the_jvm_is_asked_at_backed_off_examinations() {
    let procs = vec![P::new(
        40,
        "java",
        vec![
            futex(43).named("main"),
            T::new(44, Class::Timed, "futex(FUTEX_WAIT_BITSET, timeout)").named("worker"),
        ],
    )];
    let mut inspect = Scripted::new(procs.clone());
    inspect.runtimes.push((40, "JVM"));
    inspect.reports.push((
        40,
        "\"main\" #1\n   java.lang.Thread.State: WAITING (parking)\n".into(),
    ));
    let (stop, _, _) = run(&procs, &mut inspect, 1, 16);
    assert!(stop.is_none());
    // At 1, 3 and 7 s, then 15 s.
    assert_eq!(inspect.asked, 4);
}

#[test]
fn io_of_a_runtimes_helpers_is_housekeeping_not_progress() {
    // A JVM whose C1 compiler keeps reading files while its user threads are stuck: only the
    // user threads' I/O counts as the tree moving.
    let threads = vec![
        T::new(51, Class::Internal, "futex(FUTEX_WAIT_BITSET, no timeout)").named("main"),
        T::new(52, Class::Timed, "futex(FUTEX_WAIT_BITSET, timeout)")
            .ticking()
            .named("C1 CompilerThre"),
    ];
    let procs = vec![P::new(50, "java", threads)];
    let mut inspect = Scripted::new(procs.clone());
    inspect.runtimes.push((50, "JVM"));
    let mut w = StallWatch::new(Duration::from_secs(1), Instant::now());
    let at = |io: u64| {
        let mut s = snaps(&procs, 100, 0, 0);
        s[0].io_bytes = io;
        s
    };
    inspect.thread_io = vec![(51, 1_000), (52, 3_000)];
    let first = w.progress_io(&at(4_000), &mut inspect);
    assert_eq!(first, 1_000);
    // The compiler read 900 bytes more: no progress.
    inspect.thread_io = vec![(51, 1_000), (52, 3_900)];
    assert_eq!(w.progress_io(&at(4_900), &mut inspect), first);
    // The user thread wrote: progress.
    inspect.thread_io = vec![(51, 1_200), (52, 3_900)];
    assert_eq!(w.progress_io(&at(5_100), &mut inspect), 1_200);
    // Without a runtime every byte counts.
    let mut plain = Scripted::new(procs.clone());
    plain.thread_io = inspect.thread_io.clone();
    let mut w = StallWatch::new(Duration::from_secs(1), Instant::now());
    assert_eq!(w.progress_io(&at(5_100), &mut plain), 5_100);
}

#[test]
fn workers_that_deadlock_after_the_tree_went_quiet_are_stuck_one_window_later() {
    // The classic: each worker takes its first lock, sleeps 300 ms, takes the second. The tree
    // is quiet from the start (the ticker only ticks), so the workers enter their untimed waits
    // inside the quiet period: they are stuck once they have waited a whole window, and looked
    // at then, not after the back-off.
    let lock: &[(&str, &str)] = &[
        ("__GI___lll_lock_wait", "libc.so.6"),
        ("__pthread_mutex_lock@GLIBC_2.2.5", "libc.so.6"),
        ("worker", "lockorder"),
    ];
    let mut stuck = c_tree();
    stuck[0].threads[1] = stuck[0].threads[1].clone().stack(lock);
    stuck[0].threads[2] = stuck[0].threads[2].clone().stack(lock);
    let mut sleeping = stuck.clone();
    sleeping[0].threads[1] = T::new(11, Class::Timed, "nanosleep");
    sleeping[0].threads[2] = T::new(12, Class::Timed, "nanosleep");
    let mut inspect = Scripted::new(sleeping.clone());
    c_memory(&mut inspect);
    let start = Instant::now();
    let stall = Duration::from_secs(1);
    let mut w = StallWatch::new(stall, start);
    let tasks = vec![10, 11, 12, 13];
    let mut decided = None;
    for i in 1..=50u64 {
        let now = start + Duration::from_millis(i * 100);
        let procs = if i <= 3 { &sleeping } else { &stuck };
        inspect.procs = procs.clone();
        let sig = Signature {
            output: 5,
            heartbeat: None,
            io_bytes: 100,
            tasks: tasks.clone(),
        };
        let s = snaps(procs, i * 100, 0, 0);
        if let Some(stop) = w.observe(now, &s, sig, 0.001, None, &mut inspect) {
            decided = Some((stop, i));
            break;
        }
    }
    let (stop, at) = decided.expect("a verdict");
    let (kind, why) = why_of(&Some(stop), &w);
    assert_eq!(kind, "deadlock", "{why}");
    assert!(why.contains("wait-for cycle"), "{why}");
    // In their waits from 0.4 s: one window later, at 1.4 s, not at the back-off's 3 s.
    assert!(at <= 15, "decided at {:.1} s", at as f64 / 10.0);
}

/// At the end of a cell: the JVM's blocked and running threads at their frames (not its
/// helpers), CPython's threads at their lines, and which Go programs to dump.
#[test]
fn the_runtimes_are_asked_where_their_threads_are_at_the_end() {
    let procs = vec![
        P::new(40, "java", vec![futex(41).named("worker")]),
        P::new(50, "gostall", vec![futex(51)]),
        P::new(60, "python3", vec![futex(61)]),
        P::new(70, "cat", vec![futex(71)]),
    ];
    let mut inspect = Scripted::new(procs.clone());
    inspect.runtimes = vec![(40, "JVM"), (50, "Go"), (60, "CPython")];
    inspect.reports.push((
        40,
        "\"worker\" #12 prio=5\n   java.lang.Thread.State: BLOCKED (on object monitor)\n\tat Pool.take(Pool.java:12)\n\n\
         \"GC Thread#0\" os_prio=0\n   java.lang.Thread.State: RUNNABLE\n\n\
         \"spinner\" #13 prio=5\n   java.lang.Thread.State: RUNNABLE\n\tat java.lang.Thread.onSpinWait(Native Method)\n\tat Spin.run(Spin.java:7)\n\n"
            .into(),
    ));
    inspect.reports.push((
        60,
        r#"[{"thread_name":"MainThread","os_thread_id":1,"frames":[{"name":"wait","short_filename":"threading.py","line":320},{"name":"<module>","short_filename":"job.py","line":9}]}]"#.into(),
    ));
    let table = crate::runtimes::RUNTIMES.as_ref().expect("table");
    let snaps = snaps(&procs, 100, 0, 0);
    let asked = deadline::ask(&snaps, &mut inspect, table);
    assert_eq!(asked.go, [50]);
    let said: Vec<(&str, &str)> = asked
        .reports
        .iter()
        .map(|r| (r.runtime.as_str(), r.said.as_str()))
        .collect();
    assert_eq!(
        said,
        [
            (
                "JVM",
                "blocked: \"worker\" BLOCKED (on object monitor) at Pool.take(Pool.java:12); running: \"spinner\" RUNNABLE at Spin.run(Spin.java:7)"
            ),
            (
                "CPython",
                "threads: \"MainThread\" at wait (threading.py:320) from <module> (job.py:9)"
            ),
        ]
    );
}

/// A Go program's dump at the end: its goroutines by what they do, the runtime's left out.
#[test]
fn goroutines_are_named_by_what_they_do() {
    let dump = "SIGQUIT: quit\nPC=0x45fa41 m=0 sigcode=0\n\n\
goroutine 1 [chan receive]:\nmain.main()\n\t/src/main.go:9 +0x1\n\n\
goroutine 2 [force gc (idle)]:\nruntime.gopark()\n\t/go/src/runtime/proc.go:363 +0xd6\n\n\
goroutine 7 [running]:\nmain.poll()\n\t/src/main.go:30 +0x1\ncreated by main.main\n\t/src/main.go:8 +0x1\n\n\
goroutine 8 [sleep]:\ntime.Sleep(0x1)\n\t/go/src/runtime/time.go:195 +0x1\nmain.nap()\n\t/src/main.go:40 +0x1\ncreated by main.main\n\t/src/main.go:8 +0x1\n";
    let table = crate::runtimes::RUNTIMES.as_ref().expect("table");
    let r = name_goroutines(dump, 50, table);
    assert_eq!(
        r.said,
        "blocked: goroutine 1 [chan receive] main.main at /src/main.go:9; busy: goroutine 7 [running] main.poll at /src/main.go:30; asleep on a timer: goroutine 8 [sleep] main.nap at /src/main.go:40"
    );
    assert_eq!(r.goroutines.len(), 3);
    assert!(r.tool.contains("which ended the program"));
    let none = name_goroutines("", 50, table);
    assert!(none.said.starts_with("no goroutine dump"));
}
