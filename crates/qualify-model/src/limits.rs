//! A probe's ceilings and watch windows ([`Limits`], serialized into every result as `limits`),
//! the progress signal it watches ([`Progress`]), and the CPU-ceiling grammar ([`parse_cpus`];
//! sizes and durations are [`crate::units`]').

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::ParseError;

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
    type Err = ParseError;
    fn from_str(s: &str) -> Result<Self, ParseError> {
        match s {
            "none" => Ok(Progress::None),
            "output" => Ok(Progress::Output),
            "heartbeat" => Ok(Progress::Heartbeat),
            other => Err(ParseError::new(
                "progress signal",
                other,
                ["none", "output", "heartbeat"],
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
    /// Ceiling on what the tree writes to its writable places (the private `/tmp` and
    /// `/dev/shm`, the workdir's private layer), bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk_bytes: Option<u64>,
    /// The ceilings above that nobody asked for: set by the sandbox so that a runaway tree
    /// cannot harm the host ([`DEFAULT_PIDS`], [`DEFAULT_DISK`]). Reaching one ends the run with
    /// its outcome (`pids_exhausted`, `disk_full`); reaching a ceiling that was asked for is a
    /// flag, and the program's own handling decides the outcome.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub guards: Vec<Ceiling>,
}

/// A ceiling the sandbox sets by default ([`Limits::guards`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Ceiling {
    Pids,
    Disk,
}

/// The pids ceiling of a sandboxed tree whose limits set none (a guard against fork bombs).
pub const DEFAULT_PIDS: u64 = 4096;
/// The disk ceiling of a sandboxed tree whose limits set none (a guard against disk fills).
pub const DEFAULT_DISK: u64 = 1 << 30;

impl Default for Limits {
    fn default() -> Self {
        Limits {
            memory_bytes: None,
            cpus: None,
            pids: None,
            timeout_seconds: DEFAULT_TIMEOUT.as_secs_f64(),
            stall_seconds: DEFAULT_STALL.as_secs_f64(),
            progress: Progress::None,
            disk_bytes: None,
            guards: Vec::new(),
        }
    }
}

impl Limits {
    /// These limits with the guards of a sandboxed tree: [`DEFAULT_PIDS`] and [`DEFAULT_DISK`]
    /// where none is set, each named in [`Limits::guards`].
    pub fn guarded(&self) -> Limits {
        let mut l = self.clone();
        if l.pids.is_none() {
            l.pids = Some(DEFAULT_PIDS);
            l.guards.push(Ceiling::Pids);
        }
        if l.disk_bytes.is_none() {
            l.disk_bytes = Some(DEFAULT_DISK);
            l.guards.push(Ceiling::Disk);
        }
        l.guards.sort_unstable();
        l.guards.dedup();
        l
    }

    /// Whether `c` is a guard (set by default) rather than a ceiling somebody asked for.
    pub fn is_guard(&self, c: Ceiling) -> bool {
        self.guards.contains(&c)
    }

    /// The deadline's length: never longer than [`crate::units::MAX_DURATION`], whatever
    /// `timeout_seconds` holds (limits are also read back from JSON).
    pub fn timeout(&self) -> Duration {
        bounded_seconds(self.timeout_seconds)
    }
    /// The stall window, bounded like [`Limits::timeout`].
    pub fn stall(&self) -> Duration {
        bounded_seconds(self.stall_seconds)
    }
}

/// `seconds` as a duration in `0..=MAX_DURATION` (not a number: the maximum).
fn bounded_seconds(seconds: f64) -> Duration {
    let max = crate::units::MAX_DURATION;
    if seconds.is_nan() {
        return max;
    }
    Duration::try_from_secs_f64(seconds.clamp(0.0, max.as_secs_f64())).unwrap_or(max)
}

pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);
pub const DEFAULT_STALL: Duration = Duration::from_secs(10);

/// The most runs of one cell qualify makes (`--repeat`, `[reproducibility] repeat`,
/// `[performance] repeat`, `max_repeat` and `warmup`).
pub const MAX_REPEAT: u64 = 10_000;

/// The most tasks a `pids` ceiling may name: the kernel's own limit (`PID_MAX_LIMIT`, 2^22).
pub const MAX_PIDS: u64 = 1 << 22;

/// A CPU ceiling that is not a number of cores from 0.01 to [`MAX_CPUS`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid CPU ceiling `{text}`: expected a number of cores from 0.01 to 1048576, e.g. 0.5 or 2"
)]
pub struct CpusError {
    /// The ceiling as given.
    pub text: String,
}

/// The message, where a diagnostic takes text (a spec diagnostic at the value's location).
impl From<CpusError> for String {
    fn from(e: CpusError) -> String {
        e.to_string()
    }
}

/// The largest CPU ceiling, in cores.
pub const MAX_CPUS: f64 = 1_048_576.0;

/// Parse a CPU ceiling in cores (`0.5`, `2`), at most [`MAX_CPUS`].
pub fn parse_cpus(text: &str) -> Result<f64, CpusError> {
    match text.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && (0.01..=MAX_CPUS).contains(&v) => Ok(v),
        _ => Err(CpusError {
            text: text.to_string(),
        }),
    }
}
