/* order_violation: an order violation (bug class: use before initialisation).
 *
 * Usage: order_violation
 *
 * main starts a worker, then publishes the configuration the worker reads. The worker warms
 * up for a millisecond first, far longer than main's next few instructions, so bare runs
 * almost always publish first (unless main waits over a millisecond for a CPU);
 * when the worker runs before main publishes, it reads a null pointer and the program aborts
 * (SIGABRT from the assertion: a crash). Twin: order_violation_ok.c.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

struct config {
    int workers;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct config *config;

/* The worker's own start-up: a millisecond before it needs the configuration. */
static void warm_up(void)
{
    usleep(1000);
}

static void *worker(void *arg)
{
    (void)arg;
    warm_up();
    pthread_mutex_lock(&lock);
    struct config *c = config;
    pthread_mutex_unlock(&lock);
    if (c == NULL) {
        fprintf(stderr, "order_violation: worker ran before the configuration was published\n");
        abort();
    }
    return NULL;
}

int main(void)
{
    static struct config the_config = {4};
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    pthread_mutex_lock(&lock);
    config = &the_config;
    pthread_mutex_unlock(&lock);
    pthread_join(t, NULL);
    printf("order_violation: %d workers\n", config->workers);
    return 0;
}
