//! The performance tables every renderer draws — the checks with their verdicts and the
//! fitted models with the terms the data cannot rule out — built once as rows of text from the
//! view's performance rows; `html/performance.rs`, `markdown.rs` and the terminal summary only
//! format them (escape, mark, align).

use crate::text::{self, num};
use crate::view::Performance;

/// How a check's result reads: the reports colour or mark it by this.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standing {
    /// `held` or `passed`.
    Held,
    /// `VIOLATED` or `FAILED`.
    Failed,
    /// `inconclusive`.
    Inconclusive,
    /// The receipt records no decision.
    Undecided,
}

/// One row of the checks table: every cell as text, `—` where the receipt gives nothing.
pub struct CheckLine {
    /// `held`, `VIOLATED`, `inconclusive`, `passed`, `FAILED` or `not decided`.
    pub result: &'static str,
    pub standing: Standing,
    pub kind: String,
    pub axis: String,
    /// The metric, with the estimator its values were located by: `wall (median)`.
    pub metric: String,
    pub limit: String,
    pub observed: String,
    pub interval: String,
    pub detail: String,
}

/// The checks table's columns after the result.
pub const CHECK_COLUMNS: [&str; 7] = [
    "kind",
    "axis",
    "metric",
    "limit",
    "observed",
    "95% interval",
    "detail",
];

/// The checks as table rows, in the receipt's order.
pub fn checks(p: &Performance) -> Vec<CheckLine> {
    p.checks
        .iter()
        .map(|c| {
            let result = c.result();
            CheckLine {
                result,
                standing: match result {
                    "held" | "passed" => Standing::Held,
                    "VIOLATED" | "FAILED" => Standing::Failed,
                    "inconclusive" => Standing::Inconclusive,
                    _ => Standing::Undecided,
                },
                kind: c.kind.clone(),
                axis: c.axis.clone(),
                metric: with_estimator(&c.metric, &c.estimator),
                limit: c.limit.clone(),
                observed: c.observed.clone(),
                interval: c.interval.clone(),
                detail: c.detail.clone(),
            }
        })
        .collect()
}

impl CheckLine {
    /// The cells after the result, in [`CHECK_COLUMNS`]' order.
    pub fn cells(&self) -> [&str; 7] {
        [
            &self.kind,
            &self.axis,
            &self.metric,
            &self.limit,
            &self.observed,
            &self.interval,
            &self.detail,
        ]
    }
}

/// One row of the models table.
pub struct ModelLine {
    /// The metric, with the estimator of the points it was fitted to: `wall (median)`.
    pub metric: String,
    pub axis: String,
    /// The other axes' values, `—` when none.
    pub fixed: String,
    pub form: String,
    /// `1.02 [0.97, 1.08]`, or the exponent alone without an interval.
    pub exponent: String,
    pub log_exponent: String,
    /// The cross-validation error, `—` when not recorded.
    pub error: String,
    /// Points fitted, `—` when not recorded.
    pub points: String,
    /// The other plausible terms (the chosen one left out).
    pub others: Vec<String>,
}

/// Plausible terms a row names before "and N more".
const SHOWN: usize = 10;

impl ModelLine {
    /// `n^1, n^1·log2(n) and 3 more`, or `None` when no other term is plausible.
    pub fn also_plausible(&self) -> Option<String> {
        match self.others.len() {
            0 => None,
            1..=SHOWN => Some(self.others.join(", ")),
            k => Some(format!(
                "{} and {} more",
                self.others[..SHOWN].join(", "),
                k - SHOWN
            )),
        }
    }
}

/// The fitted models as table rows, in the receipt's order.
pub fn models(p: &Performance) -> Vec<ModelLine> {
    p.models
        .iter()
        .map(|m| {
            let fixed = text::fixed(&m.fixed);
            ModelLine {
                metric: with_estimator(&m.metric, &m.estimator),
                axis: m.axis.clone(),
                fixed: if fixed.is_empty() {
                    "—".into()
                } else {
                    fixed
                },
                form: m.form.clone(),
                exponent: match m.exponent_ci95 {
                    Some((a, b)) => format!("{} [{}, {}]", num(m.exponent), num(a), num(b)),
                    None => num(m.exponent),
                },
                log_exponent: num(m.log_exponent),
                error: m.error.map(num).unwrap_or_else(|| "—".into()),
                points: m
                    .points
                    .map(|p| p.to_string())
                    .unwrap_or_else(|| "—".into()),
                others: m
                    .plausible
                    .iter()
                    .filter(|f| **f != m.form)
                    .cloned()
                    .collect(),
            }
        })
        .collect()
}

/// `wall (median)`, or the metric alone when the estimator is not named.
fn with_estimator(metric: &str, estimator: &str) -> String {
    if estimator.is_empty() {
        metric.to_string()
    } else {
        format!("{metric} ({estimator})")
    }
}
