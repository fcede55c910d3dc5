//! The CPU budget that keeps parallel cells from distorting each other: a cell starts only when
//! a job slot is free and the CPU demands of the running cells plus its own fit in the available
//! cores. A cell that demands more than every core runs alone.

/// Job slots and cores in use.
#[derive(Debug, Clone)]
pub(crate) struct CoreBudget {
    jobs: usize,
    cores: usize,
    running: usize,
    demand: usize,
}

impl CoreBudget {
    /// `jobs` and `cores` are raised to at least 1.
    pub fn new(jobs: usize, cores: usize) -> CoreBudget {
        CoreBudget {
            jobs: jobs.max(1),
            cores: cores.max(1),
            running: 0,
            demand: 0,
        }
    }

    /// Whether a cell demanding `demand` cores may start now.
    pub fn fits(&self, demand: usize) -> bool {
        self.running == 0
            || (self.running < self.jobs && self.demand.saturating_add(demand) <= self.cores)
    }

    pub fn acquire(&mut self, demand: usize) {
        self.running += 1;
        self.demand = self.demand.saturating_add(demand);
    }

    pub fn release(&mut self, demand: usize) {
        self.running = self.running.saturating_sub(1);
        self.demand = self.demand.saturating_sub(demand);
    }

    pub fn running(&self) -> usize {
        self.running
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn demands_never_overlap_beyond_the_cores() {
        let mut budget = CoreBudget::new(4, 4);
        assert!(budget.fits(3));
        budget.acquire(3);
        assert!(budget.fits(1));
        assert!(!budget.fits(2));
        budget.acquire(1);
        assert!(!budget.fits(1));
        budget.release(3);
        assert!(budget.fits(2));
    }

    #[test]
    fn an_oversized_cell_runs_alone() {
        let mut budget = CoreBudget::new(4, 2);
        assert!(budget.fits(8));
        budget.acquire(8);
        assert!(!budget.fits(1));
        budget.release(8);
        budget.acquire(1);
        assert!(!budget.fits(8));
    }

    #[test]
    fn job_slots_bound_parallelism() {
        let mut budget = CoreBudget::new(1, 8);
        budget.acquire(1);
        assert!(!budget.fits(1));
    }
}
