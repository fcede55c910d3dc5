//! Held-out checks: check commands supplied only at acceptance time (`--holdout DIR`), run as
//! probes against the artifact. What the evidence keeps of them is deliberately thin: the sha256
//! of each check file, its outcome, and counts — never a name, content or output, so a builder
//! reading receipts or ledgers learns nothing that would let it fit the checks.
//!
//! Also owns the production requirement `holdout = "required"`: [`unmet`] reads the functional
//! layer's `held_out` evidence and says why production cannot be accepted, or `None`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// What the run knows about held-out checks.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HoldoutRun {
    /// The spec declares `holdout = "required"`: production needs them run and passed.
    pub required: bool,
    /// The checks that ran (`None`: no held-out directory was given).
    pub checks: Option<Vec<HoldoutCheck>>,
    /// Whether the artifact was kept from reading them by the kernel (the sandbox's hidden
    /// paths, confirmed by its self-test); `None`: not assessed (receipts from before).
    pub secrecy: Option<Secrecy>,
}

/// How the held-out checks were kept secret from the artifact.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Secrecy {
    /// Every channel below is closed (and, in receipts from before the channels, the held-out
    /// directory was hidden by a kernel mechanism the self-test could not get through).
    pub kernel_enforced: bool,
    /// How (or why not), in one line.
    pub detail: String,
    /// Each way the artifact could read or recognise a held-out check, how it is closed, and
    /// what the run's self-tests tried against it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub channels: Vec<Channel>,
}

/// One way a held-out check could reach the artifact.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Channel {
    /// `files`, `environment`, `check_process`, `qualify_command_line`, `later_cells`,
    /// `stored_text`.
    pub name: String,
    /// Closed, and the attempt against it failed.
    pub closed: bool,
    /// How it is closed (or why it is not).
    pub how: String,
    /// What was tried against it, and how that ended.
    pub checked: String,
}

impl Secrecy {
    /// The channels that are not closed, by name.
    pub fn open(&self) -> Vec<&str> {
        self.channels
            .iter()
            .filter(|c| !c.closed)
            .map(|c| c.name.as_str())
            .collect()
    }
}

/// One held-out check as the evidence keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HoldoutCheck {
    /// sha256 of the check file's bytes.
    pub sha256: String,
    /// The probe outcome (`ok`, `exit_failure`, `timeout`, …).
    pub outcome: String,
}

impl HoldoutCheck {
    pub fn passed(&self) -> bool {
        self.outcome == "ok"
    }

    /// Cut short by qualify's own interruption: neither passed nor failed.
    pub fn interrupted(&self) -> bool {
        self.outcome == "interrupted"
    }
}

impl HoldoutRun {
    /// The `held_out` object of the functional layer's evidence.
    pub fn evidence(&self) -> Value {
        let mut v = self.evidence_without_secrecy();
        if let Some(s) = &self.secrecy {
            v["secrecy"] = json!(s);
        }
        v
    }

    fn evidence_without_secrecy(&self) -> Value {
        let Some(checks) = &self.checks else {
            return json!({ "required": self.required, "ran": false });
        };
        let mut outcomes: BTreeMap<&str, usize> = BTreeMap::new();
        for c in checks {
            *outcomes.entry(c.outcome.as_str()).or_default() += 1;
        }
        let passed = checks.iter().filter(|c| c.passed()).count();
        let interrupted = checks.iter().filter(|c| c.interrupted()).count();
        json!({
            "required": self.required,
            "ran": true,
            "checks": checks.len(),
            "passed": passed,
            "failed": checks.len() - passed - interrupted,
            "interrupted": interrupted,
            "outcomes": outcomes,
            "results": checks,
        })
    }

    /// Checks ran, at least one, and all passed.
    pub fn all_passed(&self) -> bool {
        self.checks
            .as_ref()
            .is_some_and(|c| !c.is_empty() && c.iter().all(HoldoutCheck::passed))
    }

    /// How many ran and how many failed (interrupted ones are not failures), when any ran.
    pub fn failed(&self) -> Option<(usize, usize)> {
        let checks = self.checks.as_ref()?;
        let failed = checks
            .iter()
            .filter(|c| !c.passed() && !c.interrupted())
            .count();
        Some((checks.len(), failed))
    }
}

/// Why `production` is refused by the held-out requirement, read from the functional layer's
/// evidence (`None` when the spec did not require held-out checks, or they ran and passed).
pub fn unmet(functional_evidence: &Value) -> Option<String> {
    let held = functional_evidence.get("held_out")?;
    if held.get("required").and_then(Value::as_bool) != Some(true) {
        return None;
    }
    if held.get("ran").and_then(Value::as_bool) != Some(true) {
        return Some(
            "held-out checks did not run (the spec declares holdout = \"required\"; pass --holdout DIR or set QUALIFY_HOLDOUT)"
                .to_string(),
        );
    }
    let checks = held.get("checks").and_then(Value::as_u64).unwrap_or(0);
    let passed = held.get("passed").and_then(Value::as_u64).unwrap_or(0);
    if checks == 0 {
        return Some(
            "the held-out directory held no check (the spec declares holdout = \"required\")"
                .to_string(),
        );
    }
    if passed < checks {
        return Some(format!(
            "{} of {checks} held-out check(s) did not pass (the spec declares holdout = \"required\")",
            checks - passed
        ));
    }
    if let Some(secrecy) = held.get("secrecy")
        && secrecy.get("kernel_enforced").and_then(Value::as_bool) == Some(false)
    {
        return Some(format!(
            "the held-out checks' secrecy was not kernel-enforced ({}): the artifact could have read them (the spec declares holdout = \"required\"; run with the sandbox on, on a host with mount namespaces or Landlock)",
            secrecy
                .get("detail")
                .and_then(Value::as_str)
                .unwrap_or("no detail")
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(required: bool, outcomes: Option<&[&str]>) -> HoldoutRun {
        HoldoutRun {
            required,
            checks: outcomes.map(|o| {
                o.iter()
                    .map(|o| HoldoutCheck {
                        sha256: "a".repeat(64),
                        outcome: (*o).to_string(),
                    })
                    .collect()
            }),
            secrecy: None,
        }
    }

    #[test]
    fn production_needs_kernel_enforced_secrecy_when_it_was_assessed() {
        let ev = |r: &HoldoutRun| json!({ "held_out": r.evidence() });
        let mut r = run(true, Some(&["ok"]));
        assert_eq!(unmet(&ev(&r)), None, "not assessed: as before");
        r.secrecy = Some(Secrecy {
            kernel_enforced: true,
            detail: "mount namespace, landlock".into(),
            channels: Vec::new(),
        });
        assert_eq!(unmet(&ev(&r)), None);
        assert_eq!(ev(&r)["held_out"]["secrecy"]["kernel_enforced"], true);
        r.secrecy = Some(Secrecy {
            kernel_enforced: false,
            detail: "the sandbox is off".into(),
            channels: Vec::new(),
        });
        let why = unmet(&ev(&r)).unwrap();
        assert!(
            why.contains("not kernel-enforced (the sandbox is off)"),
            "{why}"
        );
        let mut optional = run(false, Some(&["ok"]));
        optional.secrecy = r.secrecy.clone();
        assert_eq!(unmet(&ev(&optional)), None, "only required checks refuse");
    }

    #[test]
    fn requirement_is_unmet_unless_checks_ran_and_passed() {
        let ev = |r: &HoldoutRun| json!({ "held_out": r.evidence() });
        assert_eq!(unmet(&ev(&run(false, None))), None);
        assert!(
            unmet(&ev(&run(true, None)))
                .unwrap()
                .contains("did not run")
        );
        assert!(
            unmet(&ev(&run(true, Some(&[]))))
                .unwrap()
                .contains("no check")
        );
        assert!(
            unmet(&ev(&run(true, Some(&["ok", "timeout"]))))
                .unwrap()
                .contains("1 of 2")
        );
        assert_eq!(unmet(&ev(&run(true, Some(&["ok", "ok"])))), None);
        let cut = run(true, Some(&["ok", "interrupted"]));
        assert_eq!(cut.failed(), Some((2, 0)));
        assert!(unmet(&ev(&cut)).unwrap().contains("1 of 2"));
        assert_eq!(unmet(&json!({})), None);
    }

    #[test]
    fn evidence_keeps_digests_and_outcomes_only() {
        let e = run(false, Some(&["ok", "exit_failure"])).evidence();
        assert_eq!(e["checks"], 2);
        assert_eq!(e["failed"], 1);
        assert_eq!(e["outcomes"]["exit_failure"], 1);
        let keys: Vec<&String> = e["results"][0].as_object().unwrap().keys().collect();
        assert_eq!(keys, ["outcome", "sha256"]);
    }
}
