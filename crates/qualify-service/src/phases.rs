//! The load's phase windows around a fault (`before`, `during`, `recovery` for
//! `recover_within` after the window, `after`; a standing fault is `during` alone) or a restart
//! (`before` the kill, `during` from it): the load reports each window's statistics, the
//! behaviour verdict reads them.

use std::time::Duration;

use qualify_load::{Phase, PhaseWindow};
use qualify_spec::Spec;

/// The load's windows around the fault: before, during, recovery, after (none without
/// `[faults]`).
pub fn phases(spec: &Spec, duration: Duration) -> Vec<PhaseWindow> {
    let Some(f) = &spec.faults else {
        return Vec::new();
    };
    if f.standing {
        // Held for the whole measured load: one window, nothing before or after it.
        return vec![PhaseWindow {
            phase: Phase::During,
            start: Duration::ZERO,
            end: duration,
        }];
    }
    let mut out = Vec::new();
    if f.start > Duration::ZERO {
        out.push(PhaseWindow {
            phase: Phase::Before,
            start: Duration::ZERO,
            end: f.start,
        });
    }
    out.push(PhaseWindow {
        phase: Phase::During,
        start: f.start,
        end: f.end,
    });
    let recovered = (f.end + f.recover_within).min(duration);
    if f.end < recovered {
        out.push(PhaseWindow {
            phase: Phase::Recovery,
            start: f.end,
            end: recovered,
        });
    }
    if recovered < duration {
        out.push(PhaseWindow {
            phase: Phase::After,
            start: recovered,
            end: duration,
        });
    }
    out
}

/// The phases of a restart: before the kill, from the kill to ready (or the end), after.
pub fn restart_phases(at: Duration, duration: Duration) -> Vec<PhaseWindow> {
    vec![
        PhaseWindow {
            phase: Phase::Before,
            start: Duration::ZERO,
            end: at,
        },
        PhaseWindow {
            phase: Phase::During,
            start: at,
            end: duration,
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn restart_phases_split_at_the_kill() {
        let s = Duration::from_secs;
        let w = restart_phases(s(2), s(6));
        assert_eq!(
            w.iter()
                .map(|p| (p.phase, p.start, p.end))
                .collect::<Vec<_>>(),
            [(Phase::Before, s(0), s(2)), (Phase::During, s(2), s(6))]
        );
    }
}
