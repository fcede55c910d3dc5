//! A simulated noisy machine where the truth is known, for judging how runs are scheduled and
//! located: a 2-core machine shared with other work, whose runs are sometimes slowed (a
//! neighbour on the sibling core: up to 1.8×, bimodal) and which goes through slow periods that
//! last several runs. [`tally`] runs the whole analysis on simulated `qualify run`s — shuffled
//! rounds, or back-to-back runs — and counts how often the chosen exponent is near the truth,
//! its interval covers it, and a `max_exponent` check a quarter step away is decided wrongly.
//! Used by the unit tests and by `examples/noisy_machine.rs` (`bench/noisy.sh`), which prints
//! both ways of measuring side by side. No I/O.

use std::collections::BTreeMap;

use crate::analyze::{
    AxisInput, CellInput, Expect, ExpectRule, Input, MetricDef, Verdict, analyze,
};
use crate::scaling::Better;
use crate::stats::{Estimator, Rng, Sample};
use qualify_model::AxisKind;

/// A machine whose runs take `clean · slowdown`: each run is slowed with probability 0.3 by
/// 1.3–1.8× (another process on the sibling core), plus 0–1% jitter, and the machine enters
/// slow periods (×1.15–1.4) that last 3–8 runs with probability 0.08 per run.
struct Machine {
    rng: Rng,
    period_left: u32,
    period_factor: f64,
}

impl Machine {
    fn new(seed: u64) -> Machine {
        Machine {
            rng: Rng::new(seed),
            period_left: 0,
            period_factor: 1.0,
        }
    }

    fn run(&mut self, clean: f64) -> f64 {
        if self.period_left == 0 && self.rng.unit() < 0.08 {
            self.period_left = 3 + self.rng.below(6) as u32;
            self.period_factor = 1.15 + 0.25 * self.rng.unit();
        }
        let period = if self.period_left > 0 {
            self.period_left -= 1;
            self.period_factor
        } else {
            1.0
        };
        let neighbour = if self.rng.unit() < 0.3 {
            1.3 + 0.5 * self.rng.unit()
        } else {
            1.0
        };
        clean * period * neighbour * (1.0 + 0.01 * self.rng.unit())
    }
}

/// The truth: `c0 + c1 · n^i · log2(n)^j` with a start-up cost equal to a fifth of the
/// smallest cell's work.
#[derive(Clone, Copy)]
pub struct Truth {
    /// The power of `n`.
    pub i: f64,
    /// The power of `log2(n)`.
    pub j: u32,
}

fn sizes(truth: Truth) -> Vec<u64> {
    let base: u64 = if truth.i >= 3.0 {
        100
    } else if truth.i >= 2.0 {
        2000
    } else {
        1_000_000
    };
    (0..6)
        .map(|k| (base as f64 * 2f64.powf(k as f64 * 0.8)).round() as u64)
        .collect()
}

fn clean(truth: Truth, n: u64, n0: u64) -> f64 {
    let f = |n: u64| (n as f64).powf(truth.i) * (n as f64).log2().powi(truth.j as i32);
    let c1 = 0.05 / f(n0);
    0.2 * 0.05 + c1 * f(n)
}

/// One simulated `qualify run`: `rounds` shuffled rounds (round 1 in the plan's order) or, for
/// `shuffled = false`, `rounds` runs of each cell back to back.
fn measure(truth: Truth, rounds: u32, shuffled: bool, seed: u64) -> Vec<CellInput> {
    let ns = sizes(truth);
    let mut machine = Machine::new(seed);
    let mut order_rng = Rng::new(seed ^ 0xABCD);
    let mut samples: Vec<Vec<Sample>> = vec![Vec::new(); ns.len()];
    if shuffled {
        for r in 1..=rounds {
            let mut order: Vec<usize> = (0..ns.len()).collect();
            if r > 1 {
                for k in (1..order.len()).rev() {
                    order.swap(k, order_rng.below(k + 1));
                }
            }
            for c in order {
                let v = machine.run(clean(truth, ns[c], ns[0]));
                samples[c].push(Sample::measured(v).in_round(r));
            }
        }
    } else {
        for (c, n) in ns.iter().enumerate() {
            for _ in 0..rounds {
                let v = machine.run(clean(truth, *n, ns[0]));
                samples[c].push(Sample::measured(v));
            }
        }
    }
    ns.iter()
        .zip(samples)
        .map(|(n, s)| CellInput {
            params: [("n", qualify_model::Value::Int(*n as i64))]
                .into_iter()
                .collect(),
            samples: BTreeMap::from([("cpu".to_string(), s)]),
            errors: Vec::new(),
        })
        .collect()
}

fn input(cells: Vec<CellInput>, estimator: Estimator, truth: Truth) -> Input {
    Input {
        metrics: vec![MetricDef {
            name: "cpu".into(),
            unit: Some("s".into()),
            better: Better::Lower,
            estimator,
        }],
        axes: vec![AxisInput {
            name: "n".into(),
            kind: AxisKind::Workload,
        }],
        cells,
        expects: [truth.i - 0.25, truth.i + 0.25]
            .into_iter()
            .map(|limit| Expect {
                axis: "n".into(),
                metric: "cpu".into(),
                rule: ExpectRule::MaxExponent(limit),
            })
            .collect(),
        ..Input::default()
    }
}

/// What [`tally`] counted over its simulated runs.
#[derive(Debug, Default)]
pub struct Tally {
    /// Runs that fitted a model.
    pub runs: usize,
    /// Chosen exponent within a quarter step of the truth.
    pub within: usize,
    /// The exponent's 95% interval covered the truth.
    pub covered: usize,
    /// `max_exponent` checks a quarter step away decided the wrong way.
    pub wrong: usize,
    /// Such checks left inconclusive.
    pub inconclusive: usize,
}

/// `seeds` simulated runs of `truth`: `rounds` shuffled rounds located by `estimator`, or with
/// `shuffled = false` `rounds` back-to-back runs per cell.
pub fn tally(truth: Truth, rounds: u32, shuffled: bool, estimator: Estimator, seeds: u64) -> Tally {
    let mut t = Tally::default();
    for seed in 1..=seeds {
        let perf = analyze(&input(
            measure(truth, rounds, shuffled, seed),
            estimator,
            truth,
        ));
        let Some(m) = perf.models.first() else {
            continue;
        };
        t.runs += 1;
        t.within += usize::from((m.fit.exponent - truth.i).abs() <= 0.25 + 1e-9);
        t.covered += usize::from(
            m.exponent_ci95[0] - 1e-9 <= truth.i && truth.i <= m.exponent_ci95[1] + 1e-9,
        );
        // Below the truth a held check is wrong, above it a violated one.
        t.wrong += usize::from(perf.checks[0].verdict == Verdict::Held);
        t.wrong += usize::from(perf.checks[1].verdict == Verdict::Violated);
        t.inconclusive += perf
            .checks
            .iter()
            .filter(|c| c.verdict == Verdict::Inconclusive)
            .count();
    }
    t
}

/// The truths the benchmark and the tests simulate, by name.
pub const TRUTHS: [(&str, Truth); 4] = [
    ("n", Truth { i: 1.0, j: 0 }),
    ("n log n", Truth { i: 1.0, j: 1 }),
    ("n^2", Truth { i: 2.0, j: 0 }),
    ("n^3", Truth { i: 3.0, j: 0 }),
];
