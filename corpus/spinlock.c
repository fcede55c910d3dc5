/* spinlock: a spin lock never released (drives `deadlock` by stack sampling).
 *
 * The main thread takes a pthread spin lock and joins a worker that wants the same lock: the
 * worker spins in pthread_spin_lock at full CPU, the main thread waits for it in an untimed
 * futex wait. Neither ever ends.
 */
#include <pthread.h>
#include <stdio.h>

static pthread_spinlock_t lock;

static void *worker(void *arg)
{
    (void)arg;
    pthread_spin_lock(&lock);
    pthread_spin_unlock(&lock);
    return NULL;
}

int main(void)
{
    pthread_spin_init(&lock, PTHREAD_PROCESS_PRIVATE);
    pthread_spin_lock(&lock);
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    pthread_join(t, NULL);
    puts("never here");
    return 0;
}
