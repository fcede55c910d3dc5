//! What the runtimes say about a tree qualify is about to end (its deadline, or a livelock):
//! the JVM's threads (`jcmd Thread.print`), CPython's (py-spy), each blocked or running one
//! named at its frame; and which Go programs to ask for their goroutine dump (SIGQUIT ends a
//! Go program, which the end of the cell does anyway; [`super::name_goroutines`] reads it).
//! Never a verdict: the timeout stays a timeout, and says what was blocked where.

use super::{RuntimeReport, jvm, python};
use crate::inspect::Inspect;
use crate::runtimes::Runtimes;
use crate::sample::ProcSnap;

/// Processes asked at most (each question can take a second).
const ASKED: usize = 4;
/// Threads named per process.
const NAMED: usize = 6;

/// What was asked before the tree was killed.
#[derive(Debug, Default)]
pub struct Asked {
    /// The JVM's and CPython's answers.
    pub reports: Vec<RuntimeReport>,
    /// Go programs whose dump the supervisor takes.
    pub go: Vec<i32>,
}

/// Ask the runtimes of the tree's processes where their threads are.
pub fn ask(procs: &[ProcSnap], inspect: &mut dyn Inspect, table: &Runtimes) -> Asked {
    let mut asked = Asked::default();
    for p in procs.iter().filter(|p| !p.is_zombie()) {
        if asked.reports.len() + asked.go.len() >= ASKED {
            break;
        }
        let Some(name) = inspect.runtime(p.pid) else {
            continue;
        };
        let Some(rt) = table.named(&name) else {
            continue;
        };
        let said = match name.as_str() {
            "Go" => {
                asked.go.push(p.pid);
                continue;
            }
            "JVM" => match inspect.ask_runtime(p.pid, &name) {
                Ok(text) => {
                    let threads: Vec<jvm::JavaThread> = jvm::threads(&text)
                        .into_iter()
                        .filter(|t| !rt.is_helper(&t.name))
                        .collect();
                    let blocked: Vec<String> = threads
                        .iter()
                        .filter(|t| t.blocked())
                        .map(|t| t.describe())
                        .collect();
                    let running: Vec<String> = threads
                        .iter()
                        .filter(|t| t.state.starts_with("RUNNABLE"))
                        .map(|t| t.describe())
                        .collect();
                    groups(&[("blocked", blocked), ("running", running)])
                }
                Err(why) => format!("not asked: {why}"),
            },
            "CPython" => match inspect
                .ask_runtime(p.pid, &name)
                .and_then(|t| python::parse(&t))
            {
                Ok(threads) => groups(&[(
                    "threads",
                    threads
                        .iter()
                        .map(|t| format!("\"{}\" at {}", t.name, python::at(t)))
                        .collect(),
                )]),
                Err(why) => format!("not asked: {why}"),
            },
            _ => continue,
        };
        asked.reports.push(RuntimeReport {
            runtime: name.clone(),
            tool: rt.tool.clone(),
            pid: p.pid,
            said,
            java_deadlock: Vec::new(),
            goroutines: Vec::new(),
        });
    }
    asked
}

/// `blocked: "a" WAITING … at …; "b" …; running: …` (empty groups left out).
fn groups(groups: &[(&str, Vec<String>)]) -> String {
    let parts: Vec<String> = groups
        .iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(what, v)| {
            let mut shown: Vec<String> = v.iter().take(NAMED).cloned().collect();
            if v.len() > NAMED {
                shown.push(format!("… ({} more)", v.len() - NAMED));
            }
            format!("{what}: {}", shown.join("; "))
        })
        .collect();
    if parts.is_empty() {
        "no thread of the program blocked or running".into()
    } else {
        parts.join("; ")
    }
}
