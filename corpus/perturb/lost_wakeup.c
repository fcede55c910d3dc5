/* lost_wakeup: a lost wake-up (bug class: missed signal, then a deadlock).
 *
 * Usage: lost_wakeup
 *
 * The consumer tests `ready` before taking the lock and then waits on the condition variable
 * without testing again; the producer, started after it, sets `ready` and signals under the
 * lock. If the producer signals between the consumer's test and its wait, the signal is lost
 * and the consumer waits forever (an untimed wait nothing will release: a deadlock). Bare runs
 * almost never hit the window. Twin: lost_wakeup_ok.c.
 */
#include <pthread.h>
#include <stdio.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static volatile int ready;

static void *consumer(void *arg)
{
    (void)arg;
    if (!ready) {
        pthread_mutex_lock(&lock);
        pthread_cond_wait(&cond, &lock);
        pthread_mutex_unlock(&lock);
    }
    return NULL;
}

static void *producer(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&lock);
    ready = 1;
    pthread_cond_signal(&cond);
    pthread_mutex_unlock(&lock);
    return NULL;
}

int main(void)
{
    pthread_t c, p;
    pthread_create(&c, NULL, consumer, NULL);
    pthread_create(&p, NULL, producer, NULL);
    pthread_join(c, NULL);
    pthread_join(p, NULL);
    puts("lost_wakeup: consumed");
    return 0;
}
