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

/// Parse a memory size. Binary units: `K`, `M`, `G`, `T` and `KiB`, `MiB`, `GiB`, `TiB` are
/// powers of 1024 (as cgroups and container tools read them); `KB`, `MB`, `GB`, `TB` are powers of
/// 1000; a bare number or `B` is bytes. Fractions are allowed (`1.5G`).
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let hint = "expected a size such as 512M, 256MiB, 1.5G or 1000000 (bytes)";
    if number.is_empty() {
        return Err(format!("invalid size `{text}`: {hint}"));
    }
    let value: f64 = number
        .parse()
        .map_err(|_| format!("invalid size `{text}`: {hint}"))?;
    let multiplier: f64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "k" | "kib" => 1024.0,
        "m" | "mib" => 1024.0 * 1024.0,
        "g" | "gib" => 1024.0 * 1024.0 * 1024.0,
        "t" | "tib" => 1024.0f64.powi(4),
        "kb" => 1e3,
        "mb" => 1e6,
        "gb" => 1e9,
        "tb" => 1e12,
        other => {
            return Err(format!(
                "invalid size `{text}`: unknown unit `{other}`; {hint}"
            ));
        }
    };
    let bytes = value * multiplier;
    if !bytes.is_finite() || bytes < 1.0 || bytes > u64::MAX as f64 {
        return Err(format!(
            "invalid size `{text}`: must be at least 1 byte; {hint}"
        ));
    }
    Ok(bytes.round() as u64)
}

/// Parse a duration such as `30s`, `2m`, `1h30m`, `500ms`; a bare number means seconds.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let hint = "expected a duration such as 30s, 2m, 1h30m or 500ms";
    if let Ok(secs) = t.parse::<f64>() {
        if secs.is_finite() && secs > 0.0 {
            return Ok(Duration::from_secs_f64(secs));
        }
        return Err(format!(
            "invalid duration `{text}`: must be positive; {hint}"
        ));
    }
    let d = humantime::parse_duration(t)
        .map_err(|e| format!("invalid duration `{text}`: {e}; {hint}"))?;
    if d.is_zero() {
        return Err(format!(
            "invalid duration `{text}`: must be positive; {hint}"
        ));
    }
    Ok(d)
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
