//! What one agent writes about its node: `<dir>/<node>.json`, rewritten atomically (write, then
//! rename) whenever something changes and at least every heartbeat, with a sequence number the
//! coordinator watches to know the node still answers. Times are Unix seconds on the node's
//! clock (ordering events across nodes needs clocks agreeing to better than a sampling interval,
//! as NTP gives); whether a node answers is judged on the coordinator's own clock.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One agent's report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentReport {
    /// The node, as the scheduler names it (`SLURMD_NODENAME`).
    pub node: String,
    pub pid: i32,
    /// Incremented on every write.
    pub seq: u64,
    pub started_unix: f64,
    pub written_unix: f64,
    pub samples: u64,
    pub interval_ms: u64,
    pub state: NodeStatus,
    /// Every rank seen on this node (alive or gone).
    #[serde(default)]
    pub ranks: Vec<RankSeen>,
    /// The job's processes on the node now.
    pub processes: usize,
    /// Anonymous memory of the job's processes on the node now, and the most seen.
    pub memory_bytes: u64,
    pub peak_memory_bytes: u64,
    /// The per-node memory ceiling the agent enforces (bytes), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_ceiling: Option<u64>,
    /// CPU seconds the job's processes on the node ran.
    pub run_seconds: f64,
    /// Processes the agent killed at the memory ceiling.
    #[serde(default)]
    pub memory_kills: Vec<MemoryKill>,
    /// The agent's own CPU seconds (user + system), with the stack samplers it ran.
    pub cpu_seconds: f64,
    /// The agent stopped on request (its last report).
    #[serde(default)]
    pub finished: bool,
}

/// The node's processes as the agent last judged them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum NodeStatus {
    /// No process of the job on the node.
    Empty,
    /// Processes, not proven stuck.
    Running,
    /// Every thread on the node stuck (the node's part of a deadlock, see `qualify_probe::observe`).
    Stuck {
        /// `blocked` (untimed waits) or `spin` (stack samples).
        kind: String,
        why: String,
        still_seconds: f64,
        /// Rank → what it is stuck in (a list: JSON object keys cannot be numbers here).
        #[serde(default, with = "rank_list")]
        ranks: BTreeMap<u32, String>,
        /// The spin-wait finding or the blocked waits.
        #[serde(default)]
        evidence: Value,
    },
}

impl NodeStatus {
    pub fn is_stuck(&self) -> bool {
        matches!(self, NodeStatus::Stuck { .. })
    }

    pub fn name(&self) -> &'static str {
        match self {
            NodeStatus::Empty => "empty",
            NodeStatus::Running => "running",
            NodeStatus::Stuck { .. } => "stuck",
        }
    }
}

/// `{3: "MPI_Recv …"}` as `[{"rank": 3, "what": "MPI_Recv …"}]` (an internally tagged enum
/// cannot read numeric map keys back).
mod rank_list {
    use std::collections::BTreeMap;

    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    #[derive(Serialize, Deserialize)]
    struct Entry {
        rank: u32,
        what: String,
    }

    pub fn serialize<S: Serializer>(m: &BTreeMap<u32, String>, s: S) -> Result<S::Ok, S::Error> {
        let v: Vec<Entry> = m
            .iter()
            .map(|(rank, what)| Entry {
                rank: *rank,
                what: what.clone(),
            })
            .collect();
        v.serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<BTreeMap<u32, String>, D::Error> {
        let v: Vec<Entry> = Vec::deserialize(d)?;
        Ok(v.into_iter().map(|e| (e.rank, e.what)).collect())
    }
}

/// A rank seen on the node: its processes and whether any is still alive.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RankSeen {
    pub rank: u32,
    /// Ranks in its world, when its environment says (`SLURM_STEP_NUM_TASKS`, …).
    #[serde(default)]
    pub size: Option<u32>,
    /// Tells worlds apart (the job step: `12.0`).
    pub world: String,
    pub pids: Vec<i32>,
    pub comm: String,
    pub alive: bool,
    pub first_seen_unix: f64,
    /// When its last process was seen gone.
    #[serde(default)]
    pub gone_unix: Option<f64>,
}

/// A process the agent killed because the job's memory on the node passed the ceiling.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryKill {
    pub pid: i32,
    pub comm: String,
    #[serde(default)]
    pub rank: Option<u32>,
    /// The killed process's anonymous memory.
    pub bytes: u64,
    /// The job's anonymous memory on the node when it was killed.
    pub node_bytes: u64,
    pub ceiling: u64,
    pub unix_seconds: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_round_trips_through_json() {
        let r = AgentReport {
            node: "node2".into(),
            pid: 7,
            seq: 3,
            started_unix: 100.0,
            written_unix: 101.5,
            samples: 15,
            interval_ms: 100,
            state: NodeStatus::Stuck {
                kind: "spin".into(),
                why: "…".into(),
                still_seconds: 2.0,
                ranks: BTreeMap::from([(3, "MPI_Recv (spinning in opal_progress)".into())]),
                evidence: Value::Null,
            },
            ranks: vec![RankSeen {
                rank: 3,
                size: Some(6),
                world: "12.0".into(),
                pids: vec![40],
                comm: "ring".into(),
                alive: true,
                first_seen_unix: 100.2,
                gone_unix: None,
            }],
            processes: 1,
            memory_bytes: 1 << 20,
            peak_memory_bytes: 2 << 20,
            memory_ceiling: None,
            run_seconds: 1.5,
            memory_kills: Vec::new(),
            cpu_seconds: 0.02,
            finished: false,
        };
        let text = serde_json::to_string(&r).unwrap();
        assert!(
            text.contains(r#""state":{"state":"stuck","kind":"spin""#),
            "{text}"
        );
        let back: AgentReport = serde_json::from_str(&text).unwrap();
        assert_eq!(back, r);
    }
}
