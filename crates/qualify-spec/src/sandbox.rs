//! `[sandbox]`: what the artifact may see and touch. `mode` = `"on"` (default: as strong as the
//! host allows, each missing layer stated), `"off"` or `"required"` (refuse to run without every
//! layer); `network` = `"loopback"` (default: a private namespace with only its loopback),
//! `"none"` or `"host"`; `writable` and `readable`: extra paths, relative to the spec's
//! directory (the workdir is always writable, the system always readable); `user`: as root, the
//! user the artifact runs as (default: the workdir's owner, or `nobody`).

use std::path::Path;

use serde::Deserialize;
use toml::Spanned;

use crate::check::Checker;

pub use qualify_model::enforcement::Mode as SandboxMode;
/// The checked `[sandbox]` table is the vocabulary's policy (`qualify-probe` sets it up).
pub use qualify_model::sandbox::{NetworkPolicy, SandboxPolicy as SandboxSpec};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawSandbox {
    mode: Option<Spanned<String>>,
    network: Option<Spanned<String>>,
    writable: Option<Spanned<Vec<String>>>,
    readable: Option<Spanned<Vec<String>>>,
    user: Option<Spanned<String>>,
}

pub(crate) fn check(
    raw: RawSandbox,
    dir: &Path,
    check_fs: bool,
    ck: &mut Checker<'_>,
) -> SandboxSpec {
    let mut out = SandboxSpec::default();
    if let Some(m) = &raw.mode {
        match m.get_ref().parse::<SandboxMode>() {
            Ok(mode) => out.mode = mode,
            Err(_) => ck.error_help(
                m.span(),
                format!("unknown sandbox mode `{}`", m.get_ref()),
                "expected \"on\" (as strong as the host allows, each missing layer stated), \"required\" (refuse to run without every layer) or \"off\"",
            ),
        }
    }
    if let Some(n) = &raw.network {
        out.network = match n.get_ref().as_str() {
            "none" => NetworkPolicy::None,
            "loopback" => NetworkPolicy::Loopback,
            "host" => NetworkPolicy::Host,
            other => {
                ck.error_help(
                    n.span(),
                    format!("unknown sandbox network `{other}`"),
                    "expected \"loopback\" (a private network with only its own loopback), \"none\" or \"host\" (qualify's network)",
                );
                NetworkPolicy::Loopback
            }
        };
    }
    let paths = |v: &Option<Spanned<Vec<String>>>, key: &str, ck: &mut Checker<'_>| {
        let mut out = Vec::new();
        let Some(v) = v else { return out };
        for p in v.get_ref() {
            if p.trim().is_empty() {
                ck.error_help(
                    v.span(),
                    format!("sandbox.{key} has an empty path"),
                    "write each path as a string, relative to the spec's directory or absolute",
                );
                continue;
            }
            let resolved = dir.join(p);
            if check_fs && !resolved.exists() {
                ck.error_help(
                    v.span(),
                    format!("sandbox.{key} path `{p}` does not exist ({})", resolved.display()),
                    "paths are relative to the directory holding the spec file; create it first or remove it",
                );
                continue;
            }
            if resolved == Path::new("/") {
                ck.error_help(
                    v.span(),
                    format!("sandbox.{key} must not be `/`"),
                    "name the directories the artifact needs, or set mode = \"off\"",
                );
                continue;
            }
            out.push(resolved);
        }
        out
    };
    out.writable = paths(&raw.writable, "writable", ck);
    out.readable = paths(&raw.readable, "readable", ck);
    out.user = raw.user.as_ref().map(|u| ck.non_empty(u, "sandbox.user"));
    if out.mode == SandboxMode::Off {
        let given = [
            raw.network.as_ref().map(|s| s.span()),
            raw.writable.as_ref().map(|s| s.span()),
            raw.readable.as_ref().map(|s| s.span()),
            raw.user.as_ref().map(|s| s.span()),
        ];
        if let Some(span) = given.into_iter().flatten().next() {
            ck.error_help(
                span,
                "this [sandbox] key has no effect with mode = \"off\"",
                "remove it, or set mode = \"on\"",
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::Spec;

    const BASE: &str = "[artifact]\nname = \"a\"\ncommand = \"true\"\n[claim]\nlevel = \"trial\"\n";

    #[test]
    fn the_default_is_on_with_loopback() {
        let spec = Spec::parse(BASE, "/p/q.toml").unwrap();
        assert_eq!(spec.sandbox, super::SandboxSpec::default());
        let policy = spec.sandbox_policy();
        assert_eq!(policy.mode, super::SandboxMode::On);
        assert_eq!(policy.network, super::NetworkPolicy::Loopback);
        assert!(
            policy.private_workdir,
            "a cell writes through a layer of its own"
        );
    }

    #[test]
    fn keys_are_read_and_paths_resolved_against_the_spec() {
        let spec = Spec::parse(
            &format!(
                "{BASE}[sandbox]\nmode = \"required\"\nnetwork = \"none\"\nwritable = [\"out/\"]\nreadable = [\"/opt/data\"]\nuser = \"nobody\"\n"
            ),
            "/p/q.toml",
        )
        .unwrap();
        let s = &spec.sandbox;
        assert_eq!(s.mode, super::SandboxMode::Required);
        assert_eq!(s.network, super::NetworkPolicy::None);
        assert_eq!(s.writable, vec![std::path::PathBuf::from("/p/out/")]);
        assert_eq!(s.readable, vec![std::path::PathBuf::from("/opt/data")]);
        assert_eq!(s.user.as_deref(), Some("nobody"));
        let policy = spec.sandbox_policy();
        assert_eq!(policy.writable, s.writable);
        assert_eq!(policy.network, super::NetworkPolicy::None);
    }

    #[test]
    fn errors_are_located() {
        let err = Spec::parse(&format!("{BASE}[sandbox]\nmode = \"strict\"\n"), "q.toml")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("q.toml:7:8: error: unknown sandbox mode `strict`"),
            "{err}"
        );
        let err = Spec::parse(&format!("{BASE}[sandbox]\nnetwork = \"wifi\"\n"), "q.toml")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("q.toml:7:11: error: unknown sandbox network `wifi`"),
            "{err}"
        );
        let err = Spec::parse(
            &format!("{BASE}[sandbox]\nmode = \"off\"\nwritable = [\"x\"]\n"),
            "q.toml",
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("q.toml:8:"), "{err}");
        assert!(err.contains("no effect with mode = \"off\""), "{err}");
        let err = Spec::parse(&format!("{BASE}[sandbox]\nwritable = [\"/\"]\n"), "q.toml")
            .unwrap_err()
            .to_string();
        assert!(err.contains("must not be `/`"), "{err}");
        let err = Spec::parse(&format!("{BASE}[sandbox]\nhome = true\n"), "q.toml")
            .unwrap_err()
            .to_string();
        assert!(err.contains("home"), "{err}");
    }
}
