/* cond_release: never a deadlock — an untimed wait that a timed thread releases.
 *
 * Usage: cond_release SECONDS
 *
 * The main thread waits on a condition variable without a timeout (an untimed futex wait); a
 * second thread sleeps SECONDS in nanosleep, then signals; a third ticks every 100 ms. For
 * SECONDS the tree looks stuck (one untimed wait, nothing moving but the ticker), then it ends
 * `ok` (a condition variable has no owner: there is no cycle to find).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static int ready;
static double seconds = 3;

static void *releaser(void *arg)
{
    (void)arg;
    struct timespec ts = {(time_t)seconds, (long)((seconds - (time_t)seconds) * 1e9)};
    nanosleep(&ts, NULL);
    pthread_mutex_lock(&m);
    ready = 1;
    pthread_cond_signal(&c);
    pthread_mutex_unlock(&m);
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
    if (argc > 1)
        seconds = atof(argv[1]);
    pthread_t r, t;
    pthread_create(&t, NULL, ticker, NULL);
    pthread_create(&r, NULL, releaser, NULL);
    pthread_mutex_lock(&m);
    while (!ready)
        pthread_cond_wait(&c, &m);
    pthread_mutex_unlock(&m);
    printf("released after %.1f s\n", seconds);
    return 0;
}
