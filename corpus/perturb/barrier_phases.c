/* barrier_phases: correct phased computation (no bug): four threads run 50 phases; in each
 * phase every thread adds to its own slot, then all meet at a barrier, then thread 0 checks
 * the phase's total under a read-write lock the others read. Exits 0 when every phase added
 * up, 1 otherwise. Under perturbation it is slower, never stuck and never wrong.
 *
 * Usage: barrier_phases
 */
#include <pthread.h>
#include <stdio.h>

#define THREADS 4
#define PHASES 50

static pthread_barrier_t barrier;
static pthread_rwlock_t totals = PTHREAD_RWLOCK_INITIALIZER;
static long slot[THREADS];
static long checked, bad;

static void *worker(void *arg)
{
    long me = (long)arg;
    for (long phase = 1; phase <= PHASES; phase++) {
        slot[me] += phase;
        pthread_barrier_wait(&barrier);
        if (me == 0) {
            pthread_rwlock_wrlock(&totals);
            long sum = 0;
            for (int i = 0; i < THREADS; i++)
                sum += slot[i];
            if (sum != THREADS * phase * (phase + 1) / 2)
                bad++;
            checked++;
            pthread_rwlock_unlock(&totals);
        } else {
            pthread_rwlock_rdlock(&totals);
            (void)checked;
            pthread_rwlock_unlock(&totals);
        }
        pthread_barrier_wait(&barrier);
    }
    return NULL;
}

int main(void)
{
    pthread_t t[THREADS];
    pthread_barrier_init(&barrier, NULL, THREADS);
    for (long i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    if (bad != 0 || checked != PHASES) {
        fprintf(stderr, "barrier_phases: %ld bad of %ld phases\n", bad, checked);
        return 1;
    }
    printf("barrier_phases: %ld phases\n", checked);
    return 0;
}
