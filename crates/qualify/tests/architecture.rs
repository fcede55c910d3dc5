//! The architecture invariants ARCHITECTURE.md states, checked on the workspace as it is: the
//! crate graph from `cargo metadata` (the vocabulary depends on no qualify crate; the engines
//! depend only on the vocabulary; the analysis and output crates depend on no engine; engines
//! meet only in `qualify-service` and the binary; nothing depends on the binary), the crates
//! that do no I/O (the vocabulary and the pure analysis crates), that only the binary maps
//! errors to exit codes, that a cell runs through one seam (`qualify-run`'s `Executor`), that
//! every source file starts with a doc comment saying what it owns,
//! and ARCHITECTURE.md itself: every workspace crate in its overview diagram, and short enough
//! to read (at most [`ARCHITECTURE_MAX_CHARS`] characters).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// Engines: run or drive real processes, sockets, load and schedule noise.
const ENGINES: [&str; 4] = [
    "qualify-probe",
    "qualify-load",
    "qualify-faults",
    "qualify-perturb",
];
/// Analysis and output: pure functions of records, receipts and traces (plus the ledger's file
/// and the trust crate's keys); they never run the artifact.
const ANALYSIS: [&str; 7] = [
    "qualify-perf",
    "qualify-plan",
    "qualify-evidence",
    "qualify-render",
    "qualify-ledger",
    "qualify-trace",
    "qualify-trust",
];

/// Crates that do no I/O at all (no file, socket, process, thread or environment variable):
/// the vocabulary and the analysis crates that only read the records and bytes they are given.
const NO_IO: [&str; 6] = [
    "qualify-model",
    "qualify-perf",
    "qualify-evidence",
    "qualify-render",
    "qualify-trace",
    "qualify-nodes",
];

/// ARCHITECTURE.md is a map, not a manual: details belong in the modules' `//!` comments.
const ARCHITECTURE_MAX_CHARS: usize = 25_000;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `cargo metadata` of the workspace (no dependencies resolved).
fn metadata() -> Value {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(root())
        .output()
        .expect("run cargo metadata");
    assert!(
        out.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("cargo metadata JSON")
}

/// Every workspace crate and its internal normal (not dev, not build) dependencies.
fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let meta = metadata();
    let packages = meta["packages"].as_array().expect("packages");
    let names: BTreeSet<String> = packages
        .iter()
        .map(|p| p["name"].as_str().expect("name").to_string())
        .collect();
    packages
        .iter()
        .map(|p| {
            let deps = p["dependencies"]
                .as_array()
                .expect("dependencies")
                .iter()
                .filter(|d| d["kind"].is_null())
                .filter_map(|d| d["name"].as_str())
                .filter(|n| names.contains(*n))
                .map(str::to_string)
                .collect();
            (p["name"].as_str().expect("name").to_string(), deps)
        })
        .collect()
}

#[test]
fn the_crate_graph_keeps_the_stated_layers() {
    let g = graph();
    let mut broken = Vec::new();
    for (krate, deps) in &g {
        let forbid = |broken: &mut Vec<String>, dep: &str, why: &str| {
            if deps.contains(dep) {
                broken.push(format!("{krate} depends on {dep}: {why}"));
            }
        };
        if krate == "qualify-model" {
            for d in deps {
                broken.push(format!(
                    "qualify-model depends on {d}: the vocabulary depends on no qualify crate"
                ));
            }
        }
        if ENGINES.contains(&krate.as_str()) {
            for d in deps.iter().filter(|d| *d != "qualify-model") {
                broken.push(format!(
                    "{krate} depends on {d}: an engine depends only on the vocabulary (qualify-model)"
                ));
            }
        }
        if ANALYSIS.contains(&krate.as_str()) {
            for e in ENGINES
                .iter()
                .chain(&["qualify-service", "qualify-slurm", "qualify-spec"])
            {
                forbid(
                    &mut broken,
                    e,
                    "analysis and output crates never run or drive anything",
                );
            }
        }
        let engines = deps
            .iter()
            .filter(|d| ENGINES.contains(&d.as_str()))
            .count();
        if engines > 1 && !["qualify-service", "qualify-run", "qualify"].contains(&krate.as_str()) {
            broken.push(format!(
                "{krate} depends on {engines} engines: engines meet only in qualify-service, qualify-run and the binary"
            ));
        }
        forbid(&mut broken, "qualify", "nothing depends on the binary");
        if krate == "qualify" {
            for composed in ["qualify-service", "qualify-slurm"] {
                forbid(
                    &mut broken,
                    composed,
                    "the binary is a shell: it reaches services and Slurm through qualify-run (its remote steps in `qualify_run::remote`)",
                );
            }
        }
        if krate == "qualify-spec" {
            for d in deps.iter().filter(|d| *d != "qualify-model") {
                broken.push(format!(
                    "qualify-spec depends on {d}: the spec is configuration, it depends only on the vocabulary (conversion to engine types happens in qualify-service and qualify-run)"
                ));
            }
        }
    }
    assert!(broken.is_empty(), "{}", broken.join("\n"));
    // Every crate is classified or named here, so a new crate gets a place on purpose.
    let placed: BTreeSet<&str> = ENGINES
        .iter()
        .chain(&ANALYSIS)
        .chain(&[
            "qualify-model",
            "qualify-service",
            "qualify-spec",
            "qualify-slurm",
            "qualify-nodes",
            "qualify-run",
            "qualify",
        ])
        .copied()
        .collect();
    for krate in g.keys() {
        assert!(
            placed.contains(krate.as_str()),
            "{krate} is in no layer of tests/architecture.rs (and ARCHITECTURE.md): place it"
        );
    }
}

/// Rust files under `dir`, recursively.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).expect("read dir").flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Whether `path` holds only test code (a `tests` module file, a `src/tests/` file, a test kit).
fn is_test_file(path: &Path) -> bool {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    name == "tests.rs"
        || name == "testkit.rs"
        || name.ends_with("_tests.rs")
        || path.components().any(|c| c.as_os_str() == "tests")
}

/// The non-test lines of a crate's `src/` (file, line number, text): test files skipped, and a
/// file's code after its first `#[cfg(test)]` left out; comment lines skipped.
fn code_lines(krate: &str) -> Vec<(PathBuf, usize, String)> {
    let src = root().join("crates").join(krate).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    assert!(!files.is_empty(), "no sources under {}", src.display());
    let mut lines = Vec::new();
    for f in files {
        if is_test_file(f.strip_prefix(&src).unwrap_or(&f)) {
            continue;
        }
        let text = std::fs::read_to_string(&f).expect("read source");
        let code = text.split("#[cfg(test)]").next().unwrap_or(&text);
        for (n, line) in code.lines().enumerate() {
            if !line.trim_start().starts_with("//") {
                lines.push((f.clone(), n + 1, line.to_string()));
            }
        }
    }
    lines
}

#[test]
fn the_vocabulary_and_the_pure_analysis_crates_do_no_io() {
    let io = [
        "std::fs",
        "std::net",
        "std::process",
        "std::io::stdin",
        "std::env::var",
        "File::",
        "TcpStream",
        "Command::new",
        "std::thread::spawn",
    ];
    let mut found = Vec::new();
    for krate in NO_IO {
        for (f, n, line) in code_lines(krate) {
            for pat in io.iter().filter(|p| line.contains(*p)) {
                found.push(format!("{}:{n}: {pat}: {}", f.display(), line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "a crate ARCHITECTURE.md says does no I/O does I/O (move it to the binary or an engine):\n{}",
        found.join("\n")
    );
}

#[test]
fn only_the_binary_maps_errors_to_exit_codes() {
    let g = graph();
    let mut found = Vec::new();
    for krate in g.keys().filter(|k| *k != "qualify") {
        for (f, n, line) in code_lines(krate) {
            for pat in ["ExitCode", "process::exit"] {
                if line.contains(pat) {
                    found.push(format!("{}:{n}: {}", f.display(), line.trim()));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "a library crate decides an exit status (return a typed error or a verdict; \
         the binary's error.rs maps it):\n{}",
        found.join("\n")
    );
}

/// The name a line of code gives a trait it defines (`pub trait Name<…>: …` → `Name`).
fn trait_defined(line: &str) -> Option<&str> {
    let rest = line.trim().split("trait ").nth(1)?;
    rest.split(|c: char| !c.is_alphanumeric() && c != '_')
        .next()
        .filter(|name| !name.is_empty())
}

/// One seam runs a cell: `qualify-run`'s `Executor` (`src/executor.rs`) is the only trait in
/// the workspace named for running cells (no second `…Executor` or `…Runner`), only that file
/// implements it, and in the run only it starts a cell (a `ServiceCell`, a Slurm job);
/// warmups, repeats, rounds and the setup error sit above it, written once.
#[test]
fn a_cell_runs_only_through_the_one_executor_seam() {
    let seam = |krate: &str, f: &Path| krate == "qualify-run" && f.ends_with("src/executor.rs");
    let mut found = Vec::new();
    for krate in graph().keys() {
        for (f, n, line) in code_lines(krate) {
            let runs_cells = trait_defined(&line)
                .is_some_and(|name| name.ends_with("Executor") || name.ends_with("Runner"));
            if (runs_cells || line.contains("impl Executor for")) && !seam(krate, &f) {
                found.push(format!("{}:{n}: {}", f.display(), line.trim()));
            }
        }
    }
    for (f, n, line) in code_lines("qualify-run") {
        let starts_a_cell = [
            "ServiceCell {",
            "slurm::run_cell(",
            "slurm::run_service_cell(",
        ]
        .iter()
        .any(|pat| line.contains(pat));
        if starts_a_cell && !seam("qualify-run", &f) {
            found.push(format!("{}:{n}: {}", f.display(), line.trim()));
        }
    }
    assert!(
        found.is_empty(),
        "a second way to run a cell (run it through qualify-run's Executor, \
         crates/qualify-run/src/executor.rs; decide above it, in cells.rs or rounds.rs):\n{}",
        found.join("\n")
    );
    assert_eq!(
        trait_defined("pub trait Executor: Sync {"),
        Some("Executor")
    );
    assert_eq!(
        trait_defined("    trait CellRunner<'a> {"),
        Some("CellRunner")
    );
    assert_eq!(trait_defined("let x = 1;"), None);
}

/// The run record (`qualify_evidence::RunRecord` and the types it holds, `record.rs`) is typed
/// end to end and holds only inputs: no field is untyped JSON a layer would have to walk with
/// `.get("…")`, and no type comes from the layers that assess it.
#[test]
fn the_run_record_holds_no_json_value_and_no_layer_type() {
    let path = root().join("crates/qualify-evidence/src/record.rs");
    let text = std::fs::read_to_string(&path).expect("read record.rs");
    let found: Vec<String> = non_test_code(&text)
        .into_iter()
        .filter(|(_, line)| {
            line.contains("serde_json::Value")
                || line.contains("serde_json::Map")
                || (line.contains("use serde_json") && line.contains("Value"))
                || line.contains("layers::")
        })
        .map(|(n, line)| format!("{}:{n}: {}", path.display(), line.trim()))
        .collect();
    assert!(
        found.is_empty(),
        "the run record holds JSON or a layer's type (give it the type its producer writes, \
         defined with the record):\n{}",
        found.join("\n")
    );
}

/// The first fenced block after the `## Overview diagram` heading of ARCHITECTURE.md.
fn overview_diagram(text: &str) -> &str {
    let after = text
        .split_once("\n## Overview diagram")
        .map(|(_, rest)| rest)
        .expect("ARCHITECTURE.md has a `## Overview diagram` section");
    let (_, block) = after.split_once("```").expect("a fenced diagram");
    let (_, block) = block.split_once('\n').expect("a fenced diagram");
    block.split_once("```").expect("a closed fence").0
}

#[test]
fn every_workspace_crate_is_in_the_overview_diagram() {
    let text = std::fs::read_to_string(root().join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let diagram = overview_diagram(&text);
    let words: BTreeSet<&str> = diagram
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
        .collect();
    let meta = metadata();
    let mut missing = Vec::new();
    for p in meta["packages"].as_array().expect("packages") {
        let name = p["name"].as_str().expect("name");
        let binary = p["targets"].as_array().expect("targets").iter().any(|t| {
            t["kind"]
                .as_array()
                .is_some_and(|k| k.iter().any(|k| k == "bin"))
        });
        // The binary's name is also the start of every command line in the diagram, so it
        // must be named as the binary.
        let present = if binary {
            diagram.contains(&format!("{name} (binary)"))
        } else {
            words.contains(name)
        };
        if !present {
            missing.push(if binary {
                format!("{name} (binary)")
            } else {
                name.to_string()
            });
        }
    }
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md's overview diagram does not name {}: draw where each sits in the data flow",
        missing.join(", ")
    );
}

#[test]
fn architecture_md_stays_a_short_map() {
    let text = std::fs::read_to_string(root().join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let chars = text.chars().count();
    assert!(
        chars <= ARCHITECTURE_MAX_CHARS,
        "ARCHITECTURE.md has {chars} characters, over {ARCHITECTURE_MAX_CHARS}: keep it a map \
         (what a crate owns, where to start, its invariants) and move details into the modules' \
         //! comments"
    );
}

#[test]
fn every_source_file_starts_by_saying_what_it_owns() {
    let mut files = Vec::new();
    for e in std::fs::read_dir(root().join("crates"))
        .expect("crates/")
        .flatten()
    {
        let src = e.path().join("src");
        if src.is_dir() {
            rust_files(&src, &mut files);
        }
    }
    assert!(files.len() > 50, "found only {} files", files.len());
    let missing: Vec<String> = files
        .iter()
        .filter(|f| {
            let text = std::fs::read_to_string(f).expect("read source");
            !text
                .lines()
                .find(|l| !l.trim().is_empty())
                .is_some_and(|l| l.starts_with("//!"))
        })
        .map(|f| f.display().to_string())
        .collect();
    assert!(
        missing.is_empty(),
        "no leading //! doc comment:\n{}",
        missing.join("\n")
    );
}

/// Where a `Result<_, String>` or `io::Error::other(` outside tests is the right thing: file
/// (under `crates/`), what it holds, and why. Everything else is a `thiserror` enum of the
/// owning crate, with the context a user acts on.
const STRING_ERRORS_ALLOWED: [(&str, &str, &str); 0] = [];

/// The code of a source file without its `#[cfg(test)]` items (a `mod … { … }` block, or the
/// item on the next line) and without comments: each kept line with its number.
fn non_test_code(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut lines = text.lines().enumerate().peekable();
    while let Some((n, line)) = lines.next() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("#[cfg(test)]") {
            // Skip the attributed item: up to its `;`, or its balanced `{ … }`.
            let mut depth = 0i64;
            let mut opened = false;
            for (_, l) in lines.by_ref() {
                let code = l.split("//").next().unwrap_or("");
                depth += code.matches('{').count() as i64 - code.matches('}').count() as i64;
                opened |= code.contains('{');
                if (opened && depth <= 0) || (!opened && code.trim_end().ends_with(';')) {
                    break;
                }
            }
            continue;
        }
        if trimmed.starts_with("//") {
            continue;
        }
        out.push((n + 1, line.split(" //").next().unwrap_or(line).to_string()));
    }
    out
}

/// The top-level arguments of the generic list that starts right after `Result<` in `text`
/// (`->` and `=>` are not brackets), or `None` when it does not close.
fn generic_args(text: &str) -> Option<Vec<String>> {
    let mut depth = 0i64;
    let mut args = vec![String::new()];
    let mut prev = ' ';
    for c in text.chars() {
        match c {
            '<' | '(' | '[' => depth += 1,
            '>' if prev == '-' || prev == '=' => {}
            '>' | ')' | ']' if depth == 0 => {
                // A trailing comma leaves an empty last argument.
                args.retain(|a| !a.trim().is_empty());
                return Some(args);
            }
            '>' | ')' | ']' => depth -= 1,
            ',' if depth == 0 => {
                args.push(String::new());
                prev = c;
                continue;
            }
            _ => {}
        }
        if let Some(last) = args.last_mut() {
            last.push(c);
        }
        prev = c;
    }
    None
}

#[test]
fn errors_are_types_outside_tests() {
    let mut files = Vec::new();
    for e in std::fs::read_dir(root().join("crates"))
        .expect("crates/")
        .flatten()
    {
        let src = e.path().join("src");
        if src.is_dir() {
            rust_files(&src, &mut files);
        }
    }
    assert!(files.len() > 50, "found only {} files", files.len());
    let crates_dir = root().join("crates");
    let mut found = Vec::new();
    let mut allowed_seen = BTreeSet::new();
    for f in &files {
        let within_src = f
            .components()
            .skip_while(|c| c.as_os_str() != "src")
            .collect::<PathBuf>();
        if is_test_file(&within_src) {
            continue;
        }
        let name = f
            .strip_prefix(&crates_dir)
            .unwrap_or(f)
            .display()
            .to_string();
        let text = std::fs::read_to_string(f).expect("read source");
        let code = non_test_code(&text);
        // Joined, so a signature rustfmt split over lines is read whole; each line's start
        // offset maps a hit back to its line number.
        let mut joined = String::new();
        let mut starts = Vec::new();
        for (n, line) in &code {
            starts.push((joined.len(), *n));
            joined.push_str(line);
            joined.push('\n');
        }
        let line_of = |offset: usize| {
            starts
                .iter()
                .take_while(|(start, _)| *start <= offset)
                .last()
                .map_or(0, |(_, n)| *n)
        };
        let mut hits = Vec::new();
        for (at, _) in joined.match_indices("Result<") {
            let Some(args) = generic_args(&joined[at + "Result<".len()..]) else {
                continue;
            };
            if args.len() >= 2 && args.last().is_some_and(|e| e.trim() == "String") {
                hits.push((at, "Result<…, String>"));
            }
        }
        for (at, _) in joined.match_indices("io::Error::other(") {
            hits.push((at, "io::Error::other("));
        }
        for (at, what) in hits {
            let n = line_of(at);
            match STRING_ERRORS_ALLOWED
                .iter()
                .find(|(file, pattern, _)| *file == name && *pattern == what)
            {
                Some(allowed) => {
                    allowed_seen.insert(*allowed);
                }
                None => found.push(format!("crates/{name}:{n}: {what}")),
            }
        }
    }
    assert!(
        found.is_empty(),
        "an error outside tests is a String or a made-up io::Error: give the owning crate a \
         thiserror enum whose variants carry what a user acts on (which file, value, process, \
         port, and the fix), or allow it in STRING_ERRORS_ALLOWED with the reason:\n{}",
        found.join("\n")
    );
    let stale: Vec<_> = STRING_ERRORS_ALLOWED
        .iter()
        .filter(|a| !allowed_seen.contains(*a))
        .collect();
    assert!(
        stale.is_empty(),
        "STRING_ERRORS_ALLOWED names sites that are gone; remove them: {stale:?}"
    );
}

#[test]
fn the_string_error_scan_reads_split_signatures_and_skips_tests() {
    let text = "//! m\nfn a() -> Result<\n    Vec<(u8, u16)>,\n    String,\n> {\n}\nfn b() -> Result<BTreeMap<u32, String>, D::Error> {}\nfn c() -> io::Result<String> {}\nfn d(f: impl Fn() -> u8) -> Result<u8, E> {}\n#[cfg(test)]\nmod tests {\n    fn e() -> Result<(), String> {}\n}\n// fn f() -> Result<(), String>\n";
    let code = non_test_code(text);
    let joined: String = code.iter().map(|(_, l)| format!("{l}\n")).collect();
    let strings: Vec<Vec<String>> = joined
        .match_indices("Result<")
        .filter_map(|(at, _)| generic_args(&joined[at + 7..]))
        .filter(|args| args.len() >= 2 && args.last().is_some_and(|e| e.trim() == "String"))
        .collect();
    assert_eq!(strings.len(), 1, "{strings:?}");
    assert_eq!(strings[0][0].trim(), "Vec<(u8, u16)>");
    assert!(code.iter().all(|(_, l)| !l.contains("fn e")));
}
