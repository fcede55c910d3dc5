//! The environment fingerprint: which machine, OS, toolchain, sources and dependencies produced a
//! run's evidence. Collected once per run from `/proc`, `/etc/os-release`, `/sys/fs/cgroup`, the
//! configured `--version` commands and `git`; every fact that could not be read is `null`, never
//! guessed. Environment variables are recorded with the values of secret-looking names
//! ([`is_secret_name`]) and of URLs with embedded credentials replaced by `<redacted>`.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::sha256_hex;

/// What replaces a secret value.
pub const REDACTED: &str = "<redacted>";

/// Tool commands recorded when the spec names none (each only when the tool is on PATH).
pub const DEFAULT_TOOLS: &[&str] = &["cc --version", "python3 --version", "rustc --version"];

/// Name fragments (upper case) that mark an environment variable as secret.
pub const SECRET_NAME_PARTS: &[&str] = &[
    "TOKEN",
    "SECRET",
    "KEY",
    "PASSWORD",
    "PASSWD",
    "PASSPHRASE",
    "CREDENTIAL",
    "AUTH",
    "PRIVATE",
    "SESSION",
    "COOKIE",
    "SIGNATURE",
    "CERT",
    "DSN",
    // QUALIFY_HOLDOUT: where held-out checks live must not reach the builder.
    "HOLDOUT",
];

/// Lockfile names whose digests are recorded (in the artifact's workdir).
pub const LOCKFILES: &[&str] = &[
    "Cargo.lock",
    "package-lock.json",
    "yarn.lock",
    "pnpm-lock.yaml",
    "poetry.lock",
    "Pipfile.lock",
    "uv.lock",
    "go.sum",
    "Gemfile.lock",
];

/// The environment of one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fingerprint {
    pub os: Os,
    /// The architecture qualify runs as (e.g. `x86_64`).
    pub architecture: String,
    pub cpu_model: Option<String>,
    pub cores_online: Option<u64>,
    pub cores_allowed: Option<u64>,
    pub memory_bytes: Option<u64>,
    /// `v2` (unified), `hybrid` (v1 controllers + v2), `v1`, or `none`.
    pub cgroup_version: String,
    /// The enforcement backend the probes used.
    pub backend: String,
    pub tools: Vec<ToolVersion>,
    /// Git state of the artifact's workdir; `null` when it is not in a git work tree.
    pub git: Option<GitState>,
    pub lockfiles: Vec<LockfileDigest>,
    pub artifact_sha256: Option<String>,
    pub spec_sha256: String,
    pub qualify_version: String,
    /// Environment variables of the qualify process, secrets redacted.
    pub env: BTreeMap<String, String>,
    /// Names whose values were redacted.
    pub redacted: Vec<String>,
}

/// Operating system and kernel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Os {
    /// `PRETTY_NAME` of /etc/os-release.
    pub name: Option<String>,
    pub id: Option<String>,
    pub version_id: Option<String>,
    /// e.g. `Linux`.
    pub kernel: Option<String>,
    pub kernel_release: Option<String>,
    pub kernel_version: Option<String>,
}

/// One `--version` command and what it printed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolVersion {
    pub command: String,
    /// The first non-empty line of its output; `null` when it did not run or failed.
    pub version: Option<String>,
    /// `ok`, `not found`, or why it failed.
    pub status: String,
}

/// Git state of a work tree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GitState {
    pub commit: Option<String>,
    pub tree: Option<String>,
    /// Tracked or untracked changes exist.
    pub dirty: Option<bool>,
}

/// A lockfile and its sha256.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LockfileDigest {
    pub path: String,
    pub sha256: String,
}

/// What the caller knows that this module does not read itself.
#[derive(Debug, Clone)]
pub struct FingerprintInputs {
    pub workdir: PathBuf,
    /// `--version` commands from the spec; `None` means [`DEFAULT_TOOLS`] (those present).
    pub tools: Option<Vec<String>>,
    pub artifact_sha256: Option<String>,
    pub spec_sha256: String,
    pub qualify_version: String,
    pub backend: String,
    /// More `--version` commands recorded after the spec's or default tools, when not already
    /// among them: the interpreter the artifact's command runs (`python3 --version`).
    pub extra_tools: Vec<String>,
}

/// Collect the fingerprint of this machine and process.
pub fn collect(inputs: &FingerprintInputs) -> Fingerprint {
    let (env, redacted) = redact_env(std::env::vars_os().map(|(k, v)| {
        (
            k.to_string_lossy().into_owned(),
            v.to_string_lossy().into_owned(),
        )
    }));
    let mut tools: Vec<ToolVersion> = match &inputs.tools {
        Some(list) => list
            .iter()
            .map(|c| tool_version(c, &inputs.workdir))
            .collect(),
        None => DEFAULT_TOOLS
            .iter()
            .map(|c| tool_version(c, &inputs.workdir))
            .filter(|t| t.status != "not found")
            .collect(),
    };
    for extra in &inputs.extra_tools {
        if !tools.iter().any(|t| &t.command == extra) {
            tools.push(tool_version(extra, &inputs.workdir));
        }
    }
    Fingerprint {
        os: os(),
        architecture: std::env::consts::ARCH.to_string(),
        cpu_model: cpu_model(),
        cores_online: read_trimmed("/sys/devices/system/cpu/online")
            .as_deref()
            .and_then(count_cpu_list),
        cores_allowed: allowed_cores(),
        memory_bytes: memory_bytes(),
        cgroup_version: cgroup_version().to_string(),
        backend: inputs.backend.clone(),
        tools,
        git: git_state(&inputs.workdir),
        lockfiles: lockfiles(&inputs.workdir),
        artifact_sha256: inputs.artifact_sha256.clone(),
        spec_sha256: inputs.spec_sha256.clone(),
        qualify_version: inputs.qualify_version.clone(),
        env,
        redacted,
    }
}

/// Whether an environment variable's name marks its value as secret (case-insensitive match of
/// any of [`SECRET_NAME_PARTS`]).
pub fn is_secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    SECRET_NAME_PARTS.iter().any(|p| upper.contains(p))
}

/// Whether a value carries credentials in a URL (`scheme://user:password@host`).
pub fn has_url_credentials(value: &str) -> bool {
    value.split("://").skip(1).any(|rest| {
        let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
        authority
            .rsplit_once('@')
            .is_some_and(|(userinfo, _)| userinfo.contains(':'))
    })
}

/// Environment variables with secret values replaced by [`REDACTED`]; returns the map and the
/// redacted names.
pub fn redact_env(
    vars: impl IntoIterator<Item = (String, String)>,
) -> (BTreeMap<String, String>, Vec<String>) {
    let mut env = BTreeMap::new();
    let mut redacted = Vec::new();
    for (name, value) in vars {
        if is_secret_name(&name) || has_url_credentials(&value) {
            redacted.push(name.clone());
            env.insert(name, REDACTED.to_string());
        } else {
            env.insert(name, value);
        }
    }
    redacted.sort();
    (env, redacted)
}

/// A command line with its secrets replaced by [`REDACTED`], by the rules the environment uses:
/// the value of an assignment whose name looks secret (`API_TOKEN=…`, `export DB_PASSWORD=…`),
/// of an option whose name looks secret (`--token …`, `--password=…`, `-H "Authorization:
/// Bearer …"`), and the password of a URL (`postgres://app:…@db`). Returns the text and
/// whether anything was replaced. Words are found by whitespace; quoting is kept as written.
pub fn redact_command(command: &str) -> (String, bool) {
    let mut out = String::with_capacity(command.len());
    let mut changed = false;
    // The next word is the value of a secret option (or header).
    let mut secret_next = false;
    let mut rest = command;
    while !rest.is_empty() {
        let space = rest
            .find(|c: char| !c.is_whitespace())
            .unwrap_or(rest.len());
        out.push_str(&rest[..space]);
        rest = &rest[space..];
        if rest.is_empty() {
            break;
        }
        let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        let word = &rest[..end];
        rest = &rest[end..];
        let bare = word.trim_matches(|c| c == '"' || c == '\'');
        if secret_next {
            // `Authorization: Bearer <token>`: keep the scheme, redact what follows it.
            let scheme = matches!(
                bare.to_ascii_lowercase().as_str(),
                "bearer" | "basic" | "token" | "digest"
            );
            if scheme {
                out.push_str(word);
                continue;
            }
            secret_next = false;
            changed = true;
            out.push_str(&quoted_like(word, REDACTED));
            continue;
        }
        let (redacted, next) = redact_word(word, bare);
        changed |= redacted.as_deref().is_some_and(|r| r != word);
        secret_next = next;
        out.push_str(redacted.as_deref().unwrap_or(word));
    }
    (out, changed)
}

/// One word: its redacted form (if it changes) and whether the next word is a secret value.
fn redact_word(word: &str, bare: &str) -> (Option<String>, bool) {
    if let Some((name, _)) = bare.split_once('=') {
        let flag = name.trim_start_matches('-');
        let is_name = !flag.is_empty()
            && flag
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if is_name && is_secret_name(&flag.replace('-', "_")) {
            return (
                Some(quoted_like(word, &format!("{name}={REDACTED}"))),
                false,
            );
        }
    }
    if has_url_credentials(bare) {
        return (Some(redact_url_passwords(word)), false);
    }
    if let Some(flag) = bare.strip_prefix('-') {
        let flag = flag.trim_start_matches('-');
        if !flag.is_empty() && flag.len() > 1 && is_secret_name(&flag.replace('-', "_")) {
            return (None, true);
        }
    }
    if let Some(header) = bare.strip_suffix(':')
        && is_secret_name(&header.replace('-', "_"))
    {
        return (None, true);
    }
    (None, false)
}

/// `replacement` with the quotes `word` opened and closed with.
fn quoted_like(word: &str, replacement: &str) -> String {
    let lead: String = word
        .chars()
        .take_while(|c| *c == '"' || *c == '\'')
        .collect();
    let trail: String = word
        .chars()
        .rev()
        .take_while(|c| *c == '"' || *c == '\'')
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    if lead.len() >= word.len() {
        return replacement.to_string();
    }
    format!("{lead}{replacement}{trail}")
}

/// Every `scheme://user:password@` in `text` with the password redacted.
fn redact_url_passwords(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("://") {
        out.push_str(&rest[..at + 3]);
        rest = &rest[at + 3..];
        let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let authority = &rest[..authority_end];
        if let Some((userinfo, host)) = authority.rsplit_once('@')
            && let Some((user, _)) = userinfo.split_once(':')
        {
            out.push_str(&format!("{user}:{REDACTED}@{host}"));
            rest = &rest[authority_end..];
        }
    }
    out.push_str(rest);
    out
}

fn read_trimmed(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

fn os() -> Os {
    let release = std::fs::read_to_string("/etc/os-release")
        .or_else(|_| std::fs::read_to_string("/usr/lib/os-release"))
        .unwrap_or_default();
    let field = |key: &str| {
        release.lines().find_map(|l| {
            let (k, v) = l.split_once('=')?;
            (k.trim() == key).then(|| v.trim().trim_matches('"').to_string())
        })
    };
    Os {
        name: field("PRETTY_NAME"),
        id: field("ID"),
        version_id: field("VERSION_ID"),
        kernel: read_trimmed("/proc/sys/kernel/ostype"),
        kernel_release: read_trimmed("/proc/sys/kernel/osrelease"),
        kernel_version: read_trimmed("/proc/sys/kernel/version"),
    }
}

fn cpu_model() -> Option<String> {
    let text = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        let k = k.trim();
        (k == "model name" || k == "Model" || k == "cpu model" || k == "Processor")
            .then(|| v.trim().to_string())
    })
}

/// Count CPUs in a list like `0-3,6,8-9`.
pub fn count_cpu_list(list: &str) -> Option<u64> {
    let mut n = 0u64;
    for part in list.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (u64, u64) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
                n += b.checked_sub(a)? + 1;
            }
            None => {
                part.trim().parse::<u64>().ok()?;
                n += 1;
            }
        }
    }
    Some(n)
}

fn allowed_cores() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let list = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))?;
    count_cpu_list(list)
}

fn memory_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

fn cgroup_version() -> &'static str {
    let root = Path::new("/sys/fs/cgroup");
    if root.join("cgroup.controllers").exists() {
        "v2"
    } else if root.join("unified").join("cgroup.controllers").exists() {
        "hybrid"
    } else if root.join("memory").exists() || root.join("cpu").exists() {
        "v1"
    } else {
        "none"
    }
}

/// Why a short command (a tool's `--version`, `git`) produced nothing: the tool's `status` in
/// the fingerprint.
#[derive(Debug, thiserror::Error)]
enum RunError {
    #[error("empty command")]
    Empty,
    #[error("not found")]
    NotFound,
    #[error("cannot start: {0}")]
    Start(#[source] std::io::Error),
    #[error("no answer within {}s", .0.as_secs())]
    Timeout(Duration),
    #[error("cannot wait: {0}")]
    Wait(#[source] std::io::Error),
    #[error("exited with {0}")]
    Exited(std::process::ExitStatus),
}

/// Run a short command with a deadline; `Err` says why it produced nothing.
fn run_short(argv: &[&str], dir: Option<&Path>, limit: Duration) -> Result<String, RunError> {
    let (program, args) = argv.split_first().ok_or(RunError::Empty)?;
    let mut cmd = Command::new(program);
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(d) = dir {
        cmd.current_dir(d);
    }
    let mut child = cmd.spawn().map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            RunError::NotFound
        } else {
            RunError::Start(e)
        }
    })?;
    let mut stdout = child.stdout.take();
    let mut stderr = child.stderr.take();
    let out_thread = std::thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(s) = stdout.as_mut() {
            let _ = s.take(1 << 20).read_to_end(&mut buf);
        }
        buf
    });
    let err_thread = std::thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(s) = stderr.as_mut() {
            let _ = s.take(1 << 20).read_to_end(&mut buf);
        }
        buf
    });
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() > limit => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(RunError::Timeout(limit));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            Err(e) => return Err(RunError::Wait(e)),
        }
    };
    let out = out_thread.join().unwrap_or_default();
    let err = err_thread.join().unwrap_or_default();
    if !status.success() {
        return Err(RunError::Exited(status));
    }
    let mut text = String::from_utf8_lossy(&out).into_owned();
    if text.trim().is_empty() {
        text = String::from_utf8_lossy(&err).into_owned();
    }
    Ok(text)
}

/// Run one `--version` command (split on whitespace, no shell) in `dir` and keep its first line.
pub fn tool_version(command: &str, dir: &Path) -> ToolVersion {
    let argv: Vec<&str> = command.split_whitespace().collect();
    match run_short(&argv, Some(dir), Duration::from_secs(10)) {
        Ok(text) => ToolVersion {
            command: command.to_string(),
            version: text
                .lines()
                .map(str::trim)
                .find(|l| !l.is_empty())
                .map(str::to_string),
            status: "ok".into(),
        },
        Err(why) => ToolVersion {
            command: command.to_string(),
            version: None,
            status: why.to_string(),
        },
    }
}

fn git_state(workdir: &Path) -> Option<GitState> {
    let git = |args: &[&str]| -> Option<String> {
        let mut argv = vec!["git"];
        argv.extend_from_slice(args);
        run_short(&argv, Some(workdir), Duration::from_secs(20))
            .ok()
            .map(|s| s.trim().to_string())
    };
    if git(&["rev-parse", "--is-inside-work-tree"]).as_deref() != Some("true") {
        return None;
    }
    Some(GitState {
        commit: git(&["rev-parse", "HEAD"]),
        tree: git(&["rev-parse", "HEAD^{tree}"]),
        dirty: git(&["status", "--porcelain"]).map(|s| !s.is_empty()),
    })
}

fn lockfiles(workdir: &Path) -> Vec<LockfileDigest> {
    let Ok(entries) = std::fs::read_dir(workdir) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| {
            LOCKFILES.contains(&n.as_str())
                || (n.starts_with("requirements") && n.ends_with(".txt"))
        })
        .collect();
    names.sort();
    names
        .into_iter()
        .filter_map(|n| {
            let path = workdir.join(&n);
            let bytes = std::fs::read(&path).ok()?;
            Some(LockfileDigest {
                path: path.display().to_string(),
                sha256: sha256_hex(&bytes),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tool that gave no version says why, as the fingerprint's `status` (pinned byte for
    /// byte).
    #[test]
    fn a_tool_without_a_version_says_why() {
        let dir = std::env::temp_dir();
        let status = |command: &str| tool_version(command, &dir).status;
        assert_eq!(status("sh -c echo"), "ok");
        assert_eq!(status(""), "empty command");
        assert_eq!(status("/nonexistent/qualify-tool --version"), "not found");
        assert_eq!(status("false"), "exited with exit status: 1");
        assert_eq!(
            RunError::Timeout(Duration::from_secs(10)).to_string(),
            "no answer within 10s"
        );
        assert_eq!(
            "rsa".parse::<crate::Algorithm>().unwrap_err().to_string(),
            "unknown algorithm `rsa`; expected one of: ed25519, p256"
        );
    }

    #[test]
    fn secret_names_are_matched_case_insensitively() {
        for name in [
            "GITHUB_TOKEN",
            "aws_secret_access_key",
            "Db_Password",
            "MYSQL_PWD_PASSWD",
            "X_CREDENTIALS",
            "HTTP_AUTHORIZATION",
            "ssh_private_file",
            "SESSION_ID",
            "cookie_jar",
            "API_KEY",
            "QUALIFY_HOLDOUT",
        ] {
            assert!(is_secret_name(name), "{name}");
        }
        for name in ["PATH", "HOME", "LANG", "CARGO_TARGET_DIR", "TERM"] {
            assert!(!is_secret_name(name), "{name}");
        }
    }

    #[test]
    fn commands_lose_secret_values_like_the_environment() {
        let cases = [
            (
                "API_TOKEN=abc123 ./deploy --x 1",
                "API_TOKEN=<redacted> ./deploy --x 1",
            ),
            (
                "export DB_PASSWORD=hunter2 && make",
                "export DB_PASSWORD=<redacted> && make",
            ),
            (
                "curl --token s3cr3t https://h/x",
                "curl --token <redacted> https://h/x",
            ),
            ("tool --api-key=zz9 run", "tool --api-key=<redacted> run"),
            (
                "curl -H \"Authorization: Bearer abc.def\" http://h",
                "curl -H \"Authorization: Bearer <redacted>\" http://h",
            ),
            (
                "psql postgres://app:pw1@db:5432/x -c 'select 1'",
                "psql postgres://app:<redacted>@db:5432/x -c 'select 1'",
            ),
        ];
        for (input, want) in cases {
            let (got, changed) = redact_command(input);
            assert_eq!(got, want, "{input}");
            assert!(changed, "{input}");
        }
        let plain = "./transfer --threads 1 --rounds 10";
        assert_eq!(redact_command(plain), (plain.to_string(), false));
        assert!(!redact_command("make --keep-going n=1 -j4").1);
    }

    #[test]
    fn redaction_replaces_values_and_lists_names() {
        let vars = vec![
            (
                "MY_API_TOKEN".to_string(),
                "hunter2-very-secret".to_string(),
            ),
            ("PATH".to_string(), "/usr/bin".to_string()),
            (
                "DATABASE_URL".to_string(),
                "postgres://app:s3cr3t@db/x".to_string(),
            ),
            (
                "HOMEPAGE".to_string(),
                "https://example.invalid/a@b".to_string(),
            ),
        ];
        let (env, redacted) = redact_env(vars);
        assert_eq!(env["MY_API_TOKEN"], REDACTED);
        assert_eq!(env["DATABASE_URL"], REDACTED);
        assert_eq!(env["PATH"], "/usr/bin");
        assert_eq!(env["HOMEPAGE"], "https://example.invalid/a@b");
        assert_eq!(redacted, vec!["DATABASE_URL", "MY_API_TOKEN"]);
        let text = serde_json::to_string(&env).unwrap();
        assert!(!text.contains("hunter2") && !text.contains("s3cr3t"));
    }

    #[test]
    fn git_commit_tree_and_dirty_flag_are_read() {
        let dir = std::env::temp_dir().join(format!("qualify-fp-git-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let git = |args: &[&str]| {
            let ok = Command::new("git")
                .args(["-c", "user.name=t", "-c", "user.email=t@example.invalid"])
                .args(args)
                .current_dir(&dir)
                .output()
                .map(|o| o.status.success())
                .unwrap_or(false);
            assert!(ok, "git {args:?}");
        };
        if Command::new("git").arg("--version").output().is_err() {
            eprintln!("git not installed: skipped");
            return;
        }
        assert_eq!(git_state(&dir), None, "not a repository yet");
        git(&["init", "-q"]);
        std::fs::write(dir.join("a.txt"), "a").unwrap();
        git(&["add", "a.txt"]);
        git(&["commit", "-q", "-m", "one"]);
        let clean = git_state(&dir).unwrap();
        assert_eq!(clean.commit.as_deref().map(str::len), Some(40));
        assert_eq!(clean.tree.as_deref().map(str::len), Some(40));
        assert_eq!(clean.dirty, Some(false));
        std::fs::write(dir.join("a.txt"), "changed").unwrap();
        assert_eq!(git_state(&dir).unwrap().dirty, Some(true));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn cpu_lists_are_counted() {
        assert_eq!(count_cpu_list("0-3,6,8-9"), Some(7));
        assert_eq!(count_cpu_list("0"), Some(1));
        assert_eq!(count_cpu_list("3-1"), None);
        assert_eq!(count_cpu_list("x"), None);
    }

    #[test]
    fn collect_reads_this_machine_and_the_workdir() {
        let dir = std::env::temp_dir().join(format!("qualify-fp-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("Cargo.lock"), "lock").unwrap();
        std::fs::write(dir.join("requirements-dev.txt"), "x==1").unwrap();
        std::fs::write(dir.join("notes.txt"), "no").unwrap();
        let fp = collect(&FingerprintInputs {
            workdir: dir.clone(),
            tools: Some(vec![
                "sh -c true".into(),
                "definitely-not-a-tool-qualify --version".into(),
            ]),
            artifact_sha256: None,
            spec_sha256: "ab".into(),
            qualify_version: "0.0.0".into(),
            backend: "rlimit".into(),
            extra_tools: vec!["sh -c true".into(), "true --version".into()],
        });
        // An extra tool already listed is not recorded twice.
        assert_eq!(fp.tools.len(), 3);
        assert_eq!(fp.tools[2].command, "true --version");
        assert_eq!(fp.lockfiles.len(), 2);
        assert_eq!(fp.lockfiles[0].sha256, sha256_hex(b"lock"));
        assert_eq!(fp.tools[0].status, "ok");
        assert_eq!(fp.tools[1].status, "not found");
        assert!(fp.os.kernel_release.is_some());
        assert!(fp.cores_online.unwrap_or(0) >= 1);
        assert!(fp.memory_bytes.is_some());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
