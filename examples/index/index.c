/* index: builds an in-memory index of N records of 1 KiB each (every page touched), then looks
 * up a few of them. Memory grows linearly with N, so under a fixed ceiling there is a largest N
 * that fits: the boundary `qualify run` searches for.
 * Usage: index --records N     prints "indexed N records"
 *        index --check         small self-test (the functional check) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RECORD 1024

static int build(long n) {
    char **recs = malloc(sizeof(char *) * (size_t)(n > 0 ? n : 1));
    if (!recs) { perror("malloc"); return 2; }
    for (long i = 0; i < n; i++) {
        recs[i] = malloc(RECORD);
        if (!recs[i]) { perror("malloc"); return 2; }
        memset(recs[i], (int)(i & 0xff), RECORD);
        snprintf(recs[i], 32, "record-%ld", i);
    }
    for (long i = 0; i < n; i += n / 7 + 1)
        if (strncmp(recs[i], "record-", 7) != 0) { fprintf(stderr, "corrupt record %ld\n", i); return 1; }
    printf("indexed %ld records\n", n);
    return 0;
}

int main(int argc, char **argv) {
    long n = 1000;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--check")) return build(100);
        else if (!strcmp(argv[i], "--records") && i + 1 < argc) n = atol(argv[++i]);
        else { fprintf(stderr, "usage: index --records N | --check\n"); return 2; }
    }
    return build(n);
}
