//! The hidden steps qualify starts itself — `service-cell` (a service cell's Slurm job),
//! `dependency-host` (one dependency on a node of its own) and `load-gen` (one generator of a
//! split load) — read from their typed words by `main`, run by
//! `qualify_run::remote::steps` (`qualify-service`'s) with this process's signal handling, their results printed and
//! mapped to exit statuses here. `load-gen`: 0 its report was written (also when stopped or
//! cancelled), 1 its run failed (the report holds why), 2 bad words; SIGUSR1 stops its schedule
//! (requests in flight finish), SIGINT/SIGTERM/SIGHUP cancel it.

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use qualify_model::step::{DependencyHostStep, LoadGenStep, ServiceCellStep};
use qualify_run::remote::steps::{self, StepError};

use crate::error::{CliError, exit};

fn failed(e: impl Into<StepError>) -> CliError {
    CliError::input_only(e.into().to_string())
}

/// `qualify service-cell`: the cell's result on stdout, as `qualify probe --json` prints it.
pub fn service_cell(step: ServiceCellStep) -> Result<ExitCode, CliError> {
    let cancel = crate::shell::cancel_on_signals();
    let result = steps::service_cell(&step, &cancel).map_err(failed)?;
    let json = serde_json::to_string(&result)
        .map_err(|e| CliError::input_only(format!("cannot serialize the cell's result: {e}")))?;
    crate::shell::print_stdout(&json);
    Ok(ExitCode::SUCCESS)
}

/// `qualify dependency-host`.
pub fn dependency_host(step: DependencyHostStep) -> Result<ExitCode, CliError> {
    let cancel = crate::shell::cancel_on_signals();
    steps::dependency_host(&step, &cancel).map_err(failed)?;
    Ok(ExitCode::SUCCESS)
}

/// `qualify load-gen`.
pub fn load_gen(step: LoadGenStep) -> Result<ExitCode, CliError> {
    let cancel = crate::shell::cancel_on_signals();
    let stop = Arc::new(AtomicBool::new(false));
    if let Err(e) = signal_hook::flag::register(signal_hook::consts::SIGUSR1, Arc::clone(&stop)) {
        eprintln!("qualify load-gen: warning: cannot install the SIGUSR1 (stop) handler: {e}");
    }
    let generated = steps::load_gen(&step, &cancel, &stop).map_err(failed)?;
    if let Some(e) = &generated.report.error {
        eprintln!(
            "qualify load-gen: generator {} of {}: {e}",
            step.index, step.of
        );
    }
    Ok(if generated.failed {
        exit::refused()
    } else {
        ExitCode::SUCCESS
    })
}
