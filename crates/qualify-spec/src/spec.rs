//! The whole spec: [`Spec`], its loading ([`Spec::load`], [`Spec::parse`]), and the checks that
//! span sections — every placeholder names an axis (or is `{port}` of a `[service]`), every axis
//! is used by a placeholder or sets a ceiling (a `load` axis: by `[load]`; a `fault` axis needs
//! none), `[load]`, `[[slo]]`, `[[dependency]]` and `[recovery]` belong to a `[service]`,
//! `[faults]` and fault axes come together, a `production` claim has a `[target]`, the
//! workdir exists.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use toml::Spanned;

use crate::artifact::{self, Artifact, RawArtifact};
use crate::axis::{self, Axis, AxisKind, RawAxis, Value};
use crate::check::{Checker, PlaceholderUse};
use crate::claim::{Claim, ClaimLevel, RawClaim};
use crate::coherence;
use crate::dependency::{
    self, DEP_PORT_PLACEHOLDER, Dependency, PROXY_PORT_PLACEHOLDER, RawDependency,
};
use crate::environment::{self, Environment, RawEnvironment, RawReproducibility, Reproducibility};
use crate::error::{SpecError, from_toml};
use crate::executor::{self, Executor, RawExecutor};
use crate::faults::{self, Faults, RawFaults};
use crate::functional::{self, Functional, RawFunctional};
use crate::limits::{self, RawLimits, SpecLimits};
use crate::load::{self, Load, RawLoad};
use crate::overrides::Override;
use crate::performance::{self, Performance, RawPerformance};
use crate::recovery::{self, RawRecovery, Recovery};
use crate::sandbox::{self, RawSandbox, SandboxSpec};
use crate::service::{self, PORT_PLACEHOLDER, RawService, Service};
use crate::slo::{self, RawSlo};
use crate::target::{self, RawTarget, Target};
use crate::template::is_placeholder_name;
use crate::waiver::{self, RawWaiver, Waiver};
use qualify_model::Params;

/// A checked `qualify.toml`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Spec {
    /// The spec file's path as given.
    pub path: PathBuf,
    /// The directory `workdir` is resolved against: the spec file's directory (absolute when
    /// loaded from disk).
    pub dir: PathBuf,
    pub artifact: Artifact,
    pub claim: Claim,
    pub target: Option<Target>,
    pub functional: Option<Functional>,
    pub limits: SpecLimits,
    /// In the order written.
    pub axes: Vec<Axis>,
    pub waivers: Vec<Waiver>,
    /// `[performance]`: repeated measurement, metrics, scaling checks (absent: one run per cell).
    pub performance: Option<Performance>,
    /// `[executor]`: where cells run (default: this machine).
    pub executor: Executor,
    /// `[environment]`: extra facts for the environment fingerprint (tool version commands).
    pub environment: Environment,
    /// `[reproducibility]`: repeats per cell, declared nondeterminism and its tolerance check.
    pub reproducibility: Reproducibility,
    /// `[service]`: the artifact is a service (started, made ready, loaded, stopped per cell).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service: Option<Service>,
    /// `[load]`: the load each service cell is driven with (only with `[service]`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load: Option<Load>,
    /// `[[slo]]`: the objectives the load is judged by, in the order written.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub slos: Vec<qualify_model::Slo>,
    /// `[[dependency]]`: what the service talks to, each behind a fault proxy, in the order
    /// written.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub dependencies: Vec<Dependency>,
    /// `[faults]`: when the fault axes' faults are active and how soon the service must recover.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub faults: Option<Faults>,
    /// `[recovery]`: a kill and restart of the service under load, with an optional write check.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recovery: Option<Recovery>,
    /// `[sandbox]`: what the artifact may see and touch (default: on, loopback network).
    pub sandbox: SandboxSpec,
    /// `[perturb]`: every cell also runs many times under seeded schedule perturbation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub perturb: Option<crate::perturb::Perturb>,
    /// The spec's text, as read (for digests).
    #[serde(skip)]
    pub source: String,
    /// `--set KEY=VALUE` overrides this run applied over the file, as given.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub overrides: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSpec {
    artifact: RawArtifact,
    claim: RawClaim,
    target: Option<RawTarget>,
    functional: Option<RawFunctional>,
    limits: Option<RawLimits>,
    #[serde(default)]
    axis: Vec<RawAxis>,
    #[serde(default)]
    waiver: Vec<RawWaiver>,
    performance: Option<RawPerformance>,
    executor: Option<RawExecutor>,
    environment: Option<RawEnvironment>,
    reproducibility: Option<RawReproducibility>,
    service: Option<RawService>,
    load: Option<Spanned<RawLoad>>,
    #[serde(default)]
    slo: Vec<Spanned<RawSlo>>,
    #[serde(default)]
    dependency: Vec<Spanned<RawDependency>>,
    faults: Option<Spanned<RawFaults>>,
    recovery: Option<Spanned<RawRecovery>>,
    sandbox: Option<RawSandbox>,
    perturb: Option<Spanned<crate::perturb::RawPerturb>>,
}

impl Spec {
    /// Read and check the spec at `path`. `workdir` is resolved against the file's directory
    /// (made absolute) and must exist.
    pub fn load(path: impl AsRef<Path>) -> Result<Spec, SpecError> {
        Spec::load_with(path, &[])
    }

    /// [`Spec::load`] with `--set` overrides applied to the file's text first; a problem in an
    /// override is reported at its flag, one in the file at its line and column.
    pub fn load_with(path: impl AsRef<Path>, overrides: &[Override]) -> Result<Spec, SpecError> {
        let path = path.as_ref();
        let bytes = std::fs::read(path).map_err(|source| SpecError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let text = crate::error::utf8(bytes, path)?;
        let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        check_with(&text, path, &parent(&absolute), true, overrides)
    }

    /// Check spec text as if read from `path`, without touching the file system: `workdir` is
    /// resolved lexically against `path`'s directory and need not exist.
    pub fn parse(text: &str, path: impl AsRef<Path>) -> Result<Spec, SpecError> {
        Spec::parse_with(text, path, &[])
    }

    /// [`Spec::parse`] with `--set` overrides.
    pub fn parse_with(
        text: &str,
        path: impl AsRef<Path>,
        overrides: &[Override],
    ) -> Result<Spec, SpecError> {
        let path = path.as_ref();
        check_with(text, path, &parent(path), false, overrides)
    }

    /// The sandbox the spec's runs are probed in: `[sandbox]` (with the paths the run hides
    /// and the variables it passes), every cell writing its workdir through a layer of its own
    /// so nothing it writes reaches the workdir or a later cell. `qualify-probe` adds every
    /// home directory on the machine it runs on.
    pub fn sandbox_policy(&self) -> qualify_model::SandboxPolicy {
        let mut s = self.sandbox.clone();
        s.private_workdir = s.mode != qualify_model::enforcement::Mode::Off;
        s
    }

    /// The axis called `name`.
    pub fn axis(&self, name: &str) -> Option<&Axis> {
        self.axes.iter().find(|a| a.name == name)
    }

    /// The write check, from `[faults]` or `[recovery]` (a spec has at most one).
    pub fn writes(&self) -> Option<&crate::writes::Writes> {
        self.faults
            .as_ref()
            .and_then(|f| f.writes.as_ref())
            .or_else(|| self.recovery.as_ref().and_then(|r| r.writes.as_ref()))
    }

    /// The `[[dependency]]` called `name`.
    pub fn dependency(&self, name: &str) -> Option<&Dependency> {
        self.dependencies.iter().find(|d| d.name == name)
    }

    /// The faults the cell whose axis values are `params` puts on the dependencies: one per
    /// fault axis (its dependency and the cell's fault, `none` included), in axis order.
    pub fn faults_for(&self, params: &Params) -> Vec<(&Dependency, qualify_model::Fault)> {
        self.axes
            .iter()
            .filter_map(|axis| {
                let fault_axis = axis.fault.as_ref()?;
                let fault = axis.fault_of(params.get(&axis.name)?)?;
                Some((self.dependency(&fault_axis.dependency)?, fault))
            })
            .collect()
    }

    /// What the claim expects of the cell at `params` under each fault it puts on a dependency:
    /// (dependency, fault, accepted behaviours — `None` when the claim states none).
    pub fn expectations_for(
        &self,
        params: &Params,
    ) -> Vec<(
        &str,
        qualify_model::Fault,
        Option<Vec<qualify_model::fault::Verdict>>,
    )> {
        self.axes
            .iter()
            .filter_map(|axis| {
                let fault_axis = axis.fault.as_ref()?;
                let value = params.get(&axis.name)?;
                let fault = axis.fault_of(value)?;
                let expected = axis.expected_of(value).map(<[_]>::to_vec);
                Some((fault_axis.dependency.as_str(), fault, expected))
            })
            .collect()
    }

    /// The axis that sets each cell's memory ceiling (kind `memory`), if any.
    pub fn ceiling_axis(&self) -> Option<&Axis> {
        self.axes.iter().find(|a| a.sets_memory_ceiling())
    }

    /// The command line of the cell at `params` run as a Slurm job: the artifact's command
    /// under `[executor] launcher`, when given, in place of `[artifact] launcher`.
    pub fn slurm_argv(&self, params: &Params) -> Vec<String> {
        let argv = self.artifact.argv(params);
        let Some(launcher) = &self.executor.launcher else {
            return argv;
        };
        let skip = self.artifact.launcher_argv(params).len();
        crate::template::render(launcher, params)
            .split_whitespace()
            .map(str::to_string)
            .chain(argv.into_iter().skip(skip))
            .collect()
    }

    /// The limits of the cell whose axis values are `params`: `[limits]` (or the probe's
    /// defaults), with the memory ceiling taken from the memory axis's value when there is one.
    pub fn limits_for(&self, params: &Params) -> qualify_model::Limits {
        let mut limits = self.limits.to_probe_limits();
        if let Some(Value::Int(bytes)) = self.ceiling_axis().and_then(|axis| params.get(&axis.name))
        {
            limits.memory_bytes = u64::try_from(*bytes).ok();
        }
        limits
    }
}

fn parent(path: &Path) -> PathBuf {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Apply the overrides, check the edited text, and say every problem where its cause was
/// written. The spec keeps the file's own text as its source (the receipt digests the file)
/// and the overrides beside it.
fn check_with(
    text: &str,
    path: &Path,
    dir: &Path,
    check_fs: bool,
    overrides: &[Override],
) -> Result<Spec, SpecError> {
    if overrides.is_empty() {
        return check(text, path, dir, check_fs);
    }
    let edited = crate::overrides::apply(text, path, overrides).map_err(SpecError::Invalid)?;
    match check(&edited.text, path, dir, check_fs) {
        Ok(mut spec) => {
            spec.source = text.to_string();
            spec.overrides = overrides.iter().map(|o| o.text.clone()).collect();
            Ok(spec)
        }
        Err(SpecError::Invalid(diagnostics)) => Err(SpecError::Invalid(
            diagnostics.into_iter().map(|d| edited.map(d)).collect(),
        )),
        Err(other) => Err(other),
    }
}

fn check(text: &str, path: &Path, dir: &Path, check_fs: bool) -> Result<Spec, SpecError> {
    let raw: RawSpec =
        toml::from_str(text).map_err(|e| SpecError::Invalid(vec![from_toml(&e, text, path)]))?;
    let mut ck = Checker::new(text, path);

    let level = raw.claim.level;
    let perturb_required = crate::claim::check_perturb(raw.claim.perturb.as_ref(), &mut ck);
    let headroom = crate::claim::check_headroom(raw.claim.headroom, &mut ck);
    let mut checked = artifact::check(raw.artifact, dir, &mut ck);
    if check_fs {
        let workdir = &checked.artifact.workdir;
        let problem = match std::fs::metadata(workdir) {
            Ok(meta) if meta.is_dir() => None,
            Ok(_) => Some("is not a directory"),
            Err(_) => Some("does not exist"),
        };
        if let Some(problem) = problem {
            ck.error_help(
                checked.workdir_span.clone(),
                format!("artifact.workdir `{}` {problem}", workdir.display()),
                "workdir is relative to the directory holding the spec file",
            );
        }
    }
    let (target, target_spans) = match raw.target.map(|t| target::check(t, &mut ck)) {
        Some((t, spans)) => (Some(t), spans),
        None => (None, target::TargetSpans::default()),
    };
    let functional = raw
        .functional
        .map(|f| functional::check(f, &checked.artifact.workdir, &mut ck));
    let limits = raw
        .limits
        .map(|l| limits::check(l, &mut ck))
        .unwrap_or_default();
    let declared: BTreeSet<String> = raw.axis.iter().map(|a| a.name().to_string()).collect();
    let declares_fault_axis = raw.axis.iter().any(|a| a.kind() == AxisKind::Fault);
    let axes = axis::check_all(raw.axis, &mut ck);
    let waivers = waiver::check(raw.waiver, &mut ck);
    let is_service = raw.service.is_some();
    let (performance, expect_spans) = match raw
        .performance
        .map(|p| performance::check(p, &axes_of(&axes), is_service, &mut ck))
    {
        Some((p, spans)) => (Some(p), spans),
        None => (None, Vec::new()),
    };
    coherence::headroom(&headroom, target.as_ref(), &axes, &mut ck);
    coherence::target_workload(&target_spans.workload, &axes, &mut ck);
    if let Some(p) = &performance {
        coherence::performance(p, &expect_spans, &axes, &mut ck);
    }
    let executor = raw
        .executor
        .map(|e| executor::check(e, &mut ck, &mut checked.uses))
        .unwrap_or_default();
    let sandbox = raw
        .sandbox
        .map(|s| sandbox::check(s, dir, check_fs, &mut ck))
        .unwrap_or_default();
    let environment = raw
        .environment
        .map(|e| environment::check_environment(e, &mut ck))
        .unwrap_or_default();
    let reproducibility = raw
        .reproducibility
        .map(|r| environment::check_reproducibility(r, &mut ck))
        .unwrap_or_else(|| Reproducibility {
            repeat: 1,
            ..Reproducibility::default()
        });

    let service = raw
        .service
        .map(|s| service::check(s, &mut ck, &mut checked.uses));
    let load_span = raw.load.as_ref().map(Spanned::span);
    let load = raw.load.map(|l| {
        let span = l.span();
        if service.is_none() {
            ck.error_help(
                span.clone(),
                "[load] needs [service]: only a service is driven with load",
                "add [service] with ready = { http = \"/healthz\", within = \"20s\" } (or tcp = true): qualify starts the service, waits until it is ready, then sends the load",
            );
        }
        load::check(l.into_inner(), span, &axes_of(&axes), &mut ck)
    });
    let (load, load_use) = match load {
        Some((load, used)) => (Some(load), Some(used)),
        None => (None, None),
    };
    if let Some(first) = raw.slo.first()
        && load.is_none()
    {
        ck.error_help(
            first.span(),
            "[[slo]] judges a load, but the spec has no [load]",
            "add [service] and [load] (the load the objectives are measured under), or remove the [[slo]]",
        );
    }
    let (checked_slos, fault_slo_spans) = slo::check(
        raw.slo.into_iter().map(Spanned::into_inner).collect(),
        &mut ck,
    );
    coherence::objectives(&checked_slos, load.as_ref(), &axes, &mut ck);
    let slos: Vec<qualify_model::Slo> = checked_slos.into_iter().map(|c| c.slo).collect();

    if let Some(first) = raw.dependency.first()
        && service.is_none()
    {
        ck.error_help(
            first.span(),
            "[[dependency]] needs [service]: qualify puts a fault proxy between a service and its dependencies",
            "add [service] (and [load]) for the artifact that talks to this dependency",
        );
    }
    let mut dependency_axes = BTreeSet::new();
    let (dependencies, dependency_names) = dependency::check_all(
        raw.dependency,
        &declared,
        &checked.artifact.env,
        &mut ck,
        &mut dependency_axes,
    );
    if !dependencies.is_empty() {
        for reserved in [DEP_PORT_PLACEHOLDER, PROXY_PORT_PLACEHOLDER] {
            if let Some(axis) = axes.iter().find(|a| a.axis.name == reserved) {
                ck.error_help(
                    axis.name_span.clone(),
                    format!("axis name `{reserved}` is taken: with [[dependency]], {{{reserved}}} is a port qualify assigns each cell"),
                    "rename the axis",
                );
            }
        }
    }
    coherence::waivers(&waivers, target.as_ref(), &dependency_names, &mut ck);
    coherence::dependencies(
        &dependency_names,
        &axes,
        &target_spans.dependencies,
        &mut ck,
    );

    let measured = load.as_ref().zip(load_span.clone());
    let fault_axes: Vec<&axis::CheckedAxis> = axes
        .iter()
        .filter(|a| a.axis.kind == AxisKind::Fault)
        .collect();
    let faults = raw.faults.map(|f| {
        let span = f.span();
        if !declares_fault_axis {
            ck.error_help(
                span.clone(),
                "[faults] without a fault axis: there is no fault to put in its window",
                "add [[axis]] with kind = \"fault\", dependency = \"<name>\" and values = [\"none\", \"latency(200ms)\", \"down\"], or remove [faults]",
            );
        }
        if load.is_none() {
            ck.error_help(
                span.clone(),
                "[faults] needs [load]: its window is an offset within the measured load phase",
                "add [service] and [load] (the load the service is driven with while its dependency fails)",
            );
        }
        faults::check(f.into_inner(), span, measured.clone(), &axes_of(&axes), &mut ck)
    });
    if faults.is_none() {
        for span in &fault_slo_spans {
            ck.error_help(
                span.clone(),
                "an [[slo]] with phase = \"fault\" is judged inside the fault window, but the spec has no [faults]",
                "add [faults] and a fault axis (kind = \"fault\") to put a fault in a window, or remove phase = \"fault\"",
            );
        }
        for a in &fault_axes {
            ck.error_help(
                a.name_span.clone(),
                format!("fault axis `{}` needs [faults]: when, within the load, its faults are active", a.axis.name),
                "add [faults] with window = [\"3s\", \"8s\"] (offsets within the measured load phase) and recover_within = \"5s\"",
            );
        }
    }
    let recovery_span = raw.recovery.as_ref().map(Spanned::span);
    let recovery = raw.recovery.map(|r| {
        let span = r.span();
        if service.is_none() {
            ck.error_help(
                span.clone(),
                "[recovery] needs [service]: only a service is killed and restarted under load",
                "add [service] and [load], or remove [recovery]",
            );
        } else if load.is_none() {
            ck.error_help(
                span.clone(),
                "[recovery] needs [load]: the kill happens at an offset within the measured load phase",
                "add [load] with the load the service is under when it is killed",
            );
        }
        recovery::check(r.into_inner(), span, measured.clone(), &axes_of(&axes), &mut ck)
    });
    if let (Some(f), Some(r)) = (&faults, &recovery)
        && f.writes.is_some()
        && r.writes.is_some()
        && let Some(span) = &recovery_span
    {
        ck.error_help(
            span.clone(),
            "writes is given in both [faults] and [recovery]: a cell has one write check",
            "keep one: it is read back after the load, whichever fault or restart it had",
        );
    }
    let standing = faults.as_ref().is_some_and(|f| f.standing);
    coherence::fault_kinds(&dependencies, &axes, standing, &mut ck);
    if service.is_some()
        && let Some(axis) = axes.iter().find(|a| a.axis.name == PORT_PLACEHOLDER)
    {
        ck.error_help(
            axis.name_span.clone(),
            "axis name `port` is taken: in a service spec {port} is the port qualify assigns each cell",
            "rename the axis",
        );
    }

    let builtin = |name: &str| service.is_some() && name == PORT_PLACEHOLDER;
    let mut known = declared.clone();
    if service.is_some() {
        known.insert(PORT_PLACEHOLDER.to_string());
    }
    for missing in checked
        .uses
        .iter()
        .filter(|u| !declared.contains(&u.name) && !builtin(&u.name))
    {
        let mut help = missing_axis_help(missing, &known);
        if missing.name == PORT_PLACEHOLDER {
            help = "{port} is the port qualify assigns a service: add [service] (or declare an axis named `port`)".to_string();
        }
        if missing.name == PROXY_PORT_PLACEHOLDER || missing.name == DEP_PORT_PLACEHOLDER {
            help = format!(
                "{{{}}} belongs to a [[dependency]]: give the service the proxy's address in that dependency's env, e.g. env = {{ DB_URL = \"postgres://127.0.0.1:{{proxy_port}}/app\" }}",
                missing.name
            );
        }
        ck.error_help(
            missing.offset..missing.offset,
            format!(
                "placeholder `{{{}}}` has no axis named `{}`",
                missing.name, missing.name
            ),
            help,
        );
    }
    if ck.malformed_templates == 0 {
        let mut used: BTreeSet<&str> = checked.uses.iter().map(|u| u.name.as_str()).collect();
        used.extend(dependency_axes.iter().map(String::as_str));
        let load_failed = load_use.as_ref().is_some_and(|u| u.failed);
        let load_axes: Vec<&str> = load_use
            .iter()
            .flat_map(|u| u.axes.iter().map(String::as_str))
            .collect();
        for a in axes
            .iter()
            .filter(|a| a.axis.kind == AxisKind::Load && !load_failed)
        {
            if !load_axes.contains(&a.axis.name.as_str()) {
                let name = &a.axis.name;
                ck.error_help(
                    a.name_span.clone(),
                    format!("axis `{name}` has kind = \"load\" but [load] does not use it"),
                    format!(
                        "write rate = \"{{{name}}}\" (open model) or users = \"{{{name}}}\" (closed model) in [load], or give the axis another kind"
                    ),
                );
            }
        }
        // A topology axis named `nodes` sizes the Slurm allocation (`--nodes`).
        let sizes_allocation = |a: &Axis| a.kind == AxisKind::Topology && a.name == "nodes";
        for a in axes.iter().filter(|a| {
            !(a.axis.sets_memory_ceiling()
                || matches!(a.axis.kind, AxisKind::Load | AxisKind::Fault)
                || sizes_allocation(&a.axis)
                || used.contains(a.axis.name.as_str()))
        }) {
            ck.error_help(
                a.name_span.clone(),
                format!(
                    "axis `{}` is not used: no `{{{}}}` placeholder in artifact.command or artifact.env",
                    a.axis.name, a.axis.name
                ),
                format!(
                    "put {{{}}} where the command takes this value, or remove the axis (only kind = \"memory\", \"load\" and \"fault\" axes and a topology axis named `nodes` need no placeholder: they set the memory ceiling, the offered load, a dependency's fault, the Slurm allocation's nodes)",
                    a.axis.name
                ),
            );
        }
    }
    if *level.get_ref() == ClaimLevel::Production && target.is_none() {
        ck.error_help(
            level.span(),
            "claim level `production` needs a [target] table: the environment the claim is about",
            "add [target] with cores, nodes and/or memory, or claim level = \"trial\"",
        );
    }

    let perturb = raw.perturb.map(|p| {
        let span = p.span();
        if service.is_some() {
            ck.error_help(
                span.clone(),
                "[perturb] runs batch cells: a service cell is judged under load, not run to its end many times",
                "remove [perturb], or qualify the program as a batch artifact (without [service])",
            );
        }
        if executor.kind == crate::ExecutorKind::Slurm {
            ck.error_help(
                span.clone(),
                "[perturb] runs on this machine: its scheduler-level perturbation acts on the cell's threads from here",
                "use [executor] kind = \"local\" for the perturbed run, or remove [perturb]",
            );
        }
        crate::perturb::check(p.into_inner(), &mut ck)
    });

    let diagnostics = ck.finish();
    if !diagnostics.is_empty() {
        return Err(SpecError::Invalid(diagnostics));
    }
    Ok(Spec {
        path: path.to_path_buf(),
        dir: dir.to_path_buf(),
        artifact: checked.artifact,
        claim: Claim {
            level: level.into_inner(),
            headroom: headroom.headroom,
            perturb_required,
        },
        target,
        functional,
        limits,
        axes: axes.into_iter().map(|a| a.axis).collect(),
        waivers: waivers.into_iter().map(|(w, _)| w).collect(),
        performance,
        executor,
        environment,
        reproducibility,
        service,
        load,
        slos,
        dependencies,
        faults,
        recovery,
        sandbox,
        perturb,
        source: text.to_string(),
        overrides: Vec::new(),
    })
}

fn missing_axis_help(missing: &PlaceholderUse, declared: &BTreeSet<String>) -> String {
    let name = &missing.name;
    if missing.after_dollar {
        return format!(
            "for a shell variable write ${{{{{name}}}}} (doubled braces are literal) or ${name}"
        );
    }
    let near = |d: &&String| {
        name.len() >= 3 && is_placeholder_name(d) && edit_distance(d, name) <= name.len() / 3
    };
    if let Some(close) = declared.iter().find(near) {
        return format!("did you mean {{{close}}}?");
    }
    format!(
        "declare an [[axis]] with name = \"{name}\", or write {{{{{name}}}}} for literal braces"
    )
}

/// Levenshtein distance, for "did you mean" suggestions.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1)
                .min(row[j] + 1)
                .min(diagonal + usize::from(ca != *cb));
            diagonal = above;
        }
    }
    row[b.len()]
}

fn axes_of(checked: &[axis::CheckedAxis]) -> Vec<Axis> {
    checked.iter().map(|a| a.axis.clone()).collect()
}
