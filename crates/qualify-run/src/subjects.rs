//! What a receipt names as the artifact: its own files, never its interpreter, read once after
//! the build and checked again before the receipt is written ([`ArtifactFiles::unchanged`]). The program the
//! command runs (the built binary), or — when the command's first word is an interpreter
//! (`python3 front.py {port}`) — the script it runs, resolved against the workdir; the
//! interpreter goes into the environment's tools. Plus one digest over the workdir's files
//! ([`tree_digest`]): its git-tracked files when git tracks any there, else all its regular
//! files but `.git/` and `.qualify/`. `qualify run` records them as subjects; `qualify verify
//! --artifact` recomputes any of them (a file, or a directory's tree digest).

use std::path::{Path, PathBuf};
use std::process::Command;

use qualify_evidence as ev;
use qualify_spec::{CommandLine, Spec};
use qualify_trace::coverage::is_interpreter;
use qualify_trace::shell::{basename, simple_commands};

/// The most files, and bytes, a tree digest reads before giving up (a workdir that large is
/// named by its program and its spec alone).
const MAX_TREE_FILES: usize = 50_000;
const MAX_TREE_BYTES: u64 = 2 << 30;

/// Why a directory has no tree digest (the receipt then names the artifact by its program and
/// spec alone; `qualify verify --artifact DIR` refuses).
#[derive(Debug, thiserror::Error)]
pub enum TreeError {
    #[error("cannot read {}: {source}", dir.display())]
    ReadDir {
        dir: PathBuf,
        source: std::io::Error,
    },
    /// A file (relative to the directory) that cannot be read.
    #[error("cannot read {file}: {source}")]
    ReadFile {
        file: String,
        source: std::io::Error,
    },
    #[error("more than {MAX_TREE_FILES} files")]
    TooManyFiles,
    #[error("more than {} GiB of files", MAX_TREE_BYTES >> 30)]
    TooManyBytes,
}

/// The artifact's own files as the run records them, read once after the build (before the
/// first probe of the artifact): what the receipt names is what the cells ran.
pub struct ArtifactFiles {
    pub executable: Option<ev::FileDigest>,
    pub interpreter: Option<ev::Interpreter>,
    pub tree: Option<ev::TreeDigest>,
    /// The tree's files (relative) and their digests, to find what changed.
    tree_files: Vec<Entry>,
}

/// A file of the artifact that is not what it was when the run started.
#[derive(Debug, thiserror::Error)]
#[error("{file} {how} during the run")]
pub struct Changed {
    pub file: String,
    /// `changed` or `was removed`.
    pub how: &'static str,
}

impl ArtifactFiles {
    /// `python3 --version` for the environment's tools, when the command names an interpreter.
    pub fn interpreter_tool(&self) -> Option<String> {
        self.interpreter
            .as_ref()
            .map(|i| format!("{} --version", i.command))
    }
}

/// The command's words (a shell command's last simple command that is not a `cd`).
fn command_words(spec: &Spec) -> Vec<String> {
    match &spec.artifact.command {
        CommandLine::Argv(v) => v.clone(),
        CommandLine::Shell(s) => simple_commands(s)
            .into_iter()
            .rev()
            .find(|c| c.program() != Some("cd"))
            .map(|c| c.words)
            .unwrap_or_default(),
    }
}

/// `word` as a file: relative to the workdir when it has a `/` or names a file there, else on
/// `PATH`.
fn resolve(word: &str, workdir: &Path, path_lookup: bool) -> Option<PathBuf> {
    if word.contains('/') {
        let p = workdir.join(word.trim_start_matches("./"));
        return p.is_file().then_some(p);
    }
    let local = workdir.join(word);
    if !path_lookup && local.is_file() {
        return Some(local);
    }
    if !path_lookup {
        return None;
    }
    let paths = std::env::var_os("PATH")?;
    std::env::split_paths(&paths)
        .map(|d| d.join(word))
        .find(|p| p.is_file())
}

fn digest(path: &Path) -> Option<ev::FileDigest> {
    let bytes = std::fs::read(path).ok()?;
    Some(ev::FileDigest {
        path: path.display().to_string(),
        sha256: ev::sha256_hex(&bytes),
    })
}

/// The artifact's files for `spec`, read now (after the build).
pub fn artifact_files(spec: &Spec) -> ArtifactFiles {
    let workdir = &spec.artifact.workdir;
    let words = command_words(spec);
    let first = words.first().cloned().unwrap_or_default();
    let mut interpreter = None;
    let mut executable = None;
    if !first.is_empty() && !first.contains('{') {
        if is_interpreter(basename(&first)) {
            interpreter = Some(ev::Interpreter {
                command: first.clone(),
                path: resolve(&first, workdir, !first.contains('/'))
                    .map(|p| p.display().to_string()),
            });
            // The script: the first argument that is not an option (`-m module` names none).
            for w in words.iter().skip(1) {
                if w == "-m" || w == "-c" {
                    break;
                }
                if w.starts_with('-') {
                    continue;
                }
                if !w.contains('{') {
                    executable = resolve(w, workdir, false).and_then(|p| digest(&p));
                }
                break;
            }
        } else {
            executable = resolve(&first, workdir, true).and_then(|p| digest(&p));
        }
    }
    let (tree, tree_files) = match tree_entries(workdir) {
        Ok((files, method)) => (Some(summarise(workdir, &files, method)), files),
        Err(why) => {
            eprintln!(
                "qualify: warning: no digest of the workdir {} in the receipt: {why}",
                workdir.display()
            );
            (None, Vec::new())
        }
    };
    ArtifactFiles {
        executable,
        interpreter,
        tree,
        tree_files,
    }
}

impl ArtifactFiles {
    /// Check that the program (or script) and every file of the workdir digested at the start
    /// are still what they were: the first that is not is named. Files under `ignore` (what
    /// qualify itself writes into the workdir: write histories, the receipt) are skipped; new
    /// files are not part of what the receipt names.
    pub fn unchanged(&self, spec: &Spec, ignore: &[PathBuf]) -> Result<(), Changed> {
        if let Some(exe) = &self.executable {
            match std::fs::read(&exe.path) {
                Ok(bytes) if ev::sha256_hex(&bytes) == exe.sha256 => {}
                Ok(_) => {
                    return Err(Changed {
                        file: exe.path.clone(),
                        how: "changed",
                    });
                }
                Err(_) => {
                    return Err(Changed {
                        file: exe.path.clone(),
                        how: "was removed",
                    });
                }
            }
        }
        let workdir = &spec.artifact.workdir;
        for (rel, digest) in &self.tree_files {
            let path = workdir.join(rel);
            if ignore.iter().any(|i| path.starts_with(i)) {
                continue;
            }
            match std::fs::read(&path) {
                Ok(bytes) if ev::sha256_hex(&bytes) == *digest => {}
                Ok(_) => {
                    return Err(Changed {
                        file: path.display().to_string(),
                        how: "changed",
                    });
                }
                Err(_) => {
                    return Err(Changed {
                        file: path.display().to_string(),
                        how: "was removed",
                    });
                }
            }
        }
        Ok(())
    }
}

/// Files of `dir` (relative, `/`-separated): git-tracked ones in a git work tree, else every
/// regular file but `.git/` and `.qualify/`.
fn tree_files(dir: &Path) -> Result<(Vec<String>, &'static str), TreeError> {
    let git = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["ls-files", "-z", "--cached", "--", "."])
        .output();
    if let Ok(out) = git
        && out.status.success()
    {
        let files: Vec<String> = out
            .stdout
            .split(|b| *b == 0)
            .filter(|p| !p.is_empty())
            .map(|p| String::from_utf8_lossy(p).into_owned())
            .filter(|p| dir.join(p).is_file())
            .collect();
        // A directory inside a work tree whose files git does not track (an ignored build
        // directory) is digested by its files.
        if !files.is_empty() {
            return Ok((files, "git"));
        }
    }
    let mut files = Vec::new();
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        let entries = std::fs::read_dir(dir.join(&rel)).map_err(|source| TreeError::ReadDir {
            dir: dir.join(&rel),
            source,
        })?;
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let Ok(kind) = e.file_type() else { continue };
            let child = rel.join(&name);
            if kind.is_dir() {
                if rel.as_os_str().is_empty() && (name == ".git" || name == ".qualify") {
                    continue;
                }
                stack.push(child);
            } else if kind.is_file() {
                files.push(child.to_string_lossy().into_owned());
                if files.len() > MAX_TREE_FILES {
                    return Err(TreeError::TooManyFiles);
                }
            }
        }
    }
    Ok((files, "files"))
}

/// One digest over `dir`'s files: sha256 of `<sha256>  <path>\n` per file, sorted by path —
/// what `git ls-files | LC_ALL=C sort | xargs sha256sum | sha256sum` prints in a git work tree.
pub fn tree_digest(dir: &Path) -> Result<ev::TreeDigest, TreeError> {
    let (files, method) = tree_entries(dir)?;
    Ok(summarise(dir, &files, method))
}

/// A file of a tree (relative to it) and its sha256.
type Entry = (String, String);

/// Every file of `dir` (relative, sorted) with its sha256, and how they were listed.
fn tree_entries(dir: &Path) -> Result<(Vec<Entry>, &'static str), TreeError> {
    let (mut files, method) = tree_files(dir)?;
    if files.len() > MAX_TREE_FILES {
        return Err(TreeError::TooManyFiles);
    }
    files.sort();
    let mut out = Vec::with_capacity(files.len());
    let mut bytes = 0u64;
    for f in files {
        let content = std::fs::read(dir.join(&f)).map_err(|source| TreeError::ReadFile {
            file: f.clone(),
            source,
        })?;
        bytes += content.len() as u64;
        if bytes > MAX_TREE_BYTES {
            return Err(TreeError::TooManyBytes);
        }
        out.push((f, ev::sha256_hex(&content)));
    }
    Ok((out, method))
}

fn summarise(dir: &Path, files: &[Entry], method: &str) -> ev::TreeDigest {
    let mut lines = String::new();
    for (f, digest) in files {
        lines.push_str(digest);
        lines.push_str("  ");
        lines.push_str(f);
        lines.push('\n');
    }
    ev::TreeDigest {
        path: dir.display().to_string(),
        sha256: ev::sha256_hex(lines.as_bytes()),
        method: method.to_string(),
        files: files.len() as u64,
    }
}

/// The artifact in hand is not what the receipt names.
#[derive(Debug, thiserror::Error)]
#[error("{} has sha256:{sha256}, which no subject of the receipt it could be has ({candidates})", path.display())]
pub struct NotNamed {
    pub path: PathBuf,
    pub sha256: String,
    /// The subjects it was compared with (or that there is none of its kind).
    pub candidates: String,
}

/// The artifact in hand (`--artifact PATH` of `gate` and `verify`): a file is the program or
/// script, a directory the workdir (its tree digest).
pub struct InHand {
    pub path: PathBuf,
    pub sha256: String,
    pub directory: bool,
}

impl InHand {
    /// Digest `path` as `qualify run` digested its subjects. Errors name the path.
    pub fn read(path: &Path) -> Result<InHand, crate::error::Error> {
        if path.is_dir() {
            let tree = tree_digest(path).map_err(|e| {
                crate::error::Error::input_only(format!(
                    "--artifact {}: cannot digest the directory: {e}",
                    path.display()
                ))
            })?;
            return Ok(InHand {
                path: path.to_path_buf(),
                sha256: tree.sha256,
                directory: true,
            });
        }
        let bytes = std::fs::read(path).map_err(|e| {
            crate::error::Error::input_only(format!(
                "--artifact {}: cannot read it: {e}",
                path.display()
            ))
        })?;
        Ok(InHand {
            path: path.to_path_buf(),
            sha256: ev::sha256_hex(&bytes),
            directory: false,
        })
    }

    /// The subject of `statement` this is: a directory only the workdir's tree (`DIR/`), a
    /// file only the program or script — never the spec (the last subject), whose digest says
    /// nothing about the artifact. `Err` lists the subjects it could have been.
    pub fn subject(&self, statement: &serde_json::Value) -> Result<String, NotNamed> {
        let subjects = statement
            .get("subject")
            .and_then(serde_json::Value::as_array)
            .cloned()
            .unwrap_or_default();
        let n = subjects.len();
        let artifact: Vec<(String, String)> = subjects
            .iter()
            .enumerate()
            .filter_map(|(i, s)| {
                let name = s.get("name")?.as_str()?.to_string();
                let digest = s.pointer("/digest/sha256")?.as_str()?.to_string();
                let is_tree = name.ends_with('/');
                let kind_fits = if self.directory {
                    is_tree
                } else {
                    !is_tree && i + 1 < n
                };
                kind_fits.then_some((name, digest))
            })
            .collect();
        match artifact.iter().find(|(_, d)| *d == self.sha256) {
            Some((name, _)) => Ok(name.clone()),
            None => Err(NotNamed {
                path: self.path.clone(),
                sha256: self.sha256.clone(),
                candidates: if artifact.is_empty() {
                    format!(
                        "the receipt names no {} of the artifact",
                        if self.directory {
                            "workdir"
                        } else {
                            "program or script"
                        }
                    )
                } else {
                    artifact
                        .iter()
                        .map(|(n, d)| format!("{n} sha256:{d}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                },
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tree_digest_is_sha256sum_of_the_sorted_files() {
        let dir = std::env::temp_dir().join(format!("qualify-tree-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("src")).unwrap();
        std::fs::create_dir_all(dir.join(".qualify")).unwrap();
        std::fs::write(dir.join("b.txt"), "b").unwrap();
        std::fs::write(dir.join("src/a.c"), "a").unwrap();
        std::fs::write(dir.join(".qualify/ledger"), "changes every run").unwrap();
        let t = tree_digest(&dir).unwrap();
        // Not a git work tree (under /tmp): every regular file but .qualify/.
        assert_eq!((t.method.as_str(), t.files), ("files", 2));
        let lines = format!(
            "{}  b.txt\n{}  src/a.c\n",
            ev::sha256_hex(b"b"),
            ev::sha256_hex(b"a")
        );
        assert_eq!(t.sha256, ev::sha256_hex(lines.as_bytes()));
        std::fs::write(dir.join(".qualify/ledger"), "changed").unwrap();
        assert_eq!(tree_digest(&dir).unwrap().sha256, t.sha256);
        std::fs::write(dir.join("src/a.c"), "a2").unwrap();
        assert_ne!(tree_digest(&dir).unwrap().sha256, t.sha256);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Why a directory has no tree digest, as the warning and `qualify verify` say it.
    #[test]
    fn a_directory_that_cannot_be_digested_says_why() {
        let missing = Path::new("/nonexistent/qualify-tree");
        assert_eq!(
            tree_digest(missing).unwrap_err().to_string(),
            "cannot read /nonexistent/qualify-tree/: No such file or directory (os error 2)"
        );
        assert_eq!(TreeError::TooManyFiles.to_string(), "more than 50000 files");
        assert_eq!(
            TreeError::TooManyBytes.to_string(),
            "more than 2 GiB of files"
        );
    }
}
