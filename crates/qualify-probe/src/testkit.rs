//! Test fixtures for the decision tables: snapshots of a made-up tree and an [`Inspect`] that
//! answers from tables, so the watch's and the judge's decisions run in microseconds.

use crate::blocking::{Class, FutexWait, ThreadWait};
use crate::inspect::Inspect;
use crate::memory::{Region, Snapshot};
use crate::rules::{Frame, Rules};
use crate::sample::{ProcSnap, ThreadSnap};
use crate::stacks::{NoSampler, ProcStacks, ToolError};

/// A thread of a made-up process: tid, state, and how it waits.
#[derive(Clone)]
pub struct T {
    pub tid: i32,
    pub state: char,
    pub class: Class,
    pub call: &'static str,
    /// Frames, innermost first: (function or "", module).
    pub frames: Vec<(&'static str, &'static str)>,
    /// The futex it waits on.
    pub futex: Option<FutexWait>,
    /// Wakes every 100 ms (a ticker): its wake-up count grows with every sample.
    pub ticks: bool,
    /// A poll-style wait's timeout.
    pub timeout_ms: Option<u64>,
    /// Thread name, when not the process's.
    pub comm: Option<&'static str>,
}

impl T {
    pub fn new(tid: i32, class: Class, call: &'static str) -> T {
        let state = match class {
            Class::Running => 'R',
            Class::Gone => 'Z',
            _ => 'S',
        };
        T {
            tid,
            state,
            class,
            call,
            frames: Vec::new(),
            futex: None,
            ticks: false,
            timeout_ms: None,
            comm: None,
        }
    }
    pub fn running(tid: i32) -> T {
        T::new(tid, Class::Running, "running")
    }
    pub fn futex(tid: i32) -> T {
        T::new(tid, Class::Internal, "futex(FUTEX_WAIT, no timeout)")
    }
    pub fn timed(tid: i32) -> T {
        T::new(tid, Class::Timed, "poll(timeout 3600000 ms)")
    }
    pub fn external(tid: i32) -> T {
        T::new(tid, Class::External, "accept(fd 3 = socket:[1])")
    }
    pub fn stack(mut self, frames: &[(&'static str, &'static str)]) -> T {
        self.frames = frames.to_vec();
        self
    }
    /// Waiting on the futex word at `addr` (operation `op`, expecting `val`).
    pub fn on_futex(mut self, addr: u64, op: u64, val: u64) -> T {
        self.futex = Some(FutexWait {
            addr,
            op,
            val,
            sp: Some(0x7000_0000),
        });
        self
    }
    pub fn ticking(mut self) -> T {
        self.ticks = true;
        self
    }
    pub fn timeout(mut self, ms: u64) -> T {
        self.timeout_ms = Some(ms);
        self
    }
    pub fn named(mut self, comm: &'static str) -> T {
        self.comm = Some(comm);
        self
    }
}

/// A made-up process.
#[derive(Clone)]
pub struct P {
    pub pid: i32,
    pub comm: &'static str,
    pub threads: Vec<T>,
    pub env: Vec<(&'static str, &'static str)>,
}

impl P {
    pub fn new(pid: i32, comm: &'static str, threads: Vec<T>) -> P {
        P {
            pid,
            comm,
            threads,
            env: Vec::new(),
        }
    }
    pub fn env(mut self, env: &[(&'static str, &'static str)]) -> P {
        self.env = env.to_vec();
        self
    }
}

/// Snapshots of `procs` at `elapsed_ms` into the run: running threads have used one core
/// each for the whole time, waiting ones nothing; `io`, `faults` and `anon` as given.
pub fn snaps(procs: &[P], elapsed_ms: u64, io: u64, faults: u64) -> Vec<ProcSnap> {
    procs
        .iter()
        .map(|p| ProcSnap {
            pid: p.pid,
            ppid: 1,
            comm: p.comm.to_string(),
            starttime: 1,
            threads: p
                .threads
                .iter()
                .map(|t| {
                    let run_ns = if t.state == 'R' {
                        elapsed_ms * 1_000_000
                    } else {
                        1_000_000
                    };
                    ThreadSnap {
                        tid: t.tid,
                        comm: t.comm.unwrap_or(p.comm).to_string(),
                        state: t.state,
                        cpu_ticks: run_ns / 10_000_000,
                        run_ns,
                        wait_ns: 0,
                        slices: if t.ticks {
                            elapsed_ms / 100
                        } else {
                            run_ns / 4_000_000
                        },
                    }
                })
                .collect(),
            io_bytes: io,
            anon_bytes: 1 << 20,
            faults,
        })
        .collect()
}

/// An [`Inspect`] answering from the made-up tree.
pub struct Scripted {
    pub procs: Vec<P>,
    pub sampler: Result<&'static str, NoSampler>,
    /// Bumped by every memory digest when set: the memory keeps changing.
    pub memory_moves: bool,
    pub memory_calls: u64,
    pub stack_calls: u64,
    /// Process memory: (pid, address, bytes).
    pub mem: Vec<(i32, u64, Vec<u8>)>,
    /// pid → runtime name.
    pub runtimes: Vec<(i32, &'static str)>,
    /// pid → what the runtime's tool prints.
    pub reports: Vec<(i32, String)>,
    pub asked: u64,
    /// tid → bytes the thread read and wrote so far.
    pub thread_io: Vec<(i32, u64)>,
}

impl Scripted {
    pub fn new(procs: Vec<P>) -> Scripted {
        Scripted {
            procs,
            sampler: Ok("eu-stack"),
            memory_moves: false,
            memory_calls: 0,
            stack_calls: 0,
            mem: Vec::new(),
            runtimes: Vec::new(),
            reports: Vec::new(),
            asked: 0,
            thread_io: Vec::new(),
        }
    }
}

/// A glibc `pthread_mutex_t` as memory holds it: the futex word, the owner's TID, the kind.
pub fn mutex_bytes(word: i32, owner: i32, kind: i32) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(&word.to_le_bytes());
    b.extend_from_slice(&0u32.to_le_bytes());
    b.extend_from_slice(&owner.to_le_bytes());
    b.extend_from_slice(&0u32.to_le_bytes());
    b.extend_from_slice(&kind.to_le_bytes());
    b.extend_from_slice(&[0u8; 20]);
    b
}

impl Inspect for Scripted {
    fn waits(&mut self, snaps: &[ProcSnap]) -> Vec<ThreadWait> {
        let mut out = Vec::new();
        for s in snaps {
            let Some(p) = self.procs.iter().find(|p| p.pid == s.pid) else {
                continue;
            };
            for t in &p.threads {
                out.push(ThreadWait {
                    pid: p.pid,
                    tid: t.tid,
                    comm: t.comm.unwrap_or(p.comm).to_string(),
                    state: t.state.to_string(),
                    class: t.class,
                    call: t.call.to_string(),
                    wchan: String::new(),
                    futex: t.futex,
                    timeout_ms: t.timeout_ms,
                });
            }
        }
        out
    }

    fn sampler(&self) -> Result<&'static str, NoSampler> {
        self.sampler
    }

    fn stacks(&mut self, pids: &[i32]) -> Vec<ProcStacks> {
        self.stack_calls += 1;
        pids.iter()
            .filter_map(|pid| self.procs.iter().find(|p| p.pid == *pid))
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
                text: format!("stacks of {}", p.pid),
                error: None,
            })
            .collect()
    }

    fn memory(&mut self, pids: &[i32], _rules: &Rules) -> Snapshot {
        self.memory_calls += 1;
        let byte = if self.memory_moves {
            self.memory_calls as u8
        } else {
            0
        };
        let mut snap = Snapshot::default();
        for pid in pids {
            snap.regions.insert(
                format!("{pid}:heap"),
                Region {
                    name: format!("[heap] (pid {pid})"),
                    bytes: 4096,
                    digest: [byte; 32],
                },
            );
            snap.compared_bytes += 4096;
        }
        snap
    }

    fn environ(&mut self, pid: i32) -> Vec<(String, String)> {
        self.procs
            .iter()
            .find(|p| p.pid == pid)
            .map(|p| {
                p.env
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect()
            })
            .unwrap_or_default()
    }

    fn own_env(&self, _name: &str) -> Option<String> {
        None
    }

    fn read_mem(&mut self, pid: i32, addr: u64, len: usize) -> Option<Vec<u8>> {
        self.mem.iter().find_map(|(p, at, bytes)| {
            let off = usize::try_from(addr.checked_sub(*at)?).ok()?;
            (*p == pid && off + len <= bytes.len()).then(|| bytes[off..off + len].to_vec())
        })
    }

    fn thread_io(&mut self, _pid: i32, tid: i32) -> Option<u64> {
        self.thread_io
            .iter()
            .find(|(t, _)| *t == tid)
            .map(|(_, io)| *io)
    }

    fn runtime(&mut self, pid: i32) -> Option<String> {
        self.runtimes
            .iter()
            .find(|(p, _)| *p == pid)
            .map(|(_, r)| r.to_string())
    }

    fn ask_runtime(&mut self, pid: i32, runtime: &str) -> Result<String, ToolError> {
        self.asked += 1;
        self.reports
            .iter()
            .find(|(p, _)| *p == pid)
            .map(|(_, r)| r.clone())
            .ok_or_else(|| ToolError::NoTool {
                runtime: runtime.to_string(),
            })
    }
}

/// Stacks as eu-stack shows Open MPI ranks and their helpers.
pub mod stacks {
    pub const MPI_SEND: &[(&str, &str)] = &[
        ("", "mca_btl_vader.so"),
        ("opal_progress", "libopen-pal.so.40.30.2"),
        ("mca_pml_ob1_send", "mca_pml_ob1.so"),
        ("PMPI_Send", "libmpi.so.40.30.4"),
        ("main", "exchange"),
        ("__libc_start_call_main", "libc.so.6"),
    ];
    pub const MPI_BARRIER: &[(&str, &str)] = &[
        ("opal_progress", "libopen-pal.so.40.30.2"),
        (
            "ompi_coll_base_barrier_intra_two_procs",
            "libmpi.so.40.30.4",
        ),
        ("PMPI_Barrier", "libmpi.so.40.30.4"),
        ("main", "mismatch"),
    ];
    pub const MPI_ALLREDUCE: &[(&str, &str)] = &[
        ("opal_progress", "libopen-pal.so.40.30.2"),
        (
            "ompi_coll_base_allreduce_intra_recursivedoubling",
            "libmpi.so.40.30.4",
        ),
        ("PMPI_Allreduce", "libmpi.so.40.30.4"),
        ("main", "mismatch"),
    ];
    pub const HELPER: &[(&str, &str)] = &[
        ("__poll", "libc.so.6"),
        ("", "libevent_core-2.1.so.7.0.1"),
        ("event_base_loop", "libevent_core-2.1.so.7.0.1"),
        ("", "libopen-pal.so.40.30.2"),
        ("start_thread", "libc.so.6"),
    ];
    pub const LAUNCHER: &[(&str, &str)] = &[
        ("__poll", "libc.so.6"),
        ("event_base_loop", "libevent_core-2.1.so.7.0.1"),
        ("", "orterun"),
    ];
    pub const GOMP_BARRIER: &[(&str, &str)] = &[
        ("", "libgomp.so.1.0.0"),
        ("main._omp_fn.0", "omp_barrier"),
        ("GOMP_parallel", "libgomp.so.1.0.0"),
        ("main", "omp_barrier"),
    ];
    pub const GOMP_WORKER: &[(&str, &str)] = &[
        ("", "libgomp.so.1.0.0"),
        ("", "libgomp.so.1.0.0"),
        ("start_thread", "libc.so.6"),
    ];
    pub const COMPUTE: &[(&str, &str)] =
        &[("main._omp_fn.0", "omp_compute"), ("", "libgomp.so.1.0.0")];
}

/// Two Open MPI ranks and mpirun, every rank in `rank_stacks[i]` on its main thread, with a
/// helper thread each.
pub fn mpi_tree(
    rank_stacks: &[&'static [(&'static str, &'static str)]],
    size: &'static str,
) -> Vec<P> {
    let mut procs = vec![P::new(
        100,
        "mpirun",
        vec![
            T::external(100).stack(stacks::LAUNCHER),
            T::timed(101).stack(stacks::HELPER),
        ],
    )];
    let ranks = ["0", "1", "2", "3"];
    for (i, frames) in rank_stacks.iter().enumerate() {
        let pid = 200 + 10 * i as i32;
        procs.push(
            P::new(
                pid,
                "exchange",
                vec![
                    T::running(pid).stack(frames),
                    T::timed(pid + 1).stack(stacks::HELPER),
                ],
            )
            .env(&[
                ("OMPI_COMM_WORLD_RANK", ranks[i]),
                ("OMPI_COMM_WORLD_SIZE", size),
                ("OMPI_MCA_ess_base_jobid", "77"),
            ]),
        );
    }
    procs
}
