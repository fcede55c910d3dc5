/* atomicity: an atomicity violation (bug class: lost update).
 *
 * Usage: atomicity
 *
 * Two threads each deposit once into a balance: read it under the lock, release the lock,
 * write back the read value plus one under the lock again. Each step is locked, the whole is
 * not: when the second thread reads between the first's read and write, one deposit is lost
 * and the program exits 1 ("lost update"). The second thread starts after the first, so bare
 * runs rarely interleave. Twin: atomicity_ok.c.
 */
#include <pthread.h>
#include <stdio.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long balance;

static void *deposit(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&lock);
    long read = balance;
    pthread_mutex_unlock(&lock);
    pthread_mutex_lock(&lock);
    balance = read + 1;
    pthread_mutex_unlock(&lock);
    return NULL;
}

int main(void)
{
    pthread_t t1, t2;
    pthread_create(&t1, NULL, deposit, NULL);
    pthread_create(&t2, NULL, deposit, NULL);
    pthread_join(t1, NULL);
    pthread_join(t2, NULL);
    if (balance != 2) {
        fprintf(stderr, "atomicity: lost update, balance %ld after two deposits\n", balance);
        return 1;
    }
    printf("atomicity: balance %ld\n", balance);
    return 0;
}
