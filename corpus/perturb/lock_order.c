/* lock_order: a lock-order inversion with a narrow window (bug class: deadlock).
 *
 * Usage: lock_order
 *
 * Thread A takes m1 then m2; thread B, started after A, takes m2 then m1. Each holds its first
 * lock for a few instructions only, and B is usually still being created when A is done, so
 * bare runs almost never deadlock. Delaying A between its two locks (or B's start less) makes
 * them meet: both end in untimed futex waits, a deadlock. Twin: lock_order_ok.c.
 */
#include <pthread.h>
#include <stdio.h>

static pthread_mutex_t m1 = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t m2 = PTHREAD_MUTEX_INITIALIZER;
static long shared;

static void *a(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&m1);
    shared++;
    pthread_mutex_lock(&m2);
    shared++;
    pthread_mutex_unlock(&m2);
    pthread_mutex_unlock(&m1);
    return NULL;
}

static void *b(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&m2);
    shared++;
    pthread_mutex_lock(&m1);
    shared++;
    pthread_mutex_unlock(&m1);
    pthread_mutex_unlock(&m2);
    return NULL;
}

int main(void)
{
    pthread_t ta, tb;
    pthread_create(&ta, NULL, a, NULL);
    pthread_create(&tb, NULL, b, NULL);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    printf("lock_order: %ld\n", shared);
    return 0;
}
