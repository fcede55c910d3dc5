//! The receipt: an in-toto Statement v1 whose subjects are the artifact's own files — its
//! program or the script its interpreter runs, and a digest of its workdir's files (`DIR/`) —
//! and the spec, and whose predicate (`https://qualify.dev/receipt/v0.1`) holds the claim verdict,
//! the five layers, target, tested region, gap, waivers, checklist, boundaries and cells. Also owns
//! the receipt's serialization, digest and default file name.

use std::collections::BTreeMap;
use std::time::SystemTime;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::checklist::{self, Checklist};
use crate::claimed::{self, ClaimedAxis};
use crate::gap::{self, Gap, WaiverUse};
use crate::layers::{self, LayerName, LayerStatus, Layers};
use crate::policy::{self, Evidence, GateVerdict};
use crate::record::{ArtifactRecord, Cell, FileDigest, RunRecord, Target};
use crate::region::{self, Tested};

/// in-toto Statement v1 `_type`.
pub const STATEMENT_TYPE: &str = "https://in-toto.io/Statement/v1";
/// This receipt format's `predicateType`; bump the version on incompatible changes.
pub const PREDICATE_TYPE: &str = "https://qualify.dev/receipt/v0.1";

/// An in-toto Statement v1 carrying a qualify receipt.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Statement {
    #[serde(rename = "_type")]
    pub statement_type: String,
    pub subject: Vec<Subject>,
    #[serde(rename = "predicateType")]
    pub predicate_type: String,
    pub predicate: Predicate,
}

/// A subject: a file name and its digests (`sha256` → lowercase hex).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Subject {
    pub name: String,
    pub digest: BTreeMap<String, String>,
}

impl Subject {
    pub fn sha256(file: &FileDigest) -> Subject {
        Subject {
            name: file.path.clone(),
            digest: BTreeMap::from([("sha256".to_string(), file.sha256.clone())]),
        }
    }
}

/// The receipt predicate.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Predicate {
    /// The verdict at the spec's claim level.
    pub claim: GateVerdict,
    /// The run was interrupted; nothing it did not finish is closed.
    pub incomplete: bool,
    pub layers: Layers,
    pub target: Target,
    pub tested: Tested,
    /// Per axis, what the claim covers (up to the target's value, where it names one) and the
    /// headroom found beyond it; `tested` is the explored region.
    pub claimed_region: Vec<ClaimedAxis>,
    pub gap: Vec<Gap>,
    pub waivers: Vec<WaiverUse>,
    pub checklist: Checklist,
    pub boundaries: Vec<Value>,
    /// The capacity of each combination of the other axes along a searched load axis
    /// ([`crate::frontier`]); absent without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frontier: Option<crate::frontier::Frontier>,
    pub cells: Vec<Cell>,
    pub run: RunInfo,
    /// The environment fingerprint (OS, CPU, tools, git, lockfiles, redacted environment).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment: Option<qualify_trust::Fingerprint>,
    /// Statistics, models, scaling, checks and predictions of `[performance]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub performance: Option<Value>,
    /// The sandbox the artifact ran in: the self-test's attempts and the enforcement per layer
    /// they confirmed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<Value>,
}

/// Who ran what, when.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunInfo {
    pub artifact: ArtifactRecord,
    pub spec: FileDigest,
    /// `--set KEY=VALUE` overrides the run applied over the spec file (its digest is the
    /// file's): what ran differs from the file by exactly these.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub spec_overrides: Vec<String>,
    pub qualify_version: String,
    /// RFC 3339, UTC, seconds.
    pub started: String,
    pub finished: String,
    pub keep_going: bool,
    pub planned_cells: Option<usize>,
}

impl Evidence for Predicate {
    fn layer_status(&self, layer: LayerName) -> LayerStatus {
        self.layers.get(layer).status
    }
    fn layer_summary(&self, layer: LayerName) -> &str {
        &self.layers.get(layer).summary
    }
    fn gaps(&self) -> &[Gap] {
        &self.gap
    }
    fn holdout_unmet(&self) -> Option<String> {
        crate::holdout::unmet(&self.layers.functional.evidence)
    }
    fn refused_behaviours(&self) -> Vec<String> {
        crate::policy::refused_in(&self.layers.envelope.evidence)
    }
    fn perturb_unmet(&self) -> Option<String> {
        crate::perturb::unmet(&self.layers.envelope.evidence)
    }
}

impl Evidence for Statement {
    fn layer_status(&self, layer: LayerName) -> LayerStatus {
        self.predicate.layer_status(layer)
    }
    fn layer_summary(&self, layer: LayerName) -> &str {
        self.predicate.layer_summary(layer)
    }
    fn gaps(&self) -> &[Gap] {
        self.predicate.gaps()
    }
    fn holdout_unmet(&self) -> Option<String> {
        self.predicate.holdout_unmet()
    }
    fn refused_behaviours(&self) -> Vec<String> {
        self.predicate.refused_behaviours()
    }
    fn perturb_unmet(&self) -> Option<String> {
        self.predicate.perturb_unmet()
    }
}

/// Build the receipt of `record`. Its `claim` is the policy's verdict at `record.claim`.
pub fn build(record: &RunRecord) -> Statement {
    let tested = region::tested(record);
    let dimensions = region::dimensions(record, &tested);
    let claimed_region = claimed::region(record);
    let layers = layers::assess(record, &tested, &dimensions, &claimed_region);
    let (gaps, waivers) = gap::compute(&record.target, &tested, &record.waivers);
    let checklist = checklist::answer(record, &tested, &dimensions, &gaps, &claimed_region);
    let cells = record
        .cells
        .iter()
        .map(|c| {
            let mut c = c.clone();
            c.beyond_claim = !claimed::inside(&c, record);
            c
        })
        .collect();
    let boundaries: Vec<Value> = record
        .boundaries
        .iter()
        .filter_map(|b| {
            let json = serde_json::to_value(b).ok()?;
            let json = claimed::with_headroom(json, b, record);
            Some(crate::capacity::with_capacity(json, b, record))
        })
        .collect();
    let frontier = crate::frontier::frontier(&record.boundaries, record);
    let mut predicate = Predicate {
        claim: GateVerdict {
            level: record.claim,
            supported: false,
            reasons: Vec::new(),
            waivers: Vec::new(),
        },
        incomplete: record.incomplete,
        layers,
        target: record.target.clone(),
        tested,
        claimed_region,
        gap: gaps,
        waivers,
        checklist,
        boundaries,
        frontier,
        cells,
        run: RunInfo {
            artifact: record.artifact.clone(),
            spec: record.spec.clone(),
            spec_overrides: record.spec_overrides.clone(),
            qualify_version: record.qualify_version.clone(),
            started: rfc3339(record.started),
            finished: rfc3339(record.finished),
            keep_going: record.keep_going,
            planned_cells: record.planned_cells,
        },
        environment: record.environment.clone(),
        performance: record
            .performance
            .as_ref()
            .and_then(|p| serde_json::to_value(p).ok()),
        sandbox: record
            .sandbox
            .as_ref()
            .and_then(|s| serde_json::to_value(s).ok()),
    };
    predicate.claim = policy::evaluate(&predicate, record.claim);
    let mut subject = Vec::with_capacity(3);
    if let Some(exe) = &record.artifact.executable {
        subject.push(Subject::sha256(exe));
    }
    if let Some(tree) = &record.artifact.tree {
        subject.push(Subject::sha256(&FileDigest {
            path: format!("{}/", tree.path.trim_end_matches('/')),
            sha256: tree.sha256.clone(),
        }));
    }
    subject.push(Subject::sha256(&record.spec));
    Statement {
        statement_type: STATEMENT_TYPE.to_string(),
        subject,
        predicate_type: PREDICATE_TYPE.to_string(),
        predicate,
    }
}

impl Statement {
    /// The receipt file's text: pretty JSON with a trailing newline.
    pub fn to_json(&self) -> Result<String, serde_json::Error> {
        let mut text = serde_json::to_string_pretty(self)?;
        text.push('\n');
        Ok(text)
    }
}

pub use qualify_model::sha256_hex;

/// `2026-11-30T01:02:03Z`.
pub fn rfc3339(time: SystemTime) -> String {
    humantime::format_rfc3339_seconds(time).to_string()
}

/// The default receipt file name: `<UTC time like 20261130T010203Z>-<first 12 hex digits of the
/// sha256 of the receipt text>.json`.
pub fn default_file_name(time: SystemTime, receipt_text: &str) -> String {
    let stamp: String = rfc3339(time)
        .chars()
        .filter(|c| *c != '-' && *c != ':')
        .collect();
    let digest = sha256_hex(receipt_text.as_bytes());
    format!("{stamp}-{}.json", &digest[..12])
}
