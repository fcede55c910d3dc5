//! Goroutines or threads a program leaves blocked when it exits — invisible to a black box unless
//! the runtime can be asked without changing the program. A Go test binary can: its own
//! `-test.trace` flag writes an execution trace when its tests end, whose last events say which
//! goroutines were still blocked and where ([`gotrace`]). qualify adds the flag (to a file it
//! owns, bound into the sandbox), reads the trace after the run, and reports what was left
//! (`evidence.leaks`, the `leaked_threads` flag). Every other program's run says that leaks
//! were not examined, and why. The trace is the program's own account (a hostile program could
//! write an empty one): it can add the flag, and nothing reads its absence as evidence.

pub mod gotrace;

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::ProbeSpec;

/// Bytes of a trace read at most (a long test's trace is left unread, and says so).
const TRACE_LIMIT: u64 = 256 << 20;
/// Bytes of an executable searched for Go's build information and the testing package.
const EXE_LIMIT: u64 = 128 << 20;
/// Goroutines named in the evidence and the detail.
const NAMED: usize = 20;

/// How leaks will be examined for one run.
pub enum Plan {
    /// A Go test binary: run with `-test.trace` into `file` (removed on drop).
    GoTrace {
        file: TraceFile,
        argv: Vec<OsString>,
    },
    /// Why not.
    No(String),
}

/// The trace file qualify owns; removed on drop.
pub struct TraceFile(pub PathBuf);

impl Drop for TraceFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// What `evidence.leaks` says.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum Leaks {
    Examined {
        examined_by: &'static str,
        /// Goroutines of the program blocked on another (channel, `select`, lock, condition).
        blocked: usize,
        /// Others still alive (asleep, in a system call, runnable).
        also_alive: usize,
        goroutines: Vec<gotrace::Left>,
    },
    NotExamined {
        not_examined: String,
    },
}

impl Leaks {
    /// Goroutines left blocked (the `leaked_threads` flag).
    pub fn blocked(&self) -> usize {
        match self {
            Leaks::Examined { blocked, .. } => *blocked,
            Leaks::NotExamined { .. } => 0,
        }
    }

    /// `; 2 goroutine(s) left blocked at exit (the test binary's trace): goroutine 7 [chan send] …`.
    pub fn sentence(&self) -> Option<String> {
        let Leaks::Examined {
            blocked,
            goroutines,
            ..
        } = self
        else {
            return None;
        };
        if *blocked == 0 {
            return None;
        }
        let named: Vec<String> = goroutines
            .iter()
            .filter(|g| g.blocked())
            .take(3)
            .map(|g| format!("goroutine {} [{}] {}", g.id, g.state, g.at))
            .collect();
        let more = if *blocked > named.len() {
            format!("; … ({} more)", blocked - named.len())
        } else {
            String::new()
        };
        Some(format!(
            "; {blocked} goroutine(s) left blocked when the tests ended (the test binary's execution trace): {}{more}",
            named.join("; ")
        ))
    }
}

fn not(why: impl Into<String>) -> Plan {
    Plan::No(why.into())
}

/// Whether `exe` (an ELF file) holds Go's build information and the testing package's flags;
/// remembered per file (path, size, modification time), so a plan of many cells reads it once.
fn go_test_binary(exe: &Path) -> bool {
    use std::collections::HashMap;
    use std::io::Read;
    use std::sync::Mutex;
    type Key = (PathBuf, u64, Option<std::time::SystemTime>);
    static SEEN: Mutex<Option<HashMap<Key, bool>>> = Mutex::new(None);
    let Ok(meta) = std::fs::metadata(exe) else {
        return false;
    };
    let key: Key = (exe.to_path_buf(), meta.len(), meta.modified().ok());
    if let Some(known) = SEEN
        .lock()
        .ok()
        .and_then(|m| m.as_ref()?.get(&key).copied())
    {
        return known;
    }
    let Ok(f) = std::fs::File::open(exe) else {
        return false;
    };
    let mut data = Vec::new();
    let found =
        f.take(EXE_LIMIT).read_to_end(&mut data).is_ok() && data.starts_with(b"\x7fELF") && {
            let has = |needle: &str| {
                regex::bytes::Regex::new(&regex::escape(needle)).is_ok_and(|re| re.is_match(&data))
            };
            has(" Go buildinf:") && has("test.paniconexit0")
        };
    if let Ok(mut m) = SEEN.lock() {
        let m = m.get_or_insert_with(HashMap::new);
        if m.len() > 256 {
            m.clear();
        }
        m.insert(key, found);
    }
    found
}

/// Decide how leaks are examined for `spec` (workdir `workdir`); `tag` names the trace file.
pub fn plan(spec: &ProbeSpec, workdir: &Path, tag: &str) -> Plan {
    let Some(program) = spec.argv.first() else {
        return not("no command");
    };
    let path_var = spec
        .env
        .iter()
        .rev()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| v.clone())
        .or_else(|| std::env::var_os("PATH"));
    let Some(exe) = crate::cell::resolve(program, path_var.as_deref(), Some(workdir)) else {
        return not("the program was not found before it ran");
    };
    let exe = if exe.is_relative() {
        workdir.join(exe)
    } else {
        exe
    };
    if !go_test_binary(&exe) {
        return not(
            "not a Go test binary: goroutines or threads left blocked at exit are invisible \
             from outside unless the runtime reports them (a Go test binary's -test.trace), \
             and this program's runtime was not asked",
        );
    }
    let args: Vec<String> = spec.argv[1..]
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let flag = |name: &str| {
        args.iter().any(|a| {
            let a = a.trim_start_matches('-');
            a == name || a.starts_with(&format!("{name}="))
        })
    };
    if flag("test.trace") {
        return not("the command sets its own -test.trace: qualify did not add another");
    }
    if flag("test.bench") || flag("test.cpuprofile") {
        return not("a benchmark or profiled run: tracing it would distort what it measures");
    }
    let file = TraceFile(std::env::temp_dir().join(format!("qualify-gotrace-{tag}.trace")));
    match std::fs::File::create(&file.0) {
        Ok(f) => {
            // The program may run as the sandbox's user: it must be able to write it.
            use std::os::unix::fs::PermissionsExt;
            let _ = f.set_permissions(std::fs::Permissions::from_mode(0o666));
        }
        Err(e) => return not(format!("the trace file could not be created: {e}")),
    }
    let mut argv = vec![program.clone()];
    // Right after the program: Go's flag parsing stops at the first argument that is no flag.
    let mut trace = OsString::from("-test.trace=");
    trace.push(&file.0);
    argv.push(trace);
    argv.extend(spec.argv[1..].iter().cloned());
    Plan::GoTrace { file, argv }
}

/// What the run left, once it ended by itself with the raw wait status `status`.
pub fn examine(plan: &Plan, status: Option<i32>) -> Leaks {
    let file = match plan {
        Plan::No(why) => {
            return Leaks::NotExamined {
                not_examined: why.clone(),
            };
        }
        Plan::GoTrace { file, .. } => file,
    };
    // The testing package ends its trace once its tests ran (exit 0, or 1 when one failed);
    // a fatal error or a panic (status 2) cuts it mid-run, where every goroutine is still busy.
    let normal = status.is_some_and(|st| libc::WIFEXITED(st) && libc::WEXITSTATUS(st) <= 1);
    if !normal {
        return Leaks::NotExamined {
            not_examined: "the test binary did not end its tests normally (not status 0 or 1): \
                           its execution trace stops mid-run"
                .into(),
        };
    }
    let size = std::fs::metadata(&file.0).map(|m| m.len()).unwrap_or(0);
    if size == 0 {
        return Leaks::NotExamined {
            not_examined: "the test binary wrote no execution trace (its tests did not run to \
                           their end)"
                .into(),
        };
    }
    if size > TRACE_LIMIT {
        return Leaks::NotExamined {
            not_examined: format!(
                "the execution trace is {} (over {}): not read",
                crate::limits::format_bytes(size),
                crate::limits::format_bytes(TRACE_LIMIT)
            ),
        };
    }
    let data = match std::fs::read(&file.0) {
        Ok(d) => d,
        Err(e) => {
            return Leaks::NotExamined {
                not_examined: format!("the execution trace could not be read: {e}"),
            };
        }
    };
    match gotrace::left(&data) {
        Ok(mut left) => {
            let blocked = left.iter().filter(|g| g.blocked()).count();
            let also_alive = left.len() - blocked;
            left.sort_by_key(|g| (!g.blocked(), g.id));
            left.truncate(NAMED);
            Leaks::Examined {
                examined_by: "the test binary's own execution trace (-test.trace, added by qualify): \
                              the program's own account, which only ever adds the flag",
                blocked,
                also_alive,
                goroutines: left,
            }
        }
        Err(e) => Leaks::NotExamined {
            not_examined: format!("the execution trace could not be read: {e}"),
        },
    }
}
