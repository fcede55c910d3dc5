/* transfer: T workers move money around a ring of T accounts. Worker i locks its own account,
 * then its neighbour's (i+1 mod T) — the textbook lock-order bug. One worker never contends;
 * from two workers on, every worker holds its own lock while waiting for its neighbour's (a
 * start barrier in the first round makes the circular wait certain rather than likely).
 * Usage: transfer --threads T --rounds R    prints the (conserved) total balance
 *        transfer --check                    single-threaded self-test (the functional check) */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct { pthread_mutex_t lock; long balance; } account_t;
static account_t *accounts;
static int nthreads, rounds;
static pthread_barrier_t start_line; /* every worker holds its own lock before the first transfer */

static void *worker(void *arg) {
    int me = (int)(long)arg, next = (me + 1) % nthreads;
    for (int r = 0; r < rounds; r++) {
        pthread_mutex_lock(&accounts[me].lock);
        if (r == 0) pthread_barrier_wait(&start_line);
        usleep(1000); /* "validate the transfer" while holding the first lock */
        pthread_mutex_lock(&accounts[next].lock);
        accounts[me].balance -= 1;
        accounts[next].balance += 1;
        pthread_mutex_unlock(&accounts[next].lock);
        pthread_mutex_unlock(&accounts[me].lock);
    }
    return NULL;
}

static long run(int threads, int r) {
    nthreads = threads; rounds = r;
    accounts = calloc(threads, sizeof *accounts);
    if (!accounts) { perror("calloc"); exit(2); }
    for (int i = 0; i < threads; i++) { pthread_mutex_init(&accounts[i].lock, NULL); accounts[i].balance = 100; }
    if (threads == 1) { /* a single account transfers to itself: nothing to lock twice */
        free(accounts);
        return 100;
    }
    pthread_t t[256];
    pthread_barrier_init(&start_line, NULL, (unsigned)threads);
    for (long i = 0; i < threads; i++) pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < threads; i++) pthread_join(t[i], NULL);
    long total = 0;
    for (int i = 0; i < threads; i++) total += accounts[i].balance;
    free(accounts);
    return total;
}

int main(int argc, char **argv) {
    int threads = 1, r = 10;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--check")) {
            long total = run(1, 100);
            printf("total=%ld %s\n", total, total == 100 ? "check passed" : "check failed");
            return total != 100;
        } else if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--rounds") && i + 1 < argc) r = atoi(argv[++i]);
        else { fprintf(stderr, "usage: transfer --threads T --rounds R | --check\n"); return 2; }
    }
    if (threads < 1 || threads > 256) { fprintf(stderr, "threads must be 1..256\n"); return 2; }
    printf("total=%ld\n", run(threads, r));
    return 0;
}
