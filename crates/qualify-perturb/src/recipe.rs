//! One run's perturbation, all of it derived from a seed ([`Recipe::derive`]): which shim mode
//! with which parameters (PCT's change points over the learned number of steps, noise's
//! probability and longest delay), whether the scheduler-level perturbation runs too, and the
//! runtime knob values. Printed back as the flags that replay it
//! (`--perturb --mode pct --steps 14 --seed …`).

use std::path::Path;

use qualify_model::PerturbMode;

use crate::log::Point;

/// SplitMix64: the one generator every seeded choice of this crate draws from.
pub fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// A small seeded generator (SplitMix64 stream).
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn draw(&mut self) -> u64 {
        self.0 = mix(self.0);
        self.0
    }

    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        if hi <= lo {
            return lo;
        }
        lo + self.draw() % (hi - lo + 1)
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> Option<&'a T> {
        if items.is_empty() {
            return None;
        }
        items.get((self.draw() % items.len() as u64) as usize)
    }
}

/// The seed of run `index` of a campaign whose seed is `base`.
pub fn run_seed(base: u64, index: u64) -> u64 {
    mix(base ^ mix(index.wrapping_add(1)))
}

/// What the shim does in one run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShimPlan {
    /// Not preloaded.
    Off,
    /// PCT-style: `depth − 1` change points among `steps`.
    Pct {
        depth: u32,
        steps: u64,
        change_points: Vec<u64>,
        hold_us: u32,
    },
    /// Uniform noise.
    Noise { per_mille: u32, max_delay_us: u32 },
    /// Exactly these points, as fixed delays (minimisation).
    List(Vec<Point>),
}

/// What campaign runs learned about the program, which later recipes use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Knowledge {
    /// Synchronisation calls per run (the most seen), PCT's `k`.
    pub steps: Option<u64>,
    /// PCT's depth `d`.
    pub depth: u32,
    /// Whether the shim loaded in an earlier run (`None`: no shim run yet).
    pub shim_reaches: Option<bool>,
}

impl Default for Knowledge {
    fn default() -> Knowledge {
        Knowledge {
            steps: None,
            depth: 3,
            shim_reaches: None,
        }
    }
}

/// PCT's `k` before any run counted the steps.
pub const DEFAULT_STEPS: u64 = 200;

/// One run's perturbation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recipe {
    pub seed: u64,
    pub mode: PerturbMode,
    pub shim: ShimPlan,
    /// The scheduler-level perturbation runs too (always in `sched` mode; in a shim mode when
    /// the shim does not reach the program).
    pub sched: bool,
    /// `GOMAXPROCS` for the run (scheduler-level only).
    pub gomaxprocs: Option<u32>,
    /// Start the program confined to the n-th CPU it may use (scheduler-level only): a squeeze
    /// from its first instruction, which a short program's run needs.
    pub start_cpu: Option<u32>,
}

impl Recipe {
    /// The recipe of `mode` for `seed`, given what earlier runs learned. `cpus`: CPUs the
    /// program may use (bounds `GOMAXPROCS`).
    pub fn derive(mode: PerturbMode, seed: u64, known: &Knowledge, cpus: usize) -> Recipe {
        let mut rng = Rng::new(seed ^ 0x7065_7274_7572_6221);
        let shim = match mode {
            PerturbMode::Pct => {
                let steps = known.steps.unwrap_or(DEFAULT_STEPS).max(1);
                let depth = known.depth.clamp(1, 16);
                let change_points = (1..depth).map(|_| rng.range(1, steps)).collect();
                ShimPlan::Pct {
                    depth,
                    steps,
                    change_points,
                    hold_us: 2000,
                }
            }
            PerturbMode::Noise => ShimPlan::Noise {
                per_mille: *rng.pick(&[50, 100, 200, 350]).unwrap_or(&100),
                max_delay_us: *rng.pick(&[20, 100, 500, 2000]).unwrap_or(&100),
            },
            PerturbMode::Sched => ShimPlan::Off,
        };
        let sched = mode == PerturbMode::Sched || known.shim_reaches == Some(false);
        let gomaxprocs = sched.then(|| rng.range(1, (2 * cpus.max(1)) as u64) as u32);
        let start_cpu = (sched && cpus > 1 && rng.range(0, 2) == 0)
            .then(|| rng.range(0, cpus as u64 - 1) as u32);
        Recipe {
            seed,
            mode,
            shim,
            sched,
            gomaxprocs,
            start_cpu,
        }
    }

    /// The same recipe, but with the shim replaying exactly `points`.
    pub fn with_list(&self, points: Vec<Point>) -> Recipe {
        Recipe {
            shim: ShimPlan::List(points),
            ..self.clone()
        }
    }

    /// The mechanisms in one word: `pct`, `noise+sched`, `sched`.
    pub fn label(&self) -> String {
        match (&self.shim, self.sched) {
            (ShimPlan::Off, _) => "sched".into(),
            (ShimPlan::List(_), false) => "list".into(),
            (ShimPlan::List(_), true) => "list+sched".into(),
            (_, false) => self.mode.to_string(),
            (_, true) => format!("{}+sched", self.mode),
        }
    }

    /// The seed as the receipt and the command line write it.
    pub fn seed_text(&self) -> String {
        seed_text(self.seed)
    }

    /// The flags of `qualify probe` that replay this recipe.
    pub fn flags(&self) -> String {
        let mut s = format!("--perturb --mode {}", self.label());
        if let ShimPlan::Pct { steps, depth, .. } = &self.shim {
            s.push_str(&format!(" --steps {steps}"));
            if *depth != 3 {
                s.push_str(&format!(" --depth {depth}"));
            }
        }
        s.push_str(&format!(" --seed {}", self.seed_text()));
        s
    }

    /// The shim's configuration string (`QUALIFY_PERTURB`), with its log at `log` and at most
    /// `budget_us` of delay in all.
    pub fn shim_config(&self, log: &Path, budget_us: u64) -> Option<String> {
        let body = match &self.shim {
            ShimPlan::Off => return None,
            ShimPlan::Pct {
                depth,
                change_points,
                hold_us,
                ..
            } => {
                let cp: Vec<String> = change_points.iter().map(u64::to_string).collect();
                format!(
                    "mode=pct depth={depth} cp={} hold={hold_us}",
                    if cp.is_empty() {
                        "0".into()
                    } else {
                        cp.join(",")
                    }
                )
            }
            ShimPlan::Noise {
                per_mille,
                max_delay_us,
            } => format!("mode=noise prob={per_mille} maxdelay={max_delay_us}"),
            ShimPlan::List(_) => "mode=list".into(),
        };
        Some(format!(
            "v1 {body} seed={:x} budget={budget_us} log={}",
            self.seed,
            log.display()
        ))
    }
}

/// 16 hex digits.
pub fn seed_text(seed: u64) -> String {
    format!("{seed:016x}")
}

/// A seed as the command line takes it: hex, with or without `0x` (what [`seed_text`] prints),
/// or a decimal number prefixed `d:`.
pub fn parse_seed(s: &str) -> Option<u64> {
    if let Some(d) = s.strip_prefix("d:") {
        return d.parse().ok();
    }
    let h = s.strip_prefix("0x").unwrap_or(s);
    if h.is_empty() || h.len() > 16 {
        return None;
    }
    u64::from_str_radix(h, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_derives_the_same_recipe_every_time() {
        let known = Knowledge {
            steps: Some(14),
            ..Knowledge::default()
        };
        for mode in PerturbMode::ALL {
            let a = Recipe::derive(mode, 42, &known, 2);
            assert_eq!(a, Recipe::derive(mode, 42, &known, 2));
            assert_ne!(a, Recipe::derive(mode, 43, &known, 2), "{mode}");
        }
        let pct = Recipe::derive(PerturbMode::Pct, 42, &known, 2);
        let ShimPlan::Pct { change_points, .. } = &pct.shim else {
            panic!("{pct:?}")
        };
        assert_eq!(change_points.len(), 2);
        assert!(change_points.iter().all(|c| (1..=14).contains(c)));
        assert_eq!(
            pct.flags(),
            format!("--perturb --mode pct --steps 14 --seed {}", seed_text(42))
        );
        assert!(!pct.sched && pct.gomaxprocs.is_none());
    }

    #[test]
    fn a_shim_that_does_not_reach_the_program_brings_the_scheduler_in() {
        let known = Knowledge {
            shim_reaches: Some(false),
            ..Knowledge::default()
        };
        let r = Recipe::derive(PerturbMode::Noise, 7, &known, 2);
        assert!(r.sched);
        assert_eq!(r.label(), "noise+sched");
        assert!(r.gomaxprocs.is_some_and(|g| (1..=4).contains(&g)));
        let s = Recipe::derive(PerturbMode::Sched, 7, &Knowledge::default(), 2);
        assert_eq!((s.label(), s.shim), ("sched".to_string(), ShimPlan::Off));
    }

    #[test]
    fn seeds_print_and_parse_back() {
        for s in [0u64, 1, u64::MAX, run_seed(5, 9)] {
            assert_eq!(parse_seed(&seed_text(s)), Some(s));
            assert_eq!(parse_seed(&format!("0x{s:x}")), Some(s));
        }
        assert_eq!(parse_seed("d:17"), Some(17));
        assert_eq!(parse_seed("xyz"), None);
        assert_eq!(parse_seed("12345678901234567"), None);
    }
}
