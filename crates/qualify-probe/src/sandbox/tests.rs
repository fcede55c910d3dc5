//! Policy parsing and the evidence's JSON shape.

use std::collections::BTreeMap;

use super::*;

#[test]
fn modes_networks_and_roles_parse_and_name_the_choices() {
    assert_eq!("required".parse::<Mode>().unwrap(), Mode::Required);
    assert_eq!(Mode::On.to_string(), "on");
    let e = "sometimes".parse::<Mode>().unwrap_err();
    assert!(e.contains("on, off, required"), "{e}");
    assert!(matches!("none".parse::<Network>().unwrap(), Network::None));
    assert!("wifi".parse::<Network>().unwrap_err().contains("loopback"));
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
