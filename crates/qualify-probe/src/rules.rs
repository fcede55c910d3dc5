//! The spin-wait table (`spin_rules.toml`, compiled in) and what it says about one stack: which
//! blocking synchronization call a thread is in (matched by function name, or by library for
//! stripped runtimes), whether a thread belongs to a runtime (no user frame at all), which
//! processes are launchers, and which environment variables name ranks.
//!
//! The table is data: adding a runtime is one line in `spin_rules.toml`, no code.

use std::sync::LazyLock;

use serde::{Deserialize, Serialize};

/// The table as shipped.
pub const TABLE: &str = include_str!("spin_rules.toml");

/// `a|b*|*c|d*e`: alternatives separated by `|`, `*` matching any run of characters.
#[derive(Debug, Clone)]
pub struct Pattern(Vec<String>);

impl Pattern {
    pub fn new(text: &str) -> Pattern {
        Pattern(
            text.split('|')
                .map(str::trim)
                .filter(|a| !a.is_empty())
                .map(String::from)
                .collect(),
        )
    }

    pub fn matches(&self, name: &str) -> bool {
        self.0.iter().any(|alt| glob(alt, name))
    }
}

/// `*` matches any run of characters (also none); everything else matches itself.
fn glob(pattern: &str, name: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    let [first, middle @ .., last] = parts.as_slice() else {
        return pattern == name;
    };
    if parts.len() == 1 {
        return pattern == name;
    }
    let Some(mut rest) = name.strip_prefix(first) else {
        return false;
    };
    for part in middle {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

impl<'de> Deserialize<'de> for Pattern {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Pattern, D::Error> {
        String::deserialize(d).map(|s| Pattern::new(&s))
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CallRule {
    pub frame: Option<Pattern>,
    pub library: Option<Pattern>,
    pub runtime: String,
    pub call: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LibraryRule {
    pub library: Pattern,
    pub runtime: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LauncherRule {
    pub process: Pattern,
    pub runtime: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RankRule {
    pub rank: String,
    pub size: String,
    pub job: String,
    pub runtime: String,
}

/// The whole table.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rules {
    pub calls: Vec<CallRule>,
    pub runtimes: Vec<LibraryRule>,
    pub system: Vec<LibraryRule>,
    pub launchers: Vec<LauncherRule>,
    pub ranks: Vec<RankRule>,
    /// Runtimes whose progress engines rewrite the process's private heap while they poll: a
    /// process that maps one has its `[heap]` left out of the memory comparison.
    #[serde(default)]
    pub heap_writers: Vec<LibraryRule>,
}

/// The shipped table, parsed once; `Err` says why it could not be (a build defect, reported in
/// the evidence instead of crashing a probe).
pub static RULES: LazyLock<Result<Rules, TableError>> = LazyLock::new(|| Rules::parse(TABLE));

/// A table compiled into qualify (`spin_rules.toml`, `runtimes.toml`) that does not read: a
/// defect of the build, stated in the evidence of the examination that needed it.
#[derive(Debug, thiserror::Error)]
pub enum TableError {
    /// Not TOML of the table's shape; `source` has the line and column.
    #[error("the {table} table is malformed: {source}")]
    Toml {
        /// `spin-wait`, `runtimes`.
        table: &'static str,
        source: toml::de::Error,
    },
    /// A `calls` entry with both or neither of `frame` and `library`.
    #[error(
        "the spin-wait table is malformed: calls[{index}] ({call}) needs exactly one of `frame` \
         or `library`"
    )]
    CallMatcher { index: usize, call: String },
    /// A pattern of the runtime-reports table that does not compile.
    #[error("the runtime reports table is malformed: report {report}'s `{field}`: {source}")]
    Regex {
        report: String,
        field: &'static str,
        source: regex::Error,
    },
    /// A value of the runtime-reports table outside its vocabulary.
    #[error("the runtime reports table is malformed: report {report}'s `{field}` = {value:?}")]
    Field {
        report: String,
        field: &'static str,
        value: String,
    },
}

/// One frame of a sampled stack, innermost first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Frame {
    /// Function name as the tool printed it (`None` for `??`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub function: Option<String>,
    /// File name of the object the frame's code lies in (`libgomp.so.1.0.0`, `exchange`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub module: Option<String>,
}

impl Frame {
    pub fn new(function: Option<&str>, module: Option<&str>) -> Frame {
        Frame {
            function: function.map(String::from),
            module: module.map(|m| m.rsplit('/').next().unwrap_or(m).to_string()),
        }
    }

    /// The function name without a symbol version (`foo@@GLIBC_2.34` → `foo`).
    pub fn name(&self) -> Option<&str> {
        self.function
            .as_deref()
            .map(|f| f.split('@').next().unwrap_or(f))
            .filter(|f| !f.is_empty() && *f != "??")
    }

    /// `name` or `?? (module)`, for people.
    pub fn label(&self) -> String {
        match (self.name(), &self.module) {
            (Some(n), _) => n.to_string(),
            (None, Some(m)) => format!("?? in {m}"),
            (None, None) => "??".into(),
        }
    }
}

/// What a frame's code is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Owner {
    System,
    Runtime,
    User,
}

/// How a call was recognised.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MatchedBy {
    /// A frame's function name matched a `frame` rule.
    Function,
    /// The innermost frames lie in a runtime library (stripped), entered from user code.
    Library,
}

impl MatchedBy {
    pub fn as_str(self) -> &'static str {
        match self {
            MatchedBy::Function => "function",
            MatchedBy::Library => "library",
        }
    }
}

/// A thread found inside a blocking synchronization call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct InCall {
    /// The call to report (`MPI_Send`, `OpenMP barrier`).
    pub call: String,
    pub runtime: String,
    pub matched_by: MatchedBy,
    /// The innermost named frame (`opal_progress`), or `?? in libgomp.so.1.0.0`.
    pub spinning_in: String,
    /// The user frame the call was entered from (`main`, `main._omp_fn.0`), when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entered_from: Option<String>,
}

/// What one stack says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StackKind {
    /// Inside a blocking synchronization call.
    InCall(InCall),
    /// Only runtime and system frames: a runtime's own thread (helper, progress or idle worker).
    Runtime { runtime: String, at: String },
    /// User code is on the stack with no synchronization call around the innermost frames.
    User { at: String },
    /// No frames (the tool printed none for this thread).
    Empty,
}

impl Rules {
    pub fn parse(text: &str) -> Result<Rules, TableError> {
        let rules: Rules = toml::from_str(text).map_err(|source| TableError::Toml {
            table: "spin-wait",
            source,
        })?;
        for (index, r) in rules.calls.iter().enumerate() {
            if r.frame.is_some() == r.library.is_some() {
                return Err(TableError::CallMatcher {
                    index,
                    call: r.call.clone(),
                });
            }
        }
        Ok(rules)
    }

    fn call_by_function(&self, name: &str) -> Option<&CallRule> {
        self.calls
            .iter()
            .find(|r| r.frame.as_ref().is_some_and(|p| p.matches(name)))
    }

    fn call_by_library(&self, module: &str) -> Option<&CallRule> {
        self.calls
            .iter()
            .find(|r| r.library.as_ref().is_some_and(|p| p.matches(module)))
    }

    fn runtime_library(&self, module: &str) -> Option<&str> {
        self.call_by_library(module)
            .map(|r| r.runtime.as_str())
            .or_else(|| {
                self.runtimes
                    .iter()
                    .find(|r| r.library.matches(module))
                    .map(|r| r.runtime.as_str())
            })
    }

    fn owner(&self, f: &Frame) -> Owner {
        match &f.module {
            Some(m) if self.system.iter().any(|r| r.library.matches(m)) => Owner::System,
            Some(m) if self.runtime_library(m).is_some() => Owner::Runtime,
            Some(_) => Owner::User,
            // Without a module (a tool that printed none): a function a call rule names is the
            // runtime's; the kernel's vDSO (`__vdso_clock_gettime`, mapped as `[vdso]`, which
            // names no file) is the system's, as libc is; anything else counts as user code.
            None if f.name().is_some_and(|n| self.call_by_function(n).is_some()) => Owner::Runtime,
            None if f.name().is_some_and(|n| n.starts_with("__vdso_")) => Owner::System,
            None => Owner::User,
        }
    }

    /// A shared object that is neither a runtime's nor the system's: the user's own library.
    pub fn user_library(&self, file_name: &str) -> bool {
        self.owner(&Frame::new(None, Some(file_name))) == Owner::User
    }

    /// The runtime whose progress engine rewrites the heap, when a process maps its library.
    pub fn heap_writer<'a>(&self, libraries: impl IntoIterator<Item = &'a str>) -> Option<&str> {
        libraries.into_iter().find_map(|l| {
            self.heap_writers
                .iter()
                .find(|r| r.library.matches(l))
                .map(|r| r.runtime.as_str())
        })
    }

    /// The launcher rule matching a process's command name.
    pub fn launcher(&self, comm: &str) -> Option<&LauncherRule> {
        self.launchers.iter().find(|r| r.process.matches(comm))
    }

    /// What a stack (innermost frame first) says about its thread.
    pub fn classify(&self, frames: &[Frame]) -> StackKind {
        if frames.is_empty() {
            return StackKind::Empty;
        }
        let owners: Vec<Owner> = frames.iter().map(|f| self.owner(f)).collect();
        // The user frame closest to the top of the stack (innermost) bounds every match: a call
        // counts only if no user code runs inside it.
        let first_user = owners.iter().position(|o| *o == Owner::User);
        let inside = first_user.unwrap_or(frames.len());
        // Where the thread is, inside the runtime: the innermost frame with a name, past
        // system frames (`sched_yield`, `syscall`) when the runtime has a named one.
        let named = |system: bool| {
            frames[..inside]
                .iter()
                .zip(&owners)
                .find(|(f, o)| f.name().is_some() && (system || **o != Owner::System))
                .map(|(f, _)| f.label())
        };
        let innermost_named = named(false)
            .or_else(|| named(true))
            .unwrap_or_else(|| frames[0].label());
        let user_at = |i: usize| frames.get(i).map(Frame::label);

        // By function name: the outermost matching frame below the first user frame.
        let by_name = (0..inside).rev().find_map(|i| {
            let name = frames[i].name()?;
            self.call_by_function(name).map(|r| (i, r))
        });
        if let Some((_, rule)) = by_name {
            return StackKind::InCall(InCall {
                call: rule.call.clone(),
                runtime: rule.runtime.clone(),
                matched_by: MatchedBy::Function,
                spinning_in: innermost_named,
                entered_from: first_user.and_then(user_at),
            });
        }
        // By library: below the system frames on top, a run of frames of one call library,
        // and the frame just outside the run is user code.
        let top = owners
            .iter()
            .position(|o| *o != Owner::System)
            .unwrap_or(frames.len());
        if let Some(module) = frames.get(top).and_then(|f| f.module.as_deref())
            && let Some(rule) = self.call_by_library(module)
            && let Some(user) = first_user
            && (top..user).all(|i| owners[i] == Owner::Runtime)
        {
            return StackKind::InCall(InCall {
                call: rule.call.clone(),
                runtime: rule.runtime.clone(),
                matched_by: MatchedBy::Library,
                spinning_in: innermost_named,
                entered_from: user_at(user),
            });
        }
        match first_user {
            Some(i) => StackKind::User {
                at: frames[i].label(),
            },
            None => {
                // The outermost runtime library started the thread: it owns it.
                let runtime = frames
                    .iter()
                    .rev()
                    .filter_map(|f| f.module.as_deref())
                    .find_map(|m| self.runtime_library(m))
                    .unwrap_or("system")
                    .to_string();
                StackKind::Runtime {
                    runtime,
                    at: innermost_named,
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules() -> Rules {
        Rules::parse(TABLE).expect("the shipped table parses")
    }

    fn f(function: &str, module: &str) -> Frame {
        Frame::new(
            (!function.is_empty()).then_some(function),
            (!module.is_empty()).then_some(module),
        )
    }

    #[test]
    fn the_shipped_table_parses_and_every_rule_has_one_selector() {
        let r = rules();
        assert!(r.calls.len() > 40, "{}", r.calls.len());
        assert!(r.calls.iter().any(|c| c.library.is_some()));
        assert!(r.launcher("mpirun").is_some() && r.launcher("exchange").is_none());
        let bad = "calls = [{ frame = \"a\", library = \"b\", runtime = \"x\", call = \"y\" }]\n\
                   runtimes = []\nsystem = []\nlaunchers = []\nranks = []\n";
        assert!(matches!(
            Rules::parse(bad),
            Err(TableError::CallMatcher { index: 0, ref call }) if call == "y"
        ));
        assert!(matches!(
            Rules::parse("calls = 3"),
            Err(TableError::Toml {
                table: "spin-wait",
                ..
            })
        ));
    }

    #[test]
    fn patterns() {
        let p =
            Pattern::new("MPI_Send|PMPI_Send|ompi_coll_*barrier*|libgomp.so*|*_omp_fn|mca_*.so");
        for yes in [
            "MPI_Send",
            "PMPI_Send",
            "ompi_coll_base_barrier_intra",
            "libgomp.so.1",
            "main._omp_fn",
            "mca_btl_vader.so",
        ] {
            assert!(p.matches(yes), "{yes}");
        }
        for no in [
            "MPI_Sendrecv",
            "xMPI_Send",
            "libgomp",
            "ompi_coll_bcast",
            "mca_x.so.1",
            "mca.so",
        ] {
            assert!(!p.matches(no), "{no}");
        }
    }

    /// Stacks as eu-stack and gdb show them (innermost first) → what they say.
    #[test]
    fn stacks_table() {
        let r = rules();
        let exe = "exchange";
        let cases: Vec<(&str, Vec<Frame>, &str)> = vec![
            (
                "Open MPI send spinning in the progress loop",
                vec![
                    f("", "mca_btl_vader.so"),
                    f("opal_progress", "libopen-pal.so.40.30.2"),
                    f("mca_pml_ob1_send", "mca_pml_ob1.so"),
                    f("PMPI_Send", "libmpi.so.40.30.4"),
                    f("main", exe),
                    f("__libc_start_call_main", "libc.so.6"),
                    f("_start", exe),
                ],
                "call MPI_Send function opal_progress main",
            ),
            (
                "a collective: the outermost match names the call",
                vec![
                    f("opal_progress", "libopen-pal.so.40"),
                    f("mca_pml_ob1_send", "mca_pml_ob1.so"),
                    f("ompi_coll_base_sendrecv_actual", "libmpi.so.40"),
                    f(
                        "ompi_coll_base_allreduce_intra_redscat_allgather",
                        "libmpi.so.40",
                    ),
                    f("PMPI_Allreduce", "libmpi.so.40"),
                    f("main", exe),
                ],
                "call MPI_Allreduce function opal_progress main",
            ),
            (
                "gdb without modules for named frames",
                vec![f("opal_progress", ""), f("PMPI_Recv", ""), f("main", "")],
                "call MPI_Recv function opal_progress main",
            ),
            (
                "stripped libgomp entered from an outlined region",
                vec![
                    f("", "libgomp.so.1.0.0"),
                    f("main._omp_fn.0", "omp_barrier"),
                    f("", "libgomp.so.1.0.0"),
                    f("start_thread", "libc.so.6"),
                    f("__clone3", "libc.so.6"),
                ],
                "call an OpenMP runtime call library ?? in libgomp.so.1.0.0 main._omp_fn.0",
            ),
            (
                "libgomp below a system frame (futex syscall) is still the library",
                vec![
                    f("syscall", "libc.so.6"),
                    f("", "libgomp.so.1"),
                    f("main._omp_fn.0", "omp_barrier"),
                ],
                "call an OpenMP runtime call library syscall main._omp_fn.0",
            ),
            (
                "the TCP transport's progress loop reads the clock through the vDSO (no file)",
                vec![
                    f("__vdso_clock_gettime", ""),
                    f("clock_gettime@@GLIBC_2.17", "libc.so.6"),
                    f("event_base_loop", "libevent_core-2.1.so.7"),
                    f("opal_progress", "libopen-pal.so.40"),
                    f("PMPI_Send", "libmpi.so.40"),
                    f("main", exe),
                ],
                "call MPI_Send function event_base_loop main",
            ),
            (
                "a yielding MPI rank spins in the runtime, not in sched_yield",
                vec![
                    f("__sched_yield", "libc.so.6"),
                    f("opal_progress", "libopen-pal.so.40"),
                    f("PMPI_Send", "libmpi.so.40"),
                    f("main", exe),
                ],
                "call MPI_Send function opal_progress main",
            ),
            (
                "a libgomp worker with no user frame is the runtime's own thread",
                vec![
                    f("", "libgomp.so.1.0.0"),
                    f("", "libgomp.so.1.0.0"),
                    f("start_thread", "libc.so.6"),
                    f("__clone3", "libc.so.6"),
                ],
                "runtime OpenMP (libgomp)",
            ),
            (
                "an MPI helper thread in its event loop",
                vec![
                    f("__poll", "libc.so.6"),
                    f("", "libevent_core-2.1.so.7.0.1"),
                    f("event_base_loop", "libevent_core-2.1.so.7.0.1"),
                    f("", "libopen-pal.so.40.30.2"),
                    f("start_thread", "libc.so.6"),
                ],
                "runtime Open MPI",
            ),
            (
                "a spin lock",
                vec![
                    f("pthread_spin_lock", "libc.so.6"),
                    f("holder", "spinlock"),
                    f("start_thread", "libc.so.6"),
                ],
                "call pthread_spin_lock function pthread_spin_lock holder",
            ),
            (
                "a compute loop is user code",
                vec![f("spin", "spin"), f("main", "spin")],
                "user spin",
            ),
            (
                "a user MPI reduction operator runs inside MPI_Allreduce: computing, not waiting",
                vec![
                    f("my_op", exe),
                    f("ompi_op_base_2buff", "libmpi.so.40"),
                    f("PMPI_Allreduce", "libmpi.so.40"),
                    f("main", exe),
                ],
                "user my_op",
            ),
            (
                "an unknown library is user code: it entered the runtime",
                vec![f("", "libgomp.so.1"), f("", "libfoo.so"), f("main", exe)],
                "call an OpenMP runtime call library ?? in libgomp.so.1 ?? in libfoo.so",
            ),
            ("no frames", vec![], "empty"),
        ];
        for (what, frames, want) in cases {
            let got = match r.classify(&frames) {
                StackKind::InCall(c) => format!(
                    "call {} {} {} {}",
                    c.call,
                    c.matched_by.as_str(),
                    c.spinning_in,
                    c.entered_from.unwrap_or_default()
                ),
                StackKind::Runtime { runtime, .. } => format!("runtime {runtime}"),
                StackKind::User { at } => format!("user {at}"),
                StackKind::Empty => "empty".into(),
            };
            assert_eq!(got, want, "{what}");
        }
    }
}
