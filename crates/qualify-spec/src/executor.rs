//! `[executor]`: where cells run. `kind = "local"` (the default: the probe engine on this
//! machine) or `kind = "slurm"` (one Slurm job per cell, in job arrays) with `partition`,
//! `account`, `qos`, extra `sbatch_options`, a `pending_limit` after which a cell that has
//! not started is reported as not started, and a `launcher` that replaces `[artifact] launcher`
//! under Slurm (e.g. `srun --mpi=pmix -n {ranks}` where the artifact says `mpirun -n {ranks}`).
//! Slurm-only keys under `kind = "local"` are errors.

use std::time::Duration;

use serde::{Deserialize, Serialize, Serializer};
use toml::{Spanned, Value};

use crate::check::{Checker, PlaceholderUse};

/// Which executor runs the cells.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ExecutorKind {
    #[default]
    Local,
    Slurm,
}

/// The checked `[executor]` table.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Executor {
    pub kind: ExecutorKind,
    pub partition: Option<String>,
    pub account: Option<String>,
    pub qos: Option<String>,
    pub sbatch_options: Vec<String>,
    #[serde(rename = "pending_limit_seconds", serialize_with = "seconds")]
    pub pending_limit: Option<Duration>,
    /// Replaces `[artifact] launcher` for cells run as Slurm jobs (a template like it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub launcher: Option<String>,
}

fn seconds<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
    d.map(|d| d.as_secs_f64()).serialize(s)
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawExecutor {
    kind: Option<Spanned<String>>,
    partition: Option<Spanned<String>>,
    account: Option<Spanned<String>>,
    qos: Option<Spanned<String>>,
    sbatch_options: Option<Spanned<Vec<String>>>,
    pending_limit: Option<Spanned<Value>>,
    launcher: Option<Spanned<String>>,
}

pub(crate) fn check(
    raw: RawExecutor,
    ck: &mut Checker<'_>,
    uses: &mut Vec<PlaceholderUse>,
) -> Executor {
    let kind = match &raw.kind {
        None => ExecutorKind::Local,
        Some(k) => match k.get_ref().as_str() {
            "local" => ExecutorKind::Local,
            "slurm" => ExecutorKind::Slurm,
            other => {
                ck.error_help(
                    k.span(),
                    format!("unknown executor kind `{other}`"),
                    "expected \"local\" (this machine) or \"slurm\"",
                );
                ExecutorKind::Local
            }
        },
    };
    let text = |ck: &mut Checker<'_>, v: &Option<Spanned<String>>, what: &str| {
        v.as_ref().map(|v| ck.non_empty(v, what))
    };
    let partition = text(ck, &raw.partition, "executor.partition");
    let account = text(ck, &raw.account, "executor.account");
    let qos = text(ck, &raw.qos, "executor.qos");
    let pending_limit = raw.pending_limit.as_ref().and_then(|p| ck.duration(p));
    let launcher = raw.launcher.as_ref().map(|l| {
        let text = ck.non_empty(l, "executor.launcher");
        uses.extend(ck.template(&text, l.span()));
        text
    });
    let mut sbatch_options = Vec::new();
    if let Some(opts) = &raw.sbatch_options {
        for o in opts.get_ref() {
            if !o.starts_with('-') {
                ck.error_help(
                    opts.span(),
                    format!("executor.sbatch_options entry `{o}` is not an option"),
                    "write each sbatch option as one string, e.g. [\"--constraint=haswell\", \"--exclusive\"]",
                );
            }
            for owned in ["--array", "--job-name", "--output", "--parsable", "--chdir"] {
                if o == owned || o.starts_with(&format!("{owned}=")) {
                    ck.error_help(
                        opts.span(),
                        format!("executor.sbatch_options must not set {owned}"),
                        "qualify sets it to find the run's jobs and results",
                    );
                }
            }
            sbatch_options.push(o.clone());
        }
    }
    if kind == ExecutorKind::Local {
        let slurm_only = [
            raw.partition.as_ref().map(|s| s.span()),
            raw.account.as_ref().map(|s| s.span()),
            raw.qos.as_ref().map(|s| s.span()),
            raw.sbatch_options.as_ref().map(|s| s.span()),
            raw.pending_limit.as_ref().map(|s| s.span()),
            raw.launcher.as_ref().map(|s| s.span()),
        ];
        if let Some(span) = slurm_only.into_iter().flatten().next() {
            ck.error_help(
                span,
                "this [executor] key applies to Slurm only, but kind is \"local\"",
                "set kind = \"slurm\" in [executor], or remove the key",
            );
        }
    }
    Executor {
        kind,
        partition,
        account,
        qos,
        sbatch_options,
        pending_limit,
        launcher,
    }
}

#[cfg(test)]
mod tests {
    use crate::Spec;

    const BASE: &str = "[artifact]\nname = \"a\"\ncommand = \"true\"\n[claim]\nlevel = \"trial\"\n";

    #[test]
    fn slurm_executor_is_read() {
        let spec = Spec::parse(
            &format!(
                "{BASE}[executor]\nkind = \"slurm\"\npartition = \"debug\"\nsbatch_options = [\"--exclusive\"]\npending_limit = \"5m\"\n"
            ),
            "q.toml",
        )
        .unwrap();
        let e = spec.executor;
        assert_eq!(e.kind, super::ExecutorKind::Slurm);
        assert_eq!(e.partition.as_deref(), Some("debug"));
        assert_eq!(e.sbatch_options, vec!["--exclusive".to_string()]);
        assert_eq!(e.pending_limit, Some(std::time::Duration::from_secs(300)));
    }

    #[test]
    fn a_launcher_prefixes_the_command_and_uses_topology_placeholders() {
        let spec = Spec::parse(
            "[artifact]\nname = \"a\"\ncommand = \"./ring 10\"\nlauncher = \"mpirun -n {ranks}\"\n[claim]\nlevel = \"trial\"\n[[axis]]\nname = \"ranks\"\nkind = \"topology\"\nvalues = [1, 2]\n",
            "q.toml",
        )
        .unwrap();
        let params = std::collections::BTreeMap::from([("ranks".to_string(), 2)]);
        assert_eq!(
            spec.artifact.argv(&params),
            vec!["mpirun", "-n", "2", "/bin/sh", "-c", "./ring 10"],
            "a string command runs under the shell, once per rank"
        );
        assert_eq!(spec.executor.kind, super::ExecutorKind::Local);
    }

    #[test]
    fn an_executor_launcher_replaces_the_artifacts_under_slurm() {
        let spec = Spec::parse(
            "[artifact]\nname = \"a\"\ncommand = \"./ring 10\"\nlauncher = \"mpirun -n {ranks}\"\n[claim]\nlevel = \"trial\"\n[executor]\nkind = \"slurm\"\nlauncher = \"srun --mpi=pmix -n {ranks}\"\n[[axis]]\nname = \"ranks\"\nkind = \"topology\"\nvalues = [1, 2]\n",
            "q.toml",
        )
        .unwrap();
        let params = qualify_plan_params(2);
        let local = spec.artifact.argv(&params);
        let slurm = spec.slurm_argv(&params);
        assert_eq!(local, ["mpirun", "-n", "2", "/bin/sh", "-c", "./ring 10"]);
        assert_eq!(
            slurm,
            [
                "srun",
                "--mpi=pmix",
                "-n",
                "2",
                "/bin/sh",
                "-c",
                "./ring 10"
            ]
        );
        let err = Spec::parse(
            &format!("{BASE}[executor]\nkind = \"slurm\"\nlauncher = \"srun -n {{tasks}}\"\n"),
            "q.toml",
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("placeholder `{tasks}` has no axis"), "{err}");
        let err = Spec::parse(
            &format!("{BASE}[executor]\nlauncher = \"srun\"\n"),
            "q.toml",
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("applies to Slurm only"), "{err}");
    }

    fn qualify_plan_params(ranks: i64) -> qualify_model::Params {
        let mut p = qualify_model::Params::new();
        p.insert("ranks".to_string(), qualify_model::Value::Int(ranks));
        p
    }

    #[test]
    fn errors_are_located() {
        let err = Spec::parse(&format!("{BASE}[executor]\nkind = \"pbs\"\n"), "q.toml")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("q.toml:7:8: error: unknown executor kind `pbs`"),
            "{err}"
        );
        let err = Spec::parse(
            &format!("{BASE}[executor]\npartition = \"x\"\nsbatch_options = [\"--array=1\"]\n"),
            "q.toml",
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("q.toml:7:"), "{err}");
        assert!(err.contains("applies to Slurm only"), "{err}");
        assert!(err.contains("must not set --array"), "{err}");
    }
}
