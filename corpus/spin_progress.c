/* spin_progress: a busy program that makes visible progress, so it must NOT be a livelock
 * under --progress output (a deadline gives `timeout` with timeout_kind `progressing`).
 *
 * Usage: spin_progress [SECONDS] [INTERVAL_MS]
 *
 * Burns one CPU and prints "progress N" to stdout (flushed) every INTERVAL_MS milliseconds
 * (default 200). With SECONDS > 0 it exits 0 after that many seconds; otherwise runs forever.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 0;
    double interval = (argc > 2 ? atof(argv[2]) : 200) / 1000.0;
    double start = now(), next = start + interval;
    unsigned long n = 0;
    volatile unsigned long x = 0;
    for (;;) {
        for (int i = 0; i < 100000; i++)
            x += i;
        double t = now();
        if (t >= next) {
            printf("progress %lu\n", ++n);
            fflush(stdout);
            next = t + interval;
        }
        if (seconds > 0 && t - start >= seconds)
            return 0;
    }
}
