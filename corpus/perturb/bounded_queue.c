/* bounded_queue: a correct bounded queue (no bug): two producers and two consumers pass 2,000
 * items through an 8-slot ring guarded by one mutex and two condition variables, each wait in
 * a loop. Exits 0 when every item arrived exactly once (the sum checks it), 1 otherwise. Under
 * perturbation it is slower, never stuck and never wrong.
 *
 * Usage: bounded_queue
 */
#include <pthread.h>
#include <stdio.h>

#define SLOTS 8
#define PER_PRODUCER 1000
#define PRODUCERS 2
#define CONSUMERS 2

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t not_full = PTHREAD_COND_INITIALIZER;
static pthread_cond_t not_empty = PTHREAD_COND_INITIALIZER;
static long ring[SLOTS];
static int head, count, done_producers;
static long consumed_sum, consumed_items;

static void *producer(void *arg)
{
    long base = (long)arg * PER_PRODUCER;
    for (long i = 1; i <= PER_PRODUCER; i++) {
        pthread_mutex_lock(&lock);
        while (count == SLOTS)
            pthread_cond_wait(&not_full, &lock);
        ring[(head + count) % SLOTS] = base + i;
        count++;
        pthread_cond_signal(&not_empty);
        pthread_mutex_unlock(&lock);
    }
    pthread_mutex_lock(&lock);
    done_producers++;
    pthread_cond_broadcast(&not_empty);
    pthread_mutex_unlock(&lock);
    return NULL;
}

static void *consumer(void *arg)
{
    (void)arg;
    for (;;) {
        pthread_mutex_lock(&lock);
        while (count == 0 && done_producers < PRODUCERS)
            pthread_cond_wait(&not_empty, &lock);
        if (count == 0) {
            pthread_mutex_unlock(&lock);
            return NULL;
        }
        long v = ring[head];
        head = (head + 1) % SLOTS;
        count--;
        consumed_sum += v;
        consumed_items++;
        pthread_cond_signal(&not_full);
        pthread_mutex_unlock(&lock);
    }
}

int main(void)
{
    pthread_t p[PRODUCERS], c[CONSUMERS];
    for (long i = 0; i < CONSUMERS; i++)
        pthread_create(&c[i], NULL, consumer, NULL);
    for (long i = 0; i < PRODUCERS; i++)
        pthread_create(&p[i], NULL, producer, (void *)i);
    for (int i = 0; i < PRODUCERS; i++)
        pthread_join(p[i], NULL);
    for (int i = 0; i < CONSUMERS; i++)
        pthread_join(c[i], NULL);
    long n = (long)PRODUCERS * PER_PRODUCER;
    long want = n * (n + 1) / 2;
    if (consumed_items != n || consumed_sum != want) {
        fprintf(stderr, "bounded_queue: %ld items, sum %ld (want %ld, %ld)\n", consumed_items,
                consumed_sum, n, want);
        return 1;
    }
    printf("bounded_queue: %ld items\n", consumed_items);
    return 0;
}
