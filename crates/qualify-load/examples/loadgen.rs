//! A command-line driver for the load generator (benchmarks and manual runs, not part of
//! qualify's interface): runs one plan against one address from the main thread and prints one
//! JSON object: the report, the judged SLOs, the cell verdict (the process is assumed alive)
//! and the generator process's peak resident memory (VmHWM).
//!
//! Usage: loadgen PLAN TARGET [METRIC:max|min:LIMIT ...]
//!   PLAN    a LoadPlan as JSON, inline or @file
//!   TARGET  host:port, e.g. 127.0.0.1:8080
//!   SLOs    e.g. latency_p99:max:0.1 (seconds), error_rate:max:0.01, throughput:min:500
//! Exit status: 0 when it ran, 2 on bad arguments.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;

use qualify_load::verdict::{CellFacts, Verdict, decide};
use qualify_load::{Flow, LoadPlan, slo};
use qualify_model::{BoundKind, Slo, SloMetric};

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("loadgen: {message}");
            ExitCode::from(2)
        }
    }
}

// A `String` error on purpose: this driver prints its one message and exits 2; nothing
// matches on it (the library's errors it reports are typed, `LoadError`).
fn run() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [plan, target, slos @ ..] = args.as_slice() else {
        return Err("usage: loadgen PLAN_JSON|@FILE HOST:PORT [METRIC:max|min:LIMIT ...]".into());
    };
    let text = match plan.strip_prefix('@') {
        Some(path) => std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?,
        None => plan.clone(),
    };
    let plan: LoadPlan = serde_json::from_str(&text).map_err(|e| format!("plan: {e}"))?;
    let target: SocketAddr = target.parse().map_err(|e| format!("{target}: {e}"))?;
    let slos = slos
        .iter()
        .map(|s| parse_slo(s))
        .collect::<Result<Vec<_>, _>>()?;
    let report = qualify_load::run(&plan, target, &AtomicBool::new(false), &mut |_| {
        Flow::Continue
    })
    .map_err(|e| e.to_string())?;
    let judged = slo::evaluate(&slos, &report);
    let verdict = decide(&CellFacts {
        not_ready: None,
        report: Some(&report),
        slos: &judged,
        process_alive: true,
    });
    let (outcome, detail) = match &verdict {
        Verdict::Service { outcome, detail } => (outcome.as_str(), detail.clone()),
        Verdict::ProcessEnded => ("process_ended", None),
    };
    let out = serde_json::json!({
        "report": report,
        "slo": judged,
        "outcome": outcome,
        "detail": detail,
        "peak_rss_bytes": peak_rss(),
    });
    println!("{out}");
    Ok(())
}

// The message `run` prints (see there).
fn parse_slo(text: &str) -> Result<Slo, String> {
    let mut parts = text.split(':');
    let (Some(metric), Some(bound), Some(limit), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(format!("SLO `{text}`: write METRIC:max|min:LIMIT"));
    };
    let metric: SloMetric = metric.parse()?;
    let bound = match bound {
        "max" => BoundKind::Max,
        "min" => BoundKind::Min,
        other => return Err(format!("SLO `{text}`: `{other}` is neither max nor min")),
    };
    let limit: f64 = limit
        .parse()
        .map_err(|_| format!("SLO `{text}`: `{limit}` is not a number"))?;
    Ok(Slo {
        metric,
        bound,
        limit,
        phase: Default::default(),
    })
}

/// This process's peak resident set (VmHWM from /proc/self/status), in bytes.
fn peak_rss() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}
