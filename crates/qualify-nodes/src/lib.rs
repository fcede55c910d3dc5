//! `qualify-nodes`: one verdict for a cell whose ranks run on several nodes. On every node of
//! the cell's allocation a qualify agent (`qualify agent observe`) watches that node's processes
//! of the job with the probe's machinery and writes an [`AgentReport`]; the cell's coordinator
//! (`qualify agent coordinate`, next to the launcher) reads the reports while the launcher runs
//! and asks [`merge::live`] whether to stop the cell (every rank on every node stuck, a node
//! that stopped answering, ranks left waiting for one that died), then [`merge::finish`] turns
//! the launcher's probe result, the reports and the launcher's own account of its tasks
//! ([`launcher::task_ends`]) into the cell's one result.
//!
//! Pure: no I/O, no clocks (times come in as arguments), so every rule is table-tested.
//!
//! Map: [`report`] (what an agent writes), [`hostlist`] (Slurm host lists → node names),
//! [`launcher`] (`srun`/`mpirun` lines about tasks that ended, memory kills), [`merge`] (the
//! rules and the `evidence.nodes` object).

pub mod hostlist;
pub mod launcher;
pub mod merge;
pub mod report;

pub use merge::{Final, NodeView, Settings, Stop, finish, live};
pub use report::{AgentReport, MemoryKill, NodeStatus, RankSeen};
