//! What every subcommand shares with the terminal and the process: signals that cancel
//! instead of killing, and stdout that tolerates a closed pipe. A leaf: it uses no other module
//! of the binary, so the subcommands' arrows point down to it, never up to `main`.

/// Install SIGINT/SIGTERM/SIGHUP handlers that set the returned token instead of killing qualify,
/// so a probe can kill its tree, clean up its cgroups and still print a result.
pub fn cancel_on_signals() -> qualify_probe::CancelToken {
    let token = qualify_probe::CancelToken::default();
    for sig in [
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
    ] {
        if let Err(e) = signal_hook::flag::register(sig, token.clone()) {
            eprintln!("qualify: warning: cannot install handler for signal {sig}: {e}");
        }
    }
    token
}

/// Write to stdout, ignoring a closed pipe (e.g. output piped into `head`).
pub fn print_stdout(text: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes());
    if !text.ends_with('\n') {
        let _ = out.write_all(b"\n");
    }
}
