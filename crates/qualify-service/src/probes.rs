//! How the spec's runs become probes ([`SpecProbes`], for [`Spec`]): the one place a spec's
//! plain description — the rendered command and environment, the workdir, `[limits]` and the
//! memory axis, the sandbox policy — is turned into the probe engine's [`ProbeSpec`], so the
//! spec stays a configuration crate that depends on no engine. Service cells, their
//! dependencies and checks, and the run's build, checks and batch cells all probe through it.

use std::ffi::OsString;

use qualify_model::{BackendChoice, Params};
use qualify_probe::{ProbeSpec, Sandbox};
use qualify_spec::Spec;

/// A spec's runs as probes.
pub trait SpecProbes {
    /// How to probe a command of the spec's own (the build, the functional check, a tolerance
    /// or held-out check): in the artifact's workdir, under `[limits]`, with no extra
    /// environment.
    fn command_probe(&self, argv: Vec<OsString>, backend: BackendChoice) -> ProbeSpec;

    /// How to probe the cell whose axis values are `params`: the artifact's command (under its
    /// launcher) and environment rendered, in its workdir, under the cell's limits.
    fn cell_probe(&self, params: &Params, backend: BackendChoice) -> ProbeSpec;

    /// [`SpecProbes::cell_probe`] for a cell run as a Slurm job: `[executor] launcher`, when
    /// given, in place of `[artifact] launcher`.
    fn slurm_cell_probe(&self, params: &Params, backend: BackendChoice) -> ProbeSpec;
}

impl SpecProbes for Spec {
    fn command_probe(&self, argv: Vec<OsString>, backend: BackendChoice) -> ProbeSpec {
        ProbeSpec {
            argv,
            workdir: Some(self.artifact.workdir.clone()),
            env: Vec::new(),
            limits: self.limits.to_probe_limits(),
            backend,
            control: None,
            sandbox: Sandbox::from_policy(&self.sandbox_policy()),
            shared_files: Vec::new(),
            stdio: None,
        }
    }

    fn cell_probe(&self, params: &Params, backend: BackendChoice) -> ProbeSpec {
        ProbeSpec {
            argv: self
                .artifact
                .argv(params)
                .into_iter()
                .map(Into::into)
                .collect(),
            workdir: Some(self.artifact.workdir.clone()),
            env: self
                .artifact
                .env(params)
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
            limits: self.limits_for(params),
            backend,
            control: None,
            sandbox: Sandbox::from_policy(&self.sandbox_policy()),
            shared_files: Vec::new(),
            stdio: None,
        }
    }

    fn slurm_cell_probe(&self, params: &Params, backend: BackendChoice) -> ProbeSpec {
        let mut probe = self.cell_probe(params, backend);
        probe.argv = self
            .slurm_argv(params)
            .into_iter()
            .map(Into::into)
            .collect();
        probe
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_spec_s_policy_is_the_probe_s_sandbox_with_every_home_hidden() {
        let spec = Spec::parse(
            "[artifact]\nname = \"a\"\ncommand = \"./a {n}\"\nenv = { N = \"{n}\" }\n[claim]\nlevel = \"trial\"\n[sandbox]\nnetwork = \"none\"\n[limits]\nmemory = \"64MiB\"\n[[axis]]\nname = \"n\"\nkind = \"workload\"\nvalues = [1, 2]\n",
            "/p/q.toml",
        )
        .unwrap();
        let mut params = Params::new();
        params.insert("n", qualify_model::Value::Int(2));
        let probe = spec.cell_probe(&params, BackendChoice::Auto);
        assert!(matches!(
            probe.sandbox.network,
            qualify_probe::Network::None
        ));
        assert!(probe.sandbox.private_workdir.wanted());
        assert!(
            probe
                .sandbox
                .hidden
                .iter()
                .all(|h| h.role == qualify_probe::Role::Home)
        );
        assert_eq!(probe.limits.memory_bytes, Some(64 << 20));
        assert_eq!(probe.env, vec![("N".into(), "2".into())]);
        let argv: Vec<String> = probe
            .argv
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert_eq!(argv, spec.artifact.argv(&params));
        assert_eq!(
            spec.slurm_cell_probe(&params, BackendChoice::Auto).argv,
            probe.argv
        );
    }
}
