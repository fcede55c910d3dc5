//! Schedule tables: a ramp's arrivals per stage integrate its rate, a constant rate keeps the
//! engine's `i / rate`, split streams are the whole, Poisson arrivals keep their mean rate and
//! are the same for the same seed.

use std::time::Duration;

use qualify_model::load::{Arrivals, LoadPlan, Model, Stage};

use super::*;

fn ramp(stages: &[(f64, u64)], start_rate: f64) -> LoadPlan {
    let mut p = LoadPlan::http_get(Model::Open { rate: 1.0 }, "/");
    p.stages = stages
        .iter()
        .map(|(rate, s)| Stage {
            rate: *rate,
            duration: Duration::from_secs(*s),
        })
        .collect();
    p.start_rate = start_rate;
    p.duration = p.stages.iter().map(|s| s.duration).sum();
    p
}

fn times(s: &Schedule, arrivals: Arrivals, first: u64, step: u64) -> Vec<(u64, f64)> {
    Stream::new(s, arrivals, first, step).collect()
}

fn in_window(ts: &[(u64, f64)], a: f64, b: f64) -> usize {
    ts.iter().filter(|(_, t)| *t >= a && *t < b).count()
}

#[test]
fn a_ramps_arrivals_per_stage_integrate_its_rate() {
    // k6's example: 0 → 100/s over 10 s, then 100 → 800/s over 30 s.
    let s = Schedule::of(&ramp(&[(100.0, 10), (800.0, 30)], 0.0));
    assert_eq!(s.end(), 40.0);
    assert_eq!(s.count(10.0), 500.0);
    assert_eq!(s.count(40.0), 500.0 + 13_500.0);
    let ts = times(&s, Arrivals::Uniform, 0, 1);
    assert_eq!(ts.len(), 14_000);
    assert_eq!(in_window(&ts, 0.0, 10.0), 500);
    assert_eq!(in_window(&ts, 10.0, 40.0), 13_500);
    // Linear within a stage: the first half of the ramp up holds a quarter of its arrivals.
    assert_eq!(in_window(&ts, 0.0, 5.0), 125);
    assert!((s.mean_rate(39.0, 40.0) - 788.333).abs() < 0.01);
    // Times rise, and the n-th arrival is where the count reaches n.
    assert!(ts.windows(2).all(|w| w[0].1 < w[1].1));
    for (i, t) in ts.iter().step_by(997) {
        assert!((s.count(*t) - *i as f64).abs() < 1e-6, "{i} at {t}");
    }
    // Down, flat and from a start rate.
    let s = Schedule::of(&ramp(&[(50.0, 4), (50.0, 2), (10.0, 4)], 50.0));
    let ts = times(&s, Arrivals::Uniform, 0, 1);
    assert_eq!(in_window(&ts, 0.0, 6.0), 300);
    assert_eq!(in_window(&ts, 6.0, 10.0), 120);
}

#[test]
fn a_constant_rate_keeps_i_over_rate() {
    let mut p = LoadPlan::http_get(Model::Open { rate: 333.0 }, "/");
    p.warmup = Duration::from_millis(500);
    p.duration = Duration::from_secs(3);
    let s = Schedule::of(&p);
    let ts = times(&s, Arrivals::Uniform, 0, 1);
    assert_eq!(ts.len(), (333.0f64 * 3.5).ceil() as usize);
    for (i, t) in &ts {
        assert_eq!(*t, *i as f64 / 333.0);
    }
}

#[test]
fn split_streams_together_are_the_whole_schedule() {
    let s = Schedule::of(&ramp(&[(200.0, 3), (20.0, 2)], 10.0));
    let whole = times(&s, Arrivals::Uniform, 0, 1);
    let mut parts: Vec<(u64, f64)> = (0..3)
        .flat_map(|k| times(&s, Arrivals::Uniform, k, 3))
        .collect();
    parts.sort_by_key(|(i, _)| *i);
    assert_eq!(parts, whole);
}

#[test]
fn poisson_arrivals_keep_the_mean_rate_and_repeat_for_a_seed() {
    let mut p = LoadPlan::http_get(Model::Open { rate: 1000.0 }, "/");
    p.duration = Duration::from_secs(10);
    let s = Schedule::of(&p);
    let seeded = Arrivals::Poisson { seed: 7 };
    let ts = times(&s, seeded, 0, 1);
    // 10 000 expected, standard deviation 100: within 4 %.
    assert!((ts.len() as f64 - 10_000.0).abs() < 400.0, "{}", ts.len());
    assert_eq!(
        ts,
        times(&s, seeded, 0, 1),
        "the same seed, the same arrivals"
    );
    assert_ne!(ts, times(&s, Arrivals::Poisson { seed: 8 }, 0, 1));
    // Gaps are exponential: their coefficient of variation is about 1 (uniform: 0).
    let gaps: Vec<f64> = ts.windows(2).map(|w| w[1].1 - w[0].1).collect();
    let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
    let var = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gaps.len() as f64;
    let cv = var.sqrt() / mean;
    assert!((cv - 1.0).abs() < 0.05, "{cv}");
    // Split over 4 streams: still the whole rate, each its own seeded sequence.
    let split: usize = (0..4).map(|k| times(&s, seeded, k, 4).len()).sum();
    assert!((split as f64 - 10_000.0).abs() < 400.0, "{split}");
    // Over a ramp, each stage's count follows its rate.
    let r = Schedule::of(&ramp(&[(100.0, 10), (800.0, 30)], 0.0));
    let ts = times(&r, Arrivals::Poisson { seed: 1 }, 0, 1);
    let (a, b) = (in_window(&ts, 0.0, 10.0), in_window(&ts, 10.0, 40.0));
    assert!((a as f64 - 500.0).abs() < 100.0, "{a}");
    assert!((b as f64 - 13_500.0).abs() < 500.0, "{b}");
}
