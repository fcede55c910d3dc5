//! `[environment]` (what the run's environment fingerprint records beyond the fixed facts) and
//! `[reproducibility]` (how often each cell runs to compare outputs, and whether differing
//! outputs are expected):
//!
//! ```toml
//! [environment]
//! tools = ["cc --version", "python3 --version"]   # each run without a shell, first line kept
//!
//! [reproducibility]
//! repeat = 3                       # run every cell 3 times and compare stdout digests
//! nondeterministic = true          # differing outputs are expected …
//! tolerance_check = "./compare.py" # … and this command judges them (required with it)
//! ```

use serde::{Deserialize, Serialize};
use toml::Spanned;

use crate::check::Checker;
use crate::command::{CommandLine, RawCommand, check_command};

/// `[environment]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Environment {
    /// `--version` commands whose first output line the fingerprint records; `None` when the
    /// spec names none (qualify's defaults apply).
    pub tools: Option<Vec<String>>,
}

/// `[reproducibility]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Reproducibility {
    /// Runs per cell (1: no repeats).
    pub repeat: u64,
    pub nondeterministic: bool,
    /// Run once in the artifact's workdir after the cells when output is nondeterministic.
    pub tolerance_check: Option<CommandLine>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawEnvironment {
    tools: Option<Vec<Spanned<String>>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawReproducibility {
    repeat: Option<Spanned<i64>>,
    nondeterministic: Option<Spanned<bool>>,
    tolerance_check: Option<Spanned<RawCommand>>,
}

pub(crate) fn check_environment(raw: RawEnvironment, ck: &mut Checker<'_>) -> Environment {
    let tools = raw.tools.map(|list| {
        list.iter()
            .map(|t| {
                ck.non_empty(t, "environment.tools entry")
                    .trim()
                    .to_string()
            })
            .collect()
    });
    Environment { tools }
}

pub(crate) fn check_reproducibility(
    raw: RawReproducibility,
    ck: &mut Checker<'_>,
) -> Reproducibility {
    let repeat = raw
        .repeat
        .as_ref()
        .and_then(|r| {
            ck.positive_at_most(
                r,
                "reproducibility.repeat",
                qualify_model::limits::MAX_REPEAT,
            )
        })
        .unwrap_or(1);
    let nondeterministic = raw.nondeterministic.as_ref().is_some_and(|n| *n.get_ref());
    let tolerance_check = raw.tolerance_check.map(|c| {
        check_command(
            c,
            "reproducibility.tolerance_check",
            false,
            ck,
            &mut Vec::new(),
        )
    });
    if let (Some(n), None) = (&raw.nondeterministic, &tolerance_check)
        && *n.get_ref()
    {
        ck.error_help(
            n.span(),
            "`nondeterministic = true` needs a `tolerance_check`",
            "add tolerance_check = \"<command that exits 0 when the outputs are within tolerance>\"; without one, differing outputs cannot be judged",
        );
    }
    Reproducibility {
        repeat,
        nondeterministic,
        tolerance_check,
    }
}

#[cfg(test)]
mod tests {
    use crate::Spec;
    use crate::test_support::MINIMAL;

    fn parse(extra: &str) -> Result<Spec, Vec<String>> {
        crate::test_support::parse(&format!("{MINIMAL}{extra}"))
    }

    #[test]
    fn defaults_without_the_tables() {
        let spec = parse("").unwrap();
        assert_eq!(spec.environment.tools, None);
        assert_eq!(spec.reproducibility.repeat, 1);
        assert!(!spec.reproducibility.nondeterministic);
    }

    #[test]
    fn tools_and_reproducibility_are_read() {
        let spec = parse(
            "[environment]\ntools = [\"cc --version\", \" python3 --version \"]\n\n[reproducibility]\nrepeat = 3\nnondeterministic = true\ntolerance_check = \"./cmp\"\n",
        )
        .unwrap();
        assert_eq!(
            spec.environment.tools,
            Some(vec!["cc --version".into(), "python3 --version".into()])
        );
        assert_eq!(spec.reproducibility.repeat, 3);
        assert!(spec.reproducibility.nondeterministic);
        assert_eq!(
            spec.reproducibility
                .tolerance_check
                .as_ref()
                .map(ToString::to_string),
            Some("./cmp".to_string())
        );
    }

    #[test]
    fn target_concurrency_and_workload_are_read() {
        let spec =
            parse("[target]\ncores = 8\nconcurrency = 16\nworkload = { n = 1e6, m = 200 }\n")
                .unwrap();
        let t = spec.target.unwrap();
        assert_eq!(t.concurrency, Some(16));
        assert_eq!(t.workload["n"], 1e6);
        assert_eq!(t.workload["m"], 200.0);
        let errs = parse("[target]\nworkload = { n = \"big\" }\n").unwrap_err();
        assert!(
            errs[0].starts_with(
                "dir/qualify.toml:8:18: error: target.workload.n must be a positive number"
            ),
            "{errs:?}"
        );
    }

    #[test]
    fn errors_are_located() {
        let errs = parse("[environment]\ntools = [\"\"]\n").unwrap_err();
        assert_eq!(errs.len(), 1, "{errs:?}");
        assert!(
            errs[0].starts_with(
                "dir/qualify.toml:8:10: error: environment.tools entry must not be empty"
            ),
            "{errs:?}"
        );
        let errs = parse("[reproducibility]\nrepeat = 0\n").unwrap_err();
        assert!(
            errs[0].starts_with(
                "dir/qualify.toml:8:10: error: reproducibility.repeat must be a positive integer"
            ),
            "{errs:?}"
        );
        let errs = parse("[reproducibility]\nnondeterministic = true\n").unwrap_err();
        assert!(
            errs[0].starts_with(
                "dir/qualify.toml:8:20: error: `nondeterministic = true` needs a `tolerance_check`"
            ),
            "{errs:?}"
        );
        let errs = parse("[environment]\ntool = []\n").unwrap_err();
        assert!(errs[0].contains("tool"), "{errs:?}");
    }
}
