//! The boundary search on one ladder of ordered points, as a pure state machine: it says which
//! point it wants next ([`Search::next`]) and learns each outcome ([`Search::record`]); it never
//! runs anything, so the executor can interleave searches, reuse memoized cells and stop at any
//! time.
//!
//! **Monotonicity assumption.** Along the searched axis, with the other axes fixed, the artifact
//! passes at every point up to some boundary and fails at every point above it. The search result
//! (`last_pass`, `first_fail`) is exact under that assumption; one extra probe tests it (see
//! [`MONOTONICITY_ASSUMPTION`]).
//!
//! **Algorithm.** Over point indices `0..n` the search keeps `pass` (largest index known to pass,
//! `-1` before any) and `fail` (smallest index known to fail, `n` before any); the boundary lies
//! in between and `fail - pass` outcomes remain possible.
//!
//! 1. *Gallop* from the low end: probe index 0, then 1, and after every pass grow the step by a
//!    factor `g` (indices 0, 1, 1+g, 1+g+g², …), so that a boundary near the bottom is found
//!    without probing far above it — high points are the expensive ones (big workloads, long
//!    timeouts, slow failures).
//! 2. Galloping is *budgeted*: the search promises at most `B = ⌈log2(n+1)⌉ + slack` search
//!    probes, i.e. plain bisection plus `slack`. A gallop probe is raised just enough that the
//!    rest can still be finished by bisection within the budget (after a pass at `x` with `R`
//!    probes left, `fail - x ≤ 2^(R-1)` must hold). The growth factor follows from the budget:
//!    `g = 2^⌈⌈log2(n+1)⌉ / (slack-1)⌉` (at least 2), so with a generous slack it is classic
//!    doubling, and with a tight one the few affordable gallop probes are spread geometrically
//!    over the whole domain instead of being spent on 1, 3, 7.
//! 3. After the first failure, *bisect* between `pass` and `fail` until they are adjacent.
//! 4. *Check* monotonicity with one more probe where the assumption predicts the outcome: above
//!    the first failure (at about twice its index, capped at the top, or the nearest unprobed
//!    point), or, when everything passed, in the middle of the widest unprobed gap below the top.
//!    A contradicting outcome makes the boundary `monotonic: false`.
//!
//! 4. *Repeat at the edge* (when asked: `edge_runs > 1`, the default for a load axis, whose
//!    verdicts move with run-to-run noise): before the check, each of the two points at the
//!    boundary is run until it has `edge_runs` runs, all agreeing. A point whose runs disagree
//!    (or a pass point that failed on a repeat) is noise, not an edge: the walker on that side
//!    moves outward by a doubling step (1, 2, 4, … points) to a point that agrees with itself,
//!    so the reported boundary is an interval `[last_pass, first_fail]` as wide as the
//!    measured noise and never finer; the points in between are listed with their runs. A
//!    budget caps the extra probes; a side still unsettled when it ends makes the boundary
//!    `edge_confirmed: false`. This is the general "repeat at the edge until the verdicts
//!    agree or the budget ends, report an interval" mechanism.
//!
//! Probe counts (search probes, the check comes on top), default slack 3, boundaries spread
//! log-uniformly: 1000 points (`[1, 1000]`) at most 13, about 12 on average, with the highest
//! probe on average ~3× the boundary and at most 16× (plain doubling within the same budget:
//! ~5×, up to 122×; plain bisection: 10 probes, ~5×, up to 488×); 65281 points (`[256, 65536]`)
//! at most 19, about 16 on average. A search never probes a point twice, so a short value list
//! never costs more probes than it has values. A larger slack buys probes closer to a low
//! boundary for more probes.

use std::collections::{BTreeMap, BTreeSet};

use qualify_model::Outcome;

/// The assumption a boundary rests on, in the words a receipt can quote.
pub const MONOTONICITY_ASSUMPTION: &str = "along a searched axis, with the other axes fixed, \
every point below the boundary passes and every point above it fails; one extra probe beyond \
the boundary tests this, and a boundary whose check contradicts it is marked monotonic: false";

/// Default extra probes a search may spend beyond plain bisection to gallop from the low end.
pub const DEFAULT_SEARCH_SLACK: u32 = 3;

/// Default most extra probes a search spends repeating and widening its edge (with
/// `edge_runs > 1`).
pub const DEFAULT_EDGE_BUDGET: u32 = 8;

/// The outcomes learned at one point.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Tally {
    pub passed: u32,
    pub failed: u32,
    /// The first failing outcome seen there.
    pub fail_outcome: Option<Outcome>,
}

impl Tally {
    fn runs(&self) -> u32 {
        self.passed + self.failed
    }
}

/// Where a search stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Narrowing the bracket.
    Searching,
    /// Bracket closed; repeating (and, under noise, widening) the points at the edge.
    Edge,
    /// Bracket closed; the monotonicity check at this index is outstanding.
    Checking(i128),
    /// Finished (with or without a check).
    Done,
    /// An outcome that says nothing about the artifact (`interrupted`) stopped the search.
    Aborted,
}

/// The monotonicity check as it happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CheckOutcome {
    pub index: i128,
    pub outcome: Outcome,
    /// What the assumption predicted: pass (below the boundary) or fail (above it).
    pub expected_pass: bool,
}

impl CheckOutcome {
    pub fn agrees(&self) -> bool {
        (self.outcome == Outcome::Ok) == self.expected_pass
    }
}

/// One boundary search over `n` ordered points.
#[derive(Debug, Clone)]
pub(crate) struct Search {
    n: i128,
    pass: i128,
    fail: i128,
    fail_outcome: Option<Outcome>,
    /// Probes left in the budget for the search phase.
    budget: u32,
    step: i128,
    /// Factor the gallop step grows by after each pass.
    growth: i128,
    galloping: bool,
    /// Every index learned so far.
    seen: BTreeSet<i128>,
    probes: usize,
    phase: Phase,
    check: Option<CheckOutcome>,
    /// Every outcome learned, per point.
    tally: BTreeMap<i128, Tally>,
    /// Runs each edge point needs, all agreeing (1: no repeats).
    edge_runs: u32,
    /// Extra probes left for the edge.
    edge_budget: u32,
    /// The edge walkers: the pass side's candidate and the fail side's, and their steps.
    lo: i128,
    hi: i128,
    step_lo: i128,
    step_hi: i128,
    /// Both edge points reached `edge_runs` agreeing runs (`None`: not asked, or not there).
    edge_confirmed: Option<bool>,
}

/// `⌈log2(x)⌉` for `x ≥ 1`.
pub(crate) fn ceil_log2(x: i128) -> u32 {
    if x <= 1 {
        0
    } else {
        128 - (x - 1).leading_zeros()
    }
}

/// `2^k`, saturating.
fn pow2(k: u32) -> i128 {
    if k >= 126 { i128::MAX / 2 } else { 1i128 << k }
}

impl Search {
    /// A search over `n ≥ 1` points allowed `slack` probes beyond plain bisection, one run per
    /// point.
    #[cfg(test)]
    pub fn new(n: i128, slack: u32) -> Search {
        Search::with_edge(n, slack, 1, 0)
    }

    /// [`Search::new`], repeating each of the two points at the edge until it has `edge_runs`
    /// agreeing runs, spending at most `edge_budget` extra probes there.
    pub fn with_edge(n: i128, slack: u32, edge_runs: u32, edge_budget: u32) -> Search {
        let n = n.max(1);
        let levels = ceil_log2(n + 1);
        let exponent = levels.div_ceil(slack.saturating_sub(1).max(1)).clamp(1, 64);
        Search {
            tally: BTreeMap::new(),
            edge_runs: edge_runs.max(1),
            edge_budget,
            lo: -1,
            hi: n,
            step_lo: 1,
            step_hi: 1,
            edge_confirmed: None,
            n,
            pass: -1,
            fail: n,
            fail_outcome: None,
            budget: ceil_log2(n + 1).saturating_add(slack),
            step: 1,
            growth: pow2(exponent),
            galloping: true,
            seen: BTreeSet::new(),
            probes: 0,
            phase: Phase::Searching,
            check: None,
        }
    }

    /// The most search-phase probes this search can take (the check comes on top).
    #[cfg(test)]
    pub fn budget_bound(n: i128, slack: u32) -> u32 {
        ceil_log2(n.max(1) + 1).saturating_add(slack)
    }

    /// The index the search wants learned next, or `None` when it is finished. Asking twice
    /// without a [`record`](Self::record) in between gives the same index.
    pub fn next(&mut self) -> Option<i128> {
        if self.phase == Phase::Searching && self.fail - self.pass <= 1 {
            self.phase = Phase::Edge;
            self.lo = self.pass;
            self.hi = self.fail;
        }
        if self.phase == Phase::Edge {
            if let Some(index) = self.edge_point() {
                return Some(index);
            }
            self.settle_edge();
        }
        match self.phase {
            Phase::Done | Phase::Aborted => None,
            Phase::Checking(index) => Some(index),
            Phase::Searching => Some(self.search_point()),
            Phase::Edge => match self.check_point() {
                Some(index) => {
                    self.phase = Phase::Checking(index);
                    Some(index)
                }
                None => {
                    self.phase = Phase::Done;
                    None
                }
            },
        }
    }

    /// The next run the edge needs, moving a walker outward past a point whose runs disagree;
    /// `None` when both sides are settled, absent, or the budget is spent.
    fn edge_point(&mut self) -> Option<i128> {
        if self.edge_runs <= 1 {
            return None;
        }
        loop {
            let lo = self.tally_at(self.lo);
            if self.lo >= 0 && lo.failed > 0 {
                self.lo = (self.lo - self.step_lo).max(-1);
                self.step_lo = self.step_lo.saturating_mul(2);
                continue;
            }
            let hi = self.tally_at(self.hi);
            if self.hi < self.n && hi.passed > 0 {
                self.hi = (self.hi + self.step_hi).min(self.n);
                self.step_hi = self.step_hi.saturating_mul(2);
                continue;
            }
            if self.edge_budget == 0 {
                return None;
            }
            if self.lo >= 0 && lo.passed < self.edge_runs {
                return Some(self.lo);
            }
            if self.hi < self.n && hi.failed < self.edge_runs {
                return Some(self.hi);
            }
            return None;
        }
    }

    /// The edge as the walkers left it: the bracket becomes `[lo, hi]`.
    fn settle_edge(&mut self) {
        if self.edge_runs > 1 {
            let settled_lo = self.lo < 0 || self.tally_at(self.lo).passed >= self.edge_runs;
            let settled_hi = self.hi >= self.n || self.tally_at(self.hi).failed >= self.edge_runs;
            self.edge_confirmed = Some(settled_lo && settled_hi);
            self.pass = self.lo;
            self.fail = self.hi;
            self.fail_outcome = if self.hi < self.n {
                self.tally_at(self.hi).fail_outcome
            } else {
                None
            };
        }
        self.phase = Phase::Edge;
        // Settled once: further calls go straight to the check.
        self.edge_runs = 1;
    }

    fn tally_at(&self, index: i128) -> Tally {
        self.tally.get(&index).copied().unwrap_or_default()
    }

    /// Runs learned at `index` so far.
    pub fn runs_at(&self, index: i128) -> u32 {
        self.tally_at(index).runs()
    }

    /// Learn the outcome at `index` (the one [`next`](Self::next) returned). `interrupted` aborts
    /// the search: it says nothing about the artifact.
    pub fn record(&mut self, index: i128, outcome: Outcome) {
        if matches!(self.phase, Phase::Done | Phase::Aborted) {
            return;
        }
        if outcome == Outcome::Interrupted {
            self.phase = Phase::Aborted;
            return;
        }
        self.probes += 1;
        let passed = outcome == Outcome::Ok;
        self.seen.insert(index);
        let t = self.tally.entry(index).or_default();
        if passed {
            t.passed += 1;
        } else {
            t.failed += 1;
            t.fail_outcome.get_or_insert(outcome);
        }
        if self.phase == Phase::Edge {
            self.edge_budget = self.edge_budget.saturating_sub(1);
            return;
        }
        if let Phase::Checking(check) = self.phase {
            if check == index {
                self.check = Some(CheckOutcome {
                    index,
                    outcome,
                    expected_pass: index <= self.pass,
                });
                self.phase = Phase::Done;
            }
            return;
        }
        self.budget = self.budget.saturating_sub(1);
        if passed {
            if index > self.pass && index < self.fail {
                if self.galloping && self.pass >= 0 {
                    self.step = self.step.saturating_mul(self.growth).min(self.n);
                }
                self.pass = index;
            }
        } else if index < self.fail && index > self.pass {
            self.fail = index;
            self.fail_outcome = Some(outcome);
            self.galloping = false;
        }
    }

    /// Next point of the search phase; requires `fail - pass ≥ 2`.
    fn search_point(&self) -> i128 {
        let (pass, fail) = (self.pass, self.fail);
        let low = pass + 1;
        let high = fail - 1;
        if !self.galloping {
            return (pass + (fail - pass) / 2).clamp(low, high);
        }
        let wanted = if pass < 0 {
            0
        } else {
            pass.saturating_add(self.step)
        };
        // Stay solvable within the budget: after this probe `budget - 1` probes remain, which
        // resolve at most 2^(budget-1) outcomes on whichever side the probe leaves open.
        let reach = pow2(self.budget.saturating_sub(1));
        let lowest_feasible = fail.saturating_sub(reach);
        let highest_feasible = pass.saturating_add(reach);
        wanted
            .max(lowest_feasible)
            .min(highest_feasible)
            .clamp(low, high)
    }

    /// Where to test the monotonicity assumption once the bracket is closed, if anywhere.
    fn check_point(&self) -> Option<i128> {
        let top = self.n - 1;
        if self.fail <= top {
            let start = self.fail.saturating_mul(2).saturating_add(1).min(top);
            if let Some(index) = self.unprobed_up(start, top) {
                return Some(index);
            }
            if let Some(index) = self.unprobed_down(start, self.fail + 1) {
                return Some(index);
            }
        }
        self.widest_gap_below_pass()
    }

    /// First unprobed index in `from..=to`, scanning up. Terminates after at most
    /// `seen.len() + 1` steps, since only probed indices are skipped.
    fn unprobed_up(&self, from: i128, to: i128) -> Option<i128> {
        let mut i = from;
        while i <= to {
            if !self.seen.contains(&i) {
                return Some(i);
            }
            i += 1;
        }
        None
    }

    /// First unprobed index in `to..=from`, scanning down.
    fn unprobed_down(&self, from: i128, to: i128) -> Option<i128> {
        let mut i = from;
        while i >= to {
            if !self.seen.contains(&i) {
                return Some(i);
            }
            i -= 1;
        }
        None
    }

    /// The middle of the widest run of unprobed indices in `0..=pass`.
    fn widest_gap_below_pass(&self) -> Option<i128> {
        let mut best: Option<(i128, i128)> = None; // (width, midpoint)
        let mut previous = -1;
        let probed_below = self.seen.range(..=self.pass).copied();
        for index in probed_below.chain(std::iter::once(self.pass + 1)) {
            let width = index - previous - 1;
            if width > 0 && best.is_none_or(|(w, _)| width > w) {
                best = Some((width, previous + 1 + (width - 1) / 2));
            }
            previous = index;
        }
        best.map(|(_, mid)| mid)
    }

    /// Largest index known to pass.
    pub fn last_pass(&self) -> Option<i128> {
        (self.pass >= 0).then_some(self.pass)
    }

    /// Smallest index known to fail, with its outcome.
    pub fn first_fail(&self) -> Option<(i128, Outcome)> {
        self.fail_outcome.map(|outcome| (self.fail, outcome))
    }

    /// Points learned, including the check.
    pub fn probes(&self) -> usize {
        self.probes
    }

    pub fn check(&self) -> Option<CheckOutcome> {
        self.check
    }

    /// Points run more than once or whose runs disagreed, in order, with their tallies.
    pub(crate) fn edge(&self) -> Vec<(i128, Tally)> {
        self.tally
            .iter()
            .filter(|(_, t)| t.runs() > 1 || (t.passed > 0 && t.failed > 0))
            .map(|(i, t)| (*i, *t))
            .collect()
    }

    /// Whether both edge points reached their agreeing runs (`None`: repeats not asked).
    pub fn edge_confirmed(&self) -> Option<bool> {
        self.edge_confirmed
    }

    /// True once the bracket closed and the check (if one was possible) ran.
    pub fn is_complete(&self) -> bool {
        self.phase == Phase::Done
    }

    /// Whether the outstanding point (if any) is the monotonicity check.
    pub fn is_checking(&self) -> bool {
        matches!(self.phase, Phase::Checking(_))
    }

    /// Probes learned so far plus an estimate of those still to come (bisection of what is left
    /// and the check).
    pub fn estimated_total(&self) -> usize {
        let edge = 2 * self.edge_runs.saturating_sub(1) as usize;
        let remaining = match self.phase {
            Phase::Done | Phase::Aborted => 0,
            Phase::Checking(_) => 1,
            Phase::Edge => edge + 1,
            Phase::Searching => ceil_log2(self.fail - self.pass) as usize + 1 + edge,
        };
        self.probes + remaining
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Run a search to completion against `outcome_at(index)`; returns the search and the
    /// indices probed, in order.
    fn run(n: i128, slack: u32, outcome_at: impl Fn(i128) -> Outcome) -> (Search, Vec<i128>) {
        let mut search = Search::new(n, slack);
        let mut probed = Vec::new();
        while let Some(index) = search.next() {
            assert!((0..n).contains(&index), "index {index} outside 0..{n}");
            assert!(!probed.contains(&index), "index {index} probed twice");
            probed.push(index);
            search.record(index, outcome_at(index));
        }
        (search, probed)
    }

    fn threshold(first_fail: i128) -> impl Fn(i128) -> Outcome {
        move |i| {
            if i < first_fail {
                Outcome::Ok
            } else {
                Outcome::Deadlock
            }
        }
    }

    #[test]
    fn finds_every_boundary_in_a_thousand_points_within_the_budget() {
        let n = 1000;
        let bound = Search::budget_bound(n, DEFAULT_SEARCH_SLACK) as usize;
        assert_eq!(bound, 13);
        for first_fail in 0..=n {
            let (search, probed) = run(n, DEFAULT_SEARCH_SLACK, threshold(first_fail));
            assert!(search.is_complete());
            assert_eq!(
                search.last_pass(),
                (first_fail > 0).then_some(first_fail - 1)
            );
            assert_eq!(
                search.first_fail(),
                (first_fail < n).then_some((first_fail, Outcome::Deadlock))
            );
            let check = usize::from(search.check().is_some());
            assert!(probed.len() - check <= bound, "{first_fail}: {probed:?}");
            assert!(probed.len() <= 14, "{first_fail}: {} probes", probed.len());
            let check = search.check().unwrap();
            assert!(check.agrees(), "{first_fail}: {check:?}");
        }
    }

    #[test]
    fn gallops_near_a_low_boundary() {
        // slack 3 over 1000 points: growth 2^⌈10/2⌉ = 32
        let (search, probed) = run(1000, DEFAULT_SEARCH_SLACK, threshold(20));
        assert_eq!(search.first_fail().map(|f| f.0), Some(20));
        assert_eq!(&probed[..3], &[0, 1, 33]);
        assert!(probed.len() <= 9, "{probed:?}");
        // with a generous slack the gallop doubles and keeps every probe within twice the
        // boundary
        let (search, probed) = run(1 << 20, 40, threshold(700));
        assert_eq!(search.first_fail().map(|f| f.0), Some(700));
        assert_eq!(&probed[..5], &[0, 1, 3, 7, 15]);
        let search_probes = &probed[..probed.len() - 1];
        assert!(search_probes.iter().all(|&i| i < 1400), "{probed:?}");
    }

    #[test]
    fn galloping_beats_plain_doubling_on_overshoot_within_the_budget() {
        // geometric mean of (highest search probe / boundary) over log-spread boundaries
        let overshoot = |slack: u32| {
            let boundaries: Vec<i128> = (0..=60)
                .map(|i| (1000f64.powf(i as f64 / 60.0)) as i128)
                .collect();
            let mut log_sum = 0.0;
            for &b in &boundaries {
                let (search, probed) = run(1000, slack, threshold(b.min(999)));
                let check = usize::from(search.check().is_some());
                let top = probed[..probed.len() - check]
                    .iter()
                    .max()
                    .copied()
                    .unwrap_or(0);
                log_sum += ((top + 1) as f64 / (b.min(999) + 1) as f64).log2();
            }
            (log_sum / boundaries.len() as f64).exp2()
        };
        let tight = overshoot(DEFAULT_SEARCH_SLACK);
        let bisection = overshoot(0);
        assert!(tight < bisection, "{tight} vs {bisection}");
        assert!(tight < 4.0, "{tight}");
    }

    #[test]
    fn lowest_failing_takes_one_probe_and_a_check() {
        let (search, probed) = run(1000, DEFAULT_SEARCH_SLACK, |_| Outcome::Crash);
        assert_eq!(search.last_pass(), None);
        assert_eq!(search.first_fail(), Some((0, Outcome::Crash)));
        assert_eq!(probed, vec![0, 1]);
        assert!(search.check().unwrap().agrees());
    }

    #[test]
    fn all_passing_checks_inside_the_widest_gap() {
        let (search, probed) = run(1000, DEFAULT_SEARCH_SLACK, |_| Outcome::Ok);
        assert_eq!(search.last_pass(), Some(999));
        assert_eq!(search.first_fail(), None);
        let check = search.check().unwrap();
        assert!(check.expected_pass && check.agrees());
        assert!(probed.len() <= 14);
    }

    #[test]
    fn a_pass_above_the_boundary_breaks_monotonicity() {
        // fails only in 300..=550: the search finds 300, the check at 601 passes.
        let (search, _) = run(1000, DEFAULT_SEARCH_SLACK, |i| {
            if (300..=550).contains(&i) {
                Outcome::Timeout
            } else {
                Outcome::Ok
            }
        });
        assert_eq!(search.first_fail(), Some((300, Outcome::Timeout)));
        let check = search.check().unwrap();
        assert_eq!(check.index, 601);
        assert!(!check.expected_pass);
        assert_eq!(check.outcome, Outcome::Ok);
        assert!(!check.agrees());
        // a band the search never touched stays invisible: the assumption is an assumption
        let (search, _) = run(1000, DEFAULT_SEARCH_SLACK, |i| {
            if (300..=400).contains(&i) {
                Outcome::Timeout
            } else {
                Outcome::Ok
            }
        });
        assert_eq!(search.first_fail(), None);
    }

    #[test]
    fn a_fail_below_an_all_pass_top_breaks_monotonicity() {
        // learn where an all-passing search checks, then make exactly that point fail
        let (clean, _) = run(1000, DEFAULT_SEARCH_SLACK, |_| Outcome::Ok);
        let hole = clean.check().unwrap().index;
        let (search, probed) = run(1000, DEFAULT_SEARCH_SLACK, |i| {
            if i == hole {
                Outcome::OomKilled
            } else {
                Outcome::Ok
            }
        });
        assert_eq!(search.first_fail(), None);
        assert_eq!(search.last_pass(), Some(999));
        let check = search.check().unwrap();
        assert_eq!((check.index, check.outcome), (hole, Outcome::OomKilled));
        assert!(check.expected_pass && !check.agrees(), "{probed:?}");
    }

    #[test]
    fn tiny_ladders() {
        let (search, probed) = run(1, DEFAULT_SEARCH_SLACK, |_| Outcome::Ok);
        assert_eq!((search.last_pass(), probed), (Some(0), vec![0]));
        assert!(search.check().is_none() && search.is_complete());
        let (search, probed) = run(1, DEFAULT_SEARCH_SLACK, |_| Outcome::Crash);
        assert_eq!(search.first_fail().map(|f| f.0), Some(0));
        assert_eq!(probed, vec![0]);
        for n in 2..40 {
            for first_fail in 0..=n {
                let (search, probed) = run(n, 0, threshold(first_fail));
                assert_eq!(
                    search.first_fail().map(|f| f.0),
                    (first_fail < n).then_some(first_fail)
                );
                let check = usize::from(search.check().is_some());
                assert!(probed.len() - check <= ceil_log2(n + 1) as usize);
            }
        }
    }

    #[test]
    fn huge_ranges_stay_logarithmic() {
        let n = 1i128 << 64;
        for first_fail in [0, 1, 1000, 1 << 40, n - 1, n] {
            let (search, probed) = run(n, DEFAULT_SEARCH_SLACK, threshold(first_fail));
            assert_eq!(
                search.first_fail().map(|f| f.0),
                (first_fail < n).then_some(first_fail)
            );
            assert!(probed.len() <= 65 + 3 + 1);
        }
    }

    /// Run a search with repeats at the edge against `outcome_at(index, attempt)` (attempt 0 is
    /// a point's first run); returns the search and every (index, attempt) in order.
    fn run_edge(
        n: i128,
        edge_runs: u32,
        budget: u32,
        outcome_at: impl Fn(i128, u32) -> Outcome,
    ) -> (Search, Vec<(i128, u32)>) {
        let mut search = Search::with_edge(n, DEFAULT_SEARCH_SLACK, edge_runs, budget);
        let mut probed = Vec::new();
        while let Some(index) = search.next() {
            let attempt = search.runs_at(index);
            assert!(
                attempt < edge_runs.max(1),
                "{index} run a {}th time",
                attempt + 1
            );
            probed.push((index, attempt));
            search.record(index, outcome_at(index, attempt));
        }
        (search, probed)
    }

    #[test]
    fn a_clean_edge_is_run_twice_each_and_confirmed() {
        let (search, probed) = run_edge(100, 2, DEFAULT_EDGE_BUDGET, |i, _| threshold(37)(i));
        assert_eq!(search.last_pass(), Some(36));
        assert_eq!(search.first_fail(), Some((37, Outcome::Deadlock)));
        assert_eq!(search.edge_confirmed(), Some(true));
        for edge in [36, 37] {
            assert_eq!(search.runs_at(edge), 2, "{probed:?}");
        }
        let plain = run(100, DEFAULT_SEARCH_SLACK, threshold(37)).1.len();
        assert_eq!(probed.len(), plain + 2, "two repeats: {probed:?}");
        assert!(search.check().unwrap().agrees());
        let edge = search.edge();
        assert_eq!(edge.len(), 2);
        assert!(edge.iter().all(|(_, t)| t.passed == 2 || t.failed == 2));
    }

    #[test]
    fn noise_at_the_edge_widens_the_interval_to_points_that_agree_with_themselves() {
        // Below 33 every run passes, above 40 every run fails; in between a run passes or
        // fails by the parity of index + attempt: a service whose verdict moves run to run.
        let noisy = |i: i128, attempt: u32| {
            if i < 33 || (i <= 40 && (i + i128::from(attempt)) % 2 == 0) {
                Outcome::Ok
            } else {
                Outcome::SloViolated
            }
        };
        let (search, probed) = run_edge(100, 2, 16, noisy);
        let pass = search.last_pass().unwrap();
        let (fail, outcome) = search.first_fail().unwrap();
        assert!(pass < 33, "holds up to {pass}: {probed:?}");
        assert!(fail > 40 && fail < 60, "fails from {fail}: {probed:?}");
        assert_eq!(outcome, Outcome::SloViolated);
        assert_eq!(search.edge_confirmed(), Some(true));
        assert_eq!(search.runs_at(pass), 2);
        assert_eq!(search.runs_at(fail), 2);
        // The disagreeing points are listed: the measured noise.
        let mixed: Vec<i128> = search
            .edge()
            .iter()
            .filter(|(_, t)| t.passed > 0 && t.failed > 0)
            .map(|(i, _)| *i)
            .collect();
        assert!(
            !mixed.is_empty() && mixed.iter().all(|i| (33..=40).contains(i)),
            "{mixed:?}"
        );
        // A budget too small to settle both sides says so, and claims no edge it did not
        // see agree: each side's point has only agreeing runs.
        let (search, _) = run_edge(100, 2, 2, noisy);
        assert_eq!(search.edge_confirmed(), Some(false));
        if let Some(p) = search.last_pass() {
            assert_eq!(search.tally_at(p).failed, 0);
        }
        if let Some((f, _)) = search.first_fail() {
            assert_eq!(search.tally_at(f).passed, 0);
        }
    }

    #[test]
    fn interrupted_aborts() {
        let mut search = Search::new(100, 3);
        let i = search.next().unwrap();
        search.record(i, Outcome::Interrupted);
        assert_eq!(search.next(), None);
        assert!(!search.is_complete());
        assert_eq!(search.probes(), 0);
    }
}
