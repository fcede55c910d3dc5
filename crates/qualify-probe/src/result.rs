//! The probe's verdict: outcome, flags, resource figures and evidence, as `qualify probe --json`
//! prints it. The types are the shared vocabulary's (`qualify_model::result`, `::enforcement`);
//! they are re-exported here so `qualify_probe::result::*` keeps naming them.

/// How one probed run ended: defined once, in `qualify-model`, for every crate.
pub use qualify_model::Outcome;
pub use qualify_model::enforcement::{Enforcement, Strength};
pub use qualify_model::result::{Flag, ProbeResult, TimeoutKind};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::BackendChoice;

    #[test]
    fn not_run_is_an_interrupted_result_that_enforced_nothing() {
        let mut spec = crate::ProbeSpec::new(vec!["./prog".into()]);
        spec.backend = BackendChoice::Cgroup1;
        spec.limits.memory_bytes = Some(64 << 20);
        let r = spec.not_run("not probed: the run was stopping");
        assert_eq!(r.outcome, Outcome::Interrupted);
        assert_eq!(r.detail, "not probed: the run was stopping");
        assert_eq!(r.enforcement.backend, "cgroup1");
        assert_eq!(r.enforcement.tree, "none");
        assert_eq!(
            [r.enforcement.memory, r.enforcement.cpus, r.enforcement.pids],
            [Strength::None; 3]
        );
        assert_eq!(r.limits, spec.limits);
        assert_eq!((r.wall_seconds, r.stdout_bytes), (0.0, 0));
        assert!(r.evidence.is_null() && r.flags.is_empty() && r.runs.is_none());
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(json["outcome"], "interrupted");
        assert!(json.get("runs").is_none());
    }
}
