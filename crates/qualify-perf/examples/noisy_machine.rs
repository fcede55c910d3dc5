//! Prints, side by side, how the performance analysis fares on a simulated noisy machine
//! (`qualify_perf::simulate`) when runs are measured back to back and located by the median
//! ("old") versus in shuffled rounds located by the minimum ("new"): per truth, over SEEDS
//! simulated runs of 5 rounds, how often the chosen exponent is within a quarter step of the
//! truth, its interval covers the truth, and a `max_exponent` check a quarter step away is
//! decided wrongly or left inconclusive. Run by `bench/noisy.sh`.

use qualify_perf::Estimator;
use qualify_perf::simulate::{TRUTHS, tally};

fn main() {
    let seeds: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(40);
    println!(
        "{:8} {:>4} | {:>14} {:>14} | {:>14} {:>14} | {:>9} {:>9} | {:>11} {:>11}",
        "truth",
        "runs",
        "within ¼ old",
        "within ¼ new",
        "covered old",
        "covered new",
        "wrong old",
        "wrong new",
        "undecid old",
        "undecid new"
    );
    for (name, truth) in TRUTHS {
        let old = tally(truth, 5, false, Estimator::Median, seeds);
        let new = tally(truth, 5, true, Estimator::Min, seeds);
        println!(
            "{name:8} {:>4} | {:>14} {:>14} | {:>14} {:>14} | {:>9} {:>9} | {:>11} {:>11}",
            new.runs,
            old.within,
            new.within,
            old.covered,
            new.covered,
            old.wrong,
            new.wrong,
            old.inconclusive,
            new.inconclusive
        );
    }
}
