/* lockorder: drives `deadlock` (lock-order inversion between two threads).
 *
 * Usage: lockorder
 *
 * Thread A locks m1 then m2, thread B locks m2 then m1; a barrier makes sure each holds its
 * first lock before reaching for the second, so the deadlock is certain, not a race. The main
 * thread then waits in pthread_join. Every thread ends up in an untimed futex wait
 * (FUTEX_WAIT without timeout) that only the process itself could release. Never exits.
 */
#include <pthread.h>
#include <stdio.h>

static pthread_mutex_t m1 = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t m2 = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t both_hold_first;

static void *worker(void *arg)
{
    int forward = arg != NULL;
    pthread_mutex_t *first = forward ? &m1 : &m2;
    pthread_mutex_t *second = forward ? &m2 : &m1;
    pthread_mutex_lock(first);
    pthread_barrier_wait(&both_hold_first);
    pthread_mutex_lock(second); /* never returns */
    pthread_mutex_unlock(second);
    pthread_mutex_unlock(first);
    return NULL;
}

int main(void)
{
    pthread_t a, b;
    pthread_barrier_init(&both_hold_first, NULL, 2);
    pthread_create(&a, NULL, worker, (void *)1);
    pthread_create(&b, NULL, worker, NULL);
    fprintf(stderr, "lockorder: two threads taking m1/m2 in opposite order\n");
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    puts("unreachable: no deadlock");
    return 0;
}
