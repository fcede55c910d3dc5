//! The architecture invariants ARCHITECTURE.md states, checked on the workspace as it is: the
//! crate graph from `cargo metadata` (the vocabulary depends on no qualify crate and does no
//! I/O; the engines depend only on the vocabulary; the analysis and output crates depend on no
//! engine; engines meet only in `qualify-service` and the binary; nothing depends on the
//! binary), every source file starts with a doc comment saying what it owns, and every crate is
//! in ARCHITECTURE.md's overview diagram.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// Engines: run or drive real processes, sockets and load.
const ENGINES: [&str; 3] = ["qualify-probe", "qualify-load", "qualify-faults"];
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

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every workspace crate and its internal normal (not dev, not build) dependencies.
fn graph() -> BTreeMap<String, BTreeSet<String>> {
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
    let meta: Value = serde_json::from_slice(&out.stdout).expect("cargo metadata JSON");
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
        if engines > 1 && krate != "qualify-service" && krate != "qualify" {
            broken.push(format!(
                "{krate} depends on {engines} engines: engines meet only in qualify-service and the binary"
            ));
        }
        forbid(&mut broken, "qualify", "nothing depends on the binary");
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

#[test]
fn the_vocabulary_does_no_io() {
    let mut files = Vec::new();
    rust_files(&root().join("crates/qualify-model/src"), &mut files);
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
    for f in &files {
        let text = std::fs::read_to_string(f).expect("read source");
        // Tests may read fixtures.
        let code = text.split("#[cfg(test)]").next().unwrap_or(&text);
        for (n, line) in code.lines().enumerate() {
            if line.trim_start().starts_with("//") {
                continue;
            }
            for pat in io {
                if line.contains(pat) {
                    found.push(format!("{}:{}: {pat}: {}", f.display(), n + 1, line.trim()));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "qualify-model does I/O:\n{}",
        found.join("\n")
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
