//! Robust statistics of one cell and metric: median, MAD, min, max, a bootstrap 95% confidence
//! interval of the median (fixed-seed PRNG, so results are reproducible), outliers flagged by
//! |x − median| > 3 · 1.4826 · MAD (flagged, never dropped), and censored observations (runs
//! that timed out or were killed: "≥ value", never mixed into the statistics).

use serde::{Deserialize, Serialize};

/// Bootstrap resamples per interval.
pub const BOOTSTRAP_RESAMPLES: usize = 1000;
/// Scale that makes the MAD a consistent estimator of σ for normal data.
pub const MAD_SCALE: f64 = 1.4826;

/// One observation of a metric in one run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    pub value: f64,
    /// The run did not finish (timeout, killed): the true value is at least `value`.
    pub censored: bool,
}

impl Sample {
    pub fn measured(value: f64) -> Sample {
        Sample {
            value,
            censored: false,
        }
    }
    pub fn at_least(value: f64) -> Sample {
        Sample {
            value,
            censored: true,
        }
    }
}

/// A tiny xorshift64* generator: deterministic, good enough for resampling.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }
    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// The fixed seed every interval starts from.
pub const SEED: u64 = 0x9E37_79B9_7F4A_7C15;

/// Median of finite values (mean of the two middle ones for even counts); `None` when empty.
pub fn median(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    Some(if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    })
}

/// Median absolute deviation from the median (unscaled).
pub fn mad(values: &[f64]) -> Option<f64> {
    let m = median(values)?;
    let dev: Vec<f64> = values.iter().map(|x| (x - m).abs()).collect();
    median(&dev)
}

/// `q`-quantile (0..=1) of sorted values, linear interpolation.
pub fn quantile_sorted(sorted: &[f64], q: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let pos = q.clamp(0.0, 1.0) * (sorted.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    let frac = pos - lo as f64;
    Some(sorted[lo] + (sorted[hi] - sorted[lo]) * frac)
}

/// Percentile-bootstrap 95% interval of `statistic` over resamples of `values`.
pub fn bootstrap_ci(
    values: &[f64],
    rng: &mut Rng,
    statistic: impl Fn(&[f64]) -> Option<f64>,
) -> Option<[f64; 2]> {
    if values.is_empty() {
        return None;
    }
    let mut stats = Vec::with_capacity(BOOTSTRAP_RESAMPLES);
    let mut buf = vec![0.0; values.len()];
    for _ in 0..BOOTSTRAP_RESAMPLES {
        for slot in buf.iter_mut() {
            *slot = values[rng.below(values.len())];
        }
        if let Some(s) = statistic(&buf) {
            stats.push(s);
        }
    }
    stats.sort_by(f64::total_cmp);
    Some([
        quantile_sorted(&stats, 0.025)?,
        quantile_sorted(&stats, 0.975)?,
    ])
}

/// Statistics of one cell and metric. `n` counts the measured (uncensored) runs the statistics
/// are computed from; `censored` counts runs that did not finish, whose values are lower bounds
/// (`censored_at`). `outliers` index into `values`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    pub n: usize,
    pub censored: usize,
    pub median: Option<f64>,
    pub mad: Option<f64>,
    pub min: Option<f64>,
    pub max: Option<f64>,
    pub ci95: Option<[f64; 2]>,
    pub outliers: Vec<usize>,
    /// Measured values in run order.
    pub values: Vec<f64>,
    /// Censored runs: each value is "at least" this much.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub censored_at: Vec<f64>,
}

impl Stats {
    /// Robust relative spread: 1.4826 · MAD / |median| (0 when unknown).
    pub fn relative_spread(&self) -> f64 {
        match (self.median, self.mad) {
            (Some(m), Some(d)) if m != 0.0 => MAD_SCALE * d / m.abs(),
            _ => 0.0,
        }
    }
}

/// Summarize the samples of one cell and metric.
pub fn summarize(samples: &[Sample]) -> Stats {
    let values: Vec<f64> = samples
        .iter()
        .filter(|s| !s.censored && s.value.is_finite())
        .map(|s| s.value)
        .collect();
    let censored_at: Vec<f64> = samples
        .iter()
        .filter(|s| s.censored)
        .map(|s| s.value)
        .collect();
    let med = median(&values);
    let mad_v = mad(&values);
    let outliers = match (med, mad_v) {
        (Some(m), Some(d)) => values
            .iter()
            .enumerate()
            .filter(|(_, x)| (*x - m).abs() > 3.0 * MAD_SCALE * d && d > 0.0)
            .map(|(i, _)| i)
            .collect(),
        _ => Vec::new(),
    };
    let mut rng = Rng::new(SEED);
    Stats {
        n: values.len(),
        censored: censored_at.len(),
        median: med,
        mad: mad_v,
        min: values.iter().copied().reduce(f64::min),
        max: values.iter().copied().reduce(f64::max),
        ci95: bootstrap_ci(&values, &mut rng, median),
        outliers,
        values,
        censored_at,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_mad_min_max() {
        let s = summarize(&[1.0, 2.0, 3.0, 4.0, 100.0].map(Sample::measured));
        assert_eq!(s.median, Some(3.0));
        assert_eq!(s.mad, Some(1.0));
        assert_eq!(s.min, Some(1.0));
        assert_eq!(s.max, Some(100.0));
        // 100 is an outlier; it is flagged and kept.
        assert_eq!(s.outliers, vec![4]);
        assert_eq!(s.values.len(), 5);
        let ci = s.ci95.unwrap_or([0.0, 0.0]);
        assert!(ci[0] <= 3.0 && 3.0 <= ci[1], "{ci:?}");
    }

    #[test]
    fn identical_values_have_a_point_interval_and_no_outliers() {
        let s = summarize(&[2.0; 4].map(Sample::measured));
        assert_eq!(s.ci95, Some([2.0, 2.0]));
        assert!(s.outliers.is_empty());
        assert_eq!(s.relative_spread(), 0.0);
    }

    #[test]
    fn censored_runs_are_counted_not_averaged() {
        let samples = [
            Sample::measured(1.0),
            Sample::at_least(30.0),
            Sample::measured(1.2),
            Sample::at_least(30.0),
        ];
        let s = summarize(&samples);
        assert_eq!(s.n, 2);
        assert_eq!(s.censored, 2);
        assert_eq!(s.max, Some(1.2));
        assert!((s.median.unwrap_or(0.0) - 1.1).abs() < 1e-12);
        assert_eq!(s.censored_at, vec![30.0, 30.0]);
        let all_censored = summarize(&[Sample::at_least(5.0)]);
        assert_eq!(all_censored.median, None);
        assert_eq!(all_censored.ci95, None);
        assert_eq!(all_censored.censored, 1);
    }

    #[test]
    fn bootstrap_is_reproducible() {
        let v: Vec<Sample> = (0..9).map(|i| Sample::measured(f64::from(i))).collect();
        assert_eq!(summarize(&v).ci95, summarize(&v).ci95);
    }

    #[test]
    fn bootstrap_ci_covers_the_true_median_most_of_the_time() {
        // Normal-ish data (sum of uniforms) around 10: the 95% interval of the median of 15
        // samples should contain 10 in roughly 95% of 400 trials; accept 85%..100%.
        let mut rng = Rng::new(42);
        let mut covered = 0;
        let trials = 400;
        for _ in 0..trials {
            let samples: Vec<Sample> = (0..15)
                .map(|_| {
                    let z: f64 = (0..12).map(|_| rng.unit()).sum::<f64>() - 6.0;
                    Sample::measured(10.0 + z)
                })
                .collect();
            let ci = summarize(&samples).ci95.unwrap_or([0.0, 0.0]);
            if ci[0] <= 10.0 && 10.0 <= ci[1] {
                covered += 1;
            }
        }
        let rate = f64::from(covered) / f64::from(trials);
        assert!((0.85..=1.0).contains(&rate), "coverage {rate}");
    }
}
