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
