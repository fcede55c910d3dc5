//! Delta debugging (Zeller and Hildebrandt, TSE 2002, `ddmin`): the smallest subset of a
//! failing run's perturbation points that still fails, found by testing subsets and their
//! complements at doubling granularity, within a budget of tests. The test is the caller's (a
//! few replays of the subset, accepted while it fails at a comparable rate).

/// The result of a minimisation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reduced<T> {
    pub kept: Vec<T>,
    /// Tests run.
    pub tests: usize,
    /// `true` when `kept` is 1-minimal (removing any one item was tested and did not fail);
    /// `false` when the budget ran out (or the test was cancelled) first.
    pub minimal: bool,
}

/// Minimise `items` with `fails` (`Some(true)`: the subset still fails; `None`: stop now).
/// `items` themselves are assumed to fail. At most `budget` tests.
pub fn ddmin<T: Clone>(
    items: Vec<T>,
    budget: usize,
    mut fails: impl FnMut(&[T]) -> Option<bool>,
) -> Reduced<T> {
    let mut tests = 0usize;
    let mut test = |subset: &[T], tests: &mut usize| -> Option<bool> {
        if *tests >= budget {
            return None;
        }
        *tests += 1;
        fails(subset)
    };
    // Nothing at all may do (the failure does not need these points).
    match test(&[], &mut tests) {
        Some(true) => {
            return Reduced {
                kept: Vec::new(),
                tests,
                minimal: true,
            };
        }
        None => {
            return Reduced {
                kept: items,
                tests,
                minimal: false,
            };
        }
        Some(false) => {}
    }
    let mut current = items;
    let mut n = 2usize;
    while current.len() >= 2 {
        let chunk = current.len().div_ceil(n);
        let parts: Vec<Vec<T>> = current.chunks(chunk).map(<[T]>::to_vec).collect();
        let mut reduced = false;
        for part in &parts {
            match test(part, &mut tests) {
                Some(true) => {
                    current = part.clone();
                    n = 2;
                    reduced = true;
                    break;
                }
                None => {
                    return Reduced {
                        kept: current,
                        tests,
                        minimal: false,
                    };
                }
                Some(false) => {}
            }
        }
        if !reduced && parts.len() > 2 {
            for i in 0..parts.len() {
                let complement: Vec<T> = parts
                    .iter()
                    .enumerate()
                    .filter(|(j, _)| *j != i)
                    .flat_map(|(_, p)| p.iter().cloned())
                    .collect();
                match test(&complement, &mut tests) {
                    Some(true) => {
                        current = complement;
                        n = (n - 1).max(2);
                        reduced = true;
                        break;
                    }
                    None => {
                        return Reduced {
                            kept: current,
                            tests,
                            minimal: false,
                        };
                    }
                    Some(false) => {}
                }
            }
        }
        if !reduced {
            if n >= current.len() {
                break;
            }
            n = (2 * n).min(current.len());
        }
    }
    Reduced {
        kept: current,
        tests,
        minimal: true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_two_points_a_failure_needs() {
        let items: Vec<u32> = (0..40).collect();
        let r = ddmin(items, 200, |s| Some(s.contains(&7) && s.contains(&31)));
        assert_eq!(r.kept, vec![7, 31]);
        assert!(r.minimal);
    }

    #[test]
    fn an_empty_set_wins_when_the_points_do_not_matter() {
        let r = ddmin(vec![1, 2, 3], 10, |_| Some(true));
        assert!(r.kept.is_empty() && r.minimal && r.tests == 1);
    }

    #[test]
    fn stops_at_the_budget_and_says_so() {
        let items: Vec<u32> = (0..64).collect();
        let r = ddmin(items, 3, |s| Some(s.contains(&5)));
        assert!(!r.minimal);
        assert_eq!(r.tests, 3);
        assert!(r.kept.contains(&5));
    }
}
