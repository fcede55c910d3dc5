//! Dependency faults for qualify (issue 13): the fault vocabulary ([`fault`]), a loopback TCP
//! fault proxy per dependency with counters per window phase ([`proxy`], [`stats`]), Jepsen's set
//! check over acknowledged writes ([`checker`]), and the behaviour verdict of a cell
//! ([`behaviour`]). The binary wires them into `qualify run`; this crate starts no process and
//! reads no spec.

pub mod behaviour;
pub mod checker;
pub mod fault;
pub mod proxy;
pub mod stats;

pub use behaviour::{Behaviour, Observation, Recovery, Verdict, judge, recovery_time};
pub use checker::{SetCheck, check_set};
pub use fault::{Direction, Fault, FaultError, FaultErrorKind, FaultKind};
pub use proxy::{Proxy, ProxyConfig, ProxyError, Window};
pub use stats::{Phase, PhaseCounters, ProxyStats, Series};
