//! [`STARTER_SPEC`]: the commented `qualify.toml` that `qualify init` writes. It explains every
//! key and is itself a valid spec (a test holds it to that).

/// A commented starter `qualify.toml`; edit the artifact's command and the axes to fit.
pub const STARTER_SPEC: &str = r#"# qualify.toml: what to qualify, the claim to make, and the region to examine.
# `qualify run` reads this file; `qualify gate RECEIPT --claim LEVEL` checks the receipt it writes.

[artifact]
# A name for the receipt and reports.
name = "my-program"
# The command each cell runs. A string runs via /bin/sh -c; an array runs directly, e.g.
#   command = ["./my-program", "--threads", "{threads}"]
# {name} is replaced by the value of the axis called `name` in each cell; every placeholder
# needs an axis and every axis needs a placeholder (except kind = "memory", see below).
# Write {{ and }} for literal braces (e.g. ${{HOME}} for a shell variable).
command = "./my-program --threads {threads} --size {n}"
# Where the commands run, relative to this file's directory.
workdir = "."
# Optional: run once before anything else (string or array; taken literally).
# build = "make"

# Optional: extra environment for every cell; values may use placeholders too.
# [artifact.env]
# OMP_NUM_THREADS = "{threads}"

[claim]
# functional: correct results for the admitted inputs.
# trial:      ran without deadlock, crash, OOM or timeout across the examined region.
# production: qualified for the [target] below: needs [target], and every gap between target
#             and tested region closed or waived.
level = "trial"

# The environment the claim is about; all keys optional, required for level = "production".
# The receipt lists each fact the tested region did not reach as a gap.
# [target]
# cores = 192
# nodes = 2
# memory = "768GiB"

# Optional: the tests that must pass before any operational probing.
# [functional]
# command = "make test"          # string or array, run once in workdir (taken literally)
# junit = "build/junit.xml"      # optional: JUnit XML it writes, relative to workdir

# Ceilings and watch windows for every cell; same meaning as `qualify probe`'s flags.
[limits]
memory = "2GiB"      # memory ceiling for the whole process tree: 512M, 2GiB, 1.5G, or bytes
# cpus = 2           # CPU ceiling in cores (fractions allowed)
# pids = 512         # most processes + threads in the tree
timeout = "60s"      # wall-clock limit per cell: 30s, 2m, 1h30m, 500ms
stall = "5s"         # no CPU and no progress for this long counts as a deadlock
progress = "none"    # progress signal: none | output | heartbeat ($QUALIFY_HEARTBEAT file)

# Axes: the dimensions of the operating region. Cells are their cartesian product.
# kind: workload | concurrency | memory | topology | custom
# Either values = [...] (integers, floats or strings; sizes like "512MiB" for kind = "memory")
# or range = [lo, hi] (numbers; sizes for kind = "memory").
# A range is swept on a lattice: scale = "linear" adds step (default 1 for integer bounds),
# scale = "log" multiplies by step (default 2); hi is always included.
# search = "boundary" (numeric axes only) finds the largest passing and smallest failing value
# by galloping and bisection instead of running every point; step is then the resolution.

[[axis]]
name = "threads"
kind = "concurrency"
values = [1, 2, 4, 8]

[[axis]]
name = "n"
kind = "workload"
range = [256, 65536]
scale = "log"
search = "boundary"

# An axis of kind "memory" sets each cell's memory ceiling and needs no placeholder:
# [[axis]]
# name = "mem"
# kind = "memory"
# values = ["256MiB", "1GiB", "4GiB"]

# Accept a target gap by name, with the reason (production claims only):
# [[waiver]]
# gap = "nodes"
# reason = "single-node build; multi-node runs are covered by the cluster acceptance suite"
"#;
