//! The runtime-report table as decisions: each row's report (as the runtime prints it) with the
//! status the runtime ends a program with → the outcome, cause and detail; and every way a
//! report must not decide — an `ok` run, another status, output after it, a run qualify
//! stopped, a Go report without its dump — plus the scan's bounds.

use super::judge::{Context, Ended, TRAILER};
use super::*;
use crate::backend::Counters;
use crate::limits::Limits;
use crate::runtimes::{RUNTIMES, Runtimes};

fn table() -> &'static Table {
    REPORTS.as_ref().expect("the shipped table parses")
}

fn runtimes() -> Option<&'static Runtimes> {
    RUNTIMES.as_ref().ok()
}

fn exit(code: i32) -> i32 {
    code << 8
}

fn signal(sig: i32) -> i32 {
    sig
}

fn scan(text: &str) -> Scanned {
    let mut s = Scanner::new(table());
    s.feed(text.as_bytes());
    s.finish()
}

struct Run<'a> {
    ended: Ended,
    commands: &'a [&'a str],
    options: &'a [&'a str],
    limits: Limits,
    counters: Counters,
    pids_hit: bool,
}

fn run(ended: Ended) -> Run<'static> {
    Run {
        ended,
        commands: &[],
        options: &[],
        limits: Limits::default(),
        counters: Counters::default(),
        pids_hit: false,
    }
}

fn judged(stderr: &str, r: &Run) -> Option<Reported> {
    let commands: Vec<String> = r.commands.iter().map(|s| s.to_string()).collect();
    let options: Vec<String> = r.options.iter().map(|s| s.to_string()).collect();
    let ctx = Context {
        ended: r.ended,
        commands: &commands,
        options: &options,
        limits: &r.limits,
        counters: &r.counters,
        pids_hit: r.pids_hit,
    };
    judge(table(), runtimes(), &scan(stderr), &ctx)
}

const GO_DEADLOCK: &str = "fatal error: all goroutines are asleep - deadlock!

goroutine 1 [chan receive]:
main.main()
\t/src/main.go:9 +0xf6

goroutine 6 [semacquire]:
sync.runtime_SemacquireMutex(0xc00003af88?, 0x0?, 0x0?)
\t/usr/lib/go-1.19/src/runtime/sema.go:77 +0x25
sync.(*Mutex).Lock(...)
\t/usr/lib/go-1.19/src/sync/mutex.go:90
main.worker(0x53e2c0)
\t/src/main.go:16 +0x6c
created by main.main
\t/src/main.go:27 +0x105
";

const GO_MAP: &str = "fatal error: concurrent map writes

goroutine 6 [running]:
main.main.func1(0x1)
\t/src/gomap.go:6 +0x91
created by main.main
\t/src/gomap.go:6 +0x45

goroutine 1 [semacquire]:
sync.runtime_Semacquire(0xc0000100c0?)
\t/usr/lib/go-1.19/src/runtime/sema.go:62 +0x25
sync.(*WaitGroup).Wait(0x60?)
\t/usr/lib/go-1.19/src/sync/waitgroup.go:139 +0x52
main.main()
\t/src/gomap.go:7 +0x105
";

const GO_OOM: &str =
    "runtime: out of memory: cannot allocate 16777216-byte block (322732032 in use)
fatal error: out of memory

goroutine 1 [running]:
runtime.throw({0x49e41a?, 0x7fffcc75d6e0?})
\t/usr/lib/go-1.19/src/runtime/panic.go:1047 +0x5d
main.main()
\t/src/gooom.go:3 +0x5d
";

const GO_STACK: &str = "runtime: goroutine stack exceeds 1000000000-byte limit
runtime: sp=0xc0200e0398 stack=[0xc0200e0000, 0xc0400e0000]
fatal error: stack overflow

runtime stack:
runtime.throw({0x46581a?, 0x4bc880?})
\t/usr/lib/go-1.19/src/runtime/panic.go:1047 +0x5d

goroutine 1 [running]:
main.f(0x0?)
\t/src/gostack.go:2 +0x5e
";

const GO_THREADS: &str = "runtime: failed to create new OS thread (have 12 already; errno=11)
runtime: may need to increase max user processes (ulimit -u)
fatal error: newosproc

goroutine 1 [running]:
main.main()
\t/src/gothreads.go:5 +0x5e
";

const JVM_HEAP: &str = "Exception in thread \"main\" java.lang.OutOfMemoryError: Java heap space
\tat java.base/java.util.Arrays.copyOf(Arrays.java:3512)
\tat Oom.main(Oom.java:6)
";

const JVM_GC: &str =
    "Exception in thread \"main\" java.lang.OutOfMemoryError: GC overhead limit exceeded
\tat java.base/java.util.HashMap.newNode(HashMap.java:1901)
\tat Oom.main(Oom.java:7)
";

const JVM_METASPACE: &str = "Exception in thread \"main\" java.lang.OutOfMemoryError: Metaspace
\tat java.base/java.lang.ClassLoader.defineClass1(Native Method)
\tat Meta.main(Meta.java:12)
";

const JVM_THREAD: &str = "[0.151s][warning][os,thread] Failed to start thread \"Unknown thread\"
Exception in thread \"main\" java.lang.OutOfMemoryError: unable to create native thread: possibly out of memory or process/resource limits reached
\tat java.base/java.lang.Thread.start0(Native Method)
\tat java.base/java.lang.Thread.start(Thread.java:809)
\tat Oom.main(Oom.java:9)
";

const JVM_STACK: &str = "Exception in thread \"main\" java.lang.StackOverflowError
\tat Oom.depth(Oom.java:3)
\tat Oom.depth(Oom.java:3)
";

const PY_MEMORY: &str = "Traceback (most recent call last):
  File \"/work/pymem.py\", line 1, in <module>
    x = bytearray(1 << 60)
        ^^^^^^^^^^^^^^^^^^
MemoryError
";

const PY_THREAD: &str = "Traceback (most recent call last):
  File \"/work/pyrt.py\", line 8, in <module>
    threading.Thread(target=time.sleep, args=(30,), daemon=True).start()
  File \"/usr/lib/python3.11/threading.py\", line 957, in start
    _start_new_thread(self._bootstrap, ())
RuntimeError: can't start new thread
";

const PY_RECURSION: &str = "  File \"/work/pyrt.py\", line 10, in f
    def f(n): return f(n + 1)
  [Previous line repeated 996 more times]
RecursionError: maximum recursion depth exceeded
";

const PY_FATAL: &str =
    "Fatal Python error: _PyMem_DebugMalloc: Python memory allocator called without holding the GIL
Python runtime state: initialized

Current thread 0x00007f8d735662c0 (most recent call first):
  File \"/work/pyrt.py\", line 14 in <module>
";

const NODE_HEAP: &str = "
<--- Last few GCs --->

[28013:0x44359ca0]       43 ms: Mark-Compact 31.6 (48.5) -> 31.6 (64.5) MB

<--- JS stacktrace --->

FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory
----- Native stack trace -----

 1: 0xb78db3 node::OOMErrorHandler(char const*, v8::OOMDetails const&) [node]
 2: 0xee8300 v8::Utils::ReportOOMFailure(v8::internal::Isolate*, char const*, v8::OOMDetails const&) [node]
";

const RUST_ALLOC: &str = "memory allocation of 100000000000000 bytes failed\n";

const RUST_POISON: &str = "
thread '<unnamed>' (28357) panicked at src/main.rs:5:71:
worker failed while holding the lock
note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace

thread 'main' (28356) panicked at src/main.rs:6:22:
called `Result::unwrap()` on an `Err` value: PoisonError { .. }
";

const GLIBC_MALLOC: &str = "double free or corruption (out)\n";

const GLIBC_EDEADLK: &str = "pthread_mutex_lock: Resource deadlock avoided\n";

const TSAN_RACE: &str = "==================
WARNING: ThreadSanitizer: data race (pid=32707)
  Read of size 4 at 0x55ce08ac1108 by thread T2:
    #0 racer /src/tsan.c:5 (tsan+0x11ff)

  Previous write of size 4 at 0x55ce08ac1108 by thread T1:
    #0 racer /src/tsan.c:5 (tsan+0x1223)

SUMMARY: ThreadSanitizer: data race /src/tsan.c:5 in racer
==================
";

const TSAN_LOCK_ORDER: &str = "==================
WARNING: ThreadSanitizer: lock-order-inversion (potential deadlock) (pid=337)
  Cycle in lock order graph: M0 (0x55c7e40bb0e0) => M1 (0x55c7e40bb0a0) => M0

  Mutex M1 acquired here while holding mutex M0 in thread T1:
    #1 ab /src/tsan.c:6 (tsan+0x1263)

SUMMARY: ThreadSanitizer: lock-order-inversion (potential deadlock) /src/tsan.c:6 in ab
==================
";

const ASAN_UAF: &str = "=================================================================
==362==ERROR: AddressSanitizer: heap-use-after-free on address 0x60300000004c at pc 0x55d8d5a65202 bp 0x7ffd69597c10 sp 0x7ffd69597c08
READ of size 4 at 0x60300000004c thread T0
    #0 0x55d8d5a65201 in main /src/asan.c:3

SUMMARY: AddressSanitizer: heap-use-after-free /src/asan.c:3 in main
==362==ABORTING
";

const ASAN_OVERFLOW: &str =
    "==7==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x602000000014
WRITE of size 4 at 0x602000000014 thread T0
SUMMARY: AddressSanitizer: heap-buffer-overflow /src/overflow.c:4 in main
==7==ABORTING
";

const OMPI_SLOTS: &str =
    "--------------------------------------------------------------------------
There are not enough slots available in the system to satisfy the 4
slots that were requested by the application:

  ./mpiabort

Either request fewer slots for your application, or make more slots
available for use.
--------------------------------------------------------------------------
";

const OMPI_ABORT: &str =
    "--------------------------------------------------------------------------
MPI_ABORT was invoked on rank 1 in communicator MPI_COMM_WORLD
with errorcode 3.

NOTE: invoking MPI_ABORT causes Open MPI to kill all MPI processes.
--------------------------------------------------------------------------
[vm:01234] 1 more process has sent help message help-mpi-api.txt / mpi-abort
";

const GOMP: &str = "\nlibgomp: Thread creation failed: Resource temporarily unavailable\n";

/// Every row's report, with the status its runtime ends a program with: the outcome, the
/// cause and phrases of the detail.
#[test]
fn each_report_names_the_failure_it_ended() {
    /// Row, stderr, status, outcome, cause, phrases of the detail.
    type Case<'a> = (&'a str, &'a str, i32, &'a str, &'a str, &'a [&'a str]);
    let cases: &[Case] = &[
        (
            "go.deadlock",
            GO_DEADLOCK,
            exit(2),
            "deadlock",
            "deadlock",
            &[
                "the Go runtime found every goroutine asleep",
                "goroutine 1 [chan receive] main.main at /src/main.go:9",
                "goroutine 6 [semacquire] main.worker at /src/main.go:16",
            ],
        ),
        (
            "go.goexit_deadlock",
            "fatal error: no goroutines (main called runtime.Goexit) - deadlock!\n\ngoroutine 1 [running]:\nmain.main()\n\t/src/exit.go:4 +0x1\n",
            exit(2),
            "deadlock",
            "deadlock",
            &["no goroutine left to run"],
        ),
        (
            "go.concurrent_map",
            GO_MAP,
            exit(2),
            "crash",
            "data_race",
            &[
                "racing on one map (concurrent map writes)",
                "goroutine 6 [running] main.main.func1 at /src/gomap.go:6",
            ],
        ),
        (
            "go.out_of_memory",
            GO_OOM,
            exit(2),
            "out_of_memory",
            "out_of_memory",
            &["an allocation of 16.0 MiB the system refused"],
        ),
        (
            "go.stack_overflow",
            GO_STACK,
            exit(2),
            "crash",
            "stack_overflow",
            &[
                "1000000000-byte goroutine stack limit",
                "main.f at /src/gostack.go:2",
            ],
        ),
        (
            "go.thread_exhaustion",
            GO_THREADS,
            exit(2),
            "exit_failure",
            "thread_exhaustion",
            &["could not start another thread", "no ceiling of qualify's"],
        ),
        (
            "jvm.heap",
            JVM_HEAP,
            exit(1),
            "out_of_memory",
            "out_of_memory",
            &[
                "ran out of heap (Java heap space)",
                "at Oom.main(Oom.java:6)",
            ],
        ),
        (
            "jvm.heap",
            JVM_GC,
            exit(1),
            "out_of_memory",
            "out_of_memory",
            &["(GC overhead limit exceeded)", "at Oom.main(Oom.java:7)"],
        ),
        (
            "jvm.metaspace",
            JVM_METASPACE,
            exit(1),
            "out_of_memory",
            "out_of_memory",
            &["class metadata (Metaspace)", "no -XX:MaxMetaspaceSize seen"],
        ),
        (
            "jvm.native_thread",
            JVM_THREAD,
            exit(1),
            "exit_failure",
            "thread_exhaustion",
            &["could not start another thread", "at Oom.main(Oom.java:9)"],
        ),
        (
            "jvm.stack_overflow",
            JVM_STACK,
            exit(1),
            "crash",
            "stack_overflow",
            &[
                "stack overflowed",
                "at Oom.depth(Oom.java:3)",
                "default thread stack size",
            ],
        ),
        (
            "python.memory",
            PY_MEMORY,
            exit(1),
            "out_of_memory",
            "out_of_memory",
            &["(MemoryError)", "at <module> (pymem.py:1)"],
        ),
        (
            "python.thread",
            PY_THREAD,
            exit(1),
            "exit_failure",
            "thread_exhaustion",
            &["at <module> (pyrt.py:8)"],
        ),
        (
            "python.recursion",
            PY_RECURSION,
            exit(1),
            "crash",
            "stack_overflow",
            &["recursion limit", "at f (pyrt.py:10)"],
        ),
        (
            "python.fatal",
            PY_FATAL,
            signal(libc::SIGABRT),
            "crash",
            "fatal_error",
            &["Fatal Python error: _PyMem_DebugMalloc"],
        ),
        (
            "node.heap",
            NODE_HEAP,
            signal(libc::SIGABRT),
            "out_of_memory",
            "out_of_memory",
            &["V8 reached its heap limit", "V8's default heap limit"],
        ),
        (
            "node.heap",
            NODE_HEAP,
            exit(134),
            "out_of_memory",
            "out_of_memory",
            &["JavaScript heap out of memory"],
        ),
        (
            "rust.alloc",
            RUST_ALLOC,
            signal(libc::SIGABRT),
            "out_of_memory",
            "out_of_memory",
            &["an allocation of 90.9 TiB the system refused"],
        ),
        (
            "rust.poisoned",
            RUST_POISON,
            exit(101),
            "exit_failure",
            "poisoned_lock",
            &[
                "a lock was poisoned",
                "at src/main.rs:6:22",
                "after `thread '<unnamed>' (28357) panicked at src/main.rs:5:71:` worker failed while holding the lock",
            ],
        ),
        (
            "glibc.malloc",
            GLIBC_MALLOC,
            signal(libc::SIGABRT),
            "crash",
            "memory_corruption",
            &["heap corrupted (`double free or corruption (out)`)"],
        ),
        (
            "glibc.edeadlk",
            GLIBC_EDEADLK,
            exit(1),
            "deadlock",
            "deadlock_avoided",
            &["EDEADLK", "pthread_mutex_lock: Resource deadlock avoided"],
        ),
        (
            "tsan.race",
            TSAN_RACE,
            exit(66),
            "crash",
            "data_race",
            &["found a data race", "at /src/tsan.c:5 in racer"],
        ),
        (
            "tsan.lock_order",
            TSAN_LOCK_ORDER,
            exit(66),
            "crash",
            "lock_order_inversion",
            &[
                "opposite orders (a potential deadlock)",
                "at /src/tsan.c:6 in ab",
            ],
        ),
        (
            "asan.use_after_free",
            ASAN_UAF,
            exit(1),
            "crash",
            "use_after_free",
            &["use of freed memory", "at /src/asan.c:3 in main"],
        ),
        (
            "asan.error",
            ASAN_OVERFLOW,
            exit(1),
            "crash",
            "memory_error",
            &["heap-buffer-overflow", "at /src/overflow.c:4 in main"],
        ),
        (
            "ompi.slots",
            OMPI_SLOTS,
            exit(1),
            "exit_failure",
            "not_enough_slots",
            &["refused to start 4 ranks: not enough slots"],
        ),
        (
            "ompi.abort",
            OMPI_ABORT,
            exit(3),
            "exit_failure",
            "mpi_abort",
            &["rank 1 called MPI_Abort (errorcode 3)"],
        ),
        (
            "gomp.thread",
            GOMP,
            exit(1),
            "exit_failure",
            "thread_exhaustion",
            &[
                "could not start an OpenMP thread",
                "Resource temporarily unavailable",
            ],
        ),
    ];
    let mut rows_seen: Vec<&str> = Vec::new();
    for &(id, stderr, status, outcome, cause, says) in cases {
        let r = judged(stderr, &run(Ended::ByItself(status)))
            .unwrap_or_else(|| panic!("{id}: no report"));
        assert_eq!(r.report, id, "{id}: {}", r.sentence);
        assert!(r.decided, "{id}: {:?}", r.not_decided);
        assert_eq!(r.outcome.map(Outcome::as_str), Some(outcome), "{id}");
        assert_eq!(r.cause, cause, "{id}");
        for s in says {
            assert!(r.sentence.contains(s), "{id}: {:?} lacks {s:?}", r.sentence);
        }
        rows_seen.push(id);
    }
    // Every row that can name a failure is in this table.
    for row in table().rows.iter().filter(|r| r.outcome.is_some()) {
        assert!(
            rows_seen.contains(&row.id.as_str()),
            "no case for {}",
            row.id
        );
    }
}

/// Twins: the same words where the runtime did not end the program with them.
#[test]
fn a_report_never_decides_a_run_that_did_not_fail_its_way() {
    // Exit 0: an `ok` run has no report at all (a program printing the words as output).
    for text in [GO_DEADLOCK, JVM_HEAP, NODE_HEAP, TSAN_RACE, GLIBC_EDEADLK] {
        assert!(judged(text, &run(Ended::ByItself(exit(0)))).is_none());
    }
    // Another status than the runtime's: context, saying why.
    let r = judged(GO_DEADLOCK, &run(Ended::ByItself(exit(1)))).expect("context");
    assert!(!r.decided && r.outcome.is_none());
    assert!(
        r.not_decided
            .as_deref()
            .is_some_and(|w| w.contains("Go ends a program with status 2")
                && w.contains("exited with status 1")),
        "{:?}",
        r.not_decided
    );
    let r = judged(NODE_HEAP, &run(Ended::ByItself(exit(1)))).expect("context");
    assert!(!r.decided, "V8 aborts after its report");
    let r = judged(TSAN_RACE, &run(Ended::ByItself(signal(libc::SIGSEGV)))).expect("ctx");
    assert!(
        !r.decided,
        "a sanitizer's report names a non-zero exit or SIGABRT"
    );
    // Output after it: not the report the program ended with.
    let later = format!("{JVM_HEAP}{}", "recovered and went on\n".repeat(400));
    assert!(later.len() as u64 > TRAILER);
    let r = judged(&later, &run(Ended::ByItself(exit(1)))).expect("context");
    assert!(!r.decided);
    assert!(
        r.not_decided
            .as_deref()
            .is_some_and(|w| w.contains("bytes followed it"))
    );
    // A few lines after it are a launcher's closing notes.
    let r = judged(OMPI_ABORT, &run(Ended::ByItself(exit(3)))).expect("report");
    assert!(r.decided);
    // Go's words without the dump the Go runtime prints after them.
    let r = judged(
        "fatal error: all goroutines are asleep - deadlock!\n",
        &run(Ended::ByItself(exit(2))),
    )
    .expect("context");
    assert!(!r.decided);
    assert_eq!(
        r.not_decided.as_deref(),
        Some("no goroutine dump followed it")
    );
    // Stopped by qualify (deadline, stall, memory kill): context, never the verdict.
    for how in [
        "the deadline",
        "qualify's stall verdict",
        "the kernel's memory kill",
    ] {
        let r = judged(PY_THREAD, &run(Ended::Stopped(how))).expect("context");
        assert!(!r.decided && r.outcome.is_none());
        assert!(r.not_decided.as_deref().is_some_and(|w| w.contains(how)));
        assert!(
            r.sentence.contains("can't start new thread"),
            "{}",
            r.sentence
        );
    }
    // A report-looking line inside ordinary output (not at a line's start) is none.
    assert!(
        judged(
            "log: fatal error: all goroutines are asleep - deadlock!\n",
            &run(Ended::ByItself(exit(2)))
        )
        .is_none()
    );
    // The dump qualify asked for is context, never a verdict.
    assert!(
        judged(
            "SIGQUIT: quit\nPC=0x1 m=0\n\ngoroutine 1 [select]:\nmain.main()\n",
            &run(Ended::ByItself(exit(2)))
        )
        .is_none()
    );
}

/// The last report decides; a sanitizer's report counts wherever it stood.
#[test]
fn the_report_the_program_ended_with_decides() {
    // A fake JVM report early, then a real Go deadlock at the end.
    let text = format!("{JVM_HEAP}{GO_DEADLOCK}");
    let r = judged(&text, &run(Ended::ByItself(exit(2)))).expect("report");
    assert_eq!((r.report.as_str(), r.decided), ("go.deadlock", true));
    assert_eq!(r.other_reports, 1);
    // A data race reported mid-run, the program's own output after it, TSan's status at exit.
    let text = format!(
        "{TSAN_RACE}{}ThreadSanitizer: reported 1 warnings\n",
        "work\n".repeat(2000)
    );
    let r = judged(&text, &run(Ended::ByItself(exit(66)))).expect("report");
    assert_eq!((r.report.as_str(), r.decided), ("tsan.race", true));
}

/// The limit a report hit, named from the command lines and option variables qualify saw, apart
/// from qualify's own ceilings.
#[test]
fn limits_are_named_with_the_flag_that_set_them() {
    let mut r = run(Ended::ByItself(exit(1)));
    r.commands = &["java -Xmx32m -cp /x Oom heap"];
    r.limits.memory_bytes = Some(256 << 20);
    let got = judged(JVM_HEAP, &r).expect("report");
    assert_eq!(
        got.limit.as_deref(),
        Some(
            "-Xmx32m (the JVM's own maximum heap), not the 256 MiB memory ceiling (the kernel killed nothing)"
        )
    );
    let mut r = run(Ended::ByItself(exit(1)));
    r.options = &["-Xss512k -XX:MaxMetaspaceSize=16m"];
    let got = judged(JVM_METASPACE, &r).expect("report");
    assert!(
        got.limit
            .as_deref()
            .is_some_and(|l| l.starts_with("-XX:MaxMetaspaceSize=16m"))
    );
    let got = judged(JVM_STACK, &r).expect("report");
    assert!(
        got.limit
            .as_deref()
            .is_some_and(|l| l.starts_with("-Xss512k"))
    );
    let mut r = run(Ended::ByItself(signal(libc::SIGABRT)));
    r.commands = &["node --max-old-space-size=32 app.js"];
    let got = judged(NODE_HEAP, &r).expect("report");
    assert!(
        got.limit
            .as_deref()
            .is_some_and(|l| l.starts_with("--max-old-space-size=32 (V8's own heap limit, 32 MB)"))
    );
    let mut r = run(Ended::ByItself(exit(1)));
    r.pids_hit = true;
    r.limits.pids = Some(40);
    let got = judged(PY_THREAD, &r).expect("report");
    assert!(
        got.limit
            .as_deref()
            .is_some_and(|l| l.starts_with("the pids ceiling of 40 tasks (--pids)")),
        "{:?}",
        got.limit
    );
    let mut r = run(Ended::ByItself(exit(1)));
    r.limits.pids = Some(4000);
    let got = judged(GOMP, &r).expect("report");
    assert!(
        got.limit
            .as_deref()
            .is_some_and(|l| l.contains("the pids ceiling of 4000 tasks was not reached")),
        "{:?}",
        got.limit
    );
}

/// Chunks split anywhere give the same scan; lines, bodies and the number of reports kept are
/// bounded whatever the program writes.
#[test]
fn the_scan_is_the_same_in_any_chunks_and_bounded() {
    let text = format!("noise\n{PY_THREAD}more noise\n{GO_DEADLOCK}");
    let whole = scan(&text);
    for size in [1, 2, 7, 64, 4096] {
        let mut s = Scanner::new(table());
        for chunk in text.as_bytes().chunks(size) {
            s.feed(chunk);
        }
        assert_eq!(s.finish(), whole, "chunks of {size}");
    }
    assert_eq!(whole.reports.len(), 2);
    assert_eq!(whole.reports[1].before.len(), 0);
    assert!(
        whole.reports[1].open,
        "the Go dump runs to the end of the stream"
    );

    // A hundred thousand fake reports and a 10 MiB line.
    let mut s = Scanner::new(table());
    for i in 0..100_000u32 {
        s.feed(format!("libgomp: Thread creation failed: {i}\n").as_bytes());
    }
    s.feed(&vec![b'x'; 10 << 20]);
    s.feed(b"\n");
    let scanned = s.finish();
    assert_eq!(scanned.seen, 100_000);
    assert_eq!(scanned.reports.len(), 2 * scan::KEEP);
    assert_eq!(
        scanned.reports[0].line,
        "libgomp: Thread creation failed: 0"
    );
    assert_eq!(
        scanned.reports[7].line,
        "libgomp: Thread creation failed: 99999"
    );

    // A goroutine dump larger than the cap keeps counting what it drops.
    let mut s = Scanner::new(table());
    s.feed(b"fatal error: all goroutines are asleep - deadlock!\n\n");
    for id in 1..=40_000u32 {
        s.feed(
            format!("goroutine {id} [chan receive]:\nmain.worker()\n\t/src/main.go:9 +0x1\n\n")
                .as_bytes(),
        );
    }
    let scanned = s.finish();
    let c = &scanned.reports[0];
    assert!(c.body.len() <= scan::BODY_CAP);
    assert!(c.dropped_goroutines > 0);
    let r = judge(
        table(),
        runtimes(),
        &scanned,
        &Context {
            ended: Ended::ByItself(exit(2)),
            commands: &[],
            options: &[],
            limits: &Limits::default(),
            counters: &Counters::default(),
            pids_hit: false,
        },
    )
    .expect("report");
    assert_eq!(r.goroutines_total, Some(40_000));
    assert_eq!(r.goroutines.len(), 100);
    assert!(r.sentence.contains("(39994 more)"), "{}", r.sentence);
}

#[test]
fn the_table_reads_and_rejects_what_it_cannot_use() {
    let t = table();
    let mut ids: Vec<&str> = t.rows.iter().map(|r| r.id.as_str()).collect();
    ids.sort_unstable();
    let n = ids.len();
    ids.dedup();
    assert_eq!(ids.len(), n, "report ids are unique");
    let bad = |text: &str| Table::parse(text).err().map(|e| e.to_string());
    let row = |extra: &str| {
        format!(
            "[[report]]\nid = \"x\"\nruntime = \"X\"\nline = '^x'\nbody = \"text\"\ncause = \"c\"\nsaid = \"s\"\n{extra}"
        )
    };
    assert!(bad(&row("ends = [\"exit:2\"]\noutcome = \"deadlock\"")).is_none());
    assert!(
        bad(&row("ends = [\"exit:2\"]\noutcome = \"stuck\""))
            .is_some_and(|e| e.contains("report x's `outcome` = \"stuck\""))
    );
    assert!(
        bad(&row("ends = [\"exit:two\"]\noutcome = \"crash\""))
            .is_some_and(|e| e.contains("`ends`"))
    );
    assert!(bad(&row("ends = []\noutcome = \"crash\"")).is_some_and(|e| e.contains("`ends`")));
    assert!(
        bad(&row(
            "ends = [\"exit:2\"]\noutcome = \"crash\"\nfollow = '('"
        ))
        .is_some_and(|e| e.contains("report x's `follow`"))
    );
}
