//! What a long-running tree (a service) did to itself: its processes other than the main one
//! that ended while the main one lived, how each ended (exit status or signal, the kernel's
//! OOM killer), whether its parent replaced it, and the line of the tree's own output that
//! names it — a server killing and restarting its workers (gunicorn's `WORKER TIMEOUT`, an
//! OOM-killed worker). [`Children`] is `ProbeResult::children`; [`Children::describe`] is the
//! sentence a cell and the checklist say.

use serde::{Deserialize, Serialize};

/// How the ends were seen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChildWatch {
    /// The kernel's process events (the proc connector): every fork and exit of the tree, with
    /// the exit status.
    ProcConnector,
    /// The tree listed at each sample: a process that ended is seen, not how; one that lived
    /// less than a sample is missed.
    Sampling,
}

/// How one process of the tree ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChildEnd {
    /// Its pid (as qualify sees it).
    pub pid: i32,
    /// Its pid inside the tree's PID namespace (what the service's own logs say), when read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ns_pid: Option<i32>,
    /// Its name (`comm`).
    pub name: String,
    /// Seconds after the tree started.
    pub at_seconds: f64,
    /// `Some(code)`: it exited with this status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// `Some("SIGKILL")`: a signal ended it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<String>,
    /// A SIGKILL while the tree's OOM-kill counter rose: the kernel's OOM killer.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub oom_killed: bool,
    /// Its parent started another process after it ended: it was replaced.
    pub replaced: bool,
    /// The line of the tree's output naming it (by its pid there), trimmed of timestamps: a
    /// server's reason (`[CRITICAL] WORKER TIMEOUT (pid:12)`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub said: Option<String>,
}

impl ChildEnd {
    /// `exited with status 1`, `killed by SIGKILL`, `killed by the kernel's OOM killer
    /// (SIGKILL)`, `ended`.
    pub fn how(&self) -> String {
        match (&self.signal, self.exit_code) {
            (Some(s), _) if self.oom_killed => format!("killed by the kernel's OOM killer ({s})"),
            (Some(s), _) => format!("killed by {s}"),
            (None, Some(c)) => format!("exited with status {c}"),
            (None, None) => "ended".to_string(),
        }
    }

    /// Whether its own output or its end speaks of a timeout (a server's watchdog).
    pub fn timed_out(&self) -> bool {
        self.said
            .as_deref()
            .is_some_and(|s| s.to_lowercase().contains("timeout"))
    }
}

/// The tree's processes that ended while its main process ran, and those it started.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Children {
    pub watched_by: ChildWatch,
    /// Processes started in the tree after its first sample or event, while the main one ran.
    pub started: u64,
    /// Processes (not the main one) that ended while the main one ran.
    pub ended: u64,
    /// The first of them, in order (at most [`Children::KEPT`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ends: Vec<ChildEnd>,
    /// The kernel dropped events (its buffer overflowed): the counts are lower bounds.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub lost_events: bool,
}

impl Children {
    /// Ends kept one by one.
    pub const KEPT: usize = 64;

    /// Processes that ended and were replaced.
    pub fn replaced(&self) -> usize {
        self.ends.iter().filter(|e| e.replaced).count()
    }

    /// `4 gunicorn processes exited with status 1 (its log: "[CRITICAL] WORKER TIMEOUT
    /// (pid:12)"), replaced; 1 killed by SIGKILL, not replaced` — grouped by name, how and replacement, in
    /// order of first occurrence; `None` when nothing ended.
    pub fn describe(&self) -> Option<String> {
        if self.ended == 0 {
            return None;
        }
        let mut groups: Vec<(String, String, bool, usize, Option<String>)> = Vec::new();
        for e in &self.ends {
            let how = e.how();
            match groups
                .iter_mut()
                .find(|g| g.0 == e.name && g.1 == how && g.2 == e.replaced)
            {
                Some(g) => {
                    g.3 += 1;
                    if g.4.is_none() {
                        g.4 = e.said.clone();
                    }
                }
                None => groups.push((e.name.clone(), how, e.replaced, 1, e.said.clone())),
            }
        }
        let mut parts: Vec<String> = groups
            .iter()
            .map(|(name, how, replaced, n, said)| {
                let noun = if *n == 1 { "process" } else { "processes" };
                let after = said
                    .as_deref()
                    .map(|s| format!(" (its log: `{s}`)"))
                    .unwrap_or_default();
                let fate = if *replaced {
                    "replaced"
                } else {
                    "not replaced"
                };
                format!("{n} `{name}` {noun} {how}{after}, {fate}")
            })
            .collect();
        let unlisted = self.ended.saturating_sub(self.ends.len() as u64);
        if unlisted > 0 {
            parts.push(format!("{unlisted} more ended"));
        }
        let mut text = format!(
            "{} of the service's processes ended while it ran ({})",
            self.ended,
            parts.join("; ")
        );
        if self.watched_by == ChildWatch::Sampling {
            text.push_str(
                "; seen by sampling: how they ended is unknown, and shorter-lived ones are missed",
            );
        }
        if self.lost_events {
            text.push_str("; the kernel dropped process events: at least this many");
        }
        Some(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn end(name: &str, code: Option<i32>, signal: Option<&str>, replaced: bool) -> ChildEnd {
        ChildEnd {
            pid: 100,
            ns_pid: Some(12),
            name: name.into(),
            at_seconds: 1.0,
            exit_code: code,
            signal: signal.map(str::to_string),
            oom_killed: false,
            replaced,
            said: None,
        }
    }

    #[test]
    fn ends_are_grouped_by_name_how_and_replacement() {
        let mut timed_out = end("gunicorn", Some(1), None, true);
        timed_out.said = Some("[CRITICAL] WORKER TIMEOUT (pid:12)".into());
        let c = Children {
            watched_by: ChildWatch::ProcConnector,
            started: 4,
            ended: 5,
            ends: vec![
                timed_out.clone(),
                end("gunicorn", Some(1), None, true),
                end("gunicorn", Some(1), None, true),
                end("gunicorn", None, Some("SIGKILL"), false),
            ],
            lost_events: false,
        };
        assert_eq!(
            c.describe().unwrap(),
            "5 of the service's processes ended while it ran (3 `gunicorn` processes exited with status 1 (its log: `[CRITICAL] WORKER TIMEOUT (pid:12)`), replaced; 1 `gunicorn` process killed by SIGKILL, not replaced; 1 more ended)"
        );
        assert_eq!(c.replaced(), 3);
        assert!(timed_out.timed_out());
        let none = Children {
            ended: 0,
            ends: Vec::new(),
            ..c
        };
        assert_eq!(none.describe(), None);
    }
}
