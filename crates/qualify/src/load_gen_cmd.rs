//! `qualify load-gen` (hidden): one generator process of a split load (`[load] generators =
//! N`), started by a service cell — here, or on another node — never by hand, with the words
//! of a `qualify_model::step::LoadGenStep`. It runs share
//! `--index` of `--of` of the serialized `LoadPlan` in `--plan` against `--target`, its
//! schedule starting at `--start-at` (Unix seconds; default now), and writes its
//! `GeneratorReport` (JSON) to `--out`, atomically.
//!
//! The contract: exit 0 = the report was written (also when stopped or cancelled: the report
//! says so); 1 = the run failed (the report, if it could be written, holds the error);
//! 2 = bad arguments (unreadable plan, unresolvable target, index not below count, start more
//! than [`MAX_AHEAD`] away). SIGUSR1 stops the schedule (requests in flight finish, as when
//! a cell's observer stops a load); SIGINT/SIGTERM/SIGHUP cancel it (in-flight requests are
//! abandoned). A generator that starts after `--start-at` begins its schedule when it can,
//! not in a catch-up burst, and reports how late it was. On a cluster `--heartbeat DIR` beats
//! for its node while it runs.

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use qualify_load::{Flow, GeneratorReport, LoadPlan, Share};
use qualify_model::step::LoadGenStep;

use crate::error::{CliError, exit};

/// The farthest in the future `--start-at` may lie (a cell agrees on ~0.5 s ahead).
pub const MAX_AHEAD: Duration = Duration::from_secs(300);

pub fn run(args: LoadGenStep) -> Result<ExitCode, CliError> {
    let text = std::fs::read_to_string(&args.plan).map_err(|e| {
        CliError::unreadable(
            "load plan",
            &args.plan,
            &e,
            "pass --plan the JSON file the cell wrote",
        )
    })?;
    let plan: LoadPlan = serde_json::from_str(&text).map_err(|e| {
        CliError::input(
            format!("{}: not a load plan: {e}", args.plan.display()),
            "pass --plan a serialized LoadPlan (the cell writes one per split load)",
        )
    })?;
    let target = resolve(&args.target)?;
    if args.of == 0 || args.index >= args.of {
        return Err(CliError::input(
            format!(
                "--index {} --of {}: the index must be below the count",
                args.index, args.of
            ),
            "number generators 0 … N-1 and pass --of N to each",
        ));
    }
    let (start, late) = start_instant(args.start_at)?;
    let _beat = match &args.heartbeat {
        Some(dir) => Some(
            qualify_slurm::heartbeat::Beat::start(dir, &crate::cluster_cmd::this_node()).map_err(
                |e| {
                    CliError::input(
                        format!("--heartbeat {}: cannot beat there: {e}", dir.display()),
                        "pass the cell's (shared, writable) state directory",
                    )
                },
            )?,
        ),
        None => None,
    };
    let cancel = crate::cancel_on_signals();
    let stop = Arc::new(AtomicBool::new(false));
    if let Err(e) = signal_hook::flag::register(signal_hook::consts::SIGUSR1, Arc::clone(&stop)) {
        eprintln!("qualify load-gen: warning: cannot install the SIGUSR1 (stop) handler: {e}");
    }
    let mut observer = |_: &qualify_load::Progress| {
        if stop.load(Ordering::Relaxed) {
            Flow::Stop
        } else {
            Flow::Continue
        }
    };
    let share = Share {
        index: args.index,
        of: args.of,
    };
    let (report, code) =
        match qualify_load::run_share(&plan, target, share, start, &cancel, &mut observer) {
            Ok(mut r) => {
                r.start_at_unix = args.start_at;
                r.started_late_seconds = late;
                (r, ExitCode::SUCCESS)
            }
            Err(e) => (
                GeneratorReport::failed(args.index, args.of, e.to_string()),
                exit::refused(),
            ),
        };
    write_atomically(&args.out, &report)?;
    if let Some(e) = &report.error {
        eprintln!(
            "qualify load-gen: generator {} of {}: {e}",
            args.index, args.of
        );
    }
    Ok(code)
}

fn resolve(target: &str) -> Result<SocketAddr, CliError> {
    let bad = |why: String| {
        CliError::input(
            format!("--target {target}: {why}"),
            "pass the service's HOST:PORT (an address or a name this node resolves)",
        )
    };
    target
        .to_socket_addrs()
        .map_err(|e| bad(e.to_string()))?
        .next()
        .ok_or_else(|| bad("resolves to no address".into()))
}

/// The schedule's start on this process's monotonic clock, and how late this process is for
/// it (seconds): a start already past begins now.
fn start_instant(start_at: Option<f64>) -> Result<(Option<Instant>, f64), CliError> {
    let Some(at) = start_at else {
        return Ok((None, 0.0));
    };
    let now_unix = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    let now = Instant::now();
    let ahead = at - now_unix;
    if !at.is_finite() || ahead > MAX_AHEAD.as_secs_f64() {
        return Err(CliError::input(
            format!(
                "--start-at {at}: not a Unix time within {} s from now ({now_unix:.3})",
                MAX_AHEAD.as_secs()
            ),
            "pass --start-at the agreed start in Unix seconds (e.g. `date +%s.%N` plus 0.5)",
        ));
    }
    if ahead >= 0.0 {
        Ok((Some(now + Duration::from_secs_f64(ahead)), 0.0))
    } else {
        Ok((Some(now), -ahead))
    }
}

/// Write `report` to `path` through a temporary file beside it, so a reader sees all or
/// nothing.
fn write_atomically(path: &Path, report: &GeneratorReport) -> Result<(), CliError> {
    let fail = |e: String| {
        CliError::output(
            format!(
                "cannot write the generator report to {}: {e}",
                path.display()
            ),
            Some("pass --out a path in a writable directory"),
        )
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
