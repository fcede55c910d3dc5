//! CPython's threads as py-spy (PyPI `py-spy`) shows them: `py-spy dump --pid PID --json` gives
//! every Python thread's frames at named lines, and the thread's TID as the process's own PID
//! namespace numbers it. Parsing only; running the tool is [`crate::inspect::Live::ask_runtime`].

use serde::Deserialize;

use crate::stacks::ToolError;

#[derive(Debug, Deserialize)]
struct RawThread {
    thread_name: Option<String>,
    os_thread_id: Option<i64>,
    frames: Vec<RawFrame>,
}

#[derive(Debug, Deserialize)]
struct RawFrame {
    name: String,
    short_filename: Option<String>,
    filename: Option<String>,
    line: i64,
}

/// One Python thread.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PyThread {
    /// The TID as the process's PID namespace numbers it (`NSpid`'s last field).
    pub ns_tid: i32,
    pub name: String,
    /// Innermost first: `worker (deadlock.py:21)`.
    pub frames: Vec<String>,
}

/// Parse `py-spy dump --json`; `Err` says what was wrong with it.
pub fn parse(json: &str) -> Result<Vec<PyThread>, ToolError> {
    let raw: Vec<RawThread> = serde_json::from_str(json).map_err(ToolError::PySpyOutput)?;
    Ok(raw
        .into_iter()
        .filter_map(|t| {
            Some(PyThread {
                ns_tid: i32::try_from(t.os_thread_id?).ok()?,
                name: t.thread_name.unwrap_or_default(),
                frames: t
                    .frames
                    .iter()
                    .map(|f| {
                        let file = f
                            .short_filename
                            .as_deref()
                            .or(f.filename.as_deref())
                            .unwrap_or("?");
                        format!("{} ({file}:{})", f.name, f.line)
                    })
                    .collect(),
            })
        })
        .collect())
}

/// Where a thread waits, for people: its innermost frame, and the program's own frame below
/// the standard library's `threading` when that is where it sits (`Thread.join` waits in
/// `_wait_for_tstate_lock`).
pub fn at(t: &PyThread) -> String {
    let inner = t.frames.first().cloned().unwrap_or_default();
    match t.frames.iter().find(|f| !f.contains("(threading.py:")) {
        Some(own) if *own != inner => format!("{inner} from {own}"),
        _ => inner,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_py_spy_threads() {
        let json = r#"[{"pid":3658,"thread_id":139668361041600,"thread_name":"Thread-3 (worker)","os_thread_id":5,"active":true,"owns_gil":false,"frames":[{"name":"worker","filename":"/x/rl.py","module":null,"short_filename":"rl.py","line":6,"locals":null,"is_entry":true,"is_shim_entry":false},{"name":"Thread.run","filename":"/usr/lib/python3.11/threading.py","module":null,"short_filename":"threading.py","line":975,"locals":null,"is_entry":false,"is_shim_entry":false}],"process_info":null},
        {"pid":3658,"thread_id":1,"thread_name":"MainThread","os_thread_id":2,"active":true,"owns_gil":false,"frames":[{"name":"Thread._wait_for_tstate_lock","filename":"/usr/lib/python3.11/threading.py","short_filename":"threading.py","line":1132},{"name":"Thread.join","short_filename":"threading.py","line":1112},{"name":"<module>","short_filename":"rl.py","line":13}]}]"#;
        let t = parse(json).expect("parses");
        assert_eq!(t.len(), 2);
        assert_eq!(t[0].ns_tid, 5);
        assert_eq!(t[0].frames[0], "worker (rl.py:6)");
        assert_eq!(at(&t[0]), "worker (rl.py:6)");
        assert_eq!(
            at(&t[1]),
            "Thread._wait_for_tstate_lock (threading.py:1132) from <module> (rl.py:13)"
        );
        assert!(parse("Error: no such process").is_err());
    }
}
