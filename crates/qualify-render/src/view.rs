//! Tolerant accessors over a receipt: everything a renderer reads, with missing or mistyped
//! optional parts turned into `None` or empty lists instead of errors. Accepts the whole in-toto
//! Statement or a bare predicate.

use serde_json::{Map, Value};

/// The five layers, in the order people read them.
pub const LAYERS: [&str; 5] = [
    "functional",
    "process",
    "envelope",
    "performance",
    "reproducibility",
];

/// A receipt being rendered.
pub struct View<'a> {
    pub pred: &'a Value,
}

/// One row of the layer table.
pub struct LayerRow {
    pub name: String,
    pub status: String,
    pub summary: String,
    pub untested: Vec<String>,
}

/// One probed cell.
pub struct CellRow {
    pub params: Map<String, Value>,
    pub outcome: String,
    pub detail: String,
    pub wall: Option<f64>,
    pub cpu: Option<f64>,
    pub peak_memory: Option<f64>,
    pub boundary: bool,
}

/// Per-cell statistics of one metric (`predicate.performance.stats[]`).
pub struct Stat {
    pub params: Map<String, Value>,
    pub metric: String,
    pub n: u64,
    pub censored: u64,
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
    pub value: Option<f64>,
    pub model: String,
    pub note: String,
}

/// A declared metric.
pub struct Metric {
    pub name: String,
    pub unit: String,
    pub better: String,
}

/// `predicate.performance`.
pub struct Performance<'a> {
    pub repeat: Option<u64>,
    pub warmup: Option<u64>,
    pub metrics: Vec<Metric>,
    pub stats: Vec<Stat>,
    pub models: Vec<Model>,
    pub scaling: Vec<Scaling>,
    pub checks: Vec<&'a Value>,
    pub predictions: Vec<Prediction>,
    /// Problems the performance analysis reported (metrics that failed to parse, …).
    pub errors: Vec<String>,
}

impl Performance<'_> {
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
}

fn s(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => crate::text::value(other),
    }
}

fn f(v: Option<&Value>) -> Option<f64> {
    v.and_then(Value::as_f64).filter(|x| x.is_finite())
}

fn arr(v: Option<&Value>) -> &[Value] {
    v.and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

fn obj(v: Option<&Value>) -> Map<String, Value> {
    v.and_then(Value::as_object).cloned().unwrap_or_default()
}

fn nums(v: Option<&Value>) -> Vec<f64> {
    arr(v).iter().filter_map(|x| f(Some(x))).collect()
}

fn pair(v: Option<&Value>) -> Option<(f64, f64)> {
    let n = nums(v);
    (n.len() == 2).then(|| (n[0], n[1]))
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

/// The first present key of an object, for fields whose name other tools spell differently.
fn first_f(v: Option<&Value>, keys: &[&str]) -> Option<f64> {
    keys.iter().find_map(|k| f(v.and_then(|o| o.get(*k))))
}

impl<'a> View<'a> {
    pub fn new(receipt: &'a Value) -> View<'a> {
        let pred = match receipt.get("predicate") {
            Some(p) if p.is_object() => p,
            _ => receipt,
        };
        View { pred }
    }

    fn get(&self, path: &[&str]) -> Option<&'a Value> {
        let mut v = self.pred;
        for k in path {
            v = v.get(*k)?;
        }
        Some(v)
    }

    /// The artifact's name (`run.artifact.name`), or `artifact`.
    pub fn artifact(&self) -> String {
        let n = s(self.get(&["run", "artifact", "name"]));
        if n.is_empty() { "artifact".into() } else { n }
    }

    pub fn claim_level(&self) -> String {
        let l = s(self.get(&["claim", "level"]));
        if l.is_empty() { "unknown".into() } else { l }
    }

    pub fn supported(&self) -> Option<bool> {
        self.get(&["claim", "supported"]).and_then(Value::as_bool)
    }

    pub fn reasons(&self) -> Vec<String> {
        arr(self.get(&["claim", "reasons"]))
            .iter()
            .map(|r| s(Some(r)))
            .collect()
    }

    pub fn incomplete(&self) -> bool {
        self.get(&["incomplete"])
            .and_then(Value::as_bool)
            .unwrap_or(false)
    }

    /// `run.started` … `run.finished`, qualify version, spec path.
    pub fn run_field(&self, key: &str) -> String {
        s(self.get(&["run", key]))
    }

    pub fn spec_path(&self) -> String {
        s(self.get(&["run", "spec", "path"]))
    }

    /// The five layers in canonical order (missing ones as `not_run`), then any others.
    pub fn layers(&self) -> Vec<LayerRow> {
        let map = self
            .get(&["layers"])
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let mut names: Vec<String> = LAYERS.iter().map(|s| s.to_string()).collect();
        names.extend(
            map.keys()
                .filter(|k| !LAYERS.contains(&k.as_str()))
                .cloned(),
        );
        names
            .into_iter()
            .map(|name| {
                let l = map.get(&name);
                let status = s(l.and_then(|l| l.get("status")));
                LayerRow {
                    status: if status.is_empty() {
                        "not_run".into()
                    } else {
                        status
                    },
                    summary: s(l.and_then(|l| l.get("summary"))),
                    untested: arr(l.and_then(|l| l.get("untested")))
                        .iter()
                        .map(|u| s(Some(u)))
                        .collect(),
                    name,
                }
            })
            .collect()
    }

    /// Axis names in the receipt's order (`tested.axes`), then any other parameter seen in cells.
    pub fn axis_order(&self) -> Vec<String> {
        let mut names: Vec<String> = arr(self.get(&["tested", "axes"]))
            .iter()
            .map(|a| s(a.get("name")))
            .filter(|n| !n.is_empty())
            .collect();
        for c in arr(self.get(&["cells"])) {
            if let Some(p) = c.get("params").and_then(Value::as_object) {
                for k in p.keys() {
                    if !names.contains(k) {
                        names.push(k.clone());
                    }
                }
            }
        }
        names
    }

    /// The kind (`workload`, `concurrency`, …) of an axis, if recorded.
    pub fn axis_kind(&self, axis: &str) -> Option<String> {
        arr(self.get(&["tested", "axes"]))
            .iter()
            .find(|a| a.get("name").and_then(Value::as_str) == Some(axis))
            .map(|a| s(a.get("kind")))
            .filter(|k| !k.is_empty())
    }

    pub fn cells(&self) -> Vec<CellRow> {
        arr(self.get(&["cells"]))
            .iter()
            .map(|c| {
                let r = c.get("result");
                let g = |k: &str| f(r.and_then(|r| r.get(k)));
                let cpu = match (g("user_seconds"), g("system_seconds")) {
                    (Some(u), Some(s)) => Some(u + s),
                    (Some(u), None) => Some(u),
                    _ => None,
                };
                let outcome = s(r.and_then(|r| r.get("outcome")));
                CellRow {
                    params: obj(c.get("params")),
                    outcome: if outcome.is_empty() {
                        "unknown".into()
                    } else {
                        outcome
                    },
                    detail: s(r.and_then(|r| r.get("detail"))),
                    wall: g("wall_seconds"),
                    cpu,
                    peak_memory: g("peak_memory_bytes"),
                    boundary: c.get("boundary").and_then(Value::as_bool).unwrap_or(false),
                }
            })
            .collect()
    }

    pub fn boundaries(&self) -> &'a [Value] {
        arr(self.get(&["boundaries"]))
    }

    pub fn gaps(&self) -> &'a [Value] {
        arr(self.get(&["gap"]))
    }

    pub fn target(&self) -> Option<&'a Map<String, Value>> {
        self.get(&["target"])
            .and_then(Value::as_object)
            .filter(|m| !m.is_empty())
    }

    pub fn checklist(&self) -> Option<&'a Map<String, Value>> {
        self.get(&["checklist"]).and_then(Value::as_object)
    }

    /// `tested` facts: machine, backend, counts.
    pub fn tested(&self) -> Option<&'a Map<String, Value>> {
        self.get(&["tested"]).and_then(Value::as_object)
    }

    /// `predicate.performance`, when present and an object.
    pub fn performance(&self) -> Option<Performance<'a>> {
        let p = self.get(&["performance"]).filter(|p| p.is_object())?;
        let g = |k: &str| p.get(k);
        Some(Performance {
            repeat: g("repeat").and_then(Value::as_u64),
            warmup: g("warmup").and_then(Value::as_u64),
            metrics: arr(g("metrics"))
                .iter()
                .map(|m| Metric {
                    name: s(m.get("name")),
                    unit: s(m.get("unit")),
                    better: s(m.get("better")),
                })
                .collect(),
            stats: arr(g("stats"))
                .iter()
                .map(|x| {
                    let values = nums(x.get("values"));
                    Stat {
                        params: obj(x.get("params")),
                        metric: s(x.get("metric")),
                        n: x.get("n").and_then(Value::as_u64).unwrap_or(0),
                        censored: x.get("censored").and_then(Value::as_u64).unwrap_or(0),
                        median: f(x.get("median")),
                        mad: f(x.get("mad")),
                        min: f(x.get("min")),
                        max: f(x.get("max")),
                        ci95: pair(x.get("ci95")),
                        outliers: outliers(arr(x.get("outliers")), &values),
                        values,
                    }
                })
                .collect(),
            models: arr(g("models"))
                .iter()
                .map(|m| Model {
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
                })
                .collect(),
            scaling: arr(g("scaling"))
                .iter()
                .map(|x| {
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
                })
                .collect(),
            checks: arr(g("checks")).iter().collect(),
            predictions: arr(g("predictions"))
                .iter()
                .map(|x| Prediction {
                    axis: s(x.get("axis")),
                    at: f(x.get("at")),
                    metric: s(x.get("metric")),
                    value: f(x.get("value")),
                    model: s(x.get("model")),
                    note: s(x.get("note")),
                })
                .collect(),
            errors: arr(g("errors")).iter().map(|e| s(Some(e))).collect(),
        })
    }
}

/// Does `params` agree with every entry of `fixed`?
pub fn matches(params: &Map<String, Value>, fixed: &Map<String, Value>) -> bool {
    fixed.iter().all(|(k, v)| match (params.get(k), v) {
        (Some(a), b) if a == b => true,
        (Some(a), b) => matches!((a.as_f64(), b.as_f64()), (Some(x), Some(y)) if x == y),
        (None, _) => false,
    })
}

/// The numeric value of `params[axis]`.
pub fn coord(params: &Map<String, Value>, axis: &str) -> Option<f64> {
    params.get(axis).and_then(Value::as_f64)
}
