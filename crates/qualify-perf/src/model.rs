//! Workload scaling models: the performance-model normal form `c0 + c1 · n^i · log2(n)^j`
//! (Extra-P), fitted by least squares for every candidate exponent pair ([`candidates`]) and
//! chosen by leave-one-out cross-validation on the relative error ([`choose`]). Fewer than
//! [`MIN_POINTS`] distinct points give no model, with the reason. [`Fit::grows_at_most`] is how
//! a term is compared with a `max_exponent` limit: by the slope it has at the largest measured
//! n, so a log factor counts as the 1/ln(n) it adds there.

use serde::{Deserialize, Serialize};

/// Candidate exponents `i` of `n` (quarter and third steps up to 3).
pub const EXPONENTS: [(i32, i32); 19] = [
    (0, 1),
    (1, 4),
    (1, 3),
    (1, 2),
    (2, 3),
    (3, 4),
    (1, 1),
    (5, 4),
    (4, 3),
    (3, 2),
    (5, 3),
    (7, 4),
    (2, 1),
    (9, 4),
    (7, 3),
    (5, 2),
    (8, 3),
    (11, 4),
    (3, 1),
];
/// Candidate exponents `j` of `log2(n)`.
pub const LOG_EXPONENTS: [u32; 3] = [0, 1, 2];
/// The fewest distinct points a model is fitted to.
pub const MIN_POINTS: usize = 5;

/// A fitted term `c0 + c1 · n^i · log2(n)^j`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fit {
    /// E.g. `"n^2"`, `"n*log2(n)"`, `"n^(1/2)"`, `"1"` (constant).
    pub form: String,
    pub exponent: f64,
    pub log_exponent: u32,
    /// The term's growth rate at the largest tested n, `i + j / ln(n_max)`: the slope a
    /// log–log plot shows there (informational; checks use `exponent`).
    pub effective_exponent: f64,
    /// `[c0, c1]`.
    pub coefficients: [f64; 2],
    /// Leave-one-out mean relative error of the chosen term (what chose it).
    pub error: f64,
    /// In-sample mean relative error.
    pub fit_error: f64,
    pub points: usize,
    /// How much the term adds from the smallest to the largest measured n, relative to the
    /// fitted value at the largest: a growing term whose growth is within the noise is the
    /// constant in disguise ([`Fit::flat`]).
    #[serde(skip)]
    pub growth: f64,
}

impl Fit {
    /// A growing term whose growth over the measured range is within `noise`: the data say
    /// nothing about its exponent (`c0 + 0.001·n^3` over a flat series), so it stands for the
    /// constant, never beside it.
    pub fn flat(&self, noise: f64) -> bool {
        (self.exponent > 0.0 || self.log_exponent > 0) && self.growth <= noise.max(0.0)
    }

    pub fn predict(&self, n: f64) -> f64 {
        self.coefficients[0] + self.coefficients[1] * term(n, self.exponent, self.log_exponent)
    }

    /// Whether the term grows at most as fast as `n^limit` where it was measured: its
    /// `effective_exponent` (the log–log slope at the largest measured n, `i + j / ln(n_max)`)
    /// is at most `limit`. Log factors are not judged apart from the power: over a finite range
    /// a log factor is a slope of 1/ln(n) (about 0.1 at n = 10⁴), which is all the data can show
    /// of it — `n^(8/3)·log2(n)^2` over n ≤ 640 climbs as steeply as `n^3` and is judged so,
    /// though asymptotically it is below `n^2.75`. Judged at the largest n, the slope only
    /// falls beyond the measured range, so a term within the limit there stays within it.
    pub fn grows_at_most(&self, limit: f64) -> bool {
        grows_at_most(self.effective_exponent, limit)
    }
}

fn term(n: f64, i: f64, j: u32) -> f64 {
    let base = if i == 0.0 { 1.0 } else { n.powf(i) };
    base * n.log2().powi(j as i32)
}

/// Whether a term with this effective exponent is within `limit` (see [`Fit::grows_at_most`]).
pub fn grows_at_most(effective_exponent: f64, limit: f64) -> bool {
    effective_exponent <= limit + 1e-9
}

/// The form string of `n^(p/q) · log2(n)^j`.
pub fn form(p: i32, q: i32, j: u32) -> String {
    let n_part = match (p, q) {
        (0, _) => String::new(),
        (1, 1) => "n".to_string(),
        (p, 1) => format!("n^{p}"),
        (p, q) => format!("n^({p}/{q})"),
    };
    let log_part = match j {
        0 => String::new(),
        1 => "log2(n)".to_string(),
        j => format!("log2(n)^{j}"),
    };
    match (n_part.is_empty(), log_part.is_empty()) {
        (true, true) => "1".to_string(),
        (false, true) => n_part,
        (true, false) => log_part,
        (false, false) => format!("{n_part}*{log_part}"),
    }
}

/// Least squares `y = c0 + c1 · f` on the relative error (weights `1/y²`, so every point of a
/// range spanning decades counts alike) over the points whose index is not `skip`.
fn least_squares(f: &[f64], y: &[f64], skip: Option<usize>) -> Option<[f64; 2]> {
    let (mut n, mut sf, mut sy, mut sff, mut sfy) = (0.0, 0.0, 0.0, 0.0, 0.0);
    let mut count = 0;
    for k in 0..f.len() {
        if Some(k) == skip {
            continue;
        }
        let w = if y[k] != 0.0 {
            1.0 / (y[k] * y[k])
        } else {
            1.0
        };
        count += 1;
        n += w;
        sf += w * f[k];
        sy += w * y[k];
        sff += w * f[k] * f[k];
        sfy += w * f[k] * y[k];
    }
    let det = n * sff - sf * sf;
    if count < 2 || !det.is_finite() || det.abs() <= 1e-12 * (n * sff).abs() {
        return None;
    }
    let c1 = (n * sfy - sf * sy) / det;
    let c0 = (sy - c1 * sf) / n;
    (c0.is_finite() && c1.is_finite()).then_some([c0, c1])
}

fn rel_err(predicted: f64, actual: f64) -> f64 {
    let scale = actual.abs().max(f64::MIN_POSITIVE);
    (predicted - actual).abs() / scale
}

/// Why no scaling model was fitted to a series (the evidence states it as the group's reason).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum FitError {
    #[error("{points} distinct point(s); a model needs at least {MIN_POINTS}")]
    TooFewPoints { points: usize },
    #[error("the axis has values below 1; n^i·log2(n)^j needs n ≥ 1")]
    BelowOne,
    /// Every term's least-squares system was singular, or every term shrank.
    #[error("no candidate term could be fitted")]
    NoTerm,
}

/// Fit the normal form to `(n, y)` points (one per distinct `n`, e.g. cell medians).
/// Errors say why no model was fitted.
pub fn fit(points: &[(f64, f64)]) -> Result<Fit, FitError> {
    fit_noisy(points, 0.0)
}

/// [`fit`] for measured points whose typical relative uncertainty is `noise` (e.g. the relative
/// half-width of the medians' confidence intervals): terms whose cross-validated error is within
/// `noise` of the best are indistinguishable, and the one with fewer log factors wins.
pub fn fit_noisy(points: &[(f64, f64)], noise: f64) -> Result<Fit, FitError> {
    let all = candidates(points)?;
    choose(&all, noise)
        .map(|k| all[k].clone())
        .ok_or(FitError::NoTerm)
}

/// Every hypothesis of the normal form fitted to the points, with its leave-one-out error: the
/// constant, then `n^i · log2(n)^j` for every `i` in [`EXPONENTS`] and `j` in
/// [`LOG_EXPONENTS`] whose fit grows (non-negative `c1`). Errors say why nothing was fitted.
pub fn candidates(points: &[(f64, f64)]) -> Result<Vec<Fit>, FitError> {
    let mut pts: Vec<(f64, f64)> = points
        .iter()
        .copied()
        .filter(|(x, y)| x.is_finite() && y.is_finite())
        .collect();
    pts.sort_by(|a, b| a.0.total_cmp(&b.0));
    pts.dedup_by(|a, b| a.0 == b.0);
    if pts.len() < MIN_POINTS {
        return Err(FitError::TooFewPoints { points: pts.len() });
    }
    if pts.iter().any(|(x, _)| *x < 1.0) {
        return Err(FitError::BelowOne);
    }
    let x: Vec<f64> = pts.iter().map(|p| p.0).collect();
    let n_max = x.last().copied().unwrap_or(1.0).max(2.0);
    let y: Vec<f64> = pts.iter().map(|p| p.1).collect();
    let mut candidates: Vec<Fit> = Vec::new();
    // The constant model.
    {
        let loo: f64 = (0..y.len())
            .map(|k| {
                let rest: Vec<f64> = (0..y.len()).filter(|&m| m != k).map(|m| y[m]).collect();
                rel_err(rest.iter().sum::<f64>() / rest.len() as f64, y[k])
            })
            .sum::<f64>()
            / y.len() as f64;
        let mean = y.iter().sum::<f64>() / y.len() as f64;
        let fit_error = y.iter().map(|v| rel_err(mean, *v)).sum::<f64>() / y.len() as f64;
        candidates.push(Fit {
            form: "1".to_string(),
            exponent: 0.0,
            log_exponent: 0,
            effective_exponent: 0.0,
            coefficients: [mean, 0.0],
            error: loo,
            fit_error,
            points: y.len(),
            growth: 0.0,
        });
    }
    for (p, q) in EXPONENTS {
        let i = f64::from(p) / f64::from(q);
        for j in LOG_EXPONENTS {
            if p == 0 && j == 0 {
                continue;
            }
            let f: Vec<f64> = x.iter().map(|n| term(*n, i, j)).collect();
            let Some(coefficients) = least_squares(&f, &y, None) else {
                continue;
            };
            // A term with a negative coefficient is not growth: over a flat or noisy series it
            // would read as e.g. `c0 − c1·n^(1/3)`; the constant model stands for that.
            if coefficients[1] < 0.0 {
                continue;
            }
            let mut loo = 0.0;
            let mut ok = true;
            for k in 0..y.len() {
                match least_squares(&f, &y, Some(k)) {
                    Some(c) => loo += rel_err(c[0] + c[1] * f[k], y[k]),
                    None => {
                        ok = false;
                        break;
                    }
                }
            }
            if !ok {
                continue;
            }
            let fit_error = (0..y.len())
                .map(|k| rel_err(coefficients[0] + coefficients[1] * f[k], y[k]))
                .sum::<f64>()
                / y.len() as f64;
            let (f_lo, f_hi) = (f[0], f[f.len() - 1]);
            let top = (coefficients[0] + coefficients[1] * f_hi)
                .abs()
                .max(f64::MIN_POSITIVE);
            candidates.push(Fit {
                form: form(p, q, j),
                exponent: i,
                log_exponent: j,
                effective_exponent: i + f64::from(j) / n_max.ln(),
                coefficients,
                error: loo / y.len() as f64,
                fit_error,
                points: y.len(),
                growth: coefficients[1] * (f_hi - f_lo) / top,
            });
        }
    }
    if candidates.is_empty() {
        return Err(FitError::NoTerm);
    }
    Ok(candidates)
}

/// Candidates whose cross-validated error is within this factor of the best (or within the
/// measurement noise of it, see [`fit_noisy`]) are indistinguishable; among them the one with fewer log factors wins (Occam: over a finite range
/// `n^(3/4)·log2(n)^2` mimics `n`).
pub const TIE_FACTOR: f64 = 1.5;

/// Whether a candidate takes part in the choice: not [`Fit::flat`] (unless nothing but flat
/// terms and no constant were fitted).
pub fn eligible(candidates: &[Fit], noise: f64) -> impl Fn(&Fit) -> bool + use<> {
    let has_steady = candidates.iter().any(|c| !c.flat(noise));
    move |c: &Fit| !has_steady || !c.flat(noise)
}

/// The cross-validated error below which an eligible candidate is indistinguishable from the
/// best one, given the points' relative uncertainty `noise`.
pub fn tie_margin(candidates: &[Fit], noise: f64) -> Option<f64> {
    let ok = eligible(candidates, noise);
    let best = candidates
        .iter()
        .filter(|c| ok(c))
        .map(|c| c.error)
        .min_by(f64::total_cmp)?;
    Some((best * TIE_FACTOR).max(best + noise.max(0.0)) + 1e-12)
}

/// The index of the chosen candidate: among the eligible ones within [`tie_margin`] of the
/// best, the one with the fewest log factors, then the lowest error.
pub fn choose(candidates: &[Fit], noise: f64) -> Option<usize> {
    let margin = tie_margin(candidates, noise)?;
    let ok = eligible(candidates, noise);
    candidates
        .iter()
        .enumerate()
        .filter(|(_, c)| ok(c) && c.error <= margin)
        .min_by(|(_, a), (_, b)| {
            a.log_exponent
                .cmp(&b.log_exponent)
                .then(a.error.total_cmp(&b.error))
        })
        .map(|(k, _)| k)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::Rng;

    fn sizes() -> Vec<f64> {
        (10..=16).map(|k| f64::from(1u32 << k)).collect()
    }

    fn curve(i: f64, j: u32, noise: f64, seed: u64) -> Vec<(f64, f64)> {
        let mut rng = Rng::new(seed);
        sizes()
            .into_iter()
            .map(|n| {
                let clean = 0.002 + 0.3 * term(n, i, j) / term(65536.0, i, j);
                let e = (rng.unit() * 2.0 - 1.0) * noise;
                (n, clean * (1.0 + e))
            })
            .collect()
    }

    #[test]
    fn forms_read_naturally() {
        assert_eq!(form(2, 1, 0), "n^2");
        assert_eq!(form(1, 1, 1), "n*log2(n)");
        assert_eq!(form(1, 2, 0), "n^(1/2)");
        assert_eq!(form(0, 1, 2), "log2(n)^2");
        assert_eq!(form(0, 1, 0), "1");
    }

    #[test]
    fn clean_data_recovers_the_exact_term() {
        for (p, q) in EXPONENTS {
            for j in LOG_EXPONENTS {
                if p == 0 && j == 0 {
                    continue;
                }
                let i = f64::from(p) / f64::from(q);
                let fit = fit(&curve(i, j, 0.0, 1)).unwrap_or_else(|e| panic!("{e}"));
                assert_eq!(
                    (fit.exponent, fit.log_exponent),
                    (i, j),
                    "true {}, got {}",
                    form(p, q, j),
                    fit.form
                );
                assert!(fit.error < 1e-6, "{fit:?}");
                let c1 = fit.coefficients[1];
                assert!(c1 > 0.0);
            }
        }
    }

    #[test]
    fn noisy_data_recovers_the_exponent_within_a_fifth() {
        for (i, j) in [(1.0, 0), (1.0, 1), (2.0, 0), (3.0, 0), (0.5, 0), (1.5, 0)] {
            for seed in 1..=5 {
                let fit = fit(&curve(i, j, 0.05, seed)).unwrap_or_else(|e| panic!("{e}"));
                assert!(
                    (fit.exponent - i).abs() <= 0.2 + 1e-9,
                    "true n^{i}·log^{j}, seed {seed}: got {}",
                    fit.form
                );
            }
        }
    }

    #[test]
    fn a_flat_series_that_drifts_down_is_constant_not_a_negative_power() {
        let pts = [
            (2000.0, 620_000.0),
            (2828.0, 610_000.0),
            (4000.0, 618_000.0),
            (5657.0, 617_000.0),
            (8000.0, 525_000.0),
            (11314.0, 526_000.0),
        ];
        let fit = fit(&pts).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(fit.form, "1", "{fit:?}");
        assert_eq!(fit.exponent, 0.0);
    }

    #[test]
    fn differences_within_the_noise_prefer_fewer_log_factors() {
        for seed in 1..=10 {
            let pts = curve(3.0, 0, 0.01, seed);
            let noisy = fit_noisy(&pts, 0.01).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(noisy.form, "n^3", "seed {seed}: {noisy:?}");
        }
    }

    #[test]
    fn a_flat_series_has_no_growing_term_beside_the_constant() {
        // Peak memory: the same within 0.2% everywhere.
        let pts: Vec<(f64, f64)> = sizes()
            .into_iter()
            .enumerate()
            .map(|(k, n)| (n, 1_500_000.0 * (1.0 + 0.002 * (k % 2) as f64)))
            .collect();
        let all = candidates(&pts).unwrap_or_default();
        let k = choose(&all, 0.01).unwrap_or(usize::MAX);
        assert_eq!(all[k].form, "1");
        let margin = tie_margin(&all, 0.01).unwrap_or(0.0);
        let ok = eligible(&all, 0.01);
        let tied: Vec<&str> = all
            .iter()
            .filter(|c| ok(c) && c.error <= margin)
            .map(|c| c.form.as_str())
            .collect();
        assert_eq!(tied, ["1"]);
    }

    #[test]
    fn constant_data_gives_the_constant_model() {
        let pts: Vec<(f64, f64)> = sizes().into_iter().map(|n| (n, 3.0)).collect();
        let fit = fit(&pts).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(fit.form, "1");
        assert_eq!(fit.coefficients, [3.0, 0.0]);
    }

    #[test]
    fn too_few_points_give_a_reason() {
        let pts = [(1.0, 1.0), (2.0, 2.0), (4.0, 4.0), (4.0, 4.1)];
        let e = fit(&pts).err().map(|e| e.to_string()).unwrap_or_default();
        assert_eq!(e, "3 distinct point(s); a model needs at least 5");
        let below = fit(&[(0.5, 1.0), (1.0, 1.0), (2.0, 2.0), (3.0, 3.0), (4.0, 4.0)]);
        assert_eq!(
            below.err().map(|e| e.to_string()).unwrap_or_default(),
            "the axis has values below 1; n^i·log2(n)^j needs n ≥ 1"
        );
        assert_eq!(
            FitError::NoTerm.to_string(),
            "no candidate term could be fitted"
        );
    }

    #[test]
    fn log_factors_count_as_the_slope_they_add_at_the_largest_n() {
        // Over n up to 2^16 a log factor adds 1/ln(65536) ≈ 0.09 to the slope.
        let all = candidates(&curve(2.0, 0, 0.0, 1)).unwrap_or_default();
        let find = |form: &str| all.iter().find(|c| c.form == form);
        let (Some(square), Some(square_log), Some(steep_log)) =
            (find("n^2"), find("n^2*log2(n)"), find("n^(7/4)*log2(n)^2"))
        else {
            panic!("missing candidates");
        };
        assert!(square.grows_at_most(2.0));
        assert!(!square_log.grows_at_most(2.0));
        assert!(square_log.grows_at_most(2.1));
        // 7/4 + 2/ln(65536) ≈ 1.93: beyond 1.9 though its power is below it.
        assert!(!steep_log.grows_at_most(1.9) && steep_log.grows_at_most(1.95));
        assert!(!square.grows_at_most(1.75));
    }

    #[test]
    fn every_candidate_is_returned_with_its_error() {
        let all = candidates(&curve(2.0, 0, 0.0, 1)).unwrap_or_default();
        // The constant, then 19 exponents × 3 log powers less those that do not grow.
        assert!(all.len() > 40, "{}", all.len());
        assert_eq!(all[0].form, "1");
        let k = choose(&all, 0.0).unwrap_or(0);
        assert_eq!(all[k].form, "n^2");
    }
}
