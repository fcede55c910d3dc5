//! Ceilings and watch settings for one probe, and the parsers for the human forms users type
//! (`256MiB`, `1.5G`, `30s`, `2m`).

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Which signal counts as progress (used for livelock and `timeout_kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Progress {
    /// No declared progress signal: livelock cannot be detected.
    #[default]
    None,
    /// Any byte on stdout or stderr is progress.
    Output,
    /// A touch of / append to the file named by `QUALIFY_HEARTBEAT` is progress.
    Heartbeat,
}

impl FromStr for Progress {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "none" => Ok(Progress::None),
            "output" => Ok(Progress::Output),
            "heartbeat" => Ok(Progress::Heartbeat),
            other => Err(format!(
                "unknown progress signal `{other}`; expected one of: none, output, heartbeat"
            )),
        }
    }
}

impl fmt::Display for Progress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Progress::None => "none",
            Progress::Output => "output",
            Progress::Heartbeat => "heartbeat",
        })
    }
}

/// The ceilings and watch windows of one probe. Serialized into every result as `limits`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Limits {
    /// Memory ceiling for the whole tree, bytes.
    pub memory_bytes: Option<u64>,
    /// CPU ceiling in (fractional) cores.
    pub cpus: Option<f64>,
    /// Maximum number of tasks (processes and threads) in the tree.
    pub pids: Option<u64>,
    pub timeout_seconds: f64,
    pub stall_seconds: f64,
    pub progress: Progress,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            memory_bytes: None,
            cpus: None,
            pids: None,
            timeout_seconds: DEFAULT_TIMEOUT.as_secs_f64(),
            stall_seconds: DEFAULT_STALL.as_secs_f64(),
            progress: Progress::None,
        }
    }
}

impl Limits {
    pub fn timeout(&self) -> Duration {
        Duration::from_secs_f64(self.timeout_seconds.max(0.0))
    }
    pub fn stall(&self) -> Duration {
        Duration::from_secs_f64(self.stall_seconds.max(0.0))
    }
}

pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);
pub const DEFAULT_STALL: Duration = Duration::from_secs(10);

/// Parse a memory size (`256MiB`, `1.5G`, `2MB`; the spec's one size grammar:
/// [`qualify_model::units`]).
pub fn parse_size(text: &str) -> Result<u64, String> {
    qualify_model::units::parse_size(text).map_err(|e| e.to_string())
}

/// Parse a duration such as `30s`, `2m`, `1h30m`, `500ms`; a bare number means seconds (the
/// spec's one duration grammar: [`qualify_model::units`]).
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    qualify_model::units::parse_duration_or_seconds(text).map_err(|e| e.to_string())
}

/// Parse a CPU ceiling in cores (`0.5`, `2`).
pub fn parse_cpus(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.01 => Ok(v),
        _ => Err(format!(
            "invalid CPU ceiling `{text}`: expected a number of cores of at least 0.01, e.g. 0.5 or 2"
        )),
    }
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
            let err = parse_size(bad).unwrap_err();
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
