//! The receipt-level rows both reports draw (layers, cells and the ones that failed,
//! boundaries, the target gap) and the rows only the HTML report draws (the admission
//! checklist, the machine). Each row is built once from the JSON here; the renderers only
//! format rows.

use serde_json::{Map, Value};

use super::json::{arr, cell, f, s};
use crate::text;

/// One row of the layer table.
pub struct LayerRow {
    pub name: String,
    pub status: String,
    pub summary: String,
    pub untested: Vec<String>,
}

/// One probed cell.
pub struct CellRow {
    pub params: Map<String, Value>,
    pub outcome: String,
    pub detail: String,
    pub wall: Option<f64>,
    pub cpu: Option<f64>,
    pub peak_memory: Option<f64>,
    pub boundary: bool,
}

/// One cell that did not end ok, as the failing-cells tables show it.
pub struct FailureRow {
    /// The cell's parameters, in the receipt's axis order (`threads=2, rounds=10`).
    pub cell: String,
    pub outcome: String,
    pub detail: String,
}

/// The cells that did not end `ok`, in the receipt's order.
pub fn failures(cells: &[CellRow], order: &[String]) -> Vec<FailureRow> {
    cells
        .iter()
        .filter(|c| c.outcome != "ok")
        .map(|c| FailureRow {
            cell: text::params(&c.params, order),
            outcome: c.outcome.clone(),
            detail: c.detail.clone(),
        })
        .collect()
}

/// One boundary the envelope search found (`predicate.boundaries[]`).
pub struct BoundaryRow {
    pub axis: String,
    /// The other axes' values, `threads=2, mode=fast` (empty when none).
    pub fixed: String,
    pub last_pass: String,
    /// `None`: the search found no failure.
    pub first_fail: Option<String>,
    pub outcome: String,
    /// `?` when not recorded.
    pub probes: String,
    /// `None`: monotonicity was not checked.
    pub monotonic: Option<bool>,
    /// First failing value ÷ target value (≤ 1: inside the claimed region), when the target
    /// names a value for the axis; `headroom_at_least` when the search found no failure.
    pub headroom: Option<f64>,
    pub headroom_at_least: Option<f64>,
    /// A load axis's capacity in one sentence, with the precision its repeated edge probes
    /// support (`boundaries[].capacity`); `None` for other axes and older receipts.
    pub capacity: Option<String>,
    /// The same values as JSON writes them (`2.0` stays `2.0`): what `qualify run` prints.
    pub exact: ExactBoundary,
}

/// A boundary's values as JSON writes them (text bare, `null` as `—`), for the terminal
/// summary's line.
pub struct ExactBoundary {
    /// `threads=2, mode=fast`, keys as the receipt orders them.
    pub fixed: String,
    pub last_pass: String,
    pub first_fail: String,
    /// The value the monotonicity check probed (empty when not recorded).
    pub monotonic_at: String,
    /// `0` when not recorded.
    pub probes: u64,
}

/// A value as JSON writes it, text bare and `null` as `—`.
fn json_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "—".into(),
        other => other.to_string(),
    }
}

impl BoundaryRow {
    pub(super) fn from_value(b: &Value) -> BoundaryRow {
        let first_fail = b.get("first_fail").filter(|v| !v.is_null());
        BoundaryRow {
            axis: cell(b.get("axis"), ""),
            fixed: b
                .get("fixed")
                .and_then(Value::as_object)
                .map(text::fixed)
                .unwrap_or_default(),
            last_pass: cell(b.get("last_pass"), ""),
            first_fail: first_fail.map(text::value),
            outcome: cell(b.get("outcome"), ""),
            probes: cell(b.get("probes"), "?"),
            monotonic: b.get("monotonic").and_then(Value::as_bool),
            headroom: b.get("headroom").and_then(Value::as_f64),
            headroom_at_least: b.get("headroom_at_least").and_then(Value::as_f64),
            capacity: b
                .get("capacity")
                .and_then(Value::as_str)
                .map(str::to_string),
            exact: ExactBoundary {
                fixed: b
                    .get("fixed")
                    .and_then(Value::as_object)
                    .map(|m| {
                        m.iter()
                            .map(|(k, v)| format!("{k}={}", json_text(v)))
                            .collect::<Vec<_>>()
                            .join(", ")
                    })
                    .unwrap_or_default(),
                last_pass: b.get("last_pass").map(json_text).unwrap_or_default(),
                first_fail: b.get("first_fail").map(json_text).unwrap_or_default(),
                monotonic_at: b
                    .get("monotonic_check")
                    .and_then(|c| c.get("value"))
                    .map(json_text)
                    .unwrap_or_default(),
                probes: b.get("probes").and_then(Value::as_u64).unwrap_or(0),
            },
        }
    }

    /// `; headroom 1.64× the target`, or empty when the target names no value for the axis.
    pub fn headroom_text(&self) -> String {
        match (self.headroom, self.headroom_at_least) {
            (Some(h), _) if h <= 1.0 => {
                format!("; INSIDE the claimed region ({h:.2}× the target)")
            }
            (Some(h), _) => format!("; headroom {h:.2}× the target"),
            (None, Some(h)) => format!("; headroom ≥ {h:.2}× the target"),
            _ => String::new(),
        }
    }

    /// The boundary in one line, as `qualify run` prints it.
    pub fn sentence(&self) -> String {
        let (axis, last, probes) = (&self.axis, &self.last_pass, &self.probes);
        let fixed = if self.fixed.is_empty() {
            String::new()
        } else {
            format!(" [{}]", self.fixed)
        };
        let mono = match self.monotonic {
            Some(true) => "monotonicity check agreed",
            Some(false) => "NOT monotonic: the check beyond the boundary contradicts it",
            None => "monotonicity not checked",
        };
        let headroom = self.headroom_text();
        match &self.first_fail {
            None => format!(
                "{axis}{fixed}: passed up to {last}, no failure found ({probes} probes; {mono}){headroom}"
            ),
            Some(first) => format!(
                "{axis}{fixed}: last pass {last}, first fail {first} ({}) after {probes} probes; {mono}{headroom}",
                self.outcome
            ),
        }
    }
}

/// One axis of the claimed region (`predicate.claimed_region[]`): what the claim covers and
/// what was found beyond it.
pub struct ClaimedRow {
    pub axis: String,
    /// `n ≤ 10000 (target.workload.n)`, or the whole declared domain.
    pub claims: String,
    /// Whether a target value bounds it (otherwise nothing lies beyond the claim).
    pub bounded: bool,
    pub cells_beyond: String,
    /// The first failure beyond the target, or how far everything passed, in words.
    pub headroom: String,
    /// `1.5×`, or empty.
    pub required: String,
    /// The measured headroom falls short of the required one.
    pub short: bool,
}

impl ClaimedRow {
    pub(super) fn from_value(c: &Value) -> ClaimedRow {
        let h = c.get("headroom");
        let ratio = h.and_then(|h| h.get("ratio")).and_then(Value::as_f64);
        let at_least = h.and_then(|h| h.get("at_least")).and_then(Value::as_f64);
        let required = c.get("required_headroom").and_then(Value::as_f64);
        let headroom = match (ratio, at_least, h) {
            (Some(r), _, Some(h)) => format!(
                "{} at {}={} ({}): {r:.2}× the target{}",
                cell(h.get("outcome"), "?"),
                cell(c.get("axis"), ""),
                cell(h.get("first_fail"), "?"),
                cell(h.get("source"), "?"),
                if r <= 1.0 { ", inside the claim" } else { "" }
            ),
            (None, Some(a), Some(h)) => format!(
                "no failure up to {}={} ({a:.2}× the target)",
                cell(c.get("axis"), ""),
                cell(h.get("last_pass"), "?")
            ),
            _ => "nothing beyond the target examined".to_string(),
        };
        ClaimedRow {
            axis: cell(c.get("axis"), ""),
            claims: cell(c.get("claims"), ""),
            bounded: c.get("bound").is_some_and(Value::is_object),
            cells_beyond: cell(c.get("cells_beyond"), "0"),
            headroom,
            required: required.map(|r| format!("{r}×")).unwrap_or_default(),
            short: match (required, ratio, at_least) {
                (Some(req), Some(r), _) => r < req,
                (Some(req), None, Some(a)) => a < req,
                (Some(_), None, None) => true,
                _ => false,
            },
        }
    }
}

/// One fact of the target the run did not reach (`predicate.gap[]`).
pub struct GapRow {
    /// `name.axis` (`workload.n`), or the name alone.
    pub name: String,
    /// Empty when not recorded.
    pub target: String,
    /// `—` when not recorded.
    pub tested: String,
    pub detail: String,
    /// The waiver's reason, when it is text.
    pub waiver: Option<String>,
    /// What the gap plot draws: only a named gap with a positive numeric target has a bar.
    pub bar: Option<GapBar>,
}

/// How far the run got towards one target fact.
#[derive(Clone, Copy)]
pub struct GapBar {
    pub target: f64,
    /// `None` unless positive.
    pub tested: Option<f64>,
}

impl GapRow {
    pub(super) fn from_value(g: &Value) -> GapRow {
        let axis = g.get("axis").and_then(Value::as_str);
        let name = cell(g.get("name"), "");
        let name = match axis {
            Some(a) => format!("{name}.{a}"),
            None => name,
        };
        let named = g.get("name").is_some_and(Value::is_string);
        let bar = g
            .get("target")
            .and_then(Value::as_f64)
            .filter(|t| named && *t > 0.0)
            .map(|target| GapBar {
                target,
                tested: g.get("tested").and_then(Value::as_f64).filter(|t| *t > 0.0),
            });
        GapRow {
            name,
            target: cell(g.get("target"), ""),
            tested: cell(g.get("tested"), "—"),
            detail: cell(g.get("detail"), ""),
            waiver: g.get("waiver").and_then(Value::as_str).map(str::to_string),
            bar,
        }
    }

    /// Waived: a waiver with a reason.
    pub fn waived(&self) -> bool {
        self.waiver.as_deref().is_some_and(|w| !w.trim().is_empty())
    }
}

/// The admission checklist (`predicate.checklist`).
pub struct Checklist {
    pub claim: Option<String>,
    pub examined: Vec<String>,
    pub target_only: Vec<String>,
    pub assumptions: Vec<String>,
    /// (situation, what the run showed), in the receipt's order.
    pub failure_behaviour: Vec<(String, String)>,
    pub traceability: Vec<TraceRow>,
}

/// One traceability item of the checklist.
pub struct TraceRow {
    pub item: String,
    /// `None`: the receipt does not say.
    pub recorded: Option<bool>,
    pub detail: String,
}

impl Checklist {
    pub(super) fn from_map(c: &Map<String, Value>) -> Checklist {
        let list = |k: &str| -> Vec<String> {
            c.get(k)
                .and_then(Value::as_array)
                .map(|a| a.iter().map(text::value).collect())
                .unwrap_or_default()
        };
        Checklist {
            claim: c.get("claim").and_then(Value::as_str).map(str::to_string),
            examined: list("examined_facts"),
            target_only: list("target_only_facts"),
            assumptions: list("assumptions"),
            failure_behaviour: c
                .get("failure_behaviour")
                .and_then(Value::as_object)
                .map(|fb| {
                    fb.iter()
                        .map(|(k, v)| (k.clone(), text::value(v)))
                        .collect()
                })
                .unwrap_or_default(),
            traceability: arr(c.get("traceability"))
                .iter()
                .map(|t| TraceRow {
                    item: cell(t.get("item"), ""),
                    recorded: t.get("recorded").and_then(Value::as_bool),
                    detail: cell(t.get("detail"), ""),
                })
                .collect(),
        }
    }
}

/// The machine the run was examined on (`tested`), as text.
pub struct Machine {
    pub hostname: String,
    pub cores_allowed: String,
    pub backend: String,
}

impl Machine {
    pub(super) fn from_map(t: &Map<String, Value>) -> Machine {
        Machine {
            hostname: cell(t.get("hostname"), ""),
            cores_allowed: cell(t.get("cores_allowed"), ""),
            backend: cell(t.get("backend"), ""),
        }
    }
}

/// The layer `name` of the receipt's `layers` map (missing → `not_run`).
pub(super) fn layer(name: String, l: Option<&Value>) -> LayerRow {
    let status = s(l.and_then(|l| l.get("status")));
    LayerRow {
        status: if status.is_empty() {
            "not_run".into()
        } else {
            status
        },
        summary: s(l.and_then(|l| l.get("summary"))),
        untested: arr(l.and_then(|l| l.get("untested")))
            .iter()
            .map(|u| s(Some(u)))
            .collect(),
        name,
    }
}

/// The capacity frontier (`predicate.frontier`): one capacity per combination of the other
/// axes along a searched load axis.
pub struct FrontierView {
    pub axis: String,
    /// `req/s` or `users`.
    pub unit: String,
    pub objectives: String,
    /// The other axes, in order: the columns of the conditions.
    pub over: Vec<String>,
    pub rows: Vec<FrontierRowView>,
    pub probes: u64,
    pub sentence: String,
}

/// One combination's capacity.
pub struct FrontierRowView {
    /// Each of [`FrontierView::over`]'s values, as text (`—` when the row has none).
    pub conditions: Vec<String>,
    pub holds_up_to: Option<f64>,
    pub fails_from: Option<f64>,
    pub beyond: Option<String>,
    pub behaviour: Option<String>,
    pub probes: u64,
}

impl FrontierView {
    pub(super) fn from_value(v: &Value) -> Option<FrontierView> {
        let over: Vec<String> = arr(v.get("over")).iter().map(|x| s(Some(x))).collect();
        let rows: Vec<FrontierRowView> = arr(v.get("rows"))
            .iter()
            .map(|r| {
                let conditions = r.get("conditions");
                FrontierRowView {
                    conditions: over
                        .iter()
                        .map(|k| cell(conditions.and_then(|c| c.get(k)), "—"))
                        .collect(),
                    holds_up_to: f(r.get("holds_up_to")),
                    fails_from: f(r.get("fails_from")),
                    beyond: r.get("beyond").and_then(Value::as_str).map(str::to_string),
                    behaviour: r
                        .get("behaviour")
                        .and_then(Value::as_str)
                        .map(str::to_string),
                    probes: r.get("probes").and_then(Value::as_u64).unwrap_or(0),
                }
            })
            .collect();
        if rows.is_empty() {
            return None;
        }
        Some(FrontierView {
            axis: s(v.get("axis")),
            unit: s(v.get("unit")),
            objectives: s(v.get("objectives")),
            over,
            rows,
            probes: v.get("probes").and_then(Value::as_u64).unwrap_or(0),
            sentence: s(v.get("sentence")),
        })
    }
}

impl FrontierRowView {
    /// `overloaded (degrades)`: the outcome beyond the edge, with the fault's behaviour there.
    pub fn beyond_text(&self) -> String {
        match (&self.beyond, &self.behaviour) {
            (Some(o), Some(b)) if o != b => format!("{o} ({b})"),
            (Some(o), _) => o.clone(),
            (None, Some(b)) => b.clone(),
            (None, None) => "—".to_string(),
        }
    }

    /// `80 req/s`, `400 req/s+` (the top of the range held), `—` (not even the lowest).
    pub fn holds_text(&self, unit: &str) -> String {
        match (self.holds_up_to, self.fails_from) {
            (Some(h), None) => format!("{} {unit}+", crate::text::num(h)),
            (Some(h), _) => format!("{} {unit}", crate::text::num(h)),
            (None, _) => "—".to_string(),
        }
    }

    pub fn fails_text(&self, unit: &str) -> String {
        self.fails_from.map_or_else(
            || "—".to_string(),
            |x| format!("{} {unit}", crate::text::num(x)),
        )
    }
}

/// A waiver the spec declared and what became of it (`predicate.waivers[]`).
pub struct WaiverRow {
    /// The gap it names (`?` when not recorded).
    pub gap: String,
    pub reason: String,
    /// It accepted at least one gap of the run.
    pub applied: bool,
    /// Why it was not applied, when the receipt says.
    pub note: Option<String>,
}

impl WaiverRow {
    pub(super) fn from_value(w: &Value) -> WaiverRow {
        let text = |k: &str| w.get(k).and_then(Value::as_str);
        WaiverRow {
            gap: text("gap").unwrap_or("?").to_string(),
            reason: text("reason").unwrap_or("").to_string(),
            applied: w.get("applied").and_then(Value::as_bool).unwrap_or(false),
            note: text("note").map(str::to_string),
        }
    }
}
