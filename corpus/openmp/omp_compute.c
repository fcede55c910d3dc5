/* omp_compute: one thread computes while the other waits at a barrier (never a deadlock).
 *
 * Usage: OMP_WAIT_POLICY=active ./omp_compute SECONDS [PRINT_MS]
 *
 * Thread 0 computes for SECONDS in registers (no memory changes; printing a dot every PRINT_MS
 * milliseconds when given), then reaches the barrier where thread 1 has been spinning all
 * along. Ends `ok` with "computed" on stdout. Cut short by a deadline, the evidence is
 * ambiguous (one thread in a synchronization call, one computing): a timeout whose kind says
 * so, never a deadlock.
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    double secs = argc > 1 ? atof(argv[1]) : 5;
    long print_ms = argc > 2 ? atol(argv[2]) : 0;
    double result = 0;
    #pragma omp parallel num_threads(2)
    {
        if (omp_get_thread_num() == 0) {
            double x = 1, t0 = now(), last = t0;
            while (now() - t0 < secs) {
                for (int i = 0; i < 100000; i++)
                    x = x * 1.0000001 + 1e-9;
                if (print_ms > 0 && (now() - last) * 1000 >= print_ms) {
                    putchar('.');
                    fflush(stdout);
                    last = now();
                }
            }
            result = x;
        }
        #pragma omp barrier
    }
    printf("computed %s\n", result > 0 ? "" : "(?)");
    return 0;
}
