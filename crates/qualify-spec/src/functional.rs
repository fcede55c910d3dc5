//! `[functional]`: the test command that must pass before any operational probing, and the
//! optional JUnit report it writes (resolved against the artifact's workdir), and whether held-out
//! checks are required for a production claim (`holdout = "required"`).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use toml::Spanned;

use crate::check::Checker;
use crate::command::{CommandLine, RawCommand, check_command};

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Functional {
    /// Run once in the artifact's workdir; taken literally (no placeholders).
    pub command: CommandLine,
    /// Where the command writes its JUnit XML report: the artifact's workdir joined with the
    /// written path.
    pub junit: Option<PathBuf>,
    /// `holdout = "required"`: production needs held-out checks (`--holdout`) run and passed.
    pub holdout: Holdout,
}

/// Whether held-out checks are required for a production claim.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Holdout {
    /// Held-out checks run when given; production does not require them.
    #[default]
    Optional,
    /// Production requires held-out checks to have run and passed.
    Required,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawFunctional {
    command: Spanned<RawCommand>,
    junit: Option<Spanned<String>>,
    holdout: Option<Spanned<String>>,
}

pub(crate) fn check(raw: RawFunctional, workdir: &Path, ck: &mut Checker<'_>) -> Functional {
    let command = check_command(
        raw.command,
        "functional.command",
        false,
        ck,
        &mut Vec::new(),
    );
    let junit = raw
        .junit
        .map(|j| workdir.join(ck.non_empty(&j, "functional.junit")));
    let holdout = match raw.holdout {
        None => Holdout::Optional,
        Some(h) => match h.get_ref().as_str() {
            "required" => Holdout::Required,
            "optional" => Holdout::Optional,
            other => {
                ck.error_help(
                    h.span(),
                    format!("functional.holdout is `{other}`"),
                    "write holdout = \"required\" (production needs held-out checks to pass) or \"optional\"",
                );
                Holdout::Optional
            }
        },
    };
    Functional {
        command,
        junit,
        holdout,
    }
}
