//! The [`Recorder`]: the only place measurements go during a run. Constant memory per run
//! (a few HdrHistograms, one row per second of timeline, one bit per request only when writes
//! are recorded): no sample lists. It classifies every event by the request's intended start
//! (warmup or measured, which phase) and by the time it happened (timeline second).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use crate::error::LoadError;
use crate::plan::PhaseWindow;
use crate::report::{ErrorClass, ErrorCounts, PhaseReport, ScheduleLag, TimelineSecond, Writes};

/// How a request ended.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Ending {
    /// The service answered (any status or reply line).
    pub answered: bool,
    /// `None`: success.
    pub error: Option<ErrorClass>,
    /// An answer 429 or 503.
    pub shed: bool,
    /// What went wrong, for the report's first example per class.
    pub example: Option<String>,
}

impl Ending {
    pub fn success() -> Ending {
        Ending {
            answered: true,
            error: None,
            shed: false,
            example: None,
        }
    }

    pub fn answer_error(class: ErrorClass, shed: bool, example: String) -> Ending {
        Ending {
            answered: true,
            error: Some(class),
            shed,
            example: Some(example),
        }
    }

    pub fn failed(class: ErrorClass, example: String) -> Ending {
        Ending {
            answered: false,
            error: Some(class),
            shed: false,
            example: Some(example),
        }
    }
}

/// Longest error example kept.
const EXAMPLE_CHARS: usize = 200;

pub(crate) fn histogram(max_us: u64, sigfig: u8) -> Result<Histogram<u64>, LoadError> {
    Histogram::new_with_bounds(1, max_us.max(2), sigfig)
        .map_err(|e| LoadError::Plan(format!("latency range up to {max_us} µs: {e:?}")))
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Counts {
    pub sent: u64,
    pub completed: u64,
    pub succeeded: u64,
    pub dropped: u64,
    pub shed: u64,
    pub errors: ErrorCounts,
}

impl Counts {
    fn add(&mut self, o: &Counts) {
        self.sent += o.sent;
        self.completed += o.completed;
        self.succeeded += o.succeeded;
        self.dropped += o.dropped;
        self.shed += o.shed;
        self.errors.add_counts(&o.errors);
    }

    fn end(&mut self, e: &Ending) {
        self.completed += u64::from(e.answered);
        self.succeeded += u64::from(e.error.is_none());
        self.shed += u64::from(e.shed);
        if let Some(class) = e.error {
            self.errors.add(class);
        }
    }
}

struct Phase {
    window: PhaseWindow,
    start: Instant,
    end: Instant,
    counts: Counts,
    /// Most requests this loop had outstanding when one of the phase was sent.
    peak_in_flight: u64,
    corrected: Histogram<u64>,
    uncorrected: Histogram<u64>,
    /// Corrected latency of the phase's failures that came back before the timeout.
    fast_errors: Histogram<u64>,
    /// Corrected latency of every request of the phase that ended (a timeout when it was given
    /// up on).
    ended: Histogram<u64>,
}

pub(crate) struct Recorder {
    measured_start: Instant,
    /// The end of the measured phase (moved earlier by a stop).
    window_end: Instant,
    /// Answers (and successes) that arrived inside the measured phase, whatever the request's
    /// intended start: the service's answer rate during the phase.
    pub window_answers: u64,
    pub window_successes: u64,
    pub counts: Counts,
    /// Corrected latency of every measured request that ended (answered, failed fast or
    /// timed out), microseconds.
    pub corrected: Histogram<u64>,
    pub uncorrected: Histogram<u64>,
    /// Of those, requests that timed out: recorded when given up on (a lower bound).
    pub censored: u64,
    pub examples: BTreeMap<ErrorClass, String>,
    rows: Vec<TimelineSecond>,
    row_latency: Histogram<u64>,
    row_latency_at: usize,
    phases: Vec<Phase>,
    pub writes: Option<Writes>,
    lag: Histogram<u64>,
    lag_dispatched: u64,
    lag_late: u64,
    late: Duration,
    pub connections: u64,
    /// A staged load: per second of intended start (measured phase), its counts and the
    /// corrected latency of its answers (`None`: not kept).
    starts: Option<Vec<StartSecond>>,
    /// An empty histogram of the rows' kind (two significant digits, growing with the
    /// values seen: a few KiB per second).
    start_template: Option<Histogram<u64>>,
}

/// One second of intended starts.
struct StartSecond {
    sent: u64,
    answered: u64,
    errors: u64,
    dropped: u64,
    /// Requests of the second that timed out (in `latency` at their timeout).
    censored: u64,
    /// Corrected latency of every request of the second that ended.
    latency: Histogram<u64>,
}

impl StartSecond {
    fn new(template: &Histogram<u64>) -> StartSecond {
        StartSecond {
            sent: 0,
            answered: 0,
            errors: 0,
            dropped: 0,
            censored: 0,
            latency: template.clone(),
        }
    }
}

impl Recorder {
    /// `horizon`: the longest latency worth resolving (larger values saturate at it).
    pub fn new(
        measured_start: Instant,
        duration: Duration,
        horizon: Duration,
        phases: &[PhaseWindow],
        record_writes: bool,
        late: Duration,
    ) -> Result<Recorder, LoadError> {
        let max_us = micros(horizon);
        Ok(Recorder {
            measured_start,
            window_end: measured_start + duration,
            window_answers: 0,
            window_successes: 0,
            counts: Counts::default(),
            corrected: histogram(max_us, 3)?,
            uncorrected: histogram(max_us, 3)?,
            censored: 0,
            examples: BTreeMap::new(),
            rows: Vec::new(),
            row_latency: histogram(max_us, 2)?,
            row_latency_at: 0,
            phases: phases
                .iter()
                .map(|w| {
                    Ok(Phase {
                        window: w.clone(),
                        start: measured_start + w.start,
                        end: measured_start + w.end,
                        counts: Counts::default(),
                        peak_in_flight: 0,
                        corrected: histogram(max_us, 3)?,
                        uncorrected: histogram(max_us, 3)?,
                        fast_errors: histogram(max_us, 3)?,
                        ended: histogram(max_us, 3)?,
                    })
                })
                .collect::<Result<_, LoadError>>()?,
            writes: record_writes.then(Writes::default),
            lag: histogram(max_us, 2)?,
            lag_dispatched: 0,
            lag_late: 0,
            late,
            connections: 0,
            starts: None,
            start_template: None,
        })
    }

    /// Keep statistics per second of intended start (a staged load's `shape.seconds`).
    pub fn keep_start_seconds(&mut self) -> Result<(), LoadError> {
        let template = Histogram::new(2)
            .map_err(|e| LoadError::Plan(format!("per-second latency histogram: {e:?}")))?;
        self.start_template = Some(template);
        self.starts.get_or_insert_with(Vec::new);
        Ok(())
    }

    /// The row of the second `intended` falls in (measured), if rows are kept.
    fn start_row(&mut self, intended: Instant) -> Option<&mut StartSecond> {
        let starts = self.starts.as_mut()?;
        let template = self.start_template.as_ref()?;
        let index = intended
            .checked_duration_since(self.measured_start)?
            .as_secs() as usize;
        while starts.len() <= index {
            starts.push(StartSecond::new(template));
        }
        starts.get_mut(index)
    }

    /// The rows per second of intended start, `seconds` of them at least (offered rates are
    /// the caller's to fill).
    pub fn start_seconds(&self, seconds: usize) -> Vec<qualify_model::load::ShapeSecond> {
        let Some(starts) = &self.starts else {
            return Vec::new();
        };
        (0..seconds.max(starts.len()))
            .map(|i| {
                let mut row = qualify_model::load::ShapeSecond {
                    second: i as u32,
                    ..Default::default()
                };
                if let Some(s) = starts.get(i) {
                    row.sent = s.sent;
                    row.answered = s.answered;
                    row.errors = s.errors;
                    row.dropped = s.dropped;
                    row.censored = s.censored;
                    row.latency = crate::report::summary_of(&s.latency);
                }
                row
            })
            .collect()
    }

    /// The measured phase ends at `end` (a stop).
    pub fn end_window(&mut self, end: Instant) {
        self.window_end = self.window_end.min(end);
    }

    fn measured(&self, intended: Instant) -> bool {
        intended >= self.measured_start
    }

    fn row(&mut self, at: Instant) -> (usize, &mut TimelineSecond) {
        let index = at.saturating_duration_since(self.measured_start).as_secs() as usize;
        while self.rows.len() <= index {
            let second = self.rows.len() as u32;
            self.rows.push(TimelineSecond {
                second,
                ..TimelineSecond::default()
            });
        }
        (index, &mut self.rows[index])
    }

    fn phases_of(&mut self, intended: Instant) -> impl Iterator<Item = &mut Phase> {
        self.phases
            .iter_mut()
            .filter(move |p| p.start <= intended && intended < p.end)
    }

    /// A request was sent (or its exchange began) at `now`.
    /// `in_flight`: this loop's outstanding requests, this one included.
    pub fn on_sent(&mut self, seq: u64, intended: Instant, now: Instant, in_flight: u64) {
        if let Some(w) = &mut self.writes {
            w.attempted.insert(seq);
        }
        if !self.measured(intended) {
            return;
        }
        self.counts.sent += 1;
        self.row(now).1.sent += 1;
        if let Some(s) = self.start_row(intended) {
            s.sent += 1;
        }
        for p in self.phases_of(intended) {
            p.counts.sent += 1;
            p.peak_in_flight = p.peak_in_flight.max(in_flight);
        }
    }

    /// A request ended at `now`.
    pub fn on_end(
        &mut self,
        seq: u64,
        intended: Instant,
        sent_at: Instant,
        now: Instant,
        ending: Ending,
    ) {
        if let Some(w) = &mut self.writes {
            match ending.error {
                None => {
                    w.acknowledged.insert(seq);
                }
                // An answer that says no, or a connect refused (nothing was sent): the write
                // failed. Any other ending leaves it unknown.
                Some(class) if ending.answered || class == ErrorClass::Refused => {
                    w.failed.insert(seq);
                }
                Some(_) => {}
            }
        }
        if self.measured_start <= now && now < self.window_end {
            self.window_answers += u64::from(ending.answered);
            self.window_successes += u64::from(ending.error.is_none());
        }
        if !self.measured(intended) {
            return;
        }
        self.counts.end(&ending);
        let corrected = micros(now.saturating_duration_since(intended));
        let uncorrected = micros(now.saturating_duration_since(sent_at));
        let timed_out = ending.error == Some(ErrorClass::Timeout);
        if let Some(s) = self.start_row(intended) {
            s.errors += u64::from(ending.error.is_some());
            s.answered += u64::from(ending.answered);
            s.censored += u64::from(timed_out);
            // Auto-resizing: `record` grows the range (`saturating_record` would clamp).
            let _ = s.latency.record(corrected);
        }
        // Every request that ended counts in the run's latency: an answer of any status, a
        // fast failure, and a timeout at the moment it was given up on (censored: its true
        // latency is at least that). Leaving failures out would let p99 look healthy while
        // requests time out.
        self.corrected.saturating_record(corrected);
        self.uncorrected.saturating_record(uncorrected);
        self.censored += u64::from(timed_out);
        let (index, row) = self.row(now);
        row.completed += u64::from(ending.answered);
        row.errors += u64::from(ending.error.is_some());
        if index >= self.row_latency_at {
            if index > self.row_latency_at {
                self.close_row();
                self.row_latency_at = index;
            }
            self.row_latency.saturating_record(corrected);
        }
        let fast_error = ending
            .error
            .is_some_and(|class| class != ErrorClass::Timeout);
        for p in self.phases_of(intended) {
            p.counts.end(&ending);
            if ending.answered {
                p.corrected.saturating_record(corrected);
                p.uncorrected.saturating_record(uncorrected);
            }
            if fast_error {
                p.fast_errors.saturating_record(corrected);
            }
            p.ended.saturating_record(corrected);
        }
        if let (Some(class), Some(example)) = (ending.error, ending.example) {
            self.examples.entry(class).or_insert_with(|| {
                let mut e: String = example.chars().take(EXAMPLE_CHARS).collect();
                if e.len() < example.len() {
                    e.push('…');
                }
                e
            });
        }
    }

    fn close_row(&mut self) {
        if !self.row_latency.is_empty() {
            let p99 = self.row_latency.value_at_quantile(0.99) as f64 / 1e6;
            if let Some(row) = self.rows.get_mut(self.row_latency_at) {
                row.p99 = Some(p99);
            }
            self.row_latency.reset();
        }
    }

    /// An arrival due at `intended` never got a slot before the schedule ended.
    pub fn on_dropped(&mut self, intended: Instant) {
        if !self.measured(intended) {
            return;
        }
        self.counts.dropped += 1;
        if let Some(s) = self.start_row(intended) {
            s.dropped += 1;
        }
        for p in self.phases_of(intended) {
            p.counts.dropped += 1;
        }
    }

    /// The generator dispatched a measured arrival `lag` after it could have (a slot was free).
    pub fn on_lag(&mut self, lag: Duration) {
        self.lag_dispatched += 1;
        self.lag_late += u64::from(lag > self.late);
        self.lag.saturating_record(micros(lag));
    }

    pub fn schedule_lag(&self) -> ScheduleLag {
        let s = crate::report::summary_of(&self.lag);
        ScheduleLag {
            dispatched: self.lag_dispatched,
            late: self.lag_late,
            p50: s.p50,
            p99: s.p99,
            max: s.max,
        }
    }

    /// Fold another event loop's measurements of the same run into these. Histograms and
    /// counts add up exactly; a timeline row's p99 becomes the larger of the two loops' p99s
    /// for that second (the loops see the same arrival stream, dealt round-robin).
    pub fn merge(&mut self, mut other: Recorder) {
        self.close_row();
        other.close_row();
        self.counts.add(&other.counts);
        self.censored += other.censored;
        // Same bounds on both sides: adding cannot fail.
        let _ = self.corrected.add(&other.corrected);
        let _ = self.uncorrected.add(&other.uncorrected);
        let _ = self.lag.add(&other.lag);
        for (class, example) in other.examples {
            self.examples.entry(class).or_insert(example);
        }
        if other.rows.len() > self.rows.len() {
            let extra = other.rows[self.rows.len()..]
                .iter()
                .map(|r| TimelineSecond {
                    second: r.second,
                    ..TimelineSecond::default()
                });
            self.rows.extend(extra.collect::<Vec<_>>());
        }
        for (mine, theirs) in self.rows.iter_mut().zip(&other.rows) {
            mine.sent += theirs.sent;
            mine.completed += theirs.completed;
            mine.errors += theirs.errors;
            mine.p99 = match (mine.p99, theirs.p99) {
                (Some(a), Some(b)) => Some(a.max(b)),
                (a, b) => a.or(b),
            };
        }
        for (mine, theirs) in self.phases.iter_mut().zip(other.phases) {
            mine.counts.add(&theirs.counts);
            // Each loop owns its share of the slots: the peaks add up to the whole.
            mine.peak_in_flight += theirs.peak_in_flight;
            let _ = mine.corrected.add(&theirs.corrected);
            let _ = mine.uncorrected.add(&theirs.uncorrected);
            let _ = mine.fast_errors.add(&theirs.fast_errors);
            let _ = mine.ended.add(&theirs.ended);
        }
        if let (Some(mine), Some(theirs)) = (&mut self.writes, &other.writes) {
            mine.attempted.union_with(&theirs.attempted);
            mine.acknowledged.union_with(&theirs.acknowledged);
            mine.failed.union_with(&theirs.failed);
        }
        self.window_end = self.window_end.min(other.window_end);
        self.window_answers += other.window_answers;
        self.window_successes += other.window_successes;
        self.lag_dispatched += other.lag_dispatched;
        self.lag_late += other.lag_late;
        self.connections += other.connections;
        if let (Some(mine), Some(theirs), Some(template)) =
            (&mut self.starts, other.starts, &self.start_template)
        {
            for (k, theirs) in theirs.into_iter().enumerate() {
                if mine.len() <= k {
                    mine.push(StartSecond::new(template));
                }
                let m = &mut mine[k];
                m.sent += theirs.sent;
                m.answered += theirs.answered;
                m.errors += theirs.errors;
                m.dropped += theirs.dropped;
                m.censored += theirs.censored;
                // Both auto-resizing: adding cannot fail.
                let _ = m.latency.add(&theirs.latency);
            }
        }
    }

    /// The timeline, rows closed.
    pub fn timeline(&mut self) -> Vec<TimelineSecond> {
        self.close_row();
        std::mem::take(&mut self.rows)
    }

    /// The histograms a report keeps only as summaries, encoded: the uncorrected latency and
    /// each phase's corrected and uncorrected latency (for a split load's merge).
    pub fn extras(&self) -> crate::engine::Extras {
        crate::engine::Extras {
            uncorrected: encoded(&self.uncorrected),
            phases: self
                .phases
                .iter()
                .map(|p| qualify_model::load::PhaseHistograms {
                    phase: p.window.phase,
                    corrected: encoded(&p.corrected),
                    uncorrected: encoded(&p.uncorrected),
                })
                .collect(),
            seconds: self
                .starts
                .iter()
                .flatten()
                .map(|s| encoded(&s.latency))
                .collect(),
        }
    }

    pub fn phase_reports(&self) -> Vec<PhaseReport> {
        self.phases
            .iter()
            .map(|p| PhaseReport {
                phase: p.window.phase,
                start_seconds: p.window.start.as_secs_f64(),
                end_seconds: p.window.end.as_secs_f64(),
                sent: p.counts.sent,
                completed: p.counts.completed,
                succeeded: p.counts.succeeded,
                dropped: p.counts.dropped,
                shed: p.counts.shed,
                errors: p.counts.errors,
                peak_in_flight: p.peak_in_flight,
                corrected: crate::report::summary_of(&p.corrected),
                uncorrected: crate::report::summary_of(&p.uncorrected),
                fast_errors: p.fast_errors.len(),
                fast_error_latency: crate::report::summary_of(&p.fast_errors),
                fast_error_histogram: encoded(&p.fast_errors),
                ended_latency: crate::report::summary_of(&p.ended),
                ended_histogram: encoded(&p.ended),
            })
            .collect()
    }
}

/// A histogram's encoding, or nothing for an empty one.
fn encoded(h: &Histogram<u64>) -> String {
    if h.is_empty() {
        String::new()
    } else {
        crate::report::encode_histogram(h)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use qualify_model::Phase;

    #[test]
    fn events_go_to_the_measured_counts_phases_and_timeline() {
        let t0 = Instant::now();
        let measured = t0 + Duration::from_secs(1);
        let s = Duration::from_secs;
        let ms = Duration::from_millis;
        let phases = [
            PhaseWindow {
                phase: Phase::Before,
                start: s(0),
                end: s(1),
            },
            PhaseWindow {
                phase: Phase::After,
                start: s(1),
                end: s(3),
            },
        ];
        let mut r = Recorder::new(measured, s(3), s(60), &phases, true, ms(10)).unwrap();
        // A warmup request: attempted, acknowledged, never counted.
        r.on_sent(0, t0, t0, 1);
        r.on_end(0, t0, t0, t0 + ms(5), Ending::success());
        // Measured: one fast, one that waited 300 ms for a slot, one timeout, one 503.
        let at = |x: u64| measured + ms(x);
        r.on_sent(1, at(0), at(0), 1);
        r.on_end(1, at(0), at(0), at(2), Ending::success());
        r.on_sent(2, at(100), at(400), 1);
        r.on_end(2, at(100), at(400), at(402), Ending::success());
        r.on_sent(3, at(1200), at(1200), 1);
        r.on_end(
            3,
            at(1200),
            at(1200),
            at(3200),
            Ending::failed(ErrorClass::Timeout, "no answer".into()),
        );
        r.on_sent(4, at(1300), at(1300), 1);
        r.on_end(
            4,
            at(1300),
            at(1300),
            at(1301),
            Ending::answer_error(ErrorClass::Status5xx, true, "HTTP 503".into()),
        );
        r.on_dropped(at(2500));
        r.on_dropped(t0);

        let c = r.counts;
        assert_eq!(
            (c.sent, c.completed, c.succeeded, c.dropped, c.shed),
            (4, 3, 2, 1, 1)
        );
        assert_eq!((c.errors.timeout, c.errors.status_5xx), (1, 1));
        // Every request that ended has a latency, the timeout at the moment it was given up
        // on (2 s after it was sent): it is censored, never left out.
        assert_eq!(r.corrected.len(), 4);
        assert_eq!(r.censored, 1);
        assert!(r.corrected.max() >= 2_000_000, "{}", r.corrected.max());
        assert!(
            r.corrected.value_at_quantile(0.75) >= 300_000,
            "the slot wait counts: {}",
            r.corrected.value_at_quantile(0.75)
        );
        assert!(
            r.uncorrected.value_at_quantile(0.75) < 3_000,
            "{}",
            r.uncorrected.value_at_quantile(0.75)
        );
        let w = r.writes.as_ref().unwrap();
        assert_eq!(w.attempted.ranges(), [(0, 4)]);
        assert_eq!(w.acknowledged.ranges(), [(0, 2)]);
        // The 503 said no: failed. The timeout may have happened: unknown (in neither set).
        assert_eq!(w.failed.ranges(), [(4, 4)]);

        let phases = r.phase_reports();
        assert_eq!((phases[0].sent, phases[0].succeeded), (2, 2));
        assert_eq!(
            (phases[1].sent, phases[1].errors.total(), phases[1].dropped),
            (2, 2, 1)
        );
        assert_eq!(phases[1].corrected.count, 1, "the timeout has no latency");
        // The 503 came back fast (1 ms); the timeout is not a fast error.
        assert_eq!((phases[1].fast_errors, phases[1].timeouts()), (1, 1));
        assert!(phases[1].fast_error_latency.max.unwrap() < 0.01);
        let h = crate::report::decode_histogram(&phases[1].fast_error_histogram).unwrap();
        assert_eq!(h.len(), 1);
        assert_eq!(
            (
                phases[0].fast_errors,
                phases[0].fast_error_histogram.as_str()
            ),
            (0, "")
        );
        assert_eq!(phases[1].goodput(), Some(0.0));
        assert_eq!(phases[0].goodput(), Some(2.0));
        assert_eq!(phases[1].answered_rate(), Some(0.5));
        // Every request that ended has a latency there, the timeout at the moment it was given
        // up on (2 s after its intended start).
        assert_eq!(phases[1].ended_latency.count, 2);
        assert!(phases[1].ended_latency.max.unwrap() >= 2.0);

        let timeline = r.timeline();
        let sums = timeline.iter().fold((0, 0, 0), |a, row| {
            (a.0 + row.sent, a.1 + row.completed, a.2 + row.errors)
        });
        assert_eq!(sums, (4, 3, 2));
        assert_eq!(timeline.len(), 4, "the timeout ended in second 3");
        assert!(timeline[0].p99.unwrap() >= 0.3);
        assert_eq!(timeline[2].p99, None);
        assert_eq!(r.examples[&ErrorClass::Status5xx], "HTTP 503");
        // In the phase's window: the warmup answer came before it, the timeout has no
        // answer; the other three answered inside it.
        assert_eq!((r.window_answers, r.window_successes), (3, 2));
    }

    #[test]
    fn loops_merge_into_one_run() {
        let t0 = Instant::now();
        let s = Duration::from_secs;
        let ms = Duration::from_millis;
        let phases = [PhaseWindow {
            phase: Phase::During,
            start: s(0),
            end: s(9),
        }];
        let new = || Recorder::new(t0, s(3), s(60), &phases, true, ms(10)).unwrap();
        let (mut a, mut b) = (new(), new());
        let at = |x: u64| t0 + ms(x);
        a.on_sent(0, at(0), at(0), 1);
        a.on_end(0, at(0), at(0), at(10), Ending::success());
        b.on_sent(1, at(500), at(500), 1);
        b.on_end(1, at(500), at(500), at(1600), Ending::success());
        b.on_sent(3, at(1500), at(1500), 1);
        b.on_end(
            3,
            at(1500),
            at(1500),
            at(1501),
            Ending::failed(ErrorClass::Reset, "reset".into()),
        );
        b.on_lag(ms(20));
        a.merge(b);
        let c = a.counts;
        assert_eq!(
            (c.sent, c.completed, c.succeeded, c.errors.reset),
            (3, 2, 2, 1)
        );
        assert_eq!(a.corrected.len(), 3, "the reset counts too");
        assert_eq!(a.censored, 0);
        assert_eq!((a.window_answers, a.window_successes), (2, 2));
        assert_eq!(a.schedule_lag().late, 1);
        let w = a.writes.as_ref().unwrap();
        assert_eq!(w.attempted.ranges(), [(0, 1), (3, 3)]);
        assert_eq!(w.acknowledged.ranges(), [(0, 1)]);
        assert!(w.failed.is_empty(), "a reset leaves the write unknown");
        assert_eq!(a.phase_reports()[0].sent, 3);
        // The reset (1 ms) is one loop's fast error: counts and histograms add.
        assert_eq!(a.phase_reports()[0].fast_errors, 1);
        let timeline = a.timeline();
        assert_eq!(timeline.len(), 2);
        assert_eq!((timeline[0].sent, timeline[0].completed), (2, 1));
        assert_eq!(
            (timeline[1].sent, timeline[1].completed, timeline[1].errors),
            (1, 1, 1)
        );
        assert!(timeline[1].p99.unwrap() >= 1.1, "{timeline:?}");
    }

    #[test]
    fn lag_counts_late_dispatches() {
        let mut r = Recorder::new(
            Instant::now(),
            Duration::from_secs(1),
            Duration::from_secs(10),
            &[],
            false,
            Duration::from_millis(10),
        )
        .unwrap();
        r.on_lag(Duration::from_micros(80));
        r.on_lag(Duration::from_millis(25));
        let lag = r.schedule_lag();
        assert_eq!((lag.dispatched, lag.late), (2, 1));
        assert!(lag.max.unwrap() >= 0.025);
    }
}
