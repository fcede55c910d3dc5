/* oversubscribe: drives the `oversubscribed` flag (and `cpu_throttled` under --cpus).
 *
 * Usage: oversubscribe THREADS SECONDS
 *
 * Starts THREADS threads that each spin on the CPU for SECONDS of wall time, joins them, prints
 * "THREADS threads spun SECONDS s" and exits 0. With more threads than allowed CPUs the run
 * queue wait of each thread exceeds its run time.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double seconds;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *burn(void *arg)
{
    (void)arg;
    double end = now() + seconds;
    volatile unsigned long x = 0;
    while (now() < end)
        for (int i = 0; i < 100000; i++)
            x += i;
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: oversubscribe THREADS SECONDS\n");
        return 2;
    }
    int n = atoi(argv[1]);
    seconds = atof(argv[2]);
    pthread_t *t = calloc(n, sizeof *t);
    for (int i = 0; i < n; i++)
        if (pthread_create(&t[i], NULL, burn, NULL) != 0) {
            fprintf(stderr, "oversubscribe: could only start %d threads\n", i);
            n = i;
            break;
        }
    for (int i = 0; i < n; i++)
        pthread_join(t[i], NULL);
    printf("%d threads spun %g s\n", n, seconds);
    return 0;
}
