//! `[functional]`: the test command that must pass before any operational probing, and the
//! optional JUnit report it writes (resolved against the artifact's workdir).

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
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawFunctional {
    command: Spanned<RawCommand>,
    junit: Option<Spanned<String>>,
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
    Functional { command, junit }
}
