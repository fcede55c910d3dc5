//! `result.load` of a service cell as the evidence reads it: the offered and achieved rate,
//! counts, errors by class, corrected latencies, the objectives' verdicts and memory growth —
//! the figures the checklist's `timeout` and `resource_exhaustion` rows state about what the
//! service did at and beyond capacity ([`capacity_sentences`]).
//!
//! The shape is `qualify_load::LoadReport` serialized, plus `slo`, `verdict`, `ready_seconds`,
//! `port`, `stop` and `memory_growth` (the runner's `run_cmd/service.rs` adds them). This crate
//! does not depend on the load generator: it reads the JSON tolerantly — a missing or mistyped
//! field is its default, so a receipt from an older or newer qualify still reads.

use std::collections::BTreeMap;

use qualify_model::{Outcome, ProbeResult};
use serde::Deserialize;
use serde_json::Value;

use serde::Deserializer;
use serde::de::DeserializeOwned;

use crate::faults;
use crate::record::{AxisKind, Cell, RunRecord, param_text};

/// A field that does not have the expected type reads as its default.
fn lenient<'de, D: Deserializer<'de>, T: DeserializeOwned + Default>(d: D) -> Result<T, D::Error> {
    let value = Value::deserialize(d)?;
    Ok(serde_json::from_value(value).unwrap_or_default())
}

/// The figures of one service cell's load.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct LoadFacts {
    /// Arrivals per second (open model).
    #[serde(default, deserialize_with = "lenient")]
    pub offered_rate: Option<f64>,
    /// Concurrent users (closed model).
    #[serde(default, deserialize_with = "lenient")]
    pub users: Option<f64>,
    #[serde(default, deserialize_with = "lenient")]
    pub achieved_rate: Option<f64>,
    #[serde(default, deserialize_with = "lenient")]
    pub throughput: Option<f64>,
    #[serde(default, deserialize_with = "lenient")]
    pub sent: u64,
    #[serde(default, deserialize_with = "lenient")]
    pub completed: u64,
    #[serde(default, deserialize_with = "lenient")]
    pub dropped: u64,
    /// Answers 429 or 503.
    #[serde(default, deserialize_with = "lenient")]
    pub shed: u64,
    /// Failed requests by class (`status_5xx`, `timeout`, `refused`, …).
    #[serde(default, deserialize_with = "lenient")]
    pub errors: BTreeMap<String, u64>,
    #[serde(default, deserialize_with = "lenient")]
    pub latency: LatencyFacts,
    #[serde(default, deserialize_with = "lenient")]
    pub slo: Vec<SloFact>,
    #[serde(default, deserialize_with = "lenient")]
    pub memory_growth: Option<GrowthFact>,
}

/// Corrected and uncorrected latency percentiles, seconds.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct LatencyFacts {
    #[serde(default, deserialize_with = "lenient")]
    pub corrected: Percentiles,
    #[serde(default, deserialize_with = "lenient")]
    pub uncorrected: Percentiles,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize)]
pub struct Percentiles {
    #[serde(default, deserialize_with = "lenient")]
    pub p50: Option<f64>,
    #[serde(default, deserialize_with = "lenient")]
    pub p99: Option<f64>,
    #[serde(default, deserialize_with = "lenient")]
    pub max: Option<f64>,
}

/// One objective, judged.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct SloFact {
    #[serde(default, deserialize_with = "lenient")]
    pub metric: String,
    /// `max` or `min`.
    #[serde(default, deserialize_with = "lenient")]
    pub bound: String,
    #[serde(default, deserialize_with = "lenient")]
    pub limit: Option<f64>,
    #[serde(default, deserialize_with = "lenient")]
    pub value: Option<f64>,
    #[serde(default, deserialize_with = "lenient")]
    pub held: bool,
}

/// Resident memory through the measured phase.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct GrowthFact {
    #[serde(default, deserialize_with = "lenient")]
    pub grew_steadily: bool,
    #[serde(default, deserialize_with = "lenient")]
    pub slope_bytes_per_second: Option<f64>,
    #[serde(default, deserialize_with = "lenient")]
    pub seconds_to_ceiling: Option<f64>,
}

impl LoadFacts {
    /// Requests that failed with `class`.
    pub fn errors_of(&self, class: &str) -> u64 {
        self.errors.get(class).copied().unwrap_or(0)
    }

    /// `600 req/s offered`, `64 users`, or `the load`.
    pub fn amount_text(&self) -> String {
        match (self.offered_rate, self.users) {
            (Some(r), _) => format!("{} req/s offered", rate(r)),
            (None, Some(u)) => format!("{} users", rate(u)),
            _ => "the load".to_string(),
        }
    }

    /// The offered amount (rate, else users) — what capacity is compared on.
    pub fn amount(&self) -> Option<f64> {
        self.offered_rate.or(self.users)
    }
}

impl SloFact {
    /// `latency_p99 = 151 ms, limit max 100 ms`.
    pub fn describe(&self) -> String {
        let value = self.value.map_or_else(
            || "not measured".to_string(),
            |v| metric_value(&self.metric, v),
        );
        let limit = self
            .limit
            .map_or_else(|| "?".to_string(), |v| metric_value(&self.metric, v));
        format!("{} = {value}, limit {} {limit}", self.metric, self.bound)
    }
}

/// A service metric's value as people read it: latencies in ms or s, rates in %, throughput
/// per second.
fn metric_value(metric: &str, v: f64) -> String {
    if metric.starts_with("latency") {
        seconds(v)
    } else if metric.ends_with("_rate") {
        format!("{}%", trim(v * 100.0))
    } else {
        format!("{}/s", trim(v))
    }
}

/// A service cell's load (`None`: not a service cell, or no load object).
pub fn read(result: &ProbeResult) -> Option<LoadFacts> {
    read_value(result.load.as_ref()?)
}

/// [`read`] on the JSON itself.
pub fn read_value(value: &Value) -> Option<LoadFacts> {
    value
        .is_object()
        .then(|| serde_json::from_value(value.clone()).unwrap_or_default())
}

/// `600`, `190.8`.
fn rate(x: f64) -> String {
    if (x - x.round()).abs() < 0.05 {
        format!("{x:.0}")
    } else {
        format!("{x:.1}")
    }
}

fn trim(x: f64) -> String {
    let s = format!("{x:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// `4.3 s`, `151 ms`.
fn seconds(v: f64) -> String {
    if v >= 1.0 {
        format!("{v:.1} s")
    } else if v >= 0.001 || v == 0.0 {
        format!("{:.0} ms", v * 1000.0)
    } else {
        format!("{:.0} µs", v * 1e6)
    }
}

/// `3.0×`.
fn times(x: f64) -> String {
    format!("{x:.1}×")
}

/// `1.5 MiB/s`.
fn bytes_per_second(b: f64) -> String {
    format!("{:.1} MiB/s", b / (1024.0 * 1024.0))
}

/// What the service cells say about the checklist's `timeout` and `resource_exhaustion` rows.
#[derive(Debug, Default)]
pub struct CapacitySentences {
    /// Completed service cells read (fault and restart cells are stated with their faults).
    pub cells: usize,
    /// The largest offered amount, as text (`600 req/s offered`).
    pub largest: Option<String>,
    pub timeout: Vec<String>,
    pub resource_exhaustion: Vec<String>,
}

/// One completed service cell without injected faults, with its group (the other axes).
struct ServiceCell<'a> {
    cell: &'a Cell,
    load: LoadFacts,
    group: String,
}

/// The completed service cells' behaviour at and beyond capacity, per row. Capacity is judged
/// per combination of the axes other than `load` (and `fault`) axes: the largest offered
/// amount at which the service kept up (`ok` or `slo_violated`); each cell beyond it, or that
/// failed under load, gets a sentence naming its offered amount, how far beyond that amount it
/// was, what the service did (queued until arrivals were dropped or requests timed out, shed
/// load with 429/503, refused or reset connections, was killed at the memory ceiling, crashed)
/// and its figures. Cells that carry injected faults or a restart are left to the fault
/// sentences.
pub fn capacity_sentences(record: &RunRecord, cells: &[&Cell]) -> CapacitySentences {
    let excluded: Vec<&str> = record
        .axes
        .iter()
        .filter(|a| matches!(a.kind, AxisKind::Load | AxisKind::Fault))
        .map(|a| a.name.as_str())
        .collect();
    let mut service: Vec<ServiceCell> = cells
        .iter()
        .filter(|c| c.completed())
        .filter(|c| {
            !faults::read(&c.result)
                .iter()
                .any(|r| r.injected() || r.restart.is_some())
        })
        .filter_map(|c| {
            let load = read(&c.result)?;
            let group = c
                .params
                .iter()
                .filter(|(k, _)| !excluded.iter().any(|a| a == k))
                .map(|(k, v)| format!("{k}={}", param_text(v)))
                .collect::<Vec<_>>()
                .join(", ");
            Some(ServiceCell {
                cell: c,
                load,
                group,
            })
        })
        .collect();
    let mut out = CapacitySentences {
        cells: service.len(),
        ..CapacitySentences::default()
    };
    if service.is_empty() {
        return out;
    }
    service.sort_by(|a, b| {
        a.group.cmp(&b.group).then(
            a.load
                .amount()
                .unwrap_or(0.0)
                .total_cmp(&b.load.amount().unwrap_or(0.0)),
        )
    });
    out.largest = service
        .iter()
        .filter(|s| s.load.amount().is_some())
        .max_by(|a, b| {
            a.load
                .amount()
                .unwrap_or(0.0)
                .total_cmp(&b.load.amount().unwrap_or(0.0))
        })
        .map(|s| s.load.amount_text());
    let groups: BTreeMap<&str, Option<f64>> = service.iter().fold(BTreeMap::new(), |mut m, s| {
        let kept = m.entry(s.group.as_str()).or_insert(None);
        let up = matches!(s.cell.result.outcome, Outcome::Ok | Outcome::SloViolated);
        if let (true, Some(a)) = (up, s.load.amount()) {
            *kept = Some(kept.map_or(a, |k: f64| k.max(a)));
        }
        m
    });
    let labelled = groups.len() > 1;
    // Per group: the overloaded cell with the largest amount whose requests never timed out,
    // for the timeout row's "the backlog waited instead".
    let mut waited: BTreeMap<&str, &ServiceCell> = BTreeMap::new();
    for s in &service {
        let l = &s.load;
        let capacity = groups.get(s.group.as_str()).copied().flatten();
        let at = at_text(s, capacity, labelled);
        let outcome = s.cell.result.outcome;
        let timeouts = l.errors_of("timeout");
        match outcome {
            Outcome::SloViolated => {
                let failed: Vec<String> = l
                    .slo
                    .iter()
                    .filter(|x| !x.held)
                    .map(SloFact::describe)
                    .collect();
                out.resource_exhaustion.push(format!(
                    "{at} it kept up, but {} (slo_violated)",
                    if failed.is_empty() {
                        "an objective failed".to_string()
                    } else {
                        failed.join("; ")
                    }
                ));
            }
            Outcome::Overloaded => {
                out.resource_exhaustion
                    .push(format!("{at} {} (overloaded)", overload(l)));
                if timeouts == 0 && l.sent > 0 {
                    waited.insert(s.group.as_str(), s);
                }
            }
            Outcome::OomKilled => out.resource_exhaustion.push(format!(
                "{at} it was killed at the memory ceiling (oom_killed){}",
                growth(l)
                    .map(|g| format!(" after resident memory grew steadily{g}"))
                    .unwrap_or_default()
            )),
            Outcome::Crash | Outcome::ExitFailure | Outcome::Killed => out
                .resource_exhaustion
                .push(format!("{at} it ended under load ({outcome})")),
            Outcome::Unavailable if l.sent > 0 => out.resource_exhaustion.push(format!(
                "{at} it refused connections while alive (unavailable)"
            )),
            Outcome::Deadlock | Outcome::Livelock | Outcome::Timeout => out
                .timeout
                .push(format!("{at} it stopped answering ({outcome})")),
            _ => {}
        }
        if outcome != Outcome::OomKilled
            && let Some(g) = growth(l)
        {
            out.resource_exhaustion
                .push(format!("{at} resident memory grew steadily{g}"));
        }
        if timeouts > 0 {
            out.timeout.push(format!(
                "{at} {timeouts} of {} request(s) ran past the request timeout ({outcome})",
                l.sent
            ));
        }
    }
    let backlog: Vec<String> = waited
        .values()
        .map(|s| {
            let l = &s.load;
            let group = if labelled && !s.group.is_empty() {
                format!(" [{}]", s.group)
            } else {
                String::new()
            };
            let p99 = l
                .latency
                .corrected
                .p99
                .map(|p| format!(", corrected p99 {}", seconds(p)))
                .unwrap_or_default();
            format!(
                "at {}{group}: {}{p99}",
                l.amount_text(),
                dropped_text(l.dropped)
            )
        })
        .collect();
    if !backlog.is_empty() {
        let shown = backlog.len().min(BACKLOG_LISTED);
        let more = if backlog.len() > shown {
            format!("; +{} more", backlog.len() - shown)
        } else {
            String::new()
        };
        out.timeout.push(format!(
            "beyond capacity no request ran past its timeout: the backlog waited for a free slot instead ({}{more})",
            backlog[..shown].join("; ")
        ));
    }
    out
}

/// How many overloaded cells the timeout row's backlog sentence names.
const BACKLOG_LISTED: usize = 4;

/// `1 arrival dropped`, `2375 arrivals dropped`.
fn dropped_text(n: u64) -> String {
    if n == 1 {
        "1 arrival dropped".to_string()
    } else {
        format!("{n} arrivals dropped")
    }
}

/// `at 600 req/s offered (3.3× the 180 req/s it kept up with) [workers=2]`.
fn at_text(s: &ServiceCell, capacity: Option<f64>, labelled: bool) -> String {
    let l = &s.load;
    let beyond = match (l.amount(), capacity) {
        (Some(a), Some(c)) if c > 0.0 && a > c * 1.000_001 => {
            let unit = if l.offered_rate.is_some() {
                "req/s"
            } else {
                "users"
            };
            format!(" ({} the {} {unit} it kept up with)", times(a / c), rate(c))
        }
        _ => String::new(),
    };
    let group = if labelled && !s.group.is_empty() {
        format!(" [{}]", s.group)
    } else {
        String::new()
    };
    format!("at {}{beyond}{group}", l.amount_text())
}

/// What an overloaded service did: `queued until arrivals were dropped: 190.8 req/s answered,
/// 2375 dropped, corrected p99 4.3 s`.
fn overload(l: &LoadFacts) -> String {
    let mut did: Vec<String> = Vec::new();
    if l.shed > 0 {
        did.push(format!(
            "shed load with 429/503 ({} of {} answered so)",
            l.shed, l.sent
        ));
    }
    let timeouts = l.errors_of("timeout");
    if timeouts > 0 {
        did.push(format!("queued until requests timed out ({timeouts})"));
    }
    let (refused, reset) = (l.errors_of("refused"), l.errors_of("reset"));
    if refused > 0 {
        did.push(format!("refused connections ({refused})"));
    }
    if reset > 0 {
        did.push(format!("reset connections ({reset})"));
    }
    if l.dropped > 0 && timeouts == 0 && l.shed == 0 {
        did.push("queued until arrivals were dropped".to_string());
    }
    if did.is_empty() {
        did.push("fell behind".to_string());
    }
    let mut figures = Vec::new();
    if let Some(a) = l.achieved_rate {
        figures.push(format!("{} req/s answered", rate(a)));
    }
    if l.dropped > 0 {
        figures.push(format!("{} dropped", l.dropped));
    }
    if let Some(p) = l.latency.corrected.p99 {
        figures.push(format!("corrected p99 {}", seconds(p)));
    }
    let figures = if figures.is_empty() {
        String::new()
    } else {
        format!(": {}", figures.join(", "))
    };
    format!("it {}{figures}", did.join(" and "))
}

/// ` at 1.5 MiB/s (the memory ceiling in 40 s)` when resident memory grew steadily.
fn growth(l: &LoadFacts) -> Option<String> {
    let g = l.memory_growth.as_ref().filter(|g| g.grew_steadily)?;
    let slope = g
        .slope_bytes_per_second
        .map(|s| format!(" at {}", bytes_per_second(s)))
        .unwrap_or_default();
    let ceiling = g
        .seconds_to_ceiling
        .map(|t| format!(" (the memory ceiling in {})", seconds(t)))
        .unwrap_or_default();
    Some(format!("{slope}{ceiling}"))
}
