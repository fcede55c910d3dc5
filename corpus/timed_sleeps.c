/* timed_sleeps: a quiet program that waits only with timeouts; it must NOT be called a deadlock,
 * however short the stall window (expected outcome `ok`; past a deadline, timeout_kind `idle`).
 *
 * Usage: timed_sleeps [SECONDS]
 *
 * For SECONDS (default 4) of wall time, three threads wait with timeouts and do nothing else:
 *   - one in nanosleep (500 ms at a time),
 *   - one in pthread_cond_timedwait on a condition nobody signals (futex with a timeout),
 *   - one in poll() on a pipe nobody writes, with a 700 ms timeout;
 * the main thread sleeps in clock_nanosleep until the end, then joins the threads and exits 0.
 * No output until the very end ("slept N s").
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static struct timespec deadline; /* CLOCK_MONOTONIC */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv;

/* Nanoseconds left until the deadline (0 when past it). */
static long long remaining_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    long long left = (deadline.tv_sec - t.tv_sec) * 1000000000LL + (deadline.tv_nsec - t.tv_nsec);
    return left > 0 ? left : 0;
}

static int past_deadline(void)
{
    return remaining_ns() == 0;
}

/* A timeout of at most `max_ns`, never past the deadline. */
static long long slice_ns(long long max_ns)
{
    long long left = remaining_ns();
    return left < max_ns ? left : max_ns;
}

static void *sleeper(void *arg)
{
    (void)arg;
    while (!past_deadline()) {
        struct timespec half = {0, (long)slice_ns(500 * 1000 * 1000)};
        nanosleep(&half, NULL);
    }
    return NULL;
}

static void *cond_waiter(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&mu);
    while (!past_deadline()) {
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        t.tv_nsec += (long)slice_ns(300 * 1000 * 1000);
        if (t.tv_nsec >= 1000000000) {
            t.tv_sec++;
            t.tv_nsec -= 1000000000;
        }
        int rc = pthread_cond_timedwait(&cv, &mu, &t);
        if (rc != 0 && rc != ETIMEDOUT)
            break;
    }
    pthread_mutex_unlock(&mu);
    return NULL;
}

static void *poller(void *arg)
{
    (void)arg;
    int p[2];
    if (pipe(p) != 0)
        return NULL;
    struct pollfd fd = {.fd = p[0], .events = POLLIN};
    while (!past_deadline())
        poll(&fd, 1, (int)((slice_ns(700 * 1000 * 1000) + 999999) / 1000000));
    close(p[0]);
    close(p[1]);
    return NULL;
}

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 4;
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&cv, &attr);

    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_sec += (time_t)seconds;
    deadline.tv_nsec += (long)((seconds - (time_t)seconds) * 1e9);
    if (deadline.tv_nsec >= 1000000000) {
        deadline.tv_sec++;
        deadline.tv_nsec -= 1000000000;
    }
    pthread_t t[3];
    pthread_create(&t[0], NULL, sleeper, NULL);
    pthread_create(&t[1], NULL, cond_waiter, NULL);
    pthread_create(&t[2], NULL, poller, NULL);
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &deadline, NULL) == EINTR)
        ;
    for (int i = 0; i < 3; i++)
        pthread_join(t[i], NULL);
    printf("slept %g s\n", seconds);
    return 0;
}
