/* lock_order_ok: the twin of lock_order.c: both threads take m1 then m2 (one global order),
 * so no schedule deadlocks. Under perturbation it is slower, never stuck.
 *
 * Usage: lock_order_ok
 */
#include <pthread.h>
#include <stdio.h>

static pthread_mutex_t m1 = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t m2 = PTHREAD_MUTEX_INITIALIZER;
static long shared;

static void *worker(void *arg)
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

int main(void)
{
    pthread_t ta, tb;
    pthread_create(&ta, NULL, worker, NULL);
    pthread_create(&tb, NULL, worker, NULL);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    printf("lock_order_ok: %ld\n", shared);
    return shared == 4 ? 0 : 1;
}
