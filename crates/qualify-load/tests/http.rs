//! The load generator over HTTP/1.1 against the real `orders` example service: counts and
//! keep-alive within capacity, overload, timeouts, refused connections, error classes, the
//! closed model, and stopping or cancelling a run.

mod common;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use qualify_load::verdict::{CellFacts, decide};
use qualify_load::{
    ErrorClass, Flow, HttpRequest, LoadPlan, LoadReport, Model, RequestKind, RequestTemplate, run,
    slo,
};
use qualify_model::Outcome;

fn post_orders(model: Model) -> LoadPlan {
    let mut plan = LoadPlan::http_get(model, "/");
    plan.requests = vec![RequestTemplate {
        weight: 1,
        kind: RequestKind::Http(HttpRequest {
            method: "POST".into(),
            path: "/orders/{seq}".into(),
            body: Some(r#"{"id": {seq}, "note": "{pad:32}"}"#.into()),
            headers: BTreeMap::from([("content-type".to_string(), "application/json".to_string())]),
            expect_status: vec![201],
        }),
    }];
    plan
}

fn go(plan: &LoadPlan, target: std::net::SocketAddr) -> LoadReport {
    run(plan, target, &AtomicBool::new(false), &mut |_| {
        Flow::Continue
    })
    .expect("the load runs")
}

#[test]
fn within_capacity_every_request_succeeds_over_few_connections() {
    // 4 workers × 5 ms: capacity 800/s; offered 100/s.
    let server = common::orders(4, 0.005, &[]);
    let mut plan = post_orders(Model::Open { rate: 100.0 });
    plan.duration = Duration::from_secs(2);
    plan.warmup = Duration::from_millis(500);
    plan.max_in_flight = 32;
    let r = go(&plan, server.addr);

    // Arrivals in [0.5 s, 2.5 s) at 100/s: exactly 200 measured.
    assert_eq!(r.sent, 200, "{r:#?}");
    assert_eq!(
        (r.completed, r.succeeded, r.dropped),
        (200, 200, 0),
        "{:?}",
        r.errors
    );
    assert_eq!(r.errors.total(), 0);
    // Answers during the measured 2 s: the offered rate, give or take the few in flight at
    // its edges — at least the 90% that counts as keeping up.
    assert!(
        (90.0..=105.0).contains(&r.achieved_rate),
        "{}",
        r.achieved_rate
    );
    assert_eq!(r.offered_rate, Some(100.0));
    // Keep-alive: connections are reused, never more than the slots.
    let conns = r.generator.connections_opened;
    assert!(conns <= 32, "{conns} connections for 250 requests");
    // Every latency includes the 5 ms service time, and the corrected one is never below the
    // uncorrected one.
    let (c, u) = (r.latency.corrected, r.latency.uncorrected);
    assert!(u.p50.unwrap() >= 0.005, "{u:?}");
    for (x, y) in [(c.p50, u.p50), (c.p99, u.p99), (c.max, u.max)] {
        assert!(x.unwrap() >= y.unwrap(), "{c:?} vs {u:?}");
    }
    // The histogram in the report decodes to the same distribution.
    let h = qualify_load::corrected_histogram(&r).expect("the histogram decodes");
    assert_eq!(h.len(), 200);
    assert_eq!(h.value_at_quantile(0.99) as f64 / 1e6, c.p99.unwrap());
    // The timeline adds up to the totals.
    let sum = |f: fn(&qualify_load::TimelineSecond) -> u64| r.timeline.iter().map(f).sum::<u64>();
    assert_eq!(
        (sum(|t| t.sent), sum(|t| t.completed), sum(|t| t.errors)),
        (200, 200, 0)
    );
    assert!(
        r.timeline.len() >= 2 && r.timeline[0].p99.is_some(),
        "{:?}",
        r.timeline
    );
    assert!(r.generator.cpu_seconds > 0.0);
    // The report is the receipt's JSON shape.
    let json = serde_json::to_value(&r).unwrap();
    for key in [
        "offered_rate",
        "achieved_rate",
        "sent",
        "completed",
        "dropped",
        "errors",
        "latency",
        "timeline",
        "generator",
    ] {
        assert!(json.get(key).is_some(), "missing {key}");
    }
    assert_eq!(json["errors"]["status_429"], 0);
    assert!(json["latency"]["corrected"]["p999"].is_number());
    assert_eq!(
        json["latency"]["histogram_encoding"],
        "hdrhistogram-v2-deflate-base64"
    );
}

#[test]
fn overload_drops_arrivals_and_falls_short_of_the_offered_rate() {
    // 2 workers × 20 ms: capacity 100/s; offered 1000/s with 8 slots.
    let server = common::orders(2, 0.02, &[]);
    let mut plan = post_orders(Model::Open { rate: 1000.0 });
    plan.duration = Duration::from_secs(2);
    plan.max_in_flight = 8;
    let r = go(&plan, server.addr);
    assert_eq!(
        r.sent + r.dropped,
        2000,
        "every arrival is sent or dropped: {r:#?}"
    );
    assert!(r.dropped > 1000, "{}", r.dropped);
    assert!(r.achieved_rate < 500.0, "{}", r.achieved_rate);
    // Arrivals waited for a slot: the corrected latency holds that wait, the uncorrected one
    // does not.
    let (c, u) = (r.latency.corrected, r.latency.uncorrected);
    assert!(c.p50.unwrap() > 0.3, "{c:?}");
    assert!(c.p50.unwrap() > 4.0 * u.p50.unwrap(), "{c:?} vs {u:?}");
    if !r.generator.saturated {
        let judged = slo::evaluate(&[], &r);
        let v = decide(&CellFacts {
            not_ready: None,
            report: Some(&r),
            slos: &judged,
            process_alive: true,
        });
        assert_eq!(v.outcome(), Some(Outcome::Overloaded), "{v:?}");
        assert!(v.detail().unwrap_or("").contains("arrivals dropped"));
    }
}

#[test]
fn requests_past_the_timeout_are_timeouts() {
    // One worker taking 1 s per request; the timeout is 200 ms.
    let server = common::orders(1, 1.0, &[]);
    let mut plan = post_orders(Model::Open { rate: 10.0 });
    plan.duration = Duration::from_secs(1);
    plan.timeout = Duration::from_millis(200);
    let r = go(&plan, server.addr);
    assert_eq!(r.sent, 10);
    assert_eq!(r.errors.timeout, 10, "{:?}", r.errors);
    assert_eq!((r.completed, r.succeeded), (0, 0));
    // Every timeout counts in the latency, censored at the moment it was given up on: never
    // less than the timeout, and the receipt says how many were censored.
    assert_eq!(r.latency.corrected.count, 10, "a timeout counts in latency");
    assert_eq!(r.latency.censored, Some(10));
    for p in [r.latency.corrected.p50, r.latency.corrected.p99] {
        assert!(p.unwrap() >= 0.2, "{:?}", r.latency.corrected);
    }
    assert!(r.latency.uncorrected.p50.unwrap() >= 0.2, "{:?}", r.latency);
    assert_eq!(
        r.error_examples[&ErrorClass::Timeout],
        "no answer within 0.2 s"
    );
}

#[test]
fn nothing_listening_is_refused_and_unavailable() {
    let addr = common::free_addr();
    let mut plan = post_orders(Model::Open { rate: 50.0 });
    plan.duration = Duration::from_millis(500);
    let r = go(&plan, addr);
    assert_eq!(r.sent, 25);
    assert_eq!(
        r.errors.refused, 25,
        "{:?} {:?}",
        r.errors, r.error_examples
    );
    let judged = slo::evaluate(&[], &r);
    let v = decide(&CellFacts {
        not_ready: None,
        report: Some(&r),
        slos: &judged,
        process_alive: true,
    });
    assert_eq!(v.outcome(), Some(Outcome::Unavailable));
    assert!(
        v.detail()
            .unwrap_or("")
            .contains("25 of 25 requests were refused"),
        "{v:?}"
    );
}

#[test]
fn answers_are_classified_by_status_and_shedding_is_counted() {
    // A queue of one: while the single worker is busy, a second order is answered 503.
    let server = common::orders(1, 0.05, &["--queue", "1"]);
    let mut plan = post_orders(Model::Open { rate: 200.0 });
    plan.duration = Duration::from_secs(1);
    let missing = RequestTemplate {
        weight: 1,
        kind: RequestKind::Http(HttpRequest {
            method: "GET".into(),
            path: "/missing/{seq}".into(),
            body: None,
            headers: BTreeMap::new(),
            expect_status: vec![],
        }),
    };
    plan.requests.push(missing);
    let r = go(&plan, server.addr);
    assert_eq!(r.sent, 200);
    // Odd sequence numbers go to the second template: every one is a 404.
    assert_eq!(r.errors.status_4xx, 100, "{:?}", r.errors);
    assert!(r.errors.status_5xx > 10, "{:?}", r.errors);
    assert_eq!(r.shed, r.errors.status_5xx);
    assert_eq!(r.error_examples[&ErrorClass::Status5xx], "HTTP 503");
    assert_eq!(r.error_examples[&ErrorClass::Status4xx], "HTTP 404");
    assert_eq!(r.completed, 200, "all were answered");
    assert_eq!(r.succeeded + r.errors.total(), 200);
}

#[test]
fn the_closed_model_runs_user_loops_without_a_schedule() {
    let server = common::orders(4, 0.005, &[]);
    let mut plan = post_orders(Model::Closed { users: 4 });
    plan.duration = Duration::from_millis(1500);
    let r = go(&plan, server.addr);
    assert!(r.succeeded > 50, "{r:#?}");
    assert_eq!(r.succeeded, r.sent);
    assert_eq!((r.offered_rate, r.users, r.dropped), (None, Some(4), 0));
    assert!(r.generator.connections_opened <= 4);
    // No schedule: latency from the intended start is latency from the send.
    assert_eq!(r.latency.corrected, r.latency.uncorrected);
}

#[test]
fn the_observer_can_stop_a_run_and_a_cancel_abandons_it() {
    let server = common::orders(4, 0.005, &[]);
    let mut plan = post_orders(Model::Open { rate: 100.0 });
    plan.duration = Duration::from_secs(30);
    // Two event loops: the stop and the cancel reach the second one too.
    plan.threads = 2;
    let mut ticks = 0;
    let started = Instant::now();
    let r = run(&plan, server.addr, &AtomicBool::new(false), &mut |p| {
        ticks += 1;
        if p.measured_elapsed()
            .is_some_and(|t| t >= Duration::from_millis(500))
        {
            Flow::Stop
        } else {
            Flow::Continue
        }
    })
    .unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "stopped long before the 30 s schedule"
    );
    assert!(ticks >= 5, "{ticks}");
    let at = r
        .stopped_at_seconds
        .expect("the report says when it stopped");
    assert!(at >= 0.5, "{at}");
    assert_eq!(r.measured_seconds, at);
    assert!(!r.cancelled);
    assert_eq!(
        r.errors.total(),
        0,
        "requests in flight finished: {:?}",
        r.errors
    );
    assert_eq!(r.succeeded, r.sent);

    let cancel = AtomicBool::new(false);
    let started = Instant::now();
    let r = std::thread::scope(|s| {
        s.spawn(|| {
            std::thread::sleep(Duration::from_millis(300));
            cancel.store(true, Ordering::Relaxed);
        });
        run(&plan, server.addr, &cancel, &mut |_| Flow::Continue).unwrap()
    });
    assert!(started.elapsed() < Duration::from_secs(15));
    assert!(r.cancelled);
    assert_eq!(r.stopped_at_seconds, None);
    let judged = slo::evaluate(&[], &r);
    let v = decide(&CellFacts {
        not_ready: None,
        report: Some(&r),
        slos: &judged,
        process_alive: true,
    });
    assert_eq!(v.outcome(), Some(Outcome::Interrupted));
}

#[test]
fn a_generator_that_cannot_keep_its_schedule_says_so() {
    // The observer blocks the generator's only event loop for most of every tick: arrivals
    // find free slots but go out late. The run is flagged; the lag stays under LAG_HELD, so a
    // held objective still passes and a broken one is not blamed on the service.
    let server = common::orders(8, 0.001, &[]);
    let mut plan = post_orders(Model::Open { rate: 200.0 });
    plan.duration = Duration::from_secs(2);
    let r = run(&plan, server.addr, &AtomicBool::new(false), &mut |_| {
        std::thread::sleep(Duration::from_millis(80));
        Flow::Continue
    })
    .unwrap();
    assert!(r.generator.saturated, "{:#?}", r.generator);
    let lag = r.generator.schedule_lag;
    assert!(lag.late * 10 > lag.dispatched, "{lag:?}");
    assert!(lag.max.unwrap() >= 0.05, "{lag:?}");
    let detail = r.generator.detail.as_deref().unwrap_or("");
    assert!(detail.contains("late although slots were free"), "{detail}");
    assert!(detail.contains("an observer that blocked"), "{detail}");
    // The late arrivals' wait is in their corrected latency, not in the uncorrected one.
    assert!(r.latency.corrected.p99.unwrap() > 4.0 * r.latency.uncorrected.p50.unwrap());
    // No objective failed: the lag went into the corrected latency, so a pass is still a pass
    // about the service, and the detail names the lag.
    let judged = slo::evaluate(&[], &r);
    let v = decide(&CellFacts {
        not_ready: None,
        report: Some(&r),
        slos: &judged,
        process_alive: true,
    });
    assert_eq!(v.outcome(), Some(Outcome::Ok), "{v:?}");
    assert!(
        v.detail()
            .is_some_and(|d| d.contains("although the load generator lagged")),
        "{v:?}"
    );
    // The same run judged against an objective its lag broke: the failure may be the
    // generator's, so it is not evidence about the service.
    let strict = [qualify_model::slo::Slo {
        metric: qualify_model::slo::SloMetric::LatencyP99,
        bound: qualify_model::slo::BoundKind::Max,
        limit: r.latency.uncorrected.p50.unwrap() * 2.0,
        phase: Default::default(),
    }];
    let judged = slo::evaluate(&strict, &r);
    assert!(judged.iter().any(|s| !s.held), "{judged:?}");
    let v = decide(&CellFacts {
        not_ready: None,
        report: Some(&r),
        slos: &judged,
        process_alive: true,
    });
    assert_eq!(v.outcome(), Some(Outcome::Interrupted), "{v:?}");
    assert!(!v.is_evidence());
    assert!(
        v.detail()
            .is_some_and(|d| d.contains("the load generator was the bottleneck")),
        "{v:?}"
    );
}
