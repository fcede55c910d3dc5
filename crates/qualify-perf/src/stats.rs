//! Robust statistics of one cell and metric: the metric's location [`Estimator`] (`min`,
//! `median` or `mean`) with a percentile-bootstrap 95% interval of it (fixed-seed PRNG, so
//! results are reproducible) and its relative precision (the interval's half-width over the
//! estimate), the median, MAD, min, max and mean, the robust relative spread
//! 1.4826 · MAD / median, outliers flagged by |x − median| > 3 · 1.4826 · MAD (flagged, never
//! dropped), a multimodality flag (two clusters split by a wide gap), the round each run was
//! measured in, and censored observations (runs that timed out or were killed: "≥ value", never
//! mixed into the statistics).

pub use qualify_model::Estimator;
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
    /// The round the run belongs to (1, 2, …; 0: unknown). Runs of one round visited every cell
    /// once, so they share the machine's state of that period.
    pub round: u32,
}

impl Sample {
    pub fn measured(value: f64) -> Sample {
        Sample {
            value,
            censored: false,
            round: 0,
        }
    }
    pub fn at_least(value: f64) -> Sample {
        Sample {
            value,
            censored: true,
            round: 0,
        }
    }
    /// The same observation, measured in `round`.
    pub fn in_round(self, round: u32) -> Sample {
        Sample { round, ..self }
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

/// The estimate of `values` under `estimator` (`None` when empty).
pub fn estimate(values: &[f64], estimator: Estimator) -> Option<f64> {
    match estimator {
        Estimator::Median => median(values),
        Estimator::Min => values.iter().copied().reduce(f64::min),
        Estimator::Mean => {
            (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
        }
    }
}

/// The relative half-width of `ci` around `estimate`: 0 for a point interval, `None` when it
/// cannot be stated (no interval, or a zero estimate with a wide interval).
pub fn relative_half_width(ci: Option<[f64; 2]>, estimate: Option<f64>) -> Option<f64> {
    let ([lo, hi], m) = (ci?, estimate?);
    let half = (hi - lo).abs() / 2.0;
    if half == 0.0 {
        Some(0.0)
    } else if m != 0.0 {
        Some(half / m.abs())
    } else {
        None
    }
}

/// Whether sorted values fall into two clusters: split at their widest gap, each side holds at
/// least 2 runs and a fifth of them, and the gap is wider than twice either side's range and
/// than 5% of the median. A crude test on purpose: with 5–20 runs a histogram-based mValue
/// (BenchmarkDotNet) has too few bins to mean anything, a gap that wide is plain to see.
pub fn bimodal(values: &[f64]) -> bool {
    let n = values.len();
    if n < 4 {
        return false;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let Some((k, gap)) = (1..n)
        .map(|k| (k, v[k] - v[k - 1]))
        .max_by(|a, b| a.1.total_cmp(&b.1))
    else {
        return false;
    };
    let least = 2usize.max(n.div_ceil(5));
    if k < least || n - k < least {
        return false;
    }
    let low_range = v[k - 1] - v[0];
    let high_range = v[n - 1] - v[k];
    let med = median(&v).unwrap_or(0.0).abs();
    gap > 2.0 * low_range.max(high_range) && gap > 0.05 * med
}

/// Statistics of one cell and metric. `n` counts the measured (uncensored) runs the statistics
/// are computed from; `censored` counts runs that did not finish, whose values are lower bounds
/// (`censored_at`). `estimate` is the metric's `estimator` over the measured runs and `ci95` the
/// percentile-bootstrap 95% interval of that estimator; `precision` is the interval's
/// half-width relative to the estimate. `outliers` index into `values`; `rounds` gives the
/// round of each value (empty when the runs had none).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    pub n: usize,
    pub censored: usize,
    /// Absent in receipts from before estimators: those located every cell by its median.
    #[serde(default)]
    pub estimator: Estimator,
    #[serde(default)]
    pub estimate: Option<f64>,
    pub ci95: Option<[f64; 2]>,
    #[serde(default)]
    pub precision: Option<f64>,
    pub median: Option<f64>,
    pub mad: Option<f64>,
    pub min: Option<f64>,
    pub max: Option<f64>,
    #[serde(default)]
    pub mean: Option<f64>,
    /// 1.4826 · MAD / |median|: the robust relative spread of the runs.
    #[serde(default)]
    pub spread: Option<f64>,
    /// The runs fall into two clusters ([`bimodal`]): one location hides the other.
    #[serde(default)]
    pub multimodal: bool,
    pub outliers: Vec<usize>,
    /// Measured values in run order.
    pub values: Vec<f64>,
    /// The round of each value (same order), when the runs were measured in rounds.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rounds: Vec<u32>,
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

    /// The cell's location: the estimate, or the median in receipts from before estimators.
    pub fn location(&self) -> Option<f64> {
        self.estimate.or(self.median)
    }
}

/// Summarize the samples of one cell and metric, located by `estimator`.
pub fn summarize(samples: &[Sample], estimator: Estimator) -> Stats {
    let measured: Vec<&Sample> = samples
        .iter()
        .filter(|s| !s.censored && s.value.is_finite())
        .collect();
    let values: Vec<f64> = measured.iter().map(|s| s.value).collect();
    let rounds: Vec<u32> = if measured.iter().any(|s| s.round > 0) {
        measured.iter().map(|s| s.round).collect()
    } else {
        Vec::new()
    };
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
    let est = estimate(&values, estimator);
    let ci95 = bootstrap_ci(&values, &mut rng, |v| estimate(v, estimator));
    let spread = match (med, mad_v) {
        (Some(m), Some(d)) if m != 0.0 => Some(MAD_SCALE * d / m.abs()),
        _ => None,
    };
    Stats {
        n: values.len(),
        censored: censored_at.len(),
        estimator,
        estimate: est,
        ci95,
        precision: relative_half_width(ci95, est),
        median: med,
        mad: mad_v,
        min: values.iter().copied().reduce(f64::min),
        max: values.iter().copied().reduce(f64::max),
        mean: estimate(&values, Estimator::Mean),
        spread,
        multimodal: bimodal(&values),
        outliers,
        values,
        rounds,
        censored_at,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_mad_min_max() {
        let s = summarize(
            &[1.0, 2.0, 3.0, 4.0, 100.0].map(Sample::measured),
            Estimator::Median,
        );
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
        let s = summarize(&[2.0; 4].map(Sample::measured), Estimator::Median);
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
        let s = summarize(&samples, Estimator::Median);
        assert_eq!(s.n, 2);
        assert_eq!(s.censored, 2);
        assert_eq!(s.max, Some(1.2));
        assert!((s.median.unwrap_or(0.0) - 1.1).abs() < 1e-12);
        assert_eq!(s.censored_at, vec![30.0, 30.0]);
        let all_censored = summarize(&[Sample::at_least(5.0)], Estimator::Median);
        assert_eq!(all_censored.median, None);
        assert_eq!(all_censored.ci95, None);
        assert_eq!(all_censored.censored, 1);
    }

    #[test]
    fn bootstrap_is_reproducible() {
        let v: Vec<Sample> = (0..9).map(|i| Sample::measured(f64::from(i))).collect();
        assert_eq!(
            summarize(&v, Estimator::Min).ci95,
            summarize(&v, Estimator::Min).ci95
        );
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
            let ci = summarize(&samples, Estimator::Median)
                .ci95
                .unwrap_or([0.0, 0.0]);
            if ci[0] <= 10.0 && 10.0 <= ci[1] {
                covered += 1;
            }
        }
        let rate = f64::from(covered) / f64::from(trials);
        assert!((0.85..=1.0).contains(&rate), "coverage {rate}");
    }

    #[test]
    fn each_estimator_locates_the_cell_and_bounds_its_own_interval() {
        // Machine noise only adds time: a fast mode at 1.0 and slow runs up to 1.8.
        let runs = [1.0, 1.8, 1.01, 1.75, 1.02, 1.0, 1.79];
        let samples: Vec<Sample> = runs.iter().map(|v| Sample::measured(*v)).collect();
        let min = summarize(&samples, Estimator::Min);
        assert_eq!((min.estimator, min.estimate), (Estimator::Min, Some(1.0)));
        let ci = min.ci95.unwrap_or([0.0, 0.0]);
        assert!(ci[0] == 1.0 && ci[1] <= 1.02, "{ci:?}");
        assert!(min.precision.is_some_and(|p| p <= 0.01), "{min:?}");
        let median = summarize(&samples, Estimator::Median);
        assert_eq!(median.estimate, Some(1.02));
        let mean = summarize(&samples, Estimator::Mean);
        let m = runs.iter().sum::<f64>() / 7.0;
        assert!((mean.estimate.unwrap_or(0.0) - m).abs() < 1e-12);
        // The median's interval spans both modes: its precision is poor, and the cell is
        // flagged as two clusters.
        assert!(median.precision.is_some_and(|p| p > 0.2), "{median:?}");
        assert!(median.multimodal && min.multimodal);
    }

    #[test]
    fn two_clusters_are_multimodal_one_cluster_with_an_outlier_is_not() {
        assert!(bimodal(&[0.22, 0.40, 0.23, 0.41, 0.22, 0.39]));
        assert!(!bimodal(&[1.0, 1.01, 0.99, 1.02, 1.0, 1.6]));
        assert!(!bimodal(&[1.0, 1.02, 1.04, 1.06, 1.08, 1.10]));
        assert!(!bimodal(&[1.0, 2.0, 1.0]));
    }

    #[test]
    fn rounds_are_kept_beside_the_values_they_belong_to() {
        let samples = [
            Sample::measured(2.0).in_round(1),
            Sample::at_least(9.0).in_round(2),
            Sample::measured(2.2).in_round(3),
        ];
        let s = summarize(&samples, Estimator::Median);
        assert_eq!(s.values, vec![2.0, 2.2]);
        assert_eq!(s.rounds, vec![1, 3]);
        let plain = summarize(&[Sample::measured(1.0)], Estimator::Median);
        assert!(plain.rounds.is_empty());
    }

    #[test]
    fn precision_is_relative_and_unknown_only_when_it_cannot_be_stated() {
        assert_eq!(relative_half_width(Some([0.5, 1.5]), Some(1.0)), Some(0.5));
        assert_eq!(relative_half_width(Some([0.0, 0.0]), Some(0.0)), Some(0.0));
        assert_eq!(relative_half_width(Some([-1.0, 1.0]), Some(0.0)), None);
        assert_eq!(relative_half_width(None, Some(1.0)), None);
    }
}
