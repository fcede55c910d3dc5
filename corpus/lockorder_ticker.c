/* lockorder_ticker: drives `deadlock` by a wait-for cycle while another thread keeps ticking.
 *
 * Usage: lockorder_ticker [normal|robust|pi] [late]
 *
 * Thread A locks m1 then m2, thread B locks m2 then m1 (a barrier makes the inversion certain;
 * with `late`, each sleeps 300 ms between its locks instead, as real code works between them,
 * so the workers enter their last waits after the tree has gone quiet);
 * a third thread wakes every 100 ms in usleep forever, so the tree is never entirely asleep and
 * the all-threads-blocked rule cannot fire. The main thread joins A. The mutexes are ordinary
 * (default), robust (PTHREAD_MUTEX_ROBUST: the futex word holds the owner's TID) or
 * priority-inheritance (PTHREAD_PRIO_INHERIT: the waiters sleep in FUTEX_LOCK_PI). qualify reads
 * the owners from the process's memory and names the cycle. Never exits.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static pthread_mutex_t m1, m2;
static pthread_barrier_t both_hold_first;
static int late;

static void *worker(void *arg)
{
    int forward = arg != NULL;
    pthread_mutex_t *first = forward ? &m1 : &m2;
    pthread_mutex_t *second = forward ? &m2 : &m1;
    pthread_mutex_lock(first);
    if (late)
        usleep(300 * 1000);
    else
        pthread_barrier_wait(&both_hold_first);
    pthread_mutex_lock(second); /* never returns */
    pthread_mutex_unlock(second);
    pthread_mutex_unlock(first);
    return NULL;
}

static void *ticker(void *arg)
{
    (void)arg;
    for (;;)
        usleep(100 * 1000);
    return NULL;
}

int main(int argc, char **argv)
{
    const char *kind = argc > 1 ? argv[1] : "normal";
    late = argc > 2 && strcmp(argv[2], "late") == 0;
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    if (strcmp(kind, "robust") == 0)
        pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST);
    else if (strcmp(kind, "pi") == 0)
        pthread_mutexattr_setprotocol(&attr, PTHREAD_PRIO_INHERIT);
    else if (strcmp(kind, "normal") != 0) {
        fprintf(stderr, "lockorder_ticker: unknown mutex kind %s (normal, robust, pi)\n", kind);
        return 2;
    }
    pthread_mutex_init(&m1, &attr);
    pthread_mutex_init(&m2, &attr);
    pthread_barrier_init(&both_hold_first, NULL, 2);
    pthread_t a, b, t;
    pthread_create(&t, NULL, ticker, NULL);
    pthread_create(&a, NULL, worker, (void *)1);
    pthread_create(&b, NULL, worker, NULL);
    fprintf(stderr, "lockorder_ticker: %s mutexes m1=%p m2=%p taken in opposite order\n", kind,
            (void *)&m1, (void *)&m2);
    pthread_join(a, NULL);
    puts("unreachable: no deadlock");
    return 0;
}
