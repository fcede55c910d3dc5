//! Reading a step's words: `--name=value` or `--name value` for a flag that takes a value,
//! `--name` for a switch, and for a step that runs a command, everything after `--` (or from
//! the first word that is no flag) as that command — the conventions the binary's own flags
//! follow, so a step reads the same through either.

use std::fmt::Display;
use std::str::FromStr;

use super::StepError;

/// A step's flags as read, consumed by name.
pub(super) struct Flags {
    step: &'static str,
    values: Vec<(&'static str, Option<String>)>,
    /// The command after the flags (steps that run one).
    pub trailing: Vec<String>,
}

/// What a step's command line may hold.
pub(super) struct Grammar {
    pub step: &'static str,
    /// The words naming the step (`["agent", "coordinate"]`).
    pub words: &'static [&'static str],
    /// Flags that take a value.
    pub valued: &'static [&'static str],
    /// Flags that take none.
    pub switches: &'static [&'static str],
    /// Whether a command follows the flags.
    pub command: bool,
}

impl Grammar {
    /// Split `argv` (the step's words first) into flags and the trailing command.
    pub fn read(&self, argv: &[String]) -> Result<Flags, StepError> {
        let step = self.step;
        for (i, w) in self.words.iter().enumerate() {
            let found = argv.get(i).map(String::as_str).unwrap_or("");
            if found != *w {
                return Err(StepError::NotThisStep {
                    step,
                    found: argv.join(" "),
                });
            }
        }
        let mut flags = Flags {
            step,
            values: Vec::new(),
            trailing: Vec::new(),
        };
        let mut rest = argv[self.words.len()..].iter();
        while let Some(word) = rest.next() {
            if word == "--" {
                if !self.command {
                    return Err(StepError::Unexpected {
                        step,
                        found: word.clone(),
                    });
                }
                flags.trailing = rest.cloned().collect();
                break;
            }
            let Some(flag) = word.strip_prefix("--") else {
                if !self.command {
                    return Err(StepError::Unexpected {
                        step,
                        found: word.clone(),
                    });
                }
                flags.trailing = std::iter::once(word).chain(rest).cloned().collect();
                break;
            };
            let (name, inline) = match flag.split_once('=') {
                Some((n, v)) => (n, Some(v.to_string())),
                None => (flag, None),
            };
            if let Some(known) = self.valued.iter().find(|v| **v == name) {
                let value = match inline {
                    Some(v) => v,
                    None => rest.next().cloned().ok_or_else(|| StepError::NoValue {
                        step,
                        flag: format!("--{name}"),
                    })?,
                };
                flags.values.push((known, Some(value)));
            } else if let Some(known) = self.switches.iter().find(|s| **s == name) {
                if let Some(v) = inline {
                    return Err(StepError::Value {
                        step,
                        flag: format!("--{name}"),
                        value: v,
                        why: "takes no value".into(),
                    });
                }
                flags.values.push((known, None));
            } else {
                return Err(StepError::UnknownFlag {
                    step,
                    flag: word.clone(),
                });
            }
        }
        Ok(flags)
    }
}

impl Flags {
    /// Every value of the repeatable flag `name`.
    pub fn all(&self, name: &str) -> Vec<String> {
        self.values
            .iter()
            .filter(|(n, _)| *n == name)
            .filter_map(|(_, v)| v.clone())
            .collect()
    }

    /// Whether the switch `name` was given.
    pub fn switch(&self, name: &str) -> bool {
        self.values.iter().any(|(n, _)| *n == name)
    }

    /// The value of the single-valued flag `name`, if given (twice is an error).
    pub fn one(&self, name: &str) -> Result<Option<String>, StepError> {
        let mut all = self.all(name);
        if all.len() > 1 {
            return Err(StepError::Twice {
                step: self.step,
                flag: format!("--{name}"),
            });
        }
        Ok(all.pop())
    }

    /// The value of the required flag `name`.
    pub fn required(&self, name: &str) -> Result<String, StepError> {
        self.one(name)?.ok_or_else(|| self.missing(name))
    }

    /// The value of `name` read by `read`, if given.
    pub fn read_with<T, E: Display>(
        &self,
        name: &str,
        read: impl Fn(&str) -> Result<T, E>,
    ) -> Result<Option<T>, StepError> {
        self.one(name)?
            .map(|v| {
                read(&v).map_err(|e| StepError::Value {
                    step: self.step,
                    flag: format!("--{name}"),
                    value: v.clone(),
                    why: e.to_string(),
                })
            })
            .transpose()
    }

    /// The value of the required flag `name` read by `read`.
    pub fn required_with<T, E: Display>(
        &self,
        name: &str,
        read: impl Fn(&str) -> Result<T, E>,
    ) -> Result<T, StepError> {
        self.read_with(name, read)?
            .ok_or_else(|| self.missing(name))
    }

    fn missing(&self, name: &str) -> StepError {
        StepError::Missing {
            step: self.step,
            flag: format!("--{name}"),
        }
    }

    /// The value of `name` as a `T`, if given.
    pub fn parsed<T: FromStr>(&self, name: &str) -> Result<Option<T>, StepError>
    where
        T::Err: Display,
    {
        self.read_with(name, str::parse::<T>)
    }

    /// The value of the required flag `name` as a `T`.
    pub fn parsed_required<T: FromStr>(&self, name: &str) -> Result<T, StepError>
    where
        T::Err: Display,
    {
        self.parsed(name)?.ok_or_else(|| self.missing(name))
    }
}

/// `--name=value`.
pub(super) fn flag(name: &str, value: impl Display) -> String {
    format!("--{name}={value}")
}
