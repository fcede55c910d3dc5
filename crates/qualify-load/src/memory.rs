//! Memory growth (pure): from resident-memory samples taken through the measured phase,
//! decide whether memory grew *steadily* — not a one-off step (a cache filling), not growth
//! that levelled off — and if so, its slope and when it would reach a ceiling.
//!
//! The slope is the Theil–Sen estimate (median of pairwise slopes: robust to spikes and to
//! garbage-collector sawtooth). "Steadily" means: the growth over the phase is material (at
//! least [`MIN_GROWTH_BYTES`] and [`MIN_GROWTH_FRACTION`] of the starting size), most pairs of
//! samples rise (Kendall's tau at least [`MIN_TAU`]), and both halves of the phase rise at a
//! quarter of the overall slope or more.

use serde::{Deserialize, Serialize};

pub const MIN_SAMPLES: usize = 6;
pub const MIN_SPAN_SECONDS: f64 = 2.0;
pub const MIN_GROWTH_BYTES: f64 = 1024.0 * 1024.0;
pub const MIN_GROWTH_FRACTION: f64 = 0.05;
pub const MIN_TAU: f64 = 0.5;
/// Samples beyond this are thinned evenly (the estimate is quadratic in the count).
const MAX_SAMPLES: usize = 240;

/// One resident-memory sample of the service's process tree.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MemorySample {
    /// Seconds since any fixed origin.
    pub seconds: f64,
    pub bytes: u64,
}

pub use qualify_model::load::Growth;

/// `None` when there are too few samples (or too short a span) to judge.
pub fn memory_growth(samples: &[MemorySample], ceiling: Option<u64>) -> Option<Growth> {
    let mut s: Vec<(f64, f64)> = samples
        .iter()
        .filter(|x| x.seconds.is_finite())
        .map(|x| (x.seconds, x.bytes as f64))
        .collect();
    s.sort_by(|a, b| a.0.total_cmp(&b.0));
    if s.len() < MIN_SAMPLES {
        return None;
    }
    let span = s[s.len() - 1].0 - s[0].0;
    if span < MIN_SPAN_SECONDS {
        return None;
    }
    if s.len() > MAX_SAMPLES {
        let n = s.len();
        s = (0..MAX_SAMPLES)
            .map(|i| s[i * (n - 1) / (MAX_SAMPLES - 1)])
            .collect();
    }
    let (slope, tau) = theil_sen(&s);
    let half = s.len() / 2;
    let (first_half, _) = theil_sen(&s[..=half]);
    let (second_half, _) = theil_sen(&s[half..]);
    let mut offsets: Vec<f64> = s.iter().map(|(t, b)| b - slope * t).collect();
    let intercept = median(&mut offsets);
    let start_bytes = intercept + slope * s[0].0;
    let end_bytes = intercept + slope * s[s.len() - 1].0;
    let growth = end_bytes - start_bytes;
    let material =
        growth >= MIN_GROWTH_BYTES && growth >= MIN_GROWTH_FRACTION * start_bytes.max(1.0);
    let both_halves = first_half >= 0.25 * slope && second_half >= 0.25 * slope;
    let grew_steadily = slope > 0.0 && material && tau >= MIN_TAU && both_halves;
    let seconds_to_ceiling = ceiling
        .filter(|_| grew_steadily)
        .map(|c| ((c as f64 - end_bytes) / slope).max(0.0));
    let mib = |b: f64| b / (1024.0 * 1024.0);
    let detail = if grew_steadily {
        let mut d = format!(
            "resident memory grew steadily by {:.1} MiB over {span:.0} s ({:.1} KiB/s, from {:.1} MiB)",
            mib(growth),
            slope / 1024.0,
            mib(start_bytes)
        );
        if let (Some(c), Some(t)) = (ceiling, seconds_to_ceiling) {
            d.push_str(&format!(
                "; at this rate it reaches the {:.0} MiB ceiling in {t:.0} s",
                mib(c as f64)
            ));
        }
        d
    } else if !material {
        format!(
            "no material growth: {:+.2} MiB over {span:.0} s",
            mib(growth)
        )
    } else {
        format!(
            "memory moved by {:+.1} MiB over {span:.0} s but not steadily (tau {tau:.2}; half-phase slopes {:.1} and {:.1} KiB/s)",
            mib(growth),
            first_half / 1024.0,
            second_half / 1024.0
        )
    };
    Some(Growth {
        grew_steadily,
        slope_bytes_per_second: slope,
        start_bytes,
        end_bytes,
        seconds_to_ceiling,
        kendall_tau: tau,
        detail,
    })
}

/// Theil–Sen slope and Kendall's tau of a time-ordered series.
fn theil_sen(s: &[(f64, f64)]) -> (f64, f64) {
    let mut slopes = Vec::with_capacity(s.len() * s.len() / 2);
    let (mut concordant, mut discordant) = (0i64, 0i64);
    for (i, a) in s.iter().enumerate() {
        for b in &s[i + 1..] {
            let dt = b.0 - a.0;
            if dt > 0.0 {
                slopes.push((b.1 - a.1) / dt);
            }
            match b.1.partial_cmp(&a.1) {
                Some(std::cmp::Ordering::Greater) => concordant += 1,
                Some(std::cmp::Ordering::Less) => discordant += 1,
                _ => {}
            }
        }
    }
    let pairs = (s.len() * s.len().saturating_sub(1) / 2).max(1) as f64;
    let tau = (concordant - discordant) as f64 / pairs;
    (median(&mut slopes), tau)
}

fn median(v: &mut [f64]) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: f64 = 1024.0 * 1024.0;

    /// Deterministic noise in [-1, 1].
    fn noise(i: usize) -> f64 {
        let x = (i as u64)
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((x >> 33) % 2001) as f64 / 1000.0 - 1.0
    }

    fn series(n: usize, dt: f64, f: impl Fn(f64) -> f64) -> Vec<MemorySample> {
        (0..n)
            .map(|i| {
                let t = i as f64 * dt;
                MemorySample {
                    seconds: t,
                    bytes: f(t).max(0.0) as u64,
                }
            })
            .collect()
    }

    #[test]
    fn growth_table() {
        let jitter = |i: f64| noise((i * 10.0) as usize) * 0.3 * MIB;
        let cases: Vec<(&str, Vec<MemorySample>, bool)> = vec![
            (
                "linear leak, 1 MiB/s with jitter",
                series(60, 0.5, |t| 100.0 * MIB + t * MIB + jitter(t)),
                true,
            ),
            (
                "flat with jitter",
                series(60, 0.5, |t| 100.0 * MIB + jitter(t)),
                false,
            ),
            (
                "one step (a cache filled)",
                series(
                    60,
                    0.5,
                    |t| if t < 10.0 { 100.0 * MIB } else { 140.0 * MIB } + jitter(t),
                ),
                false,
            ),
            (
                "grew, then levelled off",
                series(60, 0.5, |t| {
                    100.0 * MIB + t.min(8.0) * 5.0 * MIB + jitter(t)
                }),
                false,
            ),
            (
                "sawtooth (GC) on a rising trend",
                series(60, 0.5, |t| 100.0 * MIB + t * MIB + (t % 3.0) * 2.0 * MIB),
                true,
            ),
            (
                "shrinking",
                series(60, 0.5, |t| 200.0 * MIB - t * MIB + jitter(t)),
                false,
            ),
            (
                "tiny growth (0.2 MiB in 30 s)",
                series(60, 0.5, |t| 100.0 * MIB + t * 0.007 * MIB),
                false,
            ),
        ];
        for (name, samples, grew) in cases {
            let g = memory_growth(&samples, Some(1 << 30)).unwrap();
            assert_eq!(g.grew_steadily, grew, "{name}: {}", g.detail);
        }
    }

    #[test]
    fn slope_and_projection() {
        let samples = series(21, 0.5, |t| 100.0 * MIB + t * MIB);
        let g = memory_growth(&samples, Some(200 * 1024 * 1024)).unwrap();
        assert!(g.grew_steadily);
        assert!(
            (g.slope_bytes_per_second - MIB).abs() < 1.0,
            "{}",
            g.slope_bytes_per_second
        );
        // At t = 10 s it holds 110 MiB: 90 MiB to go at 1 MiB/s.
        let t = g.seconds_to_ceiling.unwrap();
        assert!((t - 90.0).abs() < 0.01, "{t}");
        assert!(
            g.detail.contains("reaches the 200 MiB ceiling in 90 s"),
            "{}",
            g.detail
        );
        // Already past the ceiling: zero seconds to go.
        let g = memory_growth(&samples, Some(50 * 1024 * 1024)).unwrap();
        assert_eq!(g.seconds_to_ceiling, Some(0.0));
        // No ceiling: no projection.
        assert_eq!(
            memory_growth(&samples, None).unwrap().seconds_to_ceiling,
            None
        );
    }

    #[test]
    fn too_little_to_judge() {
        assert_eq!(memory_growth(&series(5, 1.0, |t| t * MIB), None), None);
        assert_eq!(memory_growth(&series(20, 0.05, |t| t * MIB), None), None);
        // Many samples are thinned, not refused.
        let g = memory_growth(&series(5000, 0.01, |t| 10.0 * MIB + t * MIB), None).unwrap();
        assert!(g.grew_steadily, "{}", g.detail);
    }
}
