//! One probe's sandbox, prepared in qualify before the fork ([`Plan::build`]: which layers this
//! host can enforce, the mount steps, the Landlock ruleset, the user, the seccomp programs, the
//! evidence) and carried out after it by raw system calls ([`Plan::setup_init`] in the cell's
//! init, [`Plan::setup_main`] in the program's process just before `exec`).

use std::ffi::{CStr, CString};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use seccompiler::BpfProgram;

use super::host::{Missing, host};
use super::idmap::{
    self, AT_RECURSIVE, IdmapError, MOUNT_ATTR_IDMAP, MOUNT_ATTR_RDONLY, MOVE_MOUNT_F_EMPTY_PATH,
    MountAttr, OPEN_TREE_CLONE,
};

/// `MOUNT_ATTR_NOEXEC` of `mount_setattr(2)`.
const MOUNT_ATTR_NOEXEC: u64 = 0x8;
use super::layer::{self, WorkdirLayer};
use super::{
    HiddenLayer, HiddenPath, Layer, Mode, Network, PrivateWorkdir, Role, Sandbox,
    SandboxEnforcement, landlock_rules, seccomp, simulated_missing,
};
use crate::cell::{Stage, Step, errno};
use crate::{ProbeError, ProbeSpec};

/// How the evidence names the held-out directory.
pub(crate) const HELD_OUT: &str = "(the held-out directory)";

/// Fds the init opens for bind sources (at most).
const MAX_SLOTS: usize = 64;

/// The devices of the sandbox's minimal `/dev`.
const DEVICES: [&str; 6] = ["null", "zero", "full", "random", "urandom", "tty"];

/// One mount step of the init.
#[derive(Debug)]
enum MountStep {
    /// Stop mount propagation to and from the host.
    Private,
    /// Open a bind source while everything is still visible.
    Open {
        path: CString,
        slot: usize,
    },
    Tmpfs {
        target: CString,
        data: CString,
    },
    /// Bind an opened source onto `target` (created first when missing), idmapped through a
    /// user namespace when given.
    Bind {
        slot: usize,
        target: CString,
        file: bool,
        idmap: Option<i32>,
    },
    /// Bind an opened source over `target` only if it still exists (a host socket that
    /// went away between listing and mounting hides nothing; creating it would write to
    /// the host's filesystem).
    BindIfPresent {
        slot: usize,
        target: CString,
    },
    Devpts {
        target: CString,
    },
    Symlink {
        to: CString,
        link: CString,
    },
    Proc {
        target: CString,
    },
    ReadOnlyAll,
    Writable {
        target: CString,
    },
    /// Nothing under `target` (its top mount) can be executed.
    NoExec {
        target: CString,
    },
    /// The workdir's private layer: an overlay of `lower` (the workdir, escaped for
    /// `lowerdir`) with the opened upper and work directories, moved onto `target`.
    Overlay {
        target: CString,
        lower: CString,
        upper: usize,
        work: usize,
        userxattr: bool,
    },
}

impl MountStep {
    fn target(&self) -> Option<&CStr> {
        match self {
            MountStep::Tmpfs { target, .. }
            | MountStep::Bind { target, .. }
            | MountStep::BindIfPresent { target, .. }
            | MountStep::Devpts { target }
            | MountStep::Proc { target }
            | MountStep::Writable { target }
            | MountStep::NoExec { target }
            | MountStep::Overlay { target, .. } => Some(target),
            MountStep::Symlink { link, .. } => Some(link),
            MountStep::Open { path, .. } => Some(path),
            MountStep::Private | MountStep::ReadOnlyAll => None,
        }
    }
}

/// The user the program runs as (root only).
#[derive(Debug, Clone, Copy)]
struct Creds {
    uid: u32,
    gid: u32,
}

/// The prepared sandbox of one probe.
#[derive(Debug)]
pub struct Plan {
    clone_flags: libc::c_int,
    steps: Vec<MountStep>,
    /// Network namespace to join (a service cell's).
    join_netns: Option<Arc<crate::netns::Netns>>,
    lo_up: bool,
    creds: Option<Creds>,
    drop_caps: bool,
    landlock: Option<OwnedFd>,
    /// Rules the init adds for the mounts it makes (path, access).
    landlock_init: Vec<(CString, u64)>,
    seccomp: Vec<BpfProgram>,
    /// Kept open (user namespaces for idmapped binds).
    _userns: Vec<Arc<OwnedFd>>,
    /// Every fd the init must keep.
    fds: Vec<i32>,
    /// The canonical paths hidden from the program (to refuse a program inside one).
    hidden: Vec<(Role, PathBuf)>,
    granted: Vec<PathBuf>,
    /// The program gets a private `/tmp` (the mount layer is on).
    private_tmp: bool,
    /// The workdir's private layer (kept until the probe ends: a layer made for this probe is
    /// removed with it).
    layer: Option<Arc<WorkdirLayer>>,
}

fn cstr(p: &Path) -> Result<CString, ProbeError> {
    CString::new(p.as_os_str().as_bytes()).map_err(|_| ProbeError::NulByte {
        what: "sandbox path",
        text: p.display().to_string(),
    })
}

fn canonical(p: &Path) -> Option<PathBuf> {
    std::fs::canonicalize(p).ok()
}

/// A script's `#!` line: the interpreter, and for `#!/usr/bin/env [-S] NAME` the program
/// `env` looks up.
struct Shebang {
    interpreter: PathBuf,
    env_program: Option<String>,
}

/// The `#!` line of `path`, if it is a script whose interpreter is an absolute path.
fn shebang(path: &Path) -> Option<Shebang> {
    use std::io::Read;
    let mut head = [0u8; 256];
    let n = std::fs::File::open(path).ok()?.read(&mut head).ok()?;
    let line = head[..n].strip_prefix(b"#!")?;
    let line = line.split(|b| *b == b'\n').next()?;
    let line = std::str::from_utf8(line).ok()?;
    let mut words = line.split_whitespace();
    let interpreter = PathBuf::from(words.next()?);
    if !interpreter.is_absolute() {
        return None;
    }
    let env_program = if interpreter.file_name().is_some_and(|f| f == "env") {
        words
            .find(|w| !w.starts_with('-') && !w.contains('='))
            .map(str::to_string)
    } else {
        None
    };
    Some(Shebang {
        interpreter,
        env_program,
    })
}

/// The directory to add to `[sandbox] readable` for a hidden `path`: its top directory under a
/// home (`/root/.pyenv`, `/home/ann/.venvs`), else its parent.
pub(crate) fn readable_fix(path: &Path) -> String {
    let parts: Vec<_> = path.components().collect();
    let keep = match parts.get(1).and_then(|c| c.as_os_str().to_str()) {
        Some("root") => 3,
        Some("home") => 4,
        _ => parts.len().saturating_sub(1),
    };
    let dir: PathBuf = parts.iter().take(keep.min(parts.len())).collect();
    dir.display().to_string()
}

/// Inside the sandbox's private `/tmp` or `/dev/shm`: the host's files there are not seen.
fn private(p: &Path) -> bool {
    p.starts_with("/tmp") || p.starts_with("/dev/shm")
}

fn depth(p: &Path) -> usize {
    p.components().count()
}

/// The evidence when the sandbox is off. The cell's PID namespace stays (it is how the tree
/// dies with qualify), and the evidence says so.
fn off() -> SandboxEnforcement {
    let why = "the sandbox is off (--sandbox off / [sandbox] mode = \"off\")";
    let pid = if crate::cell::base_flags().1.is_none() && !simulated_missing("init") {
        let mut l = Layer::kernel(
            "none (the sandbox is off)",
            vec!["PID namespace (the cell's guard, so that the tree dies with qualify)".into()],
        );
        l.reason = Some(format!(
            "{why}; the program cannot signal qualify, but sees the host's /proc"
        ));
        l
    } else {
        Layer::none("none", why)
    };
    SandboxEnforcement {
        mode: Mode::Off,
        filesystem: Layer::none("none", why),
        hidden: HiddenLayer {
            layer: Layer::none("none", why),
            paths: Default::default(),
        },
        network: Layer::none("host", why),
        pid,
        user: Layer::none("none", why),
        syscalls: Layer::none("none", why),
    }
}

/// Resolve a `user` setting (name or uid) to (uid, gid) from /etc/passwd.
fn lookup_user(user: &str) -> Option<(u32, u32)> {
    let text = std::fs::read_to_string("/etc/passwd").ok()?;
    for line in text.lines() {
        let f: Vec<&str> = line.split(':').collect();
        if f.len() < 4 {
            continue;
        }
        if f[0] == user || f[2] == user {
            return Some((f[2].parse().ok()?, f[3].parse().ok()?));
        }
    }
    user.parse().ok().map(|u| (u, u))
}

fn owner(p: &Path) -> Option<(u32, u32)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(p).ok().map(|m| (m.uid(), m.gid()))
}

impl Plan {
    /// Decide and prepare the sandbox of `spec` (workdir `workdir`, files of qualify's — the
    /// heartbeat, a Go test binary's trace, a perturbation log — to bind writable at their own
    /// paths, e.g. into the private `/tmp`). `None`
    /// when the sandbox is off. With `mode = required`, a layer
    /// that cannot be enforced is an error naming it.
    pub fn build(
        spec: &ProbeSpec,
        workdir: &Path,
        binds: &[&Path],
    ) -> Result<(Option<Plan>, SandboxEnforcement), ProbeError> {
        let sb: &Sandbox = &spec.sandbox;
        if sb.mode == Mode::Off {
            return Ok((None, off()));
        }
        let h = host();
        let workdir = canonical(workdir).unwrap_or_else(|| workdir.to_path_buf());
        let mut writable: Vec<PathBuf> = vec![workdir.clone()];
        for w in &sb.writable {
            match canonical(w) {
                Some(c) if !writable.contains(&c) => writable.push(c),
                Some(_) => {}
                None => return Err(ProbeError::WritableMissing { path: w.clone() }),
            }
        }
        let readable: Vec<PathBuf> = sb.readable.iter().filter_map(|r| canonical(r)).collect();
        let mut hidden: Vec<(Role, PathBuf)> = Vec::new();
        for hd in &sb.hidden {
            if let Some(c) = canonical(&hd.path)
                && !hidden.iter().any(|(_, p)| *p == c)
                && c != Path::new("/")
            {
                hidden.push((hd.role, c));
            }
        }
        // What the program sees although it lies in a hidden or private place: the writable and
        // readable paths, and the files bound into its /tmp.
        let granted: Vec<PathBuf> = writable
            .iter()
            .chain(&readable)
            .cloned()
            .chain(sb.binds.iter().map(|(_, target)| target.clone()))
            .collect();

        // --- which mechanisms this host gives us
        let no_pidns = crate::cell::base_flags().1;
        let pidns = no_pidns.is_none();
        // The cell adds the sandbox's namespaces only beside its PID namespace.
        let mountns = h
            .namespaces("mountns")
            .and_then(|()| h.mount_setattr.clone());
        let netns_ok = h.namespaces("netns");
        let landlock = h.landlock();
        let seccomp_ok = h.seccomp();

        // --- user (root: an unprivileged uid, writable places idmapped when not its own)
        let mut creds = None;
        // The sandbox user, when the workdir is idmapped to it.
        let mut creds_wanted: Option<(u32, u32)> = None;
        let mut userns_fds: Vec<Arc<OwnedFd>> = Vec::new();
        let mut idmaps: Vec<Option<i32>> = vec![None; writable.len()];
        let mut user_layer;
        let mut user_notes: Vec<String> = Vec::new();
        if h.root {
            let wanted = match &sb.user {
                Some(u) => {
                    lookup_user(u).ok_or_else(|| ProbeError::NoSuchUser { user: u.clone() })?
                }
                None => match owner(&workdir) {
                    Some((u, g)) if u != 0 => (u, g),
                    _ => lookup_user("nobody").unwrap_or((65534, 65534)),
                },
            };
            let mut why_root: Option<String> = None;
            if simulated_missing("setuid") {
                why_root = Some(Missing::Simulated.to_string());
            } else if wanted.0 == 0 {
                why_root = Some(
                    "the policy keeps the current user (user = root; a Slurm cell by default: \
                     its launcher creates job steps as the job's user)"
                        .into(),
                );
            }
            for (i, w) in writable.iter().enumerate() {
                if why_root.is_some() {
                    break;
                }
                let Some((ou, og)) = owner(w) else { continue };
                if (ou, og) == wanted || ou == wanted.0 {
                    continue;
                }
                let tried = if simulated_missing("idmap") {
                    Err(IdmapError::Simulated)
                } else {
                    mountns
                        .clone()
                        .map_err(IdmapError::NoMountNamespace)
                        .and_then(|()| idmap::userns((wanted.0, wanted.1, ou, og)))
                        .and_then(|fd| idmap::supported(w, &fd).map(|()| fd))
                };
                match tried {
                    Ok(fd) => {
                        idmaps[i] = Some(fd.as_raw_fd());
                        user_notes.push(format!(
                            "{} is idmapped: uid {ou} appears as uid {} inside, files written \
                             stay uid {ou}'s",
                            w.display(),
                            wanted.0
                        ));
                        userns_fds.push(fd);
                    }
                    Err(e) => {
                        why_root = Some(format!(
                            "uid {} could not write {} (owned by uid {ou}): {e}",
                            wanted.0,
                            w.display()
                        ))
                    }
                }
            }
            match why_root {
                None => {
                    creds_wanted = Some(wanted);
                    creds = Some(Creds {
                        uid: wanted.0,
                        gid: wanted.1,
                    });
                    let mut m = vec![
                        format!("runs as uid {} gid {}", wanted.0, wanted.1),
                        "capabilities dropped (bounding set, permitted, ambient)".into(),
                        "no_new_privs".into(),
                    ];
                    m.extend(user_notes);
                    user_layer = Layer::kernel("an unprivileged user, no capabilities", m);
                }
                Some(why) => {
                    idmaps = vec![None; writable.len()];
                    userns_fds.clear();
                    user_layer = Layer::none(
                        "an unprivileged user, no capabilities",
                        format!(
                            "runs as uid 0 without capabilities and with no_new_privs ({why}); \
                             root-owned files outside the hidden paths stay readable"
                        ),
                    );
                    user_layer.mechanisms = vec![
                        "capabilities dropped (bounding set, permitted, ambient)".into(),
                        "no_new_privs".into(),
                    ];
                }
            }
        } else {
            // SAFETY: getuid has no preconditions.
            let uid = unsafe { libc::getuid() };
            let mut m = vec![format!("runs as uid {uid} (qualify's own, not root)")];
            if pidns {
                m.push("user namespace: capabilities only inside it, then dropped".into());
            }
            m.push("no_new_privs".into());
            user_layer = Layer::kernel("an unprivileged user, no capabilities", m);
        }

        // --- the workdir's private layer (an overlay over it, the upper layer qualify's own)
        let (layer, no_layer): (Option<Arc<WorkdirLayer>>, Option<String>) =
            match (&sb.private_workdir, &mountns) {
                (PrivateWorkdir::No, _) => (None, None),
                (_, Err(e)) => (None, Some(format!("no mount namespace: {e}"))),
                (wanted, Ok(())) => {
                    let usable = if simulated_missing("overlay") {
                        Err(Missing::Simulated)
                    } else {
                        layer::supported()
                    };
                    match (usable, wanted) {
                        (Err(e), _) => (None, Some(e.to_string())),
                        (Ok(()), PrivateWorkdir::Shared(l)) => (Some(Arc::clone(l)), None),
                        (Ok(()), _) => (Some(WorkdirLayer::create()?), None),
                    }
                }
            };
        if let Some(l) = &layer {
            // A layer mounted before (a service's, before its restart) left the volatile
            // overlay's mark, which a new mount refuses.
            l.clear_volatile_mark();
            // The overlay's root takes the upper directory's owner and mode: those the workdir
            // shows inside (through its idmapping, when it has one).
            use std::os::unix::fs::{MetadataExt, PermissionsExt};
            if let Ok(m) = std::fs::metadata(&workdir) {
                let (uid, gid) = match (idmaps[0], creds_wanted) {
                    (Some(_), Some((u, g))) => (u, g),
                    _ => (m.uid(), m.gid()),
                };
                let _ = std::os::unix::fs::chown(l.upper(), Some(uid), Some(gid));
                let _ = std::fs::set_permissions(
                    l.upper(),
                    std::fs::Permissions::from_mode(m.mode() & 0o7777),
                );
            }
            let root = layer::layers_root();
            if !private(&root) && !hidden.iter().any(|(_, p)| *p == root) {
                hidden.push((Role::State, root));
            }
        }

        // --- filesystem and hidden paths
        let fs_policy = format!(
            "system read-only; read-write: {}, a private /tmp and /dev/shm{}",
            writable
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
            if sb.private_workdir.wanted() {
                "; the workdir through a private layer (writes never reach it, nor a later cell)"
            } else {
                ""
            }
        );
        let mut fs_mech = Vec::new();
        let mut fs_missing = Vec::new();
        match &mountns {
            Ok(()) => fs_mech.push(
                "mount namespace (read-only binds, private /tmp, /dev/shm and /dev)".to_string(),
            ),
            Err(e) => fs_missing.push(format!("mount namespace: {e}")),
        }
        if layer.is_some() {
            fs_mech.push("overlay over the workdir (its upper layer private to the cell)".into());
        }
        if let Some(why) = &no_layer {
            fs_missing.push(format!(
                "the workdir's private layer: {why} (the workdir is written in place, and what one cell writes a later one reads)"
            ));
        }
        let ruleset = match &landlock {
            Ok(abi) => {
                let hidden_paths: Vec<PathBuf> = hidden.iter().map(|(_, p)| p.clone()).collect();
                match landlock_rules::build(&landlock_rules::Grants {
                    writable: &writable,
                    readable: &readable,
                    hidden: &hidden_paths,
                }) {
                    Ok(fd) => {
                        fs_mech.push(format!("landlock (ABI {abi})"));
                        Some(fd)
                    }
                    Err(e) => {
                        fs_missing.push(format!("landlock: {e}"));
                        None
                    }
                }
            }
            Err(e) => {
                fs_missing.push(format!("landlock: {e}"));
                None
            }
        };
        let filesystem = if fs_mech.is_empty() {
            Layer::none(fs_policy, fs_missing.join("; "))
        } else {
            let mut l = Layer::kernel(fs_policy, fs_mech.clone());
            if !fs_missing.is_empty() {
                l.reason = Some(format!("missing: {}", fs_missing.join("; ")));
            }
            l
        };
        let granted_refs: Vec<&Path> = granted.iter().map(PathBuf::as_path).collect();
        let mut paths: std::collections::BTreeMap<Role, Vec<HiddenPath>> = Default::default();
        let mut landlock_gaps = Vec::new();
        for (role, p) in &hidden {
            let mut by = Vec::new();
            if mountns.is_ok() {
                by.push("mount namespace".to_string());
            }
            if ruleset.is_some() {
                if landlock_rules::hides(p, &granted_refs) {
                    by.push("landlock".to_string());
                } else {
                    landlock_gaps.push(p.display().to_string());
                }
            }
            paths.entry(*role).or_default().push(HiddenPath {
                // Held-out checks are known to the evidence by digest only: not even their
                // directory is named.
                path: if *role == Role::Holdout {
                    HELD_OUT.to_string()
                } else {
                    p.display().to_string()
                },
                by,
            });
        }
        let hidden_policy = "hidden: held-out checks, the signing key, qualify's state, homes";
        let mut hidden_layer = if fs_mech.is_empty() {
            Layer::none(hidden_policy, fs_missing.join("; "))
        } else {
            Layer::kernel(hidden_policy, fs_mech)
        };
        if !landlock_gaps.is_empty() {
            hidden_layer.reason = Some(format!(
                "landlock cannot hide a path beneath a writable or readable one ({}): only the \
                 mount namespace hides it",
                landlock_gaps.join(", ")
            ));
        }
        if paths.values().flatten().any(|p| p.by.is_empty()) && hidden_layer.is_kernel() {
            hidden_layer.downgrade(format!(
                "some hidden paths are hidden by nothing: {}",
                fs_missing.join("; ")
            ));
        }

        // --- network
        let (network, want_netns, lo_up, join_netns) = match &sb.network {
            Network::Host => (
                Layer::none(
                    "host",
                    "qualify's network is shared (network = \"host\"; under the Slurm executor \
                     by default: a job's launcher talks to the controller and its other nodes)",
                ),
                false,
                false,
                None,
            ),
            Network::Unavailable(why) => (Layer::none("loopback", why.clone()), false, false, None),
            Network::Join(n) => (
                Layer::kernel(
                    "loopback, shared by the service cell",
                    vec![
                        "network namespace of the service cell (only its loopback; the load \
                         generator, readiness checks and fault proxies join it)"
                            .into(),
                    ],
                ),
                false,
                false,
                Some(Arc::clone(n)),
            ),
            Network::Loopback | Network::None => {
                let name = sb.network.name();
                match &netns_ok {
                    Ok(()) => (
                        Layer::kernel(
                            name,
                            vec![if matches!(sb.network, Network::Loopback) {
                                "network namespace with only its loopback".into()
                            } else {
                                "network namespace without any interface".into()
                            }],
                        ),
                        true,
                        matches!(sb.network, Network::Loopback),
                        None,
                    ),
                    Err(e) => (
                        Layer::none(name, format!("no network namespace: {e}")),
                        false,
                        false,
                        None,
                    ),
                }
            }
        };

        // --- host unix sockets by path: a private network does not close them, the mount
        // namespace does (`/dev/null` over each).
        let mut network = network;
        let hidden_sockets: Vec<PathBuf> = {
            let private_net = matches!(
                sb.network,
                Network::None | Network::Loopback | Network::Join(_)
            ) && network.is_kernel();
            if private_net {
                let granted_beyond_workdir: Vec<&PathBuf> =
                    granted.iter().filter(|g| **g != workdir).collect();
                super::unix::bound_paths()
                    .into_iter()
                    .filter(|p| {
                        !private(p)
                            && !hidden.iter().any(|(_, h)| p.starts_with(h))
                            && !granted_beyond_workdir.iter().any(|g| p.starts_with(g))
                    })
                    .collect()
            } else {
                Vec::new()
            }
        };
        if network.is_kernel() && !matches!(sb.network, Network::Host | Network::Unavailable(_)) {
            match &mountns {
                Ok(()) => network.mechanisms.push(format!(
                    "host unix sockets by path: /dev/null mounted over each of the {} bound in the host's network namespaces (mount namespace); abstract ones are per network namespace{}",
                    hidden_sockets.len(),
                    if matches!(landlock, Ok(abi) if abi >= 6) && ruleset.is_some() {
                        " and scoped by landlock"
                    } else {
                        ""
                    }
                )),
                Err(e) => {
                    let mechanisms = network.mechanisms.clone();
                    network = Layer::none(
                        network.policy.clone(),
                        format!(
                            "host unix sockets by path stay reachable: no mount namespace to hide them ({e})"
                        ),
                    );
                    network.mechanisms = mechanisms;
                }
            }
        }

        // --- pid
        let pid = if let Some(why) = no_pidns {
            let mut l = Layer::none(
                "own PID namespace and session; qualify out of reach",
                format!("no PID namespace: {why}"),
            );
            l.mechanisms = vec!["new session".into()];
            if matches!(landlock, Ok(abi) if abi >= 6) && ruleset.is_some() {
                l.mechanisms.push("landlock signal scope".into());
            }
            l
        } else {
            let mut m = vec!["PID namespace".to_string(), "new session".to_string()];
            if mountns.is_ok() {
                m.push(
                    "/proc of the namespace (hidepid=2: other users' processes, the init's \
                     among them, are not listed)"
                        .into(),
                );
            }
            if matches!(landlock, Ok(abi) if abi >= 6) && ruleset.is_some() {
                m.push("landlock signal scope".into());
            }
            Layer::kernel("own PID namespace and session; qualify out of reach", m)
        };

        // --- syscalls
        let (syscalls, programs) = match seccomp_ok.and_then(|()| seccomp::programs()) {
            Ok(p) => (
                Layer::kernel(seccomp::policy(), vec!["seccomp-bpf".into()]),
                p,
            ),
            Err(e) => (Layer::none(seccomp::policy(), e.to_string()), Vec::new()),
        };

        let evidence = SandboxEnforcement {
            mode: sb.mode,
            filesystem,
            hidden: HiddenLayer {
                layer: hidden_layer,
                paths,
            },
            network,
            pid,
            user: user_layer,
            syscalls,
        };
        if sb.mode == Mode::Required {
            for (name, layer) in evidence.layers() {
                let by_policy = name == "network" && matches!(sb.network, Network::Host);
                if !layer.is_kernel() && !by_policy {
                    return Err(ProbeError::SandboxRequired {
                        layer: name.to_string(),
                        reason: layer.reason.clone().unwrap_or_default(),
                    });
                }
            }
        }

        // --- mount steps
        let mut steps = Vec::new();
        if mountns.is_ok() {
            steps.push(MountStep::Private);
            let mut slot = 0usize;
            let mut open = |p: &Path, steps: &mut Vec<MountStep>| -> Result<usize, ProbeError> {
                let s = slot;
                if s >= MAX_SLOTS {
                    return Err(ProbeError::TooManyPaths);
                }
                slot += 1;
                steps.push(MountStep::Open {
                    path: cstr(p)?,
                    slot: s,
                });
                Ok(s)
            };
            // (depth, order, step): applied shallowest first, so deeper mounts sit on top.
            let mut covering: Vec<(usize, u8, MountStep)> = Vec::new();
            let null = open(Path::new("/dev/null"), &mut steps)?;
            let tmp = Path::new("/tmp");
            // The writable tmpfs mounts are sized at the disk ceiling (and its inodes with it).
            let sized = |mode: &str| -> CString {
                let data = match spec.limits.disk_bytes {
                    Some(b) => format!("mode={mode},size={b},nr_inodes={}", (b / 4096).max(1024)),
                    None => format!("mode={mode}"),
                };
                CString::new(data).unwrap_or_default()
            };
            covering.push((
                1,
                0,
                MountStep::Tmpfs {
                    target: cstr(tmp)?,
                    data: sized("1777"),
                },
            ));
            covering.push((
                1,
                0,
                MountStep::Tmpfs {
                    target: c"/dev".into(),
                    data: c"mode=755".into(),
                },
            ));
            for d in DEVICES {
                let p = PathBuf::from(format!("/dev/{d}"));
                if p.exists() {
                    let s = open(&p, &mut steps)?;
                    covering.push((
                        2,
                        1,
                        MountStep::Bind {
                            slot: s,
                            target: cstr(&p)?,
                            file: true,
                            idmap: None,
                        },
                    ));
                }
            }
            covering.push((
                2,
                1,
                MountStep::Devpts {
                    target: c"/dev/pts".into(),
                },
            ));
            covering.push((
                2,
                1,
                MountStep::Tmpfs {
                    target: c"/dev/shm".into(),
                    data: sized("1777"),
                },
            ));
            for (link, to) in [
                ("/dev/ptmx", "pts/ptmx"),
                ("/dev/fd", "/proc/self/fd"),
                ("/dev/stdin", "/proc/self/fd/0"),
                ("/dev/stdout", "/proc/self/fd/1"),
                ("/dev/stderr", "/proc/self/fd/2"),
            ] {
                covering.push((
                    2,
                    2,
                    MountStep::Symlink {
                        to: CString::new(to).unwrap_or_default(),
                        link: CString::new(link).unwrap_or_default(),
                    },
                ));
            }
            for (role, p) in &hidden {
                let _ = role;
                let step = if p.is_dir() {
                    MountStep::Tmpfs {
                        target: cstr(p)?,
                        data: c"mode=755,size=16k".into(),
                    }
                } else {
                    MountStep::Bind {
                        slot: null,
                        target: cstr(p)?,
                        file: true,
                        idmap: None,
                    }
                };
                // Hidden wins over a writable or readable path at the same place.
                covering.push((depth(p), 5, step));
            }
            for (i, w) in writable.iter().enumerate() {
                let s = open(w, &mut steps)?;
                covering.push((
                    depth(w),
                    3,
                    MountStep::Bind {
                        slot: s,
                        target: cstr(w)?,
                        file: !w.is_dir(),
                        idmap: idmaps[i],
                    },
                ));
            }
            if let Some(l) = &layer {
                // Over the workdir's own bind (the lower layer, idmapped when it is).
                let upper = open(&l.upper(), &mut steps)?;
                let work = open(&l.work(), &mut steps)?;
                covering.push((
                    depth(&workdir),
                    4,
                    MountStep::Overlay {
                        target: cstr(&workdir)?,
                        lower: layer::escape_lower(&workdir)?,
                        upper,
                        work,
                        userxattr: !h.root,
                    },
                ));
            }
            for (source, target) in &sb.binds {
                if !target.starts_with("/tmp") || target == Path::new("/tmp") {
                    return Err(ProbeError::BindOutsideTmp {
                        target: target.clone(),
                    });
                }
                let s = open(source, &mut steps)?;
                covering.push((
                    depth(target),
                    4,
                    MountStep::Bind {
                        slot: s,
                        target: cstr(target)?,
                        file: true,
                        idmap: None,
                    },
                ));
            }
            for sock in &hidden_sockets {
                covering.push((
                    depth(sock),
                    5,
                    MountStep::BindIfPresent {
                        slot: null,
                        target: cstr(sock)?,
                    },
                ));
            }
            for r in &readable {
                if hidden.iter().any(|(_, h)| r.starts_with(h)) || private(r) {
                    let s = open(r, &mut steps)?;
                    covering.push((
                        depth(r),
                        3,
                        MountStep::Bind {
                            slot: s,
                            target: cstr(r)?,
                            file: !r.is_dir(),
                            idmap: None,
                        },
                    ));
                }
            }
            let mut writable_targets: Vec<CString> =
                vec![c"/tmp".into(), c"/dev/shm".into(), c"/dev/pts".into()];
            for w in &writable {
                writable_targets.push(cstr(w)?);
            }
            for &hb in binds {
                let s = open(hb, &mut steps)?;
                covering.push((
                    depth(hb),
                    4,
                    MountStep::Bind {
                        slot: s,
                        target: cstr(hb)?,
                        file: true,
                        idmap: None,
                    },
                ));
                writable_targets.push(cstr(hb)?);
            }
            covering.sort_by_key(|(d, o, _)| (*d, *o));
            steps.extend(covering.into_iter().map(|(_, _, s)| s));
            if pidns {
                steps.push(MountStep::Proc {
                    target: c"/proc".into(),
                });
                writable_targets.push(c"/proc".into());
            }
            steps.push(MountStep::ReadOnlyAll);
            for t in writable_targets {
                steps.push(MountStep::Writable { target: t });
            }
            if sb.workdir_noexec {
                steps.push(MountStep::NoExec {
                    target: cstr(&workdir)?,
                });
            }
        }

        let mut clone_flags = 0;
        if pidns {
            clone_flags |= libc::CLONE_NEWIPC | libc::CLONE_NEWUTS;
        }
        if mountns.is_ok() {
            clone_flags |= libc::CLONE_NEWNS;
        }
        if want_netns {
            clone_flags |= libc::CLONE_NEWNET;
        }
        let mut fds: Vec<i32> = userns_fds.iter().map(|f| f.as_raw_fd()).collect();
        if let Some(l) = &ruleset {
            fds.push(l.as_raw_fd());
        }
        if let Some(n) = &join_netns {
            fds.push(n.fd());
        }
        let landlock_init = match (&landlock, &ruleset, mountns.is_ok()) {
            (Ok(abi), Some(_), true) => {
                let mut rules = landlock_rules::init_rules(*abi);
                if layer.is_some() {
                    // The overlay's inodes are not the workdir's: the rule on the workdir no
                    // longer reaches what is beneath it.
                    rules.push((cstr(&workdir)?, landlock_rules::all_access(*abi)));
                }
                rules
            }
            _ => Vec::new(),
        };
        let plan = Plan {
            landlock_init,
            clone_flags,
            steps,
            join_netns,
            lo_up,
            creds,
            drop_caps: true,
            landlock: ruleset,
            seccomp: programs,
            _userns: userns_fds,
            fds,
            hidden,
            granted,
            private_tmp: mountns.is_ok(),
            layer,
        };
        Ok((Some(plan), evidence))
    }

    /// Extra `clone` flags (namespaces) the sandbox needs; `pidns`: the cell has its PID
    /// namespace (without it no other namespace is made either).
    pub(crate) fn clone_flags(&self, pidns: bool) -> libc::c_int {
        if pidns { self.clone_flags } else { 0 }
    }

    /// The program gets a private `/tmp` and `/dev/shm` (tmpfs mounts of the mount layer).
    pub(crate) fn private_tmp(&self) -> bool {
        self.private_tmp
    }

    /// The workdir's private layer, when the program writes through one.
    pub(crate) fn layer(&self) -> Option<&Arc<WorkdirLayer>> {
        self.layer.as_ref()
    }

    /// Fds the init keeps for the sandbox's setup.
    pub(crate) fn fds(&self) -> &[i32] {
        &self.fds
    }

    /// Whether the program would not see `path` (inside a hidden path, not granted back).
    pub(crate) fn hides(&self, path: &Path) -> bool {
        let real = canonical(path).unwrap_or_else(|| path.to_path_buf());
        (self.hidden.iter().any(|(_, h)| real.starts_with(h))
            || (self.private_tmp && private(&real)))
            && !self.granted.iter().any(|g| real.starts_with(g))
    }

    /// Refuse a program the sandbox hides from itself, naming where it is and the fix.
    pub(crate) fn check_visible(
        &self,
        program: &Path,
        workdir: Option<&Path>,
        name: &str,
    ) -> Result<(), ProbeError> {
        let abs = match (program.is_relative(), workdir) {
            (true, Some(w)) => w.join(program),
            _ => program.to_path_buf(),
        };
        let real = canonical(&abs).unwrap_or(abs);
        if self.private_tmp && private(&real) && !self.granted.iter().any(|g| real.starts_with(g)) {
            return Err(ProbeError::SandboxHidden {
                program: name.to_string(),
                path: real.display().to_string(),
                role: "the sandbox's /tmp is private".to_string(),
            });
        }
        for (role, h) in &self.hidden {
            if real.starts_with(h) && !self.granted.iter().any(|g| real.starts_with(g)) {
                return Err(ProbeError::SandboxHidden {
                    program: name.to_string(),
                    path: real.display().to_string(),
                    role: role.as_str().to_string(),
                });
            }
        }
        Ok(())
    }

    /// Refuse a program whose interpreter the sandbox hides: its `#!` line (followed through
    /// links, and through `env NAME` by `PATH`, skipping hidden directories as the sandboxed
    /// program's own lookup would), up to four levels — a venv's script runs under the Python
    /// the venv was made from, often under a home directory (pyenv). Inside the sandbox it
    /// would fail as "not found" although the file is there.
    pub(crate) fn check_interpreters(
        &self,
        program: &Path,
        path_var: Option<&std::ffi::OsStr>,
        workdir: Option<&Path>,
        name: &str,
    ) -> Result<(), ProbeError> {
        let abs = match (program.is_relative(), workdir) {
            (true, Some(w)) => w.join(program),
            _ => program.to_path_buf(),
        };
        let mut current = abs;
        for _ in 0..4 {
            let Some(line) = shebang(&current) else {
                return Ok(());
            };
            let interpreter = match line.env_program {
                Some(program) => {
                    let hides = |p: &Path| self.hides(p);
                    match crate::cell::resolve_visible(
                        std::ffi::OsStr::new(&program),
                        path_var,
                        workdir,
                        &hides,
                    ) {
                        Some(found) => found,
                        // Only where the sandbox hides it (or nowhere: the program's own error).
                        None => match crate::cell::resolve(
                            std::ffi::OsStr::new(&program),
                            path_var,
                            workdir,
                        ) {
                            Some(found) => found,
                            None => return Ok(()),
                        },
                    }
                }
                None => line.interpreter,
            };
            let real = canonical(&interpreter).unwrap_or_else(|| interpreter.clone());
            if let Some(role) = self.hidden_role(&real) {
                return Err(ProbeError::SandboxHiddenInterpreter(Box::new(
                    crate::HiddenInterpreter {
                        program: name.to_string(),
                        interpreter: interpreter.display().to_string(),
                        path: real.display().to_string(),
                        role,
                        readable: readable_fix(&real),
                    },
                )));
            }
            current = real;
        }
        Ok(())
    }

    /// Why the program would not see `real` (a canonical path), or `None` when it would.
    fn hidden_role(&self, real: &Path) -> Option<String> {
        if self.granted.iter().any(|g| real.starts_with(g)) {
            return None;
        }
        if self.private_tmp && private(real) {
            return Some("the sandbox's /tmp is private".to_string());
        }
        self.hidden
            .iter()
            .find(|(_, h)| real.starts_with(h))
            .map(|(role, _)| role.as_str().to_string())
    }

    /// Refuse a command whose program the sandbox hides although `argv[0]` is visible: any
    /// program a shell script starts (`sh -c "sleep 9 & /tmp/x/prog …"`, how a spec's command
    /// string runs), the script an interpreter runs (`python3 /tmp/x/svc.py`) and executable
    /// files named in the arguments (`mpirun -n 2 /tmp/x/prog`). Inside the sandbox they would
    /// fail as "not found" (127 or 2), which reads as the artifact's failure. Only paths (a word
    /// with a `/`) that exist on the host are checked.
    pub(crate) fn check_command(
        &self,
        argv: &[std::ffi::OsString],
        workdir: Option<&Path>,
    ) -> Result<(), ProbeError> {
        use std::os::unix::fs::PermissionsExt;
        let resolve = |w: &str| {
            let p = Path::new(w);
            match (p.is_relative(), workdir) {
                (true, Some(d)) => d.join(p),
                _ => p.to_path_buf(),
            }
        };
        let executable = |w: &str| {
            std::fs::metadata(resolve(w))
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        };
        let argv: Vec<String> = argv
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        for w in programs_named(&argv, executable) {
            if !w.contains('/') {
                continue;
            }
            let abs = resolve(&w);
            if abs.exists() {
                self.check_visible(&abs, workdir, &w)?;
            }
        }
        Ok(())
    }

    /// A failed step, for people.
    pub(crate) fn describe_step(&self, stage: Stage, index: u32) -> String {
        if stage == Stage::Mount
            && let Some(step) = self.steps.get(index as usize)
        {
            let target = step
                .target()
                .map(|t| t.to_string_lossy().into_owned())
                .unwrap_or_else(|| "/".into());
            let what = match step {
                MountStep::Private => "making the mounts private",
                MountStep::Open { .. } => "opening",
                MountStep::Tmpfs { .. } => "mounting a tmpfs on",
                MountStep::Bind { idmap: Some(_), .. } => "idmapping the bind mount of",
                MountStep::Bind { .. } | MountStep::BindIfPresent { .. } => "bind-mounting",
                MountStep::Devpts { .. } => "mounting devpts on",
                MountStep::Symlink { .. } => "creating the link",
                MountStep::Proc { .. } => "mounting proc on",
                MountStep::ReadOnlyAll => "making every mount read-only from",
                MountStep::Overlay { .. } => "mounting the private layer over the workdir",
                MountStep::NoExec { .. } => "making non-executable",
                MountStep::Writable { .. } => "making writable",
            };
            return format!("setting up the sandbox: {what} {target}");
        }
        format!("setting up the sandbox: {}", stage.describe())
    }

    /// In the init, in its new namespaces: mounts, then the network.
    ///
    /// # Safety
    /// Raw system calls only (see `cell::raw`).
    pub(crate) unsafe fn setup_init(&self, newns: bool) -> Result<(), Step> {
        let mut slots = [-1i32; MAX_SLOTS];
        // Never touch mounts outside a mount namespace of our own.
        let steps = if newns { &self.steps[..] } else { &[] };
        for (i, step) in steps.iter().enumerate() {
            let at = |e: i32| (Stage::Mount, i as u32, e);
            // SAFETY: raw syscalls on prepared strings.
            unsafe { run_step(step, &mut slots) }.map_err(at)?;
        }
        for fd in slots {
            if fd >= 0 {
                // SAFETY: our fd.
                unsafe { libc::close(fd) };
            }
        }
        if newns && let Some(l) = &self.landlock {
            for (i, (path, access)) in self.landlock_init.iter().enumerate() {
                let path: &CStr = path;
                landlock_rules::add_raw(l.as_raw_fd(), path, *access)
                    .map_err(|e| (Stage::Landlock, i as u32 + 1, e))?;
            }
        }
        if let Some(n) = &self.join_netns {
            // SAFETY: plain syscall on an fd we keep.
            if unsafe { libc::setns(n.fd(), libc::CLONE_NEWNET) } != 0 {
                return Err((Stage::Network, 0, errno()));
            }
        }
        if self.lo_up {
            crate::netns::loopback_up().map_err(|e| (Stage::Network, 1, e))?;
        }
        Ok(())
    }

    /// In the program's process, just before `exec`.
    ///
    /// # Safety
    /// Raw system calls only (see `cell::raw`).
    pub(crate) unsafe fn setup_main(&self) -> Result<(), Step> {
        // SAFETY: plain prctl/setgroups/setres*id/capset/landlock/seccomp calls.
        unsafe {
            if self.drop_caps {
                for cap in 0..64 {
                    libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0);
                }
                libc::prctl(
                    libc::PR_CAP_AMBIENT,
                    libc::PR_CAP_AMBIENT_CLEAR_ALL,
                    0,
                    0,
                    0,
                );
            }
            if let Some(c) = self.creds {
                // Raw system calls: glibc's wrappers would try to change the credentials of
                // every thread it believes exists (copied from qualify) and wait for them.
                let groups = [c.gid];
                if libc::syscall(libc::SYS_setgroups, 1usize, groups.as_ptr()) != 0
                    || libc::syscall(libc::SYS_setresgid, c.gid, c.gid, c.gid) != 0
                    || libc::syscall(libc::SYS_setresuid, c.uid, c.uid, c.uid) != 0
                {
                    return Err((Stage::Credentials, 0, errno()));
                }
            }
            if self.drop_caps {
                let mut header = CapHeader {
                    version: 0x2008_0522, // _LINUX_CAPABILITY_VERSION_3
                    pid: 0,
                };
                let data = [CapData::default(); 2];
                if libc::syscall(libc::SYS_capset, &mut header, data.as_ptr()) != 0 {
                    return Err((Stage::Capabilities, 0, errno()));
                }
            }
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
                return Err((Stage::NoNewPrivs, 0, errno()));
            }
            if let Some(l) = &self.landlock
                && libc::syscall(libc::SYS_landlock_restrict_self, l.as_raw_fd(), 0u32) != 0
            {
                return Err((Stage::Landlock, 0, errno()));
            }
            for (i, p) in self.seccomp.iter().enumerate() {
                seccomp::install(p).map_err(|e| (Stage::Seccomp, i as u32, e))?;
            }
        }
        Ok(())
    }
}

#[repr(C)]
struct CapHeader {
    version: u32,
    pid: i32,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

/// Create `path`'s missing parent directories and, for a file, the file itself (only inside a
/// tmpfs the init mounted: everything else existed before).
///
/// # Safety
/// Raw system calls only.
unsafe fn ensure(path: &CStr, file: bool) -> Result<(), i32> {
    // SAFETY: zeroed stat is a valid out-parameter.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: valid C string.
    if unsafe { libc::lstat(path.as_ptr(), &mut st) } == 0 {
        return Ok(());
    }
    let bytes = path.to_bytes();
    let mut buf = [0u8; 4096];
    if bytes.len() >= buf.len() {
        return Err(libc::ENAMETOOLONG);
    }
    for (i, &b) in bytes.iter().enumerate() {
        if b == b'/' && i > 0 {
            buf[i] = 0;
            // SAFETY: buf holds a NUL-terminated prefix.
            if unsafe { libc::mkdir(buf.as_ptr().cast(), 0o755) } != 0 && errno() != libc::EEXIST {
                return Err(errno());
            }
        }
        buf[i] = b;
    }
    buf[bytes.len()] = 0;
    // SAFETY: buf is NUL-terminated.
    unsafe {
        if file {
            let fd = libc::open(
                buf.as_ptr().cast(),
                libc::O_CREAT | libc::O_WRONLY | libc::O_CLOEXEC,
                0o644,
            );
            if fd < 0 {
                return Err(errno());
            }
            libc::close(fd);
        } else if libc::mkdir(buf.as_ptr().cast(), 0o755) != 0 && errno() != libc::EEXIST {
            return Err(errno());
        }
    }
    Ok(())
}

fn check(r: libc::c_long) -> Result<(), i32> {
    if r < 0 { Err(errno()) } else { Ok(()) }
}

/// Bind the opened `source` onto `target` (created first when missing), idmapped through the
/// user namespace `idmap` when given.
///
/// # Safety
/// Raw system calls only.
unsafe fn bind(source: i32, target: &CStr, file: bool, idmap: Option<i32>) -> Result<(), i32> {
    // SAFETY: raw syscalls on prepared C strings and local structs.
    unsafe {
        ensure(target, file)?;
        bind_onto(source, target, idmap)
    }
}

/// Bind the opened `source` over `target`, which must exist (nothing is created).
///
/// # Safety
/// Raw system calls only; `source` is an open descriptor.
unsafe fn bind_onto(source: i32, target: &CStr, idmap: Option<i32>) -> Result<(), i32> {
    // SAFETY: raw syscalls on prepared C strings and local structs.
    unsafe {
        let recursive = if idmap.is_some() { 0 } else { AT_RECURSIVE };
        let tree = libc::syscall(
            libc::SYS_open_tree,
            source,
            c"".as_ptr(),
            OPEN_TREE_CLONE | libc::O_CLOEXEC as u32 | libc::AT_EMPTY_PATH as u32 | recursive,
        );
        if tree < 0 {
            return Err(errno());
        }
        let tree = tree as i32;
        if let Some(ns) = idmap {
            let attr = MountAttr {
                attr_set: MOUNT_ATTR_IDMAP,
                attr_clr: 0,
                propagation: 0,
                userns_fd: ns as u64,
            };
            let r = libc::syscall(
                libc::SYS_mount_setattr,
                tree,
                c"".as_ptr(),
                libc::AT_EMPTY_PATH as u32,
                &attr as *const MountAttr,
                std::mem::size_of::<MountAttr>(),
            );
            if r < 0 {
                let e = errno();
                libc::close(tree);
                return Err(e);
            }
        }
        let r = libc::syscall(
            libc::SYS_move_mount,
            tree,
            c"".as_ptr(),
            libc::AT_FDCWD,
            target.as_ptr(),
            MOVE_MOUNT_F_EMPTY_PATH,
        );
        let e = errno();
        libc::close(tree);
        if r < 0 { Err(e) } else { Ok(()) }
    }
}

/// # Safety
/// Raw system calls only.
unsafe fn run_step(step: &MountStep, slots: &mut [i32; MAX_SLOTS]) -> Result<(), i32> {
    // SAFETY: raw syscalls on prepared C strings and local structs.
    unsafe {
        match step {
            MountStep::Private => check(libc::mount(
                std::ptr::null(),
                c"/".as_ptr(),
                std::ptr::null(),
                libc::MS_REC | libc::MS_PRIVATE,
                std::ptr::null(),
            ) as libc::c_long),
            MountStep::Open { path, slot } => {
                let fd = libc::open(path.as_ptr(), libc::O_PATH | libc::O_CLOEXEC);
                if fd < 0 {
                    return Err(errno());
                }
                slots[*slot] = fd;
                Ok(())
            }
            MountStep::Tmpfs { target, data } => {
                ensure(target, false)?;
                check(libc::mount(
                    c"tmpfs".as_ptr(),
                    target.as_ptr(),
                    c"tmpfs".as_ptr(),
                    libc::MS_NOSUID | libc::MS_NODEV,
                    data.as_ptr().cast(),
                ) as libc::c_long)
            }
            MountStep::Bind {
                slot,
                target,
                file,
                idmap,
            } => bind(slots[*slot], target, *file, *idmap),
            // Never created: a socket gone since it was listed (even between a check and the
            // mount, as a Slurm step's socket may go) leaves nothing to hide.
            MountStep::BindIfPresent { slot, target } => {
                match bind_onto(slots[*slot], target, None) {
                    Err(libc::ENOENT) => Ok(()),
                    r => r,
                }
            }
            MountStep::Devpts { target } => {
                ensure(target, false)?;
                check(libc::mount(
                    c"devpts".as_ptr(),
                    target.as_ptr(),
                    c"devpts".as_ptr(),
                    libc::MS_NOSUID | libc::MS_NOEXEC,
                    c"newinstance,ptmxmode=0666,mode=620".as_ptr().cast(),
                ) as libc::c_long)
            }
            MountStep::Symlink { to, link } => {
                if libc::symlink(to.as_ptr(), link.as_ptr()) != 0 && errno() != libc::EEXIST {
                    return Err(errno());
                }
                Ok(())
            }
            // Another user's processes are invisible (the init's, when the program runs as an
            // unprivileged user): not even its command line shows.
            MountStep::Proc { target } => check(libc::mount(
                c"proc".as_ptr(),
                target.as_ptr(),
                c"proc".as_ptr(),
                libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                c"hidepid=2".as_ptr().cast(),
            ) as libc::c_long),
            MountStep::ReadOnlyAll => {
                let attr = MountAttr {
                    attr_set: MOUNT_ATTR_RDONLY,
                    attr_clr: 0,
                    propagation: 0,
                    userns_fd: 0,
                };
                check(libc::syscall(
                    libc::SYS_mount_setattr,
                    libc::AT_FDCWD,
                    c"/".as_ptr(),
                    AT_RECURSIVE,
                    &attr as *const MountAttr,
                    std::mem::size_of::<MountAttr>(),
                ))
            }
            MountStep::Overlay {
                target,
                lower,
                upper,
                work,
                userxattr,
            } => {
                let mut ub = [0u8; 32];
                let mut wb = [0u8; 32];
                let (u, w) = (
                    fd_path(slots[*upper], &mut ub),
                    fd_path(slots[*work], &mut wb),
                );
                let mnt = layer::overlay(lower, u, w, *userxattr)?;
                let r = libc::syscall(
                    libc::SYS_move_mount,
                    mnt,
                    c"".as_ptr(),
                    libc::AT_FDCWD,
                    target.as_ptr(),
                    MOVE_MOUNT_F_EMPTY_PATH,
                );
                let e = errno();
                libc::close(mnt);
                if r < 0 { Err(e) } else { Ok(()) }
            }
            MountStep::NoExec { target } => {
                let attr = MountAttr {
                    attr_set: MOUNT_ATTR_NOEXEC,
                    attr_clr: 0,
                    propagation: 0,
                    userns_fd: 0,
                };
                check(libc::syscall(
                    libc::SYS_mount_setattr,
                    libc::AT_FDCWD,
                    target.as_ptr(),
                    0u32,
                    &attr as *const MountAttr,
                    std::mem::size_of::<MountAttr>(),
                ))
            }
            MountStep::Writable { target } => {
                let attr = MountAttr {
                    attr_set: 0,
                    attr_clr: MOUNT_ATTR_RDONLY,
                    propagation: 0,
                    userns_fd: 0,
                };
                check(libc::syscall(
                    libc::SYS_mount_setattr,
                    libc::AT_FDCWD,
                    target.as_ptr(),
                    0u32,
                    &attr as *const MountAttr,
                    std::mem::size_of::<MountAttr>(),
                ))
            }
        }
    }
}

/// `/proc/self/fd/<fd>` written into `buf`, as a C string (no allocation: used in the init).
fn fd_path(fd: i32, buf: &mut [u8; 32]) -> &CStr {
    const PREFIX: &[u8] = b"/proc/self/fd/";
    buf[..PREFIX.len()].copy_from_slice(PREFIX);
    let mut digits = [0u8; 10];
    let mut n = fd.max(0) as u32;
    let mut d = 0;
    loop {
        digits[d] = b'0' + (n % 10) as u8;
        d += 1;
        n /= 10;
        if n == 0 || d == digits.len() {
            break;
        }
    }
    let mut i = PREFIX.len();
    while d > 0 {
        d -= 1;
        buf[i] = digits[d];
        i += 1;
    }
    buf[i] = 0;
    CStr::from_bytes_until_nul(&buf[..=i]).unwrap_or(c"")
}

/// Whether `word` names a shell (its `-c` argument is a script).
fn is_shell(word: &str) -> bool {
    let name = Path::new(word).file_name().and_then(|n| n.to_str());
    name.is_some_and(|n| matches!(n, "sh" | "bash" | "dash" | "zsh" | "ksh"))
}

/// Whether `word` names an interpreter whose first operand is the program it runs.
fn is_interpreter(word: &str) -> bool {
    let name = Path::new(word)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("");
    let base = name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    is_shell(name)
        || matches!(
            base,
            "python" | "pypy" | "perl" | "ruby" | "node" | "Rscript" | "lua" | "php" | "tclsh"
        )
}

/// The words of `argv` that name a program the command will run, besides `argv[0]`: for a
/// shell's `-c` script, the first word of every command in it (after `exec`, `env`, `nohup` and
/// assignments); for an interpreter, its script (the first operand); and the first argument
/// `executable` says is an executable file (a launcher's program: `mpirun -n 2 ./prog`), looked
/// into as above when it is a shell or an interpreter (`mpirun -n 2 /bin/sh -c …`).
fn programs_named(argv: &[String], executable: impl Fn(&str) -> bool) -> Vec<String> {
    let mut out = Vec::new();
    for (i, a) in argv.iter().enumerate() {
        let launched = i > 0 && a.contains('/') && executable(a);
        if launched {
            out.push(a.clone());
        }
        if is_shell(a) && argv.get(i + 1).is_some_and(|c| c == "-c") {
            if let Some(script) = argv.get(i + 2) {
                out.extend(script_programs(script));
            }
            break;
        }
        if is_interpreter(a) {
            if let Some(script) = argv[i + 1..].iter().find(|w| !w.starts_with('-')) {
                out.push(script.clone());
            }
            break;
        }
        if launched {
            break; // the launcher's program: the rest are its arguments
        }
    }
    out
}

/// The programs a shell script starts: the first word of each command (split at `;`, `&`, `|`,
/// newlines and parentheses) and, for an interpreter, its script.
fn script_programs(script: &str) -> Vec<String> {
    let mut out = Vec::new();
    for command in script.split(['\n', ';', '&', '|', '(', ')']) {
        let words: Vec<&str> = command
            .split_whitespace()
            .map(|w| w.trim_matches(['"', '\'']))
            .collect();
        let mut rest = words
            .iter()
            .skip_while(|w| {
                matches!(**w, "exec" | "env" | "nohup" | "then" | "do" | "else" | "!")
                    || (w.contains('=') && !w.starts_with('/'))
            })
            .copied();
        let Some(program) = rest.next() else {
            continue;
        };
        out.push(program.to_string());
        if is_interpreter(program) && !is_shell(program) {
            if let Some(s) = rest.find(|w| !w.starts_with('-')) {
                out.push(s.to_string());
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::programs_named;

    fn named(argv: &[&str]) -> Vec<String> {
        let argv: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
        programs_named(&argv, |w| w.ends_with("/prog"))
    }

    #[test]
    fn the_programs_a_command_runs_are_found_behind_shells_interpreters_and_launchers() {
        let cases: &[(&[&str], &[&str])] = &[
            (&["/bin/true"], &[]),
            (&["sh", "-c", "/tmp/x/prog --n 3"], &["/tmp/x/prog"]),
            (&["sh", "-c", "exec /tmp/x/prog"], &["/tmp/x/prog"]),
            (&["sh", "-c", "A=1 B=/x /tmp/x/prog"], &["/tmp/x/prog"]),
            (
                &["sh", "-c", "sleep 300 & python3 /tmp/s.py {port}; exit $?"],
                &["sleep", "python3", "/tmp/s.py", "exit"],
            ),
            (
                &["bash", "-c", "make && './run' | tee log"],
                &["make", "./run", "tee"],
            ),
            (&["python3", "-u", "/tmp/s.py", "8080"], &["/tmp/s.py"]),
            (&["python3.11", "/tmp/s.py"], &["/tmp/s.py"]),
            (&["perl", "/tmp/s.pl"], &["/tmp/s.pl"]),
            (&["bash", "/tmp/run.sh"], &["/tmp/run.sh"]),
            (
                &["mpirun", "-n", "2", "/tmp/x/prog", "/tmp/data"],
                &["/tmp/x/prog"],
            ),
            (&["sh", "-c", ""], &[]),
            (
                &["mpirun", "-n", "2", "/bin/sh", "-c", "/tmp/x/prog 10"],
                &["/tmp/x/prog"],
            ),
            (
                &["srun", "-n", "2", "/tmp/x/prog", "python3", "/tmp/s.py"],
                &["/tmp/x/prog"],
            ),
        ];
        for (argv, want) in cases {
            assert_eq!(named(argv), *want, "{argv:?}");
        }
    }
}
