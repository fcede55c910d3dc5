//! What `qualify run` adds for trust: the signing key (`--sign KEY`, loaded before anything
//! runs so a bad key never wastes a run), the environment fingerprint and the reproducibility
//! declaration for the record (repeats per cell, the tolerance check run once after the cells),
//! and the DSSE envelope that replaces the bare Statement when signing.

use std::path::Path;

use qualify_evidence as ev;
use qualify_probe::{BackendChoice, CancelToken, ProbeError, ProbeResult, ProbeSpec};
use qualify_spec::Spec;
use qualify_trust::fingerprint::{self, FingerprintInputs};
use qualify_trust::{Envelope, IN_TOTO_PAYLOAD_TYPE, PrivateKey};

/// Read the `--sign` key, if any; the error names the file and the fix.
pub fn load_signing_key(path: Option<&Path>) -> Result<Option<PrivateKey>, String> {
    let Some(path) = path else {
        return Ok(None);
    };
    qualify_trust::keys::read_private_key(path)
        .map(Some)
        .map_err(|e| format!("--sign: {e}; create a key pair with `qualify keygen --out PREFIX`"))
}

/// The receipt text as written: the Statement itself, or with a key a DSSE envelope around it.
pub fn seal(statement_text: String, key: Option<&PrivateKey>, quiet: bool) -> String {
    let Some(key) = key else {
        return statement_text;
    };
    if !quiet {
        eprintln!(
            "signing the receipt ({}, key id {})",
            key.algorithm(),
            key.public_key().keyid()
        );
    }
    Envelope::sign(IN_TOTO_PAYLOAD_TYPE, statement_text.as_bytes(), key).to_json()
}

/// Probe one cell: `[performance]` measurement when the spec has it, else `--repeat` (or
/// `[reproducibility] repeat`) runs compared by stdout digest, else one run.
pub fn probe_cell(
    spec: &Spec,
    repeat_flag: Option<u64>,
    probe_spec: &ProbeSpec,
    cancel: &CancelToken,
) -> Result<ProbeResult, ProbeError> {
    let repeat = repeat_flag.unwrap_or(spec.reproducibility.repeat);
    let repeat = usize::try_from(repeat).unwrap_or(usize::MAX);
    if spec.performance.is_some() || repeat <= 1 {
        return crate::perf_run::probe_cell(spec, probe_spec, cancel);
    }
    qualify_probe::probe_repeated(probe_spec, repeat, cancel, |_, _| {})
}

/// The fingerprint of this run and the spec's reproducibility declaration, with the tolerance
/// check run (once, in the artifact's workdir, under the spec's limits) when output is declared
/// nondeterministic and the run was not interrupted.
pub fn environment(
    spec: &Spec,
    backend_used: &str,
    artifact_sha256: Option<String>,
    backend: BackendChoice,
    cancel: &CancelToken,
    interrupted: bool,
    quiet: bool,
) -> (
    Option<qualify_trust::Fingerprint>,
    ev::layers::reproducibility::ReproducibilityDecl,
) {
    let fp = fingerprint::collect(&FingerprintInputs {
        workdir: spec.artifact.workdir.clone(),
        tools: spec.environment.tools.clone(),
        artifact_sha256,
        spec_sha256: ev::sha256_hex(spec.source.as_bytes()),
        qualify_version: env!("CARGO_PKG_VERSION").to_string(),
        backend: backend_used.to_string(),
    });
    let repro = &spec.reproducibility;
    let mut decl = ev::layers::reproducibility::ReproducibilityDecl {
        nondeterministic: repro.nondeterministic,
        tolerance_check: repro.tolerance_check.as_ref().map(ToString::to_string),
        tolerance_result: None,
    };
    if let Some(check) = repro.tolerance_check.as_ref().filter(|_| !interrupted) {
        if !quiet {
            eprintln!("tolerance check: {check}");
        }
        let probe_spec = ProbeSpec {
            argv: check.argv().into_iter().map(Into::into).collect(),
            workdir: Some(spec.artifact.workdir.clone()),
            env: Vec::new(),
            limits: spec.limits.to_probe_limits(),
            backend,
        };
        match qualify_probe::probe(&probe_spec, cancel) {
            Ok(r) => decl.tolerance_result = Some(r),
            Err(e) => eprintln!(
                "qualify: warning: the tolerance check `{check}` could not start: {e}; the reproducibility layer stays partial"
            ),
        }
    }
    (Some(fp), decl)
}
