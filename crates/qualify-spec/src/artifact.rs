//! `[artifact]`: what is qualified — its name, the command each cell runs (with `{axis}`
//! placeholders), the working directory (resolved against the spec file's directory), an
//! optional build command run once first, and `[artifact.env]` (values may hold placeholders).

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize};
use toml::Spanned;

use crate::check::{Checker, PlaceholderUse};
use crate::command::{CommandLine, RawCommand, check_command};
use crate::template::{Bindings, render};

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Artifact {
    pub name: String,
    /// Run once per cell, after placeholder substitution ([`Artifact::argv`]).
    pub command: CommandLine,
    /// Absolute when the spec came from [`crate::Spec::load`]; the spec's directory joined with
    /// the written `workdir` (default `.`).
    pub workdir: PathBuf,
    /// Run once in `workdir` before anything else; taken literally (no placeholders).
    pub build: Option<CommandLine>,
    /// Extra environment for every cell; values are templates ([`Artifact::env`]).
    pub env: BTreeMap<String, String>,
    /// Prefixed to the command of every cell (e.g. `mpirun --oversubscribe -n {ranks}`), words
    /// split on whitespace after placeholder substitution; a string command then runs as
    /// `/bin/sh -c …` under the launcher (once per rank).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub launcher: Option<String>,
}

impl Artifact {
    /// The argv of the cell whose axis values are `params`.
    pub fn argv<B: Bindings + ?Sized>(&self, params: &B) -> Vec<String> {
        let mut argv = self.launcher_argv(params);
        argv.extend(self.command.render(params).argv());
        argv
    }

    /// The launcher's words for the cell whose axis values are `params` (empty without one).
    pub fn launcher_argv<B: Bindings + ?Sized>(&self, params: &B) -> Vec<String> {
        self.launcher
            .as_deref()
            .map(|l| {
                render(l, params)
                    .split_whitespace()
                    .map(String::from)
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The environment of the cell whose axis values are `params`, values rendered.
    pub fn env<B: Bindings + ?Sized>(&self, params: &B) -> Vec<(String, String)> {
        self.env
            .iter()
            .map(|(key, value)| (key.clone(), render(value, params)))
            .collect()
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawArtifact {
    name: Spanned<String>,
    command: Spanned<RawCommand>,
    workdir: Option<Spanned<String>>,
    build: Option<Spanned<RawCommand>>,
    env: Option<BTreeMap<String, Spanned<EnvValue>>>,
    launcher: Option<Spanned<String>>,
}

/// An environment value: a string, or a number or boolean taken as its TOML text.
#[derive(Debug)]
pub(crate) struct EnvValue {
    text: String,
    is_string: bool,
}

impl<'de> Deserialize<'de> for EnvValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<EnvValue, D::Error> {
        struct EnvVisitor;
        impl Visitor<'_> for EnvVisitor {
            type Value = EnvValue;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an environment value: a string, a number or a boolean")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<EnvValue, E> {
                Ok(EnvValue {
                    text: v.to_string(),
                    is_string: true,
                })
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<EnvValue, E> {
                Ok(literal(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<EnvValue, E> {
                Ok(literal(v))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<EnvValue, E> {
                Ok(literal(v))
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<EnvValue, E> {
                Ok(literal(v))
            }
        }
        fn literal(v: impl fmt::Display) -> EnvValue {
            EnvValue {
                text: v.to_string(),
                is_string: false,
            }
        }
        deserializer.deserialize_any(EnvVisitor)
    }
}

/// The checked artifact, the placeholders its command and env use, and where `workdir` was
/// written (for the file-system check in [`crate::Spec::load`]).
pub(crate) struct CheckedArtifact {
    pub artifact: Artifact,
    pub uses: Vec<PlaceholderUse>,
    pub workdir_span: std::ops::Range<usize>,
}

pub(crate) fn check(raw: RawArtifact, spec_dir: &Path, ck: &mut Checker<'_>) -> CheckedArtifact {
    let name = ck.non_empty(&raw.name, "artifact.name");
    let mut uses = Vec::new();
    let command = check_command(raw.command, "artifact.command", true, ck, &mut uses);
    let build = raw
        .build
        .map(|b| check_command(b, "artifact.build", false, ck, &mut Vec::new()));

    let (workdir, workdir_span) = match raw.workdir {
        Some(w) => {
            let written = ck.non_empty(&w, "artifact.workdir");
            (spec_dir.join(written), w.span())
        }
        None => (spec_dir.to_path_buf(), raw.name.span()),
    };

    let mut env = BTreeMap::new();
    for (key, value) in raw.env.unwrap_or_default() {
        let span = value.span();
        if key.is_empty() || key.contains(['=', '\0']) {
            ck.error_help(
                span.clone(),
                format!("invalid environment variable name {key:?}"),
                "a name must be non-empty and contain neither `=` nor NUL",
            );
        }
        let value = value.into_inner();
        if value.is_string {
            uses.extend(ck.template(&value.text, span));
        }
        env.insert(key, value.text);
    }

    let launcher = raw.launcher.map(|l| {
        let text = ck.non_empty(&l, "artifact.launcher");
        uses.extend(ck.template(&text, l.span()));
        text
    });

    CheckedArtifact {
        artifact: Artifact {
            name,
            command,
            workdir,
            build,
            env,
            launcher,
        },
        uses,
        workdir_span,
    }
}
