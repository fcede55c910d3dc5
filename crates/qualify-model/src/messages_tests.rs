//! The vocabulary's parse errors, byte for byte: what the spec's diagnostics, the command
//! line's flags and `qualify ledger` print for a word or a quantity that does not parse. Pinned
//! before the errors became types, so the types keep saying exactly this.

use crate::enforcement::{Mode, Role};
use crate::{ClaimLevel, Outcome, Progress, SloMetric};

#[test]
fn unknown_words_name_the_input_and_every_accepted_value() {
    let cases = [
        (
            "prod".parse::<ClaimLevel>().unwrap_err().to_string(),
            "unknown claim level `prod`; expected one of: functional, trial, production",
        ),
        (
            "fine".parse::<Outcome>().unwrap_err().to_string(),
            "unknown outcome `fine`; expected one of: ok, exit_failure, crash, oom_killed, out_of_memory, \
             deadlock, livelock, timeout, pids_exhausted, disk_full, killed, interrupted, slo_violated, \
             overloaded, unavailable, lost_writes, not_recovered, unexpected_behaviour",
        ),
        (
            "p99".parse::<SloMetric>().unwrap_err().to_string(),
            "unknown SLO metric `p99`; expected one of: latency_p50, latency_p90, latency_p99, \
             latency_p999, latency_max, error_rate, dropped_rate, throughput",
        ),
        (
            "stdout".parse::<Progress>().unwrap_err().to_string(),
            "unknown progress signal `stdout`; expected one of: none, output, heartbeat",
        ),
        (
            "sometimes".parse::<Mode>().unwrap_err().to_string(),
            "unknown sandbox mode `sometimes`; expected one of: on, off, required",
        ),
        (
            "secret".parse::<Role>().unwrap_err().to_string(),
            "unknown role `secret`; expected one of: holdout, key, state, home",
        ),
    ];
    for (got, want) in cases {
        assert_eq!(got, want);
    }
}

#[test]
fn quantities_that_do_not_parse_name_the_input_the_reason_and_the_form() {
    let size = "; expected a size such as 512M, 256MiB, 1.5G or 1000000 (bytes)";
    let cases = [
        ("", "expected a number, then a unit"),
        ("12X", "unknown unit `X`"),
        (
            "3kbit",
            "bits are not accepted: every size is bytes (B, KB, KiB, …)",
        ),
        ("1..2M", "not a number"),
        ("1.1234567890123456789K", "more than 18 decimals"),
        (
            "99999999999999999999999999999999999999999",
            "larger than 1 PiB, the largest size qualify accepts",
        ),
        (
            "99999999999T",
            "larger than 1 PiB, the largest size qualify accepts",
        ),
        ("0", "must be at least 1 byte"),
    ];
    for (text, reason) in cases {
        assert_eq!(
            crate::units::parse_size(text).unwrap_err().to_string(),
            format!("invalid size `{text}`: {reason}{size}")
        );
    }
    assert_eq!(
        crate::units::parse_rate("0.5B/s").unwrap_err().to_string(),
        "invalid rate `0.5B/s`: below 1 byte per second; expected a rate such as 16KiB/s, \
         500B/s or 1.5MB/s"
    );
    assert_eq!(
        crate::units::parse_rate("16KiB").unwrap_err().to_string(),
        "invalid rate `16KiB`: missing `/s`; expected a rate such as 16KiB/s, 500B/s or 1.5MB/s"
    );
    let duration = "; expected a duration such as 30s, 2m, 1h30m or 500ms";
    let cases = [
        ("200", "missing unit (ns, us, ms, s, m, h)"),
        ("soon", "expected a number before the unit"),
        ("3x", "unknown unit `x` (ns, us, ms, s, m, h)"),
        ("3s!", "unexpected `!`"),
        ("", "empty"),
        (
            "99999999999999999999999s",
            "too large, or finer than a nanosecond",
        ),
        (
            "10000000000000000000s",
            "longer than 30 days, the longest duration qualify accepts",
        ),
    ];
    for (text, reason) in cases {
        assert_eq!(
            crate::units::parse_duration(text).unwrap_err().to_string(),
            format!("invalid duration `{text}`: {reason}{duration}")
        );
    }
    assert_eq!(
        crate::units::parse_duration_or_seconds("-3")
            .unwrap_err()
            .to_string(),
        format!("invalid duration `-3`: must be positive{duration}")
    );
    assert_eq!(
        crate::limits::parse_cpus("many").unwrap_err().to_string(),
        "invalid CPU ceiling `many`: expected a number of cores from 0.01 to 1048576, e.g. 0.5 or 2"
    );
}
