//! Which enforcement backend a probe asks for ([`BackendChoice`]): named here so the spec, a
//! job's `qualify probe --backend` and the probe read one word; `qualify-probe` owns what each
//! backend does.

use std::str::FromStr;

use crate::ParseError;

/// Which enforcement backend to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BackendChoice {
    /// The strongest the host allows: cgroup2, then cgroup1, then rlimit (with a warning).
    #[default]
    Auto,
    Cgroup2,
    Cgroup1,
    Rlimit,
}

impl FromStr for BackendChoice {
    type Err = ParseError;
    fn from_str(s: &str) -> Result<Self, ParseError> {
        match s {
            "auto" => Ok(BackendChoice::Auto),
            "cgroup2" => Ok(BackendChoice::Cgroup2),
            "cgroup1" => Ok(BackendChoice::Cgroup1),
            "rlimit" => Ok(BackendChoice::Rlimit),
            other => Err(ParseError::new(
                "backend",
                other,
                ["auto", "cgroup2", "cgroup1", "rlimit"],
            )),
        }
    }
}

impl std::fmt::Display for BackendChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            BackendChoice::Auto => "auto",
            BackendChoice::Cgroup2 => "cgroup2",
            BackendChoice::Cgroup1 => "cgroup1",
            BackendChoice::Rlimit => "rlimit",
        })
    }
}
