//! The analysis on the simulated noisy machine ([`crate::simulate`]), where the truth is known:
//! measured in shuffled rounds and located by the minimum, the chosen exponent is near the
//! truth, the interval covers it and no `max_exponent` check a quarter step away is decided
//! wrongly; measured back to back and located by the median, a slow period bends the curve.
//! (`bench/noisy.sh` prints both side by side over more runs.)

use crate::simulate::{TRUTHS, tally};
use crate::stats::Estimator;

#[test]
fn shuffled_rounds_located_by_the_minimum_are_near_the_truth_and_never_wrong() {
    let (mut old_within, mut new_within, mut old_open, mut new_open) = (0, 0, 0, 0);
    for (name, truth) in TRUTHS {
        let new = tally(truth, 5, true, Estimator::Min, 6);
        assert_eq!(new.runs, 6, "{name}: {new:?}");
        assert!(new.within >= 5, "{name}: {new:?}");
        assert!(new.covered >= 5, "{name}: {new:?}");
        assert_eq!(new.wrong, 0, "{name}: {new:?}");
        let old = tally(truth, 5, false, Estimator::Median, 6);
        // The plausible set keeps the old way of measuring honest too: it is merely undecided.
        assert_eq!(old.wrong, 0, "{name}: {old:?}");
        old_within += old.within;
        new_within += new.within;
        old_open += old.inconclusive;
        new_open += new.inconclusive;
    }
    assert!(new_within >= old_within, "{new_within} vs {old_within}");
    assert!(new_open < old_open, "{new_open} vs {old_open}");
}
