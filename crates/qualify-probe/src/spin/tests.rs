//! The judge's table: made-up samples → deadlock, ambiguous or not stuck, and what the finding
//! names (ranks, calls, how they were matched).

use super::*;
use crate::rules::{Frame, TABLE};
use crate::testkit::{P, T, mpi_tree, stacks};

fn rules() -> Rules {
    Rules::parse(TABLE).expect("the shipped table parses")
}

/// Build `n` samples of `procs` (the same each time unless `vary` changes sample i), with the
/// procs' ranks read from their environment.
fn judge_procs(
    procs: &[P],
    n: usize,
    vary: &dyn Fn(usize, &mut Vec<P>),
    moving: bool,
) -> Conclusion {
    let rules = rules();
    let infos: Vec<Proc> = procs
        .iter()
        .map(|p| {
            let env: Vec<(String, String)> = p
                .env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            Proc {
                pid: p.pid,
                launcher: rules.launcher(p.comm).map(|l| l.runtime.clone()),
                rank: ranks::identify(&rules, &env, &|_| None),
            }
        })
        .collect();
    let mut samples = Vec::new();
    for i in 0..n {
        let mut ps = procs.to_vec();
        vary(i, &mut ps);
        let waits = ps
            .iter()
            .flat_map(|p| {
                p.threads.iter().map(move |t| ThreadWait {
                    pid: p.pid,
                    tid: t.tid,
                    comm: p.comm.to_string(),
                    state: t.state.to_string(),
                    class: t.class,
                    call: t.call.to_string(),
                    wchan: String::new(),
                    futex: None,
                    timeout_ms: None,
                })
            })
            .collect();
        let stacks = ps
            .iter()
            .map(|p| ProcStacks {
                pid: p.pid,
                threads: p
                    .threads
                    .iter()
                    .filter(|t| !t.frames.is_empty())
                    .map(|t| {
                        (
                            t.tid,
                            t.frames
                                .iter()
                                .map(|(f, m)| Frame::new((!f.is_empty()).then_some(*f), Some(*m)))
                                .collect(),
                        )
                    })
                    .collect(),
                text: String::new(),
                error: None,
            })
            .collect();
        samples.push(Sample {
            at_seconds: i as f64,
            cost_seconds: 0.01,
            memory_seconds: 0.001,
            waits,
            stacks,
            memory: Snapshot::default(),
            memory_changed: if moving && i == 1 {
                vec!["vader_segment (shared memory)".into()]
            } else {
                Vec::new()
            },
        });
    }
    judge(&rules, &infos, &samples, "eu-stack", Duration::from_secs(3))
}

/// How sample i differs from the tree given.
type Vary = dyn Fn(usize, &mut Vec<P>);

fn same(_: usize, _: &mut Vec<P>) {}

fn verdict(c: &Conclusion) -> (&'static str, String) {
    match c {
        Conclusion::Deadlock(f) => ("deadlock", f.why.clone()),
        Conclusion::Ambiguous(f) => ("ambiguous", f.why.clone()),
        Conclusion::NotStuck(why) => ("not_stuck", why.clone()),
        Conclusion::Unexamined(why) => ("unexamined", why.clone()),
    }
}

#[test]
fn judge_table() {
    /// What, the tree, how sample i differs, memory moving, the verdict, what it says.
    type Case<'a> = (&'a str, Vec<P>, &'a Vary, bool, &'a str, &'a str);
    let cases: Vec<Case> = vec![
        (
            "every rank in MPI_Send",
            mpi_tree(&[stacks::MPI_SEND, stacks::MPI_SEND], "2"),
            &same,
            false,
            "deadlock",
            "all 2 ranks in MPI_Send — rank 0: MPI_Send (spinning in opal_progress)",
        ),
        (
            "data moving while every rank looks stuck",
            mpi_tree(&[stacks::MPI_SEND, stacks::MPI_SEND], "2"),
            &same,
            true,
            "not_stuck",
            "data is moving",
        ),
        (
            "a rank that moves from one call to another between samples",
            mpi_tree(&[stacks::MPI_SEND, stacks::MPI_SEND], "2"),
            &|i, ps| {
                if i == 2 {
                    ps[1].threads[0].frames = stacks::MPI_BARRIER.to_vec();
                }
            },
            false,
            "not_stuck",
            "moved from MPI_Send to MPI_Barrier",
        ),
        (
            "a rank that computes in one sample",
            mpi_tree(&[stacks::MPI_SEND, stacks::MPI_SEND], "2"),
            &|i, ps| {
                if i == 1 {
                    ps[1].threads[0].frames = vec![("solve", "exchange"), ("main", "exchange")];
                }
            },
            false,
            "ambiguous",
            "computing in solve",
        ),
        (
            "a helper thread in a timed wait in user code is not a runtime helper",
            {
                let mut t = mpi_tree(&[stacks::MPI_SEND, stacks::MPI_SEND], "2");
                t[1].threads[1] =
                    T::timed(201).stack(&[("nanosleep", "libc.so.6"), ("ticker", "exchange")]);
                t
            },
            &same,
            false,
            "ambiguous",
            "in a timed wait in ticker",
        ),
        (
            "a thread the sampler could not unwind",
            {
                let mut t = mpi_tree(&[stacks::MPI_SEND, stacks::MPI_SEND], "2");
                t[1].threads[0].frames.clear();
                t
            },
            &same,
            false,
            "ambiguous",
            "no stack",
        ),
        (
            "ranks without a world size",
            {
                let mut t = mpi_tree(&[stacks::MPI_SEND, stacks::MPI_SEND], "2");
                for p in &mut t[1..] {
                    p.env.retain(|(k, _)| *k != "OMPI_COMM_WORLD_SIZE");
                }
                t
            },
            &same,
            false,
            "ambiguous",
            "is unknown",
        ),
        (
            "only runtime threads and blocked waits, no synchronization call",
            vec![P::new(
                10,
                "daemon",
                vec![T::futex(10), T::timed(11).stack(stacks::HELPER)],
            )],
            &same,
            false,
            "not_stuck",
            "no thread in a synchronization call",
        ),
        (
            "a thread in a call but blocked on a socket outside the tree",
            vec![P::new(
                10,
                "client",
                vec![T::external(10).stack(stacks::MPI_SEND)],
            )],
            &same,
            false,
            "not_stuck",
            "no thread in a synchronization call",
        ),
        (
            "libgomp: stripped frames entered from an outlined region",
            vec![P::new(
                10,
                "omp_lockorder",
                vec![
                    T::running(10).stack(stacks::GOMP_BARRIER),
                    T::running(11).stack(&[
                        ("", "libgomp.so.1.0.0"),
                        ("main._omp_fn.0", "omp_lockorder"),
                        ("", "libgomp.so.1.0.0"),
                        ("start_thread", "libc.so.6"),
                    ]),
                ],
            )],
            &same,
            false,
            "deadlock",
            "2 thread(s) in an OpenMP runtime call — thread 10 (main._omp_fn.0)",
        ),
    ];
    for (what, procs, vary, moving, want, says) in cases {
        let c = judge_procs(&procs, SAMPLES, vary, moving);
        let (got, why) = verdict(&c);
        assert_eq!(got, want, "{what}: {why}");
        assert!(why.contains(says), "{what}: {why:?} lacks {says:?}");
    }
}

#[test]
fn a_finding_names_ranks_threads_matches_and_stacks() {
    let procs = mpi_tree(&[stacks::MPI_BARRIER, stacks::MPI_ALLREDUCE], "2");
    let Conclusion::Deadlock(f) = judge_procs(&procs, SAMPLES, &same, false) else {
        panic!("not a deadlock");
    };
    assert_eq!(
        f.ranks.get(&0).map(String::as_str),
        Some("MPI_Barrier (spinning in opal_progress)")
    );
    assert_eq!(
        f.ranks.get(&1).map(String::as_str),
        Some("MPI_Allreduce (spinning in opal_progress)")
    );
    assert!(
        f.why
            .starts_with("all 2 ranks in blocking calls — rank 0: MPI_Barrier"),
        "{}",
        f.why
    );
    assert!(f.why.contains("mpirun waiting for its ranks"), "{}", f.why);
    assert!(f.why.contains("2 runtime thread(s)"), "{}", f.why);
    assert!(
        f.why.contains("calls matched by function name"),
        "{}",
        f.why
    );
    assert_eq!(f.matched_by, "function");
    assert_eq!(f.worlds.len(), 1);
    assert!(f.worlds[0].complete());
    let roles: Vec<Role> = f.threads.iter().map(|t| t.role).collect();
    assert_eq!(
        roles,
        [
            Role::Launcher,
            Role::Launcher,
            Role::Sync,
            Role::Runtime,
            Role::Sync,
            Role::Runtime
        ]
    );
    let json = serde_json::to_value(&*f).unwrap();
    assert_eq!(json["verdict"], "deadlock");
    assert_eq!(
        json["ranks"]["1"],
        "MPI_Allreduce (spinning in opal_progress)"
    );
    assert_eq!(json["threads"][2]["call"]["call"], "MPI_Barrier");
    assert_eq!(json["threads"][2]["rank"], 0);
    assert_eq!(f.stacks["tool"], "eu-stack");
    assert_eq!(f.stacks["stacks"].as_object().map(|m| m.len()), Some(3));
}
