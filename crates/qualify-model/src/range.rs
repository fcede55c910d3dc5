//! Numeric ranges and their lattices: [`NumericRange`] (`[lo, hi]` with a `scale` and a
//! `step`), the points a sweep visits ([`NumericRange::points`]) and the bisection point a
//! boundary search probes next ([`NumericRange::between`]).

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::Value;

/// How a range's lattice is spaced: `linear` adds `step`, `log` multiplies by it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scale {
    #[default]
    Linear,
    Log,
}

/// A finite number from the spec.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Number {
    Int(i64),
    Float(f64),
}

impl Number {
    pub fn as_f64(self) -> f64 {
        match self {
            Number::Int(n) => n as f64,
            Number::Float(x) => x,
        }
    }
}

impl fmt::Display for Number {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        Value::from(*self).fmt(f)
    }
}

/// A closed numeric interval `[lo, hi]` and its lattice: `lo, lo+step, lo+2·step, …` (linear)
/// or `lo, lo·step, lo·step², …` (log), always ending with `hi`. Integer ranges (integer bounds,
/// and an integer step when linear) have integer points. `step` is resolved: linear integer
/// ranges default to 1, log ranges to a factor of 2.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NumericRange {
    pub lo: Number,
    pub hi: Number,
    pub step: Number,
    pub scale: Scale,
}

impl NumericRange {
    /// Whether every point is an integer.
    pub fn is_integer(&self) -> bool {
        matches!((self.lo, self.hi), (Number::Int(_), Number::Int(_)))
            && (self.scale == Scale::Log || matches!(self.step, Number::Int(_)))
    }

    /// Whether the lattice is every integer from `lo` to `hi` (linear, step 1).
    pub fn is_unit_integer(&self) -> bool {
        matches!(
            (self.lo, self.hi, self.step, self.scale),
            (
                Number::Int(_),
                Number::Int(_),
                Number::Int(1),
                Scale::Linear
            )
        )
    }

    /// The lattice points from `lo` to `hi`, ascending; `hi` is always the last.
    pub fn points(&self) -> Points<'_> {
        Points {
            range: self,
            index: 0,
            previous: None,
            done: false,
        }
    }

    /// The bisection point strictly between `a < b` (arithmetic mean on a linear scale, snapped
    /// to `a + k·step`; geometric mean on a log scale), or `None` once `a` and `b` are
    /// neighbours at the range's resolution (`b - a <= step`, or `b / a <= step` on a log scale).
    pub fn between(&self, a: Number, b: Number) -> Option<Number> {
        let (x, y) = (a.as_f64(), b.as_f64());
        if y <= x {
            return None;
        }
        let integer = self.is_integer();
        match self.scale {
            Scale::Linear => {
                if let (true, Number::Int(a), Number::Int(b), Number::Int(step)) =
                    (integer, a, b, self.step)
                {
                    let k = ((b as i128 - a as i128) / step as i128 / 2).max(1);
                    let mid = a as i128 + k * step as i128;
                    return (mid < b as i128).then_some(Number::Int(mid as i64));
                }
                let step = self.step.as_f64();
                if y - x <= step * (1.0 + 1e-9) {
                    return None;
                }
                let k = ((y - x) / step / 2.0).floor().max(1.0);
                let mid = x + k * step;
                (mid < y).then_some(Number::Float(mid))
            }
            Scale::Log => {
                if x <= 0.0 || y <= x * self.step.as_f64() * (1.0 + 1e-9) {
                    return None;
                }
                let mid = (x * y).sqrt();
                if integer {
                    let mid = mid.round() as i64;
                    ((mid as f64) > x && (mid as f64) < y).then_some(Number::Int(mid))
                } else {
                    Some(Number::Float(mid))
                }
            }
        }
    }
}

/// Iterator over a range's lattice points; see [`NumericRange::points`].
pub struct Points<'a> {
    range: &'a NumericRange,
    index: u32,
    previous: Option<f64>,
    done: bool,
}

impl Iterator for Points<'_> {
    type Item = Number;

    fn next(&mut self) -> Option<Number> {
        if self.done {
            return None;
        }
        let r = self.range;
        let hi = r.hi.as_f64();
        let (candidate, tolerance) = match (r.scale, r.lo, r.step) {
            (Scale::Linear, Number::Int(lo), Number::Int(step)) if r.is_integer() => {
                let point = i64::from(self.index)
                    .checked_mul(step)
                    .and_then(|d| lo.checked_add(d));
                (point.map(|p| p as f64), 0.0)
            }
            (Scale::Linear, lo, step) => (
                Some(lo.as_f64() + f64::from(self.index) * step.as_f64()),
                step.as_f64() * 1e-9,
            ),
            (Scale::Log, lo, step) => {
                let mut point = lo.as_f64() * step.as_f64().powf(f64::from(self.index));
                if r.is_integer() {
                    point = point.round();
                    if let Some(previous) = self.previous {
                        point = point.max(previous + 1.0);
                    }
                }
                (Some(point), hi.abs() * 1e-12)
            }
        };
        match candidate {
            Some(point) if point.is_finite() && point < hi - tolerance => {
                self.index = self.index.saturating_add(1);
                self.previous = Some(point);
                Some(if r.is_integer() {
                    Number::Int(point as i64)
                } else {
                    Number::Float(point)
                })
            }
            _ => {
                self.done = true;
                Some(r.hi)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(lo: Number, hi: Number, step: Number, scale: Scale) -> NumericRange {
        NumericRange {
            lo,
            hi,
            step,
            scale,
        }
    }

    #[test]
    fn linear_integer_lattice_ends_at_hi() {
        let r = range(
            Number::Int(1),
            Number::Int(10),
            Number::Int(4),
            Scale::Linear,
        );
        let points: Vec<_> = r.points().collect();
        assert_eq!(
            points,
            [
                Number::Int(1),
                Number::Int(5),
                Number::Int(9),
                Number::Int(10)
            ]
        );
        let r = range(
            Number::Int(0),
            Number::Int(8),
            Number::Int(4),
            Scale::Linear,
        );
        assert_eq!(r.points().count(), 3);
    }

    #[test]
    fn linear_float_lattice_does_not_duplicate_hi() {
        let r = range(
            Number::Float(0.0),
            Number::Float(0.3),
            Number::Float(0.1),
            Scale::Linear,
        );
        let points: Vec<f64> = r.points().map(Number::as_f64).collect();
        assert_eq!(points.len(), 4);
        assert_eq!(points[3], 0.3);
    }

    #[test]
    fn log_lattice_multiplies() {
        let r = range(
            Number::Int(256),
            Number::Int(65536),
            Number::Int(2),
            Scale::Log,
        );
        let points: Vec<f64> = r.points().map(Number::as_f64).collect();
        assert_eq!(
            points,
            [
                256.0, 512.0, 1024.0, 2048.0, 4096.0, 8192.0, 16384.0, 32768.0, 65536.0
            ]
        );
        let r = range(
            Number::Int(1),
            Number::Int(4),
            Number::Float(1.1),
            Scale::Log,
        );
        let points: Vec<i64> = r
            .points()
            .map(|p| match p {
                Number::Int(n) => n,
                Number::Float(_) => -1,
            })
            .collect();
        assert_eq!(points, [1, 2, 3, 4]);
    }

    #[test]
    fn between_bisects_to_the_resolution() {
        let r = range(
            Number::Int(0),
            Number::Int(1000),
            Number::Int(1),
            Scale::Linear,
        );
        assert_eq!(
            r.between(Number::Int(0), Number::Int(1000)),
            Some(Number::Int(500))
        );
        assert_eq!(r.between(Number::Int(4), Number::Int(5)), None);
        assert_eq!(
            r.between(Number::Int(4), Number::Int(6)),
            Some(Number::Int(5))
        );
        // A 1-in-1000 resolution takes about ten bisections.
        let (mut lo, mut hi, mut probes) = (Number::Int(0), Number::Int(1000), 0);
        while let Some(mid) = r.between(lo, hi) {
            probes += 1;
            if mid.as_f64() < 371.0 {
                lo = mid
            } else {
                hi = mid
            }
        }
        assert_eq!((lo, hi), (Number::Int(370), Number::Int(371)));
        assert!(probes <= 10, "{probes}");

        let r = range(
            Number::Int(0),
            Number::Int(100),
            Number::Int(10),
            Scale::Linear,
        );
        assert_eq!(
            r.between(Number::Int(0), Number::Int(100)),
            Some(Number::Int(50))
        );
        assert_eq!(r.between(Number::Int(50), Number::Int(60)), None);

        let r = range(
            Number::Int(1),
            Number::Int(1024),
            Number::Int(2),
            Scale::Log,
        );
        assert_eq!(
            r.between(Number::Int(1), Number::Int(1024)),
            Some(Number::Int(32))
        );
        assert_eq!(r.between(Number::Int(32), Number::Int(64)), None);

        let r = range(
            Number::Float(0.0),
            Number::Float(1.0),
            Number::Float(0.25),
            Scale::Linear,
        );
        assert_eq!(
            r.between(Number::Float(0.0), Number::Float(1.0)),
            Some(Number::Float(0.5))
        );
        assert_eq!(r.between(Number::Float(0.5), Number::Float(0.75)), None);
    }
}
