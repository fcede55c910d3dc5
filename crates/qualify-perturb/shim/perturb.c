/* qualify's schedule-perturbation shim, preloaded (LD_PRELOAD) into a probed program.
 *
 * It wraps the pthread synchronisation calls (mutex, rwlock, spin lock, condition variable,
 * semaphore, barrier, create, join) and a few scheduling system calls (nanosleep,
 * clock_nanosleep, usleep, sched_yield) found through dlsym(RTLD_NEXT), and at each of these
 * points, from a seed, may delay the calling thread before (acquire, wait) or after (release,
 * signal, create) the real call. It never shortens, skips or reorders a call: every schedule it
 * produces is one the kernel's scheduler could have produced, so a failure it exposes is an
 * interleaving the program allows.
 *
 * Configuration: the environment variable QUALIFY_PERTURB, read once at load:
 *   "v1 mode=<count|pct|noise|list> seed=<hex> depth=<d> cp=<n,n,...> prob=<per mille>
 *    maxdelay=<us> hold=<us> budget=<us> log=<path>"
 *   count  only counts the points (steps);
 *   pct    PCT-style (Burckhardt et al., ASPLOS '10): every thread gets a random priority from
 *          the seed; at the global steps listed in cp= the thread taking that step drops below
 *          every initial priority; at each point a thread waits (timed sleeps of 20 us, at most
 *          hold= us) while a thread of higher priority in its process is running;
 *   noise  uniform noise (ConTest-style): at each point, with probability prob/1000, a yield
 *          or a sleep of 1..maxdelay us;
 *   list   replays exactly the points listed in the log file's list area (minimisation).
 * The total delay of all threads of all processes is bounded by budget= (shared), so a run is
 * slowed by at most that much; once spent, the shim only counts.
 *
 * Log: the file at log= (made and sized by qualify) is mapped shared; a 4 KiB header holds
 * atomic counters (steps, delay spent, record bytes used), then qualify's list area, then text
 * records appended by every process (survives SIGKILL: the page cache holds it):
 *   L <pidx> <pid> <exe>                      the shim loaded in a process
 *   T <pidx> <tidx> <tid> <priority>          a thread it numbered
 *   M <pidx> <start> <end> <offset> <path>    an executable mapping (for file:line)
 *   P <pidx> <tidx> <callno> <call> <when> <action> <us> <object> <return address>
 * The log is the program's own word (it runs inside the program): qualify reads it as such.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define TLS __thread __attribute__((tls_model("initial-exec")))
#define EXPORT __attribute__((visibility("default")))

enum { MODE_OFF, MODE_COUNT, MODE_PCT, MODE_NOISE, MODE_LIST };
enum { ACT_NONE, ACT_YIELD, ACT_SLEEP, ACT_HOLD, ACT_PRIO };
enum { ST_FREE, ST_RUNNING, ST_BLOCKED, ST_HOLDING, ST_DONE };
enum { BEFORE = 0, AFTER = 1 };

/* The calls, in the order of their names below (the log carries the name). */
enum {
    C_MUTEX_LOCK, C_MUTEX_TRYLOCK, C_MUTEX_TIMEDLOCK, C_MUTEX_UNLOCK,
    C_RW_RDLOCK, C_RW_WRLOCK, C_RW_UNLOCK, C_SPIN_LOCK, C_SPIN_UNLOCK,
    C_COND_WAIT, C_COND_TIMEDWAIT, C_COND_SIGNAL, C_COND_BROADCAST,
    C_SEM_WAIT, C_SEM_TIMEDWAIT, C_SEM_POST, C_BARRIER_WAIT,
    C_CREATE, C_JOIN, C_THREAD_START, C_NANOSLEEP, C_CLOCK_NANOSLEEP, C_USLEEP, C_YIELD,
    C_COUNT
};
static const char *const CALL_NAMES[C_COUNT] = {
    "pthread_mutex_lock", "pthread_mutex_trylock", "pthread_mutex_timedlock",
    "pthread_mutex_unlock", "pthread_rwlock_rdlock", "pthread_rwlock_wrlock",
    "pthread_rwlock_unlock", "pthread_spin_lock", "pthread_spin_unlock", "pthread_cond_wait",
    "pthread_cond_timedwait", "pthread_cond_signal", "pthread_cond_broadcast", "sem_wait",
    "sem_timedwait", "sem_post", "pthread_barrier_wait", "pthread_create", "pthread_join",
    "thread_start", "nanosleep", "clock_nanosleep", "usleep", "sched_yield",
};
static const char *const ACTION_NAMES[] = {"none", "yield", "sleep", "hold", "priority"};

#define HEADER_BYTES 4096
#define MAGIC "QPERTv1"
struct header {
    char magic[8];
    uint64_t list_off, list_len, rec_off, size; /* written by qualify */
    _Atomic uint64_t used;     /* record bytes reserved */
    _Atomic uint64_t steps;    /* points seen, all processes */
    _Atomic int64_t spent_us;  /* delay injected, all processes */
    _Atomic uint32_t procs;    /* processes the shim loaded in */
    _Atomic uint32_t overflow; /* records dropped for lack of room */
    _Atomic uint64_t points;   /* points perturbed */
};

#define MAX_CP 32
static struct {
    int mode;
    uint64_t seed;
    uint32_t depth;
    uint64_t cp[MAX_CP];
    int ncp;
    uint32_t prob;      /* per mille */
    uint32_t maxdelay;  /* us */
    uint32_t hold;      /* us */
    int64_t budget;     /* us */
} cfg;

static char *map;
static size_t map_size;
static struct header *hdr;
static uint32_t pidx;

/* Threads of this process: their PCT priority and whether they run. */
#define MAX_THREADS 4096
struct slot {
    _Atomic int state;
    _Atomic int64_t prio;
};
static struct slot threads[MAX_THREADS];
static _Atomic uint32_t nthreads;

static TLS int t_idx = -1;
static TLS uint32_t t_calls;
static TLS uint64_t t_rng;
static TLS int t_busy; /* inside the shim: nested wrapped calls pass straight through */

/* The list to replay (mode list): sorted by (pidx, tidx, callno). */
struct listed {
    uint32_t pidx, tidx, callno, action, us;
};
#define MAX_LISTED 8192
static struct listed listed[MAX_LISTED];
static int nlisted;

/* Executable mappings already logged (for file:line). */
#define MAX_MAPS 256
static struct {
    uintptr_t start, end;
} maps[MAX_MAPS];
static int nmaps;
static _Atomic int maps_busy;

/* ---- the real functions ---- */
static int (*real_mutex_lock)(pthread_mutex_t *);
static int (*real_mutex_trylock)(pthread_mutex_t *);
static int (*real_mutex_timedlock)(pthread_mutex_t *, const struct timespec *);
static int (*real_mutex_unlock)(pthread_mutex_t *);
static int (*real_rw_rdlock)(pthread_rwlock_t *);
static int (*real_rw_wrlock)(pthread_rwlock_t *);
static int (*real_rw_unlock)(pthread_rwlock_t *);
static int (*real_spin_lock)(pthread_spinlock_t *);
static int (*real_spin_unlock)(pthread_spinlock_t *);
static int (*real_cond_wait)(pthread_cond_t *, pthread_mutex_t *);
static int (*real_cond_timedwait)(pthread_cond_t *, pthread_mutex_t *, const struct timespec *);
static int (*real_cond_signal)(pthread_cond_t *);
static int (*real_cond_broadcast)(pthread_cond_t *);
static int (*real_sem_wait)(sem_t *);
static int (*real_sem_timedwait)(sem_t *, const struct timespec *);
static int (*real_sem_post)(sem_t *);
static int (*real_barrier_wait)(pthread_barrier_t *);
static int (*real_create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
static int (*real_join)(pthread_t, void **);
static int (*real_nanosleep)(const struct timespec *, struct timespec *);
static int (*real_clock_nanosleep)(clockid_t, int, const struct timespec *, struct timespec *);
static int (*real_usleep)(useconds_t);
static int (*real_yield)(void);

static void *next(const char *name, const char *version)
{
    void *f = NULL;
    if (version)
        f = dlvsym(RTLD_NEXT, name, version);
    if (!f)
        f = dlsym(RTLD_NEXT, name);
    return f;
}

#define RESOLVE(var, name, version)                                                          \
    do {                                                                                     \
        if (!var)                                                                            \
            *(void **)&var = next(name, version);                                            \
    } while (0)

static void resolve_all(void)
{
    RESOLVE(real_mutex_lock, "pthread_mutex_lock", NULL);
    RESOLVE(real_mutex_trylock, "pthread_mutex_trylock", NULL);
    RESOLVE(real_mutex_timedlock, "pthread_mutex_timedlock", NULL);
    RESOLVE(real_mutex_unlock, "pthread_mutex_unlock", NULL);
    RESOLVE(real_rw_rdlock, "pthread_rwlock_rdlock", NULL);
    RESOLVE(real_rw_wrlock, "pthread_rwlock_wrlock", NULL);
    RESOLVE(real_rw_unlock, "pthread_rwlock_unlock", NULL);
    RESOLVE(real_spin_lock, "pthread_spin_lock", NULL);
    RESOLVE(real_spin_unlock, "pthread_spin_unlock", NULL);
    RESOLVE(real_cond_wait, "pthread_cond_wait", "GLIBC_2.3.2");
    RESOLVE(real_cond_timedwait, "pthread_cond_timedwait", "GLIBC_2.3.2");
    RESOLVE(real_cond_signal, "pthread_cond_signal", "GLIBC_2.3.2");
    RESOLVE(real_cond_broadcast, "pthread_cond_broadcast", "GLIBC_2.3.2");
    RESOLVE(real_sem_wait, "sem_wait", NULL);
    RESOLVE(real_sem_timedwait, "sem_timedwait", NULL);
    RESOLVE(real_sem_post, "sem_post", NULL);
    RESOLVE(real_barrier_wait, "pthread_barrier_wait", NULL);
    RESOLVE(real_create, "pthread_create", NULL);
    RESOLVE(real_join, "pthread_join", NULL);
    RESOLVE(real_nanosleep, "nanosleep", NULL);
    RESOLVE(real_clock_nanosleep, "clock_nanosleep", NULL);
    RESOLVE(real_usleep, "usleep", NULL);
    RESOLVE(real_yield, "sched_yield", NULL);
}

/* ---- small helpers (no allocation, no locks) ---- */
static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static uint64_t rng(void)
{
    t_rng = mix(t_rng);
    return t_rng;
}

static int64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void sleep_us(uint32_t us)
{
    struct timespec ts = {us / 1000000, (long)(us % 1000000) * 1000};
    syscall(SYS_nanosleep, &ts, NULL);
}

static uint64_t parse_num(const char *s, const char **end, int base)
{
    uint64_t v = 0;
    for (;; s++) {
        int d;
        if (*s >= '0' && *s <= '9')
            d = *s - '0';
        else if (base == 16 && *s >= 'a' && *s <= 'f')
            d = *s - 'a' + 10;
        else
            break;
        v = v * base + d;
    }
    if (end)
        *end = s;
    return v;
}

/* Reserve room for a record and copy it in; dropped (and counted) when the log is full. */
static void emit(const char *buf, size_t n)
{
    if (!hdr || n == 0)
        return;
    uint64_t off = atomic_fetch_add(&hdr->used, n);
    if (hdr->rec_off + off + n > map_size) {
        atomic_store(&hdr->overflow, 1);
        return;
    }
    memcpy(map + hdr->rec_off + off, buf, n);
}

static void emitf(const char *fmt, ...)
{
    char buf[640];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n > 0)
        emit(buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
}

/* Log the executable mappings not logged yet (read from /proc/self/maps with raw calls). */
static void log_maps(void)
{
    int expected = 0;
    if (!atomic_compare_exchange_strong(&maps_busy, &expected, 1))
        return;
    int fd = (int)syscall(SYS_openat, AT_FDCWD, "/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        static char buf[65536];
        size_t len = 0;
        for (;;) {
            ssize_t r = syscall(SYS_read, fd, buf + len, sizeof buf - 1 - len);
            if (r <= 0)
                break;
            len += (size_t)r;
            if (len >= sizeof buf - 1)
                break;
        }
        syscall(SYS_close, fd);
        buf[len] = 0;
        char *line = buf;
        while (line && *line) {
            char *nl = strchr(line, '\n');
            if (nl)
                *nl = 0;
            const char *p;
            uintptr_t start = parse_num(line, &p, 16);
            uintptr_t end = (*p == '-') ? parse_num(p + 1, &p, 16) : 0;
            char perms[5] = {0};
            if (*p == ' ')
                memcpy(perms, p + 1, 4);
            const char *path = strchr(line, '/');
            if (perms[2] == 'x' && path && p[5] == ' ') {
                uint64_t offset = parse_num(p + 6, NULL, 16);
                int known = 0;
                for (int i = 0; i < nmaps; i++)
                    if (maps[i].start == start)
                        known = 1;
                if (!known && nmaps < MAX_MAPS) {
                    maps[nmaps].start = start;
                    maps[nmaps].end = end;
                    nmaps++;
                    emitf("M %u %lx %lx %lx %s\n", pidx, (unsigned long)start,
                          (unsigned long)end, (unsigned long)offset, path);
                }
            }
            line = nl ? nl + 1 : NULL;
        }
    }
    atomic_store(&maps_busy, 0);
}

static void note_address(uintptr_t ret)
{
    for (int i = 0; i < nmaps; i++)
        if (ret >= maps[i].start && ret < maps[i].end)
            return;
    log_maps();
}

/* ---- threads ---- */
static int64_t initial_priority(uint32_t tidx)
{
    /* Above every change-point priority (1..depth-1), distinct with high probability. */
    return (int64_t)cfg.depth + 1 + (int64_t)(mix(cfg.seed ^ mix(((uint64_t)pidx << 32) | tidx)) >> 34);
}

static void number_thread(int idx)
{
    t_idx = idx;
    t_calls = 0;
    t_rng = mix(cfg.seed ^ mix(((uint64_t)pidx << 32) | (uint32_t)idx) ^ 0x51ed270b27a3d1c9ULL);
    if (idx < MAX_THREADS) {
        atomic_store(&threads[idx].prio, initial_priority((uint32_t)idx));
        atomic_store(&threads[idx].state, ST_RUNNING);
    }
    if (cfg.mode == MODE_PCT)
        emitf("T %u %d %ld %lld\n", pidx, idx, (long)syscall(SYS_gettid),
              (long long)(idx < MAX_THREADS ? atomic_load(&threads[idx].prio) : 0));
}

static void ensure_thread(void)
{
    if (t_idx < 0)
        number_thread((int)atomic_fetch_add(&nthreads, 1));
}

static void set_state(int st)
{
    if (t_idx >= 0 && t_idx < MAX_THREADS)
        atomic_store(&threads[t_idx].state, st);
}

/* Whether a thread of this process with a higher priority than `mine` is running. */
static int higher_running(int64_t mine)
{
    uint32_t n = atomic_load(&nthreads);
    if (n > MAX_THREADS)
        n = MAX_THREADS;
    for (uint32_t i = 0; i < n; i++) {
        if ((int)i == t_idx)
            continue;
        int st = atomic_load(&threads[i].state);
        if ((st == ST_RUNNING || st == ST_HOLDING) && atomic_load(&threads[i].prio) > mine)
            return 1;
    }
    return 0;
}

/* Take `us` from the shared budget; 0 when it is spent. */
static uint32_t take_budget(uint32_t us)
{
    int64_t left = cfg.budget - atomic_fetch_add(&hdr->spent_us, (int64_t)us);
    if (left <= 0)
        return 0;
    return left < (int64_t)us ? (uint32_t)left : us;
}

static void record(int call, int when, int action, uint32_t us, const void *obj, uintptr_t ret)
{
    atomic_fetch_add(&hdr->points, 1);
    note_address(ret);
    emitf("P %u %d %u %s %s %s %u %lx %lx\n", pidx, t_idx, t_calls, CALL_NAMES[call],
          when == BEFORE ? "before" : "after", ACTION_NAMES[action], us,
          (unsigned long)(uintptr_t)obj, (unsigned long)ret);
}

static const struct listed *find_listed(uint32_t tidx, uint32_t callno)
{
    int lo = 0, hi = nlisted;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        const struct listed *l = &listed[mid];
        int cmp = l->pidx != pidx ? (l->pidx < pidx ? -1 : 1)
                  : l->tidx != tidx ? (l->tidx < tidx ? -1 : 1)
                  : l->callno != callno ? (l->callno < callno ? -1 : 1)
                                        : 0;
        if (cmp == 0)
            return l;
        if (cmp < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* One perturbation point of the calling thread. */
static void point(int call, int when, const void *obj, uintptr_t ret)
{
    if (!hdr || cfg.mode == MODE_OFF || t_busy)
        return;
    t_busy = 1;
    int saved_errno = errno;
    ensure_thread();
    t_calls++;
    uint64_t step = atomic_fetch_add(&hdr->steps, 1) + 1;
    switch (cfg.mode) {
    case MODE_NOISE:
        if (rng() % 1000 < cfg.prob) {
            uint32_t us = 1 + (uint32_t)(rng() % cfg.maxdelay);
            if (us < 5) {
                if (take_budget(1)) {
                    syscall(SYS_sched_yield);
                    record(call, when, ACT_YIELD, 0, obj, ret);
                }
            } else if ((us = take_budget(us)) > 0) {
                sleep_us(us);
                record(call, when, ACT_SLEEP, us, obj, ret);
            }
        }
        break;
    case MODE_PCT: {
        if (t_idx < MAX_THREADS) {
            for (int i = 0; i < cfg.ncp; i++) {
                if (cfg.cp[i] == step) {
                    /* The i-th change point: below every initial priority. */
                    atomic_store(&threads[t_idx].prio, (int64_t)(cfg.ncp - i));
                    record(call, when, ACT_PRIO, (uint32_t)(cfg.ncp - i), obj, ret);
                }
            }
            int64_t mine = atomic_load(&threads[t_idx].prio);
            if (higher_running(mine) && atomic_load(&hdr->spent_us) < cfg.budget) {
                int64_t t0 = now_us();
                set_state(ST_HOLDING);
                while (higher_running(mine) && now_us() - t0 < cfg.hold &&
                       atomic_load(&hdr->spent_us) < cfg.budget)
                    sleep_us(20);
                set_state(ST_RUNNING);
                uint32_t us = (uint32_t)(now_us() - t0);
                atomic_fetch_add(&hdr->spent_us, (int64_t)us);
                record(call, when, ACT_HOLD, us, obj, ret);
            }
        }
        break;
    }
    case MODE_LIST: {
        const struct listed *l = find_listed((uint32_t)t_idx, t_calls);
        if (l) {
            uint32_t us = l->action == ACT_YIELD ? 1 : take_budget(l->us);
            if (l->action == ACT_YIELD)
                syscall(SYS_sched_yield);
            else if (us > 0)
                sleep_us(us);
            record(call, when, l->action == ACT_YIELD ? ACT_YIELD : ACT_SLEEP,
                   l->action == ACT_YIELD ? 0 : us, obj, ret);
        }
        break;
    }
    default:
        break;
    }
    errno = saved_errno;
    t_busy = 0;
}

#define RET ((uintptr_t)__builtin_return_address(0))

/* ---- the wrappers ---- */
#define BLOCKING(call, obj, expr)                                                            \
    do {                                                                                     \
        point(call, BEFORE, obj, ret);                                                       \
        if (!t_busy)                                                                         \
            set_state(ST_BLOCKED);                                                           \
        int r_ = (expr);                                                                     \
        if (!t_busy)                                                                         \
            set_state(ST_RUNNING);                                                           \
        return r_;                                                                           \
    } while (0)

EXPORT int pthread_mutex_lock(pthread_mutex_t *m)
{
    uintptr_t ret = RET;
    RESOLVE(real_mutex_lock, "pthread_mutex_lock", NULL);
    BLOCKING(C_MUTEX_LOCK, m, real_mutex_lock(m));
}

EXPORT int pthread_mutex_trylock(pthread_mutex_t *m)
{
    RESOLVE(real_mutex_trylock, "pthread_mutex_trylock", NULL);
    point(C_MUTEX_TRYLOCK, BEFORE, m, RET);
    return real_mutex_trylock(m);
}

EXPORT int pthread_mutex_timedlock(pthread_mutex_t *m, const struct timespec *t)
{
    uintptr_t ret = RET;
    RESOLVE(real_mutex_timedlock, "pthread_mutex_timedlock", NULL);
    BLOCKING(C_MUTEX_TIMEDLOCK, m, real_mutex_timedlock(m, t));
}

EXPORT int pthread_mutex_unlock(pthread_mutex_t *m)
{
    RESOLVE(real_mutex_unlock, "pthread_mutex_unlock", NULL);
    int r = real_mutex_unlock(m);
    point(C_MUTEX_UNLOCK, AFTER, m, RET);
    return r;
}

EXPORT int pthread_rwlock_rdlock(pthread_rwlock_t *l)
{
    uintptr_t ret = RET;
    RESOLVE(real_rw_rdlock, "pthread_rwlock_rdlock", NULL);
    BLOCKING(C_RW_RDLOCK, l, real_rw_rdlock(l));
}

EXPORT int pthread_rwlock_wrlock(pthread_rwlock_t *l)
{
    uintptr_t ret = RET;
    RESOLVE(real_rw_wrlock, "pthread_rwlock_wrlock", NULL);
    BLOCKING(C_RW_WRLOCK, l, real_rw_wrlock(l));
}

EXPORT int pthread_rwlock_unlock(pthread_rwlock_t *l)
{
    RESOLVE(real_rw_unlock, "pthread_rwlock_unlock", NULL);
    int r = real_rw_unlock(l);
    point(C_RW_UNLOCK, AFTER, l, RET);
    return r;
}

EXPORT int pthread_spin_lock(pthread_spinlock_t *l)
{
    RESOLVE(real_spin_lock, "pthread_spin_lock", NULL);
    point(C_SPIN_LOCK, BEFORE, (const void *)l, RET);
    return real_spin_lock(l);
}

EXPORT int pthread_spin_unlock(pthread_spinlock_t *l)
{
    RESOLVE(real_spin_unlock, "pthread_spin_unlock", NULL);
    int r = real_spin_unlock(l);
    point(C_SPIN_UNLOCK, AFTER, (const void *)l, RET);
    return r;
}

EXPORT int pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m)
{
    uintptr_t ret = RET;
    RESOLVE(real_cond_wait, "pthread_cond_wait", "GLIBC_2.3.2");
    BLOCKING(C_COND_WAIT, c, real_cond_wait(c, m));
}

EXPORT int pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *t)
{
    uintptr_t ret = RET;
    RESOLVE(real_cond_timedwait, "pthread_cond_timedwait", "GLIBC_2.3.2");
    BLOCKING(C_COND_TIMEDWAIT, c, real_cond_timedwait(c, m, t));
}

EXPORT int pthread_cond_signal(pthread_cond_t *c)
{
    RESOLVE(real_cond_signal, "pthread_cond_signal", "GLIBC_2.3.2");
    int r = real_cond_signal(c);
    point(C_COND_SIGNAL, AFTER, c, RET);
    return r;
}

EXPORT int pthread_cond_broadcast(pthread_cond_t *c)
{
    RESOLVE(real_cond_broadcast, "pthread_cond_broadcast", "GLIBC_2.3.2");
    int r = real_cond_broadcast(c);
    point(C_COND_BROADCAST, AFTER, c, RET);
    return r;
}

EXPORT int sem_wait(sem_t *s)
{
    uintptr_t ret = RET;
    RESOLVE(real_sem_wait, "sem_wait", NULL);
    BLOCKING(C_SEM_WAIT, s, real_sem_wait(s));
}

EXPORT int sem_timedwait(sem_t *s, const struct timespec *t)
{
    uintptr_t ret = RET;
    RESOLVE(real_sem_timedwait, "sem_timedwait", NULL);
    BLOCKING(C_SEM_TIMEDWAIT, s, real_sem_timedwait(s, t));
}

EXPORT int sem_post(sem_t *s)
{
    RESOLVE(real_sem_post, "sem_post", NULL);
    int r = real_sem_post(s);
    point(C_SEM_POST, AFTER, s, RET);
    return r;
}

EXPORT int pthread_barrier_wait(pthread_barrier_t *b)
{
    uintptr_t ret = RET;
    RESOLVE(real_barrier_wait, "pthread_barrier_wait", NULL);
    BLOCKING(C_BARRIER_WAIT, b, real_barrier_wait(b));
}

struct start {
    void *(*fn)(void *);
    void *arg;
    int idx;
};

static void thread_done(void *unused)
{
    (void)unused;
    set_state(ST_DONE);
}

static void *trampoline(void *p)
{
    struct start s = *(struct start *)p;
    free(p);
    number_thread(s.idx);
    void *result = NULL;
    pthread_cleanup_push(thread_done, NULL);
    point(C_THREAD_START, BEFORE, (const void *)s.fn, (uintptr_t)s.fn);
    result = s.fn(s.arg);
    pthread_cleanup_pop(1);
    return result;
}

EXPORT int pthread_create(pthread_t *t, const pthread_attr_t *a, void *(*fn)(void *), void *arg)
{
    RESOLVE(real_create, "pthread_create", NULL);
    uintptr_t ret = RET;
    struct start *s = hdr && cfg.mode != MODE_OFF ? malloc(sizeof *s) : NULL;
    if (!s)
        return real_create(t, a, fn, arg);
    ensure_thread();
    s->fn = fn;
    s->arg = arg;
    s->idx = (int)atomic_fetch_add(&nthreads, 1);
    if (s->idx < MAX_THREADS) {
        /* Running from its creation on, so a PCT hold sees it at once. */
        atomic_store(&threads[s->idx].prio, initial_priority((uint32_t)s->idx));
        atomic_store(&threads[s->idx].state, ST_RUNNING);
    }
    int r = real_create(t, a, trampoline, s);
    if (r != 0) {
        if (s->idx < MAX_THREADS)
            atomic_store(&threads[s->idx].state, ST_DONE);
        free(s);
        return r;
    }
    point(C_CREATE, AFTER, (const void *)fn, ret);
    return r;
}

EXPORT int pthread_join(pthread_t t, void **res)
{
    uintptr_t ret = RET;
    RESOLVE(real_join, "pthread_join", NULL);
    BLOCKING(C_JOIN, (const void *)t, real_join(t, res));
}

EXPORT int nanosleep(const struct timespec *req, struct timespec *rem)
{
    uintptr_t ret = RET;
    RESOLVE(real_nanosleep, "nanosleep", NULL);
    BLOCKING(C_NANOSLEEP, req, real_nanosleep(req, rem));
}

EXPORT int clock_nanosleep(clockid_t c, int flags, const struct timespec *req, struct timespec *rem)
{
    uintptr_t ret = RET;
    RESOLVE(real_clock_nanosleep, "clock_nanosleep", NULL);
    BLOCKING(C_CLOCK_NANOSLEEP, req, real_clock_nanosleep(c, flags, req, rem));
}

EXPORT int usleep(useconds_t us)
{
    uintptr_t ret = RET;
    RESOLVE(real_usleep, "usleep", NULL);
    BLOCKING(C_USLEEP, NULL, real_usleep(us));
}

EXPORT int sched_yield(void)
{
    RESOLVE(real_yield, "sched_yield", NULL);
    point(C_YIELD, BEFORE, NULL, RET);
    return real_yield();
}

/* ---- configuration and start ---- */
static const char *field(const char *conf, const char *key)
{
    size_t k = strlen(key);
    for (const char *p = conf; (p = strstr(p, key)) != NULL; p++)
        if ((p == conf || p[-1] == ' ') && p[k] == '=')
            return p + k + 1;
    return NULL;
}

static void load_list(void)
{
    if (!hdr->list_len || hdr->list_off + hdr->list_len > map_size)
        return;
    const char *p = map + hdr->list_off, *end = p + hdr->list_len;
    while (p < end && nlisted < MAX_LISTED) {
        struct listed l;
        l.pidx = (uint32_t)parse_num(p, &p, 10);
        p++;
        l.tidx = (uint32_t)parse_num(p, &p, 10);
        p++;
        l.callno = (uint32_t)parse_num(p, &p, 10);
        p++;
        l.action = (uint32_t)parse_num(p, &p, 10);
        p++;
        l.us = (uint32_t)parse_num(p, &p, 10);
        while (p < end && *p != '\n')
            p++;
        p++;
        listed[nlisted++] = l; /* qualify writes them sorted */
    }
}

static void after_fork_child(void)
{
    if (!hdr)
        return;
    pidx = atomic_fetch_add(&hdr->procs, 1);
    /* Only the forking thread lives on in the child. */
    uint32_t n = atomic_load(&nthreads);
    for (uint32_t i = 0; i < n && i < MAX_THREADS; i++)
        if ((int)i != t_idx)
            atomic_store(&threads[i].state, ST_DONE);
    nmaps = 0;
    emitf("L %u %ld (fork)\n", pidx, (long)getpid());
}

__attribute__((constructor)) static void perturb_init(void)
{
    resolve_all();
    const char *conf = getenv("QUALIFY_PERTURB");
    if (!conf || strncmp(conf, "v1 ", 3) != 0)
        return;
    const char *v;
    if ((v = field(conf, "mode"))) {
        if (!strncmp(v, "count", 5))
            cfg.mode = MODE_COUNT;
        else if (!strncmp(v, "pct", 3))
            cfg.mode = MODE_PCT;
        else if (!strncmp(v, "noise", 5))
            cfg.mode = MODE_NOISE;
        else if (!strncmp(v, "list", 4))
            cfg.mode = MODE_LIST;
    }
    cfg.seed = (v = field(conf, "seed")) ? parse_num(v, NULL, 16) : 0;
    cfg.depth = (v = field(conf, "depth")) ? (uint32_t)parse_num(v, NULL, 10) : 3;
    cfg.prob = (v = field(conf, "prob")) ? (uint32_t)parse_num(v, NULL, 10) : 100;
    cfg.maxdelay = (v = field(conf, "maxdelay")) ? (uint32_t)parse_num(v, NULL, 10) : 100;
    cfg.hold = (v = field(conf, "hold")) ? (uint32_t)parse_num(v, NULL, 10) : 1000;
    cfg.budget = (v = field(conf, "budget")) ? (int64_t)parse_num(v, NULL, 10) : 1000000;
    if (cfg.maxdelay == 0)
        cfg.maxdelay = 1;
    if ((v = field(conf, "cp"))) {
        const char *p = v;
        while (cfg.ncp < MAX_CP && *p >= '0' && *p <= '9') {
            cfg.cp[cfg.ncp++] = parse_num(p, &p, 10);
            if (*p != ',')
                break;
            p++;
        }
    }
    const char *log = field(conf, "log");
    if (!log)
        return;
    char path[512];
    size_t n = 0;
    while (log[n] && log[n] != ' ' && n < sizeof path - 1) {
        path[n] = log[n];
        n++;
    }
    path[n] = 0;
    int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return;
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_size < HEADER_BYTES) {
        close(fd);
        return;
    }
    void *m = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (m == MAP_FAILED)
        return;
    /* Only the pages written are wanted: no readahead of the file's holes. */
    madvise(m, (size_t)st.st_size, MADV_RANDOM);
    struct header *h = m;
    if (memcmp(h->magic, MAGIC, sizeof MAGIC) != 0 || h->size != (uint64_t)st.st_size ||
        h->rec_off < HEADER_BYTES || h->rec_off > (uint64_t)st.st_size) {
        munmap(m, (size_t)st.st_size);
        return;
    }
    map = m;
    map_size = (size_t)st.st_size;
    pidx = atomic_fetch_add(&h->procs, 1);
    hdr = h;
    if (cfg.mode == MODE_LIST)
        load_list();
    char exe[400];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[len > 0 ? len : 0] = 0;
    emitf("L %u %ld %s\n", pidx, (long)getpid(), exe);
    number_thread((int)atomic_fetch_add(&nthreads, 1));
    pthread_atfork(NULL, NULL, after_fork_child);
}
