//! Ceilings and watch settings for one probe (`qualify_model::limits`, re-exported) and the
//! parsers for the human forms users type (`256MiB`, `1.5G`, `30s`, `2m`): the spec's one
//! grammar, whose [`UnitError`] names the text and the form it takes (clap prints it as is).

use std::time::Duration;

pub use qualify_model::limits::{
    Ceiling, DEFAULT_DISK, DEFAULT_PIDS, DEFAULT_STALL, DEFAULT_TIMEOUT, Limits, Progress,
    parse_cpus,
};
pub use qualify_model::units::UnitError;

/// Parse a memory size (`256MiB`, `1.5G`, `2MB`; the spec's one size grammar:
/// [`qualify_model::units`]).
pub fn parse_size(text: &str) -> Result<u64, UnitError> {
    qualify_model::units::parse_size(text)
}

/// Parse a duration such as `30s`, `2m`, `1h30m`, `500ms`; a bare number means seconds (the
/// spec's one duration grammar: [`qualify_model::units`]).
pub fn parse_duration(text: &str) -> Result<Duration, UnitError> {
    qualify_model::units::parse_duration_or_seconds(text)
}

/// Format a byte count for people: `1.5 GiB`, `300 MiB`, `12 KiB`, `17 B`.
pub use qualify_model::format_bytes;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_in_binary_and_decimal_units() {
        assert_eq!(parse_size("256M").unwrap(), 256 << 20);
        assert_eq!(parse_size("256MiB").unwrap(), 256 << 20);
        assert_eq!(parse_size("1G").unwrap(), 1 << 30);
        assert_eq!(parse_size("1.5GiB").unwrap(), 3 << 29);
        assert_eq!(parse_size("2MB").unwrap(), 2_000_000);
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert_eq!(parse_size("64 k").unwrap(), 64 << 10);
    }

    #[test]
    fn bad_sizes_name_the_input_and_the_form() {
        for bad in ["", "M", "12X", "-1G", "0", "1..2M"] {
            let err = parse_size(bad).unwrap_err().to_string();
            assert!(err.contains(&format!("`{bad}`")), "{err}");
            assert!(err.contains("expected a size"), "{err}");
        }
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("30s").unwrap(), Duration::from_secs(30));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("1.5").unwrap(), Duration::from_millis(1500));
        assert!(parse_duration("soon").is_err());
        assert!(parse_duration("0s").is_err());
    }

    #[test]
    fn cpus() {
        assert_eq!(parse_cpus("0.5").unwrap(), 0.5);
        assert!(parse_cpus("0").is_err());
        assert!(parse_cpus("many").is_err());
    }

    #[test]
    fn bytes_for_people() {
        assert_eq!(format_bytes(17), "17 B");
        assert_eq!(format_bytes(1536), "1.5 KiB");
        assert_eq!(format_bytes(300 << 20), "300 MiB");
    }
}
