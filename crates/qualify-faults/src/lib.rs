//! Dependency faults for qualify: the fault grammar (the vocabulary's, re-exported as [`fault`]), a loopback TCP
//! fault proxy per dependency with counters per window phase ([`proxy`], [`stats`]), Jepsen's set
//! check over acknowledged writes ([`checker`]), and the behaviour verdict of a cell
//! ([`behaviour`]) and its record in the receipt ([`record`]). `qualify-service` wires them
//! into a service cell; this crate starts no process and reads no spec.

pub mod behaviour;
pub mod checker;
pub mod http;
pub mod proxy;
pub mod record;
pub mod stats;

pub use behaviour::{
    Behaviour, Noise, Observation, ProcessObservation, Recovery, ResourceKind, ResourceObservation,
    Verdict, judge, recovery_time,
};
pub use checker::{SetCheck, check_history, check_set, check_set_read};
pub use proxy::{Proxy, ProxyConfig, ProxyError, Window};
/// The fault grammar is the shared vocabulary's (`qualify_model::fault`).
pub use qualify_model::fault::grammar as fault;
pub use qualify_model::fault::{Direction, Fault, FaultError, FaultErrorKind, FaultKind};
pub use record::record;
pub use stats::{HttpCounters, Phase, PhaseCounters, ProxyStats, Series};
