//! [`PerturbError`]: why perturbation could not be set up (the shim could not be installed or
//! verified, a log file could not be made). A failing run of the program is never an error.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum PerturbError {
    /// The shim's directory or file could not be made or read.
    #[error("perturbation shim at {}: {source}; check that qualify may write there (or run as root)", path.display())]
    ShimIo {
        path: PathBuf,
        source: std::io::Error,
    },
    /// Something other than qualify could change the shim: its directory is writable by others.
    #[error(
        "perturbation shim directory {} is writable by other users (mode {mode:o}) or not owned by qualify's user: a program could replace the shim; remove it or fix its permissions",
        path.display()
    )]
    ShimExposed { path: PathBuf, mode: u32 },
    /// The installed shim's bytes are not the ones qualify ships (replaced after install).
    #[error("perturbation shim {} was changed after qualify installed it (sha256 {found}, expected {expected}); nothing was run with it", path.display())]
    ShimChanged {
        path: PathBuf,
        found: String,
        expected: String,
    },
    /// The run's log file could not be made.
    #[error("perturbation log {}: {source}", path.display())]
    LogIo {
        path: PathBuf,
        source: std::io::Error,
    },
}
