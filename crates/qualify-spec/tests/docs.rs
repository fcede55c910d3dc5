//! The documentation against the parser. Every key `qualify.toml` accepts — found by asking the
//! parser itself (an unknown key in each table is refused with the list of the keys it takes,
//! table by table, recursing into the tables among them) — is in the reference
//! (`docs/reference/spec.md`, under its table's heading); every TOML block in the README and
//! under `docs/` is valid TOML whose keys the parser accepts, and a block that is a whole spec
//! (`[artifact]` and `[claim]`) checks as one.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use qualify_spec::Spec;

/// A key no table takes.
const PROBE: &str = "zz_not_a_key";

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// One step into the spec: a table key, or an array of tables.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Step {
    Table(String),
    Array(String),
}

impl Step {
    fn name(&self) -> &str {
        match self {
            Step::Table(n) | Step::Array(n) => n,
        }
    }
}

/// `load.request.tcp`.
fn dotted(path: &[Step]) -> String {
    path.iter().map(Step::name).collect::<Vec<_>>().join(".")
}

/// A TOML document whose only key is `inner` at `path` (inline tables all the way down).
fn document(path: &[Step], inner: &str) -> String {
    let mut value = format!("{{ {inner} }}");
    for (i, step) in path.iter().enumerate().rev() {
        let wrapped = match step {
            Step::Table(_) => value.clone(),
            Step::Array(_) => format!("[{value}]"),
        };
        if i == 0 {
            return format!("{} = {wrapped}\n", step.name());
        }
        value = format!("{{ {} = {wrapped} }}", step.name());
    }
    format!("{inner}\n")
}

/// The keys the table at `path` takes, as the parser lists them when refusing an unknown one;
/// `None` when `path` is no table of fixed keys.
fn accepted(path: &[Step]) -> Option<Vec<String>> {
    let text = document(path, &format!("{PROBE} = 1"));
    let err = Spec::parse(&text, "q.toml").err()?;
    let d = err
        .diagnostics()
        .iter()
        .find(|d| d.message.contains(&format!("unknown key `{PROBE}`")))?;
    let help = d.help.as_deref()?;
    let list = help.strip_prefix("expected one of: ")?;
    Some(
        list.split(", ")
            .map(|k| k.trim_matches('`').to_string())
            .collect(),
    )
}

/// Every table the parser knows (path → its keys), from the top level down.
fn tables() -> Vec<(Vec<Step>, Vec<String>)> {
    let mut out = Vec::new();
    let mut todo: Vec<Vec<Step>> = vec![Vec::new()];
    while let Some(path) = todo.pop() {
        let Some(keys) = accepted(&path) else {
            continue;
        };
        if path.len() < 5 {
            for k in &keys {
                for step in [Step::Table(k.clone()), Step::Array(k.clone())] {
                    let mut next = path.clone();
                    next.push(step);
                    if accepted(&next).is_some() {
                        todo.push(next);
                        break;
                    }
                }
            }
        }
        out.push((path, keys));
    }
    out.sort();
    out
}

/// The text of the reference under the heading that names `table` (`[load]`, `[[axis]]`,
/// `[load.request.tcp]`), up to the next heading of the same or a higher level.
fn section<'a>(reference: &'a str, table: &str) -> Option<&'a str> {
    let names = if table.is_empty() {
        vec!["Top-level tables".to_string()]
    } else {
        vec![format!("`[{table}]`"), format!("`[[{table}]]`")]
    };
    let start = reference
        .lines()
        .scan(0usize, |at, line| {
            let here = *at;
            *at += line.len() + 1;
            Some((here, line))
        })
        .find(|(_, line)| line.starts_with('#') && names.iter().any(|n| line.contains(n.as_str())))
        .map(|(at, _)| at)?;
    let rest = &reference[start..];
    let level = rest.chars().take_while(|c| *c == '#').count();
    let end = rest
        .lines()
        .skip(1)
        .scan(
            rest.lines().next().map_or(0, |l| l.len() + 1),
            |at, line| {
                let here = *at;
                *at += line.len() + 1;
                Some((here, line))
            },
        )
        .find(|(_, line)| {
            let hashes = line.chars().take_while(|c| *c == '#').count();
            hashes > 0 && hashes <= level
        })
        .map_or(rest.len(), |(at, _)| at);
    Some(&rest[..end])
}

#[test]
fn every_key_the_parser_accepts_is_in_the_reference() {
    let tables = tables();
    if std::env::var_os("QUALIFY_PRINT_KEYS").is_some() {
        for (path, keys) in &tables {
            eprintln!("[{}] {}", dotted(path), keys.join(", "));
        }
    }
    // The walk found the spec's tables, not nothing.
    let names: BTreeSet<String> = tables.iter().map(|(p, _)| dotted(p)).collect();
    for t in [
        "",
        "load",
        "load.request",
        "axis",
        "slo",
        "dependency",
        "service",
        "performance",
    ] {
        assert!(
            names.contains(t),
            "the parser's table [{t}] was not found: {names:?}"
        );
    }
    let reference = std::fs::read_to_string(repo().join("docs/reference/spec.md"))
        .expect("docs/reference/spec.md");
    let mut missing = Vec::new();
    for (path, keys) in &tables {
        let table = dotted(path);
        let heading = if table.is_empty() {
            "top level"
        } else {
            &table
        };
        let Some(text) = section(&reference, &table) else {
            missing.push(format!("no heading for [{heading}]"));
            continue;
        };
        for k in keys {
            if !text.contains(&format!("`{k}`")) {
                missing.push(format!("[{heading}] {k}"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "keys the parser accepts that docs/reference/spec.md does not describe under their table:\n  {}",
        missing.join("\n  ")
    );
}

/// Every ```toml block of `text`, with its first line number.
fn toml_blocks(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut current: Option<(usize, String)> = None;
    for (i, line) in text.lines().enumerate() {
        match &mut current {
            None if line.trim_start().starts_with("```toml") => {
                current = Some((i + 2, String::new()))
            }
            Some(_) if line.trim_start().starts_with("```") => {
                out.extend(current.take());
            }
            Some((_, body)) => {
                body.push_str(line);
                body.push('\n');
            }
            None => {}
        }
    }
    out
}

/// Markdown files the docs consist of: the README and everything under `docs/`.
fn doc_files() -> Vec<PathBuf> {
    let mut files = vec![repo().join("README.md")];
    let mut dirs = vec![repo().join("docs")];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "md") {
                files.push(p);
            }
        }
    }
    files.sort();
    files
}

/// The (table path, key) pairs of a TOML value, arrays of tables stepped into.
fn keys_of(value: &toml::Value, path: &mut Vec<String>, out: &mut Vec<(String, String)>) {
    match value {
        toml::Value::Table(t) => {
            for (k, v) in t {
                out.push((path.join("."), k.clone()));
                path.push(k.clone());
                keys_of(v, path, out);
                path.pop();
            }
        }
        toml::Value::Array(items) => {
            for item in items.iter().filter(|i| i.is_table()) {
                keys_of(item, path, out);
            }
        }
        _ => {}
    }
}

#[test]
fn every_toml_block_in_the_docs_is_toml_the_parser_accepts() {
    let tables = tables();
    let mut problems = Vec::new();
    let mut blocks = 0;
    for file in doc_files() {
        let text = std::fs::read_to_string(&file).unwrap();
        let name = file
            .strip_prefix(repo())
            .unwrap_or(&file)
            .display()
            .to_string();
        for (line, block) in toml_blocks(&text) {
            blocks += 1;
            let value: toml::Value = match toml::from_str(&block) {
                Ok(v) => v,
                Err(e) => {
                    problems.push(format!("{name}:{line}: not TOML: {e}"));
                    continue;
                }
            };
            let mut found = Vec::new();
            keys_of(&value, &mut Vec::new(), &mut found);
            for (table, key) in found {
                // A table of fixed keys must take this one; maps of names (env, headers,
                // workload, expect, …) take any.
                if let Some((_, keys)) = tables.iter().find(|(p, _)| dotted(p) == table)
                    && !keys.contains(&key)
                {
                    problems.push(format!("{name}:{line}: [{table}] takes no key `{key}`"));
                }
            }
            if value.get("artifact").is_some() && value.get("claim").is_some() {
                let spec_path = file.with_file_name("qualify.toml");
                if let Err(e) = Spec::parse(&block, &spec_path) {
                    problems.push(format!("{name}:{line}: the spec does not check:\n{e}"));
                }
            }
        }
    }
    assert!(blocks >= 10, "only {blocks} TOML blocks found in the docs");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
