//! `predicate.performance` as typed rows: the rounds' schedule, per-cell statistics (with their
//! estimator, precision and noise), the run's noise per metric and round, fitted models with
//! their plausible terms, concurrency scaling, checks with their verdicts, predictions, declared
//! metrics and the analysis's errors. Parts the receipt lacks or mistypes are left out or empty
//! (receipts from before estimators read as located by their median).

use serde_json::{Map, Value};

use super::json::{arr, cell, f, first_f, nums, obj, pair, s};

/// Per-cell statistics of one metric (`predicate.performance.stats[]`).
pub struct Stat {
    pub params: Map<String, Value>,
    pub metric: String,
    pub n: u64,
    pub censored: u64,
    /// The location estimator (`median` when the receipt names none).
    pub estimator: String,
    /// The estimate (the median when the receipt gives none).
    pub estimate: Option<f64>,
    /// Relative 95% half-width of the estimate.
    pub precision: Option<f64>,
    pub precision_reached: Option<bool>,
    /// Robust relative spread (1.4826·MAD/median).
    pub spread: Option<f64>,
    pub multimodal: bool,
    /// Why the cell's runs are noisy (empty: they are not).
    pub noise: Vec<String>,
    /// The round of each value (empty when the receipt has none).
    pub rounds: Vec<u64>,
    pub median: Option<f64>,
    pub mad: Option<f64>,
    pub min: Option<f64>,
    pub max: Option<f64>,
    pub ci95: Option<(f64, f64)>,
    /// Flagged runs as (run index when the receipt gives indices, value).
    pub outliers: Vec<(Option<usize>, f64)>,
    pub values: Vec<f64>,
}

/// A fitted workload model `c0 + c1 · x^exponent · log2(x)^log_exponent`.
pub struct Model {
    pub axis: String,
    pub metric: String,
    pub fixed: Map<String, Value>,
    pub form: String,
    pub exponent: f64,
    pub log_exponent: f64,
    pub coefficients: Vec<f64>,
    pub error: Option<f64>,
    pub points: Option<u64>,
    /// 95% interval of the exponent, when the receipt gives one.
    pub exponent_ci95: Option<(f64, f64)>,
    /// How the interval was computed, when the receipt says.
    pub interval_method: String,
    /// The estimator of the points the model was fitted to (empty when not named).
    pub estimator: String,
    /// The hypotheses the data cannot rule out, the chosen one first (forms).
    pub plausible: Vec<String>,
}

impl Model {
    /// The model's value at `x` (`None` where it is undefined, e.g. log2 of x ≤ 0).
    pub fn eval(&self, x: f64) -> Option<f64> {
        let c0 = self.coefficients.first().copied().unwrap_or(0.0);
        let Some(&c1) = self.coefficients.get(1) else {
            return Some(c0);
        };
        let mut term = 1.0;
        if self.exponent != 0.0 {
            if x <= 0.0 {
                return None;
            }
            term *= x.powf(self.exponent);
        }
        if self.log_exponent != 0.0 {
            if x <= 1.0 {
                return None;
            }
            term *= x.log2().powf(self.log_exponent);
        }
        let y = c0 + c1 * term;
        y.is_finite().then_some(y)
    }
}

/// One point of a concurrency scaling series.
pub struct ScalePoint {
    pub p: f64,
    pub value: Option<f64>,
    pub speedup: Option<f64>,
    pub efficiency: Option<f64>,
    pub karp_flatt: Option<f64>,
}

/// A concurrency axis's scaling analysis (`predicate.performance.scaling[]`).
pub struct Scaling {
    pub axis: String,
    pub metric: String,
    pub fixed: Map<String, Value>,
    pub points: Vec<ScalePoint>,
    /// Amdahl serial fraction, when the receipt gives one under a name we know.
    pub amdahl_serial: Option<f64>,
    pub amdahl: Option<Value>,
    pub usl_sigma: Option<f64>,
    pub usl_kappa: Option<f64>,
    pub usl_peak: Option<f64>,
}

impl Scaling {
    /// USL speedup `p / (1 + σ(p−1) + κ p (p−1))`.
    pub fn usl(&self, p: f64) -> Option<f64> {
        let (s, k) = (self.usl_sigma?, self.usl_kappa.unwrap_or(0.0));
        let d = 1.0 + s * (p - 1.0) + k * p * (p - 1.0);
        (d > 0.0).then(|| p / d)
    }

    /// Amdahl speedup `1 / (f + (1−f)/p)`.
    pub fn amdahl_speedup(&self, p: f64) -> Option<f64> {
        let f = self.amdahl_serial?;
        let d = f + (1.0 - f) / p;
        (d > 0.0).then(|| 1.0 / d)
    }
}

/// A model prediction (never evidence).
pub struct Prediction {
    pub axis: String,
    pub at: Option<f64>,
    pub metric: String,
    /// The other axes' values the model was fitted at.
    pub fixed: Map<String, Value>,
    pub value: Option<f64>,
    pub model: String,
    pub note: String,
}

/// A declared metric.
pub struct Metric {
    pub name: String,
    pub unit: String,
    pub better: String,
    pub estimator: String,
}

/// How the runs were scheduled in rounds (`predicate.performance.rounds`).
pub struct Rounds {
    pub seed: String,
    pub rounds: Option<u64>,
    pub precision: Option<f64>,
    pub stopped: String,
    pub schedule: String,
}

/// One round's runs relative to their cells' estimates.
pub struct RoundNoise {
    pub round: f64,
    pub cells: Option<u64>,
    pub low: f64,
    pub median: f64,
    pub high: f64,
}

/// The run's noise for one metric (`predicate.performance.noise[]`).
pub struct MetricNoise {
    pub metric: String,
    pub spread: Option<f64>,
    pub spread_estimator: String,
    pub rounds: Vec<RoundNoise>,
    pub noisy_cells: u64,
}

/// `predicate.performance`.
pub struct Performance<'a> {
    /// `5`, `auto`, … as the receipt gives it (empty when absent).
    pub repeat: String,
    pub warmup: Option<u64>,
    pub rounds: Option<Rounds>,
    pub noise: Vec<MetricNoise>,
    pub metrics: Vec<Metric>,
    pub stats: Vec<Stat>,
    pub models: Vec<Model>,
    pub scaling: Vec<Scaling>,
    pub checks: Vec<CheckRow>,
    pub predictions: Vec<Prediction>,
    /// Problems the performance analysis reported (metrics that failed to parse, …).
    pub errors: Vec<String>,
    /// The same problems as (the cell's parameters, the message).
    pub cell_errors: Vec<(Map<String, Value>, String)>,
    /// Groups no model was fitted to, as (axis, reason).
    pub unfitted: Vec<(String, String)>,
    /// The comparison with `--baseline`: (shared cell/metric pairs, significant changes).
    pub baseline: Option<(usize, usize)>,
    raw_checks: Vec<&'a Value>,
}

/// One performance check as both reports' tables show it: every field as text, `—` when the
/// receipt does not give it.
pub struct CheckRow {
    /// `None`: the receipt records no decision.
    pub passed: Option<bool>,
    /// `held`, `violated`, `inconclusive` (empty when the receipt gives none).
    pub verdict: String,
    /// The estimator of the values the check judged (empty when not named).
    pub estimator: String,
    /// The plausible terms a `max_exponent` verdict was taken over.
    pub plausible: Vec<String>,
    pub kind: String,
    pub axis: String,
    pub metric: String,
    pub limit: String,
    pub observed: String,
    pub interval: String,
    pub detail: String,
}

impl CheckRow {
    /// The result as both reports word it: the verdict when the receipt gives one, else
    /// passed/FAILED from `passed`.
    pub fn result(&self) -> &'static str {
        match (self.verdict.as_str(), self.passed) {
            ("held", _) => "held",
            ("violated", _) => "VIOLATED",
            ("inconclusive", _) => "inconclusive",
            (_, Some(true)) => "passed",
            (_, Some(false)) => "FAILED",
            (_, None) => "not decided",
        }
    }
}

impl Performance<'_> {
    /// The cells whose runs are noisy, as `(metric, cell, reasons)`.
    pub fn noisy(&self) -> Vec<&Stat> {
        self.stats.iter().filter(|s| !s.noise.is_empty()).collect()
    }

    /// The unit of `metric`, if declared (`s` for the built-in `wall` and `cpu`).
    pub fn unit(&self, metric: &str) -> String {
        self.metrics
            .iter()
            .find(|m| m.name == metric)
            .map(|m| m.unit.clone())
            .filter(|u| !u.is_empty())
            .unwrap_or_else(|| match metric {
                "wall" | "cpu" => "s".into(),
                "peak_memory" => "B".into(),
                _ => String::new(),
            })
    }

    /// The limit of the first efficiency check that applies to `axis` (one without an axis
    /// applies to every axis) and gives a numeric limit.
    pub fn efficiency_limit(&self, axis: &str) -> Option<f64> {
        self.raw_checks.iter().find_map(|c| {
            let kind = c.get("kind").and_then(Value::as_str).unwrap_or("");
            let on = c.get("axis").and_then(Value::as_str).unwrap_or("");
            (kind.contains("efficiency") && (on.is_empty() || on == axis))
                .then(|| c.get("limit").and_then(Value::as_f64))
                .flatten()
        })
    }
}

/// Outliers are either indices into `values` (non-negative integers below its length, as
/// `qualify run` writes them) or the flagged values themselves.
fn outliers(raw: &[Value], values: &[f64]) -> Vec<(Option<usize>, f64)> {
    let as_index = |v: &Value| v.as_u64().map(|i| i as usize).filter(|i| *i < values.len());
    if !raw.is_empty() && raw.iter().all(|v| as_index(v).is_some()) {
        raw.iter()
            .filter_map(as_index)
            .map(|i| (Some(i), values[i]))
            .collect()
    } else {
        raw.iter()
            .filter_map(|v| f(Some(v)))
            .map(|x| (None, x))
            .collect()
    }
}

/// `p` (an object) as typed rows.
pub(super) fn parse(p: &Value) -> Performance<'_> {
    let g = |k: &str| p.get(k);
    Performance {
        repeat: s(g("repeat")),
        warmup: g("warmup").and_then(Value::as_u64),
        rounds: g("rounds").filter(|r| r.is_object()).map(rounds),
        noise: arr(g("noise")).iter().map(metric_noise).collect(),
        metrics: arr(g("metrics")).iter().map(metric).collect(),
        stats: arr(g("stats")).iter().map(stat).collect(),
        models: arr(g("models")).iter().map(model).collect(),
        scaling: arr(g("scaling")).iter().map(scaling).collect(),
        checks: arr(g("checks")).iter().map(check).collect(),
        predictions: arr(g("predictions")).iter().map(prediction).collect(),
        errors: arr(g("errors")).iter().map(|e| s(Some(e))).collect(),
        cell_errors: arr(g("errors"))
            .iter()
            .filter(|e| e.is_object())
            .map(|e| (obj(e.get("params")), s(e.get("message"))))
            .collect(),
        unfitted: arr(g("unfitted"))
            .iter()
            .map(|u| (s(u.get("axis")), s(u.get("reason"))))
            .collect(),
        baseline: g("baseline").filter(|b| b.is_object()).map(|b| {
            let changes = arr(b.get("changes"));
            let significant = changes
                .iter()
                .filter(|c| c.get("significant").and_then(Value::as_bool) == Some(true))
                .count();
            (changes.len(), significant)
        }),
        raw_checks: arr(g("checks")).iter().collect(),
    }
}

fn metric(m: &Value) -> Metric {
    Metric {
        name: s(m.get("name")),
        unit: s(m.get("unit")),
        better: s(m.get("better")),
        estimator: s(m.get("estimator")),
    }
}

fn rounds(r: &Value) -> Rounds {
    Rounds {
        // A seed is a 64-bit integer: written exactly, never in the compact number form.
        seed: match r.get("seed").and_then(Value::as_u64) {
            Some(seed) => seed.to_string(),
            None => s(r.get("seed")),
        },
        rounds: r.get("rounds").and_then(Value::as_u64),
        precision: f(r.get("precision")),
        stopped: s(r.get("stopped")),
        schedule: s(r.get("schedule")),
    }
}

fn metric_noise(n: &Value) -> MetricNoise {
    MetricNoise {
        metric: s(n.get("metric")),
        spread: f(n.get("spread")),
        spread_estimator: s(n.get("spread_estimator")),
        rounds: arr(n.get("rounds"))
            .iter()
            .filter_map(|r| {
                Some(RoundNoise {
                    round: f(r.get("round"))?,
                    cells: r.get("cells").and_then(Value::as_u64),
                    low: f(r.get("low"))?,
                    median: f(r.get("median"))?,
                    high: f(r.get("high"))?,
                })
            })
            .collect(),
        noisy_cells: n.get("noisy_cells").and_then(Value::as_u64).unwrap_or(0),
    }
}

fn strings(v: Option<&Value>) -> Vec<String> {
    arr(v).iter().map(|x| s(Some(x))).collect()
}

fn stat(x: &Value) -> Stat {
    let values = nums(x.get("values"));
    let median = f(x.get("median"));
    let estimator = s(x.get("estimator"));
    Stat {
        params: obj(x.get("params")),
        metric: s(x.get("metric")),
        n: x.get("n").and_then(Value::as_u64).unwrap_or(0),
        censored: x.get("censored").and_then(Value::as_u64).unwrap_or(0),
        estimator: if estimator.is_empty() {
            "median".to_string()
        } else {
            estimator
        },
        estimate: f(x.get("estimate")).or(median),
        precision: f(x.get("precision")),
        precision_reached: x.get("precision_reached").and_then(Value::as_bool),
        spread: f(x.get("spread")),
        multimodal: x
            .get("multimodal")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        noise: strings(x.get("noise")),
        rounds: arr(x.get("rounds"))
            .iter()
            .filter_map(Value::as_u64)
            .collect(),
        median,
        mad: f(x.get("mad")),
        min: f(x.get("min")),
        max: f(x.get("max")),
        ci95: pair(x.get("ci95")),
        outliers: outliers(arr(x.get("outliers")), &values),
        values,
    }
}

fn model(m: &Value) -> Model {
    Model {
        axis: s(m.get("axis")),
        metric: s(m.get("metric")),
        fixed: obj(m.get("fixed")),
        form: s(m.get("form")),
        exponent: f(m.get("exponent")).unwrap_or(0.0),
        log_exponent: f(m.get("log_exponent")).unwrap_or(0.0),
        coefficients: nums(m.get("coefficients")),
        error: f(m.get("error")),
        points: m.get("points").and_then(Value::as_u64),
        exponent_ci95: pair(m.get("exponent_ci95")),
        interval_method: s(m.get("interval_method")),
        estimator: s(m.get("estimator")),
        plausible: arr(m.get("plausible"))
            .iter()
            .map(|h| s(h.get("form")))
            .filter(|f| !f.is_empty())
            .collect(),
    }
}

fn scaling(x: &Value) -> Scaling {
    let usl = x.get("usl");
    let amdahl = x.get("amdahl").filter(|a| !a.is_null());
    Scaling {
        axis: s(x.get("axis")),
        metric: s(x.get("metric")),
        fixed: obj(x.get("fixed")),
        points: arr(x.get("points"))
            .iter()
            .filter_map(|pt| {
                Some(ScalePoint {
                    p: f(pt.get("p"))?,
                    value: f(pt.get("value")),
                    speedup: f(pt.get("speedup")),
                    efficiency: f(pt.get("efficiency")),
                    karp_flatt: f(pt.get("karp_flatt")),
                })
            })
            .collect(),
        amdahl_serial: first_f(amdahl, &["serial_fraction", "f", "serial"]),
        amdahl: amdahl.cloned(),
        usl_sigma: first_f(usl, &["sigma"]),
        usl_kappa: first_f(usl, &["kappa"]),
        usl_peak: first_f(usl, &["peak_concurrency", "peak"]),
    }
}

fn check(c: &Value) -> CheckRow {
    let g = |k: &str| cell(c.get(k), "—");
    CheckRow {
        passed: c.get("passed").and_then(Value::as_bool),
        verdict: s(c.get("verdict")),
        estimator: s(c.get("estimator")),
        plausible: strings(c.get("plausible")),
        kind: g("kind"),
        axis: g("axis"),
        metric: g("metric"),
        limit: g("limit"),
        observed: g("observed"),
        interval: g("interval"),
        detail: g("detail"),
    }
}

fn prediction(x: &Value) -> Prediction {
    Prediction {
        axis: s(x.get("axis")),
        at: f(x.get("at")),
        metric: s(x.get("metric")),
        fixed: obj(x.get("fixed")),
        value: f(x.get("value")),
        model: s(x.get("model")),
        note: s(x.get("note")),
    }
}
