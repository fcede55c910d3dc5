//! The probe's error and reason texts, byte for byte: what users read on the command line and in
//! the evidence (`enforcement.sandbox`, `evidence.spin`, `evidence.wait_for`). Pinned before the
//! errors became types, so the types keep saying exactly this.

use crate::BackendChoice;
use crate::sandbox::Network;

#[test]
fn flags_that_do_not_parse_name_the_input_and_the_choices() {
    assert_eq!(
        "zfs".parse::<BackendChoice>().unwrap_err().to_string(),
        "unknown backend `zfs`; expected one of: auto, cgroup2, cgroup1, rlimit"
    );
    assert_eq!(
        "wifi".parse::<Network>().unwrap_err().to_string(),
        "unknown network policy `wifi`; expected one of: none, loopback, host"
    );
    assert_eq!(
        crate::parse_size("12X").unwrap_err().to_string(),
        "invalid size `12X`: unknown unit `X`; expected a size such as 512M, 256MiB, 1.5G or \
         1000000 (bytes)"
    );
    assert_eq!(
        crate::parse_duration("soon").unwrap_err().to_string(),
        "invalid duration `soon`: expected a number before the unit; expected a duration such \
         as 30s, 2m, 1h30m or 500ms"
    );
    assert_eq!(
        crate::parse_duration("0").unwrap_err().to_string(),
        "invalid duration `0`: must be positive; expected a duration such as 30s, 2m, 1h30m or \
         500ms"
    );
}

#[test]
fn a_malformed_table_says_which_table_and_where() {
    let toml_error = toml::from_str::<crate::runtimes::Runtimes>("runtime = 3")
        .unwrap_err()
        .to_string();
    assert_eq!(
        crate::runtimes::Runtimes::parse("runtime = 3")
            .unwrap_err()
            .to_string(),
        format!("the runtimes table is malformed: {toml_error}")
    );
    let toml_error = toml::from_str::<crate::rules::Rules>("calls = 3")
        .unwrap_err()
        .to_string();
    assert_eq!(
        crate::rules::Rules::parse("calls = 3")
            .unwrap_err()
            .to_string(),
        format!("the spin-wait table is malformed: {toml_error}")
    );
    let both = crate::rules::TABLE.replacen(
        "calls = [\n",
        "calls = [\n  { frame = \"both_*\", library = \"libboth.so\", runtime = \"X\", call = \"both\" },\n",
        1,
    );
    assert_eq!(
        crate::rules::Rules::parse(&both).unwrap_err().to_string(),
        "the spin-wait table is malformed: calls[0] (both) needs exactly one of `frame` or \
         `library`"
    );
}

#[test]
fn py_spy_output_that_is_no_thread_list_says_so() {
    let json_error = serde_json::from_str::<Vec<serde_json::Value>>("Error: no such process")
        .unwrap_err()
        .to_string();
    assert_eq!(
        crate::stall::python::parse("Error: no such process")
            .unwrap_err()
            .to_string(),
        format!("py-spy printed no thread list: {json_error}")
    );
}

#[test]
fn tools_that_give_no_answer_say_why() {
    use crate::inspect::{Inspect, Live};
    let mut live = Live::new();
    assert_eq!(
        live.ask_runtime(1, "Go").unwrap_err().to_string(),
        "no tool to ask Go"
    );
    let mut cmd = std::process::Command::new("/nonexistent/qualify-tool");
    cmd.stdout(std::process::Stdio::piped());
    assert_eq!(
        crate::stacks::run_bounded_with_err(cmd, std::time::Duration::from_secs(5))
            .unwrap_err()
            .to_string(),
        "No such file or directory (os error 2)"
    );
    assert_eq!(
        crate::inspect::run_tool("sh", &["-c".into(), "echo; echo 'no such pid' >&2".into()])
            .unwrap_err()
            .to_string(),
        "sh: no such pid"
    );
    assert_eq!(
        crate::inspect::run_tool("sh", &["-c".into(), "true".into()])
            .unwrap_err()
            .to_string(),
        "sh: no output"
    );
    assert_eq!(
        crate::stacks::NO_SAMPLER,
        "neither eu-stack nor gdb is on PATH; install elfutils (eu-stack) or gdb to recognise \
         threads spinning in synchronization calls"
    );
}
