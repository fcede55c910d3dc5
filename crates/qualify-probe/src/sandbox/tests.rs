//! Policy parsing and the evidence's JSON shape.

use std::collections::BTreeMap;

use super::*;

#[test]
fn modes_networks_and_roles_parse_and_name_the_choices() {
    assert_eq!("required".parse::<Mode>().unwrap(), Mode::Required);
    assert_eq!(Mode::On.to_string(), "on");
    let e = "sometimes".parse::<Mode>().unwrap_err();
    assert_eq!(e.accepted, ["on", "off", "required"]);
    assert_eq!(
        "none".parse::<NetworkPolicy>().unwrap(),
        NetworkPolicy::None
    );
    let e = "wifi".parse::<NetworkPolicy>().unwrap_err();
    assert_eq!((e.what, e.input.as_str()), ("network policy", "wifi"));
    assert_eq!(e.accepted, ["none", "loopback", "host"]);
    assert_eq!("key".parse::<Role>().unwrap(), Role::Key);
}

#[test]
fn the_default_sandbox_is_on_with_loopback_and_hides_homes() {
    let s = Sandbox::default();
    assert_eq!(s.mode, Mode::On);
    assert!(matches!(s.network, Network::Loopback));
    assert!(s.hidden.iter().all(|h| h.role == Role::Home));
    assert!(s.hidden.iter().any(|h| h.path == Path::new("/root")) || !Path::new("/root").exists());
    let mut s = Sandbox::off();
    s.hide(Role::Key, "/tmp/k");
    s.hide(Role::Key, "/tmp/k");
    assert_eq!(s.hidden.len(), 1);
    s.reveal(Role::Key);
    assert!(s.hidden.is_empty());
}

#[test]
fn the_evidence_json_names_every_layer_and_hidden_paths_by_role() {
    let mut paths = BTreeMap::new();
    paths.insert(
        Role::Holdout,
        vec![HiddenPath {
            path: "/h".into(),
            by: vec!["mount namespace".into(), "landlock".into()],
        }],
    );
    let e = SandboxEnforcement {
        mode: Mode::On,
        filesystem: Layer::kernel("ro", vec!["landlock (ABI 7)".into()]),
        hidden: HiddenLayer {
            layer: Layer::kernel("hidden", vec!["mount namespace".into()]),
            paths,
        },
        network: Layer::kernel("loopback", vec!["network namespace".into()]),
        pid: Layer::kernel("pid", vec!["PID namespace".into()]),
        user: Layer::none("user", "runs as uid 0"),
        syscalls: Layer::none("filter", "x86-64 only"),
    };
    let v = serde_json::to_value(&e).unwrap();
    for layer in ["filesystem", "hidden", "network", "pid", "user", "syscalls"] {
        assert!(v[layer]["enforced"].is_string(), "{layer}: {v}");
        assert!(v[layer]["policy"].is_string(), "{layer}: {v}");
    }
    assert_eq!(v["hidden"]["paths"]["holdout"][0]["path"], "/h");
    assert_eq!(v["user"]["enforced"], "none");
    assert_eq!(v["user"]["reason"], "runs as uid 0");
    assert_eq!(e.hidden.role_kernel_enforced(Role::Holdout), Some(true));
    assert_eq!(e.hidden.role_kernel_enforced(Role::Key), None);
    let back: SandboxEnforcement = serde_json::from_value(v).unwrap();
    assert_eq!(back, e);
}

#[test]
fn an_idmap_on_a_path_that_is_not_there_names_the_path() {
    let userns = std::os::fd::OwnedFd::from(std::fs::File::open("/dev/null").unwrap());
    let p = Path::new("/nonexistent/qualify-idmap");
    assert_eq!(
        idmap::supported(p, &userns).unwrap_err().to_string(),
        "/nonexistent/qualify-idmap: No such file or directory (os error 2)"
    );
}

/// The reasons the sandbox's layers state, as the code wrote them before they were types.
#[test]
fn missing_mechanisms_read_as_before() {
    use std::path::PathBuf;
    use std::sync::Arc;

    use super::host::Missing;
    use super::idmap::IdmapError;
    use crate::cell::NoPidNamespace;
    use crate::errno::Errno;
    let e = |n| std::io::Error::from_raw_os_error(n);
    let cases = [
        (
            Missing::Simulated.to_string(),
            "turned off by QUALIFY_SIMULATE_MISSING".to_string(),
        ),
        (
            Missing::NoPidNamespace(NoPidNamespace::Simulated).to_string(),
            "no PID namespace to make it with: turned off by QUALIFY_SIMULATE_MISSING".into(),
        ),
        (
            Missing::NoLandlock.to_string(),
            "the kernel has no Landlock (Linux 5.13+ built with it)".into(),
        ),
        (
            Missing::LandlockNotEnabled.to_string(),
            "Landlock is built into the kernel but not enabled (add it to the lsm= boot \
             parameter)"
                .into(),
        ),
        (
            Missing::LandlockUnavailable(Errno(libc::EPERM)).to_string(),
            format!("Landlock is unavailable: {}", e(libc::EPERM)),
        ),
        (
            Missing::NoMountSetattr.to_string(),
            "the kernel has no mount_setattr (Linux 5.12+)".into(),
        ),
        (
            Missing::SeccompArchitecture.to_string(),
            "the seccomp filter is written for x86-64 only".into(),
        ),
        (
            Missing::NoSeccomp(Errno(libc::EINVAL)).to_string(),
            format!("the kernel has no seccomp: {}", e(libc::EINVAL)),
        ),
        (
            IdmapError::NoMountNamespace(Missing::NoMountSetattr).to_string(),
            "no mount namespace: the kernel has no mount_setattr (Linux 5.12+)".into(),
        ),
        (
            IdmapError::Pipe(Errno(libc::EMFILE)).to_string(),
            format!("a pipe for the idmap namespace: {}", e(libc::EMFILE)),
        ),
        (
            IdmapError::UserNamespace(Errno(libc::EPERM)).to_string(),
            format!(
                "a user namespace for the idmapped workdir: {}",
                e(libc::EPERM)
            ),
        ),
        (
            IdmapError::WriteMap {
                file: "uid_map",
                source: Arc::new(e(libc::EPERM)),
            }
            .to_string(),
            format!("writing the idmap namespace's uid_map: {}", e(libc::EPERM)),
        ),
        (
            IdmapError::OpenNamespace(Arc::new(e(libc::ENOENT))).to_string(),
            format!("opening the idmap namespace: {}", e(libc::ENOENT)),
        ),
        (
            IdmapError::NulInPath.to_string(),
            "a NUL in the path".into(),
        ),
        (
            IdmapError::MountNamespace(Errno(libc::EPERM)).to_string(),
            format!(
                "a mount namespace to try an idmapped mount: {}",
                e(libc::EPERM)
            ),
        ),
        (
            IdmapError::Unsupported {
                path: PathBuf::from("/w"),
                errno: Errno(libc::EINVAL),
            }
            .to_string(),
            format!(
                "the filesystem of /w does not support idmapped mounts ({})",
                e(libc::EINVAL)
            ),
        ),
    ];
    for (got, want) in cases {
        assert_eq!(got, want);
    }
}
