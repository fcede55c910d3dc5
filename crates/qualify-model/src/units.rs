//! The one grammar for durations, sizes and byte rates in the whole spec and on the command
//! line — `[limits]`, `[load]`, `[service]`, `[faults]`, `[recovery]`, fault values such as
//! `latency(200ms)` and `bandwidth(16KiB/s)`, and the `qualify probe` flags all read through
//! these functions, so a unit means the same thing everywhere.
//!
//! - **Duration**: one or more `NUMBER UNIT` terms (`30s`, `1.5s`, `500ms`, `1h30m`,
//!   `2min`), units `ns`, `us`/`µs`, `ms`, `s`, `m` (minutes), `h`, `d` and their long names
//!   — humantime's grammar ([`parse_duration`]). In `qualify.toml` and inside a fault value a
//!   unit is always required: `250` could be milliseconds or seconds, and a latency limit read
//!   in the wrong one can never fail (the spec refuses a bare number, [`is_bare_number`], with
//!   the fix). Only a command-line flag (`qualify probe --timeout 30`) reads a bare number, as
//!   seconds ([`parse_duration_or_seconds`]), as `timeout(1)` does.
//! - **Size**: `NUMBER [UNIT]`, units case-insensitive: `K`, `M`, `G`, `T` and `KiB`, `MiB`,
//!   `GiB`, `TiB` are powers of 1024 (as cgroups and container tools read a memory size);
//!   `KB`, `MB`, `GB`, `TB` are powers of 1000 (so `kb` is 1000 bytes wherever a size is
//!   read); `B` is bytes. Fractions are exact and rounded down to whole bytes
//!   ([`parse_size`]). Bits (`kbit`, `Mbit`, `Gbit`) are refused: every size is bytes. The spec
//!   refuses a size without its unit (`memory = 512`: bytes or MiB?); a flag
//!   (`--memory 4096`) reads it as bytes.
//! - **Rate**: a size per second, `SIZE/s` (`16KiB/s`, `1.5MB/s`, `500B/s`; [`parse_rate`]).
//!
//! [`DurationText`] and [`RateText`] write the canonical forms that parse back to the same
//! value; [`format_bytes`] writes sizes for people (`1.5 GiB`).
//!
//! **Bounds.** Every duration is at most [`MAX_DURATION`] (30 days) and every size or rate at
//! most [`MAX_SIZE`] (1 PiB, per second for a rate): a value beyond is refused here, where it is
//! read, so no deadline, buffer or sleep computed from it downstream can overflow. A number
//! written without a unit goes through the same bounds ([`duration_from_seconds`],
//! [`size_from_bytes`]).

use std::fmt;
use std::time::Duration;

/// The longest duration qualify reads anywhere (30 days): a timeout, a window, a budget.
pub const MAX_DURATION: Duration = Duration::from_secs(30 * 24 * 3600);

/// The largest size (and rate, per second) qualify reads anywhere: 1 PiB.
pub const MAX_SIZE: u64 = 1 << 50;

/// What a text was meant to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quantity {
    Duration,
    Size,
    Rate,
}

impl Quantity {
    fn name(self) -> &'static str {
        match self {
            Quantity::Duration => "duration",
            Quantity::Size => "size",
            Quantity::Rate => "rate",
        }
    }

    /// Examples of the form, for the message.
    pub fn hint(self) -> &'static str {
        match self {
            Quantity::Duration => "expected a duration such as 30s, 2m, 1h30m or 500ms",
            Quantity::Size => "expected a size such as 512M, 256MiB, 1.5G or 1000000 (bytes)",
            Quantity::Rate => "expected a rate such as 16KiB/s, 500B/s or 1.5MB/s",
        }
    }
}

/// A duration, size or rate that does not parse: the text, why, and the form it takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnitError {
    pub quantity: Quantity,
    pub text: String,
    /// Why, in a few words (`unknown unit \`x\``, `must be positive`): a [`UnitReason`]'s
    /// text, which the fault grammar states inside its own message.
    pub reason: String,
}

impl UnitError {
    fn new(quantity: Quantity, text: &str, reason: UnitReason) -> UnitError {
        UnitError {
            quantity,
            text: text.to_string(),
            reason: reason.to_string(),
        }
    }
}

/// Why a duration, size or rate does not parse, in a few words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnitReason {
    #[error("empty")]
    Empty,
    /// A bare number where a duration needs a unit.
    #[error("missing unit (ns, us, ms, s, m, h)")]
    MissingDurationUnit,
    #[error("expected a number before the unit")]
    NumberBeforeUnit,
    /// A character a duration cannot hold (empty at the end of the text).
    #[error("unexpected `{0}`")]
    Unexpected(String),
    #[error("unknown unit `{0}` (ns, us, ms, s, m, h)")]
    UnknownDurationUnit(String),
    #[error("too large, or finer than a nanosecond")]
    DurationOutOfRange,
    /// Longer than [`MAX_DURATION`].
    #[error("longer than 30 days, the longest duration qualify accepts")]
    DurationTooLong,
    /// Zero or negative where a positive duration is needed.
    #[error("must be positive")]
    NotPositive,
    #[error("missing `/s`")]
    MissingPerSecond,
    #[error("expected a number, then a unit")]
    MissingNumber,
    #[error("bits are not accepted: every size is bytes (B, KB, KiB, …)")]
    Bits,
    #[error("unknown unit `{0}`")]
    UnknownSizeUnit(String),
    #[error("not a number")]
    NotANumber,
    #[error("more than 18 decimals")]
    TooManyDecimals,
    /// More than [`MAX_SIZE`] bytes.
    #[error("larger than 1 PiB, the largest size qualify accepts")]
    TooLarge,
    #[error("below 1 byte per second")]
    BelowOneBytePerSecond,
    #[error("must be at least 1 byte")]
    BelowOneByte,
}

impl fmt::Display for UnitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid {} `{}`: {}; {}",
            self.quantity.name(),
            self.text,
            self.reason,
            self.quantity.hint()
        )
    }
}

impl std::error::Error for UnitError {}

/// Whether `text` is a number without a unit (`250`, ` 1.5 `, `.5`): what the spec refuses
/// where a duration or a size is read.
pub fn is_bare_number(text: &str) -> bool {
    let t = text.trim();
    !t.is_empty()
        && t.chars()
            .all(|c| c.is_ascii_digit() || c == '.' || c == '-' || c == '+')
        && t.parse::<f64>().is_ok()
}

/// A duration with units (`30s`, `1.5s`, `200ms`, `1h30m`); zero is allowed (`0s`); at most
/// [`MAX_DURATION`].
pub fn parse_duration(text: &str) -> Result<Duration, UnitError> {
    let t = text.trim();
    let d = humantime::parse_duration(t).map_err(|e| {
        use humantime::DurationError as E;
        let reason = match e {
            E::NumberExpected(_) if t.parse::<f64>().is_ok() => UnitReason::MissingDurationUnit,
            E::NumberExpected(_) => UnitReason::NumberBeforeUnit,
            E::InvalidCharacter(at) => {
                UnitReason::Unexpected(t[at..].chars().next().map_or(String::new(), String::from))
            }
            E::UnknownUnit { unit, .. } if unit.is_empty() => UnitReason::MissingDurationUnit,
            E::UnknownUnit { unit, .. } => UnitReason::UnknownDurationUnit(unit),
            E::NumberOverflow => UnitReason::DurationOutOfRange,
            E::Empty => UnitReason::Empty,
        };
        UnitError::new(Quantity::Duration, text, reason)
    })?;
    if d > MAX_DURATION {
        return Err(UnitError::new(
            Quantity::Duration,
            text,
            UnitReason::DurationTooLong,
        ));
    }
    Ok(d)
}

/// A positive number of seconds (a bare number where a key or flag takes one), at most
/// [`MAX_DURATION`].
pub fn duration_from_seconds(seconds: f64) -> Result<Duration, UnitReason> {
    if !(seconds.is_finite() && seconds > 0.0) {
        return Err(UnitReason::NotPositive);
    }
    match Duration::try_from_secs_f64(seconds) {
        Ok(d) if d <= MAX_DURATION && !d.is_zero() => Ok(d),
        Ok(d) if d.is_zero() => Err(UnitReason::NotPositive),
        _ => Err(UnitReason::DurationTooLong),
    }
}

/// A size written as a whole number of bytes: at least 1, at most [`MAX_SIZE`].
pub fn size_from_bytes(bytes: i64) -> Result<u64, UnitReason> {
    match u64::try_from(bytes) {
        Ok(0) | Err(_) => Err(UnitReason::BelowOneByte),
        Ok(b) if b > MAX_SIZE => Err(UnitReason::TooLarge),
        Ok(b) => Ok(b),
    }
}

/// The error for a number read as [`Quantity`] `quantity` (its text as written).
pub fn number_error(
    quantity: Quantity,
    number: impl fmt::Display,
    reason: UnitReason,
) -> UnitError {
    UnitError::new(quantity, &number.to_string(), reason)
}

/// A positive duration: [`parse_duration`], or a bare number of seconds (`30`, `1.5`), where a
/// key or flag takes a plain value.
pub fn parse_duration_or_seconds(text: &str) -> Result<Duration, UnitError> {
    let t = text.trim();
    let d = match t.parse::<f64>() {
        Ok(secs) => duration_from_seconds(secs)
            .map_err(|reason| UnitError::new(Quantity::Duration, text, reason))?,
        Err(_) => parse_duration(t)?,
    };
    if d.is_zero() {
        return Err(UnitError::new(
            Quantity::Duration,
            text,
            UnitReason::NotPositive,
        ));
    }
    Ok(d)
}

/// A size in bytes (at least 1): `512M`, `256MiB`, `1.5G`, `2MB`, `64 k`, `4096`.
pub fn parse_size(text: &str) -> Result<u64, UnitError> {
    size(text.trim(), Quantity::Size).map_err(|reason| UnitError::new(Quantity::Size, text, reason))
}

/// A rate in bytes per second (at least 1): `16KiB/s`, `1.5MB/s`, `500B/s`.
pub fn parse_rate(text: &str) -> Result<u64, UnitError> {
    let t = text.trim();
    let Some(per) = t.strip_suffix("/s") else {
        return Err(UnitError::new(
            Quantity::Rate,
            text,
            UnitReason::MissingPerSecond,
        ));
    };
    size(per.trim(), Quantity::Rate).map_err(|reason| UnitError::new(Quantity::Rate, text, reason))
}

/// Bytes of `t`: a number with an optional (case-insensitive) unit.
fn size(t: &str, quantity: Quantity) -> Result<u64, UnitReason> {
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let written = unit.trim();
    if number.is_empty() {
        return Err(UnitReason::MissingNumber);
    }
    let multiplier: u128 = match written.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kib" => 1 << 10,
        "m" | "mib" => 1 << 20,
        "g" | "gib" => 1 << 30,
        "t" | "tib" => 1 << 40,
        "kb" => 1_000,
        "mb" => 1_000_000,
        "gb" => 1_000_000_000,
        "tb" => 1_000_000_000_000,
        "bit" | "kbit" | "mbit" | "gbit" | "tbit" => {
            return Err(UnitReason::Bits);
        }
        _ => return Err(UnitReason::UnknownSizeUnit(written.to_string())),
    };
    let (int, frac) = number.split_once('.').unwrap_or((number, ""));
    if (int.is_empty() && frac.is_empty()) || frac.contains('.') {
        return Err(UnitReason::NotANumber);
    }
    if frac.len() > 18 {
        return Err(UnitReason::TooManyDecimals);
    }
    let whole: u128 = if int.is_empty() {
        0
    } else {
        int.parse().map_err(|_| UnitReason::TooLarge)?
    };
    let frac_value: u128 = if frac.is_empty() {
        0
    } else {
        frac.parse().map_err(|_| UnitReason::NotANumber)?
    };
    let bytes = whole
        .checked_mul(multiplier)
        .and_then(|b| b.checked_add(frac_value * multiplier / 10u128.pow(frac.len() as u32)))
        .ok_or(UnitReason::TooLarge)?;
    if bytes == 0 {
        return Err(match quantity {
            Quantity::Rate => UnitReason::BelowOneBytePerSecond,
            _ => UnitReason::BelowOneByte,
        });
    }
    if bytes > u128::from(MAX_SIZE) {
        return Err(UnitReason::TooLarge);
    }
    u64::try_from(bytes).map_err(|_| UnitReason::TooLarge)
}

/// A duration written the way [`parse_duration`] reads it back exactly: whole seconds as `s`,
/// else `ms`, `us`, `ns`.
pub struct DurationText(pub Duration);

impl fmt::Display for DurationText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ns = self.0.as_nanos();
        if ns == 0 {
            f.write_str("0s")
        } else if ns % 1_000_000_000 == 0 {
            write!(f, "{}s", ns / 1_000_000_000)
        } else if ns % 1_000_000 == 0 {
            write!(f, "{}ms", ns / 1_000_000)
        } else if ns % 1_000 == 0 {
            write!(f, "{}us", ns / 1_000)
        } else {
            write!(f, "{ns}ns")
        }
    }
}

/// A rate in bytes per second: the largest binary unit that divides it, `16KiB/s`, else `B/s`.
pub struct RateText(pub u64);

impl fmt::Display for RateText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const UNITS: [(&str, u64); 3] = [("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)];
        for (name, size) in UNITS {
            if self.0 >= size && self.0 % size == 0 {
                return write!(f, "{}{name}/s", self.0 / size);
            }
        }
        write!(f, "{}B/s", self.0)
    }
}

/// A byte count for people: `1.5 GiB`, `300 MiB`, `12 KiB`, `17 B`.
pub fn format_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else if value >= 100.0 {
        format!("{value:.0} {}", UNITS[unit])
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_in_binary_and_decimal_units() {
        assert_eq!(parse_size("256M"), Ok(256 << 20));
        assert_eq!(parse_size("256MiB"), Ok(256 << 20));
        assert_eq!(parse_size("1G"), Ok(1 << 30));
        assert_eq!(parse_size("1.5GiB"), Ok(3 << 29));
        assert_eq!(parse_size("2MB"), Ok(2_000_000));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("64 k"), Ok(64 << 10));
        assert_eq!(parse_size(".5K"), Ok(512));
        // One meaning of `kb`, whatever the case and wherever a size is read.
        for kb in ["1kb", "1KB", "1kB", "1Kb"] {
            assert_eq!(parse_size(kb), Ok(1000), "{kb}");
            assert_eq!(parse_rate(&format!("{kb}/s")), Ok(1000), "{kb}/s");
        }
    }

    #[test]
    fn bad_sizes_name_the_input_and_the_form() {
        for bad in [
            "", "M", "12X", "-1G", "0", "1..2M", "1.5.2K", "3kbit", "0.1B",
        ] {
            let err = parse_size(bad).unwrap_err().to_string();
            assert!(err.contains(&format!("`{bad}`")), "{err}");
            assert!(err.contains("expected a size"), "{err}");
        }
        assert!(
            parse_size("8Mbit")
                .unwrap_err()
                .reason
                .contains("bits are not accepted")
        );
    }

    #[test]
    fn rates_are_sizes_per_second() {
        assert_eq!(parse_rate("16KiB/s"), Ok(16 << 10));
        assert_eq!(parse_rate("500B/s"), Ok(500));
        assert_eq!(parse_rate("1.5MB/s"), Ok(1_500_000));
        assert_eq!(parse_rate("1.5K/s"), Ok(1536));
        assert!(parse_rate("16KiB").unwrap_err().reason.contains("/s"));
        assert!(
            parse_rate("0.5B/s")
                .unwrap_err()
                .reason
                .contains("below 1 byte")
        );
        for r in [1, 999, 1 << 10, 3 << 20, 5 << 30, 1_500_000] {
            assert_eq!(parse_rate(&RateText(r).to_string()), Ok(r));
        }
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("1h30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("0.2s"), Ok(Duration::from_millis(200)));
        assert_eq!(parse_duration("500µs"), Ok(Duration::from_micros(500)));
        assert_eq!(parse_duration("0s"), Ok(Duration::ZERO));
        let missing = parse_duration("200").unwrap_err();
        assert!(missing.reason.contains("missing unit"), "{missing}");
        assert!(parse_duration("soon").is_err());
        assert_eq!(
            parse_duration_or_seconds("1.5"),
            Ok(Duration::from_millis(1500))
        );
        assert_eq!(
            parse_duration_or_seconds("2m"),
            Ok(Duration::from_secs(120))
        );
        for bad in ["0s", "0", "-3", "soon"] {
            let err = parse_duration_or_seconds(bad).unwrap_err().to_string();
            assert!(err.contains(&format!("`{bad}`")), "{err}");
            assert!(err.contains("expected a duration"), "{err}");
        }
        for d in [1, 999, 1_000, 1_500_000, 200_000_000, 3_000_000_000u64] {
            let d = Duration::from_nanos(d);
            assert_eq!(parse_duration(&DurationText(d).to_string()), Ok(d));
        }
    }

    #[test]
    fn durations_and_sizes_have_upper_bounds() {
        for huge in [
            "10000000000000000000s",
            "18446744073709551615s",
            "31d",
            "721h",
            "2592001s",
        ] {
            let err = parse_duration(huge).unwrap_err();
            assert!(err.reason.contains("longer than 30 days"), "{huge}: {err}");
        }
        assert_eq!(parse_duration("30d"), Ok(MAX_DURATION));
        assert_eq!(parse_duration_or_seconds("2592000"), Ok(MAX_DURATION));
        for huge in ["2592000.5", "1e300", "1e15", "inf", "NaN"] {
            assert!(parse_duration_or_seconds(huge).is_err(), "{huge}");
        }
        assert_eq!(duration_from_seconds(1e-12), Err(UnitReason::NotPositive));
        assert_eq!(
            duration_from_seconds(1e19),
            Err(UnitReason::DurationTooLong)
        );
        assert_eq!(parse_size("1024T"), Ok(MAX_SIZE));
        for huge in ["1025T", "99999999999999999999", "16777216TB", "2PiB"] {
            assert!(parse_size(huge).is_err(), "{huge}");
        }
        assert!(parse_rate("2000TB/s").unwrap_err().reason.contains("1 PiB"));
        assert_eq!(size_from_bytes(i64::MAX), Err(UnitReason::TooLarge));
        assert_eq!(size_from_bytes(-1), Err(UnitReason::BelowOneByte));
        assert_eq!(size_from_bytes(4096), Ok(4096));
    }

    #[test]
    fn bytes_for_people() {
        assert_eq!(format_bytes(17), "17 B");
        assert_eq!(format_bytes(1536), "1.5 KiB");
        assert_eq!(format_bytes(300 << 20), "300 MiB");
    }
}
