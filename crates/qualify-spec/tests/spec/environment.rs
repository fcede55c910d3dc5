//! `[environment]` and `[reproducibility]`: tolerance checks, repeats and their errors.

use crate::support::MINIMAL;
use qualify_spec::Spec;

fn parse(extra: &str) -> Result<Spec, Vec<String>> {
    crate::support::parse(&format!("{MINIMAL}{extra}"))
}

#[test]
fn defaults_without_the_tables() {
    let spec = parse("").unwrap();
    assert_eq!(spec.environment.tools, None);
    assert_eq!(spec.reproducibility.repeat, 1);
    assert!(!spec.reproducibility.nondeterministic);
}

#[test]
fn tools_and_reproducibility_are_read() {
    let spec = parse(
        "[environment]\ntools = [\"cc --version\", \" python3 --version \"]\n\n[reproducibility]\nrepeat = 3\nnondeterministic = true\ntolerance_check = \"./cmp\"\n",
    )
    .unwrap();
    assert_eq!(
        spec.environment.tools,
        Some(vec!["cc --version".into(), "python3 --version".into()])
    );
    assert_eq!(spec.reproducibility.repeat, 3);
    assert!(spec.reproducibility.nondeterministic);
    assert_eq!(
        spec.reproducibility
            .tolerance_check
            .as_ref()
            .map(ToString::to_string),
        Some("./cmp".to_string())
    );
}

#[test]
fn target_concurrency_and_workload_are_read() {
    let spec =
        parse("[target]\ncores = 8\nconcurrency = 16\nworkload = { n = 1e6, m = 200 }\n").unwrap();
    let t = spec.target.unwrap();
    assert_eq!(t.concurrency, Some(16));
    assert_eq!(t.workload["n"], 1e6);
    assert_eq!(t.workload["m"], 200.0);
    let errs = parse("[target]\nworkload = { n = \"big\" }\n").unwrap_err();
    assert!(
        errs[0].starts_with(
            "dir/qualify.toml:8:18: error: target.workload.n must be a positive number"
        ),
        "{errs:?}"
    );
}

#[test]
fn errors_are_located() {
    let errs = parse("[environment]\ntools = [\"\"]\n").unwrap_err();
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert!(
        errs[0]
            .starts_with("dir/qualify.toml:8:10: error: environment.tools entry must not be empty"),
        "{errs:?}"
    );
    let errs = parse("[reproducibility]\nrepeat = 0\n").unwrap_err();
    assert!(
        errs[0].starts_with(
            "dir/qualify.toml:8:10: error: reproducibility.repeat must be a positive integer"
        ),
        "{errs:?}"
    );
    let errs = parse("[reproducibility]\nnondeterministic = true\n").unwrap_err();
    assert!(
        errs[0].starts_with(
            "dir/qualify.toml:8:20: error: `nondeterministic = true` needs a `tolerance_check`"
        ),
        "{errs:?}"
    );
    let errs = parse("[environment]\ntool = []\n").unwrap_err();
    assert!(errs[0].contains("tool"), "{errs:?}");
}
