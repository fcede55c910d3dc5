//! `qualify-service` owns the service cell: the artifact started fresh as a service under the
//! probe's supervision (ceilings, tree ownership, deadlock / OOM / crash classification) on a
//! port qualify assigns (`{port}`, exported as `PORT`), its `[[dependency]]`s started and put
//! behind fault proxies ([`harness`]), readiness awaited ([`ready`]), the `[load]` driven
//! through `qualify-load` (in-process, or split over `qualify load-gen` processes:
//! [`generators`]) with the fault windows armed at the measured phase's start, a kill
//! and restart of the service under load with the acknowledged-writes check ([`writes`]), the
//! behaviour under the fault judged ([`judge`]) against the `none` cell beside it ([`controls`])
//! and what the claim expects, and the cell's verdict ([`verdict`]): one
//! [`qualify_model::ProbeResult`] with a typed `load` and `faults`.
//!
//! It composes engines that know nothing of each other — the probe (a process tree), the
//! load generator (traffic), the fault proxy and behaviour rules (`qualify-faults`) — and reads
//! the spec for what to compose; the binary only hands it a cell's parameters ([`ServiceCell`]).
//! A service that never became ready is told why in words that name the cause ([`setup`]).
//!
//! Where the cell assumes it runs on this machine, it says so in one place each: the service's
//! port is a free loopback port ([`instance::free_port`]) and its address is loopback
//! ([`ServiceCell::run`]); a network namespace is shared by the service, its dependencies and
//! their proxies ([`network`]). On a cluster ([`Cluster`]) the service's address is its node's
//! and `node = "own"` dependencies run on nodes of their own ([`harness::remote`]); the steps a
//! cell starts on a cluster or for a split load (the cell's job, a dependency host, a load
//! generator) are [`steps`].

pub mod cell;
pub mod cluster;
pub mod controls;
pub mod error;
pub mod generators;
pub mod harness;
pub mod history;
pub mod instance;
pub mod judge;
pub mod network;
pub mod phases;
pub mod probes;
pub mod ready;
pub mod setup;
pub mod steps;
pub mod verdict;
pub mod writes;

pub use cell::ServiceCell;
pub use cluster::Cluster;
pub use controls::Controls;
pub use error::ServiceError;
pub use harness::Harness;
pub use instance::{ServiceRun, free_port, with_port};
pub use probes::SpecProbes;
