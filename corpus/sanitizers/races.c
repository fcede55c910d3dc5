/* races: ThreadSanitizer's reports (built with `cc -fsanitize=thread -g -O1 -pthread`). TSan
 * reports while the program runs and fails its exit status (66) at the end.
 *
 * Usage: races race|locked|order|ordered
 *
 * race:    two threads increment one counter unlocked -> crash, cause data_race
 * locked:  the same under a mutex -> ok
 * order:   one thread takes a then b, a later one b then a (never at once: no hang) -> crash,
 *          cause lock_order_inversion (a potential deadlock)
 * ordered: both take a then b -> ok
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static int counter;
static int use_lock;
static pthread_mutex_t a = PTHREAD_MUTEX_INITIALIZER, b = PTHREAD_MUTEX_INITIALIZER;

static void *add(void *arg)
{
    (void)arg;
    for (int i = 0; i < 10000; i++) {
        if (use_lock)
            pthread_mutex_lock(&a);
        counter++;
        if (use_lock)
            pthread_mutex_unlock(&a);
    }
    return NULL;
}

static void *first_second(void *arg)
{
    pthread_mutex_t **order = arg;
    pthread_mutex_lock(order[0]);
    pthread_mutex_lock(order[1]);
    counter++;
    pthread_mutex_unlock(order[1]);
    pthread_mutex_unlock(order[0]);
    return NULL;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "race";
    pthread_t t1, t2;
    if (strcmp(mode, "race") == 0 || strcmp(mode, "locked") == 0) {
        use_lock = strcmp(mode, "locked") == 0;
        pthread_create(&t1, NULL, add, NULL);
        pthread_create(&t2, NULL, add, NULL);
        pthread_join(t1, NULL);
        pthread_join(t2, NULL);
    } else {
        pthread_mutex_t *ab[2] = {&a, &b}, *ba[2] = {&b, &a};
        pthread_create(&t1, NULL, first_second, ab);
        pthread_join(t1, NULL);
        pthread_create(&t2, NULL, first_second, strcmp(mode, "order") == 0 ? ba : ab);
        pthread_join(t2, NULL);
    }
    printf("counter %d\n", counter);
    return 0;
}
