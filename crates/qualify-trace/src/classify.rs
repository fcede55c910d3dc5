//! Which commands were test or build runs: the common runners (`cargo test`, `pytest`,
//! `go test`, `ctest`, `make test`, `npm test`, …) and compilers, plus the spec's own
//! `[functional] command` and `build` (a recorded command that starts with the same words).

use serde::{Deserialize, Serialize};

use crate::shell::{Simple, basename, simple_commands};

/// What a recorded command was, most significant first when a line holds several.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// The spec's `[functional] command`.
    Functional,
    /// A test runner.
    Test,
    /// The artifact itself (its command matched the spec's command template).
    Artifact,
    /// A build or compile step (or the spec's `build`).
    Build,
    Other,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Functional => "functional",
            Kind::Test => "test",
            Kind::Artifact => "artifact",
            Kind::Build => "build",
            Kind::Other => "other",
        }
    }

    /// A test run: a runner or the spec's functional check.
    pub fn is_test(self) -> bool {
        matches!(self, Kind::Functional | Kind::Test)
    }
}

/// The spec's own commands, as words of their main simple command.
#[derive(Debug, Clone, Default)]
pub struct Known {
    pub functional: Option<Vec<String>>,
    pub build: Option<Vec<String>>,
}

impl Known {
    /// The words of the last simple command of `line` that is not a `cd`.
    pub fn words_of(line: &str) -> Option<Vec<String>> {
        simple_commands(line)
            .into_iter()
            .rev()
            .find(|s| s.program() != Some("cd"))
            .map(|s| s.words)
    }
}

/// `simple` starts with `known`'s words (programs compared by file name).
fn starts_with(simple: &Simple, known: &[String]) -> bool {
    !known.is_empty()
        && simple.words.len() >= known.len()
        && simple
            .words
            .iter()
            .zip(known)
            .enumerate()
            .all(|(i, (a, b))| {
                if i == 0 {
                    basename(a) == basename(b)
                } else {
                    a == b
                }
            })
}

/// What one simple command is, leaving the artifact to the coverage matcher.
pub fn kind(simple: &Simple, known: &Known) -> Kind {
    if known
        .functional
        .as_deref()
        .is_some_and(|f| starts_with(simple, f))
    {
        return Kind::Functional;
    }
    if is_test(simple) {
        return Kind::Test;
    }
    if known
        .build
        .as_deref()
        .is_some_and(|b| starts_with(simple, b))
        || is_build(simple)
    {
        return Kind::Build;
    }
    Kind::Other
}

/// The words after the program, without a leading `+toolchain` (`cargo +nightly test`).
fn args(simple: &Simple) -> Vec<&str> {
    simple
        .words
        .iter()
        .skip(1)
        .map(String::as_str)
        .filter(|w| !w.starts_with('+'))
        .collect()
}

fn is_test(simple: &Simple) -> bool {
    let Some(program) = simple.program() else {
        return false;
    };
    let a = args(simple);
    let first = a.first().copied().unwrap_or("");
    let target = |names: &[&str]| a.iter().any(|w| names.contains(w));
    match program {
        "cargo" => matches!(first, "test" | "nextest" | "t"),
        "pytest" | "py.test" | "ctest" | "tox" | "nox" | "jest" | "vitest" | "mocha" | "rspec"
        | "phpunit" | "prove" => true,
        "go" | "dotnet" | "swift" | "meson" | "zig" => first == "test",
        "make" | "gmake" | "ninja" => target(&["test", "tests", "check"]),
        "npm" | "yarn" | "pnpm" | "bun" => {
            matches!(first, "test" | "t")
                || (first == "run" && matches!(a.get(1).copied(), Some("test" | "tests")))
        }
        "npx" => matches!(first, "jest" | "vitest" | "mocha"),
        "mvn" | "mvnw" | "gradle" | "gradlew" => target(&["test", "verify", "check"]),
        _ if program.starts_with("python") => a
            .windows(2)
            .any(|w| w == ["-m", "pytest"] || w == ["-m", "unittest"]),
        "uv" | "poetry" | "pipenv" | "hatch" => {
            first == "run" && a.get(1).is_some_and(|w| basename(w) == "pytest")
        }
        _ => false,
    }
}

fn is_build(simple: &Simple) -> bool {
    let Some(program) = simple.program() else {
        return false;
    };
    let a = args(simple);
    let first = a.first().copied().unwrap_or("");
    match program {
        "cargo" => matches!(first, "build" | "b" | "rustc"),
        "make" | "gmake" | "ninja" => true,
        "cmake" => a.contains(&"--build"),
        "cc" | "gcc" | "g++" | "c++" | "clang" | "clang++" | "rustc" | "nvcc" | "mpicc"
        | "mpicxx" | "mpic++" | "gfortran" | "javac" | "tsc" => true,
        "go" => matches!(first, "build" | "install"),
        "npm" | "yarn" | "pnpm" | "bun" => {
            first == "build" || (first == "run" && a.get(1) == Some(&"build"))
        }
        "mvn" | "mvnw" => a
            .iter()
            .any(|w| matches!(*w, "package" | "compile" | "install")),
        "gradle" | "gradlew" => a.iter().any(|w| matches!(*w, "build" | "assemble")),
        "dotnet" | "swift" | "zig" => first == "build",
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(line: &str, known: &Known) -> Kind {
        simple_commands(line)
            .iter()
            .map(|s| kind(s, known))
            .min()
            .unwrap_or(Kind::Other)
    }

    #[test]
    fn runners_compilers_and_the_specs_own_commands() {
        let none = Known::default();
        for t in [
            "cargo test -p x",
            "cargo +nightly nextest run",
            "python3 -m pytest -q",
            "pytest tests/",
            "go test ./...",
            "ctest --output-on-failure",
            "make test",
            "npm test",
            "yarn run test",
            "uv run pytest",
        ] {
            assert_eq!(k(t, &none), Kind::Test, "{t}");
        }
        for b in [
            "cargo build --release",
            "cc -O2 -o t t.c",
            "make",
            "go build ./cmd/x",
            "cmake --build build",
        ] {
            assert_eq!(k(b, &none), Kind::Build, "{b}");
        }
        for o in ["ls -la", "git status", "cat Makefile", "python3 app.py"] {
            assert_eq!(k(o, &none), Kind::Other, "{o}");
        }
        let known = Known {
            functional: Known::words_of("./transfer --check"),
            build: Known::words_of("cc -O2 -pthread -o transfer transfer.c"),
        };
        assert_eq!(k("cd ex && ./transfer --check", &known), Kind::Functional);
        assert_eq!(k("ex/transfer --check -v", &known), Kind::Functional);
        assert_eq!(k("./transfer --threads 1", &known), Kind::Other);
        assert_eq!(
            k(
                "cc -O2 -pthread -o transfer transfer.c && ./transfer --check",
                &known
            ),
            Kind::Functional
        );
    }
}
