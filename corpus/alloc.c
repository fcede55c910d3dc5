/* alloc: drives `oom_killed` (run it under a memory ceiling below MIB) and `memory_pressure`.
 *
 * Usage: alloc MIB [HOLD_SECONDS]
 *
 * Allocates MIB MiB in 16 MiB chunks, writing one byte into every page so the memory is really
 * resident (not just reserved), pausing 20 ms between chunks like a program that builds up its
 * data. Reports progress on stderr. When everything is allocated it holds the memory for
 * HOLD_SECONDS (default 0), prints "allocated MIB MiB" on stdout and exits 0.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define CHUNK_MIB 16

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: alloc MIB [HOLD_SECONDS]\n");
        return 2;
    }
    long total = atol(argv[1]);
    double hold = argc > 2 ? atof(argv[2]) : 0;
    long page = sysconf(_SC_PAGESIZE);
    struct timespec pause = {0, 20 * 1000 * 1000};
    long done = 0;
    while (done < total) {
        long mib = total - done < CHUNK_MIB ? total - done : CHUNK_MIB;
        size_t bytes = (size_t)mib << 20;
        char *p = malloc(bytes);
        if (p == NULL) {
            fprintf(stderr, "alloc: malloc of %ld MiB failed after %ld MiB\n", mib, done);
            return 1;
        }
        for (size_t off = 0; off < bytes; off += page)
            p[off] = (char)(off / page);
        done += mib;
        fprintf(stderr, "alloc: %ld MiB resident\n", done);
        nanosleep(&pause, NULL);
    }
    if (hold > 0) {
        struct timespec h = {(time_t)hold, (long)((hold - (time_t)hold) * 1e9)};
        nanosleep(&h, NULL);
    }
    printf("allocated %ld MiB\n", total);
    return 0;
}
