//! Command lines as a spec writes them: a string runs through `/bin/sh -c`, an array of strings
//! is executed directly ([`CommandLine`]), plus the raw, spanned form read from TOML.

use std::fmt;
use std::ops::Range;

use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};
use toml::Spanned;

use crate::check::{Checker, PlaceholderUse};
use crate::template::{Bindings, render};

/// The shell a string command runs through.
pub const SHELL: &str = "/bin/sh";

/// A command: `Shell("make test")` runs as `/bin/sh -c "make test"`; `Argv([...])` is executed
/// directly. Serializes as the string or array it was written as.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum CommandLine {
    Shell(String),
    Argv(Vec<String>),
}

impl CommandLine {
    /// The argv to execute: `["/bin/sh", "-c", command]` for a shell string, the array as is
    /// otherwise. Placeholders are not substituted; see [`CommandLine::render`].
    pub fn argv(&self) -> Vec<String> {
        match self {
            CommandLine::Shell(command) => {
                vec![SHELL.to_string(), "-c".to_string(), command.clone()]
            }
            CommandLine::Argv(argv) => argv.clone(),
        }
    }

    /// The same command with `{name}` placeholders substituted from `params` in every piece.
    pub fn render<B: Bindings + ?Sized>(&self, params: &B) -> CommandLine {
        match self {
            CommandLine::Shell(command) => CommandLine::Shell(render(command, params)),
            CommandLine::Argv(argv) => {
                CommandLine::Argv(argv.iter().map(|a| render(a, params)).collect())
            }
        }
    }
}

impl fmt::Display for CommandLine {
    /// The string as written, or the array's pieces joined by spaces (for people, not shells).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CommandLine::Shell(command) => f.write_str(command),
            CommandLine::Argv(argv) => f.write_str(&argv.join(" ")),
        }
    }
}

/// A command as read from TOML; wrapped in `Spanned` by its owner so a string keeps its span.
#[derive(Debug)]
pub(crate) enum RawCommand {
    Shell(String),
    Argv(Vec<Spanned<String>>),
}

impl<'de> Deserialize<'de> for RawCommand {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<RawCommand, D::Error> {
        struct CommandVisitor;
        impl<'de> Visitor<'de> for CommandVisitor {
            type Value = RawCommand;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(
                    "a command: a string (run via /bin/sh -c) or an array of strings (executed directly)",
                )
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<RawCommand, E> {
                Ok(RawCommand::Shell(v.to_string()))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<RawCommand, A::Error> {
                let mut argv = Vec::new();
                while let Some(arg) = seq.next_element::<Spanned<String>>()? {
                    argv.push(arg);
                }
                Ok(RawCommand::Argv(argv))
            }
        }
        deserializer.deserialize_any(CommandVisitor)
    }
}

/// Check a raw command (`what` names it, e.g. `artifact.command`): it must not be empty. With
/// `templated`, its placeholders are collected (and malformed braces reported); otherwise it is
/// taken literally.
pub(crate) fn check_command(
    raw: Spanned<RawCommand>,
    what: &str,
    templated: bool,
    ck: &mut Checker<'_>,
    uses: &mut Vec<PlaceholderUse>,
) -> CommandLine {
    let span = raw.span();
    match raw.into_inner() {
        RawCommand::Shell(command) => {
            if command.trim().is_empty() {
                empty(ck, span, what);
            } else if templated {
                uses.extend(ck.template(&command, span));
            }
            CommandLine::Shell(command)
        }
        RawCommand::Argv(argv) => {
            if argv.first().is_none_or(|a| a.get_ref().is_empty()) {
                empty(ck, span, what);
            }
            if templated {
                for arg in &argv {
                    uses.extend(ck.template(arg.get_ref(), arg.span()));
                }
            }
            CommandLine::Argv(argv.into_iter().map(Spanned::into_inner).collect())
        }
    }
}

fn empty(ck: &mut Checker<'_>, span: Range<usize>, what: &str) {
    ck.error_help(
        span,
        format!("{what} is empty"),
        "give a string (run via /bin/sh -c) or an array of strings whose first element is the program",
    );
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    #[test]
    fn shell_commands_run_through_sh() {
        let c = CommandLine::Shell("./gemm --n {n}".into());
        let params: BTreeMap<String, i64> = [("n".to_string(), 64)].into();
        assert_eq!(c.render(&params).argv(), ["/bin/sh", "-c", "./gemm --n 64"]);
    }

    #[test]
    fn argv_commands_run_directly() {
        let c = CommandLine::Argv(vec!["./gemm".into(), "--n".into(), "{n}".into()]);
        let params: BTreeMap<String, &str> = [("n".to_string(), "a b")].into();
        assert_eq!(c.render(&params).argv(), ["./gemm", "--n", "a b"]);
        assert_eq!(c.to_string(), "./gemm --n {n}");
    }
}
