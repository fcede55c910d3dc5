/* sumsq: sum of squares of 1..n split across worker threads, each summing its own slice.
 * Usage: sumsq --threads T --n N      prints "sum=<value>"
 *        sumsq --check                 self-test against the closed form (the functional check)
 * Correct and safe at every thread count: the artifact that qualifies for `trial`. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct { unsigned long long lo, hi, sum; } slice_t;

static void *work(void *arg) {
    slice_t *s = arg;
    unsigned long long acc = 0;
    for (unsigned long long i = s->lo; i <= s->hi; i++) acc += i * i;
    s->sum = acc;
    return NULL;
}

static unsigned long long sumsq(unsigned long long n, int threads) {
    slice_t *sl = calloc(threads, sizeof *sl);
    pthread_t *t = calloc(threads, sizeof *t);
    if (!sl || !t) { perror("calloc"); exit(2); }
    unsigned long long per = n / threads, lo = 1;
    for (int i = 0; i < threads; i++) {
        sl[i].lo = lo;
        sl[i].hi = (i == threads - 1) ? n : lo + per - 1;
        lo = sl[i].hi + 1;
        pthread_create(&t[i], NULL, work, &sl[i]);
    }
    unsigned long long total = 0;
    for (int i = 0; i < threads; i++) { pthread_join(t[i], NULL); total += sl[i].sum; }
    free(sl); free(t);
    return total;
}

int main(int argc, char **argv) {
    int threads = 1; unsigned long long n = 1000;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--check")) {
            int bad = 0;
            for (int t = 1; t <= 8; t *= 2)
                for (unsigned long long m = 1; m <= 100000; m *= 10) {
                    unsigned long long want = m * (m + 1) * (2 * m + 1) / 6, got = sumsq(m, t);
                    if (got != want) { printf("FAIL n=%llu threads=%d: %llu != %llu\n", m, t, got, want); bad = 1; }
                }
            puts(bad ? "check failed" : "check passed");
            return bad;
        } else if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--n") && i + 1 < argc) n = strtoull(argv[++i], NULL, 10);
        else { fprintf(stderr, "usage: sumsq --threads T --n N | --check\n"); return 2; }
    }
    if (threads < 1) threads = 1;
    printf("sum=%llu\n", sumsq(n, threads));
    return 0;
}
