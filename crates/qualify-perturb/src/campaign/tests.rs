//! The campaign's counting, replay and bare-rate logic against a launch that decides outcomes
//! from the seed it is given (no process): which runs count as failures, as slowed, how a
//! failure's reproduction and bare rates come out, and what a replay campaign reports.

use std::convert::Infallible;

use super::*;

/// Fails (as `fail_as`) every perturbed run whose seed is divisible by `every`; bare runs
/// always end `bare`.
struct Fake {
    every: u64,
    fail_as: Ended,
    bare: Outcome,
    launches: u64,
    bare_launches: u64,
}

fn ended(outcome: Outcome, timeout_kind: Option<TimeoutKind>) -> Ended {
    Ended {
        outcome,
        timeout_kind,
        detail: outcome.to_string(),
        wall_seconds: 0.01,
    }
}

impl Launch for Fake {
    type Error = Infallible;
    fn launch(
        &mut self,
        setup: &Setup,
        _on_start: &mut dyn FnMut(Arc<dyn Tree>),
    ) -> Result<Ended, Infallible> {
        self.launches += 1;
        let seed = setup.env.iter().find_map(|(k, v)| {
            (k == shim::ENV).then(|| {
                let s = v
                    .split(' ')
                    .find_map(|f| f.strip_prefix("seed="))
                    .unwrap_or("0");
                u64::from_str_radix(s, 16).unwrap_or(0)
            })
        });
        Ok(match seed {
            Some(s) if s % self.every == 0 => self.fail_as.clone(),
            Some(_) => ended(Outcome::Ok, None),
            None => {
                self.bare_launches += 1;
                ended(self.bare, None)
            }
        })
    }
    fn cancelled(&self) -> bool {
        false
    }
    fn cell_timeout(&self) -> Duration {
        Duration::from_secs(10)
    }
}

fn shim() -> Result<Shim, crate::PerturbError> {
    // The fake never runs the shim; a real install in a private temporary directory keeps the
    // setup path (verify, log file) the one the binary takes.
    let dir = tempfile::tempdir().unwrap().keep();
    Shim::install(&dir.join("perturb"))
}

fn plan(runs: u64) -> Plan {
    Plan {
        runs,
        modes: vec![PerturbMode::Noise],
        replays: 10,
        minimise: false,
        cpus: 2,
        ..Plan::default()
    }
}

#[test]
fn counts_failures_replays_their_seed_and_runs_as_many_bare() {
    let mut fake = Fake {
        every: 4,
        fail_as: ended(Outcome::Deadlock, None),
        bare: Outcome::Ok,
        launches: 0,
        bare_launches: 0,
    };
    let logs = tempfile::tempdir().unwrap();
    let report = Campaign::new(&mut fake, plan(40), shim(), logs.path().to_path_buf())
        .run()
        .unwrap();
    assert_eq!(report.runs, 40);
    let f = &report.failures[0];
    assert_eq!(f.outcome, Outcome::Deadlock);
    assert_eq!(report.outcomes["deadlock"], f.count);
    // Every later failing seed is kept too (bounded), each with its mode.
    assert_eq!(f.other_seeds.len() as u64, (f.count - 1).min(16));
    // (the fake never loads the shim: after the first run the scheduler stands in)
    assert!(
        f.other_seeds.iter().all(|s| s.ends_with(" noise+sched")),
        "{:?}",
        f.other_seeds
    );
    assert_eq!(report.outcomes.values().sum::<u64>(), 40);
    // The failing seed fails every time it is replayed; no bare run fails.
    assert_eq!((f.replay.failed, f.replay.runs), (10, 10));
    assert_eq!((f.bare.failed, f.bare.runs), (0, 10));
    assert!(f.only_under_perturbation);
    assert!(
        f.replay_command.contains(&format!("--seed {}", f.seed)),
        "{}",
        f.replay_command
    );
    assert_eq!(report.bare_runs, 10);
    assert_eq!(fake.bare_launches, 10);
    assert_eq!(fake.launches, 40 + 10 + 10);
    // The perturbed deadline is the cell's plus the shim's budget and, since the shim was never
    // seen loading, the scheduler-level budget the later runs added, stated.
    assert_eq!(report.deadline.cell_seconds, 10.0);
    assert_eq!(report.deadline.perturbed_seconds, 12.0);
    // The fake never loads the shim: the mechanism says so instead of counting it.
    let shim_use = report
        .mechanisms
        .iter()
        .find(|m| m.name == "shim noise")
        .unwrap();
    assert_eq!((shim_use.runs, shim_use.not_applied), (0, 40));
}

#[test]
fn a_failure_bare_runs_show_too_is_not_labelled_perturbation_only() {
    let mut fake = Fake {
        every: 2,
        fail_as: ended(Outcome::ExitFailure, None),
        bare: Outcome::ExitFailure,
        launches: 0,
        bare_launches: 0,
    };
    let logs = tempfile::tempdir().unwrap();
    let report = Campaign::new(&mut fake, plan(10), shim(), logs.path().to_path_buf())
        .run()
        .unwrap();
    let f = &report.failures[0];
    assert_eq!((f.bare.failed, f.bare.runs), (10, 10));
    assert!(!f.only_under_perturbation);
}

#[test]
fn slowed_runs_are_not_failures_but_stuck_timeouts_are() {
    for (kind, fails) in [
        (TimeoutKind::Progressing, false),
        (TimeoutKind::Busy, false),
        (TimeoutKind::Idle, false),
        (TimeoutKind::BlockedExternal, false),
        (TimeoutKind::AmbiguousWait, true),
        (TimeoutKind::AmbiguousSpin, true),
    ] {
        let e = ended(Outcome::Timeout, Some(kind));
        assert_eq!(failure_kind(&e).is_some(), fails, "{kind:?}");
        assert_eq!(slowed(&e), !fails, "{kind:?}");
    }
    assert!(failure_kind(&ended(Outcome::Interrupted, None)).is_none());
    let mut fake = Fake {
        every: 1,
        fail_as: ended(Outcome::Timeout, Some(TimeoutKind::Progressing)),
        bare: Outcome::Ok,
        launches: 0,
        bare_launches: 0,
    };
    let logs = tempfile::tempdir().unwrap();
    let report = Campaign::new(&mut fake, plan(6), shim(), logs.path().to_path_buf())
        .run()
        .unwrap();
    assert!(report.failures.is_empty());
    assert_eq!(report.slowed, 6);
    assert_eq!(report.bare_runs, 0, "no failure: no bare runs needed");
}

#[test]
fn a_replay_campaign_reports_its_own_runs_as_the_reproduction_rate() {
    let mut fake = Fake {
        every: 1,
        fail_as: ended(Outcome::Crash, None),
        bare: Outcome::Ok,
        launches: 0,
        bare_launches: 0,
    };
    let recipe = Recipe::derive(PerturbMode::Noise, 12, &Knowledge::default(), 2);
    let logs = tempfile::tempdir().unwrap();
    let report = Campaign::new(
        &mut fake,
        Plan {
            replay: Some(recipe.clone()),
            ..plan(5)
        },
        shim(),
        logs.path().to_path_buf(),
    )
    .run()
    .unwrap();
    let f = &report.failures[0];
    assert_eq!(f.seed, recipe.seed_text());
    assert_eq!((f.replay.failed, f.replay.runs), (5, 5));
    assert_eq!(
        fake.launches,
        5 + 10,
        "5 replays, 10 bare runs, nothing else"
    );
}

#[test]
fn without_a_shim_the_shim_modes_run_at_scheduler_level_and_say_why() {
    let mut fake = Fake {
        every: 1000,
        fail_as: ended(Outcome::Crash, None),
        bare: Outcome::Ok,
        launches: 0,
        bare_launches: 0,
    };
    let logs = tempfile::tempdir().unwrap();
    let report = Campaign::new(
        &mut fake,
        plan(3),
        Err(crate::PerturbError::ShimIo {
            path: "/var/cache/qualify".into(),
            source: std::io::Error::from_raw_os_error(libc::EROFS),
        }),
        logs.path().to_path_buf(),
    )
    .run()
    .unwrap();
    let noise = report
        .mechanisms
        .iter()
        .find(|m| m.name == "shim noise")
        .unwrap();
    let why = noise.why_not.as_deref().unwrap();
    assert!(
        why.starts_with("perturbation shim at /var/cache/qualify: Read-only file system"),
        "{why}"
    );
    assert!(
        report
            .mechanisms
            .iter()
            .any(|m| m.name == "GOMAXPROCS (environment)" && m.runs == 3)
    );
}
