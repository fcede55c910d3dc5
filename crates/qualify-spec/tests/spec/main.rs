//! Whole-spec tests through the crate's public interface: a full valid spec, the starter spec,
//! and every error with its position (`faults.rs`: dependencies, faults and their
//! expectations; `performance.rs`: `[performance]`; `service.rs`: services, load and objectives; `support.rs`: the helpers).

mod environment;
mod faults;
mod performance;
mod perturb;
mod service;
mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::support::{assert_starts, at, error, errors};
use qualify_spec::*;

const BASE: &str = r#"[artifact]
name = "gemm"
command = "./gemm --threads {threads}"

[claim]
level = "trial"

[[axis]]
name = "threads"
kind = "concurrency"
values = [1, 2, 4]
"#;

#[test]
fn base_spec_is_valid() {
    let spec = Spec::parse(BASE, "dir/qualify.toml").unwrap();
    assert_eq!(spec.axes.len(), 1);
    assert_eq!(spec.claim.level, ClaimLevel::Trial);
    assert_eq!(spec.artifact.workdir, Path::new("dir"));
}

#[test]
fn full_spec_round_trip() {
    let text = r#"
[artifact]
name = "tiled-gemm"
command = "./gemm --threads {threads} --n {n}"
workdir = "build/.."
build = ["make", "-j2"]

[artifact.env]
OMP_NUM_THREADS = "{threads}"
LABEL = 'n={n} {{literal}}'
VERBOSE = 1

[claim]
level = "production"

[target]
cores = 192
nodes = 2
memory = "768GiB"

[functional]
command = "make test"
junit = "out/junit.xml"

[limits]
memory = "2GiB"
cpus = 1.5
pids = 256
timeout = "60s"
stall = "5s"
progress = "output"

[[axis]]
name = "threads"
kind = "concurrency"
values = [16, 1, 2, 4, 8]

[[axis]]
name = "n"
kind = "workload"
range = [256, 65536]
search = "boundary"

[[axis]]
name = "mem"
kind = "memory"
values = ["256MiB", "1048576B", "1G"]

[[axis]]
name = "mode"
kind = "custom"
values = ["fast", "safe"]

[[waiver]]
gap = "nodes"
reason = "single node only"
"#;
    // `mode` needs a placeholder: put it in an argv-free spot of the env.
    let text = text.replace("VERBOSE = 1", "VERBOSE = 1\nMODE = \"{mode}\"");
    let spec = Spec::parse(&text, "/srv/proj/qualify.toml").unwrap();

    assert_eq!(spec.path, Path::new("/srv/proj/qualify.toml"));
    assert_eq!(spec.dir, Path::new("/srv/proj"));
    let a = &spec.artifact;
    assert_eq!(a.name, "tiled-gemm");
    assert_eq!(
        a.command,
        CommandLine::Shell("./gemm --threads {threads} --n {n}".into())
    );
    assert_eq!(a.workdir, Path::new("/srv/proj/build/.."));
    assert_eq!(
        a.build,
        Some(CommandLine::Argv(vec!["make".into(), "-j2".into()]))
    );
    assert_eq!(a.env.len(), 4);
    assert_eq!(a.env["VERBOSE"], "1");

    assert_eq!(spec.claim.level, ClaimLevel::Production);
    assert_eq!(
        spec.target,
        Some(Target {
            cores: Some(192),
            nodes: Some(2),
            memory_bytes: Some(768 << 30),
            ..Target::default()
        })
    );
    let functional = spec.functional.as_ref().unwrap();
    assert_eq!(functional.command, CommandLine::Shell("make test".into()));
    assert_eq!(
        functional.junit.as_deref(),
        Some(Path::new("/srv/proj/build/../out/junit.xml"))
    );
    assert_eq!(
        spec.limits,
        SpecLimits {
            memory_bytes: Some(2 << 30),
            cpus: Some(1.5),
            pids: Some(256),
            timeout: Some(Duration::from_secs(60)),
            stall: Some(Duration::from_secs(5)),
            progress: Some(qualify_model::Progress::Output),
            disk_bytes: None,
        }
    );

    let names: Vec<_> = spec.axes.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(names, ["threads", "n", "mem", "mode"]);
    // Swept values keep the written order.
    assert_eq!(
        spec.axes[0].domain,
        Domain::Values([16, 1, 2, 4, 8].map(Value::Int).to_vec())
    );
    assert_eq!(spec.axes[0].search, None);
    assert_eq!(
        spec.axes[1].domain,
        Domain::Range(NumericRange {
            lo: Number::Int(256),
            hi: Number::Int(65536),
            step: Number::Int(1),
            scale: Scale::Linear,
        })
    );
    assert_eq!(spec.axes[1].search, Some(Search::Boundary));
    assert_eq!(
        spec.axes[2].points(),
        [256 << 20, 1 << 20, 1 << 30].map(Value::Int).to_vec()
    );
    assert!(spec.axes[2].sets_memory_ceiling());
    assert_eq!(spec.ceiling_axis().map(|a| a.name.as_str()), Some("mem"));
    assert!(!spec.axes[3].is_numeric());
    assert_eq!(
        spec.waivers,
        [Waiver {
            gap: "nodes".into(),
            reason: "single node only".into()
        }]
    );
    assert_eq!(spec.source, text);

    // One cell: render its command, environment and limits.
    let params: qualify_model::Params = [
        ("threads", Value::Int(8)),
        ("n", Value::Int(1024)),
        ("mem", Value::Int(1 << 30)),
        ("mode", Value::Text("fast".into())),
    ]
    .into_iter()
    .collect();
    assert_eq!(
        a.argv(&params),
        ["/bin/sh", "-c", "./gemm --threads 8 --n 1024"]
    );
    let env: BTreeMap<_, _> = a.env(&params).into_iter().collect();
    assert_eq!(env["OMP_NUM_THREADS"], "8");
    assert_eq!(env["LABEL"], "n=1024 {literal}");
    assert_eq!(env["MODE"], "fast");
    let limits = spec.limits_for(&params);
    assert_eq!(limits.memory_bytes, Some(1 << 30));
    assert_eq!(limits.timeout_seconds, 60.0);

    // The model serializes for the receipt.
    let json = serde_json::to_value(&spec).unwrap();
    assert_eq!(json["claim"]["level"], "production");
    assert_eq!(json["target"]["memory_bytes"], 768u64 << 30);
    assert_eq!(json["limits"]["timeout_seconds"], 60.0);
    assert_eq!(json["axes"][1]["domain"]["range"]["hi"], 65536);
    assert_eq!(json["axes"][0]["domain"]["values"][0], 16);
    assert_eq!(json["artifact"]["build"][0], "make");
}

#[test]
fn search_axes_sort_their_values() {
    let text = BASE.replace(
        "values = [1, 2, 4]",
        "values = [4, 1, 2.5]\nsearch = \"boundary\"",
    );
    let spec = Spec::parse(&text, "q.toml").unwrap();
    assert_eq!(
        spec.axes[0].points(),
        [Value::Int(1), Value::Float(2.5), Value::Int(4)]
    );
}

#[test]
fn starter_spec_is_valid_and_explains_every_key() {
    let spec = Spec::parse(STARTER_SPEC, "qualify.toml").unwrap();
    assert_eq!(spec.claim.level, ClaimLevel::Trial);
    assert_eq!(spec.axes.len(), 2);
    for key in [
        "name",
        "command",
        "workdir",
        "build",
        "[artifact.env]",
        "level",
        "[target]",
        "cores",
        "nodes",
        "memory",
        "[functional]",
        "junit",
        "cpus",
        "pids",
        "timeout",
        "stall",
        "progress",
        "kind",
        "values",
        "range",
        "scale",
        "step",
        "search",
        "[[waiver]]",
        "gap",
        "reason",
    ] {
        assert!(
            STARTER_SPEC.contains(key),
            "starter spec does not mention {key}"
        );
    }
    // Uncommenting the optional sections keeps it valid (production then has its target).
    let uncommented: String = STARTER_SPEC
        .lines()
        .map(|line| {
            let optional = [
                "# build",
                "# [artifact.env]",
                "# OMP_NUM",
                "# [target]",
                "# cores",
                "# nodes",
                "# memory",
                "# [functional]",
                "# command = \"make",
                "# junit",
                "# cpus",
                "# pids",
                "# [[axis]]",
                "# name = \"mem\"",
                "# kind = \"memory\"",
                "# values = [\"256MiB\"",
                "# [[waiver]]",
                "# gap",
                "# reason",
            ];
            if optional.iter().any(|o| line.starts_with(o)) {
                line.trim_start_matches("# ").to_string()
            } else {
                line.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
        .replace("level = \"trial\"", "level = \"production\"");
    let spec = Spec::parse(&uncommented, "qualify.toml").unwrap();
    assert_eq!(spec.axes.len(), 3);
    assert!(spec.target.is_some() && spec.functional.is_some());
    assert_eq!(spec.waivers.len(), 1);
}

#[test]
fn toml_syntax_error() {
    let text = BASE.replace("level = \"trial\"", "level = \"trial");
    let e = error(&text);
    assert_starts(&e, &at(&text, "\"trial", 0, 6), "invalid TOML: ");

    let text = BASE.replace("name = \"gemm\"", "name = \"gemm\"\nname = \"again\"");
    let e = error(&text);
    assert_eq!(
        e,
        "dir/qualify.toml:3:1: error: duplicate key `name` in [artifact]"
    );
}

#[test]
fn unknown_keys_name_the_table_and_the_expected_keys() {
    let text = BASE.replace("values = [1, 2, 4]", "valuez = [1, 2, 4]");
    let e = error(&text);
    assert_starts(
        &e,
        &at(&text, "valuez", 0, 0),
        "unknown key `valuez` in [[axis]]",
    );
    assert!(
        e.contains("help: expected one of: name, kind, values, range, search, step, scale"),
        "{e}"
    );

    let text = BASE.replace("name = \"gemm\"", "name = \"gemm\"\nwork_dir = \".\"");
    let e = error(&text);
    assert_eq!(
        e,
        "dir/qualify.toml:3:1: error: unknown key `work_dir` in [artifact]\n  help: expected one of: name, command, workdir, build, env, launcher"
    );

    let text = format!("retries = 3\n{BASE}");
    let e = error(&text);
    assert_starts(
        &e,
        "dir/qualify.toml:1:1: error: ",
        "unknown key `retries` at the top level",
    );
    assert!(
        e.contains("expected one of: artifact, claim, target, functional, limits, axis, waiver"),
        "{e}"
    );

    let text = format!("{BASE}\n[limits]\nmemroy = \"1G\"\n");
    let e = error(&text);
    assert_starts(
        &e,
        &at(&text, "memroy", 0, 0),
        "unknown key `memroy` in [limits]",
    );
}

#[test]
fn wrong_types_say_what_was_expected() {
    let text = format!("{BASE}\n[target]\ncores = \"many\"\n");
    let e = error(&text);
    assert_starts(
        &e,
        &at(&text, "\"many\"", 0, 0),
        "wrong type: found string \"many\", expected i64",
    );

    let text = BASE.replace("command = \"./gemm --threads {threads}\"", "command = 42");
    let e = error(&text);
    assert_starts(
        &e,
        "dir/qualify.toml:3:11: error: ",
        "wrong type: found integer `42`, expected a command: a string (run via /bin/sh -c) or an array of strings",
    );

    let text = BASE.replace("level = \"trial\"", "level = \"trail\"");
    let e = error(&text);
    assert_starts(&e, "dir/qualify.toml:6:9: error: ", "unknown value `trail`");
    assert!(
        e.contains("help: expected one of: functional, trial, production"),
        "{e}"
    );

    let text = BASE.replace("kind = \"concurrency\"", "kind = \"threads\"");
    let e = error(&text);
    assert_starts(
        &e,
        &at(&text, "\"threads\"", 1, 0),
        "unknown value `threads`",
    );
    assert!(
        e.contains("workload, concurrency, memory, topology, custom"),
        "{e}"
    );

    let text = BASE.replace("[[axis]]", "[axis]");
    let e = error(&text);
    assert_starts(
        &e,
        &at(&text, "[axis]", 0, 0),
        "[axis] must be an array of tables",
    );
    assert!(e.contains("help: write [[axis]] (double brackets)"), "{e}");

    let text = BASE.replace("values = [1, 2, 4]", "values = [1, [2], 4]");
    let e = error(&text);
    assert_starts(
        &e,
        &at(&text, "[2]", 0, 0),
        "wrong type: found array, expected an integer, a float or a string",
    );
}

#[test]
fn missing_sections_and_keys() {
    let text = BASE.replace("[claim]\nlevel = \"trial\"\n", "");
    let e = error(&text);
    assert_starts(&e, "dir/qualify.toml:1:1: error: ", "missing table [claim]");
    assert!(e.contains("help: add [claim] with level"), "{e}");

    let text = BASE.replace("kind = \"concurrency\"\n", "");
    let e = error(&text);
    assert_starts(
        &e,
        &at(&text, "[[axis]]", 0, 0),
        "missing key `kind` in [[axis]]",
    );
}

#[test]
fn empty_axis() {
    let text = BASE.replace("values = [1, 2, 4]", "values = []");
    let e = error(&text);
    assert_starts(
        &e,
        "dir/qualify.toml:11:10: error: ",
        "axis `threads` has no values",
    );
    assert!(e.contains("help: list at least one value"), "{e}");
}

#[test]
fn neither_or_both_values_and_range() {
    let text = BASE.replace("values = [1, 2, 4]\n", "");
    let e = error(&text);
    assert_starts(
        &e,
        &at(&text, "\"threads\"", 0, 0),
        "axis `threads` has neither `values` nor `range`",
    );

    let text = BASE.replace("values = [1, 2, 4]", "values = [1, 2, 4]\nrange = [1, 4]");
    let e = error(&text);
    assert_starts(
        &e,
        &at(&text, "[1, 4]", 0, 0),
        "axis `threads` has both `values` and `range`",
    );
}

#[test]
fn bad_ranges() {
    let text = BASE.replace("values = [1, 2, 4]", "range = [64, 8]");
    let e = error(&text);
    assert_starts(
        &e,
        "dir/qualify.toml:11:9: error: ",
        "range of axis `threads` is empty: lo 64 is greater than hi 8",
    );
    assert!(
        e.contains("help: write range = [lo, hi] with lo <= hi"),
        "{e}"
    );

    let text = BASE.replace("values = [1, 2, 4]", "range = [1, 2, 4]");
    let e = error(&text);
    assert_starts(
        &e,
        &at(&text, "[1, 2, 4]", 0, 0),
        "range of axis `threads` must have two elements [lo, hi], found 3",
    );

    let text = BASE.replace("values = [1, 2, 4]", "range = [1, \"many\"]");
    let e = error(&text);
    assert_starts(
        &e,
        &at(&text, "\"many\"", 0, 0),
        "wrong type: found string \"many\", expected a number",
    );

    let text = BASE.replace("values = [1, 2, 4]", "range = [0.5, 2.0]");
    let e = error(&text);
    assert_starts(
        &e,
        &at(&text, "[0.5", 0, 0),
        "range of axis `threads` has float bounds but no `step`",
    );

    let text = BASE.replace("values = [1, 2, 4]", "range = [1, 100000]");
    let e = error(&text);
    assert_starts(
        &e,
        &at(&text, "[1, 100000]", 0, 0),
        "range of axis `threads` would sweep more than 1000 points",
    );
    assert!(e.contains("add search = \"boundary\""), "{e}");

    let text = BASE.replace("values = [1, 2, 4]", "range = [0, 64]\nscale = \"log\"");
    let e = error(&text);
    assert_starts(
        &e,
        &at(&text, "\"log\"", 0, 0),
        "scale = \"log\" needs a positive lower bound",
    );

    let text = BASE.replace(
        "values = [1, 2, 4]",
        "range = [1, 64]\nscale = \"log\"\nstep = 1",
    );
    let e = error(&text);
    assert_starts(
        &e,
        &at(&text, "step = 1", 0, 7),
        "step of log-scale axis `threads` must be a factor greater than 1, found 1",
    );

    let text = BASE.replace("values = [1, 2, 4]", "values = [1, 2, 4]\nstep = 2");
    let e = error(&text);
    assert_starts(
        &e,
        &at(&text, "step = 2", 0, 7),
        "`step` applies only to an axis with `range`",
    );
}

#[test]
fn ranges_expand_to_lattices() {
    let text = BASE.replace("values = [1, 2, 4]", "range = [1, 64]\nscale = \"log\"");
    let spec = Spec::parse(&text, "q.toml").unwrap();
    assert_eq!(
        spec.axes[0].points(),
        [1, 2, 4, 8, 16, 32, 64].map(Value::Int).to_vec()
    );
    let text = BASE.replace("values = [1, 2, 4]", "range = [0.5, 1.5]\nstep = 0.5");
    let spec = Spec::parse(&text, "q.toml").unwrap();
    assert_eq!(
        spec.axes[0].points(),
        [0.5, 1.0, 1.5].map(Value::Float).to_vec()
    );
}

#[test]
fn duplicate_axis_names_and_values() {
    let text = format!("{BASE}\n[[axis]]\nname = \"threads\"\nkind = \"workload\"\nvalues = [8]\n");
    let e = error(&text);
    assert_starts(
        &e,
        &at(&text, "\"threads\"", 1, 0),
        "duplicate axis name `threads`",
    );
    assert!(
        e.contains("help: the first axis `threads` is at 9:8"),
        "{e}"
    );

    let text = BASE.replace("values = [1, 2, 4]", "values = [1, 2, 2.0]");
    let e = error(&text);
    assert_starts(
        &e,
        &at(&text, "2.0", 0, 0),
        "duplicate value `2` in axis `threads`",
    );
}

#[test]
fn placeholders_without_an_axis() {
    // In a shell string: the column points at the placeholder itself.
    let text = BASE.replace("{threads}", "{threads} --n {n}");
    let e = error(&text);
    assert_eq!(
        e,
        "dir/qualify.toml:3:43: error: placeholder `{n}` has no axis named `n`\n  help: declare an [[axis]] with name = \"n\", or write {{n}} for literal braces"
    );

    // A near miss gets a suggestion.
    let text = BASE.replace("{threads}", "{threads} {thread}");
    let e = error(&text);
    assert_starts(
        &e,
        &at(&text, "{thread}", 0, 0),
        "placeholder `{thread}` has no axis named `thread`",
    );
    assert!(e.contains("help: did you mean {threads}?"), "{e}");

    // A shell variable written with single braces.
    let text = BASE.replace("{threads}", "{threads} ${HOME}");
    let e = error(&text);
    assert_starts(
        &e,
        &at(&text, "{HOME}", 0, 0),
        "placeholder `{HOME}` has no axis named `HOME`",
    );
    assert!(e.contains("write ${{HOME}}"), "{e}");

    // In an argv element and in a literal string.
    let text = BASE.replace(
        "command = \"./gemm --threads {threads}\"",
        "command = ['./gemm', '--threads', '{threads}', \"--n={n}\"]",
    );
    let e = error(&text);
    assert_starts(
        &e,
        &at(&text, "{n}", 0, 0),
        "placeholder `{n}` has no axis named `n`",
    );

    // In an environment value, with an escape before it: found by searching.
    let text = BASE.replace(
        "[claim]",
        "[artifact.env]\nA = \"\\t{size}\"\nB = \"{threads}\"\n\n[claim]",
    );
    let e = error(&text);
    assert_starts(
        &e,
        &at(&text, "{size}", 0, 0),
        "placeholder `{size}` has no axis named `size`",
    );

    // Escaped braces are not placeholders.
    let text = BASE.replace("{threads}", "{threads} {{n}}");
    assert!(Spec::parse(&text, "q.toml").is_ok());
}

#[test]
fn malformed_braces() {
    let text = BASE.replace("{threads}", "{threads} awk '{print $1}'");
    let e = error(&text);
    assert_starts(
        &e,
        &at(&text, "{print", 0, 0),
        "`{print $1}` is not a placeholder",
    );
    assert!(e.contains("write {{ and }} for literal braces"), "{e}");

    let text = BASE.replace("{threads}", "{threads} }");
    let e = error(&text);
    assert_starts(&e, &at(&text, " }\"", 0, 1), "unmatched `}` in template");
}

#[test]
fn axes_must_be_used() {
    let text = BASE.replace("{threads}", "");
    let e = error(&text);
    assert_starts(
        &e,
        &at(&text, "\"threads\"", 0, 0),
        "axis `threads` is not used: no `{threads}` placeholder in artifact.command or artifact.env",
    );
    assert!(
        e.contains("only kind = \"memory\", \"load\" and \"fault\" axes and a topology axis named `nodes` need no placeholder"),
        "{e}"
    );

    // A memory axis sets the ceiling: no placeholder needed.
    let text = format!(
        "{BASE}\n[[axis]]\nname = \"mem\"\nkind = \"memory\"\nrange = [\"64MiB\", \"1GiB\"]\nsearch = \"boundary\"\n"
    );
    let spec = Spec::parse(&text, "q.toml").unwrap();
    assert_eq!(
        spec.axes[1].domain,
        Domain::Range(NumericRange {
            lo: Number::Int(64 << 20),
            hi: Number::Int(1 << 30),
            step: Number::Int(1),
            scale: Scale::Linear,
        })
    );

    let text = format!(
        "{BASE}\n[[axis]]\nname = \"m2\"\nkind = \"memory\"\nvalues = [\"1G\"]\n[[axis]]\nname = \"m3\"\nkind = \"memory\"\nvalues = [\"2G\"]\n"
    );
    let e = error(&text);
    assert_starts(
        &e,
        &at(&text, "\"memory\"", 1, 0),
        "more than one axis of kind `memory`",
    );
}

#[test]
fn boundary_search_needs_a_numeric_axis() {
    let text = BASE.replace(
        "values = [1, 2, 4]",
        "values = [1, \"two\", 4]\nsearch = \"boundary\"",
    );
    let e = error(&text);
    assert_starts(
        &e,
        &at(&text, "\"boundary\"", 0, 0),
        "search = \"boundary\" needs an ordered numeric axis, but axis `threads` has non-numeric values",
    );

    let text = BASE.replace(
        "values = [1, 2, 4]",
        "values = [1, 2, 4]\nsearch = \"bisect\"",
    );
    let e = error(&text);
    assert_starts(&e, &at(&text, "\"bisect\"", 0, 0), "unknown value `bisect`");
}

#[test]
fn production_needs_a_target() {
    let text = BASE.replace("\"trial\"", "\"production\"");
    let e = error(&text);
    assert_eq!(
        e,
        "dir/qualify.toml:6:9: error: claim level `production` needs a [target] table: the environment the claim is about\n  help: add [target] with cores, nodes and/or memory, or claim level = \"trial\""
    );
    let text = format!("{text}\n[target]\ncores = 8\n");
    assert!(Spec::parse(&text, "q.toml").is_ok());
}

#[test]
fn bad_sizes_durations_and_numbers() {
    let text = format!("{BASE}\n[limits]\nmemory = \"2XB\"\n");
    let e = error(&text);
    assert_starts(
        &e,
        &at(&text, "\"2XB\"", 0, 0),
        "invalid size `2XB`: unknown unit `XB`",
    );
    assert!(e.contains("expected a size such as"), "{e}");

    let text = format!("{BASE}\n[target]\nmemory = 0\n");
    let e = error(&text);
    assert_starts(
        &e,
        &at(&text, "0\n", 0, 0),
        "invalid size `0`: must be at least 1 byte",
    );

    let text = format!("{BASE}\n[limits]\ntimeout = \"soon\"\n");
    let e = error(&text);
    assert_starts(&e, &at(&text, "\"soon\"", 0, 0), "invalid duration `soon`");
    assert!(e.contains("expected a duration such as 30s"), "{e}");

    let text = format!("{BASE}\n[limits]\nstall = -1\n");
    let e = error(&text);
    assert_starts(
        &e,
        &at(&text, "-1", 0, 0),
        "invalid duration `-1`: must be positive",
    );

    let text = format!("{BASE}\n[limits]\ncpus = 0\n");
    let e = error(&text);
    assert_starts(&e, &at(&text, "0\n", 0, 0), "invalid CPU ceiling `0`");

    let text = format!("{BASE}\n[limits]\nprogress = \"bytes\"\n");
    let e = error(&text);
    assert_starts(
        &e,
        &at(&text, "\"bytes\"", 0, 0),
        "unknown progress signal `bytes`",
    );

    let text = format!("{BASE}\n[target]\nnodes = 0\n");
    let e = error(&text);
    assert_starts(
        &e,
        &at(&text, "0\n", 0, 0),
        "target.nodes must be a positive integer, found 0",
    );

    let text = format!(
        "{BASE}\n[[axis]]\nname = \"mem\"\nkind = \"memory\"\nvalues = [\"1G\", \"lots\", 2.5]\n"
    );
    let errors = errors(&text);
    assert_eq!(errors.len(), 2, "{errors:#?}");
    assert_starts(
        &errors[0],
        &at(&text, "\"lots\"", 0, 0),
        "invalid size `lots`",
    );
    assert_starts(
        &errors[1],
        &at(&text, "2.5", 0, 0),
        "`2.5` has no unit: a size needs its unit",
    );

    // Units that cannot lie: a bare number is neither a duration nor a size.
    for (key, value, message, help) in [
        (
            "[limits]\ntimeout",
            "30",
            "`30` has no unit: a duration needs its unit",
            "write \"30ms\" or \"30s\"",
        ),
        (
            "[limits]\nstall",
            "\"5\"",
            "`5` has no unit: a duration needs its unit",
            "\"5s\"",
        ),
        (
            "[limits]\nmemory",
            "512",
            "`512` has no unit: a size needs its unit",
            "\"512MiB\"",
        ),
        (
            "[target]\nmemory",
            "\"4096\"",
            "`4096` has no unit: a size needs its unit",
            "\"4096B\" for bytes",
        ),
    ] {
        let text = format!("{BASE}\n{key} = {value}\n");
        let e = error(&text);
        assert_starts(&e, &at(&text, &format!("{value}\n"), 0, 0), message);
        assert!(e.contains(help), "{e}");
    }
}

#[test]
fn semantic_errors_are_collected_in_file_order() {
    let text = r#"[artifact]
name = ""
command = "./x {a} {b}"

[claim]
level = "production"

[limits]
memory = "lots"
timeout = "never"

[[axis]]
name = "a"
kind = "workload"
values = []

[[axis]]
name = "a"
kind = "custom"
range = [9, 1]

[[axis]]
name = "c"
kind = "custom"
values = [1]
"#;
    let errors = errors(text);
    let heads: Vec<&str> = errors
        .iter()
        .map(|e| e.lines().next().unwrap_or(""))
        .collect();
    assert_eq!(
        heads,
        [
            "dir/qualify.toml:2:8: error: artifact.name must not be empty",
            "dir/qualify.toml:3:20: error: placeholder `{b}` has no axis named `b`",
            "dir/qualify.toml:6:9: error: claim level `production` needs a [target] table: the environment the claim is about",
            "dir/qualify.toml:9:10: error: invalid size `lots`: expected a number, then a unit; expected a size such as 512M, 256MiB, 1.5G or 1000000 (bytes)",
            "dir/qualify.toml:10:11: error: invalid duration `never`: expected a number before the unit; expected a duration such as 30s, 2m, 1h30m or 500ms",
            "dir/qualify.toml:15:10: error: axis `a` has no values",
            "dir/qualify.toml:18:8: error: duplicate axis name `a`",
            "dir/qualify.toml:20:9: error: range of axis `a` is empty: lo 9 is greater than hi 1",
            "dir/qualify.toml:23:8: error: axis `c` is not used: no `{c}` placeholder in artifact.command or artifact.env",
        ]
    );
    // The whole error displays every diagnostic.
    let whole = Spec::parse(text, "dir/qualify.toml")
        .unwrap_err()
        .to_string();
    assert_eq!(whole.matches(": error: ").count(), 9, "{whole}");
}

#[test]
fn empty_commands() {
    let text = BASE.replace("command = \"./gemm --threads {threads}\"", "command = []");
    let errors = errors(&text);
    assert_starts(
        &errors[0],
        "dir/qualify.toml:3:11: error: ",
        "artifact.command is empty",
    );
}

#[test]
fn load_resolves_workdir_against_the_spec_directory() {
    let dir = std::env::temp_dir().join(format!("qualify-spec-test-{}", std::process::id()));
    let sub = dir.join("proj");
    std::fs::create_dir_all(sub.join("bin")).unwrap();
    let path = sub.join("qualify.toml");
    std::fs::write(
        &path,
        BASE.replace("name = \"gemm\"", "name = \"gemm\"\nworkdir = \"bin\""),
    )
    .unwrap();
    let spec = Spec::load(&path).unwrap();
    assert_eq!(spec.artifact.workdir, sub.join("bin"));
    assert!(spec.artifact.workdir.is_absolute());

    std::fs::write(
        &path,
        BASE.replace("name = \"gemm\"", "name = \"gemm\"\nworkdir = \"nope\""),
    )
    .unwrap();
    let e = Spec::load(&path).unwrap_err().to_string();
    let expected = format!(
        "{}:3:11: error: artifact.workdir `{}` does not exist",
        path.display(),
        sub.join("nope").display()
    );
    assert!(e.starts_with(&expected), "{e}");

    let missing = PathBuf::from(&dir).join("absent.toml");
    let e = Spec::load(&missing).unwrap_err();
    assert!(matches!(e, SpecError::Read { .. }));
    assert!(e.to_string().starts_with(&format!(
        "{}: error: cannot read the spec:",
        missing.display()
    )));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Contradictions between sections are errors at the place that contradicts, with a fix.
#[test]
fn contradictions_between_sections_are_errors() {
    // stall ≥ timeout: the stall window could never fire.
    let text = format!("{BASE}\n[limits]\ntimeout = \"1s\"\nstall = \"10s\"\n");
    assert_starts(
        &error(&text),
        &at(&text, "\"10s\"", 0, 0),
        "limits.stall: the stall window 10s is not shorter than the timeout 1s",
    );
    // With the default stall (10s), a short timeout points at the timeout.
    let text = format!("{BASE}\n[limits]\ntimeout = \"5s\"\n");
    let e = error(&text);
    assert_starts(
        &e,
        &at(&text, "\"5s\"", 0, 0),
        "limits.timeout: the stall window 10s (the default) is not shorter than the timeout 5s",
    );
    assert!(e.contains("help: make stall shorter than timeout"), "{e}");

    // A waiver for a gap the target cannot produce.
    let text = format!(
        "{BASE}\n[target]\ncores = 8\n\n[[waiver]]\ngap = \"nodes\"\nreason = \"one node\"\n"
    );
    let e = error(&text);
    assert_starts(
        &e,
        &at(&text, "\"nodes\"", 0, 0),
        "waiver names gap `nodes`, which this spec's [target] cannot produce",
    );
    assert!(
        e.contains("the gaps this target can have: cores, concurrency"),
        "{e}"
    );
    let text = format!("{BASE}\n[[waiver]]\ngap = \"cores\"\nreason = \"r\"\n");
    assert!(error(&text).contains("this spec's target can have no gap"));

    // A target workload entry on an axis of another kind.
    let text = format!("{BASE}\n[target]\nworkload = {{ threads = 8 }}\n");
    assert_starts(
        &error(&text),
        &at(&text, "8 }", 0, 0),
        "target.workload.threads: axis `threads` is a concurrency axis, not a workload axis",
    );

    // Headroom with nothing to measure it from, on a memory axis, or below 1.
    let with_n = "[artifact]\nname = \"a\"\ncommand = \"./a {n}\"\n\n[claim]\nlevel = \"trial\"\nheadroom = { n = 2.0 }\n\n[[axis]]\nname = \"n\"\nkind = \"workload\"\nvalues = [1, 2]\n";
    assert_starts(
        &error(with_n),
        &at(with_n, "n = 2.0", 0, 0),
        "claim.headroom.n: [target] names no value for axis `n`",
    );
    let ok = format!("{with_n}\n[target]\nworkload = {{ n = 2 }}\n");
    let spec = crate::support::valid(&ok);
    assert_eq!(spec.claim.headroom.for_axis("n"), Some(2.0));
    assert_eq!(spec.claim.headroom.for_axis("m"), None);
    let low = ok.replace("n = 2.0", "n = 0.5");
    assert!(error(&low).contains("claim.headroom.n must be at least 1, found 0.5"));
    let all = format!("{BASE}\n[claim]\n").replace(
        "[claim]\nlevel = \"trial\"\n",
        "[claim]\nlevel = \"trial\"\nheadroom = 1.5\n",
    );
    let all = all.trim_end_matches("\n[claim]\n").to_string();
    assert!(
        error(&all).contains("claim.headroom: no axis has a target value"),
        "{all}"
    );
    let mem = "[artifact]\nname = \"a\"\ncommand = \"./a\"\n\n[claim]\nlevel = \"trial\"\nheadroom = { mem = 2 }\n\n[target]\nmemory = \"1GiB\"\n\n[[axis]]\nname = \"mem\"\nkind = \"memory\"\nvalues = [\"64MiB\", \"128MiB\"]\n";
    assert!(error(mem).contains("`mem` is a memory axis, where smaller is harder"));

    // Two expectations on one curve; an efficiency that is never computed; a model that can
    // never be fitted.
    let perf = "[artifact]\nname = \"a\"\ncommand = \"./a {n} {threads}\"\n\n[claim]\nlevel = \"trial\"\n\n[[axis]]\nname = \"n\"\nkind = \"workload\"\nvalues = [1, 2, 4, 8, 16]\n\n[[axis]]\nname = \"threads\"\nkind = \"concurrency\"\nvalues = [1, 2]\n\n[performance]\n";
    let dup = format!(
        "{perf}\n[[performance.expect]]\naxis = \"n\"\nmetric = \"wall\"\nmax_exponent = 1.2\n\n[[performance.expect]]\naxis = \"n\"\nmetric = \"wall\"\nmax_exponent = 2.0\n"
    );
    let e = error(&dup);
    assert_starts(
        &e,
        &at(&dup, "\"n\"", 2, 0),
        "a second [[performance.expect]] on axis `n` and metric `wall`",
    );
    assert!(e.contains("the first is at 21:8"), "{e}");
    let cpu = format!(
        "{perf}\n[[performance.expect]]\naxis = \"threads\"\nmetric = \"cpu\"\nmin_efficiency = 0.5\n"
    );
    assert!(error(&cpu).contains("min_efficiency of `cpu` is never measured"));
    let few = format!(
        "{perf}\n[[performance.expect]]\naxis = \"n\"\nmetric = \"wall\"\nmax_exponent = 1.2\n"
    )
    .replace("[1, 2, 4, 8, 16]", "[1, 2, 4]");
    assert!(
        error(&few).contains(
            "max_exponent along `n` is never judged: a scaling model needs 5 distinct values and the axis has 3"
        )
    );
}

#[test]
fn a_nodes_topology_axis_needs_no_placeholder_other_topology_axes_do() {
    let text =
        format!("{BASE}\n[[axis]]\nname = \"nodes\"\nkind = \"topology\"\nvalues = [1, 2]\n");
    Spec::parse(&text, "q.toml").expect("`nodes` sizes the allocation");
    let text =
        format!("{BASE}\n[[axis]]\nname = \"ranks\"\nkind = \"topology\"\nvalues = [1, 2]\n");
    let e = error(&text);
    assert!(e.contains("axis `ranks` is not used"), "{e}");
}
