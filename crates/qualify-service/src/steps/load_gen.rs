//! `qualify load-gen`: one generator process of a split load (`[load] generators = N`),
//! started by a service cell — here, or on another node — never by hand, with the words of a
//! `qualify_model::step::LoadGenStep`. It runs share `index` of `of` of the serialized
//! `LoadPlan` in `plan` against `target`, its schedule starting at `start_at` (Unix seconds;
//! default now), and writes its `GeneratorReport` (JSON) to `out`, atomically.
//!
//! The contract (the binary maps it to exit statuses): the report written, also when stopped or
//! cancelled (the report says so), is 0; a failed run is 1 (the report, if it could be
//! written, holds the error); bad words are 2 (unreadable plan, unresolvable target, index not
//! below count, start more than [`MAX_AHEAD`] away). `stop` (the binary sets it on SIGUSR1)
//! ends the schedule with requests in flight finishing, as when a cell's observer stops a
//! load; `cancel` abandons them. A generator that starts after `start_at` begins its schedule
//! when it can, not in a catch-up burst, and reports how late it was. On a cluster
//! `heartbeat` names the directory it beats in for its node while it runs.

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use qualify_load::{Flow, GeneratorReport, LoadPlan, Share};
use qualify_model::step::LoadGenStep;

/// The farthest in the future `start_at` may lie (a cell agrees on ~0.5 s ahead).
pub const MAX_AHEAD: Duration = Duration::from_secs(300);

/// Why a generator could not run or report.
#[derive(Debug, thiserror::Error)]
pub enum LoadGenError {
    #[error(
        "cannot read load plan {}: {source}; pass --plan the JSON file the cell wrote",
        path.display()
    )]
    PlanUnreadable {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "{}: not a load plan: {source}; pass --plan a serialized LoadPlan (the cell writes one per split load)",
        path.display()
    )]
    NotAPlan {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error(
        "--target {target}: {why}; pass the service's HOST:PORT (an address or a name this node resolves)"
    )]
    Target { target: String, why: String },
    #[error(
        "--index {index} --of {of}: the index must be below the count; number generators 0 … N-1 and pass --of N to each"
    )]
    Index { index: u32, of: u32 },
    #[error(
        "--start-at {at}: not a Unix time within {} s from now ({now:.3}); pass --start-at the agreed start in Unix seconds (e.g. `date +%s.%N` plus 0.5)",
        MAX_AHEAD.as_secs()
    )]
    StartAt { at: f64, now: f64 },
    #[error(
        "--heartbeat {}: cannot beat there: {source}; pass the cell's (shared, writable) state directory",
        dir.display()
    )]
    Heartbeat {
        dir: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "cannot write the generator report to {}: {why}; pass --out a path in a writable directory",
        path.display()
    )]
    Write { path: PathBuf, why: String },
}

/// The report a generator wrote, and whether its run failed (the report holds why).
pub struct Generated {
    pub report: GeneratorReport,
    pub failed: bool,
}

/// Run the share of `step` and write its report.
pub fn load_gen(
    step: &LoadGenStep,
    cancel: &AtomicBool,
    stop: &AtomicBool,
) -> Result<Generated, LoadGenError> {
    let text =
        std::fs::read_to_string(&step.plan).map_err(|source| LoadGenError::PlanUnreadable {
            path: step.plan.clone(),
            source,
        })?;
    let plan: LoadPlan = serde_json::from_str(&text).map_err(|source| LoadGenError::NotAPlan {
        path: step.plan.clone(),
        source,
    })?;
    let target = resolve(&step.target)?;
    if step.of == 0 || step.index >= step.of {
        return Err(LoadGenError::Index {
            index: step.index,
            of: step.of,
        });
    }
    let (start, late) = start_instant(step.start_at)?;
    let _beat = match &step.heartbeat {
        Some(dir) => Some(
            qualify_slurm::heartbeat::Beat::start(dir, &super::this_node()).map_err(|source| {
                LoadGenError::Heartbeat {
                    dir: dir.clone(),
                    source,
                }
            })?,
        ),
        None => None,
    };
    let mut observer = |_: &qualify_load::Progress| {
        if stop.load(Ordering::Relaxed) {
            Flow::Stop
        } else {
            Flow::Continue
        }
    };
    let share = Share {
        index: step.index,
        of: step.of,
    };
    let (report, failed) =
        match qualify_load::run_share(&plan, target, share, start, cancel, &mut observer) {
            Ok(mut r) => {
                r.start_at_unix = step.start_at;
                r.started_late_seconds = late;
                (r, false)
            }
            Err(e) => (
                GeneratorReport::failed(step.index, step.of, e.to_string()),
                true,
            ),
        };
    write_atomically(&step.out, &report)?;
    Ok(Generated { report, failed })
}

fn resolve(target: &str) -> Result<SocketAddr, LoadGenError> {
    let bad = |why: String| LoadGenError::Target {
        target: target.to_string(),
        why,
    };
    target
        .to_socket_addrs()
        .map_err(|e| bad(e.to_string()))?
        .next()
        .ok_or_else(|| bad("resolves to no address".into()))
}

/// The schedule's start on this process's monotonic clock, and how late this process is for
/// it (seconds): a start already past begins now.
fn start_instant(start_at: Option<f64>) -> Result<(Option<Instant>, f64), LoadGenError> {
    let Some(at) = start_at else {
        return Ok((None, 0.0));
    };
    let now_unix = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    let now = Instant::now();
    let ahead = at - now_unix;
    if !at.is_finite() || ahead > MAX_AHEAD.as_secs_f64() {
        return Err(LoadGenError::StartAt { at, now: now_unix });
    }
    if ahead >= 0.0 {
        Ok((Some(now + Duration::from_secs_f64(ahead)), 0.0))
    } else {
        Ok((Some(now), -ahead))
    }
}

/// Write `report` to `path` through a temporary file beside it, so a reader sees all or
/// nothing.
fn write_atomically(path: &Path, report: &GeneratorReport) -> Result<(), LoadGenError> {
    let fail = |why: String| LoadGenError::Write {
        path: path.to_path_buf(),
        why,
    };
    let json = serde_json::to_vec(report).map_err(|e| fail(e.to_string()))?;
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    std::fs::write(&tmp, json).map_err(|e| fail(e.to_string()))?;
    std::fs::rename(&tmp, path).map_err(|e| fail(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_start_in_the_past_begins_now_and_says_how_late() {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs_f64();
        let (at, late) = start_instant(Some(now - 2.0)).unwrap();
        assert!(at.is_some());
        assert!((late - 2.0).abs() < 0.5, "{late}");
        let (at, late) = start_instant(Some(now + 1.0)).unwrap();
        assert_eq!(late, 0.0);
        let wait = at.unwrap().saturating_duration_since(Instant::now());
        assert!(wait > Duration::from_millis(500), "{wait:?}");
        assert!(start_instant(Some(now + 3600.0)).is_err());
        assert!(start_instant(Some(f64::NAN)).is_err());
        assert_eq!(start_instant(None).unwrap(), (None, 0.0));
    }
}
