//! `[[dependency]]`: something a service talks to (a database, a cache, a queue) that qualify
//! puts a fault proxy in front of. Owns `name` (unique; the `faults.<name>` gap and a fault
//! axis's `dependency` use it), where the dependency comes from — `start`, a command qualify
//! starts fresh per cell (`{dep_port}`: the port qualify assigns it per cell, also exported as
//! `DEP_PORT`), or `upstream = "host:port"`, an endpoint that already runs — `ready` (as
//! `[service]`'s: `{ tcp = true }`, `{ http = "/…" }` or `{ command = … }` against the
//! dependency's port, with `within`; default tcp, 30 s) and `env`: what the *service* is given
//! to reach it, e.g. `REDIS_URL = "redis://127.0.0.1:{proxy_port}"` (`{proxy_port}`: the
//! loopback port of the fault proxy in front of the dependency; `{dep_port}` too).
//!
//! `protocol` (`"tcp"`, default, or `"http"`: the proxy then relays HTTP/1.1 exchanges, counts
//! requests and statuses, and the HTTP faults `status`, `throttle`, `http_delay` apply) and
//! `stop` (`{ signal, grace }` as `[service]`'s, default SIGTERM and 5 s: how a started
//! dependency is stopped — by the `restart` fault and after the cell).
//!
//! `node` (`"service"`, default, or `"own"`): where the dependency runs under `[executor] kind =
//! "slurm"` — on the service's node, or on a node of its own in the cell's allocation (its fault
//! proxy then listens on that node's address, `{proxy_host}`). On the local executor every
//! dependency runs on this machine.
//!
//! Placeholders: `start` and a ready command know `{dep_port}` and the axes; `env` knows
//! `{proxy_host}` (the proxy's address: 127.0.0.1, or the own node's), `{proxy_port}`,
//! `{dep_port}` and the axes. Any other name is an error here (an axis used
//! only here counts as used).

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use toml::Spanned;

use crate::check::{Checker, PlaceholderUse};
use crate::command::{CommandLine, RawCommand, check_command};
use crate::service::{
    DEFAULT_WITHIN, RawReady, RawStop, Ready, ReadyCheck, Stop, check_ready, check_stop,
};
use crate::template::{Bindings, Overlay, is_placeholder_name, render};

/// The placeholder (and, upper-cased, the variable exported to a started dependency) carrying
/// the port qualify assigns a dependency in a cell.
pub const DEP_PORT_PLACEHOLDER: &str = "dep_port";
/// The placeholder carrying the loopback port of the fault proxy in front of a dependency.
pub const PROXY_PORT_PLACEHOLDER: &str = "proxy_port";
/// The placeholder carrying the address of the fault proxy in front of a dependency: `127.0.0.1`,
/// or the address of the dependency's own node (`node = "own"` under Slurm).
pub const PROXY_HOST_PLACEHOLDER: &str = "proxy_host";

/// Where a dependency runs under the Slurm executor.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Node {
    /// On the service's node (its proxy on loopback there).
    #[default]
    Service,
    /// On a node of its own in the cell's allocation (its proxy on that node's address).
    Own,
}

/// A checked `[[dependency]]`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Dependency {
    pub name: String,
    pub source: DependencySource,
    /// When the dependency counts as ready (checked against its port: the assigned
    /// `{dep_port}` of a started one, the upstream's of an existing one).
    pub ready: Ready,
    /// What the service is given to reach the dependency; values are templates
    /// ([`Dependency::service_env`]).
    pub env: BTreeMap<String, String>,
    /// What it speaks: the proxy relays HTTP exchanges (and the HTTP faults apply) for `http`.
    pub protocol: Protocol,
    /// How a started dependency is stopped (the `restart` fault, the cell's end).
    pub stop: Stop,
    /// Where it runs under Slurm.
    pub node: Node,
}

/// What a dependency speaks, as far as the fault proxy cares.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Protocol {
    /// Bytes: the proxy passes chunks on (every protocol).
    #[default]
    Tcp,
    /// HTTP/1.1: the proxy relays request by request.
    Http,
}

/// Where a dependency comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DependencySource {
    /// Started fresh per cell in a directory of its own, supervised like the service; `{dep_port}` and
    /// axis placeholders are substituted ([`Dependency::start_argv`]).
    Start(CommandLine),
    /// An endpoint that already runs; qualify only proxies it.
    Upstream { host: String, port: u16 },
}

impl Dependency {
    /// The command that starts the dependency in the cell whose axis values are `params`, with
    /// `{dep_port}` = `dep_port` (`None` for an upstream dependency).
    pub fn start_argv<B: Bindings + ?Sized>(
        &self,
        params: &B,
        dep_port: u16,
    ) -> Option<Vec<String>> {
        match &self.source {
            DependencySource::Start(command) => Some(
                command
                    .render(&Overlay::new(params).with(DEP_PORT_PLACEHOLDER, dep_port))
                    .argv(),
            ),
            DependencySource::Upstream { .. } => None,
        }
    }

    /// The environment the service is started with for this dependency: `env` rendered with
    /// `{proxy_port}`, `{dep_port}` and the cell's axis values.
    pub fn service_env<B: Bindings + ?Sized>(
        &self,
        params: &B,
        proxy_port: u16,
        dep_port: u16,
    ) -> Vec<(String, String)> {
        self.service_env_at(params, "127.0.0.1", proxy_port, dep_port)
    }

    /// [`Dependency::service_env`] with the proxy at `proxy_host` (`{proxy_host}`).
    pub fn service_env_at<B: Bindings + ?Sized>(
        &self,
        params: &B,
        proxy_host: &str,
        proxy_port: u16,
        dep_port: u16,
    ) -> Vec<(String, String)> {
        let bindings = Overlay::new(params)
            .with(PROXY_HOST_PLACEHOLDER, proxy_host)
            .with(PROXY_PORT_PLACEHOLDER, proxy_port)
            .with(DEP_PORT_PLACEHOLDER, dep_port);
        self.env
            .iter()
            .map(|(k, v)| (k.clone(), render(v, &bindings)))
            .collect()
    }

    /// The ready check's command of this cell (`{dep_port}` and axis values substituted), if
    /// the check is a command.
    pub fn ready_command<B: Bindings + ?Sized>(
        &self,
        params: &B,
        dep_port: u16,
    ) -> Option<Vec<String>> {
        match &self.ready.check {
            ReadyCheck::Command(command) => Some(
                command
                    .render(&Overlay::new(params).with(DEP_PORT_PLACEHOLDER, dep_port))
                    .argv(),
            ),
            _ => None,
        }
    }

    /// The address the fault proxy forwards to: `127.0.0.1:<dep_port>` for a started
    /// dependency, the upstream (`host:port`) otherwise.
    pub fn upstream(&self, dep_port: u16) -> String {
        match &self.source {
            DependencySource::Start(_) => format!("127.0.0.1:{dep_port}"),
            DependencySource::Upstream { host, port } if host.contains(':') => {
                format!("[{host}]:{port}")
            }
            DependencySource::Upstream { host, port } => format!("{host}:{port}"),
        }
    }

    /// The port `{dep_port}` means: assigned per cell for a started dependency (`None`), the
    /// upstream's own port otherwise.
    pub fn fixed_port(&self) -> Option<u16> {
        match &self.source {
            DependencySource::Start(_) => None,
            DependencySource::Upstream { port, .. } => Some(*port),
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawDependency {
    name: Spanned<String>,
    start: Option<Spanned<RawCommand>>,
    upstream: Option<Spanned<String>>,
    ready: Option<Spanned<RawReady>>,
    env: Option<BTreeMap<String, Spanned<String>>>,
    protocol: Option<Spanned<String>>,
    stop: Option<Spanned<RawStop>>,
    node: Option<Spanned<String>>,
}

/// Check every `[[dependency]]`. `axes` are the declared axis names (placeholders a template
/// may use besides the built-ins); each axis a dependency uses is added to `used_axes`.
/// `artifact_env` is `[artifact.env]`'s keys: the service cannot be given one variable twice.
/// Returns the valid dependencies and every declared name (also of invalid ones, so names
/// that refer to them are not reported again).
pub(crate) fn check_all(
    raw: Vec<Spanned<RawDependency>>,
    axes: &BTreeSet<String>,
    artifact_env: &BTreeMap<String, String>,
    ck: &mut Checker<'_>,
    used_axes: &mut BTreeSet<String>,
) -> (Vec<Dependency>, Vec<String>) {
    let mut names: Vec<String> = Vec::new();
    let mut first_name: BTreeMap<String, usize> = BTreeMap::new();
    let mut env_owner: BTreeMap<String, String> = BTreeMap::new();
    let mut out = Vec::new();
    for raw in raw {
        let raw = raw.into_inner();
        let name = raw.name.get_ref().clone();
        let name_span = raw.name.span();
        if !is_placeholder_name(&name) {
            ck.error_help(
                name_span.clone(),
                format!("dependency name {name:?} cannot name a gap or a placeholder"),
                "use letters, digits, `_` and `-`, starting with a letter or `_` (e.g. name = \"db\")",
            );
        }
        if let Some(first) = first_name.get(&name) {
            let help = format!(
                "the first dependency `{name}` is at {}; give each [[dependency]] its own name",
                ck.position(*first)
            );
            ck.error_help(
                name_span.clone(),
                format!("duplicate dependency name `{name}`"),
                help,
            );
        } else {
            first_name.insert(name.clone(), name_span.start);
            names.push(name.clone());
        }

        let source = match (raw.start, raw.upstream) {
            (Some(_), Some(upstream)) => {
                ck.error_help(
                    upstream.span(),
                    format!("dependency `{name}` has both `start` and `upstream`"),
                    "keep start (qualify starts the dependency fresh in each cell) or upstream = \"host:port\" (an endpoint that already runs)",
                );
                None
            }
            (None, None) => {
                ck.error_help(
                    name_span.clone(),
                    format!("dependency `{name}` has neither `start` nor `upstream`"),
                    "give start = [\"redis-server\", \"--port\", \"{dep_port}\"] (started per cell) or upstream = \"127.0.0.1:5432\" (an endpoint that already runs)",
                );
                None
            }
            (Some(start), None) => {
                let mut uses = Vec::new();
                let command = check_command(
                    start,
                    &format!("dependency `{name}` start"),
                    true,
                    ck,
                    &mut uses,
                );
                let _ = placeholders(
                    &uses,
                    &[DEP_PORT_PLACEHOLDER],
                    &format!("dependency `{name}` start"),
                    axes,
                    ck,
                    used_axes,
                );
                Some(DependencySource::Start(command))
            }
            (None, Some(upstream)) => upstream_address(&upstream, &name, ck),
        };

        let ready = match raw.ready {
            None => Ready {
                check: ReadyCheck::Tcp,
                within: DEFAULT_WITHIN,
            },
            Some(r) => {
                let mut uses = Vec::new();
                let what = format!("dependency `{name}` ready");
                let ready = check_ready(r, &what, "{dep_port}", DEFAULT_WITHIN, ck, &mut uses);
                let _ = placeholders(&uses, &[DEP_PORT_PLACEHOLDER], &what, axes, ck, used_axes);
                ready
            }
        };

        let mut env = BTreeMap::new();
        let mut through_proxy = false;
        let mut env_known = true;
        for (key, value) in raw.env.unwrap_or_default() {
            let value_span = value.span();
            if key.is_empty() || key.contains(['=', '\0']) {
                ck.error_help(
                    value_span.clone(),
                    format!("invalid environment variable name {key:?} in dependency `{name}` env"),
                    "a name must be non-empty and contain neither `=` nor NUL",
                );
            }
            if artifact_env.contains_key(&key) {
                ck.error_help(
                    value_span.clone(),
                    format!("dependency `{name}` env sets `{key}`, which [artifact.env] sets too"),
                    "the service is given one value per variable: remove one of them",
                );
            } else if let Some(owner) = env_owner.get(&key) {
                ck.error_help(
                    value_span.clone(),
                    format!("dependency `{name}` env sets `{key}`, which dependency `{owner}` sets too"),
                    "the service is given one value per variable: give each dependency its own variable",
                );
            } else {
                env_owner.insert(key.clone(), name.clone());
            }
            let uses = ck.template(value.get_ref(), value_span);
            through_proxy |= uses.iter().any(|u| u.name == PROXY_PORT_PLACEHOLDER);
            env_known &= placeholders(
                &uses,
                &[
                    PROXY_PORT_PLACEHOLDER,
                    DEP_PORT_PLACEHOLDER,
                    PROXY_HOST_PLACEHOLDER,
                ],
                &format!("dependency `{name}` env"),
                axes,
                ck,
                used_axes,
            );
            env.insert(key, value.into_inner());
        }
        if !through_proxy && env_known && ck.malformed_templates == 0 {
            ck.error_help(
                name_span.clone(),
                format!(
                    "no env value of dependency `{name}` uses {{proxy_port}}: the service would never reach it through the fault proxy, so its faults would change nothing"
                ),
                "give the service the proxy's port, e.g. env = { DB_URL = \"postgres://127.0.0.1:{proxy_port}/app\" } (the variable your service reads)",
            );
        }

        let protocol = match &raw.protocol {
            None => Protocol::Tcp,
            Some(p) => match p.get_ref().as_str() {
                "tcp" => Protocol::Tcp,
                "http" => Protocol::Http,
                other => {
                    ck.error_help(
                        p.span(),
                        format!("dependency `{name}` protocol `{other}` is unknown"),
                        "write protocol = \"http\" (HTTP/1.1: the HTTP faults apply) or \"tcp\" (any protocol; the default)",
                    );
                    Protocol::Tcp
                }
            },
        };
        let stop = match raw.stop {
            None => Stop::default(),
            Some(stop) => {
                if matches!(source, Some(DependencySource::Upstream { .. })) {
                    ck.error_help(
                        stop.span(),
                        format!("dependency `{name}` has `stop` but runs upstream: qualify never stops it"),
                        "remove stop, or start the dependency per cell with start = [\"…\"]",
                    );
                }
                check_stop(stop.into_inner(), ck)
            }
        };
        let node = match &raw.node {
            None => Node::Service,
            Some(n) => match n.get_ref().as_str() {
                "service" => Node::Service,
                "own" => {
                    if matches!(source, Some(DependencySource::Upstream { .. })) {
                        ck.error_help(
                            n.span(),
                            format!("dependency `{name}` has node = \"own\" but runs upstream: qualify starts nothing for it"),
                            "remove node, or start the dependency per cell with start = [\"…\"]",
                        );
                    }
                    Node::Own
                }
                other => {
                    ck.error_help(
                        n.span(),
                        format!("dependency `{name}` node `{other}` is unknown"),
                        "write node = \"service\" (on the service's node; the default) or \"own\" (a node of its own under Slurm)",
                    );
                    Node::Service
                }
            },
        };
        if let Some(source) = source {
            out.push(Dependency {
                name,
                source,
                ready,
                env,
                protocol,
                stop,
                node,
            });
        }
    }
    (out, names)
}

/// Report each placeholder of `uses` that is neither one of `builtins` nor an axis; record the
/// axes used. Returns whether every placeholder was known.
pub(crate) fn placeholders(
    uses: &[PlaceholderUse],
    builtins: &[&str],
    what: &str,
    axes: &BTreeSet<String>,
    ck: &mut Checker<'_>,
    used_axes: &mut BTreeSet<String>,
) -> bool {
    let mut known_all = true;
    for u in uses {
        if builtins.contains(&u.name.as_str()) {
            continue;
        }
        if axes.contains(&u.name) {
            used_axes.insert(u.name.clone());
            continue;
        }
        let known: Vec<String> = builtins.iter().map(|b| format!("{{{b}}}")).collect();
        let help = if u.name == crate::service::PORT_PLACEHOLDER {
            format!(
                "{{port}} is the service's port; here {} the dependency's side, or write {{{{port}}}} for literal braces",
                if builtins.contains(&PROXY_PORT_PLACEHOLDER) {
                    "{proxy_port} (the proxy the service connects to) and {dep_port} are"
                } else {
                    "{dep_port} is"
                }
            )
        } else {
            format!(
                "{what} knows {} and the axes' names; write {{{{{}}}}} for literal braces",
                known.join(" and "),
                u.name
            )
        };
        ck.error_help(
            u.offset..u.offset,
            format!("unknown placeholder `{{{}}}` in {what}", u.name),
            help,
        );
        known_all = false;
    }
    known_all
}

/// `host:port` (IPv6 hosts in brackets: `[::1]:5432`).
fn upstream_address(
    upstream: &Spanned<String>,
    name: &str,
    ck: &mut Checker<'_>,
) -> Option<DependencySource> {
    let text = upstream.get_ref().trim();
    let parsed = text.rsplit_once(':').and_then(|(host, port)| {
        let host = match host.strip_prefix('[') {
            Some(inner) => inner.strip_suffix(']')?,
            None if host.contains(':') => return None,
            None => host,
        };
        let port = port.parse::<u16>().ok().filter(|p| *p > 0)?;
        (!host.is_empty() && !host.contains(char::is_whitespace)).then(|| (host.to_string(), port))
    });
    match parsed {
        Some((host, port)) => Some(DependencySource::Upstream { host, port }),
        None => {
            ck.error_help(
                upstream.span(),
                format!(
                    "dependency `{name}` upstream {:?} is not host:port",
                    upstream.get_ref()
                ),
                "e.g. upstream = \"127.0.0.1:5432\" or \"[::1]:6379\" (port 1–65535)",
            );
            None
        }
    }
}
