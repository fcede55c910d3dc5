//! Which MPI rank a process is, from its environment (`OMPI_COMM_WORLD_RANK`, `PMIX_RANK`,
//! `PMI_RANK`, `SLURM_PROCID`, … as the rules table lists them), and whether every rank of a
//! world runs inside the probed tree (a rank elsewhere could be the one that would release the
//! others).

use std::collections::BTreeSet;

use serde::Serialize;

use crate::rules::Rules;

/// One process's place in an MPI world.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RankId {
    pub runtime: String,
    pub rank: u32,
    /// Ranks in the world, when the environment says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u32>,
    /// Tells two worlds apart (job id, namespace); empty when unknown.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub job: String,
}

/// The rank of a process with environment `env`; `own` is qualify's own environment, so a
/// value merely inherited from it (the batch step qualify runs in) is not taken for a rank.
pub fn identify(
    rules: &Rules,
    env: &[(String, String)],
    own: &dyn Fn(&str) -> Option<String>,
) -> Option<RankId> {
    let get = |name: &str| {
        env.iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.trim().to_string())
    };
    rules.ranks.iter().find_map(|rule| {
        let value = get(&rule.rank)?;
        let job = get(&rule.job).unwrap_or_default();
        if own(&rule.rank).as_deref() == Some(value.as_str())
            && own(&rule.job).unwrap_or_default() == job
        {
            return None;
        }
        Some(RankId {
            runtime: rule.runtime.clone(),
            rank: value.parse().ok()?,
            size: get(&rule.size).and_then(|s| s.parse().ok()),
            job,
        })
    })
}

/// The ranks of one world seen in the tree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct World {
    pub runtime: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub job: String,
    /// Ranks the world has (`None`: its environment did not say).
    pub size: Option<u32>,
    /// Ranks running inside the tree.
    pub seen: BTreeSet<u32>,
}

impl World {
    /// Every rank of the world is inside the tree.
    pub fn complete(&self) -> bool {
        self.size
            .is_some_and(|n| self.seen.len() == n as usize && self.seen.iter().all(|r| *r < n))
    }

    /// Why the world is not complete, for people.
    pub fn gap(&self) -> String {
        match self.size {
            Some(n) => format!(
                "only {} of the {n} ranks of the {} world run inside the tree (the others are on other nodes or outside qualify's view, and could be the ones that would release these)",
                self.seen.len(),
                self.runtime
            ),
            None => format!(
                "the size of the {} world is not in the ranks' environment, so whether every rank runs inside the tree is unknown",
                self.runtime
            ),
        }
    }
}

/// Group ranks into worlds (by runtime, job and size).
pub fn worlds<'a>(ids: impl IntoIterator<Item = &'a RankId>) -> Vec<World> {
    let mut out: Vec<World> = Vec::new();
    for id in ids {
        match out
            .iter_mut()
            .find(|w| w.runtime == id.runtime && w.job == id.job && w.size == id.size)
        {
            Some(w) => {
                w.seen.insert(id.rank);
            }
            None => out.push(World {
                runtime: id.runtime.clone(),
                job: id.job.clone(),
                size: id.size,
                seen: BTreeSet::from([id.rank]),
            }),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::{Rules, TABLE};

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn ranks_from_the_environment_and_whole_worlds() {
        let rules = Rules::parse(TABLE).unwrap();
        let none = |_: &str| None;
        let r0 = identify(
            &rules,
            &env(&[
                ("PMIX_RANK", "0"),
                ("OMPI_COMM_WORLD_RANK", "0"),
                ("OMPI_COMM_WORLD_SIZE", "2"),
                ("OMPI_MCA_ess_base_jobid", "77"),
            ]),
            &none,
        )
        .unwrap();
        assert_eq!(
            (r0.runtime.as_str(), r0.rank, r0.size),
            ("Open MPI", 0, Some(2))
        );
        let r1 = RankId {
            rank: 1,
            ..r0.clone()
        };
        let hydra = identify(&rules, &env(&[("PMI_RANK", "3"), ("PMI_SIZE", "4")]), &none).unwrap();
        assert_eq!((hydra.rank, hydra.size), (3, Some(4)));
        assert_eq!(identify(&rules, &env(&[("HOME", "/root")]), &none), None);

        let ws = worlds([&r0, &r1, &hydra]);
        assert_eq!(ws.len(), 2);
        assert!(ws[0].complete(), "{ws:?}");
        assert!(!ws[1].complete());
        assert!(
            ws[1].gap().contains("only 1 of the 4 ranks"),
            "{}",
            ws[1].gap()
        );
        let no_size = World {
            size: None,
            ..ws[0].clone()
        };
        assert!(!no_size.complete() && no_size.gap().contains("unknown"));
    }

    #[test]
    fn a_rank_inherited_from_qualify_is_no_rank() {
        // qualify runs inside a Slurm batch step: SLURM_PROCID=0 reaches every child.
        let rules = Rules::parse(TABLE).unwrap();
        let own = |name: &str| match name {
            "SLURM_PROCID" => Some("0".to_string()),
            "SLURM_NTASKS" => Some("4".to_string()),
            _ => None,
        };
        let inherited = env(&[("SLURM_PROCID", "0"), ("SLURM_NTASKS", "4")]);
        assert_eq!(identify(&rules, &inherited, &own), None);
        // A task srun started as a new step has its own step id.
        let task = env(&[
            ("SLURM_PROCID", "0"),
            ("SLURM_NTASKS", "4"),
            ("SLURM_STEP_ID", "0"),
        ]);
        assert_eq!(identify(&rules, &task, &own).map(|r| r.rank), Some(0));
    }
}
