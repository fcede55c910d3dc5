//! `qualify-slurm` runs cells as Slurm jobs. A [`SlurmQueue`] takes [`CellJob`]s from many
//! threads (one per cell in flight: `qualify-run`'s Slurm `Executor` calls it), batches
//! the cells that need the same resources into one job array per batch (one `sbatch` call),
//! polls the whole run with one `squeue` call per interval, reads each cell's `qualify probe
//! --json` result from the shared run directory, and reconciles Slurm's own verdict
//! (OUT_OF_MEMORY, TIMEOUT, NODE_FAIL, PREEMPTED, CANCELLED) with the probe's.
//!
//! Map: [`job`] (cells → resources, `sbatch` arguments and the scripts a job runs),
//! [`state`] (Slurm job states, `squeue` parsing and the reconciliation rules),
//! `queue` (the submitting/polling thread and [`SlurmQueue`]), [`lease`] (how a job
//! notices that the qualify that submitted it is gone), [`heartbeat`] (the nodes of a
//! multi-node service cell beating in its state directory; a silent node ends the cell
//! `interrupted`), [`multinode`] (a cell spanning nodes inside its job: the per-node agents and
//! the coordinator that merges their reports into one result).

pub mod heartbeat;
pub mod job;
pub mod lease;
pub mod multinode;
mod queue;
mod renew;
pub mod state;

pub use heartbeat::SILENT_NODE;
pub use job::{CellJob, JobStep, Resources, Topology};
pub use queue::{PingError, SlurmConfig, SlurmError, SlurmQueue, controller_answers};
pub use renew::write_atomically;
pub use state::{JobState, SlurmVerdict, never_starts, reconcile};
