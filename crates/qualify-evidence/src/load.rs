//! `result.load` of a service cell as the evidence reads it (the vocabulary's
//! [`ServiceLoad`]: the load report and the cell's judgement): the offered and achieved rate,
//! counts, errors by class, corrected latencies, the objectives' verdicts and memory growth —
//! the figures the checklist's `timeout` and `resource_exhaustion` rows state about what the
//! service did at and beyond capacity ([`capacity_sentences`]), and what a service did to its
//! own processes — workers its watchdog killed and replaced, one the OOM killer took — for the
//! `timeout`, `resource_exhaustion` and `partial_failure` rows ([`children_sentences`]).

use std::collections::BTreeMap;

use qualify_model::load::{ErrorClass, Growth, LoadReport, ServiceLoad};
use qualify_model::{Outcome, ProbeResult, SloResult};

use crate::faults;
use crate::record::{AxisKind, Cell, RunRecord};

/// A service cell's load (`None`: not a service cell).
pub fn read(result: &ProbeResult) -> Option<&ServiceLoad> {
    result.load.as_ref()
}

/// What a cell's load offered: arrivals per second (open model), else users.
fn amount(l: &ServiceLoad) -> Option<f64> {
    let r = l.report.as_ref()?;
    r.offered_rate.or(r.users.map(f64::from))
}

/// `600 req/s offered`, `64 users`, or `the load`.
fn amount_text(l: &ServiceLoad) -> String {
    let r = l.report.as_ref();
    match (r.and_then(|r| r.offered_rate), r.and_then(|r| r.users)) {
        (Some(x), _) => format!("{} req/s offered", rate(x)),
        (None, Some(u)) => format!("{} users", rate(f64::from(u))),
        _ => "the load".to_string(),
    }
}

/// Requests of the cell that failed with `class`.
fn errors_of(l: &ServiceLoad, class: ErrorClass) -> u64 {
    l.report.as_ref().map_or(0, |r| r.errors.get(class))
}

/// A report's figure, 0 without a report.
fn figure(l: &ServiceLoad, f: fn(&LoadReport) -> u64) -> u64 {
    l.report.as_ref().map_or(0, f)
}

/// `latency_p99 = 151 ms, limit max 100 ms`.
pub fn describe_slo(s: &SloResult) -> String {
    let metric = s.metric.as_str();
    let value = s
        .value
        .map_or_else(|| "not measured".to_string(), |v| metric_value(metric, v));
    format!(
        "{metric} = {value}, limit {} {}",
        s.bound,
        metric_value(metric, s.limit)
    )
}

/// A service metric's value as people read it: latencies in ms or s, rates in %, throughput
/// per second.
pub(crate) fn format_metric(metric: &str, v: f64) -> String {
    metric_value(metric, v)
}

fn metric_value(metric: &str, v: f64) -> String {
    if metric.starts_with("latency") {
        seconds(v)
    } else if metric.ends_with("_rate") {
        format!("{}%", trim(v * 100.0))
    } else {
        format!("{}/s", trim(v))
    }
}

/// `600`, `190.8`.
pub(crate) fn rate(x: f64) -> String {
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
    load: &'a ServiceLoad,
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
                .map(|(k, v)| format!("{k}={}", v.receipt_text()))
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
            amount(a.load)
                .unwrap_or(0.0)
                .total_cmp(&amount(b.load).unwrap_or(0.0)),
        )
    });
    out.largest = service
        .iter()
        .filter(|s| amount(s.load).is_some())
        .max_by(|a, b| {
            amount(a.load)
                .unwrap_or(0.0)
                .total_cmp(&amount(b.load).unwrap_or(0.0))
        })
        .map(|s| amount_text(s.load));
    let groups: BTreeMap<&str, Option<f64>> = service.iter().fold(BTreeMap::new(), |mut m, s| {
        let kept = m.entry(s.group.as_str()).or_insert(None);
        let up = matches!(s.cell.result.outcome, Outcome::Ok | Outcome::SloViolated);
        if let (true, Some(a)) = (up, amount(s.load)) {
            *kept = Some(kept.map_or(a, |k: f64| k.max(a)));
        }
        m
    });
    let labelled = groups.len() > 1;
    // Per group: the overloaded cell with the largest amount whose requests never timed out,
    // for the timeout row's "the backlog waited instead".
    let mut waited: BTreeMap<&str, &ServiceCell> = BTreeMap::new();
    for s in &service {
        let l = s.load;
        let capacity = groups.get(s.group.as_str()).copied().flatten();
        let at = at_text(s, capacity, labelled);
        let outcome = s.cell.result.outcome;
        let timeouts = errors_of(l, ErrorClass::Timeout);
        let sent = figure(l, |r| r.sent);
        match outcome {
            Outcome::SloViolated => {
                let failed: Vec<String> =
                    l.slo.iter().filter(|x| !x.held).map(describe_slo).collect();
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
                if timeouts == 0 && sent > 0 {
                    waited.insert(s.group.as_str(), s);
                }
            }
            Outcome::OomKilled => out.resource_exhaustion.push(format!(
                "{at} it was killed at the memory ceiling (oom_killed){}",
                growth(l)
                    .map(|g| format!(" after resident memory grew steadily{g}"))
                    .unwrap_or_default()
            )),
            Outcome::OutOfMemory => out.resource_exhaustion.push(format!(
                "{at} it ran out of memory at its runtime's own limit (out_of_memory)"
            )),
            Outcome::Crash | Outcome::ExitFailure | Outcome::Killed => out
                .resource_exhaustion
                .push(format!("{at} it ended under load ({outcome})")),
            Outcome::Unavailable if sent > 0 => out.resource_exhaustion.push(format!(
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
                "{at} {timeouts} of {sent} request(s) ran past the request timeout ({outcome})"
            ));
        }
    }
    let backlog: Vec<String> = waited
        .values()
        .map(|s| {
            let l = s.load;
            let group = if labelled && !s.group.is_empty() {
                format!(" [{}]", s.group)
            } else {
                String::new()
            };
            let p99 = corrected_p99(l)
                .map(|p| format!(", corrected p99 {}", seconds(p)))
                .unwrap_or_default();
            format!(
                "at {}{group}: {}{p99}",
                amount_text(l),
                dropped_text(figure(l, |r| r.dropped))
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
    let l = s.load;
    let beyond = match (amount(l), capacity) {
        (Some(a), Some(c)) if c > 0.0 && a > c * 1.000_001 => {
            let unit = if l.report.as_ref().is_some_and(|r| r.offered_rate.is_some()) {
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
    format!("at {}{beyond}{group}", amount_text(l))
}

/// What an overloaded service did: `queued until arrivals were dropped: 190.8 req/s answered,
/// 2375 dropped, corrected p99 4.3 s`.
fn overload(l: &ServiceLoad) -> String {
    let mut did: Vec<String> = Vec::new();
    let (sent, shed, dropped) = (
        figure(l, |r| r.sent),
        figure(l, |r| r.shed),
        figure(l, |r| r.dropped),
    );
    if shed > 0 {
        did.push(format!(
            "shed load with 429/503 ({shed} of {sent} answered so)"
        ));
    }
    let timeouts = errors_of(l, ErrorClass::Timeout);
    if timeouts > 0 {
        did.push(format!("queued until requests timed out ({timeouts})"));
    }
    let (refused, reset) = (
        errors_of(l, ErrorClass::Refused),
        errors_of(l, ErrorClass::Reset),
    );
    if refused > 0 {
        did.push(format!("refused connections ({refused})"));
    }
    if reset > 0 {
        did.push(format!("reset connections ({reset})"));
    }
    if dropped > 0 && timeouts == 0 && shed == 0 {
        did.push("queued until arrivals were dropped".to_string());
    }
    if did.is_empty() {
        did.push("fell behind".to_string());
    }
    let mut figures = Vec::new();
    if let Some(r) = &l.report {
        figures.push(format!("{} req/s answered", rate(r.achieved_rate)));
    }
    if dropped > 0 {
        figures.push(format!("{dropped} dropped"));
    }
    if let Some(p) = corrected_p99(l) {
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
fn growth(l: &ServiceLoad) -> Option<String> {
    let g: &Growth = l.memory_growth.as_ref().filter(|g| g.grew_steadily)?;
    let slope = format!(" at {}", bytes_per_second(g.slope_bytes_per_second));
    let ceiling = g
        .seconds_to_ceiling
        .map(|t| format!(" (the memory ceiling in {})", seconds(t)))
        .unwrap_or_default();
    Some(format!("{slope}{ceiling}"))
}

/// The corrected p99 of the cell's load, when it measured one.
fn corrected_p99(l: &ServiceLoad) -> Option<f64> {
    l.report.as_ref()?.latency.corrected.p99
}

/// What the services did to their own processes, per checklist row.
#[derive(Debug, Default)]
pub struct ChildrenSentences {
    /// Processes ended by the service's own watchdog (its output says timeout).
    pub timeout: Vec<String>,
    /// Processes the kernel's OOM killer took.
    pub resource_exhaustion: Vec<String>,
    /// Every cell where processes of the service ended while it ran.
    pub partial_failure: Vec<String>,
}

/// Per completed cell whose service ended some of its processes while it ran
/// (`result.children`): `at 20 req/s offered: 4 of the service's processes ended …`, and the
/// watchdog's and the OOM killer's share for the timeout and exhaustion rows.
pub fn children_sentences(cells: &[&Cell]) -> ChildrenSentences {
    let mut out = ChildrenSentences::default();
    for c in cells.iter().filter(|c| c.completed()) {
        let Some(children) = c.result.children.as_ref() else {
            continue;
        };
        let Some(text) = children.describe() else {
            continue;
        };
        let cell = if c.params.is_empty() {
            String::new()
        } else {
            format!(" [{}]", c.label())
        };
        let at = match read(&c.result) {
            Some(l) => format!("at {}{cell}", amount_text(l)),
            None => format!("in cell{cell}"),
        };
        out.partial_failure.push(format!("{at}: {text}"));
        let timed_out: Vec<_> = children.ends.iter().filter(|e| e.timed_out()).collect();
        if let Some(first) = timed_out.first() {
            out.timeout.push(format!(
                "{at} the service's own watchdog ended {} of its processes (`{}`){}",
                timed_out.len(),
                first.said.as_deref().unwrap_or(""),
                if timed_out.iter().all(|e| e.replaced) {
                    ", and replaced them"
                } else {
                    ""
                }
            ));
        }
        let oom = children.ends.iter().filter(|e| e.oom_killed).count();
        if oom > 0 {
            out.resource_exhaustion.push(format!(
                "{at} the kernel's OOM killer took {oom} of the service's processes while it kept running"
            ));
        }
    }
    out
}
