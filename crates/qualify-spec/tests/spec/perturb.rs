//! `[perturb]` and `[claim] perturb`: campaigns of schedule perturbation and their errors.

use crate::support::{MINIMAL, errors, valid};

#[test]
fn defaults_and_every_key() {
    let spec = valid(&format!("{MINIMAL}[perturb]\n"));
    assert_eq!(spec.perturb, Some(qualify_spec::Perturb::default()));
    let spec = valid(&format!(
        "{MINIMAL}[perturb]\nruns = 1000\nmodes = [\"noise\", \"sched\"]\nseed = 7\nreplays = 30\nminimise = false\ndepth = 2\nbudget = \"250ms\"\n"
    ));
    let p = spec.perturb.unwrap();
    assert_eq!((p.runs, p.seed, p.replays, p.depth), (1000, 7, 30, 2));
    assert_eq!(p.modes.len(), 2);
    assert!(!p.minimise);
    assert_eq!(p.budget, std::time::Duration::from_millis(250));
}

#[test]
fn bad_values_are_located_with_a_fix() {
    let errors = errors(&format!(
        "{MINIMAL}[perturb]\nruns = 0\nmodes = [\"chaos\"]\ndepth = 40\nbudget = \"2h\"\n"
    ))
    .join("\n");
    for want in [
        "perturb.runs is 0",
        "perturbation mode",
        "perturb.depth is 40",
        "perturb.budget is over an hour",
    ] {
        assert!(errors.contains(want), "missing `{want}` in:\n{errors}");
    }
    assert!(errors.contains("dir/qualify.toml:"), "{errors}");
}

#[test]
fn perturbation_runs_batch_cells_here_only() {
    let service = errors(&format!(
        "{MINIMAL}[service]\nready = {{ tcp = true, within = \"5s\" }}\n[perturb]\n"
    ))
    .join("\n");
    assert!(service.contains("[perturb] runs batch cells"), "{service}");
    let slurm = errors(&format!(
        "{MINIMAL}[executor]\nkind = \"slurm\"\n[perturb]\n"
    ))
    .join("\n");
    assert!(slurm.contains("[perturb] runs on this machine"), "{slurm}");
}

#[test]
fn the_claim_may_require_perturbation_for_production() {
    let spec = valid(&MINIMAL.replace(
        "level = \"trial\"",
        "level = \"trial\"\nperturb = \"required\"",
    ));
    assert!(spec.claim.perturb_required);
    assert!(!valid(MINIMAL).claim.perturb_required, "off by default");
    let bad = errors(&MINIMAL.replace(
        "level = \"trial\"",
        "level = \"trial\"\nperturb = \"always\"",
    ))
    .join("\n");
    assert!(bad.contains("claim.perturb is `always`"), "{bad}");
}
