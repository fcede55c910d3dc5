//! A split load (`[load] generators = N`): [`run_share`] runs one generator's share of a plan
//! (every N-th arrival of its one schedule, from an agreed start) and returns its
//! [`GeneratorReport`]; [`merge`] adds N such reports into the one [`LoadReport`] a single
//! process would have made of the same requests, plus a [`GeneratorSummary`] per generator.
//!
//! What is exact and what is not: counts, error classes, write records and every histogram
//! (corrected and uncorrected latency, each phase's, its fast errors' and ended requests')
//! add up exactly, so every quantile of the merge is the quantile of all requests together;
//! rates (offered, achieved, throughput) sum; a timeline second's counts sum, but its `p99`
//! is the largest of the generators' p99s for that second (no per-second histogram is
//! kept: an upper bound); the schedule lag keeps the worst generator's quantiles beside the
//! summed dispatch counts; a staged load's seconds (by intended start) add their counts,
//! offered rates and latency histograms exactly. The merge is saturated when any generator was — or began its
//! schedule more than [`LATE_START`] after the agreed start — and its detail names which.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use hdrhistogram::Histogram;
use qualify_model::load::{GeneratorReport, GeneratorSummary, PhaseHistograms};

use crate::engine::{Flow, Placement, Progress, Share, run_placed};
use crate::error::LoadError;
use crate::plan::LoadPlan;
use crate::report::{
    Generator, Latency, LoadReport, PhaseReport, ScheduleLag, TimelineSecond, decode_histogram,
    encode_histogram, summary_of,
};

/// A generator whose schedule began more than this after the agreed start did not offer the
/// planned schedule: the merged run is saturated (not evidence about the service).
pub const LATE_START: f64 = 0.1;

/// Run generator `share.index` of `share.of` of `plan` against `target`, its schedule starting
/// at `start` (`None`: now), and report its share with the histograms [`merge`] needs.
/// `start_at_unix` and `started_late_seconds` are the caller's to fill (it knows the clock
/// the start was agreed on).
pub fn run_share(
    plan: &LoadPlan,
    target: SocketAddr,
    share: Share,
    start: Option<Instant>,
    cancel: &AtomicBool,
    observer: &mut dyn FnMut(&Progress) -> Flow,
) -> Result<GeneratorReport, LoadError> {
    let placement = Placement {
        share,
        start,
        extras: true,
    };
    let (report, extras) = run_placed(plan, target, placement, cancel, observer)?;
    Ok(GeneratorReport {
        index: share.index,
        of: share.of,
        start_at_unix: None,
        started_late_seconds: 0.0,
        report: Some(report),
        uncorrected_histogram: extras.uncorrected,
        phases: extras.phases,
        second_histograms: extras.seconds,
        error: None,
    })
}

/// Why generator reports do not merge.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    #[error("no generator reported")]
    Empty,
    #[error(
        "generator {index} of {of} reported no load: {error}; its stderr and the cell's other generators say more"
    )]
    Failed { index: u32, of: u32, error: String },
    #[error(
        "generator reports are not one split load: {0}; every generator must run the same plan with --of equal to the number of generators and a distinct --index"
    )]
    Mismatch(String),
    #[error("generator {index}: its {what} histogram cannot be read: {detail}")]
    Histogram {
        index: u32,
        what: &'static str,
        detail: String,
    },
}

/// A sum of encoded histograms (auto-resizing, so any generator's range fits).
#[derive(Default)]
struct Sum(Option<Histogram<u64>>);

impl Sum {
    fn add(&mut self, text: &str, index: u32, what: &'static str) -> Result<(), MergeError> {
        if text.trim().is_empty() {
            return Ok(());
        }
        let h = decode_histogram(text).map_err(|e| MergeError::Histogram {
            index,
            what,
            detail: e.to_string(),
        })?;
        let acc =
            match &mut self.0 {
                Some(acc) => acc,
                None => {
                    let mut fresh = Histogram::new_with_bounds(h.low(), h.high(), h.sigfig())
                        .map_err(|e| MergeError::Histogram {
                            index,
                            what,
                            detail: format!("{e:?}"),
                        })?;
                    fresh.auto(true);
                    self.0.insert(fresh)
                }
            };
        acc.add(&h).map_err(|e| MergeError::Histogram {
            index,
            what,
            detail: format!("{e:?}"),
        })
    }

    fn summary(&self) -> crate::report::LatencySummary {
        self.0.as_ref().map(summary_of).unwrap_or_default()
    }

    /// The encoding (`empty_text` when nothing was added).
    fn encoded(&self, empty_text: &str) -> String {
        self.0
            .as_ref()
            .map_or_else(|| empty_text.to_string(), encode_histogram)
    }
}

fn max_opt(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.max(y)),
        (x, y) => x.or(y),
    }
}

fn sum_opt(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x + y),
        (x, y) => x.or(y),
    }
}

/// Merge the reports of every generator of one split load (any order) into one report: see
/// the module's doc for what adds exactly. Fails when a generator has no report or the
/// reports are not the `of` distinct shares of one load.
pub fn merge(reports: &[GeneratorReport]) -> Result<LoadReport, MergeError> {
    let mut sorted: Vec<&GeneratorReport> = reports.iter().collect();
    sorted.sort_by_key(|g| g.index);
    let Some(first) = sorted.first() else {
        return Err(MergeError::Empty);
    };
    let of = first.of;
    let indices: Vec<u32> = sorted.iter().map(|g| g.index).collect();
    if sorted.iter().any(|g| g.of != of)
        || usize::try_from(of).ok() != Some(sorted.len())
        || indices.iter().enumerate().any(|(i, x)| *x as usize != i)
    {
        return Err(MergeError::Mismatch(format!(
            "indices {indices:?} with counts {:?}",
            sorted.iter().map(|g| g.of).collect::<Vec<_>>()
        )));
    }
    let mut parts = Vec::with_capacity(sorted.len());
    for g in &sorted {
        match &g.report {
            Some(r) => parts.push((*g, r)),
            None => {
                return Err(MergeError::Failed {
                    index: g.index,
                    of,
                    error: g
                        .error
                        .clone()
                        .unwrap_or_else(|| "no report and no error".into()),
                });
            }
        }
    }
    let (_, base) = parts[0];
    if let Some((g, _)) = parts.iter().find(|(_, r)| r.model != base.model) {
        return Err(MergeError::Mismatch(format!(
            "generator {} ran another model than generator 0",
            g.index
        )));
    }

    let mut out = base.clone();
    out.generators = Vec::new();
    let mut corrected = Sum::default();
    let mut uncorrected = Sum::default();
    let mut phase_sums: BTreeMap<usize, [Sum; 4]> = BTreeMap::new();
    let mut second_sums: BTreeMap<usize, Sum> = BTreeMap::new();
    let mut lag = ScheduleLag::default();
    let mut generator = Generator {
        threads: 0,
        cpu_seconds: 0.0,
        wall_seconds: 0.0,
        saturated: false,
        detail: None,
        schedule_lag: ScheduleLag::default(),
        connections_opened: 0,
    };
    let mut details = Vec::new();
    let mut timeline: Vec<TimelineSecond> = Vec::new();
    let mut summaries = Vec::with_capacity(parts.len());
    for (k, (g, r)) in parts.iter().enumerate() {
        let i = g.index;
        corrected.add(&r.latency.corrected_histogram, i, "corrected latency")?;
        uncorrected.add(&g.uncorrected_histogram, i, "uncorrected latency")?;
        if k > 0 {
            out.offered_rate = sum_opt(out.offered_rate, r.offered_rate);
            out.users = match (out.users, r.users) {
                (Some(a), Some(b)) => Some(a + b),
                (a, b) => a.or(b),
            };
            out.duration_seconds = out.duration_seconds.max(r.duration_seconds);
            out.measured_seconds = out.measured_seconds.max(r.measured_seconds);
            out.sent += r.sent;
            out.completed += r.completed;
            out.succeeded += r.succeeded;
            out.dropped += r.dropped;
            out.shed += r.shed;
            out.achieved_rate += r.achieved_rate;
            out.throughput += r.throughput;
            out.errors.add_counts(&r.errors);
            for (class, example) in &r.error_examples {
                out.error_examples
                    .entry(*class)
                    .or_insert_with(|| example.clone());
            }
            out.cancelled |= r.cancelled;
            out.stopped_at_seconds = match (out.stopped_at_seconds, r.stopped_at_seconds) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            match (&mut out.writes, &r.writes) {
                (Some(mine), Some(theirs)) => {
                    mine.attempted.union_with(&theirs.attempted);
                    mine.acknowledged.union_with(&theirs.acknowledged);
                    mine.failed.union_with(&theirs.failed);
                }
                (mine @ None, Some(theirs)) => *mine = Some(theirs.clone()),
                _ => {}
            }
        }
        for row in &r.timeline {
            let at = row.second as usize;
            while timeline.len() <= at {
                let second = timeline.len() as u32;
                timeline.push(TimelineSecond {
                    second,
                    ..TimelineSecond::default()
                });
            }
            let mine = &mut timeline[at];
            mine.sent += row.sent;
            mine.completed += row.completed;
            mine.errors += row.errors;
            mine.p99 = max_opt(mine.p99, row.p99);
            mine.offered = sum_opt(mine.offered, row.offered);
        }
        if let Some(shape) = &r.shape {
            for (n, sec) in shape.seconds.iter().enumerate() {
                let text = g.second_histograms.get(n).map_or("", String::as_str);
                second_sums
                    .entry(n)
                    .or_default()
                    .add(text, i, "per-second latency")?;
                if k > 0
                    && let Some(mine) = out.shape.as_mut().and_then(|s| s.seconds.get_mut(n))
                {
                    mine.offered_rate += sec.offered_rate;
                    mine.sent += sec.sent;
                    mine.answered += sec.answered;
                    mine.errors += sec.errors;
                    mine.dropped += sec.dropped;
                    mine.censored += sec.censored;
                }
            }
        }
        for (n, p) in r.phases.iter().enumerate() {
            let sums = phase_sums.entry(n).or_default();
            let hist = g.phases.iter().find(|h| h.phase == p.phase);
            let none = String::new();
            let (c, u) = hist.map_or((&none, &none), |h: &PhaseHistograms| {
                (&h.corrected, &h.uncorrected)
            });
            sums[0].add(c, i, "phase corrected latency")?;
            sums[1].add(u, i, "phase uncorrected latency")?;
            sums[2].add(&p.fast_error_histogram, i, "phase fast-error latency")?;
            sums[3].add(&p.ended_histogram, i, "phase ended latency")?;
            if k > 0
                && let Some(mine) = out.phases.iter_mut().find(|m| m.phase == p.phase)
            {
                add_phase(mine, p);
            }
        }
        let gl = r.generator.schedule_lag;
        lag.dispatched += gl.dispatched;
        lag.late += gl.late;
        lag.p50 = max_opt(lag.p50, gl.p50);
        lag.p99 = max_opt(lag.p99, gl.p99);
        lag.max = max_opt(lag.max, gl.max);
        generator.threads += r.generator.threads;
        generator.cpu_seconds += r.generator.cpu_seconds;
        generator.wall_seconds = generator.wall_seconds.max(r.generator.wall_seconds);
        generator.connections_opened += r.generator.connections_opened;
        let late_start = g.started_late_seconds > LATE_START;
        let mut detail = r.generator.detail.clone();
        if late_start {
            let late = format!(
                "it began its schedule {:.2} s after the agreed start (more than {} ms): the generators did not offer one schedule",
                g.started_late_seconds,
                (LATE_START * 1e3) as u64
            );
            detail = Some(match detail {
                Some(d) => format!("{d}; {late}"),
                None => late,
            });
        }
        let saturated = r.generator.saturated || late_start;
        if saturated {
            details.push(format!(
                "generator {i} of {of}: {}",
                detail.as_deref().unwrap_or("saturated")
            ));
        }
        summaries.push(GeneratorSummary {
            index: i,
            offered_rate: r.offered_rate,
            sent: r.sent,
            completed: r.completed,
            achieved_rate: r.achieved_rate,
            cpu_seconds: r.generator.cpu_seconds,
            schedule_lag: gl,
            started_late_seconds: g.started_late_seconds,
            saturated,
            detail,
        });
    }
    for (n, sums) in phase_sums {
        if let Some(p) = out.phases.get_mut(n) {
            p.corrected = sums[0].summary();
            p.uncorrected = sums[1].summary();
            p.fast_error_latency = sums[2].summary();
            p.fast_error_histogram = sums[2].encoded("");
            p.ended_latency = sums[3].summary();
            p.ended_histogram = sums[3].encoded("");
        }
    }
    if let Some(shape) = &mut out.shape {
        for (n, sum) in second_sums {
            if let Some(sec) = shape.seconds.get_mut(n) {
                sec.latency = sum.summary();
            }
        }
    }
    out.latency = Latency {
        corrected: corrected.summary(),
        uncorrected: uncorrected.summary(),
        censored: parts
            .iter()
            .map(|(_, r)| r.latency.censored)
            .sum::<Option<u64>>(),
        corrected_histogram: corrected.encoded(&base.latency.corrected_histogram),
        ..base.latency.clone()
    };
    out.timeline = timeline;
    generator.saturated = !details.is_empty();
    generator.detail = (!details.is_empty()).then(|| details.join("; "));
    generator.schedule_lag = lag;
    out.generator = generator;
    out.generators = summaries;
    Ok(out)
}

/// Add `theirs`'s counts to `mine` (same phase; latencies are set from the summed histograms).
fn add_phase(mine: &mut PhaseReport, theirs: &PhaseReport) {
    mine.sent += theirs.sent;
    mine.completed += theirs.completed;
    mine.succeeded += theirs.succeeded;
    mine.dropped += theirs.dropped;
    mine.shed += theirs.shed;
    mine.errors.add_counts(&theirs.errors);
    mine.peak_in_flight += theirs.peak_in_flight;
    mine.fast_errors += theirs.fast_errors;
}

#[cfg(test)]
mod tests;
