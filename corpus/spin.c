/* spin: drives `livelock` with --progress output (and timeout_kind `busy` without it).
 *
 * Usage: spin [SECONDS]
 *
 * Burns one CPU in a tight loop and prints nothing. With SECONDS > 0 it stops after that many
 * seconds of wall time and exits 0; without an argument (or 0) it spins forever.
 */
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
    double end = now() + seconds;
    volatile unsigned long x = 0;
    for (;;) {
        for (int i = 0; i < 1000000; i++)
            x += i;
        if (seconds > 0 && now() >= end)
            return 0;
    }
}
