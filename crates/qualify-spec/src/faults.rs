//! `[faults]`: when a cell's dependency faults (its `kind = "fault"` axes) are active, and how
//! soon the service must be well again. `window = ["3s", "8s"]` is a pair of offsets within
//! the measured load phase (after `warmup`): the fault starts at the first and is removed at
//! the second; `0 ≤ start < end < [load] duration`, so some of the measured phase lies after
//! the window — recovery cannot be seen otherwise. `recover_within` (default 5 s): after the
//! window's end, the SLOs must hold again within it (else the cell is `not_recovered`).
//!
//! `writes = { request, read, checker }` (optional, `crate::writes`): the load writes, and
//! after the window — a dependency `kill`ed or `restart`ed, say — every write is read back
//! through the service: a service whose store lost acknowledged writes `loses_writes`.
//!
//! `[faults]` belongs to fault axes: one without the other is an error (`spec.rs`).

use std::ops::Range;
use std::time::Duration;

use serde::{Deserialize, Serialize, Serializer};
use toml::{Spanned, Value};

use crate::axis::Axis;
use crate::check::Checker;
use crate::load::{Load, zero_or_duration};
use crate::writes::{RawWrites, Writes};

pub const DEFAULT_RECOVER_WITHIN: Duration = Duration::from_secs(5);

/// The checked `[faults]` table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Faults {
    /// Offset of the fault's start within the measured phase.
    #[serde(rename = "window_start_seconds", serialize_with = "seconds")]
    pub start: Duration,
    /// Offset of its end (removal) within the measured phase.
    #[serde(rename = "window_end_seconds", serialize_with = "seconds")]
    pub end: Duration,
    #[serde(rename = "recover_within_seconds", serialize_with = "seconds")]
    pub recover_within: Duration,
    /// The write check read back after the window.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub writes: Option<Writes>,
    /// `window = "all"`: the faults are held for the whole load (warmup included) — the
    /// capacity under a standing fault; no before, after or recovery (`start` is 0, `end` the
    /// measured phase's length).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub standing: bool,
}

impl Faults {
    /// The fault window (offsets in the measured phase).
    pub fn window(&self) -> qualify_model::Window {
        qualify_model::Window {
            start: self.start,
            end: self.end,
        }
    }
}

fn seconds<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawFaults {
    window: Option<Spanned<RawWindow>>,
    recover_within: Option<Spanned<Value>>,
    writes: Option<Spanned<RawWrites>>,
}

/// `window` as written: a pair of offsets (each with its own place in the file), or a word.
#[derive(Debug)]
pub(crate) enum RawWindow {
    Pair(Vec<Spanned<Value>>),
    Word(String),
    Other(&'static str),
}

impl<'de> Deserialize<'de> for RawWindow {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<RawWindow, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = RawWindow;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a pair of offsets [start, end], or \"all\"")
            }

            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<RawWindow, A::Error> {
                let mut out = Vec::new();
                while let Some(v) = seq.next_element::<Spanned<Value>>()? {
                    out.push(v);
                }
                Ok(RawWindow::Pair(out))
            }

            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<RawWindow, E> {
                Ok(RawWindow::Word(v.to_string()))
            }

            fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<RawWindow, E> {
                Ok(RawWindow::Other("integer"))
            }

            fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<RawWindow, E> {
                Ok(RawWindow::Other("float"))
            }

            fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<RawWindow, E> {
                Ok(RawWindow::Other("boolean"))
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(self, _: A) -> Result<RawWindow, A::Error> {
                Ok(RawWindow::Other("table"))
            }
        }
        deserializer.deserialize_any(V)
    }
}

/// Check `[faults]` (spanning `span`) against the load's measured phase (`load`, with the span
/// of `[load]` for the help line; `None` when the spec has no `[load]`).
pub(crate) fn check(
    raw: RawFaults,
    span: Range<usize>,
    load: Option<(&Load, Range<usize>)>,
    axes: &[Axis],
    ck: &mut Checker<'_>,
) -> Faults {
    let recover_within = raw
        .recover_within
        .as_ref()
        .and_then(|r| ck.duration(r))
        .unwrap_or(DEFAULT_RECOVER_WITHIN);
    let writes = raw
        .writes
        .and_then(|w| crate::writes::check(w, "faults", load.as_ref().map(|(l, _)| *l), axes, ck));
    let mut faults = Faults {
        start: Duration::ZERO,
        end: Duration::ZERO,
        recover_within,
        writes,
        standing: false,
    };
    let Some(window) = raw.window else {
        ck.error_help(
            span,
            "[faults] needs `window`: when, within the measured load phase, the faults are active",
            "add window = [\"3s\", \"8s\"] (offsets after the warmup; leave time after the end to see recovery), or window = \"all\" to hold the faults for the whole load",
        );
        return faults;
    };
    let pair = match window.get_ref() {
        RawWindow::Word(all) if all == "all" => {
            faults.standing = true;
            faults.end = load.map_or(Duration::ZERO, |(l, _)| l.plan.duration);
            if let Some(r) = &raw.recover_within {
                ck.error_help(
                    r.span(),
                    "faults.recover_within with window = \"all\": a standing fault never ends within the load, so there is nothing to recover from",
                    "remove recover_within, or give the faults a window = [\"3s\", \"8s\"] to see recovery",
                );
            }
            return faults;
        }
        RawWindow::Pair(items) => items,
        RawWindow::Word(word) => {
            ck.error_help(
                window.span(),
                format!("faults.window = \"{word}\": the only word a window can be is \"all\""),
                "write window = [\"3s\", \"8s\"] for a window, or window = \"all\" for a fault held the whole load",
            );
            return faults;
        }
        RawWindow::Other(kind) => {
            ck.error_help(
                window.span(),
                format!("faults.window must be a pair [start, end] or \"all\", found a {kind}"),
                "write window = [\"3s\", \"8s\"] for a window, or window = \"all\" for a fault held the whole load",
            );
            return faults;
        }
    };
    let [start, end] = pair.as_slice() else {
        ck.error_help(
            window.span(),
            format!(
                "faults.window must have two elements [start, end], found {}",
                pair.len()
            ),
            "write window = [\"3s\", \"8s\"]: the fault starts 3 s into the measured phase and ends at 8 s",
        );
        return faults;
    };
    let (Some(s), Some(e)) = (zero_or_duration(start, ck), zero_or_duration(end, ck)) else {
        return faults;
    };
    faults.start = s;
    faults.end = e;
    if s >= e {
        ck.error_help(
            window.span(),
            format!(
                "faults.window is empty: it starts at {} and ends at {}",
                text(s),
                text(e)
            ),
            "the end must come after the start, e.g. window = [\"3s\", \"8s\"]",
        );
        return faults;
    }
    let Some((load, load_span)) = load else {
        // `spec.rs` reports the missing [load] once.
        return faults;
    };
    let duration = load.plan.duration;
    let at = ck.position(load_span.start);
    if s >= duration || e > duration {
        let outside = if s >= duration { start } else { end };
        ck.error_help(
            outside.span(),
            format!(
                "faults.window [{}, {}] lies outside the measured load phase, which lasts {} ([load] duration)",
                text(s),
                text(e),
                text(duration)
            ),
            format!(
                "the window is an offset within the measured phase (after the warmup): keep it inside 0..{}, or raise duration in [load] at {at}",
                text(duration)
            ),
        );
    } else if e == duration {
        ck.error_help(
            end.span(),
            format!(
                "faults.window ends where the measured load phase ends ({}): nothing after it shows whether the service recovered",
                text(duration)
            ),
            format!(
                "end the window before {} (recover_within is {}), or raise duration in [load] at {at}",
                text(duration),
                text(recover_within)
            ),
        );
    }
    faults
}

/// `3s`, `2.5s`, `500ms` for messages.
pub(crate) fn text(d: Duration) -> String {
    let ms = d.as_millis();
    if d.is_zero() {
        "0s".to_string()
    } else if ms % 1000 == 0 && d.subsec_nanos() % 1_000_000 == 0 {
        format!("{}s", ms / 1000)
    } else if d < Duration::from_secs(1) {
        format!("{}ms", d.as_secs_f64() * 1000.0)
    } else {
        format!("{}s", d.as_secs_f64())
    }
}
