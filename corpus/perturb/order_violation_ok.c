/* order_violation_ok: the twin of order_violation.c: the configuration is published before
 * the worker starts, so every schedule sees it.
 *
 * Usage: order_violation_ok
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
        fprintf(stderr, "order_violation_ok: no configuration\n");
        abort();
    }
    return NULL;
}

int main(void)
{
    static struct config the_config = {4};
    pthread_t t;
    pthread_mutex_lock(&lock);
    config = &the_config;
    pthread_mutex_unlock(&lock);
    pthread_create(&t, NULL, worker, NULL);
    pthread_join(t, NULL);
    printf("order_violation_ok: %d workers\n", config->workers);
    return 0;
}
