//! The probe's error and reason texts, byte for byte: what users read on the command line and in
//! the evidence (`enforcement.sandbox`, `evidence.spin`, `evidence.wait_for`). Pinned before the
//! errors became types, so the types keep saying exactly this.

use crate::BackendChoice;
use qualify_model::NetworkPolicy;

#[test]
fn flags_that_do_not_parse_name_the_input_and_the_choices() {
    assert_eq!(
        "zfs".parse::<BackendChoice>().unwrap_err().to_string(),
        "unknown backend `zfs`; expected one of: auto, cgroup2, cgroup1, rlimit"
    );
    assert_eq!(
        "wifi".parse::<NetworkPolicy>().unwrap_err().to_string(),
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
        crate::stacks::NoSampler.to_string(),
        "neither eu-stack nor gdb is on PATH; install elfutils (eu-stack) or gdb to recognise \
         threads spinning in synchronization calls"
    );
}

/// The reasons decided by the host, as the evidence states them (the texts the code wrote
/// before they were types).
#[test]
fn host_reasons_read_as_before() {
    use crate::cell::NoPidNamespace;
    use crate::errno::Errno;
    let eperm = std::io::Error::from_raw_os_error(libc::EPERM);
    assert_eq!(
        NoPidNamespace::Simulated.to_string(),
        "turned off by QUALIFY_SIMULATE_MISSING"
    );
    assert_eq!(
        NoPidNamespace::Refused(Errno(libc::EPERM)).to_string(),
        format!("the kernel refused a PID namespace: {eperm}")
    );
    assert_eq!(
        NoPidNamespace::UserNamespaceRefused(Errno(libc::EPERM)).to_string(),
        format!(
            "not root, and the kernel refused an unprivileged user namespace: {eperm} (enable \
             user namespaces, e.g. sysctl kernel.unprivileged_userns_clone=1)"
        )
    );
    assert_eq!(
        NoPidNamespace::RefusedAtStart(Errno(libc::ENOSPC)).to_string(),
        format!(
            "the kernel refused the namespaces: {}",
            std::io::Error::from_raw_os_error(libc::ENOSPC)
        )
    );
    use crate::netns::NetnsError;
    assert_eq!(
        NetnsError::Simulated.to_string(),
        "network namespaces turned off by QUALIFY_SIMULATE_MISSING"
    );
    assert_eq!(
        NetnsError::Unshare(std::io::Error::from_raw_os_error(libc::EPERM)).to_string(),
        eperm.to_string()
    );
    assert_eq!(
        NetnsError::LoopbackUp(Errno(libc::EPERM)).to_string(),
        eperm.to_string()
    );
}

#[test]
fn backend_reasons_read_as_before() {
    use std::path::PathBuf;

    use crate::backend::{BackendError, ParentRefused};
    let eacces = || std::io::Error::from_raw_os_error(libc::EACCES);
    let refused = BackendError::NoUsableParent(vec![
        ParentRefused::LacksControllers {
            parent: PathBuf::from("/sys/fs/cgroup/a"),
            missing: vec!["memory", "cpu"],
            available: Vec::new(),
        },
        ParentRefused::LacksControllers {
            parent: PathBuf::from("/sys/fs/cgroup"),
            missing: vec!["pids"],
            available: vec!["memory".into(), "cpu".into()],
        },
        ParentRefused::CannotEnable {
            parent: PathBuf::from("/sys/fs/cgroup/b"),
            controller: "cpu",
            source: eacces(),
        },
        ParentRefused::CannotCreate {
            parent: PathBuf::from("/sys/fs/cgroup/c"),
            source: eacces(),
        },
    ]);
    assert_eq!(
        refused.to_string(),
        format!(
            "/sys/fs/cgroup/a lacks the memory, cpu controller(s) (available: none); \
             /sys/fs/cgroup lacks the pids controller(s) (available: memory cpu); \
             cannot enable cpu in /sys/fs/cgroup/b/cgroup.subtree_control: {e} (a delegated \
             parent must hold no processes; set QUALIFY_CGROUP_PARENT to an empty delegated \
             cgroup); cannot create a group in /sys/fs/cgroup/c: {e}",
            e = eacces()
        )
    );
    assert_eq!(
        BackendError::Write {
            dir: PathBuf::from("/sys/fs/cgroup/q"),
            file: "memory.max",
            value: "1024".into(),
            source: eacces(),
        }
        .to_string(),
        format!(
            "cannot write 1024 to /sys/fs/cgroup/q/memory.max: {}",
            eacces()
        )
    );
    assert_eq!(
        BackendError::NoCgroup2.to_string(),
        "no cgroup2 hierarchy is mounted"
    );
    assert_eq!(
        BackendError::NoV1Memory.to_string(),
        "no cgroup v1 memory hierarchy is mounted"
    );
    assert_eq!(
        BackendError::V1MemoryNotWritable(PathBuf::from("/sys/fs/cgroup/memory")).to_string(),
        "cannot create a group in the v1 memory hierarchy at /sys/fs/cgroup/memory (not \
         writable: run as root)"
    );
    assert_eq!(
        BackendError::NoV1Controller {
            controller: "cpu",
            flag: "--cpus"
        }
        .to_string(),
        "no writable v1 cpu hierarchy for --cpus"
    );
    let e = crate::ProbeError::BackendUnavailable {
        backend: "cgroup2".into(),
        reason: BackendError::NoCgroup2,
    };
    assert_eq!(
        e.to_string(),
        "backend cgroup2 is not available on this host: no cgroup2 hierarchy is mounted; use \
         --backend auto to pick the strongest available"
    );
}

/// Setup errors that once wrapped a made-up I/O error: the same words, without the I/O
/// error's text (`: entity not found`, `: invalid input parameter`, `: init ended`) that
/// described nothing that happened.
#[test]
fn setup_errors_that_are_no_io_errors_say_only_what_happened() {
    use crate::ProbeError;
    let cases = [
        (
            ProbeError::NulByte {
                what: "argument",
                text: "a\0b".into(),
            },
            "argument `a\0b` contains a NUL byte",
        ),
        (
            ProbeError::WritableMissing {
                path: "/nonexistent/w".into(),
            },
            "sandbox: the writable path /nonexistent/w does not exist",
        ),
        (
            ProbeError::NoSuchUser {
                user: "nobody2".into(),
            },
            "sandbox: no user `nobody2` in /etc/passwd",
        ),
        (
            ProbeError::TooManyPaths,
            "sandbox: too many writable, readable and hidden paths",
        ),
        (
            ProbeError::InitEnded {
                program: "./prog".into(),
            },
            "starting `./prog`: the cell's init ended before the program started",
        ),
    ];
    for (e, text) in cases {
        assert_eq!(e.to_string(), text);
    }
}

#[test]
fn tool_reasons_read_as_before() {
    use crate::stacks::ToolError;
    assert_eq!(
        ToolError::NoJvmTool.to_string(),
        "neither jcmd nor jstack is on PATH (Debian: default-jdk-headless)"
    );
    assert_eq!(
        ToolError::NoPySpy.to_string(),
        "py-spy is not on PATH (pip install py-spy)"
    );
    assert_eq!(ToolError::ReaderPanicked.to_string(), "reader panicked");
}
