//! The environment of a run for the reproducibility layer: the fingerprint (OS, kernel, CPU,
//! tools, lockfiles, git, environment with secrets redacted) and the spec's `[reproducibility]`
//! declaration, with its tolerance check run once — in the artifact's workdir, under the spec's
//! limits — when output is declared nondeterministic and the run was not interrupted.

use qualify_evidence as ev;
use qualify_evidence::ReproducibilityDecl;
use qualify_service::SpecProbes;
use qualify_trust::Fingerprint;
use qualify_trust::fingerprint::{self, FingerprintInputs};

use super::Context;

pub fn collect(
    ctx: &Context<'_>,
    backend_used: &str,
    artifact_sha256: Option<String>,
    interpreter_tool: Option<String>,
    interrupted: bool,
) -> (Option<Fingerprint>, ReproducibilityDecl) {
    let spec = ctx.spec;
    let fp = fingerprint::collect(&FingerprintInputs {
        workdir: spec.artifact.workdir.clone(),
        tools: spec.environment.tools.clone(),
        artifact_sha256,
        spec_sha256: ev::sha256_hex(spec.source.as_bytes()),
        qualify_version: env!("CARGO_PKG_VERSION").to_string(),
        backend: backend_used.to_string(),
        extra_tools: interpreter_tool.into_iter().collect(),
    });
    let repro = &spec.reproducibility;
    let mut decl = ReproducibilityDecl {
        nondeterministic: repro.nondeterministic,
        tolerance_check: repro.tolerance_check.as_ref().map(ToString::to_string),
        tolerance_result: None,
    };
    if let Some(check) = repro.tolerance_check.as_ref().filter(|_| !interrupted) {
        ctx.say(&format!("tolerance check: {check}"));
        let probe = spec.command_probe(
            check.argv().into_iter().map(Into::into).collect(),
            ctx.args.backend,
        );
        match qualify_probe::probe(&probe, ctx.cancel) {
            Ok(r) => decl.tolerance_result = Some(r),
            Err(e) => eprintln!(
                "qualify: warning: the tolerance check `{check}` could not start: {e}; the reproducibility layer stays partial"
            ),
        }
    }
    (Some(fp), decl)
}
