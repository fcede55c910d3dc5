//! Merge tables: two halves of one run merge to the whole (every quantile, count and
//! timeline row), a saturated or late generator is named, and reports that are not one split
//! load are refused.

use hdrhistogram::Histogram;
use qualify_model::Phase;

use super::*;
use crate::report::tests_support::report;
use crate::report::{ErrorClass, ErrorCounts};

fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 70_000_000, 3).unwrap()
}

/// Latencies (µs) of 10 000 requests, spread over four decades with a tail.
fn latencies() -> Vec<u64> {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    (0..10_000)
        .map(|i| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let base = 200 + x % 20_000;
            if i % 97 == 0 { base * 40 } else { base }
        })
        .collect()
}

/// One generator's report of the requests `mine` picks (by position), out of `of`.
fn share(index: u32, of: u32, all: &[u64]) -> GeneratorReport {
    let mut corrected = histogram();
    let mut uncorrected = histogram();
    let mut phase_c = histogram();
    let mut timeline = vec![TimelineSecond::default(); 10];
    for (i, v) in all.iter().enumerate() {
        if i as u32 % of != index {
            continue;
        }
        corrected.record(*v).unwrap();
        uncorrected.record(*v / 2 + 1).unwrap();
        if i < all.len() / 2 {
            phase_c.record(*v).unwrap();
        }
        let row = &mut timeline[i * 10 / all.len()];
        row.second = (i * 10 / all.len()) as u32;
        row.sent += 1;
        row.completed += 1;
        row.p99 = Some(*v as f64 / 1e6 * (index + 1) as f64);
    }
    let n = corrected.len();
    let mut r = report();
    r.offered_rate = Some(1000.0 / f64::from(of));
    r.sent = n;
    r.completed = n;
    r.succeeded = n - u64::from(index);
    r.dropped = u64::from(index);
    r.achieved_rate = n as f64 / 10.0;
    r.throughput = n as f64 / 10.0;
    r.errors = ErrorCounts::default();
    for _ in 0..index {
        r.errors.add(ErrorClass::Status5xx);
    }
    r.latency.corrected = summary_of(&corrected);
    r.latency.uncorrected = summary_of(&uncorrected);
    r.latency.corrected_histogram = encode_histogram(&corrected);
    r.timeline = timeline;
    r.generator.cpu_seconds = 0.25;
    r.generator.schedule_lag = ScheduleLag {
        dispatched: n,
        late: u64::from(index),
        p50: Some(0.0001),
        p99: Some(0.001 * f64::from(index + 1)),
        max: Some(0.002 * f64::from(index + 1)),
    };
    r.phases = vec![PhaseReport {
        phase: Phase::Before,
        start_seconds: 0.0,
        end_seconds: 5.0,
        sent: phase_c.len(),
        completed: phase_c.len(),
        succeeded: phase_c.len(),
        dropped: 0,
        shed: 0,
        errors: ErrorCounts::default(),
        peak_in_flight: 3,
        corrected: summary_of(&phase_c),
        uncorrected: summary_of(&phase_c),
        fast_errors: 0,
        fast_error_latency: Default::default(),
        fast_error_histogram: String::new(),
        ended_latency: summary_of(&phase_c),
        ended_histogram: encode_histogram(&phase_c),
    }];
    GeneratorReport {
        index,
        of,
        start_at_unix: Some(1.7e9),
        started_late_seconds: 0.01,
        report: Some(r),
        uncorrected_histogram: encode_histogram(&uncorrected),
        phases: vec![PhaseHistograms {
            phase: Phase::Before,
            corrected: encode_histogram(&phase_c),
            uncorrected: encode_histogram(&phase_c),
        }],
        second_histograms: Vec::new(),
        error: None,
    }
}

#[test]
fn two_halves_of_a_run_merge_to_the_whole() {
    let all = latencies();
    let whole = share(0, 1, &all);
    let halves = [share(1, 2, &all), share(0, 2, &all)];
    let merged = merge(&halves).unwrap();
    let one = whole.report.as_ref().unwrap();
    // Histograms add exactly: every quantile of the merge is the whole run's.
    assert_eq!(merged.latency.corrected, one.latency.corrected);
    assert_eq!(merged.latency.uncorrected, one.latency.uncorrected);
    assert_eq!(
        corrected_histogram_of(&merged),
        corrected_histogram_of(one),
        "the merged histogram is the whole run's"
    );
    assert_eq!(merged.phases[0].corrected, one.phases[0].corrected);
    assert_eq!(merged.phases[0].ended_latency, one.phases[0].ended_latency);
    assert_eq!(merged.phases[0].sent, one.phases[0].sent);
    assert_eq!(
        merged.phases[0].peak_in_flight, 6,
        "each generator owns its slots"
    );
    // Counts and rates sum.
    assert_eq!(merged.sent, 10_000);
    assert_eq!(
        merged.sent,
        merged.generators.iter().map(|g| g.sent).sum::<u64>()
    );
    assert_eq!(merged.offered_rate, Some(1000.0));
    assert!((merged.achieved_rate - one.achieved_rate).abs() < 1e-9);
    assert_eq!(merged.dropped, 1);
    assert_eq!(merged.errors.status_5xx, 1);
    // Timelines sum per second; the p99 of a second is the worst generator's.
    assert_eq!(merged.timeline.len(), 10);
    for (m, w) in merged.timeline.iter().zip(&one.timeline) {
        assert_eq!(
            (m.second, m.sent, m.completed),
            (w.second, w.sent, w.completed)
        );
    }
    assert!(merged.timeline[0].p99 >= one.timeline[0].p99);
    // The generator's own cost adds up; the worst lag is kept.
    assert_eq!(merged.generator.cpu_seconds, 0.5);
    assert_eq!(merged.generator.schedule_lag.dispatched, 10_000);
    assert_eq!(merged.generator.schedule_lag.late, 1);
    assert_eq!(merged.generator.schedule_lag.max, Some(0.004));
    assert!(!merged.generator.saturated);
    let indices: Vec<u32> = merged.generators.iter().map(|g| g.index).collect();
    assert_eq!(indices, [0, 1], "in index order whatever the input order");
    assert_eq!(merged.generators[1].sent, 5_000);
    assert_eq!(merged.generators[1].offered_rate, Some(500.0));
}

fn corrected_histogram_of(r: &LoadReport) -> Histogram<u64> {
    crate::report::corrected_histogram(r).unwrap()
}

#[test]
fn a_saturated_or_late_generator_is_named_and_saturates_the_merge() {
    let all = latencies();
    let mut parts = [share(0, 3, &all), share(1, 3, &all), share(2, 3, &all)];
    if let Some(r) = &mut parts[1].report {
        r.generator.saturated = true;
        r.generator.detail = Some("it was busy all along".into());
    }
    let merged = merge(&parts).unwrap();
    assert!(merged.generator.saturated);
    let detail = merged.generator.detail.clone().unwrap();
    assert!(
        detail.starts_with("generator 1 of 3: it was busy"),
        "{detail}"
    );
    assert!(!merged.generators[0].saturated && merged.generators[1].saturated);

    parts[1].report.as_mut().unwrap().generator.saturated = false;
    parts[2].started_late_seconds = 0.4;
    let merged = merge(&parts).unwrap();
    let detail = merged.generator.detail.clone().unwrap();
    assert!(
        detail.contains("generator 2 of 3") && detail.contains("0.40 s after the agreed start"),
        "{detail}"
    );
    assert_eq!(merged.generators[2].started_late_seconds, 0.4);
}

#[test]
fn reports_that_are_not_one_split_load_are_refused() {
    let all = latencies();
    assert!(matches!(merge(&[]), Err(MergeError::Empty)));
    let twice = [share(0, 2, &all), share(0, 2, &all)];
    assert!(matches!(merge(&twice), Err(MergeError::Mismatch(_))));
    let missing = [share(0, 3, &all), share(1, 3, &all)];
    assert!(matches!(merge(&missing), Err(MergeError::Mismatch(_))));
    let failed = [
        share(0, 2, &all),
        GeneratorReport::failed(1, 2, "cannot start the event loop"),
    ];
    let err = merge(&failed).unwrap_err().to_string();
    assert!(
        err.contains("generator 1 of 2 reported no load: cannot start"),
        "{err}"
    );
    let mut broken = [share(0, 2, &all), share(1, 2, &all)];
    broken[1].uncorrected_histogram = "not base64!".into();
    let err = merge(&broken).unwrap_err().to_string();
    assert!(
        err.contains("generator 1: its uncorrected latency"),
        "{err}"
    );
}

#[test]
fn generator_reports_round_trip_through_json() {
    let all = latencies();
    let g = share(1, 2, &all);
    let text = serde_json::to_string(&g).unwrap();
    let back: GeneratorReport = serde_json::from_str(&text).unwrap();
    // Histograms travel as text, untouched (summaries' floats may lose a last digit).
    assert_eq!(back.uncorrected_histogram, g.uncorrected_histogram);
    assert_eq!(back.phases, g.phases);
    let (b, r) = (back.report.as_ref().unwrap(), g.report.as_ref().unwrap());
    assert_eq!(b.latency.corrected_histogram, r.latency.corrected_histogram);
    assert_eq!((b.sent, &b.timeline), (r.sent, &r.timeline));
    let merged = merge(&[share(0, 2, &all), back]).unwrap();
    let json = serde_json::to_value(&merged).unwrap();
    assert_eq!(json["generators"][1]["sent"], 5000);
    // An in-process report carries no `generators` key: old receipts keep their bytes.
    let one = serde_json::to_value(report()).unwrap();
    assert!(one.get("generators").is_none());
}
