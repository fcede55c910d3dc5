//! `qualify-evidence` turns what a qualification run observed into evidence and judges claims
//! against it. The glue code fills a [`RunRecord`] (artifact, spec, claim, target, machine, axes,
//! functional result, cells, boundaries); [`build`] assesses the five evidence layers, the tested
//! region, the target gap and the admission checklist, and returns the receipt as an in-toto
//! Statement v1. [`evaluate`] is the claim policy; [`receipt_file::parse`] reads a receipt file back and
//! refuses a bad one with a message naming the field. Nothing here runs processes or reads specs.
//!
//! Modules: [`record`] (input), [`faults`] (a service cell's `result.faults`: what was done to
//! its dependencies and how it behaved), [`load`] (a service cell's `result.load` as the
//! checklist reads it: what the service did at and beyond capacity), [`capacity`] (a load
//! axis's boundary as one sentence with its precision), [`region`] (what was examined), [`layers`] (the five layers),
//! [`perturb`] (what `[perturb]` campaigns examined, the production requirement),
//! [`gap`] (target vs tested, waivers), [`checklist`] (admission questions), [`receipt`]
//! (Statement, digest, file name), [`policy`] (claim levels' requirements), [`receipt_file`] (parsing
//! receipts for the gate).

pub mod capacity;
pub mod checklist;
pub mod claim;
pub mod claimed;
pub mod faults;
pub mod frontier;
pub mod gap;
pub mod holdout;
pub mod layers;
pub mod load;
pub mod perturb;
pub mod policy;
pub mod receipt;
pub mod receipt_file;
pub mod record;
pub mod region;

pub use claim::ClaimLevel;
pub use faults::FaultRecord;
pub use gap::{Gap, WaiverUse};
pub use holdout::{Channel as SecrecyChannel, HoldoutCheck, HoldoutRun, Secrecy};
pub use layers::process::DevelopmentCoverage;
pub use layers::{Layer, LayerName, LayerStatus, Layers};
pub use policy::{Evidence, GateVerdict, evaluate, required_layers};
pub use receipt::{
    PREDICATE_TYPE, Predicate, STATEMENT_TYPE, Statement, Subject, build, default_file_name,
    sha256_hex,
};
pub use receipt_file::{Receipt, ReceiptError, check, parse};
pub use record::{
    ArtifactRecord, Axis, AxisDecl, AxisDomain, AxisKind, Boundary, Cell, DevRecord, Dimension,
    FileDigest, FunctionalRecord, FunctionalRun, GitSummary, HeldOutSelfTestRecord, Interpreter,
    JunitCounts, Machine, Params, ProcessRecord, ReproducibilityDecl, RunRecord, SandboxRecord,
    Target, TreeDigest, Waiver,
};

#[cfg(test)]
mod tests;
