//! Who holds what a waiting thread waits for, read from the waiting process's memory: glibc
//! mutexes (the owner TID glibc keeps beside the futex word; for robust and priority-inheritance
//! mutexes the futex word itself carries it), `pthread_join` (the futex word is the joined
//! thread's TID), and CPython's `RLock` (its owner's `pthread_t`, mapped to a TID through glibc's
//! thread descriptor). Every read is validated before it is believed; what cannot be read is no
//! edge, never a guess.

use crate::blocking::{FutexWait, ThreadWait};
use crate::inspect::Inspect;
use crate::runtimes::Runtimes;

/// `FUTEX_TID_MASK`: the owner TID bits of a robust or PI futex word.
const TID_MASK: u32 = 0x3fff_ffff;
/// glibc's mutex kinds: type (0–3) plus robust, PI, PP and process-shared flags, elision bits.
const KIND_BITS: i32 = 3 | 16 | 32 | 64 | 128 | 256 | 512;
const ROBUST: i32 = 16;
/// `FUTEX_PRIVATE_FLAG`: glibc's mutexes wait privately, a join waits on the shared TID word.
const FUTEX_PRIVATE: u64 = 128;

/// What a thread waits for and who holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Held {
    /// For people: `mutex 0x5637e93430a0`, `the exit of thread 17825`, `RLock 0x7f07140e3900`.
    pub object: String,
    pub owner: i32,
    /// How the owner was read.
    pub how: String,
}

fn le_i32(b: &[u8], at: usize) -> Option<i32> {
    Some(i32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn le_u64(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// The live threads of a process: (TID in its own PID namespace, as the process itself and so
/// its memory knows it; TID here).
pub type Tids = [(i32, i32)];

fn host(tids: &Tids, ns: i32) -> Option<i32> {
    tids.iter().find(|(n, _)| *n == ns).map(|(_, h)| *h)
}

/// The owner of the futex a thread of `pid` waits on, when glibc's layout shows one (an owner
/// must be one of the live `tids`).
pub fn futex_owner(
    inspect: &mut dyn Inspect,
    pid: i32,
    f: &FutexWait,
    tids: &Tids,
) -> Option<Held> {
    let m = inspect.read_mem(pid, f.addr, 20)?;
    let word = le_i32(&m, 0)?;
    if f.is_pi() {
        let owner = host(tids, (word as u32 & TID_MASK) as i32)?;
        return Some(Held {
            object: format!("PI mutex {:#x}", f.addr),
            owner,
            how: "priority-inheritance futex word (owner TID bits)".into(),
        });
    }
    let owner_field = le_i32(&m, 8)?;
    let kind = le_i32(&m, 16)?;
    let mutex = kind & !KIND_BITS == 0;
    if mutex && kind & ROBUST != 0 && f.val == u64::from(word as u32) {
        let owner = host(tids, (word as u32 & TID_MASK) as i32)?;
        return Some(Held {
            object: format!("robust mutex {:#x}", f.addr),
            owner,
            how: "robust mutex futex word (owner TID bits)".into(),
        });
    }
    // A contended normal mutex: the waiter sleeps on value 2, glibc keeps the owner's TID in
    // `__owner` (8 bytes after the word).
    if let Some(owner) = host(tids, owner_field).filter(|_| mutex && f.val == 2 && word == 2) {
        return Some(Held {
            object: format!("mutex {:#x}", f.addr),
            owner,
            how: "glibc mutex owner field (/proc/PID/mem)".into(),
        });
    }
    // pthread_join waits on the joined thread's TID field until the kernel clears it.
    if f.op & FUTEX_PRIVATE == 0
        && word > 0
        && word as u64 == f.val
        && let Some(owner) = host(tids, word)
    {
        return Some(Held {
            object: format!("the exit of thread {owner}"),
            owner,
            how: "pthread_join (the futex word is the joined thread's TID)".into(),
        });
    }
    None
}

/// Whether a thread waits forever where glibc parks a `pthread_mutex_lock` whose
/// `FUTEX_LOCK_PI` the kernel answered with `EDEADLK` (its priority-inheritance lock chain leads
/// back to it): an untimed wait on a zero word on its own stack, inside `pthread_mutex_lock`
/// (its stack sample says so).
pub fn kernel_found_deadlock(inspect: &mut dyn Inspect, w: &ThreadWait) -> Option<Held> {
    let f = w.futex?;
    let near_sp = f.sp.is_some_and(|sp| f.addr.abs_diff(sp) < 4096);
    if !near_sp || f.val != 0 || f.is_pi() {
        return None;
    }
    let word = le_i32(&inspect.read_mem(w.pid, f.addr, 4)?, 0)?;
    if word != 0 {
        return None;
    }
    let stacks = inspect.stacks(&[w.pid]);
    let in_lock = stacks
        .iter()
        .flat_map(|p| p.threads.iter())
        .filter(|(tid, _)| *tid == w.tid)
        .flat_map(|(_, frames)| frames.iter())
        .any(|fr| fr.name().is_some_and(|n| n.contains("pthread_mutex_lock")));
    in_lock.then(|| Held {
        object: "a priority-inheritance mutex whose lock chain the kernel found leading back to it"
            .into(),
        owner: w.tid,
        how: "the kernel's PI deadlock detection (FUTEX_LOCK_PI answered EDEADLK; glibc's pthread_mutex_lock then waits forever)".into(),
    })
}

/// The TID (here) of the thread whose glibc descriptor is at `pthread` (a `pthread_t`), checked
/// by the descriptor's pointer to itself.
pub fn tid_of_pthread(
    inspect: &mut dyn Inspect,
    pid: i32,
    pthread: u64,
    table: &Runtimes,
    tids: &Tids,
) -> Option<i32> {
    let g = &table.glibc;
    let me = inspect.read_mem(pid, pthread + g.pthread_self_offset, 8)?;
    if le_u64(&me, 0)? != pthread {
        return None;
    }
    let tid = le_i32(
        &inspect.read_mem(pid, pthread + g.pthread_tid_offset, 4)?,
        0,
    )?;
    host(tids, tid)
}

/// A CPython lock object found around a semaphore a thread sleeps on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PyLock {
    pub addr: u64,
    pub rlock: bool,
    /// The owner's TID (an RLock with an owner only).
    pub owner: Option<i32>,
}

/// The CPython lock whose semaphore is the futex `f` (an RLock names its owner). Looks for the
/// object by the pointer to the semaphore it holds, and believes it only when its type's name
/// is `_thread.RLock` or `_thread.lock`.
pub fn python_lock(
    inspect: &mut dyn Inspect,
    pid: i32,
    f: &FutexWait,
    table: &Runtimes,
    tids: &Tids,
) -> Option<PyLock> {
    let c = &table.cpython;
    for at in inspect.find_word(pid, f.addr) {
        let Some(obj) = at.checked_sub(c.lock_field) else {
            continue;
        };
        let Some(header) = inspect.read_mem(pid, obj, 16) else {
            continue;
        };
        let (Some(refs), Some(ty)) = (le_u64(&header, 0), le_u64(&header, 8)) else {
            continue;
        };
        if refs == 0 || refs > 1 << 40 || ty == 0 {
            continue;
        }
        let Some(name_ptr) = inspect
            .read_mem(pid, ty + c.tp_name, 8)
            .and_then(|b| le_u64(&b, 0))
        else {
            continue;
        };
        let Some(name) = inspect.read_mem(pid, name_ptr, 32) else {
            continue;
        };
        let name: Vec<u8> = name.into_iter().take_while(|b| *b != 0).collect();
        let name = String::from_utf8_lossy(&name);
        if name == c.rlock_type {
            // An owner counts only with a hold count (an RLock released by its owner keeps
            // neither).
            let fields = inspect.read_mem(pid, obj + c.owner_field, 8);
            let count = inspect
                .read_mem(pid, obj + c.count_field, 8)
                .and_then(|b| le_u64(&b, 0))
                .unwrap_or(0);
            let owner = fields
                .and_then(|b| le_u64(&b, 0))
                .filter(|o| *o != 0 && count > 0)
                .and_then(|o| tid_of_pthread(inspect, pid, o, table, tids));
            return Some(PyLock {
                addr: obj,
                rlock: true,
                owner,
            });
        }
        if name == c.lock_type {
            return Some(PyLock {
                addr: obj,
                rlock: false,
                owner: None,
            });
        }
    }
    None
}

/// One edge of the wait-for graph: `waiter` waits for `held`.
#[derive(Debug, Clone)]
pub struct Edge {
    pub waiter: ThreadWait,
    pub held: Held,
}

/// The first cycle among `edges` (each waiter has at most one edge), in order from its
/// lowest TID.
pub fn cycle(edges: &[Edge]) -> Option<Vec<Edge>> {
    let next = |tid: i32| edges.iter().find(|e| e.waiter.tid == tid);
    let mut starts: Vec<i32> = edges.iter().map(|e| e.waiter.tid).collect();
    starts.sort_unstable();
    for start in starts {
        let mut path: Vec<i32> = Vec::new();
        let mut at = start;
        while let Some(e) = next(at) {
            if let Some(i) = path.iter().position(|t| *t == at) {
                let mut c: Vec<Edge> = path[i..].iter().filter_map(|t| next(*t).cloned()).collect();
                let low = c
                    .iter()
                    .enumerate()
                    .min_by_key(|(_, e)| e.waiter.tid)
                    .map(|(i, _)| i)
                    .unwrap_or(0);
                c.rotate_left(low);
                return Some(c);
            }
            path.push(at);
            at = e.held.owner;
        }
    }
    None
}

/// `thread 1234 (worker) holds mutex 0x… and waits for mutex 0x… held by 1235, which waits
/// for …`; `at` names where a thread waits, when a runtime's tool said.
pub fn describe(cycle: &[Edge], at: &dyn Fn(i32) -> Option<String>) -> String {
    let holds = |tid: i32| {
        cycle
            .iter()
            .find(|e| e.held.owner == tid)
            .map(|e| e.held.object.clone())
    };
    let mut parts = Vec::new();
    for (i, e) in cycle.iter().enumerate() {
        let w = &e.waiter;
        // Where it waits, when a runtime's tool said (`python3 at worker (deadlock.py:21)`).
        let name = match at(w.tid) {
            Some(a) => format!("{} at {a}", w.comm),
            None => w.comm.clone(),
        };
        let who = if i == 0 {
            format!("thread {} ({name})", w.tid)
        } else {
            format!("{} ({name})", w.tid)
        };
        let holding = match holds(w.tid) {
            Some(h) if i == 0 => format!(" holds {h} and"),
            _ => String::new(),
        };
        if e.held.how.contains("EDEADLK") {
            parts.push(format!(
                "{who} waits forever in pthread_mutex_lock for {}",
                e.held.object
            ));
            continue;
        }
        let owner = if e.held.owner == w.tid {
            "itself".to_string()
        } else {
            e.held.owner.to_string()
        };
        parts.push(format!(
            "{who}{holding} waits for {} held by {owner}",
            e.held.object
        ));
    }
    parts.join(", which ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blocking::Class;

    fn wait(tid: i32) -> ThreadWait {
        ThreadWait {
            pid: 10,
            tid,
            comm: "worker".into(),
            state: "S".into(),
            class: Class::Internal,
            call: "futex(FUTEX_WAIT, no timeout)".into(),
            wchan: String::new(),
            futex: None,
            timeout_ms: None,
        }
    }

    fn edge(tid: i32, owner: i32, obj: &str) -> Edge {
        Edge {
            waiter: wait(tid),
            held: Held {
                object: obj.into(),
                owner,
                how: "test".into(),
            },
        }
    }

    #[test]
    fn finds_the_cycle_and_names_it_from_its_lowest_thread() {
        let edges = vec![
            edge(12, 11, "mutex 0xb"),
            edge(11, 12, "mutex 0xa"),
            edge(10, 11, "the exit of thread 11"),
        ];
        let c = cycle(&edges).expect("a cycle");
        assert_eq!(c.iter().map(|e| e.waiter.tid).collect::<Vec<_>>(), [11, 12]);
        assert_eq!(
            describe(&c, &|_| None),
            "thread 11 (worker) holds mutex 0xb and waits for mutex 0xa held by 12, which 12 (worker) waits for mutex 0xb held by 11"
        );
        assert!(cycle(&[edge(10, 11, "x"), edge(11, 12, "y")]).is_none());
        let own = cycle(&[edge(7, 7, "mutex 0xc")]).expect("self-deadlock");
        let text = describe(&own, &|t| (t == 7).then(|| "worker (x.py:3)".to_string()));
        assert!(
            text.contains(
                "thread 7 (worker at worker (x.py:3)) holds mutex 0xc and waits for mutex 0xc held by itself"
            ),
            "{text}"
        );
    }
}
