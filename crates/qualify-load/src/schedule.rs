//! The open model's schedule: when each arrival is due. [`Schedule`] is a plan's expected
//! arrival count Λ(t) — a constant `rate` over warmup and duration, or linear `stages` (k6's
//! ramping arrival rate: each stage from the previous stage's rate to its own) — and its
//! inverse. [`Stream`] walks one dispatcher's arrivals (every `step`-th, from `first`):
//! `uniform` puts arrival `i` where Λ reaches `i` (at a constant rate, `i / rate`: the engine's
//! schedule before stages existed, bit for bit); `poisson` draws exponential gaps in Λ (time
//! rescaling: a non-homogeneous Poisson process at the current rate), each stream from its own
//! seeded generator, so the split of a load over streams is itself Poisson at the whole rate.

use qualify_model::load::{Arrivals, LoadPlan};

/// One piece of the rate: linear from `r0` to `r1` over `[t0, t0 + len)`, with `n0` expected
/// arrivals before it.
#[derive(Debug, Clone, Copy)]
struct Segment {
    t0: f64,
    len: f64,
    r0: f64,
    r1: f64,
    n0: f64,
}

impl Segment {
    /// Expected arrivals in the first `tau` seconds of the segment.
    fn count(&self, tau: f64) -> f64 {
        let tau = tau.clamp(0.0, self.len);
        self.r0 * tau + (self.r1 - self.r0) * tau * tau / (2.0 * self.len)
    }

    /// Seconds into the segment at which `k` expected arrivals have happened.
    fn time_of(&self, k: f64) -> f64 {
        let a = (self.r1 - self.r0) / (2.0 * self.len);
        if k <= 0.0 {
            return 0.0;
        }
        if a == 0.0 {
            return k / self.r0;
        }
        // The root of a·τ² + r0·τ − k = 0 in the form that stays exact when r0 = 0.
        let disc = (self.r0 * self.r0 + 4.0 * a * k).max(0.0);
        2.0 * k / (self.r0 + disc.sqrt())
    }
}

/// A plan's arrival schedule, in seconds from the schedule's start (the warmup's start).
#[derive(Debug, Clone)]
pub struct Schedule {
    segments: Vec<Segment>,
    end: f64,
    total: f64,
}

impl Schedule {
    /// The schedule of `plan` (open model; a closed plan has no arrivals).
    pub fn of(plan: &LoadPlan) -> Schedule {
        let rate = plan.rate().unwrap_or(0.0);
        let warmup = plan.warmup.as_secs_f64();
        let mut pieces: Vec<(f64, f64, f64)> = Vec::new();
        if plan.stages.is_empty() {
            pieces.push(((plan.warmup + plan.duration).as_secs_f64(), rate, rate));
        } else {
            if warmup > 0.0 {
                pieces.push((warmup, plan.start_rate, plan.start_rate));
            }
            let mut from = plan.start_rate;
            for s in &plan.stages {
                pieces.push((s.duration.as_secs_f64(), from, s.rate));
                from = s.rate;
            }
        }
        let mut segments = Vec::with_capacity(pieces.len());
        let (mut t, mut n) = (0.0, 0.0);
        for (len, r0, r1) in pieces {
            if len <= 0.0 {
                continue;
            }
            let seg = Segment {
                t0: t,
                len,
                r0,
                r1,
                n0: n,
            };
            n += seg.count(len);
            t += len;
            segments.push(seg);
        }
        Schedule {
            segments,
            end: t,
            total: n,
        }
    }

    /// Seconds from the start to the schedule's end.
    pub fn end(&self) -> f64 {
        self.end
    }

    /// Expected arrivals in `[0, t)`.
    pub fn count(&self, t: f64) -> f64 {
        match self.segments.iter().rev().find(|s| s.t0 <= t) {
            Some(s) => s.n0 + s.count(t - s.t0),
            None => 0.0,
        }
    }

    /// Expected arrivals per second over `[t0, t1)`.
    pub fn mean_rate(&self, t0: f64, t1: f64) -> f64 {
        if t1 <= t0 {
            return 0.0;
        }
        (self.count(t1) - self.count(t0)) / (t1 - t0)
    }

    /// The time at which the expected count reaches `u` (`None`: not before the end).
    pub fn time_of(&self, u: f64) -> Option<f64> {
        if !(u >= 0.0 && u < self.total) {
            return None;
        }
        let seg = self
            .segments
            .iter()
            .rev()
            .find(|s| s.n0 <= u && s.r0.max(s.r1) > 0.0)?;
        let t = seg.t0 + seg.time_of(u - seg.n0).min(seg.len);
        (t < self.end).then_some(t)
    }
}

/// One dispatcher's arrivals: sequence numbers `first, first + step, …` with their due times
/// (seconds from the schedule's start), until the schedule ends.
pub struct Stream<'a> {
    schedule: &'a Schedule,
    next: u64,
    step: u64,
    poisson: Option<(SplitMix, f64)>,
}

impl<'a> Stream<'a> {
    pub fn new(schedule: &'a Schedule, arrivals: Arrivals, first: u64, step: u64) -> Stream<'a> {
        let poisson = match arrivals {
            Arrivals::Uniform => None,
            Arrivals::Poisson { seed } => Some((
                SplitMix(seed ^ first.wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15)),
                0.0,
            )),
        };
        Stream {
            schedule,
            next: first,
            step: step.max(1),
            poisson,
        }
    }
}

impl Iterator for Stream<'_> {
    type Item = (u64, f64);

    fn next(&mut self) -> Option<(u64, f64)> {
        let u = match &mut self.poisson {
            None => self.next as f64,
            Some((rng, u)) => {
                *u += self.step as f64 * rng.exponential();
                *u
            }
        };
        let t = self.schedule.time_of(u)?;
        let seq = self.next;
        self.next += self.step;
        Some((seq, t))
    }
}

/// SplitMix64 (Steele, Lea, Flood 2014): a small, well-mixed seeded generator.
pub struct SplitMix(pub u64);

impl SplitMix {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// An exponential variate of mean 1.
    pub fn exponential(&mut self) -> f64 {
        // Uniform in (0, 1]: never ln(0).
        let u = ((self.next_u64() >> 11) + 1) as f64 / (1u64 << 53) as f64;
        -u.ln()
    }
}

#[cfg(test)]
mod tests;
