//! Stage 6: the receipt. The environment is fingerprinted, everything the run observed becomes
//! one [`ev::RunRecord`], `qualify-evidence` assesses it into the layered in-toto Statement and
//! the claim's verdict, `--sign` wraps it in a DSSE envelope, and it is written atomically
//! (`--receipt PATH`, else `.qualify/receipts/<UTC time>-<digest>.json`).

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use qualify_evidence as ev;

use super::Context;
use super::analysis::Analysed;
use super::checks::Checked;
use super::prepare::Prepared;
use super::region::Region;
use crate::error::Error;

/// The written receipt and what it says.
pub struct Sealed {
    pub record: ev::RunRecord,
    pub statement: ev::Statement,
    /// The receipt file's text (the Statement, or its DSSE envelope).
    pub text: String,
    pub path: PathBuf,
    pub verdict: ev::GateVerdict,
}

/// What a sealed run says of its claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The receipt supports the spec's claim.
    Supported,
    /// It does not.
    Refused,
    /// The run was interrupted: its receipt is marked incomplete.
    Interrupted,
}

impl Sealed {
    /// Whether the claim is supported, refused, or the run interrupted.
    pub fn verdict(&self) -> Verdict {
        if self.record.incomplete {
            Verdict::Interrupted
        } else if self.verdict.supported {
            Verdict::Supported
        } else {
            Verdict::Refused
        }
    }
}

pub fn seal(
    ctx: &Context<'_>,
    prepared: &Prepared,
    checked: Checked,
    region: Region,
    analysed: Analysed,
    files: crate::subjects::ArtifactFiles,
) -> Result<Sealed, Error> {
    let record = record(ctx, prepared, checked, region, &analysed, files);
    let statement = redact(ev::build(&record), &prepared.redactor)?;
    let text = statement
        .to_json()
        .map_err(|e| Error::output(format!("cannot encode the receipt: {e}"), None))?;
    let text = super::signing::seal(text, prepared.signing_key.as_ref(), ctx.args.json);
    let path = match &ctx.args.receipt {
        Some(p) => p.clone(),
        None => receipt_dir(ctx).join(ev::default_file_name(SystemTime::now(), &text)),
    };
    write_receipt(&path, &text)?;
    let verdict = ev::evaluate(&statement, record.claim);
    Ok(Sealed {
        record,
        statement,
        text,
        path,
        verdict,
    })
}

/// The Statement with every secret value and held-out check's content taken out of its
/// strings (tails, details, evidence): what the receipt, the ledger and the reports are made of.
fn redact(
    statement: ev::Statement,
    redactor: &qualify_trust::redact::Redactor,
) -> Result<ev::Statement, Error> {
    if redactor.is_empty() {
        return Ok(statement);
    }
    let cannot =
        |e: serde_json::Error| Error::output(format!("cannot redact the receipt: {e}"), None);
    let mut value = serde_json::to_value(&statement).map_err(cannot)?;
    if redactor.json(&mut value) == 0 {
        return Ok(statement);
    }
    serde_json::from_value(value).map_err(cannot)
}

/// What qualify itself writes into the workdir during a run (the receipt and the service
/// cells' write histories beside it), left out of the check that the artifact is unchanged.
pub fn written_by_qualify(ctx: &Context<'_>) -> Vec<PathBuf> {
    let dir = std::path::absolute(receipt_dir(ctx)).unwrap_or_else(|_| receipt_dir(ctx));
    let mut out = vec![dir.join("histories")];
    if let Some(r) = &ctx.args.receipt {
        out.push(std::path::absolute(r).unwrap_or_else(|_| r.clone()));
    }
    out
}

/// The directory the receipt is written to (`--receipt`'s, else `.qualify/receipts`): the
/// service cells' write histories go beside it, in `histories/`.
pub fn receipt_dir(ctx: &Context<'_>) -> PathBuf {
    match &ctx.args.receipt {
        Some(p) => p
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf),
        None => PathBuf::from(".qualify/receipts"),
    }
}

/// Everything the run observed, as the evidence crate reads it.
fn record(
    ctx: &Context<'_>,
    prepared: &Prepared,
    checked: Checked,
    region: Region,
    analysed: &Analysed,
    files: crate::subjects::ArtifactFiles,
) -> ev::RunRecord {
    let spec = ctx.spec;
    let backend = analysed
        .cells
        .first()
        .map(|c| c.result.enforcement.backend.clone())
        .or_else(|| match &checked.functional {
            ev::FunctionalRun::Ran(r) => Some(r.result.enforcement.backend.clone()),
            _ => None,
        })
        .unwrap_or_else(|| "none".into());
    let (environment, reproducibility) = super::environment::collect(
        ctx,
        &backend,
        files.executable.as_ref().map(|e| e.sha256.clone()),
        files.interpreter_tool(),
        analysed.incomplete,
    );
    ev::RunRecord {
        qualify_version: env!("CARGO_PKG_VERSION").to_string(),
        artifact: ev::ArtifactRecord {
            name: spec.artifact.name.clone(),
            executable: files.executable,
            interpreter: files.interpreter,
            tree: files.tree,
        },
        spec: ev::FileDigest {
            path: spec.path.display().to_string(),
            sha256: ev::sha256_hex(spec.source.as_bytes()),
        },
        spec_overrides: spec.overrides.clone(),
        claim: spec.claim.level,
        target: spec.target.clone().unwrap_or_default(),
        machine: super::host::machine(backend, environment.as_ref()),
        axes: spec.axes.clone(),
        material: Vec::new(),
        waivers: spec.waivers.clone(),
        dependencies: spec.dependencies.iter().map(|d| d.name.clone()).collect(),
        headroom: spec.claim.headroom.clone(),
        functional: checked.functional,
        holdout: checked.holdout,
        process: prepared.process.clone(),
        environment,
        reproducibility,
        keep_going: ctx.args.keep_going,
        perturb_required: ctx.spec.claim.perturb_required,
        cells: analysed.cells.clone(),
        planned_cells: Some(region.planned),
        boundaries: analysed.boundaries.clone(),
        performance: analysed.performance.clone(),
        incomplete: analysed.incomplete,
        sandbox: prepared.sandbox.clone(),
        started: ctx.started,
        finished: SystemTime::now(),
    }
}

/// Write then rename: an interrupted write never leaves half a receipt.
fn write_receipt(path: &Path, text: &str) -> Result<(), Error> {
    let cannot = |what: &Path, e: std::io::Error| {
        Error::output(format!("cannot write {}: {e}", what.display()), None)
    };
    if let Some(dir) = path.parent()
        && !dir.as_os_str().is_empty()
    {
        std::fs::create_dir_all(dir)
            .map_err(|e| Error::output(format!("cannot create {}: {e}", dir.display()), None))?;
    }
    let tmp = path.with_extension("json.partial");
    std::fs::write(&tmp, text).map_err(|e| cannot(&tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| cannot(path, e))
}
