/* Work of known complexity, for qualify's performance-model tests and bench/perf.sh.
 *
 *   ./complexity linear N     N steps of a 64-bit LCG                      O(n)
 *   ./complexity nlogn N      merge sort of N pseudo-random integers       O(n log n)
 *   ./complexity quadratic N  N*N steps of a dependent recurrence          O(n^2)
 *   ./complexity cubic N      N*N*N steps of a dependent recurrence        O(n^3)
 *   ./complexity insertion N  insertion sort of N pseudo-random integers   O(n^2), memory-bound
 *   ./complexity MODE N S     the same after S LCG steps of start-up cost (bench/model_accuracy.sh
 *                             makes it comparable to the smallest cell, as a real program's is)
 *
 * Every mode prints a checksum so the compiler cannot drop the work, and `work: <ops>` so a
 * regex metric can read the operation count. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t lcg(uint64_t x) { return x * 6364136223846793005ULL + 1442695040888963407ULL; }

static void merge_sort(uint32_t *a, uint32_t *tmp, size_t n) {
    if (n < 2) return;
    size_t h = n / 2;
    merge_sort(a, tmp, h);
    merge_sort(a + h, tmp, n - h);
    size_t i = 0, j = h, k = 0;
    while (i < h && j < n) tmp[k++] = a[i] <= a[j] ? a[i++] : a[j++];
    while (i < h) tmp[k++] = a[i++];
    while (j < n) tmp[k++] = a[j++];
    memcpy(a, tmp, n * sizeof *a);
}

int main(int argc, char **argv) {
    if (argc != 3 && argc != 4) {
        fprintf(stderr, "usage: %s linear|nlogn|quadratic|cubic|insertion N [STARTUP]\n", argv[0]);
        return 2;
    }
    const char *mode = argv[1];
    long n = atol(argv[2]);
    if (n < 1) {
        fprintf(stderr, "N must be a positive integer\n");
        return 2;
    }
    uint64_t sum = 0, x = 42;
    long startup = argc == 4 ? atol(argv[3]) : 0;
    for (long i = 0; i < startup; i++) x = lcg(x);
    sum += x & 1;
    double ops = 0;
    if (strcmp(mode, "linear") == 0) {
        for (long i = 0; i < n; i++) {
            x = lcg(x);
            sum += x >> 33;
        }
        ops = (double)n;
    } else if (strcmp(mode, "nlogn") == 0) {
        uint32_t *a = malloc(n * sizeof *a), *tmp = malloc(n * sizeof *tmp);
        if (!a || !tmp) return 3;
        for (long i = 0; i < n; i++) a[i] = (uint32_t)((x = lcg(x)) >> 32);
        merge_sort(a, tmp, (size_t)n);
        for (long i = 0; i < n; i += 97) sum += a[i] * (uint64_t)i;
        free(a);
        free(tmp);
        ops = (double)n;
        for (long m = n; m > 1; m /= 2) ops += (double)n;
    } else if (strcmp(mode, "quadratic") == 0) {
        for (long i = 0; i < n; i++)
            for (long j = 0; j < n; j++) x = lcg(x ^ (uint64_t)j);
        sum = x;
        ops = (double)n * n;
    } else if (strcmp(mode, "cubic") == 0) {
        for (long i = 0; i < n; i++)
            for (long j = 0; j < n; j++)
                for (long k = 0; k < n; k++) x = lcg(x ^ (uint64_t)(j + k));
        sum = x;
        ops = (double)n * n * n;
    } else if (strcmp(mode, "insertion") == 0) {
        uint32_t *a = malloc(n * sizeof *a);
        if (!a) return 3;
        for (long i = 0; i < n; i++) a[i] = (uint32_t)((x = lcg(x)) >> 32);
        for (long i = 1; i < n; i++) {
            uint32_t v = a[i];
            long j = i - 1;
            while (j >= 0 && a[j] > v) {
                a[j + 1] = a[j];
                j--;
            }
            a[j + 1] = v;
        }
        for (long i = 0; i < n; i += 97) sum += a[i] * (uint64_t)i;
        free(a);
        ops = (double)n * n / 4;
    } else {
        fprintf(stderr, "unknown mode %s: expected linear, nlogn, quadratic, cubic or insertion\n", mode);
        return 2;
    }
    printf("checksum: %llu\nwork: %.0f\n", (unsigned long long)sum, ops);
    return 0;
}
