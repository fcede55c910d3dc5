//! Development coverage of the operating region: which axis values the recorded commands ran
//! the artifact with. The spec's command template (`./transfer --threads {threads}`), its
//! launcher and `[artifact.env]` are matched against each recorded simple command: the
//! artifact's own file anchors the match (its program, or the script an interpreter runs —
//! `python3 front.py` is found as `python front.py` or `./front.py`), then the words after it
//! are matched word for word, else option by option (`--threads 1`, `--threads=1`), else
//! positionally when the counts agree. Only literal values count (`$N` or a glob recovers
//! nothing); commands that do not run the artifact are counted, never guessed at.

use std::collections::BTreeMap;

use qualify_model::{Params, Value};
use serde::{Deserialize, Serialize};

use crate::shell::{Simple, basename, simple_commands};

/// What the spec says about the artifact, as the reader needs it. Placeholders are kept.
#[derive(Debug, Clone, Default)]
pub struct SpecView {
    /// The artifact's command: its argv, or the words of a shell command string.
    pub command: Vec<String>,
    /// `[artifact] launcher`, split into words.
    pub launcher: Vec<String>,
    /// `[artifact.env]`: name → template.
    pub env: Vec<(String, String)>,
    /// `[functional] command`, as written.
    pub functional: Option<String>,
    /// `[artifact] build`, as written.
    pub build: Option<String>,
    /// The declared axes, in order.
    pub axes: Vec<String>,
}

impl SpecView {
    /// The command words of a shell command template: its last simple command that holds a
    /// placeholder (else its last one), with that command's own assignments added to `env`.
    pub fn shell_command(&mut self, template: &str) {
        let simples = simple_commands(template);
        let pick = simples
            .iter()
            .rev()
            .find(|s| s.words.iter().any(|w| w.contains('{')))
            .or_else(|| simples.iter().rev().find(|s| s.program() != Some("cd")));
        if let Some(s) = pick {
            self.command = s.words.clone();
            self.env.extend(s.env.iter().cloned());
        }
    }
}

/// Interpreters whose first non-option argument is the artifact's own file.
pub fn is_interpreter(program: &str) -> bool {
    let p = program.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    matches!(
        p,
        "python"
            | "pypy"
            | "node"
            | "nodejs"
            | "deno"
            | "bun"
            | "ruby"
            | "perl"
            | "php"
            | "bash"
            | "sh"
            | "zsh"
            | "dash"
            | "ksh"
            | "Rscript"
            | "julia"
            | "lua"
            | "luajit"
    )
}

/// Programs that run another program given among their arguments.
fn is_runner(program: &str) -> bool {
    is_interpreter(program)
        || matches!(
            program,
            "mpirun"
                | "mpiexec"
                | "srun"
                | "aprun"
                | "valgrind"
                | "numactl"
                | "perf"
                | "strace"
                | "ltrace"
                | "gdb"
                | "setarch"
                | "chrt"
                | "prlimit"
        )
}

#[derive(Debug, Clone, PartialEq)]
enum Part {
    Lit(String),
    /// `{name}`: an axis (`Some`) or another placeholder such as `{port}` (`None`).
    Hole(Option<String>),
}

#[derive(Debug, Clone, PartialEq)]
struct Word(Vec<Part>);

impl Word {
    fn parse(text: &str, axes: &[String]) -> Word {
        let mut parts = Vec::new();
        let mut lit = String::new();
        let mut rest = text;
        while let Some(open) = rest.find(['{', '}']) {
            let (before, after) = rest.split_at(open);
            lit.push_str(before);
            if after.starts_with("{{") || after.starts_with("}}") {
                lit.push_str(&after[..1]);
                rest = &after[2..];
                continue;
            }
            if after.starts_with('{')
                && let Some(close) = after.find('}')
            {
                let name = &after[1..close];
                if !lit.is_empty() {
                    parts.push(Part::Lit(std::mem::take(&mut lit)));
                }
                let axis = axes.iter().any(|a| a == name).then(|| name.to_string());
                parts.push(Part::Hole(axis));
                rest = &after[close + 1..];
                continue;
            }
            lit.push_str(&after[..1]);
            rest = &after[1..];
        }
        lit.push_str(rest);
        if !lit.is_empty() {
            parts.push(Part::Lit(lit));
        }
        Word(parts)
    }

    fn literal(&self) -> Option<&str> {
        match self.0.as_slice() {
            [Part::Lit(s)] => Some(s),
            [] => Some(""),
            _ => None,
        }
    }

    fn has_axis(&self) -> bool {
        self.0.iter().any(|p| matches!(p, Part::Hole(Some(_))))
    }

    /// The captures when `text` matches this word (holes take one or more characters).
    fn capture(&self, text: &str) -> Option<Vec<(Option<String>, String)>> {
        fn go(parts: &[Part], text: &str, out: &mut Vec<(Option<String>, String)>) -> bool {
            match parts.split_first() {
                None => text.is_empty(),
                Some((Part::Lit(l), rest)) => text
                    .strip_prefix(l.as_str())
                    .is_some_and(|t| go(rest, t, out)),
                Some((Part::Hole(name), rest)) => {
                    let ends: Vec<usize> = text
                        .char_indices()
                        .map(|(i, _)| i)
                        .skip(1)
                        .chain(std::iter::once(text.len()))
                        .collect();
                    for end in ends {
                        out.push((name.clone(), text[..end].to_string()));
                        if go(rest, &text[end..], out) {
                            return true;
                        }
                        out.pop();
                    }
                    false
                }
            }
        }
        let mut out = Vec::new();
        go(&self.0, text, &mut out).then_some(out)
    }
}

/// A recovered text as an axis value: an integer, a float, or text; `None` for anything a
/// shell would expand (`$N`, `` `…` ``, globs).
pub fn literal_value(text: &str) -> Option<Value> {
    if text.is_empty() || text.contains(['$', '`', '*', '?', '[']) {
        return None;
    }
    if let Ok(i) = text.parse::<i64>() {
        return Some(Value::Int(i));
    }
    if let Ok(f) = text.parse::<f64>()
        && f.is_finite()
    {
        return Some(Value::Float(f));
    }
    Some(Value::Text(text.to_string()))
}

/// The spec's command template, ready to match recorded commands against.
#[derive(Debug, Clone)]
pub struct Template {
    launcher: Vec<Word>,
    /// The words after the anchor.
    args: Vec<Word>,
    env: Vec<(String, Word)>,
    /// The artifact's own file as recorded commands name it (a file name), or why none.
    anchor: Result<String, NoAnchor>,
    /// Axes that appear in the template (command, launcher or environment).
    in_template: Vec<String>,
    axes: Vec<String>,
}

/// Why recorded commands cannot be matched to the artifact: no file name to find them by (the
/// coverage states it as `unmatchable`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoAnchor {
    #[error("the spec's artifact command is empty")]
    EmptyCommand,
    /// The word naming the program is a placeholder (`{bin}`).
    #[error("the artifact's program `{0}` is itself a placeholder")]
    Placeholder(String),
}

/// One recorded run of the artifact.
#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    /// The axis values it ran with, in axis order.
    pub values: Vec<(String, Value)>,
}

impl Template {
    pub fn new(spec: &SpecView) -> Template {
        let axes = spec.axes.clone();
        let words: Vec<Word> = spec.command.iter().map(|w| Word::parse(w, &axes)).collect();
        let launcher: Vec<Word> = spec
            .launcher
            .iter()
            .map(|w| Word::parse(w, &axes))
            .collect();
        let env: Vec<(String, Word)> = spec
            .env
            .iter()
            .map(|(k, v)| (k.clone(), Word::parse(v, &axes)))
            .collect();
        let mut anchor_at = 0;
        if let Some(first) = words.first().and_then(Word::literal)
            && is_interpreter(basename(first))
        {
            let mut i = 1;
            while let Some(w) = words.get(i).and_then(Word::literal) {
                if w == "-m" || w == "-c" {
                    i += 1;
                    break;
                }
                if !w.starts_with('-') {
                    break;
                }
                i += 1;
            }
            anchor_at = i;
        }
        let anchor = match words.get(anchor_at) {
            None => Err(NoAnchor::EmptyCommand),
            Some(w) => match w.literal() {
                Some(l) if !l.is_empty() => Ok(basename(l).to_string()),
                _ => Err(NoAnchor::Placeholder(
                    spec.command.get(anchor_at).cloned().unwrap_or_default(),
                )),
            },
        };
        let mut in_template: Vec<String> = Vec::new();
        for w in words
            .iter()
            .chain(&launcher)
            .chain(env.iter().map(|(_, w)| w))
        {
            for p in &w.0 {
                if let Part::Hole(Some(a)) = p
                    && !in_template.contains(a)
                {
                    in_template.push(a.clone());
                }
            }
        }
        in_template.sort_by_key(|a| axes.iter().position(|x| x == a));
        Template {
            launcher,
            args: words
                .get(anchor_at + 1..)
                .map(<[Word]>::to_vec)
                .unwrap_or_default(),
            env,
            anchor,
            in_template,
            axes,
        }
    }

    /// The artifact's file name recorded commands are matched on, or why matching cannot run.
    pub fn anchor(&self) -> Result<&str, &NoAnchor> {
        self.anchor.as_deref()
    }

    /// Axes that appear in the command template, its launcher or `[artifact.env]`.
    pub fn axes_in_template(&self) -> &[String] {
        &self.in_template
    }

    /// The word naming the artifact's own file in one recorded simple command, when it runs
    /// the artifact (the program itself, or the script a runner runs).
    pub fn anchor_word<'a>(&self, simple: &'a Simple) -> Option<&'a str> {
        self.anchor_at(simple).map(|k| simple.words[k].as_str())
    }

    fn anchor_at(&self, simple: &Simple) -> Option<usize> {
        let anchor = self.anchor().ok()?;
        let words = &simple.words;
        let k = words.iter().position(|w| basename(w) == anchor)?;
        if k > 0 && !is_runner(basename(&words[0])) {
            let launcher = self.launcher.first().and_then(Word::literal).map(basename);
            if launcher != Some(basename(&words[0])) {
                return None;
            }
        }
        Some(k)
    }

    /// The runs of the artifact in one recorded simple command (`bash -c '…'` and scripts are
    /// followed by the shell parser: they arrive here as simple commands of their own).
    pub fn runs(&self, simple: &Simple) -> Vec<Run> {
        let words = &simple.words;
        let Some(k) = self.anchor_at(simple) else {
            return Vec::new();
        };
        let mut found: BTreeMap<String, Value> = BTreeMap::new();
        let mut keep = |captures: Vec<(Option<String>, String)>| {
            for (name, text) in captures {
                if let (Some(name), Some(v)) = (name, literal_value(&text)) {
                    found.entry(name).or_insert(v);
                }
            }
        };
        for c in match_args(&self.args, &words[k + 1..]) {
            keep(c);
        }
        if !self.launcher.is_empty() && k > 0 {
            for c in match_args(&self.launcher[1.min(self.launcher.len())..], &words[1..k]) {
                keep(c);
            }
        }
        for (name, template) in &self.env {
            if let Some((_, value)) = simple.env.iter().rev().find(|(n, _)| n == name)
                && let Some(c) = template.capture(value)
            {
                keep(c);
            }
        }
        let values = self
            .axes
            .iter()
            .filter_map(|a| found.get(a).map(|v| (a.clone(), v.clone())))
            .collect();
        vec![Run { values }]
    }
}

/// Captures of the template words `t` in the recorded words `r`: word for word when the counts
/// agree, else per option, then positionally.
fn match_args(t: &[Word], r: &[String]) -> Vec<Vec<(Option<String>, String)>> {
    if t.len() == r.len() {
        let all: Option<Vec<_>> = t.iter().zip(r).map(|(w, s)| w.capture(s)).collect();
        if let Some(all) = all {
            return all;
        }
    }
    let mut out = Vec::new();
    let mut used = vec![false; r.len()];
    let mut positional: Vec<&Word> = Vec::new();
    let mut i = 0;
    while i < t.len() {
        let w = &t[i];
        let flag = w.literal().filter(|l| l.starts_with('-') && l.len() > 1);
        if let (Some(flag), Some(value)) = (flag, t.get(i + 1).filter(|v| v.has_axis())) {
            for j in 0..r.len() {
                if used[j] {
                    continue;
                }
                if r[j] == flag && j + 1 < r.len() {
                    if let Some(c) = value.capture(&r[j + 1]) {
                        used[j] = true;
                        used[j + 1] = true;
                        out.push(c);
                        break;
                    }
                } else if let Some(rest) = r[j]
                    .strip_prefix(flag)
                    .and_then(|rest| rest.strip_prefix('=').or((flag.len() == 2).then_some(rest)))
                    .filter(|rest| !rest.is_empty())
                    && let Some(c) = value.capture(rest)
                {
                    used[j] = true;
                    out.push(c);
                    break;
                }
            }
            i += 2;
            continue;
        }
        if flag.is_some() {
            // A literal option of the template: consume the same word if present.
            if let Some(j) = (0..r.len()).find(|&j| !used[j] && Some(r[j].as_str()) == flag) {
                used[j] = true;
            }
        } else if w.has_axis() && matches!(w.0.first(), Some(Part::Lit(l)) if l.starts_with('-')) {
            if let Some((j, c)) = (0..r.len())
                .filter(|&j| !used[j])
                .find_map(|j| w.capture(&r[j]).map(|c| (j, c)))
            {
                used[j] = true;
                out.push(c);
            }
        } else {
            positional.push(w);
        }
        i += 1;
    }
    let rest: Vec<&String> = r
        .iter()
        .enumerate()
        .filter(|(j, s)| !used[*j] && !s.starts_with('-'))
        .map(|(_, s)| s)
        .collect();
    if !positional.is_empty() && positional.len() == rest.len() {
        let all: Option<Vec<_>> = positional
            .iter()
            .zip(&rest)
            .map(|(w, s)| w.capture(s))
            .collect();
        if let Some(all) = all {
            out.extend(all);
        }
    }
    out
}

/// Per axis, the values development ran the artifact with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AxisCoverage {
    pub axis: String,
    /// The axis appears in the command template, its launcher or `[artifact.env]`; when it does
    /// not, no recorded command can show its value.
    pub in_template: bool,
    /// Distinct values development ran (numbers ascending, then text in first-seen order).
    pub values: Vec<Value>,
    /// Runs of the artifact that set it.
    pub runs: u64,
    /// Runs of the artifact that did not set it (a default qualify cannot know) or set it to
    /// something that is not a literal.
    pub unset: u64,
}

/// What development ran of the operating region.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Coverage {
    /// The artifact's own file the commands were matched on (`transfer`, `front.py`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact: Option<String>,
    /// Why no command could be matched, when none could.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unmatchable: Option<String>,
    /// Runs of the artifact (simple commands that ran it; attempts that never started are
    /// not runs).
    pub artifact_runs: u64,
    /// Of those, how they ended: passed, failed, or not told by the trace.
    #[serde(default)]
    pub runs_passed: u64,
    #[serde(default)]
    pub runs_failed: u64,
    #[serde(default)]
    pub runs_unknown: u64,
    /// Runs of the artifact inside a branch the trace cannot tell was taken (`if`, `case`,
    /// `while` bodies, after `||`): not counted as runs.
    #[serde(default)]
    pub conditional_runs: u64,
    /// Attempts to run the artifact that never started it (not found, not executable, a `cd`
    /// before it failed), per reason: no coverage comes from them.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub attempts: BTreeMap<String, u64>,
    /// Runs from which at least one axis value was recovered.
    pub runs_with_values: u64,
    /// Runs of the spec's functional check.
    pub functional_runs: u64,
    /// Recorded commands that ran neither the artifact nor its functional check: counted, not
    /// guessed at.
    pub unmatched_commands: u64,
    pub axes: Vec<AxisCoverage>,
    /// Distinct combinations of recovered values, in first-seen order (at most
    /// [`MAX_POINTS`]).
    pub points: Vec<Params>,
}

/// How many distinct combinations [`Coverage::points`] keeps.
pub const MAX_POINTS: usize = 64;

impl Coverage {
    /// Empty coverage for `template`'s axes.
    pub fn new(template: &Template, axes: &[String]) -> Coverage {
        Coverage {
            artifact: template.anchor().ok().map(str::to_string),
            unmatchable: template.anchor().err().map(ToString::to_string),
            axes: axes
                .iter()
                .map(|a| AxisCoverage {
                    axis: a.clone(),
                    in_template: template.axes_in_template().contains(a),
                    values: Vec::new(),
                    runs: 0,
                    unset: 0,
                })
                .collect(),
            ..Coverage::default()
        }
    }

    /// Attempts that never started the artifact.
    pub fn attempts_total(&self) -> u64 {
        self.attempts.values().sum()
    }

    /// Count an attempt that never started the artifact.
    pub fn attempt(&mut self, why: &str) {
        *self.attempts.entry(why.to_string()).or_default() += 1;
    }

    /// Count one run of the artifact and how it ended (`Some(true)`: failed).
    pub fn add(&mut self, run: &Run, failed: Option<bool>) {
        self.artifact_runs += 1;
        match failed {
            Some(true) => self.runs_failed += 1,
            Some(false) => self.runs_passed += 1,
            None => self.runs_unknown += 1,
        }
        if !run.values.is_empty() {
            self.runs_with_values += 1;
            let mut point = Params::new();
            for (k, v) in &run.values {
                point.insert(k.clone(), v.clone());
            }
            if self.points.len() < MAX_POINTS && !self.points.contains(&point) {
                self.points.push(point);
            }
        }
        for a in &mut self.axes {
            match run.values.iter().find(|(k, _)| *k == a.axis) {
                Some((_, v)) => {
                    a.runs += 1;
                    if !a.values.contains(v) {
                        a.values.push(v.clone());
                        sort_values(&mut a.values);
                    }
                }
                None => a.unset += 1,
            }
        }
    }
}

/// Numbers ascending first, then text in the order it was seen.
pub fn sort_values(values: &mut [Value]) {
    values.sort_by(|a, b| match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => x.total_cmp(&y),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => std::cmp::Ordering::Equal,
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(command: &[&str], env: &[(&str, &str)], axes: &[&str]) -> SpecView {
        SpecView {
            command: command.iter().map(|s| s.to_string()).collect(),
            env: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            axes: axes.iter().map(|s| s.to_string()).collect(),
            ..SpecView::default()
        }
    }

    fn values(t: &Template, line: &str) -> Vec<Vec<(String, Value)>> {
        simple_commands(line)
            .iter()
            .flat_map(|s| t.runs(s))
            .map(|r| r.values)
            .collect()
    }

    fn v(pairs: &[(&str, i64)]) -> Vec<(String, Value)> {
        pairs
            .iter()
            .map(|(k, n)| (k.to_string(), Value::Int(*n)))
            .collect()
    }

    #[test]
    fn options_in_any_order_and_form_recover_axis_values() {
        let t = Template::new(&spec(
            &[
                "./transfer",
                "--threads",
                "{threads}",
                "--rounds",
                "{rounds}",
            ],
            &[],
            &["threads", "rounds"],
        ));
        assert_eq!(t.anchor(), Ok("transfer"));
        assert_eq!(
            values(&t, "./transfer --threads 1 --rounds 10"),
            vec![v(&[("threads", 1), ("rounds", 10)])]
        );
        assert_eq!(
            values(&t, "cd x && ./transfer --rounds=100 --threads 2 | tail"),
            vec![v(&[("threads", 2), ("rounds", 100)])]
        );
        assert_eq!(
            values(&t, "time build/transfer --threads 4"),
            vec![v(&[("threads", 4)])]
        );
        assert_eq!(values(&t, "./transfer --check"), vec![v(&[])]);
        assert_eq!(values(&t, "./transfer --threads $N"), vec![v(&[])]);
        assert!(values(&t, "cat transfer.c; ls transfer; make").is_empty());
        assert_eq!(
            values(&t, "bash -c './transfer --threads 8'"),
            vec![v(&[("threads", 8)])]
        );
        assert_eq!(
            values(&t, "valgrind ./transfer --threads 2 --rounds 10"),
            vec![v(&[("threads", 2), ("rounds", 10)])]
        );
    }

    #[test]
    fn interpreters_positionals_env_and_inline_templates() {
        let t = Template::new(&spec(
            &["python3", "-u", "front.py", "{port}", "{workers}"],
            &[],
            &["workers"],
        ));
        assert_eq!(t.anchor(), Ok("front.py"));
        assert_eq!(
            values(&t, "python front.py 8080 4"),
            vec![v(&[("workers", 4)])]
        );
        assert_eq!(values(&t, "./front.py 8080 3"), vec![v(&[("workers", 3)])]);
        assert!(values(&t, "python other.py 1 2").is_empty());

        let t = Template::new(&spec(
            &["./omp", "-n{n}", "--size={size}"],
            &[("OMP_NUM_THREADS", "{threads}")],
            &["threads", "n", "size"],
        ));
        assert_eq!(
            values(&t, "OMP_NUM_THREADS=8 ./omp --size=2.5 -n100"),
            vec![vec![
                ("threads".to_string(), Value::Int(8)),
                ("n".to_string(), Value::Int(100)),
                ("size".to_string(), Value::Float(2.5)),
            ]]
        );
        assert_eq!(
            values(&t, "export OMP_NUM_THREADS=2; ./omp"),
            vec![v(&[("threads", 2)])]
        );
        let t = Template::new(&spec(&["{bin}", "x"], &[], &["bin"]));
        assert_eq!(
            t.anchor().unwrap_err().to_string(),
            "the artifact's program `{bin}` is itself a placeholder"
        );
        let t = Template::new(&spec(&[], &[], &[]));
        assert_eq!(
            t.anchor().unwrap_err().to_string(),
            "the spec's artifact command is empty"
        );
    }

    #[test]
    fn coverage_counts_runs_values_and_unset_axes() {
        let t = Template::new(&spec(
            &["./t", "--threads", "{threads}", "--rounds", "{rounds}"],
            &[],
            &["threads", "rounds", "mode"],
        ));
        let axes: Vec<String> = ["threads", "rounds", "mode"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let mut c = Coverage::new(&t, &axes);
        for line in [
            "./t --threads 1 --rounds 10",
            "./t --threads 1",
            "./t",
            "./t --threads 1 --rounds 10",
        ] {
            for s in simple_commands(line) {
                for r in t.runs(&s) {
                    c.add(&r, None);
                }
            }
        }
        assert_eq!(c.artifact_runs, 4);
        assert_eq!(c.runs_with_values, 3);
        assert_eq!(c.axes[0].values, vec![Value::Int(1)]);
        assert_eq!((c.axes[0].runs, c.axes[0].unset), (3, 1));
        assert_eq!((c.axes[1].runs, c.axes[1].unset), (2, 2));
        assert!(!c.axes[2].in_template);
        assert_eq!(c.points.len(), 2);
    }
}
