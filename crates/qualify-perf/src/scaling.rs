//! Concurrency analysis: speedup, parallel efficiency and the Karp–Flatt serial fraction per
//! point, and fits of Amdahl's law `S(p) = 1 / (f + (1 − f)/p)` and the Universal Scalability
//! Law `S(p) = p / (1 + σ(p − 1) + κ p (p − 1))`, with the concurrency where USL throughput
//! peaks, `sqrt((1 − σ)/κ)`.

use serde::{Deserialize, Serialize};

/// Whether a smaller or a larger value of a metric is better (the shared vocabulary's).
pub use qualify_model::Better;

/// One concurrency point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Point {
    pub p: f64,
    pub value: f64,
    pub speedup: f64,
    pub efficiency: f64,
    /// `None` at the base point (p equal to the smallest concurrency).
    pub karp_flatt: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Amdahl {
    pub serial_fraction: f64,
    /// Mean relative error of the fitted speedups.
    pub error: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Usl {
    pub sigma: f64,
    pub kappa: f64,
    /// Where throughput peaks; `None` when κ = 0 (no retrograde region).
    pub peak_concurrency: Option<f64>,
    pub error: f64,
}

impl Amdahl {
    pub fn speedup(&self, p: f64) -> f64 {
        1.0 / (self.serial_fraction + (1.0 - self.serial_fraction) / p)
    }
}

impl Usl {
    pub fn speedup(&self, p: f64) -> f64 {
        p / (1.0 + self.sigma * (p - 1.0) + self.kappa * p * (p - 1.0))
    }
}

/// Speedup of `value` at `p` relative to `(p0, v0)`, scaled so the base point has speedup `p0`.
pub fn speedup(p0: f64, v0: f64, value: f64, better: Better) -> f64 {
    match better {
        Better::Lower => p0 * v0 / value,
        Better::Higher => p0 * value / v0,
    }
}

/// The value a speedup `s` corresponds to (inverse of [`speedup`]).
pub fn value_at(p0: f64, v0: f64, s: f64, better: Better) -> f64 {
    match better {
        Better::Lower => p0 * v0 / s,
        Better::Higher => v0 * s / p0,
    }
}

/// Karp–Flatt experimentally determined serial fraction `(1/S − 1/p) / (1 − 1/p)`.
pub fn karp_flatt(s: f64, p: f64) -> Option<f64> {
    (p > 1.0 && s > 0.0).then(|| (1.0 / s - 1.0 / p) / (1.0 - 1.0 / p))
}

/// Per-point analysis of `(p, value)` pairs (one per distinct `p`, positive values).
pub fn points(data: &[(f64, f64)], better: Better) -> Vec<Point> {
    let mut data: Vec<(f64, f64)> = data
        .iter()
        .copied()
        .filter(|(p, v)| *p > 0.0 && *v > 0.0 && v.is_finite())
        .collect();
    data.sort_by(|a, b| a.0.total_cmp(&b.0));
    data.dedup_by(|a, b| a.0 == b.0);
    let Some(&(p0, v0)) = data.first() else {
        return Vec::new();
    };
    data.iter()
        .map(|&(p, value)| {
            let s = speedup(p0, v0, value, better);
            Point {
                p,
                value,
                speedup: s,
                efficiency: s / p,
                karp_flatt: if p > p0 { karp_flatt(s, p) } else { None },
            }
        })
        .collect()
}

fn mean_rel_err(points: &[Point], model: impl Fn(f64) -> f64) -> f64 {
    points
        .iter()
        .map(|pt| (model(pt.p) - pt.speedup).abs() / pt.speedup)
        .sum::<f64>()
        / points.len().max(1) as f64
}

/// Amdahl fit (serial fraction in [0, 1], least squares on relative error); needs 2+ points.
pub fn amdahl(points: &[Point]) -> Option<Amdahl> {
    if points.len() < 2 {
        return None;
    }
    let cost = |f: f64| {
        points
            .iter()
            .map(|pt| {
                let m = 1.0 / (f + (1.0 - f) / pt.p);
                ((m - pt.speedup) / pt.speedup).powi(2)
            })
            .sum::<f64>()
    };
    // Grid, then golden-section refinement around the best grid point.
    let steps = 1000;
    let mut best = 0;
    for k in 1..=steps {
        if cost(k as f64 / steps as f64) < cost(best as f64 / steps as f64) {
            best = k;
        }
    }
    let (mut a, mut b) = (
        (best as f64 - 1.0).max(0.0) / steps as f64,
        (best as f64 + 1.0).min(steps as f64) / steps as f64,
    );
    let g = 0.618_033_988_749_895;
    for _ in 0..60 {
        let c = b - g * (b - a);
        let d = a + g * (b - a);
        if cost(c) < cost(d) {
            b = d;
        } else {
            a = c;
        }
    }
    let f = (a + b) / 2.0;
    let fit = Amdahl {
        serial_fraction: f,
        error: 0.0,
    };
    Some(Amdahl {
        error: mean_rel_err(points, |p| fit.speedup(p)),
        ..fit
    })
}

/// USL fit by linear least squares on `p/S − 1 = σ(p − 1) + κ p(p − 1)`, with σ, κ ≥ 0 and
/// σ ≤ 1; needs 3+ points.
pub fn usl(points: &[Point]) -> Option<Usl> {
    if points.len() < 3 {
        return None;
    }
    let rows: Vec<(f64, f64, f64)> = points
        .iter()
        .map(|pt| (pt.p - 1.0, pt.p * (pt.p - 1.0), pt.p / pt.speedup - 1.0))
        .collect();
    let (mut s11, mut s12, mut s22, mut s1y, mut s2y) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for (x1, x2, y) in &rows {
        s11 += x1 * x1;
        s12 += x1 * x2;
        s22 += x2 * x2;
        s1y += x1 * y;
        s2y += x2 * y;
    }
    let det = s11 * s22 - s12 * s12;
    let one = |sxx: f64, sxy: f64| if sxx > 0.0 { (sxy / sxx).max(0.0) } else { 0.0 };
    let (mut sigma, mut kappa) = if det.abs() > 1e-12 * (s11 * s22).abs().max(1e-300) {
        ((s22 * s1y - s12 * s2y) / det, (s11 * s2y - s12 * s1y) / det)
    } else {
        (one(s11, s1y), 0.0)
    };
    if sigma < 0.0 {
        sigma = 0.0;
        kappa = one(s22, s2y);
    }
    if kappa < 0.0 {
        kappa = 0.0;
        sigma = one(s11, s1y);
    }
    sigma = sigma.min(1.0);
    let fit = Usl {
        sigma,
        kappa,
        peak_concurrency: (kappa > 0.0).then(|| ((1.0 - sigma) / kappa).sqrt()),
        error: 0.0,
    };
    Some(Usl {
        error: mean_rel_err(points, |p| fit.speedup(p)),
        ..fit
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const PS: [f64; 6] = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0];

    #[test]
    fn speedup_efficiency_and_karp_flatt() {
        // 10 s serial work with a 10% serial part.
        let data: Vec<(f64, f64)> = PS.iter().map(|&p| (p, 1.0 + 9.0 / p)).collect();
        let pts = points(&data, Better::Lower);
        assert_eq!(pts[0].speedup, 1.0);
        assert_eq!(pts[0].karp_flatt, None);
        for pt in &pts[1..] {
            let e = pt.karp_flatt.unwrap_or(0.0);
            assert!((e - 0.1).abs() < 1e-9, "{pt:?}");
            assert!((pt.efficiency - pt.speedup / pt.p).abs() < 1e-12);
        }
        let a = amdahl(&pts).unwrap_or_else(|| panic!("no fit"));
        assert!((a.serial_fraction - 0.1).abs() < 1e-6, "{a:?}");
        assert!(a.error < 1e-6);
    }

    #[test]
    fn throughput_metrics_scale_the_other_way() {
        let data = [(1.0, 100.0), (2.0, 200.0), (4.0, 400.0)];
        let pts = points(&data, Better::Higher);
        assert!(pts.iter().all(|p| (p.efficiency - 1.0).abs() < 1e-12));
    }

    #[test]
    fn usl_recovers_sigma_kappa_and_the_peak() {
        let truth = Usl {
            sigma: 0.05,
            kappa: 0.002,
            peak_concurrency: None,
            error: 0.0,
        };
        let data: Vec<(f64, f64)> = PS.iter().map(|&p| (p, 10.0 / truth.speedup(p))).collect();
        let fit = usl(&points(&data, Better::Lower)).unwrap_or_else(|| panic!("no fit"));
        assert!((fit.sigma - 0.05).abs() < 1e-9, "{fit:?}");
        assert!((fit.kappa - 0.002).abs() < 1e-9, "{fit:?}");
        let peak = fit.peak_concurrency.unwrap_or(0.0);
        assert!((peak - (0.95f64 / 0.002).sqrt()).abs() < 1e-6);
    }

    #[test]
    fn usl_with_noise_stays_close_and_non_negative() {
        let noise = [1.03, 0.97, 1.02, 0.98, 1.04, 0.96];
        let data: Vec<(f64, f64)> = PS
            .iter()
            .zip(noise)
            .map(|(&p, e)| (p, e * 10.0 * (1.0 + 0.1 * (p - 1.0)) / p))
            .collect();
        let fit = usl(&points(&data, Better::Lower)).unwrap_or_else(|| panic!("no fit"));
        assert!((fit.sigma - 0.1).abs() < 0.03, "{fit:?}");
        assert!(fit.kappa >= 0.0 && fit.kappa < 0.002, "{fit:?}");
    }

    #[test]
    fn perfect_scaling_has_no_peak() {
        let data: Vec<(f64, f64)> = PS.iter().map(|&p| (p, 8.0 / p)).collect();
        let pts = points(&data, Better::Lower);
        let fit = usl(&pts).unwrap_or_else(|| panic!("no fit"));
        assert_eq!(fit.peak_concurrency, None);
        assert!(fit.sigma.abs() < 1e-9 && fit.kappa.abs() < 1e-9);
        assert_eq!(amdahl(&pts).map(|a| a.serial_fraction < 1e-6), Some(true));
        assert!(usl(&pts[..2]).is_none());
    }
}
