//! [`LoadError`]: why a load could not run at all (a bad plan, no runtime, a nested runtime).
//! What happens to requests during a run is never an error of the run: it is counted in the
//! report by class.

/// Why [`crate::run`] or [`crate::ready`] could not do its job.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The plan is inconsistent; the message names the field and what it takes.
    #[error("invalid load plan: {0}")]
    Plan(String),
    /// The generator's event loop could not be created (out of file descriptors, …).
    #[error("cannot start the load generator's event loop: {0}")]
    Runtime(#[source] std::io::Error),
    /// `run` was called from inside an async runtime, whose thread it would block.
    #[error(
        "the load generator runs its own event loop on the calling thread and cannot be started from inside an async runtime; call it from a plain thread"
    )]
    NestedRuntime,
    /// A generator thread panicked: its part of the load is lost, so no report is made.
    #[error(
        "a load generator thread panicked; no load report was made (a bug in qualify: please report it)"
    )]
    GeneratorPanicked,
    /// No generator thread returned anything.
    #[error(
        "no load generator thread ran; no load report was made (a bug in qualify: please report it)"
    )]
    NoGenerator,
    /// The event loop ended with requests still holding its recorder.
    #[error(
        "the load generator's event loop ended with tasks still holding the recorder; no load report was made (a bug in qualify: please report it)"
    )]
    TasksOutlivedLoop,
}
