//! What must never reach a stored text (receipt, ledger, reports): the values of qualify's
//! secret-looking environment variables ([`crate::fingerprint::is_secret_name`], or a URL with a
//! password), the values the user names with `--secret NAME`, and the content of held-out
//! checks. A [`Redactor`] holds them and rewrites every string of a JSON document before it is
//! written: a secret value becomes [`crate::fingerprint::REDACTED`] wherever it occurs; a string
//! that contains a line of a held-out check is replaced as a whole by [`HELD_OUT`] (so the
//! replacement does not show which part matched, and which line of a check it was).
//!
//! Short values cannot be searched for without mangling ordinary text: a secret-looking
//! variable's value is searched for from [`MIN_DETECTED`] characters, a `--secret` value from
//! [`MIN_NAMED`], a held-out line from [`MIN_HELD_OUT_LINE`] (trimmed).

use serde_json::Value;

use crate::fingerprint::{REDACTED, has_url_credentials, is_secret_name};

/// The shortest value of a secret-looking variable that is searched for.
pub const MIN_DETECTED: usize = 8;
/// The shortest `--secret` value that is searched for.
pub const MIN_NAMED: usize = 4;
/// The shortest line of a held-out check (trimmed) that is searched for.
pub const MIN_HELD_OUT_LINE: usize = 16;
/// What replaces a string that contained a held-out check's content.
pub const HELD_OUT: &str = "<redacted: held-out check content>";

/// The values to keep out of stored texts.
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    /// Secret values, longest first (a value that contains another is replaced whole).
    secrets: Vec<String>,
    /// Lines of held-out checks.
    held_out: Vec<String>,
}

/// A `--secret NAME` that could not be honoured, and why (said as a warning).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SecretProblem {
    #[error("--secret {0}: no such variable in qualify's environment")]
    Unset(String),
    #[error(
        "--secret {name}: its value is shorter than {MIN_NAMED} characters and is not searched for"
    )]
    TooShort { name: String },
}

impl Redactor {
    /// The secrets of `vars` (qualify's environment): every secret-looking variable's value,
    /// and the values of the variables `named` (`--secret`). Returns the problems with `named`.
    pub fn from_env(
        vars: impl IntoIterator<Item = (String, String)>,
        named: &[String],
    ) -> (Redactor, Vec<SecretProblem>) {
        let mut r = Redactor::default();
        let mut problems = Vec::new();
        let vars: Vec<(String, String)> = vars.into_iter().collect();
        for (k, v) in &vars {
            if (is_secret_name(k) || has_url_credentials(v)) && v.chars().count() >= MIN_DETECTED {
                r.secret(v);
            }
        }
        for name in named {
            match vars.iter().find(|(k, _)| k == name) {
                None => problems.push(SecretProblem::Unset(name.clone())),
                Some((_, v)) if v.chars().count() < MIN_NAMED => {
                    problems.push(SecretProblem::TooShort { name: name.clone() })
                }
                Some((_, v)) => r.secret(v),
            }
        }
        (r, problems)
    }

    /// Search for `value` (at any length: the caller decided it is a secret).
    pub fn secret(&mut self, value: &str) {
        if value.is_empty() || self.secrets.iter().any(|s| s == value) {
            return;
        }
        self.secrets.push(value.to_string());
        self.secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
    }

    /// Search for the lines of a held-out check (those of at least [`MIN_HELD_OUT_LINE`]
    /// characters, trimmed).
    pub fn held_out(&mut self, content: &str) {
        for line in content.lines().map(str::trim) {
            if line.chars().count() >= MIN_HELD_OUT_LINE && !self.held_out.iter().any(|l| l == line)
            {
                self.held_out.push(line.to_string());
            }
        }
    }

    pub fn is_empty(&self) -> bool {
        self.secrets.is_empty() && self.held_out.is_empty()
    }

    /// `text` with the secrets replaced, or `None` when nothing matched.
    pub fn text(&self, text: &str) -> Option<String> {
        if self.held_out.iter().any(|l| text.contains(l.as_str())) {
            return Some(HELD_OUT.to_string());
        }
        let mut out: Option<String> = None;
        for s in &self.secrets {
            let current = out.as_deref().unwrap_or(text);
            if current.contains(s.as_str()) {
                out = Some(current.replace(s.as_str(), REDACTED));
            }
        }
        out
    }

    /// Rewrite every string of `v` (object keys included); returns how many changed.
    pub fn json(&self, v: &mut Value) -> usize {
        if self.is_empty() {
            return 0;
        }
        match v {
            Value::String(s) => match self.text(s) {
                Some(r) => {
                    *s = r;
                    1
                }
                None => 0,
            },
            Value::Array(items) => items.iter_mut().map(|i| self.json(i)).sum(),
            Value::Object(map) => {
                let mut changed = 0;
                let keys: Vec<String> = map.keys().cloned().collect();
                for k in keys {
                    let Some(mut item) = map.remove(&k) else {
                        continue;
                    };
                    changed += self.json(&mut item);
                    let key = match self.text(&k) {
                        Some(r) => {
                            changed += 1;
                            r
                        }
                        None => k,
                    };
                    map.insert(key, item);
                }
                changed
            }
            _ => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn secret_looking_values_and_named_ones_are_replaced_everywhere() {
        let (r, problems) = Redactor::from_env(
            env(&[
                ("MY_API_KEY", "sk-live-0123456789"),
                ("XDG_SESSION_CLASS", "user"),
                ("DATABASE_URL", "postgres://app:hunter22@db/x"),
                ("PLAIN", "visible-value"),
                ("DEPLOY_PASSPHRASE_SHORT", "abc"),
                ("CUSTOM", "opensesame"),
            ]),
            &["CUSTOM".into(), "NOPE".into()],
        );
        assert_eq!(problems, [SecretProblem::Unset("NOPE".into())]);
        let mut v = json!({
            "stdout_tail": "key=sk-live-0123456789\nuser ok\n",
            "detail": ["postgres://app:hunter22@db/x", "opensesame", "visible-value abc"],
            "sk-live-0123456789": 1,
        });
        assert_eq!(r.json(&mut v), 4);
        assert_eq!(
            v,
            json!({
                "stdout_tail": "key=<redacted>\nuser ok\n",
                "detail": ["<redacted>", "<redacted>", "visible-value abc"],
                "<redacted>": 1,
            })
        );
    }

    #[test]
    fn a_named_secret_too_short_to_search_for_is_said() {
        let (r, problems) = Redactor::from_env(env(&[("PIN", "12")]), &["PIN".into()]);
        assert!(r.is_empty());
        assert_eq!(
            problems[0].to_string(),
            "--secret PIN: its value is shorter than 4 characters and is not searched for"
        );
    }

    #[test]
    fn a_string_holding_a_held_out_line_is_replaced_whole() {
        let mut r = Redactor::default();
        r.held_out("#!/bin/sh\nexit 0\n  test \"$(./prog 7)\" = 49 || exit 1\n");
        let mut v = json!({
            "tail": "before\ntest \"$(./prog 7)\" = 49 || exit 1\nafter",
            "other": "#!/bin/sh\nexit 0",
        });
        assert_eq!(r.json(&mut v), 1);
        assert_eq!(v["tail"], HELD_OUT);
        assert_eq!(
            v["other"], "#!/bin/sh\nexit 0",
            "short lines are not searched for"
        );
    }
}
