/* forkbomb: a bounded fork bomb that drives the `pids_limit_hit` flag under --pids.
 *
 * Usage: forkbomb [COUNT] [threads|procs] [HOLD_SECONDS]
 *
 * Tries to create COUNT (default 200) threads (default) or child processes, each of which just
 * sleeps HOLD_SECONDS (default 2) and exits. Creation failures (EAGAIN under a pids ceiling)
 * are counted, not fatal. Afterwards it waits for everything it created and prints
 * "created C failed F" on stdout; exits 0 either way. It never creates more than COUNT tasks.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double hold;

static void sleep_hold(void)
{
    struct timespec t = {(time_t)hold, (long)((hold - (time_t)hold) * 1e9)};
    nanosleep(&t, NULL);
}

static void *sleeper(void *arg)
{
    (void)arg;
    sleep_hold();
    return NULL;
}

int main(int argc, char **argv)
{
    int count = argc > 1 ? atoi(argv[1]) : 200;
    int procs = argc > 2 && strcmp(argv[2], "procs") == 0;
    hold = argc > 3 ? atof(argv[3]) : 2;
    int created = 0, failed = 0;
    pthread_t *threads = calloc(count, sizeof *threads);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 64 * 1024);
    for (int i = 0; i < count; i++) {
        if (procs) {
            pid_t pid = fork();
            if (pid == 0) {
                sleep_hold();
                _exit(0);
            }
            if (pid < 0)
                failed++;
            else
                created++;
        } else {
            if (pthread_create(&threads[created], &attr, sleeper, NULL) != 0)
                failed++;
            else
                created++;
        }
    }
    if (procs)
        while (wait(NULL) > 0)
            ;
    else
        for (int i = 0; i < created; i++)
            pthread_join(threads[i], NULL);
    printf("created %d failed %d\n", created, failed);
    return 0;
}
