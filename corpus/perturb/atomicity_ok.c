/* atomicity_ok: the twin of atomicity.c: the read and the write of a deposit happen under one
 * lock, so no schedule loses an update.
 *
 * Usage: atomicity_ok
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
        fprintf(stderr, "atomicity_ok: lost update, balance %ld\n", balance);
        return 1;
    }
    printf("atomicity_ok: balance %ld\n", balance);
    return 0;
}
