//! The Go runtime's goroutine dump (what a Go program prints to stderr on `SIGQUIT` before it
//! exits with status 2): each goroutine's state and frames, and the judgement — every goroutine
//! of the program (not the runtime's own, by the runtimes table) blocked in a lock, channel or
//! `select`, none sleeping, in I/O, in a system call or running.

use serde::Serialize;

use crate::runtimes::Runtime;

/// One goroutine as the dump shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Goroutine {
    pub id: u64,
    /// `semacquire`, `chan receive`, `select (no cases)`, `sleep`, … (without a wait time).
    pub state: String,
    /// The first frame outside the runtime and the `sync` and `time` packages, where the program waits
    /// (`main.worker(…) at /src/main.go:14`), else the innermost frame.
    pub at: String,
    /// Function frames, innermost first.
    #[serde(skip)]
    pub frames: Vec<String>,
    /// The function that started it (`created by …`; none for the main goroutine).
    #[serde(skip)]
    pub created_by: Option<String>,
}

/// Every goroutine in the dump.
pub fn parse(dump: &str) -> Vec<Goroutine> {
    let mut out: Vec<Goroutine> = Vec::new();
    let mut lines = dump.lines().peekable();
    while let Some(line) = lines.next() {
        let Some(rest) = line.strip_prefix("goroutine ") else {
            continue;
        };
        let Some((id, state)) = rest.split_once(" [") else {
            continue;
        };
        let (Ok(id), Some(state)) = (id.trim().parse::<u64>(), state.strip_suffix("]:")) else {
            continue;
        };
        // `semacquire, 2 minutes` → `semacquire`; `select (no cases)` stays whole.
        let state = state.split(", ").next().unwrap_or(state).to_string();
        let mut frames = Vec::new();
        let mut files = Vec::new();
        let mut created_by = None;
        while let Some(next) = lines.peek() {
            if next.trim().is_empty() || next.starts_with("goroutine ") {
                break;
            }
            let l = lines.next().unwrap_or_default();
            if let Some(file) = l.strip_prefix('\t') {
                files.push(file.split(" +").next().unwrap_or(file).to_string());
            } else if let Some(by) = l.strip_prefix("created by ") {
                created_by = Some(by.split(" in goroutine").next().unwrap_or(by).to_string());
            } else {
                frames.push(function(l).to_string());
            }
        }
        let user = frames
            .iter()
            .position(|f| {
                !["runtime.", "sync.", "time."]
                    .iter()
                    .any(|p| f.starts_with(p))
            })
            .unwrap_or(0);
        let at = match (frames.get(user), files.get(user)) {
            (Some(f), Some(file)) => format!("{f} at {file}"),
            (Some(f), None) => f.clone(),
            _ => String::new(),
        };
        out.push(Goroutine {
            id,
            state,
            at,
            frames,
            created_by,
        });
    }
    out
}

/// The function of a frame line without its arguments: `testing.(*T).Run(0xc0, {0x5})` →
/// `testing.(*T).Run` (a method's receiver has parentheses of its own).
fn function(line: &str) -> &str {
    match line.strip_suffix(')').and_then(|l| l.rfind('(')) {
        Some(open) => &line[..open],
        None => line,
    }
}

/// How one goroutine counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Part {
    /// The runtime's own (GC, finalizers, signals).
    Runtime,
    /// Blocked in a lock, channel, `select` or wait group.
    Blocked,
    /// Anything else: sleeping, in I/O or a system call, running — it could still release the
    /// others.
    Alive,
}

pub fn part(g: &Goroutine, go: &Runtime) -> Part {
    if g.id == 0
        || go.runtime_states.matches(&g.state)
        || g.created_by
            .as_deref()
            .is_some_and(|f| go.runtime_functions.matches(f))
    {
        Part::Runtime
    } else if go.blocking_states.matches(&g.state) {
        Part::Blocked
    } else {
        Part::Alive
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtimes::{Runtimes, TABLE};

    /// Go 1.19's dump of corpus/runtimes/go_deadlock (trimmed to one frame pair per goroutine).
    const DUMP: &str = "SIGQUIT: quit
PC=0x45fa41 m=0 sigcode=0

goroutine 0 [idle]:
runtime.futex()
\t/usr/lib/go-1.19/src/runtime/sys_linux_amd64.s:559 +0x21 fp=0x7ffc2479da10 sp=0x7ffc2479da08 pc=0x45fa41

goroutine 1 [select (no cases)]:
runtime.gopark(0x39?, 0xc000076410?, 0x0?, 0x0?, 0x0?)
\t/usr/lib/go-1.19/src/runtime/proc.go:363 +0xd6 fp=0xc00006cef8 sp=0xc00006ced8 pc=0x434896
runtime.block()
\t/usr/lib/go-1.19/src/runtime/select.go:104 +0x2c fp=0xc00006cf28 sp=0xc00006cef8 pc=0x4431cc
main.main()
\t/src/main.go:30 +0x14b fp=0xc00006cf80 sp=0xc00006cf28 pc=0x48d24b
runtime.main()
\t/usr/lib/go-1.19/src/runtime/proc.go:250 +0x212 fp=0xc00006cfe0 sp=0xc00006cf80 pc=0x4344d2

goroutine 2 [force gc (idle)]:
runtime.gopark(0x0?, 0x0?, 0x0?, 0x0?, 0x0?)
\t/usr/lib/go-1.19/src/runtime/proc.go:363 +0xd6 fp=0xc000038fb0 sp=0xc000038f90 pc=0x434896
runtime.forcegchelper()
\t/usr/lib/go-1.19/src/runtime/proc.go:302 +0xad fp=0xc000038fe0 sp=0xc000038fb0 pc=0x43472d
created by runtime.init.6
\t/usr/lib/go-1.19/src/runtime/proc.go:290 +0x25

goroutine 7 [semacquire, 1 minutes]:
runtime.gopark(0xc00003aed0?, 0x443234?, 0x40?, 0xa2?, 0x0?)
\t/usr/lib/go-1.19/src/runtime/proc.go:363 +0xd6 fp=0xc00003aec0 sp=0xc00003aea0 pc=0x434896
sync.runtime_SemacquireMutex(0xc00003af88?, 0x0?, 0x0?)
\t/usr/lib/go-1.19/src/runtime/sema.go:77 +0x25 fp=0xc00003af48 sp=0xc00003af18 pc=0x458ba5
sync.(*Mutex).lockSlow(0x53e2c0)
\t/usr/lib/go-1.19/src/sync/mutex.go:171 +0x165 fp=0xc00003af98 sp=0xc00003af48 pc=0x465d45
sync.(*Mutex).Lock(...)
\t/usr/lib/go-1.19/src/sync/mutex.go:90
main.worker(0x53e2c0, 0x53e2b8, 0x0?)
\t/src/main.go:16 +0x6c fp=0xc00003afc0 sp=0xc00003af98 pc=0x48d00c
created by main.main
\t/src/main.go:27 +0x105

goroutine 9 [sleep]:
time.Sleep(0x12a05f200)
\t/usr/lib/go-1.19/src/runtime/time.go:195 +0x135 fp=0xc000039f78 sp=0xc000039f48 pc=0x45a5b5
main.main.func1()
\t/src/main.go:22 +0x25 fp=0xc000039fe0 sp=0xc000039f78 pc=0x48d225
";

    #[test]
    fn reads_states_and_where_each_goroutine_waits() {
        let t = Runtimes::parse(TABLE).expect("table");
        let go = t.named("Go").expect("Go");
        let gs = parse(DUMP);
        let seen: Vec<(u64, &str, Part)> = gs
            .iter()
            .map(|g| (g.id, g.state.as_str(), part(g, go)))
            .collect();
        assert_eq!(
            seen,
            [
                (0, "idle", Part::Runtime),
                (1, "select (no cases)", Part::Blocked),
                (2, "force gc (idle)", Part::Runtime),
                (7, "semacquire", Part::Blocked),
                (9, "sleep", Part::Alive),
            ]
        );
        assert_eq!(gs[3].at, "main.worker at /src/main.go:16");
        assert_eq!(gs[1].at, "main.main at /src/main.go:30");
        assert_eq!(gs[4].at, "main.main.func1 at /src/main.go:22");
        assert_eq!(
            function("testing.(*T).Run(0xc0000b6820, {0x5})"),
            "testing.(*T).Run"
        );
        assert_eq!(function("sync.(*Mutex).Lock(...)"), "sync.(*Mutex).Lock");
        assert_eq!(function("main.main()"), "main.main");
    }
}
