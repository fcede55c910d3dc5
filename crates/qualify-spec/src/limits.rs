//! `[limits]`: the ceilings and watch windows every cell starts from, with the same meaning and
//! parsers as `qualify probe`'s flags; [`SpecLimits::to_probe_limits`] turns them into the
//! vocabulary's [`qualify_model::Limits`] a probe runs under.

use std::str::FromStr;
use std::time::Duration;

use qualify_model::Progress;
use serde::{Deserialize, Serialize, Serializer};
use toml::{Spanned, Value};

use crate::check::Checker;

/// The spec's limits as written (`None` = not set: the probe's default applies).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SpecLimits {
    pub memory_bytes: Option<u64>,
    pub cpus: Option<f64>,
    pub pids: Option<u64>,
    #[serde(rename = "timeout_seconds", serialize_with = "seconds")]
    pub timeout: Option<Duration>,
    #[serde(rename = "stall_seconds", serialize_with = "seconds")]
    pub stall: Option<Duration>,
    pub progress: Option<Progress>,
    /// `[limits] disk`: what the artifact may write to its writable places (unset: the
    /// sandbox's guard, [`qualify_model::limits::DEFAULT_DISK`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disk_bytes: Option<u64>,
}

impl SpecLimits {
    /// The probe limits these stand for; unset fields take the probe's defaults.
    pub fn to_probe_limits(&self) -> qualify_model::Limits {
        let defaults = qualify_model::Limits::default();
        qualify_model::Limits {
            memory_bytes: self.memory_bytes,
            cpus: self.cpus,
            pids: self.pids,
            timeout_seconds: self
                .timeout
                .map_or(defaults.timeout_seconds, |d| d.as_secs_f64()),
            stall_seconds: self
                .stall
                .map_or(defaults.stall_seconds, |d| d.as_secs_f64()),
            progress: self.progress.unwrap_or(defaults.progress),
            disk_bytes: self.disk_bytes,
            guards: Vec::new(),
        }
    }
}

fn seconds<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
    d.map(|d| d.as_secs_f64()).serialize(s)
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawLimits {
    memory: Option<Spanned<Value>>,
    cpus: Option<Spanned<Value>>,
    pids: Option<Spanned<i64>>,
    timeout: Option<Spanned<Value>>,
    stall: Option<Spanned<Value>>,
    progress: Option<Spanned<String>>,
    disk: Option<Spanned<Value>>,
}

pub(crate) fn check(raw: RawLimits, ck: &mut Checker<'_>) -> SpecLimits {
    let limits = SpecLimits {
        memory_bytes: raw.memory.and_then(|m| ck.size(&m)),
        disk_bytes: raw.disk.and_then(|d| ck.size(&d)),
        cpus: raw.cpus.and_then(|c| ck.cpus(&c)),
        pids: raw
            .pids
            .and_then(|p| ck.positive_at_most(&p, "limits.pids", qualify_model::limits::MAX_PIDS)),
        timeout: raw.timeout.as_ref().and_then(|t| ck.duration(t)),
        stall: raw.stall.as_ref().and_then(|s| ck.duration(s)),
        progress: raw
            .progress
            .and_then(|p| match Progress::from_str(p.get_ref()) {
                Ok(progress) => Some(progress),
                Err(message) => {
                    ck.error(p.span(), message);
                    None
                }
            }),
    };
    // The stall window must fit in the deadline, or a deadlock is only ever a timeout.
    let probe = limits.to_probe_limits();
    if probe.stall_seconds >= probe.timeout_seconds {
        let show = |d: Duration| humantime::format_duration(d).to_string();
        let (stall, timeout) = (show(probe.stall()), show(probe.timeout()));
        let (span, which) = match (&raw.stall, &raw.timeout) {
            (Some(s), _) => (s.span(), "limits.stall"),
            (None, Some(t)) => (t.span(), "limits.timeout"),
            (None, None) => (0..0, "limits"),
        };
        let defaulted = if raw.stall.is_none() {
            " (the default)"
        } else {
            ""
        };
        ck.error_help(
            span,
            format!(
                "{which}: the stall window {stall}{defaulted} is not shorter than the timeout {timeout}: a deadlock or livelock could never be recognised before the deadline"
            ),
            "make stall shorter than timeout, e.g. a stall of a tenth of the timeout",
        );
    }
    limits
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unset_limits_take_the_probe_defaults() {
        assert_eq!(
            SpecLimits::default().to_probe_limits(),
            qualify_model::Limits::default()
        );
        let set = SpecLimits {
            memory_bytes: Some(1 << 30),
            cpus: Some(1.5),
            pids: Some(64),
            timeout: Some(Duration::from_secs(60)),
            stall: Some(Duration::from_secs(5)),
            progress: Some(Progress::Output),
            disk_bytes: Some(256 << 20),
        }
        .to_probe_limits();
        assert_eq!(set.disk_bytes, Some(256 << 20));
        assert!(
            set.guards.is_empty(),
            "the spec's own ceilings are no guards"
        );
        assert_eq!(set.memory_bytes, Some(1 << 30));
        assert_eq!(set.cpus, Some(1.5));
        assert_eq!(set.pids, Some(64));
        assert_eq!(set.timeout_seconds, 60.0);
        assert_eq!(set.stall_seconds, 5.0);
        assert_eq!(set.progress, Progress::Output);
    }
}
