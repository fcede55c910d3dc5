//! The location estimator of a metric: which single number stands for a cell's repeated runs.
//! Declared per metric in the spec (`estimator = "min" | "median" | "mean"`), applied by the
//! analysis, named next to every statistic in the receipt.

use serde::{Deserialize, Serialize};

/// How a cell's runs are summarized into one value. Serialized `median` / `min` / `mean`.
///
/// - `min`: machine noise only ever adds time to deterministic CPU-bound work, so the fastest
///   run is the most robust location (BenchmarkTools.jl); it misleads where variance is part of
///   the workload (the default for the built-in `cpu`).
/// - `median`: robust to outliers on both sides, right where the spread is the workload's own
///   (the default for `wall`, `peak_memory` and declared metrics).
/// - `mean`: the expectation, when every run's cost counts (e.g. a throughput that averages).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Estimator {
    #[default]
    Median,
    Min,
    Mean,
}

impl Estimator {
    pub const ALL: [Estimator; 3] = [Estimator::Median, Estimator::Min, Estimator::Mean];

    pub fn as_str(self) -> &'static str {
        match self {
            Estimator::Median => "median",
            Estimator::Min => "min",
            Estimator::Mean => "mean",
        }
    }

    /// The estimator named `s`, if any.
    pub fn parse(s: &str) -> Option<Estimator> {
        Estimator::ALL.into_iter().find(|e| e.as_str() == s)
    }

    /// The default for a built-in metric (`cpu`: `min`; `wall`, `peak_memory`: `median`) and
    /// for every declared metric (`median`).
    pub fn default_for(metric: &str) -> Estimator {
        match metric {
            "cpu" => Estimator::Min,
            _ => Estimator::Median,
        }
    }
}

impl std::fmt::Display for Estimator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_defaults_follow_the_metric() {
        for e in Estimator::ALL {
            assert_eq!(Estimator::parse(e.as_str()), Some(e));
            assert_eq!(
                serde_json::to_string(&e).unwrap_or_default(),
                format!("\"{e}\"")
            );
        }
        assert_eq!(Estimator::parse("mode"), None);
        assert_eq!(Estimator::default_for("cpu"), Estimator::Min);
        assert_eq!(Estimator::default_for("wall"), Estimator::Median);
        assert_eq!(Estimator::default_for("gflops"), Estimator::Median);
    }
}
