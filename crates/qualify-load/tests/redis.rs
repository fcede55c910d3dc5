//! The load generator over a TCP line protocol against a real server nobody here wrote:
//! `redis-server` (inline `SET k{seq} {pad:N}`, reply `+OK`). Writes are acknowledged and
//! land; a paused server shows in the corrected latency and not in the uncorrected one; a
//! memory limit shows as classified error replies while another configuration survives the
//! same write load. Skipped without redis-server unless `QUALIFY_REQUIRE_REDIS` is set.

mod common;

use std::sync::atomic::AtomicBool;
use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use qualify_load::{ErrorClass, Flow, LoadPlan, Model, Phase, PhaseWindow, run};

fn set_plan(rate: f64, pad: usize) -> LoadPlan {
    LoadPlan::tcp_line(
        Model::Open { rate },
        &format!("SET k{{seq}} {{pad:{pad}}}\r\n"),
        "+OK",
    )
}

#[test]
fn every_write_is_acknowledged_and_lands() {
    if !common::have_redis() {
        return;
    }
    let server = common::redis(&[]);
    let mut plan = set_plan(500.0, 64);
    plan.duration = Duration::from_secs(1);
    plan.warmup = Duration::from_millis(200);
    plan.record_writes = true;
    let r = run(&plan, server.addr, &AtomicBool::new(false), &mut |_| {
        Flow::Continue
    })
    .unwrap();
    assert_eq!(r.sent, 500, "{r:#?}");
    assert_eq!(r.succeeded, 500, "{:?} {:?}", r.errors, r.error_examples);
    let writes = r.writes.as_ref().expect("writes were recorded");
    // Warmup included: arrivals 0..600, each a distinct key.
    assert_eq!(writes.attempted.ranges(), [(0, 599)]);
    assert_eq!(writes.acknowledged, writes.attempted);
    assert_eq!(common::command(server.addr, "DBSIZE"), ":600");
    assert_eq!(common::command(server.addr, "STRLEN k599"), ":64");
    assert!(r.generator.connections_opened <= u64::from(plan.max_in_flight));
}

#[test]
fn a_paused_server_shows_in_the_corrected_latency_only() {
    if !common::have_redis() {
        return;
    }
    let server = common::redis(&[]);
    let pid = Pid::from_raw(server.pid());
    let mut plan = set_plan(1000.0, 16);
    plan.duration = Duration::from_secs(4);
    plan.warmup = Duration::from_millis(500);
    plan.timeout = Duration::from_secs(5);
    // Few slots: during the pause they fill at once and later arrivals wait for a slot
    // (as a closed-loop generator's would), unsent.
    plan.max_in_flight = 4;
    let window = |phase: Phase, from: u64, to: u64| PhaseWindow {
        phase,
        start: Duration::from_millis(from),
        end: Duration::from_millis(to),
    };
    plan.phases = vec![
        window(Phase::Before, 0, 1000),
        // The pause is the fault: its window is `during`.
        window(Phase::During, 1000, 2000),
        window(Phase::After, 2200, 4000),
    ];
    let (mut stopped, mut resumed) = (false, false);
    let r = run(&plan, server.addr, &AtomicBool::new(false), &mut |p| {
        let t = p.measured_elapsed().unwrap_or_default();
        if !stopped && t >= Duration::from_secs(1) {
            stopped = kill(pid, Signal::SIGSTOP).is_ok();
        }
        if stopped && !resumed && t >= Duration::from_secs(2) {
            resumed = kill(pid, Signal::SIGCONT).is_ok();
        }
        Flow::Continue
    });
    if stopped && !resumed {
        let _ = kill(pid, Signal::SIGCONT);
    }
    let r = r.unwrap();
    assert!(stopped && resumed);
    assert_eq!(r.errors.total(), 0, "{:?} {:?}", r.errors, r.error_examples);
    // The ~1000 arrivals that queued for a slot during the pause were all sent after it (at
    // most a few may still wait for one of the 4 slots when the schedule ends on a busy
    // machine).
    assert!(
        r.dropped < 50,
        "the backlog drained after the pause: {} dropped",
        r.dropped
    );
    let (c, u) = (r.latency.corrected, r.latency.uncorrected);
    eprintln!(
        "paused 1 s: corrected p99 {:?} s, uncorrected p99 {:?} s",
        c.p99, u.p99
    );
    // About a quarter of the arrivals fell into the ~1 s pause: the corrected p99 shows it.
    assert!(c.p99.unwrap() >= 0.5, "corrected {c:?}");
    assert!(c.max.unwrap() >= 0.8, "corrected {c:?}");
    // Only the 4 requests already in flight (0.1%) saw the pause from their send.
    assert!(
        u.p99.unwrap() * 5.0 < c.p99.unwrap(),
        "uncorrected {u:?} vs corrected {c:?}"
    );
    let phase = |phase: Phase| r.phases.iter().find(|p| p.phase == phase).unwrap();
    let (before, paused, after) = (
        phase(Phase::Before),
        phase(Phase::During),
        phase(Phase::After),
    );
    assert!(paused.corrected.p50.unwrap() >= 0.2, "{paused:#?}");
    assert!(
        before.corrected.p99.unwrap() < paused.corrected.p50.unwrap(),
        "{before:#?}"
    );
    assert!(
        after.corrected.p99.unwrap() < paused.corrected.p50.unwrap(),
        "{after:#?}"
    );
    assert_eq!(before.sent + paused.sent, 2000);
}

#[test]
fn a_memory_limit_fails_writes_that_another_configuration_survives() {
    if !common::have_redis() {
        return;
    }
    // 2000 writes of 2 KiB (over 4 MiB) against a 4 MiB limit, of which an empty server uses
    // about 0.9 MiB: refused once full, with `-OOM …`.
    let mut plan = set_plan(2000.0, 2048);
    plan.duration = Duration::from_secs(1);
    plan.record_writes = true;
    let limited = common::redis(&["--maxmemory", "4mb", "--maxmemory-policy", "noeviction"]);
    let r = run(&plan, limited.addr, &AtomicBool::new(false), &mut |_| {
        Flow::Continue
    })
    .unwrap();
    assert!(r.errors.unexpected_reply > 100, "{:?}", r.errors);
    assert_eq!(r.errors.unexpected_reply, r.errors.total());
    assert_eq!(r.completed, r.sent, "every write was answered");
    let example = &r.error_examples[&ErrorClass::UnexpectedReply];
    assert!(example.starts_with("-OOM"), "{example}");
    let writes = r.writes.as_ref().unwrap();
    assert_eq!(
        writes.attempted.len() - writes.acknowledged.len(),
        r.errors.total()
    );

    // The same load with eviction: every write is acknowledged.
    let evicting = common::redis(&["--maxmemory", "4mb", "--maxmemory-policy", "allkeys-lru"]);
    let r = run(&plan, evicting.addr, &AtomicBool::new(false), &mut |_| {
        Flow::Continue
    })
    .unwrap();
    assert_eq!(r.errors.total(), 0, "{:?} {:?}", r.errors, r.error_examples);
    assert_eq!(r.succeeded, r.sent);
}

#[test]
fn the_closed_model_speaks_the_line_protocol_too() {
    if !common::have_redis() {
        return;
    }
    let server = common::redis(&[]);
    let mut plan = LoadPlan::tcp_line(Model::Closed { users: 2 }, "INCR counter\r\n", ":");
    plan.duration = Duration::from_millis(500);
    let r = run(&plan, server.addr, &AtomicBool::new(false), &mut |_| {
        Flow::Continue
    })
    .unwrap();
    assert!(r.succeeded > 100, "{r:#?}");
    assert_eq!(r.errors.total(), 0);
    // Every INCR (warmup-free run) was counted once by the server.
    assert_eq!(
        common::command(server.addr, "INCRBY counter 0"),
        format!(":{}", r.succeeded)
    );
    assert!(r.generator.connections_opened <= 2);
}

#[test]
fn two_event_loops_share_one_schedule() {
    if !common::have_redis() {
        return;
    }
    let server = common::redis(&[]);
    let mut plan = set_plan(2000.0, 16);
    plan.duration = Duration::from_secs(1);
    plan.threads = 2;
    plan.record_writes = true;
    let r = run(&plan, server.addr, &AtomicBool::new(false), &mut |_| {
        Flow::Continue
    })
    .unwrap();
    assert_eq!(r.generator.threads, 2);
    // Every arrival of the one schedule, each sequence number once, across both loops.
    assert_eq!(r.sent + r.dropped, 2000, "{r:#?}");
    assert_eq!(r.succeeded, r.sent, "{:?}", r.errors);
    let writes = r.writes.as_ref().unwrap();
    assert_eq!(writes.acknowledged.len(), r.sent);
    assert_eq!(
        common::command(server.addr, "DBSIZE"),
        format!(":{}", r.sent)
    );
    assert_eq!(r.latency.corrected.count, r.completed);
    let timeline_sent: u64 = r.timeline.iter().map(|t| t.sent).sum();
    assert_eq!(timeline_sent, r.sent);

    // Closed: users split over the loops, one counter.
    let mut plan = LoadPlan::tcp_line(Model::Closed { users: 4 }, "INCR counter\r\n", ":");
    plan.duration = Duration::from_millis(500);
    plan.threads = 2;
    let r = run(&plan, server.addr, &AtomicBool::new(false), &mut |_| {
        Flow::Continue
    })
    .unwrap();
    assert!(r.succeeded > 100 && r.errors.total() == 0, "{r:#?}");
    assert_eq!(
        common::command(server.addr, "INCRBY counter 0"),
        format!(":{}", r.succeeded)
    );
    assert!(r.generator.connections_opened <= 4);
}
