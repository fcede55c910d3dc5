//! How one probed run (one cell) ended — the outcome strings are a public contract of `qualify
//! probe --json`, the receipt and the ledger — and the one presentation table every renderer
//! draws outcomes with: a terminal symbol and ANSI colour, a report symbol and fill/text colours,
//! and the severity used when several cells fall on one square of a map.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::ParseError;

/// How one probed run ended. Exactly one per run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Exit status 0.
    Ok,
    /// Non-zero exit status.
    ExitFailure,
    /// Killed by SIGSEGV, SIGABRT, SIGBUS, SIGFPE or SIGILL, or ended by a fatal error its
    /// runtime or a sanitizer reported (a data race, memory corruption, a stack overflow;
    /// `evidence.runtime_report`).
    Crash,
    /// The memory ceiling killed something in the tree (decided by the oom_kill counter or the
    /// watchdog, never by the exit status).
    OomKilled,
    /// The program's runtime reported that memory ran out and the program ended (not killed by
    /// the memory ceiling): a runtime's own limit (the JVM's `-Xmx`, Node.js's
    /// `--max-old-space-size`) or an allocation the system refused. `evidence.runtime_report`
    /// keeps the runtime's words and names the limit that was hit.
    OutOfMemory,
    /// Every thread blocked in an untimed wait only the tree could release, nothing moving for
    /// the stall window; or the runtime's own report of a deadlock (Go's "all goroutines are
    /// asleep", a lock glibc refused with `EDEADLK`); or, from stack samples, every thread spinning or waiting in a blocking
    /// synchronization call (or blocked, a runtime helper, a launcher) with nothing but CPU
    /// moving (`evidence.spin`).
    Deadlock,
    /// CPU busy and no progress signal for the stall window.
    Livelock,
    /// The deadline passed; see `timeout_kind`.
    Timeout,
    /// The tree reached the pids ceiling qualify sets when the spec sets none (a guard of the
    /// host against a fork bomb): qualify ended the run at once.
    PidsExhausted,
    /// The tree's writes reached the disk ceiling qualify sets when the spec sets none (a guard
    /// of the host against a disk fill): qualify ended the run at once.
    DiskFull,
    /// Killed by a signal that neither qualify nor the memory ceiling sent.
    Killed,
    /// qualify itself was interrupted (SIGINT/SIGTERM) and killed the tree; says nothing about the
    /// artifact.
    Interrupted,
    /// A service kept up with its offered load but a service-level objective failed.
    SloViolated,
    /// A service could not keep up: achieved throughput below 90% of offered, or arrivals
    /// dropped.
    Overloaded,
    /// A service never became ready, or refused connections while its process was alive.
    Unavailable,
    /// A service lost writes it had acknowledged (a kill and restart under load).
    LostWrites,
    /// A service did not meet its objectives again within `recover_within` after a fault.
    NotRecovered,
    /// A service behaved under a fault as the claim does not accept: a behaviour verdict its
    /// fault axis's `expect` does not list, or an objective for the fault window
    /// (`[[slo]] phase = "fault"`) not held. The detail names the expected and the observed.
    UnexpectedBehaviour,
}

impl Outcome {
    /// The contract string, e.g. `"oom_killed"`.
    pub fn as_str(self) -> &'static str {
        self.style().name
    }

    /// Every outcome, in contract (and legend) order.
    pub const ALL: [Outcome; 18] = [
        Outcome::Ok,
        Outcome::ExitFailure,
        Outcome::Crash,
        Outcome::OomKilled,
        Outcome::OutOfMemory,
        Outcome::Deadlock,
        Outcome::Livelock,
        Outcome::Timeout,
        Outcome::PidsExhausted,
        Outcome::DiskFull,
        Outcome::Killed,
        Outcome::Interrupted,
        Outcome::SloViolated,
        Outcome::Overloaded,
        Outcome::Unavailable,
        Outcome::LostWrites,
        Outcome::NotRecovered,
        Outcome::UnexpectedBehaviour,
    ];

    /// How renderers draw this outcome.
    pub fn style(self) -> &'static Style {
        match STYLES.iter().find(|(o, _)| *o == self) {
            Some((_, style)) => style,
            None => &UNKNOWN,
        }
    }

    /// Rank for merging several cells into one square: any failure beats an interruption, which
    /// beats ok.
    pub fn severity(self) -> u8 {
        self.style().severity
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Outcome {
    type Err = ParseError;
    fn from_str(s: &str) -> Result<Outcome, ParseError> {
        Outcome::ALL
            .into_iter()
            .find(|o| o.as_str() == s)
            .ok_or_else(|| ParseError::new("outcome", s, Outcome::ALL.map(Outcome::as_str)))
    }
}

/// How an outcome is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Style {
    /// The contract string (or a label for the non-outcome styles).
    pub name: &'static str,
    /// One character in the terminal's failure map.
    pub term_symbol: char,
    /// ANSI SGR parameters of the terminal symbol, e.g. `"31;1"`.
    pub ansi: &'static str,
    /// The symbol in HTML and Markdown maps.
    pub mark: &'static str,
    /// Fill and text colour of an HTML square.
    pub fill: &'static str,
    pub text: &'static str,
    /// 0 ok, 1 interrupted (or nothing known), 2 a failure.
    pub severity: u8,
}

const fn style(
    name: &'static str,
    term_symbol: char,
    ansi: &'static str,
    mark: &'static str,
    fill: &'static str,
    text: &'static str,
    severity: u8,
) -> Style {
    Style {
        name,
        term_symbol,
        ansi,
        mark,
        fill,
        text,
        severity,
    }
}

/// The table, in legend order.
const STYLES: [(Outcome, Style); 18] = [
    (
        Outcome::Ok,
        style("ok", '.', "32", "✓", "#2e7d32", "#fff", 0),
    ),
    (
        Outcome::ExitFailure,
        style("exit_failure", 'x', "31", "x", "#c62828", "#fff", 2),
    ),
    (
        Outcome::Crash,
        style("crash", 'C', "31;1", "C", "#7f0000", "#fff", 2),
    ),
    (
        Outcome::OomKilled,
        style("oom_killed", 'M', "35;1", "M", "#6a1b9a", "#fff", 2),
    ),
    (
        Outcome::OutOfMemory,
        style("out_of_memory", 'm', "35", "m", "#8e24aa", "#fff", 2),
    ),
    (
        Outcome::Deadlock,
        style("deadlock", 'D', "33;1", "D", "#e65100", "#fff", 2),
    ),
    (
        Outcome::Livelock,
        style("livelock", 'L', "33", "L", "#f9a825", "#000", 2),
    ),
    (
        Outcome::Timeout,
        style("timeout", 'T', "34;1", "T", "#1565c0", "#fff", 2),
    ),
    (
        Outcome::PidsExhausted,
        style("pids_exhausted", 'P', "35", "P", "#4a148c", "#fff", 2),
    ),
    (
        Outcome::DiskFull,
        style("disk_full", 'F', "35", "F", "#880e4f", "#fff", 2),
    ),
    (
        Outcome::Killed,
        style("killed", 'K', "31", "K", "#5d4037", "#fff", 2),
    ),
    (
        Outcome::Interrupted,
        style("interrupted", '?', "90", "?", "#9e9e9e", "#000", 1),
    ),
    (
        Outcome::SloViolated,
        style("slo_violated", 'S', "33", "S", "#ef6c00", "#fff", 2),
    ),
    (
        Outcome::Overloaded,
        style("overloaded", 'O', "35", "O", "#ad1457", "#fff", 2),
    ),
    (
        Outcome::Unavailable,
        style("unavailable", 'U', "31", "U", "#4e342e", "#fff", 2),
    ),
    (
        Outcome::LostWrites,
        style("lost_writes", 'W', "31;1;4", "W", "#b71c1c", "#fff", 2),
    ),
    (
        Outcome::NotRecovered,
        style("not_recovered", 'R', "34", "R", "#283593", "#fff", 2),
    ),
    (
        Outcome::UnexpectedBehaviour,
        style(
            "unexpected_behaviour",
            'B',
            "36;1",
            "B",
            "#00695c",
            "#fff",
            2,
        ),
    ),
];

/// An outcome string this version does not know (a newer receipt): neutral, counted a failure.
pub const UNKNOWN: Style = style("unknown", '?', "0", "?", "#424242", "#fff", 2);

/// A square of a map with no cell.
pub const NOT_EXAMINED: Style = style("not examined", '·', "90", "·", "#eeeeee", "#555", 0);

/// The style of an outcome string as a receipt carries it (unknown strings: [`UNKNOWN`]).
pub fn style_of(outcome: &str) -> &'static Style {
    outcome
        .parse::<Outcome>()
        .map(Outcome::style)
        .unwrap_or(&UNKNOWN)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_outcome_has_one_style_and_round_trips() {
        for o in Outcome::ALL {
            assert_eq!(o.style().name, o.as_str());
            assert_eq!(o.as_str().parse::<Outcome>(), Ok(o));
            assert_eq!(style_of(o.as_str()), o.style());
        }
        assert_eq!(style_of("new_outcome"), &UNKNOWN);
        let e = "nope".parse::<Outcome>().unwrap_err();
        assert_eq!((e.what, e.input.as_str()), ("outcome", "nope"));
        assert_eq!(e.accepted, Outcome::ALL.map(Outcome::as_str));
    }

    #[test]
    fn failures_outrank_interruptions_which_outrank_ok() {
        assert!(Outcome::Deadlock.severity() > Outcome::Interrupted.severity());
        assert!(Outcome::Interrupted.severity() > Outcome::Ok.severity());
        assert_eq!(style_of("whatever").severity, 2);
    }
}
