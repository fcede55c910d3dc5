//! The analysis's JSON (`predicate.performance`) pinned byte for byte on the synthetic runs of
//! the tests above and on a mixed run that reaches the rest (three axes of every role, three
//! metrics including one where higher is better and one that does not scale, a censored run,
//! a cell error, a group too small for a model, predictions along both kinds of axis, rounds
//! with a precision not reached, and a baseline) and on terms the data cannot tell apart: a refactor must not change a byte of what `analyze` returns. A deliberate
//! change is re-blessed with `QUALIFY_BLESS=1 cargo test -p qualify-perf golden` (review the
//! diff in `src/tests/golden/`).

use std::path::PathBuf;

use qualify_model::Params;

use super::*;

fn metric(name: &str, unit: Option<&str>, better: Better) -> MetricDef {
    MetricDef {
        name: name.into(),
        unit: unit.map(str::to_string),
        better,
        estimator: if name == "cpu" {
            Estimator::Min
        } else {
            Estimator::Median
        },
    }
}

fn params(n: i64, threads: i64, mode: &str) -> Params {
    [
        ("n", qualify_model::Value::Int(n)),
        ("threads", qualify_model::Value::Int(threads)),
        ("mode", qualify_model::Value::Text(mode.to_string())),
    ]
    .into_iter()
    .collect()
}

/// n (workload) × threads (concurrency) × mode (other), wall/cpu/ops, `scale` times slower.
fn mixed_case(scale: f64) -> Input {
    let mut rng = Rng::new(23);
    let mut cells = Vec::new();
    let mut grid: Vec<(i64, i64, &str)> = Vec::new();
    for k in 10..=15 {
        for t in [1, 2, 4] {
            grid.push((1 << k, t, "a"));
        }
    }
    grid.push((1024, 1, "b"));
    for (n, t, mode) in grid {
        let serial = 1e-3 + 1e-10 * (n as f64).powi(2);
        let mut wall = Vec::new();
        let mut cpu = Vec::new();
        let mut ops = Vec::new();
        for run in 0..4u32 {
            let w = scale * serial * (0.2 + 0.8 / t as f64) * (1.0 + (rng.unit() - 0.5) * 0.04);
            let round = run + 1;
            wall.push(if n == 32768 && t == 4 && run == 0 {
                Sample::at_least(w).in_round(round)
            } else {
                Sample::measured(w).in_round(round)
            });
            cpu.push(Sample::measured(w * t as f64).in_round(round));
            ops.push(Sample::measured(n as f64 / w).in_round(round));
        }
        cells.push(CellInput {
            params: params(n, t, mode),
            samples: BTreeMap::from([
                ("wall".to_string(), wall),
                ("cpu".to_string(), cpu),
                ("ops".to_string(), ops),
            ]),
            errors: if n == 2048 && t == 2 {
                vec!["metric ops: `n/a` is not a number".to_string()]
            } else {
                Vec::new()
            },
        });
    }
    let expect = |axis: &str, metric: &str, rule| Expect {
        axis: axis.into(),
        metric: metric.into(),
        rule,
    };
    let reference = |p: Params, reference: f64| Reference {
        params: p,
        metric: "wall".into(),
        reference,
        lower: -0.2,
        upper: 0.2,
    };
    Input {
        repeat: Repeat::Fixed(4),
        warmup: 0,
        regression: Some(0.05),
        metrics: vec![
            metric("wall", Some("s"), Better::Lower),
            metric("cpu", Some("s"), Better::Lower),
            metric("ops", None, Better::Higher),
        ],
        axes: vec![
            AxisInput {
                name: "n".into(),
                kind: AxisKind::Workload,
            },
            AxisInput {
                name: "threads".into(),
                kind: AxisKind::Concurrency,
            },
            AxisInput {
                name: "mode".into(),
                kind: AxisKind::Custom,
            },
        ],
        cells,
        expects: vec![
            expect("n", "wall", ExpectRule::MaxExponent(2.2)),
            expect("n", "rss", ExpectRule::MaxExponent(1.0)),
            expect("threads", "wall", ExpectRule::MinEfficiency(0.5)),
            expect("threads", "ops", ExpectRule::MinEfficiency(0.3)),
            expect("threads", "rss", ExpectRule::MinEfficiency(0.3)),
        ],
        references: vec![
            reference(params(1024, 1, "a"), 0.0011),
            reference(params(32768, 4, "a"), 0.05),
        ],
        target_concurrency: Some(64.0),
        target_workload: BTreeMap::from([("n".to_string(), 1e6)]),
        baseline: None,
        rounds: Some(Rounds {
            seed: 42,
            rounds: 4,
            precision: Some(0.01),
            precision_metrics: vec!["wall".to_string()],
            max_repeat: Some(4),
            budget_seconds: None,
            stopped: "max_repeat reached (4 runs)".to_string(),
            wall_seconds: 1.5,
            schedule: "round 1: the plan's order; later rounds shuffled".to_string(),
            machine: None,
        }),
    }
}

/// [`mixed_case`] 20% slower, compared with the analysis of the original.
fn mixed_baseline_case() -> Input {
    let before = analyze(&mixed_case(1.0));
    let mut inp = mixed_case(1.2);
    inp.baseline = Some(BaselineInput {
        receipt: "b".repeat(64),
        performance: serde_json::to_value(&before).unwrap_or(Value::Null),
    });
    inp
}

fn cases() -> Vec<(&'static str, Input)> {
    vec![
        ("workload", workload_case()),
        ("censored", censored_case()),
        ("concurrency", concurrency_case()),
        ("references", references_case()),
        ("baseline-before", baseline_before_case()),
        ("baseline-same", baseline_case(1.0)),
        ("baseline-slower", baseline_case(1.3)),
        ("mixed", mixed_case(1.0)),
        ("mixed-baseline", mixed_baseline_case()),
        ("indistinguishable", indistinguishable_case()),
    ]
}

fn golden_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src/tests/golden")
}

#[test]
fn golden_analysis_is_unchanged() {
    let bless = std::env::var_os("QUALIFY_BLESS").is_some();
    let mut failures = Vec::new();
    for (case, input) in cases() {
        let mut text = serde_json::to_string_pretty(&analyze(&input)).unwrap();
        text.push('\n');
        let path = golden_dir().join(format!("{case}.json"));
        if bless {
            std::fs::create_dir_all(golden_dir()).unwrap();
            std::fs::write(&path, &text).unwrap();
            continue;
        }
        let golden = std::fs::read_to_string(&path).unwrap_or_else(|e| {
            panic!(
                "{}: {e}; create it with QUALIFY_BLESS=1 cargo test -p qualify-perf golden",
                path.display()
            )
        });
        if text != golden {
            let (line, (got, want)) = text
                .lines()
                .zip(golden.lines())
                .enumerate()
                .find(|(_, (a, b))| a != b)
                .unwrap_or((
                    text.lines().count().min(golden.lines().count()),
                    ("<end>", "<end>"),
                ));
            failures.push(format!(
                "{case}: the analysis changed at line {}:\n  golden: {want}\n  now:    {got}",
                line + 1
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{}\n(re-bless with QUALIFY_BLESS=1 only if the change is deliberate)",
        failures.join("\n")
    );
}
