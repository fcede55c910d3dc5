//! Which limit a runtime's report says was hit, named for people: the runtime's own (the JVM's
//! `-Xmx`, V8's `--max-old-space-size`, Go's goroutine stack, CPython's recursion limit) read
//! from the command lines and option variables qualify saw, told apart from qualify's ceilings
//! (memory, pids) by the kernel's counters.

use std::collections::BTreeMap;

use regex::Regex;

use super::Limit;
use super::judge::Context;
use crate::limits::format_bytes;

/// Variables the JVM and Node.js read options from.
pub const OPTION_VARIABLES: [&str; 4] = [
    "JAVA_TOOL_OPTIONS",
    "JDK_JAVA_OPTIONS",
    "_JAVA_OPTIONS",
    "NODE_OPTIONS",
];

/// The last value of an option in the command lines and option variables (`-Xmx32m` → `32m`).
fn option(ctx: &Context, pattern: &str) -> Option<String> {
    let re = Regex::new(pattern).ok()?;
    let mut found = None;
    for text in ctx.commands.iter().chain(ctx.options.iter()) {
        for c in re.captures_iter(text) {
            if let Some(m) = c.get(1) {
                found = Some(m.as_str().to_string());
            }
        }
    }
    found
}

fn ceiling_note(ctx: &Context) -> String {
    match ctx.limits.memory_bytes {
        Some(m) if ctx.counters.oom_kills == 0 => format!(
            ", not the {} memory ceiling (the kernel killed nothing)",
            format_bytes(m)
        ),
        Some(m) => format!(", below the {} memory ceiling", format_bytes(m)),
        None => ", not a memory ceiling of qualify's (none was set)".into(),
    }
}

/// The limit, named: `-Xmx32m (the JVM's own maximum heap), not the 256 MiB memory ceiling …`.
pub fn name(limit: Limit, detail: &BTreeMap<String, String>, ctx: &Context) -> String {
    match limit {
        Limit::JvmHeap => match option(ctx, r"(?:^|\s)-Xmx(\S+)")
            .map(|v| format!("-Xmx{v}"))
            .or_else(|| {
                option(ctx, r"-XX:MaxHeapSize=(\S+)").map(|v| format!("-XX:MaxHeapSize={v}"))
            })
            .or_else(|| {
                option(ctx, r"-XX:MaxRAMPercentage=(\S+)")
                    .map(|v| format!("-XX:MaxRAMPercentage={v}"))
            }) {
            Some(flag) => format!("{flag} (the JVM's own maximum heap){}", ceiling_note(ctx)),
            None => format!(
                "the JVM's default maximum heap (no -Xmx on the command lines qualify saw; HotSpot \
                 takes a quarter of the memory it sees){}",
                ceiling_note(ctx)
            ),
        },
        Limit::JvmMetaspace => match option(ctx, r"-XX:MaxMetaspaceSize=(\S+)") {
            Some(v) => format!(
                "-XX:MaxMetaspaceSize={v} (the JVM's own limit for class metadata){}",
                ceiling_note(ctx)
            ),
            None => format!(
                "the JVM's class-metadata space (no -XX:MaxMetaspaceSize seen){}",
                ceiling_note(ctx)
            ),
        },
        Limit::JvmStack => match option(ctx, r"(?:^|\s)-Xss(\S+)") {
            Some(v) => format!("-Xss{v} (the JVM's thread stack size)"),
            None => "the JVM's default thread stack size (no -Xss seen)".into(),
        },
        Limit::NodeHeap => match option(ctx, r"--max[-_]old[-_]space[-_]size[= ](\d+)") {
            Some(mb) => format!(
                "--max-old-space-size={mb} (V8's own heap limit, {mb} MB){}",
                ceiling_note(ctx)
            ),
            None => format!(
                "V8's default heap limit (no --max-old-space-size on the command lines or in \
                 NODE_OPTIONS){}",
                ceiling_note(ctx)
            ),
        },
        Limit::GoStack => match detail.get("limit_bytes") {
            Some(b) => format!(
                "the Go runtime's {b}-byte goroutine stack limit (runtime/debug.SetMaxStack)"
            ),
            None => "the Go runtime's goroutine stack limit".into(),
        },
        Limit::PythonRecursion => {
            "CPython's recursion limit (sys.setrecursionlimit; 1000 unless the program set it)"
                .into()
        }
        Limit::Allocator => {
            let what = detail
                .get("bytes")
                .and_then(|b| b.parse::<u64>().ok())
                .map(|b| format!(" of {}", format_bytes(b)))
                .unwrap_or_default();
            format!(
                "an allocation{what} the system refused (an address-space limit such as ulimit \
                 -v, the kernel's overcommit check, or a size no machine has){}",
                ceiling_note(ctx)
            )
        }
        Limit::Tasks => {
            if ctx.pids_hit {
                match ctx.limits.pids {
                    Some(p) => format!(
                        "the pids ceiling of {p} tasks (--pids): the kernel refused new threads or \
                         processes (pids_limit_hit)"
                    ),
                    None => {
                        "a pids ceiling refused new threads or processes (pids_limit_hit)".into()
                    }
                }
            } else {
                let ours = ctx
                    .limits
                    .pids
                    .map(|p| format!(" (the pids ceiling of {p} tasks was not reached)"))
                    .unwrap_or_default();
                format!(
                    "no ceiling of qualify's{ours}: a limit outside it (ulimit -u, \
                     kernel.threads-max, memory for thread stacks)"
                )
            }
        }
    }
}
