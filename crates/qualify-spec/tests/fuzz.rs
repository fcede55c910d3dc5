//! A bounded fuzz run of the spec parser and the plan: no input panics (issue 31, item 8).
//!
//! Each case starts from a real spec (every `examples/*/*.toml` and both starters) and
//! mutates it the ways a hostile or careless author would: a number replaced by an extreme one
//! (`9223372036854775807`, `-1`, `1e308`, `nan`), a quoted value by an extreme duration, size or
//! template, a line duplicated or dropped, a key with an extreme value inserted, bytes flipped,
//! cut or inserted (invalid UTF-8 included). The text is then loaded from a file as `qualify
//! run` loads it; a spec that checks is planned (`qualify_plan::Axis::declared`, `Plan::new`) and its plan
//! executed against a runner that fails above a threshold, each cell's probe, faults,
//! expectations and load plan built as a run builds them. An error is fine; a panic fails
//! the case, and proptest shrinks it to a small reproducer.
//!
//! `QUALIFY_FUZZ_CASES` sets the number of cases (default 400: a few seconds in a debug build);
//! run it long with e.g. `QUALIFY_FUZZ_CASES=200000 cargo test -p qualify-spec --release --test
//! fuzz`.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Cases whose spec checked, and whose plan was executed (printed, and a floor asserted: a fuzz
/// run that never gets past the parser tests little).
static CHECKED: AtomicUsize = AtomicUsize::new(0);
static EXECUTED: AtomicUsize = AtomicUsize::new(0);

use proptest::prelude::*;
use proptest::test_runner::{Config, FileFailurePersistence, TestCaseError, TestRunner};
use qualify_model::{Enforcement, Limits, Outcome, Params, ProbeResult, Strength};
use qualify_plan::{ExecuteOptions, Plan};
use qualify_spec::Spec;
use toml::Value;

/// The specs mutations start from.
fn seeds() -> Vec<String> {
    let mut out = vec![
        qualify_spec::STARTER_SPEC.to_string(),
        qualify_spec::SERVICE_STARTER_SPEC.to_string(),
    ];
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let mut dirs: Vec<_> = std::fs::read_dir(&examples)
        .expect("read examples/")
        .map(|e| e.expect("an entry").path())
        .collect();
    dirs.sort();
    for d in dirs {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        let mut specs: Vec<_> = entries
            .map(|e| e.expect("an entry").path())
            .filter(|p| p.extension().is_some_and(|x| x == "toml"))
            .collect();
        specs.sort();
        for spec in specs {
            out.push(std::fs::read_to_string(spec).expect("read an example spec"));
        }
    }
    out.push(
        "[artifact]\nname = \"a\"\ncommand = \"./a {n} {t}\"\n\n[claim]\nlevel = \"trial\"\n\n\
         [limits]\ntimeout = 60\nstall = \"5s\"\npids = 64\nmemory = 1048576\n\n\
         [reproducibility]\nrepeat = 3\n\n[performance]\nrepeat = 5\nwarmup = 1\n\n\
         [[axis]]\nname = \"n\"\nkind = \"workload\"\nrange = [1, 100000]\nsearch = \"boundary\"\n\n\
         [[axis]]\nname = \"t\"\nkind = \"concurrency\"\nrange = [1, 64]\nscale = \"log\"\n"
            .to_string(),
    );
    out
}

/// Numbers a mutation writes over a number of the spec.
fn extreme_number(what: usize) -> Value {
    const NUMBERS: [Value; 14] = [
        Value::Integer(0),
        Value::Integer(-1),
        Value::Integer(1),
        Value::Integer(i64::MAX),
        Value::Integer(i64::MIN),
        Value::Integer(1 << 32),
        Value::Integer(2_592_001),
        Value::Integer(10_001),
        Value::Float(1e308),
        Value::Float(-1e308),
        Value::Float(1e-308),
        Value::Float(f64::NAN),
        Value::Float(f64::INFINITY),
        Value::Float(0.5),
    ];
    NUMBERS[what % NUMBERS.len()].clone()
}

/// Texts a mutation writes over a string of the spec, by what the string holds.
fn extreme_text(what: usize, like: &str) -> Value {
    const DURATIONS: &[&str] = &[
        "10000000000000000000s",
        "18446744073709551615s",
        "99999999999999999999999s",
        "31d",
        "30d",
        "720h",
        "0s",
        "1ns",
        "0.5ns",
        "1e300",
        "-5",
    ];
    const SIZES: &[&str] = &[
        "16777216TiB",
        "1024T",
        "1025T",
        "99999999999999999999",
        "1B",
        "0.5B/s",
        "1024T/s",
        "1025T/s",
    ];
    const OTHER: &[&str] = &[
        "{",
        "{n",
        "{pad:99999999999999999999}",
        "latency(10000000000000000000s)",
        "latency(31d)",
        "bandwidth(0B/s)",
        "bandwidth(1025T/s)",
        "",
        "auto",
        "boundary",
        "log",
        "none",
    ];
    let digits = like.chars().next().is_some_and(|c| c.is_ascii_digit());
    let list = match like.chars().last() {
        Some('s' | 'm' | 'h' | 'd') if digits => DURATIONS,
        Some('B' | 'K' | 'M' | 'G' | 'T' | 'b') if digits => SIZES,
        _ => OTHER,
    };
    Value::String(list[what % list.len()].to_string())
}

/// The extreme value for `key` of `KEYS`.
fn extreme_for(kind: char, what: usize) -> Value {
    match (kind, what % 3) {
        ('d', 0) => extreme_number(what / 3),
        ('d', _) => extreme_text(what / 3, "1s"),
        ('s', 0) => extreme_number(what / 3),
        ('s', _) => extreme_text(what / 3, "1B"),
        _ => extreme_number(what),
    }
}

/// Keys a mutation sets (creating their table): `d` a duration, `s` a size, `n` a number.
const KEYS: &[(&str, &str, char)] = &[
    ("limits", "timeout", 'd'),
    ("limits", "stall", 'd'),
    ("limits", "pids", 'n'),
    ("limits", "cpus", 'n'),
    ("limits", "memory", 's'),
    ("reproducibility", "repeat", 'n'),
    ("performance", "repeat", 'n'),
    ("performance", "max_repeat", 'n'),
    ("performance", "warmup", 'n'),
    ("performance", "budget", 'd'),
    ("performance", "precision", 'n'),
    ("performance", "seed", 'n'),
    ("load", "rate", 'n'),
    ("load", "duration", 'd'),
    ("load", "warmup", 'd'),
    ("load", "timeout", 'd'),
    ("load", "max_in_flight", 'n'),
    ("load", "threads", 'n'),
    ("load", "generators", 'n'),
    ("target", "cores", 'n'),
    ("target", "nodes", 'n'),
    ("target", "concurrency", 'n'),
    ("target", "memory", 's'),
    ("service", "ready_timeout", 'd'),
    ("service", "grace", 'd'),
    ("faults", "recover_within", 'd'),
];

/// One change.
#[derive(Debug, Clone)]
enum Mutation {
    /// Replace the `at`-th value of the document (modulo their count) with `extreme(what)`.
    Leaf {
        at: usize,
        what: usize,
    },
    /// Set `KEYS[key]` to `extreme(what)`.
    Set {
        key: usize,
        what: usize,
    },
    /// Set a range axis's bounds, scale, step and search.
    Axis {
        lo: i64,
        hi: i64,
        log: bool,
        search: bool,
        step: Option<f64>,
    },
    /// Remove the `at`-th key.
    Remove {
        at: usize,
    },
    /// Bytes of the written text: replace, insert (any byte: invalid UTF-8 too), or cut.
    Byte {
        at: usize,
        byte: u8,
    },
    Insert {
        at: usize,
        byte: u8,
    },
    Cut {
        at: usize,
    },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let at = any::<usize>();
    let edge = prop_oneof![
        Just(i64::MIN),
        Just(i64::MAX),
        Just(0i64),
        Just(1i64),
        -3i64..1_000_000,
    ];
    prop_oneof![
        8 => (at, any::<usize>()).prop_map(|(at, what)| Mutation::Leaf { at, what }),
        8 => (0..KEYS.len(), any::<usize>()).prop_map(|(key, what)| Mutation::Set { key, what }),
        3 => (edge.clone(), edge, any::<bool>(), any::<bool>(), proptest::option::of(prop_oneof![Just(1e-308), Just(0.5), Just(1e18), Just(-1.0)]))
            .prop_map(|(lo, hi, log, search, step)| Mutation::Axis { lo, hi, log, search, step }),
        1 => at.prop_map(|at| Mutation::Remove { at }),
        1 => prop_oneof![
            (at, any::<u8>()).prop_map(|(at, byte)| Mutation::Byte { at, byte }),
            (at, any::<u8>()).prop_map(|(at, byte)| Mutation::Insert { at, byte }),
            at.prop_map(|at| Mutation::Cut { at }),
        ],
    ]
}

/// How many values `v` holds (depth first: an array counts, then its elements), for a
/// mutation to pick one ([`set_leaf`]).
fn leaf_count(v: &Value) -> usize {
    match v {
        Value::Table(t) => t.values().map(leaf_count).sum(),
        Value::Array(a) => 1 + a.iter().map(leaf_count).sum::<usize>(),
        _ => 1,
    }
}

/// Apply the structural mutations to the parsed seed and the byte mutations to its text.
fn mutate(seed: &str, mutations: &[Mutation]) -> Vec<u8> {
    let mut doc: Value = match seed.parse::<toml::Table>() {
        Ok(t) => Value::Table(t),
        Err(_) => return seed.as_bytes().to_vec(),
    };
    for m in mutations {
        match *m {
            Mutation::Leaf { at, what } => {
                let n = leaf_count(&doc);
                if n > 0 {
                    set_leaf(&mut doc, at % n, what);
                }
            }
            Mutation::Set { key, what } => {
                let (table, key, kind) = KEYS[key];
                // A service's tables are only stretched where the spec has them.
                let create = !matches!(table, "load" | "service" | "faults");
                if let Value::Table(t) = &mut doc
                    && (create || t.contains_key(table))
                {
                    let entry = t
                        .entry(table.to_string())
                        .or_insert_with(|| Value::Table(toml::Table::new()));
                    if let Value::Table(inner) = entry {
                        inner.insert(key.to_string(), extreme_for(kind, what));
                    }
                }
            }
            Mutation::Axis {
                lo,
                hi,
                log,
                search,
                step,
            } => {
                let (lo, hi) = (lo.min(hi), lo.max(hi));
                let lo = if log { lo.max(1) } else { lo };
                let hi = hi.max(lo);
                if let Value::Table(t) = &mut doc
                    && let Some(Value::Array(axes)) = t.get_mut("axis")
                    && let Some(Value::Table(axis)) = axes.first_mut()
                {
                    axis.remove("values");
                    axis.insert(
                        "range".into(),
                        Value::Array(vec![Value::Integer(lo), Value::Integer(hi)]),
                    );
                    if axis.get("kind").and_then(Value::as_str) == Some("fault") {
                        axis.insert("kind".into(), Value::String("workload".into()));
                        axis.remove("dependency");
                        axis.remove("expect");
                    }
                    if log {
                        axis.insert("scale".into(), Value::String("log".into()));
                    }
                    if search {
                        axis.insert("search".into(), Value::String("boundary".into()));
                    }
                    if let Some(step) = step {
                        axis.insert("step".into(), Value::Float(step));
                    }
                }
            }
            Mutation::Remove { at } => remove_key(&mut doc, at),
            _ => {}
        }
    }
    let mut text = toml::to_string(&doc).unwrap_or_default().into_bytes();
    for m in mutations {
        match *m {
            Mutation::Byte { at, byte } if !text.is_empty() => {
                let i = at % text.len();
                text[i] = byte;
            }
            Mutation::Insert { at, byte } => {
                let i = at % (text.len() + 1);
                text.insert(i, byte);
            }
            Mutation::Cut { at } => {
                let i = at % (text.len() + 1);
                text.truncate(i);
            }
            _ => {}
        }
    }
    text
}

/// Replace the `index`-th value (in [`leaf_count`]'s order) with an extreme value of its kind
/// (a number for a number, a text like it for a text; an array stays).
fn set_leaf(v: &mut Value, index: usize, what: usize) {
    fn walk(v: &mut Value, index: &mut usize, what: usize) -> bool {
        match v {
            Value::Table(t) => t.iter_mut().any(|(_, c)| walk(c, index, what)),
            Value::Array(a) => {
                if *index == 0 {
                    return true;
                }
                *index -= 1;
                a.iter_mut().any(|c| walk(c, index, what))
            }
            other => {
                if *index > 0 {
                    *index -= 1;
                    return false;
                }
                *other = match other {
                    Value::Integer(_) => match extreme_number(what) {
                        Value::Float(x) if x.is_finite() => Value::Integer(x as i64),
                        Value::Float(_) => Value::Integer(i64::MAX),
                        n => n,
                    },
                    Value::Float(_) => match extreme_number(what) {
                        Value::Integer(n) => Value::Float(n as f64),
                        x => x,
                    },
                    Value::String(s) => extreme_text(what, s),
                    Value::Boolean(b) => Value::Boolean(!*b),
                    _ => extreme_number(what),
                };
                true
            }
        }
    }
    let mut index = index;
    walk(v, &mut index, what);
}

/// Remove the `at`-th key of any table (modulo their count).
fn remove_key(v: &mut Value, at: usize) {
    fn count(v: &Value) -> usize {
        match v {
            Value::Table(t) => t.len() + t.values().map(count).sum::<usize>(),
            Value::Array(a) => a.iter().map(count).sum(),
            _ => 0,
        }
    }
    fn walk(v: &mut Value, at: &mut usize) -> bool {
        match v {
            Value::Table(t) => {
                if *at < t.len() {
                    if let Some(k) = t.keys().nth(*at).cloned() {
                        t.remove(&k);
                    }
                    return true;
                }
                *at -= t.len();
                t.iter_mut().any(|(_, c)| walk(c, at))
            }
            Value::Array(a) => a.iter_mut().any(|c| walk(c, at)),
            _ => false,
        }
    }
    let n = count(v);
    if n > 0 {
        let mut at = at % n;
        walk(v, &mut at);
    }
}

fn result(outcome: Outcome) -> ProbeResult {
    ProbeResult {
        outcome,
        exit_code: (outcome == Outcome::Ok).then_some(0),
        signal: None,
        timeout_kind: None,
        detail: String::new(),
        flags: Vec::new(),
        wall_seconds: 0.0,
        user_seconds: 0.0,
        system_seconds: 0.0,
        peak_memory_bytes: None,
        enforcement: Enforcement {
            backend: "fuzz".into(),
            memory: Strength::None,
            cpus: Strength::None,
            pids: Strength::None,
            disk: Strength::None,
            tree: "none".into(),
            on_qualify_death: String::new(),
            sandbox: None,
            notes: Vec::new(),
        },
        limits: Limits::default(),
        evidence: serde_json::Value::Null,
        stdout_tail: String::new(),
        stderr_tail: String::new(),
        stdout_bytes: 0,
        stderr_bytes: 0,
        stdout_sha256: String::new(),
        runs: None,
        distinct_outputs: None,
        load: None,
        faults: Vec::new(),
        perturb: None,
        children: None,
    }
}

/// Everything a run derives from a checked spec, before it starts a process.
fn exercise(spec: &Spec, threshold: u64) {
    let limits = spec.limits.to_probe_limits();
    let _ = (limits.timeout(), limits.stall());
    let axes: Vec<_> = spec.axes.iter().map(qualify_plan::Axis::declared).collect();
    let Ok(plan) = Plan::new(axes) else {
        return;
    };
    if plan.estimated_cells() > 2000 {
        // Large but legal: the sweep is built; executing it is the test's time, not coverage.
        let _ = plan.sweep_cells().len();
        return;
    }
    let runner = |p: &Params| {
        // What a cell's probe is made of (`qualify_service::SpecProbes` assembles them).
        let limits = spec.limits_for(p);
        let _ = (limits.timeout(), limits.stall());
        let _ = (
            spec.artifact.argv(p),
            spec.artifact.env(p),
            spec.slurm_argv(p),
        );
        let _ = spec.sandbox_policy();
        let _ = spec.faults_for(p);
        let _ = spec.expectations_for(p);
        if let Some(load) = &spec.load
            && let Some(plan) = load.plan_for(p)
        {
            let _ = qualify_load::compile(&plan);
        }
        // Fails from a per-case threshold of the parameters' digest on: searches gallop and
        // bisect somewhere new each case.
        let digest = p
            .to_string()
            .bytes()
            .fold(threshold, |h, b| h.rotate_left(5) ^ u64::from(b));
        result(if digest % 3 == 0 {
            Outcome::Deadlock
        } else {
            Outcome::Ok
        })
    };
    let _ = plan.execute(&runner, &ExecuteOptions::new());
    EXECUTED.fetch_add(1, Ordering::Relaxed);
}

fn one_case(
    dir: &Path,
    seed: &str,
    mutations: &[Mutation],
    threshold: u64,
) -> Result<(), TestCaseError> {
    let text = mutate(seed, mutations);
    let path = dir.join("qualify.toml");
    // Text is checked as `Spec::parse` does (no file-system checks: the examples' programs are
    // not beside it); bytes that are not text are loaded from a file, as `qualify run` reads.
    let loaded = match std::str::from_utf8(&text) {
        Ok(t) => Spec::parse(t, &path),
        Err(_) => {
            std::fs::write(&path, &text).map_err(|e| TestCaseError::fail(e.to_string()))?;
            Spec::load(&path)
        }
    };
    match loaded {
        Ok(spec) => {
            CHECKED.fetch_add(1, Ordering::Relaxed);
            exercise(&spec, threshold)
        }
        Err(e) => {
            if std::env::var_os("QUALIFY_FUZZ_VERBOSE").is_some() {
                eprintln!("--- {mutations:?}\n{e}");
            }
            // Every problem with the text is located.
            for d in e.diagnostics() {
                prop_assert!(d.line >= 1 && d.column >= 1, "{d}");
            }
            prop_assert!(!e.diagnostics().is_empty(), "an error without a place: {e}");
            if std::str::from_utf8(&text).is_err() {
                prop_assert!(e.to_string().contains("invalid UTF-8"), "{e}");
            }
        }
    }
    Ok(())
}

#[test]
fn no_spec_panics_the_parser_or_the_plan() {
    let cases = std::env::var("QUALIFY_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(400);
    let dir = tempfile::tempdir().unwrap();
    let seeds = seeds();
    assert!(seeds.len() >= 20, "the examples are the seeds");
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: Some(Box::new(FileFailurePersistence::Off)),
        ..Config::default()
    });
    let strategy = (
        0..seeds.len(),
        proptest::collection::vec(mutation(), 1..4),
        any::<u64>(),
    );
    let result = runner.run(&strategy, |(seed, mutations, threshold)| {
        one_case(dir.path(), &seeds[seed], &mutations, threshold)
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    let (checked, executed) = (
        CHECKED.load(Ordering::Relaxed),
        EXECUTED.load(Ordering::Relaxed),
    );
    eprintln!("{cases} cases: {checked} specs checked, {executed} plans executed");
    assert!(
        checked * 10 >= cases as usize,
        "most mutations should not stop at the parser: {checked} of {cases}"
    );
}

/// The reproducers of issue 31: each is refused at its place, none panics.
#[test]
fn the_issue_31_inputs_are_refused_at_their_place() {
    let dir = tempfile::tempdir().unwrap();
    let base = "[artifact]\nname = \"a\"\ncommand = \"echo {n}\"\n\n[claim]\nlevel = \"functional\"\n\n\
                [[axis]]\nname = \"n\"\nkind = \"workload\"\nvalues = [1]\n";
    for (extra, at, needle) in [
        (
            "[limits]\ntimeout = \"10000000000000000000s\"\n",
            "14:11",
            "longer than 30 days",
        ),
        (
            "[limits]\nstall = \"18446744073709551615s\"\n",
            "14:9",
            "longer than 30 days",
        ),
        (
            "[limits]\ntimeout = 1e300\n",
            "14:11",
            "`1e300` has no unit",
        ),
        (
            "[reproducibility]\nrepeat = 9223372036854775807\n",
            "14:10",
            "at most 10000",
        ),
        (
            "[performance]\nrepeat = 9223372036854775807\n",
            "14:10",
            "at most 10000",
        ),
        (
            "[limits]\npids = 9223372036854775807\n",
            "14:8",
            "at most 4194304",
        ),
        (
            "[limits]\nmemory = 9223372036854775807\n",
            "14:10",
            "has no unit",
        ),
        (
            "[limits]\nmemory = \"9223372036854775807B\"\n",
            "14:10",
            "larger than 1 PiB",
        ),
        (
            "[limits]\nmemory = \"1025T\"\n",
            "14:10",
            "larger than 1 PiB",
        ),
    ] {
        let path = dir.path().join("qualify.toml");
        std::fs::write(&path, format!("{base}\n{extra}")).unwrap();
        let err = Spec::load(&path).unwrap_err().to_string();
        assert!(
            err.contains(&format!("qualify.toml:{at}: error:")) && err.contains(needle),
            "{extra}: {err}"
        );
    }
    // Invalid UTF-8: the line and column of the first bad byte.
    let path = dir.path().join("qualify.toml");
    std::fs::write(&path, b"[artifact]\nname = \"caf\xe9\"\n").unwrap();
    let err = Spec::load(&path).unwrap_err().to_string();
    assert!(
        err.contains("qualify.toml:2:12: error: invalid UTF-8 (byte 0xe9)"),
        "{err}"
    );
}
