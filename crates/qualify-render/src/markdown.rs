//! GitHub-flavoured Markdown for CI job summaries: verdict, layer table, cells that did not end
//! ok, development coverage (what development ran beside what qualify examined), boundaries, the claimed region, service cells under load, dependency faults, schedule perturbation, performance (the rounds, checks with
//! their verdicts, models with their plausible terms, noisy cells, predictions; when the receipt
//! has them), the target gap. One function per section, each formatting the rows of
//! [`crate::view`].

use std::fmt::Write;

use crate::perf_tables::{self, Standing};
use crate::text::{self, md_cell, num};
use crate::view::{self, Performance, View};

/// Rows of the failing-cells table before it is cut short.
const MAX_FAILING: usize = 50;
/// Rows of the service table before it is cut short.
const MAX_SERVICE: usize = 100;

fn status_mark(status: &str) -> &'static str {
    match status {
        "closed" => "✅",
        "failed" => "❌",
        "partial" => "⚠️",
        _ => "⚪",
    }
}

pub fn render(v: &View) -> String {
    let mut m = String::new();
    header(&mut m, v);
    layers(&mut m, v);
    cells(&mut m, v);
    development(&mut m, v);
    boundaries(&mut m, v);
    frontier(&mut m, v);
    claimed(&mut m, v);
    service(&mut m, v);
    faults(&mut m, v);
    perturbation(&mut m, v);
    if let Some(p) = v.performance() {
        rounds(&mut m, &p);
        errors(&mut m, &p);
        checks(&mut m, &p);
        models(&mut m, &p);
        noisy(&mut m, &p, &v.axis_order());
        predictions(&mut m, &p);
    }
    gap(&mut m, v);
    m
}

fn header(m: &mut String, v: &View) {
    let level = v.claim_level();
    let verdict = match v.supported() {
        Some(true) => format!("✅ {level} claim SUPPORTED"),
        Some(false) => format!("❌ {level} claim NOT SUPPORTED"),
        None => format!("⚪ {level} claim: no verdict recorded"),
    };
    let _ = writeln!(m, "## qualify: {} — {verdict}\n", md_cell(&v.artifact()));
    if let Some(sig) = v.signature() {
        let _ = writeln!(m, "_{}_\n", md_cell(&sig.line()));
    }
    let reasons = v.reasons();
    for r in &reasons {
        let _ = writeln!(m, "- {}", md_cell(r));
    }
    if !reasons.is_empty() {
        m.push('\n');
    }
    if v.incomplete() {
        m.push_str("> **Interrupted run:** only what finished counts as evidence.\n\n");
    }
}

fn layers(m: &mut String, v: &View) {
    m.push_str("### Layers\n\n| layer | status | summary | untested |\n|---|---|---|---|\n");
    for l in v.layers() {
        let _ = writeln!(
            m,
            "| {} | {} {} | {} | {} |",
            md_cell(&l.name),
            status_mark(&l.status),
            md_cell(&l.status),
            md_cell(&l.summary),
            if l.untested.is_empty() {
                "—".to_string()
            } else {
                md_cell(&l.untested.join("; "))
            }
        );
    }
}

fn cells(m: &mut String, v: &View) {
    let cells = v.cells();
    let failing = view::failures(&cells, &v.axis_order());
    if !cells.is_empty() {
        let _ = writeln!(
            m,
            "\n### Cells\n\n{} cell(s), {} ended ok, {} did not.",
            cells.len(),
            cells.len() - failing.len(),
            failing.len()
        );
    }
    if failing.is_empty() {
        return;
    }
    m.push_str("\n| cell | outcome | detail |\n|---|---|---|\n");
    for c in failing.iter().take(MAX_FAILING) {
        let _ = writeln!(
            m,
            "| {} | {} | {} |",
            md_cell(&c.cell),
            md_cell(&c.outcome),
            md_cell(&c.detail)
        );
    }
    if failing.len() > MAX_FAILING {
        let _ = writeln!(m, "\n… and {} more.", failing.len() - MAX_FAILING);
    }
}

fn development(m: &mut String, v: &View) {
    let Some(d) = v.development() else {
        return;
    };
    let _ = writeln!(m, "\n### Development coverage\n\n{}", md_cell(&d.sentence));
    if d.axes.is_empty() {
        return;
    }
    m.push_str("\n| axis | development ran | qualify examined | failed at |\n|---|---|---|---|\n");
    let list = |v: &[String]| {
        if v.is_empty() {
            "—".to_string()
        } else {
            md_cell(&v.join(", "))
        }
    };
    for a in &d.axes {
        let dev = if a.development.is_empty() && !a.in_template {
            "— (not in the command template)".to_string()
        } else {
            list(&a.development)
        };
        let _ = writeln!(
            m,
            "| {} | {dev} | {} | {} |",
            md_cell(&a.axis),
            list(&a.examined),
            list(&a.failed)
        );
    }
    if d.failing > 0 {
        let _ = writeln!(
            m,
            "\nFailing cells: {} where development never went, {} where it did, {} not placeable.",
            d.outside, d.inside, d.unknown
        );
    }
}

fn claimed(m: &mut String, v: &View) {
    let rows = v.claimed();
    if !rows.iter().any(|r| r.bounded) {
        return;
    }
    m.push_str("### Claimed region\n\n| axis | claim covers | cells beyond | headroom | required |\n|---|---|---|---|---|\n");
    for r in &rows {
        let headroom = if r.bounded {
            format!(
                "{}{}",
                if r.short { "❌ " } else { "" },
                md_cell(&r.headroom)
            )
        } else {
            "—".to_string()
        };
        let _ = writeln!(
            m,
            "| {} | {} | {} | {headroom} | {} |",
            md_cell(&r.axis),
            md_cell(&r.claims),
            md_cell(&r.cells_beyond),
            md_cell(&r.required)
        );
    }
    m.push('\n');
}

fn service(m: &mut String, v: &View) {
    let rows = v.services();
    if rows.is_empty() {
        return;
    }
    m.push_str(
        "\n### Service under load\n\nLatencies are corrected (from each request's intended start); the uncorrected ones (from the send) are in parentheses.\n\n\
         | cell | outcome | offered | answered | goodput | p50 | p99 | errors | dropped | objectives | stop | memory |\n\
         |---|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    let latency = |c: Option<f64>, u: Option<f64>| {
        let d = |x: Option<f64>| x.map_or_else(|| "—".to_string(), view::duration);
        format!("{} ({})", d(c), d(u))
    };
    for r in rows.iter().take(MAX_SERVICE) {
        let mark = match qualify_model::outcome::style_of(&r.outcome).severity {
            0 => "",
            1 => "⚪ ",
            _ => "❌ ",
        };
        let objectives: Vec<String> = r
            .slos
            .iter()
            .map(|x| {
                if x.held {
                    x.text()
                } else {
                    format!("**{}**", x.text())
                }
            })
            .collect();
        let objectives = if objectives.is_empty() {
            "—".to_string()
        } else {
            objectives.join("; ")
        };
        let _ = writeln!(
            m,
            "| {} | {mark}{} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            md_cell(&r.cell),
            md_cell(&r.outcome),
            md_cell(&r.offered_text()),
            md_cell(&r.achieved_text()),
            md_cell(&r.goodput_text()),
            latency(r.corrected.p50, r.uncorrected.p50),
            latency(r.corrected.p99, r.uncorrected.p99),
            md_cell(&r.errors_text()),
            r.dropped.map_or_else(|| "—".to_string(), num),
            md_cell(&objectives),
            md_cell(&r.stop_text()),
            md_cell(&r.memory_text()),
        );
    }
    if rows.len() > MAX_SERVICE {
        let _ = writeln!(m, "\n… and {} more.", rows.len() - MAX_SERVICE);
    }
    let shaped: Vec<&view::ServiceRow> = rows.iter().filter(|r| r.shape.is_some()).collect();
    if !shaped.is_empty() {
        m.push_str("\nLoad shapes (a ramp's seconds judged by the requests each offered):\n\n");
        for r in shaped.iter().take(MAX_SERVICE) {
            if let Some(shape) = &r.shape {
                let verdict = shape
                    .first_failed_text()
                    .map_or_else(String::new, |t| format!(": {t}"));
                let _ = writeln!(m, "- {}: {}{verdict}", r.name(), shape.describe());
            }
        }
    }
    for r in rows
        .iter()
        .filter(|r| !r.generators.is_empty())
        .take(MAX_SERVICE)
    {
        let _ = writeln!(
            m,
            "\nLoad generators of {} (one merged verdict):\n\n| generator | offered | sent | answered | lag p99 | CPU | saturated |\n|---|---|---|---|---|---|---|",
            md_cell(r.name())
        );
        for g in &r.generators {
            let _ = writeln!(
                m,
                "| {} | {} | {} | {} req/s | {} | {} s | {} |",
                g.index,
                g.offered_rate
                    .map_or_else(|| "—".to_string(), |x| format!("{} req/s", num(x))),
                g.sent,
                num(g.achieved_rate),
                g.schedule_lag
                    .p99
                    .map_or_else(|| "—".to_string(), view::duration),
                num(g.cpu_seconds),
                md_cell(&match (&g.saturated, &g.detail) {
                    (true, Some(d)) => format!("yes: {d}"),
                    (true, None) => "yes".to_string(),
                    _ => "no".to_string(),
                }),
            );
        }
    }
}

fn perturbation(m: &mut String, v: &View) {
    let rows = v.perturbation();
    if rows.is_empty() {
        return;
    }
    m.push_str("\n### Schedule perturbation\n\nEach cell also ran many times under seeded schedule noise; a failure is an interleaving the program allows, replayed from its seed beside as many bare runs (95% Wilson intervals).\n\n| cell | perturbed | failure | found | seed | replayed | bare | points |\n|---|---|---|---|---|---|---|---|\n");
    for r in &rows {
        let only = if r.only_under_perturbation {
            " (only under perturbation)"
        } else {
            ""
        };
        let mut points: Vec<String> = r.points.iter().map(|p| md_cell(p)).collect();
        if r.command != "—" {
            points.push(format!("`{}`", md_cell(&r.command).replace('`', "'")));
        }
        let _ = writeln!(
            m,
            "| {} | {} | {}{}{only} | {} | {} | {} | {} | {} |",
            md_cell(&r.cell),
            md_cell(&r.runs),
            if r.bad { "❌ " } else { "" },
            md_cell(&r.failure),
            md_cell(&r.found),
            md_cell(&r.seed),
            md_cell(&r.replay),
            md_cell(&r.bare),
            if points.is_empty() {
                "—".to_string()
            } else {
                points.join("<br>")
            },
        );
    }
}

fn faults(m: &mut String, v: &View) {
    let rows = v.faults();
    if rows.is_empty() {
        return;
    }
    let has = |pick: fn(&view::FaultRow) -> &str| rows.iter().any(|r| pick(r) != "—");
    let shown = [
        (has(|r| &r.pool), "pool"),
        (has(|r| &r.restart), "restart"),
        (has(|r| &r.writes), "writes"),
    ];
    let expected = has(|r| &r.expected);
    m.push_str("\n### Faults\n\nThe window's failed requests came back fast or timed out; goodput is answers that met `expect_status` per second. The `none` cell is the control.\n\n| cell | dependency | fault | behaviour |");
    let mut rule = "|---|---|---|---|".to_string();
    if expected {
        m.push_str(" expected |");
        rule.push_str("---|");
    }
    m.push_str(" in the window | goodput (before / during / after) | recovery | amplification (before / during / after) |");
    rule.push_str("---|---|---|---|");
    for (on, title) in shown {
        if on {
            let _ = write!(m, " {title} |");
            rule.push_str("---|");
        }
    }
    let _ = write!(m, " outcome | detail |\n{rule}---|---|\n");
    for r in &rows {
        let _ = write!(
            m,
            "| {} | {} | {} | {}{} |",
            md_cell(&r.cell),
            md_cell(&r.dependency),
            md_cell(&r.fault),
            if r.unexpected { "❌ " } else { "" },
            md_cell(&r.verdict),
        );
        if expected {
            let _ = write!(m, " {} |", md_cell(&r.expected));
        }
        let _ = write!(
            m,
            " {} | {} | {} | {} |",
            md_cell(&r.window),
            md_cell(&r.goodput),
            md_cell(&r.recovery),
            md_cell(&r.amplification)
        );
        for ((on, _), text) in shown.iter().zip([&r.pool, &r.restart, &r.writes]) {
            if *on {
                let _ = write!(m, " {} |", md_cell(text));
            }
        }
        let _ = writeln!(
            m,
            " {}{} | {} |",
            if r.bad { "❌ " } else { "" },
            md_cell(&r.outcome),
            md_cell(if r.detail.is_empty() {
                "—"
            } else {
                &r.detail
            })
        );
    }
}

/// The capacity frontier: its sentence and a table, one row per combination of the other axes.
fn frontier(m: &mut String, v: &View) {
    if let Some(f) = v.frontier() {
        m.push_str("\n### Capacity frontier\n\n");
        let _ = writeln!(m, "**{}**\n", md_cell(&f.sentence));
        let mut header: Vec<String> = f.over.iter().map(|k| md_cell(k)).collect();
        header.extend(["holds up to", "fails from", "beyond", "probes"].map(str::to_string));
        let _ = writeln!(m, "| {} |", header.join(" | "));
        let _ = writeln!(m, "|{}", " --- |".repeat(header.len()));
        for r in &f.rows {
            let mut cells: Vec<String> = r.conditions.iter().map(|c| md_cell(c)).collect();
            cells.extend([
                md_cell(&r.holds_text(&f.unit)),
                md_cell(&r.fails_text(&f.unit)),
                md_cell(&r.beyond_text()),
                r.probes.to_string(),
            ]);
            let _ = writeln!(m, "| {} |", cells.join(" | "));
        }
        let _ = writeln!(
            m,
            "\n{} probes over {} searches along `{}`, each near its own edge (not the full grid).",
            f.probes,
            f.rows.len(),
            f.axis
        );
    }
}

fn boundaries(m: &mut String, v: &View) {
    let b = v.boundaries();
    if b.is_empty() {
        return;
    }
    let capacity: Vec<&String> = b.iter().filter_map(|x| x.capacity.as_ref()).collect();
    if !capacity.is_empty() {
        m.push_str("\n### Capacity\n\n");
        for c in capacity {
            let _ = writeln!(m, "**{}**\n", md_cell(c));
        }
    }
    m.push_str("\n### Boundaries\n\n");
    for x in &b {
        let _ = writeln!(m, "- {}", md_cell(&x.sentence()));
    }
}

fn rounds(m: &mut String, p: &Performance) {
    let Some(r) = &p.rounds else {
        return;
    };
    let estimators: Vec<String> = p
        .metrics
        .iter()
        .filter(|x| !x.estimator.is_empty())
        .map(|x| format!("{} {}", x.name, x.estimator))
        .collect();
    let _ = writeln!(
        m,
        "\n**Performance runs:** repeat {}, {} round(s), seed {} — {}.{}",
        md_cell(if p.repeat.is_empty() { "?" } else { &p.repeat }),
        r.rounds.map_or_else(|| "?".to_string(), |n| n.to_string()),
        md_cell(&r.seed),
        md_cell(&r.stopped),
        if estimators.is_empty() {
            String::new()
        } else {
            format!(" Estimators: {}.", md_cell(&estimators.join(", ")))
        }
    );
}

fn noisy(m: &mut String, p: &Performance, order: &[String]) {
    let noisy = p.noisy();
    if noisy.is_empty() {
        return;
    }
    m.push_str("\n### Noisy cells\n\n| metric | cell | runs | why |\n|---|---|---|---|\n");
    for s in &noisy {
        let _ = writeln!(
            m,
            "| {} | {} | {} | {} |",
            md_cell(&s.metric),
            md_cell(&text::params(&s.params, order)),
            s.n,
            md_cell(&s.noise.join("; "))
        );
    }
}

fn errors(m: &mut String, p: &Performance) {
    if p.errors.is_empty() {
        return;
    }
    m.push_str("\n### Performance analysis errors\n\n");
    for e in &p.errors {
        let _ = writeln!(m, "- {}", md_cell(e));
    }
}

fn checks(m: &mut String, p: &Performance) {
    if p.checks.is_empty() {
        return;
    }
    let _ = writeln!(
        m,
        "\n### Performance checks\n\n| result | {} |\n|---|{}",
        perf_tables::CHECK_COLUMNS.join(" | "),
        "---|".repeat(perf_tables::CHECK_COLUMNS.len())
    );
    for c in perf_tables::checks(p) {
        let mark = match c.standing {
            Standing::Held => "✅",
            Standing::Failed => "❌",
            Standing::Inconclusive => "⚠️",
            Standing::Undecided => "⚪",
        };
        let cells: Vec<String> = c.cells().iter().map(|x| md_cell(x)).collect();
        let _ = writeln!(m, "| {mark} {} | {} |", c.result, cells.join(" | "));
    }
}

fn models(m: &mut String, p: &Performance) {
    if p.models.is_empty() {
        return;
    }
    m.push_str("\n### Scaling models\n\n| axis | metric | fixed | form | exponent (95% CI) | log exponent | error | points | also plausible |\n|---|---|---|---|---|---|---|---|---|\n");
    for x in perf_tables::models(p) {
        let _ = writeln!(
            m,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            md_cell(&x.axis),
            md_cell(&x.metric),
            md_cell(&x.fixed),
            md_cell(&x.form),
            x.exponent,
            x.log_exponent,
            x.error,
            x.points,
            x.also_plausible()
                .map_or_else(|| "—".to_string(), |o| md_cell(&o))
        );
    }
}

fn predictions(m: &mut String, p: &Performance) {
    if p.predictions.is_empty() {
        return;
    }
    m.push_str("\n### Model predictions (not evidence)\n\n");
    for x in &p.predictions {
        let _ = writeln!(
            m,
            "- {} at {}={}: {} {} ({}){}",
            md_cell(&x.metric),
            md_cell(&x.axis),
            x.at.map(num).unwrap_or_else(|| "?".into()),
            x.value.map(num).unwrap_or_else(|| "?".into()),
            md_cell(&p.unit(&x.metric)),
            md_cell(&x.model),
            if x.note.is_empty() {
                String::new()
            } else {
                format!(" — {}", md_cell(&x.note))
            }
        );
    }
}

fn gap(m: &mut String, v: &View) {
    let gaps = v.gaps();
    if gaps.is_empty() {
        if v.has_target() {
            m.push_str(
                "\n### Target gap\n\nThe tested region reached every declared target fact.\n",
            );
        }
        return;
    }
    m.push_str(
        "\n### Target gap\n\n| gap | target | tested | detail | waiver |\n|---|---|---|---|---|\n",
    );
    for g in &gaps {
        let _ = writeln!(
            m,
            "| {} | {} | {} | {} | {} |",
            md_cell(&g.name),
            md_cell(&g.target),
            md_cell(&g.tested),
            md_cell(&g.detail),
            md_cell(g.waiver.as_deref().unwrap_or("—"))
        );
    }
}
