//! The JVM's own answer: `jcmd PID Thread.print` (or `jstack PID`), whose "Found one Java-level
//! deadlock" section names the cycle — monitors and `java.util.concurrent` ownable
//! synchronizers — and the stacks of the threads in it. Parsing only; running the tool is
//! [`crate::inspect::Live::ask_runtime`].

use serde::Serialize;

/// One Java thread of a deadlock cycle.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct JavaWait {
    pub thread: String,
    /// `monitor 0x… (object 0x…, a java.lang.Object)` or `ownable synchronizer 0x…, (a …)`.
    pub waits_for: String,
    pub held_by: String,
    /// The thread's Java frames, innermost first (`Deadlock.lambda$main$0(Deadlock.java:4)`).
    pub frames: Vec<String>,
}

/// Every Java-level deadlock the dump reports (usually one), each a cycle of threads.
pub fn deadlocks(dump: &str) -> Vec<Vec<JavaWait>> {
    let mut out = Vec::new();
    let mut rest = dump;
    while let Some(at) = rest.find("Found one Java-level deadlock:") {
        rest = &rest[at..];
        let end = rest[1..]
            .find("Found one Java-level deadlock:")
            .map(|i| i + 1)
            .unwrap_or(rest.len());
        out.push(one(&rest[..end]));
        rest = &rest[end..];
    }
    out.retain(|c| !c.is_empty());
    out
}

fn quoted(line: &str) -> Option<&str> {
    let s = line.trim().strip_prefix('"')?;
    Some(&s[..s.find('"')?])
}

fn one(section: &str) -> Vec<JavaWait> {
    let (cycle, stacks) = section
        .split_once("Java stack information for the threads listed above:")
        .unwrap_or((section, ""));
    let mut waits: Vec<JavaWait> = Vec::new();
    let mut current: Option<JavaWait> = None;
    for line in cycle.lines() {
        let t = line.trim();
        if t.starts_with('"') && t.ends_with("\":") {
            if let Some(w) = current.take() {
                waits.push(w);
            }
            current = quoted(t).map(|name| JavaWait {
                thread: name.to_string(),
                waits_for: String::new(),
                held_by: String::new(),
                frames: Vec::new(),
            });
        } else if let Some(w) = current.as_mut() {
            if let Some(what) = t
                .strip_prefix("waiting to lock ")
                .or_else(|| t.strip_prefix("waiting for "))
            {
                w.waits_for = what.trim_end_matches(',').to_string();
            } else if let Some(by) = t.strip_prefix("which is held by ") {
                w.held_by = quoted(by).unwrap_or(by).to_string();
            }
        }
    }
    if let Some(w) = current.take() {
        waits.push(w);
    }
    let mut thread: Option<usize> = None;
    for line in stacks.lines() {
        let t = line.trim();
        if t.starts_with('"') && t.ends_with("\":") {
            thread = quoted(t).and_then(|n| waits.iter().position(|w| w.thread == n));
        } else if let (Some(i), Some(frame)) = (thread, t.strip_prefix("at ")) {
            waits[i].frames.push(frame.to_string());
        }
    }
    waits.retain(|w| !w.held_by.is_empty());
    waits
}

/// `"Thread-0" waits for monitor … held by "Thread-1" at Deadlock.lambda$main$0(Deadlock.java:4); …`
pub fn describe(cycle: &[JavaWait]) -> String {
    cycle
        .iter()
        .map(|w| {
            // The program's own frame: past the JDK's (`Unsafe.park`, `ReentrantLock.lock`).
            let at = w
                .frames
                .iter()
                .find(|f| !["java.", "jdk.", "sun."].iter().any(|p| f.starts_with(p)))
                .or(w.frames.first())
                .map(|f| format!(" at {f}"))
                .unwrap_or_default();
            format!(
                "\"{}\"{at} waits for {} held by \"{}\"",
                w.thread, w.waits_for, w.held_by
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// One Java thread of a thread dump: its name, its state line and where it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JavaThread {
    pub name: String,
    /// `WAITING (parking)`, `BLOCKED (on object monitor)`, `RUNNABLE`, …
    pub state: String,
    /// The program's own innermost frame (past the JDK's), else the innermost.
    pub at: Option<String>,
}

impl JavaThread {
    /// `"worker" WAITING (parking) at Pool.take(Pool.java:12)`.
    pub fn describe(&self) -> String {
        let at = self
            .at
            .as_ref()
            .map(|a| format!(" at {a}"))
            .unwrap_or_default();
        format!("\"{}\" {}{at}", self.name, self.state)
    }

    /// In an untimed wait or blocked on a monitor.
    pub fn blocked(&self) -> bool {
        self.state.starts_with("WAITING") || self.state.starts_with("BLOCKED")
    }
}

/// Every Java thread of a dump that has a state line (native VM threads have none).
pub fn threads(dump: &str) -> Vec<JavaThread> {
    let mut out: Vec<JavaThread> = Vec::new();
    let mut frames: Vec<String> = Vec::new();
    let mut current: Option<JavaThread> = None;
    let finish = |t: Option<JavaThread>, frames: &mut Vec<String>, out: &mut Vec<JavaThread>| {
        if let Some(mut t) = t {
            t.at = frames
                .iter()
                .find(|f| !["java.", "jdk.", "sun."].iter().any(|p| f.starts_with(p)))
                .or(frames.first())
                .cloned();
            out.push(t);
        }
        frames.clear();
    };
    for line in dump.lines() {
        if line.starts_with('"') {
            finish(current.take(), &mut frames, &mut out);
            current = quoted(line).map(|n| JavaThread {
                name: n.to_string(),
                state: String::new(),
                at: None,
            });
        } else if let Some(t) = current.as_mut() {
            let l = line.trim();
            if let Some(state) = l.strip_prefix("java.lang.Thread.State: ") {
                t.state = state.to_string();
            } else if let Some(frame) = l.strip_prefix("at ") {
                frames.push(frame.to_string());
            } else if l.is_empty() {
                finish(current.take(), &mut frames, &mut out);
            }
        }
    }
    finish(current.take(), &mut frames, &mut out);
    out.retain(|t| !t.state.is_empty());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// As OpenJDK 17's `jcmd PID Thread.print` printed it for corpus/runtimes/Deadlock.java.
    const MONITORS: &str = r#"
"main" #1 prio=5 os_prio=0 cpu=35.39ms elapsed=6.64s tid=0x00007fa250017f10 nid=0x3 in Object.wait()  [0x00007fa257d1e000]
   java.lang.Thread.State: WAITING (on object monitor)
	at java.lang.Object.wait(java.base@17.0.15/Native Method)

Found one Java-level deadlock:
=============================
"Thread-0":
  waiting to lock monitor 0x00007fa1ac046440 (object 0x000000069ec196f8, a java.lang.Object),
  which is held by "Thread-1"

"Thread-1":
  waiting to lock monitor 0x00007fa1b80015a0 (object 0x000000069ec196e8, a java.lang.Object),
  which is held by "Thread-0"

Java stack information for the threads listed above:
===================================================
"Thread-0":
	at Deadlock.lambda$main$0(Deadlock.java:4)
	- waiting to lock <0x000000069ec196f8> (a java.lang.Object)
	- locked <0x000000069ec196e8> (a java.lang.Object)
	at Deadlock$$Lambda$1/0x00007fa1d0000a08.run(Unknown Source)
	at java.lang.Thread.run(java.base@17.0.15/Thread.java:840)
"Thread-1":
	at Deadlock.lambda$main$1(Deadlock.java:5)
	- waiting to lock <0x000000069ec196e8> (a java.lang.Object)
	- locked <0x000000069ec196f8> (a java.lang.Object)
	at java.lang.Thread.run(java.base@17.0.15/Thread.java:840)

Found 1 deadlock.
"#;

    const SYNCHRONIZERS: &str = r#"
Found one Java-level deadlock:
=============================
"first":
  waiting for ownable synchronizer 0x000000069ec1a0b0, (a java.util.concurrent.locks.ReentrantLock$NonfairSync),
  which is held by "second"

"second":
  waiting for ownable synchronizer 0x000000069ec1a080, (a java.util.concurrent.locks.ReentrantLock$NonfairSync),
  which is held by "first"

Java stack information for the threads listed above:
===================================================
"first":
	at jdk.internal.misc.Unsafe.park(java.base@17.0.15/Native Method)
	at Deadlock.locks(Deadlock.java:30)

Found 1 deadlock.
"#;

    #[test]
    fn reads_monitor_and_synchronizer_cycles_with_frames() {
        let d = deadlocks(MONITORS);
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].len(), 2);
        assert_eq!(d[0][0].thread, "Thread-0");
        assert_eq!(d[0][0].held_by, "Thread-1");
        assert!(d[0][0].waits_for.starts_with("monitor 0x00007fa1ac046440"));
        assert_eq!(d[0][0].frames[0], "Deadlock.lambda$main$0(Deadlock.java:4)");
        assert_eq!(
            describe(&d[0]).split("; ").next().unwrap_or(""),
            "\"Thread-0\" at Deadlock.lambda$main$0(Deadlock.java:4) waits for monitor 0x00007fa1ac046440 (object 0x000000069ec196f8, a java.lang.Object) held by \"Thread-1\""
        );
        let s = deadlocks(SYNCHRONIZERS);
        assert_eq!(s[0][1].held_by, "first");
        assert!(s[0][0].waits_for.contains("ReentrantLock$NonfairSync"));
        assert_eq!(s[0][0].frames.len(), 2);
        assert!(deadlocks("Full thread dump\n\"main\" #1\n").is_empty());
        let ts = threads(MONITORS);
        assert_eq!(ts.len(), 1, "{ts:?}");
        assert_eq!(
            ts[0].describe(),
            "\"main\" WAITING (on object monitor) at java.lang.Object.wait(java.base@17.0.15/Native Method)"
        );
        assert!(ts[0].blocked());
    }
}
