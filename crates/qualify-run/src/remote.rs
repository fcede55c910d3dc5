//! The halves of a run that execute in another process — on a Slurm node or beside the run —
//! under the binary's hidden subcommands: a service cell's steps (the cell, a dependency's
//! host, a load generator's share), the multi-node agents and their coordinator, and the lease
//! a job's probe watches. Their code lives with the crate that owns each (`qualify-service`'s
//! `steps`, `qualify-slurm`'s `multinode` and `lease`); the binary reaches them only through
//! this module, so `qualify-run` is its one door to the engines' composition.

pub use qualify_service::steps;
pub use qualify_slurm::{lease, multinode};
